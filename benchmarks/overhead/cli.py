"""The overhead study's command line: options, the run, --reanalyse, outputs.

main parses the options, loads the manifest with memprof_ci.inputs.manifest (the
harness's reader: same keys, same checks, same defaults), checks that every
binary and tool is there, times each benchmark (phase 1), counts
instructions (phase 2, unless --no-callgrind), summarises and writes
overhead.json, overhead.md and overhead.svg to --out.
Invariants:
* Exit status 0 when everything was measured; 2 with a message on stderr
  when the manifest, an option, a binary or a tool is wrong (nothing run:
  one line, or argparse's usage and error for an option); 2 after writing
  the outputs when a benchmark failed while being measured.
* Timed phases run one process at a time; only callgrind runs in parallel.
* Every path handed to a benchmark is absolute (benchmarks run in their own
  cwd).
* `--reanalyse JSON` reads only that file: it recomputes analysis, verdicts
  and the three outputs from the stored raw times and counts, adds
  meta.reanalysed, and runs nothing.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

from memprof_ci.inputs.atomicio import write_atomic
from memprof_ci.errors import ConfigError
from memprof_ci.inputs.manifest import load_manifest

from .analysis import analyse_timing, summarise
from .common import (CI_METHOD, DEFAULT_RATES, PROG, QUICK_RATES, SEED, T0,
                     TARGET_COST_RATIO, TARGET_MAX_1E4, TARGET_MEDIAN_1E4, TARGET_STOCK_RATIO,
                     StudyError, die, log, pct, rate_key)
from .instructions import run_callgrind
from .plot_svg import write_svg
from .programs import ROOT, check_binaries, tool_version, variant_exes
from .render_md import write_markdown
from .timing import preflight, time_benchmark

# How the report quotes the command that produced it (run from the root).
COMMAND = f"PYTHONPATH=harness:benchmarks python3 -m {PROG}"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog=f"python3 -m {PROG}",
                                description="memprof-ci overhead study (make bench-overhead)")
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


def now() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


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
        die(f"--reanalyse {path}: not an overhead.json written by this study ({e}); "
            f"run `make bench-overhead` to make one")
    meta["reanalysed"] = now()
    os.makedirs(out, exist_ok=True)
    write_outputs(out, meta, summarise(results, rates, cg), results, rates, cg)
    return 0


def select(manifest: str, only: str) -> list:
    """The manifest's benchmarks, narrowed to --only; StudyError or
    ConfigError when the manifest or a name is wrong."""
    benches = load_manifest(manifest).benchmarks
    if only:
        want = [x.strip() for x in only.split(",") if x.strip()]
        unknown = [w for w in want if w not in {b.name for b in benches}]
        if unknown:
            raise StudyError(f"--only: unknown benchmark(s) {', '.join(unknown)}")
        benches = [b for b in benches if b.name in want]
    return benches


def run_meta(a, argv, started: str) -> dict:
    patch_id_file = os.path.join(ROOT, "_build", "runtime", "patch-id")
    args = argv if argv is not None else sys.argv[1:]
    return {
        "command_line": f"{COMMAND} {shlex.join(args)}".rstrip(),
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


def time_all(benches: list, a, tmp: str, results: dict) -> bool:
    """Phase 1 for every benchmark, one at a time, into `results`; True when
    one failed (its entry then has `error`)."""
    failed = False
    log(f"timing {len(benches)} benchmark(s) x {len(a.rates)} rate(s) x 2 trackers, "
        f"{a.runs} round(s)")
    for i, b in enumerate(benches):
        exes = variant_exes(b, a.stock_dir)
        entry = results[b.name] = {"command": b.command, "cwd": b.cwd}
        try:
            pre = preflight(b, exes, a.rates, tmp)
            timing = time_benchmark(b, exes, a.rates, a.runs, a.warmup, tmp)
            entry["preflight"] = pre
            entry["timing"] = timing
            entry["analysis"] = analyse_timing(timing, pre, a.rates)
            an = entry["analysis"]
            log(f"[{i + 1}/{len(benches)}] {b.name}: C " + ", ".join(
                f"{k} {pct(an['c'][k]['overhead'])}" for k in an["c"]) + " | OCaml " +
                ", ".join(f"{k} {pct(an['ocaml'][k]['overhead'])}" for k in an["ocaml"]))
        except (StudyError, subprocess.SubprocessError, OSError) as e:
            entry["error"] = str(e)
            failed = True
            log(f"[{i + 1}/{len(benches)}] {b.name}: ERROR {e}")
    return failed


def count_all(benches: list, a, tmp: str) -> tuple[dict, bool]:
    """Phase 2: the callgrind counts by benchmark, and True when a run failed."""
    cg = run_callgrind(benches, a.stock_dir, a.callgrind_scale, a.callgrind_cost_scale,
                       a.callgrind_repeats, a.jobs, tmp, not a.no_callgrind_cost)
    failed = False
    for n, e in cg.items():
        if e["errors"]:
            failed = True
            log(f"callgrind {n}: " + "; ".join(e["errors"]))
        else:
            log(f"callgrind {n}: C/off {e['ratio_c_over_off']:.4f}, "
                f"patched/stock {e['ratio_patched_over_stock']:.4f}")
    return cg, failed


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.reanalyse:
        return reanalyse(a.reanalyse, a.out)
    started = now()
    try:
        benches = select(a.manifest, a.only)
        check_binaries(benches, a.stock_dir, not a.no_callgrind)
    except (StudyError, ConfigError) as e:
        die(str(e))
    os.makedirs(a.out, exist_ok=True)
    meta = run_meta(a, argv, started)
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="overhead-", dir=a.out) as tmp:
        t_phase = time.monotonic()
        failed = time_all(benches, a, tmp, results)
        meta["timing_s"] = time.monotonic() - t_phase
        cg = None
        if not a.no_callgrind:
            t_phase = time.monotonic()
            cg, cg_failed = count_all(benches, a, tmp)
            failed = failed or cg_failed
            meta["callgrind_s"] = time.monotonic() - t_phase
    summary = summarise(results, a.rates, cg)
    meta["finished"] = now()
    meta["duration_s"] = time.monotonic() - T0
    write_outputs(a.out, meta, summary, results, a.rates, cg)
    if failed:
        print(f"{PROG}: some measurements failed; see the Errors section of "
              "overhead.md", file=sys.stderr)
        return 2
    return 0
