"""Power planning: what a benchmark's settings can detect, and what it would
take to detect more (`memprof-ci plan`).

A site's test has more power the more samples it has, and its samples grow
in proportion to rate × seeds.  From a baseline this module computes, for the
sites holding at least `share` of a benchmark's allocation, the minimum
detectable increase (80% power, the level Holm starts from: alpha / m over
the m sites of the run), and the smallest factor f on rate × seeds that
brings the worst of them to `target`.  It suggests the two ways of paying
for f (a higher rate, or more seeds) with their expected cost per check.

Invariants: nothing is run; the baseline's own counts are the only input,
scaled by f on both sides (a new baseline would be recorded at the new
settings); the suggested rate is a 1, 2 or 5 × 10^k at least rate × f and at
most 1; costs use the baseline's recorded run time and overhead, with the
overhead in proportion to the rate, and are None when it recorded none.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..inputs.manifest import exact_form
from .stats import POWER, min_detectable_increase

MAX_FACTOR = 1e4
DETECT_POWER = 0.90   # the power a manifest's `detect` is planned for
RATE_CAP = 1e-2       # the plan raises the rate up to this, then adds seeds


def site_mdes(base, share: float, alpha: float, family: int, factor: float = 1.0,
              power: float = POWER) -> list:
    """[(site, share, mde)] for the sites with at least `share` of the
    baseline's samples, largest first, at `factor` times the exposure."""
    total = base.total_samples
    sites = sorted(((k, s.samples) for k, s in base.sites.items()
                    if total and s.samples / total >= share), key=lambda x: -x[1])
    if not sites:
        return []
    n = np.array([max(1, round(2 * c * factor)) for _, c in sites])
    mde = min_detectable_increase(n, 0.5, alpha / max(1, family), power)
    return [(k, c / total, float(m)) for (k, c), m in zip(sites, mde)]


def family_size(bases) -> int:
    """Holm's family in a check of these baselines: every alloc site and
    every site with live samples, except those counted per allocation
    point (no test)."""
    n = 0
    for x in bases:
        live = sum(1 for s in x.sites.values() if s.live_samples)
        if x.points is None:
            n += len(x.sites) + live
        elif x.points.live_missing is not None:
            n += live
    return n


def stated_power(bench, base, family: int, share: float) -> str:
    """One line: what the benchmark's settings detect (80% power) at its
    largest site and at every site holding `share`, from its baseline."""
    if base.rate == 1:
        return f"{bench.name}: counted exactly; fails at +{bench.min_effect:.0%} at a site"
    if base.points is not None:
        return (f"{bench.name}: counted exactly per allocation point; fails at "
                f"+{bench.exact_min_effect:.0%} at a site holding >= {bench.min_share:.1%} "
                f"(no test: the counts are exact)")
    m = site_mdes(base, share, bench.alpha, family)
    if not m:
        return f"{bench.name}: no site holds {share:.0%} of the allocation"
    worst = max(x[2] for x in m)
    return (f"{bench.name}: detects +{m[0][2]:.1%} at its largest site and "
            f"+{worst:.1%} at every site holding >= {share:.0%} (80% power)")


def needed_factor(base, share: float, alpha: float, family: int, target: float,
                  power: float = POWER) -> float | None:
    """Least factor (on a 2^(1/4) grid) at which every site holding `share`
    has an MDE <= target, or None beyond MAX_FACTOR."""
    f = 1.0
    while f <= MAX_FACTOR:
        m = site_mdes(base, share, alpha, family, f, power)
        if not m or max(x[2] for x in m) <= target:
            return f
        f *= 2 ** 0.25
    return None


def nice_rate_at_least(x: float) -> float:
    k = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        v = float(f"{m}e{k}")
        if v >= x * (1 - 1e-9):
            return min(1.0, v)
    return 1.0


def plan_benchmark(bench, base, family: int, target: float, share: float) -> dict:
    now = site_mdes(base, share, bench.alpha, family)
    f = needed_factor(base, share, bench.alpha, family, target)
    out = {"benchmark": bench.name, "rate": bench.rate, "seeds": len(bench.seeds),
           "sites": [{"site": k, "share": s, "mde": m} for k, s, m in now],
           "factor": f, "suggest_rate": None, "suggest_seeds": None,
           "cost_now_s": None, "cost_rate_s": None, "cost_seeds_s": None}
    if f is None:
        return out
    rate = nice_rate_at_least(bench.rate * f) if f > 1 else bench.rate
    seeds = math.ceil(len(bench.seeds) * f - 1e-9)
    out["suggest_rate"], out["suggest_seeds"] = rate, seeds
    if rate / bench.rate < f * (1 - 1e-9):
        out["suggest_rate"] = None   # rate 1 is not enough on its own
    ov = (base.meta or {}).get("overhead") or {}
    t_off, est = ov.get("median_off_s"), ov.get("estimate")
    if t_off is not None and est is not None:
        def cost(r, k):
            return k * t_off * (1 + max(est, 0.0) * r / bench.rate)
        out["cost_now_s"] = cost(bench.rate, len(bench.seeds))
        if out["suggest_rate"]:
            out["cost_rate_s"] = cost(rate, len(bench.seeds))
        out["cost_seeds_s"] = cost(bench.rate, seeds)
    return out


def render(plans: list, target: float, share: float) -> str:
    def t(x):
        return "-" if x is None else f"{x:.1f}s"
    lines = [f"Minimum detectable increase (80% power) of the sites holding >= {share:.0%} "
             f"of a benchmark's allocation, and what brings the worst to {target:.0%}:", ""]
    head = ["benchmark", "sites", "largest site MDE", "worst MDE", "rate x seeds needed",
            "or rate (seeds kept)", "or seeds (rate kept)", "profiling time now / then"]
    rows = []
    for p in plans:
        m = p["sites"]
        if not m:
            rows.append([p["benchmark"], "0", "-", "-", "-", "-", "-", "-"])
            continue
        worst = max(x["mde"] for x in m)
        f = p["factor"]
        then = p["cost_rate_s"] if p["cost_rate_s"] is not None else p["cost_seeds_s"]
        rows.append([p["benchmark"], str(len(m)), f"{m[0]['mde']:.1%}", f"{worst:.1%}",
                     "unreachable" if f is None else f"x{f:.2f}",
                     f"{p['suggest_rate']:g}" if p["suggest_rate"] else "-",
                     str(p["suggest_seeds"]) if p["suggest_seeds"] else "-",
                     f"{t(p['cost_now_s'])} / {t(then)}"])
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(x).ljust(a) for x, a in zip(r, w)).rstrip()
    lines += [fmt(head), fmt(["-" * a for a in w])] + [fmt(r) for r in rows]
    lines.append("")
    lines.append("Times are the seeds' profiled runs, from each baseline's recorded run time "
                 "and overhead (overhead in proportion to the rate); a new rate or seed list "
                 "needs `memprof-ci update-baselines`.")
    return "\n".join(lines) + "\n"


def plan_sampling(bench, pilot, family: int) -> dict | None:
    """The rate and seeds that catch a `bench.detect` increase with
    DETECT_POWER at every site holding min_share, from a pilot Aggregate
    taken with the manifest's settings: the rate first (up to RATE_CAP, a
    1, 2 or 5 x 10^k), then more seeds, at most detect_cost times the
    manifest's.  None without `detect`.  "reachable" says whether the
    budget sufficed (if not, the plan is the budget's best)."""
    if bench.detect is None or bench.rate == 1:
        return None
    f = needed_factor(pilot, bench.min_share, bench.alpha, family, bench.detect, DETECT_POWER)
    reachable = f is not None
    f = MAX_FACTOR if f is None else f
    rate = bench.rate if f <= 1 else min(max(bench.rate, RATE_CAP),
                                          nice_rate_at_least(bench.rate * f))
    k0 = len(bench.seeds)
    want = math.ceil(k0 * f * bench.rate / rate - 1e-9)
    k = max(k0, min(want, math.floor(k0 * bench.detect_cost)))
    reachable = reachable and k >= want
    seeds = list(bench.seeds) + [max(bench.seeds) + i for i in range(1, k - k0 + 1)]
    return {"detect": bench.detect, "power": DETECT_POWER, "share": bench.min_share,
            "rate": rate, "seeds": seeds, "from_rate": bench.rate,
            "from_seeds": list(bench.seeds), "factor": f, "reachable": reachable,
            "family": family}


def planned(bench, plan: dict | None):
    """The benchmark as its baseline's plan runs it, when the plan was made
    for this manifest's mode, detect, rate and seeds: counted exactly when
    an "auto" benchmark's plan chose it (exact_or_sampled.py), else at the plan's
    rate and seeds.  Otherwise the benchmark unchanged (a stale plan is then
    reported as a settings mismatch by the baseline's compatibility check)."""
    if (not plan or plan.get("detect") != bench.detect
            or plan.get("from_rate") != bench.rate
            or plan.get("from_seeds") != list(bench.seeds)
            or ("mode" in plan) != (bench.mode == "auto")
            or (bench.detect is None and plan.get("mode") != "exact")):
        return bench
    if plan.get("mode") == "exact":
        return exact_form(bench)
    return dataclasses.replace(bench, mode="sampled", rate=plan["rate"],
                               seeds=list(plan["seeds"]))


def plan_line(bench, plan: dict) -> str:
    how = (f"rate {plan['rate']:g} x {len(plan['seeds'])} seed(s)"
           if (plan["rate"], plan["seeds"]) != (plan["from_rate"], plan["from_seeds"])
           else "the manifest's settings suffice")
    tail = "" if plan["reachable"] else (f"; NOT reached within detect_cost "
                                         f"{bench.detect_cost:g}: raise it or `detect`")
    return (f"{bench.name}: planned {how} to detect +{plan['detect']:.0%} with "
            f"{plan['power']:.0%} power at sites holding >= {plan['share']:.1%}{tail}")

