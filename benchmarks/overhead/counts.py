"""Counted runs of one program, as the overhead check makes them, repeated.

Job: show what the harness's overhead check counts (memprof_ci.measure.overhead,
with the overhead library's memprof_ci.measure.drivers.cachegrind) for one
program at one size and rate, and whether repeated runs agree.  Runs the program RUNS times with profiling off and
RUNS times on (OCAMLMEMPROF=rate=RATE,seed=1, the profile to standard
output), each under cachegrind with the check's cache model, in the
check's environment (PATH only), with thread creation refused as for a
single-domain benchmark, or, with --threads, allowed (as for a concurrent
one).  Prints, per side, the instruction counts and estimated cycles seen
(each distinct value once) and their spread, then the overhead in
estimated cycles and instructions (medians).

Invariants: prints figures only, no thresholds; a bad argument or a failed
run is one line on stderr and exit 2.

Usage (harness/ and benchmarks/ on PYTHONPATH, as the package README says):
    python3 -m overhead.counts PROGRAM 'ARGS' RATE RUNS [--threads]
"""

import os
import statistics
import sys

from memprof_ci.measure.drivers import cachegrind as counted
from memprof_ci.measure.runner import memprof_env_value

from . import script_args


def _side(argv: list, on: bool, rate: float, runs: int, threads: bool) -> list:
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    if on:
        env["OCAMLMEMPROF"] = memprof_env_value(rate, 1, 16, "/dev/stdout")
    out = []
    for _ in range(runs):
        r = counted.count(argv, env, os.getcwd(), timeout=3600, threads=threads,
                          capture_stdout=on)
        out.append(r["events"])
    return out


def _line(name: str, evs: list) -> str:
    irs = sorted({e["Ir"] for e in evs})
    cyc = sorted({counted.estimated_cycles(e) for e in evs})
    return (f"{name}: Ir {', '.join(f'{x:,}' for x in irs)} (spread {irs[-1] - irs[0]:,}); "
            f"cycles {', '.join(f'{x:,}' for x in cyc)} (spread {cyc[-1] - cyc[0]:,})")


def main(args: list) -> int:
    threads = "--threads" in args
    args = [a for a in args if a != "--threads"]
    a = script_args.parse("counts.py", args, "RUNS", 100, " [--threads]")
    if a is None:
        return 2
    exe, prog_args, rate_s, rate, runs, argv = a
    try:
        off = _side(argv, False, rate, runs, threads)
        on = _side(argv, True, rate, runs, threads)
    except counted.CountError as e:
        print(f"counts.py: {exe}: {e}", file=sys.stderr)
        return 2
    med = statistics.median
    cyc = med(counted.estimated_cycles(e) for e in on) / med(
        counted.estimated_cycles(e) for e in off) - 1
    ir = med(e["Ir"] for e in on) / med(e["Ir"] for e in off) - 1
    print(f"{os.path.basename(exe)} {prog_args} rate={rate_s} runs={runs} "
          f"threads={'allowed' if threads else 'refused'}")
    print(_line("off", off))
    print(_line("on", on))
    print(f"overhead: {cyc:+.2%} estimated cycles, {ir:+.2%} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
