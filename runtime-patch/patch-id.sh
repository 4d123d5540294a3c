#!/usr/bin/env bash
# Print the identity of the runtime patch: a short sha256 over every
# file that goes into the patched runtime's build, in a fixed order, so
# that the same inputs always give the same id on any machine.
set -euo pipefail
cd "$(dirname "$0")"
find src patches build-runtime.sh -type f -print0 | LC_ALL=C sort -z |
  xargs -0 sha256sum | sha256sum | cut -c1-16
