"""Verdicts a pull request cannot bend, and failures that never read as exit 1.

A pull request controls its own manifest, baselines and code; the base
branch's manifest and baselines are trusted.  These tests play the
pull request with fakebench projects and check that:
- verdict settings come from the base manifest, and changes are listed;
- a benchmark with a trusted baseline that is not run fails, unless its
  baseline is deleted by the same change (then it is "removed");
- the accept label passes a regression only with matching proposed baselines;
- a profiling run judged elsewhere (profile / check --from-run) is untrusted data;
- bad input of every kind exits 2 with one line, and internal errors exit 2.
"""

import json
import os
import shutil

import pytest
from harness_testlib import (bump, check, cli, make_profile, no_traceback,
                             project, spec_sites, update, write_json)

from memprof_ci import cli as cli_mod


def one_line_error(r, *needles):
    """Exit 2, no traceback, and the error is one line containing needles."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    no_traceback(r)
    errs = [x for x in r.stderr.splitlines() if x.startswith("memprof-ci:")]
    assert errs, r.stderr
    for n in needles:
        assert any(n in e for e in errs), (n, r.stderr)


def base_and_pr(tmp_path):
    """A base branch (manifest + baselines in base/) and a PR checkout (cwd)."""
    project(tmp_path)
    update(tmp_path)
    os.makedirs(tmp_path / "base")
    shutil.copy(tmp_path / "benchmarks.toml", tmp_path / "base" / "benchmarks.toml")
    shutil.copytree(tmp_path / "baselines", tmp_path / "base" / "baselines")


def edit_manifest(tmp_path, old, new):
    p = tmp_path / "benchmarks.toml"
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new))


# ------------------------------------------------------ settings from base

@pytest.mark.parametrize("key", ["min_effect", "gc_tolerance", "gc_timing_tolerance",
                                 "overhead_budget", "alpha", "timeout"])
def test_nan_settings_are_rejected(tmp_path, key):
    project(tmp_path, defaults={key: 1.0})
    edit_manifest(tmp_path, f"{key} = 1.0", f"{key} = nan")
    r = check(tmp_path)
    one_line_error(r, "benchmarks.toml", f"`{key}`")


def test_pull_request_cannot_loosen_its_own_settings(tmp_path):
    base_and_pr(tmp_path)
    bump(tmp_path, "alpha", 1, 1.3)
    # The PR loosens every threshold that would catch it.
    edit_manifest(tmp_path, "seeds = [1, 2]",
                  "seeds = [1, 2]\nmin_effect = 100.0\ngc_tolerance = 100.0\n"
                  "gc_timing_tolerance = 100.0\nmin_share = 0.99")
    r = check(tmp_path, "--baselines", "base/baselines")
    assert r.returncode == 0, r.stdout + r.stderr   # its own settings would hide it
    r = check(tmp_path, "--baselines", "base/baselines", "--base-manifest",
              "base/benchmarks.toml", "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    changed = {(c["benchmark"], c["setting"]) for c in rep["settings_changes"]}
    assert ("alpha", "min_effect") in changed and ("beta", "min_share") in changed
    md = open(tmp_path / "rep" / "report.md").read()
    head = md.split("### ")[0]
    assert "judged with the base values" in head and "min_effect = 100.0 (base: 0.05)" in head
    assert rep["benchmarks"]["alpha"]["checks"]["alloc_sites"]["outcome"] == "failed"


# ---------------------------------------------------------- missing / renamed

def test_renamed_benchmark_fails_unless_its_baseline_is_deleted(tmp_path):
    base_and_pr(tmp_path)
    edit_manifest(tmp_path, 'name = "alpha"', 'name = "alpha_v2"')
    shutil.copy(tmp_path / "alpha.spec.json", tmp_path / "alpha_v2.spec.json")
    edit_manifest(tmp_path, "alpha.spec.json", "alpha_v2.spec.json")
    r = check(tmp_path, "--baselines", "base/baselines", "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "alpha::present" in r.stdout and "not in the manifest" in r.stdout
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    assert rep["benchmarks"]["alpha"]["status"] == "missing"
    assert rep["benchmarks"]["alpha_v2"]["checks"]["alloc_sites"]["outcome"] == "skipped"
    assert "Missing: alpha" in open(tmp_path / "rep" / "report.md").read()
    # The PR deletes the old baseline and proposes the new one: removed + new.
    os.unlink(tmp_path / "baselines" / "alpha.json")
    update(tmp_path, "-k", "alpha_v2")
    r = check(tmp_path, "--baselines", "base/baselines", "--proposed-baselines", "baselines",
              "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    assert rep["benchmarks"]["alpha"]["status"] == "removed"
    assert rep["proposed_baselines"]["benchmarks"]["alpha"]["status"] == "removed"
    assert rep["proposed_baselines"]["benchmarks"]["alpha_v2"]["status"] == "added"
    assert "Removed: alpha" in open(tmp_path / "rep" / "report.md").read()


def test_missing_benchmarks_are_spread_over_shards(tmp_path):
    base_and_pr(tmp_path)
    edit_manifest(tmp_path, 'name = "alpha"', 'name = "gamma"')
    edit_manifest(tmp_path, "alpha.spec.json", "beta.spec.json")
    outs = [check(tmp_path, "--baselines", "base/baselines", "--shard", f"{k}/2",
                  "--results-json", f"s{k}.json") for k in (1, 2)]
    assert sorted(r.returncode for r in outs) == [0, 1]
    r = cli(tmp_path, "merge", "merged", "s1.json", "s2.json")
    assert r.returncode == 1 and "alpha::present" in r.stdout, r.stdout + r.stderr


# --------------------------------------------------------------- accept label

def test_accept_label_needs_matching_proposed_baselines(tmp_path):
    base_and_pr(tmp_path)
    bump(tmp_path, "alpha", 1, 1.3)
    common = ["--baselines", "base/baselines", "--base-manifest", "base/benchmarks.toml"]
    r = check(tmp_path, *common, "--accept-changes")
    one_line_error(r, "--accept-changes needs --proposed-baselines")
    # No updated baselines in the PR: the label accepts nothing.
    r = check(tmp_path, *common, "--proposed-baselines", "baselines", "--accept-changes",
              "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED" in r.stdout and "XFAIL" not in r.stdout
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    checks = dict(rep["benchmarks"]["alpha"]["checks"])
    # The budget check had nothing to judge (no budget, no annotated function).
    assert checks.pop("budget")["outcome"] == "passed"
    assert {c["outcome"] for c in checks.values()} == {"failed", "skipped"}
    # The PR regenerates its baselines honestly: fails without the label...
    update(tmp_path)
    r = check(tmp_path, *common, "--proposed-baselines", "baselines")
    assert r.returncode == 1, r.stdout + r.stderr
    # ...passes with it, and says what it accepted.
    r = check(tmp_path, *common, "--proposed-baselines", "baselines", "--accept-changes",
              "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "XFAIL" in r.stdout and "FAILED" not in r.stdout
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    acc = {(a["benchmark"], a["check"]) for a in rep["accepted"]}
    assert ("alpha", "alloc_sites") in acc and all(b == "alpha" for b, _ in acc)
    md = open(tmp_path / "rep" / "report.md").read()
    assert "accepted by label" in md.split("\n")[0]
    assert "Accepted by label" in md and "alpha::alloc_sites" in md
    # Proposed baselines that lie about the code are an error, label or not.
    p = tmp_path / "baselines" / "alpha.json"
    doc = json.load(open(p))
    doc["sites"]["Main.f1 @ main.ml"]["samples"] //= 2
    doc["totals"]["samples"] = sum(s["samples"] for s in doc["sites"].values())
    p.write_text(json.dumps(doc))
    r = check(tmp_path, *common, "--proposed-baselines", "baselines", "--accept-changes")
    assert r.returncode == 2 and "do not match the code" in r.stderr, r.stdout + r.stderr


# ---------------------------------------------------- profile / --from-run

def test_profile_then_judge_from_run(tmp_path):
    base_and_pr(tmp_path)
    bump(tmp_path, "alpha", 1, 1.3)
    edit_manifest(tmp_path, "seeds = [1, 2]", "seeds = [1, 2]\nmin_effect = 50.0")
    r = cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--base-manifest",
            "base/benchmarks.toml", "--out", "run", "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr
    run = json.load(open(tmp_path / "run" / "run.json"))
    assert sorted(run["benchmarks"]) == ["alpha", "beta"]
    assert run["benchmarks"]["alpha"]["profiles"] == ["profiles/alpha.1.json",
                                                      "profiles/alpha.2.json"]
    # The benchmark command cannot run in the judge: move the specs away.
    os.makedirs(tmp_path / "gone")
    for n in ("alpha", "beta"):
        os.rename(tmp_path / f"{n}.spec.json", tmp_path / "gone" / f"{n}.spec.json")
    judge = ["check", "--from-run", "run", "--manifest", "benchmarks.toml", "--base-manifest",
             "base/benchmarks.toml", "--baselines", "base/baselines", "--no-overhead"]
    r = cli(tmp_path, *judge, "--report-dir", "rep", "--note", "harness changed")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    assert rep["benchmarks"]["alpha"]["checks"]["alloc_sites"]["outcome"] == "failed"
    assert "harness changed" in rep["notes"]
    # Profiles taken with other settings than the judge's are an error.
    shutil.copy(tmp_path / "base" / "benchmarks.toml", tmp_path / "b2.toml")
    text = (tmp_path / "b2.toml").read_text().replace("rate = 0.001", "rate = 0.002")
    (tmp_path / "b2.toml").write_text(text)
    os.makedirs(tmp_path / "b2")
    bl = (tmp_path / "base" / "baselines" / "alpha.json").read_text()
    assert '"rate": 0.001' in bl
    (tmp_path / "b2" / "alpha.json").write_text(bl.replace('"rate": 0.001', '"rate": 0.002'))
    r = cli(tmp_path, *judge[:5], "--base-manifest", "b2.toml", "--baselines", "b2",
            "--no-overhead", "-k", "alpha")
    one_line_error(r, "profile has rate=0.001", "asked rate=0.002")


@pytest.mark.parametrize("tamper,needle", [
    (lambda d: d["benchmarks"]["alpha"].update(profiles=["../../etc/passwd"]), "profiles[0]"),
    (lambda d: d["benchmarks"]["alpha"].update(profiles=["profiles/beta.1.json"]),
     "profiles[0]"),
    (lambda d: d["benchmarks"]["alpha"].update(profiles=["profiles/alpha.1.json"]), "seeds"),
    (lambda d: d["benchmarks"]["alpha"].update(overhead={"estimate": "x"}), "overhead"),
    (lambda d: d["benchmarks"].pop("alpha"), "not in the run directories"),
    (lambda d: d["benchmarks"]["alpha"].update(error="boom\nsecond line"), "boom"),
    (lambda d: d.update(format="other"), "not a memprof-ci run"),
])
def test_tampered_run_directory_is_an_error(tmp_path, tamper, needle):
    project(tmp_path)
    update(tmp_path)
    r = cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--out", "run",
            "--no-overhead", "-k", "alpha")
    assert r.returncode == 0, r.stdout + r.stderr
    p = tmp_path / "run" / "run.json"
    doc = json.load(open(p))
    tamper(doc)
    p.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "--no-overhead", "-k", "alpha")
    one_line_error(r, needle)


def test_symlinked_profile_in_run_directory_is_refused(tmp_path):
    project(tmp_path)
    update(tmp_path)
    assert cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--out", "run",
               "--no-overhead", "-k", "alpha").returncode == 0
    prof = tmp_path / "run" / "profiles" / "alpha.1.json"
    os.rename(prof, tmp_path / "elsewhere.json")
    os.symlink(tmp_path / "elsewhere.json", prof)
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "--no-overhead", "-k", "alpha")
    one_line_error(r, "symbolic link")


# ------------------------------------------------------------- bad inputs

def _baseline_cases(good: dict):
    def with_(fn):
        d = json.loads(json.dumps(good))
        fn(d)
        return json.dumps(d)
    site = "Main.f1 @ main.ml"
    return [
        ("huge float", json.dumps(good).replace(
            f'"samples": {good["totals"]["samples"]}', '"samples": 1e400', 1), "1e400"),
        ("huge int", with_(lambda d: d["totals"].update(samples=10 ** 30)), "totals.samples"),
        ("nan gc", json.dumps(good).replace(
            f'"minor_words": {good["gc"]["minor_words"]}', '"minor_words": NaN', 1), "NaN"),
        ("negative site", with_(lambda d: d["sites"][site].update(samples=-5)), "samples"),
        ("float count", with_(lambda d: d["sites"][site].update(samples=1.5)), "samples"),
        ("live > samples", with_(lambda d: d["sites"][site].update(
            live_samples=d["sites"][site]["samples"] + 1)), "live_samples"),
        ("gc string", with_(lambda d: d["gc"].update(major_words="12")), "gc.major_words"),
        ("other benchmark", with_(lambda d: d.update(benchmark="beta")), "'beta'"),
        ("deep", "[" * 200_000, "nested"),
        ("not utf-8", b"\xff\xfe{}", "UTF-8"),
    ]


def test_hostile_baselines_exit_2(tmp_path):
    project(tmp_path)
    update(tmp_path)
    good = json.load(open(tmp_path / "baselines" / "alpha.json"))
    for i, (what, text, needle) in enumerate(_baseline_cases(good)):
        d = tmp_path / f"bl{i}"
        os.makedirs(d)
        mode = "wb" if isinstance(text, bytes) else "w"
        with open(d / "alpha.json", mode) as fh:
            fh.write(text)
        r = check(tmp_path, "-k", "alpha", "--baselines", f"bl{i}")
        assert r.returncode == 2, (what, r.stdout, r.stderr)
        one_line_error(r, "alpha.json", needle)


def test_symlinked_baselines_are_refused(tmp_path):
    project(tmp_path)
    update(tmp_path)
    os.makedirs(tmp_path / "bl")
    os.symlink(tmp_path / "nowhere.json", tmp_path / "bl" / "alpha.json")
    r = check(tmp_path, "-k", "alpha", "--baselines", "bl")
    one_line_error(r, "alpha.json", "symbolic link")
    os.unlink(tmp_path / "bl" / "alpha.json")
    os.symlink(tmp_path / "baselines" / "alpha.json", tmp_path / "bl" / "alpha.json")
    r = check(tmp_path, "-k", "alpha", "--baselines", "bl")
    one_line_error(r, "alpha.json", "symbolic link")


def test_bad_manifests_and_output_paths_exit_2(tmp_path):
    project(tmp_path)
    raw = (tmp_path / "benchmarks.toml").read_bytes()
    (tmp_path / "latin1.toml").write_bytes(raw.replace(b'name = "alpha"', b'name = "\xe9"'))
    one_line_error(check(tmp_path, "--manifest", "latin1.toml"), "latin1.toml", "UTF-8")
    (tmp_path / "seeds.toml").write_bytes(raw.replace(b"seeds = [1, 2]", b"seeds = [1, 1e400]"))
    one_line_error(check(tmp_path, "--manifest", "seeds.toml"), "seeds.toml")
    (tmp_path / "afile").write_text("x")
    os.makedirs(tmp_path / "adir")
    one_line_error(check(tmp_path, "--report-dir", "afile"), "--report-dir afile")
    one_line_error(check(tmp_path, "--results-json", "adir"), "--results-json adir")
    one_line_error(cli(tmp_path, "merge", "afile", "adir"), "afile")
    for args in (["--alpha", "nan"], ["--min-effect", "nan"], ["--gc-tolerance", "inf"]):
        write_json(tmp_path / "p.json", make_profile([(spec_sites([1])[0]["frames"], 5, 0)]))
        one_line_error(cli(tmp_path, "compare", "p.json", "p.json", *args), args[0])


def test_compare_on_deeply_nested_json(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 200_000)
    r = cli(tmp_path, "compare", "deep.json", "deep.json")
    one_line_error(r, "deep.json", "nested")


SHARD_TAMPER = [
    ("notes", lambda d: d.update(notes=5), "notes"),
    ("shard int", lambda d: d.update(shard=1), "shard"),
    ("bench str", lambda d: d["benchmarks"].update(alpha="x"), "benchmarks.alpha"),
    ("bench list", lambda d: d["benchmarks"].update(alpha=[1]), "benchmarks.alpha"),
    ("bench int", lambda d: d["benchmarks"].update(alpha=3), "benchmarks.alpha"),
    ("bench null", lambda d: d["benchmarks"].update(alpha=None), "benchmarks.alpha"),
    ("checks", lambda d: d["benchmarks"]["alpha"].update(checks=[]), "checks"),
    ("row", lambda d: d["benchmarks"]["alpha"]["alloc"][0].update(p_raw="0.5"), "p_raw"),
    ("outcome", lambda d: d["benchmarks"]["alpha"]["checks"]["alloc_sites"].update(
        outcome="won"), "outcome"),
    ("errors", lambda d: d.update(errors="x"), "errors"),
]


@pytest.mark.parametrize("what,tamper,needle", SHARD_TAMPER, ids=[c[0] for c in SHARD_TAMPER])
def test_merge_rejects_malformed_shard_reports(tmp_path, what, tamper, needle):
    project(tmp_path)
    update(tmp_path)
    r = check(tmp_path, "--results-json", "s.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.load(open(tmp_path / "s.json"))
    tamper(doc)
    (tmp_path / "s.json").write_text(json.dumps(doc))
    r = cli(tmp_path, "merge", "out", "s.json")
    one_line_error(r, "s.json", needle)


# ---------------------------------------------------------- internal errors

def test_internal_error_is_exit_2_with_one_line(monkeypatch, capsys):
    def boom(args):
        raise ZeroDivisionError("deliberate")
    monkeypatch.setitem(cli_mod.COMMANDS, "list", boom)
    assert cli_mod.main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ZeroDivisionError: deliberate" in err
    monkeypatch.setitem(cli_mod.COMMANDS, "compare", boom)
    assert cli_mod.main(["compare", "a", "b", "-v"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err


def test_patch_id_mismatch_is_named_first(tmp_path):
    project(tmp_path)
    update(tmp_path)
    p = tmp_path / "baselines" / "alpha.json"
    doc = json.load(open(p))
    doc["patch_id"] = "aaaa"
    p.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "--no-overhead", "-k", "alpha",
            "--report-dir", "rep", env_extra={"MEMPROF_CI_PATCH_ID": "bbbb"})
    assert r.returncode == 0, r.stdout + r.stderr
    md = open(tmp_path / "rep" / "report.md").read()
    assert "alpha: recorded with runtime patch aaaa, measured with bbbb" in md.split("### ")[0]


def test_every_item_marker_is_registered(tmp_path):
    # profile, check (with a benchmark only the baselines still have) and
    # update-baselines: pytest knows each item's markers, so none warns.
    project(tmp_path)
    update(tmp_path)
    runs = [cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--out", "run",
                "--no-overhead", "-k", "alpha")]
    (tmp_path / "baselines" / "gone.json").write_text(
        (tmp_path / "baselines" / "alpha.json").read_text())
    runs.append(cli(tmp_path, "check", "--manifest", "benchmarks.toml", "--no-overhead"))
    for r in runs:
        assert "PytestUnknownMarkWarning" not in r.stdout + r.stderr, r.stdout


def test_release_mismatch_names_both_releases(tmp_path):
    """A baseline recorded on OCaml 5.3.0 judged against a run on 5.4.1 says
    so, naming both releases, in the terminal and in report.md."""
    project(tmp_path)
    update(tmp_path)
    spec = tmp_path / "alpha.spec.json"
    doc = json.load(open(spec))
    doc["ocaml_version"] = "5.4.1"
    spec.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "--no-overhead", "-k", "alpha",
            "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    note = "baseline recorded on OCaml 5.3.0, this run on OCaml 5.4.1"
    assert note in r.stdout, r.stdout
    assert note in open(tmp_path / "rep" / "report.md").read()
