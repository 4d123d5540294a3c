"""Exact or sampled: the choice for a benchmark of `mode = "auto"`.

The rule: a benchmark is counted exactly (rate 1, one run, every word)
when that run costs at most `exact_limit` (default 2) times the CPU time of
the sampled runs a check would otherwise make (its seeds at its rate), and
is sampled otherwise.  A benchmark that counts its allocation points
(`points`, on by default, where the runtime counts them: native code) is
sampled without this measurement: the points already make its alloc and
live checks exact (point_sites.py), and rate 1 is left to a benchmark that
asks for exact stacks (`mode = "exact"`).  Counting exactly costs a callback per allocated
block, so programs of few, large blocks count exactly for little and
programs of many small blocks do not (benchmarks/RESULTS.md, "Exact mode's
cost").  With the default limit, a check of a suite takes at most about
twice its sampled time.

Invariants:
- the choice is made once, by update-baselines, and recorded with its
  figures in the baseline's config.plan (`mode`, `exact_cost`,
  `exact_limit`); check and profile read it from the trusted baseline
  (plan.planned), so a check's mode never depends on a timing of its own;
- costs are CPU time (user + system of the benchmark's processes), which a
  busy machine disturbs less than wall time;
- the rate-1 run is stopped once it passes its limit (RLIMIT_CPU), so a
  benchmark too costly to count costs update-baselines at most its limit
  once more; any other failure of that run is an error, as for every run;
- the rate-1 run that fits is the exact measurement itself: the benchmark
  is not run again;
- a benchmark keeps the mode of the baseline it replaces while its cost is
  within STICKY (10%) of the limit on either side: a cost measured near
  the limit does not flip the mode, and with it the baseline's rate,
  seeds and site table, from one recording to the next (a cost that
  varies more than that still can: the leak benchmark's came out at 1.90,
  2.06 and over 2.2 with a limit of 2 on one quiet machine in a day).
"""

from __future__ import annotations

import dataclasses

from . import runner
from ..errors import CpuLimit
from ..inputs.manifest import exact_form

MIN_CPU = 0.01
STICKY = 1.1


def fits(exact_cpu: float | None, sampled_cpu: float, limit: float) -> bool:
    """The rule: one exact run within `limit` times the sampled runs."""
    return limit > 0 and exact_cpu is not None and exact_cpu <= limit * sampled_cpu


def effective_limit(limit: float, previous: str | None) -> float:
    """The limit a benchmark whose last baseline chose `previous` ("exact",
    "sampled" or None) is held to: widened toward its previous mode."""
    if previous == "exact":
        return limit * STICKY
    if previous == "sampled":
        return limit / STICKY
    return limit


def choose(bench, sampled, profiles_dir: str, previous: str | None = None):
    """(plan fields, exact Aggregate or None) for an "auto" benchmark whose
    sampled measurement is `sampled` (runner.collect's, with its CPU time)
    and whose baseline being replaced chose mode `previous` (or None).
    The plan fields say the mode chosen and why.  A benchmark whose
    sampled measurement counted its allocation points (`points`) is
    sampled: its alloc and live checks are exact without a run at rate 1."""
    if bench.points and sampled.points is not None:
        return ({"mode": "sampled", "exact_cost": None, "exact_limit": bench.exact_limit,
                 "points": True, "from_rate": bench.rate, "from_seeds": list(bench.seeds)},
                None)
    # A run too short for the clock's resolution counts as 10 ms.
    sampled_cpu = max(float(sampled.meta.get("cpu_seconds") or 0.0), MIN_CPU)
    limit = effective_limit(bench.exact_limit, previous)
    exact, cost, agg = exact_form(bench), None, None
    if limit > 0:
        try:
            agg = runner.collect(exact, profiles_dir, cpu_limit=limit * sampled_cpu)
            cost = agg.meta["cpu_seconds"] / sampled_cpu
        except CpuLimit:
            agg = None
    chosen = fits(None if agg is None else agg.meta["cpu_seconds"], sampled_cpu, limit)
    fields = {"mode": "exact" if chosen else "sampled",
              "exact_cost": None if cost is None else round(cost, 3),
              "exact_limit": bench.exact_limit, "from_rate": bench.rate, "from_seeds": list(bench.seeds)}
    return fields, (agg if chosen else None)


def describe(name: str, fields: dict) -> str:
    """One line for update-baselines' output."""
    if fields.get("points"):
        return (f"{name}: sampled, with every allocation point counted exactly (points): "
                f"no run at rate 1")
    cost, limit = fields.get("exact_cost"), fields["exact_limit"]
    how = ("over the limit (stopped)" if cost is None else f"{cost:.2f}x the sampled runs")
    kept = (cost is not None and (fields["mode"] == "exact") != (cost <= limit))
    return (f"{name}: {'counted exactly' if fields['mode'] == 'exact' else 'sampled'}: "
            f"one run at rate 1 costs {how}, limit {limit:g}x (exact_limit)"
            + (f"; the last baseline's mode, kept within {STICKY - 1:.0%} of the limit"
               if kept else ""))
