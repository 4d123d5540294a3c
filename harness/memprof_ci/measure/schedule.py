"""The GC's schedule: runs that move it, and the spread they measure.

Allocation per site does not depend on when the minor and major
collections fall (seeded sampling is GC-independent), but promotion, major
words, the major heap's top and what is live at the peak do, and any small
change moves those moments: a few more words allocated at startup (a longer
build directory), a site allocating 1% more.  A baseline is one draw of
that schedule; this module records how far the draws spread, so the
judgement (stats.gc_spread_rows, stats.schedule_adjust) can tell a change
of retention from a moved schedule.

The dithers: `update-baselines` runs each benchmark SCHEDULE_RUNS more
times, profiled with its first seed, each run with
- the minor heap a little smaller or larger (OCAMLRUNPARAM `s=`, evenly
  spread over +-MINOR_SPAN around the benchmark's own size, rounded to the
  runtime's page of 512 words): every collection falls a little earlier or
  later in the program, as when the program allocates a little more or
  less; and
- a startup offset: argv[0] padded with slashes (the same file; the runtime
  allocates argv[0] at startup, one word per 8 bytes), as a longer build
  directory does.
For a single-domain program the seeded samples depend on neither the minor
heap size nor the GC, and profiling moves no collection, so each run's GC
counters are the unprofiled run's under that schedule.  Nothing here reads
what is live at exit, so the dithered runs skip the exit's walk of the heap
(OCAMLMEMPROF `live=off`): the GC counters and the peak are taken before it.

Invariants: the dithers are a fixed function of the benchmark's command
and environment (the same on every machine); the section written into a
baseline (section()) lists one value per run for every GC counter and the
peak total, and per site only the sites live at the peak in some run, each
with one count per run; parse_section validates all of it and never
returns a partial section.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import re

from . import runner
from ..inputs import validate as V
from ..errors import ConfigError, InputError
from ..inputs.profile import GC_KEYS, GC_OPTIONAL_KEYS

SCHEDULE_RUNS = 12          # dithered runs per benchmark at update-baselines
MINOR_SPAN = 0.03           # minor heap sizes over [-3%, +3%] of the benchmark's own
DEFAULT_MINOR_WORDS = 262144  # OCaml 5.3's minor heap (words) when `s` is not set
PAGE_WORDS = 512            # the runtime rounds the minor heap up to a page
MAX_RUNS = 1000
_S_RE = re.compile(r"^s=([0-9]+)([kMG]?)$")


def _runparam(env: dict) -> str:
    """The runtime's parameters as the program will read them."""
    v = env.get("OCAMLRUNPARAM")
    return v if v is not None else env.get("CAMLRUNPARAM", "")


def minor_words(runparam: str) -> int:
    """The minor heap size (words) a run with these OCAMLRUNPARAM settings
    gets: the last `s=` setting, else the runtime's default."""
    out = DEFAULT_MINOR_WORDS
    for item in runparam.split(","):
        m = _S_RE.match(item.strip())
        if m:
            out = int(m.group(1)) * {"": 1, "k": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
    return out


def dithers(bench, runs: int = SCHEDULE_RUNS) -> list:
    """The runs' schedules: [{"minor_heap_words": s, "argv_pad_words": p}]."""
    base = minor_words(_runparam(runner.bench_env(bench)))
    out = []
    for j in range(runs):
        rel = MINOR_SPAN * (2 * (j + 0.5) / runs - 1)
        s = max(PAGE_WORDS, int(math.ceil(base * (1 + rel) / PAGE_WORDS)) * PAGE_WORDS)
        out.append({"minor_heap_words": s, "argv_pad_words": (5 * j) % runs})
    return out


def padded_argv0(argv0: str, pad_words: int) -> str | None:
    """argv[0] naming the same file with 8 * pad_words more bytes (slashes
    doubled after the first one); None when it has no slash to pad."""
    i = argv0.find("/")
    if i < 0 or pad_words <= 0:
        return None
    return argv0[:i + 1] + "/" * (8 * pad_words) + argv0[i + 1:]


def run_env(bench, d: dict) -> tuple:
    """(extra environment, argv[0]) of one dithered run."""
    rp = _runparam(runner.bench_env(bench))
    value = (rp + "," if rp else "") + f"s={d['minor_heap_words']}"
    return {"OCAMLRUNPARAM": value}, padded_argv0(runner.program_argv0(bench), d["argv_pad_words"])


def runs_wanted() -> int:
    """SCHEDULE_RUNS, or MEMPROF_CI_SCHEDULE_RUNS when set: 0 records no
    spread (the baseline's GC and peak checks then use the fixed tolerance
    and the sampling test), else 2 to MAX_RUNS."""
    v = os.environ.get("MEMPROF_CI_SCHEDULE_RUNS")
    if v is None:
        return SCHEDULE_RUNS
    if not (v.isdigit() and (int(v) == 0 or 2 <= int(v) <= MAX_RUNS)):
        raise ConfigError(f"MEMPROF_CI_SCHEDULE_RUNS must be 0 or an integer in [2, {MAX_RUNS}], "
                          f"got {v[:40]!r}")
    return int(v)


def measure(bench, out_dir: str, runs: int | None = None) -> dict | None:
    """Run the dithered runs of `bench` and return the baseline's section
    (None when no runs are wanted)."""
    runs = runs_wanted() if runs is None else runs
    if runs == 0:
        return None
    seed = bench.seeds[0]

    def one(j_d):
        env, argv0 = run_env(bench, j_d[1])
        return runner.collect_one(bench, seed, os.path.join(out_dir, "schedule"), env,
                                  argv0, f".d{j_d[0]}")
    # Two at a time on a single-domain benchmark: its GC counters and peak
    # do not depend on timing.  A concurrent one's do, so it runs alone.
    workers = 1 if bench.concurrent else min(2, os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        aggs = list(pool.map(one, enumerate(dithers(bench, runs))))
    return section(aggs, dithers(bench, runs), seed)


def section(aggs: list, used: list, seed: int) -> dict:
    """The baseline's "schedule" section from the dithered runs' Aggregates."""
    out = {"runs": len(aggs), "seed": seed, "dithers": used,
           "gc": [dict(a.gc) for a in aggs]}
    if all(a.total_peak is not None for a in aggs):
        out["peak_samples"] = [a.total_peak for a in aggs]
        keys = sorted({k for a in aggs for k, s in a.sites.items() if s.peak_samples})
        out["sites"] = {k: [a.sites[k].peak_samples if k in a.sites else 0 for a in aggs]
                        for k in keys}
    return out


def _counts(v, n: int, where: str) -> list:
    if not (isinstance(v, list) and len(v) == n):
        raise InputError(f"{where} must be a list of {n} counts")
    return [V.count(x, f"{where}[{i}]") for i, x in enumerate(v)]


def _gc_run(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise InputError(f"{where} must be an object")
    out = {k: V.finite(d[k], f"{where}.{k}", lo=0, hi=V.MAX_COUNT)
           for k in GC_KEYS + GC_OPTIONAL_KEYS if k in d}
    missing = [k for k in GC_KEYS if k not in out]
    if missing:
        raise InputError(f"{where}.{missing[0]} is missing")
    return out


def parse_section(doc) -> dict:
    """A baseline's "schedule" section, validated (InputError otherwise)."""
    if not isinstance(doc, dict):
        raise InputError("schedule must be an object")
    n = doc.get("runs")
    if not (V.is_count(n) and 2 <= n <= MAX_RUNS):
        raise InputError(f"schedule.runs must be an integer in [2, {MAX_RUNS}]")
    gc = doc.get("gc")
    if not (isinstance(gc, list) and len(gc) == n):
        raise InputError(f"schedule.gc must list {n} runs")
    used = doc.get("dithers")
    if not (isinstance(used, list) and len(used) == n and all(isinstance(d, dict) for d in used)):
        raise InputError(f"schedule.dithers must list {n} objects")
    out = {"runs": n, "seed": V.count(doc.get("seed"), "schedule.seed"),
           "dithers": [{k: V.count(d.get(k), f"schedule.dithers[{i}].{k}")
                        for k in ("minor_heap_words", "argv_pad_words")}
                       for i, d in enumerate(used)],
           "gc": [_gc_run(g, f"schedule.gc[{i}]") for i, g in enumerate(gc)]}
    if "live_samples" in doc:
        # Each run's live total at exit, which a baseline may carry: read by
        # nothing, still checked.
        out["live_samples"] = _counts(doc["live_samples"], n, "schedule.live_samples")
    if "peak_samples" in doc:
        out["peak_samples"] = _counts(doc["peak_samples"], n, "schedule.peak_samples")
        sites = doc.get("sites")
        if not isinstance(sites, dict):
            raise InputError("schedule.sites must be an object")
        out["sites"] = {V.text(k, "schedule.sites key"): _counts(v, n, f"schedule.sites[{k[:80]!r}]")
                        for k, v in sites.items()}
    return out

