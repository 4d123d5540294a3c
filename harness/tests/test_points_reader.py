"""The harness's reading of a version-5 profile's `points` section
(memprof_ci/inputs/points.py). Profiles written by the runtime itself are checked
in runtime-patch/tests/test_points.py."""

import copy

import pytest
from harness_testlib import make_profile, to_version3, write_json

from memprof_ci.errors import InputError
from memprof_ci.inputs.profile import load_profile


def _v5(live=True):
    doc = to_version3(make_profile([([("Main.run", "main.ml", 3)], 30, 30)]))
    doc["version"] = 5
    lv = [] if live is True else [None, None]
    doc["points"] = {"live": live, "complete": True, "points": [
        ["", 0, 0, 0, "(runtime)", 21, 67, 1, 100001, 10, 36] + ([10, 95] if live is True else lv),
        ["main.ml", 4, 42, 52, "Main.tuples", 1000, 3000, 0, 0, 1000, 3000] +
        ([1000, 3000] if live is True else lv),
        # the same location listed by a second unit (inlined there)
        ["main.ml", 4, 42, 52, "Main.tuples", 5, 15, 0, 0, 0, 0] +
        ([0, 0] if live is True else lv)]}
    return doc


def test_version5_points_read_exactly_and_merge_units(tmp_path):
    prof = load_profile(write_json(tmp_path / "p.json", _v5()))
    pts = prof.points
    assert pts.live_missing is None and pts.complete
    assert pts.counts[("main.ml", 4, 42, 52, "Main.tuples")] == (
        1005, 3015, 0, 0, 1000, 3000, 1000, 3000)
    assert pts.allocated_words(("", 0, 0, 0, "(runtime)")) == 100068


def test_call_points_read_apart_from_the_points(tmp_path):
    doc = _v5()
    assert load_profile(write_json(tmp_path / "old.json", doc)).points.calls is None
    doc["points"]["calls"] = [
        ["main.ml", 9, 10, 30, "Main.fill", 0, 0, 1, 1001, 0, 0, 1, 1001],
        ["main.ml", 9, 10, 30, "Main.fill", 2, 14, 0, 0, 1, 7, 0, 0]]
    pts = load_profile(write_json(tmp_path / "p.json", doc)).points
    assert pts.calls == {("main.ml", 9, 10, 30, "Main.fill"): (2, 14, 1, 1001, 1, 7, 1, 1001)}
    assert ("main.ml", 9, 10, 30, "Main.fill") not in pts.counts


def test_points_without_a_walk_have_no_live_counts(tmp_path):
    prof = load_profile(write_json(tmp_path / "p.json", _v5(live="live=gc: no walk")))
    assert prof.points.live_missing == "live=gc: no walk"
    assert prof.points.counts[("main.ml", 4, 42, 52, "Main.tuples")][6:] == (None, None)


def test_version5_with_a_snapshot_reads_too(tmp_path):
    from test_snapshot_reader import _v4
    doc = _v4()
    doc["version"] = 5
    doc["points"] = _v5()["points"]
    prof = load_profile(write_json(tmp_path / "p.json", doc))
    assert prof.snapshot["taken"] and prof.points.complete


@pytest.mark.parametrize("breakage,needle", [
    (lambda d: d.pop("points"), "missing key(s) points"),
    (lambda d: d["points"].update(live=0), "live is 0"),
    (lambda d: d["points"].update(complete="yes"), "complete is not a boolean"),
    (lambda d: d["points"]["points"][1].__setitem__(5, -1), "minor_blocks is -1"),
    (lambda d: d["points"]["points"][1].__setitem__(11, None), "live_blocks is None"),
    (lambda d: d["points"]["points"][1].pop(), "is not [file, line"),
    (lambda d: d["points"]["points"][0].__setitem__(4, "(bogus)"), "pseudo point named"),
    (lambda d: d["points"].update(extra=1), "not an object of live"),
    (lambda d: d["points"].update(calls={}), "calls is not a list"),
    (lambda d: d["points"].update(calls=[["", 0, 0, 0, "(runtime)"] + [0] * 8]),
     "call 0 has no file"),
    (lambda d: d["points"].update(calls=[["m.ml", 1, 0, 0, "M"] + [0] * 7]),
     "call 0 is not"),
    (lambda d: d.update(version=4), "missing key(s) snapshot"),
])
def test_bad_points_are_rejected_with_the_file_named(tmp_path, breakage, needle):
    doc = copy.deepcopy(_v5())
    breakage(doc)
    path = write_json(tmp_path / "p.json", doc)
    with pytest.raises(InputError) as e:
        load_profile(path)
    assert str(path) in str(e.value) and needle in str(e.value)


def test_a_compiler_point_without_a_location_is_read(tmp_path):
    """The startup unit's code (caml_curry2, ...) has allocation points with
    no file: only a name in parentheses must be a known pseudo point."""
    doc = _v5()
    doc["points"]["points"].append(["", 0, 0, 0, "caml_curry2", 270, 1350, 0, 0, 0, 0, 0, 0])
    prof = load_profile(write_json(tmp_path / "p.json", doc))
    assert prof.points.counts[("", 0, 0, 0, "caml_curry2")][:2] == (270, 1350)
