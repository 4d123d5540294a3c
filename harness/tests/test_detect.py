"""`detect`: the manifest names the smallest increase to catch, and
update-baselines plans rate and seeds for it (plan.plan_sampling, 90% power
at every site holding min_share); checks and `profile` run with the plan
the trusted baseline records.

fakebench draws each site's samples from its words, so a +2% change at a
site holding 1% of the allocation is real and, at the manifest's own rate
and seeds, far below what the test can see.
"""

import json
import re

from harness_testlib import bump, check, cli, project, spec_sites, update

WORDS = [9.9e7, 1e6]          # the second site holds 1% of the allocation
SITE = "Main.f1 @ main.ml"


def detect_project(tmp_path, **defaults):
    project(tmp_path, [{"name": "big", "spec": {"sites": spec_sites(WORDS)}}],
            defaults=dict({"rate": 1e-4, "seeds": [1, 2, 3], "min_share": 0.005}, **defaults))


def test_detect_plans_rate_and_seeds_and_catches_two_percent(tmp_path):
    detect_project(tmp_path, detect=0.02, detect_cost=8)
    r = update(tmp_path)
    m = re.search(r"big: planned rate 0.01 x (\d+) seed\(s\) to detect \+2% with 90% power",
                  r.stdout)
    assert m, r.stdout
    cfg = json.load(open(tmp_path / "baselines" / "big.json"))["config"]
    # The rate is raised to its cap first, then seeds within 8x the manifest's.
    assert cfg["rate"] == 0.01 and 3 < len(cfg["seeds"]) == int(m.group(1)) <= 24
    assert cfg["seeds"] == list(range(1, len(cfg["seeds"]) + 1))
    assert cfg["plan"]["reachable"] and cfg["plan"]["from_seeds"] == [1, 2, 3]
    assert check(tmp_path).returncode == 0
    # A separate judge: the build job's `profile` runs with the plan too.
    r = cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--out", "run",
            "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "--from-run", "run",
            "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr

    bump(tmp_path, "big", 1, 1.02)
    r = check(tmp_path, "-m", "alloc_sites")
    assert r.returncode == 1, r.stdout + r.stderr
    assert SITE in r.stdout.split("Regressions")[1].split("\n\n")[0]


def test_without_detect_the_same_change_is_below_what_the_settings_see(tmp_path):
    detect_project(tmp_path, min_effect=0.02)
    r = update(tmp_path)
    assert "planned" not in r.stdout
    bump(tmp_path, "big", 1, 1.02)
    r = check(tmp_path, "-m", "alloc_sites")
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_budget_too_small_says_so(tmp_path):
    detect_project(tmp_path, detect=0.02, detect_cost=2)
    r = update(tmp_path)
    assert "NOT reached within detect_cost 2" in r.stdout
    cfg = json.load(open(tmp_path / "baselines" / "big.json"))["config"]
    assert cfg["seeds"] == list(range(1, 7)) and not cfg["plan"]["reachable"]


def test_a_tampered_plan_is_an_error_not_a_pass(tmp_path):
    detect_project(tmp_path, detect=0.02, detect_cost=8)
    update(tmp_path)
    p = tmp_path / "baselines" / "big.json"
    doc = json.load(open(p))
    doc["config"]["plan"]["seeds"] = [1]
    p.write_text(json.dumps(doc))
    r = check(tmp_path)
    assert r.returncode == 2 and "config.plan does not match" in r.stderr, r.stderr
