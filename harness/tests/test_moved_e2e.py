"""Allocation that only moved is never a regression, end to end with the
real patched runtime (marker: needs_runtime).

tests/data/moved/helper.ml gets a pair from a helper of its own;
inlined.ml is the same program with the helper inlined by hand (the same
blocks in the same order); grown.ml is inlined.ml plus a real +1.9% at the
other site.  Each is built as the same prog.exe in the same directory, as a
pull request's build would be, and judged against the previous one's
baselines: sampled (rate 1e-3, three seeds) and exact (mode = "exact").
"""

import json
import os
import shutil
import subprocess

import pytest
from harness_testlib import HERE, REPO, run_cli

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
DATA = os.path.join(HERE, "data", "moved")

MANIFESTS = {
    "sampled": 'mode = "sampled"\nrate = 1e-3\nseeds = [1, 2, 3]\n',
    "exact": 'mode = "exact"\n',
}


def build(work, source):
    shutil.copy(os.path.join(DATA, source), os.path.join(work, "prog.ml"))
    r = subprocess.run([OCAMLOPT, "-g", "-o", "prog.exe", "prog.ml"], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


def judge(work, *extra):
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", "rep", *extra], cwd=work)
    rep = json.load(open(os.path.join(work, "rep", "report.json")))
    return r, rep["benchmarks"]["prog"]


def rows(b, check="alloc"):
    return {r["site"]: r for r in b[check]}


@pytest.fixture
def work(tmp_path, request):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first "
                    f"(or deselect with -m 'not needs_runtime')")
    (tmp_path / "benchmarks.toml").write_text(
        "[defaults]\n" + MANIFESTS[request.param] + "timeout = 120\n\n"
        '[[benchmark]]\nname = "prog"\ncommand = ["./prog.exe"]\n')
    return str(tmp_path)


@pytest.mark.needs_runtime
@pytest.mark.parametrize("work", sorted(MANIFESTS), indirect=True)
def test_inlined_helper_passes_as_moved_and_a_real_change_still_fails(work):
    build(work, "helper.ml")
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"],
                cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr

    build(work, "inlined.ml")
    r, b = judge(work)
    assert r.returncode == 0, r.stdout + r.stderr
    caller, helper = rows(b)["Prog.caller @ prog.ml"], rows(b)["Prog.helper @ prog.ml"]
    # The caller gained exactly what the helper lost, and it is called a move.
    assert caller["status"] == "moved" and helper["current_samples"] == 0
    assert caller["current_samples"] - caller["baseline_samples"] == \
        helper["baseline_samples"] > 0
    assert caller["moved_from"][0]["site"] == "Prog.helper @ prog.ml"
    assert "Moved between sites" in r.stdout
    moved_line = [x for x in r.stdout.splitlines()
                  if "Prog.helper @ prog.ml  Prog.caller @ prog.ml" in x]
    assert moved_line and moved_line[0].split()[1] == "alloc", r.stdout
    md = open(os.path.join(work, "rep", "report.md")).read()
    assert "### Moved between sites" in md

    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"],
                cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    build(work, "grown.ml")
    r, b = judge(work, "-m", "alloc_sites")
    # Array.make allocates in C: judged per calling site from the samples
    # (at rate 1, every word).
    other = rows(b)["Prog.other @ prog.ml (via runtime primitives)"]
    exact = 'mode = "exact"' in open(os.path.join(work, "benchmarks.toml")).read()
    if exact:
        # Counted: +1.9% at a site is a fact, and over the exact min_effect.
        assert r.returncode == 1, r.stdout + r.stderr
        assert other["status"] == "regression" and other["exact"]
        assert other["ratio"] == pytest.approx(1.019, abs=0.001)
        assert "+1.9% (exact)" in r.stdout
    else:
        # Sampled at 1e-3 this change is below what three seeds can see;
        # what matters here is that it is not mistaken for a move.
        assert other["status"] != "moved"
