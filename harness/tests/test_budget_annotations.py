"""Budgets per call of annotated functions ([@zero_alloc],
[@memprof.words_per_call N]): the version-6 profile's `budgets` section
read as untrusted input (inputs/profile_budgets.py); the rows and their
points, exact and estimated (decide/budgets.py); a manifest words_per_call
budget; the annotations changed since the baseline and the accept label;
the report's sections (render/report_budgets.py); and the CLI end to end
with the fake benchmark writing the section."""

import copy
import json
import os

import pytest
from harness_testlib import (check, make_profile, project, spec_sites, to_version3, update,
                             write_json)
from test_points_reader import _v5

from memprof_ci.decide import budgets as B
from memprof_ci.decide.report_doc import new_report
from memprof_ci.decide.verdict import accept_changes
from memprof_ci.errors import ConfigError, InputError
from memprof_ci.inputs.budget import budget_changes, lowered_text
from memprof_ci.inputs.manifest import load_manifest
from memprof_ci.inputs.profile import load_profile
from memprof_ci.inputs.profile_budgets import Annotated, recorded
from memprof_ci.render.report import render_markdown, render_terminal
from memprof_ci.sites.grouping import aggregate

TUPLES = {"function": "Main.tuples", "file": "main.ml", "line": 3,
          "attribute": "words_per_call", "limit": 3, "calls": 1000, "words": 3000,
          "max_words": 3, "other_domain_calls": 0}
QUIET = {"function": "Main.quiet", "file": "main.ml", "line": 30, "attribute": "zero_alloc",
         "limit": 0, "calls": 10, "words": 0, "max_words": 0, "other_domain_calls": 2}


def v6(*entries, points=True):
    """_v5's profile (Main.tuples' exact points) with stacks through
    Main.tuples, a nested function's point, and a budgets section."""
    base = _v5()
    doc = to_version3(make_profile([
        ([("Main.tuples", "main.ml", 4), ("Main.run", "main.ml", 40)], 7, 0),
        ([("Stdlib__List.init", "list.ml", 5), ("Main.helper", "main.ml", 20),
          ("Main.tuples", "main.ml", 5), ("Main.run", "main.ml", 40)], 5, 0),
        ([("Main.tuplesX", "main.ml", 50), ("Main.run", "main.ml", 40)], 9, 0)]))
    doc["version"] = 6
    if points:
        doc["points"] = base["points"]
        doc["points"]["points"] += [
            ["main.ml", 6, 10, 20, "Main.tuples.inner", 10, 30, 0, 0, 0, 0, 0, 0],
            ["main.ml", 51, 2, 9, "Main.tuplesX", 10, 90, 0, 0, 0, 0, 0, 0]]
        doc["points"]["calls"] = [
            ["main.ml", 7, 2, 20, "Main.tuples", 0, 0, 1, 500, 0, 0, 0, 0]]
    doc["budgets"] = [dict(e) for e in entries] if entries else [dict(TUPLES)]
    return doc


def agg_of(tmp_path, doc, name="p.json"):
    return aggregate([load_profile(write_json(tmp_path / name, doc))], "function", "demo")


# ------------------------------------------------------------------ reading

def test_version6_budgets_read_exactly(tmp_path):
    prof = load_profile(write_json(tmp_path / "p.json", v6(TUPLES, QUIET)))
    assert prof.budgets == (Annotated(**TUPLES), Annotated(**QUIET))
    assert prof.points is not None and prof.points.complete
    # Version 6 without points (a version-3 document plus the section).
    prof = load_profile(write_json(tmp_path / "np.json", v6(points=False)))
    assert prof.points is None and prof.budgets == (Annotated(**TUPLES),)
    # Other versions have none.
    assert load_profile(write_json(tmp_path / "v5.json", _v5())).budgets is None


def _bad(**kw):
    return [dict(TUPLES, **kw)]


MALFORMED = {
    "not a list": ({"Main.tuples": 1}, "budgets is not a list"),
    "not an object": ([3], r"budgets\[0\] \(\?\) is not an object"),
    "string count": (_bad(calls="1000"), r"\(Main.tuples\): calls is not a non-negative"),
    "negative": (_bad(words=-1), "words is not a non-negative"),
    "float limit": (_bad(limit=2.5), "limit is not a non-negative"),
    "bool line": (_bad(line=True), "line is not a line number"),
    "empty function": (_bad(function=""), "function is not a non-empty string"),
    "max over words": (_bad(max_words=3001), "max_words 3001 > words 3000"),
    "words without calls": (_bad(calls=0, max_words=3), "3000 words in 0 calls"),
    "words over calls x max": (_bad(calls=10), r"words 3000 > calls x max_words"),
    "unknown key": (_bad(extra=1), r"unknown key\(s\) extra"),
    "missing key": ([{k: v for k, v in TUPLES.items() if k != "max_words"}],
                    r"missing key\(s\) max_words"),
    "unknown attribute": (_bad(attribute="noalloc"), "attribute 'noalloc' is not zero_alloc, words_per_call or counted"),
    "zero_alloc limit": (_bad(attribute="zero_alloc", limit=1),
                         "zero_alloc with limit 1"),
    "duplicate": ([TUPLES, TUPLES], r"budgets\[1\] \(Main.tuples\): the same function"),
    "not sorted": ([QUIET, TUPLES], r"budgets\[1\] \(Main.tuples\): not sorted"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_budgets_section_is_bad_input(tmp_path, case):
    sec, msg = MALFORMED[case]
    doc = v6()
    doc["budgets"] = copy.deepcopy(sec)
    path = write_json(tmp_path / "p.json", doc)
    with pytest.raises(InputError, match=msg) as e:
        load_profile(path)
    assert str(e.value).startswith(f"{path}: malformed budgets section: ")
    assert "\n" not in str(e.value)


def test_version6_needs_its_section_and_no_other_version_has_one(tmp_path):
    doc = v6()
    del doc["budgets"]
    with pytest.raises(InputError, match=r"missing key\(s\) budgets"):
        load_profile(write_json(tmp_path / "a.json", doc))
    doc = _v5()
    doc["budgets"] = [TUPLES]
    with pytest.raises(InputError, match=r"unknown key\(s\) budgets"):
        load_profile(write_json(tmp_path / "b.json", doc))


# --------------------------------------------------------------------- rows

def test_an_annotated_row_names_its_exact_and_estimated_points(tmp_path):
    agg = agg_of(tmp_path, v6())
    (row,) = B.annotated_rows("demo", agg, [])
    # Main.helper's allocation inside Main.tuples: 5 samples at rate 1e-4,
    # one run: 50,000 words per run, estimated.  Then Main.tuples' own point
    # (3,015 words, two units summed), its call point's C words, and (not
    # shown, the fourth) its nested function's point; never Main.tuplesX's,
    # nor the stack whose innermost frame is Main.tuples (counted exactly).
    assert row == {"benchmark": "demo", "what": "Main.tuples", "kind": "annotation",
                   "file": "main.ml", "line": 3, "attribute": "words_per_call",
                   "calls": 1000, "words": 3000, "words_per_call": 3.0, "max_words": 3,
                   "limit": 3, "annotation_limit": 3, "outcome": "passed",
                   "points": [{"point": "Main.helper @ main.ml", "words": 50_000,
                               "estimated": True},
                              {"point": "main.ml:4:42-52", "words": 3015},
                              {"point": "main.ml:7:2-20", "words": 500, "via_c": True}]}
    assert B.budget_failure("demo", [row]) is None


def test_nested_functions_points_count_and_estimates_need_no_exact_points(tmp_path):
    doc = v6()
    doc["points"]["calls"] = []
    doc["points"]["points"] = [p for p in doc["points"]["points"] if p[1] != 4]
    (row,) = B.annotated_rows("demo", agg_of(tmp_path, doc), [])
    assert [p["point"] for p in row["points"]] == ["Main.helper @ main.ml", "main.ml:6:10-20"]
    assert row["points"][1] == {"point": "main.ml:6:10-20", "words": 30}
    # Without exact points, the function's own sampled allocation is estimated.
    (row,) = B.annotated_rows("demo", agg_of(tmp_path, v6(points=False), "np.json"), [])
    assert row["points"] == [
        {"point": "Main.tuples @ main.ml", "words": 70_000, "estimated": True},
        {"point": "Main.helper @ main.ml", "words": 50_000, "estimated": True}]


def test_a_call_over_the_limit_fails_even_when_the_mean_fits(tmp_path):
    agg = agg_of(tmp_path, v6(dict(TUPLES, words=2990, max_words=4)))
    (row,) = B.annotated_rows("demo", agg, [])
    assert row["words_per_call"] == 2.99 and row["outcome"] == "failed"
    assert B.budget_failure("demo", [row]) == (
        "benchmark 'demo' is over its allocation budget:\n  Main.tuples (1,000 calls) "
        "allocated up to 4 words in one call, limit 3 per call (most at Main.helper @ main.ml)")
    agg = agg_of(tmp_path, v6(dict(TUPLES, max_words=3, limit=3)), "eq.json")
    assert B.annotated_rows("demo", agg, [])[0]["outcome"] == "passed"


def test_zero_alloc(tmp_path):
    agg = agg_of(tmp_path, v6(TUPLES, QUIET))
    quiet = B.annotated_rows("demo", agg, [])[1]
    assert (quiet["attribute"], quiet["limit"], quiet["outcome"], quiet["points"],
            quiet["other_domain_calls"]) == ("zero_alloc", 0, "passed", [], 2)
    # Allocated nothing: no points, though sampled stacks pass through it
    # (their allocation was another domain's, say).
    run = dict(QUIET, function="Main.run", line=40)
    (row,) = B.annotated_rows("demo", agg_of(tmp_path, v6(run), "run.json"), [])
    assert (row["outcome"], row["points"]) == ("passed", [])
    bad = dict(QUIET, words=10, max_words=1)
    quiet = B.annotated_rows("demo", agg_of(tmp_path, v6(TUPLES, bad), "z.json"), [])[1]
    assert quiet["outcome"] == "failed" and "limit 0 per call" in B.budget_failure(
        "demo", [quiet])


# ------------------------------------------------- manifest words_per_call

BENCH = '[[benchmark]]\nname = "demo"\ncommand = ["./demo.exe"]\n'


def manifest(tmp_path, body, name="m.toml"):
    p = tmp_path / name
    p.write_text(BENCH + body)
    return str(p)


def test_words_per_call_parses_and_is_validated(tmp_path):
    m = load_manifest(manifest(tmp_path, '[[budget]]\nfunction = "Main.tuples"\n'
                                         'words_per_call = 2\nbenchmark = "demo"\n'))
    (b,) = m.budgets
    assert (b.words_per_call, b.words_per_run, b.limit, b.unit) == (2, None, 2,
                                                                   "words_per_call")
    for i, body in enumerate([
            'function = "F"\nwords_per_call = 2\n',                       # no benchmark
            'point = "a.ml:1"\nwords_per_call = 2\nbenchmark = "demo"\n',
            'function = "F"\nwords_per_call = 2\nwords_per_run = 9\nbenchmark = "demo"\n']):
        with pytest.raises(ConfigError, match=r"\[\[budget\]\] #1: `words_per_call` caps "
                                              r"each call of an annotated `function` in one "
                                              r"`benchmark`"):
            load_manifest(manifest(tmp_path, "[[budget]]\n" + body, f"bad{i}.toml"))
    with pytest.raises(ConfigError, match="`words_per_call` must be an integer >= 0"):
        load_manifest(manifest(tmp_path, '[[budget]]\nfunction = "F"\nwords_per_call = -1\n'
                                         'benchmark = "demo"\n', "neg.toml"))


def _call_budget(tmp_path, n):
    return load_manifest(manifest(tmp_path, f'[[budget]]\nfunction = "Main.tuples"\n'
                                            f'words_per_call = {n}\nbenchmark = "demo"\n',
                                  f"c{n}.toml")).budgets[0]


def test_a_manifest_words_per_call_only_tightens(tmp_path):
    agg = agg_of(tmp_path, v6())
    (row,) = B.annotated_rows("demo", agg, [_call_budget(tmp_path, 2)])
    assert (row["limit"], row["manifest_limit"], row["outcome"]) == (2, 2, "failed")
    (row,) = B.annotated_rows("demo", agg, [_call_budget(tmp_path, 9)])
    assert (row["limit"], row["outcome"]) == (3, "passed")
    # A function the profile has no annotated entry for cannot be counted per call.
    other = load_manifest(manifest(tmp_path, '[[budget]]\nfunction = "Main.run"\n'
                                             'words_per_call = 1\nbenchmark = "demo"\n',
                                   "run.toml")).budgets
    assert B.unannotated(other, agg.budgets) == other
    assert B.unannotated([_call_budget(tmp_path, 2)], agg.budgets) == []
    assert "annotate it [@memprof.words_per_call N] or [@zero_alloc], or compile it with " \
        "OCAMLMEMPROF_COUNT=Main.run" in B.unannotated_error("m.toml", other[0], "demo")


def test_a_counted_function_is_judged_only_by_its_manifest_budget(tmp_path):
    """A dependency's function the compiler counted (OCAMLMEMPROF_COUNT,
    attribute "counted", limit 0) has no limit of its own: no row without
    a manifest words_per_call budget, that budget's limit with one, and it
    is never an annotation a baseline records or a change lists."""
    counted = dict(TUPLES, attribute="counted", limit=0)
    agg = agg_of(tmp_path, v6(counted))
    assert B.annotated_rows("demo", agg, []) == []
    assert B.unannotated([_call_budget(tmp_path, 2)], agg.budgets) == []
    (row,) = B.annotated_rows("demo", agg, [_call_budget(tmp_path, 3)])
    assert (row["attribute"], row["limit"], row["annotation_limit"], row["outcome"]) == \
        ("counted", 3, None, "passed")
    (row,) = B.annotated_rows("demo", agg, [_call_budget(tmp_path, 2)])
    assert (row["limit"], row["outcome"]) == (2, "failed")
    assert "limit 2 per call" in B.budget_failure("demo", [row])
    assert B.annotation_hints([row]) == []
    assert recorded(agg.budgets) == []
    assert B.annotation_changes("demo", [], agg.budgets) == []
    report = {"accept_changes": True, "settings_changes": [
        {"benchmark": "demo", "setting": "budget Main.tuples per call", "pull_request": 3}]}
    assert B.accepted_rows(report, [row])
    assert any("2 (manifest)" in line for line in
               render_terminal(decided([row])).splitlines())
    # a counted entry with a limit is not what the runtime writes
    with pytest.raises(InputError, match=r"counted with limit 3"):
        load_profile(write_json(tmp_path / "bad.json", v6(dict(counted, limit=3))))


def test_per_call_budgets_change_ratchet_and_rewrite_apart(tmp_path):
    b2, b9 = _call_budget(tmp_path, 2), _call_budget(tmp_path, 9)
    assert budget_changes([b9], [b2]) == [{"benchmark": "demo",
                                           "setting": "budget Main.tuples per call",
                                           "pull_request": 9, "base": 2}]
    agg = agg_of(tmp_path, v6())
    rows = {"demo": B.annotated_rows("demo", agg, [b9])}
    assert B.ratchet_limits([b9], rows, {b9.index: {"demo"}}) == {b9.index: 3}
    assert B.ratchet_limits([b9], {}, {b9.index: {"demo"}}) == {}
    # A words_per_run budget of the function is not lowered by its per-call row.
    from memprof_ci.inputs.budget import Budget
    per_run = Budget("Main.tuples", None, None, 3, "demo", index=2)
    assert B.ratchet_limits([per_run], rows, {2: {"demo"}}) == {}
    text = (tmp_path / "c9.toml").read_text()
    assert lowered_text(text, {1: 3}) == text.replace("words_per_call = 9", "words_per_call = 3")


def test_annotation_hints_name_what_each_function_could_be(tmp_path):
    agg = agg_of(tmp_path, v6(dict(TUPLES, limit=8, max_words=5, words=4000), QUIET))
    rows = B.annotated_rows("a", agg, []) + B.annotated_rows("b", agg, [])
    assert B.annotation_hints(rows) == [
        "Main.tuples: could be [@memprof.words_per_call 5] (main.ml:3)"]
    rows[2] = dict(rows[2], max_words=8)   # benchmark b: at its limit
    assert B.annotation_hints(rows) == []


# ------------------------------------------------------------- integrity

REC = [{"function": "Main.tuples", "file": "main.ml", "line": 3,
        "attribute": "words_per_call", "limit": 3},
       {"function": "Main.gone", "file": "main.ml", "line": 9, "attribute": "zero_alloc",
        "limit": 0}]


def test_annotation_changes_against_the_baseline():
    entries = (Annotated(**dict(TUPLES, limit=5, line=4)), Annotated(**QUIET))
    changes = B.annotation_changes("demo", REC, entries)
    assert changes == [
        {"benchmark": "demo", "setting": "annotation Main.gone", "pull_request": None,
         "base": 0, "note": "annotation removed or no longer called", "needs_label": True},
        {"benchmark": "demo", "setting": "annotation Main.quiet", "pull_request": 0,
         "base": None, "note": "new annotation", "needs_label": False},
        {"benchmark": "demo", "setting": "annotation Main.tuples", "pull_request": 5,
         "base": 3, "note": "limit raised", "needs_label": True}]
    lowered = B.annotation_changes("demo", REC[:1], (Annotated(**dict(TUPLES, limit=2)),))
    assert [(c["note"], c["needs_label"]) for c in lowered] == [("limit lowered", False)]
    assert B.annotation_changes("demo", REC[:1], (Annotated(**TUPLES),)) == []
    msg = B.budget_failure("demo", [], changes)
    assert msg == ("benchmark 'demo' changes annotations that need the accept label:\n"
                   "  annotation Main.gone: annotation removed or no longer called "
                   "(baseline's limit 0)\n"
                   "  annotation Main.tuples: limit raised (baseline's limit 3)")
    assert B.budget_failure("demo", [], lowered) is None


def test_the_label_accepts_annotation_changes_not_a_call_over_its_annotation(tmp_path):
    changes = B.annotation_changes("demo", REC, ())
    row = B.annotated_rows("demo", agg_of(tmp_path, v6(dict(TUPLES, max_words=4,
                                                                words=3500))), [])[0]
    for rows, label, expect in (([], True, "accepted"), ([], False, "failed"),
                                ([row], True, "failed")):
        report = {"accept_changes": label, "settings_changes": [], "benchmarks": {"demo": {
            "checks": {"budget": {"outcome": "failed", "message": "m"}},
            "budgets": rows, "annotation_changes": changes}}}
        accept_changes(report)
        assert report["benchmarks"]["demo"]["checks"]["budget"]["outcome"] == expect


def test_baselines_record_the_annotations_seen(tmp_path):
    from memprof_ci.store.baseline import dumps, parse_baseline, to_document
    agg = agg_of(tmp_path, v6(TUPLES, QUIET))
    doc = json.loads(dumps(to_document(agg, None, None, None)))
    assert doc["annotations"] == [
        {"function": "Main.tuples", "file": "main.ml", "line": 3,
         "attribute": "words_per_call", "limit": 3},
        {"function": "Main.quiet", "file": "main.ml", "line": 30, "attribute": "zero_alloc",
         "limit": 0}]
    assert parse_baseline(doc, "b.json").meta["annotations"] == doc["annotations"]
    del doc["annotations"]
    assert parse_baseline(doc, "b.json").meta["annotations"] is None
    doc["annotations"] = [{"function": "F", "file": "f.ml", "line": 1,
                           "attribute": "noalloc", "limit": 0}]
    with pytest.raises(InputError, match=r"b.json: malformed baseline: annotations\[0\]"):
        parse_baseline(doc, "b.json")


# ---------------------------------------------------------------- report

def decided(rows, changes=None, empty=()):
    rep = new_report()
    rep["verdict"] = {"exit_code": 1, "errors": [], "regressions": ["demo::budget"],
                      "accepted": []}
    rep["benchmarks"]["demo"] = {"name": "demo", "checks": {
        "budget": {"outcome": "failed", "message": "m"}}, "notes": [], "budgets": rows,
        **({"annotation_changes": changes} if changes else {})}
    for name in empty:
        rep["benchmarks"][name] = {"name": name, "checks": {
            "budget": {"outcome": "passed"}}, "notes": [], "budgets": []}
    return rep


def _rows(tmp_path):
    agg = agg_of(tmp_path, v6(dict(TUPLES, words=2990, max_words=4), QUIET))
    return B.annotated_rows("demo", agg, [])


def test_terminal_annotated_section_exact(tmp_path):
    changes = B.annotation_changes("demo", REC, ())[:1]
    out = render_terminal(decided(_rows(tmp_path), changes, empty=["alpha", "beta"]))
    i = out.index("Annotated functions")
    assert out[i:].split("\n\n")[0].splitlines() == [
        "Annotated functions (exact words per call, callees included; every call must fit "
        "the limit):",
        "benchmark  function     calls  words/call  max/call  limit/call  annotation      "
        "verdict  largest points",
        "---------  -----------  -----  ----------  --------  ----------  --------------  "
        "-------  " + "-" * 30,
        "demo       Main.tuples  1,000  2.99        4         3           words_per_call  "
        "FAILED   Main.helper @ main.ml (≈50,00…",
        # The points cut from the cell, whole under the row.
        "    Main.helper @ main.ml (≈50,000), main.ml:4:42-52 (3,015), main.ml:7:2-20 (C) (500)",
        "demo       Main.quiet   10     0           0         0           zero_alloc      "
        "passed   allocated nothing",
        "Annotations changed since the baseline:",
        "  demo: annotation Main.gone: annotation removed or no longer called (limit 0 -> "
        "none); fails without the accept label",
        "No budgets (no manifest budget applies, no annotated function was called): alpha, beta"]
    assert max(map(len, out.splitlines())) <= 120


def test_terminal_separates_the_budgets_table_from_the_annotated_one(tmp_path):
    per_run = {"benchmark": "demo", "kind": "budget", "what": "Main.f", "words_per_run": 10,
               "limit": 10, "outcome": "passed", "points": []}
    out = render_terminal(decided([per_run] + _rows(tmp_path))).splitlines()
    i = out.index("Annotated functions (exact words per call, callees included; every call "
                  "must fit the limit):")
    assert out[i - 1] == "" and out[i - 2].startswith("demo       Main.f"), out


def test_markdown_annotated_section_marks_estimates(tmp_path):
    md = render_markdown(decided(_rows(tmp_path), empty=["alpha"]))
    i = md.index("Annotated functions:")
    lines = md[i:].splitlines()
    assert lines[2:6] == [
        "| benchmark | function | calls | words/call | max/call | limit/call | annotation "
        "| verdict | largest points |", "|---|---|--:|--:|--:|--:|---|:-:|---|",
        "| demo | ` Main.tuples ` | 1,000 | 2.99 | 4 | 3 | words_per_call | **FAILED** | "
        "` Main.helper @ main.ml ` (≈50,000), ` main.ml:4:42-52 ` (3,015), "
        "` main.ml:7:2-20 ` (C) (500) |",
        "| demo | ` Main.quiet ` | 10 | 0 | 0 | 0 | zero_alloc | passed | "
        "allocated nothing |"]
    assert "No budgets (no manifest budget applies, no annotated function was called): alpha" \
        in md


def test_a_report_whose_budget_checks_judged_nothing_says_so():
    rep = decided([], empty=["alpha"])
    assert render_terminal(rep).splitlines()[-1] != ""
    assert ("No budgets (no manifest budget applies, no annotated function was called): "
            "alpha, demo") in render_terminal(rep)
    del rep["benchmarks"]["demo"]["budgets"], rep["benchmarks"]["alpha"]
    assert "No budgets" not in render_terminal(rep) + render_markdown(rep)


def test_html_annotated_section_escapes_and_is_bounded(tmp_path):
    from memprof_ci.decide.report_types import Report
    from memprof_ci.render import report_budgets
    from memprof_ci.render.report_html import render_html
    rows = _rows(tmp_path)
    hostile = dict(rows[0], what="M.f</td><script>window.__pwned=1</script>")
    page = render_html(decided([hostile, rows[1]], B.annotation_changes("demo", REC, ())))
    section = page[page.index('<section id="annotated-budgets">'):]
    section = section[:section.index("</section>")]
    assert "<script>window.__pwned" not in section and "&lt;script&gt;" in section
    assert "≈50,000" in section and "annotation removed or no longer called" in section
    assert section.index('class="regression"') < section.index('class="ok"')
    many = [dict(rows[0], what=f"M.f{i}" + "x" * 900) for i in range(300)]
    big = report_budgets.html(Report.from_json(decided(many, empty=["x" * 150] * 1)),
                              lambda s, limit=200: s)
    assert len(big) <= report_budgets.HTML_BUDGET
    assert "more annotated function row(s): see report.json" in big
    changes = [dict(B.annotation_changes("demo", REC, ())[0], setting="annotation " + "<" * 900)
               ] * 500
    big = report_budgets.html(Report.from_json(decided(many, changes)),
                              lambda s, limit=200: s.replace("<", "&lt;"))
    assert len(big) <= report_budgets.HTML_BUDGET
    assert "more line(s): see report.json" in big


# ------------------------------------------------------------- end to end

def _spec(tmp_path, budgets):
    p = os.path.join(tmp_path, "alpha.spec.json")
    spec = json.load(open(p))
    if budgets is None:
        spec.pop("budgets", None)
    else:
        spec["budgets"] = budgets
    json.dump(spec, open(p, "w"))


F1 = {"function": "Main.f1", "file": "main.ml", "line": 11, "attribute": "words_per_call",
      "limit": 4, "calls": 1000, "words": 3000, "max_words": 5, "other_domain_calls": 0}


def _report(tmp_path, rep):
    return json.load(open(tmp_path / rep / "report.json"))["benchmarks"]["alpha"]


def test_end_to_end_rows_baseline_and_changes(tmp_path):
    project(tmp_path, [{"name": "alpha", "spec": {"sites": spec_sites([2e7, 1e6])}}])
    _spec(tmp_path, [F1])
    # Without a baseline: judged, and failed.
    r = check(tmp_path, "--report-dir", "r1")
    assert r.returncode == 1, r.stdout + r.stderr
    msg = _report(tmp_path, "r1")["checks"]["budget"]["message"]
    assert msg == ("benchmark 'alpha' is over its allocation budget:\n  Main.f1 (1,000 calls) "
                   "allocated up to 5 words in one call, limit 4 per call (most at Main.f1 @ "
                   "main.ml)"), msg
    # Within its limit: the baseline records it, and the advice names it.
    _spec(tmp_path, [dict(F1, max_words=3)])
    r = update(tmp_path)
    assert "memprof-ci: Main.f1: could be [@memprof.words_per_call 3] (main.ml:11)" in r.stdout
    base = json.load(open(tmp_path / "baselines" / "alpha.json"))
    assert base["annotations"] == [{"function": "Main.f1", "file": "main.ml", "line": 11,
                                    "attribute": "words_per_call", "limit": 4}]
    r = check(tmp_path, "--report-dir", "r2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _report(tmp_path, "r2")["checks"]["budget"]["outcome"] == "passed"
    # Lowered: listed, passes; raised or removed: fails.
    for budgets, code, note in (([dict(F1, max_words=3, limit=3)], 0, "limit lowered"),
                                ([dict(F1, max_words=3, limit=9)], 1, "limit raised"),
                                (None, 1, "annotation removed or no longer called")):
        _spec(tmp_path, budgets)
        r = check(tmp_path, "--report-dir", "r3")
        assert r.returncode == code, r.stdout + r.stderr
        (c,) = _report(tmp_path, "r3")["annotation_changes"]
        assert c["note"] == note and f"annotation Main.f1: {note}" in r.stdout


def test_end_to_end_manifest_words_per_call(tmp_path):
    project(tmp_path, [{"name": "alpha", "spec": {"sites": spec_sites([2e7, 1e6])}}])
    _spec(tmp_path, [dict(F1, max_words=3)])
    with open(tmp_path / "benchmarks.toml", "a") as fh:
        fh.write('[[budget]]\nfunction = "Main.f1"\nwords_per_call = 2\nbenchmark = "alpha"\n')
    r = check(tmp_path, "--report-dir", "r1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "limit 2 per call" in _report(tmp_path, "r1")["checks"]["budget"]["message"]
    _spec(tmp_path, None)
    r = check(tmp_path, "--report-dir", "r2")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "annotate it [@memprof.words_per_call N] or [@zero_alloc], or compile it" in \
        _report(tmp_path, "r2")["checks"]["budget"]["message"]


def test_end_to_end_a_malformed_section_is_exit_2(tmp_path):
    project(tmp_path, [{"name": "alpha", "spec": {"sites": spec_sites([2e7, 1e6])}}])
    _spec(tmp_path, [dict(F1, max_words=3001)])
    r = check(tmp_path, "--report-dir", "r1")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "malformed budgets section: budgets[0] (Main.f1): max_words 3001 > words 3000" \
        in r.stdout + r.stderr
