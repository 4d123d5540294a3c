"""Per-stack aggregation (sites.py) and the baseline's optional "stacks" section."""

import json

import pytest

from harness_testlib import make_profile
from memprof_ci.store import baseline as bl
from memprof_ci.sites import grouping as sites
from memprof_ci.errors import InputError
from memprof_ci.inputs.profile import parse_profile
from memprof_ci.sites.grouping import aggregate

STACKS = [([("Stdlib__List.init", "list.ml", 60), ("Main.f", "/home/u/p/bench/main.ml", 10),
            ("Main.main", "main.ml", 99)], 100, 5),
          ([("Stdlib__List.init", "list.ml", 60), ("Main.f", "bench/main.ml", 11),
            ("Main.main", "main.ml", 99)], 20, 0),
          ([("Main.g", "main.ml", 30), ("Main.main", "main.ml", 98)], 50, 0)]


def agg(stacks=STACKS, seeds=(1, 2), grouping="function", frames=16):
    return aggregate([parse_profile(make_profile(stacks, seed=s, frames=frames), f"p{s}.json")
                      for s in seeds], grouping, "b")


def test_stacks_are_root_first_without_lines_and_sum_over_seeds():
    a = agg()
    assert a.stacks == [
        (("Main.main @ main.ml", "Main.f @ bench/main.ml", "Stdlib__List.init @ list.ml"),
         "Main.f @ bench/main.ml", 1, 240, 10),
        (("Main.main @ main.ml", "Main.g @ main.ml"), "Main.g @ main.ml", 1, 100, 0)]
    assert a.stacks_other == (0, 0)


def test_stacks_are_bounded_and_add_up(monkeypatch):
    monkeypatch.setattr(sites, "MAX_STACKS", 3)
    many = [([(f"Main.f{i}", "main.ml", i)] + [(f"Main.c{k}", "main.ml", k) for k in range(40)],
             100 - i, 1) for i in range(10)]
    a = agg(many, frames=64)
    assert len(a.stacks) == 3 and [s[3] for s in a.stacks] == [200, 198, 196]
    assert all(len(s[0]) == sites.MAX_DEPTH for s in a.stacks)
    assert all(s[0][s[2]] == s[1] for s in a.stacks)  # the site frame, innermost
    assert sum(s[3] for s in a.stacks) + a.stacks_other[0] == a.total_samples
    assert sum(s[4] for s in a.stacks) + a.stacks_other[1] == a.total_live


def test_baseline_round_trip_one_line_per_stack():
    a = agg()
    text = bl.dumps(bl.to_document(a, None, None, None))
    lines = text.splitlines()
    assert '      ["Main.f @ bench/main.ml", 1, 240, 10, [2, 0, 3]],' in lines
    b = bl.parse_baseline(json.loads(text), "x.json")
    assert b.stacks == a.stacks and b.stacks_other == a.stacks_other


def test_old_baseline_without_stacks_loads():
    doc = bl.to_document(agg(), None, None, None)
    del doc["stacks"]
    b = bl.parse_baseline(json.loads(bl.dumps(doc)), "old.json")
    assert b.stacks is None and b.total_samples == 340


def test_stacks_that_do_not_add_up_are_ignored_not_fatal():
    """Site counts edited by hand leave the stacks behind: the baseline still
    loads (its counts decide), without stacks, saying why."""
    doc = json.loads(bl.dumps(bl.to_document(agg(), None, None, None)))
    doc["stacks"]["list"][0][2] -= 1
    b = bl.parse_baseline(doc, "edited.json")
    assert b.stacks is None and "do not add up" in b.meta["stacks_ignored"]
    assert b.total_samples == 340


@pytest.mark.parametrize("mutate, msg", [
    (lambda s: s["list"][0][4].append(99), "out of range"),
    (lambda s: s["list"][0].__setitem__(1, 7), "site frame"),
    (lambda s: s.__setitem__("frames", "x"), "must be lists"),
    (lambda s: s.__setitem__("other", [0]), "stacks.other"),
])
def test_malformed_stacks_are_rejected(mutate, msg):
    doc = json.loads(bl.dumps(bl.to_document(agg(), None, None, None)))
    mutate(doc["stacks"])
    with pytest.raises(InputError, match=msg):
        bl.parse_baseline(doc, "bad.json")
