"""The memprof-ci CLI as a subprocess: verdicts, exit codes, reports, bad input."""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
from harness_testlib import (BASE_WORDS, FAKE, HARNESS, PY, bump, check, cli, make_profile,
                             no_traceback, project, run_many, spec_sites, update, write_json)

def test_clean_then_regression_reports_exactly_that_site(tmp_path):
    cnt = str(tmp_path / "count.txt")
    project(tmp_path, [{"name": "alpha", "spec": {"sites": spec_sites(BASE_WORDS)},
                        "args": ["--count", cnt]},
                       {"name": "beta", "spec": {"sites": spec_sites([3e7, 2e6])}}])
    update(tmp_path)
    assert sorted(os.listdir(tmp_path / "baselines")) == ["alpha.json", "beta.json"]
    os.unlink(cnt)
    r = check(tmp_path, "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    # Three checks of alpha, but one run per seed.
    lines = open(cnt).read().split()
    assert len(lines) == 2 and len({x.split(",")[1] for x in lines}) == 2
    bump(tmp_path, "alpha", 1, 1.3)
    r = check(tmp_path, "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    regs = [(x["benchmark"], x["check"], x["site"]) for b in rep["benchmarks"].values()
            for x in (b["alloc"] or []) + (b["live"] or []) if x["status"] == "regression"]
    assert regs == [("alpha", "alloc", "Main.f1 @ main.ml"), ("alpha", "live", "Main.f1 @ main.ml")]
    # pytest's failure section: the message's own lines stay lines
    assert "more than the baseline:\n  Main.f1 @ main.ml" in r.stdout, r.stdout
    assert "baseline:\\n" not in r.stdout
    assert rep["verdict"]["exit_code"] == 1
    md = open(tmp_path / "rep" / "report.md").read()
    assert "### Regressions" in md and "Main.f1 @ main.ml" in md.split("### Benchmarks")[0]
    junit = open(tmp_path / "rep" / "junit.xml").read()
    assert 'failures="3"' in junit and 'errors="0"' in junit
    # -m selects checks like pytest does.
    r1, r2 = run_many([(["check", "--manifest", "benchmarks.toml", "--no-overhead", *a],
                        str(tmp_path)) for a in (["-m", "gc_totals"], ["-k", "beta"])])
    assert r1.returncode == 1 and "minor_words" in r1.stdout
    assert r2.returncode == 0, r2.stdout


def test_new_benchmark_is_not_a_failure_unless_strict(tmp_path):
    project(tmp_path)
    r = check(tmp_path, "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    # pytest's summary places the skips at the manifest, folded by reason.
    assert "SKIPPED [4] benchmarks.toml: new benchmark 'alpha': no baseline" in r.stdout, r.stdout
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    assert rep["benchmarks"]["alpha"]["checks"]["alloc_sites"]["outcome"] == "skipped"
    r = check(tmp_path, "--strict")
    assert r.returncode == 1 and "--strict" in r.stdout


@pytest.mark.parametrize("args,msg", [
    (["--crash"], "killed by signal"),
    (["--exit", "3"], "exited with status 3"),
    (["--no-profile"], "wrote no profile"),
    (["--garbage"], "not valid JSON"),
    (["--version", "7"], "version 7 is not supported"),
    (["--sleep", "300"], "timed out after 2s"),
])
def test_broken_benchmark_exits_2(tmp_path, args, msg):
    # Only the sleeping benchmark gets a short timeout: the others must fail
    # for their own reason however slow the machine.
    project(tmp_path, [{"name": "bad", "spec": {"sites": spec_sites([1e6])}, "args": args,
                        "timeout": 2 if "--sleep" in args else 600}])
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead")
    assert r.returncode == 2, r.stdout + r.stderr
    assert msg in r.stderr and r.stderr.startswith("memprof-ci: error: bad ("), r.stderr
    no_traceback(r)
    if "--crash" in args or "--exit" in args:
        assert "stderr tail:" in r.stderr
    if "--crash" in args:
        write_json(tmp_path / "baselines" / "bad.json", {"x": 1})
        r = check(tmp_path, "--report-dir", "rep")
        assert r.returncode == 2, r.stdout + r.stderr
        assert "not a memprof-ci baseline" in r.stderr
        junit = open(tmp_path / "rep" / "junit.xml").read()
        # alloc_sites, gc_totals, live, peak and budget (points = true)
        assert 'errors="5"' in junit and 'failures="0"' in junit
        no_traceback(r)


def _killed(pid: int) -> bool:
    """The process is gone, a zombie, or has SIGKILL pending (delivery is
    asynchronous, but pending is set before kill() returns)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            st = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
    except FileNotFoundError:
        return True
    sigkill = 1 << (signal.SIGKILL - 1)
    return (st["State"].split()[0] in "ZX"
            or bool((int(st["ShdPnd"], 16) | int(st["SigPnd"], 16)) & sigkill))


def test_timeout_kills_process_group(tmp_path):
    # The grandchild (sleep) holds stderr open unless the whole process
    # group is killed: without the group kill the CLI never returns (the
    # run below then fails on its own timeout), and with it the grandchild
    # is dead or dying by the time the CLI has returned.
    pidfile = tmp_path / "sleep.pid"
    project(tmp_path, [{"name": "hang", "command": [
        "/bin/sh", "-c", f"sleep 100000 & echo $! > {pidfile}; wait; echo x"],
        "timeout": 1}])
    try:
        r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml",
                "--no-overhead", timeout=900)
        assert r.returncode == 2 and "timed out after 1s" in r.stderr
        assert _killed(int(pidfile.read_text()))
    finally:
        if pidfile.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_missing_command_exits_2(tmp_path):
    project(tmp_path, [{"name": "gone", "command": ["./_build/no/such.exe"]}])
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead")
    assert r.returncode == 2 and "command not found" in r.stderr and "make runtime" in r.stderr
    no_traceback(r)


def test_bad_baselines_exit_2(tmp_path):
    project(tmp_path)
    update(tmp_path)
    good = (tmp_path / "baselines" / "alpha.json").read_text()
    cases = [("{oops", "not valid JSON"),
             (good.replace('"version": 1', '"version": 7'), "version 7"),
             (good.replace('"rate": 0.001', '"rate": 0.01'), "rate=0.01"),
             (good.replace('"grouping": "function"', '"grouping": "line"'), "grouping"),
             (good.replace('"seeds": [\n      1,', '"seeds": [\n      9,'), "seeds=[9, 2]")]
    for i, (text, _) in enumerate(cases):
        os.makedirs(tmp_path / f"bl{i}")
        (tmp_path / f"bl{i}" / "alpha.json").write_text(text)
    results = run_many([(["check", "--manifest", "benchmarks.toml", "--no-overhead", "-k",
                          "alpha", "--baselines", f"bl{i}"], str(tmp_path))
                        for i in range(len(cases))])
    for (_, msg), r in zip(cases, results):
        assert r.returncode == 2, (msg, r.stdout, r.stderr)
        assert msg in r.stderr and "alpha.json" in r.stderr, r.stderr
        assert "regression" not in r.stdout.split("memprof-ci:")[-1].split("\n")[0]
        no_traceback(r)


def test_manifest_and_usage_errors_exit_2(tmp_path):
    (tmp_path / "benchmarks.toml").write_text('[[benchmark]]\nname="a"\ncommand=["x"]\nrtae=1\n')
    r = check(tmp_path, "--report-dir", "rep")
    assert r.returncode == 2 and "unknown key `rtae`" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    no_traceback(r)
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    assert rep["verdict"]["exit_code"] == 2 and "rtae" in rep["verdict"]["errors"][0]
    assert cli(tmp_path, "check", "--manifest", "nope.toml").returncode == 2
    assert cli(tmp_path, "frobnicate").returncode == 2
    assert cli(tmp_path, "check", "--shard", "3/2").returncode == 2
    project(tmp_path)
    r = check(tmp_path, "-k", "nosuchbench")
    assert r.returncode == 2 and "no checks selected" in r.stderr


def test_compare_profiles_dirs_and_baselines(tmp_path):
    def site(fn, n):
        return ([("Stdlib__List.init", "list.ml", 3), (fn, "m.ml", 5)], n, 0)
    for seed in (1, 2):
        write_json(tmp_path / "a" / f"bench.{seed}.json",
                   make_profile([site("M.f", 2000), site("M.g", 3000)], seed=seed))
        write_json(tmp_path / "b" / f"bench.{seed}.json",
                   make_profile([site("M.f", 2600), site("M.g", 3000)], seed=seed))
    r = cli(tmp_path, "compare", "a/bench.1.json", "a/bench.2.json")
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(tmp_path, "compare", "a", "b", "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.loads(r.stdout)
    regs = [x["site"] for x in rep["benchmarks"]["bench"]["alloc"] if x["status"] == "regression"]
    assert regs == ["M.f @ m.ml"]
    r = cli(tmp_path, "compare", "b", "a", "--format", "markdown")
    assert r.returncode == 0 and "Improvements" in r.stdout
    # Different exposure (one run against two) is accounted for.
    r = cli(tmp_path, "compare", "a/bench.1.json", "a")
    assert r.returncode == 0, r.stdout + r.stderr
    (tmp_path / "bad.json").write_text("[]")
    r = cli(tmp_path, "compare", "a", "bad.json")
    assert r.returncode == 2 and "bad.json" in r.stderr
    no_traceback(r)


def test_compare_baseline_files(tmp_path):
    project(tmp_path)
    update(tmp_path)
    shutil.copytree(tmp_path / "baselines", tmp_path / "old")
    bump(tmp_path, "beta", 0, 1.5)
    update(tmp_path)
    r = cli(tmp_path, "compare", "old/beta.json", "baselines/beta.json")
    assert r.returncode == 1 and "Main.f0 @ main.ml" in r.stdout
    r = cli(tmp_path, "compare", "old", "baselines", "--format", "json")
    assert r.returncode == 1
    assert set(json.loads(r.stdout)["benchmarks"]) == {"alpha", "beta"}


def test_shards_and_merge(tmp_path):
    benches = [{"name": f"b{i}", "spec": {"sites": spec_sites([1e7, 5e6])}} for i in range(5)]
    project(tmp_path, benches)
    update(tmp_path)
    bump(tmp_path, "b3", 0, 1.3)
    seen, codes = [], []
    results = run_many([(["check", "--manifest", "benchmarks.toml", "--no-overhead", "--shard",
                          f"{k}/3", "--report-dir", f"shard{k}", "--results-json",
                          f"results{k}.json"], str(tmp_path)) for k in (1, 2, 3)])
    for k, r in zip((1, 2, 3), results):
        codes.append(r.returncode)
        seen += sorted(json.load(open(tmp_path / f"shard{k}" / "report.json"))["benchmarks"])
        assert (tmp_path / f"shard{k}" / "junit.xml").exists()
    assert sorted(seen) == [f"b{i}" for i in range(5)]
    assert sorted(codes) == [0, 0, 1]
    r = cli(tmp_path, "merge", "merged", "shard1", "shard2", "results3.json")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "merged" / "report.json"))
    n_rows = sum(len(b["alloc"]) + len(b["live"]) for b in rep["benchmarks"].values())
    assert [x for x in rep["benchmarks"]["b3"]["alloc"] if x["status"] == "regression"]
    # Holm over all shards: the smallest p is multiplied by the full family size.
    # Holm's step for the smallest non-zero p (rank z+1 after z zeros) is
    # (m - z) * p, m counting every row of every shard.
    rows = [x for b in rep["benchmarks"].values() for x in b["alloc"] + b["live"]]
    zeros = sum(1 for x in rows if x["p_raw"] == 0)
    first = min((x for x in rows if x["p_raw"] > 0), key=lambda x: x["p_raw"])
    assert first["p_raw"] * (n_rows - zeros) < 1
    assert first["p_adj"] == pytest.approx(first["p_raw"] * (n_rows - zeros), rel=1e-9, abs=0)
    assert (tmp_path / "merged" / "report.md").exists()
    r, r2, r3 = run_many([
        (["merge", "merged2", "shard1", "shard3"], str(tmp_path)),
        (["merge", "merged3", "shard1", "shard1"], str(tmp_path)),
        # An empty shard is fine.
        (["check", "--manifest", "benchmarks.toml", "--shard", "7/9", "--report-dir", "empty"],
         str(tmp_path))])
    assert r.returncode == 2 and "missing shard report(s) 2/3" in r.stderr
    assert r2.returncode == 2 and "given twice" in r2.stderr
    assert r3.returncode == 0, r3.stdout + r3.stderr


def test_proposed_baselines(tmp_path):
    project(tmp_path)
    update(tmp_path)
    bump(tmp_path, "alpha", 1, 1.3)
    # The PR regenerates its baselines honestly...
    update(tmp_path, "--baselines", "proposed")
    r = check(tmp_path, "--proposed-baselines", "proposed", "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    md = open(tmp_path / "rep" / "report.md").read()
    head = md.split("### Regressions")[0]
    assert "updates baselines" in head and "alpha: baseline changed" in head
    assert "Main.f1 @ main.ml" in head
    # ...or tampers with them: proposed says f1 allocates much less than it does.
    p = tmp_path / "proposed" / "alpha.json"
    doc = json.load(open(p))
    doc["sites"]["Main.f1 @ main.ml"]["samples"] //= 2
    doc["totals"]["samples"] = sum(s["samples"] for s in doc["sites"].values())
    p.write_text(json.dumps(doc))
    r = check(tmp_path, "--proposed-baselines", "proposed")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "proposed baselines do not match the code" in r.stderr
    no_traceback(r)
    p.write_text("{broken")
    r = check(tmp_path, "--proposed-baselines", "proposed", "-k", "alpha")
    assert r.returncode == 2 and "proposed/alpha.json" in r.stderr


UMASK = os.umask(0)
os.umask(UMASK)


def test_update_is_atomic_and_locked(tmp_path):
    project(tmp_path, [{"name": "a", "spec": {"sites": spec_sites([1e6])}}])
    os.makedirs(tmp_path / "baselines")
    lock = os.open(tmp_path / "baselines", os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    # Set and empty: no runtime patch id (the fake program has no runtime).
    env = dict(os.environ, PYTHONPATH=HARNESS, MEMPROF_CI_PATCH_ID="")
    proc = subprocess.Popen([PY, "-m", "memprof_ci", "update-baselines", "--manifest",
                             "benchmarks.toml", "--no-overhead"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2.0)
    assert proc.poll() is None and not (tmp_path / "baselines" / "a.json").exists()
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    assert proc.wait(60) == 0
    assert sorted(os.listdir(tmp_path / "baselines")) == ["a.json"]
    assert oct(os.stat(tmp_path / "baselines" / "a.json").st_mode & 0o777) == oct(0o666 & ~UMASK)
    text = (tmp_path / "baselines" / "a.json").read_text()
    assert '\n    "Main.f0 @ main.ml": {' in text and json.loads(text)["patch_id"] is None


def test_overhead_check(tmp_path):
    """Two benchmarks: "cheap" judged on its count against its baseline;
    "slow", whose time is judged too, spends 0.3 s more CPU when profiled
    (not in its counted runs, whose arguments leave the spinning out)."""
    env = {"PYTHONHASHSEED": "0"}
    project(tmp_path, [
        {"name": "cheap", "spec": {"sites": spec_sites([1e5])}, "env": env,
         "overhead_args": [FAKE, str(tmp_path / "cheap.spec.json")],
         "args": ["--work", "0.2"]},
        {"name": "slow", "spec": {"sites": spec_sites([1e5])}, "env": env,
         "overhead_time_fails": True,
         "overhead_args": [FAKE, str(tmp_path / "slow.spec.json")],
         "args": ["--work", "0.2", "--slow-when-profiled", "0.3"]}],
        defaults={"overhead_runs": 3})
    env_patch = {"MEMPROF_CI_PATCH_ID": "patch-abc"}
    r = subprocess.run([PY, "-m", "memprof_ci", "update-baselines", "--manifest",
                        "benchmarks.toml", "-k", "cheap", "--overhead-info"], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=HARNESS, **env_patch),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    b = json.load(open(tmp_path / "baselines" / "cheap.json"))
    assert b["patch_id"] == "patch-abc" and b["overhead"]["time"]["runs"] == 3
    assert b["overhead"]["counted"]["args"] == [FAKE, str(tmp_path / "cheap.spec.json")]
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "-m", "overhead",
            "--report-dir", "rep", timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    assert rep["benchmarks"]["slow"]["checks"]["overhead"]["outcome"] == "failed"
    assert rep["benchmarks"]["cheap"]["checks"]["overhead"]["outcome"] == "passed"
    cheap, slow = (rep["benchmarks"][n]["overhead"] for n in ("cheap", "slow"))
    # The same counts; its key differs (this check knows no patch id, so it
    # counted: overhead_carry.py).
    assert {k: v for k, v in cheap["counted"].items() if k != "key"} == \
        {k: v for k, v in b["overhead"]["counted"].items() if k != "key"}
    assert cheap["basis"] == "baseline" and cheap["obtained"]["count"] == "counted"
    # "slow" fails on time alone: its count passes the budget.  Two overhead
    # checks at alpha 0.01: a time verdict needs p <= 0.005, so the three
    # rounds that all found it over budget were confirmed by five more
    # (2^-8 <= 0.005 < 2^-7), all over budget too.
    assert slow["basis"] == "budget" and slow["ci_low"] <= 0.10
    v = slow["time"]["verdict"]
    assert (slow["time"]["runs"], v["above"]) == (8, 8)
    assert v["p_value"] == 2 ** -8 and v["level"] == 0.005 and v["status"] == "regression"


def test_overhead_burst_is_outlasted_by_confirmation_rounds(tmp_path):
    """A benchmark whose time is judged, slow with profiling only in the
    first three timed runs (a burst of load), is over budget in every first
    round, and passes once the confirmation rounds, which it was not slow
    in, are counted."""
    counter = tmp_path / "timed-runs"
    project(tmp_path, [
        # 0.3 s of CPU work keeps the ordinary rounds' ratios far from 1.5;
        # the burst adds 0.6 s of CPU (ratio about 3).
        {"name": "bursty", "spec": {"sites": spec_sites([1e5])}, "overhead_budget": 0.5,
         "overhead_time_fails": True, "env": {"PYTHONHASHSEED": "0"},
         "overhead_args": [FAKE, str(tmp_path / "bursty.spec.json")],
         "args": ["--work", "0.3", "--slow-first-timed", "3", str(counter),
                  "--burst", "0.6"]}],
        defaults={"overhead_runs": 3})
    update(tmp_path)
    r = cli(tmp_path, "check", "--manifest", "benchmarks.toml", "-m", "overhead",
            "--report-dir", "rep", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    o = json.load(open(tmp_path / "rep" / "report.json"))["benchmarks"]["bursty"]["overhead"]
    v = o["time"]["verdict"]
    assert o["time"]["runs"] == 7                            # 2^-7 <= 0.01 < 2^-6
    assert v["above"] == 3 and v["status"] == "~" and v["p_value"] > 0.01
    assert len(counter.read_text().splitlines()) == 7


def test_module_and_help(tmp_path):
    r = cli(tmp_path, "--help")
    assert r.returncode == 0
    for sub in ("check", "update-baselines", "compare", "merge", "list"):
        assert sub in r.stdout
    project(tmp_path)
    r = cli(tmp_path, "list", "--manifest", "benchmarks.toml", "--shard", "2/2")
    assert r.stdout.split() == ["beta"]


def test_a_check_that_reads_nothing_live_skips_the_exit_walk(tmp_path):
    """Runs whose selected checks read nothing live at exit pass live=off
    (no walk of the heap), and the report says live was not decided; with
    the live check selected they decide it as always."""
    log = tmp_path / "runs.log"
    project(tmp_path, [{"name": "alpha", "spec": {"sites": spec_sites(BASE_WORDS)},
                        "args": ["--count", str(log)]}])
    update(tmp_path)

    def judged(*args):
        log.write_text("")
        r = check(tmp_path, "--report-dir", "rep", *args)
        assert r.returncode == 0, r.stdout + r.stderr
        rep = json.load(open(tmp_path / "rep" / "report.json"))
        return log.read_text().splitlines(), rep["benchmarks"]["alpha"]

    envs, b = judged("-m", "alloc_sites or gc_totals")
    assert len(envs) == 2 and all(",live=off" in e for e in envs), envs
    assert b["current"]["total_live_samples"] is None
    assert any("live at exit not decided" in n for n in b["notes"]), b["notes"]
    assert b["checks"]["alloc_sites"]["outcome"] == "passed"
    envs, b = judged()
    assert len(envs) == 2 and not any("live=" in e for e in envs), envs
    assert b["checks"]["live"]["outcome"] == "passed"
    assert isinstance(b["current"]["total_live_samples"], int)
