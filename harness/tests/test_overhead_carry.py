"""A check carries the baseline's counted overhead only when nothing that
decides it changed (overhead_carry.py), and a change cannot skip a count
its own change made necessary (the gate's threat model: the pull request
controls its code, its manifest's `command`, `env` and `overhead_args`,
and its run directories).

The fake benchmark of test_overhead_verdict.py: its allocation is the spec
file's, which a "change" edits with the command unchanged; `--profiled-cost`
makes each profiled run do more work, which only a count can see.
"""

import html
import json

from harness_testlib import FAKE, PY, cli, spec_sites, write_json

PATCH = {"MEMPROF_CI_PATCH_ID": "1111222233334444"}


def project(tmp_path, words=1e5, env='{ PYTHONHASHSEED = "0" }'):
    spec = write_json(tmp_path / "costly.spec.json", {"sites": spec_sites([words, words / 4])})
    args = ["-S", FAKE, spec, "--profiled-cost", str(tmp_path / "cost")]
    (tmp_path / "benchmarks.toml").write_text(
        "[defaults]\nrate = 1e-3\nseeds = [1, 2]\n\n"
        "[[benchmark]]\nname = \"costly\"\nmode = \"sampled\"\n"
        f"command = {json.dumps([PY, *args])}\n"
        f"env = {env}\n")


def update(tmp_path, env=PATCH):
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", timeout=600,
            env_extra=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def check(tmp_path, rep, env=PATCH, *extra):
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "--report-dir", rep, *extra,
            timeout=600, env_extra=env)
    b = json.load(open(tmp_path / rep / "report.json"))["benchmarks"]["costly"]
    return r, b


def md_row(tmp_path, rep):
    return [x for x in open(tmp_path / rep / "report.md").read().splitlines()
            if x.startswith("| costly |") and "cycles" in x][0]


def test_an_unchanged_run_carries_the_count_and_says_so(tmp_path):
    project(tmp_path)
    r = update(tmp_path)
    # update-baselines shows its progress, step by step, and where the time went.
    assert "memprof-ci: benchmark 1 of 1 (costly): counted runs, " in r.stdout
    assert "s elapsed" in r.stdout and "wall time by step: " in r.stdout
    # Under valgrind the fake's full command costs far more than its
    # profiled runs, and the manifest gives no smaller size: said so.
    assert "its counted overhead runs took" in r.stderr and "`overhead_args`" in r.stderr
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    assert base["obtained"]["count"] == "counted"
    assert base["counted"]["key"]["patch_id"] == PATCH["MEMPROF_CI_PATCH_ID"]
    r, b = check(tmp_path, "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    o = b["overhead"]
    assert o["obtained"]["count"] == "carried", o["obtained"]
    assert "counted runs" not in b["cost"] and "seed runs" in b["cost"]
    assert o["counted"] == base["counted"] and o["estimate"] == base["estimate"]
    assert any("carried from the baseline" in n for n in b["notes"])
    row = md_row(tmp_path, "rep")
    assert "cycles, carried (limit " in row
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "cycles, carried from the baseline" in html and "time not measured" in html
    # update-baselines of the same code carries it too.
    r = update(tmp_path)
    again = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    assert again["obtained"]["count"] == "carried" and again["counted"] == base["counted"]
    assert "counted runs" not in r.stdout.split("wall time by step: ")[1]


def test_a_change_that_allocates_a_little_more_is_estimated_and_says_so(tmp_path):
    """+30% words: the baseline's profiling cycles scaled by the largest
    growth of what they follow (x1.3) stay far under the limit, so the
    check estimates instead of counting, and every rendering says so."""
    project(tmp_path)
    update(tmp_path)
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    project(tmp_path, words=1.3e5)
    r, b = check(tmp_path, "rep")
    o = b["overhead"]
    assert o["obtained"]["count"] == "estimated", o["obtained"]
    assert "allocated differently" in o["obtained"]["reason"]
    assert "scaled x1.300 (its minor words" in o["obtained"]["reason"]
    assert "counted runs" not in b["cost"] and "seed runs" in b["cost"]
    # Each step's CPU seconds beside its wall seconds (report.json's cost_cpu).
    assert set(b["cost_cpu"]) == set(b["cost"])
    assert all(isinstance(v, (int, float)) for v in b["cost_cpu"].values())
    prof = (base["cycles_on"] - base["cycles_off"]) * 1.3
    assert abs(o["estimate"] - prof / base["cycles_off"]) < 1e-12
    assert o["counted"] == base["counted"] and o["method"].startswith("estimated, not counted")
    assert b["checks"]["overhead"]["outcome"] == "passed", b["checks"]
    assert any("overhead: this run allocated differently" in n and "estimated" in n
               for n in b["notes"])
    assert "cycles, estimated (limit " in md_row(tmp_path, "rep")
    page = html.unescape((tmp_path / "rep" / "report.html").read_text())
    assert "cycles, estimated from the baseline's count" in page
    # update-baselines never estimates: a baseline's record is what later
    # checks scale from.
    r = update(tmp_path)
    again = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    assert again["obtained"]["count"] == "counted"
    assert "counted runs" in r.stdout.split("wall time by step: ")[1]


def test_a_change_that_allocates_more_is_counted_and_its_cost_caught(tmp_path):
    """The threat: a change that makes profiling costlier comes with a
    change of what is allocated (more samples, other stacks, more live at
    exit), as profiling's work follows the allocation.  Ten times the
    words scale the estimate to within half of the limit: the run counts,
    and its extra cost fails the check."""
    project(tmp_path)
    update(tmp_path)
    project(tmp_path, words=1e6)                          # the change: x10 words
    (tmp_path / "cost").write_text("300000 0\n")          # ... profiling costs more
    r, b = check(tmp_path, "rep")
    o = b["overhead"]
    assert o["obtained"]["count"] == "counted"
    assert "allocated differently" in o["obtained"]["reason"]
    assert "within 50% of the limit" in o["obtained"]["reason"]
    assert "counted runs" in b["cost"]
    assert b["checks"]["overhead"]["outcome"] == "failed", b["checks"]
    assert r.returncode == 1 and "cycles, counted" in md_row(tmp_path, "rep")


def test_what_decides_the_count_changed_so_it_is_counted(tmp_path):
    """Same allocation; the runtime, the environment or the count's
    arguments changed (the pull request's manifest says `env` and
    `overhead_args`): counted, and the extra cost of profiling is caught."""
    project(tmp_path)
    update(tmp_path)
    (tmp_path / "cost").write_text("300000 0\n")
    r, b = check(tmp_path, "rep", {"MEMPROF_CI_PATCH_ID": "5555666677778888"})
    assert b["overhead"]["obtained"]["count"] == "counted"
    assert "patch_id changed" in b["overhead"]["obtained"]["reason"]
    assert r.returncode == 1
    project(tmp_path, env='{ PYTHONHASHSEED = "0", EXTRA = "1" }')
    r, b = check(tmp_path, "rep2")
    assert "env changed" in b["overhead"]["obtained"]["reason"] and r.returncode == 1
    project(tmp_path)
    r, b = check(tmp_path, "rep3", {"MEMPROF_CI_PATCH_ID": ""})
    assert "patch id is not known" in b["overhead"]["obtained"]["reason"]
    assert r.returncode == 1


def profiled_run(tmp_path):
    """A baseline, then a run directory of the same code: (run.json's path,
    its document)."""
    project(tmp_path)
    update(tmp_path)
    r = cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--out", "run",
            timeout=600, env_extra=PATCH)
    assert r.returncode == 0, r.stdout + r.stderr
    p = tmp_path / "run" / "run.json"
    return p, json.load(open(p))


def test_a_run_directory_cannot_carry(tmp_path):
    """`check --from-run` judges what a build job measured; only a count
    is accepted there (a run directory saying "carried" is an error)."""
    p, doc = profiled_run(tmp_path)
    assert doc["benchmarks"]["costly"]["overhead"]["obtained"]["count"] == "counted"
    doc["benchmarks"]["costly"]["overhead"]["obtained"] = {"count": "carried",
                                                           "reason": "trust me"}
    p.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "--report-dir", "rep")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "overhead record of 'costly' was not counted in that run" in r.stdout + r.stderr


def test_a_run_directory_cannot_choose_the_counted_part(tmp_path):
    """The part of the run a count covers follows from the run's own
    profiles (overhead.stop_for): a run directory whose count claims a
    prefix its profiles do not give is an error."""
    p, doc = profiled_run(tmp_path)
    assert doc["benchmarks"]["costly"]["overhead"]["counted"]["stop"] is None
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "--report-dir", "rep0")
    assert r.returncode == 0, r.stdout + r.stderr
    doc["benchmarks"]["costly"]["overhead"]["counted"]["stop"] = {"after": 1, "of": 9}
    p.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "--report-dir", "rep")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("overhead record of 'costly' counted the first 1 of 9 minor collections, but its "
            "profiles give the whole run") in r.stdout + r.stderr


def test_update_keeps_the_schedule_spread_only_for_the_same_allocation(tmp_path):
    """update-baselines of unchanged code keeps the replaced baseline's
    schedule spread (its dithered runs follow from the allocation on one
    runtime); a change of allocation or of the runtime runs them again."""
    project(tmp_path)
    env = dict(PATCH, MEMPROF_CI_SCHEDULE_RUNS="2")
    update(tmp_path, env)
    first = json.load(open(tmp_path / "baselines" / "costly.json"))["schedule"]
    r = update(tmp_path, env)
    assert "kept from the replaced baseline" in r.stdout and "the schedule spread" in r.stdout
    assert "schedule runs" not in r.stdout.split("wall time by step: ")[1]
    assert json.load(open(tmp_path / "baselines" / "costly.json"))["schedule"] == first
    project(tmp_path, words=1.3e5)
    r = update(tmp_path, env)
    assert "schedule runs" in r.stdout.split("wall time by step: ")[1]
    assert "kept from the replaced baseline" not in r.stdout
    r = update(tmp_path, dict(env, MEMPROF_CI_PATCH_ID="5555666677778888"))
    assert "schedule runs" in r.stdout.split("wall time by step: ")[1]


def _agg(words, samples, live_words, stacks):
    from types import SimpleNamespace as NS
    pts = NS(sites={"a": NS(words=words, blocks=words // 4, live_words=live_words)})
    return NS(gc={"minor_words": words}, total_samples=samples, total_live=0, total_peak=None,
              points=pts, stacks=stacks, stacks_other=(0, 0))


def test_the_scale_is_the_largest_growth_of_what_profiling_follows():
    """Every driver counts: the same words with deeper sampled stacks, or
    more live words at exit, scale the estimate; nothing scales it below
    1; a driver the baseline lacks gives no estimate (the run counts)."""
    from memprof_ci.measure.overhead_carry import scale
    base = _agg(1000, 10, 100, [(["f"] * 2, "k", 0, 10, 0)])
    s, what = scale(_agg(1000, 10, 100, [(["f"] * 8, "k", 0, 10, 0)]), base)
    assert s == 4.0 and "sampled frames" in what
    s, what = scale(_agg(900, 10, 300, [(["f"] * 2, "k", 0, 10, 0)]), base)
    assert s == 3.0 and "point live words" in what
    assert scale(_agg(500, 5, 50, [(["f"] * 2, "k", 0, 5, 0)]), base)[0] == 1.0
    s, why = scale(_agg(1000, 10, 100, [(["f"] * 2, "k", 0, 10, 0)]),
                   _agg(1000, 10, 0, [(["f"] * 2, "k", 0, 10, 0)]))
    assert s is None and "point live words" in why


def _concurrent(on_irs, off_irs=(1_000_000,) * 3):
    """A concurrent benchmark and its baseline counted three times a side
    (instructions only: no misses), recorded on patch 1111222233334444."""
    from types import SimpleNamespace as NS
    from memprof_ci.measure import overhead
    from memprof_ci.measure.drivers import cachegrind
    bench = NS(name="par", concurrent=True, command=["./par.exe", "9"], overhead_args=None,
               cwd="/x", env={}, profiled_rate=1e-3, seeds=[1], frames=16,
               overhead_budget=0.10, overhead_tolerance=0.10)

    def ev(ir):
        return dict({k: 0 for k in cachegrind.EVENTS}, Ir=ir)
    c = {"args": ["9"], "model": cachegrind.MODEL, "concurrent": True, "threads": "allowed",
         "key": overhead.counted_key(bench, PATCH["MEMPROF_CI_PATCH_ID"]),
         "off": [ev(x) for x in off_irs], "on": [ev(x) for x in on_irs]}
    rec = overhead._record(c, None, None)
    base = _agg(1000, 10, 100, [(["f"] * 2, "k", 0, 10, 0)])
    base.meta = {"overhead": rec}
    return bench, base, rec


def test_a_concurrent_benchmark_is_estimated_from_its_range_until_near_the_limit():
    """A concurrent benchmark is never carried (it counts differently on
    every run); a check estimates it from the baseline's range, its upper
    end scaled, and counts when that comes within half of the limit."""
    from memprof_ci.measure.overhead_carry import carry
    pid = PATCH["MEMPROF_CI_PATCH_ID"]
    bench, base, rec = _concurrent([1_010_000, 1_020_000, 1_060_000])   # +2% up to +6%
    cur = _agg(1100, 11, 100, [(["f"] * 2, "k", 0, 11, 0)])               # x1.1 words
    got, why, how = carry(bench, base, lambda: cur, pid, estimate=True)
    assert how == "estimated" and "counts differently on every run" in why, why
    assert abs(got["scaled"]["estimate"] - 0.022) < 1e-9
    assert abs(got["scaled"]["ci_high"] - 0.066) < 1e-9
    assert carry(bench, base, lambda: cur, pid)[2] == "counted"      # update-baselines counts
    bench, base, rec = _concurrent([1_010_000, 1_020_000, 1_070_000])   # up to +7%
    cur = _agg(1300, 13, 100, [(["f"] * 2, "k", 0, 13, 0)])               # x1.3: +9.1% >= 8.5%
    got, why, how = carry(bench, base, lambda: cur, pid, estimate=True)
    assert how == "counted" and "within 50% of the limit" in why, why
