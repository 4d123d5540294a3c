"""A new project's first day, with the README's commands only: the
installed `memprof-ci` (make install PREFIX), `memprof-ci init`, dune
through PREFIX/bin, `update-baselines` as init's "next:" line gives it,
then a change that allocates more at one site fails the check, names the
site, and report.html leads with it; and a function annotated [@zero_alloc]
passes until it allocates.

Uses the install that `make test` makes in _build/adopt/prefix
(adopt_testlib); no PYTHONPATH, no pip.
"""

import json
import re

import pytest

from adopt_testlib import adopt_prefix, clean_env, run

PROJECT = {
    "dune-project": "(lang dune 2.9)\n",
    "bench/dune": "(executable (name main) (ocamlopt_flags (:standard -g -O2)))\n",
}
MAIN = """\
let keep = ref []

let tokens n = List.init n (fun i -> (i, string_of_int i))

let table n = Array.make (n * FACTOR / 10) 0

let[@zero_alloc] mix a b = MIX

let () =
  for i = 1 to 2000 do
    let t = tokens 50 in
    let a = table 200 in
    ignore (Sys.opaque_identity (mix i (Array.length a)));
    if i mod 500 = 0 then keep := [Obj.repr t; Obj.repr a]
  done;
  ignore (Sys.opaque_identity !keep)
"""


@pytest.fixture(scope="module")
def prefix():
    return adopt_prefix()


NO_ALLOC = "(a * 31) + b"
BOXES = "fst (Sys.opaque_identity (a * 31, b))"     # a 3-word tuple per call


def write_project(root, factor, mix=NO_ALLOC):
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "bench" / "main.ml").write_text(
        MAIN.replace("FACTOR", str(factor)).replace("MIX", mix))


def test_install_init_baselines_then_a_first_failing_check(tmp_path, prefix):
    env = clean_env(prefix, PYTHONPATH="/nonexistent")
    root = tmp_path / "project"
    root.mkdir()
    write_project(root, 10)
    r = run(["memprof-ci", "init", "--repository", "acme/memprof-ci"], env=env, cwd=root)
    assert "patch id" in r.stdout + r.stderr
    (nxt,) = [ln for ln in (r.stdout + r.stderr).splitlines() if "next:" in ln]
    update = re.search(r"run `([^`]*update-baselines[^`]*)`", nxt).group(1)
    run(["dune", "build", "--root", ".", "./bench/main.exe"], env=env, cwd=root)
    # init's own command line, as a user pastes it.
    run(["sh", "-c", update + " --no-overhead"], env=env, cwd=root, timeout=900)
    doc = json.loads((root / "bench" / "baselines" / "main.json").read_text())
    assert doc["patch_id"] == (prefix / "share/memprof-ci/patch-id").read_text().strip()
    # init's manifest counts the allocation points: exact words per site.
    assert doc["config"]["plan"]["points"] is True and doc["points"]["sites"], doc.keys()

    check = ["memprof-ci", "check", "--manifest", "bench/memprof-ci.toml", "--baselines",
             "bench/baselines", "--no-overhead", "--report-dir", "_build/alloc-report"]
    r = run(check, env=env, cwd=root, check=False, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    # A passing check's own output, from its verdict on (pytest's session
    # lines before it name temporary paths), fits 120 columns.
    ours = r.stdout[r.stdout.index("memprof-ci: no regression"):].splitlines()
    assert "benchmark" in ours[3] and max(map(len, ours)) <= 120, r.stdout
    # The annotated function is checked per call, exactly.
    report = json.loads((root / "_build/alloc-report/report.json").read_text())
    (mix,) = report["benchmarks"]["main"]["budgets"]
    assert (mix["what"], mix["calls"], mix["max_words"], mix["outcome"]) == \
        ("Dune__exe__Main.mix", 2000, 0, "passed")

    write_project(root, 15)          # the table grows by half
    run(["dune", "build", "--root", ".", "./bench/main.exe"], env=env, cwd=root)
    r = run(check, env=env, cwd=root, check=False, timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Dune__exe__Main.table" in r.stdout, r.stdout
    html = (root / "_build/alloc-report/report.html").read_text()
    first = html.index("Regressed sites")
    assert html.index("Dune__exe__Main.table", first) < html.index("<h2>Benchmarks</h2>")

    write_project(root, 10, mix=BOXES)   # the table as before; mix allocates
    run(["dune", "build", "--root", ".", "./bench/main.exe"], env=env, cwd=root)
    r = run(check, env=env, cwd=root, check=False, timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Dune__exe__Main.mix (2,000 calls) allocated up to 3 words in one call" in r.stdout
