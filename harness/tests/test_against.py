"""The manifest's `build` and `check --against REF`, on real git repositories
of a small OCaml program built with the patched compiler (commits_testlib).

--against builds REF in a temporary worktree with REF's own `build`,
profiles it into temporary baselines, and judges the working tree against
them: no stored baselines are read or written, the report names the ref
and its commit, and the worktree is gone afterwards.
"""

import json
import os

import pytest
from commits_testlib import (MANIFEST, commit_all, git, need_runtime, new_repo, path_env, worktrees,
                             write_program)
from harness_testlib import no_traceback, run_cli, write_manifest


# ---- the manifest's `build` key

@pytest.mark.parametrize("value, why", [
    ('"make"', "a string"),
    ("[]", "empty"),
    ("[1, 2]", "not strings"),
    ('[""]', "an empty program"),
    ('["make", 3]', "a number inside"),
    ("{ a = 1 }", "a table"),
    ('["a\\u0000b"]', "a NUL byte"),
    ("[" + ", ".join(['"x"'] * 1001) + "]", "too long"),
])
def test_a_malformed_build_is_one_line_naming_it(tmp_path, value, why):
    path = write_manifest(str(tmp_path), [{"name": "a", "command": ["true"]}])
    text = open(path).read()
    open(path, "w").write(f"build = {value}\n" + text)
    r = run_cli(["list", "--manifest", path])
    assert r.returncode == 2, (why, r.stdout, r.stderr)
    no_traceback(r)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "`build`" in err[0] and "benchmarks.toml" in err[0], (why, err)


def test_build_is_resolved_like_command(tmp_path):
    from memprof_ci.inputs.manifest import load_manifest
    path = write_manifest(str(tmp_path), [{"name": "a", "command": ["true"]}])
    text = open(path).read()
    open(path, "w").write('build = ["./b.sh", "x", "./y"]\n' + text)
    man = load_manifest(path)
    assert man.build == [str(tmp_path / "b.sh"), "x", str(tmp_path / "y")]
    (tmp_path / "n").mkdir()
    path2 = write_manifest(str(tmp_path / "n"), [{"name": "a", "command": ["true"]}])
    assert load_manifest(path2).build is None


# ---- check --against

def _against(repo, ref, *extra, tmpdir=None, **env):
    env = path_env(**({"TMPDIR": str(tmpdir)} if tmpdir else {}), **env)
    return run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead", f"--against={ref}",
                    *extra], cwd=str(repo), env_extra=env, timeout=600)


@pytest.mark.needs_runtime
def test_against_a_ref_judges_the_working_trees_own_change(tmp_path):
    need_runtime()
    repo = tmp_path / "repo"
    base = new_repo(repo)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    # The same allocation with a comment changed: no regression.
    write_program(repo, 16, comment="only a comment")
    r = _against(repo, "main", "--report-dir", str(tmp_path / "rep0"), tmpdir=scratch)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"reference: main ({base[:12]})" in r.stdout
    rep = json.load(open(tmp_path / "rep0" / "report.json"))
    assert rep["reference"] == {"ref": "main", "commit": base}
    assert any(base in n for n in rep["notes"]), rep["notes"]

    # make_arrays allocates about 47% more: exactly that site regresses.
    write_program(repo, 24, comment="bigger arrays")
    r = _against(repo, "main", "--report-dir", str(tmp_path / "rep1"), tmpdir=scratch)
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep1" / "report.json"))
    rows = rep["benchmarks"]["alloc"]["alloc"]
    regs = [x["site"] for x in rows if x["status"] == "regression"]
    assert regs == ["Alloc.make_arrays @ alloc.ml (via runtime primitives)"], regs   # Array.make: C
    assert rep["reference"]["commit"] == base
    assert f"commit {base}" in open(tmp_path / "rep1" / "report.md").read()

    # Nothing stored, nothing left behind.
    assert not (repo / "baselines").exists()
    assert len(worktrees(repo)) == 1, worktrees(repo)
    assert os.listdir(scratch) == [], os.listdir(scratch)
    assert git(repo, "status", "--porcelain") == "M alloc.ml"


@pytest.mark.needs_runtime
def test_against_an_older_commit_with_the_change_committed(tmp_path):
    """REF is built from its own tree: HEAD~1 has the small arrays."""
    need_runtime()
    repo = tmp_path / "repo"
    base = new_repo(repo)
    write_program(repo, 24, comment="bigger arrays")
    commit_all(repo, "bigger arrays")
    r = _against(repo, "HEAD~1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert base[:12] in r.stdout
    r = _against(repo, "HEAD")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.needs_runtime
def test_three_small_changes_each_pass_against_their_parent(tmp_path):
    """Each commit adds a site of about 0.43% of all allocation, below
    min_share: each passes against its parent's measurement, and the three
    together fail against the first commit (minor_words +1.3% >
    gc_tolerance 1%) though no site holds min_share."""
    need_runtime()
    repo = tmp_path / "repo"
    first = new_repo(repo)
    for step in (1, 2, 3):
        write_program(repo, 16, comment=f"step {step}", new_sites=step)
        commit_all(repo, f"step {step}")
        r = _against(repo, "HEAD~1", "--results-json", str(tmp_path / f"s{step}.json"))
        assert r.returncode == 0, (step, r.stdout + r.stderr)
        gc = {g["counter"]: g for g in
              json.load(open(tmp_path / f"s{step}.json"))["benchmarks"]["alloc"]["gc"]}
        assert 0.003 < gc["minor_words"]["current"] / gc["minor_words"]["baseline"] - 1 < 0.007
    r = _against(repo, first, "--results-json", str(tmp_path / "all.json"))
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "all.json"))
    assert rep["verdict"]["regressions"] == ["alloc::gc_totals"], rep["verdict"]
    assert "minor_words" in rep["benchmarks"]["alloc"]["checks"]["gc_totals"]["message"]


def test_against_an_unknown_ref_is_one_line(tmp_path):
    repo = tmp_path / "repo"
    new_repo(repo)
    for ref in ("no-such-branch", "-rf", "main~5"):
        r = _against(repo, ref)
        assert r.returncode == 2, (ref, r.stdout, r.stderr)
        no_traceback(r)
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and "--against" in err[0] and ref in err[0], err
    assert len(worktrees(repo)) == 1


def test_a_failing_build_of_the_ref_is_one_line_and_cleaned_up(tmp_path):
    repo = tmp_path / "repo"
    new_repo(repo)
    (repo / "build.sh").write_text("#!/bin/sh\necho 'Error: the build broke' >&2\nexit 3\n")
    broken = commit_all(repo, "broken build")
    (repo / "build.sh").write_text("#!/bin/sh\nexit 0\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r = _against(repo, "HEAD", tmpdir=scratch)
    assert r.returncode == 2, r.stdout + r.stderr
    no_traceback(r)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, err
    assert f"build of HEAD ({broken[:12]}) failed (exit 3)" in err[0]
    assert "the build broke" in err[0]
    assert len(worktrees(repo)) == 1
    assert os.listdir(scratch) == []


def test_against_refuses_stored_baseline_options(tmp_path):
    repo = tmp_path / "repo"
    new_repo(repo)
    (repo / "prop").mkdir()
    r = _against(repo, "main", "--proposed-baselines", "prop")
    assert r.returncode == 2 and "--against cannot be combined with --proposed-baselines" \
        in r.stderr, r.stderr
    no_traceback(r)


def test_against_a_ref_without_the_manifest(tmp_path):
    repo = tmp_path / "repo"
    new_repo(repo)
    (repo / "sub").mkdir()
    (repo / "sub" / "benchmarks.toml").write_text((repo / "benchmarks.toml").read_text())
    r = run_cli(["check", "--manifest", "sub/benchmarks.toml", "--against", "main"],
                cwd=str(repo), env_extra=path_env())
    assert r.returncode == 2, r.stdout + r.stderr
    assert "has no manifest at sub/benchmarks.toml" in r.stderr, r.stderr
    assert len(worktrees(repo)) == 1


def test_against_a_ref_whose_manifest_has_no_build(tmp_path):
    repo = tmp_path / "repo"
    new_repo(repo, manifest=MANIFEST.replace('build = ["sh", "./build.sh"]\n', ""))
    r = _against(repo, "main")
    assert r.returncode == 2, r.stdout + r.stderr
    no_traceback(r)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "has no `build`" in err[0] and "main (" in err[0], err
    assert len(worktrees(repo)) == 1
