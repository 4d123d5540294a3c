#!/usr/bin/env bash
# Check, and where possible install, what memprof-ci's make targets need.
#
# Usage: ensure-deps.sh GROUP...   with groups:
#   build   C toolchain (gcc, make, patch) and npm, for `make runtime`
#   python  Debian's /usr/bin/python3 with pytest, scipy and jsonschema
#   bench   hyperfine and jq, for overhead timing
#   lint    shellcheck, yamllint, valgrind (used by `make test`)
# Invariant: either everything asked for is present when this exits 0,
# or it exits 2 after one line per missing piece naming the exact
# install command. It installs with apt-get only when running as root
# and apt-get exists (fresh CI machines); it never uses pip (PyPI is
# not reachable on our machines) or touches any other Python.
set -uo pipefail

PY=/usr/bin/python3
missing_pkgs=()

need_cmd() { command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2"); }
need_py() { [ -x "$PY" ] && "$PY" -c "import $1" >/dev/null 2>&1 || missing_pkgs+=("$2"); }

check() {
  missing_pkgs=()
  for group in "$@"; do
    case "$group" in
      build) need_cmd gcc gcc; need_cmd make make; need_cmd patch patch
             need_cmd npm npm ;;
      python) need_py pytest python3-pytest; need_py scipy python3-scipy
              need_py jsonschema python3-jsonschema ;;
      bench) need_cmd hyperfine hyperfine; need_cmd jq jq ;;
      lint) need_cmd shellcheck shellcheck; need_cmd yamllint yamllint; need_cmd clang clang
            need_cmd valgrind valgrind ;;
      *) echo "ensure-deps: unknown group '$group'" >&2; exit 2 ;;
    esac
  done
}

check "$@"
[ ${#missing_pkgs[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-deps: installing ${missing_pkgs[*]} with apt-get" >&2
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq "${missing_pkgs[@]}"; } >/dev/null 2>&1; then
    echo "ensure-deps: apt-get install failed" >&2
  fi
  check "$@"
  [ ${#missing_pkgs[@]} -eq 0 ] && exit 0
fi

for p in "${missing_pkgs[@]}"; do
  echo "memprof-ci needs the Debian package $p: run 'sudo apt-get install -y $p'" >&2
done
exit 2
