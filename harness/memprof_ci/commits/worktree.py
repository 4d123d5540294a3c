"""Git commits as build trees: resolve a ref, check it out in a temporary
worktree, and build it with its manifest's `build`.

Used by `check --against` (against.py) and `bisect` (bisection.py).

Invariants:
1. Only what this module created is removed: the temporary directory made
   by mkdtemp and the worktree added inside it (`git worktree remove` of
   that path only, then the directory), always, in a finally clause.
2. Every git and build failure is a MemprofError of one line naming the
   ref, the commit or the command (ConfigError: a ref that is not a commit
   or a manifest the commit lacks; InfraError: git or the build failed).
3. A build runs in the manifest's directory with the caller's environment
   (so the patched compiler first on PATH builds every side alike) and a
   bounded time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile

from ..store import baseline as bl
from ..errors import ConfigError, InfraError
from ..inputs.manifest import Manifest, load_manifest
from ..text.mdsafe import printable

GIT_TIMEOUT = 300
BUILD_TIMEOUT = 3600
TAIL = 300


def git(repo: str, *args: str, check: bool = True, timeout: float = GIT_TIMEOUT) -> str:
    """`git -C repo args...`'s stdout, stripped; InfraError on failure when
    `check`, else the empty string."""
    try:
        r = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                           timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        raise InfraError(f"git {' '.join(args[:2])}: {e}") from None
    if r.returncode != 0:
        if not check:
            return ""
        raise InfraError(f"git {' '.join(args[:2])} failed in {repo}: "
                         f"{_tail(r.stderr or r.stdout)}")
    return r.stdout.strip()


def _tail(text: str) -> str:
    text = printable(" | ".join((text or "").strip().splitlines()))
    return text if len(text) <= TAIL else "..." + text[-TAIL:]


def toplevel(path: str) -> str:
    """The root of the git working tree holding `path` (a file or a directory)."""
    where = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)) or "."
    top = git(where, "rev-parse", "--show-toplevel", check=False)
    if not top:
        raise ConfigError(f"{path}: not inside a git working tree")
    return os.path.realpath(top)


def resolve(repo: str, ref: str, flag: str) -> str:
    """The full commit id `ref` names in `repo`; ConfigError when none."""
    if not ref or ref.startswith("-") or "\0" in ref or len(ref) > 1000:
        raise ConfigError(f"{flag} {printable(ref)!r}: not a git ref")
    sha = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}",
              check=False)
    if not sha:
        raise ConfigError(f"{flag} {printable(ref)!r}: no such commit in {repo}")
    return sha


@contextlib.contextmanager
def temporary_worktree(repo: str, sha: str, prefix: str = "memprof-ci-tree."):
    """A detached worktree of `sha` in a new temporary directory; yields its
    path and removes both afterwards (invariant 1)."""
    parent = tempfile.mkdtemp(prefix=prefix)
    tree = os.path.join(parent, "tree")
    added = False
    try:
        git(repo, "worktree", "add", "--detach", "--quiet", tree, sha)
        added = True
        yield tree
    finally:
        if added:
            git(repo, "worktree", "remove", "--force", tree, check=False)
            git(repo, "worktree", "prune", check=False)
        shutil.rmtree(parent, ignore_errors=True)


def manifest_in(tree: str, rel: str, what: str) -> Manifest:
    """The manifest at `rel` inside the checked-out `tree` of `what`."""
    path = os.path.join(tree, rel)
    if not os.path.isfile(path):
        raise ConfigError(f"{what} has no manifest at {rel}")
    return load_manifest(path)


def build(man: Manifest, what: str, required: bool = True) -> None:
    """Run the manifest's `build` in its directory (invariant 3).  A
    manifest without one builds nothing when not `required` (a working tree
    its user built), else is a ConfigError: a checked-out commit is built
    by nothing else."""
    if not man.build:
        if required:
            raise ConfigError(f"{what}: its manifest {os.path.basename(man.path)} has no "
                              f"`build` (the argv that builds its benchmarks), so it cannot "
                              f"be built in a temporary worktree")
        return
    try:
        r = subprocess.run(man.build, cwd=man.directory, capture_output=True,
                           text=True, timeout=BUILD_TIMEOUT, errors="replace")
    except subprocess.TimeoutExpired:
        raise InfraError(f"build of {what} timed out after {BUILD_TIMEOUT} s: "
                         f"{printable(' '.join(man.build))[:200]}") from None
    except OSError as e:
        raise InfraError(f"build of {what} could not start "
                         f"{printable(man.build[0])[:200]}: {e.strerror or e}") from None
    if r.returncode != 0:
        raise InfraError(f"build of {what} failed (exit {r.returncode}): "
                         f"{_tail(r.stderr or r.stdout)}")


def commit_info(repo: str, ref: str, flag: str) -> tuple:
    """(commit id, commit time in Unix seconds, subject, depth: the number
    of commits in its first-parent history) of `ref`."""
    sha = resolve(repo, ref, flag)
    when, _, subject = git(repo, "show", "-s", "--format=%ct %s", sha).partition(" ")
    depth = int(git(repo, "rev-list", "--count", "--first-parent", sha))
    return sha, int(when), subject, depth


def changed_baselines(repo: str, sha: str, path: str) -> list:
    """Benchmark names whose `path/NAME.json` says something else in `sha`
    than in its first parent (baseline.same_content: parsed content, so a
    re-indented file is no change; all of them for a root commit): on main,
    baselines change only when maintainers accept a change."""
    if (not path or os.path.isabs(path) or "\0" in path or len(path) > 1000
            or ".." in path.split("/")):
        raise ConfigError(f"--accepted-baselines {printable(path)!r}: not a relative path "
                          f"inside the repository")
    path = path.rstrip("/")
    parent = git(repo, "rev-parse", "--verify", "--quiet", f"{sha}^1", check=False)
    base = parent or git(repo, "hash-object", "-t", "tree", "/dev/null")
    out = git(repo, "diff", "--name-only", "--no-renames", base, sha, "--", path)
    names = set()
    for f in out.splitlines():
        d, _, name = f.rpartition("/")
        if d == path and name.endswith(".json") and not name.startswith("."):
            if not bl.same_content(_blob(repo, base, f), _blob(repo, sha, f)):
                names.add(name[:-5])
    return sorted(names)


def _blob(repo: str, rev: str, path: str) -> bytes | None:
    """The bytes of `rev:path`, or None when `rev` has no such file."""
    try:
        r = subprocess.run(["git", "-C", repo, "cat-file", "blob", f"{rev}:{path}"],
                           capture_output=True, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.SubprocessError) as e:
        raise InfraError(f"git cat-file: {e}") from None
    return r.stdout if r.returncode == 0 else None
