"""The overhead check judges changes: a pull request fails only when it made
profiling significantly costlier than the baseline recorded, and the absolute
budget is enforced when baselines are recorded.

fakebench plays a program that uses `--work` seconds of CPU and `--slow-when-
profiled` more when profiled, so its overhead (the check times CPU) is known
by design.
"""

import json
import re

from harness_testlib import cli, project, spec_sites

from memprof_ci import overhead


def slow_project(tmp_path, extra_when_profiled):
    return project(tmp_path, [{"name": "costly", "spec": {"sites": spec_sites([1e5])},
                               "args": ["--work", "0.2", "--slow-when-profiled",
                                        str(extra_when_profiled)]}],
                   defaults={"overhead_runs": 5})


def test_unchanged_overhead_over_budget_passes_and_an_increase_fails(tmp_path):
    slow_project(tmp_path, 0.1)            # about +50%, five times the 10% budget
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    warn = [x for x in r.stderr.splitlines() if "over the budget 10%" in x]
    assert len(warn) == 1, r.stderr
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    assert len(base["on_s"]) == len(base["off_s"]) == base["runs"]
    # The suggested rate scales the rate by budget / overhead, rounded down.
    suggested = float(re.search(r"rate = (\S+) should meet it", warn[0]).group(1))
    assert suggested == overhead.nice_rate_below(1e-3, 0.10 / base["estimate"])
    # Unchanged code: over the budget, but not over its own baseline.
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "-m", "overhead",
            "--report-dir", "rep")
    r2 = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "-m", "overhead")
    assert r.returncode == 0, r.stdout + r.stderr
    o = json.load(open(tmp_path / "rep" / "report.json"))["benchmarks"]["costly"]["overhead"]
    assert o["basis"] == "baseline" and o["status"] == "~"
    assert o["threshold"] == base["ci_high"] + 0.10
    assert r2.returncode == 0, r2.stdout + r2.stderr
    # The change makes profiling four times as costly: fails, naming why.
    slow_project(tmp_path, 0.4)
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "-m", "overhead",
            "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "plus the tolerance 10%" in r.stdout and "the baseline's" in r.stdout
    md = open(tmp_path / "rep" / "report.md").read()
    row = [x for x in md.splitlines() if x.startswith("| costly |")][0]
    assert "❌" in row.split("|")[-2] and "(baseline up to" in row


def test_strict_update_makes_over_budget_an_error(tmp_path):
    slow_project(tmp_path, 0.1)
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--strict")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "over the budget 10%" in r.stderr and "(--strict)" in r.stderr


def test_judge_retests_stored_rounds_against_its_threshold():
    # Five rounds all about +30%: screened against a 10% threshold and
    # significant with enough rounds; never over a 60% threshold.
    m = {"estimate": 0.3, "ci_low": 0.28, "ci_high": 0.32, "runs": 8, "level": 0.005,
         "screened": False, "p_value": 1.0, "above_budget": 0, "first_rounds": 5,
         "on_s": [1.3] * 8, "off_s": [1.0] * 8}
    j = overhead.judge(m, 0.10, "budget", 0.10, None)
    assert j["status"] == "regression" and j["above_budget"] == 8 and j["p_value"] == 2 ** -8
    assert overhead.judge(m, 0.60, "baseline", 0.10, {"ci_high": 0.5})["status"] == "~"
    # Too few rounds for the level: cannot fail, says why.
    short = dict(m, runs=5, on_s=[1.3] * 5, off_s=[1.0] * 5)
    j = overhead.judge(short, 0.10, "budget", 0.10, None)
    assert j["status"] == "~" and "too few rounds" in j["note"]


def test_nice_rate_below():
    assert overhead.nice_rate_below(1e-4, 0.10 / 0.5) == 2e-5
    assert overhead.nice_rate_below(1e-4, 0.10 / 0.12) == 5e-5
    assert overhead.nice_rate_below(1e-3, 0.9) == 5e-4
