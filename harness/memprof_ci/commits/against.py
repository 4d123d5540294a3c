"""`check --against REF`: the working tree judged against a git ref's own
measurement, with no stored baselines.

REF is checked out in a temporary worktree (worktree.py), built with its
manifest's `build` (the caller's environment, so the same patched compiler
first on PATH), and profiled by `update-baselines` into a temporary
baselines directory with REF's manifest.  The working tree, built with its
own manifest's `build`, is then checked against those baselines with REF's
manifest as the base manifest (manifest.judged_with), by the normal check
session and decision pass (verdict.decide).

Invariants:
1. Both sides are measured with REF's verdict settings; the working tree's
   manifest only says how to build and run it and may add benchmarks.
2. The report names the reference: report["reference"] = {"ref", "commit"}
   and a note.
3. The temporary worktree and baselines are removed whatever happens; the
   user's trees, baselines and refs are never written.
4. An unknown ref, a manifest REF lacks, a failed build or a failed profile
   of REF is one MemprofError line (exit 2), never exit 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from . import worktree as W
from ..errors import ConfigError, InfraError
from ..inputs.manifest import load_manifest
from ..measure.runner import HARNESS_DIR
from ..text.mdsafe import printable

PROFILE_TIMEOUT = 24 * 3600


def harness_env() -> dict:
    """The environment of a child `python -m memprof_ci`: this package first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [HARNESS_DIR] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def record_reference(manifest_path: str, baselines_dir: str, what: str,
                     extra: list) -> None:
    """`update-baselines` of the manifest into `baselines_dir` in a child
    process; InfraError with the output's tail when it fails."""
    argv = [sys.executable, "-m", "memprof_ci", "update-baselines", "--manifest",
            manifest_path, "--baselines", baselines_dir, *extra]
    try:
        r = subprocess.run(argv, cwd=os.path.dirname(manifest_path), env=harness_env(),
                           capture_output=True, text=True, errors="replace",
                           timeout=PROFILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise InfraError(f"profiling {what} timed out") from None
    if r.returncode != 0:
        lines = [x for x in (r.stderr or r.stdout).splitlines() if x.strip()]
        raise InfraError(f"profiling {what} failed (exit {r.returncode}): "
                         f"{printable(lines[-1] if lines else 'no output')[:400]}")


def _refused(args) -> None:
    for flag, on in (("--proposed-baselines", args.proposed_baselines),
                     ("--accept-changes", args.accept_changes),
                     ("--from-run", args.from_run), ("--base-manifest", args.base_manifest)):
        if on:
            raise ConfigError(f"--against cannot be combined with {flag}: the reference is "
                              f"the ref's own measurement, with its own manifest's settings")


def passthrough(args) -> list:
    """The options that select and run benchmarks, for the reference side."""
    out = []
    if args.keyword:
        out += ["-k", args.keyword]
    if args.no_overhead:
        out.append("--no-overhead")
    if args.shard:
        out += ["--shard", args.shard]
    return out


def check_against(args, run_check) -> int:
    """Build and profile REF, then `run_check(args')` judges the working
    tree against it; returns run_check's exit code."""
    _refused(args)
    man_path = os.path.realpath(args.manifest)
    current = load_manifest(man_path)
    repo = W.toplevel(man_path)
    rel = os.path.relpath(man_path, repo)
    sha = W.resolve(repo, args.against, "--against")
    what = f"{printable(args.against)} ({sha[:12]})"
    print(f"memprof-ci: reference: {what}, built and profiled in a temporary worktree",
          flush=True)
    with W.temporary_worktree(repo, sha, "memprof-ci-against.") as tree:
        ref_man = W.manifest_in(tree, rel, f"--against {what}")
        W.build(ref_man, what)
        W.build(current, "the working tree", required=False)
        ref_dir = os.path.join(os.path.dirname(tree), "reference-baselines")
        record_reference(ref_man.path, ref_dir, what, passthrough(args))
        judged = argparse.Namespace(**vars(args))
        judged.baselines = ref_dir
        judged.base_manifest = ref_man.path
        judged.manifest = man_path
        judged.note = list(args.note) + [
            f"reference: {args.against} = commit {sha}, built and profiled in a temporary "
            f"worktree with its manifest's settings (no stored baselines)"]
        judged.reference = {"ref": args.against, "commit": sha}
        return run_check(judged)
