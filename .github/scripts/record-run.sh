#!/usr/bin/env bash
# record-run.sh --commit SHA --measured DIR [--report FILE] [--repo DIR]
#               [--remote NAME] [--branch NAME] [--runs-path PATH] [--attempts N]
#               [--accepted-baselines PATH]
#
# Records a run of main for later judges: `memprof-ci record` turns the
# judge's measurement (DIR: one baseline-format NAME.json per benchmark,
# written by `memprof-ci check --measured-dir`), its report.json and the
# runtime patch id into RUNS_PATH/SHA.json, which this script commits to the
# data branch (default `memprof-ci-data`, files under `runs/`) and pushes to
# REMOTE (default origin). Run by the push-only `record` job, the only job
# with a write token, after the judge of a push to main passed.
#
#   --commit SHA       the measured commit (full id), present in --repo
#   --measured DIR     the run in baseline format
#   --report FILE      the judge's report.json (stored in the record)
#   --repo DIR         the repository (default .); its work tree and index are
#                      never touched: the data branch is built from git objects
#   --attempts N       pushes tried when another record won the race (default 5)
#   --accepted-baselines PATH
#                      the committed baselines' directory in --repo: benchmarks
#                      whose baseline SHA changed are marked accepted
#
# Pushing: to REMOTE as the checkout configured it. The record job's
# checkout holds the data branch's deploy key (an environment secret that
# only the default branch's record job can read; .github/PULL_REQUESTS.md,
# "Main's recorded history"), and the branch's rulesets let only that key
# update it, never by force.
#
# Invariants:
#   - the data branch only ever gains commits that add one file,
#     RUNS_PATH/SHA.json, on top of its current tip (never a force push): a
#     push rejected because another record landed first is retried on the new
#     tip; a record is never replaced (reference.py refuses a history that
#     rewrites one): a rerun of a recorded commit whose record is the same
#     file is a success that pushes nothing, one whose record differs is an
#     error (exit 2) that leaves the first record in place;
#   - nothing on the data branch is checked out or run here;
#   - bad arguments: one line, exit 2; failing to record or push: exit 2.
set -euo pipefail
trap 'echo "record-run: internal error at line $LINENO" >&2; exit 2' ERR

usage() {
  echo "usage: $0 --commit SHA --measured DIR [--report FILE] [--repo DIR] [--remote NAME]" \
       "[--branch NAME] [--runs-path PATH] [--attempts N] [--accepted-baselines PATH]" >&2
  exit 2
}
die() { echo "record-run: $*" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=data-branch-opts.sh
. "$here/data-branch-opts.sh"

commit=
measured=
report=
attempts=5
accepted=
value_opts record-run --commit=commit --measured=measured --report=report --repo=repo \
  --remote=remote --branch=branch --runs-path=runs_path --attempts=attempts \
  --accepted-baselines=accepted -- "$@"
if [ -z "$commit" ] || [ -z "$measured" ]; then usage; fi
[[ "$commit" =~ ^[0-9a-f]{40}([0-9a-f]{24})?$ ]] || die "--commit must be a full commit id"
[[ "$attempts" =~ ^[1-9][0-9]?$ ]] || die "--attempts must be in [1, 99]"
[ -d "$measured" ] || die "--measured $measured: not a directory"
measured=$(cd "$measured" && pwd)
if [ -n "$report" ]; then
  [ -f "$report" ] || die "--report $report: not a file"
  report="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
fi
check_data_branch_opts
git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null || die "commit $commit is not in $repo"

# shellcheck source=harness-cmd.sh
. "$here/harness-cmd.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(record --runs "$work/runs" --baselines "$measured" --commit "$commit")
if [ -n "$report" ]; then args+=(--report "$report"); fi
if [ -n "$accepted" ]; then args+=(--accepted-baselines "$accepted"); fi
(cd "$repo" && "${harness[@]}" "${args[@]}") || die "memprof-ci record failed"
record="$work/runs/$commit.json"
[ -f "$record" ] || die "memprof-ci record wrote no $commit.json"

: "${GIT_AUTHOR_NAME:=github-actions[bot]}" "${GIT_AUTHOR_EMAIL:=41898282+github-actions[bot]@users.noreply.github.com}"
: "${GIT_COMMITTER_NAME:=$GIT_AUTHOR_NAME}" "${GIT_COMMITTER_EMAIL:=$GIT_AUTHOR_EMAIL}"
export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
# A private index: the repository's own index and work tree stay as they are.
export GIT_INDEX_FILE="$work/index"
g() { git -C "$repo" "$@"; }
blob=$(g hash-object -w -- "$record")
tip_ref="refs/memprof-ci/record-tip"
for attempt in $(seq 1 "$attempts"); do
  parent=()
  if g fetch --no-tags --quiet "$remote" "+refs/heads/$branch:$tip_ref" 2>/dev/null; then
    tip=$(g rev-parse --verify "$tip_ref^{commit}")
    parent=(-p "$tip")
    if existing=$(g rev-parse --verify --quiet "$tip:$runs_path/$commit.json"); then
      g update-ref -d "$tip_ref" 2>/dev/null || true
      if [ "$existing" = "$blob" ]; then
        echo "record-run: $runs_path/$commit.json is already on $branch, unchanged"
        exit 0
      fi
      die "$runs_path/$commit.json is already on $branch with other content: records are never replaced"
    fi
    g read-tree "$tip"
  else
    g update-ref -d "$tip_ref" 2>/dev/null || true
    if g ls-remote --exit-code --heads "$remote" "$branch" >/dev/null 2>&1; then
      die "cannot fetch $branch from $remote"
    fi
    g read-tree --empty
  fi
  g update-index --add --cacheinfo "100644,$blob,$runs_path/$commit.json"
  tree=$(g write-tree)
  new=$(g commit-tree "$tree" "${parent[@]}" -m "memprof-ci: record the run of $commit")
  if g push --quiet "$remote" "$new:refs/heads/$branch" 2>"$work/push.log"; then
    g update-ref -d "$tip_ref" 2>/dev/null || true
    echo "record-run: recorded $runs_path/$commit.json on $branch (${new:0:12})"
    exit 0
  fi
  echo "record-run: push attempt $attempt rejected: $(grep -m 1 -E "rejected|error|fatal" "$work/push.log" || tail -n 1 "$work/push.log")" >&2
  sleep "$attempt"
done
die "could not push the record to $branch after $attempts attempts"
