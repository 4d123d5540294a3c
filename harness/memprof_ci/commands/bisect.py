"""`memprof-ci bisect --good A --bad B`: the first commit after A whose
allocation changed against A (commits/bisection.py runs the search)."""

from __future__ import annotations

from ..commits.bisection import run_bisect


def run(args) -> int:
    return run_bisect(args)
