"""The overhead study's verdict rule for noisy wall times: PASS or MISS only
when the 95% intervals clear the target, UNRESOLVED otherwise."""

import importlib.util
import json
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


def test_cost_ratio_interval_covers_the_ratio_and_refuses_unresolved_costs():
    c = {"on": [1.20, 1.21, 1.19, 1.22, 1.20], "off": [1.00, 1.01, 0.99, 1.00, 1.02],
         "samples": 1000}
    o = {"on": [1.80, 1.82, 1.79, 1.81, 1.80], "off": c["off"], "samples": 1000}
    lo, hi = study.cost_ratio_ci(c, o)
    assert lo <= 0.25 <= hi and hi - lo < 0.1        # true ratio 0.2 / 0.8
    # the OCaml tracker's cost straddles zero: no ratio can be formed
    flat = {"on": [1.0, 1.2, 0.8, 1.1, 0.9], "off": [1.1, 0.9, 1.0, 1.2, 0.8], "samples": 10}
    assert study.cost_ratio_ci(c, flat) is None


def test_reanalyse_rewrites_the_report_from_raw_times(tmp_path):
    def timing(on, off, samples):
        return {"off": {"times_s": off, "median_s": sorted(off)[len(off) // 2]},
                "1e-2": {"times_s": on, "median_s": sorted(on)[len(on) // 2],
                         "samples": samples}}
    off = [1.00, 1.01, 0.99, 1.00, 1.02]
    meta = {"rates": ["1e-2"], "finished": "x", "command_line": "x", "duration_s": 1,
            "nproc": 2, "hyperfine": "x", "runs": 5, "warmup": 1, "patch_id": "x"}
    doc = {"meta": meta,
           "summary": [], "callgrind": None,
           "benchmarks": {"b": {"command": [], "cwd": ".",
                                "preflight": {"ocaml_samples": {"1e-2": 1000}},
                                "timing": {"c": timing([1.10, 1.11, 1.09, 1.10, 1.12], off, 1000),
                                           "ocaml": timing([1.80, 1.82, 1.79, 1.81, 1.80],
                                                           off, None)}}}}
    src = tmp_path / "in.json"
    src.write_text(json.dumps(doc))
    assert study.main(["--reanalyse", str(src), "--out", str(tmp_path / "out")]) == 0
    out = json.loads((tmp_path / "out" / "overhead.json").read_text())
    row = {r["id"]: r for r in out["summary"]}["cost_ratio_1e-2"]
    assert row["verdict"] == "PASS" and abs(row["value"] - 0.125) < 0.01
    assert (tmp_path / "out" / "overhead.md").is_file()


def test_reanalyse_of_a_foreign_file_names_it(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(SystemExit) as e:
        study.main(["--reanalyse", str(bad), "--out", str(tmp_path)])
    assert e.value.code == 2 and str(bad) in capsys.readouterr().err
