#!/usr/bin/env bash
# render-history.sh --out FILE [--repo DIR] [--remote NAME] [--branch NAME]
#                   [--runs-path PATH] [--commit-url PREFIX]
#
# Renders main's recorded runs as one page: the files RUNS_PATH/*.json of the
# data branch (default `memprof-ci-data`, `runs/`) on REMOTE (default origin)
# are read from git objects into a scratch directory, and `memprof-ci
# history` writes FILE from them. Run by the push-only `record` job after it
# recorded the run, so each push to main leaves the page as an artifact.
#
# Invariants:
#   - nothing of the data branch is checked out or run: its runs are data,
#     which `memprof-ci history` validates (a bad record: one line, exit 2);
#   - the repository's work tree and index are never touched;
#   - bad arguments, a missing data branch or a failed rendering: one line,
#     exit 2.
set -euo pipefail
trap 'echo "render-history: internal error at line $LINENO" >&2; exit 2' ERR

usage() {
  echo "usage: $0 --out FILE [--repo DIR] [--remote NAME] [--branch NAME] [--runs-path PATH]" \
       "[--commit-url PREFIX]" >&2
  exit 2
}
die() { echo "render-history: $*" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=data-branch-opts.sh
. "$here/data-branch-opts.sh"

out=
commit_url=
value_opts render-history --out=out --repo=repo --remote=remote --branch=branch \
  --runs-path=runs_path --commit-url=commit_url -- "$@"
[ -n "$out" ] || usage
check_data_branch_opts

# shellcheck source=harness-cmd.sh
. "$here/harness-cmd.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ref="refs/memprof-ci/history-tip"
git -C "$repo" fetch --no-tags --quiet "$remote" "+refs/heads/$branch:$ref" 2>/dev/null ||
  die "cannot fetch the data branch $branch from $remote"
mkdir "$work/data"
git -C "$repo" archive "$ref" -- "$runs_path" | tar -x -C "$work/data" ||
  die "$branch holds no $runs_path/"
git -C "$repo" update-ref -d "$ref" 2>/dev/null || true
args=(history --runs "$work/data/$runs_path" --out "$out")
if [ -n "$commit_url" ]; then args+=(--commit-url "$commit_url"); fi
"${harness[@]}" "${args[@]}" || die "memprof-ci history failed"
