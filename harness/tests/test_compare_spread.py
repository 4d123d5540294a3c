"""`compare` of two profile sets, which carry no dithered schedule runs:
the GC counters that follow the schedule are judged against the spread of
both sides' runs where each side's runs saw several schedules (a program
with several domains or systhreads), else with the fixed timing tolerance.
The real-program cases (the peak, a held phase, a leak) are in
benchmarks/tests/test_compare_runs.py."""

from memprof_ci.sites.grouping import Aggregate
from memprof_ci.decide.verdict import compare_report

GC = {"minor_words": 1e8, "major_words": 6e5, "promoted_words": 6e5, "minor_collections": 70,
      "major_collections": 20, "compactions": 0, "top_heap_words": 163840}


def side(promoted):
    """A profile set of one run per value of promoted_words (each run its
    own schedule, as with two domains)."""
    runs = [dict(GC, promoted_words=p, major_words=p + 66) for p in promoted]
    mean = {k: sum(r[k] for r in runs) / len(runs) for k in GC}
    return Aggregate(name="d", rate=1e-4, seeds=list(range(len(runs))), frames=16,
                     grouping="function", gc=mean, gc_runs=runs)


def gc_outcome(a, b):
    rep = compare_report([("d", a, b)], [], {"alpha": 0.01, "min_effect": 0.05,
                                             "exact_min_effect": 0.01, "min_share": 0.005},
                         0.01, 0.10)
    return rep["benchmarks"]["d"]["checks"]["gc_totals"]["outcome"], rep["benchmarks"]["d"]["gc"]


def test_runs_that_spread_judge_the_timing_counters():
    # Unchanged code: a side's runs spread by about 10%, so two sides'
    # means differ by 11%, past the fixed 10% tolerance but not the spread.
    outcome, rows = gc_outcome(side([5.4e5, 6.0e5, 6.6e5]), side([6.0e5, 6.66e5, 7.3e5]))
    assert outcome == "passed", rows
    promoted = next(g for g in rows if g["counter"] == "promoted_words")
    assert promoted["spread_from"] == "runs" and promoted["status"] == "~"
    # A large change stays a regression.
    outcome, rows = gc_outcome(side([5.9e5, 6.0e5, 6.1e5]), side([9.0e5, 9.1e5, 9.2e5]))
    assert outcome == "failed", rows


def test_runs_of_one_schedule_keep_the_fixed_tolerance():
    outcome, rows = gc_outcome(side([6.0e5] * 3), side([6.7e5] * 3))
    assert outcome == "failed"
    assert all("spread_from" not in g for g in rows)


def with_schedule(agg, promoted):
    """agg with a recorded spread of dithered schedules, as a baseline has."""
    agg.meta["schedule"] = {"gc": [dict(GC, promoted_words=p, major_words=p + 66)
                                   for p in promoted]}
    return agg


def test_a_concurrent_benchmark_needs_its_timing_tolerance_past_a_recorded_spread():
    # Two domains: the baseline's dithered schedules spread by 1.6%, but the
    # OS's interleaving at another load moves promoted words by 8%. Judged
    # against the spread alone that is a regression; a concurrent benchmark
    # must also pass its gc_timing_tolerance (0.10 here).
    base = with_schedule(side([6.2e5, 6.2e5, 6.6e5]),
                         [6.19e5, 6.3e5, 6.4e5, 6.5e5, 6.57e5, 6.35e5, 6.45e5] * 2)
    outcome, rows = gc_outcome(base, side([6.8e5, 6.9e5, 7.0e5]))
    assert outcome == "passed", rows
    # Past the tolerance it fails.
    outcome, rows = gc_outcome(base, side([7.6e5, 7.7e5, 7.8e5]))
    assert outcome == "failed", rows
