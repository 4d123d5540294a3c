"""`memprof-ci plan`: the settings it suggests detect what they promise.

A site too small for the default settings to see +8.4% reliably (its
minimum detectable increase is above 8.4%); `plan --target-mde 0.05`
suggests a rate; recorded at that rate, the same +8.4% change fails.
"""

import re

from harness_testlib import bump, check, cli, project, spec_sites, update

from memprof_ci.decide import power as plan


def test_suggested_rate_catches_what_the_default_misses(tmp_path):
    project(tmp_path, [{"name": "kb", "spec": {"sites": spec_sites([8e6, 2e6])}}],
            defaults={"rate": 1e-4})
    update(tmp_path)
    r = cli(tmp_path, "plan", "--manifest", "benchmarks.toml", "--target-mde", "0.05")
    assert r.returncode == 0, r.stdout + r.stderr
    row = [x.split() for x in r.stdout.splitlines() if x.startswith("kb ")][0]
    largest_mde = float(row[2].rstrip("%")) / 100
    assert largest_mde > 0.084            # +8.4% is below what 1e-4 x 2 seeds sees
    suggested = float(row[5])
    # At these settings the +8.4% change passes unseen (deterministic draws).
    bump(tmp_path, "kb", 0, 1.084)
    assert check(tmp_path, "-m", "alloc_sites").returncode == 0
    bump(tmp_path, "kb", 0, 1 / 1.084, salt=0)
    assert suggested > 1e-4 and re.fullmatch(r"[125]e-0\d", f"{suggested:.0e}")
    # Recorded at the suggested rate, the +8.4% change is caught.
    text = (tmp_path / "benchmarks.toml").read_text().replace("rate = 0.0001",
                                                             f"rate = {suggested!r}")
    (tmp_path / "benchmarks.toml").write_text(text)
    update(tmp_path)
    bump(tmp_path, "kb", 0, 1.084)
    r = check(tmp_path, "-m", "alloc_sites")
    assert r.returncode == 1 and "Main.f0 @ main.ml" in r.stdout, r.stdout + r.stderr


def test_factor_and_rate_arithmetic():
    assert plan.nice_rate_at_least(1.13e-3) == 2e-3
    assert plan.nice_rate_at_least(1e-4) == 1e-4
    assert plan.nice_rate_at_least(0.7) == 1.0


def test_bad_targets_exit_2(tmp_path):
    project(tmp_path)
    for args in (["--target-mde", "nan"], ["--target-share", "2"]):
        r = cli(tmp_path, "plan", "--manifest", "benchmarks.toml", *args)
        assert r.returncode == 2 and args[0] in r.stderr, r.stderr
    r = cli(tmp_path, "plan", "--manifest", "benchmarks.toml")
    assert r.returncode == 2 and "no baselines" in r.stderr
