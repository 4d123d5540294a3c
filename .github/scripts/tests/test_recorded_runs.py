"""Main's recorded runs as the judge's reference, on real git repositories.

A repository with a bare "origin" plays GitHub: pushes to main are profiled
with profile.sh, judged with judge.sh (`--runs-branch`) and, when they pass,
recorded with record-run.sh on the data branch `memprof-ci-data` of origin;
pull requests are profiled at their merge commit and judged against the
recorded run of their merge base.  The benchmarks are harness/tests/fakebench.py
programs (deterministic per seed; minor_words is the exact sum of the sites'
words), the manifest is sampled, and nothing depends on timing.

The scenarios are the ones that committed baselines alone get wrong: three
pull requests in a row that each add +0.5% of all allocation (each passes
against its parent; the third fails against the committed baselines, where
minor_words is +1.5% > gc_tolerance 1%), and two concurrent pull requests
that both change allocation and touch no baseline.
"""
import json
import pathlib

import pytest

from ghci_helpers import PYTHON, REPO_ROOT, SCRIPTS, git, run, write
from test_judge import ACCEPT, MANIFEST, judge, manifest_text, profile, update_baselines

RECORD = str(SCRIPTS / "record-run.sh")
PROFILE = str(SCRIPTS / "profile.sh")
REFERENCE = str(SCRIPTS / "reference.py")
BRANCH = "memprof-ci-data"
RUNS = ["--runs-branch", BRANCH]
# Two sites in `a`, 3 M words in all: +15 000 words is +0.5% of all allocation,
# far below what the sampled site check sees (min_effect 5%), but minor_words
# is exact: +1.5% fails gc_tolerance (1%).
A_WORDS = [2_000_000, 1_000_000]
STEP = 15_000


def spec(words):
    """fakebench spec, one site per line block (so that two branches changing
    different sites merge without a conflict)."""
    return json.dumps({"sites": [
        {"frames": [[f"Main.f{i}", "main.ml", 10 + i], ["Main.main", "main.ml", 200]],
         "words": w, "live": 0.1} for i, w in enumerate(words)]}, indent=1) + "\n"


def set_words(r, words):
    write(r, "benchmarks/a.spec.json", spec(words))


@pytest.fixture
def gh(tmp_path):
    """(work repository with origin, bare origin): main = manifest, specs and
    baselines recorded by update-baselines."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    write(r, MANIFEST, manifest_text())
    set_words(r, A_WORDS)
    write(r, "benchmarks/b.spec.json", spec([1_500_000]))
    update_baselines(r)
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(r, "remote", "add", "origin", str(origin))
    git(r, "push", "-q", "origin", "main")
    return r, origin


def head(r):
    return git(r, "rev-parse", "HEAD")


def push_main(r, tmp_path, tag):
    """A push to main of r's HEAD: build job, judge, and the record job when
    the judge passed. Returns (judge process, report.md, report.json)."""
    work = tmp_path / f"push-{tag}"
    work.mkdir()
    sha = head(r)
    git(r, "push", "-q", "origin", f"{sha}:refs/heads/main")
    runs = [profile(r, work / "run")]
    proc, md, js = judge(r, work, sha, runs, event="push", labels="null", args=RUNS)
    if proc.returncode == 0:
        rec = run([RECORD, "--commit", sha, "--measured", str(work / "report" / "measured"),
                   "--report", str(work / "report" / "report.json"), "--repo", str(r)])
        assert rec.returncode == 0, rec.stdout + rec.stderr
    return proc, md, js


def pull_request(r, tmp_path, tag, change, base_ref="main", args=RUNS, added=None):
    """A pull request off base_ref with change(r), judged at its merge commit
    against the base (in the run that adding the label `added` started, if
    given). Returns (judge process, report.md, merge sha, run dir)."""
    base = git(r, "rev-parse", base_ref)
    git(r, "checkout", "-q", "-B", f"pr-{tag}", base)
    change(r)
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", f"pr {tag}")
    git(r, "checkout", "-q", "--detach", base)
    git(r, "merge", "-q", "--no-ff", "-m", f"merge {tag}", f"pr-{tag}")
    merge = head(r)
    work = tmp_path / f"pr-{tag}"
    work.mkdir()
    runs = [profile(r, work / "run", base_sha=base)]
    proc, md, _ = judge(r, work, merge, runs, base=base, labels=[added] if added else [],
                        added=added, args=args)
    return proc, md, merge, runs


def land(r, merge):
    """GitHub merges the pull request: main moves to its merge commit."""
    git(r, "checkout", "-q", "-B", "main", merge)


def data_files(origin):
    return sorted(git(origin, "ls-tree", "-r", "--name-only", BRANCH).split())


def drift_row(md, name):
    (row,) = [ln for ln in md.splitlines() if ln.startswith(f"| `{name}` |")]
    return row


# ---------------------------------------------------------------- the scenarios

def test_three_step_drift_passes_step_by_step_and_main_shows_it(gh, tmp_path):
    r, origin = gh
    proc, md, _ = push_main(r, tmp_path, 0)
    assert proc.returncode == 0, md
    assert "Reference: the committed baselines (the fallback): the pushed commit has no parent" in md
    recorded = [head(r)]
    assert data_files(origin) == [f"runs/{recorded[0]}.json"]
    for step in (1, 2, 3):
        words = [A_WORDS[0], A_WORDS[1] + step * STEP]
        proc, md, merge, runs = pull_request(r, tmp_path, step, lambda r, w=words: set_words(r, w))
        assert proc.returncode == 0, md
        assert f"main's recorded run of {recorded[-1][:12]}, the merge base (distance 0)" in md
        # The base's drift since the accepted baselines, as information.
        assert "Drift of the base since the accepted baselines" in md
        assert drift_row(md, "a").endswith(f"| {0.5 * (step - 1):+.1f}% |")
        if step == 3:
            # Judged against the committed baselines, the same run fails for
            # the two steps before it.
            work = tmp_path / "pr-3-committed"
            work.mkdir()
            strict, smd, _ = judge(r, work, merge, runs, base=recorded[-1], labels=[])
            assert strict.returncode == 1, smd
            assert "a::gc_totals" in smd
        land(r, merge)
        proc, md, js = push_main(r, tmp_path, step)
        assert proc.returncode == 0, md
        assert f"main's recorded run of {recorded[-1][:12]}, the pushed commit's first parent" in md
        assert "Drift of this commit since the accepted baselines" in md
        assert drift_row(md, "a").endswith(f"| {0.5 * step:+.1f}% |")
        assert drift_row(md, "b").endswith("| +0.0% |")
        recorded.append(head(r))
    # Main's report shows the accumulated drift; every run is on the data branch.
    assert drift_row(md, "a").endswith("| +1.5% |")
    assert data_files(origin) == sorted(f"runs/{c}.json" for c in recorded)
    assert git(r, "diff", "--name-only", recorded[0], recorded[-1], "--", "baselines") == ""


def test_two_concurrent_pull_requests_need_no_baseline_merge(gh, tmp_path):
    r, origin = gh
    assert push_main(r, tmp_path, 0)[0].returncode == 0
    m0 = head(r)
    bump = 21_000                                   # +0.7% each, +1.4% together
    first = lambda r: set_words(r, [A_WORDS[0] + bump, A_WORDS[1]])    # noqa: E731
    second = lambda r: set_words(r, [A_WORDS[0], A_WORDS[1] + bump])   # noqa: E731
    proc_a, md_a, merge_a, _ = pull_request(r, tmp_path, "a", first)
    proc_b, md_b, _, _ = pull_request(r, tmp_path, "b", second, base_ref=m0)
    assert (proc_a.returncode, proc_b.returncode) == (0, 0), md_a + md_b
    land(r, merge_a)
    assert push_main(r, tmp_path, "a")[0].returncode == 0
    m1 = head(r)
    # The second pull request, re-run on the new base: its merge commit holds
    # both changes, and it is judged by its own (+0.7%) against main's run.
    git(r, "checkout", "-q", "--detach", m1)
    git(r, "merge", "-q", "--no-ff", "-m", "merge b", "pr-b")
    merge_b = head(r)
    work = tmp_path / "pr-b-rerun"
    work.mkdir()
    runs = [profile(r, work / "run", base_sha=m1)]
    proc, md, _ = judge(r, work, merge_b, runs, base=m1, labels=[], args=RUNS)
    assert proc.returncode == 0, md
    assert f"recorded run of {m1[:12]}, the merge base (distance 0)" in md
    assert drift_row(md, "a").endswith("| +0.7% |")
    # Against the committed baselines the same run fails: +1.4% > 1%.
    strict_work = tmp_path / "pr-b-committed"
    strict_work.mkdir()
    assert judge(r, strict_work, merge_b, runs, base=m1, labels=[])[0].returncode == 1
    land(r, merge_b)
    proc, md, _ = push_main(r, tmp_path, "b")
    assert proc.returncode == 0, md
    assert drift_row(md, "a").endswith("| +1.4% |")
    assert git(r, "diff", "--name-only", m0, head(r), "--", "baselines") == ""
    assert len(data_files(origin)) == 3


# ---------------------------------------------------------------- which reference

def test_nearest_recorded_ancestor_stale_record_and_proposed_baselines(gh, tmp_path):
    r, origin = gh
    assert push_main(r, tmp_path, 0)[0].returncode == 0
    m0 = head(r)
    # A commit on main that was not recorded: the pull request after it is
    # judged against m0's run, one commit away, and says so.
    write(r, "README", "docs\n")
    git(r, "add", "README")
    git(r, "commit", "-q", "-m", "docs")
    proc, md, _, _ = pull_request(r, tmp_path, "near", lambda r: write(r, "README", "more\n"))
    assert proc.returncode == 0, md
    assert f"recorded run of {m0[:12]}, the nearest recorded first-parent ancestor" in md
    assert "1 commit(s) before it" in md
    # A pull request that changes baselines' content (update-baselines
    # records its own commit) is judged against main's record and against
    # the committed baselines, without the label.
    proc, md, _, _ = pull_request(r, tmp_path, "prop", lambda r: update_baselines(r))
    assert proc.returncode == 0, md
    assert "without the label" in md and "the stricter verdict stands" in md, md
    # Baselines accepted on main after the last record: that record is
    # stale for the benchmark whose baseline changed, not for the other.
    git(r, "checkout", "-q", "main")
    set_words(r, [A_WORDS[0], A_WORDS[1] + 300_000])
    update_baselines(r)
    git(r, "checkout", "-q", "HEAD", "--", "baselines/b.json")   # only a's baseline changes
    git(r, "commit", "-q", "-am", "accepted change")
    proc, md, _, _ = pull_request(r, tmp_path, "stale", lambda r: write(r, "README", "x\n"))
    assert proc.returncode == 0, md
    assert f"recorded run of {m0[:12]}, the nearest recorded first-parent ancestor" in md
    lines = [ln for ln in md.splitlines() if "so that run is not their accepted state" in ln]
    assert len(lines) == 1, md
    (line,) = lines
    assert "&#96;a&#96;" in line and "&#96;b&#96;" not in line, line


def plant(r, origin, sha, tree_entry):
    """Commit a hostile data branch to origin: tree_entry(r) -> (mode, blob)."""
    mode, blob = tree_entry(r)
    idx = pathlib.Path(r) / ".git" / "plant-index"
    env = {"GIT_INDEX_FILE": str(idx)}
    run(["git", "read-tree", "--empty"], cwd=r, env=env, check=True)
    run(["git", "update-index", "--add", "--cacheinfo", f"{mode},{blob},runs/{sha}.json"],
        cwd=r, env=env, check=True)
    tree = run(["git", "write-tree"], cwd=r, env=env, check=True).stdout.strip()
    commit = git(r, "commit-tree", tree, "-m", "planted")
    git(r, "push", "-q", "-f", "origin", f"{commit}:refs/heads/{BRANCH}")


def blob_of(r, text):
    return run(["git", "hash-object", "-w", "--stdin"], cwd=r, input=text, check=True).stdout.strip()


def bad_site_record(r):
    rec = json.loads((pathlib.Path(r) / "baselines" / "a.json").read_text())
    rec["totals"]["samples"] = -5
    doc = {"format": "memprof-ci/run-record", "version": 1, "commit": head(r), "time": 1,
           "depth": 1, "subject": "s", "patch_id": None, "benchmarks": {"a": rec},
           "accepted": [], "report": None}
    return "100644", blob_of(r, json.dumps(doc))


@pytest.mark.parametrize("entry", [
    pytest.param(lambda r: ("120000", blob_of(r, "/etc/passwd")), id="symlink"),
    pytest.param(lambda r: ("100644", blob_of(r, "{not json\n")), id="not-json"),
    pytest.param(bad_site_record, id="invalid-baseline"),
])
def test_hostile_record_is_one_line_and_an_error(gh, tmp_path, entry):
    r, origin = gh
    plant(r, origin, head(r), entry)
    proc, md, _, _ = pull_request(r, tmp_path, "x", lambda r: write(r, "README", "x\n"))
    assert proc.returncode == 2, md
    (line,) = [ln for ln in md.splitlines() if "recorded runs" in ln]
    assert line.startswith(f"Main's recorded runs ({BRANCH}) cannot be used: reference.py: ")
    assert "Traceback" not in proc.stdout + md


# ---------------------------------------------------------------- record-run.sh

def test_record_run_appends_to_the_data_branch_and_retries_a_lost_race(gh, tmp_path):
    r, origin = gh
    work = tmp_path / "push0"
    work.mkdir()
    # The build job, with a runtime whose patch id is known.
    prof = run([PROFILE, MANIFEST, str(work / "run"), "--", "--no-overhead", "-q"], cwd=r,
               env={"MEMPROF_CI_PATCH_ID": "0123456789abcdef"})
    assert prof.returncode == 0, prof.stdout + prof.stderr
    runs = [work / "run"]
    proc, _, _ = judge(r, work, head(r), runs, event="push", labels="null")
    assert proc.returncode == 0
    measured = work / "report" / "measured"
    # The judge's measurement in baseline format: the trusted baseline's plan,
    # the run's patch id, loadable as a baseline.
    doc = json.loads((measured / "a.json").read_text())
    trusted = json.loads((r / "baselines" / "a.json").read_text())
    assert doc["benchmark"] == "a" and doc["config"] == trusted["config"]
    assert doc["patch_id"] == "0123456789abcdef"
    first = head(r)
    assert run([RECORD, "--commit", first, "--measured", str(measured), "--repo", str(r)]).returncode == 0
    write(r, "README", "x\n")
    git(r, "add", "README")
    git(r, "commit", "-q", "-m", "second")
    second = head(r)
    # Another record lands between this script's fetch and its push: the
    # first push is rejected (a hook stands for the race) and retried.
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n[ -e {tmp_path}/raced ] && exit 0\ntouch {tmp_path}/raced\nexit 1\n")
    hook.chmod(0o755)
    status_before = git(r, "status", "--porcelain")
    proc = run([RECORD, "--commit", second, "--measured", str(measured), "--repo", str(r)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "attempt 1 rejected" in proc.stderr
    assert data_files(origin) == sorted([f"runs/{first}.json", f"runs/{second}.json"])
    tip = git(origin, "rev-parse", BRANCH)
    assert git(origin, "rev-list", "--count", tip) == "2"     # appended, never forced
    assert git(r, "status", "--porcelain") == status_before   # work tree and index untouched
    rec = json.loads(git(origin, "show", f"{BRANCH}:runs/{second}.json"))
    assert rec["commit"] == second and rec["patch_id"] == doc["patch_id"]
    assert sorted(rec["benchmarks"]) == ["a", "b"]
    assert rec["accepted"] == []
    # A commit that changes a committed baseline's content is an accepted
    # change: the record marks that benchmark, from git, whatever the report
    # says (formatting alone is no change:
    # test_formatting_a_baseline_keeps_mains_recorded_reference).
    hook.unlink()
    edit_baseline(r, "a")
    git(r, "commit", "-q", "-am", "accept a")
    third = head(r)
    for sha, want in ((second, []), (third, ["a"])):
        proc = run([RECORD, "--commit", sha, "--measured", str(measured), "--repo", str(r),
                    "--accepted-baselines", "baselines"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        rec = json.loads(git(origin, "show", f"{BRANCH}:runs/{sha}.json"))
        assert rec["accepted"] == want, (sha, rec["accepted"])


@pytest.mark.parametrize("flag,value", [
    ("--runs-path", "../x"), ("--branch", "bad..name"), ("--commit", "HEAD"), ("--attempts", "0"),
    ("--measured", "/nonexistent")])
def test_record_run_bad_arguments_are_one_line_and_exit_2(gh, flag, value):
    r, origin = gh
    argv = {"--commit": head(r), "--measured": str(r / "baselines"), "--repo": str(r), flag: value}
    proc = run([RECORD, *[x for kv in argv.items() for x in kv]])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("record-run: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert git(origin, "branch", "--list", BRANCH) == ""


def test_reference_find_refuses_bad_paths(tmp_path):
    proc = run([PYTHON, REFERENCE, "find", "--repo", str(tmp_path), "--data-ref", "x",
                "--runs-path", "../up", "--from", "0" * 40, "--baselines", str(tmp_path),
                "--out", str(tmp_path / "o")], env={"PYTHONPATH": str(REPO_ROOT / "harness")})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.parametrize("argv,says", [
    ([], "usage: "), (["--out", "h.html", "--runs-path", "../x"], "--runs-path '../x'"),
    (["--out", "h.html", "--branch", "bad..name"], "--branch 'bad..name'"),
    (["--out", "h.html"], "cannot fetch the data branch")],
    ids=["no-out", "runs-path", "branch", "no-data-branch"])
def test_render_history_refuses_in_one_line(gh, tmp_path, argv, says):
    """render-history.sh: bad arguments, or an origin with no data branch
    yet, are one line naming what is wrong and exit 2, and no page is
    written."""
    r, origin = gh
    proc = run([str(SCRIPTS / "render-history.sh"), *argv], cwd=r)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and not (r / "h.html").exists(), proc.stderr
    assert says in proc.stderr, proc.stderr


# ---------------------------------------------------------------- baselines by content

IMPROVED = {"a": [1_500_000, A_WORDS[1]], "b": [1_000_000]}


def improve_main(r, tmp_path):
    """m0 recorded, then a commit of main that improves `a` (Main.f0 2.0 M ->
    1.5 M words) and `b` (1.5 M -> 1.0 M) without re-recording the baselines
    (an improvement never fails): its run, recorded, is the reference."""
    assert push_main(r, tmp_path, "m0")[0].returncode == 0
    set_words(r, IMPROVED["a"])
    write(r, "benchmarks/b.spec.json", spec(IMPROVED["b"]))
    git(r, "commit", "-q", "-am", "improve a and b")
    proc, md, _ = push_main(r, tmp_path, "m1")
    assert proc.returncode == 0, md
    return head(r)


def reindent(r, name):
    """The same baseline, formatted otherwise: no change of content."""
    path = pathlib.Path(r) / "baselines" / f"{name}.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=7) + "\n")


def edit_baseline(r, name):
    """A change of content that says nothing about allocation."""
    path = pathlib.Path(r) / "baselines" / f"{name}.json"
    doc = json.loads(path.read_text())
    doc["git_commit"] = "0" * 40
    path.write_text(json.dumps(doc) + "\n")


def test_formatting_a_baseline_keeps_mains_recorded_reference(gh, tmp_path):
    """Issue 56, finding 1: re-indenting an unrelated baseline no longer
    swaps main's recorded run for the stale committed baselines, on the pull
    request nor on the push after it, and the record does not call it
    accepted."""
    r, origin = gh
    m1 = improve_main(r, tmp_path)
    back = lambda r: set_words(r, A_WORDS)   # noqa: E731: Main.f0's 0.5 M words back
    proc, md, _, _ = pull_request(r, tmp_path, "alone", back)
    assert proc.returncode == 1 and "Main.f0" in md, md

    def back_and_reindent(r):
        back(r)
        reindent(r, "b")
    proc, md, merge, _ = pull_request(r, tmp_path, "reindent", back_and_reindent)
    assert proc.returncode == 1, md
    assert "Main.f0" in md and f"main's recorded run of {m1[:12]}, the merge base" in md
    assert "but no baseline&#39;s content" in md or "but no baseline's content" in md, md
    assert "Drift of the base since the accepted baselines" in md
    assert "Proposed baselines are identical" not in md
    # Merged all the same: the push of main is judged against main's record
    # too (b's record is not stale: its content did not change), fails, and
    # is not recorded.
    land(r, merge)
    before = data_files(origin)
    proc, md, _ = push_main(r, tmp_path, "reindent")
    assert proc.returncode == 1, md
    assert f"main's recorded run of {m1[:12]}, the pushed commit's first parent" in md
    assert data_files(origin) == before
    # A record of that commit does not mark b "accepted": its content is the same.
    measured = tmp_path / "push-reindent" / "report" / "measured"
    proc = run([RECORD, "--commit", merge, "--measured", str(measured), "--repo", str(r),
                "--accepted-baselines", "baselines"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(git(origin, "show", f"{BRANCH}:runs/{merge}.json"))["accepted"] == []


def test_a_changed_baseline_is_judged_against_the_stricter_reference_unless_labelled(gh, tmp_path):
    """Issue 56, finding 1: a pull request that changes a baseline's content
    is judged, without the label, against both main's record and the
    committed baseline (the stricter verdict stands); with the label only the
    changed benchmark is judged against its committed baseline, every other
    one against main's record."""
    r, origin = gh
    m1 = improve_main(r, tmp_path)

    def a_back_edited(r):
        set_words(r, A_WORDS)
        edit_baseline(r, "a")
    proc, md, _, _ = pull_request(r, tmp_path, "nolabel", a_back_edited)
    assert proc.returncode == 1, md
    assert "Main.f0" in md and "the stricter verdict stands" in md, md
    # With the label, a (changed) is judged against its committed baseline,
    # which its measurement matches: a passes.
    proc, md, _, _ = pull_request(r, tmp_path, "label-a", a_back_edited, added=ACCEPT)
    assert proc.returncode == 0, md
    assert f"main's recorded run of {m1[:12]}" in md

    def both_back_a_edited(r):
        a_back_edited(r)
        write(r, "benchmarks/b.spec.json", spec([1_500_000]))
    # b's baseline is unchanged: the label does not take main's record away
    # from it, and its regression against that record fails.
    proc, md, _, _ = pull_request(r, tmp_path, "label-ab", both_back_a_edited, added=ACCEPT)
    assert proc.returncode == 1, md
    assert "b::alloc_sites" in md or "`b`" in md, md


# ---------------------------------------------------------------- recorded history is append-only

def test_a_rewritten_record_is_refused(gh, tmp_path):
    """Issue 56, finding 2 (defence in depth): a commit on the data branch
    that rewrites an existing runs/<commit>.json, pushed on top of the
    record job's commits, makes the verdict an error naming it; record-run.sh
    never replaces a record either."""
    r, origin = gh
    assert push_main(r, tmp_path, 0)[0].returncode == 0
    m0 = head(r)
    rec = json.loads(git(origin, "show", f"{BRANCH}:runs/{m0}.json"))
    rec["subject"] = "forged"
    tip = git(origin, "rev-parse", BRANCH)
    git(r, "fetch", "-q", "origin", BRANCH)
    idx = pathlib.Path(r) / ".git" / "forge-index"
    env = {"GIT_INDEX_FILE": str(idx)}
    run(["git", "read-tree", tip], cwd=r, env=env, check=True)
    run(["git", "update-index", "--add", "--cacheinfo",
         f"100644,{blob_of(r, json.dumps(rec))},runs/{m0}.json"], cwd=r, env=env, check=True)
    tree = run(["git", "write-tree"], cwd=r, env=env, check=True).stdout.strip()
    forged = git(r, "commit-tree", tree, "-p", tip, "-m", "memprof-ci: record the run")
    git(r, "push", "-q", "origin", f"{forged}:refs/heads/{BRANCH}")     # no force needed
    proc, md, _, _ = pull_request(r, tmp_path, "x", lambda r: write(r, "README", "x\n"))
    assert proc.returncode == 2, md
    (line,) = [ln for ln in md.splitlines() if "recorded runs" in ln]
    assert "was rewritten after it was recorded" in line, line
    # The record job itself never replaces a record.
    other = tmp_path / "other-report.json"
    other.write_text('{"format": "memprof-ci/report", "version": 1, "benchmarks": {}}\n')
    measured = tmp_path / "push-0" / "report" / "measured"
    proc = run([RECORD, "--commit", m0, "--measured", str(measured), "--report", str(other),
                "--repo", str(r)])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "records are never replaced" in proc.stderr
    assert git(origin, "rev-parse", BRANCH) == forged
