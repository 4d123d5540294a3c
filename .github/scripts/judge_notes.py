#!/usr/bin/env python3
"""judge_notes.py: the sentences judge_policy.py puts in the report.

One function (or constant) per note that judge.sh's gate can write, in the
order judge_policy.decide() adds them, plus the drift titles and the
paragraph of a run judged twice. Not run on its own: judge_policy imports it.

Invariants:
  - these only format: which note applies, and whether it forces an error,
    is judge_policy's to decide;
  - names of files and benchmarks are shown with list_files(): in
    backticks (any backtick in a name dropped), at most 20, then
    "and N more"; empty names are skipped;
  - commits are shown by their first 12 characters;
  - the texts are Markdown source: the harness (--note) and md_report.py
    make them safe, as they did when judge.sh wrote them.
"""

BT = "`"
SHOWN = 20

WHAT_PR = "the merge base"
WHAT_PUSH = "the pushed commit's first parent"
DRIFT_PUSH = "Drift of this commit since the accepted baselines"
REFERENCE_NO_PARENT = "Reference: the committed baselines (the fallback): the pushed commit has no parent."


def list_files(names):
    """`a`, `b`, ... and N more (names in backticks, at most 20 shown)."""
    names = [n for n in names if n]
    shown = ", ".join(BT + n.replace(BT, "") + BT for n in names[:SHOWN])
    if len(names) > SHOWN:
        shown += f" and {len(names) - SHOWN} more"
    return shown


def verdict_word(status):
    return {0: "a pass", 1: "a regression"}.get(status, "an error")


# ---------------------------------------------------------------- runs and jobs

def no_base_manifest(manifest):
    return (f"The base commit has no {manifest}: the settings of this pull request's manifest were used "
            "(there were no trusted settings or baselines to protect yet).")


def runs_missing(expected, present, missing):
    return (f"Incomplete run: expected {expected} run director(ies) with a run.json, found {present}; "
            f"missing: {list_files(missing)}. The verdict is an error until every build job uploads its run.")


def runs_miscounted(expected, present):
    return f"Incomplete run: expected {expected} run director(ies), got {present}. The verdict is an error."


def overhead_unmeasured(names):
    return (f"The run has no overhead measurement for {list_files(names)} (profiled with `--no-overhead`, "
            "or `\"overhead\": null` in run.json); this gate measures the overhead, so the verdict is an error.")


def overhead_unreadable(complaint):
    return f"The run's overhead measurements could not be read: {complaint}. The verdict is an error."


def plan_failed(result):
    return (f"The plan job ended with '{result}' (see its log), so the build jobs did not run as planned. "
            "The verdict is an error.")


def build_failed(result):
    return (f"A build job ended with '{result}' (building, `make test` or profiling failed); see its log. "
            "The verdict is an error.")


# ---------------------------------------------------------------- the label and the pull request's changes

def labels_unreadable():
    return ("The pull request's labels could not be read; the accept label was not honoured. "
            "The verdict is an error.")


def label_earlier(label):
    return (f"The label `{label}` is on this pull request, but it was added before the event that started "
            "this run (a push, another label, a reopening): it accepts only the commit it was added on, in "
            "the run its adding starts, so nothing is accepted here. To accept this commit, review it, then "
            "remove the label and add it again.")


def harness_changed(harness_dir, base, files):
    return (f"This pull request changes the harness ({len(files)} file(s) under `{harness_dir}/`: "
            f"{list_files(files)}). The base branch's harness ({base[:12]}) judged it, not these changes; "
            "the build job profiled with them.")


def build_changed(files):
    return (f"This pull request changes what builds or measures the benchmarks in the build job "
            f"({list_files(files)}). The build job ran these changes, so the measurements come from them: "
            "review them before trusting this verdict.")


def workflows_changed(workflows_dir, files):
    return (f"This pull request changes `{workflows_dir}/` ({list_files(files)}). GitHub runs a pull "
            "request's own workflow files, so those changes were in effect for this run: review them "
            "before trusting this verdict.")


# ---------------------------------------------------------------- baselines

def unbaselined(names, pr):
    where = "this pull request" if pr else "this commit"
    return (f"Benchmarks without a baseline in {where} ({list_files(names)}): every benchmark the manifest "
            "runs needs one, or nothing judges it. Commit the output of `make update-baselines` "
            "(`memprof-ci update-baselines -k NAME`). The verdict is an error.")


def removal(names, label, accepted):
    if accepted:
        return (f"This pull request removes (or renames) {list_files(names)}, which had a trusted baseline; "
                f"the label `{label}` accepts the removal.")
    return (f"This pull request removes (or renames) {list_files(names)}, which had a trusted baseline: "
            f"a benchmark leaves the gate only with the label `{label}`, so it is judged as missing.")


def formatting_only(baselines):
    return (f"This pull request changes files under `{baselines}/` but no baseline's content (only its "
            "formatting): nothing to accept, and the reference is what it would be without those changes.")


def label_accepts(label, changed):
    return (f"The label `{label}` was added to this pull request by the event that started this run: "
            f"regressions of benchmarks whose proposed baseline changed ({list_files(changed)}) and matches "
            "what this code measures are accepted, against their committed baselines; every other benchmark "
            "keeps its reference.")


def nothing_to_accept(label, baselines):
    return (f"The label `{label}` is on this pull request, but it changes no baseline's content under "
            f"`{baselines}/`: there is nothing to accept (commit the output of update-baselines first).")


def untrusted_accepted(names, label):
    return (f"The base branch runs {list_files(names)} without a trusted baseline; the label `{label}` "
            "makes this pull request's baseline the reference (it must match what the code measures).")


def untrusted(names, label):
    return (f"The base branch runs {list_files(names)} without a trusted baseline, so nothing judges this "
            "pull request's code there; the baseline it proposes becomes the reference only with the label "
            f"`{label}`. The verdict is an error.")


def judged_twice(changed, label):
    return (f"This pull request changes the baseline of {list_files(changed)} without the label `{label}`: "
            "judged against main's recorded run and against the committed baseline, and the stricter "
            "verdict stands.")


# ---------------------------------------------------------------- the reference

def reference_recorded(commit, distance, what, start):
    if distance == "0":
        return (f"Reference: main's recorded run of {commit[:12]}, {what} (distance 0). The verdict is this "
                "change's own effect; the drift of main since the accepted baselines is shown separately.")
    return (f"Reference: main's recorded run of {commit[:12]}, the nearest recorded first-parent ancestor "
            f"of {what} ({start[:12]}), {distance} commit(s) before it. The verdict is this change's own "
            f"effect plus that of those {distance} commit(s).")


def reference_kept(names):
    return (f"Main's recorded run has no measurement of {list_files(names)}: judged against the committed "
            "baseline.")


def reference_stale_some(names, commit, base):
    return (f"The committed baseline or the manifest entry of {list_files(names)} changed in content "
            f"between main's recorded run ({commit[:12]}) and {base[:12]}, so that run is not their "
            "accepted state: judged against the committed baseline.")


def reference_stale_all(commit, distance, what, base):
    return (f"Reference: the committed baselines (the fallback). The committed baselines or the manifest "
            f"entries of every benchmark main's nearest recorded run ({commit[:12]}, {distance} commit(s) "
            f"before {what}) measured changed in content before {base[:12]}, so that run is not the "
            "accepted state.")


def reference_none(reason):
    return f"Reference: the committed baselines (the fallback): {reason}."


def drift_recorded(commit):
    return f"Drift of the base since the accepted baselines (main's recorded run of {commit[:12]})"


# ---------------------------------------------------------------- a run judged twice

def stricter_report(changed, run_status):
    return (f"This report judges {list_files(changed)} against the committed baselines: the stricter "
            "verdict of the two (against main's recorded run the verdict was "
            f"{verdict_word(run_status)}).")


def stricter_run(changed, strict_status):
    return (f"Against the committed baselines of {list_files(changed)} the verdict was "
            f"{verdict_word(strict_status)}: this report, against main's recorded run, is the stricter one.")
