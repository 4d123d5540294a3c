"""A program's own Gc.Memprof profiles beside the built-in tracker's
(memprof.c, design 8.11): with OCAMLMEMPROF=rate=... set, Gc.Memprof.start,
stop and discard work as in stock OCaml, each profile samples at its own
rate, and the built-in profile stays complete: it counts every word the
program allocates, including what the program's callbacks and the runtime's
sample records for them allocate.

coexist.exe runs two profiles of its own one after the other (rates A and
B, callbacks that allocate, stop, discard, a profile stopped and not
discarded) and prints its own counts and the words allocated at each of
its three allocation sites. Statistical checks use the 5.7-sigma bound of
upstream's statmemprof tests."""

import pytest

from runtime_testlib import binomial_bound_ok, profile, run, site_totals

SITES = {"site_a": "Coexist.alloc_a", "site_b": "Coexist.alloc_b", "site_c": "Coexist.alloc_c"}


def counts(stdout):
    return {k: int(v) for k, v in (line.split() for line in stdout.splitlines())}


def check_own_profiles(c, rate_a, rate_b):
    """The program's own profiles, as stock OCaml runs them."""
    assert binomial_bound_ok(c["a_samples"], c["a_words"], rate_a), c
    assert binomial_bound_ok(c["b_samples"], c["b_words"], rate_b), c
    assert c["a_late"] == 0 and c["b_alloc_after_stop"] == 0, c
    # None of B's blocks is kept: after its stop (not discarded), each one
    # tracked still gets its deallocation callback.
    assert c["b_tracked"] > 0 and c["b_dead"] == c["b_tracked"], c
    assert c["b_promoted"] == 0, c


@pytest.mark.parametrize("rates", [("1e-2", "1e-4", 1e-3), ("1e-4", "1e-2", 1e-1)],
                         ids=["own-higher-then-lower", "own-lower-then-higher"])
def test_own_profiles_beside_the_builtin_one(build, tmp_path, rates):
    rate_a, rate_b, rate_c = rates
    prof, _, res = profile(build("coexist"), 2, rate_a, rate_b, rate=rate_c, tmp=tmp_path)
    c = counts(res.stdout)
    check_own_profiles(c, float(rate_a), float(rate_b))
    samples = site_totals(prof)
    for key, fn in SITES.items():
        assert binomial_bound_ok(samples.get(fn, 0), c[key], rate_c), (fn, samples.get(fn), c[key])


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_builtin_profile_counts_every_word_beside_own_profiles(build, tmp_path, backend):
    exe = build("coexist", backend=backend)
    startup, _, _ = profile(exe, 0, "1e-2", "1e-3", rate=1, tmp=tmp_path, name="h.json")
    g0, t0 = startup["gc"], startup["totals"]
    prof, _, res = profile(exe, 1, "1e-2", "1e-3", rate=1, tmp=tmp_path)
    c = counts(res.stdout)
    check_own_profiles(c, 1e-2, 1e-3)
    samples, at_startup = site_totals(prof), site_totals(startup)
    for key, fn in SITES.items():
        # Less what the run with nothing to do has there: in bytecode, the
        # module's initialisation allocates each function's closure at the
        # function's definition.
        assert samples.get(fn, 0) - at_startup.get(fn, 0) == c[key], (fn, samples.get(fn), c[key])
    g, t = prof["gc"], prof["totals"]
    assert g["minor_words"] - t["minor_samples"] == g0["minor_words"] - t0["minor_samples"]
    assert (g["major_words"] - g["promoted_words"] - t["major_samples"]
            == g0["major_words"] - g0["promoted_words"] - t0["major_samples"])


def test_own_profile_is_not_refused(build, tmp_path):
    # Gc.Memprof.start under OCAMLMEMPROF used to fail with "already started".
    prof, _, res = profile(build("sample_sequence"), "0.01", rate=1e-3, tmp=tmp_path)
    assert len(res.stdout.splitlines()) > 100 and res.stderr == ""
    assert prof["totals"]["samples"] > 0


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_seeded_own_profile_samples_the_same_with_the_builtin_one(build, tmp_path, backend):
    # With a seed, the program's own samples depend only on the seed and its
    # allocations: the built-in tracker running beside it changes none.
    exe = build("sample_sequence", backend=backend)
    alone = run(exe, "0.01", memprof="seed=7").stdout.splitlines()
    beside = run(exe, "0.01", memprof=f"rate=1e-2,seed=7,out={tmp_path / 'p.json'}").stdout.splitlines()
    assert len(alone) > 100
    assert beside == alone


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_debug_runtime_assertions_hold(build, tmp_path, backend):
    # The debug runtime checks memprof's invariants (triggers, limits,
    # tables) as it goes: both profiles, their stops and discards, the
    # callbacks' allocations, at rates where nearly every allocation is
    # sampled by one profile or the other.
    exe = build("coexist", backend=backend, variant="d")
    for rate_c in (1, 1e-1):
        prof, _, res = profile(exe, 1, "1e-1", "1", rate=rate_c, tmp=tmp_path,
                               runparam="v=0")
        c = counts(res.stdout)
        assert c["a_late"] == 0 and c["b_alloc_after_stop"] == 0, c
        assert c["b_dead"] == c["b_tracked"] > 0, c
