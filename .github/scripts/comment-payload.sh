#!/usr/bin/env bash
# comment-payload.sh OUT_DIR PR_NUMBER REPORT_DIR
#
# Writes the data the `workflow_run` comment workflow needs into OUT_DIR, to be
# uploaded as the `memprof-ci-pr-comment` artifact by the read-only test job:
#   OUT_DIR/pr-number   the pull request number, digits only
#   OUT_DIR/report.md   the Markdown report (or a note that none was produced)
#
# Invariants:
#   - only plain data files are written, never anything meant to be executed;
#   - PR_NUMBER must be a positive decimal integer, else exit 2;
#   - the consumer (post_report.py) re-validates everything: this artifact is
#     produced in a job that ran the pull request's code, so it is untrusted.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 OUT_DIR PR_NUMBER REPORT_DIR" >&2
  exit 2
fi
out_dir=$1
pr=$2
report_dir=$3
if ! [[ "$pr" =~ ^[1-9][0-9]{0,9}$ ]]; then
  echo "comment-payload: PR_NUMBER must be a positive integer, got '$pr'" >&2
  exit 2
fi
mkdir -p "$out_dir"
printf '%s\n' "$pr" >"$out_dir/pr-number"
if [ -f "$report_dir/report.md" ]; then
  cp "$report_dir/report.md" "$out_dir/report.md"
else
  printf '_The allocation check produced no report; see the workflow run log._\n' >"$out_dir/report.md"
fi
