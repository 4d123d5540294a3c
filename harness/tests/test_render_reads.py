"""The renderers read what the decision pass decided: whether a site's
change is significant (verdict.classify's "significant", which fmt.fmt_delta
prints as an interval or "~")."""

from memprof_ci.decide import stats, verdict
from memprof_ci.text.fmt import fmt_delta

PARAMS = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}


def sampled_rows(base: dict, cur: dict) -> dict:
    """Decided rows of one benchmark, both sides sampled at the same rate."""
    info = {"file": "main.ml", "function": None, "line": None, "via": None, "lines": {}}
    rows = stats.site_rows("b", "alloc", {k: (v, info) for k, v in cur.items()},
                           {k: (v, info) for k, v in base.items()},
                           sum(cur.values()), sum(base.values()), 3e-4, 3e-4, PARAMS)
    verdict.decide_family(rows)
    return {r["site"]: r for r in rows}


def test_classify_marks_significance_apart_from_the_status():
    rows = sampled_rows({"grow": 20000, "small": 40000, "steady": 30000},
                        {"grow": 26000, "small": 41600, "steady": 30050})
    assert rows["grow"]["status"] == "regression" and rows["grow"]["significant"] is True
    # +4%: significant, but below min_effect, so it passes and still shows its interval.
    assert rows["small"]["status"] == "~" and rows["small"]["significant"] is True
    assert rows["steady"]["status"] == "~" and rows["steady"]["significant"] is False
    assert fmt_delta(rows["small"]).startswith("+4.0% [")
    assert fmt_delta(rows["steady"]) == "~"


def test_fmt_delta_prints_the_decision_not_its_own_test():
    rows = sampled_rows({"grow": 20000, "steady": 30000}, {"grow": 26000, "steady": 30050})
    grow, steady = rows["grow"], rows["steady"]
    assert grow["p_adj"] < grow["alpha"] and steady["p_adj"] > steady["alpha"]
    interval = fmt_delta(grow)
    grow["significant"], steady["significant"] = False, True
    assert fmt_delta(grow) == "~"
    assert fmt_delta(steady) != "~" and fmt_delta(steady) != interval
    del grow["significant"]     # a row the decision pass did not mark
    assert fmt_delta(grow) == "~"


def test_counted_rows_are_significant_when_their_count_changed():
    params = dict(PARAMS, exact=True)
    rows = stats.site_rows("b", "live", {"same": (500, None), "more": (600, None)},
                           {"same": (500, None), "more": (500, None)}, 1100, 1000,
                           1.0, 1.0, params)
    verdict.classify(rows)
    by = {r["site"]: r for r in rows}
    assert by["same"]["significant"] is False and fmt_delta(by["same"]) == "~"
    assert by["more"]["significant"] is True and fmt_delta(by["more"]) == "+20.0% (exact)"


def test_node_changes_colours_only_significant_nodes():
    from memprof_ci.decide.stack_changes import CLIP, node_changes
    got = node_changes([(1000, 1000), (1000, 2000), (0, 500), (500, 0)], 1.0, 1.0)
    assert got == [None, 1.0, CLIP, -CLIP]
    assert node_changes([(0, 500)], None, 1.0) == [None]


def test_the_icicle_draws_the_decided_node_changes(monkeypatch):
    from memprof_ci.render import stackgraph
    asked = []

    def decided(pairs, e_b, e_c):
        asked.append(list(pairs))
        return [f"decided {i}" for i in range(len(pairs))]
    monkeypatch.setattr(stackgraph, "node_changes", decided)
    entry = {"frames": ["main", "f", "g"], "baseline_exposure": 1.0, "current_exposure": 1.0,
             "baseline": [["s", None, 10, 0, [0, 1]], ["t", None, 5, 0, [0, 2]]],
             "current": [["s", None, 30, 0, [0, 1]], ["t", None, 5, 0, [0, 2]]]}
    data = stackgraph.graph_data(entry, regressed=["s"])
    seen = []

    def walk(node):
        seen.append(node[3])
        if len(node) > 5:
            seen.append(node[7])
        for child in node[4]:
            walk(child)
    walk(data["tree"])
    assert asked and all(s is None or s.startswith("decided ") for s in seen)
    assert {s for s in seen if s} == {f"decided {i}" for p in asked for i in range(len(p))}


def test_status_table_names_a_benchmark_that_was_not_run():
    from memprof_ci.decide.report_doc import new_report
    from memprof_ci.render.report import render_markdown, render_terminal
    rep = new_report("check")
    for name, status, outcome in (("gone", "missing", "failed"), ("old", "removed", "skipped")):
        rep["benchmarks"][name] = {"name": name, "status": status, "settings": {}, "notes": [],
                                   "overhead": None, "alloc": [], "live": [], "gc": [],
                                   "checks": {"present": {"outcome": outcome, "message": ""}}}
    verdict.decide(rep)
    assert rep["verdict"]["exit_code"] == 1
    rows = {line.split()[0]: line.split()[1:] for line in render_terminal(rep).splitlines()
            if line.startswith(("gone ", "old "))}
    assert rows == {"gone": ["MISSING"] + ["-"] * 5, "old": ["removed"] + ["-"] * 5}
    md = render_markdown(rep)
    assert "| gone | ❌ missing | - |" in md and "| old | removed | - |" in md
    from memprof_ci.render.report_html import render_html
    page = render_html(rep, env={})
    assert '<td class="fail">MISSING</td>' in page and '<td class="skip">removed</td>' in page
