"""With a seed set, sample counts follow Binomial(words, rate) for minor,
major and marshalled allocations, within the 5.7-sigma bound upstream's
statmemprof tests use (a false failure rate of about 1e-8 per check)."""

import pytest

from runtime_testlib import binomial_bound_ok, run


@pytest.mark.parametrize("rate", [1e-1, 1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("seed", [1, 2])
def test_counts_within_binomial_bounds(build, rate, seed):
    res = run(build("distribution"), rate, memprof=f"seed={seed}")
    rows = {k: (int(w), int(n)) for k, w, n in (l.split() for l in res.stdout.splitlines())}
    assert set(rows) == {"minor", "major", "marshal"}
    for kind, (words, samples) in rows.items():
        assert binomial_bound_ok(samples, words, rate), (kind, words, samples, rate)
