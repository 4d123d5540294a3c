"""End to end with the real patched OCaml runtime (marker: needs_runtime).

Builds tests/data/e2e/alloc_base.ml with _build/runtime/bin/ocamlopt -g,
records baselines, rebuilds from alloc_variant.ml (make_arrays allocates 30%
more, and every line moved down by four) and checks that exactly that site
is reported and the exit code is 1.  Without the runtime this test FAILS and
says to run `make runtime`: a silently skipped end-to-end test proves nothing.
"""

import json
import os
import shutil
import subprocess

import pytest
from commits_testlib import RUN_MANIFEST as MANIFEST
from harness_testlib import HARNESS, HERE, REPO, run_cli

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
DATA = os.path.join(HERE, "data", "e2e")


def build(work, source):
    shutil.copy(os.path.join(DATA, source), os.path.join(work, "alloc.ml"))
    r = subprocess.run([OCAMLOPT, "-g", "-o", "alloc.exe", "alloc.ml"], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


@pytest.mark.needs_runtime
def test_end_to_end_detects_exactly_the_changed_site(tmp_path):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first "
                    f"(or deselect with -m 'not needs_runtime')")
    work = str(tmp_path)
    (tmp_path / "benchmarks.toml").write_text(MANIFEST)
    build(work, "alloc_base.ml")
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"], cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    base = json.load(open(tmp_path / "baselines" / "alloc.json"))
    assert "Alloc.make_arrays @ alloc.ml" in base["sites"], sorted(base["sites"])
    assert "Alloc.make_lists @ alloc.ml" in base["sites"], sorted(base["sites"])

    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead"], cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr

    build(work, "alloc_variant.ml")
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead", "-m", "alloc_sites",
                 "--report-dir", "rep"], cwd=work)
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    rows = rep["benchmarks"]["alloc"]["alloc"]
    regs = [x["site"] for x in rows if x["status"] == "regression"]
    assert regs == ["Alloc.make_arrays @ alloc.ml (via runtime primitives)"], r.stdout   # Array.make: C
    row = [x for x in rows if x["site"] == regs[0]][0]
    assert 1.2 < row["ratio"] < 1.4
    # The line shift created no new site.
    assert not [x for x in rows if x["baseline_samples"] == 0 and x["current_samples"] > 50]


@pytest.mark.needs_runtime
def test_a_project_under_a_directory_with_a_space_and_a_comma(tmp_path):
    """A checkout such as `~/My Projects/app, v2` profiles like any other:
    the profile and trace paths reach the runtime escaped."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    work = tmp_path / "My Projects" / "app, v2"
    work.mkdir(parents=True)
    (work / "benchmarks.toml").write_text(MANIFEST)
    build(str(work), "alloc_base.ml")
    r = run_cli(["profile", "--manifest", "benchmarks.toml", "--out", "run", "--no-overhead"],
                cwd=str(work))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in (work / "run" / "profiles").iterdir()) == [
        "alloc.1.ctf", "alloc.1.json", "alloc.2.json", "alloc.3.json"]


@pytest.mark.needs_runtime
def test_profile_run_keeps_one_trace_beside_the_profiles(tmp_path):
    """`memprof-ci profile` (the gate's build job) writes the first seed's
    memtrace trace next to its profile, with the same counts and peak."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    from memprof_ci.inputs.ctf_profile import load_ctf
    work = str(tmp_path)
    (tmp_path / "benchmarks.toml").write_text(MANIFEST)
    build(work, "alloc_base.ml")
    r = run_cli(["profile", "--manifest", "benchmarks.toml", "--out", "run", "--no-overhead"],
                cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    profiles = tmp_path / "run" / "profiles"
    assert sorted(p.name for p in profiles.iterdir()) == [
        "alloc.1.ctf", "alloc.1.json", "alloc.2.json", "alloc.3.json"]
    prof = json.load(open(profiles / "alloc.1.json"))
    from memprof_ci.inputs.profile import COUNT_KEYS, PEAK_KEY
    tr = load_ctf(str(profiles / "alloc.1.ctf"))
    assert tr.totals == {k: prof["totals"][k] for k in COUNT_KEYS + (PEAK_KEY,)}
    r = run_cli(["compare", str(profiles / "alloc.1.json"), str(profiles / "alloc.1.ctf")])
    assert r.returncode == 0, r.stdout + r.stderr


def test_overhead_runs_write_a_new_profile_each_in_a_literal_directory(tmp_path):
    """The runtime reads the OCAMLMEMPROF value memprof_env_value builds: a
    `%`, a comma or a space in a directory is literal, and with per_process
    each run writes its own <name>.<pid>.json (the overhead rounds then
    never time the removal of the previous run's profile)."""
    from memprof_ci.measure.runner import memprof_env_value
    work = tmp_path / "100% of a,b"
    work.mkdir()
    build(str(work), "alloc_base.ml")
    spec = memprof_env_value(1e-3, 1, 32, str(work / "p.json"), per_process=True)
    env = dict(os.environ, OCAMLMEMPROF=spec)
    pids = []
    for _ in range(2):
        proc = subprocess.Popen(["./alloc.exe"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        err = proc.communicate(timeout=120)[1]
        assert proc.returncode == 0, err
        pids.append(proc.pid)
    written = sorted(p.name for p in work.glob("p.*.json"))
    assert written == sorted(f"p.{pid}.json" for pid in pids)
    for name in written:
        assert json.loads((work / name).read_text())["config"]["rate"] == 1e-3


@pytest.mark.needs_runtime
def test_counted_overhead_repeats_to_the_count_with_the_runtime(tmp_path):
    """The runtime sorts the profile on a second thread at exit, and valgrind
    runs threads in an order the machine's timing decides; with thread
    creation refused (nothreads.py) the runtime sorts on the main thread,
    and three counts of the same program agree to the instruction and the
    simulated miss."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    from memprof_ci.measure import overhead
    from memprof_ci.inputs.manifest import load_manifest
    build(str(tmp_path), "alloc_base.ml")
    (tmp_path / "benchmarks.toml").write_text(MANIFEST)
    bench = load_manifest(str(tmp_path / "benchmarks.toml")).benchmarks[0]
    runs = [overhead.count_sides(bench) for _ in range(3)]
    assert runs[0]["threads"] == "disabled"
    assert runs[1] == runs[0] and runs[2] == runs[0]
    assert overhead.figures(runs[0])["estimate"] > 0


@pytest.mark.needs_runtime
def test_exact_runs_cut_stacks_at_the_site_and_keep_the_site_table(tmp_path):
    """A benchmark of mode "exact" is profiled with stacks=site (the runtime
    records it in config.stacks), and its sites (every grouping, with their
    samples, live and peak samples, lines and via) are those of the same run
    with whole stacks."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    from memprof_ci.sites.grouping import GROUPINGS, aggregate_paths
    work = str(tmp_path)
    (tmp_path / "benchmarks.toml").write_text(MANIFEST.replace('mode = "sampled"',
                                                               'mode = "exact"'))
    build(work, "alloc_base.ml")
    r = run_cli(["profile", "--manifest", "benchmarks.toml", "--out", "run", "--no-overhead"],
                cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    cut = tmp_path / "run" / "profiles" / "alloc.1.json"
    doc = json.load(open(cut))
    assert doc["config"]["rate"] == 1 and doc["config"]["stacks"] == "site"
    full = tmp_path / "full.json"
    env = dict(os.environ, OCAMLMEMPROF=f"rate=1,seed=1,frames=32,out={full}")
    # The same argv as the profiled run: OCaml 5.4 allocates Sys.argv's
    # strings in the minor heap, so another path length moves collections.
    subprocess.run(doc["argv"], cwd=work, env=env, check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    assert "stacks" not in json.load(open(full))["config"]
    assert len(doc["stacks"]) < len(json.load(open(full))["stacks"])
    for grouping in GROUPINGS:
        a = aggregate_paths([str(cut)], grouping, "alloc")
        b = aggregate_paths([str(full)], grouping, "alloc")
        assert {k: s.to_json() for k, s in a.sites.items()} == \
            {k: s.to_json() for k, s in b.sites.items()}, grouping
        # (gc is left out: the harness starts the program by another path,
        # and the runtime allocates argv and the executable's name first.)
        assert (a.total_samples, a.total_live, a.total_peak) == \
            (b.total_samples, b.total_live, b.total_peak)


@pytest.mark.needs_runtime
def test_a_first_manifest_from_init_runs_and_records_the_runtime_patch_id(tmp_path):
    """As a new user without make: `init --exe main.exe` beside the program,
    then update-baselines and check with the patched compiler first on PATH
    and no MEMPROF_CI_PATCH_ID. The command resolves beside the manifest,
    the baseline records the runtime's patch id (read beside that ocamlopt),
    and the check says nothing about a missing or unknown patch id."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    runtime_id = open(os.path.join(os.path.dirname(os.path.dirname(OCAMLOPT)),
                                   "patch-id")).read().strip()
    env = {k: v for k, v in os.environ.items() if k != "MEMPROF_CI_PATCH_ID"}
    env.update(PATH=os.path.dirname(OCAMLOPT) + os.pathsep + env.get("PATH", ""),
               PYTHONPATH=HARNESS, MEMPROF_CI_SCHEDULE_RUNS="0")
    env.pop("PYTEST_ADDOPTS", None)

    def cli(*args):
        return subprocess.run(["/usr/bin/python3", "-m", "memprof_ci", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)
    r = cli("init", "--repository", "acme/memprof-ci", "--manifest", "memprof-ci.toml",
            "--baselines", "baselines", "--exe", "main.exe")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"runtime patch id {runtime_id}" in r.stdout, r.stdout
    shutil.copy(os.path.join(DATA, "alloc_base.ml"), tmp_path / "alloc.ml")
    b = subprocess.run(["ocamlopt", "-g", "-o", "main.exe", "alloc.ml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert b.returncode == 0, b.stderr
    r = cli("update-baselines", "--manifest", "memprof-ci.toml", "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.load(open(tmp_path / "baselines" / "main.json"))["patch_id"] == runtime_id
    r = cli("check", "--manifest", "memprof-ci.toml", "--no-overhead", "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "patch" not in r.stdout + r.stderr, r.stdout
    assert "patch_notes" not in json.load(open(tmp_path / "rep" / "report.json"))
