"""Profiling overhead: what profiling costs a benchmark, and the check on it.

The check judges a count, not a time.  The benchmark's program is run
under valgrind's cachegrind (cachegrind.py) once with profiling off and once
on, at its rate with its first seed, with the arguments `overhead_args`
(default: its command's own; a smaller size keeps the runs short), and the
overhead is

    estimated cycles (on) / estimated cycles (off) - 1

with the cycles estimated from instructions and simulated L1 and
last-level misses (cachegrind.MODEL).  Both runs get the same environment:
PATH and the manifest's `env` only (plus OCAMLMEMPROF on the "on" side),
the profile written to the run's standard output (so no file name, pid or
disk enters the count) and no thread can be created (nothreads.py), so a
single-domain program counts the same, to the instruction and the miss, on
every run.  The "on" run must write a profile, or profiling was not on.

Benchmarks marked `concurrent` (several domains or systhreads) count
differently from run to run, because valgrind runs their threads one at a
time in an order the machine's timing decides.  They are counted
CONCURRENT_REPEATS times per side with threads allowed, and judged on the
range: estimate median(on) / median(off) - 1, range [min(on) / max(off)
- 1, max(on) / min(off) - 1].

A benchmark without `overhead_args`, single-domain, whose run allocates
more than COUNT_WORDS minor words, is counted on a prefix of its run:
both sides end after the K-th of its N minor collections (OCAMLMEMPROF
`stop=K`, runtime-patch/src/memprof_stop.c), K being the first collection
by which COUNT_WORDS words have been allocated on average (stop_for; N
and the words come from the run's own exact GC counters, so K is the same
on every machine).  The profiled side of a prefix does not walk the heap
at the stop (`live=off`): that walk's cost follows the heap live at that
moment, not the part of the run counted, and would weigh a short prefix
many times over.  The record says so (`stop`), and so does the reason
shown with the figure.

The threshold (threshold_for) is the baseline's upper end plus
`overhead_tolerance`, when the baseline counted its overhead with the same
arguments and model; else `overhead_budget`, with a note saying why.  This
module only measures: decide/overhead_verdict.py judges a record against
its threshold (a check fails when the lower end of the range, the estimate
itself for a single-domain program, is over it).  update-baselines
enforces the budget (over_budget).

Time (overhead_time.py) and the added peak RSS (overhead_rss.py) are
information: measured only when asked (`--overhead-info`), and time also
for a benchmark with `overhead_time_fails`, the only case in which it can
fail the check; a record says "not measured" (None) otherwise.

Every record says how its count was obtained (`obtained`): counted in this
run, or carried from the baseline with the reason (overhead_carry.py
decides when the baseline's figure still holds).  The counted record keeps
what decided the count besides the program (`key`: the program, its
environment, the rate, seed and frames, the runtime's patch id), so that a
later run can tell whether anything of it changed.
Invariants: a failed counted run raises InfraError, never a figure; every
figure of a record is derived again from its counts when the record is
read back (parse_record), so a record cannot state a figure its counts do
not give.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import os
import statistics

from .drivers import cachegrind
from . import overhead_rss, overhead_time
from ..inputs import validate as V
from ..errors import InfraError, InputError
from .runner import memprof_env_value, program_argv0
from .drivers.nothreads import UNFILTERED

MEASURE = "cycles"
COUNT_WORDS = 1 << 23       # minor words a counted prefix holds (stop_for)
CONCURRENT_REPEATS = 3
MAX_REPEATS = 100
PROFILE_MARK = b'"memprof-ci/profile"'


def counted_args(bench) -> list:
    return list(bench.command[1:] if bench.overhead_args is None else bench.overhead_args)


def stop_for(bench, profiles) -> dict | None:
    """Where the counted runs stop (module docstring): {"after": K, "of":
    N} minor collections, or None to count the whole run (the benchmark
    has `overhead_args` or is concurrent, or its run allocates at most
    COUNT_WORDS words, or no profile says how much it allocates).
    `profiles()` gives the run's Aggregate; it is called only when a cut
    is possible."""
    if bench.overhead_args is not None or bench.concurrent or profiles is None:
        return None
    agg = profiles()
    if agg is None:
        return None
    gc = (getattr(agg, "gc_runs", None) or [getattr(agg, "gc", None)])[0] or {}
    n, words = gc.get("minor_collections", 0), gc.get("minor_words", 0)
    if n < 2 or words <= COUNT_WORDS:
        return None
    k = max(1, math.ceil(COUNT_WORDS * n / words))
    return {"after": k, "of": n} if k < n else None


def counted_env(bench, on: bool, stop: dict | None = None) -> dict:
    env = {"PATH": os.environ.get("PATH", os.defpath), **bench.env}
    spec = ([memprof_env_value(bench.profiled_rate, bench.seeds[0], bench.frames, "/dev/stdout",
                               live=stop is None)]
            if on else []) + ([f"stop={stop['after']}"] if stop else [])
    if spec:
        env["OCAMLMEMPROF"] = ",".join(spec)
    return env


def counted_key(bench, patch_id: str | None) -> dict:
    """What decides a counted figure besides the arguments, the model and
    the program's own allocation: the program (relative to the benchmark's
    directory, so that two checkouts agree), its environment, the rate,
    seed and frames, and the runtime's patch id."""
    prog = bench.command[0]
    if os.path.isabs(prog):
        prog = os.path.relpath(prog, bench.cwd)
    return {"program": prog, "env": dict(sorted(bench.env.items())),
            "rate": bench.profiled_rate, "seed": bench.seeds[0], "frames": bench.frames,
            "patch_id": patch_id}


def _count_one(bench, on: bool, stop: dict | None) -> tuple[dict, bool]:
    """One counted run: (its events, whether threads could be created)."""
    side = "on" if on else "off"
    argv = [program_argv0(bench), *counted_args(bench)]
    try:
        r = cachegrind.count(argv, counted_env(bench, on, stop), bench.cwd,
                          timeout=max(300.0, 50 * bench.timeout),
                          threads=bench.concurrent, capture_stdout=on)
    except cachegrind.CountError as e:
        hint = ("" if bench.concurrent else
                "; a benchmark that starts domains or threads needs `concurrent = true` "
                "in the manifest")
        raise InfraError(f"benchmark {bench.name!r}: counted run with profiling {side} "
                         f"failed: {e}{hint}") from None
    if on and PROFILE_MARK not in (r["stdout"] or b""):
        raise InfraError(f"benchmark {bench.name!r}: OCAMLMEMPROF set but no profile "
                         f"written in the counted run (is {argv[0]} built with the "
                         f"memprof-ci runtime?)")
    threads = bench.concurrent or any(line.startswith(UNFILTERED)
                                      for line in r["stderr"].splitlines())
    return {k: r["events"][k] for k in cachegrind.EVENTS}, threads


def count_sides(bench, patch_id: str | None = None, stop: dict | None = None) -> dict:
    """The counted record: off and on, CONCURRENT_REPEATS times each for a
    concurrent benchmark; two runs at a time (they share no state, and a
    count does not depend on load); both ended at `stop` (stop_for)."""
    reps = CONCURRENT_REPEATS if bench.concurrent else 1
    jobs = [on for _ in range(reps) for on in (False, True)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda on: _count_one(bench, on, stop), jobs))
    return {"args": counted_args(bench), "model": cachegrind.MODEL, "stop": stop,
            "key": counted_key(bench, patch_id), "concurrent": bench.concurrent,
            "threads": "allowed" if any(t for _, t in done) else "disabled",
            "off": [ev for (ev, _), on in zip(done, jobs) if not on],
            "on": [ev for (ev, _), on in zip(done, jobs) if on]}


def figures(c: dict) -> dict:
    """Estimate and range of the counted overhead, from the counts."""
    on = [cachegrind.estimated_cycles(e) for e in c["on"]]
    off = [cachegrind.estimated_cycles(e) for e in c["off"]]
    ir_on, ir_off = [e["Ir"] for e in c["on"]], [e["Ir"] for e in c["off"]]
    return {"estimate": statistics.median(on) / statistics.median(off) - 1,
            "ci_low": min(on) / max(off) - 1, "ci_high": max(on) / min(off) - 1,
            "instructions": statistics.median(ir_on) / statistics.median(ir_off) - 1,
            "cycles_off": statistics.median(off), "cycles_on": statistics.median(on)}


COUNTED = {"count": "counted", "reason": "counted in this run"}


def measure(bench, work_dir: str, level: float | None = None, hyperfine: str = "hyperfine",
            time_threshold: float | None = None, *, info: bool = False,
            patch_id: str | None = None, step=None,
            carry: tuple = (None, "", "counted"), profiles=None) -> dict:
    """The overhead record: counts and their figures (carried from the
    baseline's record, or estimated from it, when `carry` holds one:
    (record, reason, "carried" or "estimated"), from overhead_carry.carry;
    else counted, the reason kept); with `info`, the
    timed rounds and the added peak RSS (the timed rounds also for a
    benchmark whose time is judged, at `level` and against
    `time_threshold`).  `step(what)` is a context manager around each kind
    of run (steps.py); `profiles()` gives the run's Aggregate, whose GC
    counters size the counted runs (stop_for)."""
    step = step or (lambda what: contextlib.nullcontext())
    t = rss = None
    if info or bench.overhead_time_fails:
        with step("timed pairs"):
            t = overhead_time.measure(bench, work_dir, hyperfine, time_threshold,
                                      level if level is not None else bench.alpha)
    base, why, how = carry[0], carry[1], (carry[2] if len(carry) > 2 else "carried")
    if base is not None:
        c, obtained = base["counted"], {"count": how, "reason": why}
    else:
        stop = stop_for(bench, profiles)
        with step("counted runs"):
            c = count_sides(bench, patch_id, stop)
        obtained = {"count": "counted", "reason": f"counted in this run{prefix_note(stop)}"
                                                  f"{': ' + why if why else ''}"}
    if info:
        with step("peak RSS runs"):
            rss = overhead_rss.measure(bench, work_dir)
    # An estimated record: the baseline's counts, its figures scaled.
    return {**_record(c, t, rss, obtained), **(base or {}).get("scaled", {})}


def prefix_note(stop: dict | None) -> str:
    """How much of the run a count covers, as the reason says it."""
    return "" if not stop else (f", on its first {stop['after']:,} of {stop['of']:,} minor "
                                f"collections (about {COUNT_WORDS:,} words), without the "
                                f"exit's walk of the heap")


def _record(c: dict, t: dict | None, rss: dict | None, obtained: dict | None = None) -> dict:
    return {"measure": MEASURE, **figures(c), "counted": c, "time": t, "rss": rss,
            "obtained": obtained or COUNTED,
            "median_off_s": (t or {}).get("median_off_s"),
            "median_on_s": (t or {}).get("median_on_s"),
            "method": (f"estimated cycles ({cachegrind.MODEL}), profiling on / off, "
                       + (f"{len(c['on'])} runs each, range" if len(c["on"]) > 1 else
                          "one run each (deterministic)"))}


def threshold_for(bench, base: dict | None, args: list) -> tuple[float, str, str]:
    """(threshold, basis, note) for a measurement counted with `args`: the
    baseline's upper end plus the tolerance when its counted record is
    comparable, else the budget and why."""
    if base is None:
        return bench.overhead_budget, "budget", ""
    c = base.get("counted")
    if c is None:
        why = "the baseline records only a timed overhead (made before the counted check)"
    elif c["args"] != args:
        why = (f"the baseline counted with arguments {' '.join(c['args'])[:80]!r}, "
               f"this run with {' '.join(args)[:80]!r}")
    elif c["model"] != cachegrind.MODEL:
        why = f"the baseline counted with another model ({c['model'][:80]})"
    else:
        return base["ci_high"] + bench.overhead_tolerance, "baseline", ""
    return (bench.overhead_budget, "budget",
            f"judged against the budget: {why}; re-record with "
            f"`memprof-ci update-baselines -k {bench.name}`")


def _events(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise InputError(f"{where} must be an object of cachegrind events")
    ev = {k: V.count(d.get(k), f"{where}.{k}") for k in cachegrind.EVENTS}
    if ev["Ir"] == 0 or cachegrind.estimated_cycles(ev) <= 0:
        raise InputError(f"{where}: counts no instructions")
    return ev


def _parse_counted(c, where: str) -> dict:
    if not isinstance(c, dict):
        raise InputError(f"{where} must be an object")
    args = c.get("args")
    if not isinstance(args, list) or len(args) > 1000:
        raise InputError(f"{where}.args must be a list of strings")
    out = {"args": [V.text(a, f"{where}.args[{i}]", limit=4096) for i, a in enumerate(args)],
           "model": V.text(c.get("model"), f"{where}.model", limit=500)}
    for k in ("concurrent",):
        if not isinstance(c.get(k), bool):
            raise InputError(f"{where}.{k} must be true or false")
        out[k] = c[k]
    if c.get("threads") not in ("allowed", "disabled"):
        raise InputError(f"{where}.threads must be \"allowed\" or \"disabled\"")
    out["threads"] = c["threads"]
    if c.get("key") is not None:
        out["key"] = _parse_key(c["key"], f"{where}.key")
    out["stop"] = _parse_stop(c.get("stop"), f"{where}.stop")
    sides = [c.get("off"), c.get("on")]
    if not all(isinstance(s, list) and 0 < len(s) <= MAX_REPEATS for s in sides) or \
            len(sides[0]) != len(sides[1]):
        raise InputError(f"{where}: off and on must be lists of as many runs' counts")
    for k, s in zip(("off", "on"), sides):
        out[k] = [_events(e, f"{where}.{k}[{i}]") for i, e in enumerate(s)]
    return out


def _parse_stop(d, where: str) -> dict | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError(f"{where} must be null or an object")
    after, of = V.count(d.get("after"), f"{where}.after"), V.count(d.get("of"), f"{where}.of")
    if not 1 <= after < of:
        raise InputError(f"{where}: after must be at least 1 and below of")
    return {"after": after, "of": of}


def _parse_key(k, where: str) -> dict:
    if not isinstance(k, dict) or not isinstance(k.get("env"), dict) or len(k["env"]) > 1000:
        raise InputError(f"{where} must be an object with an `env` object")
    return {"program": V.text(k.get("program"), f"{where}.program", limit=4096),
            "env": {V.text(a, f"{where}.env", limit=4096): V.text(b, f"{where}.env.{a}",
                                                                 limit=4096)
                    for a, b in sorted(k["env"].items())},
            "rate": V.finite(k.get("rate"), f"{where}.rate", lo=0, lo_open=True),
            "seed": V.count(k.get("seed"), f"{where}.seed"),
            "frames": V.count(k.get("frames"), f"{where}.frames"),
            "patch_id": V.text(k.get("patch_id"), f"{where}.patch_id", optional=True,
                               limit=200)}


def _parse_obtained(o, where: str) -> dict:
    if o is None:
        return {"count": "counted", "reason": "counted (a record from before records said how)"}
    if not isinstance(o, dict) or o.get("count") not in ("counted", "carried"):
        raise InputError(f"{where}.count must be \"counted\" or \"carried\"")
    return {"count": o["count"], "reason": V.text(o.get("reason"), f"{where}.reason",
                                                  limit=2000)}


def parse_record(d, where: str):
    """An overhead record read back from a baseline or a run directory
    (untrusted): None, or the record with its counts validated and every
    figure derived from them again.  A record from before the counted
    check (no "measure") loads with "counted" None and its CPU times as
    the time record; its figures are kept, as it has no counts."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError(f"{where} must be null or an object")
    if d.get("measure") is None:
        t = overhead_time.from_legacy(d, where)
        return {"measure": "time", "counted": None, "time": t,
                "estimate": V.finite(d.get("estimate"), f"{where}.estimate"),
                "ci_low": V.finite(d.get("ci_low"), f"{where}.ci_low"),
                "ci_high": V.finite(d.get("ci_high"), f"{where}.ci_high"),
                "median_off_s": (t or {}).get("median_off_s"),
                "median_on_s": (t or {}).get("median_on_s"),
                "method": V.text(d.get("method", ""), f"{where}.method", limit=500)}
    if d["measure"] != MEASURE:
        raise InputError(f"{where}.measure must be {MEASURE!r}, not {d['measure']!r}")
    c = _parse_counted(d.get("counted"), f"{where}.counted")
    t = None if d.get("time") is None else overhead_time.parse(d["time"], f"{where}.time")
    return _record(c, t, overhead_rss.parse(d.get("rss"), f"{where}.rss"),
                   _parse_obtained(d.get("obtained"), f"{where}.obtained"))


def nice_rate_below(rate: float, factor: float) -> float:
    """The largest 1, 2 or 5 x 10^k not above rate * factor."""
    target = rate * factor
    if target <= 0:
        return 0.0
    k = math.floor(math.log10(target))
    for m in (5, 2, 1):
        if m * 10 ** k <= target * (1 + 1e-9):
            return float(f"{m}e{k}")
    return float(f"1e{k - 1}")


def over_budget(measured: dict, bench) -> str | None:
    """update-baselines' check of the absolute budget on the counted
    overhead: a message naming it and a rate expected to meet the budget,
    or None.  Overhead grows in proportion to the samples, so to the rate."""
    if measured["ci_low"] <= bench.overhead_budget:
        return None
    rate = nice_rate_below(bench.profiled_rate,
                           bench.overhead_budget / max(measured["estimate"], 1e-9))
    return (f"benchmark {bench.name!r}: profiling overhead {measured['estimate']:+.1%} "
            f"(estimated cycles) is over the budget {bench.overhead_budget:.0%} at rate "
            f"{bench.profiled_rate:g}; rate = {rate:g} should meet it (overhead grows with the "
            f"rate), or raise overhead_budget")
