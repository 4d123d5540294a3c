"""Live at the peak and the heap statistics in the profile (format
document, "The peak"): a program whose phases hold their chunks until the
phase ends has the same allocation and live set at exit as one that drops
them, and a much higher peak at the site that holds them; the peak is
deterministic for a seed; it is at least the live set at exit; and the
profile's heap_words and top_heap_words are those OCAMLRUNPARAM=v=0x400
prints for the unprofiled run.
"""

import pytest

from runtime_testlib import profile, run, site_totals

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


def test_without_a_major_cycle_the_peak_is_the_live_set_at_exit(build, tmp_path):
    exe = build("retain")
    prof, _, _ = profile(exe, "keep", rate=1e-2, tmp=tmp_path, runparam="s=8M")
    if prof["gc"]["major_collections"] != 0:
        pytest.skip("retain.ml completed a major cycle")
    assert [s["peak_live_samples"] for s in prof["stacks"]] == \
        [s["live_samples"] for s in prof["stacks"]]


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
