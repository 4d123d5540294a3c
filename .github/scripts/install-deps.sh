#!/usr/bin/env bash
# install-deps.sh [PACKAGE...]: installs the Debian/Ubuntu packages the
# allocation gate needs on a GitHub-hosted runner (or any apt-based machine);
# with arguments, installs those packages instead of the full default set.
#
# Invariants:
#   - installs by package name from the distribution archive only;
#   - uses sudo only when not already root; idempotent;
#   - the Python used by the gate is /usr/bin/python3 (pytest, scipy from apt).
set -euo pipefail

# The gate's own list, plus what harness/scripts/ensure-deps.sh checks for
# (it installs only as root, and the runner's user is not root).
packages=(hyperfine jq valgrind python3-pytest python3-scipy python3-jsonschema
  shellcheck yamllint gcc make patch npm)
if [ "$#" -gt 0 ]; then
  packages=("$@")
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import sys; print("using", sys.executable, sys.version.split()[0])'
fi
