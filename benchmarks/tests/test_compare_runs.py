"""`memprof-ci compare` of two profile sets (`memprof-ci profile --out DIR`)
of the bundled programs, with disjoint seeds: a check that follows the GC's
schedule or the moment of the peak has no dithered runs there to be judged
by, so it is judged against the spread of both sides' own runs.

Unchanged code stays quiet where the sampling test alone alarmed
(marshal_rt's peak with seeds 10-12 against 31-33), and a real change
still fails: a phase held longer (the peak, at the holding site) and a
leak (live at exit). The programs are built with the patched compiler
from benchmarks/<name>.ml under a temporary directory, as
test_injected_regressions.py builds them.
"""

import json
import pathlib
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OCAMLOPT = ROOT / "_build" / "runtime" / "bin" / "ocamlopt"
PY = "/usr/bin/python3"
ENV = {"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin",
       "MEMPROF_CI_PATCH_ID": ""}


def program(root, bench, variant=None):
    """benchmarks/<bench>.ml (patched with `variant`) built under root."""
    if not OCAMLOPT.exists():
        pytest.fail("no patched compiler: run `make runtime` first")
    src_dir = root / "benchmarks"
    src_dir.mkdir(parents=True)
    src = src_dir / f"{bench}.ml"
    src.write_text((ROOT / "benchmarks" / f"{bench}.ml").read_text())
    if variant:
        subprocess.run(["patch", "--quiet", str(src), str(HERE / "variants" / variant)],
                       check=True, capture_output=True)
    exe = src_dir / f"{bench}.exe"
    subprocess.run([str(OCAMLOPT), "-g", str(src), "-o", str(exe)], cwd=src_dir, check=True,
                   capture_output=True)
    return exe


def profile(root, exe, args, seeds):
    """A profile set of `exe args` with these seeds: root/run/profiles."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "m.toml").write_text(
        f"[defaults]\nrate = 1e-4\nseeds = {json.dumps(seeds)}\nframes = 16\n\n"
        f"[[benchmark]]\nname = \"{exe.stem}\"\ncommand = {json.dumps([str(exe), *args])}\n"
        f"timeout = 60\n")
    r = subprocess.run([PY, "-m", "memprof_ci", "profile", "--manifest", "m.toml", "--baselines",
                        "none", "--out", "run", "--no-overhead", "-q"], cwd=root, env=ENV,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return root / "run" / "profiles"


def compare(tmp_path, a, b):
    rep = tmp_path / "rep"
    r = subprocess.run([PY, "-m", "memprof_ci", "compare", str(a), str(b), "--report-dir",
                        str(rep)], env=ENV, capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads((rep / "report.json").read_text())
    failed = {(name, c) for name, bd in doc["benchmarks"].items()
              for c, v in bd["checks"].items() if v["outcome"] == "failed"}
    return r, doc, failed


def test_unchanged_code_with_disjoint_seeds_raises_no_peak_alarm(tmp_path):
    """marshal_rt, seeds 10-12 against 31-33: the sampling test alone
    calls Marshal_rt.make_items' peak +120%; the runs' own spread of the
    peak says it is not a change."""
    exe = program(tmp_path, "marshal_rt")
    a = profile(tmp_path / "a", exe, ["120"], [10, 11, 12])
    b = profile(tmp_path / "b", exe, ["120"], [31, 32, 33])
    r, doc, failed = compare(tmp_path, a, b)
    assert failed == set() and r.returncode == 0, r.stdout[-3000:]
    summary = doc["benchmarks"]["marshal_rt"]["peak_summary"]
    assert summary["spread_from"] == "runs" and summary["spread_words"] > 0
    assert any(row.get("spread_from") == "runs" for row in doc["benchmarks"]["marshal_rt"]["peak"])


def test_a_phase_held_longer_and_a_leak_still_fail_against_the_runs_spread(tmp_path):
    base = program(tmp_path / "base", "leak")
    held = program(tmp_path / "held", "leak", "leak_holds_phase.patch")
    leak = program(tmp_path / "leak", "leak", "leak_retains.patch")
    a = profile(tmp_path / "base", base, ["2000"], [4, 5, 6])
    site = "Leak.transient_work @ benchmarks/leak.ml"
    r, doc, failed = compare(tmp_path, a, profile(tmp_path / "held", held, ["2000"], [7, 8, 9]))
    # Held longer, the data is also promoted: the GC totals rise with it.
    assert ("leak", "peak") in failed and r.returncode == 1, r.stdout[-3000:]
    assert not failed & {("leak", "alloc_sites"), ("leak", "live")}, failed
    regs = [x["site"] for x in doc["benchmarks"]["leak"]["peak"] if x["status"] == "regression"]
    assert regs == [site], regs
    r, doc, failed = compare(tmp_path, a, profile(tmp_path / "leak", leak, ["2000"], [7, 8, 9]))
    assert ("leak", "live") in failed and r.returncode == 1, r.stdout[-3000:]
