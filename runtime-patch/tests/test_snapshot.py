"""The heap snapshot at exit (OCAMLMEMPROF snapshot=exit): retainer paths
for the sampled blocks found reachable, in the profile's `snapshot`
section (runtime-patch/format/profile-format.md, "The snapshot").

Programs run at rate=1 with stacks=site, so every block is sampled and
each site is one stack; the assertions then hold for every run, not
with some probability.
"""

import json

import jsonschema

from runtime_testlib import SCHEMA, run

SPEC = "rate=1,seed=1,stacks=site,snapshot=exit,out={out}"


def read(raw):
    """The profile checked against the schema, with each frame index of the
    snapshot and the stacks replaced by its frame object."""
    doc = json.loads(raw)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    table = doc["frame_table"]
    for st in doc["stacks"]:
        st["frames"] = [table[i] for i in st["frames"]]
    for site in doc.get("snapshot", {}).get("sites", []):
        site["frames"] = [table[i] for i in site["frames"]]
        for hop in site["path"]:
            if "frames" in hop:
                hop["frames"] = [table[i] for i in hop["frames"]]
    return doc


def functions(frames):
    return [f["function"] for f in frames]


def snapshot_of(exe, tmp_path, spec=SPEC, *args):
    out = tmp_path / "p.json"
    res = run(exe, *args, memprof=spec.format(out=out))
    return read(out.read_bytes()), res


def site_named(doc, function):
    found = [s for s in doc["snapshot"]["sites"] if function in functions(s["frames"])]
    assert len(found) <= 1
    return found[0] if found else None


def test_global_hashtbl_path_names_the_unit_and_the_bucket_array(build, tmp_path):
    exe = build("snapshot_cache")
    doc, res = snapshot_of(exe, tmp_path)
    buckets = int(res.stdout)
    assert doc["version"] == 4
    snap = doc["snapshot"]
    assert snap["taken"] is True and snap["walk"] == "breadth-first"
    kept = site_named(doc, "Snapshot_cache.make_kept")
    assert kept is not None, [functions(s["frames"]) for s in snap["sites"]]
    assert kept["live_blocks"] == 200
    assert kept["live_words"] == 200 * 6
    # Every kept tuple hangs from the same root and first hop: the table.
    assert kept["shared_samples"] == kept["live_samples"] == 200 * 6
    root = kept["root"]
    # `cache` is the unit's first toplevel binding: field 0 of its module
    # block.
    assert root == {"kind": "global", "unit": "Snapshot_cache", "field": 0}
    path = kept["path"]
    # The Hashtbl.t record (size, data, seed, initial_size) through its
    # `data` field, the bucket array, a bucket (key, data, next) through
    # its `data` field, then the tuple.
    assert kept["depth"] == len(path) == 4
    assert (path[0]["tag"], path[0]["size"], path[0]["field"]) == (0, 4, 1)
    assert (path[1]["tag"], path[1]["size"]) == (0, buckets)
    assert (path[2]["tag"], path[2]["size"], path[2]["field"]) == (0, 3, 1)
    assert (path[3]["tag"], path[3]["size"]) == (0, 5)
    assert "Snapshot_cache.make_kept" in functions(path[3]["frames"])
    # The table and its bucket array are sampled blocks too: made by
    # Hashtbl.create, and by Hashtbl.resize as the table grew.
    assert "Stdlib__Hashtbl.create" in functions(path[0]["frames"])
    assert "Stdlib__Hashtbl.resize" in functions(path[1]["frames"])
    # The dropped site: sampled, not live, no path.
    assert site_named(doc, "Snapshot_cache.make_dropped") is None
    dropped = [st for st in doc["stacks"]
               if "Snapshot_cache.make_dropped" in functions(st["frames"])]
    assert dropped and sum(st.get("samples", 0) for st in dropped) == 200 * 8
    assert sum(st.get("live_samples", 0) for st in dropped) == 0


def test_local_list_path_names_the_holding_frame(build, tmp_path):
    exe = build("snapshot_stack")
    doc, _ = snapshot_of(exe, tmp_path)
    held = site_named(doc, "Snapshot_stack.make_held")
    assert held is not None
    assert held["live_blocks"] == 300
    root = held["root"]
    assert root["kind"] == "stack"
    assert root["function"] == "Snapshot_stack.hold"
    assert root["file"] == "snapshot_stack.ml" and root["line"] == 11
    # The first cons cell of the list, then its head.
    path = held["path"]
    assert [(h["tag"], h["size"]) for h in path] == [(0, 2), (0, 6)]
    assert path[0]["field"] == 0
    assert held["shared_samples"] == held["live_samples"] == 300 * 7


def test_snapshot_does_not_change_the_counts(build, tmp_path):
    """The snapshot's walk judges liveness: the stacks and totals are those
    of the same run without it, and only `version` and `snapshot` differ."""
    exe = build("snapshot_cache")
    with_snap, _ = snapshot_of(exe, tmp_path)
    out = tmp_path / "plain.json"
    run(exe, memprof=f"rate=1,seed=1,stacks=site,out={out}")
    plain = json.loads(out.read_bytes())
    assert plain["version"] == 3 and "snapshot" not in plain
    del with_snap["snapshot"]
    with_snap["version"] = 3
    plain_table = plain["frame_table"]
    for st in plain["stacks"]:
        st["frames"] = [plain_table[i] for i in st["frames"]]
    assert with_snap == plain


def test_sites_limit_keeps_the_heaviest(build, tmp_path):
    """The sites with a path are the stacks with the most live samples,
    heaviest first, and each has its stack's live samples."""
    exe = build("snapshot_cache")
    doc, _ = snapshot_of(exe, tmp_path, SPEC + ",snapshot_sites=1")
    snap = doc["snapshot"]
    live = sorted((st.get("live_samples", 0) for st in doc["stacks"]), reverse=True)
    assert snap["sites_limit"] == 1 and len(snap["sites"]) == 1
    assert snap["sites"][0]["live_samples"] == live[0] == 200 * 6
    full, _ = snapshot_of(exe, tmp_path)
    sites = full["snapshot"]["sites"]
    assert full["snapshot"]["sites_limit"] == 20 and len(sites) == 20
    assert [s["live_samples"] for s in sites] == live[:20]
    by_frames = {json.dumps(st["frames"]): st for st in full["stacks"]}
    for s in sites:
        assert by_frames[json.dumps(s["frames"])]["live_samples"] == s["live_samples"]


def test_with_stacks_cut_past_the_budget(build, tmp_path):
    """Without stacks=site, native code keeps whole stacks within stackmem;
    at stackmem=0 every new stack is cut to its site's slots and its line
    says "cut". The snapshot names sites by those lines: the kept site's
    path is the same, and its frames are a cut line with its live samples."""
    exe = build("snapshot_cache")
    doc, res = snapshot_of(exe, tmp_path, "rate=1,seed=1,stackmem=0,snapshot=exit,out={out}")
    assert doc["version"] == 4 and doc["config"]["stackmem"] == 0
    assert "stacks" not in doc["config"]
    kept = site_named(doc, "Snapshot_cache.make_kept")
    assert kept is not None and kept["live_blocks"] == 200
    assert kept["root"] == {"kind": "global", "unit": "Snapshot_cache", "field": 0}
    assert [h["size"] for h in kept["path"]] == [4, int(res.stdout), 3, 5]
    lines = [st for st in doc["stacks"] if st["frames"] == kept["frames"]]
    assert len(lines) == 1 and lines[0].get("cut") is True
    assert lines[0]["live_samples"] == kept["live_samples"] == 200 * 6
    assert site_named(doc, "Snapshot_cache.make_dropped") is None


def test_not_taken_says_why(build, tmp_path):
    exe = build("snapshot_cache")
    doc, _ = snapshot_of(exe, tmp_path, SPEC + ",live=gc")
    assert doc["snapshot"]["taken"] is False
    assert "live=gc" in doc["snapshot"]["reason"]


def test_past_snapshot_mem_no_snapshot_and_liveness_unchanged(build, tmp_path):
    """The walk's tables are held within snapshot_mem: this program's need
    a few hundred KiB, so 64k ends the snapshot, with the reason, and the
    exit judges liveness without it (the stacks equal a run with no
    snapshot); with the default, the snapshot is taken within it."""
    exe = build("snapshot_cache")
    small, _ = snapshot_of(exe, tmp_path, SPEC + ",snapshot_mem=64k")
    assert small["snapshot"]["taken"] is False
    assert "snapshot_mem" in small["snapshot"]["reason"]
    plain, _ = snapshot_of(exe, tmp_path, SPEC.replace(",snapshot=exit", ""))
    assert small["stacks"] == plain["stacks"] and small["totals"] == plain["totals"]
    full, _ = snapshot_of(exe, tmp_path)
    assert full["snapshot"]["taken"] is True
    assert 64 << 10 < full["snapshot"]["table_bytes"] <= 1 << 30


def test_bytecode_names_the_global_data(build, tmp_path):
    """In bytecode each unit's module block is a slot of the global data:
    the path starts there, goes through the unit's module block (field 0,
    `cache`), then follows the table."""
    exe = build("snapshot_cache", backend="bytecode")
    doc, res = snapshot_of(exe, tmp_path)
    kept = site_named(doc, "Snapshot_cache.make_kept")
    assert kept["root"] == {"kind": "global_data"}
    assert kept["live_blocks"] == 200 and kept["depth"] == 6
    assert kept["path"][1]["field"] == 0
    sizes = [h["size"] for h in kept["path"]]
    assert sizes[2:] == [4, int(res.stdout), 3, 5]


def test_with_a_trace_the_snapshot_is_the_same(build, tmp_path):
    """With trace=, memprof keeps the trace's record of each block, which
    names its site: the snapshot is the one without a trace."""
    exe = build("snapshot_cache")
    plain, _ = snapshot_of(exe, tmp_path)
    traced, _ = snapshot_of(exe, tmp_path, SPEC + f",trace={tmp_path / 't.ctf'}")
    assert (tmp_path / "t.ctf").stat().st_size > 0
    assert traced["snapshot"] == plain["snapshot"]


def test_same_run_same_bytes(build, tmp_path):
    """The section depends on no address (the walk's order is that of the
    roots and fields): two runs write the same bytes."""
    exe = build("snapshot_cache")
    raw = []
    for name in ("a.json", "b.json"):
        run(exe, memprof=SPEC.format(out=tmp_path / name))
        raw.append((tmp_path / name).read_bytes())
    assert b'"snapshot"' in raw[0] and raw[0] == raw[1]


def test_paths_through_one_long_list_share_their_hops(build, tmp_path):
    """Three sites held at the end of one 3000-cell list: each path is the
    list, the option, the record, a list cell, then the block, and the
    three are read back together (they meet at the record)."""
    exe = build("snapshot_long")
    doc, _ = snapshot_of(exe, tmp_path)
    sites = [site_named(doc, f"Snapshot_long.{f}")
             for f in ("make_pair", "make_floats", "make_bytes")]
    assert all(s is not None for s in sites), [functions(s["frames"]) for s in doc["snapshot"]["sites"]]
    for s in sites:
        assert s["root"]["kind"] == "global" and s["root"]["unit"] == "Snapshot_long"
        assert s["root"] == sites[0]["root"]
        # 3000 cells, Some, the record, a cell of one of its lists, the block.
        assert s["depth"] == 3004
        path = s["path"]
        assert path[24] == {"elided": 3004 - 24 - 8}
        assert len(path) == 24 + 1 + 8
        assert all((h["tag"], h["size"], h["field"]) == (0, 2, 1) for h in path[:24])
        assert [(h["tag"], h["size"]) for h in path[-5:-1]] == [(0, 2), (0, 1), (0, 3), (0, 2)]
        assert path[-5]["field"] == 0 and path[-4]["field"] == 0
    fields = [s["path"][-3]["field"] for s in sites]
    assert fields == [0, 1, 2]
    tags = [s["path"][-1]["tag"] for s in sites]
    assert tags == [0, 254, 252]
