#!/usr/bin/env bash
# shellcheck disable=SC2034
# data-branch-opts.sh: sourced (not run) by record-run.sh and
# render-history.sh, the two scripts that read main's data branch. Sets the
# defaults of the options they share (repo=., remote=origin,
# branch=memprof-ci-data, runs_path=runs) and defines:
#
#   value_opts PROG --name=var ... -- ARGS...
#       reads ARGS, a list of `--name VALUE` pairs, setting each named
#       variable to its VALUE (the last one given wins);
#   check_data_branch_opts
#       drops a trailing / from runs_path, checks that it is a plain relative
#       path and branch a branch name, and resolves repo to the top of its
#       git work tree.
#
# Invariants: sourcing it sets those four variables and defines the two
# functions, and runs nothing else; an argument that is not one of the
# listed options, or an option without its value, calls the sourcing
# script's `usage` after one line naming the argument; a bad runs_path,
# branch or repo calls its `die` (both exit 2); neither function runs
# anything but `git check-ref-format` and `git rev-parse`.
repo=.
remote=origin
branch=memprof-ci-data
runs_path=runs

value_opts() {
  local prog=$1 spec target
  local -a specs=()
  shift
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do specs+=("$1"); shift; done
  if [ "$#" -gt 0 ]; then shift; fi
  while [ "$#" -gt 0 ]; do
    target=
    for spec in "${specs[@]}"; do
      if [ "$1" = "${spec%%=*}" ]; then target=${spec#*=}; fi
    done
    if [ -z "$target" ]; then
      echo "$prog: unexpected argument '$1'" >&2
      usage
    fi
    [ "$#" -ge 2 ] || usage
    printf -v "$target" '%s' "$2"
    shift 2
  done
}

check_data_branch_opts() {
  runs_path=${runs_path%/}
  if ! [[ "$runs_path" =~ ^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$ ]] || [[ "/$runs_path/" == */../* ]]; then
    die "--runs-path '$runs_path' is not a plain relative path"
  fi
  git check-ref-format --branch "$branch" >/dev/null 2>&1 || die "--branch '$branch' is not a branch name"
  repo=$(cd "$repo" && git rev-parse --show-toplevel) || die "--repo: not a git work tree"
}
