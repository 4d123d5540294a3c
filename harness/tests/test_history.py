"""`memprof-ci record` and `memprof-ci history`: main's runs of a real git
repository of a small OCaml program (commits_testlib), measured with the
patched runtime, recorded one JSON per commit and rendered on one page,
which headless Chromium loads (chromium_cdp.py) and a screenshot keeps.
"""

import json
import os
import subprocess

import pytest
from commits_testlib import commit_all, git, need_runtime, new_repo, path_env, write_program
from harness_testlib import no_traceback, run_cli


def _cli(repo, *args):
    r = run_cli(list(args), cwd=str(repo), env_extra=path_env(), timeout=600)
    return r


def _measure(repo, out):
    r = subprocess.run(["sh", "./build.sh"], cwd=str(repo), env=dict(os.environ, **path_env()),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = _cli(repo, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
             "--baselines", str(out))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Three commits of main, each measured and recorded; the third
    enlarges make_arrays' arrays and its change is accepted by the label."""
    need_runtime()
    tmp = tmp_path_factory.mktemp("history")
    repo, runs = tmp / "repo", tmp / "runs"
    commits = [new_repo(repo)]
    write_program(repo, 16, comment="a comment")
    commits.append(commit_all(repo, "a comment"))
    write_program(repo, 24, comment="bigger arrays")
    commits.append(commit_all(repo, "bigger arrays <b>accepted</b>"))
    for i, sha in enumerate(commits):
        git(repo, "checkout", "-q", "--detach", sha)
        _measure(repo, tmp / f"m{i}")
        extra = []
        if i == 2:
            r = _cli(repo, "check", "--manifest", "benchmarks.toml", "--no-overhead",
                     "--baselines", str(tmp / "m1"), "--proposed-baselines", str(tmp / "m2"),
                     "--accept-changes", "--report-dir", str(tmp / "rep2"))
            assert r.returncode == 0, r.stdout + r.stderr
            extra = ["--report", str(tmp / "rep2" / "report.json")]
        r = _cli(repo, "record", "--runs", str(runs), "--baselines", str(tmp / f"m{i}"),
                 "--commit", sha, *extra)
        assert r.returncode == 0, r.stdout + r.stderr
    git(repo, "checkout", "-q", "main")
    return tmp, repo, runs, commits


@pytest.mark.needs_runtime
def test_records_are_one_json_per_commit_in_baseline_format(recorded):
    tmp, repo, runs, commits = recorded
    assert sorted(os.listdir(runs)) == sorted(f"{c}.json" for c in commits)
    third = json.load(open(runs / f"{commits[2]}.json"))
    assert third["commit"] == commits[2] and third["subject"].startswith("bigger arrays")
    assert third["benchmarks"]["alloc"]["format"] == "memprof-ci/baseline"
    assert third["accepted"] == ["alloc"]
    assert third["report"]["verdict"]["exit_code"] == 0
    assert json.load(open(runs / f"{commits[0]}.json"))["accepted"] == []


@pytest.mark.needs_runtime
def test_history_page_lists_the_commits_in_chromium(recorded):
    from chromium_cdp import Browser, check_screenshot
    tmp, repo, runs, commits = recorded
    out = tmp / "history.html"
    r = _cli(repo, "history", "--runs", str(runs), "--out", str(out), "--commit-url",
             "https://example.org/owner/repo/commit/")
    assert r.returncode == 0, r.stdout + r.stderr
    page = out.read_text()
    assert "default-src 'none'" in page and "<b>accepted</b>" not in page
    with Browser() as br:
        br.open(str(out))
        listed = br.eval("Array.from(document.querySelectorAll('#commits li'))"
                         ".map(li => li.getAttribute('data-commit'))")
        assert listed == commits
        links = br.eval("Array.from(document.querySelectorAll('#commits li a'))"
                        ".map(a => a.href)")
        assert links == [f"https://example.org/owner/repo/commit/{c}" for c in commits]
        heads = br.eval("Array.from(document.querySelectorAll('#bench-0 thead th[data-commit]'))"
                        ".map(th => [th.getAttribute('data-commit'), th.className])")
        assert heads == [[commits[0], ""], [commits[1], ""], [commits[2], "accepted"]]
        rows = br.eval("Array.from(document.querySelectorAll('#bench-0 tbody tr'))"
                       ".map(tr => Array.from(tr.cells).map(c => c.textContent))")
        labels = [r[0] for r in rows]
        assert labels[:2] == ["total allocated", "minor_words"]
        assert "Alloc.make_arrays @ alloc.ml" in labels
        arrays = rows[labels.index("Alloc.make_arrays @ alloc.ml")][1:]
        assert all("[" in c for c in arrays), arrays          # sampled: an interval
        assert arrays[0] == arrays[1] != arrays[2]            # same code, same samples
        assert all(c.endswith("(exact)") for c in rows[1][1:])
        assert br.eval("document.querySelectorAll('#bench-0 svg.chart circle').length") == 3
        assert br.eval("document.querySelectorAll('#bench-0 svg.chart circle.accepted')"
                       ".length") == 1
        shot = br.screenshot(str(tmp / "history.png"))
        br.settle()
        assert br.errors == []
    check_screenshot(shot, "history.png")


def test_history_refuses_bad_records_in_one_line(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    r = run_cli(["history", "--runs", str(runs), "--out", str(tmp_path / "h.html")])
    assert r.returncode == 2 and "no run records" in r.stderr, r.stderr
    sha = "a" * 40
    cases = [("{", "not valid JSON"), (json.dumps({"format": "x"}), "not a run record"),
             (json.dumps({"format": "memprof-ci/run-record", "version": 1, "commit": "b" * 40}),
              "not named after")]
    for text, word in cases:
        (runs / f"{sha}.json").write_text(text)
        r = run_cli(["history", "--runs", str(runs), "--out", str(tmp_path / "h.html")])
        assert r.returncode == 2, r.stderr
        no_traceback(r)
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and word in err[0] and sha in err[0], err
    (runs / f"{sha}.json").unlink()
    os.symlink("/etc/passwd", runs / f"{sha}.json")
    r = run_cli(["history", "--runs", str(runs), "--out", str(tmp_path / "h.html")])
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    assert not (tmp_path / "h.html").exists()
