"""Live at the peak and the heap statistics in the profile (format
document, "The peak"): a program whose phases hold their chunks until the
phase ends has the same allocation and live set at exit as one that drops
them, and a much higher peak at the site that holds them; the peak is
deterministic for a seed; it is at least the live set at exit; blocks
count until the GC finds them dead; the trace of the same run gives the
same peak; and the profile's heap_words and top_heap_words are those
OCAMLRUNPARAM=v=0x400 prints for the unprofiled run.
"""

import sys

import pytest

from runtime_testlib import ROOT, profile, read_profile, run, site_totals

sys.path.insert(0, str(ROOT / "harness"))
from memprof_ci.inputs.ctf_profile import load_ctf  # noqa: E402

ARGS = (6, 1500)   # phases, chunks of 1000 words per phase
RATE = 1e-3


def peak_and_alloc(prof, fn="Peak_phase.chunk"):
    peak = site_totals(prof, "peak_live_samples").get(fn, 0)
    return peak, site_totals(prof).get(fn, 0), site_totals(prof, "live_samples").get(fn, 0)


def test_holding_a_phase_raises_the_peak_at_the_holding_site(build, tmp_path):
    exe = build("peak_phase")
    held, _, _ = profile(exe, *ARGS, "hold", rate=RATE, tmp=tmp_path, name="h.json")
    drop, _, _ = profile(exe, *ARGS, "drop", rate=RATE, tmp=tmp_path, name="d.json")
    hp, ha, hl = peak_and_alloc(held)
    dp, da, dl = peak_and_alloc(drop)
    # The same allocation at the site (the held run's list cells move the
    # sample points a little) and the same (empty) live set at exit.
    assert abs(ha - da) <= 5 * (ha + da) ** 0.5 and hl == dl == 0, (ha, da, hl, dl)
    # A held phase keeps 1.5M words: about 1500 samples at 1e-3. Each
    # collection of a dropped run finds the chunks dead within a cycle or two.
    assert hp >= 1000, hp
    assert hp >= 5 * max(dp, 1), (hp, dp)


def test_peak_counts_are_consistent_and_deterministic(build, tmp_path):
    exe = build("peak_phase")
    a, _, _ = profile(exe, *ARGS, "hold", rate=RATE, seed=7, tmp=tmp_path, name="a.json")
    b, _, _ = profile(exe, *ARGS, "hold", rate=RATE, seed=7, tmp=tmp_path, name="b.json")
    assert [s["peak_live_samples"] for s in a["stacks"]] == \
        [s["peak_live_samples"] for s in b["stacks"]]
    t = a["totals"]
    assert t["peak_live_samples"] == sum(s["peak_live_samples"] for s in a["stacks"])
    assert all(s["peak_live_samples"] <= s["samples"] for s in a["stacks"])
    assert t["peak_live_samples"] >= t["live_samples"]


def test_the_peak_and_gc_counters_do_not_depend_on_the_exits_decision(build, tmp_path):
    """The peak is frozen and the GC counters read before the exit decides
    what is live (walk, two cycles, or nothing with live=off), so the
    harness's dithered runs, which read only those, can skip the walk.
    The held run's last phase is still uncollected at exit: the walk and
    the cycles find it dead, which must not move the peak."""
    exe = build("peak_phase")
    profs = {live: profile(exe, *ARGS, "hold", rate=RATE, seed=5, live=live, tmp=tmp_path,
                           name=f"{live}.json")[0]
             for live in ("walk", "gc", "off")}
    walk = profs["walk"]
    assert profs["off"]["totals"]["live_samples"] > walk["totals"]["live_samples"]
    for p in profs.values():
        assert [s["peak_live_samples"] for s in p["stacks"]] == \
            [s["peak_live_samples"] for s in walk["stacks"]]
        assert p["totals"]["peak_live_samples"] == walk["totals"]["peak_live_samples"] > 0
        assert p["gc"] == walk["gc"]


def test_the_peak_counts_blocks_not_yet_found_dead(build, tmp_path):
    """retain drop with a minor heap that holds every block: nothing dies
    before the final Gc.full_major, so the peak is just after the last
    allocation, every sample live, although none is live at exit."""
    exe = build("retain")
    prof, _, _ = profile(exe, "drop", rate=1e-2, tmp=tmp_path, runparam="s=8M")
    peak = site_totals(prof, "peak_live_samples")["Retain.make_block"]
    allocated = site_totals(prof)["Retain.make_block"]
    live = site_totals(prof, "live_samples").get("Retain.make_block", 0)
    assert allocated > 5000 and peak == allocated and live == 0, (peak, allocated, live)


@pytest.mark.parametrize("prog,args,rate", [
    ("peak_phase", ARGS + ("hold",), RATE),
    ("peak_phase", ARGS + ("drop",), RATE),
    ("peak_tie", ("6",), 1.0),
])
def test_the_trace_of_the_run_has_the_same_peak(build, tmp_path, prog, args, rate):
    """memtrace's tools take the peak from the trace's events (memtrace_viewer:
    running Σ alloc − collect, first maximum); the harness's CTF reader does
    the same, and for a single domain it equals the profile's, per stack."""
    out, tr = tmp_path / "p.json", tmp_path / "t.ctf"
    run(build(prog), *args, cwd=tmp_path, memprof=f"rate={rate},seed=3,out={out},trace={tr}")
    prof = read_profile(out.read_bytes())
    trace = load_ctf(str(tr))
    want = site_totals(prof, "peak_live_samples")
    got = site_totals({"stacks": trace.stacks}, "peak_live_samples")
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in want.items() if v}
    assert trace.totals["peak_live_samples"] == prof["totals"]["peak_live_samples"] > 0


@pytest.mark.parametrize("mode", ["hold", "drop"])
def test_heap_words_are_the_unprofiled_runs(build, tmp_path, mode):
    exe = build("peak_phase")
    res = run(exe, *ARGS, mode, runparam="v=0x400")
    stats = dict(line.split(": ") for line in res.stderr.splitlines() if ": " in line)
    want = {k: int(stats[k]) for k in ("heap_words", "top_heap_words")}
    for seed in (1, 2, 3):
        prof, _, _ = profile(exe, *ARGS, mode, rate=RATE, seed=seed, tmp=tmp_path,
                             name=f"{mode}{seed}.json")
        got = {k: prof["gc"][k] for k in want}
        assert got == want, (seed, got, want)


def test_a_tie_keeps_the_first_peak(build, tmp_path):
    """peak_tie: every round reaches the same live total with one array at
    `first` (odd rounds) or `second` (even rounds); the first round is the
    peak, the last (even) round's tie does not replace it."""
    prof, _, _ = profile(build("peak_tie"), "6", rate=1.0, tmp=tmp_path)
    peak = site_totals(prof, "peak_live_samples")
    assert peak.get("Peak_tie.first") == 1001 and peak.get("Peak_tie.second", 0) == 0, peak
    alloc = site_totals(prof)
    assert alloc["Peak_tie.first"] == alloc["Peak_tie.second"] == 3 * 1001, alloc
