"""The overhead check judges counts, not time: a pull request fails only when
it made profiling costlier in estimated cycles (cachegrind) than the
baseline recorded, whatever the machine's load does to the timed runs.

fakebench plays the benchmark under valgrind like any Python program (its
interpreter's instructions are counted; PYTHONHASHSEED makes them the same
on every run).  `--profiled-cost FILE` makes each profiled run do N more
loop iterations (a real cost) and have a child process burn S seconds of
CPU (a machine slow exactly when profiling is on: valgrind counts only the
benchmark's own process), so both can be switched on between the baseline
and the check without changing the benchmark's arguments.
"""

import json
import re
import subprocess

import pytest

from harness_testlib import FAKE, PY, cli, spec_sites, write_json

from memprof_ci.measure import overhead, overhead_time
from memprof_ci.decide import overhead_verdict
from memprof_ci.errors import InputError


def fake_project(tmp_path, budget=0.10, extra="", work=0.3):
    """One fake benchmark whose profiled cost is read from tmp/cost.  Its
    timed runs spend `work` seconds of CPU first (so that their times are
    not all interpreter start-up); its counted runs (overhead_args) do not,
    as a loop that runs until a time has passed counts differently on each
    run."""
    spec = write_json(tmp_path / "costly.spec.json", {"sites": spec_sites([1e5])})
    args = ["-S", FAKE, spec, "--profiled-cost", str(tmp_path / "cost")]
    (tmp_path / "benchmarks.toml").write_text(
        "[defaults]\nrate = 1e-3\nseeds = [1, 2]\noverhead_runs = 3\n"
        f"overhead_budget = {budget}\n{extra}\n"
        "[[benchmark]]\nname = \"costly\"\nmode = \"sampled\"\n"
        f"command = {json.dumps([PY, *args, '--work', str(work)])}\n"
        f"overhead_args = {json.dumps(args)}\n"
        "env = { PYTHONHASHSEED = \"0\" }\n")


def set_cost(tmp_path, iterations, stall_s):
    (tmp_path / "cost").write_text(f"{iterations} {stall_s}\n")


# No runtime patch id: no run can tell that the baseline's count still
# holds (overhead_carry.py), so every check below counts (carrying is
# test_overhead_carry.py's).
NO_PATCH_ID = {"MEMPROF_CI_PATCH_ID": ""}


def check(tmp_path, rep="rep", *extra):
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "-m", "overhead",
            "--report-dir", rep, *extra, timeout=600, env_extra=NO_PATCH_ID)
    doc = json.load(open(tmp_path / rep / "report.json"))
    return r, doc["benchmarks"]["costly"]


def update(tmp_path, *extra):
    return cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", *extra,
               timeout=600, env_extra=NO_PATCH_ID)


def test_counts_repeat_exactly_and_stalled_profiled_runs_still_pass(tmp_path):
    fake_project(tmp_path)
    set_cost(tmp_path, 0, 0)
    r = update(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    assert base["measure"] == "cycles" and base["counted"]["threads"] == "disabled"
    # Unchanged: the same counts, to the instruction and the miss, so the
    # same figures, and no failure.
    r, b = check(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    o = b["overhead"]
    assert o["counted"]["on"] == base["counted"]["on"]
    assert o["counted"]["off"] == base["counted"]["off"]
    assert o["estimate"] == base["estimate"] and o["basis"] == "baseline"
    assert o["threshold"] == base["ci_high"] + 0.10
    # Every profiled run now waits for 1 s of CPU burnt beside it (the
    # timed ones three times slower): the count does not move.
    set_cost(tmp_path, 0, 1.0)
    r, b = check(tmp_path, "rep2", "--overhead-info")
    assert r.returncode == 0, r.stdout + r.stderr
    o = b["overhead"]
    stalls = (tmp_path / "cost.stalls").read_text().splitlines()
    # Each timed "on" run, the counted one and the peak RSS run.
    assert len(stalls) == o["time"]["runs"] + 1 + len(o["rss"]["on_kb"])
    assert o["status"] == "~" and o["counted"]["off"] == base["counted"]["off"]
    assert abs(o["estimate"] - base["estimate"]) < 0.01
    row = [x for x in open(tmp_path / "rep2" / "report.md").read().splitlines()
           if x.startswith("| costly |")][0]
    assert "cycles" in row and "❌" not in row
    # The status table's cell is the estimate alone; time is in the full line.
    assert "time CPU" in (tmp_path / "rep2" / "report.html").read_text()


def test_time_fails_the_check_only_when_the_manifest_asks(tmp_path):
    """The stall of the test above, with overhead_time_fails: CPU time four
    times the unprofiled run's in every round, so it fails on time."""
    fake_project(tmp_path, extra="overhead_time_fails = true")
    set_cost(tmp_path, 0, 0)
    assert update(tmp_path).returncode == 0
    set_cost(tmp_path, 0, 1.0)
    r, b = check(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "overhead_time_fails" in r.stdout and "sign test" in r.stdout
    v = b["overhead"]["time"]["verdict"]
    assert v["status"] == "regression" and b["overhead"]["time"]["runs"] == 7
    assert b["overhead"]["ci_low"] <= b["overhead"]["threshold"]    # the count passes


def test_a_real_extra_cost_of_profiling_fails(tmp_path):
    fake_project(tmp_path)
    set_cost(tmp_path, 0, 0)
    assert update(tmp_path).returncode == 0
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    # 300,000 iterations more per profiled run: far more than 10% of the
    # unprofiled run's estimated cycles.
    set_cost(tmp_path, 300_000, 0)
    r, b = check(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    o = b["overhead"]
    assert o["status"] == "regression" and o["ci_low"] > base["ci_high"] + 0.10
    assert o["counted"]["off"] == base["counted"]["off"]
    assert "estimated cycles" in r.stdout and "plus the tolerance 10%" in r.stdout
    row = [x for x in open(tmp_path / "rep" / "report.md").read().splitlines()
           if x.startswith("| costly |")][0]
    assert "❌" in row and "(limit +" in row


def test_old_timed_baseline_loads_and_is_judged_against_the_budget(tmp_path):
    fake_project(tmp_path)
    set_cost(tmp_path, 0, 0)
    assert update(tmp_path, "--no-overhead").returncode == 0
    p = tmp_path / "baselines" / "costly.json"
    doc = json.load(open(p))
    # A record as update-baselines wrote it before the counted check.
    doc["overhead"] = {
        "above_budget": 0, "ci_high": 0.09, "ci_low": 0.004, "confirmation_runs": 0,
        "estimate": 0.023, "first_rounds": 5, "level": 0.01, "median_off_s": 0.225,
        "median_on_s": 0.231, "method": "CPU time (user + system)",
        "off_s": [0.224, 0.224, 0.225, 0.226, 0.228],
        "on_s": [0.233, 0.244, 0.230, 0.231, 0.229], "p_value": 1.0, "runs": 5,
        "screened": False, "threshold": 0.1, "wall_estimate": 0.024}
    p.write_text(json.dumps(doc))
    r, b = check(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert b["overhead"]["basis"] == "budget" and b["overhead"]["threshold"] == 0.10
    assert any("records only a timed overhead" in n for n in b["notes"]), b["notes"]
    # Over the budget, the same baseline fails, naming the budget.
    set_cost(tmp_path, 300_000, 0)
    r, b = check(tmp_path, "rep2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the budget 10%" in r.stdout


def test_update_warns_over_budget_and_suggests_a_rate(tmp_path):
    fake_project(tmp_path)
    set_cost(tmp_path, 300_000, 0)
    r = update(tmp_path, "--strict")
    assert r.returncode == 2 and "(--strict)" in r.stderr, r.stdout + r.stderr
    warn = [x for x in r.stderr.splitlines() if "over the budget 10%" in x]
    assert len(warn) == 1, r.stderr
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    assert base["estimate"] > 0.10
    suggested = float(re.search(r"rate = (\S+) should meet it", warn[0]).group(1))
    assert suggested == overhead.nice_rate_below(1e-3, 0.10 / base["estimate"])


def test_judge_reads_the_range_of_a_concurrent_benchmark():
    """Three runs per side: fails only when the lowest pairing is over."""
    ev = dict.fromkeys(overhead.cachegrind.EVENTS, 0)

    def runs(*irs):
        return [dict(ev, Ir=n) for n in irs]
    rec = overhead.parse_record({"measure": "cycles", "time": None, "counted": {
        "args": ["1"], "model": overhead.cachegrind.MODEL, "concurrent": True,
        "threads": "allowed", "off": runs(100, 104, 102), "on": runs(120, 130, 125)}}, "x")
    assert rec["estimate"] == pytest.approx(125 / 102 - 1)
    assert rec["ci_low"] == pytest.approx(120 / 104 - 1)
    assert rec["ci_high"] == pytest.approx(130 / 100 - 1)

    class B:
        name, overhead_budget, overhead_tolerance = "c", 0.10, 0.10
        overhead_time_fails, alpha = False, 0.01
    assert overhead_verdict.judge(rec, B, 0.16, "budget", "", None, 0.01)["status"] == "~"
    assert overhead_verdict.judge(rec, B, 0.15, "budget", "", None, 0.01)["status"] == "regression"


def test_a_record_cannot_state_a_figure_its_counts_do_not_give():
    ev = dict.fromkeys(overhead.cachegrind.EVENTS, 0)
    d = {"measure": "cycles", "time": None, "estimate": -0.5, "ci_low": -0.5, "ci_high": -0.5,
         "counted": {"args": [], "model": "m", "concurrent": False, "threads": "disabled",
                     "off": [dict(ev, Ir=1000)], "on": [dict(ev, Ir=1500)]}}
    rec = overhead.parse_record(d, "x")
    assert rec["estimate"] == rec["ci_low"] == rec["ci_high"] == 0.5
    with pytest.raises(InputError, match=r"x\.counted\.on\[0\]\.Ir"):
        overhead.parse_record(dict(d, counted=dict(d["counted"], on=[dict(ev, Ir=-3)])), "x")


def test_nice_rate_below():
    assert overhead.nice_rate_below(1e-4, 0.10 / 0.5) == 2e-5
    assert overhead.nice_rate_below(1e-4, 0.10 / 0.12) == 5e-5
    assert overhead.nice_rate_below(1e-3, 0.9) == 5e-4


@pytest.mark.parametrize("filtered", [True, False])
def test_nothreads_refuses_threads_and_allows_processes(filtered):
    prog = ("import threading, os\n"
            "try:\n    threading.Thread(target=lambda: None).start(); print('thread')\n"
            "except RuntimeError:\n    print('no thread')\n"
            "pid = os.fork()\nif pid == 0:\n    os._exit(7)\n"
            "print('child', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    cmd = [PY, "-S", "-c", prog]
    if filtered:
        cmd = [PY, "-S", "-E", overhead.cachegrind.NOTHREADS, *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["no thread" if filtered else "thread", "child 7"]


def test_a_run_directory_is_judged_from_its_counts(tmp_path):
    """`profile` keeps the counts in run.json; `check --from-run` derives
    every figure from them again, so an edited estimate changes nothing."""
    fake_project(tmp_path)
    set_cost(tmp_path, 0, 0)
    assert update(tmp_path).returncode == 0
    base = json.load(open(tmp_path / "baselines" / "costly.json"))["overhead"]
    r = cli(tmp_path, "profile", "--manifest", "benchmarks.toml", "--out", "run", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    p = tmp_path / "run" / "run.json"
    doc = json.load(open(p))
    assert doc["benchmarks"]["costly"]["overhead"]["counted"]["on"] == base["counted"]["on"]
    doc["benchmarks"]["costly"]["overhead"].update(estimate=-0.5, ci_low=-0.5, ci_high=-0.5)
    p.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "-m", "overhead", "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    o = json.load(open(tmp_path / "rep" / "report.json"))["benchmarks"]["costly"]["overhead"]
    assert o["estimate"] == base["estimate"] and o["basis"] == "baseline"
    # A run directory may come from an untrusted build: a record in the
    # older timed form (no counts) is an error, never a skipped check.
    doc["benchmarks"]["costly"]["overhead"] = {
        "estimate": 0.0, "ci_low": -0.01, "ci_high": 0.01, "p_value": 1.0,
        "median_off_s": 0.05, "median_on_s": 0.05, "runs": 5, "method": "timed"}
    p.write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--from-run", "run", "--manifest", "benchmarks.toml",
            "-m", "overhead", "--report-dir", "rep3")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "overhead record of 'costly' has no cachegrind counts" in r.stdout + r.stderr


def test_noisy_time_is_shown_as_the_spread_of_its_pairs():
    """The pairs of a machine slowed down in phases lined up with one side
    (two speeds, 0.28 s and 0.50 s): their median ratio would read as a
    precise -39%; the report shows the range of the pairs instead."""
    from memprof_ci.measure import overhead_time
    from memprof_ci.text.fmt import overhead_text
    off = [0.51, 0.51, 0.29, 0.50, 0.28, 0.30, 0.50]
    on = [0.30, 0.29, 0.52, 0.29, 0.28, 0.30, 0.29]
    t = overhead_time.with_summary({"runs": 7, "first_rounds": 7, "cpu_on_s": on,
                                    "cpu_off_s": off, "wall_on_s": on, "wall_off_s": off})
    assert t["noisy"] and "off runs 0.28-0.51 s" in t["cpu"]["noise"]
    text = overhead_text({"estimate": 0.02, "ci_low": 0.02, "ci_high": 0.02, "time": t})
    assert "CPU noisy (pairs -43% to +79%)" in text
    assert f"{t['cpu']['estimate']:+.1%}" not in text
    steady = overhead_time.with_summary({"runs": 5, "first_rounds": 5,
                                         "cpu_on_s": [0.31, 0.32, 0.31, 0.33, 0.31],
                                         "cpu_off_s": [0.30, 0.31, 0.30, 0.32, 0.30],
                                         "wall_on_s": None, "wall_off_s": None})
    assert not steady["noisy"] and steady["wall"] is None
    assert "time CPU +3.3% [+3.1%, +3.3%]" in overhead_text(
        {"estimate": 0.02, "ci_low": 0.02, "ci_high": 0.02, "time": steady})


def test_a_baseline_counted_otherwise_is_judged_against_the_budget():
    ev = dict.fromkeys(overhead.cachegrind.EVENTS, 0)
    base = overhead.parse_record({"measure": "cycles", "time": None, "counted": {
        "args": ["260"], "model": overhead.cachegrind.MODEL, "concurrent": False,
        "threads": "disabled", "off": [dict(ev, Ir=100)], "on": [dict(ev, Ir=102)]}}, "b")

    class B:
        name, overhead_budget, overhead_tolerance = "x", 0.10, 0.10
    assert overhead.threshold_for(B, base, ["260"]) == (base["ci_high"] + 0.10, "baseline", "")
    t, basis, note = overhead.threshold_for(B, base, ["13000"])
    assert (t, basis) == (0.10, "budget") and "arguments '260'" in note
    other = dict(base, counted=dict(base["counted"], model="cachegrind LL=1"))
    assert "another model" in overhead.threshold_for(B, other, ["260"])[2]
    assert overhead.threshold_for(B, None, ["260"]) == (0.10, "budget", "")


def test_measuring_leaves_the_status_to_the_decision_pass():
    """A measured record (what measure/ returns and parse_record reads back)
    carries no status and no time verdict; decide/overhead_verdict.judge
    gives both, and with overhead_time_fails a CPU time over its threshold
    in enough steady rounds fails the check although the count passes."""
    ev = dict.fromkeys(overhead.cachegrind.EVENTS, 0)
    steady_off = [0.30, 0.31, 0.30, 0.32, 0.30, 0.31, 0.30]
    rec = overhead.parse_record({"measure": "cycles", "counted": {
        "args": ["1"], "model": overhead.cachegrind.MODEL, "concurrent": False,
        "threads": "disabled", "off": [dict(ev, Ir=100)], "on": [dict(ev, Ir=101)]},
        "time": {"runs": 7, "first_rounds": 7, "cpu_off_s": steady_off,
                 "cpu_on_s": [x * 1.5 for x in steady_off],
                 "wall_off_s": None, "wall_on_s": None}}, "x")
    assert "status" not in rec and "verdict" not in rec["time"]

    class B:
        name, overhead_budget, overhead_tolerance = "t", 0.10, 0.10
        overhead_time_fails, alpha = True, 0.01
    j = overhead_verdict.judge(rec, B, 0.12, "budget", "", None, 0.01)
    assert "status" not in rec
    assert j["time"]["verdict"]["status"] == "regression" and j["status"] == "regression"
    assert "sign test" in overhead_verdict.failure_message(j, B)
    B.overhead_time_fails = False
    assert overhead_verdict.judge(rec, B, 0.12, "budget", "", None, 0.01)["status"] == "~"
    # Two rounds too few for level 0.01 (rounds_for_level: 7): not decided.
    short = overhead_time.with_summary(dict(rec["time"], runs=5, first_rounds=5,
                                            cpu_off_s=steady_off[:5],
                                            cpu_on_s=[x * 1.5 for x in steady_off[:5]]))
    tv = overhead_verdict.time_verdict(short, 0.12, 0.01)
    assert tv["status"] == "~" and "too few rounds" in tv["note"]
