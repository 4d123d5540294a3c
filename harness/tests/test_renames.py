"""Renames and moves: one 'renamed or moved' row instead of a vanished and a
new site, passing when the counts cannot be told apart, failing when the
renamed code also allocates more (moves.pair_renames)."""

import json
import os

from harness_testlib import make_profile, run_cli, write_json
from memprof_ci import verdict
from memprof_ci.report import render_markdown, render_terminal

MAIN = ("Main.main", "main.ml", 99)


def side(d, site, n=4000, lines=(10, 11), caller=("Main.run", "main.ml", 50)):
    """Profiles (2 seeds) of a benchmark with one site of interest and a steady one."""
    fn, fl = site
    st = [([("Stdlib__List.init", "list.ml", 60), (fn, fl, ln), caller, MAIN], n // len(lines), 2)
          for ln in lines]
    st.append(([("Main.g", "main.ml", 30), MAIN], 3000, 0))
    for seed in (1, 2):
        write_json(os.path.join(d, f"bench.{seed}.json"), make_profile(st, seed=seed))
    return str(d)


def compare(tmp_path, a_kw, b_kw):
    a = side(tmp_path / "A", **a_kw)
    b = side(tmp_path / "B", **b_kw)
    r = run_cli(["compare", a, b, "--report-dir", str(tmp_path / "r")])
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    return r, rep


def alloc(rep):
    return {row["site"]: row for row in rep["benchmarks"]["bench"]["alloc"]}


def test_function_rename_passes_with_a_renamed_row(tmp_path):
    r, rep = compare(tmp_path, {"site": ("Main.f", "main.ml")},
                     {"site": ("Main.f_renamed", "main.ml")})
    assert r.returncode == 0, r.stdout + r.stderr
    rows = alloc(rep)
    new = rows["Main.f_renamed @ main.ml"]
    assert new["renamed_from"] == "Main.f @ main.ml" and new["status"] == "~"
    assert new["baseline_samples"] == new["current_samples"] == 8000
    assert rows["Main.f @ main.ml"]["renamed_to"] == "Main.f_renamed @ main.ml"
    assert "Renamed or moved" in r.stdout
    assert "Main.f @ main.ml" in r.stdout and "Main.f_renamed @ main.ml" in r.stdout
    md = (tmp_path / "r" / "report.md").read_text()
    assert "### Renamed or moved" in md
    html = (tmp_path / "r" / "report.html").read_text()
    assert "renamed or moved from" in html


def test_module_rename_passes(tmp_path):
    """File renamed (and so the module): lines and callers are unchanged."""
    r, rep = compare(tmp_path, {"site": ("Lists.build", "benchmarks/lists.ml")},
                     {"site": ("Trees.build", "benchmarks/trees.ml")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert alloc(rep)["Trees.build @ benchmarks/trees.ml"]["renamed_from"] == \
        "Lists.build @ benchmarks/lists.ml"


def test_move_to_other_lines_pairs_by_callers(tmp_path):
    r, rep = compare(tmp_path, {"site": ("Main.f", "main.ml")},
                     {"site": ("Util.f", "util.ml"), "lines": (70, 71)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert alloc(rep)["Util.f @ util.ml"]["renamed_from"] == "Main.f @ main.ml"


def test_rename_with_a_real_increase_still_fails(tmp_path):
    r, rep = compare(tmp_path, {"site": ("Main.f", "main.ml")},
                     {"site": ("Main.f_renamed", "main.ml"), "n": 5200})
    assert r.returncode == 1, r.stdout + r.stderr
    rows = alloc(rep)
    assert rows["Main.f_renamed @ main.ml"]["status"] == "regression"
    assert "renamed_from" not in rows["Main.f_renamed @ main.ml"]


def test_unrelated_code_with_equal_counts_is_not_a_rename(tmp_path):
    """Same counts, but other lines and other callers: not one site renamed,
    but the same allocation attributed elsewhere (a move, which passes)."""
    r, rep = compare(tmp_path, {"site": ("Main.f", "main.ml")},
                     {"site": ("Main.z", "main.ml"), "lines": (500, 501),
                      "caller": ("Main.other", "main.ml", 70)})
    assert r.returncode == 0, r.stdout + r.stderr
    rows = alloc(rep)
    assert not any(x.get("renamed_from") for x in rows.values())
    assert rows["Main.z @ main.ml"]["status"] == "moved"
    assert rows["Main.z @ main.ml"]["moved_from"] == [
        {"site": "Main.f @ main.ml", "words": rows["Main.f @ main.ml"]["baseline_bytes"] / 8}]
    assert "Moved between sites" in r.stdout and "Renamed or moved" not in r.stdout


def test_same_line_in_another_file_is_not_a_rename(tmp_path):
    """Two files that share a line number (and, here, a caller chain) but
    not the function: no rename pairing, and the row says nothing of one."""
    r, rep = compare(tmp_path, {"site": ("Export.greedy.(fun)", "lib/ast.ml"), "lines": (257,)},
                     {"site": ("Glob.many.lookahead", "lib/glob.ml"), "lines": (257,)})
    rows = alloc(rep)
    assert not any(x.get("renamed_from") for x in rows.values()), r.stdout
    assert "Renamed or moved" not in r.stdout


def test_each_rename_names_why_it_was_paired(tmp_path):
    _, rep = compare(tmp_path, {"site": ("Lists.build", "benchmarks/lists.ml")},
                     {"site": ("Trees.build", "benchmarks/trees.ml")})
    assert alloc(rep)["Trees.build @ benchmarks/trees.ml"]["renamed_because"] == \
        "the same function build in another file"
    _, rep = compare(tmp_path / "2", {"site": ("Main.f", "main.ml")},
                     {"site": ("Main.f_renamed", "main.ml")})
    assert alloc(rep)["Main.f_renamed @ main.ml"]["renamed_because"] == \
        "the same file and caller chain"


def test_pairing_is_idempotent_and_survives_rerendering(tmp_path):
    r, rep = compare(tmp_path, {"site": ("Main.f", "main.ml")},
                     {"site": ("Main.f_renamed", "main.ml")})
    before = json.dumps(rep, sort_keys=True)
    verdict.decide(rep)
    assert json.dumps(rep, sort_keys=True) == before
    # The folded row never appears on its own: every line naming the old site
    # names the new one too (the alloc and the live rename, the merged row).
    for text in (render_terminal(rep, verbose=True), render_markdown(rep)):
        lines = [x for x in text.splitlines() if "Main.f @ main.ml" in x]
        assert len(lines) >= 2 and all("Main.f_renamed @ main.ml" in x for x in lines), lines
