"""The harness's reading of a version-4 profile's `snapshot` section
(memprof_ci/inputs/snapshot.py) and its retainer paths keyed by site
(sites.retainers_by_site). Profiles written by the runtime itself are
checked in runtime-patch/tests/test_snapshot.py."""

import copy

import pytest
from harness_testlib import make_profile, to_version3, write_json

from memprof_ci.errors import InputError
from memprof_ci.inputs.profile import load_profile
from memprof_ci.sites.grouping import aggregate, retainers_by_site


def _v4():
    """Two stacks (Cache.add live, Main.drop dead) and a snapshot whose one
    site is Cache.add, held by Cache's field 0 through a Hashtbl."""
    doc = to_version3(make_profile([
        ([("Cache.add", "cache.ml", 12), ("Main.run", "main.ml", 3)], 30, 30),
        ([("Main.drop", "main.ml", 7)], 20, 0)]))
    table = doc["frame_table"]
    idx = {f["function"]: i for i, f in enumerate(table)}
    frames = [idx["Cache.add"], idx["Main.run"]]
    doc["version"] = 4
    doc["snapshot"] = {
        "at": "exit", "taken": True, "walk": "breadth-first", "sites_limit": 20,
        "reachable_blocks": 900, "tracked_blocks": 40, "tracked_reachable": 10,
        "table_bytes": 65536,
        "sites": [{
            "frames": frames, "live_blocks": 10, "live_samples": 30, "live_words": 60,
            "shared_samples": 30, "shared_words": 60,
            "root": {"kind": "global", "unit": "Cache", "field": 0},
            "depth": 4,
            "path": [{"tag": 0, "size": 4, "field": 1}, {"tag": 0, "size": 16, "field": 3},
                     {"tag": 0, "size": 3, "field": 1, "frames": frames},
                     {"tag": 0, "size": 5, "frames": frames}]}]}
    return doc


def test_version4_snapshot_reads_and_keys_by_site(tmp_path):
    prof = load_profile(write_json(tmp_path / "p.json", _v4()))
    snap = prof.snapshot
    assert snap["taken"] and snap["table_bytes"] == 65536
    site = snap["sites"][0]
    assert site["root"] == {"kind": "global", "unit": "Cache", "field": 0}
    assert [h["size"] for h in site["path"]] == [4, 16, 3, 5]
    assert site["path"][-1]["frames"][0]["function"] == "Cache.add"
    agg = aggregate([prof], "function", "b")
    by_site = retainers_by_site(snap, "function")
    # The key is the site table's own key for that stack.
    assert set(by_site) == {"Cache.add @ cache.ml"} and "Cache.add @ cache.ml" in agg.sites
    assert by_site["Cache.add @ cache.ml"] is site
    line = retainers_by_site(snap, "line")
    assert set(line) == {"Cache.add @ cache.ml:12"}


def test_version3_has_no_snapshot(tmp_path):
    doc = _v4()
    doc["version"] = 3
    with pytest.raises(InputError, match=r"unknown key\(s\) snapshot"):
        load_profile(write_json(tmp_path / "p.json", doc))
    del doc["snapshot"]
    assert load_profile(write_json(tmp_path / "q.json", doc)).snapshot is None


def test_not_taken_snapshot(tmp_path):
    doc = _v4()
    doc["snapshot"] = {"at": "exit", "taken": False, "reason": "live=gc"}
    prof = load_profile(write_json(tmp_path / "p.json", doc))
    assert prof.snapshot == {"at": "exit", "taken": False, "reason": "live=gc", "sites": []}
    assert retainers_by_site(prof.snapshot) == {}


@pytest.mark.parametrize("at", ["signal", "call"])
def test_a_snapshot_taken_while_running_says_when(tmp_path, at):
    doc = _v4()
    doc["snapshot"]["at"] = at
    prof = load_profile(write_json(tmp_path / "p.json", doc))
    assert prof.snapshot["at"] == at and prof.snapshot["sites"]


def _edit(path, value):
    def f(doc):
        obj = doc
        for k in path[:-1]:
            obj = obj[k]
        if value is KeyError:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
    return f


SITE = ("snapshot", "sites", 0)


@pytest.mark.parametrize("edit,msg", [
    (_edit(("snapshot",), KeyError), r"missing key\(s\) snapshot"),
    (_edit(("snapshot", "walk"), "depth-first"), "walk"),
    (_edit(("snapshot", "at"), "usr1"), "at is not one of exit, signal, call"),
    (_edit(("snapshot", "at"), None), "at is not one of"),
    (_edit(("snapshot", "sites_limit"), 0), "at most sites_limit"),
    (_edit(("snapshot", "table_bytes"), -1), "table_bytes is not a count"),
    (_edit(SITE + ("frames",), [99]), r"frames\[0\] is 99, not an index"),
    (_edit(SITE + ("root",), {"kind": "heap"}), "no known kind"),
    (_edit(SITE + ("root",), {"kind": "global", "unit": 3, "field": 0}), "wrong type"),
    (_edit(SITE + ("root",), {"kind": "stack", "function": "f"}), "lacks file, line"),
    (_edit(SITE + ("shared_samples",), 31), "more shared than live"),
    (_edit(SITE + ("depth",), 5), "depth 5 is not the path's length"),
    (_edit(SITE + ("path",), []), "path is not a non-empty list"),
    (_edit(SITE + ("path", 0, "field"), KeyError), r"path\[0\] lacks field"),
    (_edit(SITE + ("path", 3, "frames"), KeyError), "last hop is not a sampled block"),
    (_edit(SITE + ("path", 1, "tag"), 256), "tag or size"),
    (_edit(SITE + ("path", 1), {"elided": 0}), "elided"),
    (_edit(SITE + ("extra",), 1), "unknown key"),
])
def test_malformed_snapshot_is_rejected(tmp_path, edit, msg):
    doc = copy.deepcopy(_v4())
    edit(doc)
    with pytest.raises(InputError, match=msg) as e:
        load_profile(write_json(tmp_path / "p.json", doc))
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)
