#!/usr/bin/python3
"""overhead_study.py -- the overhead study of memprof-ci (`make bench-overhead`).

Purpose
    Measure what profiling costs, for every benchmark of the manifest:
    1. wall time (hyperfine -N) of the patched runtime's built-in C tracker
       (OCAMLMEMPROF=rate=R,seed=1,frames=F,out=<tmp>) against the same
       binary with OCAMLMEMPROF unset, and of the OCaml-level Gc.Memprof
       tracker (_build/benchmarks/ocamltracker/<name>.exe with
       OCAMLMEMPROF_OCAML_RATE=R and OCAMLMEMPROF_OCAML_OUT=<tmp>, so that
       it too writes a per-stack profile at exit) against that binary with
       the variables unset, for each rate (default 1e-5, 1e-4, 1e-3, 1e-2); plus the cost
       per sample at 1e-2 of both trackers and their ratio;
    2. instruction counts (valgrind --tool=callgrind, "Collected : N") at the
       suite's size (--callgrind-scale): C tracker at 1e-4 against off, and the stock-built
       binary against the patched-built binary with OCAMLMEMPROF unset; plus
       the per-sample cost at 1e-2 of both trackers in instructions (a
       deterministic cross-check of the noisy wall-time one);
    3. a report in --out: overhead.md (tables and a PASS/MISS summary against
       the study's targets), overhead.json (every raw number) and
       overhead.svg (overhead against rate, drawn by hand).

Invariants
    * Overhead = median(on) / median(off) - 1 over the timed runs of one
      invocation of this script; never a single absolute time.  Its 95%
      interval is a percentile bootstrap (unpaired resampling of the per-run
      times of each side, 4000 resamples, fixed RNG seed 20240501), so the
      same times always give the same interval.
    * The variants of one benchmark are interleaved: every round runs each
      variant once (hyperfine --runs 1) in a rotated order, so drift over
      the measurement hits on and off alike.  Timed phases run one process at
      a time; only the callgrind phase (deterministic counts) runs in
      parallel.
    * Every command goes through `env` with OCAMLMEMPROF,
      OCAMLMEMPROF_OCAML_RATE, OCAMLMEMPROF_OCAML_OUT and OCAMLRUNPARAM
      removed from the inherited environment, so on and off differ only in
      the one variable that turns profiling on.
    * Verdicts are computed from the measured numbers at report time; no
      target outcome is written in advance.  A wall-time verdict at 1e-4 is
      PASS or MISS only when the 95% intervals clear the target, and
      UNRESOLVED when they straddle it: the instruction counts then decide.
      The per-sample cost ratio at 1e-2 gets the same treatment, with its
      own bootstrap interval (the four sets of run times resampled).
    * `--reanalyse overhead.json` recomputes analysis, verdicts and report
      from a run's raw times and counts without running anything.  A quantity that was not measured
      (e.g. 1e-4 not in --rates) is reported as n/a, never as PASS.
    * A missing binary or tool is an error before anything runs: one line on
      stderr naming the make target, exit status 2.  A benchmark that fails
      while being measured is recorded in the outputs and the script exits 2
      after writing them.

Usage
    benchmarks/overhead_study.py --manifest benchmarks/benchmarks.toml \
        --out _build/overhead [--only a,b] [--rates 1e-4,1e-2] [--runs 5]
        [--warmup 1] [--no-callgrind] [--quick]

Stdlib only (tomllib needs Python >= 3.11).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as _dt
import json
import math
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness"))
from memprof_ci.baseline import write_atomic  # noqa: E402  (the harness's own)
DEFAULT_RATES = (1e-5, 1e-4, 1e-3, 1e-2)
QUICK_RATES = (1e-4, 1e-2)
CALLGRIND_RATE = 1e-4
COST_RATE = 1e-2
SEED = 1
BOOT_SEED = 20240501
BOOT_RESAMPLES = 4000
CI_METHOD = (f"95% percentile bootstrap of median(on)/median(off)-1, unpaired "
             f"resampling of per-run times, {BOOT_RESAMPLES} resamples, RNG seed {BOOT_SEED}")
# Benchmarks with several domains or systhreads: valgrind serialises their
# threads, so their instruction counts vary from run to run (repeated, marked).
CONCURRENT = {"domains", "systhreads"}
SCRUBBED_ENV = ("OCAMLMEMPROF", "OCAMLMEMPROF_OCAML_RATE", "OCAMLMEMPROF_OCAML_OUT",
                "OCAMLRUNPARAM")

# Targets of the study (the verdicts are computed, only the thresholds live here).
TARGET_MEDIAN_1E4 = 0.01       # median over benchmarks of the C overhead at 1e-4
TARGET_MAX_1E4 = 0.10          # max over benchmarks of the C overhead at 1e-4
TARGET_COST_RATIO = 0.25       # per-sample cost C / OCaml at 1e-2
TARGET_STOCK_RATIO = 1.01      # patched (unset) / stock instructions; chosen by this study

T0 = time.monotonic()


class StudyError(Exception):
    """An error that stops the study with exit status 2."""


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def die(msg: str) -> None:
    print(f"overhead_study: {msg}", file=sys.stderr)
    sys.exit(2)


def rate_key(r: float) -> str:
    """1e-05 -> '1e-5', 0.01 -> '1e-2' (the key used in tables and JSON)."""
    mant, exp = f"{r:.6e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def pct(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x * 100:+.{digits}f}%"


# ---- Manifest ------------------------------------------------------------

def _resolve(arg: str, base: str, first: bool) -> str:
    # Same rule as the harness: argv[0] with a slash is a path; later
    # arguments only when explicitly relative (./ or ../).
    if os.path.isabs(arg):
        return arg
    if (first and "/" in arg) or arg.startswith(("./", "../")):
        return os.path.normpath(os.path.join(base, arg))
    return arg


def load_manifest(path: str) -> tuple[dict, list[dict]]:
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise StudyError(f"{path}: manifest not found (pass --manifest PATH)") from None
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{path}: invalid TOML ({e})") from None
    base = os.path.dirname(os.path.abspath(path))
    defaults = doc.get("defaults", {})
    benches = []
    for i, b in enumerate(doc.get("benchmark", [])):
        name, cmd = b.get("name"), b.get("command")
        if not isinstance(name, str) or not isinstance(cmd, list) or not cmd:
            raise StudyError(f"{path}: benchmark #{i + 1} needs a name and a non-empty command")
        argv = [_resolve(str(a), base, j == 0) for j, a in enumerate(cmd)]
        benches.append({
            "name": name,
            "argv": argv,
            "cwd": os.path.normpath(os.path.join(base, b.get("cwd", "."))),
            "env": {str(k): str(v) for k, v in b.get("env", {}).items()},
            "timeout": float(b.get("timeout", defaults.get("timeout", 60))),
            "frames": int(b.get("frames", defaults.get("frames", 16))),
        })
    if not benches:
        raise StudyError(f"{path}: no [[benchmark]] entries")
    return defaults, benches


# ---- Binaries --------------------------------------------------------------

def variant_exes(bench: dict, stock_dir: str) -> dict:
    exe = bench["argv"][0]
    d, base = os.path.split(exe)
    return {"patched": exe,
            "ocamltracker": os.path.join(d, "ocamltracker", base),
            "stock": os.path.join(stock_dir, base)}


def check_binaries(benches: list[dict], stock_dir: str, callgrind: bool) -> None:
    need = [("patched", "make runtime benchmarks"),
            ("ocamltracker", "make benchmarks-ocamltracker")]
    if callgrind:
        need.append(("stock", "make stock-benchmarks"))
    for b in benches:
        exes = variant_exes(b, stock_dir)
        for kind, target in need:
            p = exes[kind]
            if not (os.path.isfile(p) and os.access(p, os.X_OK)):
                raise StudyError(f"missing {kind} binary {os.path.relpath(p, ROOT)} "
                                 f"for benchmark {b['name']!r}: run `{target}` first")
    for tool, why in (("hyperfine", "apt-get install hyperfine"),) + (
            (("valgrind", "apt-get install valgrind (or pass --no-callgrind)"),)
            if callgrind else ()):
        if shutil.which(tool) is None:
            raise StudyError(f"{tool} not found on PATH: {why}")


def base_env(bench: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(bench["env"])
    return env


def tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


# ---- Statistics --------------------------------------------------------------

def overhead_ci(on: list[float], off: list[float]) -> tuple[float, float, float]:
    """median(on)/median(off) - 1 and its 95% percentile bootstrap interval."""
    med = statistics.median
    est = med(on) / med(off) - 1
    if len(on) < 2 or len(off) < 2:
        return est, est, est
    rng = random.Random(BOOT_SEED)
    n_on, n_off = len(on), len(off)
    stats = []
    for _ in range(BOOT_RESAMPLES):
        a = [on[rng.randrange(n_on)] for _ in range(n_on)]
        b = [off[rng.randrange(n_off)] for _ in range(n_off)]
        stats.append(med(a) / med(b) - 1)
    stats.sort()
    lo = stats[int(0.025 * BOOT_RESAMPLES)]
    hi = stats[int(math.ceil(0.975 * BOOT_RESAMPLES)) - 1]
    return est, min(lo, est), max(hi, est)


def cost_ratio_ci(c: dict, o: dict) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of the per-sample cost ratio C/OCaml,
    (median(on) - median(off)) / samples for each tracker, with the four sets of
    run times resampled independently (same RNG seed as overhead_ci)."""
    sets = [c["on"], c["off"], o["on"], o["off"]]
    if not (c["samples"] and o["samples"]) or any(len(x) < 2 for x in sets):
        return None
    med = statistics.median
    rng = random.Random(BOOT_SEED)
    stats = []
    for _ in range(BOOT_RESAMPLES):
        a, b, x, y = ([t[rng.randrange(len(t))] for _ in t] for t in sets)
        cost_o = (med(x) - med(y)) / o["samples"]
        if cost_o > 0:
            stats.append((med(a) - med(b)) / c["samples"] / cost_o)
    if len(stats) < 0.95 * BOOT_RESAMPLES:
        return None       # the OCaml tracker's cost itself is not resolved
    stats.sort()
    n = len(stats)
    return stats[int(0.025 * n)], stats[int(math.ceil(0.975 * n)) - 1]


# ---- Phase 1: wall time ----------------------------------------------------------

OCAML_LINE = re.compile(r"^ocaml-tracker: .*\bsamples=(\d+)", re.M)


def c_profile_samples(path: str) -> int:
    with open(path) as fh:
        return int(json.load(fh)["totals"]["samples"])


def preflight(bench: dict, exes: dict, rates: list[float], tmp: str) -> dict:
    """One run of each profiled variant: checks that the C tracker writes a
    profile (i.e. the binary really is patched) and reads the OCaml tracker's
    sample counts from its stderr summary line."""
    env = base_env(bench)
    args = bench["argv"][1:]
    out = {"c_check_samples": None, "ocaml_samples": {}}
    prof = os.path.join(tmp, f"{bench['name']}.preflight.json")
    r = subprocess.run(["env", f"OCAMLMEMPROF=rate={max(rates)!r},seed={SEED},"
                        f"frames={bench['frames']},out={prof}", exes["patched"], *args],
                       cwd=bench["cwd"], env=env, capture_output=True, text=True,
                       timeout=bench["timeout"] * 3)
    if r.returncode != 0:
        raise StudyError(f"{bench['name']}: C-tracker run failed (status {r.returncode}): "
                         f"{r.stderr.strip()[-300:]}")
    if not os.path.isfile(prof):
        raise StudyError(f"{bench['name']}: OCAMLMEMPROF set but no profile written: "
                         f"{os.path.relpath(exes['patched'], ROOT)} was not built with the "
                         f"patched runtime (run `make runtime benchmarks`)")
    out["c_check_samples"] = c_profile_samples(prof)
    for rate in rates:
        r = subprocess.run(["env", f"OCAMLMEMPROF_OCAML_RATE={rate!r}", exes["ocamltracker"],
                            *args], cwd=bench["cwd"], env=env, capture_output=True,
                           text=True, timeout=bench["timeout"] * 3)
        m = OCAML_LINE.search(r.stderr)
        if r.returncode != 0 or not m:
            raise StudyError(f"{bench['name']}: OCaml-tracker run at {rate_key(rate)} failed "
                             f"(status {r.returncode}, no summary line?): "
                             f"{r.stderr.strip()[-300:]}")
        out["ocaml_samples"][rate_key(rate)] = int(m.group(1))
    return out


def time_benchmark(bench: dict, exes: dict, rates: list[float], runs: int, warmup: int,
                   tmp: str) -> dict:
    """Interleaved hyperfine rounds over all variants of one benchmark."""
    args = bench["argv"][1:]
    variants = []  # (id, tracker, rate key or "off", argv)
    variants.append(("c:off", "c", "off", ["env", exes["patched"], *args]))
    profs = {}
    for rate in rates:
        k = rate_key(rate)
        profs[k] = os.path.join(tmp, f"{bench['name']}.{k}.json")
        variants.append((f"c:{k}", "c", k, [
            "env", f"OCAMLMEMPROF=rate={rate!r},seed={SEED},frames={bench['frames']},"
                   f"out={profs[k]}", exes["patched"], *args]))
    variants.append(("ocaml:off", "ocaml", "off", ["env", exes["ocamltracker"], *args]))
    for rate in rates:
        k = rate_key(rate)
        variants.append((f"ocaml:{k}", "ocaml", k, [
            "env", f"OCAMLMEMPROF_OCAML_RATE={rate!r}",
            f"OCAMLMEMPROF_OCAML_OUT={os.path.join(tmp, bench['name'] + '.ocaml.' + k + '.txt')}",
            exes["ocamltracker"], *args]))
    times = {v[0]: [] for v in variants}
    n = len(variants)
    step = max(1, n // max(1, runs))
    js = os.path.join(tmp, f"{bench['name']}.hyperfine.json")
    for rnd in range(runs):
        k = (rnd * step) % n
        order = variants[k:] + variants[:k]
        cmd = ["hyperfine", "-N", "--style", "none", "--runs", "1",
               "--warmup", str(warmup if rnd == 0 else 0), "--export-json", js]
        for vid, _, _, argv in order:
            cmd += ["-n", vid, shlex.join(argv)]
        limit = bench["timeout"] * n * (2 + warmup) + 60
        try:
            r = subprocess.run(cmd, cwd=bench["cwd"], env=base_env(bench),
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=limit)
        except subprocess.TimeoutExpired:
            raise StudyError(f"{bench['name']}: hyperfine round {rnd + 1} timed out "
                             f"after {limit:g}s") from None
        if r.returncode != 0:
            tail = r.stderr.strip().replace("\n", " | ")[-400:]
            raise StudyError(f"{bench['name']}: hyperfine failed (status {r.returncode}): {tail}")
        with open(js) as fh:
            for res in json.load(fh)["results"]:
                times[res["command"]].extend(float(t) for t in res["times"])
    out = {"c": {}, "ocaml": {}}
    for vid, tracker, k, argv in variants:
        entry = {"command": shlex.join(argv), "times_s": times[vid],
                 "median_s": statistics.median(times[vid])}
        if tracker == "c" and k != "off":
            entry["samples"] = c_profile_samples(profs[k]) if os.path.isfile(profs[k]) else None
        out[tracker][k] = entry
    return out


def analyse_timing(timing: dict, pre: dict, rates: list[float]) -> dict:
    res = {"c": {}, "ocaml": {}}
    for tracker in ("c", "ocaml"):
        off = timing[tracker]["off"]["times_s"]
        for rate in rates:
            k = rate_key(rate)
            on = timing[tracker][k]["times_s"]
            est, lo, hi = overhead_ci(on, off)
            res[tracker][k] = {"overhead": est, "ci_low": lo, "ci_high": hi,
                               "runs_on": len(on), "runs_off": len(off)}
    for rate in rates:
        timing["ocaml"][rate_key(rate)]["samples"] = pre["ocaml_samples"].get(rate_key(rate))
    k = rate_key(COST_RATE)
    if COST_RATE in rates:
        cost = {}
        for tracker in ("c", "ocaml"):
            d = timing[tracker]
            s = d[k].get("samples")
            diff = d[k]["median_s"] - d["off"]["median_s"]
            cost[tracker] = {"samples": s, "median_on_s": d[k]["median_s"],
                             "median_off_s": d["off"]["median_s"], "delta_s": diff,
                             "ns_per_sample": diff / s * 1e9 if s else None}
        c, o = cost["c"]["ns_per_sample"], cost["ocaml"]["ns_per_sample"]
        cost["ratio_c_over_ocaml"] = c / o if (c is not None and o) else None
        ci = cost_ratio_ci(*({"on": timing[t][k]["times_s"], "off": timing[t]["off"]["times_s"],
                              "samples": cost[t]["samples"]} for t in ("c", "ocaml")))
        cost["ratio_ci"] = list(ci) if ci else None
        res["cost_per_sample"] = {"rate": k, **cost}
    return res


# ---- Phase 2: callgrind ------------------------------------------------------------

COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def scaled_argv(argv: list[str], scale: float) -> tuple[list[str], str | None]:
    """The command with its size argument (argv[1], an integer) scaled."""
    if len(argv) > 1 and re.fullmatch(r"\d+", argv[1]):
        size = max(1, round(int(argv[1]) * scale))
        return [argv[0], str(size), *argv[2:]], str(size)
    return list(argv), None


def callgrind_once(job: dict) -> dict:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           *(["--fair-sched=yes"] if job["concurrent"] else []), *job["argv"]]
    env = dict(job["env"])
    env.update(job["extra_env"])
    t = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=job["cwd"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=job["timeout"])
    except subprocess.TimeoutExpired:
        return {**job, "error": f"timed out after {job['timeout']:g}s"}
    m = COLLECTED.search(r.stderr)
    if r.returncode != 0 or not m:
        tail = r.stderr.strip().replace("\n", " | ")[-300:]
        return {**job, "error": f"valgrind status {r.returncode}: {tail}"}
    if job["profile"] and not os.path.isfile(job["profile"]):
        return {**job, "error": "OCAMLMEMPROF set but no profile written (not a patched "
                                "binary? run `make runtime benchmarks`)"}
    res = {**job, "instructions": int(m.group(1)), "wall_s": time.monotonic() - t}
    if job["profile"]:
        res["samples"] = c_profile_samples(job["profile"])
    if job["ocaml_tracker"]:
        m = OCAML_LINE.search(r.stderr)
        if not m:
            return {**job, "error": "no ocaml-tracker summary line on stderr"}
        res["samples"] = int(m.group(1))
    return res


def run_callgrind(benches: list[dict], stock_dir: str, scale: float, cost_scale: float,
                  repeats: int, jobs: int, tmp: str, with_cost: bool) -> dict:
    """Configs per benchmark: off / C at 1e-4 / stock at `scale`; and, for the
    per-sample instruction cost, off / C at 1e-2 / OCaml tracker off / OCaml
    tracker at 1e-2 at `cost_scale` (per-sample costs do not depend on size)."""
    todo = []
    for b in benches:
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
        conc = b["name"] in CONCURRENT
        reps = repeats if conc else 1
        configs = [("off", "patched", None, scale), ("c_1e-4", "patched", CALLGRIND_RATE, scale),
                   ("stock", "stock", None, scale)]
        if with_cost:
            configs += [("cost_c_off", "patched", None, cost_scale),
                        ("cost_c_1e-2", "patched", COST_RATE, cost_scale),
                        ("cost_ocaml_off", "ocamltracker", None, cost_scale),
                        ("cost_ocaml_1e-2", "ocamltracker", COST_RATE, cost_scale)]
        for config, kind, rate, sc in configs:
            argv, size = scaled_argv([exes[kind], *b["argv"][1:]], sc)
            for rep in range(reps):
                prof, extra = None, {}
                if rate is not None and kind == "patched":
                    prof = os.path.join(tmp, f"{b['name']}.{config}.{rep}.json")
                    extra = {"OCAMLMEMPROF": f"rate={rate!r},seed={SEED},"
                                             f"frames={b['frames']},out={prof}"}
                elif rate is not None:
                    extra = {"OCAMLMEMPROF_OCAML_RATE": repr(rate),
                             "OCAMLMEMPROF_OCAML_OUT":
                                 os.path.join(tmp, f"{b['name']}.{config}.{rep}.txt")}
                todo.append({"bench": b["name"], "config": config, "rep": rep, "argv": argv,
                             "size": size, "cwd": b["cwd"], "env": base_env(b),
                             "extra_env": extra, "profile": prof,
                             "ocaml_tracker": kind == "ocamltracker" and rate is not None,
                             "concurrent": conc, "timeout": max(900.0, b["timeout"] * 30)})
    log(f"callgrind: {len(todo)} runs, {jobs} at a time")
    done = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for res in pool.map(callgrind_once, todo):
            done.append(res)
    out = {}
    for b in benches:
        mine = [d for d in done if d["bench"] == b["name"]]
        entry = {"scale": scale, "cost_scale": cost_scale if with_cost else None,
                 "concurrent": b["name"] in CONCURRENT, "configs": {}, "errors": []}
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
            per = {}
            for tracker in ("c", "ocaml"):
                on, off = cfg[f"cost_{tracker}_1e-2"], cfg[f"cost_{tracker}_off"]
                smp = statistics.median(on["samples"]) if on["samples"] else None
                per[tracker] = {"samples": smp,
                                "ir_per_sample": (on["median"] - off["median"]) / smp
                                if (smp and on["median"] and off["median"]) else None}
            c, o = per["c"]["ir_per_sample"], per["ocaml"]["ir_per_sample"]
            per["ratio_c_over_ocaml"] = c / o if (c is not None and o) else None
            entry["cost_per_sample"] = per
        out[b["name"]] = entry
    return out


# ---- Summary ---------------------------------------------------------------------

def interval_verdict(lows: list[float], highs: list[float], target: float) -> str:
    """Verdict on "every value is below target" from 95% intervals: wall time
    decides only when the intervals clear the target; when one straddles it,
    the instruction counts decide."""
    if not lows:
        return "n/a"
    if max(highs) < target:
        return "PASS"
    if max(lows) >= target:
        return "MISS"
    return "UNRESOLVED (see instructions)"


def summarise(results: dict, rates: list[float], callgrind: dict | None) -> list[dict]:
    rows = []
    ok = {n: r for n, r in results.items() if "analysis" in r}
    k4 = rate_key(1e-4)

    def verdict(value, target, le=False):
        if value is None:
            return "n/a"
        return "PASS" if (value <= target if le else value < target) else "MISS"

    c4 = {n: r["analysis"]["c"][k4] for n, r in ok.items() if k4 in r["analysis"]["c"]}
    wall = {n: a["overhead"] for n, a in c4.items()}
    med = statistics.median(wall.values()) if wall else None
    halfw = [(a["ci_high"] - a["ci_low"]) / 2 for a in c4.values()]
    res_note = (f"; median 95% CI half-width ±{statistics.median(halfw) * 100:.1f}%"
                if halfw else "")
    med_low = statistics.median(a["ci_low"] for a in c4.values()) if c4 else None
    med_high = statistics.median(a["ci_high"] for a in c4.values()) if c4 else None
    rows.append({"id": "wall_median_1e-4", "metric":
                 "C tracker wall-time overhead at 1e-4, median over benchmarks",
                 "value": med, "shown": pct(med, 2) + res_note,
                 "target": f"< {TARGET_MEDIAN_1E4:.0%}",
                 "verdict": interval_verdict([med_low] if c4 else [],
                                             [med_high] if c4 else [], TARGET_MEDIAN_1E4),
                 "n": len(wall)})
    if wall:
        worst = max(wall, key=wall.get)
        mx = wall[worst]
        shown = f"{pct(mx, 2)} ({worst}, CI {fmt_ci(c4[worst])})"
    else:
        mx, shown = None, "n/a"
    rows.append({"id": "wall_max_1e-4", "metric":
                 "C tracker wall-time overhead at 1e-4, max over benchmarks",
                 "value": mx, "shown": shown, "target": f"< {TARGET_MAX_1E4:.0%}",
                 "verdict": interval_verdict([a["ci_low"] for a in c4.values()],
                                             [a["ci_high"] for a in c4.values()],
                                             TARGET_MAX_1E4),
                 "n": len(wall)})
    if callgrind:
        ins = {n: e["ratio_c_over_off"] - 1 for n, e in callgrind.items()
               if e["ratio_c_over_off"] is not None}
        imed = statistics.median(ins.values()) if ins else None
        rows.append({"id": "instr_median_1e-4", "metric":
                     "C tracker instruction overhead at 1e-4 (callgrind), "
                     "median over benchmarks", "value": imed, "shown": pct(imed, 2),
                     "target": f"< {TARGET_MEDIAN_1E4:.0%}",
                     "verdict": verdict(imed, TARGET_MEDIAN_1E4), "n": len(ins)})
        if ins:
            w = max(ins, key=ins.get)
            imx, shown = ins[w], f"{pct(ins[w], 2)} ({w})"
        else:
            imx, shown = None, "n/a"
        rows.append({"id": "instr_max_1e-4", "metric":
                     "C tracker instruction overhead at 1e-4 (callgrind), max over benchmarks",
                     "value": imx, "shown": shown, "target": f"< {TARGET_MAX_1E4:.0%}",
                     "verdict": verdict(imx, TARGET_MAX_1E4), "n": len(ins)})
    cps = {n: r["analysis"]["cost_per_sample"] for n, r in ok.items()
           if r["analysis"].get("cost_per_sample", {}).get("ratio_c_over_ocaml") is not None}
    ratios = {n: c["ratio_c_over_ocaml"] for n, c in cps.items()}
    cmed, cmax, shown = median_and_worst(ratios, "{:.3f}")
    # An unresolved ratio (no interval) counts as straddling any target.
    cis = [c.get("ratio_ci") or [-math.inf, math.inf] for c in cps.values()]
    clo = statistics.median(x[0] for x in cis) if cis else None
    chi = statistics.median(x[1] for x in cis) if cis else None
    if cis:
        shown += f"; median benchmark's 95% CI [{clo:.3f}, {chi:.3f}]"
    rows.append({"id": "cost_ratio_1e-2", "metric":
                 "per-sample cost C / OCaml tracker at 1e-2, median over benchmarks",
                 "value": cmed, "max": cmax,
                 "shown": shown, "target": f"≤ {TARGET_COST_RATIO}",
                 "verdict": interval_verdict([clo] if cis else [], [chi] if cis else [],
                                             TARGET_COST_RATIO),
                 "n": len(ratios)})
    if callgrind:
        ic = {n: e["cost_per_sample"]["ratio_c_over_ocaml"] for n, e in callgrind.items()
              if (e.get("cost_per_sample") or {}).get("ratio_c_over_ocaml") is not None}
        if any("cost_per_sample" in e for e in callgrind.values()):
            imed, icmax, shown = median_and_worst(ic, "{:.3f}")
            rows.append({"id": "instr_cost_ratio_1e-2", "metric":
                         "per-sample instruction cost C / OCaml tracker at 1e-2 (callgrind), "
                         "median over benchmarks", "value": imed,
                         "max": icmax, "shown": shown,
                         "target": f"≤ {TARGET_COST_RATIO}",
                         "verdict": verdict(imed, TARGET_COST_RATIO, le=True), "n": len(ic)})
        st = {n: e["ratio_patched_over_stock"] for n, e in callgrind.items()
              if e["ratio_patched_over_stock"] is not None}
        smed, smax, shown = median_and_worst(st, "{:.4f}")
        rows.append({"id": "stock_ratio", "metric":
                     "patched runtime, OCAMLMEMPROF unset / stock: instructions, "
                     "median over benchmarks (verdict on the max)",
                     "value": smed, "max": smax, "shown": shown,
                     "target": f"max ≤ {TARGET_STOCK_RATIO} (threshold chosen by this study)",
                     "verdict": verdict(smax, TARGET_STOCK_RATIO, le=True), "n": len(st)})
    return rows


def median_and_worst(values: dict, fmt: str) -> tuple:
    """Median and max of per-benchmark values, with a "median (max M, name)"
    label; (None, None, "n/a") when there are none."""
    if not values:
        return None, None, "n/a"
    worst = max(values, key=values.get)
    med = statistics.median(values.values())
    return med, values[worst], f"{fmt.format(med)} (max {fmt.format(values[worst])}, {worst})"


# ---- Report ---------------------------------------------------------------------

def fmt_ci(a: dict | None) -> str:
    if not a:
        return "n/a"
    return f"{pct(a['overhead'])} [{pct(a['ci_low'])}, {pct(a['ci_high'])}]"


def write_markdown(path: str, meta: dict, results: dict, rates: list[float],
                   callgrind: dict | None, summary: list[dict]) -> None:
    L = []
    ks = [rate_key(r) for r in rates]
    L.append("# memprof-ci overhead study\n")
    L.append(f"Generated {meta['finished']} by `{meta['command_line']}` in "
             f"{meta['duration_s']:.0f} s on {meta['nproc']} CPU(s) (shared machine: "
             f"medians and ratios from this one run only; no absolute times quoted).\n")
    if meta.get("reanalysed"):
        L.append(f"Analysis and verdicts recomputed on {meta['reanalysed']} from that run's raw "
                 f"times and counts (`--reanalyse`); nothing was run again.\n")
    L.append(f"- Wall time: {meta['hyperfine']}, `-N`, {meta['runs']} interleaved rounds "
             f"(each variant once per round, rotated order; {meta['warmup']} warmup run per "
             f"variant in round 1). Overhead = median(on) / median(off) − 1.")
    L.append(f"- Interval: {CI_METHOD}.")
    L.append(f"- C tracker: `OCAMLMEMPROF=rate=R,seed={SEED},frames=F,out=<tmp>` vs the same "
             f"binary with it unset. OCaml tracker: `ocamltracker/<name>.exe` with "
             f"`OCAMLMEMPROF_OCAML_RATE=R` and `OCAMLMEMPROF_OCAML_OUT=<tmp>` (it writes its "
             f"per-stack profile, and settles live blocks with two major cycles at exit, the "
             f"only way an OCaml tracker can; the built-in tracker walks what is reachable "
             f"instead) vs the same binary with them unset.")
    if callgrind is not None:
        L.append(f"- Instructions: {meta['valgrind']} `--tool=callgrind`, size argument × "
                 f"{meta['callgrind_scale']}; concurrent benchmarks (marked †) repeated "
                 f"{meta['callgrind_repeats']}× and reported as median [min–max ratio].")
    L.append(f"- Patch id: `{meta['patch_id']}`.\n")

    L.append("## Summary\n")
    L.append("| metric | measured | target | verdict |")
    L.append("| --- | --- | --- | --- |")
    for row in summary:
        L.append(f"| {row['metric']} | {row['shown']} | {row['target']} | **{row['verdict']}** |")
    L.append("")

    ok = [n for n, r in results.items() if "analysis" in r]
    k4 = rate_key(1e-4)
    if k4 in ks and ok:
        L.append("### C tracker at 1e-4, per benchmark (wall time)\n")
        L.append("| " + " | ".join(ok) + " |")
        L.append("|" + " --- |" * len(ok))
        L.append("| " + " | ".join(pct(results[n]["analysis"]["c"][k4]["overhead"])
                                   for n in ok) + " |")
        L.append("")

    for tracker, title in (("c", "C tracker (built-in)"), ("ocaml", "OCaml-level tracker")):
        L.append(f"## Wall-time overhead: {title}\n")
        L.append("median [95% CI] per benchmark and rate.\n")
        L.append("| benchmark | " + " | ".join(ks) + " |")
        L.append("| --- |" + " --- |" * len(ks))
        for n, r in results.items():
            if "analysis" not in r:
                L.append(f"| {n} | " + " | ".join("error" for _ in ks) + " |")
                continue
            L.append(f"| {n} | " + " | ".join(fmt_ci(r["analysis"][tracker].get(k))
                                             for k in ks) + " |")
        vals = {k: [r["analysis"][tracker][k]["overhead"] for r in results.values()
                    if "analysis" in r] for k in ks}
        L.append("| **median** | " + " | ".join(
            pct(statistics.median(vals[k])) if vals[k] else "n/a" for k in ks) + " |")
        L.append("| **max** | " + " | ".join(
            pct(max(vals[k])) if vals[k] else "n/a" for k in ks) + " |")
        L.append("")

    kc = rate_key(COST_RATE)
    if kc in ks:
        L.append(f"## Cost per sample at {kc}\n")
        L.append("(median_on − median_off) / samples; samples from the C profile's "
                 "`totals.samples` (last timed run) and from the OCaml tracker's stderr "
                 "summary line (one separate run).\n")
        L.append("| benchmark | C samples | C ns/sample | OCaml samples | OCaml ns/sample | "
                 "ratio C/OCaml | 95% CI |")
        L.append("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for n, r in results.items():
            cps = r.get("analysis", {}).get("cost_per_sample")
            if not cps:
                continue
            f = lambda x: "n/a" if x is None else f"{x:.0f}"  # noqa: E731
            rt, ci = cps["ratio_c_over_ocaml"], cps.get("ratio_ci")
            L.append(f"| {n} | {cps['c']['samples']} | {f(cps['c']['ns_per_sample'])} | "
                     f"{cps['ocaml']['samples']} | {f(cps['ocaml']['ns_per_sample'])} | "
                     f"{'n/a' if rt is None else f'{rt:.3f}'} | "
                     f"{'unresolved' if ci is None else f'[{ci[0]:.3f}, {ci[1]:.3f}]'} |")
        L.append("")

    if callgrind is not None:
        L.append("## Instruction counts (callgrind)\n")
        L.append(f"C tracker at {rate_key(CALLGRIND_RATE)} against off (same patched binary), "
                 "and the patched-built binary with OCAMLMEMPROF unset against the "
                 "stock-built one. † = several domains/systhreads: valgrind serialises them "
                 "and counts vary between runs.\n")
        L.append("| benchmark | size | off Ir | C@1e-4 Ir | C/off | stock Ir | patched/stock |")
        L.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for n, e in callgrind.items():
            c = e["configs"]

            def ir(x):
                return "error" if x["median"] is None else f"{x['median']:,.0f}"

            def rt(v, rng):
                if v is None:
                    return "error"
                s = f"{v:.4f}"
                if rng:
                    s += f" [{rng[0]:.4f}–{rng[1]:.4f}]"
                return s
            mark = " †" if e["concurrent"] else ""
            L.append(f"| {n}{mark} | {e['size']} | {ir(c['off'])} | {ir(c['c_1e-4'])} | "
                     f"{rt(e['ratio_c_over_off'], e.get('range_c_over_off'))} | "
                     f"{ir(c['stock'])} | "
                     f"{rt(e['ratio_patched_over_stock'], e.get('range_patched_over_stock'))} |")
        L.append("")
        if any("cost_per_sample" in e for e in callgrind.values()):
            L.append(f"### Per-sample cost at {rate_key(COST_RATE)} in instructions\n")
            L.append("(Ir_on − Ir_off) / samples for each tracker against its own binary "
                     "with profiling off, size argument × "
                     f"{next(iter(callgrind.values()))['cost_scale']}.\n")
            L.append("| benchmark | size | C samples | C Ir/sample | OCaml samples | "
                     "OCaml Ir/sample | ratio C/OCaml |")
            L.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for n, e in callgrind.items():
                cp = e.get("cost_per_sample")
                if not cp:
                    continue
                f = lambda x: "n/a" if x is None else f"{x:,.0f}"  # noqa: E731
                rt = cp["ratio_c_over_ocaml"]
                mark = " †" if e["concurrent"] else ""
                L.append(f"| {n}{mark} | {e['configs']['cost_c_off']['size']} | "
                         f"{f(cp['c']['samples'])} | {f(cp['c']['ir_per_sample'])} | "
                         f"{f(cp['ocaml']['samples'])} | {f(cp['ocaml']['ir_per_sample'])} | "
                         f"{'n/a' if rt is None else f'{rt:.4f}'} |")
            L.append("")
        errs = [(n, x) for n, e in callgrind.items() for x in e["errors"]]
        if errs:
            L.append("Callgrind errors:\n")
            L += [f"- {n}: {x}" for n, x in errs]
            L.append("")

    errs = [(n, r["error"]) for n, r in results.items() if "error" in r]
    if errs:
        L.append("## Errors\n")
        L += [f"- {n}: {x}" for n, x in errs]
        L.append("")
    L.append("Plot: `overhead.svg`. Raw numbers: `overhead.json`.\n")
    write_atomic(path, "\n".join(L))


def write_svg(path: str, results: dict, rates: list[float]) -> None:
    """Overhead against rate (log x), per tracker: median over benchmarks, with
    min-max bars.  y is the time ratio on/off on a log scale, labelled as
    overhead, so negative (noise) and very large overheads both fit."""
    W, H = 820, 500
    ml, mr, mt, mb = 80, 30, 58, 60
    pw, ph = W - ml - mr, H - mt - mb
    ks = [rate_key(r) for r in rates]
    series = {}
    for tracker in ("c", "ocaml"):
        pts = []
        for r, k in zip(rates, ks):
            v = [1 + res["analysis"][tracker][k]["overhead"] for res in results.values()
                 if "analysis" in res]
            v = [x for x in v if x > 0]
            if v:
                pts.append((r, statistics.median(v), min(v), max(v)))
        series[tracker] = pts
    allv = [y for pts in series.values() for p in pts for y in p[1:]] + [0.99, 1.12]
    ylo, yhi = math.log10(min(allv)), math.log10(max(allv))
    pad = (yhi - ylo) * 0.06
    ylo, yhi = ylo - pad, yhi + pad
    xlo = math.log10(min(rates)) - 0.35
    xhi = math.log10(max(rates)) + 0.35

    def X(r):
        return ml + (math.log10(r) - xlo) / (xhi - xlo) * pw

    def Y(v):
        return mt + (yhi - math.log10(v)) / (yhi - ylo) * ph

    def esc(s):
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">'
         f'memprof-ci profiling overhead vs sampling rate</text>',
         f'<text x="{W / 2}" y="42" text-anchor="middle" font-size="12" fill="#555">'
         f'median over {sum(1 for r in results.values() if "analysis" in r)} benchmarks; '
         f'bars: min–max; y: time ratio on/off (log scale)</text>']
    # y ticks, most important first; skip those too close to an accepted one.
    cands = [1, 1.01, 1.1, 2, 10, 100, 1000, 0.9, 0.5, 1.02, 1.05, 1.2, 1.5, 3, 5, 20, 50,
             200, 500, 0.95, 0.98, 0.99, 0.8]
    acc = []
    for t in cands:
        if ylo <= math.log10(t) <= yhi and all(abs(Y(t) - Y(a)) >= 16 for a in acc):
            acc.append(t)
    for t in sorted(acc):
        y = Y(t)
        lab = "0%" if t == 1 else f"{(t - 1) * 100:+.0f}%" if abs(t - 1) >= 0.1 \
            else f"{(t - 1) * 100:+g}%"
        o.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        o.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(lab)}</text>')
    for r, k in zip(rates, ks):
        x = X(r)
        o.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" stroke="#eeeeee"/>')
        o.append(f'<text x="{x:.1f}" y="{mt + ph + 18}" text-anchor="middle">{k}</text>')
    # Targets at 1e-4.
    for t, lab, dy in ((1.01, "+1%: median target at 1e-4", 13),
                       (1.10, "+10%: max target at 1e-4", -4)):
        if ylo <= math.log10(t) <= yhi:
            o.append(f'<line x1="{ml}" y1="{Y(t):.1f}" x2="{ml + pw}" y2="{Y(t):.1f}" '
                     f'stroke="#999" stroke-dasharray="5,4"/>')
            o.append(f'<text x="{ml + pw - 4}" y="{Y(t) + dy:.1f}" text-anchor="end" '
                     f'font-size="11" fill="#777" stroke="white" stroke-width="3" '
                     f'paint-order="stroke">{lab}</text>')
    o.append(f'<line x1="{ml}" y1="{Y(1):.1f}" x2="{ml + pw}" y2="{Y(1):.1f}" '
             f'stroke="#444" stroke-width="1"/>' if ylo <= 0 <= yhi else "")
    o.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{ml + pw / 2}" y="{H - 16}" text-anchor="middle">'
             f'sampling rate (samples per word, log scale)</text>')
    o.append(f'<text transform="translate(20,{mt + ph / 2}) rotate(-90)" '
             f'text-anchor="middle">overhead (on/off − 1)</text>')
    style = {"c": ("#1f5fbf", "C tracker (built-in)", -5),
             "ocaml": ("#d2551e", "OCaml-level Gc.Memprof tracker", 5)}
    for tracker, pts in series.items():
        col, _, dx = style[tracker]
        if len(pts) > 1:
            o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
                col, " ".join(f"{X(r) + dx:.1f},{Y(m):.1f}" for r, m, _, _ in pts)))
        for r, m, lo, hi in pts:
            x = X(r) + dx
            o.append(f'<line x1="{x:.1f}" y1="{Y(lo):.1f}" x2="{x:.1f}" y2="{Y(hi):.1f}" '
                     f'stroke="{col}" stroke-width="1.5"/>')
            for v in (lo, hi):
                o.append(f'<line x1="{x - 4:.1f}" y1="{Y(v):.1f}" x2="{x + 4:.1f}" '
                         f'y2="{Y(v):.1f}" stroke="{col}" stroke-width="1.5"/>')
            o.append(f'<circle cx="{x:.1f}" cy="{Y(m):.1f}" r="4" fill="{col}"/>')
            o.append(f'<text x="{x + (8 if dx > 0 else -8):.1f}" y="{Y(m) + 4:.1f}" '
                     f'text-anchor="{"start" if dx > 0 else "end"}" font-size="11" '
                     f'font-weight="bold" fill="{col}" stroke="white" stroke-width="3" '
                     f'paint-order="stroke">{esc(pct(m - 1))}</text>')
    lx, ly = ml + 12, mt + 16
    o.append(f'<rect x="{lx - 6}" y="{ly - 13}" width="262" height="44" fill="white" '
             f'fill-opacity="0.9" stroke="#ccc"/>')
    for i, tracker in enumerate(("c", "ocaml")):
        col, lab, _ = style[tracker]
        y = ly + i * 20
        o.append(f'<line x1="{lx}" y1="{y - 4}" x2="{lx + 22}" y2="{y - 4}" stroke="{col}" '
                 f'stroke-width="2"/><circle cx="{lx + 11}" cy="{y - 4}" r="4" fill="{col}"/>')
        o.append(f'<text x="{lx + 30}" y="{y}">{esc(lab)}</text>')
    o.append("</svg>")
    write_atomic(path, "\n".join(x for x in o if x) + "\n")


# ---- Main ---------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description="memprof-ci overhead study (make bench-overhead)")
    p.add_argument("--manifest", default=os.path.join(ROOT, "benchmarks", "benchmarks.toml"))
    p.add_argument("--out", default=os.path.join(ROOT, "_build", "overhead"))
    p.add_argument("--only", default="", help="comma-separated benchmark names")
    p.add_argument("--rates", default=None,
                   help="comma-separated sampling rates (default 1e-5,1e-4,1e-3,1e-2)")
    p.add_argument("--runs", type=int, default=None, help="timed rounds per variant (default 5)")
    p.add_argument("--warmup", type=int, default=None, help="warmup runs per variant (default 1)")
    p.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    p.add_argument("--callgrind-scale", type=float, default=1.0,
                   help="factor applied to the size argument under valgrind (default 1: "
                        "the suite's own size, so that fixed costs at exit weigh as they "
                        "do in the check)")
    p.add_argument("--callgrind-cost-scale", type=float, default=0.25,
                   help="size factor of the per-sample instruction-cost runs at 1e-2 "
                        "(default 0.25)")
    p.add_argument("--no-callgrind-cost", action="store_true",
                   help="skip the per-sample instruction cost (C vs OCaml tracker at 1e-2)")
    p.add_argument("--callgrind-repeats", type=int, default=3,
                   help="callgrind runs per config of the multi-domain/thread benchmarks")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="parallel callgrind runs (timing is always sequential)")
    p.add_argument("--stock-dir", default=os.path.join(ROOT, "_build", "benchmarks-stock"),
                   help="stock-built benchmarks (make stock-benchmarks)")
    p.add_argument("--reanalyse", metavar="JSON",
                   help="recompute verdicts and report from an earlier overhead.json "
                        "(written to --out) without running anything")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: rates {','.join(map(rate_key, QUICK_RATES))}, 3 runs, "
                        f"no warmup, callgrind scales 0.1 and 0.05 (each unless given "
                        f"explicitly)")
    a = p.parse_args(argv)
    # Benchmarks run in their own cwd: every path handed to them must be absolute.
    a.out, a.stock_dir = os.path.abspath(a.out), os.path.abspath(a.stock_dir)
    if a.rates:
        try:
            a.rates = sorted({float(x) for x in a.rates.split(",") if x.strip()})
        except ValueError:
            p.error(f"--rates: not a list of numbers: {a.rates!r}")
        if not a.rates or not all(0 < r <= 1 for r in a.rates):
            p.error("--rates: each rate must be in (0, 1]")
    else:
        a.rates = list(QUICK_RATES if a.quick else DEFAULT_RATES)
    if a.runs is None:
        a.runs = 3 if a.quick else 5
    if a.warmup is None:
        a.warmup = 0 if a.quick else 1
    if a.quick and a.callgrind_scale == 1.0:
        a.callgrind_scale = 0.1
    if a.quick and a.callgrind_cost_scale == 0.25:
        a.callgrind_cost_scale = 0.05
    if a.runs < 1 or a.warmup < 0 or a.jobs < 1 or a.callgrind_repeats < 1:
        p.error("--runs, --jobs and --callgrind-repeats must be >= 1, --warmup >= 0")
    return a


def write_outputs(out: str, meta: dict, summary: list[dict], results: dict,
                  rates: list[float], cg: dict | None) -> None:
    write_atomic(os.path.join(out, "overhead.json"),
                 json.dumps({"meta": meta, "summary": summary, "benchmarks": results,
                             "callgrind": cg}, indent=1))
    write_markdown(os.path.join(out, "overhead.md"), meta, results, rates, cg, summary)
    write_svg(os.path.join(out, "overhead.svg"), results, rates)
    for row in summary:
        log(f"{row['verdict']:4}  {row['metric']}: {row['shown']} (target {row['target']})")
    log(f"wrote {os.path.join(out, 'overhead.md')}, overhead.json, overhead.svg")


def reanalyse(path: str, out: str) -> int:
    """Recompute the analysis, verdicts and report of an earlier run from the
    raw times and counts in its overhead.json; nothing is run again."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
        meta, results, cg = doc["meta"], doc["benchmarks"], doc["callgrind"]
        missing = [k for k in ("finished", "command_line", "duration_s", "nproc",
                               "hyperfine", "runs", "warmup", "patch_id") if k not in meta]
        if missing:       # the report quotes each of these
            raise KeyError(", ".join(missing))
        rates = [float(k) for k in meta["rates"]]
        for r in results.values():
            if "timing" in r:
                r["analysis"] = analyse_timing(r["timing"], r["preflight"], rates)
    except (OSError, ValueError, KeyError, TypeError) as e:
        die(f"--reanalyse {path}: not an overhead.json written by this script ({e}); "
            f"run `make bench-overhead` to make one")
    meta["reanalysed"] = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    os.makedirs(out, exist_ok=True)
    write_outputs(out, meta, summarise(results, rates, cg), results, rates, cg)
    return 0


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.reanalyse:
        return reanalyse(a.reanalyse, a.out)
    started = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    try:
        _, benches = load_manifest(a.manifest)
        if a.only:
            want = [x.strip() for x in a.only.split(",") if x.strip()]
            unknown = [w for w in want if w not in {b["name"] for b in benches}]
            if unknown:
                raise StudyError(f"--only: unknown benchmark(s) {', '.join(unknown)}")
            benches = [b for b in benches if b["name"] in want]
        check_binaries(benches, a.stock_dir, not a.no_callgrind)
    except StudyError as e:
        die(str(e))
    os.makedirs(a.out, exist_ok=True)
    patch_id_file = os.path.join(ROOT, "_build", "runtime", "patch-id")
    meta = {
        "command_line": shlex.join([os.path.relpath(sys.argv[0], ROOT)
                                    if os.path.isabs(sys.argv[0]) else sys.argv[0],
                                    *(argv if argv is not None else sys.argv[1:])]),
        "started": started, "nproc": os.cpu_count(), "rates": [rate_key(r) for r in a.rates],
        "runs": a.runs, "warmup": a.warmup, "seed": SEED, "ci_method": CI_METHOD,
        "hyperfine": tool_version(["hyperfine", "--version"]),
        "valgrind": None if a.no_callgrind else tool_version(["valgrind", "--version"]),
        "callgrind_scale": None if a.no_callgrind else a.callgrind_scale,
        "callgrind_repeats": None if a.no_callgrind else a.callgrind_repeats,
        "patch_id": open(patch_id_file).read().strip() if os.path.isfile(patch_id_file)
        else None,
        "stock_dir": a.stock_dir,
        "targets": {"wall_median_1e-4": TARGET_MEDIAN_1E4, "wall_max_1e-4": TARGET_MAX_1E4,
                    "cost_ratio_1e-2": TARGET_COST_RATIO,
                    "stock_ratio_max": TARGET_STOCK_RATIO},
    }
    results: dict = {}
    failed = False
    with tempfile.TemporaryDirectory(prefix="overhead-", dir=a.out) as tmp:
        log(f"timing {len(benches)} benchmark(s) x {len(a.rates)} rate(s) x 2 trackers, "
            f"{a.runs} round(s)")
        t_phase = time.monotonic()
        for i, b in enumerate(benches):
            exes = variant_exes(b, a.stock_dir)
            entry = results[b["name"]] = {"command": b["argv"], "cwd": b["cwd"]}
            try:
                pre = preflight(b, exes, a.rates, tmp)
                timing = time_benchmark(b, exes, a.rates, a.runs, a.warmup, tmp)
                entry["preflight"] = pre
                entry["timing"] = timing
                entry["analysis"] = analyse_timing(timing, pre, a.rates)
                an = entry["analysis"]
                log(f"[{i + 1}/{len(benches)}] {b['name']}: C " + ", ".join(
                    f"{k} {pct(an['c'][k]['overhead'])}" for k in an["c"]) + " | OCaml " +
                    ", ".join(f"{k} {pct(an['ocaml'][k]['overhead'])}" for k in an["ocaml"]))
            except (StudyError, subprocess.SubprocessError, OSError) as e:
                entry["error"] = str(e)
                failed = True
                log(f"[{i + 1}/{len(benches)}] {b['name']}: ERROR {e}")
        meta["timing_s"] = time.monotonic() - t_phase
        cg = None
        if not a.no_callgrind:
            t_phase = time.monotonic()
            cg = run_callgrind(benches, a.stock_dir, a.callgrind_scale, a.callgrind_cost_scale,
                               a.callgrind_repeats, a.jobs, tmp, not a.no_callgrind_cost)
            meta["callgrind_s"] = time.monotonic() - t_phase
            for n, e in cg.items():
                if e["errors"]:
                    failed = True
                    log(f"callgrind {n}: " + "; ".join(e["errors"]))
                else:
                    log(f"callgrind {n}: C/off {e['ratio_c_over_off']:.4f}, "
                        f"patched/stock {e['ratio_patched_over_stock']:.4f}")
    summary = summarise(results, a.rates, cg)
    meta["finished"] = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    meta["duration_s"] = time.monotonic() - T0
    write_outputs(a.out, meta, summary, results, a.rates, cg)
    if failed:
        print("overhead_study: some measurements failed; see the Errors section of "
              "overhead.md", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
