"""Tests of base-baselines.sh and select-baselines.sh on real temporary git repos.

Each test builds a repository with a `main` branch holding baselines/ and a
pull-request branch, checks out a merge commit the way actions/checkout does
for `pull_request` events, and asserts that the check would compare against the
base branch's baselines whatever the pull request did to its own copies.
"""
import pathlib

import pytest

from ghci_helpers import SCRIPTS, run

BASE_BASELINES = str(SCRIPTS / "base-baselines.sh")
SELECT = str(SCRIPTS / "select-baselines.sh")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo, *args):
    return run(["git", *args], cwd=repo, env=GIT_ENV, check=True).stdout.strip()


def write(repo, rel, text):
    p = pathlib.Path(repo) / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def files(d):
    d = pathlib.Path(d)
    return {str(p.relative_to(d)): p.read_text() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def repo(tmp_path):
    """main: baselines/{alloc.json,sub/deep.json} + src; returns (path, base_sha)."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    write(r, "baselines/alloc.json", '{"minor_words": 100}\n')
    write(r, "baselines/sub/deep.json", '{"major_words": 5}\n')
    write(r, "src/main.ml", "let () = ()\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    return r, git(r, "rev-parse", "HEAD")


def pr_merge(r, base_sha, change):
    """Make a PR branch off main with `change(r)`, then check out main merged with it
    (the shape of refs/pull/N/merge). Returns the merge commit sha."""
    git(r, "checkout", "-q", "-b", "pr", base_sha)
    change(r)
    git(r, "add", "-A")
    git(r, "commit", "-q", "--allow-empty", "-m", "pr")
    git(r, "checkout", "-q", "--detach", "main")
    git(r, "merge", "-q", "--no-ff", "-m", "merge", "pr")
    return git(r, "rev-parse", "HEAD")


def test_extracts_base_baselines_exactly(repo, tmp_path):
    r, base = repo
    write(r, "baselines/alloc.json", '{"minor_words": 999999}\n')  # dirty work tree
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, base, str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert files(out) == {"alloc.json": '{"minor_words": 100}\n', "sub/deep.json": '{"major_words": 5}\n'}
    # The work tree is untouched.
    assert (r / "baselines/alloc.json").read_text() == '{"minor_words": 999999}\n'


def test_base_without_baselines_gives_empty_dir(tmp_path):
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    write(r, "README", "x\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "c")
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, "HEAD", str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert out.is_dir() and files(out) == {}


def test_custom_baselines_path(repo, tmp_path):
    r, base = repo
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, base, str(out), "baselines/sub/"], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert files(out) == {"deep.json": '{"major_words": 5}\n'}


@pytest.mark.parametrize("args", [[], ["HEAD"], ["HEAD", "out", "baselines", "x"], ["--output=/tmp/x", "out"],
                                  ["HEAD", "out", "../etc"], ["HEAD", "out", "/etc"]])
def test_usage_errors(repo, args):
    r, _ = repo
    assert run([BASE_BASELINES, *args], cwd=r).returncode == 2


def test_unknown_ref_fails(repo, tmp_path):
    r, _ = repo
    proc = run([BASE_BASELINES, "f" * 40, str(tmp_path / "out")], cwd=r)
    assert proc.returncode == 2
    assert "cannot resolve" in proc.stderr


def test_refuses_non_empty_out_dir(repo, tmp_path):
    r, base = repo
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.json").write_text("{}")
    assert run([BASE_BASELINES, base, str(out)], cwd=r).returncode == 2


def test_baselines_path_that_is_a_file(repo, tmp_path):
    r, base = repo
    assert run([BASE_BASELINES, base, str(tmp_path / "o"), "src/main.ml"], cwd=r).returncode == 2


def test_fetches_base_missing_from_shallow_clone(repo, tmp_path):
    r, base = repo
    write(r, "baselines/alloc.json", '{"minor_words": 1}\n')
    git(r, "commit", "-q", "-am", "newer")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{r}", str(clone))
    git(r, "config", "uploadpack.allowAnySHA1InWant", "true")
    assert run(["git", "cat-file", "-e", f"{base}^{{commit}}"], cwd=clone).returncode != 0
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, base, str(out)], cwd=clone, env=GIT_ENV)
    assert proc.returncode == 0, proc.stderr
    assert files(out)["alloc.json"] == '{"minor_words": 100}\n'


def parse_outputs(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_pr_that_edits_baselines_is_checked_against_base(repo, tmp_path):
    r, base = repo

    def loosen(rr):
        write(rr, "baselines/alloc.json", '{"minor_words": 100000}\n')  # would hide a regression
        write(rr, "src/main.ml", "let () = ignore (Array.make 1000 0)\n")

    pr_merge(r, base, loosen)
    out = tmp_path / "base-baselines"
    gh_out = tmp_path / "github_output"
    proc = run([SELECT, "pull_request", base, str(out)], cwd=r, env={"GITHUB_OUTPUT": str(gh_out)})
    assert proc.returncode == 0, proc.stderr
    outputs = parse_outputs(proc.stdout)
    assert outputs == {"baselines": str(out), "proposed": "true", "check_args": "--proposed-baselines baselines"}
    assert parse_outputs(gh_out.read_text()) == outputs
    assert files(out)["alloc.json"] == '{"minor_words": 100}\n'
    assert "baselines/alloc.json" in proc.stderr


def test_pr_without_baseline_changes_still_uses_base(repo, tmp_path):
    r, base = repo
    pr_merge(r, base, lambda rr: write(rr, "src/main.ml", "let () = print_endline \"x\"\n"))
    out = tmp_path / "bb"
    proc = run([SELECT, "pull_request", base, str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert parse_outputs(proc.stdout) == {"baselines": str(out), "proposed": "false", "check_args": ""}
    assert files(out) == {"alloc.json": '{"minor_words": 100}\n', "sub/deep.json": '{"major_words": 5}\n'}


def test_base_moved_on_after_branching(repo, tmp_path):
    """main updates its baselines after the PR branched: the PR is compared with
    main's current baselines, and is not blamed for main's change."""
    r, base = repo
    git(r, "checkout", "-q", "-b", "pr", base)
    write(r, "src/main.ml", "let () = exit 0\n")
    git(r, "commit", "-q", "-am", "pr")
    git(r, "checkout", "-q", "main")
    write(r, "baselines/alloc.json", '{"minor_words": 90}\n')
    git(r, "commit", "-q", "-am", "main improves")
    new_base = git(r, "rev-parse", "HEAD")
    git(r, "checkout", "-q", "--detach", "main")
    git(r, "merge", "-q", "--no-ff", "-m", "merge", "pr")
    out = tmp_path / "bb"
    proc = run([SELECT, "pull_request", new_base, str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert parse_outputs(proc.stdout)["proposed"] == "false"
    assert files(out)["alloc.json"] == '{"minor_words": 90}\n'


def test_pr_deleting_baselines(repo, tmp_path):
    r, base = repo
    pr_merge(r, base, lambda rr: git(rr, "rm", "-q", "-r", "baselines"))
    out = tmp_path / "bb"
    proc = run([SELECT, "pull_request", base, str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert parse_outputs(proc.stdout)["proposed"] == "true"
    assert "alloc.json" in files(out)


def test_push_uses_committed_baselines(repo, tmp_path):
    r, _ = repo
    proc = run([SELECT, "push", "", str(tmp_path / "unused")], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert parse_outputs(proc.stdout) == {"baselines": "baselines", "proposed": "false", "check_args": ""}
    assert not (tmp_path / "unused").exists()


def test_pull_request_requires_base_sha(repo, tmp_path):
    r, _ = repo
    assert run([SELECT, "pull_request", "", str(tmp_path / "o")], cwd=r).returncode == 2
