#!/usr/bin/env bash
# Make a patched OCaml installed in PREFIX (by build-runtime.sh with
# MEMPROF_CI_PREFIX=PREFIX) usable by the distribution's dune and ocamlfind
# with no environment variables, once PREFIX/bin is first on PATH.
#
# Usage: runtime-patch/install-tools.sh PREFIX     ($DESTDIR is honoured;
# `make install PREFIX=...` calls it after the compiler is installed)
#
# What it writes, and why (measured with Debian 12's dune 2.9.3 and
# findlib 1.9.6; README: "Using the patched compiler"):
#
#   PREFIX/lib/findlib.conf  findlib configuration for this prefix: the
#       search path is PREFIX/lib/ocaml (where OCaml 5.3 and later install META files
#       for unix, threads, str, dynlink, runtime_events, compiler-libs) and
#       PREFIX/lib, the compilers are PREFIX/bin's. Same place as in an opam
#       switch.
#   PREFIX/bin/ocamlfind     wrapper: runs the next ocamlfind on PATH with
#       OCAMLFIND_CONF=PREFIX/lib/findlib.conf. An ocamlfind binary reads the
#       configuration file compiled into it (Debian: /etc/ocamlfind.conf,
#       made for Debian 12's OCaml 4.13 in /usr/lib/ocaml) unless
#       OCAMLFIND_CONF says otherwise; nothing relative to the compiler.
#   PREFIX/bin/memprof-ci    the harness (copied to PREFIX/share/memprof-ci/
#       harness) run by /usr/bin/python3, whose Debian packages provide its
#       dependencies: no pip step, nothing fetched.
#   PREFIX/bin/dune          wrapper: runs the next dune on PATH with
#       PREFIX/lib/ocaml and PREFIX/lib first in OCAMLPATH. Debian's dune has
#       /usr/lib/ocaml compiled in as its library path (it does not ask
#       ocamlfind); without this it resolves `unix` to a built-in
#       description in the stdlib directory and fails with 'Library "unix"
#       ... is hidden (unsatisfied 'exist_if')'.
#
# Inside an opam switch (OPAM_SWITCH_PREFIX set to another prefix, the
# ocaml-system route), both wrappers also search $OPAM_SWITCH_PREFIX/lib,
# so libraries installed with opam are found.
set -euo pipefail

die() { echo "install-tools: $*" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: $0 PREFIX"
prefix=${1%/}
case "$prefix" in /*) ;; *) die "PREFIX must be an absolute path, not '$1'" ;; esac
dest="${DESTDIR:-}$prefix"
if [ ! -x "$dest/bin/ocamlopt" ] || [ ! -f "$dest/lib/ocaml/unix/META" ]; then
  die "$dest has no patched OCaml (bin/ocamlopt, lib/ocaml/unix/META); install it first"
fi
# The paths below are written into files: refuse characters that would need
# quoting in findlib.conf or in a shell single-quoted string.
case "$prefix" in *[\'\"\\:$'\n']*) die "PREFIX must not contain quotes, backslashes, colons or newlines" ;; esac

write() {  # write FILE MODE: stdin to FILE, atomically
  local tmp
  tmp=$(mktemp "$1.XXXXXX")
  cat >"$tmp"
  chmod "$2" "$tmp"
  mv -f "$tmp" "$1"
}

write "$dest/lib/findlib.conf" 0644 <<EOF
# findlib configuration of the patched OCaml (memprof-ci) in $prefix.
# Written by memprof-ci's \`make install\` (runtime-patch/install-tools.sh);
# $prefix/bin/ocamlfind uses it.
destdir="$prefix/lib"
path="$prefix/lib/ocaml:$prefix/lib"
stdlib="$prefix/lib/ocaml"
ldconf="$prefix/lib/ocaml/ld.conf"
ocamlc="$prefix/bin/ocamlc.opt"
ocamlopt="$prefix/bin/ocamlopt.opt"
ocamldep="$prefix/bin/ocamldep.opt"
ocamlmklib="$prefix/bin/ocamlmklib"
ocamlmktop="$prefix/bin/ocamlmktop"
ocamlcp="$prefix/bin/ocamlcp"
EOF

# wrapper TOOL ENV_SETUP: PREFIX/bin/TOOL runs the next TOOL on PATH after
# ENV_SETUP (shell code run with $prefix set).
wrapper() {
  write "$dest/bin/$1" 0755 <<EOF
#!/bin/sh
# memprof-ci-wrapper (written by memprof-ci's \`make install\`,
# runtime-patch/install-tools.sh): runs the next \`$1\` on PATH set up for
# the patched OCaml in $prefix. Delete this file to use that
# \`$1\` directly (then see the README for the variables it needs).
prefix='$prefix'
tool='$1'
self=\$(cd "\$(dirname "\$0")" && pwd -P)
real=
saved_ifs=\$IFS
IFS=:
for d in \$PATH; do
  [ -n "\$d" ] || d=.
  [ -f "\$d/\$tool" ] && [ -x "\$d/\$tool" ] || continue
  [ "\$(cd "\$d" 2>/dev/null && pwd -P)" != "\$self" ] || continue
  # another prefix's wrapper would replace this prefix's settings
  head -c 120 "\$d/\$tool" | grep -q memprof-ci-wrapper && continue
  real=\$d/\$tool
  break
done
IFS=\$saved_ifs
if [ -z "\$real" ]; then
  echo "\$0: no other \$tool on PATH to run (Debian: apt-get install $2)" >&2
  exit 127
fi
opam_lib=
if [ -n "\${OPAM_SWITCH_PREFIX:-}" ] && [ "\$OPAM_SWITCH_PREFIX" != "\$prefix" ]; then
  opam_lib=\$OPAM_SWITCH_PREFIX/lib
fi
$3
exec "\$real" "\$@"
EOF
}

# The third arguments are shell code for the wrapper, expanded there.
# shellcheck disable=SC2016
wrapper ocamlfind ocaml-findlib '
OCAMLFIND_CONF=$prefix/lib/findlib.conf
export OCAMLFIND_CONF
if [ -n "$opam_lib" ]; then
  OCAMLPATH=$opam_lib${OCAMLPATH:+:$OCAMLPATH}
  export OCAMLPATH
fi'

# shellcheck disable=SC2016
wrapper dune ocaml-dune '
case ":${OCAMLPATH:-}:" in
  *":$prefix/lib/ocaml:"*) ;;
  *) OCAMLPATH=$prefix/lib/ocaml:$prefix/lib${opam_lib:+:$opam_lib}${OCAMLPATH:+:$OCAMLPATH}
     export OCAMLPATH ;;
esac'

# The harness, and PREFIX/bin/memprof-ci to run it with Debian's interpreter
# (its dependencies are Debian packages for /usr/bin/python3; the python3
# first on PATH may be another interpreter that lacks them). No pip step.
harness_src=$(cd "$(dirname "$0")/../harness" && pwd)
share="$dest/share/memprof-ci"
mkdir -p "$share"
stage=$(mktemp -d "$share/.harness.XXXXXX")
(cd "$harness_src" && find memprof_ci -name '*.py' -print) | while IFS= read -r f; do
  mkdir -p "$stage/$(dirname "$f")"
  cp "$harness_src/$f" "$stage/$f"
done
rm -rf "$share/harness"
mv "$stage" "$share/harness"
write "$dest/bin/memprof-ci" 0755 <<EOF
#!/bin/sh
# memprof-ci (written by memprof-ci's \`make install\`,
# runtime-patch/install-tools.sh): the harness installed in
# $prefix/share/memprof-ci/harness, run by Debian's /usr/bin/python3
# (apt-get install python3-pytest python3-scipy python3-jsonschema), or by
# \$MEMPROF_CI_PYTHON.
PYTHONPATH='$prefix/share/memprof-ci/harness'
export PYTHONPATH
exec "\${MEMPROF_CI_PYTHON:-/usr/bin/python3}" -m memprof_ci "\$@"
EOF

echo "install-tools: wrote $dest/lib/findlib.conf, $dest/bin/ocamlfind, $dest/bin/dune and $dest/bin/memprof-ci"
