#!/usr/bin/env bash
# install-deps.sh [gate|judge|test]: installs the Debian/Ubuntu packages a
# job of the allocation gate needs on a GitHub-hosted runner (or any
# apt-based machine).
#
#   gate   (default) the build job of the reusable workflow: the toolchain
#          and npm that build the patched compiler, dune and findlib (whose
#          wrappers `make install` writes), valgrind for the overhead check's
#          counted runs, hyperfine for its timing, and the harness's Python packages for `memprof-ci profile`
#   judge  a judge job: the harness's Python packages only
#   test   everything `make test` needs: harness/scripts/ensure-deps.sh's
#          groups, installed by that script itself as root
#
# Invariants:
#   - installs by package name from the distribution archive only;
#   - uses sudo only when not already root; idempotent;
#   - the Python used by the gate is /usr/bin/python3 (pytest, scipy from apt);
#   - no job gets tools it does not use (linters, clang and chromium only for
#     `test`; the judge gets no valgrind: it runs nothing).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python_pkgs=(python3-pytest python3-scipy python3-jsonschema)
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

case "${1:-gate}" in
  gate) packages=(gcc make patch xz-utils npm ocaml-dune ocaml-findlib valgrind hyperfine jq "${python_pkgs[@]}") ;;
  judge) packages=("${python_pkgs[@]}") ;;
  test)
    exec "${sudo_cmd[@]}" "$here/../../harness/scripts/ensure-deps.sh" build python bench lint adopt ;;
  *) echo "usage: $0 [gate|judge|test]" >&2; exit 2 ;;
esac
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import sys; print("using", sys.executable, sys.version.split()[0])'
fi
