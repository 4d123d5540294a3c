"""Counted runs on a prefix of the run (overhead.stop_for, OCAMLMEMPROF
stop=K): where a benchmark without `overhead_args` is cut, that the cut
is recorded, validated when read back and said in the reason, and, with
the real runtime, that both sides end at the same collection and cost
less than the whole run."""

import os
import subprocess
import types

import pytest
from harness_testlib import make_profile, to_version3, write_json

from memprof_ci.errors import InputError
from memprof_ci.inputs.profile import load_profile
from memprof_ci.measure import overhead
from memprof_ci.text import fmt

W = overhead.COUNT_WORDS


def bench(**kw):
    d = dict(overhead_args=None, concurrent=False)
    d.update(kw)
    return types.SimpleNamespace(**d)


def agg(collections, words):
    gc = {"minor_collections": collections, "minor_words": words}
    return types.SimpleNamespace(gc=gc, gc_runs=[gc])


@pytest.mark.parametrize("b,a,want", [
    (bench(), agg(1000, 10 * W), {"after": 100, "of": 1000}),
    (bench(), agg(1000, 10 * W + 1), {"after": 100, "of": 1000}),
    (bench(), agg(1000, 3 * W), {"after": 334, "of": 1000}),
    (bench(), agg(1000, W), None),                 # at most W words: whole run
    (bench(), agg(1, 100 * W), None),              # one collection: nothing to cut
    (bench(), agg(3, int(1.2 * W)), None),         # K would be N
    (bench(overhead_args=["10"]), agg(1000, 10 * W), None),
    (bench(concurrent=True), agg(1000, 10 * W), None),
    (bench(), None, None),
])
def test_where_the_counted_runs_stop(b, a, want):
    assert overhead.stop_for(b, lambda: a) == want


def test_no_profile_is_asked_for_where_no_cut_is_possible():
    """A check of the overhead alone runs no seed run for a benchmark that
    has `overhead_args` or is concurrent."""
    def boom():
        raise AssertionError("profiles asked for")
    assert overhead.stop_for(bench(overhead_args=[]), boom) is None
    assert overhead.stop_for(bench(concurrent=True), boom) is None
    assert overhead.stop_for(bench(), None) is None


def test_the_off_side_carries_only_the_stop():
    b = types.SimpleNamespace(env={"X": "1"}, profiled_rate=1e-4, seeds=[7], frames=16)
    stop = {"after": 5, "of": 50}
    assert overhead.counted_env(b, False, stop)["OCAMLMEMPROF"] == "stop=5"
    on = overhead.counted_env(b, True, stop)["OCAMLMEMPROF"]
    # A prefix's profiled side does not walk the heap at the stop.
    assert on.endswith(",live=off,stop=5")
    assert "OCAMLMEMPROF" not in overhead.counted_env(b, False)
    whole = overhead.counted_env(b, True)["OCAMLMEMPROF"]
    assert "stop=" not in whole and "live=" not in whole


EV = {k: 10 for k in ("Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw")}


def counted(stop):
    return {"args": [], "model": "m", "concurrent": False, "threads": "disabled",
            "stop": stop, "off": [dict(EV)], "on": [dict(EV, Ir=12)]}


@pytest.mark.parametrize("stop,refusal", [
    (None, None), ({"after": 1, "of": 2}, None),
    ({"after": 2, "of": 2}, "after must be at least 1 and below of"),
    ({"after": 0, "of": 2}, "after must be at least 1"),
    ({"after": 1}, r"stop.of"), ("5", "must be null or an object"),
])
def test_a_recorded_stop_is_validated(stop, refusal):
    if refusal is None:
        assert overhead._parse_counted(counted(stop), "c")["stop"] == stop
    else:
        with pytest.raises(InputError, match=refusal):
            overhead._parse_counted(counted(stop), "c")


def test_a_stopped_runs_profile_is_not_compared(tmp_path):
    """A profile with config.stop describes a prefix of its run: refused in
    one line naming the key."""
    doc = to_version3(make_profile([([("f", "a.ml", 1)], 10, 2)]))
    doc["config"]["stop"] = 12
    with pytest.raises(InputError, match=r"config.stop 12: the run was stopped early") as e:
        load_profile(write_json(tmp_path / "p.json", doc))
    assert "\n" not in str(e.value)


def test_the_figure_says_it_covers_a_prefix():
    """The status table's cell says "prefix"; the full line says which
    part and that the exit's walk is not in it.  A whole run's says
    neither."""
    rec = overhead.parse_record({"measure": "cycles", "counted": counted(
        {"after": 37, "of": 2765})}, "r")
    assert fmt.overhead_brief(rec).endswith(" cycles, counted, prefix")
    assert ("on the first 37 of 2,765 minor collections, without the exit's walk"
            in fmt.overhead_text(rec))
    whole = overhead.parse_record({"measure": "cycles", "counted": counted(None)}, "r")
    assert "prefix" not in fmt.overhead_brief(whole)
    assert "collections" not in fmt.overhead_text(whole)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
PROGRAM = """\
let () =
  let keep = ref [] in
  for i = 1 to int_of_string Sys.argv.(1) do
    let p = (i, i) in
    if i land 255 = 0 then keep := p :: !keep
  done;
  print_int (List.length !keep)
"""


@pytest.mark.needs_runtime
def test_a_prefix_is_counted_on_both_sides_and_costs_less(tmp_path, monkeypatch):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    (tmp_path / "p.ml").write_text(PROGRAM)
    subprocess.run([OCAMLOPT, "-o", "p.exe", "p.ml"], cwd=tmp_path, check=True, timeout=300)
    b = types.SimpleNamespace(command=["./p.exe", "3000000"], overhead_args=None, concurrent=False,
                              env={}, profiled_rate=1e-3, seeds=[1], frames=16, cwd=str(tmp_path),
                              timeout=60, name="p", overhead_time_fails=False)
    out = tmp_path / "whole.json"
    env = dict(os.environ, OCAMLMEMPROF=f"rate=1e-3,seed=1,out={out}")
    subprocess.run(["./p.exe", "3000000"], cwd=tmp_path, env=env, check=True, timeout=60,
                   stdout=subprocess.DEVNULL)
    gc = load_profile(str(out)).gc
    monkeypatch.setattr(overhead, "COUNT_WORDS", gc["minor_words"] // 4)
    whole = overhead.count_sides(b)
    rec = overhead.measure(b, str(tmp_path / "w"), profiles=lambda: agg(
        gc["minor_collections"], gc["minor_words"]))
    stop = rec["counted"]["stop"]
    assert stop["of"] == gc["minor_collections"] and 1 <= stop["after"] < stop["of"] // 2
    assert f"first {stop['after']:,} of {stop['of']:,} minor collections" in \
        rec["obtained"]["reason"] and "without the exit's walk" in rec["obtained"]["reason"]
    for side in ("off", "on"):
        assert rec["counted"][side][0]["Ir"] < 0.5 * whole[side][0]["Ir"], side
    assert rec["estimate"] > 0
    # Read back, the record keeps its stop.
    assert overhead.parse_record(rec, "r")["counted"]["stop"] == stop
