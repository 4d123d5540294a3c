"""Golden renderings of one fixed comparison: terminal, Markdown and JSON.

The comparison (built with stats.site_rows and verdict.decide from fixed
counts, no timestamps, no paths) has a regression, an improvement, a new
site, a noise site and a function rename, plus an identical benchmark and
one of exact allocation points: a standard-library point grown by a new
caller (the row names that caller, not the largest ones), a point in
compiler-generated code and a row of allocation by runtime primitives.
report.html is pinned by its site rows (report-sites.html).  Any
change to a rendering shows up as a diff of harness/tests/golden/*, to be
reviewed.  Regenerate after an intended change with

    MEMPROF_CI_UPDATE_GOLDEN=1 /usr/bin/python3 -m pytest harness/tests/test_golden.py

and commit the new files with the change.  Also here: the benchstat-style
terse terminal (headline and status table only when nothing changed
significantly; site tables with verbose).
"""

import os
import re
from collections import Counter

import pytest

from harness_testlib import HERE
from memprof_ci.measure import overhead
from memprof_ci.decide import verdict
from memprof_ci.sites.point_sites import PointSite, split
from memprof_ci.render.report import render_markdown, render_terminal
from memprof_ci.decide.report_doc import new_report, to_json
from memprof_ci.render.report_html import render_html
from memprof_ci.decide.comparison import caller_changes
from memprof_ci.sites.keys import generated_what

GOLDEN = os.path.join(HERE, "golden")
PARAMS = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}


def info(fn, fl, lines):
    return {"file": fl, "function": fn, "line": None, "via": None,
            "lines": {str(k): v for k, v in lines.items()}}


def site(fn, n, lines=None, fl="main.ml"):
    return f"{fn} @ {fl}", (n, info(fn, fl, lines or {10: n}))


def bench(name, base: dict, cur: dict, e=3e-4):
    rows = verdict.stats.site_rows(name, "alloc", cur, base, sum(v[0] for v in cur.values()),
                                   sum(v[0] for v in base.values()), e, e, PARAMS)
    gc = {"minor_words": 1e6, "promoted_words": 1e4, "major_words": 2e4}
    return {"name": name, "settings": dict(PARAMS), "notes": [], "overhead": None,
            "alloc": rows, "live": [], "gc": verdict.stats.gc_compare(gc, gc, 0.01, 0.1),
            "checks": {c: {"outcome": "passed", "message": ""}
                       for c in ("alloc_sites", "live", "gc_totals")}}


def fixed_overhead() -> dict:
    """A judged overhead record: counted once per side, CPU time steady,
    wall time in two speeds (noisy), 832 KiB of added peak RSS."""
    ev = {"Ir": 74_372_475, "I1mr": 3347, "ILmr": 2539, "Dr": 18_438_216, "D1mr": 713_208,
          "DLmr": 3183, "Dw": 12_971_148, "D1mw": 810_488, "DLmw": 45_338}
    on = dict(ev, Ir=75_712_068, I1mr=6301, D1mr=764_941)
    rec = overhead.parse_record({"measure": "cycles", "counted": {
        "args": ["260"], "model": "m", "concurrent": False, "threads": "disabled",
        "off": [ev], "on": [on]}, "time": {
        "runs": 5, "first_rounds": 5,
        "cpu_off_s": [0.30, 0.31, 0.30, 0.32, 0.30], "cpu_on_s": [0.31, 0.32, 0.31, 0.33, 0.31],
        "wall_off_s": [0.51, 0.29, 0.50, 0.28, 0.30], "wall_on_s": [0.29, 0.52, 0.29, 0.28, 0.51]},
        "rss": {"off_kb": [10_504], "on_kb": [11_336]}}, "overhead")
    return {**rec, "threshold": 0.12, "basis": "baseline", "budget": 0.10, "status": "~",
            "note": "", "baseline_estimate": 0.02, "baseline_ci_high": 0.02}


def point(key, fn, fl, words, callers):
    """A point site (pointsites.PointSite) with its sampled callers."""
    return PointSite(key=key, file=fl, function=fn, words=words, callers=Counter(callers))


def shared_bench() -> dict:
    """Exact allocation points: a standard-library point grown by a new
    caller while its largest callers are unchanged, a point in
    compiler-generated code, and what runtime primitives allocated for a
    user function (sampled)."""
    add = "Stdlib__Hashtbl.add @ hashtbl.ml"
    callers = {"Path.check @ path.ml": 500, "Traverse.iter @ traverse.ml": 300}
    base_pts = {add: point(add, "Stdlib__Hashtbl.add", "hashtbl.ml", 8_000_000, callers),
                "caml_curry2 @ ?": point("caml_curry2 @ ?", "caml_curry2", None, 40_000,
                                         {"Main.run @ main.ml": 50})}
    cur_pts = {add: point(add, "Stdlib__Hashtbl.add", "hashtbl.ml", 8_400_000,
                          dict(callers, **{"Memo.memo @ memo.ml": 40})),
               "caml_curry2 @ ?": base_pts["caml_curry2 @ ?"]}
    m = lambda pts: {k: (p.words, {"file": p.file, "function": p.function, "line": None,
                                   "via": None, "lines": {}}) for k, p in pts.items()}
    params = dict(PARAMS, exact=True, min_effect=0.01)
    rows = verdict.stats.site_rows("shared", "alloc", m(cur_pts), m(base_pts), 8_440_000,
                                   8_040_000, 1.0, 1.0, params)
    prim = "Main.run @ main.ml (via runtime primitives, sampled)"
    rows += verdict.stats.site_rows("shared", "alloc", {prim: (60, {"file": "main.ml",
                                    "function": "Main.run", "line": None, "via": None,
                                    "lines": {}})}, {prim: (58, {"file": "main.ml",
                                    "function": "Main.run", "line": None, "via": None,
                                    "lines": {}})}, 3000, 2900, 3e-4, 3e-4, PARAMS)
    for r in rows:
        r["points"] = r["exact"]
        if r["site"] in cur_pts:
            r["split"] = split(cur_pts[r["site"]])
            r["caller_changes"] = caller_changes(cur_pts[r["site"]], base_pts[r["site"]])
        if r["function"] == "caml_curry2":
            r["generated"] = generated_what("caml_curry2")
    b = bench("shared", {}, {})
    b["alloc"] = rows
    return b


def fixed_report() -> dict:
    rep = new_report("compare")
    rep["benchmarks"]["shared"] = shared_bench()
    base = dict([site("Main.grow", 20000), site("Main.shrink", 10000), site("Main.steady", 30000),
                 site("Main.old_name", 5000, {40: 5000})])
    cur = dict([site("Main.grow", 26000), site("Main.shrink", 7000), site("Main.steady", 30050),
                site("Main.new_name", 5000, {40: 5000}), site("Main.fresh", 3000, {77: 3000})])
    rep["benchmarks"]["changed"] = bench("changed", base, cur)
    same = dict([site("Quiet.a", 1000), site("Quiet.b", 500)])
    rep["benchmarks"]["identical"] = bench("identical", same, same)
    rep["benchmarks"]["identical"]["overhead"] = fixed_overhead()
    verdict.decide(rep)
    return rep


def html_site_rows(report: dict) -> str:
    """report.html's regressed rows (its first screen) and each site table
    row, one per line: the parts of the page a site's name is rendered in."""
    page = render_html(report, env={})
    focus = re.search(r'<section id="focus">.*?</table>', page, re.S).group(0)
    rows = re.findall(r'<tr class="site[^"]*".*?</tr>', page, re.S)
    return "\n".join([focus] + rows) + "\n"


RENDERINGS = {"report.txt": lambda r: render_terminal(r),
              "report-verbose.txt": lambda r: render_terminal(r, verbose=True),
              "report.md": render_markdown, "report.json": to_json,
              "report-sites.html": html_site_rows}


@pytest.mark.parametrize("name", sorted(RENDERINGS))
def test_golden(name):
    got = RENDERINGS[name](fixed_report())
    path = os.path.join(GOLDEN, name)
    if os.environ.get("MEMPROF_CI_UPDATE_GOLDEN") == "1":
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(got)
    with open(path, encoding="utf-8") as fh:
        want = fh.read()
    assert got == want, (f"{name} differs from {path}; if intended, regenerate with "
                         f"MEMPROF_CI_UPDATE_GOLDEN=1 (see this file's docstring)")


def test_fixed_comparison_has_each_kind_of_row():
    rep = fixed_report()
    rows = {r["site"]: r for r in rep["benchmarks"]["changed"]["alloc"]}
    assert rows["Main.grow @ main.ml"]["status"] == "regression"
    assert rows["Main.shrink @ main.ml"]["status"] == "improvement"
    assert rows["Main.fresh @ main.ml"]["status"] == "regression"
    assert rows["Main.fresh @ main.ml"]["baseline_samples"] == 0
    assert rows["Main.steady @ main.ml"]["status"] == "~"
    assert rows["Main.new_name @ main.ml"]["renamed_from"] == "Main.old_name @ main.ml"
    assert rows["Main.new_name @ main.ml"]["status"] == "~"
    assert rep["verdict"]["exit_code"] == 1


def test_terminal_shows_site_tables_only_for_significant_changes():
    text = render_terminal(fixed_report())
    assert "changed: top sites" in text and "identical:" not in text.split("overhead")[-1]
    verbose = render_terminal(fixed_report(), verbose=True)
    assert "identical: sites by current allocation" in verbose


def test_identical_comparison_prints_headline_and_status_table_only():
    rep = fixed_report()
    del rep["benchmarks"]["changed"]
    del rep["benchmarks"]["shared"]
    rep["family"] = None
    verdict.decide(rep)
    cell = "+1.37% cycles, counted (limit +12.00%)"
    full = ("+1.37% cycles, counted (+1.80% instr.) vs +12.00% (baseline +2.00% + tolerance); "
            "time CPU +3.3% [+3.1%, +3.3%], wall noisy (pairs -43% to +79%); peak RSS +0.8 MB")
    assert any(line.startswith("identical ") and line.endswith(full)
               for line in render_terminal(rep, verbose=True).splitlines())
    assert all(len(line) <= 120 for line in render_terminal(rep).splitlines())
    assert render_terminal(rep).splitlines() == [
        "memprof-ci: no regression in 1 benchmark(s)",
        "",
        "benchmark  alloc_sites  gc_totals  live  peak  detects       overhead",
        "---------  -----------  ---------  ----  ----  ------------  " + "-" * len(cell),
        # The family is this benchmark's sites alone now: a higher level
        # per test than in the golden report, so a smaller MDE.
        "identical  ok           ok         ok    -     16.7%..24.6%  " + cell]


def test_verbose_lists_every_site_of_every_benchmark():
    rep = new_report("compare")
    many = dict(site(f"Many.f{i:02d}", 1000 + i) for i in range(40))
    rep["benchmarks"]["many"] = bench("many", many, many)
    verdict.decide(rep)
    assert "Many.f" not in render_terminal(rep)
    verbose = render_terminal(rep, verbose=True)
    assert all(f"Many.f{i:02d} @ main.ml" in verbose for i in range(40))


def test_failing_report_terminal_fits_120_columns():
    """The default terminal output of a failing report, site names with
    their callers included, is at most 120 columns wide (benchstat-like:
    wide detail goes to a wrapped line below its row)."""
    text = render_terminal(fixed_report())
    assert "Regressions (worst first):" in text
    wide = [line for line in text.splitlines() if len(line) > 120]
    assert wide == []


def test_the_headline_fits_the_terminal_however_long_the_names():
    from memprof_ci.decide.report_doc import new_report
    from memprof_ci.render.report import render_terminal
    rep = new_report()
    names = [f"benchmark_number_{i}::alloc_sites" for i in range(5)]
    rep["verdict"] = {"exit_code": 1, "errors": [], "regressions": names, "accepted": []}
    first = render_terminal(rep).splitlines()[0]
    # No site regressed (a budget, the GC totals): no "(0 site(s))".
    assert first.startswith("memprof-ci: regression in 5 check(s) over") and names[0] in first
    assert len(first) <= 120 and first.endswith(", …"), first
    rep["verdict"]["regressions"] = ["x" * 200]
    assert render_terminal(rep).splitlines()[0].endswith(": …")


def test_a_regression_message_puts_the_cause_under_its_site_within_the_width():
    """pytest's failure section: each regressed site's figures on its line,
    what the row says of it (callers, the cause of its change) wrapped
    under it, every line within the terminal's width."""
    from memprof_ci.decide.verdict import regression_message
    cause = [{"site": f"Very.Long.Module.Path.caller_number_{i} @ lib/some/dir/file_{i}.ml",
              "change_words": 100_000, "change_low": 50_000, "change_high": 150_000,
              "new": True} for i in range(3)]
    row = {"benchmark": "demo", "site": "Stdlib__Hashtbl.add @ hashtbl.ml", "baseline_bytes": 1e6,
           "current_bytes": 2e6, "baseline_samples": 10, "significant": True, "exact": True,
           "ratio": 2.0, "cause": cause}
    lines = regression_message("demo", "alloc", [row]).split("\n")
    assert lines[1] == "  Stdlib__Hashtbl.add @ hashtbl.ml: 976.6 KiB -> 1.9 MiB +100.0% (exact)"
    assert len(lines) > 3 and all(x.startswith("    ") and len(x) <= 120 for x in lines[2:])
    assert "caller_number_2" in " ".join(lines[2:]) and lines[-1].endswith("estimated by caller")
