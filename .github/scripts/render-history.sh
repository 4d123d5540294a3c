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

out=
repo=.
remote=origin
branch=memprof-ci-data
runs_path=runs
commit_url=
while [ "$#" -gt 0 ]; do
  case "$1" in
    --out|--repo|--remote|--branch|--runs-path|--commit-url)
      [ "$#" -ge 2 ] || usage
      case "$1" in
        --out) out=$2 ;;
        --repo) repo=$2 ;;
        --remote) remote=$2 ;;
        --branch) branch=$2 ;;
        --runs-path) runs_path=${2%/} ;;
        --commit-url) commit_url=$2 ;;
      esac
      shift 2 ;;
    *) echo "render-history: unexpected argument '$1'" >&2; usage ;;
  esac
done
[ -n "$out" ] || usage
if ! [[ "$runs_path" =~ ^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$ ]] || [[ "/$runs_path/" == */../* ]]; then
  die "--runs-path '$runs_path' is not a plain relative path"
fi
git check-ref-format --branch "$branch" >/dev/null 2>&1 || die "--branch '$branch' is not a branch name"
repo=$(cd "$repo" && git rev-parse --show-toplevel) || die "--repo: not a git work tree"

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
