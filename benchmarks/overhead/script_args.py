"""The command line PROGRAM 'ARGS' RATE COUNT of the measuring scripts.

Job: pairs and counts (run as `python3 -m overhead.pairs`, `-m
overhead.counts`) each take a program, its arguments as one string (split
on white space), a profiling rate and a count of runs or pairs; this
module checks those four words once for both.

Invariants: standard library only, so that importing it loads nothing of
the harness; a wrong number of words, a RATE or COUNT that is not a number,
a RATE outside (0, 1] or a COUNT outside 1..most is one line on stderr
naming the script and the word, and None (the script exits 2); nothing is
run or written.
"""

from __future__ import annotations

import sys
from typing import NamedTuple


class ScriptArgs(NamedTuple):
    exe: str          # PROGRAM as given
    prog_args: str    # 'ARGS' as given, for the printed heading
    rate_s: str       # RATE as given, for OCAMLMEMPROF and the heading
    rate: float
    count: int
    argv: list        # [PROGRAM, *ARGS.split()]


def parse(script: str, args: list, count: str, most: int, usage_tail: str = ""):
    """ScriptArgs from `args`, or None after one line on stderr.  `count`
    names the fourth word (RUNS, PAIRS) and `most` is its largest value;
    `usage_tail` ends the usage line (a script's own flags)."""
    if len(args) != 4:
        print(f"{script}: usage: {script} PROGRAM 'ARGS' RATE {count}{usage_tail}",
              file=sys.stderr)
        return None
    exe, prog_args, rate_s, count_s = args
    try:
        rate, n = float(rate_s), int(count_s)
    except ValueError:
        print(f"{script}: RATE {rate_s!r} or {count} {count_s!r} is not a number",
              file=sys.stderr)
        return None
    if not (0 < rate <= 1) or not (1 <= n <= most):
        print(f"{script}: RATE must be in (0, 1] and {count} in 1..{most}", file=sys.stderr)
        return None
    return ScriptArgs(exe, prog_args, rate_s, rate, n, [exe, *prog_args.split()])
