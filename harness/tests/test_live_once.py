"""Live at exit decided once: a set of runs whose first counted the
allocation points may leave live undecided in the others (their runs skip
the exit's walk of the heap; grouping._live_once), and the live counts,
their exposure (Aggregate.exposure_of) and the baseline's config.live_runs
then say so.  The runner's side, on the real runtime, is in
test_points_check.py."""

import copy

import pytest
from harness_testlib import make_profile, to_version3, write_json
from newest_inputs import points_profile

from memprof_ci.decide import comparison as R
from memprof_ci.errors import InputError
from memprof_ci.sites.grouping import aggregate_paths
from memprof_ci.store import baseline as bl

PARAMS = {"alpha": 0.01, "min_effect": 0.05, "exact_min_effect": 0.0, "min_share": 0.0}


def undecided(seed, live=7):
    """A run of the same program that skipped the walk (live=off): its
    live samples are the blocks not yet collected."""
    doc = no_points(points_profile(seed=seed, snapshot=False))
    doc["config"]["live"] = "off"
    for st in doc["stacks"]:
        st["live_samples"] = live
        st["collected_samples"] = st["samples"] - live
    doc["totals"]["live_samples"] = live * len(doc["stacks"])
    doc["totals"]["collected_samples"] = doc["totals"]["samples"] - live * len(doc["stacks"])
    return doc


def no_points(doc):
    """The same run without the points: the runtime then writes version 3."""
    del doc["points"]
    doc["version"] = 3
    return doc


def paths(tmp_path, *docs):
    return [str(write_json(tmp_path / f"b.{i + 1}.json", d)) for i, d in enumerate(docs)]


def test_the_live_counts_are_the_first_runs_alone(tmp_path):
    first = points_profile(seed=1, snapshot=False)
    ps = paths(tmp_path, first, undecided(2), undecided(3))
    agg = aggregate_paths(ps, "function", "b", live_decided=True)
    assert agg.live_decided and agg.live_runs == 1
    assert agg.total_samples == 3 * first["totals"]["samples"]
    assert agg.total_live == first["totals"]["live_samples"] == 4
    assert sum(s.live_samples for s in agg.sites.values()) == 4
    assert sum(t[4] for t in agg.stacks) + agg.stacks_other[1] == 4
    assert agg.exposure_of("live") == pytest.approx(1e-4)
    assert agg.exposure_of("alloc") == agg.exposure_of("peak") == pytest.approx(3e-4)
    # Every run decided: every run's live samples, at every run's exposure.
    every = aggregate_paths(paths(tmp_path, first, points_profile(seed=2, snapshot=False)),
                            "function", "b", live_decided=True)
    assert every.live_runs is None and every.total_live == 8
    assert every.exposure_of("live") == pytest.approx(2e-4)


@pytest.mark.parametrize("first", ["no points", "undecided"])
def test_skipping_the_walk_needs_a_first_run_that_counted_the_points(tmp_path, first):
    head = no_points(points_profile(seed=1, snapshot=False))
    if first == "undecided":
        head = undecided(1)
    ps = paths(tmp_path, head, undecided(2), points_profile(seed=3, snapshot=False))
    with pytest.raises(InputError) as e:
        aggregate_paths(ps, "function", "b", live_decided=True)
    msg = str(e.value)
    assert "\n" not in msg and "live=off" in msg
    assert msg.startswith(ps[0] if first == "undecided" else ps[1]), msg


def test_a_set_that_decides_nothing_is_refused_where_live_is_read(tmp_path):
    ps = paths(tmp_path, undecided(1), undecided(2))
    with pytest.raises(InputError, match="made with OCAMLMEMPROF live=off"):
        aggregate_paths(ps, "function", "b", live_decided=True)
    agg = aggregate_paths(ps, "function", "b", live_decided=False)
    assert not agg.live_decided and agg.live_runs is None


def _baseline(tmp_path):
    agg = aggregate_paths(paths(tmp_path, points_profile(seed=1, snapshot=False), undecided(2)),
                          "function", "b", live_decided=True)
    return agg, bl.to_document(agg, None, "pid", None)


def test_the_baseline_records_and_reads_live_runs(tmp_path):
    agg, doc = _baseline(tmp_path)
    assert doc["config"]["live_runs"] == 1
    back = bl.parse_baseline(copy.deepcopy(doc), "b.json")
    assert back.live_runs == 1 and back.total_live == agg.total_live
    del doc["config"]["live_runs"]
    assert bl.parse_baseline(doc, "b.json").live_runs is None


@pytest.mark.parametrize("value", [0, 2, -1, "1", True, 1.0, None, [1]])
def test_a_hostile_live_runs_is_refused_in_one_line(tmp_path, value):
    _, doc = _baseline(tmp_path)
    doc["config"]["live_runs"] = value
    with pytest.raises(InputError, match=r"b.json: malformed baseline: config.live_runs must "
                                         r"be an integer from 1 to 1") as e:
        bl.parse_baseline(doc, "b.json")
    assert "\n" not in str(e.value)


def test_sampled_live_rows_carry_each_sides_live_exposure(tmp_path):
    """A baseline of every run's live samples against a run whose live
    samples are its first run's: the test sees each side's own exposure."""
    base = aggregate_paths(paths(tmp_path, *(to_version3(make_profile(
        [([("Main.f0", "main.ml", 10)], 300, 90)], seed=s)) for s in (1, 2, 3))),
        "function", "b", live_decided=True)
    cur = aggregate_paths(paths(tmp_path, points_profile(seed=1, snapshot=False),
                                undecided(2), undecided(3)), "function", "b",
                          live_decided=True)
    rows = R.site_rows("b", "live", cur, base, PARAMS)
    assert rows and all(r["current_exposure"] == pytest.approx(1e-4) and
                        r["baseline_exposure"] == pytest.approx(3e-4) for r in rows), rows
    alloc = R.site_rows("b", "alloc", cur, base, PARAMS)
    assert all(r["current_exposure"] == pytest.approx(3e-4) for r in alloc), alloc
