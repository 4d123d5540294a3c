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
if [ "$base_has_manifest" = 0 ]; then
  mkdir -p "$(dirname "$base_root/$manifest")"
  cp "$pr_root/$manifest" "$base_root/$manifest"
  notes+=("The base commit has no $manifest: the settings of this pull request's manifest were used (there were no trusted settings or baselines to protect yet).")
fi

changed_files() {  # PATH -> files under PATH/ that BASE...HEAD changes
  git_repo diff --name-only "${base}...${head}" -- "$1/"
}
list_files() {  # newline-separated names -> "`a`, `b`, ... and N more"
  local bt=$'\x60' name shown='' count=0
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    count=$((count + 1))
    if [ "$count" -le 20 ]; then shown+="${shown:+, }$bt${name//$bt/}$bt"; fi
  done
  if [ "$count" -gt 20 ]; then shown+=" and $((count - 20)) more"; fi
  printf '%s\n' "$shown"
}

# The reference the run is judged against: main's recorded run of the
# merge base (the pushed commit's first parent on pushes) or of its nearest
# recorded first-parent ancestor, benchmark by benchmark (a benchmark whose
# committed baseline or manifest entry changed since that record keeps its
# committed baseline), else the committed baselines. Sets $reference, and
# $drift_now/$drift_title for the drift section. Which benchmarks a pull
# request's proposed baselines change is decided afterwards (compose).
reference="$base_root/$baselines"
drift_now=
drift_title=
choose_reference() {
  if [ "$is_pr" = 0 ]; then
    drift_now="$out/measured"
    drift_title="Drift of this commit since the accepted baselines"
  fi
  [ -n "$runs_branch" ] || return 0
  local data_ref="refs/remotes/origin/$runs_branch" from what found kind rec dist _n kept stale
  # The newest records, when origin can be reached; else what the checkout fetched.
  git_repo fetch --no-tags --quiet origin "+refs/heads/$runs_branch:$data_ref" >/dev/null 2>&1 || true
  if [ "$is_pr" = 1 ]; then
    from=$(git_repo merge-base "$base" "$head") || fail "Cannot find the merge base of $base and $head."
    what="the merge base"
  else
    from=$(git_repo rev-parse --verify --quiet "$head^1") || from=
    what="the pushed commit's first parent"
  fi
  if [ -z "$from" ]; then
    notes+=("Reference: the committed baselines (the fallback): the pushed commit has no parent.")
    return 0
  fi
  found=$("${reference_py[@]}" find --repo "$repo" --data-ref "$data_ref" --runs-path "$runs_path" \
            --from "$from" --accepted "$base" --max-distance "$max_distance" \
            --committed-path "$baselines" --manifest "$manifest" --baselines "$base_root/$baselines" \
            --out "$work/reference" --record-out "$work/recorded" 2>"$work/reference.log") ||
    fail "Main's recorded runs ($runs_branch) cannot be used: $(tail -n 1 "$work/reference.log")"
  IFS=$'\t' read -r kind rec dist _n kept stale <<<"$found"
  if [ "$kind" = stale ]; then stale=$_n; fi
  if [ "$kept" = - ]; then kept=; fi
  if [ "$stale" = - ]; then stale=; fi
  case "$kind" in
    recorded)
      reference="$work/reference"
      if [ "$dist" = 0 ]; then
        notes+=("Reference: main's recorded run of ${rec:0:12}, $what (distance 0). The verdict is this change's own effect; the drift of main since the accepted baselines is shown separately.")
      else
        notes+=("Reference: main's recorded run of ${rec:0:12}, the nearest recorded first-parent ancestor of $what (${from:0:12}), $dist commit(s) before it. The verdict is this change's own effect plus that of those $dist commit(s).")
      fi
      if [ -n "$kept" ]; then
        notes+=("Main's recorded run has no measurement of $(printf '%s\n' "${kept//,/$'\n'}" | list_files): judged against the committed baseline.")
      fi
      if [ -n "$stale" ]; then
        notes+=("The committed baseline or the manifest entry of $(printf '%s\n' "${stale//,/$'\n'}" | list_files) changed in content between main's recorded run (${rec:0:12}) and ${base:0:12}, so that run is not their accepted state: judged against the committed baseline.")
      fi ;;
    stale)
      notes+=("Reference: the committed baselines (the fallback). The committed baselines or the manifest entries of every benchmark main's nearest recorded run (${rec:0:12}, $dist commit(s) before $what) measured changed in content before ${base:0:12}, so that run is not the accepted state.") ;;
    none)
      notes+=("Reference: the committed baselines (the fallback): ${found#none$'\t'}.") ;;
    *) fail "reference.py printed an unexpected answer." ;;
  esac
  if [ "$is_pr" = 1 ] && [ -d "$work/recorded" ]; then
    drift_now="$work/recorded"
    drift_title="Drift of the base since the accepted baselines (main's recorded run of ${rec:0:12})"
  fi
}

# The caller's extra arguments come first and from an allow-list: the
# trusted ones after them decide (and none of them could be overridden).
check=(check)
if [ -n "$check_args" ]; then
  read -r -a extra <<<"$check_args"
  for a in "${extra[@]}"; do
    case "$a" in
      --strict|--verbose|--quiet|-v|-vv|-vvv|-q|-qq) ;;
      *) fail "--check-args: '$(printf '%s' "$a" | head -c 80)' is not allowed (only --strict, -v, -q, --verbose, --quiet: the judge alone decides what is judged, against which baselines and settings)." ;;
    esac
  done
  check+=("${extra[@]}")
fi
present=0
for d in "${abs_runs[@]}"; do
  if [ -f "$d/run.json" ]; then check+=(--from-run "$d"); present=$((present + 1)); fi
done
missing=()
for d in "${run_dirs[@]}"; do [ -f "$d/run.json" ] || missing+=("$d"); done
forced_error=0
if [ -n "$expect_runs" ] && [ "$present" -ne "$expect_runs" ]; then forced_error=1; fi
if [ "${#missing[@]}" -gt 0 ]; then
  forced_error=1
  notes+=("Incomplete run: expected ${expect_runs:-${#run_dirs[@]}} run director(ies) with a run.json, found $present; missing: $(printf '%s\n' "${missing[@]}" | list_files). The verdict is an error until every build job uploads its run.")
elif [ "$forced_error" = 1 ]; then
  notes+=("Incomplete run: expected $expect_runs run director(ies), got $present. The verdict is an error.")
fi
if [ "$overhead" = 1 ] && [ "$present" -gt 0 ]; then
  if unmeasured=$(/usr/bin/python3 "$here/unmeasured.py" "${abs_runs[@]}" 2>"$work/unmeasured.log"); then
    if [ -n "$unmeasured" ]; then
      forced_error=1
      notes+=("The run has no overhead measurement for $(printf '%s\n' "$unmeasured" | list_files) (profiled with \`--no-overhead\`, or \`\"overhead\": null\` in run.json); this gate measures the overhead, so the verdict is an error.")
    fi
  else
    forced_error=1
    notes+=("The run's overhead measurements could not be read: $(tail -n 1 "$work/unmeasured.log"). The verdict is an error.")
  fi
fi
if [ "$plan_result" != success ]; then
  forced_error=1
  notes+=("The plan job ended with '$plan_result' (see its log), so the build jobs did not run as planned. The verdict is an error.")
fi
if [ "$build_result" != success ]; then
  forced_error=1
  notes+=("A build job ended with '$build_result' (building, \`make test\` or profiling failed); see its log. The verdict is an error.")
fi

check+=(--manifest "$pr_root/$manifest" --base-manifest "$base_root/$manifest")

accept=false
bl_changed=
label=false
proposed=
if [ "$is_pr" = 1 ]; then
  bl_changed=$(changed_files "$baselines") || fail "git diff ${base}...${head} failed (is the history deep enough?)"
  if [ -n "$bl_changed" ]; then
    proposed="$pr_root/$baselines"
    echo "judge: this pull request changes $baselines/:" >&2
    printf '%s\n' "$bl_changed" | sed 's/^/  /' >&2
  fi
  label=$("$here/has-label.py" --added-by-event "$accept_label") || {
    forced_error=1
    label=false
    notes+=("The pull request's labels could not be read; the accept label was not honoured. The verdict is an error.")
  }
  if [ "$label" = earlier ]; then
    notes+=("The label \`$accept_label\` is on this pull request, but it was added before the event that started this run (a push, another label, a reopening): it accepts only the commit it was added on, in the run its adding starts, so nothing is accepted here. To accept this commit, review it, then remove the label and add it again.")
  fi
  if [ -n "$harness_dir" ]; then
    h_changed=$(changed_files "$harness_dir") || fail "git diff ${base}...${head} failed"
    if [ -n "$h_changed" ]; then
      n=$(printf '%s\n' "$h_changed" | wc -l)
      notes+=("This pull request changes the harness ($n file(s) under \`$harness_dir/\`: $(printf '%s\n' "$h_changed" | list_files)). The base branch's harness (${base:0:12}) judged it, not these changes; the build job profiled with them.")
    fi
  fi
  if [ "${#build_paths[@]}" -gt 0 ]; then
    b_changed=$(git_repo diff --name-only "${base}...${head}" -- "${build_paths[@]}") || fail "git diff ${base}...${head} failed"
    if [ -n "$b_changed" ]; then
      notes+=("This pull request changes what builds or measures the benchmarks in the build job ($(printf '%s\n' "$b_changed" | list_files)). The build job ran these changes, so the measurements come from them: review them before trusting this verdict.")
    fi
  fi
  if [ -n "$workflows_dir" ]; then
    w_changed=$(changed_files "$workflows_dir") || fail "git diff ${base}...${head} failed"
    if [ -n "$w_changed" ]; then
      notes+=("This pull request changes \`$workflows_dir/\` ($(printf '%s\n' "$w_changed" | list_files)). GitHub runs a pull request's own workflow files, so those changes were in effect for this run: review them before trusting this verdict.")
    fi
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
unbaselined=$(printf '%s\n' "$sets" | sed -n 's/^unbaselined //p')
untrusted=$(printf '%s\n' "$sets" | sed -n 's/^untrusted //p')
removed=$(printf '%s\n' "$sets" | sed -n 's/^removed //p')
if [ -n "$unbaselined" ]; then
  forced_error=1
  notes+=("Benchmarks without a baseline in $(if [ "$is_pr" = 1 ]; then echo "this pull request"; else echo "this commit"; fi) ($(printf '%s\n' "$unbaselined" | list_files)): every benchmark the manifest runs needs one, or nothing judges it. Commit the output of \`make update-baselines\` (\`memprof-ci update-baselines -k NAME\`). The verdict is an error.")
fi
# A benchmark with a trusted baseline that the pull request drops from its
# manifest and whose baseline it deletes (removed, or renamed: removed +
# new) is "removed" for the harness. Only the accept label honours that
# deletion (a deletion is a change of content, so the label then accepts);
# without it the deletion is undone before anything else reads the
# proposed baselines, and the benchmark fails as missing.
if [ -n "$removed" ] && [ -n "$proposed" ]; then
  if [ "$label" = true ]; then
    notes+=("This pull request removes (or renames) $(printf '%s\n' "$removed" | list_files), which had a trusted baseline; the label \`$accept_label\` accepts the removal.")
  else
    restored="$work/proposed"
    mkdir -p "$restored"
    cp -- "$proposed"/*.json "$restored"/ 2>/dev/null || true
    while IFS= read -r name; do cp -- "$base_root/$baselines/$name.json" "$restored/"; done <<<"$removed"
    proposed=$restored
    notes+=("This pull request removes (or renames) $(printf '%s\n' "$removed" | list_files), which had a trusted baseline: a benchmark leaves the gate only with the label \`$accept_label\`, so it is judged as missing.")
  fi
fi
choose_reference
# Which benchmarks the pull request's proposed baselines really change
# (parsed content, reference.py compose), and the directories each pass of
# the harness judges with: main's recorded run stays the reference of every
# other benchmark.
compose_args=(compose --committed "$base_root/$baselines" --reference "$reference" --out "$work/compose")
if [ -n "$proposed" ]; then compose_args+=(--proposed "$proposed"); fi
if [ "$label" = true ]; then compose_args+=(--accept); fi
changed=$("${reference_py[@]}" "${compose_args[@]}" 2>"$work/compose.log") ||
  fail "Cannot compare the proposed baselines with the committed ones: $(tail -n 1 "$work/compose.log")"
changed=$(printf '%s\n' "$changed" | sed -n 's/^changed //p')
if [ -n "$bl_changed" ] && [ -z "$changed" ]; then
  notes+=("This pull request changes files under \`$baselines/\` but no baseline's content (only its formatting): nothing to accept, and the reference is what it would be without those changes.")
fi
if [ "$label" = true ] && [ -n "$changed" ]; then
  accept=true
  notes+=("The label \`$accept_label\` was added to this pull request by the event that started this run: regressions of benchmarks whose proposed baseline changed ($(printf '%s\n' "$changed" | list_files)) and matches what this code measures are accepted, against their committed baselines; every other benchmark keeps its reference.")
elif [ "$label" = true ]; then
  notes+=("The label \`$accept_label\` is on this pull request, but it changes no baseline's content under \`$baselines/\`: there is nothing to accept (commit the output of update-baselines first).")
fi
if [ -n "$untrusted" ]; then
  if [ "$accept" = true ]; then
    notes+=("The base branch runs $(printf '%s\n' "$untrusted" | list_files) without a trusted baseline; the label \`$accept_label\` makes this pull request's baseline the reference (it must match what the code measures).")
  else
    forced_error=1
    notes+=("The base branch runs $(printf '%s\n' "$untrusted" | list_files) without a trusted baseline, so nothing judges this pull request's code there; the baseline it proposes becomes the reference only with the label \`$accept_label\`. The verdict is an error.")
  fi
fi
strict=
if [ -d "$work/compose/strict" ]; then
  strict="$work/compose/strict"
  notes+=("This pull request changes the baseline of $(printf '%s\n' "$changed" | list_files) without the label \`$accept_label\`: judged against main's recorded run and against the committed baseline, and the stricter verdict stands.")
fi
proposed=
if [ -d "$work/compose/proposed" ]; then proposed="$work/compose/proposed"; fi
check_ref="$work/compose/reference"
common=()
if [ -n "$proposed" ]; then common+=(--proposed-baselines "$proposed"); fi
if [ "$overhead" = 0 ]; then common+=(--no-overhead); fi
if [ "$accept" = true ]; then common+=(--accept-changes); fi
for n in "${notes[@]}"; do common+=(--note "$n"); done
echo "judge: accept-changes=$accept" >&2

verdict_word() { case "$1" in 0) echo "a pass" ;; 1) echo "a regression" ;; *) echo "an error" ;; esac; }
run_check() {  # REFERENCE REPORT_DIR [ARG...]: one pass of the harness; its status
  local ref=$1 dir=$2 st
  shift 2
  local argv=("${check[@]}" --baselines "$ref" "$@" "${common[@]}" --report-dir "$dir")
  printf 'judge: running:'
  printf ' %q' "${harness[@]}" "${argv[@]}"
  printf '\n'
  "${harness[@]}" "${argv[@]}"
  st=$?
  echo "judge: memprof-ci check exited with status $st"
  case "$st" in 0|1) return "$st" ;; *) return 2 ;; esac
}
if [ "$present" -gt 0 ]; then
  run_check "$check_ref" "$out" --measured-dir "$out/measured"
  status=$?
  if [ -n "$strict" ]; then
    # The same run against the committed baselines of the changed
    # benchmarks: the worse of the two verdicts stands (an error over a
    # regression over a pass), with the report that gave it.
    run_check "$strict" "$work/strict-report"
    strict_status=$?
    run_status_a=$status
    if [ "$strict_status" -gt "$status" ]; then
      status=$strict_status
      for f in report.md report.json report.html junit.xml; do
        rm -f "$out/$f"
        if [ -f "$work/strict-report/$f" ]; then cp -- "$work/strict-report/$f" "$out/$f"; fi
      done
      "${md_report[@]}" para "This report judges $(printf '%s\n' "$changed" | list_files) against the committed baselines: the stricter verdict of the two (against main's recorded run the verdict was $(verdict_word "$run_status_a"))." >>"$out/report.md"
    else
      "${md_report[@]}" para "Against the committed baselines of $(printf '%s\n' "$changed" | list_files) the verdict was $(verdict_word "$strict_status"): this report, against main's recorded run, is the stricter one." >>"$out/report.md"
    fi
  fi
else
  status=2
  "${md_report[@]}" error "No build job uploaded a run directory with a run.json." "${notes[@]}" \
    >"$out/report.md" ||
    printf '## memprof-ci could not judge this run\n\nSee the job log.\n' >"$out/report.md"
  rm -f "$out/report.json"
fi
if [ -n "$drift_now" ] && [ -d "$drift_now" ] && [ -f "$out/report.md" ]; then
  if "${reference_py[@]}" drift --title "$drift_title" "$base_root/$baselines" "$drift_now" \
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
if [ "$forced_error" = 1 ]; then status=2; fi

set +e
resume_commands
"$here/publish-report.sh" --final "$out" "$status" "${MEMPROF_CI_TITLE:-memprof-ci allocation report}"
status=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "status=$status" >>"$GITHUB_OUTPUT"; fi
exit "$status"
