"""The compare path on large profiles: 10,000 stacks x 5 seeds in under 2 s.

This is the path of `check` and of `memprof-ci compare BASELINE PROFILES`:
five current profiles of 10,000 stacks each (about 8 MB of JSON apiece, six
frames per stack) against a baseline of the same benchmark, through loading,
validation, grouping, testing, Holm, and all three renderings.
"""

import json
import os
import time

import numpy as np
from harness_testlib import make_profile

from memprof_ci.compare import finalize, load_side, site_rows
from memprof_ci.report import new_report, render_markdown, render_terminal, to_json


def _stacks(rng, n_stacks, scale):
    out = []
    for i in range(n_stacks):
        j = i % 5000
        frames = [("Stdlib__List.map", "list.ml", 80), ("Stdlib__List.rev", "list.ml", 9),
                  (f"Mod{j % 97}.fn{j}", f"mod{j % 97}.ml", 10 + i % 300), ("Main.run", "main.ml", 4),
                  (None, None, None), ("Main.main", "main.ml", 1)]
        n = int(rng.poisson(scale))
        out.append((frames, n, n // 3))
    return out


def test_compare_10000_stacks_5_seeds_under_2s(tmp_path):
    rng = np.random.default_rng(3)
    text = json.dumps(make_profile(_stacks(rng, 10_000, 40), seed=1))
    os.makedirs(tmp_path / "b")
    for seed in range(1, 6):
        (tmp_path / "b" / f"big.{seed}.json").write_text(
            text.replace('"seed": 1,', f'"seed": {seed},', 1))
    base = load_side(str(tmp_path / "b"), "function")["big"]
    write_baseline = __import__("memprof_ci.baseline", fromlist=["x"])
    write_baseline.write_atomic(str(tmp_path / "big.json"), write_baseline.dumps(
        write_baseline.to_document(base, None, None, None)))
    runs = [_timed_compare(tmp_path) for _ in range(2)]
    cpu = min(c for c, _ in runs)
    wall = min(w for _, w in runs)
    print(f"compare path: best of 2: {cpu:.2f}s CPU (incl. worker processes), {wall:.2f}s wall")
    # CPU time (this process plus its loader processes) is what the compare
    # path costs and does not depend on other jobs sharing the machine; it
    # is at least the wall time when the machine is idle.  The wall-clock
    # bound only guards against the parallel loader hanging or serialising.
    assert cpu < 2.0, f"compare path used {cpu:.2f}s of CPU"
    assert wall < 4.0, f"compare path took {wall:.2f}s wall-clock"


def _timed_compare(tmp_path):
    t0, c0 = time.perf_counter(), os.times()
    a = load_side(str(tmp_path / "big.json"), "function")["big"]
    b = load_side(str(tmp_path / "b"), "function")["big"]
    rep = new_report("compare")
    params = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}
    rep["benchmarks"]["big"] = {"name": "big", "checks": {}, "notes": [],
                                "alloc": site_rows("big", "alloc", b, a, params),
                                "live": site_rows("big", "live", b, a, params)}
    finalize(rep)
    md, term, js = render_markdown(rep), render_terminal(rep), to_json(rep)
    wall, c1 = time.perf_counter() - t0, os.times()
    cpu = sum(getattr(c1, k) - getattr(c0, k)
              for k in ("user", "system", "children_user", "children_system"))
    assert len(rep["benchmarks"]["big"]["alloc"]) == 5000
    assert md and term and js
    return cpu, wall
