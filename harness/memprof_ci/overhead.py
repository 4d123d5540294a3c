"""Measuring profiling overhead with hyperfine.

Runs the benchmark command with profiling off and on (at the benchmark's
rate) under `hyperfine -N --export-json`, both through `env` so the two
commands differ only in OCAMLMEMPROF.  Machines here are shared: a
block of "off" runs followed by a block of "on" runs would charge any
change of load to profiling. So each of `overhead_runs` rounds is one
hyperfine call timing one run of each, back to back, in alternating
order, and the overhead is judged on the per-round ratios
(stats.paired_overhead_interval, stats.overhead_sign_test) of CPU time
(user + system, as hyperfine reads them from the kernel): the wall time of
one run swings by 20-45% with the machine's other load (one paired run of
sandmark's kb read +46.1% wall for +6.8% CPU), the CPU time a run needs
much less. The wall-time ratio is reported beside it. Rounds that look
over the threshold are followed by confirmation rounds.
Invariants: a missing hyperfine or a failing command raises InfraError,
never a verdict; a regression is only an exact sign test over all rounds
significant at alpha divided by the number of overhead checks in the run
(Bonferroni), so the run's chance of a false overhead failure is at most
alpha when pairs are independent.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import tempfile

from . import validate as V
from .errors import InfraError, InputError
from .runner import bench_env, memprof_env_value
from .stats import overhead_sign_test, paired_overhead_interval, rounds_for_level

OVERHEAD_NUMBERS = ("estimate", "ci_low", "ci_high", "p_value", "level",
                    "median_off_s", "median_on_s")
OVERHEAD_COUNTS = ("runs", "confirmation_runs", "above_budget")


def threshold_for(bench, baseline_overhead: dict | None) -> tuple[float, str]:
    """The overhead a check fails above, and what it is based on.

    With a baseline that recorded its overhead: the upper end of that
    measurement's interval plus `overhead_tolerance`, so a check fails only
    when the change made profiling significantly costlier (the absolute
    budget is enforced by update-baselines).  Without one: the budget."""
    hi = (baseline_overhead or {}).get("ci_high")
    if hi is not None:
        return hi + bench.overhead_tolerance, "baseline"
    return bench.overhead_budget, "budget"


def measure(bench, work_dir: str, level: float | None = None, hyperfine: str = "hyperfine",
            threshold: float | None = None) -> dict:
    """Time `bench.overhead_runs` paired rounds; if they put profiling over
    `threshold` (default: the budget), time more rounds, up to the number at
    which a verdict of "over" can be significant at `level` (default
    bench.alpha; verdict.overhead_level shares alpha over a run's overhead
    checks), and judge on all of them (STATISTICS.md, "Profiling
    overhead").  The per-round times are kept so a judge can re-test them
    against its own threshold."""
    if threshold is None:
        threshold = bench.overhead_budget
    exe = shutil.which(hyperfine)
    if exe is None:
        raise InfraError("hyperfine not found on PATH; install it (>= 1.13) or pass "
                         "--no-overhead")
    os.makedirs(work_dir, exist_ok=True)
    if level is None:
        level = bench.alpha
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        prof = os.path.join(tmp, f"{bench.name}.overhead.json")
        js = os.path.join(tmp, "hyperfine.json")
        off = shlex.join(["env", "-u", "OCAMLMEMPROF", *bench.command])
        on = shlex.join(["env", "OCAMLMEMPROF=" + memprof_env_value(
            bench.rate, bench.seeds[0], bench.frames, prof, per_process=True),
            *bench.command])
        t_off, t_on, w_off, w_on = [], [], [], []

        def rounds(count):
            for _ in range(count):
                pair = [("off", off), ("on", on)]
                if len(t_on) % 2:
                    pair.reverse()
                cmd = [exe, "-N", "--style", "none", "--runs", "1", "--export-json", js]
                for name, command in pair:
                    cmd += ["-n", name, command]
                times = _hyperfine(bench, cmd, js)
                t_off.append(times["off"][1])
                t_on.append(times["on"][1])
                w_off.append(times["off"][0])
                w_on.append(times["on"][0])

        rounds(bench.overhead_runs)
        screened = paired_overhead_interval(t_on, t_off)[1] > threshold
        if screened:
            rounds(max(0, rounds_for_level(level) - len(t_on)))
    est, lo, hi, coverage = paired_overhead_interval(t_on, t_off)
    p, above = overhead_sign_test(t_on, t_off, threshold)
    return {"estimate": est, "ci_low": lo, "ci_high": hi, "runs": len(t_on),
            "on_s": [float(x) for x in t_on], "off_s": [float(x) for x in t_off],
            "first_rounds": bench.overhead_runs, "threshold": threshold,
            "confirmation_runs": len(t_on) - bench.overhead_runs,
            "above_budget": above, "p_value": p, "level": level, "screened": screened,
            "median_off_s": float(sorted(w_off)[len(w_off) // 2]),
            "median_on_s": float(sorted(w_on)[len(w_on) // 2]),
            "wall_estimate": paired_overhead_interval(w_on, w_off)[0],
            "method": f"CPU time (user + system); median of {len(t_on)} paired back-to-back "
                      f"ratios, "
                      f"sign-test interval ({coverage:.1%} coverage); over budget "
                      f"only if the sign test's p <= {level:.2g}"}


def _hyperfine(bench, cmd: list, js: str) -> dict:
    """One hyperfine call; returns {name: (wall, CPU) seconds of its single
    run}, CPU being user + system time."""
    timeout = bench.timeout * 2 + 60
    try:
        r = subprocess.run(cmd, cwd=bench.cwd, env=bench_env(bench),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InfraError(f"benchmark {bench.name!r}: overhead measurement timed out "
                         f"after {timeout:g}s; lower overhead_runs or pass "
                         f"--no-overhead") from None
    if r.returncode != 0:
        tail = (r.stderr or b"").decode("utf-8", "replace").strip().replace("\n", " | ")[-400:]
        raise InfraError(f"benchmark {bench.name!r}: hyperfine failed (status "
                         f"{r.returncode}): {tail}")
    try:
        with open(js) as fh:
            out = {}
            for x in json.load(fh)["results"]:
                # rusage has a resolution: a run never costs less than 0.1 ms.
                cpu = max(float(x["user"]) + float(x["system"]), 1e-4)
                out[x["command"]] = (float(x["times"][0]), cpu)
            return out
    except (OSError, KeyError, IndexError, ValueError, TypeError) as e:
        raise InfraError(f"benchmark {bench.name!r}: unreadable hyperfine JSON ({e})") from None


def parse_record(d, where: str):
    """A measurement as measure() returns it, read back from a baseline or a
    run directory (untrusted): None, or the record with every number
    finite, counts in range and the per-round times consistent; else an
    InputError naming `where` and the key."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError(f"{where} must be null or an object")
    out = dict(d)
    for k in OVERHEAD_NUMBERS:
        out[k] = V.finite(d.get(k), f"{where}.{k}")
    for k in OVERHEAD_COUNTS:
        out[k] = V.count(d.get(k), f"{where}.{k}")
    if not 0 <= out["p_value"] <= 1 or not 0 < out["level"] <= 1:
        raise InputError(f"{where}: p_value and level must be probabilities")
    if out["runs"] < 1 or out["above_budget"] > out["runs"]:
        raise InputError(f"{where}: runs and above_budget are inconsistent")
    if not isinstance(d.get("screened"), bool):
        raise InputError(f"{where}.screened must be true or false")
    out["method"] = V.text(d.get("method", ""), f"{where}.method", limit=500)
    times = [d.get("on_s"), d.get("off_s")]
    if times != [None, None]:
        if not all(isinstance(t, list) and 0 < len(t) <= 1000 for t in times) or \
                len(times[0]) != len(times[1]) or len(times[0]) != out["runs"]:
            raise InputError(f"{where}: on_s and off_s must be lists of `runs` times")
        for key, t in zip(("on_s", "off_s"), times):
            out[key] = [V.finite(x, f"{where}.{key}[{i}]", lo=0, lo_open=True)
                        for i, x in enumerate(t)]
        out["first_rounds"] = V.count(d.get("first_rounds"), f"{where}.first_rounds")
    return out


def judge(measured: dict, threshold: float, basis: str, budget: float,
          baseline: dict | None) -> dict:
    """The verdict on a measurement against `threshold` (threshold_for).

    Only a screened measurement can fail: its first rounds put the interval's
    lower end above the threshold, and it then has at least the rounds fixed
    in advance for its level (rounds_for_level), so P(false failure) <=
    level.  When the per-round times are known they are re-tested against
    this threshold, which may differ from the one the measurement screened
    against (a judge reading a run directory)."""
    m = dict(measured)
    on, off = m.get("on_s"), m.get("off_s")
    note = ""
    if on and off and len(on) == len(off):
        first = int(m.get("first_rounds") or len(on))
        m["screened"] = paired_overhead_interval(on[:first], off[:first])[1] > threshold
        m["p_value"], m["above_budget"] = overhead_sign_test(on, off, threshold)
        if m["screened"] and len(on) < rounds_for_level(m["level"]):
            m["screened"] = False
            note = (f"over {threshold:.0%} in the first rounds, but too few rounds "
                    f"({len(on)}) were timed to decide at level {m['level']:.2g}")
    status = "regression" if m["screened"] and m["p_value"] <= m["level"] else "~"
    return {**m, "budget": budget, "threshold": threshold, "basis": basis, "status": status,
            "note": note, "baseline_estimate": (baseline or {}).get("estimate"),
            "baseline_ci_high": (baseline or {}).get("ci_high")}


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
    """update-baselines' check of the absolute budget: a message naming the
    measured overhead and a rate expected to meet the budget, or None.
    Overhead grows in proportion to the samples, so to the rate."""
    if measured["ci_low"] <= bench.overhead_budget:
        return None
    rate = nice_rate_below(bench.rate, bench.overhead_budget / max(measured["estimate"], 1e-9))
    return (f"benchmark {bench.name!r}: profiling overhead {measured['estimate']:+.1%} "
            f"[{measured['ci_low']:+.1%}, {measured['ci_high']:+.1%}] is over the budget "
            f"{bench.overhead_budget:.0%} at rate {bench.rate:g}; rate = {rate:g} should "
            f"meet it (overhead grows with the rate), or raise overhead_budget")
