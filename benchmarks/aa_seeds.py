"""A/A over disjoint seed sets: how often the gate alarms on unchanged code.

Any change to a program shifts the sampler's stream, so an A/A comparison
that means something uses other seeds than the baseline's: here the
committed baselines (seeds 1-3, with their GC-schedule spread) against SETS
runs of the same binaries with seeds 3k+1..3k+3 for k = 1..SETS, each
compared as `memprof-ci compare baselines RUN/profiles` compares (every
check but overhead).  A benchmark whose baseline is counted exactly is
sampled here with the other seeds (its plan is made for seeds 1-3), so its
rows compare sampled estimates against exact counts.

Usage (from the repository root, after `make runtime benchmarks`):

    /usr/bin/python3 benchmarks/aa_seeds.py SETS

Prints one line per comparison with the checks that alarmed, then the
count of comparisons with any alarm.

    /usr/bin/python3 benchmarks/aa_seeds.py SETS --pairs

compares the sets' profile directories with each other instead, every
pair (`memprof-ci compare setI/profiles setJ/profiles`): no baseline, so
no recorded schedule spread, only the runs' own.  A measurement, not a test: nothing is
asserted; exit 2 when a run or a comparison fails to produce a report.
"""

import json
import os
import re
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "benchmarks", "benchmarks.toml")
OUT = os.path.join(ROOT, "_build", "aa-seeds")
HARNESS = [os.environ.get("MEMPROF_CI_PYTHON", "/usr/bin/python3"), "-m", "memprof_ci"]
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "harness"))


def seeds_manifest(k: int) -> str:
    """The suite's manifest with the seeds of set k, beside the original so
    that its relative commands resolve the same."""
    text = open(MANIFEST).read()
    seeds = [3 * k + 1, 3 * k + 2, 3 * k + 3]
    new, n = re.subn(r"(?m)^seeds = \[1, 2, 3\]$", f"seeds = {seeds}", text)
    if n != 1:
        raise SystemExit("aa_seeds: the manifest's [defaults] has no `seeds = [1, 2, 3]` line")
    path = os.path.join(ROOT, "benchmarks", f".aa-seeds-{k}.toml")
    with open(path, "w") as fh:
        fh.write(new)
    return path


def profile_set(k: int) -> str:
    """The run directory of set k, profiled (seeds 3k+1..3k+3)."""
    run = os.path.join(OUT, f"set{k}")
    base = seeds_manifest(k)
    try:
        r = subprocess.run([*HARNESS, "profile", "--manifest", MANIFEST, "--base-manifest", base,
                            "--out", run, "--no-overhead", "-q"], cwd=ROOT, env=ENV,
                           capture_output=True, text=True)
    finally:
        os.unlink(base)
    if r.returncode != 0:
        raise SystemExit(f"aa_seeds: set {k}: profile exited {r.returncode}: {r.stderr[-400:]}")
    return run


def timing_tolerance() -> str:
    """The manifest's gc_timing_tolerance for its concurrent benchmarks (the
    largest), which `compare`, having no manifest, is told: it applies it
    to the benchmarks whose runs saw several schedules, as the check
    applies each one's own."""
    with open(MANIFEST, "rb") as fh:
        doc = tomllib.load(fh)
    default = doc.get("defaults", {}).get("gc_timing_tolerance", 0.10)
    return str(max([b.get("gc_timing_tolerance", default) for b in doc.get("benchmark", [])
                    if b.get("concurrent")] or [default]))


def alarms(a: str, b: str, rep: str, what: str) -> list:
    """The alarms (benchmark::check) of `memprof-ci compare a b`."""
    r = subprocess.run([*HARNESS, "compare", a, b, "--report-dir", rep,
                        "--gc-timing-tolerance", timing_tolerance()], cwd=ROOT, env=ENV,
                       capture_output=True, text=True)
    if r.returncode not in (0, 1) or not os.path.exists(os.path.join(rep, "report.json")):
        raise SystemExit(f"aa_seeds: {what}: compare exited {r.returncode}: {r.stderr[-400:]}")
    doc = json.load(open(os.path.join(rep, "report.json")))
    return sorted(f"{name}::{check}" for name, b in doc["benchmarks"].items()
                  for check, c in (b.get("checks") or {}).items() if c.get("outcome") == "failed")


def one_set(k: int) -> list:
    """The alarms (benchmark::check) of set k against the baselines."""
    run = profile_set(k)
    return alarms("baselines", os.path.join(run, "profiles"), os.path.join(run, "compare"),
                  f"set {k}")


def pairs(sets: int) -> int:
    """Every pair of the sets' profile directories compared (no baseline,
    so no recorded schedule spread); prints each pair's alarms."""
    runs = [profile_set(k) for k in range(1, sets + 1)]
    alarmed = n = 0
    for i in range(sets):
        for j in range(i + 1, sets):
            got = alarms(os.path.join(runs[i], "profiles"), os.path.join(runs[j], "profiles"),
                         os.path.join(OUT, f"compare-{i + 1}-{j + 1}"), f"sets {i + 1}, {j + 1}")
            alarmed, n = alarmed + bool(got), n + 1
            print(f"set {i + 1} against set {j + 1}: " + (", ".join(got) or "no alarm"),
                  flush=True)
    print(f"{alarmed} of {n} pairs alarmed")
    return 0


def main(args: list) -> int:
    paired = args[1:] == ["--pairs"]
    if len(args) != 1 + paired or not args[0].isdigit() or not 1 <= int(args[0]) <= 30 or \
            (paired and int(args[0]) < 2):
        print("aa_seeds.py: usage: aa_seeds.py SETS (1..30) [--pairs (SETS >= 2)]",
              file=sys.stderr)
        return 2
    sets = int(args[0])
    if paired:
        return pairs(sets)
    alarmed = 0
    for k in range(1, sets + 1):
        alarms = one_set(k)
        alarmed += bool(alarms)
        seeds = f"{3 * k + 1}-{3 * k + 3}"
        print(f"seeds {seeds} against 1-3: " + (", ".join(alarms) if alarms else "no alarm"),
              flush=True)
    print(f"{alarmed} of {sets} comparisons alarmed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
