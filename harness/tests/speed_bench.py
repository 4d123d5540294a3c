"""The compare path on large profiles, as a benchmark that prints its figure.

This is the path of `check` and of `memprof-ci compare BASELINE PROFILES`:
five current profiles of N stacks each (about 8 MB of JSON apiece at 10,000
stacks, six frames per stack) against a baseline of the same benchmark,
through loading, validation, grouping, testing, Holm, and all three
renderings.  `make bench-harness` runs it at 10,000 stacks and at a fifth
of that, and prints CPU and wall time and the CPU ratio between the two
(linear scaling gives 5); test_speed.py runs the same code for the
correctness of its results only, since timings depend on the machine.
"""

import json
import os
import sys
import tempfile
import time

import numpy as np
from harness_testlib import make_profile

from memprof_ci.inputs.atomicio import write_atomic
from memprof_ci.store.baseline import dumps, to_document
from memprof_ci.commands.compare import load_side
from memprof_ci.decide.comparison import site_rows
from memprof_ci.decide.verdict import decide
from memprof_ci.render.report import render_markdown, render_terminal
from memprof_ci.decide.report_doc import new_report, to_json


def _stacks(rng, n_stacks, scale):
    out = []
    for i in range(n_stacks):
        j = i % (n_stacks // 2)
        frames = [("Stdlib__List.map", "list.ml", 80), ("Stdlib__List.rev", "list.ml", 9),
                  (f"Mod{j % 97}.fn{j}", f"mod{j % 97}.ml", 10 + i % 300), ("Main.run", "main.ml", 4),
                  (None, None, None), ("Main.main", "main.ml", 1)]
        n = int(rng.poisson(scale))
        out.append((frames, n, n // 3))
    return out


def make_inputs(d, n_stacks):
    """Five profiles of n_stacks stacks in d/b and a baseline d/big.json."""
    rng = np.random.default_rng(3)
    text = json.dumps(make_profile(_stacks(rng, n_stacks, 40), seed=1))
    os.makedirs(os.path.join(d, "b"))
    for seed in range(1, 6):
        with open(os.path.join(d, "b", f"big.{seed}.json"), "w") as fh:
            fh.write(text.replace('"seed": 1,', f'"seed": {seed},', 1))
    base = load_side(os.path.join(d, "b"), "function")["big"]
    write_atomic(os.path.join(d, "big.json"), dumps(to_document(base, None, None, None)))


def timed_compare(d):
    """(CPU seconds incl. loader processes, wall seconds, report, renderings)."""
    t0, c0 = time.perf_counter(), os.times()
    a = load_side(os.path.join(d, "big.json"), "function")["big"]
    b = load_side(os.path.join(d, "b"), "function")["big"]
    rep = new_report("compare")
    params = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}
    rep["benchmarks"]["big"] = {"name": "big", "checks": {}, "notes": [],
                                "alloc": site_rows("big", "alloc", b, a, params),
                                "live": site_rows("big", "live", b, a, params)}
    decide(rep)
    out = render_markdown(rep), render_terminal(rep), to_json(rep)
    wall, c1 = time.perf_counter() - t0, os.times()
    cpu = sum(getattr(c1, k) - getattr(c0, k)
              for k in ("user", "system", "children_user", "children_system"))
    return cpu, wall, rep, out


def _median_of_3(n):
    """(CPU, wall) seconds of the compare path on n stacks, median of 3."""
    with tempfile.TemporaryDirectory() as d:
        make_inputs(d, n)
        runs = [timed_compare(d)[:2] for _ in range(3)]
    return sorted(c for c, _ in runs)[1], sorted(w for _, w in runs)[1]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    cpu, wall = _median_of_3(n)
    print(f"compare path, {n} stacks x 5 seeds: median of 3: {cpu:.2f} s CPU "
          f"(incl. loader processes), {wall:.2f} s wall")
    small = max(2, n // 5)
    cpu_small, _ = _median_of_3(small)
    print(f"scaling: {small} -> {n} stacks costs {cpu / cpu_small:.1f}x the CPU "
          f"(linear: {n / small:.1f}x)")


if __name__ == "__main__":
    main()
