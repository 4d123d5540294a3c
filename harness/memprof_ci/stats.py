"""Statistical tests for allocation, retention, GC-total and overhead checks.

The method is documented with formulas in harness/STATISTICS.md.  In short:
per-site sample counts are Poisson with mean exposure x words, so conditional
on the total n = c + b the current count is Binomial(n, p0) with
p0 = E_c / (E_c + E_b); we use the exact one-sided binomial tail, Holm's
step-down adjustment over the whole family of site tests in a run, and fail a
site only when it is significant, large (>= min_effect) and relevant
(>= min_share).  Invariants: functions here are pure and deterministic
(bootstrap uses a fixed seed), and rows are plain JSON-able dicts so that
shard results can be re-adjusted by `merge` exactly as in a single run.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as st

from .profile import WORD_BYTES

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
