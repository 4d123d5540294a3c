#!/usr/bin/env bash
# publish-report.sh [--final] REPORT_DIR STATUS [TITLE]
#
# Publishes one allocation report inside a GitHub job: appends REPORT_DIR/report.md
# to the job summary ($GITHUB_STEP_SUMMARY, when set), records the normalised
# verdict in REPORT_DIR/exit-status and prints an error annotation on failure.
#
# Invariants:
#   - STATUS is normalised: 0 pass, 1 regression, anything else 2 (error);
#     without --final, a 2 becomes 1 when REPORT_DIR/report.json's verdict
#     says regression (make's exit status hides the harness's 1), never the
#     other way round; with --final (judge.sh, whose status is the verdict)
#     STATUS is kept as it is, so an error stays an error;
#     the normalised value is written to REPORT_DIR/exit-status and is this
#     script's own exit code, so a caller can `exit` with it;
#   - a missing report.md is itself reported and makes the verdict 2 (error),
#     whatever STATUS said: a check that wrote no report never passes;
#   - the summary gets at most 512 KiB of the report (GitHub caps a step's
#     summary at 1 MiB); the full report stays in REPORT_DIR for the artifact;
#   - what the summary gets of the report (and the title) passes through
#     md_inert.py, the filter post_report.py posts the pull-request comment
#     through: report.md carries text of the pull request (benchmark and
#     file names, error texts), so no link, mention, image or HTML of it
#     renders; if the filter cannot run, the summary says so instead of
#     showing the report;
#   - when REPORT_DIR/report.html exists, the summary says where it is (the
#     `alloc-report` artifact), linking the run's page only when
#     GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_RUN_ID are well formed;
#     the workflow adds the artifact's own link after uploading it.
set -euo pipefail

final=0
if [ "${1:-}" = --final ]; then final=1; shift; fi
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
  echo "usage: $0 [--final] REPORT_DIR STATUS [TITLE]" >&2
  exit 2
fi
report_dir=$1
status=$2
title=${3:-memprof-ci allocation report}
max_summary_bytes=$((512 * 1024))

case "$status" in
  0|1) ;;
  *) status=2 ;;
esac
# GNU make reports any failing recipe as 2, so through `make check-alloc` a
# regression arrives as 2: take the harness's own verdict from report.json,
# but only to turn an error into a regression, never a failure into a pass.
if [ "$final" = 0 ] && [ "$status" = 2 ] && [ -f "$report_dir/report.json" ]; then
  reported=$(/usr/bin/python3 -c '
import json, sys
try:
    with open(sys.argv[1], "rb") as fh:
        print(json.loads(fh.read(64 << 20))["verdict"]["exit_code"])
except Exception:
    print("")
' "$report_dir/report.json" 2>/dev/null || true)
  if [ "$reported" = 1 ]; then
    status=1
  fi
fi
# No report means the check did not really run: never a pass or a plain regression.
if [ ! -f "$report_dir/report.md" ]; then
  status=2
fi
case "$status" in
  0) verdict="pass" ;;
  1) verdict="allocation regression" ;;
  *) verdict="error" ;;
esac

mkdir -p "$report_dir"
printf '%s\n' "$status" >"$report_dir/exit-status"

summary=${GITHUB_STEP_SUMMARY:-/dev/null}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
inert() {  # stdin -> stdout, defused as the pull-request comment is
  /usr/bin/python3 "$here/md_inert.py" 2>/dev/null ||
    printf '\n_The report could not be made inert for this summary; see the report artifact._\n'
}
{
  printf '## %s: %s\n\n' "$title" "$verdict" | inert
  if [ -f "$report_dir/report.md" ]; then
    size=$(wc -c <"$report_dir/report.md")
    head -c "$max_summary_bytes" "$report_dir/report.md" | inert
    if [ "$size" -gt "$max_summary_bytes" ]; then
      printf '\n\n_Report truncated (%s bytes); download the artifact for the full report._\n' "$size"
    fi
  else
    printf '_No report.md was produced in %s; see the job log._\n' "$report_dir"
  fi
  if [ -f "$report_dir/report.html" ]; then
    server=${GITHUB_SERVER_URL:-}
    repo=${GITHUB_REPOSITORY:-}
    run_id=${GITHUB_RUN_ID:-}
    # shellcheck disable=SC2016  # the backticks are Markdown, not a command
    if [[ "$server" =~ ^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?$ && "$repo" =~ ^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}$ && "$run_id" =~ ^[0-9]{1,20}$ ]]; then
      printf '\nInteractive report (flame graphs, callers of each site): `report.html` in the `alloc-report` artifact of [this run](%s/%s/actions/runs/%s#artifacts).\n' "$server" "$repo" "$run_id"
    else
      printf '\nInteractive report (flame graphs, callers of each site): `report.html` in the `alloc-report` artifact.\n'
    fi
  fi
  printf '\n'
} >>"$summary"

case "$status" in
  0) echo "memprof-ci: $verdict" ;;
  1) echo "::error title=memprof-ci::allocation regression (exit 1); see the job summary or the report artifact" ;;
  *) echo "::error title=memprof-ci::the allocation check failed with an error (status $2); see the job log" ;;
esac
exit "$status"
