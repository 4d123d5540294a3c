"""Budgets per call end to end with the real patched runtime (marker:
needs_runtime): data/budgets/budgets.ml built with _build/runtime's
ocamlopt and checked with no baseline.  Its three annotated functions:
`scale` never allocates ([@zero_alloc]), `pair` allocates a 3-word tuple
per call ([@memprof.words_per_call 3]), and `memo` calls a memo table that
adds a 4-word bucket on one call in a thousand."""

import json
import os
import re
import subprocess

import pytest
from harness_testlib import HERE, run_cli, write_manifest
from test_points_check import build

N = 20_000
SOURCE = os.path.join(HERE, "data", "budgets", "budgets.ml")


def prepare(work, text):
    with open(os.path.join(work, "src.ml"), "w") as fh:
        fh.write(text)
    build(work, os.path.join(work, "src.ml"), "budgets")
    write_manifest(work, [{"name": "budgets", "command": ["./budgets.exe", str(N)],
                           "timeout": 120}],
                   defaults={"mode": "sampled", "rate": 1e-4, "seeds": [1]})


def check(work, rep):
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", rep], cwd=work, timeout=600)
    rows = json.load(open(os.path.join(work, rep, "report.json")))[
        "benchmarks"]["budgets"]["budgets"]
    return r, {row["what"]: row for row in rows}


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.needs_runtime
def test_three_annotated_functions_pass_then_a_boxed_float_and_a_lower_limit_fail(tmp_path):
    work, text = str(tmp_path), open(SOURCE).read()
    prepare(work, text)
    r, rows = check(work, "ok")
    assert r.returncode == 0, r.stdout + r.stderr
    scale, pair, memo = rows["Budgets.scale"], rows["Budgets.pair"], rows["Budgets.memo"]
    assert (scale["calls"], scale["max_words"], scale["outcome"]) == (N, 0, "passed")
    assert (pair["calls"], pair["words_per_call"], pair["max_words"], pair["limit"],
            pair["outcome"]) == (N, 3.0, 3, 3, "passed")
    # one bucket per thousand keys: the per-call mean and the maximum
    misses = N // 1000 + 1
    assert (memo["words"], memo["max_words"]) == (4 * misses, 4)
    assert memo["words_per_call"] == pytest.approx(4 * misses / N)
    row = next(x for x in r.stdout.splitlines() if "Budgets.memo" in x)
    assert f"{4 * misses / N:.2g}" in row and " 4 " in row, r.stdout
    # its words are in callees, and too few to be sampled at 1e-4
    assert memo["points"] == [] and "in callees, not sampled" in row

    # Boxing a float in the function that must not allocate: it fails,
    # naming the function and the point that boxes.
    boxed = text.replace("a.(i) <- a.(i) *. k +. 1.0",
                         "a.(i) <- Sys.opaque_identity (a.(i) *. k) +. 1.0")
    assert boxed != text
    prepare(work, boxed)
    r, rows = check(work, "boxed")
    assert r.returncode == 1, r.stdout + r.stderr
    point = f"budgets.ml:{line_of(boxed, 'Sys.opaque_identity (a.(i)')}:"
    assert rows["Budgets.scale"]["outcome"] == "failed"
    assert rows["Budgets.scale"]["points"][0]["point"].startswith(point)
    assert re.search(rf"Budgets\.scale \({N:,} calls\) allocated up to 32 words in one "
                     rf"call, limit 0 per call \(most at {re.escape(point)}", r.stdout), r.stdout
    assert rows["Budgets.pair"]["outcome"] == "passed"
    # report.html, in a real browser: the failing function first, with its point.
    from chromium_cdp import Browser
    with Browser() as br:
        br.open(os.path.join(work, "boxed", "report.html"))
        cells = br.eval("Array.from(document.querySelectorAll('#annotated-budgets tbody tr'))"
                        ".map(r => [r.cells[1].textContent, r.cells[7].textContent,"
                        " r.cells[8].textContent])")
        assert [c[:2] for c in cells] == [["Budgets.scale", "FAILED"],
                                          ["Budgets.pair", "passed"],
                                          ["Budgets.memo", "passed"]], cells
        assert cells[0][2].startswith(point)
        br.settle()
        assert br.errors == []

    # The tuple's function at a limit of 2 words per call fails.
    lower = text.replace("[@memprof.words_per_call 3] pair", "[@memprof.words_per_call 2] pair")
    assert lower != text
    prepare(work, lower)
    r, rows = check(work, "lower")
    assert r.returncode == 1, r.stdout + r.stderr
    assert (rows["Budgets.pair"]["limit"], rows["Budgets.pair"]["outcome"]) == (2, "failed")
    assert f"Budgets.pair ({N:,} calls) allocated up to 3 words in one call, limit 2" in r.stdout
    assert rows["Budgets.scale"]["outcome"] == "passed"


DEP = """let lookup k = if k < 0 then None else Some (k, k)
"""
MAIN = """let () =
  let n = int_of_string Sys.argv.(1) and k = ref 0 in
  for i = 1 to n do
    match Dep.lookup i with Some (a, _) -> k := !k + a | None -> ()
  done;
  print_int (Sys.opaque_identity !k)
"""


def prepare_dep(work, counted, limit):
    """A dependency, dep.ml, compiled apart, with Dep.lookup named in
    OCAMLMEMPROF_COUNT when `counted`; main.ml calls it N times; the
    manifest caps Dep.lookup at `limit` words per call."""
    from test_points_check import OCAMLOPT
    for name, text in (("dep.ml", DEP), ("main.ml", MAIN)):
        with open(os.path.join(work, name), "w") as fh:
            fh.write(text)
    env = {k: v for k, v in os.environ.items() if k != "OCAMLMEMPROF_COUNT"}
    for cmd, extra in ((["-c", "dep.ml"], {"OCAMLMEMPROF_COUNT": "Dep.lookup"} if counted
                        else {}), (["dep.cmx", "main.ml", "-o", "main.exe"], {})):
        subprocess.run([OCAMLOPT, "-g", *cmd], cwd=work, env={**env, **extra}, check=True,
                       capture_output=True, timeout=300)
    write_manifest(work, [{"name": "budgets", "command": ["./main.exe", str(N)],
                           "timeout": 120}],
                   defaults={"mode": "sampled", "rate": 1e-4, "seeds": [1]})
    with open(os.path.join(work, "benchmarks.toml"), "a") as fh:
        fh.write(f'[[budget]]\nfunction = "Dep.lookup"\nwords_per_call = {limit}\n'
                 f'benchmark = "budgets"\n')


@pytest.mark.needs_runtime
def test_a_dependency_function_counted_at_compile_time_is_capped_per_call(tmp_path):
    work = str(tmp_path)
    prepare_dep(work, True, 5)
    r, rows = check(work, "ok")
    assert r.returncode == 0, r.stdout + r.stderr
    row = rows["Dep.lookup"]
    # Some (k, k): a 2-word option and a 3-word tuple per call
    assert (row["attribute"], row["calls"], row["max_words"], row["limit"],
            row["outcome"]) == ("counted", N, 5, 5, "passed")
    prepare_dep(work, True, 4)
    r, rows = check(work, "over")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"Dep.lookup ({N:,} calls) allocated up to 5 words in one call, limit 4" in r.stdout
    prepare_dep(work, False, 5)
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", "uncounted"], cwd=work, timeout=600)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "OCAMLMEMPROF_COUNT=Dep.lookup" in r.stdout + r.stderr
