"""The overhead study's verdict rule for noisy wall times: PASS or MISS only
when the 95% intervals clear the target, UNRESOLVED otherwise."""

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "overhead_study", Path(__file__).resolve().parents[1] / "overhead_study.py")
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)


@pytest.mark.parametrize("lows, highs, expected", [
    ([-0.02, 0.001], [0.004, 0.009], "PASS"),       # every interval below 1%
    ([0.012, -0.01], [0.03, 0.005], "MISS"),        # one interval wholly above
    ([-0.2, -0.1], [0.3, 0.005], "UNRESOLVED (see instructions)"),
    ([], [], "n/a"),
])
def test_interval_verdict(lows, highs, expected):
    assert study.interval_verdict(lows, highs, 0.01) == expected


def test_wall_verdicts_in_the_summary_follow_the_intervals():
    def bench(overhead, low, high):
        return {"analysis": {"c": {study.rate_key(1e-4): {
            "overhead": overhead, "ci_low": low, "ci_high": high}}}}
    results = {"a": bench(0.002, -0.01, 0.008), "b": bench(0.30, 0.15, 0.40),
               "c": bench(0.01, -0.05, 0.05)}
    rows = {r["id"]: r for r in study.summarise(results, [1e-4], None)}
    assert rows["wall_max_1e-4"]["verdict"] == "MISS"     # b's interval is above 10%
    # the median benchmark's interval, [-1%, +5%], straddles 1%
    assert rows["wall_median_1e-4"]["verdict"] == "UNRESOLVED (see instructions)"
