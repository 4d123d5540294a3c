"""The overhead check's decision: a measured overhead record judged against
its threshold.

measure/overhead.py counts and times and returns a record with no status;
this module alone says whether that record is a "regression".  The rules:

1. Count: "regression" when the lower end of the counted range (the
   estimate itself for a single-domain program) lies above the threshold
   (measure/overhead.threshold_for gives it and its basis).
2. Time, only for a benchmark with `overhead_time_fails` and a time record:
   time_verdict() says "regression" when the first rounds screened over the
   CPU-time threshold (time_threshold_for), enough rounds were timed for
   the level (stats.rounds_for_level), the exact sign test of all rounds is
   significant at that level, and the CPU times are not noisy.  Either
   rule's "regression" makes the check's.
3. failure_message() words a judged record's failure in one paragraph.

Invariants: judge() leaves the measured record as it was (it returns a new
one); a time record's verdict is kept beside it ("verdict") so the
renderers read what was decided rather than deciding again.
"""

from __future__ import annotations

from .stats import overhead_sign_test, paired_overhead_interval, rounds_for_level


def time_threshold_for(bench, base: dict | None) -> float:
    """The CPU-time threshold of a benchmark whose time is judged: the
    baseline's upper end plus the tolerance, else the budget."""
    t = (base or {}).get("time")
    if t is not None:
        return t["cpu"]["ci_high"] + bench.overhead_tolerance
    return bench.overhead_budget


def time_verdict(t: dict, threshold: float, level: float) -> dict:
    """Rule 2 on a time record (overhead_time.parse shape)."""
    on, off = t["cpu_on_s"], t["cpu_off_s"]
    first = int(t.get("first_rounds") or len(on))
    screened = paired_overhead_interval(on[:first], off[:first])[1] > threshold
    p, above = overhead_sign_test(on, off, threshold)
    note = ""
    if screened and len(on) < rounds_for_level(level):
        screened = False
        note = (f"time over {threshold:+.0%} in the first rounds, but too few rounds "
                f"({len(on)}) were timed to decide at level {level:.2g}")
    status = "regression" if screened and p <= level else "~"
    if status == "regression" and t["cpu"]["noise"]:
        status = "~"
        note = (f"CPU time over {threshold:+.0%} (p = {p:.2g}) but too noisy to judge: "
                f"{t['cpu']['noise']}")
    return {"threshold": threshold, "level": level, "screened": screened, "p_value": p,
            "above": above, "status": status, "note": note}


def judge(measured: dict, bench, threshold: float, basis: str, note: str,
          base: dict | None, level: float) -> dict:
    """Rules 1 and 2 on a measured record (overhead.parse_record shape)
    against `threshold`; returns the judged record with its "status"."""
    m = dict(measured)
    notes = [note] if note else []
    status = "regression" if m["ci_low"] > threshold else "~"
    if bench.overhead_time_fails and m.get("time"):
        tj = time_verdict(m["time"], time_threshold_for(bench, base), level)
        m["time"] = {**m["time"], "verdict": tj}
        if tj["note"]:
            notes.append(tj["note"])
        if tj["status"] == "regression":
            status = "regression"
    return {**m, "budget": bench.overhead_budget, "threshold": threshold, "basis": basis,
            "status": status, "note": "; ".join(notes),
            "baseline_estimate": (base or {}).get("estimate"),
            "baseline_ci_high": (base or {}).get("ci_high")}


def failure_message(j: dict, bench) -> str:
    """Why a judged record (judge) failed, in one paragraph."""
    against = (f"the baseline's {j['baseline_estimate']:+.2%} (up to "
               f"{j['baseline_ci_high']:+.2%}) plus the tolerance "
               f"{bench.overhead_tolerance:.0%}" if j["basis"] == "baseline" else
               f"the budget {j['budget']:.0%}")
    c = j["counted"]
    runs = len(c["on"])
    what = (f"{j['estimate']:+.2%} [{j['ci_low']:+.2%}, {j['ci_high']:+.2%}] over {runs} "
            f"runs each" if runs > 1 else f"{j['estimate']:+.2%}")
    parts = []
    if j["ci_low"] > j["threshold"]:
        parts.append(f"profiling costs {what} estimated cycles ({j['instructions']:+.2%} "
                     f"instructions, counted with arguments {' '.join(c['args'])[:120]!r}), "
                     f"over {j['threshold']:+.2%}, {against}")
    tv = (j.get("time") or {}).get("verdict")
    if tv and tv["status"] == "regression":
        cpu = j["time"]["cpu"]
        parts.append(f"CPU time {cpu['estimate']:+.1%} [{cpu['ci_low']:+.1%}, "
                     f"{cpu['ci_high']:+.1%}] is over {tv['threshold']:+.1%} "
                     f"(overhead_time_fails): {tv['above']} of {j['time']['runs']} paired "
                     f"rounds over it, sign test p = {tv['p_value']:.2g} <= {tv['level']:.2g}")
    return f"benchmark {bench.name!r}: " + "; ".join(parts)
