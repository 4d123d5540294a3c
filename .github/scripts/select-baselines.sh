#!/usr/bin/env bash
# select-baselines.sh EVENT_NAME BASE_SHA OUT_DIR [BASELINES_PATH]
#
# Decides which baselines the allocation check compares against, and prints
# GitHub step outputs (key=value lines) on stdout; appends them to
# $GITHUB_OUTPUT too when that is set.
#
#   baselines=DIR       directory to pass as BASELINES= / --baselines
#   proposed=true|false whether the pull request changed BASELINES_PATH
#   check_args=...      extra `memprof-ci check` arguments (--proposed-baselines)
#
# Invariants:
#   - on `pull_request` / `pull_request_target` the baselines are ALWAYS the base
#     commit's (extracted by base-baselines.sh into OUT_DIR), never the
#     pull request's copies, so editing baselines/ cannot hide a regression;
#   - the pull request's own copies are only ever passed as
#     --proposed-baselines, and only when `git diff BASE...HEAD` shows the PR
#     touched them;
#   - on any other event (push to the default branch, manual runs) the
#     committed BASELINES_PATH is used as is;
#   - exit 2 on usage or git errors; never modifies the work tree.
set -euo pipefail

usage() { echo "usage: $0 EVENT_NAME BASE_SHA OUT_DIR [BASELINES_PATH]" >&2; exit 2; }
if [ "$#" -lt 3 ] || [ "$#" -gt 4 ]; then usage; fi
event=$1
base_sha=$2
out_dir=$3
path=${4:-baselines}
path=${path%/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

emit() {
  printf '%s\n' "$@"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s\n' "$@" >>"$GITHUB_OUTPUT"
  fi
}

case "$event" in
  pull_request|pull_request_target)
    [ -n "$base_sha" ] || { echo "select-baselines: BASE_SHA is required for $event" >&2; exit 2; }
    "$here/base-baselines.sh" "$base_sha" "$out_dir" "$path" >&2
    if ! changed=$(git diff --name-only "${base_sha}...HEAD" -- "$path/"); then
      echo "select-baselines: git diff ${base_sha}...HEAD failed (is the history deep enough?)" >&2
      exit 2
    fi
    if [ -n "$changed" ]; then
      echo "select-baselines: this pull request changes $path/:" >&2
      printf '%s\n' "$changed" | sed 's/^/  /' >&2
      emit "baselines=$out_dir" "proposed=true" "check_args=--proposed-baselines $path"
    else
      emit "baselines=$out_dir" "proposed=false" "check_args="
    fi
    ;;
  *)
    emit "baselines=$path" "proposed=false" "check_args="
    ;;
esac
