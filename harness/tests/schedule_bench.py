"""How often the GC counters' test against the schedule's spread raises a
false alarm on real runs (a measurement, not a test; benchmarks/RESULTS.md,
"Retention against the GC's schedule").

Usage (from the repository root, after `make runtime benchmarks`):

    PYTHONPATH=harness:harness/tests /usr/bin/python3 harness/tests/schedule_bench.py suite 5
    PYTHONPATH=harness:harness/tests /usr/bin/python3 harness/tests/schedule_bench.py ladder 4
    PYTHONPATH=harness:harness/tests /usr/bin/python3 harness/tests/schedule_bench.py retention 2

`suite P`: every benchmark of benchmarks/benchmarks.toml run unprofiled
(OCAMLRUNPARAM=v=0x400 prints the GC counters at exit) from P path lengths,
0 to 8(P-1) characters longer (argv[0] padded with slashes: the same file,
as a longer build directory allocates a longer path at startup); at each,
the run itself and the 12 dithered runs update-baselines makes
(schedule.py).  Each path is judged against each other path's baseline,
exactly as stats.gc_spread_rows judges a check.  `ladder P`:
tests/data/schedule/ladder.ml built at 13 steps (+1% at a site a step),
each from P path lengths, judged against each other path (A/A) and each
step against the previous one.  Prints the number of tests, the false
alarms (significant at Holm's first step for the run's counters, and
min_effect), those of the fixed 10% tolerance (25% for domains and
systhreads), and the smallest p-values.  `retention P`: the power against
a real retention change, through the CLI: tests/data/schedule/phases.ml
keeping no chunk until its phase ends is the baseline (update-baselines,
dithered runs included), and builds keeping every 256th, 64th, 16th, 4th
chunk and every chunk are checked against it, from P directories of
different path lengths; prints the rise of the peak and of the heap's
top, and which checks failed.  Nothing is asserted.
"""

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from types import SimpleNamespace

from harness_testlib import HERE, REPO

from memprof_ci.measure import schedule
from memprof_ci.decide import stats

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
COUNTERS = ("promoted_words", "major_words", "top_heap_words")
ALPHA, MIN_EFFECT = 0.01, 0.05


def gc_of_run(exe, args, argv0, runparam=""):
    env = {k: v for k, v in os.environ.items() if k != "OCAMLMEMPROF"}
    env["OCAMLRUNPARAM"] = "v=0x400" + ("," + runparam if runparam else "")
    r = subprocess.run([argv0, *args], executable=exe, env=env, capture_output=True,
                       text=True, check=True, timeout=600)
    out = {}
    for line in r.stderr.splitlines():
        k, _, v = line.rpartition(": ")
        if k.strip() in COUNTERS + ("minor_words",) and v.strip().isdigit():
            out[k.strip()] = int(v)
    return out


def draws(exe, args, pad_words):
    """The run from a path pad_words longer, and its 12 dithered runs."""
    argv0 = schedule.padded_argv0(exe, pad_words) or exe
    bench = SimpleNamespace(command=[exe, *args], env={}, cwd="/")
    runs = []
    for d in schedule.dithers(bench):
        env, _ = schedule.run_env(bench, d)
        a0 = schedule.padded_argv0(argv0, d["argv_pad_words"]) or argv0
        runs.append(gc_of_run(exe, args, a0, env["OCAMLRUNPARAM"]))
    return {"base": gc_of_run(exe, args, argv0), "dithers": runs}


def judge(b, c, tolerance):
    """[(p, effect, fixed-tolerance alarm)] of c judged against b."""
    rows = stats.gc_spread_rows(b["base"], [b["base"]], b["dithers"], c["base"], [c["base"]],
                                {"alpha": ALPHA, "min_effect": MIN_EFFECT})
    return [(r["p_raw"], r["effect"], r["change"] > tolerance) for r in rows]


def summary(pairs, family):
    level = ALPHA / family
    results = [(name, x) for name, b, c, tol in pairs for x in judge(b, c, tol)]
    alarms = sum(1 for _, (p, e, _) in results if p < level and e >= MIN_EFFECT)
    fixed = sum(1 for _, (_, _, f) in results if f)
    print(f"{len(results)} tests; false alarms against the spread (p < {level:.2g} and "
          f">= {MIN_EFFECT:.0%}): {alarms}; with the fixed tolerance: {fixed}")
    for name, (p, e, _) in sorted(results, key=lambda t: t[1][0])[:5]:
        print(f"  smallest p: {name} p={p:.3g} change from the schedule mean {e:+.1%}")


def suite(paths):
    man = tomllib.load(open(os.path.join(REPO, "benchmarks", "benchmarks.toml"), "rb"))
    build = os.path.join(REPO, "_build", "benchmarks")
    pairs = []
    for b in man["benchmark"]:
        exe = os.path.join(build, f"{b['name']}.exe")
        at = [draws(exe, b["command"][1:], p) for p in range(paths)]
        tol = b.get("gc_timing_tolerance", 0.10)
        pairs += [(b["name"], at[i], at[j], tol) for i in range(paths) for j in range(paths)
                  if i != j]
        print(f"measured {b['name']}", file=sys.stderr)
    summary(pairs, 3 * len(man["benchmark"]))


def ladder(paths, steps=12):
    text = open(os.path.join(HERE, "data", "schedule", "ladder.ml")).read()
    at = {}
    with tempfile.TemporaryDirectory() as d:
        for k in range(steps + 1):
            with open(os.path.join(d, "prog.ml"), "w") as fh:
                fh.write(text.replace("SIZE", str(2000 * (100 + k) // 100)))
            exe = os.path.join(d, f"prog{k}.exe")
            subprocess.run([OCAMLOPT, "-g", "-o", exe, "prog.ml"], cwd=d, check=True,
                           capture_output=True)
            for p in range(paths):
                at[k, p] = draws(exe, [], p)
    aa = [(f"step {k} path {i}->{j}", at[k, i], at[k, j], 0.10) for k in range(steps + 1)
          for i in range(paths) for j in range(paths) if i != j]
    up = [(f"step {k}->{k + 1} path {i}->{j}", at[k, i], at[k + 1, j], 0.10)
          for k in range(steps) for i in range(paths) for j in range(paths)]
    print("A/A across paths:")
    summary(aa, 3)
    print("each step against the previous one:")
    summary(up, 3)


def _cli(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "harness"))
    return subprocess.run([sys.executable, "-m", "memprof_ci", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1200)


def retention(paths, holds=(256, 64, 16, 4, 1)):
    text = open(os.path.join(HERE, "data", "schedule", "phases.ml")).read()
    with tempfile.TemporaryDirectory() as root:
        for p in range(paths):
            d = os.path.join(root, "d" + "-longer-path" * 3 * p)
            os.makedirs(d)
            with open(os.path.join(d, "benchmarks.toml"), "w") as fh:
                fh.write('[defaults]\nmode = "sampled"\nrate = 1e-3\n\n[[benchmark]]\nname = "prog"\n'
                         'command = ["./prog.exe"]\n')
            for hold in (0,) + holds:
                with open(os.path.join(d, "prog.ml"), "w") as fh:
                    fh.write(text.replace("HOLD", str(hold)))
                subprocess.run([OCAMLOPT, "-g", "-o", "prog.exe", "prog.ml"], cwd=d,
                               check=True, capture_output=True)
                if hold == 0:
                    r = _cli(["update-baselines", "--manifest", "benchmarks.toml",
                              "--no-overhead"], d)
                    assert r.returncode == 0, r.stderr
                    continue
                _cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                      "--report-dir", "rep"], d)
                with open(os.path.join(d, "rep", "report.json")) as fh:
                    b = json.load(fh)["benchmarks"]["prog"]
                ps = b["peak_summary"]
                top = next(g for g in b["gc"] if g["counter"] == "top_heap_words")
                named = [x["function"] for x in b["peak"] if x["status"] == "regression"]
                print(f"path {p} keep every {hold:3d}th chunk: peak "
                      f"{ps['current_words'] / ps['baseline_words'] - 1:+7.1%} "
                      f"(p {ps.get('p_rise', float('nan')):.2g}), heap top "
                      f"{top['current'] / top['baseline'] - 1:+7.1%}; failed: "
                      f"{sorted(c for c, o in b['checks'].items() if o['outcome'] == 'failed')}"
                      f"; peak names {named}", flush=True)


if __name__ == "__main__":
    what, n = sys.argv[1], int(sys.argv[2])
    {"suite": suite, "ladder": ladder, "retention": retention}[what](n)
    with open(os.path.join(REPO, "_build", "runtime", "patch-id")) as fh:
        print(f"runtime {fh.read().strip()}")
