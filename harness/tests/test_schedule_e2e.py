"""Retention verdicts against the GC's schedule, end to end with the real
patched runtime (marker: needs_runtime).

tests/data/schedule/ladder.ml has two sites of about the same size whose
promotion, heap top and live words at the peak move with where the minor
collections fall; phases.ml holds a phase's data until the phase ends (or
drops it at once) with the same allocation.  Each program is built as
prog.exe in a directory, as a pull request's build would be, and judged
with `memprof-ci check` against the baselines `update-baselines` wrote for
the previous build (rate 1e-3, three seeds, min_effect 5% also for the
sites counted per allocation point, so that a step of the ladder is a
change below min_effect everywhere, every other setting the default, the
schedule's dithered runs included).

The build directories have different path lengths: the program allocates
its path at startup, which moves every later collection.
"""

import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import tomllib

import pytest
from harness_testlib import HERE, REPO, run_cli

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
DATA = os.path.join(HERE, "data", "schedule")
BASE_SIZE = 2000          # ladder.ml's list length at step 0; +1% a step
STEPS = 12
SPREAD_RUNS = {"MEMPROF_CI_SCHEDULE_RUNS": "12"}   # the default, as a user runs it
MANIFEST = ('[defaults]\nmode = "sampled"\nrate = 1e-3\nseeds = [1, 2, 3]\ntimeout = 120\n'
            'min_effect = 0.05\n\n'
            '[[benchmark]]\nname = "prog"\ncommand = ["./prog.exe"]\n')


def build(work, source, **subst):
    text = open(os.path.join(DATA, source)).read()
    for k, v in subst.items():
        text = text.replace(k, str(v))
    with open(os.path.join(work, "prog.ml"), "w") as fh:
        fh.write(text)
    r = subprocess.run([OCAMLOPT, "-g", "-o", "prog.exe", "prog.ml"], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


def update(work):
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"],
                cwd=work, timeout=600, env_extra=SPREAD_RUNS)
    assert r.returncode == 0, r.stdout + r.stderr


def judge(work):
    """`check` of the current build: (the CLI's result, the benchmark's
    report, the checks that did not pass)."""
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", "rep"], cwd=work, timeout=600)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    b = json.load(open(os.path.join(work, "rep", "report.json")))["benchmarks"]["prog"]
    bad = {c: o["message"] for c, o in b["checks"].items() if o["outcome"] != "passed"}
    return r, b, bad


def workdir(root, name):
    d = os.path.join(str(root), name)
    os.makedirs(d)
    with open(os.path.join(d, "benchmarks.toml"), "w") as fh:
        fh.write(MANIFEST)
    return d


@pytest.fixture(autouse=True)
def runtime():
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first "
                    f"(or deselect with -m 'not needs_runtime')")


def ladder(work):
    """Steps 1..STEPS, each judged against the previous step's baselines:
    {step: the checks that did not pass}, only steps with any."""
    alarms = {}
    build(work, "ladder.ml", SIZE=BASE_SIZE)
    update(work)
    for k in range(1, STEPS + 1):
        build(work, "ladder.ml", SIZE=BASE_SIZE * (100 + k) // 100)
        _, _, bad = judge(work)
        if bad:
            alarms[k] = bad
        update(work)
    return alarms


@pytest.mark.needs_runtime
def test_a_ladder_of_one_percent_steps_raises_no_alarm_in_two_directories(tmp_path):
    dirs = [workdir(tmp_path, "a"), workdir(tmp_path, "a-build-directory-with-a-longer-path")]
    with cf.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(ladder, dirs))
    assert results == [{}, {}], results
    # The same site grown by 10% at once still fails the allocation check,
    # at that site.
    work = dirs[1]
    build(work, "ladder.ml", SIZE=BASE_SIZE * (100 + STEPS) // 100 * 110 // 100)
    r, b, bad = judge(work)
    assert r.returncode == 1 and "alloc_sites" in bad, r.stdout + r.stderr
    regressed = [x for x in b["alloc"] if x["status"] == "regression"]
    # List.init's cells, counted at the standard library's point, with the
    # caller the samples name.
    assert [x["site"] for x in regressed] == ["Stdlib__List.init @ list.ml"], regressed
    assert regressed[0]["split"][0]["site"] == "Prog.scratch @ prog.ml", regressed


@pytest.mark.needs_runtime
def test_a_a_across_build_directories_raises_no_alarm(tmp_path):
    """The same source built in directories of four path lengths (each
    37 characters longer than the last), each judged against the baselines
    recorded in the first."""
    dirs = [workdir(tmp_path, "d" + "-a-build-directory-with-a-longer-path" * i)
            for i in range(4)]
    for d in dirs:
        build(d, "ladder.ml", SIZE=BASE_SIZE)
    update(dirs[0])
    failed = {}
    for d in dirs[1:]:
        shutil.copytree(os.path.join(dirs[0], "baselines"), os.path.join(d, "baselines"))
        r, b, bad = judge(d)
        assert b["gc"] and all("p_raw" in g for g in b["gc"][1:]), b["gc"]
        if bad:
            failed[os.path.basename(d)] = bad
    assert failed == {}


SUITE_AA = ("bigarrays", "lists", "mapset")   # their heap top or promotion move most


@pytest.mark.needs_runtime
def test_the_suite_built_elsewhere_raises_no_alarm_against_its_baselines(tmp_path):
    """Three of the bundled benchmarks, built from this checkout's sources
    in two directories whose paths differ in length from the one
    baselines/ was recorded in and from each other, judged against the
    committed baselines with the bundled manifest's settings."""
    manifest = tomllib.loads(open(os.path.join(REPO, "benchmarks", "benchmarks.toml")).read())
    entries = {b["name"]: b for b in manifest["benchmark"]}
    failed = {}
    for root in ("s", "s-a-build-directory-with-a-longer-path-for-the-suite"):
        d = os.path.join(str(tmp_path), root)
        os.makedirs(os.path.join(d, "benchmarks"))
        os.makedirs(os.path.join(d, "baselines"))
        lines = ["[defaults]"] + [f"{k} = {json.dumps(v)}"
                                  for k, v in manifest["defaults"].items()]
        for name in SUITE_AA:
            src = os.path.join(d, "benchmarks", f"{name}.ml")
            shutil.copy(os.path.join(REPO, "benchmarks", f"{name}.ml"), src)
            exe = src[:-3] + ".exe"
            subprocess.run([OCAMLOPT, "-g", "-o", exe, src], cwd=os.path.dirname(src),
                           check=True, capture_output=True, timeout=300)
            shutil.copy(os.path.join(REPO, "baselines", f"{name}.json"),
                        os.path.join(d, "baselines"))
            lines += ["", "[[benchmark]]", f"name = {json.dumps(name)}",
                      f"command = {json.dumps([exe] + entries[name]['command'][1:])}",
                      f"timeout = {entries[name]['timeout']}"]
        with open(os.path.join(d, "benchmarks.toml"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                     "--report-dir", "rep"], cwd=d, timeout=600)
        rep = json.load(open(os.path.join(d, "rep", "report.json")))["benchmarks"]
        for name, b in rep.items():
            assert all("p_raw" in g for g in b["gc"][1:]), b["gc"]
            bad = {c: o["message"] for c, o in b["checks"].items() if o["outcome"] != "passed"}
            if bad:
                failed[f"{root}/{name}"] = bad
        assert r.returncode in (0, 1), r.stdout + r.stderr
    assert failed == {}


@pytest.mark.needs_runtime
def test_holding_a_phase_fails_naming_peak_memory_and_the_holding_site(tmp_path):
    work = workdir(tmp_path, "w")
    build(work, "phases.ml", HOLD=0)
    update(work)
    build(work, "phases.ml", HOLD=1)
    r, b, bad = judge(work)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "alloc_sites" not in bad and "live" not in bad, bad
    assert "peak" in bad and "held by `Prog.chunk`" in bad["peak"], bad
    assert "peak: +" in r.stdout, r.stdout
    # The holding site is named first and holds nearly all of the rise.
    # (Other sites may be named too: the peak is now at the end of a
    # phase, with the minor heap's short-lived lists not yet found dead.)
    held = sorted((x for x in b["peak"] if x["status"] == "regression"),
                  key=lambda x: x["baseline_bytes"] - x["current_bytes"])
    assert held and held[0]["site"] == "Prog.chunk @ prog.ml", held
    rise = b["peak_summary"]["current_words"] - b["peak_summary"]["baseline_words"]
    assert (held[0]["current_bytes"] - held[0]["baseline_bytes"]) / 8 > 0.9 * rise
    assert b["peak_summary"]["baseline_words"] < 2e5 < 2e6 < b["peak_summary"]["current_words"]
    # The heap's top grew far beyond its schedule spread too.
    top = next(g for g in b["gc"] if g["counter"] == "top_heap_words")
    assert top["status"] == "regression" and top["current"] > 10 * top["baseline"], top
