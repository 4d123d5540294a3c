"""Snapshots while the program runs (OCAMLMEMPROF snapshot=call and
snapshot=signal; memprof_tracker.c, design 10): each is a whole profile
of that moment, with its `snapshot` section saying `at`, written to
`snapshot_out`, and the program's own run (its collections, counts and
exit profile) is the one it has without them.

Programs run at rate=1 with stacks=site, as in test_snapshot.py, so every
block is sampled and the assertions hold for every run.
"""

import signal

import pytest

from runtime_testlib import run
from test_snapshot import functions, read, site_named

SPEC = "rate=1,seed=1,stacks=site,out={out},snapshot={when},snapshot_out={snap}"


def demand(build, tmp_path, how, backend="native", when=None, **kw):
    """Run snapshot_demand HOW; return (printed lines, [snapshot docs], exit doc)."""
    exe = build("snapshot_demand", backend=backend, threads=True)
    out, snap = tmp_path / "p.json", tmp_path / "s%n.json"
    res = run(exe, how, str(tmp_path / "s%d.json"),
              memprof=SPEC.format(out=out, when=when or how, snap=snap), **kw)
    lines = res.stdout.splitlines()
    docs = [read((tmp_path / f"s{n}.json").read_bytes()) for n in (1, 2)]
    return lines, docs, read(out.read_bytes()), res


@pytest.mark.parametrize("how,backend", [("call", "native"), ("call", "bytecode"),
                                         ("signal", "native")])
def test_each_snapshot_is_its_moment(build, tmp_path, how, backend):
    lines, (first, second), final, res = demand(build, tmp_path, how, backend)
    assert lines == [str(tmp_path / "s1.json"), str(tmp_path / "s2.json")]
    assert res.stderr == ""
    for doc in (first, second):
        assert doc["version"] == 4
        assert doc["snapshot"]["at"] == how and doc["snapshot"]["taken"] is True
    kept = site_named(first, "Snapshot_demand.make_kept")
    held = site_named(first, "Snapshot_demand.make_dropped")
    assert kept["live_blocks"] == held["live_blocks"] == 200
    if backend == "native":
        # `cache` and `dropped`, the unit's first two toplevel bindings.
        assert kept["root"] == {"kind": "global", "unit": "Snapshot_demand", "field": 0}
        assert held["root"] == {"kind": "global", "unit": "Snapshot_demand", "field": 1}
    else:
        # Mid-run the interpreter's stack may hold them nearer than the
        # global data does.
        assert {kept["root"]["kind"], held["root"]["kind"]} <= {"global_data", "other"}
    # The second snapshot comes after `dropped` was emptied.
    assert site_named(second, "Snapshot_demand.make_dropped") is None
    assert site_named(second, "Snapshot_demand.make_kept")["live_blocks"] == 200
    # Live at the moment in the stacks too, as the section says.
    live = {tuple(functions(st["frames"])): st.get("live_samples", 0)
            for st in second["stacks"]}
    assert not any(v for k, v in live.items() if "Snapshot_demand.make_dropped" in k)
    # The exit's profile has no snapshot: snapshot= did not ask for one.
    assert final["version"] == 3 and "snapshot" not in final


def test_snapshots_move_nothing_in_the_program(build, tmp_path):
    """The program's GC counters and exit profile are those of the same
    program whose calls get no snapshot, but for the words of the answers
    (the path written, against "")."""
    lines, _, with_snaps, _ = demand(build, tmp_path, "call")
    exe = build("snapshot_demand", threads=True)
    plain = tmp_path / "plain.json"
    res = run(exe, "call", str(tmp_path / "s%d.json"),   # the same argv
              memprof=f"rate=1,seed=1,stacks=site,out={plain}")
    assert res.stdout.splitlines() == ["", ""]
    assert res.stderr.count("no snapshot on the program's call") == 2
    without = read(plain.read_bytes())
    # An OCaml string of n bytes takes n // 8 + 1 words.
    extra = sum(len(p) // 8 + 1 - 1 for p in lines)
    assert extra > 0
    for k, v in without["gc"].items():
        assert with_snaps["gc"][k] == v + (extra if k == "minor_words" else 0), k
    assert with_snaps["totals"]["samples"] == without["totals"]["samples"] + extra


def test_other_threads_stacks_are_roots(build, tmp_path):
    """The child keeps the program's other threads: a list on another
    thread's stack is live, held by a root of kind "other". Several runs:
    a thread the child starts must not be given that thread's stack
    before the walk has read it."""
    exe = build("snapshot_threads", threads=True)
    for i in range(5):
        d = tmp_path / str(i)
        d.mkdir()
        res = run(exe, memprof=f"rate=1,seed=1,stacks=site,out={d}/p.json,snapshot=call,"
                  f"snapshot_out={d}/s%n.json")
        assert res.stdout.splitlines() == [f"{d}/s1.json", f"{d}/s2.json"], res.stderr
        first, second = (read((d / f"s{n}.json").read_bytes()) for n in (1, 2))
        held = site_named(first, "Snapshot_threads.make_held")
        assert held is not None and held["live_blocks"] == 2000
        assert held["root"]["kind"] == "other"
        assert site_named(second, "Snapshot_threads.make_held") is None


def test_another_domain_running_means_no_snapshot(build, tmp_path):
    exe = build("snapshot_domains")
    res = run(exe, memprof=f"rate=1e-3,seed=1,out={tmp_path}/p.json,snapshot=call,"
              f"snapshot_out={tmp_path}/s%n.json")
    # The first call's number is used up by nothing: the second is s1.
    assert res.stdout.splitlines() == ["[]", f"[{tmp_path}/s1.json]"]
    assert res.stderr == ("OCAMLMEMPROF: no snapshot on the program's call: "
                          "another domain is running\n")
    assert read((tmp_path / "s1.json").read_bytes())["snapshot"]["at"] == "call"


def test_sigusr1_keeps_its_default_without_signal(build, tmp_path):
    exe = build("snapshot_demand", threads=True)
    res = run(exe, "signal", str(tmp_path / "s%d.json"), check=False,
              memprof=f"rate=1e-3,seed=1,out={tmp_path}/p.json,snapshot=call")
    assert res.returncode == -signal.SIGUSR1


def test_unwritable_snapshot_out_is_reported_and_the_program_goes_on(build, tmp_path):
    exe = build("snapshot_demand", threads=True)
    bad = tmp_path / "missing" / "s%n.json"
    res = run(exe, "call", "-", memprof=f"rate=1e-3,seed=1,out={tmp_path}/p.json,"
              f"snapshot=call,snapshot_out={bad}")
    assert res.returncode == 0 and res.stdout.splitlines() == ["", ""]
    assert f"cannot write the allocation profile to '{tmp_path}/missing/s1.json'" in res.stderr
    assert res.stderr.count("no snapshot on the program's call: the snapshot's "
                            "process failed") == 2
    assert read((tmp_path / "p.json").read_bytes())["version"] == 3


def test_a_reaped_snapshot_is_judged_by_a_new_file(build, tmp_path):
    """With SIGCHLD ignored the system reaps the snapshot's process, and
    its status is lost: a file left from before does not count as written
    (/dev/full exists and cannot be written), a new one does."""
    exe = build("snapshot_reaped")
    spec = f"rate=1e-3,seed=1,out={tmp_path}/p.json,snapshot=call,snapshot_out="
    res = run(exe, memprof=spec + "/dev/full")
    assert res.stdout == "\n"
    assert "no snapshot on the program's call: the snapshot's process failed" in res.stderr
    stale = tmp_path / "s1.json"
    stale.write_text("left from an earlier run")
    res = run(exe, memprof=spec + f"{tmp_path}/s%n.json")
    assert res.stdout == f"{stale}\n" and res.stderr == ""
    assert read(stale.read_bytes())["snapshot"]["at"] == "call"
