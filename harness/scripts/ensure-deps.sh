#!/usr/bin/env bash
# Check, and where possible install, what memprof-ci's make targets need.
#
# Usage: ensure-deps.sh GROUP...   with groups:
#   build   C toolchain (gcc, make, patch), xz (5.4.1's source is a .tar.xz)
#           and npm, for `make runtime`
#   python  Debian's /usr/bin/python3 with pytest, scipy and jsonschema,
#           and cmark-gfm (the report tests render Markdown with it)
#   bench   valgrind, hyperfine and jq: the overhead check's counts and timing
#   lint    shellcheck, yamllint, valgrind, clang with libFuzzer's runtime,
#           and Debian's chromium with python3-websocket (the report.html
#           tests drive headless Chromium over the DevTools protocol)
#           (used by `make test`)
#   adopt   dune, ocamlfind and opam: the install/example tests (`make test`)
# Invariant: either everything asked for is present when this exits 0,
# or it exits 2 after one line per missing piece naming the exact
# install command. It installs with apt-get only when running as root
# and apt-get exists (fresh CI machines); it never uses pip (PyPI is
# not reachable on our machines) or touches any other Python.
# apt-get waits up to MEMPROF_CI_APT_LOCK_WAIT seconds (default 300) for a
# lock held by another apt or dpkg; when it still fails, its own last
# "E:" line is printed.
set -uo pipefail

PY=/usr/bin/python3
missing_pkgs=()

need_cmd() { command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2"); }
# libFuzzer's runtime, for the OCAMLMEMPROF parser's fuzz target.
need_fuzzer_rt() {
  command -v clang >/dev/null 2>&1 &&
    [ -e "$(clang -print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a" ] ||
    missing_pkgs+=(libclang-rt-dev)
}
need_py() { [ -x "$PY" ] && "$PY" -c "import $1" >/dev/null 2>&1 || missing_pkgs+=("$2"); }

check() {
  missing_pkgs=()
  for group in "$@"; do
    case "$group" in
      build) need_cmd gcc gcc; need_cmd make make; need_cmd patch patch
             need_cmd xz xz-utils; need_cmd npm npm ;;
      python) need_py pytest python3-pytest; need_py scipy python3-scipy
              need_py jsonschema python3-jsonschema; need_cmd cmark-gfm cmark-gfm ;;
      bench) need_cmd valgrind valgrind; need_cmd hyperfine hyperfine; need_cmd jq jq ;;
      lint) need_cmd shellcheck shellcheck; need_cmd yamllint yamllint; need_cmd clang clang
            need_fuzzer_rt; need_cmd valgrind valgrind; need_cmd chromium chromium
            need_py websocket python3-websocket ;;
      adopt) need_cmd dune ocaml-dune; need_cmd ocamlfind ocaml-findlib
             need_cmd opam opam ;;
      *) echo "ensure-deps: unknown group '$group'" >&2; exit 2 ;;
    esac
  done
}

check "$@"
[ ${#missing_pkgs[@]} -eq 0 ] && exit 0

lock_wait=${MEMPROF_CI_APT_LOCK_WAIT:-300}
case "$lock_wait" in ''|*[!0-9]*) lock_wait=300 ;; esac

# DPkg::Lock::Timeout (apt >= 1.9.11) makes apt wait for the dpkg lock, but
# `update` takes the lists lock, which it does not wait for: retry that.
apt_update() {
  local deadline=$((SECONDS + lock_wait))
  while ! apt-get -o DPkg::Lock::Timeout="$lock_wait" update -qq >"$apt_log" 2>&1; do
    if ! grep -q 'Could not get lock' "$apt_log" || [ "$SECONDS" -ge "$deadline" ]; then
      return 1
    fi
    sleep 2
  done
}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-deps: installing ${missing_pkgs[*]} with apt-get" >&2
  apt_log=$(mktemp)
  trap 'rm -f "$apt_log"' EXIT
  if ! { apt_update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$lock_wait" \
           install -y -qq "${missing_pkgs[@]}" >"$apt_log" 2>&1; }; then
    reason=$(grep '^E:' "$apt_log" | tail -n 1)
    echo "ensure-deps: apt-get failed: ${reason:-$(tail -n 1 "$apt_log")}" >&2
  fi
  check "$@"
  [ ${#missing_pkgs[@]} -eq 0 ] && exit 0
fi

for p in "${missing_pkgs[@]}"; do
  echo "memprof-ci needs the Debian package $p: run 'sudo apt-get install -y $p'" >&2
done
exit 2
