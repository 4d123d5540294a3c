"""Paired alternating runs of one program, profiled against unprofiled.

Job: the wall-time and CPU-time (user + system) cost of profiling one
program at one rate, on a machine too noisy for unpaired timings. Each pair
is one round of the overhead library's hyperfine driver
(memprof_ci.measure.drivers.hyperfine, the gate's own): the same binary
once with OCAMLMEMPROF=rate=<rate>,seed=1 and once without, in alternating
order (profiled first on even pairs), and the ratio profiled / unprofiled
is taken within the pair. Printed, with the load average at the end: for
wall time and for CPU time (user + system, all threads) the median ratio,
its distribution-free interval (memprof_ci.decide.stats.paired_overhead_interval,
the harness's own) and the range; the mean within-pair difference in
system time, the kernel's share (page faults, the profile's write): the
mean, as the kernel counts a process's system time in whole clock ticks,
which a median would round; and the peak RSS of one more run a side (the
library's RSS measure, memprof_ci.measure.drivers.peak_rss).

Invariants: the program's output is discarded and its profile goes to a
private temporary directory removed afterwards; a bad argument or a failed
run is one line on stderr and exit 2. Prints figures only; no thresholds.

With --extra=ITEMS the profiled side's OCAMLMEMPROF gets `,ITEMS` too
(e.g. --extra=points=on), and with --versus-profiled the other side runs
profiled without them instead of unprofiled: the cost of ITEMS alone.
With --versus-binary=OTHER nothing is profiled (RATE is not used): PROGRAM
runs against OTHER, the same program built another way (by stock OCaml,
say), with the same arguments: what the build costs with profiling off.

Usage (harness/ and benchmarks/ on PYTHONPATH, as the package README says):
    python3 -m overhead.pairs PROGRAM 'ARGS' RATE PAIRS [--extra=ITEMS [--versus-profiled]]
    python3 -m overhead.pairs PROGRAM 'ARGS' RATE PAIRS --versus-binary=OTHER
"""

import os
import statistics
import sys
import tempfile

from memprof_ci.decide.stats import paired_overhead_interval
from memprof_ci.errors import InfraError
from memprof_ci.measure.drivers import hyperfine
from memprof_ci.measure.drivers.peak_rss import peak_kb

from . import script_args

ROUND_TIMEOUT = 7200


def _as_argv(argv: list, env: dict, base: dict) -> list:
    """argv run through `env` with OCAMLMEMPROF as `env` has it (hyperfine
    runs every command of a round in `base`)."""
    if "OCAMLMEMPROF" in env:
        return hyperfine.env_argv(argv, {"OCAMLMEMPROF": env["OCAMLMEMPROF"]})
    return hyperfine.env_argv(argv, unset=("OCAMLMEMPROF",))


def _pairs(count: int, tmp: str, on: tuple, off: tuple, base: dict) -> dict:
    """`count` rounds of (argv, env) `on` and `off`, profiled first on even
    rounds, each round's profiles removed after it: {"on"|"off": [Run]}."""
    sides = [("on", _as_argv(*on, base)), ("off", _as_argv(*off, base))]
    runs: dict = {"on": [], "off": []}
    for i in range(count):
        (done,) = hyperfine.interleaved(sides, 1, first=i, cwd=None, env=base,
                                        timeout=ROUND_TIMEOUT)
        for side, run in done.items():
            runs[side].append(run)
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
    return runs


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
    with tempfile.TemporaryDirectory() as tmp:
        # A new file per run (%p), removed after its pair: replacing the last
        # run's profile would add its removal to the profiled time, and
        # keeping them all would leave their writeback to later runs.
        plain = f"rate={rate_s},seed=1,out={tmp}/p.%p.json"
        prof = dict(base, OCAMLMEMPROF=plain + (f",{extra}" if extra else ""))
        if other is not None:
            prof = base
        ref = dict(base, OCAMLMEMPROF=plain) if versus else base
        try:
            runs = _pairs(pairs, tmp, (argv, prof), (ref_argv, ref), base)
            # Peak RSS: one more run a side under the library's launcher
            # (this interpreter's own size would mask a child's).
            rss = {False: peak_kb(ref_argv, ref, None, 3600, ref_argv[0]),
                   True: peak_kb(argv, prof, None, 3600, exe)}
        except (OSError, InfraError) as e:
            print(f"pairs.py: running {exe}: {e}", file=sys.stderr)
            return 2
    on, off = (list(zip(*runs[p])) for p in ("on", "off"))
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
