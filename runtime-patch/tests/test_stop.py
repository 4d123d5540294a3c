"""OCAMLMEMPROF stop=N (memprof_stop.c): the program ends at the first
safe point after its N-th minor collection, with status 0, whether the
tracker runs or not, and a profile written there says `stop` and counts
exactly N collections, with the same GC counters at any rate."""

import json

import pytest

from runtime_testlib import run

SIZE = 3_000_000     # about 9 M minor words: some 36 collections at s=256k


def profile(exe, tmp_path, spec, name="p.json"):
    res = run(exe, SIZE, memprof=f"{spec},out={name}", cwd=tmp_path)
    return res, json.loads((tmp_path / name).read_bytes())


def test_whole_run_for_reference(build, tmp_path):
    res, prof = profile(build("stop_point"), tmp_path, "rate=1e-3,seed=1")
    assert res.stdout.startswith("finished ")
    assert "stop" not in prof["config"]
    assert prof["gc"]["minor_collections"] > 20


@pytest.mark.parametrize("k", [1, 5, 12])
def test_tracker_off_stops_silently_with_status_0(build, k):
    res = run(build("stop_point"), SIZE, memprof=f"stop={k}")
    assert res.returncode == 0 and res.stdout == "" and res.stderr == ""


@pytest.mark.parametrize("k", [1, 5, 12])
def test_profile_of_a_stopped_run_counts_exactly_n_collections(build, tmp_path, k):
    exe = build("stop_point")
    res, prof = profile(exe, tmp_path, f"rate=1e-3,seed=1,stop={k}")
    assert res.stdout == "" and res.stderr == ""
    assert prof["config"]["stop"] == k
    assert prof["gc"]["minor_collections"] == k
    # The same point of the program whatever the rate: the GC counters do
    # not depend on sampling (memprof_stop.c, design 2).
    _, other = profile(exe, tmp_path, f"rate=0.5,seed=7,points=on,stop={k}", "q.json")
    assert other["gc"] == prof["gc"]


def test_stop_past_the_end_changes_nothing(build, tmp_path):
    res = run(build("stop_point"), SIZE, memprof="stop=100000")
    assert res.stdout.startswith("finished ")


def test_stop_in_bytecode(build, tmp_path):
    res, prof = profile(build("stop_point", backend="bytecode"), tmp_path,
                        "rate=1e-3,seed=1,stop=3")
    assert res.stdout == "" and prof["gc"]["minor_collections"] == 3
