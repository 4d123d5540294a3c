"""Renames and moves: one 'renamed or moved' row instead of a vanished and a
new site, passing when the counts cannot be told apart, failing when the
renamed code also allocates more (moves.pair_renames)."""

import json
import os

import pytest
from harness_testlib import make_profile, run_cli, write_json
from memprof_ci.decide import attribution as moves, stats, verdict
from memprof_ci.render.report import render_markdown, render_terminal
from memprof_ci.text.wrap import DETAIL_INDENT

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
        # A terminal row's detail lines (indented under it) are part of the row.
        rows = []
        for x in text.splitlines():
            if x.startswith(DETAIL_INDENT) and rows:
                rows[-1] += " " + x.strip()
            else:
                rows.append(x)
        lines = [x for x in rows if "Main.f @ main.ml" in x]
        assert len(lines) >= 2 and all("Main.f_renamed @ main.ml" in x for x in lines), lines


# The cases of issue 57: pairs that a replay of a real library's history
# showed as "renamed or moved" although no code moved.

PARAMS = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}


def rows_of(check, base: dict, cur: dict, e=3e-4, exact=False):
    """Decided rows of one check from {site: (count, file, function)} per side."""
    def m(side):
        return {k: (n, {"file": fl, "function": fn, "line": None, "via": None, "lines": {}})
                for k, (n, fl, fn) in side.items()}
    rs = stats.site_rows("bench", check, m(cur), m(base), sum(v[0] for v in cur.values()),
                         sum(v[0] for v in base.values()), e, e, dict(PARAMS, exact=exact))
    verdict.decide_family(rs)
    return {r["site"]: r for r in rs}


STEADY = {"Main.steady @ main.ml": (5000, "main.ml", "Main.steady")}
PRIM = " (via runtime primitives, sampled)"


@pytest.mark.parametrize("files", [("traverse.ml", "util.ml"), (None, None)])
def test_one_sample_sites_in_different_files_are_not_a_rename(files):
    """`Traverse.Dfs.iter_component @ traverse.ml (in C, sampled) ->
    Util.Memo.memo @ util.ml (in C, sampled)` was paired by "the same file"
    (its rows carried no file): neither a file nor a function is shared,
    and one sample each is below the noise floor."""
    old, new = f"Traverse.Dfs.iter_component @ traverse.ml{PRIM}", f"Util.Memo.memo @ util.ml{PRIM}"
    rows = rows_of("alloc", dict(STEADY, **{old: (1, files[0], files[0] and
                                                   "Traverse.Dfs.iter_component")}),
                   dict(STEADY, **{new: (1, files[1], files[1] and "Util.Memo.memo")}))
    assert not rows[new].get("renamed_from") and not rows[old].get("renamed_to")


def test_the_standard_library_is_not_renamed_to_user_code():
    """`Stdlib__Map.Make.create @ map.ml -> Path.Check.create @ path.ml` was
    paired as "the same function create in another file"; even with many
    samples, equal counts and the same last name, a standard-library point
    and a user function are different code."""
    old, new = "Stdlib__Map.Make.create @ map.ml", "Path.Check.create @ path.ml"
    rows = rows_of("alloc", dict(STEADY, **{old: (400, "map.ml", "Stdlib__Map.Make.create")}),
                   dict(STEADY, **{new: (400, "path.ml", "Path.Check.create")}))
    assert not rows[new].get("renamed_from")
    # Two user functions of that name in two files still pair.
    rows = rows_of("alloc", dict(STEADY, **{"Graph.create @ graph.ml": (400, "graph.ml",
                                                                         "Graph.create")}),
                   dict(STEADY, **{new: (400, "path.ml", "Path.Check.create")}))
    assert rows[new]["renamed_because"] == "the same function create in another file"


def test_one_sample_peak_sites_of_one_file_are_not_a_rename_nor_a_move():
    """`Bench.w_dfs -> Bench.w_inter` in the peak check: one sample each,
    nothing recorded; not paired and, under an unchanged allocation stream,
    not named as a move either."""
    old, new = "Bench.w_dfs @ bench.ml", "Bench.w_inter @ bench.ml"
    steady = {"Bench.main @ bench.ml": (30, "bench.ml", "Bench.main")}
    rows = rows_of("peak", dict(steady, **{old: (1, "bench.ml", "Bench.w_dfs")}),
                   dict(steady, **{new: (1, "bench.ml", "Bench.w_inter")}))
    assert not rows[new].get("renamed_from")
    b = {"peak": list(rows.values()),
         "stream": {"baseline_words": 10**6, "current_words": 10**6, "same_sampling": True,
                    "baseline_samples": 31, "current_samples": 31}}
    moves.apply_moves(b)
    assert not rows[new].get("moved_from") and not rows[old].get("moved_to")
    # Above the noise floor, the same file with nothing else recorded pairs.
    rows = rows_of("peak", dict(steady, **{old: (40, "bench.ml", "Bench.w_dfs")}),
                   dict(steady, **{new: (40, "bench.ml", "Bench.w_inter")}))
    assert rows[new]["renamed_because"] == "the same file (no lines or callers recorded)"
