"""pointsites.py and the rows built from it: allocation points grouped into
sites, the estimated split of a standard-library point among its callers,
allocation in C judged per caller from the samples, and the baseline's
"points" section (validated whole)."""

import copy

import pytest
from harness_testlib import make_profile

from memprof_ci.decide import attribution as moves, comparison as R
from memprof_ci.sites import point_sites as pointsites
from memprof_ci.errors import InputError
from memprof_ci.text.fmt import site_name
from memprof_ci.inputs.points import Points
from memprof_ci.sites.grouping import Aggregate, _group_stacks
from memprof_ci.decide.verdict import decide_family

PARAMS = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.005}

USER = ("/src/app/main.ml", 10, 4, 20, "Main.f")
USER2 = ("/src/app/main.ml", 30, 2, 9, "Main.g")
LIST = ("list.ml", 80, 10, 30, "Stdlib__List.map")


def counts(minor_words, live_words=0, major_words=0):
    # blocks, words (minor), blocks, words (major), promoted, live
    return (minor_words // 3, minor_words, major_words // 3, major_words, 0, 0,
            live_words // 3, live_words)


def points(f=300_000, g=3_000_000, lst=600_000, runtime=90_000, live_missing=None):
    c = {USER: counts(f, 30), USER2: counts(g), LIST: counts(lst),
         ("", 0, 0, 0, "(runtime)"): counts(runtime, 9)}
    if live_missing:
        c = {k: v[:6] + (None, None) for k, v in c.items()}
    return Points(live_missing=live_missing, complete=True, unavailable=None, counts=c)


def agg(pts, inner=None, rate=1e-4, seeds=(1, 2, 3)):
    a = Aggregate(name="b", rate=rate, seeds=list(seeds), frames=16, grouping="function")
    a.points = pointsites.group(pts, "function")
    pointsites.add_samples(a.points, pts, inner or {}, "function")
    a.total_samples = sum(v[0] for v in (inner or {}).values())
    a.total_live = sum(v[1] for v in (inner or {}).values())
    return a


def inner(c_main=30):
    """Sampled stacks by innermost frame and sampled site: List.map drawn
    from Main.f and Main.g, Main.f's own point, and C allocation from Main.g."""
    def frame(p):
        return (p[0], p[1], p[2], p[3], p[4])
    return {(frame(LIST), "Main.f @ app/main.ml"): [15, 0],
            (frame(LIST), "Main.g @ app/main.ml"): [45, 0],
            (frame(USER), "Main.f @ app/main.ml"): [90, 0],
            (("/src/app/main.ml", 31, 2, 20, "Main.g"), "Main.g @ app/main.ml"): [c_main, 1]}


def test_points_group_into_sites_keyed_like_sampled_ones():
    ps = pointsites.group(points(), "function")
    assert sorted(ps.sites) == ["(runtime)", "Main.f @ app/main.ml", "Main.g @ app/main.ml",
                                "Stdlib__List.map @ list.ml"]
    f = ps.sites["Main.f @ app/main.ml"]
    assert (f.words, f.blocks, f.live_words, dict(f.lines)) == (300_000, 100_000, 30,
                                                                  {10: 300_000})
    assert pointsites.is_pseudo(ps.sites["(runtime)"])
    assert not pointsites.is_pseudo(f)
    assert ps.total("alloc") == 300_000 + 3_000_000 + 600_000 + 90_000
    by_line = pointsites.group(points(), "line")
    assert "Main.f @ app/main.ml:10" in by_line.sites
    missing = pointsites.group(points(live_missing="exit walk stopped"), "function")
    assert missing.sites["Main.f @ app/main.ml"].live_words is None
    assert not missing.counts("live") and missing.counts("alloc")


def test_samples_split_a_stdlib_point_and_collect_c_allocation():
    a = agg(points(), inner())
    lst = a.points.sites["Stdlib__List.map @ list.ml"]
    assert dict(lst.callers) == {"Main.f @ app/main.ml": 15, "Main.g @ app/main.ml": 45}
    assert pointsites.split(lst) == [{"site": "Main.g @ app/main.ml", "share": 0.75},
                                     {"site": "Main.f @ app/main.ml", "share": 0.25}]
    # A user point is its own only caller: nothing to split.
    assert pointsites.split(a.points.sites["Main.f @ app/main.ml"]) == []
    # The sample at line 31 matched no point: allocation in C from Main.g.
    assert a.points.in_c == {"Main.g @ app/main.ml": [30, 1]}


def _decided(cur, base, check="alloc"):
    params = {"alpha": 0.01, "min_effect": 0.05, "exact_min_effect": 0.01,
              "min_share": 0.005}
    rows = R.site_rows("b", check, cur, base, params)
    decide_family(rows)
    return {r["site"]: r for r in rows}


def test_exact_rows_fail_on_two_percent_at_a_one_percent_site():
    base = agg(points(), inner())
    # Main.f holds 300,000 of 3.99 M words (7.5%); +2% is exact, no test.
    rows = _decided(agg(points(f=306_000), inner()), base)
    f = rows["Main.f @ app/main.ml"]
    assert f["exact"] and f["points"] and f["p_adj"] is None
    assert f["status"] == "regression" and abs(f["ratio"] - 1.02) < 1e-12
    assert rows["Main.g @ app/main.ml"]["status"] == "~"
    # The pseudo point is not a row; its words are in the shares' total.
    assert "(runtime)" not in rows
    assert abs(rows["Main.g @ app/main.ml"]["share"] - 3_000_000 / 3_990_000) < 1e-12
    # The standard-library point carries its estimated split.
    assert rows["Stdlib__List.map @ list.ml"]["split"][0]["site"] == "Main.g @ app/main.ml"
    # +0.5% stays below the exact min_effect.
    rows = _decided(agg(points(f=301_500), inner()), base)
    assert rows["Main.f @ app/main.ml"]["status"] == "~"


def test_c_allocation_is_judged_per_caller_with_the_sampled_test():
    base = agg(points(), inner(c_main=30))
    rows = _decided(agg(points(), inner(c_main=300)), base)
    c = rows["Main.g @ app/main.ml (via runtime primitives)"]
    assert not c["exact"] and c["p_adj"] is not None
    assert c["status"] == "regression"
    rows = _decided(agg(points(), inner(c_main=33)), base)
    assert rows["Main.g @ app/main.ml (via runtime primitives)"]["status"] == "~"


CALL = ("/src/app/main.ml", 31, 2, 20, "Main.g")        # Main.g calls Array.make
BUF = ("buffer.ml", 120, 4, 30, "Stdlib__Buffer.resize")  # ... and Buffer grows


def with_calls(pts, call_words=200_000, buf_words=50_000):
    """`pts` from a runtime that counts allocation in C per OCaml call."""
    return Points(live_missing=pts.live_missing, complete=True, unavailable=None,
                  counts=pts.counts, calls={CALL: counts(call_words, 60),
                                            BUF: counts(buf_words)})


def inner_calls(dup=5):
    """inner() plus samples drawn in Buffer.resize's C allocation from
    Main.f, and an unmarshalled block (no call point) from Main.f."""
    out = inner()
    out[(BUF, "Main.f @ app/main.ml")] = [5, 0]
    out[(("/src/app/main.ml", 12, 2, 9, "Main.f"), "Main.f @ app/main.ml")] = [dup, 0]
    return out


def test_allocation_in_c_counts_exactly_at_the_ocaml_call():
    a = agg(with_calls(points()), inner_calls())
    assert a.points.calls
    g = a.points.sites["Main.g @ app/main.ml (via runtime primitives)"]
    assert (g.words, g.live_words, g.file, g.function) == (200_000, 60, "app/main.ml", "Main.g")
    # The samples drawn under a call point are its callers' estimate; a
    # user call is its own only caller, a standard-library one is split.
    assert dict(g.callers) == {"Main.g @ app/main.ml": 30}
    assert pointsites.split(g) == []
    buf = a.points.sites["Stdlib__Buffer.resize @ buffer.ml (via runtime primitives)"]
    assert pointsites.split(buf) == [{"site": "Main.f @ app/main.ml", "share": 1.0}]
    # Only the sample no point or call counted is left to the sampled rows.
    assert a.points.in_c == {"Main.f @ app/main.ml": [5, 0]}
    assert a.points.total("alloc") == 3_990_000 + 250_000

    base = a
    rows = _decided(agg(with_calls(points(), call_words=204_000), inner_calls()), base)
    c = rows["Main.g @ app/main.ml (via runtime primitives)"]
    assert c["points"] and c["exact"] and c["p_adj"] is None
    assert c["status"] == "regression" and abs(c["ratio"] - 1.02) < 1e-12
    assert c["stacks_site"] == "Main.g @ app/main.ml"
    assert rows["Main.f @ app/main.ml (via runtime primitives, sampled)"]["stacks_site"] == "Main.f @ app/main.ml"
    assert "Main.f @ app/main.ml (via runtime primitives)" not in rows
    rows = _decided(agg(with_calls(points()), inner_calls(dup=60)), base)
    assert rows["Main.f @ app/main.ml (via runtime primitives, sampled)"]["status"] == "regression"
    assert rows["Main.g @ app/main.ml (via runtime primitives)"]["status"] == "~"


def test_sides_that_disagree_on_call_points_are_refused():
    old, new = agg(points(), inner()), agg(with_calls(points()), inner_calls())
    for cur, base, who in ((new, old, "the baseline"), (old, new, "the current run")):
        with pytest.raises(InputError, match=f"b: {who} counted allocation in C only in total"):
            _decided(cur, base)


def test_live_rows_use_points_only_when_both_sides_counted_live():
    base = agg(points(), inner())
    rows = _decided(agg(points(), inner()), base, "live")
    assert rows["Main.f @ app/main.ml"]["points"]
    missing = agg(points(live_missing="exit walk stopped"), inner())
    rows = _decided(missing, base, "live")
    assert not any(r.get("points") for r in rows.values())


def test_a_side_without_points_compares_sampled_sites():
    base = agg(points(), inner())
    cur = copy.copy(base)
    cur.points = None
    assert not R.counted_points(cur, base, "alloc")
    assert R.site_rows("b", "alloc", cur, base, {"alpha": 0.01, "min_effect": 0.05,
                                                  "min_share": 0.005}) == []


def test_the_baseline_section_round_trips():
    a = agg(points(), inner())
    sec = pointsites.section(a.points)
    back = pointsites.parse_section(copy.deepcopy(sec))
    assert pointsites.section(back) == sec
    assert back.in_c == {"Main.g @ app/main.ml": [30, 1]} and not back.calls
    sec = pointsites.section(agg(with_calls(points()), inner_calls()).points)
    back = pointsites.parse_section(copy.deepcopy(sec))
    assert back.calls and pointsites.section(back) == sec
    assert back.sites["Main.g @ app/main.ml (via runtime primitives)"].words == 200_000
    # A section recorded before call points existed reads as without them.
    del sec["calls"]
    assert not pointsites.parse_section(sec).calls


def test_a_baseline_spelling_in_c_reads_as_via_runtime_primitives():
    sec = pointsites.section(agg(with_calls(points()), inner_calls()).points)
    sec["sites"] = {k.replace(pointsites.IN_C, " (in C)"): v for k, v in sec["sites"].items()}
    back = pointsites.parse_section(sec)
    assert back.sites["Main.g @ app/main.ml (via runtime primitives)"].words == 200_000
    assert not any("(in C)" in k for k in back.sites)


def test_a_changed_point_names_the_callers_whose_part_changed():
    """Main.g, the largest caller of List.map, is unchanged; Main.n is new:
    the row's cause is Main.n's growth, not Main.g's size."""
    base = agg(points(), inner())
    cur_inner = dict(inner())
    cur_inner[(LIST, "Main.n @ app/main.ml")] = [12, 0]
    cur = agg(points(lst=720_000), cur_inner)
    rows = {r["site"]: r for r in R.site_rows("b", "alloc", cur, base, PARAMS)}
    lst = rows["Stdlib__List.map @ list.ml"]
    decide_family(list(rows.values()))
    moves.attribute_changes({"alloc": list(rows.values())})
    assert lst["status"] == "regression"
    # The largest caller overall is still Main.g: the split says so...
    assert lst["split"][0]["site"] == "Main.g @ app/main.ml"
    # ...but the cause is the new caller, with its estimated words.
    first = lst["cause"][0]
    assert first["site"] == "Main.n @ app/main.ml" and first["new"]
    assert abs(first["change_words"] - 720_000 * 12 / 72) < 1
    assert first["change_low"] < first["change_words"] < first["change_high"]
    assert lst["stacks_site"] == "Main.n @ app/main.ml"
    text = site_name(lst)
    # The unchanged callers, however large, are not named.
    assert "Main.g" not in text and "Main.f" not in text, text
    assert text.startswith("Stdlib__List.map @ list.ml (+937.5 KiB from Main.n @ app/main.ml "
                           "(new caller) ["), text
    assert text.endswith("; estimated by caller)")
    # An unchanged row keeps the largest callers, marked estimated.
    rows2 = {r["site"]: r for r in R.site_rows("b", "alloc", base, base, PARAMS)}
    decide_family(list(rows2.values()))
    moves.attribute_changes({"alloc": list(rows2.values())})
    assert "cause" not in rows2["Stdlib__List.map @ list.ml"]
    assert "(called from Main.g @ app/main.ml 75%" in site_name(rows2["Stdlib__List.map @ list.ml"])


def test_a_baseline_keeps_the_callers_and_one_without_them_names_none():
    base = agg(points(), inner())
    sec = pointsites.section(base.points)
    assert sec["callers"] is True
    assert sec["sites"]["Stdlib__List.map @ list.ml"]["callers"] == {
        "Main.f @ app/main.ml": 15, "Main.g @ app/main.ml": 45}
    back = copy.copy(base)
    back.points = pointsites.parse_section(copy.deepcopy(sec))
    cur_inner = dict(inner())
    cur_inner[(LIST, "Main.n @ app/main.ml")] = [12, 0]
    cur = agg(points(lst=720_000), cur_inner)
    rows = {r["site"]: r for r in R.site_rows("b", "alloc", cur, back, PARAMS)}
    assert rows["Stdlib__List.map @ list.ml"]["caller_changes"][0]["site"] == \
        "Main.n @ app/main.ml"
    # A baseline written before the callers were kept: every caller would
    # look new, so no change is attributed; the row keeps its split.
    for site in sec["sites"].values():
        site.pop("callers", None)
    del sec["callers"]
    back.points = pointsites.parse_section(sec)
    assert not back.points.callers
    rows = {r["site"]: r for r in R.site_rows("b", "alloc", cur, back, PARAMS)}
    lst = rows["Stdlib__List.map @ list.ml"]
    assert "caller_changes" not in lst and lst["split"]
    decide_family(list(rows.values()))
    moves.attribute_changes({"alloc": list(rows.values())})
    assert lst["status"] == "regression" and "cause" not in lst
    assert site_name(lst).endswith(", estimated; which changed is unknown: the baseline "
                                   "recorded no callers to compare)"), site_name(lst)


def test_samples_in_compiler_generated_code_are_charged_to_the_ocaml_caller():
    curry, f, mn = ("caml_curry2", None, 0), ("Main.f", "main.ml", 7), ("Main.main", "main.ml", 9)
    prof = make_profile([([curry, f, mn], 5, 0), ([curry], 2, 0)])
    inner: dict = {}
    grouped = _group_stacks(prof["stacks"], "function", inner=inner)
    # The site stays the generated code (the key baselines carry)...
    assert {t[0] for t in grouped[0]} == {"caml_curry2 @ ?"}
    # ...but its samples are charged to the OCaml caller where the stack
    # records one.
    assert sorted((k[1], v[0]) for k, v in inner.items()) == [
        ("Main.f @ main.ml", 5), ("caml_curry2 @ ?", 2)]


@pytest.mark.parametrize("edit, why", [
    (lambda s: s.pop("in_c"), "live, sites, in_c, calls and callers"),
    (lambda s: s.__setitem__("calls", "yes"), "points.calls must be true or false"),
    (lambda s: s.__setitem__("extra", 1), "live, sites, in_c, calls and callers"),
    (lambda s: s.__setitem__("live", ""), "points.live"),
    (lambda s: s["sites"]["Main.f @ app/main.ml"].__setitem__("words", -1), "words"),
    (lambda s: s["sites"]["Main.f @ app/main.ml"].__setitem__("blocks", 10**9), "exceed"),
    (lambda s: s["sites"]["Main.f @ app/main.ml"].__setitem__("lines", {"10": 5}),
     "do not add up"),
    (lambda s: s["sites"]["Main.f @ app/main.ml"].__setitem__("lines", {"x": 5}),
     "not a line number"),
    (lambda s: s["sites"]["Main.f @ app/main.ml"].__setitem__("live_words", "30"),
     "live_words"),
    (lambda s: s["in_c"].__setitem__("Main.g @ app/main.ml", [1]), "samples, live"),
    (lambda s: s.__setitem__("callers", 1), "points.callers must be true or false"),
    (lambda s: s["sites"]["Stdlib__List.map @ list.ml"]["callers"].__setitem__("x", -1),
     "callers"),
    (lambda s: s["sites"]["Stdlib__List.map @ list.ml"].__setitem__("live_callers", []),
     "live_callers must be an object"),
    (lambda s: s["sites"].__setitem__("x", []), "must be an object"),
])
def test_a_hostile_section_is_rejected_naming_the_field(edit, why):
    sec = pointsites.section(agg(points(), inner()).points)
    edit(sec)
    with pytest.raises(InputError, match=why):
        pointsites.parse_section(sec)


def test_compiler_generated_code_says_what_it_is():
    pts = points()
    pts.counts[("", 0, 0, 0, "caml_curry2")] = counts(30_000)
    a = agg(pts, inner())
    rows = {r["site"]: r for r in R.site_rows("b", "alloc", a, a, PARAMS)}
    curry = rows["caml_curry2 @ ?"]
    assert curry["generated"] == "compiler-generated partial application"
    assert site_name(curry) == "caml_curry2 @ ? (compiler-generated partial application)"
    assert "generated" not in rows["Main.f @ app/main.ml"]
