"""Timing profiling's cost: paired hyperfine rounds, reported with their spread.

Runs the benchmark command with profiling off and on (at the benchmark's
rate) through the overhead library's hyperfine driver (drivers/hyperfine.py),
both through `env` so the two commands differ only in OCAMLMEMPROF.  Each
of `overhead_runs` rounds is one hyperfine call timing one run of each,
back to back, in alternating order, and the per-round ratios on / off
of CPU time (user + system, as the kernel counts them) and of wall time
give a median and its distribution-free interval
(stats.paired_overhead_interval).

A measurement is labelled noisy (noise()) when either side's runs spread
by more than NOISE_SPREAD (slowest / fastest: the two speeds of a machine
that other jobs slow down in phases) or its interval is wider than
NOISE_WIDTH of the median ratio (pairs that disagree); a noisy figure is
never reported as a precise number.

Time is information unless the manifest sets `overhead_time_fails`: then
the first rounds screen against the time threshold and more rounds are
timed up to the number at which a verdict of "over" can be significant at
the check's level (stats.rounds_for_level); the verdict itself, the exact
sign test of all rounds, is decide/overhead_verdict.time_verdict's.
Invariants: a missing hyperfine or a failing command raises InfraError,
never a figure; the per-round times are kept so a judge can re-test them
against its own threshold; every figure derives from them.
"""

from __future__ import annotations

import os
import tempfile

from ..inputs import validate as V
from ..errors import InfraError, InputError
from .drivers import hyperfine as hf
from .runner import bench_env, memprof_env_value
from ..decide.stats import paired_overhead_interval, rounds_for_level

NOISE_SPREAD = 1.25
NOISE_WIDTH = 0.20
LISTS = ("cpu_on_s", "cpu_off_s", "wall_on_s", "wall_off_s")
MAX_ROUNDS = 1000


def measure(bench, work_dir: str, hyperfine: str = "hyperfine",
            threshold: float | None = None, level: float | None = None) -> dict:
    """Time `bench.overhead_runs` paired rounds; when the benchmark's time is
    judged and they put CPU time over `threshold`, time more rounds (up to
    rounds_for_level(level)).  Returns the time record (parse() shape)."""
    _hyperfine_or_error(hyperfine)
    os.makedirs(work_dir, exist_ok=True)
    lists = {k: [] for k in LISTS}
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        prof = os.path.join(tmp, f"{bench.name}.overhead.json")
        sides = [("off", hf.env_argv(bench.command, unset=("OCAMLMEMPROF",))),
                 ("on", hf.env_argv(bench.command, {"OCAMLMEMPROF": memprof_env_value(
                     bench.profiled_rate, bench.seeds[0], bench.frames, prof,
                     per_process=True)}))]

        def rounds(count):
            for times in _rounds(bench, sides, hyperfine, len(lists["cpu_on_s"]), count):
                for side in ("on", "off"):
                    lists[f"wall_{side}_s"].append(times[side].wall)
                    lists[f"cpu_{side}_s"].append(times[side].cpu)

        rounds(bench.overhead_runs)
        screened = False
        if bench.overhead_time_fails and threshold is not None:
            screened = paired_overhead_interval(lists["cpu_on_s"],
                                                lists["cpu_off_s"])[1] > threshold
            if screened:
                rounds(max(0, rounds_for_level(level or bench.alpha) - bench.overhead_runs))
    return with_summary({**lists, "runs": len(lists["cpu_on_s"]),
                         "first_rounds": bench.overhead_runs})


def _hyperfine_or_error(exe: str) -> None:
    try:
        hf.find(exe)
    except hf.HyperfineError as e:
        raise InfraError(f"{e} or pass --no-overhead") from None


def _rounds(bench, sides: list, exe: str, first: int, count: int) -> list:
    """Rounds `first` on of the off and on commands, alternating which runs
    first (drivers/hyperfine.py): a {"off"|"on": Run} per round."""
    try:
        return hf.interleaved(sides, count, first=first, cwd=bench.cwd, env=bench_env(bench),
                              timeout=bench.timeout * 2 + 60, exe=exe)
    except hf.HyperfineError as e:
        raise InfraError(f"benchmark {bench.name!r}: overhead timing: {e}; lower "
                         f"overhead_runs or pass --no-overhead") from None


def noise(on: list, off: list, est: float, lo: float, hi: float) -> str | None:
    """Why a paired measurement is too noisy to quote as a figure, or None."""
    why = [f"{side} runs {min(xs):.3g}-{max(xs):.3g} s"
           for side, xs in (("off", off), ("on", on)) if max(xs) > NOISE_SPREAD * min(xs)]
    if hi - lo > NOISE_WIDTH * (1 + est):
        why.append(f"interval {lo:+.0%} to {hi:+.0%}")
    return "; ".join(why) or None


def _figure(on: list, off: list) -> dict:
    est, lo, hi, coverage = paired_overhead_interval(on, off)
    ratios = [a / b for a, b in zip(on, off)]
    return {"estimate": est, "ci_low": lo, "ci_high": hi, "coverage": coverage,
            "min": min(ratios) - 1, "max": max(ratios) - 1,
            "noise": noise(on, off, est, lo, hi)}


def with_summary(t: dict) -> dict:
    """The record with its "cpu" and "wall" figures derived from the rounds
    (wall is None for a record that kept no per-round wall times)."""
    out = dict(t)
    out["cpu"] = _figure(t["cpu_on_s"], t["cpu_off_s"])
    out["wall"] = _figure(t["wall_on_s"], t["wall_off_s"]) if t.get("wall_on_s") else None
    out["noisy"] = bool(out["cpu"]["noise"] or (out["wall"] or {}).get("noise"))
    walls = sorted(t.get("wall_off_s") or []), sorted(t.get("wall_on_s") or [])
    out["median_off_s"] = walls[0][len(walls[0]) // 2] if walls[0] else t.get("median_off_s")
    out["median_on_s"] = walls[1][len(walls[1]) // 2] if walls[1] else t.get("median_on_s")
    return out


def parse(d, where: str) -> dict:
    """A time record read back from a baseline or run directory (untrusted):
    the per-round lists validated and the figures derived again."""
    if not isinstance(d, dict):
        raise InputError(f"{where} must be an object")
    out = {"runs": V.count(d.get("runs"), f"{where}.runs"),
           "first_rounds": V.count(d.get("first_rounds"), f"{where}.first_rounds")}
    for k in LISTS:
        xs = d.get(k)
        if xs is None and k.startswith("wall") and d.get("wall_on_s") is None \
                and d.get("wall_off_s") is None:
            out[k] = None
            continue
        if not isinstance(xs, list) or not 0 < len(xs) <= MAX_ROUNDS or len(xs) != out["runs"]:
            raise InputError(f"{where}.{k} must be a list of `runs` times")
        out[k] = [V.finite(x, f"{where}.{k}[{i}]", lo=0, lo_open=True) for i, x in enumerate(xs)]
    if not 1 <= out["first_rounds"] <= out["runs"]:
        raise InputError(f"{where}: first_rounds must be between 1 and runs")
    for k in ("median_off_s", "median_on_s"):
        if d.get(k) is not None:
            out[k] = V.finite(d[k], f"{where}.{k}", lo=0)
    return with_summary(out)


def from_legacy(d: dict, where: str) -> dict:
    """The time record of an overhead record from before the counted check
    (CPU times as on_s/off_s at its top level, wall medians only)."""
    n = V.count(d.get("runs"), f"{where}.runs")
    rec = {"runs": n, "first_rounds": d.get("first_rounds", n),
           "cpu_on_s": d.get("on_s"), "cpu_off_s": d.get("off_s"),
           "median_off_s": d.get("median_off_s"), "median_on_s": d.get("median_on_s")}
    if rec["cpu_on_s"] is None and rec["cpu_off_s"] is None:
        return None
    return parse(rec, where)
