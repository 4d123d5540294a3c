#!/usr/bin/env bash
# run-check.sh REPORT_DIR -- COMMAND [ARG...]
#
# Runs one allocation check command (normally `make check-alloc ...` or
# `memprof-ci check ...`), then publishes REPORT_DIR through publish-report.sh.
#
# Invariants:
#   - the command's exit status decides the verdict: 0 pass, 1 regression,
#     anything else error (2). GNU make turns any failing recipe into 2, so
#     through `make` a regression may show as 2: both fail the job;
#   - REPORT_DIR/exit-status is always written, even if the command crashed;
#   - exits with the normalised status, so the calling step fails on 1 or 2.
set -uo pipefail

if [ "$#" -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: $0 REPORT_DIR -- COMMAND [ARG...]" >&2
  exit 2
fi
report_dir=$1
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

printf 'run-check: running:'
printf ' %q' "$@"
printf '\n'
"$@"
status=$?
echo "run-check: command exited with status $status"
"$here/publish-report.sh" "$report_dir" "$status" "${MEMPROF_CI_TITLE:-memprof-ci allocation report}"
