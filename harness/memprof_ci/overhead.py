"""Measuring profiling overhead with hyperfine.

Runs the benchmark command with profiling off and on (at the benchmark's
rate) under `hyperfine -N --export-json`, both through `env` so the two
commands differ only in OCAMLMEMPROF.  Machines here are shared: a
block of "off" runs followed by a block of "on" runs would charge any
change of load to profiling. So each of `overhead_runs` rounds is one
hyperfine call timing one run of each, back to back, in alternating
order, and the overhead is judged on the per-round ratios
(stats.paired_overhead_interval, stats.overhead_sign_test). Single runs
here swing by +-20%, so a few rounds can all land over the budget by
chance: rounds that look over budget are followed by confirmation rounds.
Invariants: a missing hyperfine or a failing command raises InfraError,
never a verdict; a regression is only an exact sign test over all rounds
significant at alpha divided by the number of overhead checks in the run
(Bonferroni), so the run's chance of a false overhead failure is at most
alpha when pairs are independent.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile

from .errors import InfraError
from .runner import bench_env, memprof_env_value
from .stats import overhead_sign_test, paired_overhead_interval, rounds_for_level


def measure(bench, work_dir: str, family_size: int = 1, hyperfine: str = "hyperfine") -> dict:
    """Time `bench.overhead_runs` paired rounds; if they put profiling over
    the budget, time more rounds, up to the number at which a verdict of
    "over budget" can be significant at bench.alpha / family_size, and judge
    on all of them (STATISTICS.md, "Profiling overhead")."""
    exe = shutil.which(hyperfine)
    if exe is None:
        raise InfraError("hyperfine not found on PATH; install it (>= 1.13) or pass "
                         "--no-overhead")
    os.makedirs(work_dir, exist_ok=True)
    level = bench.alpha / max(1, family_size)
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        prof = os.path.join(tmp, f"{bench.name}.overhead.json")
        js = os.path.join(tmp, "hyperfine.json")
        off = shlex.join(["env", "-u", "OCAMLMEMPROF", *bench.command])
        on = shlex.join(["env", "OCAMLMEMPROF=" + memprof_env_value(
            bench.rate, bench.seeds[0], bench.frames, prof), *bench.command])
        t_off, t_on = [], []

        def rounds(count):
            for _ in range(count):
                pair = [("off", off), ("on", on)]
                if len(t_on) % 2:
                    pair.reverse()
                cmd = [exe, "-N", "--style", "none", "--runs", "1", "--export-json", js]
                for name, command in pair:
                    cmd += ["-n", name, command]
                times = _hyperfine(bench, cmd, js)
                t_off.append(times["off"])
                t_on.append(times["on"])

        rounds(bench.overhead_runs)
        screened = paired_overhead_interval(t_on, t_off)[1] > bench.overhead_budget
        if screened:
            rounds(max(0, rounds_for_level(level) - len(t_on)))
    est, lo, hi, coverage = paired_overhead_interval(t_on, t_off)
    p, above = overhead_sign_test(t_on, t_off, bench.overhead_budget)
    return {"estimate": est, "ci_low": lo, "ci_high": hi, "runs": len(t_on),
            "confirmation_runs": len(t_on) - bench.overhead_runs,
            "above_budget": above, "p_value": p, "level": level, "screened": screened,
            "median_off_s": float(sorted(t_off)[len(t_off) // 2]),
            "median_on_s": float(sorted(t_on)[len(t_on) // 2]),
            "method": f"median of {len(t_on)} paired back-to-back ratios, "
                      f"sign-test interval ({coverage:.1%} coverage); over budget "
                      f"only if the sign test's p <= alpha / {max(1, family_size)}"}


def _hyperfine(bench, cmd: list, js: str) -> dict:
    """One hyperfine call; returns {name: wall seconds of its single run}."""
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
            return {x["command"]: x["times"][0] for x in json.load(fh)["results"]}
    except (OSError, KeyError, IndexError, ValueError, TypeError) as e:
        raise InfraError(f"benchmark {bench.name!r}: unreadable hyperfine JSON ({e})") from None


def judge(measured: dict, budget: float, baseline: dict | None) -> dict:
    # Only a screened measurement can fail: the number of rounds tested is
    # then fixed in advance (rounds_for_level), so P(false failure) <= level.
    status = ("regression" if measured["screened"] and measured["p_value"] <= measured["level"]
              else "~")
    return {**measured, "budget": budget, "status": status,
            "baseline_estimate": (baseline or {}).get("estimate")}
