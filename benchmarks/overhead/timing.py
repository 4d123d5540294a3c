"""Phase 1 of the overhead study: wall time with hyperfine.

preflight runs each profiled variant once; time_benchmark times every
variant of one benchmark (C tracker off and at each rate, OCaml tracker off
and at each rate) and returns the raw per-run times.
Invariants: the variants are interleaved by the overhead library's
hyperfine driver (memprof_ci.measure.drivers.hyperfine, the gate's own):
every round runs each variant once (hyperfine -N --runs 1) in a rotated
order, so drift over the measurement hits on and off alike, and the runs
of one round pair up; one process runs at a time; the result
holds every per-run time (nothing is summarised here except each variant's
median); a failure raises StudyError naming the benchmark, or the
subprocess or OS error itself, for the caller to record.
"""

from __future__ import annotations

import glob
import os
import shlex
import statistics
import subprocess

from memprof_ci.inputs.manifest import Benchmark
from memprof_ci.measure.drivers import hyperfine
from memprof_ci.measure.runner import memprof_env_value

from .common import SEED, StudyError, rate_key
from .programs import OCAML_LINE, ROOT, base_env, c_profile_samples


def preflight(bench: Benchmark, exes: dict, rates: list[float], tmp: str) -> dict:
    """One run of each profiled variant: checks that the C tracker writes a
    profile (i.e. the binary really is patched) and reads the OCaml tracker's
    sample counts from its stderr summary line."""
    env = base_env(bench)
    args = bench.command[1:]
    out = {"c_check_samples": None, "ocaml_samples": {}}
    prof = os.path.join(tmp, f"{bench.name}.preflight.json")
    r = subprocess.run(["env", f"OCAMLMEMPROF=rate={max(rates)!r},seed={SEED},"
                        f"frames={bench.frames},out={prof}", exes["patched"], *args],
                       cwd=bench.cwd, env=env, capture_output=True, text=True,
                       timeout=bench.timeout * 3)
    if r.returncode != 0:
        raise StudyError(f"{bench.name}: C-tracker run failed (status {r.returncode}): "
                         f"{r.stderr.strip()[-300:]}")
    if not os.path.isfile(prof):
        raise StudyError(f"{bench.name}: OCAMLMEMPROF set but no profile written: "
                         f"{os.path.relpath(exes['patched'], ROOT)} was not built with the "
                         f"patched runtime (run `make runtime benchmarks`)")
    out["c_check_samples"] = c_profile_samples(prof)
    for rate in rates:
        r = subprocess.run(["env", f"OCAMLMEMPROF_OCAML_RATE={rate!r}", exes["ocamltracker"],
                            *args], cwd=bench.cwd, env=env, capture_output=True,
                           text=True, timeout=bench.timeout * 3)
        m = OCAML_LINE.search(r.stderr)
        if r.returncode != 0 or not m:
            raise StudyError(f"{bench.name}: OCaml-tracker run at {rate_key(rate)} failed "
                             f"(status {r.returncode}, no summary line?): "
                             f"{r.stderr.strip()[-300:]}")
        out["ocaml_samples"][rate_key(rate)] = int(m.group(1))
    return out


def _variants(bench: Benchmark, exes: dict, rates: list[float], tmp: str) -> tuple:
    """(variants, C profile path stem per rate key: each run writes
    <stem>.<pid>.json); a variant is (id, tracker,
    rate key or "off", argv run through `env`)."""
    args = bench.command[1:]
    variants = [("c:off", "c", "off", ["env", exes["patched"], *args])]
    profs = {}
    for rate in rates:
        k = rate_key(rate)
        # One profile per run (%p): replacing the previous run's file
        # would add its removal to the profiled time.
        profs[k] = os.path.join(tmp, f"{bench.name}.{k}")
        variants.append((f"c:{k}", "c", k, [
            "env", "OCAMLMEMPROF=" + memprof_env_value(
                rate, SEED, bench.frames, profs[k] + ".json", per_process=True),
            exes["patched"], *args]))
    variants.append(("ocaml:off", "ocaml", "off", ["env", exes["ocamltracker"], *args]))
    for rate in rates:
        k = rate_key(rate)
        variants.append((f"ocaml:{k}", "ocaml", k, [
            "env", f"OCAMLMEMPROF_OCAML_RATE={rate!r}",
            f"OCAMLMEMPROF_OCAML_OUT={os.path.join(tmp, bench.name + '.ocaml.' + k + '.txt')}",
            exes["ocamltracker"], *args]))
    return variants, profs


def time_benchmark(bench: Benchmark, exes: dict, rates: list[float], runs: int,
                   warmup: int, tmp: str) -> dict:
    """Interleaved hyperfine rounds over all variants of one benchmark:
    {"c"|"ocaml": {"off"|rate key: {command, times_s, median_s[, samples]}}},
    samples being the C profile's count from the last timed run."""
    variants, profs = _variants(bench, exes, rates, tmp)
    times = {v[0]: [] for v in variants}
    n = len(variants)
    limit = bench.timeout * n * (2 + warmup) + 60
    try:
        rounds = hyperfine.interleaved([(vid, argv) for vid, _, _, argv in variants], runs,
                                       step=max(1, n // max(1, runs)), warmup=warmup,
                                       cwd=bench.cwd, env=base_env(bench), timeout=limit)
    except hyperfine.HyperfineError as e:
        raise StudyError(f"{bench.name}: {e}") from None
    for done in rounds:
        for vid, run in done.items():
            times[vid].append(run.wall)
    out = {"c": {}, "ocaml": {}}
    for vid, tracker, k, argv in variants:
        entry = {"command": shlex.join(argv), "times_s": times[vid],
                 "median_s": statistics.median(times[vid])}
        if tracker == "c" and k != "off":
            written = sorted(glob.glob(glob.escape(profs[k]) + ".*.json"))
            entry["samples"] = c_profile_samples(written[-1]) if written else None
        out[tracker][k] = entry
    return out
