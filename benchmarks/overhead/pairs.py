"""Paired alternating runs of one program, profiled against unprofiled.

Job: the wall-time and CPU-time (user + system) cost of profiling one
program at one rate, on a machine too noisy for unpaired timings. Each pair
runs the same binary once with OCAMLMEMPROF=rate=<rate>,seed=1 and once
without, in alternating order (profiled first on even pairs), and the
ratio profiled / unprofiled is taken within the pair. Printed, with the
load average at the end: for wall time and for CPU time (user + system,
all threads) the median ratio, its distribution-free interval
(memprof_ci.decide.stats.paired_overhead_interval, the harness's own) and the
range; the mean within-pair difference in system time, the kernel's
share (page faults, the profile's write): the mean, as the kernel counts
a process's system time in whole clock ticks, which a median would
round; and the peak RSS of one more run a side (memprof_ci.measure.overhead_rss).

Invariants: the program's output is discarded and its profile goes to a
private temporary directory removed afterwards; a bad argument or a failed
run is one line on stderr and exit 2. Prints figures only; no thresholds.

With --extra=ITEMS the profiled side's OCAMLMEMPROF gets `,ITEMS` too
(e.g. --extra=points=on), and with --versus-profiled the other side runs
profiled without them instead of unprofiled: the cost of ITEMS alone.
With --versus-binary=OTHER nothing is profiled (RATE is not used): PROGRAM
runs against OTHER, the same program built another way (by stock OCaml,
say), with the same arguments: what the build costs with profiling off.

Usage: pairs.py PROGRAM 'ARGS' RATE PAIRS [--extra=ITEMS [--versus-profiled]]
       pairs.py PROGRAM 'ARGS' RATE PAIRS --versus-binary=OTHER
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(_HERE, "..", "..", "harness"), os.path.join(_HERE, "..")]
from memprof_ci.errors import InfraError  # noqa: E402
from memprof_ci.measure.overhead_rss import peak_kb  # noqa: E402
from memprof_ci.decide.stats import paired_overhead_interval  # noqa: E402
from overhead import script_args  # noqa: E402


def _run(argv: list[str], env: dict) -> tuple[float, float, float]:
    """(wall s, CPU s, system CPU s) of one run of argv."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return t1 - t0, cpu, r1.ru_stime - r0.ru_stime


def _summary(on: list[float], off: list[float]) -> str:
    est, lo, hi, coverage = paired_overhead_interval(on, off)
    ratios = [a / b for a, b in zip(on, off)]
    return (f"median {1 + est:.3f} ({coverage:.1%} interval {1 + lo:.3f}-{1 + hi:.3f}) "
            f"range {min(ratios):.3f}-{max(ratios):.3f}")


def main(args: list[str]) -> int:
    extra = next((x.split("=", 1)[1] for x in args if x.startswith("--extra=")), "")
    versus = "--versus-profiled" in args
    other = next((x.split("=", 1)[1] for x in args if x.startswith("--versus-binary=")), None)
    args = [x for x in args if not x.startswith(("--extra=", "--versus-binary="))
            and x != "--versus-profiled"]
    a = script_args.parse("pairs.py", args, "PAIRS", 1000,
                          " [--extra=ITEMS [--versus-profiled] | --versus-binary=OTHER]")
    if a is None:
        return 2
    if other is not None and (extra or versus):
        print("pairs.py: --versus-binary goes alone", file=sys.stderr)
        return 2
    exe, prog_args, rate_s, _, pairs, argv = a
    base = {k: v for k, v in os.environ.items() if k != "OCAMLMEMPROF"}
    ref_argv = argv if other is None else [other, *argv[1:]]
    runs: dict = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        # A new file per run (%p), removed after its pair: replacing the last
        # run's profile would add its removal to the profiled time, and
        # keeping them all would leave their writeback to later runs.
        plain = f"rate={rate_s},seed=1,out={tmp}/p.%p.json"
        prof = dict(base, OCAMLMEMPROF=plain + (f",{extra}" if extra else ""))
        if other is not None:
            prof = base
        if versus:
            base = dict(base, OCAMLMEMPROF=plain)
        try:
            for i in range(pairs):
                order = (True, False) if i % 2 == 0 else (False, True)
                for p in order:
                    runs[p].append(_run(argv if p else ref_argv, prof if p else base))
                for f in os.listdir(tmp):
                    os.unlink(os.path.join(tmp, f))
            # Peak RSS: one more run a side under the harness's launcher
            # (this interpreter's own size would mask a child's).
            rss = {p: peak_kb(argv if p else ref_argv, prof if p else base, None, 3600,
                              ref_argv[0] if not p else exe) for p in (False, True)}
        except (OSError, subprocess.CalledProcessError, InfraError) as e:
            print(f"pairs.py: running {exe}: {e}", file=sys.stderr)
            return 2
    on, off = (list(zip(*runs[p])) for p in (True, False))
    sys_ms = statistics.fmean(a - b for a, b in zip(on[2], off[2])) * 1e3
    what = f"rate={rate_s}" + (f",{extra}" if extra else "") + \
        (f" against rate={rate_s}" if versus else "")
    if other is not None:
        what = f"unprofiled against {other}"
    print(f"{os.path.basename(exe)} {prog_args} {what} pairs={pairs}: "
          f"wall {_summary(on[0], off[0])}; cpu {_summary(on[1], off[1])}; "
          f"system {sys_ms:+.1f} ms; peak RSS {rss[False] / 1024:.1f} -> "
          f"{rss[True] / 1024:.1f} MB ({(rss[True] - rss[False]) / 1024:+.1f} MB); "
          f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
