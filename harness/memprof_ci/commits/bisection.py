"""`bisect --good A --bad B`: the first commit whose allocation changed.

A is checked out in a temporary worktree, built (its manifest's `build`)
and profiled into temporary baselines: the reference every tested commit
is compared with, by the deterministic check (`check --no-overhead`, fixed
seeds, A's verdict settings through --base-manifest).  `git bisect run`
then drives this module as its step command (`python -m
memprof_ci.commits.bisection STATE`) in the same worktree; each step cleans the
worktree's untracked files, builds the commit and checks it.

A commit is "changed" when, with --site PATTERN, a site whose name
contains PATTERN (of --bench NAME, or of any benchmark) has a significant
change in either direction in the alloc check; without --site, when a
check of the benchmark (or of any) fails.

Invariants:
1. Exit codes of a step follow `git bisect run`: 0 unchanged, 1 changed,
   125 cannot be judged (the commit does not build or measure: skipped),
   128 internal error (the bisection stops).  A step never answers 1 for
   anything but a measured change.
2. Builds: one for A, one per commit git bisect tests, and one for B only
   when the bisection ends at B without having tested it (B is then
   confirmed, never presumed).
3. The worktree, its bisect state and the reference are temporary and
   removed whatever happens (worktree.temporary_worktree); the user's
   checkout and refs are never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from ..inputs import atomicio
from . import worktree as W
from .against import harness_env, record_reference
from ..errors import ConfigError, InfraError, MemprofError
from ..text.fmt import fmt_bytes, fmt_delta
from ..text.mdsafe import printable

GOOD, CHANGED, SKIP, ABORT = 0, 1, 125, 128
CHECK_TIMEOUT = 24 * 3600


def change_of(report: dict, bench: str | None, site: str | None) -> list:
    """What changed in a `check` report against the reference, as lines
    (empty: nothing)."""
    out = []
    for name in sorted(report.get("benchmarks") or {}):
        if bench and name != bench:
            continue
        b = report["benchmarks"][name]
        if site:
            for r in b.get("alloc") or []:
                if site in str(r.get("site")) and r.get("status") in ("regression",
                                                                      "improvement"):
                    out.append(f"{name}: {r['site']}: {fmt_bytes(r['baseline_bytes'])} -> "
                               f"{fmt_bytes(r['current_bytes'])} ({fmt_delta(r)}, "
                               f"{r['status']})")
        else:
            for check, c in sorted((b.get("checks") or {}).items()):
                if c.get("outcome") == "failed":
                    out.append(f"{name}: {check}: {c.get('message') or 'failed'}")
    return [printable(x)[:600] for x in out]


def _record(state: dict, sha: str, outcome: str, lines: list) -> None:
    atomicio.write_atomic(os.path.join(state["steps"], f"{sha}.json"),
                          json.dumps({"commit": sha, "outcome": outcome, "change": lines}))


def judge(state: dict) -> int:
    """Build and check the worktree's HEAD against the reference; the
    step's exit code (invariant 1)."""
    tree = state["tree"]
    sha = W.git(tree, "rev-parse", "HEAD")
    W.git(tree, "clean", "-fdxq")
    out = os.path.join(state["steps"], f"{sha}.report.json")
    try:
        man = W.manifest_in(tree, state["rel"], sha[:12])
        W.build(man, sha[:12])
    except MemprofError as e:
        print(f"memprof-ci bisect: {sha[:12]}: skipped: {e}", flush=True)
        _record(state, sha, "skipped", [str(e)])
        return SKIP
    argv = [sys.executable, "-m", "memprof_ci", "check", "--manifest", man.path, "--baselines",
            state["baselines"], "--base-manifest", state["base_manifest"], "--no-overhead",
            "--results-json", out, "-q", *state["select"]]
    r = subprocess.run(argv, cwd=man.directory, env=harness_env(), capture_output=True,
                       text=True, errors="replace", timeout=CHECK_TIMEOUT)
    if r.returncode not in (0, 1) or not os.path.isfile(out):
        tail = [x for x in (r.stderr or r.stdout).splitlines() if x.strip()][-1:]
        print(f"memprof-ci bisect: {sha[:12]}: skipped: the check failed: "
              f"{printable(' '.join(tail))[:300]}", flush=True)
        _record(state, sha, "skipped", tail)
        return SKIP
    with open(out, encoding="utf-8") as fh:
        lines = change_of(json.load(fh), state["bench"], state["site"])
    print(f"memprof-ci bisect: {sha[:12]}: {'changed' if lines else 'unchanged'}", flush=True)
    _record(state, sha, "changed" if lines else "unchanged", lines)
    return CHANGED if lines else GOOD


def step_main(argv: list) -> int:
    """`python -m memprof_ci.commits.bisection STATE`: one step of `git bisect run`."""
    try:
        with open(argv[0], encoding="utf-8") as fh:
            return judge(json.load(fh))
    except Exception as e:  # noqa: BLE001 - anything unexpected stops the bisection
        print(f"memprof-ci bisect: internal error: {printable(str(e))[:300]}", file=sys.stderr)
        return ABORT


def _step_result(state: dict, sha: str) -> dict | None:
    path = os.path.join(state["steps"], f"{sha}.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _prepare(args, repo: str, rel: str, good: str, tree: str) -> dict:
    """Build and profile A in `tree`; the state each step reads."""
    what = f"--good {printable(args.good)} ({good[:12]})"
    man = W.manifest_in(tree, rel, what)
    if args.bench and args.bench not in man.names():
        raise ConfigError(f"--bench {printable(args.bench)}: not a benchmark of {rel} at "
                          f"{what}; it has {', '.join(man.names())}")
    W.build(man, what)
    root = os.path.dirname(tree)
    only = ["-k", args.bench] if args.bench and args.bench.isidentifier() else []
    select = only + (["-m", "alloc_sites"] if args.site else [])
    record_reference(man.path, os.path.join(root, "reference"), what, ["--no-overhead"] + only)
    base_manifest = os.path.join(root, "reference.toml")
    shutil.copyfile(man.path, base_manifest)
    os.makedirs(os.path.join(root, "steps"))
    state = {"tree": tree, "rel": rel, "baselines": os.path.join(root, "reference"),
             "base_manifest": base_manifest, "bench": args.bench, "site": args.site,
             "select": select, "steps": os.path.join(root, "steps")}
    atomicio.write_atomic(os.path.join(root, "state.json"), json.dumps(state))
    return state


def _bisect_run(tree: str, bad: str, good: str) -> str:
    """git bisect over (good, bad] with this module as the step; the first
    changed commit's id."""
    W.git(tree, "clean", "-fdxq")      # A's build products, which a checkout may trip on
    W.git(tree, "bisect", "start", bad, good)
    state_path = os.path.join(os.path.dirname(tree), "state.json")
    try:
        r = subprocess.run(["git", "-C", tree, "bisect", "run", sys.executable, "-m",
                            "memprof_ci.commits.bisection", state_path], env=harness_env(),
                           capture_output=True, text=True, errors="replace",
                           timeout=CHECK_TIMEOUT)
        print("".join(x + "\n" for x in r.stdout.splitlines()
                      if x.startswith("memprof-ci bisect:")), end="", flush=True)
        if "is the first bad commit" not in r.stdout:
            tail = [x for x in (r.stdout + r.stderr).splitlines() if x.strip()][-2:]
            raise InfraError(f"git bisect run found no first changed commit: "
                             f"{printable(' | '.join(tail))[:400]}")
        return W.git(tree, "rev-parse", "refs/bisect/bad")
    finally:
        W.git(tree, "bisect", "reset", "--quiet", check=False)


def run_bisect(args) -> int:
    """The `bisect` command: prints the first changed commit and its change."""
    man_path = os.path.realpath(args.manifest)
    repo = W.toplevel(man_path)
    rel = os.path.relpath(man_path, repo)
    good = W.resolve(repo, args.good, "--good")
    bad = W.resolve(repo, args.bad, "--bad")
    if good == bad or _not_ancestor(repo, good, bad):
        raise ConfigError(f"--good {printable(args.good)} must be an ancestor of --bad "
                          f"{printable(args.bad)} (and another commit)")
    with W.temporary_worktree(repo, good, "memprof-ci-bisect.") as tree:
        state = _prepare(args, repo, rel, good, tree)
        first = _bisect_run(tree, bad, good)
        res = _step_result(state, first)
        if res is None:
            # The bisection ended at B without testing it (invariant 2).
            W.git(tree, "checkout", "--quiet", "--detach", first)
            judge(state)
            res = _step_result(state, first)
        if res is None or res["outcome"] != "changed":
            raise ConfigError(f"--bad {printable(args.bad)} ({bad[:12]}) shows no change "
                              f"against --good {printable(args.good)} ({good[:12]})"
                              + (f" at sites matching {printable(args.site)!r}"
                                 if args.site else ""))
        subject = W.git(repo, "show", "-s", "--format=%s", first)
        print(f"memprof-ci: first changed commit: {first} {printable(subject)[:200]}")
        for line in res["change"]:
            print(f"memprof-ci:   {line}")
        return 0


def _not_ancestor(repo: str, good: str, bad: str) -> bool:
    try:
        subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", good, bad],
                       check=True, capture_output=True, timeout=W.GIT_TIMEOUT)
        return False
    except subprocess.CalledProcessError:
        return True


if __name__ == "__main__":
    sys.exit(step_main(sys.argv[1:]))
