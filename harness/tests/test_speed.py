"""The compare path on 10,000 stacks x 5 seeds gives a complete, correct
report in every rendering.

Timings depend on the machine, so this test asserts none: `make
bench-harness` (speed_bench.py, the same code) prints the CPU and wall time
and the scaling from 2,000 to 10,000 stacks.
"""

import json

from speed_bench import make_inputs, timed_compare


def test_compare_path_on_10000_stacks_reports_every_site(tmp_path):
    make_inputs(str(tmp_path), 10_000)
    cpu, wall, rep, (md, term, js) = timed_compare(str(tmp_path))
    print(f"compare path: 10,000 stacks {cpu:.2f}s CPU, {wall:.2f}s wall")
    rows = rep["benchmarks"]["big"]["alloc"]
    assert len(rows) == 5000 and all(r["status"] == "~" for r in rows)
    assert md.startswith("## ✅ memprof-ci: no regression in 1 benchmark(s)")
    assert term.startswith("memprof-ci: no regression in 1 benchmark(s)")
    assert len(json.loads(js)["benchmarks"]["big"]["alloc"]) == 5000
