"""How numbers and site rows read: the formatters every rendering shares.

A leaf module (it imports nothing of the harness), so that verdict.py can
word its failure messages and report.py, report_html.py and power.py can
render, without importing each other.  Invariants: pure functions of their
arguments; None (a value the JSON stores as null) prints as "-" or "inf",
never raises (overhead_text prints "-" for a record it cannot read);
nothing is decided here: fmt_delta prints "~" for a row the decision pass
did not mark "significant" (benchstat's convention) and "new" for a site
the baseline lacks; worst_first orders rows by estimated byte increase, then
benchmark and site, so every listing of regressions has one order.
"""

from __future__ import annotations

import math


def fmt_bytes(x) -> str:
    if x is None:
        return "-"
    x = float(x)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return f"{x:.1f}"


def fmt_words(x, signed: bool = False) -> str:
    """Words with a k/M/G prefix: `4.4 M words`, `+86.2 k words`."""
    x = float(x)
    sign = "+" if signed and x >= 0 else ("-" if x < 0 else "")
    a = abs(x)
    for unit, div in (("G ", 1e9), ("M ", 1e6), ("k ", 1e3)):
        if a >= div:
            return f"{sign}{a / div:.1f} {unit}words"
    return f"{sign}{a:.0f} words"


def fmt_pct(r) -> str:
    if r is None:
        return "inf"
    return f"{(r - 1) * 100:+.1f}%"


def fmt_p(p) -> str:
    if p is None:
        return "-"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def fmt_delta(row: dict) -> str:
    """benchstat-like: the ratio and its interval, or ~ when the decision
    pass did not mark the change significant (the row's "significant",
    verdict.classify)."""
    if row["baseline_samples"] == 0:
        return "new"
    if not row.get("significant"):
        return "~"
    if row.get("exact"):
        return f"{fmt_pct(row['ratio'])} (exact)"
    return f"{fmt_pct(row['ratio'])} [{fmt_pct(row['ci_low'])}, {fmt_pct(row['ci_high'])}]"


def fmt_mde(m) -> str:
    return "-" if m is None or not math.isfinite(m) else f"{m * 100:.1f}%"


def fmt_lines(lines) -> str:
    if not lines:
        return ""
    top = sorted(lines.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"L{k}:{v}" for k, v in top) + (" …" if len(lines) > 4 else "")


def worst_first(rows: list) -> list:
    return sorted(rows, key=lambda r: (-(r["current_bytes"] - r["baseline_bytes"]),
                                       r["benchmark"], r["site"]))


def site_notes(r) -> list:
    """What a row says of its site besides the site's name, each a phrase:
    what compiler-generated code it is, the primitive it allocates through,
    the name it was renamed from and its callers (callers_text)."""
    out = [r["generated"]] if r.get("generated") else []
    if r.get("via"):
        out.append(f"via {r['via']}")
    if r.get("renamed_from"):
        out.append(f"renamed or moved from {r['renamed_from']}")
    callers = callers_text(r)
    if callers:
        out.append(callers[2:-1])
    return out


def site_name(r) -> str:
    """A site with its notes in parentheses, as one cell (Markdown, messages)."""
    return r["site"] + "".join(f" ({n})" for n in site_notes(r))


def fmt_signed_bytes(x) -> str:
    """Bytes with their sign: `+3.0 MiB`, `-512 B`."""
    return ("+" if x >= 0 else "-") + fmt_bytes(abs(x))


def cause_text(r) -> str:
    """The callers whose part of a changed shared point changed
    (moves.attribute_changes), with their estimated change and interval."""
    parts = []
    for c in r.get("cause") or []:
        tag = " (new caller)" if c.get("new") else " (no longer a caller)" if c.get("gone") \
            else ""
        parts.append(f"{fmt_signed_bytes(c['change_words'] * 8)} from {c['site']}{tag} "
                     f"[{fmt_signed_bytes(c['change_low'] * 8)}, "
                     f"{fmt_signed_bytes(c['change_high'] * 8)}]")
    return " (" + "; ".join(parts) + "; estimated by caller)" if parts else ""


def split_text(r) -> str:
    """A point site's callers, as the sampled stacks estimate them."""
    sp = r.get("split")
    if not sp:
        return ""
    unknown = f"; which changed is unknown: {r['cause_unknown']}" if r.get("cause_unknown") \
        else ""
    return (" (called from " + ", ".join(f"{c['site']} {c['share']:.0%}" for c in sp)
            + f", estimated{unknown})")


def callers_text(r) -> str:
    """What a row says of a shared point's callers: the callers that
    changed it when the decision named them (`cause`), else its largest
    callers (`split`), else nothing."""
    return cause_text(r) if r.get("cause") else split_text(r)


def num_of(o: dict, k: str) -> float | None:
    v = o.get(k) if isinstance(o, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def time_text(t) -> str:
    """Time as information: CPU and wall medians with their intervals, or,
    for a noisy one, only the spread of its pairs (never a precise figure)."""
    if not isinstance(t, dict):
        return ""
    parts = []
    for name, label in (("cpu", "CPU"), ("wall", "wall")):
        f = t.get(name)
        vals = [num_of(f, k) for k in ("estimate", "ci_low", "ci_high", "min", "max")]
        if not isinstance(f, dict) or None in vals:
            continue
        est, lo, hi, mn, mx = vals
        parts.append(f"{label} noisy (pairs {mn:+.0%} to {mx:+.0%})" if f.get("noise") else
                     f"{label} {est:+.1%} [{lo:+.1%}, {hi:+.1%}]")
    return "time " + ", ".join(parts) if parts else ""


def rss_text(r) -> str:
    """The added peak RSS of an overhead record's rss, or ""."""
    b = num_of(r, "added_bytes") if isinstance(r, dict) else None
    return "" if b is None else f"peak RSS {b / 2**20:+.1f} MB"


def obtained_text(o: dict, carried: str, estimated: str = ", estimated") -> str:
    """", counted", `carried` or ", estimated" when the overhead record says
    how it was obtained (a record that says so says it for every figure),
    else ""."""
    how = o.get("obtained")
    if not isinstance(how, dict):
        return ""
    return {"carried": carried, "estimated": estimated}.get(how.get("count"), ", counted")


def overhead_brief(o) -> str:
    """An overhead record in about 40 characters, as the status tables show
    it: the counted estimate, how it was obtained (counted, or carried from
    the baseline) when the record says, and its limit; the full line (overhead_text) is in report.json, report.html and
    the terminal's -v."""
    est = num_of(o, "estimate")
    if est is None or None in (num_of(o, "ci_low"), num_of(o, "ci_high")):
        return "-"
    how = obtained_text(o, ", carried") + (", prefix" if prefix_of(o) else "")
    s = (f"{est:+.2%} cycles" if isinstance(o.get("counted"), dict) else f"{est:+.1%}") + how
    thr = num_of(o, "threshold")
    return s + (f" (limit {thr:+.2%})" if thr is not None else "")


def prefix_of(o) -> dict | None:
    """The part of the run a counted record covers ({"after", "of"}), or
    None for the whole run."""
    c = o.get("counted") if isinstance(o, dict) else None
    stop = c.get("stop") if isinstance(c, dict) else None
    return stop if isinstance(stop, dict) else None


def overhead_text(o) -> str:
    """An overhead record as one line: the counted estimate (its range when
    counted several times), the threshold and its basis, then time."""
    est, lo, hi = (num_of(o, k) for k in ("estimate", "ci_low", "ci_high"))
    if est is None or lo is None or hi is None:
        return "-"
    c = o.get("counted")
    how = obtained_text(o, ", carried from the baseline",
                        ", estimated from the baseline's count")
    if isinstance(c, dict):
        runs = len(c.get("on") or [])
        s = f"{est:+.2%} cycles{how}"
        if runs > 1:
            s += f" [{lo:+.2%}, {hi:+.2%}] ({runs} runs)"
        if num_of(o, "instructions") is not None:
            s += f" ({num_of(o, 'instructions'):+.2%} instr.)"
        stop = prefix_of(o)
        if stop:
            s += (f" on the first {int(num_of(stop, 'after') or 0):,} of "
                  f"{int(num_of(stop, 'of') or 0):,} minor collections, without the exit's walk")
    else:
        s = f"{est:+.1%} [{lo:+.1%}, {hi:+.1%}]"
    thr = num_of(o, "threshold")
    if thr is not None:
        base_hi = num_of(o, "baseline_ci_high")
        basis = (f"baseline {base_hi:+.2%} + tolerance"
                 if o.get("basis") == "baseline" and base_hi is not None else "budget")
        s += f" vs {thr:+.2%} ({basis})"
    elif num_of(o, "baseline_estimate") is not None:
        s += f" (baseline {num_of(o, 'baseline_estimate'):+.2%})"
    t = time_text(o.get("time"))
    m = rss_text(o.get("rss"))
    if how:
        t = t or "time not measured"
        m = m or "peak RSS not measured"
    return s + ("; " + t if t else "") + ("; " + m if m else "")
