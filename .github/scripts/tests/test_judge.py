"""Tests of the split gate's scripts with the real harness on temporary git repos:
profile.sh (build job: `memprof-ci profile`) and judge.sh (judge job:
`memprof-ci check --from-run`), plus has-label.py.

Each test builds a repository whose `main` holds a manifest of two benchmarks
played by harness/tests/fakebench.py (it writes real profiles, no OCaml
needed) and baselines recorded by `memprof-ci update-baselines`; a pull request
branch changes something; the merge commit is checked out the way
actions/checkout does for `pull_request`, profiled there with profile.sh (the
build job), and judged with judge.sh from this checkout (the judge job), whose
harness is this repository's harness/, never the temporary repository's.

No test depends on timing: the overhead measurement is off (--no-overhead) and
the fake benchmarks are deterministic per seed.
"""
import json
import pathlib
import shutil

import pytest

from ghci_helpers import (PYTHON, REPO_ROOT, SCRIPTS, WORKFLOWS, committed_repo, git, load_workflow,
                          run, run_step, workflow_commands, workflow_step, write)

JUDGE = str(SCRIPTS / "judge.sh")
PROFILE = str(SCRIPTS / "profile.sh")
HAS_LABEL = str(SCRIPTS / "has-label.py")
FAKE = str(REPO_ROOT / "harness" / "tests" / "fakebench.py")
HARNESS = str(REPO_ROOT / "harness")
MANIFEST = "benchmarks/benchmarks.toml"
ACCEPT = "memprof-ci: accept"

# "sampled": the default "auto" would choose by timing a run (exactplan.py);
# test_profile_runs_as_the_base_baselines_plan_says tests it here.
SETTINGS = {"mode": "sampled", "rate": 1e-3, "seeds": [1, 2, 3], "alpha": 0.01,
            "min_effect": 0.05}


def manifest_text(benches=("a", "b"), settings=None, renames=None):
    """The manifest: [defaults] from SETTINGS (updated by `settings`, whose values
    are TOML text), one fakebench benchmark per name (renames: new name -> spec name)."""
    s = {k: json.dumps(v) for k, v in SETTINGS.items()}
    s.update(settings or {})
    lines = ["[defaults]"] + [f"{k} = {v}" for k, v in s.items()]
    for name in benches:
        spec = (renames or {}).get(name, name)
        lines += ["", "[[benchmark]]", f'name = "{name}"',
                  f'command = ["{PYTHON}", "{FAKE}", "./{spec}.spec.json"]']
    return "\n".join(lines) + "\n"


def spec(words):
    """A fakebench spec: one site per entry of `words`, deterministic per seed."""
    return json.dumps({"sites": [
        {"frames": [[f"Main.f{i}", "main.ml", 10 + i], ["Main.main", "main.ml", 200]], "words": w, "live": 0.1}
        for i, w in enumerate(words)]}) + "\n"


A_WORDS = [2_000_000, 1_000_000]
B_WORDS = [1_500_000]
A_REGRESSED = [3_000_000, 1_000_000]  # +50% at Main.f0: a clear regression


def harness_cli(repo, *args):
    return run([PYTHON, "-m", "memprof_ci", *args], cwd=repo, env={"PYTHONPATH": HARNESS})


def update_baselines(repo):
    proc = harness_cli(repo, "update-baselines", "--manifest", MANIFEST, "--baselines", "baselines",
                       "--no-overhead", "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = pathlib.Path(repo) / "baselines" / ".lock"
    if lock.exists():
        lock.unlink()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """main: manifest, specs, baselines, a harness/ and .github/ of its own.
    Built once per module (update-baselines runs the fake benchmarks)."""
    r = tmp_path_factory.mktemp("template") / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    write(r, MANIFEST, manifest_text())
    write(r, "benchmarks/a.spec.json", spec(A_WORDS))
    write(r, "benchmarks/b.spec.json", spec(B_WORDS))
    # The temporary repository's own "harness": if the judge ever ran the tested
    # commit's harness, this one would pass everything.
    write(r, "harness/memprof_ci/__init__.py", "")
    write(r, "harness/memprof_ci/__main__.py", "raise SystemExit(0)\n")
    write(r, ".github/workflows/gate.yml", "name: gate\n")
    update_baselines(r)
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    return r, git(r, "rev-parse", "HEAD")


@pytest.fixture
def repo(template, tmp_path):
    """A private copy of the template repository: (path, base_sha)."""
    src, sha = template
    r = tmp_path / "repo"
    shutil.copytree(src, r, symlinks=True)
    return r, sha


def pr_merge(r, base_sha, change):
    """A PR branch off base_sha with change(r) committed, then main merged with it
    checked out detached (the shape of refs/pull/N/merge). Returns its sha."""
    git(r, "checkout", "-q", "-b", "pr", base_sha)
    change(r)
    git(r, "add", "-A")
    git(r, "commit", "-q", "--allow-empty", "-m", "pr")
    git(r, "checkout", "-q", "--detach", "main")
    git(r, "merge", "-q", "--no-ff", "-m", "merge", "pr")
    return git(r, "rev-parse", "HEAD")


def profile(r, out, base_sha=None, shard=None):
    """The build job: profile the checked-out commit."""
    cmd = [PROFILE]
    if base_sha:
        cmd += ["--base-sha", base_sha]
    if shard:
        cmd += ["--shard", shard]
    proc = run(cmd + [MANIFEST, str(out), "--", "--no-overhead", "-q"], cwd=r)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (pathlib.Path(out) / "run.json").is_file()
    return out


def judge(r, tmp_path, head, runs, base=None, event="pull_request", labels=None, args=(), expect_runs=None,
          added=None, action="synchronize", overhead=False):
    """The judge job: judge.sh from this checkout on the run directories.
    The run was started by the pull_request `action`, or by adding the
    label `added` (action `labeled`). Unless `overhead`, the gate does not
    measure the overhead (--no-overhead, as profile() runs)."""
    out = tmp_path / "report"
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "gh_output"),
           "EVENT_ACTION": "labeled" if added else action, "EVENT_LABEL": added or ""}
    if labels is not None:
        env["LABELS_JSON"] = labels if isinstance(labels, str) else json.dumps(
            [{"id": i, "name": n, "color": "ededed"} for i, n in enumerate(labels)])
    cmd = [JUDGE, "--event", event, "--head-sha", head, "--repo", str(r), "--manifest", MANIFEST,
           "--baselines", "baselines", "--harness-dir", "harness", "--workflows-dir", ".github/workflows",
           "--out", str(out), "--expect-runs", str(expect_runs or len(runs)), *args]
    if not overhead:
        cmd.append("--no-overhead")
    if base:
        cmd += ["--base-sha", base]
    # Run from elsewhere: nothing may depend on the tested repository being the cwd.
    proc = run(cmd + ["--", *map(str, runs)], cwd=tmp_path, env=env)
    report = out / "report.md"
    assert report.is_file(), proc.stdout + proc.stderr
    md = report.read_text()
    js = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else None
    assert (out / "exit-status").read_text().strip() == str(proc.returncode)
    assert f"status={proc.returncode}" in (tmp_path / "gh_output").read_text()
    return proc, md, js


def with_overhead(run_dir, skip=()):
    """Give each benchmark of run_dir's run.json (but `skip`, set to null) an
    overhead record, as `memprof-ci profile` without --no-overhead writes
    one: synthetic counts, the same with profiling off and on (the judge
    derives every figure from them again)."""
    path = pathlib.Path(run_dir) / "run.json"
    doc = json.loads(path.read_text())
    events = {"Ir": 10_000_000, "I1mr": 100, "ILmr": 10, "Dr": 3_000_000, "D1mr": 1000,
              "DLmr": 100, "Dw": 2_000_000, "D1mw": 500, "DLmw": 50}
    for name, b in doc["benchmarks"].items():
        b["overhead"] = None if name in skip else {
            "measure": "cycles", "time": None,
            "counted": {"args": [], "model": "synthetic (test)", "concurrent": False,
                        "threads": "disabled", "off": [events], "on": [events]}}
    path.write_text(json.dumps(doc))
    return run_dir


def regress_a(r, record=False):
    write(r, "benchmarks/a.spec.json", spec(A_REGRESSED))
    if record:
        update_baselines(r)


# ---------------------------------------------------------------- push and plain PRs

def test_push_judges_the_committed_state(repo, tmp_path):
    r, head = repo
    runs = [profile(r, tmp_path / "run")]
    proc, md, js = judge(r, tmp_path, head, runs, event="push", labels="null")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert js["verdict"]["exit_code"] == 0
    assert js["notes"] == [] and "--proposed-baselines" not in proc.stdout


def test_traces_beside_the_profiles_reach_the_report(repo, tmp_path):
    """The build job's memtrace traces are copied into OUT/traces/; a
    symlink planted among them is not followed."""
    r, head = repo
    run_dir = profile(r, tmp_path / "run")
    (run_dir / "profiles" / "a.1.ctf").write_bytes(b"\xc1\x1f\xfc\xc1 trace")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the report\n")
    (run_dir / "profiles" / "b.1.ctf").symlink_to(secret)
    proc, _, _ = judge(r, tmp_path, head, [run_dir], event="push", labels="null")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    traces = tmp_path / "report" / "traces"
    assert sorted(p.name for p in traces.iterdir()) == ["a.1.ctf"]
    assert (traces / "a.1.ctf").read_bytes() == b"\xc1\x1f\xfc\xc1 trace"


def test_pr_without_changes_passes(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "docs\n"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changes the harness" not in md and "accepted by label" not in md.lower()


# ---------------------------------------------------------------- the accept label

@pytest.fixture
def recorded_regression(repo, tmp_path):
    """A PR that regresses `a` and commits the baselines its code measures."""
    r, base = repo
    head = pr_merge(r, base, lambda rr: regress_a(rr, record=True))
    assert "baselines/a.json" in git(r, "diff", "--name-only", f"{base}...{head}")
    return r, base, head, [profile(r, tmp_path / "run", base)]


@pytest.mark.parametrize("labels", [[ACCEPT], ["bug", "memprof-ci: ACCEPT "]], ids=["exact", "case-and-space"])
def test_label_accepts_matching_proposed_baselines(recorded_regression, tmp_path, labels):
    """A maintainer adds the label: that `labeled` event's run accepts."""
    r, base, head, runs = recorded_regression
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=labels, added=labels[-1])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert js["verdict"]["exit_code"] == 0
    assert "accepted by label" in md.lower()
    # The accepted changes are listed, by benchmark and check.
    assert [a["benchmark"] for a in js["accepted"]] and {a["benchmark"] for a in js["accepted"]} == {"a"}
    assert "a::" in md
    assert "--accept-changes" in proc.stdout
    assert "--proposed-baselines" in proc.stdout


@pytest.mark.parametrize("labels", [None, "null", [], ["bug"], ["memprof-ci: accepted"], ["accept"]],
                         ids=["unset", "null", "none", "other", "longer-name", "shorter-name"])
def test_without_the_label_the_regression_fails(recorded_regression, tmp_path, labels):
    r, base, head, runs = recorded_regression
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=labels)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert js["verdict"]["exit_code"] == 1
    assert "--accept-changes" not in proc.stdout
    assert not js.get("accepted")
    # The PR's baseline change is still listed for the reviewers.
    assert "--proposed-baselines" in proc.stdout


@pytest.mark.parametrize("action,added", [("synchronize", None), ("labeled", "bug"), ("reopened", None),
                                          ("opened", None), ("labeled", "memprof-ci: accepted")],
                         ids=["push", "other-label", "reopened", "opened", "longer-name"])
def test_label_accepts_only_the_commit_it_was_added_on(repo, tmp_path, action, added):
    """After the maintainer's label, the author pushes a bigger regression (+300%
    in `a`, GC totals included) with re-recorded baselines that match it.
    The label is still on the pull request, but no event of this run added
    it: nothing is accepted."""
    r, base = repo

    def change(rr):
        write(rr, "benchmarks/a.spec.json", spec([w * 4 for w in A_WORDS]))
        update_baselines(rr)

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=["bug", ACCEPT], action=action, added=added)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "--accept-changes" not in proc.stdout and not js.get("accepted")
    assert js["benchmarks"]["a"]["checks"]["gc_totals"]["outcome"] == "failed"
    assert any("added before the event that started this run" in n for n in js["notes"]), js["notes"]
    # Removing and re-adding the label, after review, accepts this commit.
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=["bug", ACCEPT], added=ACCEPT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {a["check"] for a in js["accepted"]} >= {"alloc_sites", "gc_totals"}


def test_configured_label_name(recorded_regression, tmp_path):
    r, base, head, runs = recorded_regression
    proc, _, _ = judge(r, tmp_path, head, runs, base=base, labels=["perf: ok"], added="perf: ok", args=["--accept-label", "perf: ok"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc, _, _ = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT, args=["--accept-label", "perf: ok"])
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_label_without_baseline_change_accepts_nothing(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, regress_a)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "--accept-changes" not in proc.stdout
    assert "nothing to accept" in md


def test_label_does_not_accept_baselines_that_do_not_match_the_code(repo, tmp_path):
    """The PR records baselines from other code (a +200% run) than it ships (+50%)."""
    r, base = repo

    def change(rr):
        write(rr, "benchmarks/a.spec.json", spec([6_000_000, 1_000_000]))
        update_baselines(rr)
        regress_a(rr)

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    proc, _, js = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert not js.get("accepted")


def test_label_on_a_push_is_ignored(repo, tmp_path):
    """On pushes the labels do not exist; even a forged payload accepts nothing."""
    r, _ = repo
    regress_a(r)
    git(r, "commit", "-q", "-am", "regress on main")
    head = git(r, "rev-parse", "HEAD")
    runs = [profile(r, tmp_path / "run")]
    proc, _, _ = judge(r, tmp_path, head, runs, event="push", labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "--accept-changes" not in proc.stdout


def test_push_does_not_read_labels_at_all(repo, tmp_path):
    r, head = repo
    runs = [profile(r, tmp_path / "run")]
    proc, _, js = judge(r, tmp_path, head, runs, event="push", labels="{not json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert js["notes"] == []


@pytest.mark.parametrize("labels", ["{", '{"name": "memprof-ci: accept"}', "[1]", '[{"name": 3}]'])
def test_unreadable_label_payload_is_an_error(recorded_regression, tmp_path, labels):
    r, base, head, runs = recorded_regression
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=labels)
    # The regression alone would be a 1: an unreadable payload is an error.
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--accept-changes" not in proc.stdout
    assert "labels could not be read" in md


# ---------------------------------------------------------------- settings, renames, removals

@pytest.mark.parametrize("settings,listed", [
    ({"min_effect": "100.0", "alpha": "0.9"}, ["min_effect", "alpha"]),
    ({"min_effect": "100.0"}, ["min_effect"]),
    ({"rate": "1e-2"}, ["rate"]),
])
def test_settings_changed_by_the_pr_are_judged_with_base_values(repo, tmp_path, settings, listed):
    """A PR that loosens the settings in its manifest to hide its regression."""
    r, base = repo

    def change(rr):
        regress_a(rr)
        write(rr, MANIFEST, manifest_text(settings=settings))

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    # The build job ran with the base's rate (profile.sh passed --base-manifest).
    prof = json.loads((tmp_path / "run" / "profiles" / "a.1.json").read_text())
    assert prof["config"]["rate"] == SETTINGS["rate"]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Changed by this pull request" in md
    assert {c["setting"] for c in js["settings_changes"]} == set(listed)


def test_nan_setting_in_the_pr_manifest_never_passes(repo, tmp_path):
    """min_effect = nan would make every comparison false. The build job's
    profile refuses the manifest; a run made anyway (here: of the base code)
    is not judged a pass either."""
    r, base = repo
    forged = [profile(r, tmp_path / "forged", base)]
    head = pr_merge(r, base, lambda rr: (regress_a(rr), write(rr, MANIFEST, manifest_text(settings={"min_effect": "nan"}))))
    proc = run([PROFILE, "--base-sha", base, MANIFEST, str(tmp_path / "run"), "--", "--no-overhead"], cwd=r)
    assert proc.returncode == 2 and not (tmp_path / "run" / "run.json").exists()
    assert "min_effect" in proc.stderr
    proc, md, _ = judge(r, tmp_path, head, forged, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "min_effect" in md


def test_renamed_benchmark_fails_as_missing(repo, tmp_path):
    """b renamed b2 (with b2's baseline recorded), b's baseline kept."""
    r, base = repo

    def change(rr):
        write(rr, MANIFEST, manifest_text(benches=("a", "b2"), renames={"b2": "b"}))
        update_baselines(rr)

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert js["benchmarks"]["b"]["status"] == "missing"
    assert "Missing: b" in md


@pytest.mark.parametrize("how", ["removed", "renamed-regressed", "baselines-replaced"])
def test_removing_a_benchmark_needs_the_label(repo, tmp_path, how):
    """Dropping a benchmark together with its baseline makes it leave the
    gate: a removal, a rename that hides a +500% regression (b -> b2, b2
    recorded as new), or all baselines replaced by one new benchmark's.
    Without the label each fails as missing; the label accepts it."""
    r, base = repo

    def change(rr):
        if how == "removed":
            write(rr, MANIFEST, manifest_text(benches=("a",)))
            git(rr, "rm", "-q", "baselines/b.json")
        elif how == "renamed-regressed":
            write(rr, "benchmarks/b.spec.json", spec([b * 6 for b in B_WORDS]))
            write(rr, MANIFEST, manifest_text(benches=("a", "b2"), renames={"b2": "b"}))
            git(rr, "rm", "-q", "baselines/b.json")
            update_baselines(rr)
        else:
            git(rr, "rm", "-q", "-r", "baselines")
            write(rr, MANIFEST, manifest_text(benches=("c",), renames={"c": "a"}))
            update_baselines(rr)

    head = pr_merge(r, base, change)
    gone = ["a", "b"] if how == "baselines-replaced" else ["b"]
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [n for n in gone if js["benchmarks"][n]["status"] == "missing"] == gone
    assert any("removes (or renames)" in n and "judged as missing" in n for n in js["notes"]), js["notes"]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [n for n in gone if js["benchmarks"][n]["status"] == "removed"] == gone
    assert all(f"Removed: {n}" in md for n in gone), md


def test_pr_without_manifest_is_an_error(repo, tmp_path):
    r, base = repo
    runs = [profile(r, tmp_path / "run", base)]
    head = pr_merge(r, base, lambda rr: git(rr, "rm", "-q", MANIFEST))
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 2
    assert "has no manifest" in md


def test_base_without_manifest_uses_the_prs_settings_and_says_so(tmp_path):
    """The pull request that adds memprof-ci: nothing trusted exists yet."""
    r = tmp_path / "repo"
    base = committed_repo(r, {"README": "x\n"}, "c")

    def change(rr):
        write(rr, MANIFEST, manifest_text())
        write(rr, "benchmarks/a.spec.json", spec(A_WORDS))
        write(rr, "benchmarks/b.spec.json", spec(B_WORDS))
        update_baselines(rr)

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "base commit has no" in md


# ---------------------------------------------------------------- baselines the judge must have

def commit_on_main(r, change, message="main"):
    """A commit on main (as if merged earlier): the next pull request's base."""
    change(r)
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", message)
    return git(r, "rev-parse", "HEAD")


@pytest.mark.parametrize("attributes", [
    ("baselines/.gitattributes", "*.json export-ignore\n"),
    ("baselines/.gitattributes", "a.json export-ignore\n"),
    (".gitattributes", "*.json export-ignore\nbaselines/*.json export-ignore\n"),
], ids=["all", "one-file", "root"])
def test_export_ignore_on_the_base_cannot_hide_trusted_baselines(repo, tmp_path, attributes):
    """A .gitattributes merged earlier marks the baselines export-ignore; the
    next pull request regresses `a`. The trusted baselines are read blob by
    blob: a .gitattributes among them is refused (an error), one elsewhere
    changes nothing (the regression is caught)."""
    r, _ = repo
    path, text = attributes
    base = commit_on_main(r, lambda rr: write(rr, path, text))
    head = pr_merge(r, base, regress_a)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    if path.startswith("baselines/"):
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "not baselines" in md and ".gitattributes" in md
    else:
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert js["benchmarks"]["a"]["checks"]["alloc_sites"]["outcome"] == "failed"
        assert "extracted 2 file(s)" in proc.stdout


@pytest.mark.parametrize("planted", [
    ("baselines/.gitattributes", "*.json export-ignore\n"),
    ("baselines/README.md", "notes\n"),
    ("baselines/sub/a.json", "{}\n"),
], ids=["gitattributes", "other-file", "subdirectory"])
def test_pull_request_planting_non_baselines_is_an_error(repo, tmp_path, planted):
    """The harmless-looking half of the attack: the pull request that adds
    something other than a baseline under baselines/ is not mergeable."""
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, *planted))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "tested commit" in md and "not baselines" in md and js is None


def test_new_benchmark_with_its_baseline_passes(repo, tmp_path):
    """The legitimate new benchmark: manifest entry and recorded baseline."""
    r, base = repo

    def change(rr):
        write(rr, MANIFEST, manifest_text(benches=("a", "b", "c"), renames={"c": "b"}))
        update_baselines(rr)

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert js["benchmarks"]["c"]["status"] == "new"
    assert js["benchmarks"]["c"]["checks"]["proposed_baseline"]["outcome"] == "passed"


def test_new_benchmark_without_a_baseline_is_an_error(repo, tmp_path):
    """Merged like this, `c` would run unjudged on main forever."""
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, MANIFEST, manifest_text(benches=("a", "b", "c"),
                                                                         renames={"c": "b"})))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert js["verdict"]["exit_code"] == 0  # the harness alone: `c` is new
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert any("without a baseline" in n and "`c`" in n for n in js["notes"]), js["notes"]


def test_deleting_the_baseline_of_a_kept_benchmark_is_an_error(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, lambda rr: git(rr, "rm", "-q", "baselines/b.json"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert any("without a baseline" in n and "`b`" in n for n in js["notes"]), js["notes"]


@pytest.mark.parametrize("event", ["pull_request", "push"])
def test_base_benchmark_without_trusted_baseline_is_an_error(repo, tmp_path, event):
    """Main runs `a` but has lost its baseline (by whatever means): `a`
    regressing must not pass as a new benchmark."""
    r, _ = repo
    base = commit_on_main(r, lambda rr: git(rr, "rm", "-q", "baselines/a.json"))
    if event == "push":
        head = commit_on_main(r, regress_a)
        proc, md, js = judge(r, tmp_path, head, [profile(r, tmp_path / "run")], event="push")
    else:
        head = pr_merge(r, base, regress_a)
        proc, md, js = judge(r, tmp_path, head, [profile(r, tmp_path / "run", base)], base=base, labels=[])
    assert js["benchmarks"]["a"]["status"] == "new" and js["verdict"]["exit_code"] == 0
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert any("`a`" in n and ("without a baseline" in n or "without a trusted baseline" in n)
               for n in js["notes"]), js["notes"]


def test_restoring_a_trusted_baseline_needs_the_label(repo, tmp_path):
    """The way out of that state: a pull request that records `a`'s baseline
    is judged an error unless a maintainer accepts it with the label."""
    r, _ = repo
    base = commit_on_main(r, lambda rr: git(rr, "rm", "-q", "baselines/a.json"))
    head = pr_merge(r, base, update_baselines)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert any("without a trusted baseline" in n and "`a`" in n for n in js["notes"]), js["notes"]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[ACCEPT], added=ACCEPT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert js["benchmarks"]["a"]["checks"]["proposed_baseline"]["outcome"] == "passed"


# ---------------------------------------------------------------- what judges

def test_harness_change_is_noted_and_ignored(repo, tmp_path):
    """The PR rewrites its harness to pass everything and regresses `a`: the
    judge uses its own harness, fails, and says the harness changed."""
    r, base = repo

    def change(rr):
        regress_a(rr)
        write(rr, "harness/memprof_ci/__main__.py", "print('all good')\nraise SystemExit(0)\n")
        write(rr, "harness/memprof_ci/extra.py", "\n")

    head = pr_merge(r, base, change)
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    note = [n for n in js["notes"] if "changes the harness" in n]
    assert len(note) == 1, js["notes"]
    assert "harness/memprof_ci/__main__.py" in note[0] and "harness/memprof_ci/extra.py" in note[0]
    assert "base branch's harness" in note[0]
    assert "changes the harness" in md


def test_workflow_change_is_noted(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, ".github/workflows/gate.yml", "name: gate2\n"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(".github/workflows/gate.yml" in n and "own workflow files" in n for n in js["notes"])
    assert not any("changes the harness" in n for n in js["notes"])


# ---------------------------------------------------------------- the judge's log

FORGED = ("boom\n::error title=memprof-ci::allocation check PASSED\n::add-mask::regression\n"
          "  ::warning::indented\n##[add-mask]error\n::stop-commands::x\nlater")


def test_run_text_cannot_issue_workflow_commands(repo, tmp_path):
    """run.json's error text is the pull request's: put into the judge's log
    by the harness, it must not act as a workflow command (a fake PASSED,
    masking the word regression, or stop-commands swallowing the judge's
    own error). The runner's reading of the log is simulated
    (ghci_helpers.workflow_commands) on everything the judge printed."""
    r, base = repo
    head = pr_merge(r, base, regress_a)
    run_dir = profile(r, tmp_path / "run", base)
    doc = json.loads((run_dir / "run.json").read_text())
    doc["benchmarks"]["a"]["error"] = FORGED
    (run_dir / "run.json").write_text(json.dumps(doc))
    proc, md, js = judge(r, tmp_path, head, [run_dir], base=base, labels=[])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    log = proc.stdout + proc.stderr
    assert "PASSED" in log and "add-mask" in log  # the text did reach the log
    commands = workflow_commands(log)
    assert [c for c, _ in commands] == ["stop-commands", "error"], commands
    assert commands[-1][1].startswith("the allocation check failed with an error")


# ---------------------------------------------------------------- shards and missing data

def test_shards_are_judged_together(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, regress_a)
    runs = [profile(r, tmp_path / f"run{k}", base, shard=f"{k}/2") for k in (1, 2)]
    # Each shard profiled only its own benchmark.
    assert [sorted(json.loads((d / "run.json").read_text())["benchmarks"]) for d in runs] == [["a"], ["b"]]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert set(js["benchmarks"]) == {"a", "b"}
    assert js["benchmarks"]["b"].get("status") != "missing"


def test_missing_shard_is_an_error(repo, tmp_path):
    """One run directory holds every benchmark and `a` regressed, so the
    harness alone says 1; a run directory that never arrived makes it 2."""
    r, base = repo
    head = pr_merge(r, base, regress_a)
    runs = [profile(r, tmp_path / "run1", base), tmp_path / "never-uploaded"]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert js["verdict"]["exit_code"] == 1
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Incomplete run" in md and "never-uploaded" in md


def test_fewer_runs_than_expected_is_an_error(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=[], expect_runs=2)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Incomplete run" in md


def test_no_run_at_all_is_an_error(repo, tmp_path):
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    proc, md, js = judge(r, tmp_path, head, [tmp_path / "nothing"], base=base, labels=[])
    assert proc.returncode == 2
    assert "No build job uploaded" in md and js is None


@pytest.mark.parametrize("result", ["failure", "cancelled", "skipped", ""])
def test_failed_build_job_is_an_error(repo, tmp_path, result):
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, _ = judge(r, tmp_path, head, runs, base=base, labels=[], args=["--build-result", result])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "A build job ended with" in md


@pytest.mark.parametrize("args", [[], ["--event", "pull_request"], ["--event", "push", "--head-sha", "x", "--manifest", "m"]])
def test_judge_usage(tmp_path, args):
    proc = run([JUDGE, *args], cwd=tmp_path)
    assert proc.returncode == 2
    # Commands stopped at the start are resumed on every way out.
    (stop,) = workflow_commands(proc.stdout)
    assert stop[0] == "stop-commands" and proc.stdout.splitlines()[-1] == f"::{stop[1]}::"


def test_pull_request_needs_base_sha(repo, tmp_path):
    r, head = repo
    proc, md, _ = judge(r, tmp_path, head, [profile(r, tmp_path / "run")], labels=[])
    assert proc.returncode == 2
    assert "BASE&#95;SHA is required" in md   # judge.sh's texts go through mdsafe.text()


def test_unknown_commit_is_an_error(repo, tmp_path):
    r, base = repo
    proc, md, _ = judge(r, tmp_path, "f" * 40, [profile(r, tmp_path / "run")], base=base, labels=[])
    assert proc.returncode == 2
    assert "Cannot resolve" in md


# ---------------------------------------------------------------- alloc-gate.yml's judge step

def gate_judge_step(r, tmp_path, env, runs=()):
    """Run the `memprof-ci check (judge)` step of alloc-gate.yml as its job
    would: in a checkout holding this repository's .github/scripts and
    harness (the judge's), the tested repository at _build/tested and the
    downloaded run directories at _build/runs/alloc-run-shard-K."""
    root = tmp_path / "judge-job"
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "scripts").symlink_to(SCRIPTS)
    (root / "harness").symlink_to(REPO_ROOT / "harness")
    (root / "_build" / "runs").mkdir(parents=True)
    (root / "_build" / "tested").symlink_to(r)
    for k, d in enumerate(runs, 1):
        shutil.copytree(d, root / "_build" / "runs" / f"alloc-run-shard-{k}")
    job = load_workflow(WORKFLOWS / "alloc-gate.yml")["jobs"]["judge"]
    step = workflow_step("alloc-gate.yml", "judge", "memprof-ci check (judge)")
    full = {"GITHUB_OUTPUT": str(tmp_path / "gh_output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "ACCEPT_LABEL": ACCEPT, "LABELS_JSON": "[]", "EVENT_ACTION": "synchronize", "EVENT_LABEL": "",
            **env}
    proc = run_step(step, full, root, job_env=job.get("env"))
    report = root / "_build" / "alloc-report"
    js = json.loads((report / "report.json").read_text()) if (report / "report.json").is_file() else None
    return proc, (report / "report.md").read_text() if (report / "report.md").is_file() else None, js


def reusable_judge_step(r, tmp_path, env, run_dir):
    """Run the `memprof-ci check (judge)` step of the reusable memprof-ci.yml
    as its job would: memprof-ci (this checkout's scripts and harness) at
    .memprof-ci, the caller's repository at .memprof-ci-tested, the run at
    _build/runs/memprof-ci-run."""
    root = tmp_path / "reusable-judge-job"
    (root / ".memprof-ci" / ".github").mkdir(parents=True)
    (root / ".memprof-ci" / ".github" / "scripts").symlink_to(SCRIPTS)
    (root / ".memprof-ci" / "harness").symlink_to(REPO_ROOT / "harness")
    (root / ".memprof-ci-tested").symlink_to(r)
    shutil.copytree(run_dir, root / "_build" / "runs" / "memprof-ci-run")
    step = workflow_step("memprof-ci.yml", "judge", "memprof-ci check (judge)")
    full = {"GITHUB_OUTPUT": str(tmp_path / "gh_output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "ACCEPT_LABEL": ACCEPT, "LABELS_JSON": "[]", "EVENT_ACTION": "synchronize", "EVENT_LABEL": "",
            "EVENT_NAME": "pull_request", "BUILD_RESULT": "success", "MANIFEST": MANIFEST,
            "BASELINES": "baselines", "CHECK_ARGS": "", "OVERHEAD": "true", "RUNS_BRANCH": "", **env}
    proc = run_step(step, full, root)
    report = root / "_build" / "alloc-report"
    js = json.loads((report / "report.json").read_text()) if (report / "report.json").is_file() else None
    return proc, js


@pytest.mark.parametrize("overhead,status", [("false", 0), ("true", 2)])
def test_reusable_judge_step_expects_overhead_as_configured(repo, tmp_path, overhead, status):
    """The caller's `overhead` input: false tells the judge not to expect
    the records a --no-overhead build job leaves out; true makes their
    absence an error."""
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    run_dir = profile(r, tmp_path / "run", base)
    proc, js = reusable_judge_step(r, tmp_path, {"BASE_SHA": base, "HEAD_SHA": head, "OVERHEAD": overhead},
                                   run_dir)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert ("overhead" in js["benchmarks"]["a"]["checks"]) == (overhead == "true")


@pytest.mark.parametrize("check_args", ["--baselines .memprof-ci-tested/baselines",
                                        "--base-manifest .memprof-ci-tested/benchmarks/benchmarks.toml",
                                        "-k b", "-m gc_totals", "--strict --baselines=.memprof-ci-tested/baselines",
                                        "-- --deselect x"])
def test_reusable_check_args_cannot_override_the_trusted_arguments(recorded_regression, tmp_path, check_args):
    """The caller's workflow, the pull request's copy, passes check-args: with
    --baselines naming the pull request's own (regressed) baselines, `a`
    would be compared with them and pass; -k or -m would judge only part."""
    r, base, head, _ = recorded_regression
    run_dir = profile(r, tmp_path / "run2", base)
    proc, js = reusable_judge_step(r, tmp_path, {"BASE_SHA": base, "HEAD_SHA": head, "OVERHEAD": "false",
                                                 "CHECK_ARGS": check_args}, run_dir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is not allowed" in proc.stdout and js is None


@pytest.mark.parametrize("check_args,status", [("", 1), ("--strict -q", 1), ("-v --quiet", 1)])
def test_reusable_check_args_allowed(recorded_regression, tmp_path, check_args, status):
    r, base, head, _ = recorded_regression
    run_dir = profile(r, tmp_path / "run2", base)
    proc, js = reusable_judge_step(r, tmp_path, {"BASE_SHA": base, "HEAD_SHA": head, "OVERHEAD": "false",
                                                 "CHECK_ARGS": check_args}, run_dir)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert js["benchmarks"]["a"]["checks"]["alloc_sites"]["outcome"] == "failed"


def test_gate_judge_step_judges_a_pull_request(repo, tmp_path):
    """A pull request that regresses `a`, measured with overhead as the
    gate's build job does: judged, and nothing more to note."""
    r, base = repo
    head = pr_merge(r, base, regress_a)
    runs = [with_overhead(profile(r, tmp_path / "run", base))]
    proc, md, js = gate_judge_step(r, tmp_path, {
        "EVENT_NAME": "pull_request", "BASE_SHA": base, "HEAD_SHA": head, "SHARDS": "1",
        "PLAN_RESULT": "success", "BUILD_RESULT": "success"}, runs)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert js["benchmarks"]["a"]["checks"]["alloc_sites"]["outcome"] == "failed"
    assert js["benchmarks"]["b"]["checks"]["overhead"]["outcome"] == "passed"
    # The gate asks for main's recorded runs; this repository has none yet.
    (note,) = js["notes"]
    assert note.startswith("Reference: the committed baselines (the fallback)"), note


def test_gate_judge_step_notes_what_the_build_job_ran(repo, tmp_path):
    """Besides harness/ and the workflows, the build job runs the scripts,
    the runtime patch and the makefiles: a pull request changing them is
    noted, each file named."""
    r, base = repo
    changed = [".github/scripts/profile.sh", "runtime-patch/patches/0001.patch", "Makefile",
               "benchmarks/benchmarks.mk"]

    def change(rr):
        for path in changed:
            write(rr, path, "changed\n")
        write(rr, "benchmarks/README.md", "not run\n")

    head = pr_merge(r, base, change)
    runs = [with_overhead(profile(r, tmp_path / "run", base))]
    proc, md, js = gate_judge_step(r, tmp_path, {
        "EVENT_NAME": "pull_request", "BASE_SHA": base, "HEAD_SHA": head, "SHARDS": "1",
        "PLAN_RESULT": "success", "BUILD_RESULT": "success"}, runs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (note,) = [n for n in js["notes"] if "builds or measures the benchmarks" in n]
    assert all(f"`{p}`" in note for p in changed) and "README" not in note, note


@pytest.mark.parametrize("skip", [("a", "b"), ("a",)], ids=["no-overhead", "one-null"])
def test_missing_overhead_is_an_error_when_the_gate_measures_it(repo, tmp_path, skip):
    """A build job run with --no-overhead, or a run.json that says
    `"overhead": null`, would skip the overhead check without a word."""
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    runs = [with_overhead(profile(r, tmp_path / "run", base), skip=skip)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[], overhead=True)
    assert js["verdict"]["exit_code"] == 0  # the harness alone skips the check
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (note,) = [n for n in js["notes"] if "no overhead measurement" in n]
    assert all(f"`{n}`" in note for n in skip) and ("`b`" in note) == ("b" in skip), note
    # The gate that does not measure it (`overhead: false`) judges the same run.
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[], overhead=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_gate_judge_step_after_a_failed_plan_is_an_error(repo, tmp_path):
    """The plan failed: no shard count, no build job. The judge still runs
    (see test_workflows.py) and its step reports an error, not a pass."""
    r, base = repo
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    proc, md, js = gate_judge_step(r, tmp_path, {
        "EVENT_NAME": "pull_request", "BASE_SHA": base, "HEAD_SHA": head, "SHARDS": "",
        "PLAN_RESULT": "failure", "BUILD_RESULT": "skipped"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert md is not None, "no report: " + proc.stdout + proc.stderr
    assert "The plan job ended with 'failure'" in md


# ---------------------------------------------------------------- profile.sh alone

def test_profile_runs_as_the_base_baselines_plan_says(repo, tmp_path):
    """A benchmark of mode "auto" runs exact or sampled as its trusted
    baseline's plan says: on a pull request profile.sh reads the base
    commit's baselines, not the pull request's copy (here flipped)."""
    r, _ = repo

    def to_auto(rr):
        write(rr, MANIFEST, manifest_text(settings={"mode": '"auto"'}))
        update_baselines(rr)

    base = commit_on_main(r, to_auto)
    trusted = json.loads((r / "baselines" / "a.json").read_text())["config"]
    assert trusted["plan"]["mode"] in ("exact", "sampled")

    def flip(rr):
        path = rr / "baselines" / "a.json"
        doc = json.loads(path.read_text())
        cfg = doc["config"]
        exact = cfg["plan"]["mode"] == "exact"
        rate, seeds = (SETTINGS["rate"], SETTINGS["seeds"]) if exact else (1.0, [1])
        cfg.update(rate=rate, seeds=seeds)
        cfg["plan"].update(mode="sampled" if exact else "exact", rate=rate, seeds=seeds)
        path.write_text(json.dumps(doc))

    pr_merge(r, base, flip)
    profile(r, tmp_path / "run", base)
    prof = json.loads((tmp_path / "run" / "profiles" / "a.1.json").read_text())
    assert prof["config"]["rate"] == trusted["rate"]
    runs = sorted(p.name for p in (tmp_path / "run" / "profiles").glob("a.*.json"))
    assert len(runs) == len(trusted["seeds"]), runs


def test_profile_without_run_json_is_an_error(tmp_path):
    stub = tmp_path / "stub"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    (tmp_path / "m.toml").write_text("")
    proc = run([PROFILE, "m.toml", str(tmp_path / "out")], cwd=tmp_path, env={"MEMPROF_CI": str(stub)})
    assert proc.returncode == 2
    assert "no " in proc.stdout and "run.json" in proc.stdout


@pytest.mark.parametrize("args", [[], ["m.toml"], ["--shard", "x", "m.toml", "o"], ["m.toml", "o", "extra"],
                                  ["--bogus", "m.toml", "o"], ["missing.toml", "o"]])
def test_profile_usage(tmp_path, args):
    (tmp_path / "m.toml").write_text("")
    assert run([PROFILE, *args], cwd=tmp_path).returncode == 2


# ---------------------------------------------------------------- has-label.py

@pytest.mark.parametrize("action,added,expected", [
    ("labeled", "memprof-ci: accept", "true"),
    ("labeled", " MemProf-CI: Accept", "true"),
    ("labeled", "bug", "earlier"),
    ("synchronize", "", "earlier"),
    ("synchronize", "memprof-ci: accept", "earlier"),
    ("unlabeled", "memprof-ci: accept", "earlier"),
    (None, None, "earlier"),
])
def test_has_label_added_by_event(action, added, expected):
    env = {"LABELS_JSON": '[{"name": "memprof-ci: accept"}]'}
    env.update({k: v for k, v in (("EVENT_ACTION", action), ("EVENT_LABEL", added)) if v is not None})
    proc = run([PYTHON, HAS_LABEL, "--added-by-event", ACCEPT], env={k: v for k, v in env.items()})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected + "\n"
    # Without the label on the pull request, never true, whatever the event says.
    proc = run([PYTHON, HAS_LABEL, "--added-by-event", ACCEPT], env={**env, "LABELS_JSON": "[]"})
    assert proc.stdout == "false\n"


@pytest.mark.parametrize("raw,label,expected", [
    ('[{"id": 1, "name": "memprof-ci: accept", "color": "x"}]', ACCEPT, "true"),
    ('[{"name": "MemProf-CI: Accept"}]', ACCEPT, "true"),
    ('["memprof-ci: accept"]', ACCEPT, "true"),
    ('[{"name": "bug"}, {"name": "memprof-ci: accept"}]', ACCEPT, "true"),
    ('[]', ACCEPT, "false"),
    ('null', ACCEPT, "false"),
    ('', ACCEPT, "false"),
    ('[{"name": "memprof-ci: accept-later"}]', ACCEPT, "false"),
    ('[{"name": "memprof-ci:accept"}]', ACCEPT, "false"),
    ('[{"name": "$(touch pwned)"}]', "$(touch pwned)", "true"),
    ('[{"name": "a"}]', "*", "false"),
])
def test_has_label(tmp_path, raw, label, expected):
    proc = run([PYTHON, HAS_LABEL, label], cwd=tmp_path, env={"LABELS_JSON": raw})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected + "\n"
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("raw", ["{", '{"name": "x"}', "[1]", '[{"id": 1}]', '"memprof-ci: accept"', "[" * 100000])
def test_has_label_rejects_malformed_payloads(raw):
    proc = run([PYTHON, HAS_LABEL, ACCEPT], env={"LABELS_JSON": raw})
    assert proc.returncode == 2
    assert proc.stdout == ""


def test_has_label_unset_env_and_usage():
    assert run([PYTHON, HAS_LABEL, ACCEPT]).stdout == "false\n"
    assert run([PYTHON, HAS_LABEL]).returncode == 2
    assert run([PYTHON, HAS_LABEL, "  "]).returncode == 2


# ---------------------------------------------------------------- bench_sets.py

BENCH_SETS = str(SCRIPTS / "bench_sets.py")


def test_bench_sets_findings(tmp_path):
    base, pr = tmp_path / "base", tmp_path / "pr"
    for d, benches, baselines in [(base, ("a", "b", "c"), ("a", "c", "gone")),
                                  (pr, ("a", "b", "n", "m"), ("a", "b", "n"))]:
        write(d, "m.toml", manifest_text(benches=benches))
        for name in baselines:
            write(d, f"bl/{name}.json", "{}\n")
    write(pr, "bl/.hidden.json", "{}\n")
    proc = run([PYTHON, BENCH_SETS, "--pr-manifest", str(pr / "m.toml"), "--pr-baselines", str(pr / "bl"),
                "--base-manifest", str(base / "m.toml"), "--base-baselines", str(base / "bl")])
    assert proc.returncode == 0, proc.stderr
    # m: run without a baseline; b: base runs it untrusted; c, gone: trusted,
    # no longer run, baseline deleted.
    assert proc.stdout == "removed c\nremoved gone\nunbaselined m\nuntrusted b\n"
    proc = run([PYTHON, BENCH_SETS, "--pr-manifest", str(pr / "m.toml"), "--pr-baselines", str(pr / "bl"),
                "--base-baselines", str(base / "bl")])
    assert proc.stdout == "removed c\nremoved gone\nunbaselined m\n"


@pytest.mark.parametrize("text", ["[[benchmark]\n", '[[benchmark]]\nname = "../x"\n', "benchmark = 3\n",
                                  '[[benchmark]]\ncommand = ["x"]\n'])
def test_bench_sets_bad_manifest_is_an_error(tmp_path, text):
    write(tmp_path, "m.toml", text)
    proc = run([PYTHON, BENCH_SETS, "--pr-manifest", str(tmp_path / "m.toml"), "--pr-baselines",
                str(tmp_path / "none"), "--base-baselines", str(tmp_path / "none")])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("bench_sets: ") and proc.stderr.count("\n") == 1


# ---------------------------------------------------------------- one inert path

HOSTILE_NAME = "www.evil.example me@evil.example @octocat"


def rendered(md):
    exe = shutil.which("cmark-gfm")
    if exe is None:
        pytest.fail("cmark-gfm is missing: run harness/scripts/ensure-deps.sh python "
                    "(Debian package cmark-gfm)")
    return run([exe, "--extension", "autolink", "--extension", "table", "--unsafe", "-t", "html"],
               input=md, check=True).stdout


def test_judges_own_error_text_reaches_the_summary_inert(repo, tmp_path):
    """Issue 56, finding 3: judge.sh's own error report quotes the pull
    request (here a manifest's benchmark name); in report.md and in the job
    summary it renders as plain text: no link, mailto or mention."""
    r, base = repo
    head = pr_merge(r, base, lambda r: write(r, MANIFEST, manifest_text(("a", "b", HOSTILE_NAME))))
    proc, md, _ = judge(r, tmp_path, head, [tmp_path / "no-run"], base=base, labels=[])
    assert proc.returncode == 2
    assert "is not a benchmark name" in md, md
    summary = (tmp_path / "summary.md").read_text()
    for doc in (md, summary):
        html = rendered(doc)
        assert "<a " not in html and "mailto:" not in html, html
        assert "@octocat" not in doc and "@evil" not in doc, doc


def test_publish_report_makes_any_report_inert_in_the_summary(tmp_path):
    """Whatever report.md holds, the job summary gets it through md_inert,
    the comment's filter."""
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text(f"## r\n\n{HOSTILE_NAME} <img src=x> [l](http://evil.example)\n")
    summary = tmp_path / "summary.md"
    proc = run([str(SCRIPTS / "publish-report.sh"), "--final", str(out), "0"],
               env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = rendered(summary.read_text())
    assert "<a " not in html and "<img" not in html and "mailto:" not in html, html
