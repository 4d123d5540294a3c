"""The compare path scales linearly in the number of stacks.

Timings depend on the machine, so nothing here has a time budget tuned to
one: `make bench-harness` (speed_bench.py) prints the figure.  This test
only guards against pathologies: five times the stacks must cost less than
ten times the CPU (linear would be five), and the renderings must describe
the comparison they were given.
"""

import json

from speed_bench import make_inputs, timed_compare


def test_compare_path_scales_linearly(tmp_path):
    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    make_inputs(str(small), 2_000)
    make_inputs(str(big), 10_000)
    t_small = min(timed_compare(str(small))[0] for _ in range(2))
    cpu, wall, rep, (md, term, js) = min((timed_compare(str(big)) for _ in range(2)),
                                         key=lambda x: x[0])
    print(f"compare path: 2,000 stacks {t_small:.2f}s CPU, 10,000 stacks {cpu:.2f}s CPU "
          f"({cpu / t_small:.1f}x), {wall:.2f}s wall")
    assert cpu < 10 * max(t_small, 0.05), (t_small, cpu)
    rows = rep["benchmarks"]["big"]["alloc"]
    assert len(rows) == 5000 and all(r["status"] == "~" for r in rows)
    assert md.startswith("## ✅ memprof-ci: no regression in 1 benchmark(s)")
    assert term.startswith("memprof-ci: no regression in 1 benchmark(s)")
    assert len(json.loads(js)["benchmarks"]["big"]["alloc"]) == 5000
