"""The GC's schedule spread without the OCaml runtime: the dithers, the
baseline's "schedule" section, the tests against the spread (stats.py),
and the whole path through the CLI with tests/fakebench.py, whose GC
counters and peak fractions move with the schedule a run gets (its minor
heap size, argv[0]'s length and the spec's "shift", a rebuild elsewhere).
"""

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
from harness_testlib import check, cli, no_traceback, project, spec_sites

from memprof_ci.measure import schedule
from memprof_ci.decide import stats
from memprof_ci.errors import ConfigError

RUNS = {"MEMPROF_CI_SCHEDULE_RUNS": "12"}
GC = {"minor_words": 9_000_000, "promoted_words": 500_000, "major_words": 600_000,
      "top_heap_words": 800_000}


# ----------------------------------------------------------------- dithers

def _bench(env=None, command=("/opt/bench/prog.exe", "7")):
    return SimpleNamespace(command=list(command), env=dict(env or {}), cwd="/")


def test_dithers_are_fixed_and_spread_around_the_benchmarks_minor_heap(monkeypatch):
    monkeypatch.delenv("OCAMLRUNPARAM", raising=False)
    monkeypatch.delenv("CAMLRUNPARAM", raising=False)
    d = schedule.dithers(_bench())
    assert d == schedule.dithers(_bench()) and len(d) == schedule.SCHEDULE_RUNS
    sizes = [x["minor_heap_words"] for x in d]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert all(s % schedule.PAGE_WORDS == 0 for s in sizes)
    assert 0.97 * 262144 <= sizes[0] < 262144 < sizes[-1] <= 1.03 * 262144 + 512
    assert sorted(x["argv_pad_words"] for x in d) == list(range(schedule.SCHEDULE_RUNS))
    # The benchmark's own minor heap is the centre, and its settings are kept:
    # the dither's `s` comes last, and the runtime takes the last one.
    b = _bench({"OCAMLRUNPARAM": "v=0x400,s=32k"})
    d = schedule.dithers(b)
    assert all(0.97 * 32768 <= x["minor_heap_words"] <= 1.03 * 32768 + 512 for x in d)
    env, _ = schedule.run_env(b, d[0])
    assert env["OCAMLRUNPARAM"] == f"v=0x400,s=32k,s={d[0]['minor_heap_words']}"
    assert schedule.minor_words(env["OCAMLRUNPARAM"]) == d[0]["minor_heap_words"]
    monkeypatch.setenv("CAMLRUNPARAM", "s=1M")
    assert schedule.dithers(_bench())[0]["minor_heap_words"] < 1 << 20 < \
        schedule.dithers(_bench())[-1]["minor_heap_words"]


def test_padded_argv0_names_the_same_file(tmp_path):
    exe = tmp_path / "prog.exe"
    exe.write_text("")
    padded = schedule.padded_argv0(str(exe), 3)
    assert len(padded) == len(str(exe)) + 24 and os.path.samefile(padded, exe)
    assert schedule.padded_argv0("prog.exe", 3) is None
    assert schedule.padded_argv0(str(exe), 0) is None


@pytest.mark.parametrize("value,runs", [("0", 0), ("2", 2), ("12", 12)])
def test_the_number_of_dithered_runs_can_be_set(monkeypatch, value, runs):
    monkeypatch.setenv("MEMPROF_CI_SCHEDULE_RUNS", value)
    assert schedule.runs_wanted() == runs


@pytest.mark.parametrize("value", ["1", "x", "-3", "1001"])
def test_a_bad_number_of_dithered_runs_is_a_configuration_error(monkeypatch, value):
    monkeypatch.setenv("MEMPROF_CI_SCHEDULE_RUNS", value)
    with pytest.raises(ConfigError, match="MEMPROF_CI_SCHEDULE_RUNS"):
        schedule.runs_wanted()


# --------------------------------------------------------------- the tests

def test_spread_test_is_welch_with_satterthwaite_degrees_of_freedom():
    from scipy import stats as st
    p_inc, p_dec, half = stats.spread_test(30.0, 100.0, 300.0, 11)
    nu = 400.0 ** 2 / (300.0 ** 2 / 11)
    assert p_inc == pytest.approx(st.t.sf(30 / 20, nu))
    assert p_dec == pytest.approx(st.t.cdf(30 / 20, nu))
    assert half == pytest.approx(st.t.ppf(0.975, nu) * 20)
    # Without a schedule part it is the normal test; without any variance a
    # difference is certain.
    assert stats.spread_test(30.0, 100.0, 0.0, 11)[0] == pytest.approx(st.norm.sf(3.0))
    assert stats.spread_test(1.0, 0.0, 0.0, 11)[:2] == (0.0, 1.0)


def _gc_row(draws, current, counter="promoted_words", base=None):
    base_gc = dict(GC, **{counter: base if base is not None else draws[0]})
    rows = stats.gc_spread_rows(base_gc, [base_gc], [dict(GC, **{counter: v}) for v in draws],
                                dict(GC, **{counter: current}), [], {"alpha": 0.01,
                                                                     "min_effect": 0.05})
    return next(r for r in rows if r["counter"] == counter)


def test_gc_rows_against_the_spread_false_alarm_rate_and_power():
    """Schedules drawn from a normal distribution: a current draw of the
    same program is significant at level a in about a of the trials (the
    t-test is exact for normal draws), and a shift of six spreads is
    detected at the level a run of 45 such tests gives each (Holm's first
    step) as often as the noncentral t says (79%, STATISTICS.md)."""
    from scipy import stats as st
    rng = np.random.default_rng(7)
    n, level = 4000, 0.01
    false = shifted = 0
    for _ in range(n):
        draws = 1e6 * (1 + 0.05 * rng.standard_normal(13))
        cur = 1e6 * (1 + 0.05 * rng.standard_normal())
        false += _gc_row(list(draws[1:]), cur, base=draws[0])["p_raw"] < level
    for _ in range(1000):
        draws = 1e6 * (1 + 0.05 * rng.standard_normal(13))
        cur = 1e6 * (1 + 0.30 + 0.05 * rng.standard_normal())
        shifted += _gc_row(list(draws[1:]), cur, base=draws[0])["p_raw"] < level / 45
    assert abs(false / n - level) <= 3 * (level / n) ** 0.5, false / n
    power = 1 - st.nct.cdf(st.t.ppf(1 - level / 45, 12), 12, 6 / (1 + 1 / 13) ** 0.5)
    assert abs(shifted / 1000 - power) <= 3 * (power * (1 - power) / 1000) ** 0.5, \
        (shifted, power)


def test_top_heap_words_never_moves_by_less_than_a_pool():
    """Every dithered run saw the same heap top: one pool more is not
    significant (the heap grows by whole pools), twenty are."""
    one = _gc_row([800_000] * 12, 800_000 + stats.POOL_WORDS, "top_heap_words")
    assert one["spread"] == stats.POOL_WORDS and one["p_raw"] > 0.1
    many = _gc_row([800_000] * 12, 800_000 + 20 * stats.POOL_WORDS, "top_heap_words")
    assert many["p_raw"] < 1e-6


def test_peak_rows_get_the_sites_schedule_spread():
    row = {"site": "A", "baseline_samples": 400, "current_samples": 520,
           "baseline_exposure": 3e-3, "current_exposure": 3e-3,
           "baseline_bytes": 400 / 3e-3 * 8, "current_bytes": 520 / 3e-3 * 8,
           "p_raw": 1e-4, "p_raw_decrease": 1.0, "ci_low": 1.15, "ci_high": 1.45}
    other = dict(row, site="B")
    stats.schedule_adjust([row, other], {"A": 30_000.0}, 1, 1, 11)
    # 40k words more against a spread of 30k words a schedule: no longer
    # significant; B, with no spread recorded, keeps the sampling test.
    assert row["p_raw"] > 0.1 and row["schedule_spread_bytes"] == 240_000
    assert row["ci_low"] < 1.0 < 1.45 < row["ci_high"]
    assert other["p_raw"] == 1e-4 and "schedule_spread_bytes" not in other


# ------------------------------------------------ through the CLI (fakebench)

def _spec(gc_amp=0.0, peak_amp=0.0, shift=0, peak_f0=0.3, promoted=500_000):
    sites = spec_sites([4e6, 3e6], live=0.05)
    for s in sites:
        s["peak"] = 0.1
    sites[0]["peak"] = peak_f0
    return {"sites": sites, "gc": dict(GC, promoted_words=promoted,
                                       major_words=promoted + 100_000),
            "schedule": {"gc": gc_amp, "peak": peak_amp, "shift": shift}}


def _record(tmp_path, spec, runs=RUNS):
    project(tmp_path, [{"name": "held", "spec": spec}])
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
            env_extra=runs)
    assert r.returncode == 0, r.stdout + r.stderr


def _check_with(tmp_path, spec):
    with open(tmp_path / "held.spec.json", "w") as fh:
        json.dump(dict(spec, salt=1), fh)
    r = check(tmp_path, "--report-dir", "rep")
    no_traceback(r)
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    return r, rep["benchmarks"]["held"]


def test_the_baseline_records_the_spread_one_line_per_run_and_site(tmp_path):
    from memprof_ci.store.baseline import load_baseline
    _record(tmp_path, _spec(gc_amp=0.2, peak_amp=0.5), {"MEMPROF_CI_SCHEDULE_RUNS": "4"})
    path = tmp_path / "baselines" / "held.json"
    text = path.read_text()
    doc = json.loads(text)
    sec = doc["schedule"]
    assert sec["runs"] == 4 and len(sec["gc"]) == len(sec["dithers"]) == 4
    assert len({g["promoted_words"] for g in sec["gc"]}) > 1, sec["gc"]
    assert set(sec["sites"]) == {"Main.f0 @ main.ml", "Main.f1 @ main.ml"}
    assert '\n      "Main.f0 @ main.ml": [' in text and '\n      {"compactions": 0' in text
    assert load_baseline(str(path)).meta["schedule"] == sec
    assert "live_samples" not in sec
    # A baseline without the section still loads, with no spread.
    del doc["schedule"]
    path.write_text(json.dumps(doc))
    assert "schedule" not in load_baseline(str(path)).meta


def test_only_the_dithered_runs_skip_deciding_what_is_live_at_exit(tmp_path):
    log = tmp_path / "runs.log"
    project(tmp_path, [{"name": "held", "spec": _spec(), "args": ["--count", str(log)]}])
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
            env_extra={"MEMPROF_CI_SCHEDULE_RUNS": "4"})
    assert r.returncode == 0, r.stdout + r.stderr
    envs = log.read_text().splitlines()
    dithered = [e for e in envs if "/schedule/" in e]
    seeded = [e for e in envs if "/schedule/" not in e]
    assert len(dithered) == 4 and len(seeded) == 3, envs   # two seeds, a snapshot
    assert all(e.endswith(",live=off") for e in dithered), dithered
    assert not any("live=" in e for e in seeded), seeded


@pytest.mark.parametrize("edit,key", [
    (lambda s: s.update(runs=5), "schedule.gc must list 5 runs"),
    (lambda s: s["sites"]["Main.f0 @ main.ml"].append(3), "schedule.sites"),
    (lambda s: s["gc"][0].update(promoted_words=-1), "schedule.gc[0].promoted_words"),
    (lambda s: s.update(peak_samples="many"), "schedule.peak_samples"),
    (lambda s: s.update(live_samples=[1, 2]), "schedule.live_samples"),
])
def test_a_malformed_schedule_section_is_one_line_and_exit_2(tmp_path, edit, key):
    _record(tmp_path, _spec(), {"MEMPROF_CI_SCHEDULE_RUNS": "4"})
    path = tmp_path / "baselines" / "held.json"
    doc = json.loads(path.read_text())
    edit(doc["schedule"])
    path.write_text(json.dumps(doc))
    r = check(tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "baselines/held.json: malformed baseline" in r.stderr and key in r.stderr, r.stderr
    no_traceback(r)


def test_counters_moved_by_the_schedule_pass_against_their_spread(tmp_path):
    """promoted_words, major_words and top_heap_words move by up to 30%
    with the schedule: a rebuild elsewhere (another draw) fails the fixed
    10% tolerance of a baseline without spread, and passes against the
    spread, in every one of eight rebuilds."""
    _record(tmp_path, _spec(gc_amp=0.3), {"MEMPROF_CI_SCHEDULE_RUNS": "0"})
    outcomes = [_check_with(tmp_path, _spec(gc_amp=0.3, shift=k))[1]["checks"]["gc_totals"]
                ["outcome"] for k in range(1, 9)]
    assert "failed" in outcomes, outcomes
    _record(tmp_path, _spec(gc_amp=0.3))
    for k in range(1, 9):
        r, b = _check_with(tmp_path, _spec(gc_amp=0.3, shift=k))
        assert r.returncode == 0, r.stdout + r.stderr
        assert [g["counter"] for g in b["gc"] if "p_raw" in g] == [
            "promoted_words", "major_words", "top_heap_words"]


def test_a_real_retention_change_still_fails_against_the_spread(tmp_path):
    _record(tmp_path, _spec(gc_amp=0.05))
    r, b = _check_with(tmp_path, _spec(gc_amp=0.05, shift=1, promoted=1_000_000))
    assert r.returncode == 1, r.stdout + r.stderr
    msg = b["checks"]["gc_totals"]["message"]
    assert "promoted_words" in msg and "from its schedule mean" in msg, msg
    assert "top_heap_words" not in msg
    md = open(tmp_path / "rep" / "report.md").read()
    assert "from the schedule mean, spread" in md


def test_a_counter_the_schedule_does_not_move_fails_from_min_effect(tmp_path):
    _record(tmp_path, _spec())
    r, b = _check_with(tmp_path, _spec(promoted=530_000))      # +6%, no spread
    assert r.returncode == 1 and "promoted_words" in b["checks"]["gc_totals"]["message"]
    r, b = _check_with(tmp_path, _spec(promoted=515_000))      # +3%: below min_effect
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_site_whose_peak_share_moves_with_the_schedule_is_not_named(tmp_path):
    """What is live at the peak moves with the schedule (each site's
    fraction by up to 0.15 of its allocation, Main.f0's from 0.15 to 0.45):
    judged with the sampling test alone, a rebuild elsewhere names a site;
    against the spread, none of eight rebuilds does.  Holding all of
    Main.f0's allocation at the peak (three to six times as much) still fails
    there.  The draws are fixed by the schedule (fakebench.schedule_draw),
    so each outcome is the same on every run."""
    _record(tmp_path, _spec(peak_amp=0.15), {"MEMPROF_CI_SCHEDULE_RUNS": "0"})
    named = [_check_with(tmp_path, _spec(peak_amp=0.15, shift=k))[1]["checks"]["peak"]
             ["outcome"] for k in range(1, 9)]
    assert "failed" in named, named
    _record(tmp_path, _spec(peak_amp=0.15))
    for k in range(1, 9):
        r, b = _check_with(tmp_path, _spec(peak_amp=0.15, shift=k))
        assert b["checks"]["peak"]["outcome"] == "passed", b["checks"]["peak"]
        assert any(x.get("schedule_spread_bytes") for x in b["peak"])
    r, b = _check_with(tmp_path, _spec(peak_amp=0.15, shift=2, peak_f0=1.0))
    assert r.returncode == 1 and b["checks"]["peak"]["outcome"] == "failed", r.stdout
    assert {x["site"] for x in b["peak"] if x["status"] == "regression"} == {
        "Main.f0 @ main.ml"}


# ------------------------------------------------------------------- merge

def _shard(tmp_path, k, p_raw, **extra):
    from memprof_ci.decide.report_doc import new_report
    rep = new_report("check")
    rep["shard"] = {"index": k, "count": 2}
    row = dict({"counter": "promoted_words", "baseline": 1e6, "current": 1.3e6, "change": 0.3,
                "tolerance": 0.05, "status": "regression", "reference": 1e6, "spread": 5e4,
                "draws": 13, "effect": 0.3, "p_raw": p_raw, "p_raw_decrease": 1.0,
                "alpha": 0.01, "p_adj": p_raw}, **extra)
    rep["benchmarks"][f"b{k}"] = {"name": f"b{k}", "notes": [], "gc": [row], "checks": {
        "gc_totals": {"outcome": "failed", "message": "promoted_words"}}}
    path = tmp_path / f"shard{k}.json"
    path.write_text(json.dumps(rep))
    return str(path)


def test_merge_judges_the_gc_rows_of_every_shard_as_one_family(tmp_path):
    """Each shard alone fails its counter (p 0.006 < 0.01); over both
    shards Holm makes it 0.012, so the merged run passes."""
    r = cli(tmp_path, "merge", "out", _shard(tmp_path, 1, 0.006), _shard(tmp_path, 2, 0.006))
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "out" / "report.json"))
    for k in (1, 2):
        b = rep["benchmarks"][f"b{k}"]
        assert b["gc"][0]["p_adj"] == pytest.approx(0.012) and b["gc"][0]["status"] == "~"
        assert b["checks"]["gc_totals"]["outcome"] == "passed"
    r = cli(tmp_path, "merge", "out2", _shard(tmp_path, 1, 0.001), _shard(tmp_path, 2, 0.3))
    assert r.returncode == 1 and "b1::gc_totals" in r.stdout, r.stdout + r.stderr


def test_merge_refuses_a_gc_row_without_what_its_test_needs(tmp_path):
    bad = _shard(tmp_path, 1, 0.006)
    doc = json.load(open(bad))
    del doc["benchmarks"]["b1"]["gc"][0]["alpha"]
    open(bad, "w").write(json.dumps(doc))
    r = cli(tmp_path, "merge", "out", bad, _shard(tmp_path, 2, 0.5))
    assert r.returncode == 2 and "malformed shard report at benchmarks.b1.gc.0" in r.stderr, \
        r.stderr
    no_traceback(r)


def _proposed(tmp_path, gc_amp):
    """A trusted baseline, then a pull request growing Main.f1 by 30% whose
    baselines were regenerated in another directory (another schedule
    draw), and a check of it from a third."""
    _record(tmp_path, _spec(gc_amp=gc_amp))
    grown = _spec(gc_amp=gc_amp, shift=1)
    grown["sites"][1]["words"] *= 1.3
    with open(tmp_path / "held.spec.json", "w") as fh:
        json.dump(grown, fh)
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
            "--baselines", "proposed", env_extra=RUNS)
    assert r.returncode == 0, r.stdout + r.stderr
    grown["schedule"]["shift"] = 2
    with open(tmp_path / "held.spec.json", "w") as fh:
        json.dump(grown, fh)


def test_a_proposed_baseline_from_another_schedule_matches_the_code(tmp_path):
    """Promotion moving by up to 60% with the schedule: the regenerated
    baselines agree with the measurement (the fixed tolerance would call
    them a mismatch)."""
    _proposed(tmp_path, 0.6)
    r = check(tmp_path, "--proposed-baselines", "proposed")
    assert r.returncode == 1 and "do not match" not in r.stderr, r.stdout + r.stderr


def test_a_proposed_baseline_of_other_code_does_not_match(tmp_path):
    """Baselines of code that promotes twice as much (every run's
    promoted_words doubled) are a mismatch (exit 2) naming the counter."""
    _proposed(tmp_path, 0.05)
    p = tmp_path / "proposed" / "held.json"
    doc = json.loads(p.read_text())
    for g in [doc["gc"]] + doc["gc_runs"] + doc["schedule"]["gc"]:
        g["promoted_words"] *= 2
    p.write_text(json.dumps(doc))
    r = check(tmp_path, "--proposed-baselines", "proposed")
    assert r.returncode == 2 and "gc.promoted_words: proposed" in r.stderr, r.stdout + r.stderr
