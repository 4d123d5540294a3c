"""`memprof-ci bisect` on generated git repositories of a small OCaml
program (commits_testlib) built with the patched compiler: one commit makes
make_arrays allocate about 47% more, every other commit only edits a
comment.  The builds are counted through the manifest's build script.
"""

import math

import pytest
from commits_testlib import commit_all, git, need_runtime, new_repo, path_env, worktrees, \
    write_program
from harness_testlib import no_traceback, run_cli


def _history(repo, n, culprit):
    """n commits after the repository's first; commit `culprit` (1-based)
    enlarges make_arrays' arrays.  Their ids, oldest first."""
    shas = []
    for i in range(1, n + 1):
        write_program(repo, 24 if i >= culprit else 16, comment=f"commit {i}")
        shas.append(commit_all(repo, f"commit {i}" + (" enlarges the arrays" if i == culprit
                                                       else "")))
    return shas


def _bisect(repo, builds, *args):
    return run_cli(["bisect", "--manifest", "benchmarks.toml", *args], cwd=str(repo),
                   env_extra=path_env(MEMPROF_TEST_BUILDS=str(builds)), timeout=1800)


def _untouched(repo, head):
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    assert len(worktrees(repo)) == 1, worktrees(repo)
    assert git(repo, "for-each-ref", "refs/bisect") == ""


@pytest.mark.needs_runtime
def test_bisect_finds_the_culprit_at_a_site_within_log2_builds(tmp_path):
    need_runtime()
    repo = tmp_path / "repo"
    good = new_repo(repo)
    n, culprit = 16, 11
    shas = _history(repo, n, culprit)
    builds = tmp_path / "builds"
    r = _bisect(repo, builds, "--good", good, "--bad", "main", "--site", "make_arrays")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"first changed commit: {shas[culprit - 1]} commit {culprit} enlarges the arrays" \
        in r.stdout, r.stdout
    change = [x for x in r.stdout.splitlines() if "Alloc.make_arrays @ alloc.ml" in x]
    assert change and "regression" in change[0], r.stdout
    built = builds.read_text().split()
    assert built[0] == good
    assert len(built) <= math.ceil(math.log2(n)) + 1, built
    assert shas[-1] not in built        # B is known changed: never built
    _untouched(repo, shas[-1])


@pytest.mark.needs_runtime
def test_bisect_by_verdict_confirms_a_culprit_at_the_bad_end(tmp_path):
    """The culprit is B itself: git bisect never tests it, so bisect builds
    it once more to confirm rather than presume the change."""
    need_runtime()
    repo = tmp_path / "repo"
    good = new_repo(repo)
    n = 4
    shas = _history(repo, n, n)
    builds = tmp_path / "builds"
    r = _bisect(repo, builds, "--good", "main~4", "--bad", "main", "--bench", "alloc")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"first changed commit: {shas[-1]}" in r.stdout, r.stdout
    assert "alloc: alloc_sites:" in r.stdout, r.stdout
    built = builds.read_text().split()
    assert built[0] == good and built[-1] == shas[-1]
    assert len(built) <= math.ceil(math.log2(n)) + 2, built
    _untouched(repo, shas[-1])


@pytest.mark.needs_runtime
def test_bisect_without_a_change_is_an_error(tmp_path):
    need_runtime()
    repo = tmp_path / "repo"
    good = new_repo(repo)
    _history(repo, 2, 99)
    r = _bisect(repo, tmp_path / "builds", "--good", good, "--bad", "main", "--site",
                "make_arrays")
    assert r.returncode == 2, r.stdout + r.stderr
    no_traceback(r)
    assert "shows no change against --good" in r.stderr.strip().splitlines()[-1]
    assert len(worktrees(repo)) == 1


def test_bisect_refuses_commits_out_of_order_and_unknown(tmp_path):
    repo = tmp_path / "repo"
    good = new_repo(repo)
    write_program(repo, 16, comment="later")
    later = commit_all(repo, "later")
    for args, word in ((["--good", later, "--bad", good], "must be an ancestor"),
                       (["--good", "nope", "--bad", later], "--good 'nope'"),
                       (["--good", good, "--bad", good], "must be an ancestor"),
                       (["--good", good, "--bad", later, "--bench", "zzz"], "--bench zzz")):
        r = _bisect(repo, tmp_path / "builds", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        no_traceback(r)
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and word in err[0], (args, err)
    assert len(worktrees(repo)) == 1
