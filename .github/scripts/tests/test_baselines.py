"""Tests of base-baselines.sh on real temporary git repositories: it extracts a
commit's baselines (and manifest) from git objects only, whatever the work tree
holds. How judge.sh uses it on pull requests is tested in test_judge.py.
"""
import pathlib

import pytest

from ghci_helpers import GIT_ENV, SCRIPTS, committed_repo, git, run, write

BASE_BASELINES = str(SCRIPTS / "base-baselines.sh")


def files(d):
    d = pathlib.Path(d)
    return {str(p.relative_to(d)): p.read_text() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def repo(tmp_path):
    """main: baselines/{alloc.json,deep.json}, bench/baselines/deep.json and
    src; returns (path, base_sha)."""
    r = tmp_path / "repo"
    return r, committed_repo(r, {"baselines/alloc.json": '{"minor_words": 100}\n',
                                 "baselines/deep.json": '{"major_words": 5}\n',
                                 "bench/baselines/deep.json": '{"major_words": 6}\n',
                                 "src/main.ml": "let () = ()\n"}, "base")


def test_extracts_base_baselines_exactly(repo, tmp_path):
    r, base = repo
    write(r, "baselines/alloc.json", '{"minor_words": 999999}\n')  # dirty work tree
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, base, str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert files(out) == {"alloc.json": '{"minor_words": 100}\n', "deep.json": '{"major_words": 5}\n'}
    # The work tree is untouched.
    assert (r / "baselines/alloc.json").read_text() == '{"minor_words": 999999}\n'


def test_base_without_baselines_gives_empty_dir(tmp_path):
    r = tmp_path / "r"
    committed_repo(r, {"README": "x\n"}, "c")
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, "HEAD", str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert out.is_dir() and files(out) == {}


def test_custom_baselines_path(repo, tmp_path):
    r, base = repo
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, base, str(out), "bench/baselines/"], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert files(out) == {"deep.json": '{"major_words": 6}\n'}


@pytest.mark.parametrize("attributes", [
    ("baselines/.gitattributes", None),
    (".gitattributes", "baselines/alloc.json export-ignore\n*.json export-ignore\n"
                       "*.json export-subst\n*.json filter=evil\n"),
], ids=["in-baselines", "at-root"])
def test_git_attributes_cannot_hide_or_rewrite_a_baseline(repo, tmp_path, attributes):
    """No attribute applies: a .gitattributes in the baselines directory is
    refused (it is not a baseline); one at the root changes nothing."""
    r, _ = repo
    path, text = attributes
    write(r, path, text or "*.json export-ignore\n")
    write(r, "baselines/alloc.json", '{"minor_words": 100, "x": "$Format:%H$"}\n')
    git(r, "config", "filter.evil.smudge", "false")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "attributes")
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, "HEAD", str(out)], cwd=r)
    if path.startswith("baselines/"):
        assert proc.returncode == 2
        assert "not baselines" in proc.stderr and ".gitattributes" in proc.stderr
        assert files(out) == {}
    else:
        assert proc.returncode == 0, proc.stderr
        assert files(out) == {"alloc.json": '{"minor_words": 100, "x": "$Format:%H$"}\n',
                              "deep.json": '{"major_words": 5}\n'}


@pytest.mark.parametrize("entry", ["sub/deep.json", ".hidden.json", "README.md", "-a.json", "a b.json",
                                   "a.json.bak", "new\nline.json"])
def test_refuses_what_is_not_a_baseline(repo, tmp_path, entry):
    """Only regular files NAME.json; nothing is written when one entry is odd."""
    r, _ = repo
    write(r, "baselines/" + entry, "{}\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "odd")
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, "HEAD", str(out)], cwd=r)
    assert proc.returncode == 2
    assert "not baselines" in proc.stderr
    assert files(out) == {}


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


# ---------------------------------------------------------------- --manifest and symlinks

def test_extracts_manifest_with_baselines(repo, tmp_path):
    r, base = repo
    write(r, "bench/m.toml", "[defaults]\nalpha = 0.01\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "manifest")
    head = git(r, "rev-parse", "HEAD")
    write(r, "bench/m.toml", "[defaults]\nalpha = 0.9\n")  # dirty work tree: ignored
    man = tmp_path / "x" / "bench" / "m.toml"
    proc = run([BASE_BASELINES, "--manifest", "bench/m.toml", str(man), head, str(tmp_path / "out")], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert man.read_text() == "[defaults]\nalpha = 0.01\n"
    assert "alloc.json" in files(tmp_path / "out")
    # Manifest only.
    man2 = tmp_path / "y.toml"
    proc = run([BASE_BASELINES, "--manifest", "bench/m.toml", str(man2), head, "-"], cwd=r)
    assert proc.returncode == 0 and man2.read_text() == "[defaults]\nalpha = 0.01\n"
    # A commit without the manifest: nothing written, not an error.
    man3 = tmp_path / "z.toml"
    proc = run([BASE_BASELINES, "--manifest", "bench/m.toml", str(man3), base, "-"], cwd=r)
    assert proc.returncode == 0 and not man3.exists()
    assert "has no bench/m.toml" in proc.stderr


def test_dash_out_dir_needs_manifest(repo):
    r, base = repo
    assert run([BASE_BASELINES, base, "-"], cwd=r).returncode == 2


@pytest.mark.parametrize("where", ["manifest", "baselines"])
def test_refuses_symlinks(repo, tmp_path, where):
    """A planted link must not make the harness read another file."""
    r, _ = repo
    if where == "manifest":
        (r / "m.toml").symlink_to("/etc/passwd")
    else:
        (r / "baselines" / "evil.json").symlink_to("/etc/passwd")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "link")
    head = git(r, "rev-parse", "HEAD")
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, "--manifest", "m.toml", str(tmp_path / "m.toml"), head, str(out)], cwd=r)
    assert proc.returncode == 2
    assert not (out / "evil.json").exists() and not (tmp_path / "m.toml").exists()


@pytest.mark.parametrize("args", [["--manifest"], ["--manifest", "m"], ["--manifest", "", "o", "HEAD", "out"],
                                  ["--manifest", "../m", "o", "HEAD", "out"], ["--manifest", "/etc/passwd", "o", "HEAD", "out"]])
def test_manifest_usage_errors(repo, args):
    r, _ = repo
    assert run([BASE_BASELINES, *args], cwd=r).returncode == 2


def test_the_gitkeep_of_init_is_allowed_and_not_copied(repo, tmp_path):
    """`memprof-ci init` leaves baselines/.gitkeep; the base's baselines still
    come out, without it."""
    r, _ = repo
    write(r, "baselines/.gitkeep", "")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "keep")
    out = tmp_path / "out"
    proc = run([BASE_BASELINES, "HEAD", str(out)], cwd=r)
    assert proc.returncode == 0, proc.stderr
    assert ".gitkeep" not in files(out) and files(out)
