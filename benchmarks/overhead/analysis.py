"""Analysis of the overhead study's raw numbers: intervals, costs, verdicts.

analyse_timing turns one benchmark's per-run times into overheads with
intervals and, at COST_RATE, the per-sample cost of each tracker and their
ratio; summarise turns every benchmark's analysis and callgrind counts into
the summary rows of the report, each with a verdict against its target.
Invariants:
* The runs of one round pair up (timing.py).  Overhead = median over rounds
  of on / off - 1, with the gate's interval method
  (memprof_ci.decide.stats.paired_overhead_interval: the distribution-free
  interval of a median, at least 95%, or the full range of the rounds when
  they are too few for 95%); the per-sample cost ratio C / OCaml gets the
  same interval over its per-round ratios.  The same times always give the
  same interval.
* A wall-time verdict (and that of the wall-time cost ratio) is PASS or MISS
  only when the intervals clear the target, and UNRESOLVED when they
  straddle it: the instruction counts then decide.  Instruction-count
  verdicts compare the deterministic value with the target directly.
* A quantity that was not measured gives a row with value None and verdict
  n/a, never PASS.
* Everything here is a pure function of its arguments except that
  analyse_timing copies the preflight's OCaml sample counts into `timing`.
"""

from __future__ import annotations

import math
import statistics

from memprof_ci.decide.stats import paired_overhead_interval

from .common import (COST_RATE, TARGET_COST_RATIO, TARGET_MAX_1E4, TARGET_MEDIAN_1E4,
                     TARGET_STOCK_RATIO, fmt_ci, pct, rate_key)

UNRESOLVED = "UNRESOLVED (see instructions)"


def overhead_ci(on: list[float], off: list[float]) -> tuple[float, float, float]:
    """The overhead of paired rounds (on[i] and off[i] timed in round i) and
    its interval: median(on[i] / off[i]) - 1 with the distribution-free
    interval of memprof_ci.decide.stats.paired_overhead_interval."""
    est, lo, hi, _ = paired_overhead_interval(on, off)
    return est, lo, hi


def cost_ratio_ci(c: dict, o: dict) -> tuple[float, float] | None:
    """Interval of the per-sample cost ratio C / OCaml from paired rounds:
    in round i, ((c.on[i] - c.off[i]) / c.samples) / ((o.on[i] - o.off[i])
    / o.samples), and the distribution-free interval of its median
    (paired_overhead_interval).  None without sample counts, with fewer than
    two rounds, or when the OCaml tracker's cost is not positive in every
    round (the ratio is then not defined)."""
    sets = [c["on"], c["off"], o["on"], o["off"]]
    if not (c["samples"] and o["samples"]) or len({len(x) for x in sets}) != 1 \
            or len(c["on"]) < 2:
        return None
    num = [(a - b) * o["samples"] for a, b in zip(c["on"], c["off"])]
    den = [(a - b) * c["samples"] for a, b in zip(o["on"], o["off"])]
    if min(den) <= 0:
        return None
    _, lo, hi, _ = paired_overhead_interval(num, den)
    return 1 + lo, 1 + hi


def _ns_per_sample(t: dict, k: str) -> float | None:
    """(median on − median off) / samples at rate key k, in ns; None
    without a sample count."""
    s = t[k].get("samples")
    return (t[k]["median_s"] - t["off"]["median_s"]) / s * 1e9 if s else None


def analyse_timing(timing: dict, pre: dict, rates: list[float]) -> dict:
    """{"c"|"ocaml": {rate key: overhead and interval}, "cost_per_sample": ...}
    from time_benchmark's output and preflight's OCaml sample counts."""
    res = {"c": {}, "ocaml": {}}
    for tracker in ("c", "ocaml"):
        off = timing[tracker]["off"]["times_s"]
        for rate in rates:
            k = rate_key(rate)
            on = timing[tracker][k]["times_s"]
            est, lo, hi = overhead_ci(on, off)
            res[tracker][k] = {"overhead": est, "ci_low": lo, "ci_high": hi,
                               "runs_on": len(on), "runs_off": len(off)}
            if tracker == "c":
                res["c"][k]["ns_per_sample"] = _ns_per_sample(timing["c"], k)
    for rate in rates:
        timing["ocaml"][rate_key(rate)]["samples"] = pre["ocaml_samples"].get(rate_key(rate))
    k = rate_key(COST_RATE)
    if COST_RATE in rates:
        cost = {}
        for tracker in ("c", "ocaml"):
            d = timing[tracker]
            s = d[k].get("samples")
            diff = d[k]["median_s"] - d["off"]["median_s"]
            cost[tracker] = {"samples": s, "median_on_s": d[k]["median_s"],
                             "median_off_s": d["off"]["median_s"], "delta_s": diff,
                             "ns_per_sample": diff / s * 1e9 if s else None}
        c, o = cost["c"]["ns_per_sample"], cost["ocaml"]["ns_per_sample"]
        cost["ratio_c_over_ocaml"] = c / o if (c is not None and o) else None
        ci = cost_ratio_ci(*({"on": timing[t][k]["times_s"], "off": timing[t]["off"]["times_s"],
                              "samples": cost[t]["samples"]} for t in ("c", "ocaml")))
        cost["ratio_ci"] = list(ci) if ci else None
        res["cost_per_sample"] = {"rate": k, **cost}
    return res


def interval_verdict(lows: list[float], highs: list[float], target: float) -> str:
    """Verdict on "every value is below target" from intervals: wall time
    decides only when the intervals clear the target; when one straddles it,
    the instruction counts decide."""
    if not lows:
        return "n/a"
    if max(highs) < target:
        return "PASS"
    if max(lows) >= target:
        return "MISS"
    return UNRESOLVED


def threshold_verdict(value: float | None, target: float, le: bool = False) -> str:
    """Verdict of a deterministic value: below the target (or at most it)."""
    if value is None:
        return "n/a"
    return "PASS" if (value <= target if le else value < target) else "MISS"


def median_and_worst(values: dict, fmt: str) -> tuple:
    """Median and max of per-benchmark values, with a "median (max M, name)"
    label; (None, None, "n/a") when there are none."""
    if not values:
        return None, None, "n/a"
    worst = max(values, key=values.get)
    med = statistics.median(values.values())
    return med, values[worst], f"{fmt.format(med)} (max {fmt.format(values[worst])}, {worst})"


def _wall_rows(c4: dict) -> list[dict]:
    """The C tracker's wall-time overhead at 1e-4: median and max rows."""
    wall = {n: a["overhead"] for n, a in c4.items()}
    med = statistics.median(wall.values()) if wall else None
    halfw = [(a["ci_high"] - a["ci_low"]) / 2 for a in c4.values()]
    res_note = (f"; median CI half-width ±{statistics.median(halfw) * 100:.1f}%"
                if halfw else "")
    med_low = statistics.median(a["ci_low"] for a in c4.values()) if c4 else None
    med_high = statistics.median(a["ci_high"] for a in c4.values()) if c4 else None
    rows = [{"id": "wall_median_1e-4", "metric":
             "C tracker wall-time overhead at 1e-4, median over benchmarks",
             "value": med, "shown": pct(med, 2) + res_note,
             "target": f"< {TARGET_MEDIAN_1E4:.0%}",
             "verdict": interval_verdict([med_low] if c4 else [],
                                         [med_high] if c4 else [], TARGET_MEDIAN_1E4),
             "n": len(wall)}]
    if wall:
        worst = max(wall, key=wall.get)
        mx = wall[worst]
        shown = f"{pct(mx, 2)} ({worst}, CI {fmt_ci(c4[worst])})"
    else:
        mx, shown = None, "n/a"
    rows.append({"id": "wall_max_1e-4", "metric":
                 "C tracker wall-time overhead at 1e-4, max over benchmarks",
                 "value": mx, "shown": shown, "target": f"< {TARGET_MAX_1E4:.0%}",
                 "verdict": interval_verdict([a["ci_low"] for a in c4.values()],
                                             [a["ci_high"] for a in c4.values()],
                                             TARGET_MAX_1E4),
                 "n": len(wall)})
    return rows


def _instr_rows(callgrind: dict) -> list[dict]:
    """The C tracker's instruction overhead at 1e-4: median and max rows."""
    ins = {n: e["ratio_c_over_off"] - 1 for n, e in callgrind.items()
           if e["ratio_c_over_off"] is not None}
    imed = statistics.median(ins.values()) if ins else None
    rows = [{"id": "instr_median_1e-4", "metric":
             "C tracker instruction overhead at 1e-4 (callgrind), "
             "median over benchmarks", "value": imed, "shown": pct(imed, 2),
             "target": f"< {TARGET_MEDIAN_1E4:.0%}",
             "verdict": threshold_verdict(imed, TARGET_MEDIAN_1E4), "n": len(ins)}]
    if ins:
        w = max(ins, key=ins.get)
        imx, shown = ins[w], f"{pct(ins[w], 2)} ({w})"
    else:
        imx, shown = None, "n/a"
    rows.append({"id": "instr_max_1e-4", "metric":
                 "C tracker instruction overhead at 1e-4 (callgrind), max over benchmarks",
                 "value": imx, "shown": shown, "target": f"< {TARGET_MAX_1E4:.0%}",
                 "verdict": threshold_verdict(imx, TARGET_MAX_1E4), "n": len(ins)})
    return rows


def _cost_row(ok: dict) -> dict:
    """The wall-time per-sample cost ratio C / OCaml at COST_RATE."""
    cps = {n: r["analysis"]["cost_per_sample"] for n, r in ok.items()
           if r["analysis"].get("cost_per_sample", {}).get("ratio_c_over_ocaml") is not None}
    ratios = {n: c["ratio_c_over_ocaml"] for n, c in cps.items()}
    cmed, cmax, shown = median_and_worst(ratios, "{:.3f}")
    # An unresolved ratio (no interval) counts as straddling any target.
    cis = [c.get("ratio_ci") or [-math.inf, math.inf] for c in cps.values()]
    clo = statistics.median(x[0] for x in cis) if cis else None
    chi = statistics.median(x[1] for x in cis) if cis else None
    if cis:
        shown += f"; median benchmark's CI [{clo:.3f}, {chi:.3f}]"
    return {"id": "cost_ratio_1e-2", "metric":
            "per-sample cost C / OCaml tracker at 1e-2, median over benchmarks",
            "value": cmed, "max": cmax,
            "shown": shown, "target": f"≤ {TARGET_COST_RATIO}",
            "verdict": interval_verdict([clo] if cis else [], [chi] if cis else [],
                                        TARGET_COST_RATIO),
            "n": len(ratios)}


def _instr_cost_and_stock_rows(callgrind: dict) -> list[dict]:
    """The per-sample instruction cost ratio (when measured) and the
    patched/stock instruction ratio."""
    rows = []
    ic = {n: e["cost_per_sample"]["ratio_c_over_ocaml"] for n, e in callgrind.items()
          if (e.get("cost_per_sample") or {}).get("ratio_c_over_ocaml") is not None}
    if any("cost_per_sample" in e for e in callgrind.values()):
        imed, icmax, shown = median_and_worst(ic, "{:.3f}")
        rows.append({"id": "instr_cost_ratio_1e-2", "metric":
                     "per-sample instruction cost C / OCaml tracker at 1e-2 (callgrind), "
                     "median over benchmarks", "value": imed,
                     "max": icmax, "shown": shown,
                     "target": f"≤ {TARGET_COST_RATIO}",
                     "verdict": threshold_verdict(imed, TARGET_COST_RATIO, le=True),
                     "n": len(ic)})
    st = {n: e["ratio_patched_over_stock"] for n, e in callgrind.items()
          if e["ratio_patched_over_stock"] is not None}
    smed, smax, shown = median_and_worst(st, "{:.4f}")
    rows.append({"id": "stock_ratio", "metric":
                 "patched runtime, OCAMLMEMPROF unset / stock: instructions, "
                 "median over benchmarks (verdict on the max)",
                 "value": smed, "max": smax, "shown": shown,
                 "target": f"max ≤ {TARGET_STOCK_RATIO} (threshold chosen by this study)",
                 "verdict": threshold_verdict(smax, TARGET_STOCK_RATIO, le=True),
                 "n": len(st)})
    return rows


def summarise(results: dict, rates: list[float], callgrind: dict | None) -> list[dict]:
    """The summary rows, in report order: wall time at 1e-4, instructions at
    1e-4, wall-time cost ratio, instruction cost ratio, patched/stock."""
    ok = {n: r for n, r in results.items() if "analysis" in r}
    k4 = rate_key(1e-4)
    c4 = {n: r["analysis"]["c"][k4] for n, r in ok.items() if k4 in r["analysis"]["c"]}
    rows = _wall_rows(c4)
    if callgrind:
        rows += _instr_rows(callgrind)
    rows.append(_cost_row(ok))
    if callgrind:
        rows += _instr_cost_and_stock_rows(callgrind)
    return rows
