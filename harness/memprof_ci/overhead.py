"""Measuring profiling overhead with hyperfine.

Runs the benchmark command with profiling off and on (at the benchmark's
rate) under `hyperfine -N --export-json`, both through `env` so the two
commands differ only in OCAMLMEMPROF.  Invariants: the estimate is
median(on)/median(off) - 1 with a fixed-seed bootstrap interval (see
stats.overhead_interval); a missing hyperfine or a failing command raises
InfraError, never a verdict.
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
from .stats import overhead_interval


def measure(bench, work_dir: str, hyperfine: str = "hyperfine") -> dict:
    exe = shutil.which(hyperfine)
    if exe is None:
        raise InfraError("hyperfine not found on PATH; install it (>= 1.13) or pass "
                         "--no-overhead")
    os.makedirs(work_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        prof = os.path.join(tmp, f"{bench.name}.overhead.json")
        js = os.path.join(tmp, "hyperfine.json")
        off = shlex.join(["env", "-u", "OCAMLMEMPROF", *bench.command])
        on = shlex.join(["env", "OCAMLMEMPROF=" + memprof_env_value(
            bench.rate, bench.seeds[0], bench.frames, prof), *bench.command])
        cmd = [exe, "-N", "--style", "none", "--runs", str(bench.overhead_runs),
               "--warmup", "1", "--export-json", js, "-n", "off", off, "-n", "on", on]
        timeout = bench.timeout * 2 * (bench.overhead_runs + 1) + 60
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
                results = {x["command"]: x for x in json.load(fh)["results"]}
            t_off, t_on = results["off"]["times"], results["on"]["times"]
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise InfraError(f"benchmark {bench.name!r}: unreadable hyperfine JSON ({e})") from None
    est, lo, hi = overhead_interval(t_on, t_off)
    return {"estimate": est, "ci_low": lo, "ci_high": hi, "runs": len(t_on),
            "median_off_s": float(sorted(t_off)[len(t_off) // 2]),
            "median_on_s": float(sorted(t_on)[len(t_on) // 2]),
            "method": "median ratio, 95% percentile bootstrap (seed 0)"}


def judge(measured: dict, budget: float, baseline: dict | None) -> dict:
    status = "regression" if measured["ci_low"] > budget else "~"
    return {**measured, "budget": budget, "status": status,
            "baseline_estimate": (baseline or {}).get("estimate")}
