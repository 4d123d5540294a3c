"""Allocation budgets ([[budget]]): the manifest's tables, checked as
untrusted input; the exact words a budget counts and its verdict
(decide/budgets.py); a pull request judged with the base's budgets
(judged_with); the report's section (render/report_budgets.py); and the
CLI's exit codes (2 for a bad budget or a benchmark without points).
The end-to-end test with a real program is test_budget_e2e.py."""

import json
import os

import pytest
from harness_testlib import check, cli, project, write_manifest

from memprof_ci.decide import budgets as B
from memprof_ci.decide.report_doc import new_report
from memprof_ci.errors import ConfigError
from memprof_ci.inputs.manifest import judged_with, load_manifest
from memprof_ci.inputs.points import Points
from memprof_ci.render.report import render_markdown, render_terminal

BENCH = '[[benchmark]]\nname = "a"\ncommand = ["./a.exe"]\n'
BENCH_B = '[[benchmark]]\nname = "b"\ncommand = ["./b.exe"]\npoints = false\n'


def manifest(tmp_path, budgets: str, name="m.toml", extra=BENCH_B):
    p = tmp_path / name
    p.write_text(BENCH + extra + budgets)
    return str(p)


def test_budgets_parse(tmp_path):
    m = load_manifest(manifest(tmp_path, '[[budget]]\nfunction = "Inject.small"\n'
                                         'words_per_run = 200000\n'
                                         '[[budget]]\npoint = "src/inject.ml:7"\n'
                                         'words_per_run = 0\nbenchmark = "b"\n'))
    f, p = m.budgets
    assert (f.function, f.words_per_run, f.benchmark, f.what) == ("Inject.small", 200000,
                                                                  None, "Inject.small")
    assert (p.file, p.line, p.benchmark, p.what) == ("src/inject.ml", 7, "b", "src/inject.ml:7")
    a, b = m.benchmarks
    # Without `benchmark`: every benchmark that counts points.
    assert f.applies_to(a) and not f.applies_to(b)
    assert p.applies_to(b) and not p.applies_to(a)
    assert load_manifest(manifest(tmp_path, "", "none.toml")).budgets == []


BAD = {
    "unknown key": ('function = "F"\nwords_per_run = 1\nlimit = 2\n', "unknown key `limit`"),
    "both": ('function = "F"\npoint = "a.ml:1"\nwords_per_run = 1\n', "exactly one of"),
    "neither": ("words_per_run = 1\n", "exactly one of"),
    "bool words": ('function = "F"\nwords_per_run = true\n', "`words_per_run` must be"),
    "negative words": ('function = "F"\nwords_per_run = -1\n', "`words_per_run` must be"),
    "float words": ('function = "F"\nwords_per_run = 1.5\n', "`words_per_run` must be"),
    "missing words": ('function = "F"\n', "`words_per_run` must be"),
    "function type": ("function = 3\nwords_per_run = 1\n", "`function` must be"),
    "empty function": ('function = ""\nwords_per_run = 1\n', "`function` must be"),
    "point no line": ('point = "a.ml"\nwords_per_run = 1\n', "`point` must be"),
    "point bad line": ('point = "a.ml:x"\nwords_per_run = 1\n', "`point` must be"),
    "unknown benchmark": ('function = "F"\nwords_per_run = 1\nbenchmark = "zz"\n',
                          "`benchmark` 'zz' names no"),
    "benchmark type": ('function = "F"\nwords_per_run = 1\nbenchmark = 1\n',
                       "`benchmark` 1 names no"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_budget_is_a_config_error(tmp_path, case):
    body, msg = BAD[case]
    path = manifest(tmp_path, '[[budget]]\nfunction = "Ok.f"\nwords_per_run = 1\n'
                              '[[budget]]\n' + body)
    with pytest.raises(ConfigError, match=msg) as e:
        load_manifest(path)
    assert str(e.value).startswith(f"{path}: [[budget]] #2: "), e.value
    assert "\n" not in str(e.value)


def test_budget_not_an_array_and_duplicates(tmp_path):
    with pytest.raises(ConfigError, match=r"`budget` must be an array of tables"):
        p = tmp_path / "top.toml"
        p.write_text("budget = 3\n" + BENCH)
        load_manifest(str(p))
    dup = '[[budget]]\nfunction = "F"\nwords_per_run = 1\n'
    with pytest.raises(ConfigError, match=r"\[\[budget\]\] #2: the same budget as "
                                          r"\[\[budget\]\] #1 \(F\)"):
        load_manifest(manifest(tmp_path, dup + dup, "dup.toml"))


@pytest.mark.parametrize("case", ["unknown key", "both", "bool words", "unknown benchmark",
                                  "point no line"])
def test_bad_budget_through_the_cli_is_exit_2(tmp_path, case):
    body, msg = BAD[case]
    manifest(tmp_path, "[[budget]]\n" + body, "benchmarks.toml")
    r = cli(tmp_path, "list", "--manifest", "benchmarks.toml")
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "[[budget]] #1" in err[0] and msg.split("`")[0] in err[0], err
    assert "benchmarks.toml" in err[0]


# ------------------------------------------------------------- the verdict

def pts(counts, calls=None):
    def c(minor, major=0):
        return (1, minor, 1 if major else 0, major, 0, 0, 0, 0)
    return Points(live_missing=None, complete=True, unavailable=None,
                  counts={k: c(*v) for k, v in counts.items()},
                  calls=None if calls is None else {k: c(*v) for k, v in calls.items()})


POINTS = pts({("inject.ml", 7, 47, 59, "Inject.small"): (200_000,),
              ("inject.ml", 8, 2, 9, "Inject.small"): (30, 70),
              ("inject.ml", 5, 45, 57, "Inject.big"): (19_800_000,),
              ("lib/src/inject.ml", 7, 1, 5, "Lib.f"): (11,),
              ("list.ml", 92, 4, 20, "Stdlib__List.map"): (5_000,)},
             calls={("inject.ml", 9, 2, 20, "Inject.small"): (0, 1_000),
                    ("inject.ml", 12, 2, 20, "Inject.big"): (0, 0)})


def budget(tmp_path, body):
    return load_manifest(manifest(tmp_path, "[[budget]]\n" + body,
                                  f"b{abs(hash(body))}.toml")).budgets[0]


def test_a_function_counts_its_own_points_and_calls_exactly(tmp_path):
    b = budget(tmp_path, 'function = "Inject.small"\nwords_per_run = 201_100\n')
    row = B.budget_row("inject", b, POINTS)
    # Minor and major words of its two points and its call point; not
    # List.map's, which it may call: a callee's points name the callee.
    assert row == {"benchmark": "inject", "what": "Inject.small", "kind": "function",
                   "words_per_run": 201_100, "limit": 201_100, "outcome": "passed",
                   "points": [{"point": "inject.ml:7:47-59", "words": 200_000},
                              {"point": "inject.ml:9:2-20", "words": 1_000, "via_c": True},
                              {"point": "inject.ml:8:2-9", "words": 100}]}
    assert B.budget_failure("inject", [row]) is None
    b = budget(tmp_path, 'function = "Inject.small"\nwords_per_run = 201_099\n')
    row = B.budget_row("inject", b, POINTS)
    assert row["outcome"] == "failed"
    assert B.budget_failure("inject", [row]) == (
        "benchmark 'inject' is over its allocation budget:\n  Inject.small allocated 201,100 "
        "words per run, limit 201,099 (most at inject.ml:7:47-59)")


def test_a_point_matches_its_file_or_a_path_suffix_at_a_slash(tmp_path):
    row = B.budget_row("x", budget(tmp_path, 'point = "inject.ml:7"\nwords_per_run = 9\n'),
                       POINTS)
    # inject.ml:7 and lib/src/inject.ml:7, whatever the function.
    assert row["words_per_run"] == 200_011 and row["outcome"] == "failed"
    row = B.budget_row("x", budget(tmp_path, 'point = "src/inject.ml:7"\nwords_per_run = 11\n'),
                       POINTS)
    assert (row["words_per_run"], row["outcome"]) == (11, "passed")
    # "ject.ml" is a suffix of the name but not at a `/`.
    row = B.budget_row("x", budget(tmp_path, 'point = "ject.ml:7"\nwords_per_run = 0\n'),
                       POINTS)
    assert (row["words_per_run"], row["points"], row["outcome"]) == (0, [], "passed")


def test_a_budget_matching_nothing_counts_zero_and_passes(tmp_path):
    row = B.budget_row("x", budget(tmp_path, 'function = "Nope.f"\nwords_per_run = 0\n'),
                       POINTS)
    assert (row["words_per_run"], row["outcome"], row["points"]) == (0, "passed", [])


def test_judged_with_the_base_budgets_and_every_change_listed(tmp_path):
    base = load_manifest(manifest(tmp_path, '[[budget]]\nfunction = "F"\nwords_per_run = 10\n'
                                            '[[budget]]\nfunction = "G"\nwords_per_run = 5\n'
                                            'benchmark = "a"\n'
                                            '[[budget]]\nfunction = "H"\nwords_per_run = 1\n'
                                            'benchmark = "b"\n', "base.toml"))
    pr = load_manifest(manifest(tmp_path, '[[budget]]\nfunction = "F"\nwords_per_run = 99\n'
                                          '[[budget]]\nfunction = "K"\nwords_per_run = 7\n',
                                "pr.toml", extra=""))
    judged, changes = judged_with(pr, base)
    # The base's budgets, less those of a benchmark the pull request lacks.
    assert [(b.what, b.words_per_run) for b in judged.budgets] == [("F", 10), ("G", 5)]
    assert changes == [
        {"benchmark": "(every benchmark)", "setting": "budget F", "pull_request": 99,
         "base": 10},
        {"benchmark": "(every benchmark)", "setting": "budget K", "pull_request": 7,
         "base": None},
        {"benchmark": "a", "setting": "budget G", "pull_request": None, "base": 5},
        {"benchmark": "b", "setting": "budget H", "pull_request": None, "base": 1}]
    same, none = judged_with(base, base)
    assert none == [] and same.budgets == base.budgets


# ----------------------------------------------------------------- report

def decided(rows):
    rep = new_report()
    rep["verdict"] = {"exit_code": 1, "errors": [], "regressions": ["inject::budget"],
                      "accepted": []}
    rep["benchmarks"]["inject"] = {"name": "inject", "checks": {
        "budget": {"outcome": "failed", "message": "m"}}, "notes": [], "budgets": rows}
    return rep


ROWS = [{"benchmark": "inject", "what": "Inject.small", "kind": "function",
         "words_per_run": 200_000, "limit": 100_000, "outcome": "failed",
         "points": [{"point": "inject.ml:7:47-59", "words": 199_000},
                    {"point": "inject.ml:9:2-20", "words": 1_000, "via_c": True}]},
        {"benchmark": "inject", "what": "inject.ml:5", "kind": "point", "words_per_run": 0,
         "limit": 0, "outcome": "passed", "points": []}]


def test_terminal_section_exact():
    out = render_terminal(decided(ROWS))
    i = out.index("Allocation budgets")
    assert out[i:].split("\n\n")[0].splitlines() == [
        "Allocation budgets (exact words per run at the function's own allocation points):",
        "benchmark  budget        words/run  limit    verdict  largest points",
        "---------  ------------  ---------  -------  -------  " + "-" * 60,
        "inject     Inject.small  200,000    100,000  FAILED   at inject.ml:7:47-59 (199,000), "
        "inject.ml:9:2-20 (C) (1,000)",
        "inject     inject.ml:5   0          0        passed   no allocation point of it "
        "allocated"]
    assert max(map(len, out.splitlines())) <= 120


def test_markdown_section_exact():
    md = render_markdown(decided(ROWS))
    i = md.index("### Allocation budgets")
    assert md[i:].split("\n\n", 3)[2].splitlines() == [
        "| benchmark | budget | words/run | limit | verdict | largest points |",
        "|---|---|--:|--:|:-:|---|",
        "| inject | ` Inject.small ` | 200,000 | 100,000 | **FAILED** "
        "| ` inject.ml:7:47-59 ` (199,000), ` inject.ml:9:2-20 ` (C) (1,000) |",
        "| inject | ` inject.ml:5 ` | 0 | 0 | passed | no allocation point of it allocated |"]


def test_no_budget_no_section():
    rep = decided(None)
    del rep["benchmarks"]["inject"]["budgets"]
    assert "budget" not in render_terminal(rep).lower().replace("inject::budget", "")
    assert "Allocation budgets" not in render_markdown(rep)


# ------------------------------------------------ a benchmark without points

def test_budget_of_a_benchmark_without_points_is_exit_2(tmp_path):
    # The fake benchmarks write profiles without a points section.
    project(tmp_path)
    with open(os.path.join(tmp_path, "benchmarks.toml"), "a") as fh:
        fh.write('[[budget]]\nfunction = "F"\nwords_per_run = 1\nbenchmark = "beta"\n')
    r = check(tmp_path, "-k", "beta", "--report-dir", "rep")
    assert r.returncode == 2, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep" / "report.json"))
    msg = rep["benchmarks"]["beta"]["checks"]["budget"]["message"]
    assert msg.endswith("[[budget]] #1 (F) applies to benchmark 'beta', which counted no "
                        "allocation points (no points section); a budget needs the exact "
                        "allocation-point counts (`points = true` and the native-code "
                        "memprof-ci runtime)"), msg
    assert "alpha" not in rep["benchmarks"] or "budget" not in \
        rep["benchmarks"]["alpha"]["checks"]
    # points = false, named by the budget: the same error, before any run.
    write_manifest(str(tmp_path), [{"name": "beta", "command": ["./nothing.exe"],
                                    "points": False}])
    with open(os.path.join(tmp_path, "benchmarks.toml"), "a") as fh:
        fh.write('[[budget]]\nfunction = "F"\nwords_per_run = 1\nbenchmark = "beta"\n')
    r = check(tmp_path, "--report-dir", "rep2")
    assert r.returncode == 2, r.stdout + r.stderr
    rep = json.load(open(tmp_path / "rep2" / "report.json"))
    assert "which has `points = false`; a budget needs" in \
        rep["benchmarks"]["beta"]["checks"]["budget"]["message"]
    assert "which has `points = false`" in r.stdout + r.stderr


def _over_row(words=200, limit=100, bench="b", what="M.f"):
    return {"benchmark": bench, "what": what, "kind": "function", "words_per_run": words,
            "limit": limit, "outcome": "failed" if words > limit else "passed", "points": []}


def _change(limit, bench="b", what="M.f", base=100):
    return {"benchmark": bench, "setting": f"budget {what}", "pull_request": limit, "base": base}


@pytest.mark.parametrize("label, changes, expect", [
    (False, [_change(300)], False),                       # no label
    (True, [], False),                                    # the pull request did not touch it
    (True, [_change(300)], True),                         # raised to a limit the words fit
    (True, [_change(150)], False),                        # raised, but not enough
    (True, [_change(None)], True),                        # removed
    (True, [_change(300, bench="(every benchmark)")], True),
    (True, [_change(300, what="M.g")], False),            # another budget changed
])
def test_the_label_accepts_only_a_budget_the_pull_request_changed(label, changes, expect):
    report = {"accept_changes": label, "settings_changes": changes}
    assert B.accepted_rows(report, [_over_row()]) is expect
    # A row within its limit never needs the label.
    assert B.accepted_rows({"accept_changes": True, "settings_changes": []},
                           [_over_row(words=100)]) is True


def test_accept_changes_reverifies_a_budget_check_claimed_accepted():
    from memprof_ci.decide.verdict import accept_changes
    report = {"accept_changes": True, "settings_changes": [],
              "benchmarks": {"b": {"checks": {"budget": {"outcome": "accepted", "message": "m"}},
                                   "budgets": [_over_row()]}}}
    accept_changes(report)
    assert report["benchmarks"]["b"]["checks"]["budget"]["outcome"] == "failed"
    assert report["accepted"] == []
    report["settings_changes"] = [_change(250)]
    report["benchmarks"]["b"]["checks"]["budget"]["outcome"] = "failed"
    accept_changes(report)
    assert report["benchmarks"]["b"]["checks"]["budget"]["outcome"] == "accepted"
    assert report["accepted"] == [{"benchmark": "b", "check": "budget", "message": "m"}]


def _html_report(rows):
    return decided(rows)


def test_html_section_escapes_bounds_and_is_absent_without_budgets():
    from memprof_ci.decide.report_types import Report
    from memprof_ci.render import report_budgets
    from memprof_ci.render.report_html import render_html
    assert 'id="budgets"' not in render_html(_html_report([]))
    hostile = "M.f</td><script>window.__pwned=1</script>"
    page = render_html(_html_report([_over_row(what=hostile), _over_row(words=5, what="M.g")]))
    section = page[page.index('<section id="budgets">'):]
    section = section[:section.index("</section>")]
    assert "<script>window.__pwned" not in section and "&lt;script&gt;" in section
    # The failing row first, as a regression; the passing one after.
    assert section.index('class="regression"') < section.index('class="ok"')
    assert section.count("<tr") == 3        # the head and two rows
    many = [_over_row(what=f"M.f{i}" + "x" * 900) for i in range(300)]
    big = report_budgets.html(Report.from_json(_html_report(many)), lambda s: s)
    assert len(big) <= report_budgets.HTML_BUDGET
    assert "more budget row(s): see report.json" in big


def test_html_budget_rows_render_in_chromium(tmp_path):
    from chromium_cdp import Browser
    from memprof_ci.render.report_html import render_html
    p = tmp_path / "report.html"
    p.write_text(render_html(_html_report([_over_row(), _over_row(words=5, what="M.g")])))
    with Browser() as br:
        br.open(str(p))
        cells = br.eval("Array.from(document.querySelectorAll('#budgets tbody tr'))"
                        ".map(r => r.cells[1].textContent + '|' + r.cells[4].textContent)")
        assert cells == ["M.f|FAILED", "M.g|passed"]
        assert br.eval("document.querySelector('#budgets').getBoundingClientRect().height") > 0
        br.settle()
        assert br.errors == []


def test_lowered_text_rewrites_only_the_limit_lines():
    from memprof_ci.inputs.budget import lowered_text
    text = ('[[benchmark]]\nname = "a"\ncommand = ["x"]\n\n'
            '[[budget]]  # one\r\nfunction = "M.f"\r\nwords_per_run = 1_000  # why\r\n'
            '[[budget]]\nfunction = "M.g"\nwords_per_run = 50\n')
    assert lowered_text(text, {1: 900}) == text.replace("= 1_000  # why", "= 900  # why")
    assert lowered_text(text, {2: 7}) == text.replace("= 50\n", "= 7\n")
    # A budget not written on its own line, or a number the table does not have.
    inline = 'budget = [{function = "M.f", words_per_run = 10}]\n'
    assert lowered_text(inline, {1: 5}) is None
    assert lowered_text(text, {3: 5}) is None


def test_ratchet_limits_lower_only_what_every_benchmark_allows(tmp_path):
    from memprof_ci.inputs.budget import Budget
    f = Budget("M.f", None, None, 100, None, index=1)
    g = Budget("M.g", None, None, 100, "a", index=2)
    rows = {"a": [_over_row(words=40, limit=100, bench="a", what="M.f"),
                  _over_row(words=120, limit=100, bench="a", what="M.g")],
            "b": [_over_row(words=60, limit=100, bench="b", what="M.f")]}
    applies = {1: {"a", "b"}, 2: {"a"}}
    # M.f: the most of both benchmarks; M.g is over its limit, never raised.
    assert B.ratchet_limits([f, g], rows, applies) == {1: 60}
    assert B.ratchet_limits([f], {}, applies) == {}
    # A benchmark M.f applies to was not measured (-k): M.f is left alone.
    assert B.ratchet_limits([f], {"a": rows["a"]}, applies) == {}
