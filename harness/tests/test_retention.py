"""Retaining paths of failing sites (retention.py decides, report_retention.py
words them): the decision on fixed rows, and a golden Markdown rendering.

1. retention.attach gives a path only to rows that fail the live or peak
   check; it marks a path "changed" when the root or the sampled sites on
   the way differ from the baseline's, not when only a hop's size does;
   without a baseline section the row says "baseline: no path recorded".
2. golden/retention.md pins report.md's section for three failing sites:
   a changed path (the headline, in bold: "now held by ..."; the
   baseline's path has a run of list cells, shown as one step), a path
   whose baseline has none, and a peak site not live at exit.  Regenerate
   after an intended change with MEMPROF_CI_UPDATE_GOLDEN=1.
3. A malformed "retainers" section of a baseline is one line naming the
   file (InputError); a malformed snapshot in the extra run's profile is an
   error of the report (exit 2) that keeps the decided rows.
"""

import json
import os

import pytest

from harness_testlib import HERE, REPO
from memprof_ci.store import baseline
from memprof_ci.render import report_html, report_retention
from memprof_ci.measure import retention
from memprof_ci.decide import verdict
from memprof_ci.errors import InputError
from memprof_ci.render.report import render_markdown, render_terminal
from memprof_ci.decide.report_doc import new_report
from memprof_ci.decide.report_types import Retention

GOLDEN = os.path.join(HERE, "golden", "retention.md")
PARAMS = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}
CACHED = "Cache.remember @ cache.ml"
LOGGED = "Log.entry @ log.ml"
BURST = "Parse.burst @ parse.ml"
QUIET = "Main.quiet @ main.ml"
TABLE = "Stdlib.Hashtbl.create @ hashtbl.ml"
QUEUE = "Stdlib.Queue.push @ queue.ml"


def info(site):
    fn, fl = site.split(" @ ")
    return {"file": fl, "function": fn, "line": None, "via": None, "lines": {"1": 1}}


def rows(name, check, base, cur, e=1e-3):
    return verdict.stats.site_rows(name, check, {k: (n, info(k)) for k, n in cur.items()},
                                   {k: (n, info(k)) for k, n in base.items()},
                                   sum(cur.values()), sum(base.values()), e, e, PARAMS)


def path(root, *hops, live=4096.0, shared=4096.0):
    return {"root": root, "hops": [{"site": s, "tag": t, "words": w} for s, t, w in hops],
            "live_words": live, "shared_words": shared}


NOW = path("global Cache, field 2", (None, "tag 0", 3), (TABLE, "tag 0", 16),
           (None, "tag 0", 3), (CACHED, "tag 0", 4))
WAS = path("global Log, field 0", (QUEUE, "tag 0", 3), (None, "tag 0", 2), (None, "tag 0", 2),
           (CACHED, "tag 0", 4),
           live=512.0, shared=512.0)


def fixed_report():
    rep = new_report("check")
    live = rows("leaky", "live", {CACHED: 40, LOGGED: 0, QUIET: 3000},
                {CACHED: 900, LOGGED: 700, QUIET: 3000})
    peak = rows("leaky", "peak", {BURST: 100, QUIET: 3000}, {BURST: 2000, QUIET: 3000})
    rep["benchmarks"]["leaky"] = {
        "name": "leaky", "settings": dict(PARAMS), "notes": [], "overhead": None,
        "alloc": [], "live": live, "peak": peak, "gc": [],
        "checks": {c: {"outcome": "passed", "message": ""} for c in ("alloc_sites", "live")}}
    verdict.decide(rep)
    b = rep["benchmarks"]["leaky"]
    current = {CACHED: NOW, LOGGED: path("stack frame of Log.run (log.ml:30)",
                                         (LOGGED, "tag 0", 2)), QUIET: NOW}
    retention.attach(retention.flagged(b), current, None, {CACHED: WAS, QUIET: NOW},
                     {CACHED, LOGGED, QUIET})
    return rep


def by_site(rep):
    b = rep["benchmarks"]["leaky"]
    return {(r["check"], r["site"]): r for r in b["live"] + b["peak"]}


def test_only_failing_rows_get_a_path_and_a_changed_one_is_marked():
    rs = by_site(fixed_report())
    assert {k for k, r in rs.items() if r["status"] == "regression"} == {
        ("live", CACHED), ("live", LOGGED), ("peak", BURST)}
    assert [k for k, r in rs.items() if "retention" in r] == [
        ("live", CACHED), ("live", LOGGED), ("peak", BURST)]
    cached = rs[("live", CACHED)]["retention"]
    assert cached["current"] == NOW and cached["baseline"] == WAS and cached["changed"]
    logged = rs[("live", LOGGED)]["retention"]
    assert not logged["changed"] and logged["baseline"] is None
    assert logged["baseline_why"].startswith("baseline: no path for this site")
    burst = rs[("peak", BURST)]["retention"]
    assert burst["current"] is None and burst["why"] == (
        "no path: not live at exit, where the snapshot is taken")


def test_a_grown_table_is_the_same_path_and_no_section_says_no_path_recorded():
    grown = json.loads(json.dumps(NOW))
    grown["hops"][1]["words"] = 1024
    row = {"check": "live", "site": CACHED, "status": "regression"}
    retention.attach([row], {CACHED: grown}, None, {CACHED: NOW}, {CACHED})
    assert row["retention"]["changed"] is False
    assert report_retention.headline(Retention.from_json(row["retention"])).endswith(", as in the baseline")
    retention.attach([row], {CACHED: grown}, None, None, {CACHED})
    assert row["retention"]["baseline_why"] == "baseline: no path recorded"


def test_golden_markdown_section():
    md = render_markdown(fixed_report())
    start = md.index("### What holds them")
    got = md[start:md.index("\n### ", start + 1) + 1]
    if os.environ.get("MEMPROF_CI_UPDATE_GOLDEN") == "1":
        with open(GOLDEN, "w", encoding="utf-8") as fh:
            fh.write(got)
    with open(GOLDEN, encoding="utf-8") as fh:
        assert got == fh.read(), "regenerate with MEMPROF_CI_UPDATE_GOLDEN=1 if intended"
    assert ("**now held by global Cache, field 2, through a block of "
            f"{TABLE} (tag 0, 16 words); was held by global Log, field 0, through a block "
            f"of {QUEUE} (tag 0, 3 words)**") in got


def test_terminal_lists_each_headline():
    text = render_terminal(fixed_report())
    assert f"  leaky: {CACHED} (live): now held by global Cache, field 2" in text
    assert f"  leaky: {BURST} (peak): no path: not live at exit" in text


def test_a_malformed_retainers_section_names_the_baseline(tmp_path):
    with open(os.path.join(REPO, "baselines", "leak.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    p = tmp_path / "leak.json"
    doc["retainers"] = {CACHED: NOW}
    p.write_text(json.dumps(doc))
    assert baseline.load_baseline(str(p)).meta["retainers"] == {CACHED: NOW}
    doc["retainers"] = {CACHED: dict(NOW, hops=[])}
    p.write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        baseline.load_baseline(str(p))
    msg = str(e.value)
    assert msg.startswith(f"{p}: malformed baseline: ") and "hops" in msg and "\n" not in msg


def test_many_long_paths_are_capped_in_markdown_terminal_and_html():
    """Twelve failing sites whose paths are long names full of characters
    HTML escapes: eight are shown, the rest counted, and report.html's
    section stays within its budget."""
    rep = fixed_report()
    b = rep["benchmarks"]["leaky"]
    long = path("global <&>" + "&" * 3000, *[("S" + "&" * 900, "tag 0", 2)] * 60)
    extra = []
    for i in range(12):
        row = dict(b["live"][0], site=f"Hot.f{i} @ hot.ml")
        row.pop("retention", None)
        extra.append(row)
    retention.attach(extra, {r["site"]: long for r in extra}, None, None,
                     {r["site"] for r in extra})
    b["live"] = extra
    b["peak"] = []
    md = render_markdown(rep)
    assert md.count("` (live at exit): held by global") == report_retention.MAX_ROWS
    assert "- 4 more failing site(s) with a retaining path: see report.json" in md
    text = render_terminal(rep)
    assert text.count("(live): held by global") == report_retention.MAX_ROWS
    page = report_html.render_html(rep)
    start = page.index('<section id="retention">')
    section = page[start:page.index("</section>", start) + len("</section>")]
    assert len(section.encode()) <= report_retention.HTML_BUDGET
    assert section.count('<li class="held"') >= 1
    assert "more failing site(s) with a retaining path" in section


def test_a_check_of_a_run_directory_runs_nothing_and_says_so(tmp_path):
    """check --from-run (ctx.run_entries set): no extra run; each failing
    row says why it has no path, and still shows the baseline's."""
    from types import SimpleNamespace
    rep = fixed_report()
    for b in rep["benchmarks"].values():
        for r in b["live"] + b["peak"]:
            r.pop("retention", None)

    class Bench:      # any attribute read would mean a run was attempted
        def __getattr__(self, name):
            raise AssertionError(f"bench.{name} read: a run was attempted")
    ctx = SimpleNamespace(
        report=rep, benches={"leaky": Bench()}, run_entries={}, work_dir=str(tmp_path),
        baseline=lambda name: SimpleNamespace(meta={"retainers": {CACHED: WAS}}),
        measurements=SimpleNamespace(peek=lambda name: None))
    retention.explain(ctx)
    rs = by_site(rep)
    ret = rs[("live", CACHED)]["retention"]
    assert ret["current"] is None and ret["baseline"] == WAS and not ret["changed"]
    assert ret["why"] == "no path: the check read a run directory and ran nothing"
    assert "retention" not in rs[("live", QUIET)]
    assert os.listdir(tmp_path) == []


def test_an_exact_benchmark_is_snapshotted_at_its_sampled_rate():
    """At rate 1 every block is a target of the snapshot's walk; the path
    run samples at the rate the exact run replaced, with the same seed."""
    from memprof_ci.inputs.manifest import Benchmark
    from memprof_ci.measure.runner import memprof_env_value
    exact = Benchmark(name="b", command=["/bin/true"], cwd="/", rate=1e-3, seeds=[7, 8, 9], mode="exact")
    assert exact.rate == 1.0
    snap = retention.sampled_form(exact)
    assert (snap.rate, snap.seeds[0], snap.mode) == (1e-3, 7, "sampled")
    env = memprof_env_value(snap.rate, snap.seeds[0], snap.frames, "/tmp/p.json",
                            snapshot_sites=retention.SNAPSHOT_SITES)
    assert env.startswith("rate=0.001,seed=7,") and "stacks=site" not in env
    sampled = Benchmark(name="s", command=["/bin/true"], cwd="/", rate=1e-4, seeds=[1], mode="sampled")
    assert retention.sampled_form(sampled) is sampled
