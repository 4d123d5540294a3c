#!/usr/bin/env bash
# profile.sh [--base-sha SHA] [--shard K/N] [--patch-id-file FILE] [--baselines PATH] MANIFEST OUT_DIR [-- PROFILE_ARG...]
#
# The measuring half of the split gate, run in the build job on the code under
# test: `memprof-ci profile --manifest MANIFEST [--base-manifest BASE] --out
# OUT_DIR [--shard K/N] PROFILE_ARG...`. OUT_DIR (run.json + profiles +
# overhead) is uploaded as an artifact and judged by judge.sh in another job.
#
# --base-sha SHA (pull requests): MANIFEST as it is in commit SHA is extracted
# with base-baselines.sh and passed as --base-manifest, so the benchmarks run
# with the base branch's rate, seeds and frames; the baselines at PATH
# (default `baselines`) in commit SHA are extracted likewise and passed as
# --baselines, so a benchmark runs as its trusted baseline's plan says
# (exact or sampled, a `detect` plan's rate and seeds). A base without
# MANIFEST (the pull request adds memprof-ci) runs without --base-manifest.
# Without --base-sha (a push), --baselines is PATH in the checkout.
#
# The harness command is `env PYTHONPATH=$MEMPROF_CI_HARNESS $MEMPROF_CI_PYTHON
# -m memprof_ci` (defaults: the harness/ two levels above this script, i.e. of
# the same checkout, and /usr/bin/python3) unless MEMPROF_CI names another
# executable.
#
# Invariants:
#   - everything this job writes is data for the judge, never trusted: the
#     judge re-derives settings and baselines from git and checks the run's
#     recorded settings;
#   - exits with the harness's status (0 everything ran, 2 an error, which
#     run.json also records); 2 as well when OUT_DIR/run.json is missing
#     afterwards, whatever the harness said;
#   - never writes outside OUT_DIR except a temporary directory it removes.
set -uo pipefail

usage() {
  echo "usage: $0 [--base-sha SHA] [--shard K/N] [--patch-id-file FILE] [--baselines PATH] MANIFEST OUT_DIR [-- PROFILE_ARG...]" >&2
  exit 2
}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
base_sha=
shard=
patch_id_file=
baselines=baselines
while [ "$#" -gt 0 ]; do
  case "$1" in
    --base-sha) [ "$#" -ge 2 ] || usage; base_sha=$2; shift 2 ;;
    --shard) [ "$#" -ge 2 ] || usage; shard=$2; shift 2 ;;
    --patch-id-file) [ "$#" -ge 2 ] || usage; patch_id_file=$2; shift 2 ;;
    --baselines) [ "$#" -ge 2 ] || usage; baselines=$2; shift 2 ;;
    --) usage ;;
    -*) echo "profile: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ "$#" -ge 2 ] || usage
manifest=$1
out_dir=$2
shift 2
extra=()
if [ "$#" -gt 0 ]; then
  [ "$1" = -- ] || usage
  shift
  extra=("$@")
fi
if [ -n "$shard" ] && ! [[ "$shard" =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]]; then
  echo "profile: --shard must be K/N, got '$shard'" >&2
  exit 2
fi
[ -f "$manifest" ] || { echo "profile: no manifest $manifest" >&2; exit 2; }

# shellcheck source=harness-cmd.sh
. "$here/harness-cmd.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(profile --manifest "$manifest")
if [ -n "$base_sha" ]; then
  base_manifest="$tmp/base/$manifest"
  "$here/base-baselines.sh" --manifest "$manifest" "$base_manifest" "$base_sha" - >&2 || exit 2
  # The base's baselines only choose how each benchmark runs (its plan);
  # the judge verifies them. Contents base-baselines.sh refuses leave
  # the benchmarks to their manifest settings, and the judge reports them.
  if ! "$here/base-baselines.sh" "$base_sha" "$tmp/base-baselines" "$baselines" >&2; then
    echo "profile: the base commit's $baselines could not be read; running without its plans" >&2
    rm -rf "$tmp/base-baselines"
    mkdir -p "$tmp/base-baselines"
  fi
  if [ -f "$base_manifest" ]; then
    args+=(--base-manifest "$base_manifest")
  else
    echo "profile: the base commit has no $manifest; profiling with the pull request's settings" >&2
  fi
  args+=(--baselines "$tmp/base-baselines")
else
  args+=(--baselines "$baselines")
fi
args+=(--out "$out_dir")
if [ -n "$shard" ]; then args+=(--shard "$shard"); fi
args+=("${extra[@]}")

if [ -n "$patch_id_file" ] && [ -f "$patch_id_file" ]; then
  MEMPROF_CI_PATCH_ID=$(head -c 256 "$patch_id_file")
  export MEMPROF_CI_PATCH_ID
fi
printf 'profile: running:'
printf ' %q' "${harness[@]}" "${args[@]}"
printf '\n'
"${harness[@]}" "${args[@]}"
status=$?
echo "profile: memprof-ci profile exited with status $status"
if [ ! -f "$out_dir/run.json" ]; then
  echo "::error title=memprof-ci profile::no $out_dir/run.json was written; the judge will report an error"
  status=2
fi
case "$status" in
  0) ;;
  *) status=2; echo "::error title=memprof-ci profile::profiling failed (see run.json's errors and the log above)" ;;
esac
exit "$status"
