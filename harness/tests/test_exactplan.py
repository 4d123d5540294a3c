"""`mode = "auto"` (the default): update-baselines counts a benchmark
exactly when one run at rate 1 costs at most `exact_limit` times its
sampled runs (exactplan.py), records the choice in the baseline, and
checks run as the baseline says.  A benchmark with allocation points
(`points`, on by default) needs no such run: test_points_check.py; the
programs here count no points, so that the rule above decides.

Two real programs under the patched runtime: few_blocks.ml (600 blocks of
20,000 words and much work on them: a run at rate 1 costs about what one
sampled run does, a third of the three) and many_blocks.ml (33 M small
blocks: a run at rate 1 costs over ten times a sampled run, so it is
stopped at its limit).  Both margins are several times what a busy
machine moves a CPU time.
"""

import json
import os
import subprocess

import pytest

from harness_testlib import HERE, REPO, check, project, run_cli, spec_sites, update

from memprof_ci.measure import exact_or_sampled as exactplan

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
DATA = os.path.join(HERE, "data", "exactplan")
MANIFEST = """\
[defaults]
rate = 1e-3
seeds = [1, 2, 3]
timeout = 120
points = false

[[benchmark]]
name = "few"
command = ["./few_blocks.exe"]

[[benchmark]]
name = "many"
command = ["./many_blocks.exe"]
"""


def build(work, name, bump=100):
    text = open(os.path.join(DATA, f"{name}.ml")).read().replace("BUMP", str(bump))
    with open(os.path.join(work, f"{name}.ml"), "w") as fh:
        fh.write(text)
    r = subprocess.run([OCAMLOPT, "-g", "-o", f"{name}.exe", f"{name}.ml"], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


def test_the_rule():
    assert exactplan.fits(0.5, 0.3, 2.0) and exactplan.fits(0.6, 0.3, 2.0)
    assert not exactplan.fits(0.61, 0.3, 2.0)
    assert not exactplan.fits(None, 0.3, 2.0)      # stopped at its limit
    assert not exactplan.fits(0.0, 0.3, 0.0)       # exact_limit 0: never exact


@pytest.mark.needs_runtime
def test_auto_counts_the_cheap_benchmark_exactly_and_samples_the_costly_one(tmp_path):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    work = str(tmp_path)
    with open(os.path.join(work, "benchmarks.toml"), "w") as fh:
        fh.write(MANIFEST)
    build(work, "few_blocks")
    build(work, "many_blocks")
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"],
                cwd=work, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "few: counted exactly: one run at rate 1 costs" in r.stdout, r.stdout
    assert "many: sampled: one run at rate 1 costs over the limit (stopped)" in r.stdout, r.stdout
    few = json.load(open(os.path.join(work, "baselines", "few.json")))["config"]
    many = json.load(open(os.path.join(work, "baselines", "many.json")))["config"]
    assert few["rate"] == 1 and few["seeds"] == [1]
    assert few["plan"]["mode"] == "exact" and few["plan"]["exact_cost"] <= 2
    assert few["plan"]["from_rate"] == 1e-3 and few["plan"]["from_seeds"] == [1, 2, 3]
    assert many["rate"] == 1e-3 and many["seeds"] == [1, 2, 3]
    assert many["plan"]["mode"] == "sampled" and many["plan"]["exact_cost"] is None

    # Checks run as the baselines say: unchanged code passes, the exact
    # benchmark's power is "exact".
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", "rep"], cwd=work, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.load(open(os.path.join(work, "rep", "report.json")))["benchmarks"]
    assert rep["few"]["power"]["exact"] and not rep["many"]["power"]["exact"]

    # +2% at a site holding 2% of the exact benchmark's words fails.
    build(work, "few_blocks", bump=102)
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead", "-m",
                 "alloc_sites", "--report-dir", "rep"], cwd=work, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {x["site"]: x for x in json.load(open(os.path.join(work, "rep", "report.json")))
            ["benchmarks"]["few"]["alloc"]}
    grow = [x for k, x in rows.items() if k.startswith("Few_blocks.grow")]
    assert grow and grow[0]["status"] == "regression", rows.keys()


def test_a_plan_that_says_exact_at_a_sampled_rate_is_an_error(tmp_path):
    """A hand-edited plan cannot make a sampled baseline pass as exact."""
    project(tmp_path, [{"name": "b", "spec": {"sites": spec_sites([1e6, 1e5])}}],
            defaults={"mode": "auto", "rate": 1e-3, "seeds": [1, 2]})
    r = update(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    path = tmp_path / "baselines" / "b.json"
    doc = json.load(open(path))
    assert doc["config"]["plan"]["mode"] in ("exact", "sampled")
    doc["config"]["plan"]["mode"] = "exact"
    doc["config"]["rate"] = 1e-3
    doc["config"]["seeds"] = [1, 2]
    doc["config"]["plan"]["rate"] = 1e-3
    doc["config"]["plan"]["seeds"] = [1, 2]
    path.write_text(json.dumps(doc))
    r = check(tmp_path)
    assert r.returncode == 2 and "config.plan.mode does not match config.rate" in r.stderr, \
        r.stdout + r.stderr


def test_a_cost_near_the_limit_keeps_the_last_baselines_mode():
    """Within STICKY of the limit the mode does not flip between recordings."""
    limit = 2.0
    exact_lim = exactplan.effective_limit(limit, "exact")
    sampled_lim = exactplan.effective_limit(limit, "sampled")
    assert exactplan.effective_limit(limit, None) == limit
    # 2.06x the sampled runs: stays exact after an exact baseline, stays
    # sampled after a sampled one (and without one: sampled).
    assert exactplan.fits(2.06, 1.0, exact_lim)
    assert not exactplan.fits(2.06, 1.0, limit)
    assert not exactplan.fits(2.06, 1.0, sampled_lim)
    # 1.9x: exact without a baseline, sampled after a sampled one.
    assert exactplan.fits(1.9, 1.0, limit) and not exactplan.fits(1.9, 1.0, sampled_lim)
    # Far from the limit the cost decides alone.
    assert not exactplan.fits(2.3, 1.0, exact_lim) and exactplan.fits(1.7, 1.0, sampled_lim)
    line = exactplan.describe("leak", {"mode": "exact", "exact_cost": 2.06, "exact_limit": 2})
    assert line.endswith("the last baseline's mode, kept within 10% of the limit"), line
    assert "kept" not in exactplan.describe("leak", {"mode": "exact", "exact_cost": 1.9,
                                                     "exact_limit": 2})


def test_the_recorded_mode_is_read_from_the_baseline_being_replaced(tmp_path):
    from memprof_ci.store import baseline
    src = json.load(open(os.path.join(REPO, "baselines", "strings.json")))
    assert src["config"]["plan"]["mode"] in ("exact", "sampled")
    (tmp_path / "strings.json").write_text(json.dumps(src))
    assert baseline.recorded_mode(str(tmp_path), "strings") == src["config"]["plan"]["mode"]
    assert baseline.recorded_mode(str(tmp_path), "absent") is None
    (tmp_path / "strings.json").write_text("{not json")
    assert baseline.recorded_mode(str(tmp_path), "strings") is None
