"""Phase 2 of the overhead study: instruction counts with callgrind.

run_callgrind counts, per benchmark, the instructions of three configs at
the suite's size times `scale` (patched binary with profiling off, C
tracker at 1e-4, stock binary) and, for the per-sample instruction cost,
four more at `cost_scale` (C tracker off and at 1e-2, OCaml tracker off and
at 1e-2), then forms the ratios C/off and patched/stock and the per-sample
costs.
Each run is memprof_ci.measure.drivers.cachegrind.count (the overhead
library's valgrind driver, which the harness's overhead check counts with,
its cache simulation on), here under callgrind without cache simulation,
with valgrind's fair scheduling for a benchmark the manifest marks
`concurrent`.
Invariants: counts are deterministic except for the concurrent benchmarks,
which are run `repeats` times per config and get a [min, max] range of
their ratios (and, at exit, where the runtime's profile-sorting thread
meets the main thread: a few hundred instructions); runs go in parallel (`jobs` at a time); a run that fails,
times out or writes no profile becomes an entry in that benchmark's
`errors` (a config with no successful run has median None), not an
exception, so one broken benchmark does not lose the others' counts.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shlex
import shutil
import statistics
import time

from memprof_ci.measure.drivers import cachegrind as counted
from memprof_ci.inputs.manifest import Benchmark

from .common import CALLGRIND_RATE, COST_RATE, SEED, log
from .programs import OCAML_LINE, base_env, c_profile_samples, variant_exes


def scaled_argv(argv: list[str], scale: float) -> tuple[list[str], str | None]:
    """The command with its size argument (argv[1], an integer) scaled."""
    if len(argv) > 1 and re.fullmatch(r"\d+", argv[1]):
        size = max(1, round(int(argv[1]) * scale))
        return [argv[0], str(size), *argv[2:]], str(size)
    return list(argv), None


def callgrind_once(job: dict) -> dict:
    """One valgrind run: the job with `instructions` (and `samples` for a
    profiled run) added, or with `error`."""
    env = dict(job["env"])
    env.update(job["extra_env"])
    t = time.monotonic()
    try:
        r = counted.count(job["argv"], env, job["cwd"], job["timeout"], tool="callgrind",
                          cache_sim=False, fair_sched=job["concurrent"])
    except counted.CountError as e:
        return {**job, "error": str(e)}
    if job["profile"] and not os.path.isfile(job["profile"]):
        return {**job, "error": "OCAMLMEMPROF set but no profile written (not a patched "
                                "binary? run `make runtime benchmarks`)"}
    res = {**job, "instructions": r["events"]["Ir"], "wall_s": time.monotonic() - t}
    if job["profile"]:
        res["samples"] = c_profile_samples(job["profile"])
    if job["ocaml_tracker"]:
        m = OCAML_LINE.search(r["stderr"])
        if not m:
            return {**job, "error": "no ocaml-tracker summary line on stderr"}
        res["samples"] = int(m.group(1))
    return res


def _jobs(b: Benchmark, stock_dir: str, scale: float, cost_scale: float, repeats: int,
          tmp: str, with_cost: bool) -> list[dict]:
    # Run every variant from a path of the same length: Sys.argv is
    # allocated on the heap, and a few words more shift GC pacing
    # enough to change instruction counts by several percent
    # (major_arrays: 298 vs 268 major collections for the same binary
    # run from paths of different lengths).
    exes = {}
    for kind, path in variant_exes(b, stock_dir).items():
        dst = os.path.join(tmp, "exe", kind[0], os.path.basename(path))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.exists(path):
            shutil.copy2(path, dst)
        exes[kind] = dst
    conc = b.concurrent
    reps = repeats if conc else 1
    configs = [("off", "patched", None, scale), ("c_1e-4", "patched", CALLGRIND_RATE, scale),
               ("stock", "stock", None, scale)]
    if with_cost:
        configs += [("cost_c_off", "patched", None, cost_scale),
                    ("cost_c_1e-2", "patched", COST_RATE, cost_scale),
                    ("cost_ocaml_off", "ocamltracker", None, cost_scale),
                    ("cost_ocaml_1e-2", "ocamltracker", COST_RATE, cost_scale)]
    todo = []
    for config, kind, rate, sc in configs:
        argv, size = scaled_argv([exes[kind], *b.command[1:]], sc)
        for rep in range(reps):
            prof, extra = None, {}
            if rate is not None and kind == "patched":
                prof = os.path.join(tmp, f"{b.name}.{config}.{rep}.json")
                extra = {"OCAMLMEMPROF": f"rate={rate!r},seed={SEED},"
                                         f"frames={b.frames},out={prof}"}
            elif rate is not None:
                extra = {"OCAMLMEMPROF_OCAML_RATE": repr(rate),
                         "OCAMLMEMPROF_OCAML_OUT":
                             os.path.join(tmp, f"{b.name}.{config}.{rep}.txt")}
            todo.append({"bench": b.name, "config": config, "rep": rep, "argv": argv,
                         "size": size, "cwd": b.cwd, "env": base_env(b),
                         "extra_env": extra, "profile": prof,
                         "ocaml_tracker": kind == "ocamltracker" and rate is not None,
                         "concurrent": conc, "timeout": max(900.0, b.timeout * 30)})
    return todo


def _per_sample_cost(cfg: dict) -> dict:
    per = {}
    for tracker in ("c", "ocaml"):
        on, off = cfg[f"cost_{tracker}_1e-2"], cfg[f"cost_{tracker}_off"]
        smp = statistics.median(on["samples"]) if on["samples"] else None
        per[tracker] = {"samples": smp,
                        "ir_per_sample": (on["median"] - off["median"]) / smp
                        if (smp and on["median"] and off["median"]) else None}
    c, o = per["c"]["ir_per_sample"], per["ocaml"]["ir_per_sample"]
    per["ratio_c_over_ocaml"] = c / o if (c is not None and o) else None
    return per


def _entry(name: str, mine: list[dict], scale: float, cost_scale: float,
           with_cost: bool) -> dict:
    """One benchmark's counts per config, ratios and per-sample costs."""
    entry = {"scale": scale, "cost_scale": cost_scale if with_cost else None,
             "concurrent": any(d.get("concurrent") for d in mine), "configs": {},
             "errors": []}
    for config in dict.fromkeys(d["config"] for d in mine):
        rs = [d for d in mine if d["config"] == config]
        errs = [d["error"] for d in rs if "error" in d]
        counts = [d["instructions"] for d in rs if "instructions" in d]
        entry["errors"] += [f"{config}: {e}" for e in errs]
        samples = [d["samples"] for d in rs if "samples" in d]
        entry["configs"][config] = {
            "instructions": counts, "size": rs[0]["size"],
            "median": statistics.median(counts) if counts else None,
            "samples": samples or None,
            "command": shlex.join([*(f"{k}={v}" for k, v in rs[0]["extra_env"].items()),
                                   *rs[0]["argv"]])}
    cfg = entry["configs"]
    entry["size"] = cfg["off"]["size"]

    def ratio(a, b_):
        x, y = cfg[a]["median"], cfg[b_]["median"]
        return x / y if (x and y) else None

    def spread(a, b_):
        xs, ys = cfg[a]["instructions"], cfg[b_]["instructions"]
        if not xs or not ys:
            return None
        return [min(xs) / max(ys), max(xs) / min(ys)]

    entry["ratio_c_over_off"] = ratio("c_1e-4", "off")
    entry["ratio_patched_over_stock"] = ratio("off", "stock")
    if entry["concurrent"]:
        entry["range_c_over_off"] = spread("c_1e-4", "off")
        entry["range_patched_over_stock"] = spread("off", "stock")
    if with_cost:
        entry["cost_per_sample"] = _per_sample_cost(cfg)
    return entry


def run_callgrind(benches: list[Benchmark], stock_dir: str, scale: float, cost_scale: float,
                  repeats: int, jobs: int, tmp: str, with_cost: bool) -> dict:
    """The counts of every benchmark, by name (per-sample costs do not depend
    on size, hence the smaller `cost_scale`)."""
    todo = [j for b in benches
            for j in _jobs(b, stock_dir, scale, cost_scale, repeats, tmp, with_cost)]
    log(f"callgrind: {len(todo)} runs, {jobs} at a time")
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(callgrind_once, todo))
    return {b.name: _entry(b.name, [d for d in done if d["bench"] == b.name],
                           scale, cost_scale, with_cost)
            for b in benches}
