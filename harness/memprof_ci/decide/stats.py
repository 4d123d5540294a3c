"""Statistical tests for allocation, retention, GC-total and overhead checks.

The method is documented with formulas in harness/STATISTICS.md.  In short:
per-site sample counts are Poisson with mean exposure x words, so conditional
on the total n = c + b the current count is Binomial(n, p0) with
p0 = E_c / (E_c + E_b); we use the exact one-sided binomial tail, Holm's
step-down adjustment over the whole family of site tests in a run, and fail a
site only when it is significant, large (>= min_effect) and relevant
(>= min_share).  What follows the GC's schedule (promotion, the heap's
top, live words at the peak) is judged against the spread the baseline's
dithered runs recorded: Student's t for the GC counters, Welch's t with
Satterthwaite's degrees of freedom for the peak, never below the exact
test's p-value.  Invariants: functions here are pure and deterministic
(bootstrap uses a fixed seed), and rows are plain JSON-able dicts so that
shard results can be re-adjusted by `merge` exactly as in a single run.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as st

from ..inputs.profile import WORD_BYTES

POWER = 0.80
CONFIDENCE = 0.95


def test_counts(c, b, e_cur, e_base):
    """Exact conditional tests of current counts c against baseline counts b.

    Returns arrays: p0, one-sided p for an increase and for a decrease,
    rate ratio estimate and its exact 95% interval (Clopper-Pearson on c/n,
    mapped through q -> q/(1-q) * E_b/E_c).
    """
    c = np.asarray(c, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    n = c + b
    p0 = e_cur / (e_cur + e_base)
    with np.errstate(divide="ignore", invalid="ignore"):
        # P(C >= c) for an increase, P(C <= c) for a decrease, C ~ Bin(n, p0).
        p_inc = np.where(n > 0, st.binom.sf(c - 1, n, p0), 1.0)
        p_dec = np.where(n > 0, st.binom.cdf(c, n, p0), 1.0)
        ratio = (c / e_cur) / (b / e_base)
        a = (1 - CONFIDENCE) / 2
        q_lo = np.where(c > 0, st.beta.ppf(a, c, n - c + 1), 0.0)
        q_hi = np.where(c < n, st.beta.ppf(1 - a, c + 1, n - c), 1.0)
        scale = e_base / e_cur
        lo = q_lo / (1 - q_lo) * scale
        hi = np.where(q_hi < 1, q_hi / (1 - q_hi) * scale, np.inf)
    p_inc = np.minimum(p_inc, 1.0)
    p_dec = np.minimum(p_dec, 1.0)
    ratio = np.where(n > 0, ratio, np.nan)
    return {"p0": p0, "p_inc": p_inc, "p_dec": p_dec, "ratio": ratio,
            "lo": np.where(n > 0, lo, np.nan), "hi": np.where(n > 0, hi, np.nan)}


def share_interval(k: int, n: int) -> tuple:
    """Clopper-Pearson CONFIDENCE interval of a share estimated as k of n
    samples; (0, 1) when nothing was sampled."""
    if n <= 0:
        return 0.0, 1.0
    a = (1 - CONFIDENCE) / 2
    lo = float(st.beta.ppf(a, k, n - k + 1)) if k > 0 else 0.0
    hi = float(st.beta.ppf(1 - a, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def scaled_share_change(k_cur: int, n_cur: int, w_cur: float,
                        k_base: int, n_base: int, w_base: float) -> dict:
    """The change of one part of a total known on both sides (w_cur, w_base
    words) whose share is sampled (k of n samples on each side): the
    estimate w_cur k_cur/n_cur - w_base k_base/n_base and its interval by
    Newcombe's MOVER method from each side's Clopper-Pearson interval
    (STATISTICS.md, "Who changed a shared point")."""
    cur = w_cur * k_cur / n_cur if n_cur else 0.0
    base = w_base * k_base / n_base if n_base else 0.0
    cl, ch = (w_cur * x for x in share_interval(k_cur, n_cur))
    bl, bh = (w_base * x for x in share_interval(k_base, n_base))
    d = cur - base
    return {"current_words": cur, "baseline_words": base, "change_words": d,
            "change_low": d - math.hypot(cur - cl, bh - base),
            "change_high": d + math.hypot(ch - cur, base - bl)}


def holm(p):
    """Holm step-down adjusted p-values (same order as the input).

    Works along the last axis, so a 2-D array adjusts each row as a family.
    """
    p = np.asarray(p, dtype=float)
    m = p.shape[-1] if p.ndim else 0
    if m == 0:
        return p
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * ranked, axis=-1), 1.0)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def min_detectable_increase(n, p0, alpha_eff, power=POWER):
    """Smallest rate increase detected with `power`, exact given the total n.

    The level-alpha_eff test rejects when c >= k with k the binomial critical
    value; P(Bin(n, p) >= k) = BetaCDF(p; k, n-k+1), so the p reaching the
    target power is a Beta quantile, converted back to a rate ratio.
    """
    n = np.asarray(n, dtype=np.int64)
    alpha_eff = np.broadcast_to(np.asarray(alpha_eff, dtype=float), n.shape)
    k = st.binom.isf(alpha_eff, n, p0) + 1
    # Guard against isf rounding: make sure P(C >= k) <= alpha_eff.
    k = np.where(st.binom.sf(k - 1, n, p0) > alpha_eff, k + 1, k)
    out = np.full(n.shape, np.inf)
    ok = (n > 0) & (k <= n) & (k >= 1)
    if np.any(ok):
        kk, nn = k[ok], n[ok]
        p1 = st.beta.ppf(power, kk, nn - kk + 1)
        with np.errstate(divide="ignore"):
            r = (p1 / (1 - p1)) / (p0 / (1 - p0))
        out[ok] = r - 1
    return out


def site_rows(benchmark: str, check: str, cur_sites: dict, base_sites: dict,
              cur_total: int, base_total: int, e_cur: float, e_base: float,
              params: dict) -> list[dict]:
    """One comparison row per site seen in either run (raw p-values only).

    cur_sites/base_sites map site key -> (count, extra) where extra is a dict
    of display fields (file, function, line, via, lines).
    """
    keys = sorted(set(cur_sites) | set(base_sites))
    c = np.array([cur_sites.get(k, (0, None))[0] for k in keys], dtype=np.int64)
    b = np.array([base_sites.get(k, (0, None))[0] for k in keys], dtype=np.int64)
    keep = (c + b) > 0
    keys = [k for k, kp in zip(keys, keep) if kp]
    c, b = c[keep], b[keep]
    t = test_counts(c, b, e_cur, e_base)
    rows = []
    for i, k in enumerate(keys):
        info = (cur_sites.get(k) or base_sites.get(k))[1] or {}
        ci, bi = int(c[i]), int(b[i])
        share = max(ci / cur_total if cur_total else 0.0,
                    bi / base_total if base_total else 0.0)
        rows.append({
            "benchmark": benchmark, "check": check, "site": k,
            "file": info.get("file"), "function": info.get("function"),
            "line": info.get("line"), "via": info.get("via"),
            "lines": info.get("lines"),
            "baseline_samples": bi, "current_samples": ci,
            "baseline_exposure": e_base, "current_exposure": e_cur,
            "baseline_bytes": bi / e_base * WORD_BYTES, "current_bytes": ci / e_cur * WORD_BYTES,
            "share": share, "p0": float(t["p0"]),
            "ratio": finite_or_none(t["ratio"][i]), "ci_low": finite_or_none(t["lo"][i]), "ci_high": finite_or_none(t["hi"][i]),
            "p_raw": float(t["p_inc"][i]), "p_raw_decrease": float(t["p_dec"][i]),
            "alpha": params["alpha"], "min_effect": params["min_effect"],
            "min_share": params["min_share"], "exact": bool(params.get("exact")),
        })
    return rows


def finite_or_none(x):
    # Rows are JSON documents: non-finite values are stored as null (a null
    # ratio or upper bound means "infinite": the site is absent from the baseline).
    x = float(x)
    return x if math.isfinite(x) else None


def adjust_family(rows: list[dict], two_sided: bool = False) -> None:
    """Holm-adjust a whole family of site rows in place: the arithmetic only
    (verdict.classify applies the pass/fail rules to the adjusted rows).

    One-sided (default): "p_adj" and "p_adj_decrease" are the Holm-adjusted
    p-values of an increase and of a decrease, and "mde" the smallest
    increase the test would detect with POWER at alpha / m.  Two-sided
    (proposed-baseline agreement): "p_adj" is the adjusted doubled smaller
    tail.  Rows counted exactly (every word, "exact") are no tests: they
    stay out of the family, with no p-values and an MDE of 0.
    """
    for r in rows:
        if r.get("exact"):
            r.update(p_adj=None, p_adj_decrease=None, mde=0.0)
    rows = [r for r in rows if not r.get("exact")]
    m = len(rows)
    if m == 0:
        return
    if two_sided:
        p = np.array([min(1.0, 2 * min(r["p_raw"], r["p_raw_decrease"])) for r in rows])
        for r, pa in zip(rows, holm(p)):
            r["p_adj"] = float(pa)
        return
    adj_inc = holm(np.array([r["p_raw"] for r in rows]))
    adj_dec = holm(np.array([r["p_raw_decrease"] for r in rows]))
    n = np.array([r["baseline_samples"] + r["current_samples"] for r in rows])
    alpha_eff = np.array([r["alpha"] / m for r in rows])
    # Exposures are shared within a benchmark; compute MDE per distinct p0.
    p0s = np.array([r["p0"] for r in rows])
    mde = np.empty(m)
    for p0 in np.unique(p0s):
        sel = p0s == p0
        mde[sel] = min_detectable_increase(n[sel], float(p0), alpha_eff[sel])
    for i, r in enumerate(rows):
        r["p_adj"] = float(adj_inc[i])
        r["p_adj_decrease"] = float(adj_dec[i])
        r["mde"] = finite_or_none(mde[i])


GC_COUNTERS = ("minor_words", "promoted_words", "major_words", "top_heap_words")
# Counters that depend on when collections fall, not only on what is
# allocated: equal from seed to seed and with or without profiling for a
# single-domain program, but moved by a few words of startup allocation
# (the executable's path) or by how domains and systhreads interleave
# (STATISTICS.md).
GC_TIMING_COUNTERS = ("promoted_words", "major_words", "top_heap_words")
POOL_WORDS = 4096   # the major heap grows by pools of this many words (OCaml 5.3)


def gc_compare(base_gc: dict, cur_gc: dict, tolerance: float,
               timing_tolerance: float | None = None) -> list[dict]:
    """Exact GC totals: relative change per counter, only increases fail.
    `timing_tolerance` (default: `tolerance`) applies to GC_TIMING_COUNTERS.
    A counter missing on either side (an older profile or baseline) is left
    out."""
    rows = []
    for k in GC_COUNTERS:
        if k not in base_gc or k not in cur_gc:
            continue
        tol = (timing_tolerance if timing_tolerance is not None and k in GC_TIMING_COUNTERS
               else tolerance)
        b, c = float(base_gc.get(k, 0)), float(cur_gc.get(k, 0))
        if b == 0:
            rel = 0.0 if c == 0 else None  # null: grew from zero
        else:
            rel = c / b - 1
        status = "regression" if rel is None or rel > tol else (
            "improvement" if rel < -tol else "~")
        rows.append({"counter": k, "baseline": b, "current": c,
                     "change": rel, "tolerance": tol, "status": status})
    return rows


def sample_sd(values) -> float:
    """Sample standard deviation (n - 1 in the denominator); 0 for fewer
    than two values."""
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1)) if v.size > 1 else 0.0


def spread_test(diff: float, sampling_var: float, schedule_var: float, df: int) -> tuple:
    """One-sided tests of a difference `diff` whose variance has a sampling
    part (Poisson, taken as known) and a schedule part estimated from
    `df` + 1 dithered runs: Welch's t with Satterthwaite's degrees of
    freedom nu = V^2 / (schedule_var^2 / df).  Returns (p of an increase,
    p of a decrease, half-width of the 95% interval of diff).  With no
    variance at all a difference is certain: p 0 or 1."""
    v = sampling_var + schedule_var
    if v <= 0:
        return (0.0 if diff > 0 else 1.0), (0.0 if diff < 0 else 1.0), 0.0
    nu = math.inf if schedule_var <= 0 else v * v / (schedule_var * schedule_var / max(df, 1))
    t = diff / math.sqrt(v)
    q = st.t.ppf(1 - (1 - CONFIDENCE) / 2, nu)
    return float(st.t.sf(t, nu)), float(st.t.cdf(t, nu)), float(q * math.sqrt(v))


def schedule_adjust(rows: list, sigma_words: dict, draws_cur: int, draws_base: int,
                    df: int) -> None:
    """Peak rows judged against each site's schedule spread, in place.

    sigma_words maps a site to the standard deviation of its live words at
    the peak over the baseline's dithered runs; each side is the mean of
    draws_cur / draws_base schedules, so the schedule adds sigma^2 (1/draws_cur
    + 1/draws_base) to the variance of the difference in words per run.  A
    row's p-values become the larger of the exact test's (sampling alone)
    and spread_test's (sampling and schedule), so a site fails only when its
    change exceeds both; its interval is widened to match.  Rows counted
    exactly have no sampling part, and with a spread they are tests."""
    for r in rows:
        sigma = sigma_words.get(r["site"], 0.0)
        if sigma <= 0:
            continue
        b_w, c_w = r["baseline_bytes"] / WORD_BYTES, r["current_bytes"] / WORD_BYTES
        samp = 0.0 if r.get("exact") else (
            r["current_samples"] / r["current_exposure"] ** 2
            + r["baseline_samples"] / r["baseline_exposure"] ** 2)
        sched = sigma * sigma * (1 / draws_cur + 1 / draws_base)
        p_inc, p_dec, half = spread_test(c_w - b_w, samp, sched, df)
        r["p_raw"] = max(r["p_raw"], p_inc)
        r["p_raw_decrease"] = max(r["p_raw_decrease"], p_dec)
        r["schedule_spread_bytes"] = sigma * WORD_BYTES
        r["exact"] = False
        if b_w > 0:
            lo, hi = 1 + (c_w - b_w - half) / b_w, 1 + (c_w - b_w + half) / b_w
            r["ci_low"] = max(0.0, min(lo, r["ci_low"] if r["ci_low"] is not None else lo))
            r["ci_high"] = None if r["ci_high"] is None else max(hi, r["ci_high"])


def pooled_sd(a, b) -> tuple:
    """(standard deviation, degrees of freedom) of two sides' values pooled
    around each side's own mean: the spread their runs show."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    df = a.size + b.size - 2
    if a.size == 0 or b.size == 0 or df < 1:
        return 0.0, 0
    ss = float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum())
    return math.sqrt(ss / df), df


def gc_spread_rows(base_gc: dict, base_runs: list, draws: list, cur_gc: dict, cur_runs: list,
                   params: dict, pooled: bool = False) -> list[dict]:
    """GC_TIMING_COUNTERS judged against the schedule's spread.

    The reference is the mean of every schedule the baseline saw (its own
    distinct runs and the dithered ones, n_b draws) with their standard
    deviation s (at least a pool of the major heap for top_heap_words,
    which moves in whole pools); the current value is the mean of its n_c
    distinct runs (1 for a single-domain program: its seeds' runs have one
    schedule).  t = (current - reference) / (s sqrt(1/n_c + 1/n_b)) with
    n_b - 1 degrees of freedom, one-sided either way; the row's status is
    decided with the run's other GC rows (verdict.decide_gc): Holm at
    alpha, and a change of at least min_effect from the reference.

    `pooled`: no schedule was dithered (draws is empty), but both sides'
    runs saw several schedules (domains, systhreads): s is the spread of
    both sides' distinct runs around their own means (pooled_sd), with
    n_b + n_c - 2 degrees of freedom; the rows say so ("spread_from")."""
    rows = []
    for k in GC_TIMING_COUNTERS:
        if k not in base_gc or k not in cur_gc or any(k not in d for d in draws):
            continue
        c_draws = _distinct(cur_runs or [cur_gc], k)
        if pooled:
            b_draws = _distinct(base_runs or [base_gc], k)
            spread, df = pooled_sd(b_draws, c_draws)
        else:
            b_draws = _distinct(base_runs or [base_gc], k) + [float(d[k]) for d in draws]
            spread, df = sample_sd(b_draws), len(b_draws) - 1
        ref = float(np.mean(b_draws))
        spread = max(spread, POOL_WORDS if k == "top_heap_words" else 0.0)
        cur = float(cur_gc[k])
        sched = spread * spread * (1 / len(c_draws) + 1 / len(b_draws))
        p_inc, p_dec, _ = spread_test(cur - ref, 0.0, sched, df)
        b = float(base_gc[k])
        rows.append({"counter": k, "baseline": b, "current": cur,
                     "change": (cur / b - 1) if b else (0.0 if cur == 0 else None),
                     "tolerance": params["min_effect"], "status": "~",
                     "reference": ref, "spread": spread, "draws": len(b_draws),
                     "current_draws": len(c_draws),
                     "effect": (cur / ref - 1) if ref else (0.0 if cur == 0 else None),
                     "p_raw": p_inc, "p_raw_decrease": p_dec, "alpha": params["alpha"],
                     **({"spread_from": "runs"} if pooled else {})})
    return rows


def _distinct(runs: list, k: str) -> list:
    """One value per distinct run (by all of its counters): runs of one
    schedule count once."""
    seen, out = set(), []
    for r in runs:
        key = tuple(sorted(r.items()))
        if key not in seen and k in r:
            seen.add(key)
            out.append(float(r[k]))
    return out


def paired_overhead_interval(on, off):
    """Overhead from paired runs: estimate median(on_i/off_i) - 1 with the
    distribution-free interval for a median (sign-test order statistics).

    Pair i was timed back to back, so slow phases of a shared machine hit
    both members and cancel in the ratio. The interval [r_(k), r_(n+1-k)]
    of the sorted ratios uses the largest k whose coverage
    1 - 2 P(Binom(n, 1/2) < k) is at least 95%, or k = 1 (the full range)
    when n is too small to reach 95%; the coverage achieved is returned.
    """
    ratios = np.sort(np.asarray(on, dtype=float) / np.asarray(off, dtype=float))
    n = ratios.size
    est = float(np.median(ratios) - 1)
    k = 1
    for cand in range(1, n // 2 + 1):
        if 1 - 2 * st.binom.cdf(cand - 1, n, 0.5) >= CONFIDENCE:
            k = cand
    coverage = float(1 - 2 * st.binom.cdf(k - 1, n, 0.5))
    return est, float(ratios[k - 1] - 1), float(ratios[n - k] - 1), coverage



def overhead_sign_test(on, off, budget):
    """Exact one-sided sign test of "profiling costs at most `budget`":
    H0 is median(t_on/t_off) <= 1 + budget, and with `above` of the n
    paired ratios above 1 + budget, p = P(Binomial(n, 1/2) >= above).
    Returns (p, above)."""
    ratios = np.asarray(on, dtype=float) / np.asarray(off, dtype=float)
    above = int(np.sum(ratios > 1 + budget))
    return float(st.binom.sf(above - 1, ratios.size, 0.5)), above


def rounds_for_level(level):
    """The fewest paired rounds in which every ratio above the budget is
    significant at `level` for the sign test: the least n with 2^-n <= level."""
    return max(1, math.ceil(-math.log2(level) - 1e-12))
