#!/usr/bin/env bash
# merge-shards.sh OUT_DIR EXPECTED_SHARDS SHARD_DIR...
#
# Combines the per-shard reports of a sharded allocation check into one report
# with `memprof-ci merge OUT_DIR SHARD_DIR...`, then publishes it
# (job summary, OUT_DIR/exit-status) through publish-report.sh.
#
# The merge command is `env PYTHONPATH=$MEMPROF_CI_HARNESS $MEMPROF_CI_PYTHON -m memprof_ci`
# (defaults: harness, /usr/bin/python3) unless MEMPROF_CI names another
# executable (the tests use a stub there).
#
# Invariants:
#   - a shard that produced no report.json (crashed, cancelled, artifact
#     missing) makes the merged verdict an error (2), never a pass;
#   - SHARD_DIR arguments are only read; OUT_DIR is created if needed;
#   - exits with the normalised merged status: 0 pass, 1 regression, 2 error.
set -uo pipefail

if [ "$#" -lt 3 ]; then
  echo "usage: $0 OUT_DIR EXPECTED_SHARDS SHARD_DIR..." >&2
  exit 2
fi
out_dir=$1
expected=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case "$expected" in
  ''|*[!0-9]*|0) echo "merge-shards: EXPECTED_SHARDS must be a positive integer, got '$expected'" >&2; exit 2 ;;
esac

if [ -n "${MEMPROF_CI:-}" ]; then
  merge_cmd=("$MEMPROF_CI")
else
  merge_cmd=(env "PYTHONPATH=${MEMPROF_CI_HARNESS:-harness}" "${MEMPROF_CI_PYTHON:-/usr/bin/python3}" -m memprof_ci)
fi

present=()
missing=()
for dir in "$@"; do
  if [ -f "$dir/report.json" ]; then
    present+=("$dir")
  else
    missing+=("$dir")
  fi
done
mkdir -p "$out_dir"

if [ "${#present[@]}" -gt 0 ]; then
  "${merge_cmd[@]}" merge "$out_dir" "${present[@]}"
  status=$?
  echo "merge-shards: merge of ${#present[@]} shard(s) exited with status $status"
else
  status=2
  echo "merge-shards: no shard produced a report.json" >&2
fi

if [ "${#present[@]}" -ne "$expected" ] || [ "${#missing[@]}" -gt 0 ]; then
  status=2
  {
    printf '\n\n### Incomplete sharded run\n\n'
    printf 'Expected %s shard report(s), found %s.' "$expected" "${#present[@]}"
    if [ "${#missing[@]}" -gt 0 ]; then
      printf ' Missing report.json in:'
      printf ' \x60%s\x60' "${missing[@]}"
    fi
    printf '\nThe verdict is an error until every shard reports.\n'
  } >>"$out_dir/report.md"
  echo "merge-shards: expected $expected shard report(s), found ${#present[@]}" >&2
fi

"$here/publish-report.sh" "$out_dir" "$status" "${MEMPROF_CI_TITLE:-memprof-ci allocation report (merged)}"
