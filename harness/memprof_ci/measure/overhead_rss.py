"""Profiling's memory: the peak resident set size it adds to a benchmark.

The benchmark's command runs RUNS times with profiling off and as often on
(at the benchmark's profiled rate, first seed, profile written to a
scratch file), alternating, each measured by the overhead library's RSS
measure (drivers/peak_rss.py: reaped with os.wait4, whose rusage gives its
peak RSS; Linux: kilobytes).
The added peak RSS is median(on) - median(off), in bytes: what the
tracker's sites, tables and output cost at the top of the program's
memory.  It is information, shown beside the overhead and never judged.

Invariants: a run that fails or times out raises InfraError, never a
figure; the per-run peaks are kept and every figure derives from them
again when a record is read back (parse), so a run directory cannot state
an added size its runs do not give.
"""

from __future__ import annotations

import os
import statistics
import tempfile

from ..inputs import validate as V
from ..errors import InputError
from .drivers.peak_rss import peak_kb
from .runner import bench_env, memprof_env_value

RUNS = 1                     # per side: peaks repeat to within 1%
KB = 1024
MAX_RUNS = 100


def _peak_kb(bench, env: dict) -> int:
    return peak_kb(bench.command, env, bench.cwd, bench.timeout, f"benchmark {bench.name!r}")


def measure(bench, work_dir: str) -> dict:
    """RUNS runs per side, alternating off and on: the rss record."""
    os.makedirs(work_dir, exist_ok=True)
    off_env = {k: v for k, v in bench_env(bench).items() if k != "OCAMLMEMPROF"}
    sides = {"off_kb": [], "on_kb": []}
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        on_env = dict(off_env, OCAMLMEMPROF=memprof_env_value(
            bench.profiled_rate, bench.seeds[0], bench.frames,
            os.path.join(tmp, f"{bench.name}.rss.json"), per_process=True))
        for i in range(RUNS):
            order = (("off_kb", off_env), ("on_kb", on_env))
            for key, env in (order if i % 2 == 0 else order[::-1]):
                sides[key].append(_peak_kb(bench, env))
    return with_summary(sides)


def with_summary(r: dict) -> dict:
    """The record with its figure: the added peak RSS in bytes."""
    return {**r, "added_bytes": int((statistics.median(r["on_kb"])
                                     - statistics.median(r["off_kb"])) * KB)}


def parse(d, where: str) -> dict | None:
    """An rss record read back from a baseline or a run directory
    (untrusted): None, or its runs validated and its figure derived again."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError(f"{where} must be null or an object")
    out = {}
    for k in ("off_kb", "on_kb"):
        xs = d.get(k)
        if not isinstance(xs, list) or not 0 < len(xs) <= MAX_RUNS:
            raise InputError(f"{where}.{k} must be a list of 1 to {MAX_RUNS} peak sizes")
        out[k] = [V.count(x, f"{where}.{k}[{i}]") for i, x in enumerate(xs)]
    return with_summary(out)

