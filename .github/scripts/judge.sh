#!/usr/bin/env bash
# judge.sh [OPTIONS] -- RUN_DIR...
#
# The judging half of the split gate: runs in a job that never ran the code
# under test, reads the run directories the build job(s) uploaded (data), and
# decides with `memprof-ci check --from-run RUN_DIR... --manifest PR_MANIFEST
# --base-manifest BASE_MANIFEST --baselines BASE_BASELINES
# [--proposed-baselines PR_BASELINES] [--accept-changes] [--note TEXT...]
# --report-dir OUT`, then publishes OUT with publish-report.sh.
#
#   --event NAME          github.event_name (pull_request: judged against the base)
#   --base-sha SHA        the base commit (required for pull_request)
#   --head-sha SHA        the tested commit (github.sha: the merge commit on PRs)
#   --repo DIR            git repository holding both commits (default .); only
#                         its objects are read (git ls-tree / cat-file / diff)
#   --manifest PATH       manifest path in the repository
#   --baselines PATH      baselines directory in the repository (default baselines)
#   --accept-label NAME   label that accepts changes (default `memprof-ci: accept`);
#                         the labels themselves come from $LABELS_JSON, the event
#                         that started the run from $EVENT_ACTION and $EVENT_LABEL
#                         (has-label.py --added-by-event)
#   --harness-dir PATH    note when the pull request changes PATH/ (this repository's
#                         harness: the base branch's judged it)
#   --workflows-dir PATH  note when the pull request changes PATH/ (workflow files,
#                         which GitHub takes from the pull request)
#   --build-path SPEC     note when the pull request changes files matching the git
#                         pathspec SPEC that the build job runs to build or measure
#                         the benchmarks (scripts, runtime patch, makefiles; repeatable)
#   --no-overhead         the gate does not measure the profiling overhead (passed on
#                         to the harness); without it, a run that has no overhead
#                         record for a benchmark (unmeasured.py) is an error
#   --expect-runs N       number of RUN_DIRs that must hold a run.json
#   --plan-result R       needs.<plan>.result; anything but `success` is an error
#   --build-result R      needs.<build>.result; anything but `success` is an error
#   --note TEXT           extra note for the report (repeatable)
#   --runs-branch NAME    the data branch of main's recorded runs (record-run.sh);
#                         read as git objects from origin/NAME: the reference is
#                         the recorded run of the merge base (on pushes: of the
#                         first parent), or of its nearest recorded first-parent
#                         ancestor (reference.py); without it, or without such
#                         a record, the committed baselines
#   --runs-path PATH      directory of the records on that branch (default runs)
#   --max-distance N      first-parent commits searched for a record (default 50)
#   --check-args STRING   extra `memprof-ci check` arguments, split on whitespace;
#                         only these are allowed: --strict (a benchmark without a
#                         baseline fails) and -v/-q (--verbose/--quiet, repeatable):
#                         none of them can change what is judged or against what
#   --work DIR            scratch directory (default: a new temporary one)
#   --out DIR             report directory (report.md, report.json, exit-status)
#
# The harness command is `env PYTHONPATH=$MEMPROF_CI_HARNESS $MEMPROF_CI_PYTHON
# -m memprof_ci` (defaults: the harness/ of the checkout this script is in,
# i.e. the trusted one, and /usr/bin/python3) unless MEMPROF_CI names another
# executable.
#
# This script is the plumbing: it runs git, the helpers and the harness,
# copies files, and writes what it observes as facts into WORK/facts; every
# decision (the forced errors, the accept label's timing, which removed
# baselines are restored, the reference and the drift section, the notes,
# which report stands and the final status) is judge_policy.py's, asked
# again whenever this script needs one (decide).
#
# Invariants:
#   - trusted inputs (settings via --base-manifest, baselines) come from the
#     base commit's git objects on pull_request events and from the tested
#     commit otherwise; with --runs-branch the reference of each benchmark is
#     main's recorded run (written only by the default branch's record job,
#     validated like any baseline, never run; a hostile or rewritten record
#     makes the verdict an error) unless its committed baseline or manifest
#     entry changed in parsed content since that record (then its committed
#     baseline); a benchmark whose proposed baseline changes in parsed
#     content is judged against its committed baseline with the accept
#     label (what the label accepts against) and, without it, against both
#     references, the stricter verdict standing (reference.py find and
#     compose); every case is named in the report's notes;
#   - the report's drift section (committed baselines against the recorded
#     reference on pull requests, against this run's measurement on pushes)
#     is information and never changes the verdict;
#   - the pull request's manifest and baselines are read
#     from the tested commit's objects as data and only ever reach the harness
#     as --manifest (which benchmarks exist) and --proposed-baselines;
#   - --proposed-baselines is passed iff a proposed baseline changes in
#     parsed content (its unchanged benchmarks hold the reference's
#     documents there, so the harness sees no change of them);
#     --accept-changes iff, in addition, the event is a pull request, the accept label is in $LABELS_JSON and the event that
#     started this run added it (so it accepts the commit a maintainer put it
#     on, never a later push); without the
#     label, the proposed baselines are passed with every deletion of a
#     trusted baseline of a benchmark the manifest no longer runs undone, so
#     removing or renaming a benchmark fails it as missing;
#   - nothing from the tested commit or the run directories is executed;
#   - --check-args adds only allow-listed flags (--strict, -v, -q), before
#     the trusted arguments: it cannot name other baselines, settings, run
#     directories, a -k/-m selection or pytest arguments;
#   - a missing run directory, a plan or build job that did not succeed, an
#     unreadable label payload or a benchmark without the baseline it needs
#     (bench_sets.py) makes the verdict an error (2), whatever the harness
#     said: never a pass, never a plain regression;
#   - the memtrace CTF traces the build job kept beside its profiles
#     (RUN_DIR/profiles/*.ctf, one seed per benchmark) are copied, as data
#     for a reviewer's memtrace_viewer, into OUT/traces/: regular files
#     only, never read or run here;
#   - workflow commands are stopped (`::stop-commands::` with a random
#     token) from the first line this script prints until the verdict is
#     published, and stderr is merged into stdout: nothing the pull request
#     wrote (run.json's error texts reach the log through the harness) acts
#     as a command; only publish-report.sh's annotation does;
#   - every string judge.sh itself writes into OUT/report.md goes through
#     the harness's mdsafe.text() (md_report.py); publish-report.sh gives
#     the job summary report.md through md_inert.inert();
#   - OUT/report.md always exists afterwards; exit status and OUT/exit-status
#     are the normalised verdict (0 pass, 1 regression, 2 error); `status=N`
#     is appended to $GITHUB_OUTPUT when set.
set -uo pipefail

# Everything this script and the harness print may carry text of the pull
# request (run.json's error texts, file names, notes): no line of it may act
# as a workflow command. Commands are stopped under a random token, which
# nothing made before this run can know, until the verdict is published;
# stderr joins stdout, so the runner reads one stream in order.
exec 2>&1
fence=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
[ "${#fence}" = 32 ] || { echo "judge: cannot read /dev/urandom"; exit 2; }
echo "::stop-commands::$fence"
resume_commands() { if [ -n "$fence" ]; then echo "::$fence::"; fence=; fi; }
tmp_work=
# shellcheck disable=SC2317  # run by the EXIT trap
on_exit() { resume_commands; if [ -n "$tmp_work" ]; then rm -rf "$tmp_work"; fi; }
trap on_exit EXIT

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() {
  echo "usage: $0 --event NAME [--base-sha SHA] --head-sha SHA [--repo DIR] --manifest PATH" \
       "[--baselines PATH] [--accept-label NAME] [--harness-dir PATH] [--workflows-dir PATH]" \
       "[--build-path SPEC]... [--no-overhead]" \
       "[--expect-runs N] [--plan-result R] [--build-result R] [--note TEXT]... [--check-args STRING]" \
       "[--runs-branch NAME] [--runs-path PATH] [--max-distance N] [--work DIR]" \
       "--out DIR -- RUN_DIR..." >&2
  exit 2
}

event=
base_sha=
head_sha=
repo=.
manifest=
baselines=baselines
accept_label='memprof-ci: accept'
harness_dir=
workflows_dir=
expect_runs=
plan_result=success
build_result=success
notes=()
build_paths=()
overhead=1
check_args=
runs_branch=
runs_path=runs
max_distance=50
work=
out=
while [ "$#" -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    --no-overhead) overhead=0; shift ;;
    --event|--base-sha|--head-sha|--repo|--manifest|--baselines|--accept-label|--harness-dir|\
    --workflows-dir|--build-path|--expect-runs|--plan-result|--build-result|--note|--check-args|--work|--out|\
    --runs-branch|--runs-path|--max-distance)
      [ "$#" -ge 2 ] || usage
      case "$1" in
        --event) event=$2 ;;
        --base-sha) base_sha=$2 ;;
        --head-sha) head_sha=$2 ;;
        --repo) repo=$2 ;;
        --manifest) manifest=$2 ;;
        --baselines) baselines=${2%/} ;;
        --accept-label) accept_label=$2 ;;
        --harness-dir) harness_dir=${2%/} ;;
        --workflows-dir) workflows_dir=${2%/} ;;
        --build-path) build_paths+=("$2") ;;
        --expect-runs) expect_runs=$2 ;;
        --plan-result) plan_result=$2 ;;
        --build-result) build_result=$2 ;;
        --note) notes+=("$2") ;;
        --check-args) check_args=$2 ;;
        --runs-branch) runs_branch=$2 ;;
        --runs-path) runs_path=${2%/} ;;
        --max-distance) max_distance=$2 ;;
        --work) work=$2 ;;
        --out) out=$2 ;;
      esac
      shift 2 ;;
    *) echo "judge: unexpected argument '$1'" >&2; usage ;;
  esac
done
run_dirs=("$@")
if [ -z "$event" ] || [ -z "$head_sha" ] || [ -z "$manifest" ] || [ -z "$baselines" ] || [ -z "$out" ]; then usage; fi
if [ "${#run_dirs[@]}" -eq 0 ]; then echo "judge: no RUN_DIR given" >&2; usage; fi
case "$expect_runs" in
  '') ;;
  *[!0-9]*|0) echo "judge: --expect-runs must be a positive integer, got '$expect_runs'" >&2; exit 2 ;;
esac
if [ -z "$accept_label" ]; then echo "judge: --accept-label must not be empty" >&2; exit 2; fi
if [ -n "$runs_branch" ] && ! git check-ref-format --branch "$runs_branch" >/dev/null 2>&1; then
  echo "judge: --runs-branch '$runs_branch' is not a branch name" >&2; exit 2
fi
case "$max_distance" in
  ''|*[!0-9]*) echo "judge: --max-distance must be a non-negative integer, got '$max_distance'" >&2; exit 2 ;;
esac

harness_path=${MEMPROF_CI_HARNESS:-$(cd "$here/../.." && pwd)/harness}
if [ -n "${MEMPROF_CI:-}" ]; then
  harness=("$MEMPROF_CI")
else
  harness=(env "PYTHONPATH=$harness_path" "${MEMPROF_CI_PYTHON:-/usr/bin/python3}" -m memprof_ci)
fi
reference_py=(env "PYTHONPATH=$harness_path" /usr/bin/python3 "$here/reference.py")
# judge.sh's own Markdown: every string through the harness's mdsafe.
md_report=(env "PYTHONPATH=$harness_path" /usr/bin/python3 "$here/md_report.py")
policy=(/usr/bin/python3 "$here/judge_policy.py")

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "$work" ]; then
  work=$(mktemp -d)
  tmp_work=$work
else
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
fi
abs_runs=()
for d in "${run_dirs[@]}"; do
  case "$d" in /*) abs_runs+=("$d") ;; *) abs_runs+=("$PWD/$d") ;; esac
done

# What this script observes goes into $facts (judge_policy.py's input: one
# NUL-terminated KEY=VALUE record each); every decision is the policy's.
facts="$work/facts"
: >"$facts"
fact() {  # KEY VALUE...: one record per VALUE
  local key=$1 value
  shift
  for value in "$@"; do printf '%s=%s\0' "$key" "$value" >>"$facts"; done
}
fact_lines() {  # KEY TEXT: one record per non-empty line of TEXT
  local key=$1 line
  while IFS= read -r line; do [ -z "$line" ] || fact "$key" "$line"; done <<<"$2"
}

# Any failure before the harness runs still leaves a report behind.
fail() {
  echo "judge: $*" >&2
  "${md_report[@]}" error "$*" >"$out/report.md" ||
    printf '## memprof-ci could not judge this run\n\nSee the job log.\n' >"$out/report.md"
  rm -f "$out/report.json"
  resume_commands
  "$here/publish-report.sh" --final "$out" 2 "${MEMPROF_CI_TITLE:-memprof-ci allocation report}"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "status=2" >>"$GITHUB_OUTPUT"; fi
  exit 2
}

git_repo() { git -C "$repo" "$@"; }
resolve() {
  git_repo rev-parse --verify --quiet "$1^{commit}" ||
    { git_repo fetch --no-tags --quiet origin "$1" >&2 && git_repo rev-parse --verify --quiet "$1^{commit}"; }
}

case "$event" in
  pull_request|pull_request_target)
    is_pr=1
    [ -n "$base_sha" ] || fail "BASE_SHA is required for a $event event."
    ;;
  *) is_pr=0 ;;
esac
head=$(resolve "$head_sha") || fail "Cannot resolve the tested commit $head_sha in $repo."
if [ "$is_pr" = 1 ]; then
  base=$(resolve "$base_sha") || fail "Cannot resolve the base commit $base_sha in $repo."
else
  base=$head
fi
fact pr "$is_pr"
fact accept_label "$accept_label"
fact baselines "$baselines"
fact manifest "$manifest"
fact base "$base"
[ -z "$harness_dir" ] || fact harness_dir "$harness_dir"
[ -z "$workflows_dir" ] || fact workflows_dir "$workflows_dir"
fact run_dirs "${#run_dirs[@]}"
[ -z "$expect_runs" ] || fact expect_runs "$expect_runs"
fact overhead "$overhead"
fact plan_result "$plan_result"
fact build_result "$build_result"

# The policy's decision on the facts so far: sets the d_* variables.
decide() {
  local rec
  "${policy[@]}" "$facts" >"$work/decision" 2>"$work/policy.log" ||
    fail "$(tail -n 1 "$work/policy.log")"
  d_restore=() d_notes=() d_reference='' d_status='' d_report='' d_paragraph=''
  while IFS= read -r -d '' rec; do
    case "${rec%%=*}" in
      propose) d_propose=${rec#*=} ;;
      compose_accept) d_compose_accept=${rec#*=} ;;
      restore) d_restore+=("${rec#*=}") ;;
      reference) d_reference=${rec#*=} ;;
      drift) d_drift=${rec#*=} ;;
      drift_title) d_drift_title=${rec#*=} ;;
      accept) d_accept=${rec#*=} ;;
      forced_error) ;;  # already in status
      note) d_notes+=("${rec#*=}") ;;
      status) d_status=${rec#*=} ;;
      report) d_report=${rec#*=} ;;
      paragraph) d_paragraph=${rec#*=} ;;
      *) fail "judge_policy.py printed an unknown key." ;;
    esac
  done <"$work/decision"
}

# The trusted side: settings and baselines of the base commit.
base_root="$work/base"
pr_root="$work/pr"
extract() {  # COMMIT ROOT WHICH: base-baselines.sh, its last complaint in the failure
  local log="$work/extract-$3.log"
  (cd "$repo" && "$here/base-baselines.sh" --manifest "$manifest" "$2/$manifest" "$1" "$2/$baselines" "$baselines") 2>"$log" && {
    cat "$log" >&2
    return 0
  }
  cat "$log" >&2
  fail "Cannot extract $manifest and $baselines/ from the $3 commit $1: $(tail -n 1 "$log")"
}
extract "$base" "$base_root" base
# The pull request's side, as data only.
extract "$head" "$pr_root" tested
[ -f "$pr_root/$manifest" ] || fail "The tested commit $head has no manifest $manifest."
base_has_manifest=0
[ -f "$base_root/$manifest" ] && base_has_manifest=1
fact base_has_manifest "$base_has_manifest"
if [ "$base_has_manifest" = 0 ]; then
  mkdir -p "$(dirname "$base_root/$manifest")"
  cp "$pr_root/$manifest" "$base_root/$manifest"
fi

changed_files() {  # PATH -> files under PATH/ that BASE...HEAD changes
  git_repo diff --name-only "${base}...${head}" -- "$1/"
}
# The reference the run is judged against: main's recorded run of the
# merge base (the pushed commit's first parent on pushes) or of its nearest
# recorded first-parent ancestor, benchmark by benchmark (a benchmark whose
# committed baseline or manifest entry changed since that record keeps its
# committed baseline), else the committed baselines. Records what
# reference.py find answered; the policy chooses the reference and the
# drift section (decide). Which benchmarks a pull request's proposed
# baselines change is decided afterwards (compose).
find_reference() {
  [ -n "$runs_branch" ] || return 0
  local data_ref="refs/remotes/origin/$runs_branch" from found
  # The newest records, when origin can be reached; else what the checkout fetched.
  git_repo fetch --no-tags --quiet origin "+refs/heads/$runs_branch:$data_ref" >/dev/null 2>&1 || true
  if [ "$is_pr" = 1 ]; then
    from=$(git_repo merge-base "$base" "$head") || fail "Cannot find the merge base of $base and $head."
  else
    from=$(git_repo rev-parse --verify --quiet "$head^1") || from=
  fi
  fact reference_from "${from:--}"
  [ -n "$from" ] || return 0
  found=$("${reference_py[@]}" find --repo "$repo" --data-ref "$data_ref" --runs-path "$runs_path" \
            --from "$from" --accepted "$base" --max-distance "$max_distance" \
            --committed-path "$baselines" --manifest "$manifest" --baselines "$base_root/$baselines" \
            --out "$work/reference" --record-out "$work/recorded" 2>"$work/reference.log") ||
    fail "Main's recorded runs ($runs_branch) cannot be used: $(tail -n 1 "$work/reference.log")"
  fact_lines found "$found"
  if [ -d "$work/recorded" ]; then fact recorded_dir 1; fi
}

# The caller's extra arguments come first, each allowed by the policy
# (judge_policy.py check-args): the trusted ones after them decide (and
# none of them could be overridden).
check=(check)
if [ -n "$check_args" ]; then
  read -r -a extra <<<"$check_args"
  refused=$("${policy[@]}" check-args "${extra[@]}") ||
    fail "${refused:-judge_policy.py could not decide --check-args.}"
  check+=("${extra[@]}")
fi
present=0
for d in "${abs_runs[@]}"; do
  if [ -f "$d/run.json" ]; then check+=(--from-run "$d"); present=$((present + 1)); fi
done
missing=()
for d in "${run_dirs[@]}"; do [ -f "$d/run.json" ] || missing+=("$d"); done
fact present "$present"
fact missing "${missing[@]}"
if [ "$overhead" = 1 ] && [ "$present" -gt 0 ]; then
  if unmeasured=$(/usr/bin/python3 "$here/unmeasured.py" "${abs_runs[@]}" 2>"$work/unmeasured.log"); then
    fact_lines unmeasured "$unmeasured"
  else
    fact unmeasured_error "$(tail -n 1 "$work/unmeasured.log")"
  fi
fi

check+=(--manifest "$pr_root/$manifest" --base-manifest "$base_root/$manifest")

if [ "$is_pr" = 1 ]; then
  bl_changed=$(changed_files "$baselines") || fail "git diff ${base}...${head} failed (is the history deep enough?)"
  fact_lines baselines_changed "$bl_changed"
  if [ -n "$bl_changed" ]; then
    echo "judge: this pull request changes $baselines/:" >&2
    printf '%s\n' "$bl_changed" | sed 's/^/  /' >&2
  fi
  if label=$("$here/has-label.py" --added-by-event "$accept_label"); then
    fact label "$label"
  else
    fact label unreadable
  fi
  if [ -n "$harness_dir" ]; then
    h_changed=$(changed_files "$harness_dir") || fail "git diff ${base}...${head} failed"
    fact_lines harness_changed "$h_changed"
  fi
  if [ "${#build_paths[@]}" -gt 0 ]; then
    b_changed=$(git_repo diff --name-only "${base}...${head}" -- "${build_paths[@]}") || fail "git diff ${base}...${head} failed"
    fact_lines build_changed "$b_changed"
  fi
  if [ -n "$workflows_dir" ]; then
    w_changed=$(changed_files "$workflows_dir") || fail "git diff ${base}...${head} failed"
    fact_lines workflows_changed "$w_changed"
  fi
fi
# Every benchmark the tested manifest runs needs a baseline in the tested
# commit, and one that the base already runs needs a trusted one: a
# benchmark without a baseline is never judged, so it must not pass as "new"
# on the branch that runs it.
sets_args=(--pr-manifest "$pr_root/$manifest" --pr-baselines "$pr_root/$baselines"
           --base-baselines "$base_root/$baselines")
if [ "$base_has_manifest" = 1 ]; then sets_args+=(--base-manifest "$base_root/$manifest"); fi
sets=$(/usr/bin/python3 "$here/bench_sets.py" "${sets_args[@]}" 2>"$work/sets.log") ||
  fail "Cannot compare the benchmarks of $manifest with $baselines/: $(tail -n 1 "$work/sets.log")"
fact_lines sets "$sets"
decide
proposed=
if [ "$d_propose" = 1 ]; then proposed="$pr_root/$baselines"; fi
# A benchmark with a trusted baseline that the pull request drops from its
# manifest and whose baseline it deletes (removed, or renamed: removed +
# new) is "removed" for the harness. Only the accept label honours that
# deletion (a deletion is a change of content, so the label then accepts);
# without it the policy has the deletion undone before anything else reads
# the proposed baselines, and the benchmark fails as missing.
if [ "${#d_restore[@]}" -gt 0 ]; then
  restored="$work/proposed"
  mkdir -p "$restored"
  cp -- "$proposed"/*.json "$restored"/ 2>/dev/null || true
  for name in "${d_restore[@]}"; do cp -- "$base_root/$baselines/$name.json" "$restored/"; done
  proposed=$restored
fi
find_reference
decide
reference="$base_root/$baselines"
if [ "$d_reference" = recorded ]; then reference="$work/reference"; fi
# Which benchmarks the pull request's proposed baselines really change
# (parsed content, reference.py compose), and the directories each pass of
# the harness judges with: main's recorded run stays the reference of every
# other benchmark.
compose_args=(compose --committed "$base_root/$baselines" --reference "$reference" --out "$work/compose")
if [ -n "$proposed" ]; then compose_args+=(--proposed "$proposed"); fi
if [ "$d_compose_accept" = 1 ]; then compose_args+=(--accept); fi
changed=$("${reference_py[@]}" "${compose_args[@]}" 2>"$work/compose.log") ||
  fail "Cannot compare the proposed baselines with the committed ones: $(tail -n 1 "$work/compose.log")"
fact composed 1
fact_lines compose "$changed"
strict=
if [ -d "$work/compose/strict" ]; then strict="$work/compose/strict"; fact strict 1; fi
decide
notes+=("${d_notes[@]}")
proposed=
if [ -d "$work/compose/proposed" ]; then proposed="$work/compose/proposed"; fi
check_ref="$work/compose/reference"
common=()
if [ -n "$proposed" ]; then common+=(--proposed-baselines "$proposed"); fi
if [ "$overhead" = 0 ]; then common+=(--no-overhead); fi
accept=false
if [ "$d_accept" = 1 ]; then accept=true; common+=(--accept-changes); fi
for n in "${notes[@]}"; do common+=(--note "$n"); done
echo "judge: accept-changes=$accept" >&2

run_check() {  # REFERENCE REPORT_DIR [ARG...]: one pass of the harness; its exit status
  local ref=$1 dir=$2 st
  shift 2
  local argv=("${check[@]}" --baselines "$ref" "$@" "${common[@]}" --report-dir "$dir")
  printf 'judge: running:'
  printf ' %q' "${harness[@]}" "${argv[@]}"
  printf '\n'
  "${harness[@]}" "${argv[@]}"
  st=$?
  echo "judge: memprof-ci check exited with status $st"
  return "$st"
}
if [ "$present" -gt 0 ]; then
  run_check "$check_ref" "$out" --measured-dir "$out/measured"
  fact run_exit "$?"
  if [ -n "$strict" ]; then
    # The same run against the committed baselines of the changed
    # benchmarks: the policy says whose report stands (the worse verdict).
    run_check "$strict" "$work/strict-report"
    fact strict_exit "$?"
  fi
  decide
  if [ "$d_report" = strict ]; then
    for f in report.md report.json report.html junit.xml; do
      rm -f "$out/$f"
      if [ -f "$work/strict-report/$f" ]; then cp -- "$work/strict-report/$f" "$out/$f"; fi
    done
  fi
  if [ -n "$d_paragraph" ]; then "${md_report[@]}" para "$d_paragraph" >>"$out/report.md"; fi
else
  "${md_report[@]}" error "No build job uploaded a run directory with a run.json." "${notes[@]}" \
    >"$out/report.md" ||
    printf '## memprof-ci could not judge this run\n\nSee the job log.\n' >"$out/report.md"
  rm -f "$out/report.json"
fi
drift_now=
case "$d_drift" in
  measured) drift_now="$out/measured" ;;
  recorded) drift_now="$work/recorded" ;;
esac
if [ -n "$drift_now" ] && [ -d "$drift_now" ] && [ -f "$out/report.md" ]; then
  if "${reference_py[@]}" drift --title "$d_drift_title" "$base_root/$baselines" "$drift_now" \
       >"$work/drift.md" 2>"$work/drift.log"; then
    cp -- "$work/drift.md" "$out/drift.md"
    cat "$work/drift.md" >>"$out/report.md"
  else
    "${md_report[@]}" para "The drift since the accepted baselines could not be computed: $(tail -n 1 "$work/drift.log")" \
      >>"$out/report.md"
  fi
fi
for d in "${run_dirs[@]}"; do
  [ -d "$d/profiles" ] || continue
  find "$d/profiles" -maxdepth 1 -type f -name '*.ctf' -print0 |
    while IFS= read -r -d '' f; do
      mkdir -p "$out/traces" && cp -- "$f" "$out/traces/"
    done
done
status=$d_status

set +e
resume_commands
"$here/publish-report.sh" --final "$out" "$status" "${MEMPROF_CI_TITLE:-memprof-ci allocation report}"
status=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "status=$status" >>"$GITHUB_OUTPUT"; fi
exit "$status"
