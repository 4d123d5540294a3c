#!/usr/bin/env bash
# Build the patched OCaml into _build/runtime.
#
# 1. Release: $OCAML_VERSION, else patches/default-version (5.4.1); the
#    supported ones are those with a series in patches/ (5.4.1, 5.3.0).
#    The default release builds into _build/runtime, another one into
#    _build/runtime-VERSION.
# 2. Source: $OCAML_SRC_DIR (an unpacked upstream tree of that release),
#    else $OCAML_SRC_TARBALL, else the pinned tarball that
#    runtime-patch/fetch-source.sh fetches. A tarball is checked against
#    the pinned checksum before it is unpacked.
# 3. The tree is unpacked afresh into _build/ocaml-src (or
#    _build/ocaml-src-VERSION), our C files (runtime-patch/src, the same
#    for every release) are copied in, the release's patch series
#    (patches/VERSION/series; runtime-patch/series.py says how it is
#    laid out) applied with no fuzz, then it is configured, built and
#    installed.
# 4. PREFIX/patch-id, a hash of everything that went into the build
#    (patch-id.sh), is written last: `make runtime` targets it, so a
#    build that failed or was interrupted is redone from scratch next
#    time. Baselines carry the same hash as the runtime's identity.
# 5. The build tree is kept: the upstream statmemprof tests run in it.
#
# 6. With STOCK=1 it builds the unpatched release into _build/stock (or
#    _build/stock-VERSION) instead (same source, same configuration, no
#    runtime-patch/), the reference for the overhead study's "as fast as
#    stock" comparison.
#
# 7. With MEMPROF_CI_PREFIX=/abs/dir it builds the same source with the same
#    patches and configuration, but configured for that prefix (OCaml 5
#    bakes its library directory into ocamlc, ocamlopt and ocamlrun, so a
#    copy of _build/runtime would still look for its libraries there), in
#    _build/install-src, and installs it into $DESTDIR/abs/dir. The
#    prefix is never emptied first; the patch id goes to
#    share/memprof-ci/patch-id. The build tree is reused while the
#    prefix and patch id stay the same. `make install PREFIX=...` calls
#    this, then runtime-patch/install-tools.sh (findlib configuration,
#    dune/ocamlfind wrappers); the opam package calls this alone, in two
#    steps: MEMPROF_CI_STEP=build (no install), then MEMPROF_CI_STEP=install
#    (install only, from that build).
#
# Usage: runtime-patch/build-runtime.sh   (from the repository root;
# `make runtime` / `make stock-runtime` / `make install` call it).
set -euo pipefail

root=$(pwd)
build="$root/_build"
die() { echo "build-runtime: $*" >&2; exit 2; }
[ -d "$root/runtime-patch/patches" ] || die "run me from the repository root"
default_version=$(cat "$root/runtime-patch/patches/default-version")
OCAML_VERSION=${OCAML_VERSION:-$default_version}
[ -f "$root/runtime-patch/patches/$OCAML_VERSION/series" ] ||
  die "OCAML_VERSION=$OCAML_VERSION is not supported (runtime-patch/patches has no series for it)"
export OCAML_VERSION
# The default release keeps the plain names; another one is suffixed.
suffix=""
[ "$OCAML_VERSION" = "$default_version" ] || suffix="-$OCAML_VERSION"
install_prefix=${MEMPROF_CI_PREFIX:-}
destdir=${DESTDIR:-}
if [ -n "$install_prefix" ]; then
  case "$install_prefix" in
    /*) ;;
    *) echo "build-runtime: MEMPROF_CI_PREFIX must be an absolute path, not '$install_prefix'" >&2; exit 2 ;;
  esac
  [ "${STOCK:-0}" != 1 ] || { echo "build-runtime: STOCK=1 and MEMPROF_CI_PREFIX do not go together" >&2; exit 2; }
  install_prefix=${install_prefix%/}
  src_new="$build/install-src"
  prefix="$install_prefix"
  log="$build/install-build.log"
elif [ "${STOCK:-0}" = 1 ]; then
  src_new="$build/stock-src$suffix"
  prefix="$build/stock$suffix"
  log="$prefix-build.log"
else
  src_new="$build/ocaml-src$suffix"
  prefix="$build/runtime$suffix"
  log="$prefix-build.log"
fi
jobs=$(nproc 2>/dev/null || echo 2)

mkdir -p "$build"

if [ -n "$install_prefix" ]; then
  patch_id=$("$root/runtime-patch/patch-id.sh")
  stamp="$src_new/.memprof-ci-built"
  dest="$destdir$install_prefix"
  # A prefix that holds another OCaml is not ours to overwrite.
  if [ -e "$dest/bin/ocamlc" ] && [ ! -f "$dest/share/memprof-ci/patch-id" ] && [ "${FORCE:-0}" != 1 ]; then
    die "$dest already holds an OCaml that memprof-ci did not install; choose another PREFIX (or FORCE=1 to install over it)"
  fi
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$install_prefix $patch_id" ]; then
    echo "build-runtime: reusing the build for $install_prefix in $src_new (patch id $patch_id)"
  else
    rm -rf "$src_new"
  fi
else
  rm -rf "$src_new" "$prefix/patch-id"
fi

step=${MEMPROF_CI_STEP:-all}
case "$step" in all|build|install) ;; *) die "MEMPROF_CI_STEP must be all, build or install, not '$step'" ;; esac
[ "$step" = all ] || [ -n "$install_prefix" ] || die "MEMPROF_CI_STEP goes with MEMPROF_CI_PREFIX"
if [ "$step" = install ] && [ ! -f "${stamp:-}" ]; then
  die "MEMPROF_CI_STEP=install: $src_new was not built for $install_prefix (run MEMPROF_CI_STEP=build first)"
fi

if [ -n "$install_prefix" ] && [ -f "${stamp:-}" ]; then
  :  # built for this prefix and patch: install only
else

if [ -n "${OCAML_SRC_DIR:-}" ]; then
  [ -f "$OCAML_SRC_DIR/runtime/memprof.c" ] ||
    die "OCAML_SRC_DIR=$OCAML_SRC_DIR is not an OCaml source tree (no runtime/memprof.c)"
  grep -qx "$OCAML_VERSION" "$OCAML_SRC_DIR/VERSION" 2>/dev/null ||
    grep -q "^$OCAML_VERSION" "$OCAML_SRC_DIR/VERSION" ||
    die "OCAML_SRC_DIR=$OCAML_SRC_DIR is not OCaml $OCAML_VERSION (see its VERSION file)"
  echo "build-runtime: copying the source from $OCAML_SRC_DIR"
  cp -a "$OCAML_SRC_DIR" "$src_new"
else
  tarball="${OCAML_SRC_TARBALL:-}"
  if [ -z "$tarball" ]; then
    tarball=$("$root/runtime-patch/fetch-source.sh" "$OCAML_VERSION") || exit 2
  fi
  [ -f "$tarball" ] || die "OCAML_SRC_TARBALL=$tarball does not exist"
  read -r algo want < <("$root/runtime-patch/fetch-source.sh" "$OCAML_VERSION" --checksum)
  actual=$("${algo}sum" "$tarball" | cut -d' ' -f1)
  if [ "$actual" != "$want" ]; then
    die "$tarball: $algo mismatch (got $actual, want $want for OCaml $OCAML_VERSION); not unpacking it"
  fi
  mkdir -p "$src_new"
  tar xf "$tarball" -C "$src_new" --strip-components=1
fi

if [ "${STOCK:-0}" != 1 ]; then
  echo "build-runtime: applying runtime-patch/"
  cp "$root"/runtime-patch/src/*.c "$src_new/runtime/"
  cp "$root"/runtime-patch/src/caml/*.h "$src_new/runtime/caml/"
  while read -r p; do
    case "$p" in ''|'#'*) continue ;; esac
    patch -d "$src_new" -p1 --quiet --forward --fuzz=0 < "$root/runtime-patch/patches/$p" ||
      die "$p does not apply to OCaml $OCAML_VERSION (runtime-patch/series.py report $src_new lists what fails)"
  done < "$root/runtime-patch/patches/$OCAML_VERSION/series"
fi

echo "build-runtime: configuring and building ($jobs jobs, ~3 minutes cold)"
(
  cd "$src_new"
  # The patched compiler writes each block's allocation point into 20
  # reserved header bits (memprof_points.c); blocks stay up to 2^34 words.
  reserved=()
  [ "${STOCK:-0}" = 1 ] || reserved=(--enable-reserved-header-bits=20)
  ./configure --prefix="$prefix" "${reserved[@]}" \
    --disable-ocamldoc --disable-debugger --disable-stdlib-manpages \
    --disable-instrumented-runtime --enable-ocamltest
  make -j"$jobs"
) >"$log" 2>&1 || { tail -30 "$log" >&2; die "the build failed; full log in $log"; }

fi  # end of: unpack, patch, configure, build

if [ -n "$install_prefix" ]; then
  echo "$install_prefix $patch_id" > "$stamp"
  if [ "$step" = build ]; then
    echo "build-runtime: built for $install_prefix in $src_new (MEMPROF_CI_STEP=install installs it)"
    exit 0
  fi
  mkdir -p "$dest"
  (cd "$src_new" && make install DESTDIR="$destdir") >>"$log" 2>&1 ||
    { tail -30 "$log" >&2; die "make install into $dest failed; full log in $log"; }
  mkdir -p "$dest/share/memprof-ci"
  echo "$patch_id" > "$dest/share/memprof-ci/patch-id"
  echo "build-runtime: installed $dest (patch id $patch_id)"
  exit 0
fi

rm -rf "$prefix"
(cd "$src_new" && make install) >>"$log" 2>&1 ||
  { tail -30 "$log" >&2; die "make install failed; full log in $log"; }

"$root/runtime-patch/patch-id.sh" > "$prefix/patch-id"
echo "build-runtime: installed $prefix (patch id $(cat "$prefix/patch-id"))"
