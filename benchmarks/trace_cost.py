"""The cost of the memtrace trace (trace= of OCAMLMEMPROF): instructions
(callgrind) of each suite benchmark with profiling off, with the profile
alone (out=), with the trace alone (trace=) and with both (out=,trace=) at
rate 1e-4, and the trace's bytes per sample.  Prints a table and the medians; not a test.

Usage: PYTHONPATH=harness /usr/bin/python3 benchmarks/trace_cost.py
         [--scale S] [--jobs N] [--only NAME,...]

Invariants: every config of a benchmark runs the same argv from the same
directory (only OCAMLMEMPROF differs, which is not on the OCaml heap), so
instruction counts differ only by the profiling work; domains and
systhreads are counted once (valgrind serialises their threads, so their
counts vary between runs).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import sys
import tempfile

from memprof_ci.inputs.ctf_profile import load_ctf
from memprof_ci.inputs.manifest import load_manifest
from memprof_ci.measure.drivers import cachegrind

RATE = 1e-4
TIMEOUT = 3600


def count(argv, cwd, memprof):
    """Instructions of one run under callgrind (the overhead library's
    valgrind driver, cachegrind.py), OCAMLMEMPROF set to `memprof` or unset."""
    env = {k: v for k, v in os.environ.items() if k != "OCAMLMEMPROF"}
    if memprof:
        env["OCAMLMEMPROF"] = memprof
    try:
        r = cachegrind.count(argv, env, cwd, TIMEOUT, tool="callgrind", cache_sim=False,
                             fair_sched=False)
    except cachegrind.CountError as e:
        raise SystemExit(f"{argv[0]}: {e}") from None
    return r["events"]["Ir"]


def measure(b, scale, tmp):
    argv = list(b.command)
    if len(argv) > 1 and argv[1].isdigit():
        argv[1] = str(max(1, round(int(argv[1]) * scale)))
    out, ctf = os.path.join(tmp, f"{b.name}.json"), os.path.join(tmp, f"{b.name}.ctf")
    base = f"rate={RATE!r},seed=1,frames={b.frames},out={out}"
    off = count(argv, b.cwd, None)
    prof = count(argv, b.cwd, base)
    alone = count(argv, b.cwd, f"rate={RATE!r},seed=1,frames={b.frames},trace={ctf}")
    both = count(argv, b.cwd, f"{base},trace={ctf}")
    t = load_ctf(ctf).totals
    return b.name, off, prof, alone, both, os.path.getsize(ctf), t["samples"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--manifest", default="benchmarks/benchmarks.toml")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default="")
    a = p.parse_args()
    benches = load_manifest(a.manifest).benchmarks
    if a.only:
        benches = [b for b in benches if b.name in a.only.split(",")]
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(lambda b: measure(b, a.scale, tmp), benches))
    print(f"rate {RATE:g}, scale {a.scale:g}; instructions relative to profiling off")
    print(f"{'benchmark':14} {'off':>15} {'out=':>8} {'trace=':>8} {'out=,trace=':>12} "
          f"{'trace B':>9} {'samples':>8} {'B/sample':>9}")
    for name, off, prof, alone, both, size, samples in rows:
        print(f"{name:14} {off:15,d} {prof / off - 1:+8.2%} {alone / off - 1:+8.2%} "
              f"{both / off - 1:+12.2%} {size:9,d} {samples:8,d} {size / max(samples, 1):9.2f}")

    def med(i, j):
        return statistics.median(r[i] / r[j] - 1 for r in rows)
    print(f"median over benchmarks: out= {med(2, 1):+.2%}, trace= {med(3, 1):+.2%}, "
          f"out=,trace= {med(4, 1):+.2%}, out=,trace= over out= {med(4, 2):+.2%}")


if __name__ == "__main__":
    sys.exit(main())
