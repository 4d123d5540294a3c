"""The exact allocation-point check, end to end with the real patched
runtime (marker: needs_runtime): programs built with _build/runtime's
ocamlopt, profiled with points=on by the harness (the manifest's `points`,
on by default), judged on exact words per site (pointsites.py, rows.py).

- data/points/inject.ml: a site holding 1% of the allocation; 2% more there
  fails the check, exactly at that site, while the sampled test alone could
  not see it; unchanged code recorded with disjoint seeds passes (A/A).
- runtime-patch/tests/programs/points_known.ml: known allocation shows in
  the harness's table with its exact words, and the allocation made in C
  is judged per calling site.
"""

import json
import os
import shutil
import subprocess

import pytest
from harness_testlib import HERE, REPO, run_cli, write_manifest

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
KNOWN = os.path.join(REPO, "runtime-patch", "tests", "programs", "points_known.ml")


def build(work, source, name):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    shutil.copy(source, os.path.join(work, f"{name}.ml"))
    r = subprocess.run([OCAMLOPT, "-g", "-o", f"{name}.exe", f"{name}.ml"], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


def manifest(work, seeds, inject=False):
    bench = {"name": "inject", "command": ["./inject.exe"], "timeout": 120}
    if inject:
        bench["env"] = {"INJECT": "1"}
    return write_manifest(work, [bench], defaults={"mode": "auto", "rate": 1e-4,
                                                   "seeds": seeds})


def cli(work, *args):
    return run_cli(list(args), cwd=work, timeout=600)


@pytest.mark.needs_runtime
def test_two_percent_more_at_a_one_percent_site_fails_and_aa_passes(tmp_path):
    work = str(tmp_path)
    build(work, os.path.join(HERE, "data", "points", "inject.ml"), "inject")
    manifest(work, [1, 2, 3])
    r = cli(work, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "allocation point counted exactly" in r.stdout, r.stdout
    base = json.load(open(tmp_path / "baselines" / "inject.json"))
    # The planner chose sampling with the points: no run at rate 1.
    assert base["config"]["rate"] == 1e-4 and base["config"]["plan"]["points"] is True
    sites = base["points"]["sites"]
    assert sites["Inject.small @ inject.ml"]["words"] == 4 * 50_000
    assert sites["Inject.big @ inject.ml"]["words"] == 4 * 4_950_000

    r = cli(work, "check", "--manifest", "benchmarks.toml", "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr

    manifest(work, [1, 2, 3], inject=True)
    r = cli(work, "check", "--manifest", "benchmarks.toml", "--no-overhead", "-m", "alloc_sites",
            "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    rows = json.load(open(tmp_path / "rep" / "report.json"))["benchmarks"]["inject"]["alloc"]
    regs = [x for x in rows if x["status"] == "regression"]
    assert [x["site"] for x in regs] == ["Inject.small @ inject.ml"], r.stdout
    row = regs[0]
    assert row["exact"] and row["points"] and row["p_adj"] is None
    assert (row["baseline_samples"], row["current_samples"]) == (200_000, 204_000)
    assert abs(row["ratio"] - 1.02) < 1e-12
    assert 0.009 < row["share"] < 0.011

    # A/A: the unchanged program recorded with disjoint seeds.
    manifest(work, [4, 5, 6])
    r = cli(work, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
            "--baselines", "aa")
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(work, "compare", "baselines/inject.json", "aa/inject.json", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)["benchmarks"]["inject"]["alloc"]
    small = [x for x in rows if x["site"] == "Inject.small @ inject.ml"][0]
    assert small["current_samples"] == small["baseline_samples"] == 200_000


@pytest.mark.needs_runtime
def test_only_the_points_run_walks_the_heap_at_exit(tmp_path):
    """With the points counted, the first seed's run alone decides what is
    live at exit: the other seeds' profiles say live=off, the baseline
    records live_runs 1 and the live counts of that run alone, and the live
    check still passes and compares the exact live words."""
    work = str(tmp_path)
    build(work, os.path.join(HERE, "data", "points", "inject.ml"), "inject")
    manifest(work, [1, 2, 3])
    r = cli(work, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead")
    assert r.returncode == 0, r.stdout + r.stderr
    base = json.load(open(tmp_path / "baselines" / "inject.json"))
    assert base["config"]["live_runs"] == 1
    assert base["points"]["live"] is True
    r = cli(work, "check", "--manifest", "benchmarks.toml", "--no-overhead",
            "--profiles-dir", "prof", "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    live = {seed: json.load(open(tmp_path / "prof" / f"inject.{seed}.json"))["config"]["live"]
            for seed in (1, 2, 3)}
    assert live == {1: "walk", 2: "off", 3: "off"}
    b = json.load(open(tmp_path / "rep" / "report.json"))["benchmarks"]["inject"]
    assert b["checks"]["live"]["outcome"] == "passed"
    first = json.load(open(tmp_path / "prof" / "inject.1.json"))["totals"]["live_samples"]
    assert b["current"]["total_live_samples"] == first == base["totals"]["live_samples"]
    assert any(x.get("points") for x in b["live"]), b["live"]


@pytest.mark.needs_runtime
def test_known_allocation_is_exact_in_the_harness_table(tmp_path):
    work = str(tmp_path)
    build(work, KNOWN, "points_known")
    n, k = 3000, 2000
    outs = []
    for tag, args in (("a", (n, k, 1000, 40, 11, 3)), ("b", (n, k, 2000, 80, 11, 7))):
        out = os.path.join(work, f"{tag}.json")
        env = dict(os.environ, OCAMLMEMPROF=f"rate=1,seed=1,out={out},points=on")
        r = subprocess.run(["./points_known.exe", *map(str, args)], cwd=work, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(out)
    r = cli(work, "compare", *outs, "--format", "json")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    rep = json.loads(r.stdout)["benchmarks"]
    rows = next(iter(rep.values()))
    alloc = {x["site"]: x for x in rows["alloc"]}
    live = {x["site"]: x for x in rows["live"]}
    tup = alloc["Points_known.tuples @ points_known.ml"]
    # a tuple (3 words) and the list cell keeping it (3 words), n of each
    assert tup["points"] and tup["baseline_samples"] == tup["current_samples"] == 6 * n
    assert tup["status"] == "~"
    assert live["Points_known.tuples @ points_known.ml"]["current_samples"] == 6 * n
    flo = alloc["Points_known.floats @ points_known.ml"]
    assert flo["current_samples"] == 2 * k + 3 * k     # boxes and list cells
    # What C allocated for an OCaml call (the array, the string) is counted
    # at that call: the toplevel's, in whole words with headers.
    top = alloc["Points_known @ points_known.ml (via runtime primitives)"]
    assert top["points"] and top["exact"] and top["p_adj"] is None
    assert top["current_samples"] - top["baseline_samples"] == 1000 + 5, top
    assert not top.get("split"), top        # user code: its own caller
    # What no call point counts (Obj.dup's copies) is judged per calling
    # site from the samples, here drawn at rate 1: every word, so exact too.
    sampled = [x for x in rows["alloc"] if x["site"].endswith(" (via runtime primitives, sampled)")]
    assert sampled and all(x["exact"] and not x.get("points") for x in sampled)
    grew = sum(x["current_samples"] - x["baseline_samples"] for x in sampled)
    assert grew == 4 * 2, sampled
