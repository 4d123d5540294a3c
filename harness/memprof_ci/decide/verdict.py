"""The decision pass: the family-wise correction, the pass/fail rules, the
overhead level, the accept label and the exit code.

Every way memprof-ci reaches a verdict goes through here: the pytest items
of `check` (plugin.py) while they run, `compare` on two inputs, and `merge`
over shard reports, so the three decide the same way.  comparison.py builds what
is compared; stats.py holds the tests and their arithmetic; attribution.py the
attribution decisions (renames, moves); fmt.py words numbers; the renderers
(report.py, report_html.py) only read what is decided here, above all
report["verdict"].

The pass, in order, each step computed once per report:
1. Rows: rows.site_rows() compares one benchmark's sites for one check.
2. Family: decide_sites() runs decide_family() over every alloc, live and
   peak row of the report (moves.pair_renames, then Holm, then classify()),
   then peak_must_rise() over each benchmark's peak rows, moves.apply_moves(),
   moves.attribute_changes() (which callers changed a shared point) and
   power(); decide_proposed() does the same, two-sided, over every
   proposed-baseline row.  Each records the family it decided
   (report["family"], report["proposed_family"]) and does nothing when
   called again on the same rows, so the pytest items can decide early and
   the end of the run does not decide twice.
3. Rules: classify() alone turns adjusted p-values into statuses: a row is a
   "regression" when its adjusted p < alpha, its estimated increase >=
   min_effect and its share >= min_share; "improvement" symmetrically
   (reported, never failing); otherwise "~".  Two-sided: "mismatch" or "~".
   Rows counted exactly (exact mode) are judged on the size of the change
   alone: min_effect and min_share, and at least EXACT_MIN_BYTES a run.  moves.apply_moves() may then relabel a regression "moved".
4. Outcomes: site_outcome() is the one rule from decided rows to a site
   check's outcome; overhead_level() the one level of the overhead check.
5. Accept label: accepted() says whether a benchmark's failed checks are
   accepted (the label is on and its proposed baseline matched the
   measured code); accept_changes() applies it to a finished report and the
   pytest items mirror it through the same function.
6. Exit code: decide() ends the pass and stores report["verdict"]: 2 when
   any check or the run has an error, else 1 when any check failed, else 0;
   "accepted" outcomes do not fail.  An internal error is never a
   regression: only "failed" outcomes can make exit code 1.
"""

from __future__ import annotations

import math

from . import budgets as B
from . import stats
from ..text.fmt import fmt_bytes, fmt_delta, fmt_p, fmt_words, site_notes, worst_first
from ..text.mdsafe import printable
from ..text.wrap import detail_lines
from .attribution import (EXACT_MIN_BYTES, RENAMED, SITE_KEYS, apply_moves, attribute_changes,
                          pair_renames)
from ..inputs.profile import WORD_BYTES
from .report_doc import new_report
from .comparison import gc_rows, peak_summary, site_rows, stream

# Report key of each site check's rows -> the check's name.
SITE_CHECKS = dict(zip(SITE_KEYS, ("alloc_sites", "live", "peak")))
# Checks whose failure a maintainer's accept label can turn into "accepted".
ACCEPTABLE = ("alloc_sites", "live", "peak", "gc_totals", "overhead")


def classify(rows: list, two_sided: bool = False) -> None:
    """The pass/fail rules (module step 3), on rows stats.adjust_family has
    adjusted; sets each row's "status", whether its change is significant in
    either direction ("significant", which the renderers print as an
    interval or "~") and a "note" where a significant increase is too small
    or too rare to fail."""
    for r in rows:
        ratio = r["ratio"]
        relevant = r["share"] >= r["min_share"]
        r["significant"] = significant(r, two_sided)
        if r.get("exact"):
            _classify_exact(r, ratio, relevant, two_sided)
            continue
        if two_sided:
            big = True if ratio is None else abs(ratio - 1) >= r["min_effect"]
            r["status"] = "mismatch" if r["p_adj"] < r["alpha"] and big and relevant else "~"
            continue
        inc = math.inf if ratio is None else ratio - 1
        if r["p_adj"] < r["alpha"] and inc >= r["min_effect"] and relevant:
            r["status"] = "regression"
        elif (r["p_adj_decrease"] < r["alpha"] and ratio is not None
              and 1 - ratio >= r["min_effect"] and relevant):
            r["status"] = "improvement"
        else:
            r["status"] = "~"
            if r["p_adj"] < r["alpha"]:
                r["note"] = ("increase below min_effect" if inc < r["min_effect"]
                             else "below min_share")


def significant(r: dict, two_sided: bool = False) -> bool:
    """Whether a row's change is significant in either direction: its
    adjusted p (either tail) below alpha; a counted (exact) row, whether
    its count changed at all."""
    if r.get("exact"):
        return r["current_samples"] != r["baseline_samples"]
    tails = ("p_adj",) if two_sided else ("p_adj", "p_adj_decrease")
    return any(r.get(k) is not None and r[k] < r["alpha"] for k in tails)


def _classify_exact(r: dict, ratio, relevant: bool, two_sided: bool) -> None:
    """Counted rows: the change is known, so the rule is its size alone:
    relative (min_effect, min_share) and absolute (EXACT_MIN_BYTES)."""
    change = math.inf if ratio is None else ratio - 1
    material = abs(r["current_bytes"] - r["baseline_bytes"]) >= EXACT_MIN_BYTES
    big = abs(change) >= r["min_effect"] and relevant and material
    if two_sided:
        r["status"] = "mismatch" if big and change else "~"
    elif big and change > 0:
        r["status"] = "regression"
    elif big and change < 0:
        r["status"] = "improvement"
    else:
        r["status"] = "~"
        if change > 0:
            r["note"] = ("increase below min_effect" if change < r["min_effect"]
                         else "below min_share" if not relevant
                         else f"below {EXACT_MIN_BYTES} bytes")


def decide_family(rows: list, two_sided: bool = False) -> None:
    """Renames (one-sided families), then Holm over `rows` (in place) and
    each row's status."""
    if two_sided:
        stats.adjust_family(rows, two_sided=True)
        classify(rows, two_sided=True)
        return
    pair_renames(rows)
    family = [r for r in rows if not r.get("renamed_to")]
    stats.adjust_family(family)
    classify(family)
    for r in rows:
        if r.get("renamed_to"):
            r.update(status=RENAMED, p_adj=1.0, p_adj_decrease=1.0, mde=None)


def gc_failure(name: str, rows: list) -> str | None:
    bad = [g for g in rows if g["status"] == "regression"]
    if not bad:
        return None
    parts = []
    for g in bad:
        if "p_raw" in g:
            eff = "from zero" if g["effect"] is None else f"{g['effect']:+.2%}"
            parts.append(f"{g['counter']} {g['baseline']:.0f} -> {g['current']:.0f} ({eff} "
                         f"from its schedule mean {g['reference']:.0f}, spread "
                         f"{g['spread'] / g['reference'] if g['reference'] else 0:.1%} over "
                         + (f"both sides' {g['draws'] + g.get('current_draws', 0)} runs"
                            if g.get("spread_from") == "runs" else f"{g['draws']} schedules")
                         + f", p(Holm)={fmt_p(g['p_adj'])})")
        else:
            parts.append(f"{g['counter']} {g['baseline']:.0f} -> {g['current']:.0f} "
                         f"({'from zero' if g['change'] is None else format(g['change'] * 100, '+.2f') + '%'}"
                         f" > {g['tolerance']:.1%})")
    return f"benchmark {name!r}: GC totals above tolerance: " + "; ".join(parts)


def decide_gc(report: dict) -> None:
    """The GC rows judged against the schedule's spread (those with a raw
    p-value), over the whole report as one family: Holm at each row's
    alpha, and a change of at least its tolerance (min_effect) from the
    schedule mean; decreases likewise are improvements.  Rows judged with a
    fixed tolerance keep the status stats.gc_compare gave them."""
    rows = [g for b in report["benchmarks"].values() for g in b.get("gc") or [] if "p_raw" in g]
    if not rows or (report.get("gc_family") or {}).get("rows") == len(rows):
        return
    inc = stats.holm([g["p_raw"] for g in rows])
    dec = stats.holm([g["p_raw_decrease"] for g in rows])
    for g, pi, pd in zip(rows, inc, dec):
        g["p_adj"], g["p_adj_decrease"] = float(pi), float(pd)
        eff = math.inf if g["effect"] is None else g["effect"]
        g["status"] = ("regression" if pi < g["alpha"] and eff >= g["tolerance"] else
                       "improvement" if pd < g["alpha"] and -eff >= g["tolerance"] else "~")
    report["gc_family"] = {"rows": len(rows)}


def gc_mismatch(rows: list) -> list:
    """Rows of a proposed baseline's GC totals that disagree with the
    measurement: outside the tolerance either way, or, against a spread,
    two-sided p below alpha shared over the rows (Bonferroni) and a change
    of at least the tolerance."""
    tested = [g for g in rows if "p_raw" in g]
    out = [g for g in rows if "p_raw" not in g and g["status"] != "~"]
    for g in tested:
        p = min(1.0, 2 * min(g["p_raw"], g["p_raw_decrease"])) * len(tested)
        if p < g["alpha"] and (g["effect"] is None or abs(g["effect"]) >= g["tolerance"]):
            out.append(g)
    return out


def peak_must_rise(rows: list, summary: dict | None) -> None:
    """A site holds more at the peak only as part of a higher peak: when the
    sampled live words at the peak rose by less than min_effect, or (with
    the baseline's schedule spread) not significantly at the site's alpha,
    the sites' increases are a different mix of what is live at one moment
    (which minor-heap garbage, which thread's data), not more peak memory,
    and their rows become "~" with a note."""
    if not summary or not rows:
        return
    b, c = summary["baseline_words"], summary["current_words"]
    rise = c / b - 1 if b > 0 else (math.inf if c > 0 else 0.0)
    p_rise = summary.get("p_rise")
    for r in rows:
        if r.get("status") != "regression":
            continue
        if rise < r["min_effect"]:
            r["status"] = "~"
            r["note"] = f"the peak rose {rise:+.1%}, less than min_effect"
        elif p_rise is not None and p_rise >= r["alpha"]:
            r["status"] = "~"
            within = ("the spread of its runs" if summary.get("spread_from") == "runs"
                      else "its schedule spread")
            r["note"] = f"the peak rose {rise:+.1%}, within {within} (p = {fmt_p(p_rise)})"


def peak_line(summary: dict, regs: list) -> str:
    """`peak: +4.4 M words; held by `Prog.phase` (+4.3 M words), ...`: the
    change of the sampled live words at the peak, and the sites holding it."""
    c, b = summary["current_words"], summary["baseline_words"]
    held = ", ".join(f"`{printable(r['function'] or r['site'])}` "
                     f"({fmt_words((r['current_bytes'] - r['baseline_bytes']) / WORD_BYTES, True)})"
                     for r in worst_first(regs)[:3])
    more = f" and {len(regs) - 3} more" if len(regs) > 3 else ""
    return (f"peak: {fmt_words(c - b, True)}; held by {held or 'no single site'}{more} "
            f"(sampled live words at the peak {fmt_words(b)} -> {fmt_words(c)})")


def regression_message(name: str, check: str, regs: list) -> str:
    what = {"alloc": "allocate", "live": "retain at exit",
            "peak": "hold at the peak"}[check]
    lines = [f"benchmark {name!r}: {len(regs)} site(s) {what} more than the baseline:"]
    for r in worst_first(regs):
        lines.append(f"  {printable(r['site'])}: "
                     f"{fmt_bytes(r['baseline_bytes'])} -> {fmt_bytes(r['current_bytes'])} "
                     f"{fmt_delta(r)}"
                     + ("" if r.get("exact") else f", p(Holm)={fmt_p(r['p_adj'])}"))
        # what the row says of its site (callers, the cause of its change),
        # wrapped under it as the terminal's tables wrap it
        lines += detail_lines("; ".join(site_notes(r)))
    return "\n".join(lines)


POWER_SHARE = 0.01   # the sites a benchmark's stated power covers: >= 1% of its allocation


def power(b: dict) -> dict | None:
    """What a benchmark's alloc check can detect (80% power, at the level
    its family gives it): the MDE at its largest site and the worst MDE
    over the sites holding at least POWER_SHARE (None: some such site is
    too small for any increase to be significant); 0 when counted exactly."""
    rows = [r for r in b.get("alloc") or [] if not r.get("renamed_to")
            and r["baseline_samples"] > 0]
    if not rows:
        return None
    big = [r for r in rows if r["share"] >= POWER_SHARE] or rows
    top = max(big, key=lambda r: (r["share"], r["site"]))
    if top.get("exact"):
        return {"exact": True, "largest_site": top["site"], "largest_mde": 0.0,
                "worst_mde": 0.0, "share": POWER_SHARE, "sites": len(big)}
    mdes = [r.get("mde") for r in big]
    return {"exact": False, "largest_site": top["site"], "largest_mde": top.get("mde"),
            "worst_mde": None if None in mdes else max(mdes),
            "share": POWER_SHARE, "sites": len(big)}


def overhead_level(alpha: float, family: int) -> float:
    """The overhead check's level: alpha shared over the run's overhead
    checks (Bonferroni; each check's sign test is exact)."""
    return alpha / max(1, family)


def site_outcome(report: dict, name: str, key: str) -> dict:
    """A site check's outcome from the benchmark's decided rows (module step
    4): "failed" with the message naming the regressed sites, or "passed"."""
    b = report["benchmarks"][name]
    regs = [r for r in b.get(key) or [] if r.get("status") == "regression"]
    if not regs:
        return {"outcome": "passed", "message": ""}
    msg = regression_message(name, key, regs)
    if key == "peak" and b.get("peak_summary"):
        msg = f"benchmark {name!r}: {peak_line(b['peak_summary'], regs)}\n{msg}"
    return {"outcome": "failed", "message": msg}


def accepted(report: dict, name: str) -> bool:
    """Whether the accept label covers this benchmark: the label is on and
    its proposed baseline changed and matches what the code measures (its
    proposed_baseline check passed).  A benchmark without a matching
    proposed baseline, or a missing one, is never accepted."""
    checks = report["benchmarks"].get(name, {}).get("checks", {})
    return (bool(report.get("accept_changes"))
            and checks.get("proposed_baseline", {}).get("outcome") == "passed")


def accept_changes(report: dict) -> None:
    """Apply the accept label (accepted()) to every acceptable check that
    failed, and to a budget check whose failing budgets the pull request
    changed and whose annotation changes the label covers
    (budgets.accepted_rows); an "accepted" outcome that does not
    qualify (a shard report's claim, say) is turned back into "failed"."""
    acc = []
    for name, b in sorted(report["benchmarks"].items()):
        ok = accepted(report, name)
        for check in ACCEPTABLE:
            c = b.get("checks", {}).get(check)
            if not c or c["outcome"] not in ("failed", "accepted"):
                continue
            c["outcome"] = "accepted" if ok else "failed"
            if ok:
                acc.append({"benchmark": name, "check": check, "message": c.get("message", "")})
        c = b.get("checks", {}).get("budget")
        if c and c["outcome"] in ("failed", "accepted"):
            c["outcome"] = "accepted" if B.accepted_rows(report, b.get("budgets") or []) \
                else "failed"
            if c["outcome"] == "accepted":
                acc.append({"benchmark": name, "check": "budget", "message": c.get("message", "")})
    if report.get("accept_changes"):
        report["accepted"] = acc


def _rows(report: dict, keys) -> list:
    return [r for b in report["benchmarks"].values() for k in keys for r in b.get(k) or []]


def decide_sites(report: dict) -> None:
    """Module step 2 over every alloc, live and peak row of the report."""
    rows = _rows(report, SITE_CHECKS)
    if (report.get("family") or {}).get("rows") == len(rows):
        return
    decide_family(rows)
    for b in report["benchmarks"].values():
        peak_must_rise(b.get("peak") or [], b.get("peak_summary"))
        apply_moves(b)
        attribute_changes(b)
        if b.get("alloc"):
            b["power"] = power(b)
    report["family"] = {"rows": len(rows),
                        "tests": sum(1 for r in rows if not r.get("renamed_to"))}


def decide_proposed(report: dict) -> None:
    """Module step 2, two-sided, over every proposed-baseline row."""
    rows = _rows(report, ("proposed",))
    if (report.get("proposed_family") or {}).get("rows") == len(rows):
        return
    decide_family(rows, two_sided=True)
    report["proposed_family"] = {"rows": len(rows), "tests": len(rows)}


def decide(report: dict, runner_exit: int | None = None) -> dict:
    """The whole pass: families, site outcomes, accept label, exit code.
    `runner_exit` is pytest's own exit code when the checks ran as pytest
    items: an interrupted or broken session, or failures memprof-ci did not
    record, are errors of the run.  Stores and returns report["verdict"]."""
    decide_sites(report)
    decide_proposed(report)
    decide_gc(report)
    for name, b in report["benchmarks"].items():
        checks = b.setdefault("checks", {})
        for key, check in SITE_CHECKS.items():
            c = checks.get(check)
            if b.get(key) is not None and c and c["outcome"] in ("passed", "failed", "accepted"):
                checks[check] = site_outcome(report, name, key)
        c = checks.get("gc_totals")
        if b.get("gc") is not None and c and c["outcome"] in ("passed", "failed", "accepted"):
            msg = gc_failure(name, b["gc"])
            checks["gc_totals"] = {"outcome": "failed" if msg else "passed", "message": msg or ""}
    accept_changes(report)
    v = _exit_verdict(report)
    extra = None
    if runner_exit in (2, 3, 4):
        extra = (f"pytest stopped with exit code {runner_exit} (interrupted, internal or "
                 f"usage error)")
    elif runner_exit == 1 and v["exit_code"] == 0:
        extra = "pytest reported failures that memprof-ci did not record (collection error?)"
    if extra:
        report.setdefault("errors", []).append(extra)
        v = _exit_verdict(report)
    report["verdict"] = v
    return v


def compare_report(pairs: list, notes: list, params: dict, gc_tolerance: float,
                   gc_timing_tolerance: float) -> dict:
    """`memprof-ci compare`: a decided report for [(name, A, B)], B judged
    against A with the given parameters."""
    rep = new_report("compare")
    rep["notes"].extend(notes)
    for name, a, b in pairs:
        r = rep["benchmarks"][name] = {
            "name": name, "settings": dict(params, gc_tolerance=gc_tolerance,
                                           gc_timing_tolerance=gc_timing_tolerance,
                                           grouping=a.grouping),
            "notes": [], "overhead": None,
            "alloc": site_rows(name, "alloc", b, a, params),
            "live": site_rows(name, "live", b, a, params),
            "gc": gc_rows(a, b, dict(params, gc_tolerance=gc_tolerance, gc_exact=False,
                                     gc_timing_tolerance=gc_timing_tolerance,
                                     runs_spread=True)),
            "stream": stream(b, a)}
        if a.total_peak is not None and b.total_peak is not None:
            r["peak"] = site_rows(name, "peak", b, a, params)
            r["peak_summary"] = peak_summary(b, a)
        if a.rate != b.rate or a.runs != b.runs:
            r["notes"].append(f"different exposure: A rate={a.rate} x {a.runs} run(s), "
                              f"B rate={b.rate} x {b.runs} run(s); the test accounts for it")
        gc_check = ({"outcome": "passed", "message": ""} if r["gc"] else
                    {"outcome": "skipped", "message": "not measured: an input carries no GC "
                                                      "totals (a memtrace trace has none)"})
        r["checks"] = {"alloc_sites": {"outcome": "passed", "message": ""},
                       "live": {"outcome": "passed", "message": ""},
                       **({"peak": {"outcome": "passed", "message": ""}} if "peak" in r else {}),
                       "gc_totals": gc_check}
    decide(rep)
    return rep


def _exit_verdict(report: dict) -> dict:
    errors, regressions, accepted = [], [], []
    for name, b in sorted(report["benchmarks"].items()):
        # One cause (say a crashing benchmark) errors every check of the
        # benchmark: report each distinct message once.
        by_msg: dict = {}
        for check, c in sorted(b.get("checks", {}).items()):
            if c["outcome"] == "error":
                by_msg.setdefault(c.get("message", ""), []).append(check)
            elif c["outcome"] == "failed":
                regressions.append(f"{name}::{check}")
            elif c["outcome"] == "accepted":
                accepted.append(f"{name}::{check}")
        for msg, checks in by_msg.items():
            errors.append(f"{name} ({', '.join(checks)}): {msg}")
    for n in report.get("errors", []):
        errors.append(n)
    code = 2 if errors else (1 if regressions else 0)
    return {"exit_code": code, "errors": errors, "regressions": regressions,
            "accepted": accepted}
