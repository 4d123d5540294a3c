"""The decision pass: site rows, the family-wise correction, the pass/fail
rules, the overhead level, the accept label and the exit code.

Every way memprof-ci reaches a verdict goes through here: the pytest items
of `check` (plugin.py) while they run, `compare` on two inputs, and `merge`
over shard reports, so the three decide the same way.  stats.py holds the
tests and their arithmetic; fmt.py words numbers; the renderers (report.py,
report_html.py) only read what is decided here, above all report["verdict"].

The pass, in order, each step computed once per report:
1. Rows: site_rows() compares one benchmark's sites for one check.
2. Family: decide_sites() runs decide_family() over every alloc, live and
   peak row of the report (renames, then Holm, then classify()), then
   peak_must_rise() over each benchmark's peak rows; decide_proposed() does
   the same, two-sided, over every proposed-baseline row.  Each records the
   family it decided (report["family"], report["proposed_family"]) and does
   nothing when called again on the same rows, so the pytest items can
   decide early and the end of the run does not decide twice.
3. Rules: classify() alone turns adjusted p-values into statuses: a row is a
   "regression" when its adjusted p < alpha, its estimated increase >=
   min_effect and its share >= min_share; "improvement" symmetrically
   (reported, never failing); otherwise "~".  Two-sided: "mismatch" or "~".
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

Renames and moves are decided in one place, pair_renames(), which
decide_family() runs before Holm on one-sided families: a site that vanished
and a new site of the same benchmark and check whose counts the two-sided
exact test cannot tell apart (p > alpha) and whose line numbers or heaviest
caller chains match (when either side records them) become one row: the new
row carries both counts and `renamed_from`, and the vanished row gets
`renamed_to` and status "renamed" and leaves the family.  The merged row is
then tested like any site, so a rename that also allocates more still fails;
pairing is one-to-one, deterministic and idempotent.
"""

from __future__ import annotations

import math

from . import stats
from .fmt import fmt_bytes, fmt_delta, fmt_p, fmt_words, worst_first
from .profile import WORD_BYTES
from .report_doc import new_report
from .sites import Aggregate

RENAMED = "renamed"
CALLER_FRAMES = 4   # nearest callers compared to tell a rename from a new site
CALLER_CHAINS = 3   # heaviest caller chains kept per vanished or new site
# Report key of each site check's rows -> the check's name.
SITE_CHECKS = {"alloc": "alloc_sites", "live": "live", "peak": "peak"}
# Checks whose failure a maintainer's accept label can turn into "accepted".
ACCEPTABLE = ("alloc_sites", "live", "peak", "gc_totals", "overhead")


def classify(rows: list, two_sided: bool = False) -> None:
    """The pass/fail rules (module step 3), on rows stats.adjust_family has
    adjusted; sets each row's "status" (and a "note" where a significant
    increase is too small or too rare to fail)."""
    for r in rows:
        ratio = r["ratio"]
        relevant = r["share"] >= r["min_share"]
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


def _classify_exact(r: dict, ratio, relevant: bool, two_sided: bool) -> None:
    """Counted rows: the change is known, so the rule is its size alone."""
    change = math.inf if ratio is None else ratio - 1
    if two_sided:
        r["status"] = "mismatch" if abs(change) >= r["min_effect"] and relevant and change \
            else "~"
    elif change >= r["min_effect"] and relevant and change > 0:
        r["status"] = "regression"
    elif -change >= r["min_effect"] and relevant and change < 0:
        r["status"] = "improvement"
    else:
        r["status"] = "~"
        if change > 0:
            r["note"] = ("increase below min_effect" if change < r["min_effect"]
                         else "below min_share")


def decreased(r: dict) -> bool:
    """The site allocates (holds) less: significantly, or, counted, at all."""
    if r["current_samples"] >= r["baseline_samples"]:
        return False
    if r.get("exact"):
        return True
    return r.get("p_adj_decrease") is not None and r["p_adj_decrease"] < r["alpha"]


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


def _two_sided_p(c: int, b: int, e_cur: float, e_base: float) -> float:
    t = stats.test_counts([c], [b], e_cur, e_base)
    return float(min(1.0, 2 * min(float(t["p_inc"][0]), float(t["p_dec"][0]))))


def function_path(function) -> str | None:
    """A site's function without its module path: `Export.greedy.(fun)` ->
    `greedy.(fun)`, `Lists.build` -> `build` (leading capitalised
    components are modules)."""
    if not function:
        return None
    parts = function.split(".")
    while len(parts) > 1 and parts[0][:1].isupper():
        parts.pop(0)
    return ".".join(parts)


def _same_code(old: dict, new: dict) -> str | None:
    """Why a vanished and a new site are one piece of code, or None.

    In one file: their heaviest caller chains share one, or their line
    numbers are the same, or neither side records either.  Across files a
    line number or a caller chain alone is no evidence (unrelated code shares
    both); the function, without its module path, must be the same."""
    if old.get("file") != new.get("file"):
        fo = function_path(old.get("function"))
        if fo is not None and fo == function_path(new.get("function")):
            return f"the same function {fo} in another file"
        return None
    oc, nc = old.get("callers"), new.get("callers")
    if oc and nc and set(oc) & set(nc):
        return "the same file and caller chain"
    ol, nl = old.get("lines"), new.get("lines")
    if ol and nl and set(ol) == set(nl):
        return "the same file and lines"
    if not (oc and nc) and not (ol and nl):
        return "the same file (no lines or callers recorded)"
    return None


def pair_renames(rows: list) -> list:
    """Merge each vanished site with the new site it was renamed or moved to
    (module invariant 4), in place; returns the merged (new) rows."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["benchmark"], r["check"]), []).append(r)
    merged = []
    for _, g in sorted(groups.items()):
        gone = [r for r in g if r["current_samples"] == 0 and r["baseline_samples"] > 0
                and not r.get("renamed_to")]
        new = [r for r in g if r["baseline_samples"] == 0 and r["current_samples"] > 0]
        if not gone or not new:
            continue
        cands = []
        for o in gone:
            for n in new:
                if n.get("exact"):
                    p = 1.0 if n["current_samples"] == o["baseline_samples"] else 0.0
                else:
                    p = _two_sided_p(n["current_samples"], o["baseline_samples"],
                                     n["current_exposure"], o["baseline_exposure"])
                why = _same_code(o, n) if p > n["alpha"] else None
                if why:
                    cands.append((-p, o["site"], n["site"], o, n, why))
        used = set()
        for _, os_, ns, o, n, why in sorted(cands, key=lambda t: t[:3]):
            if os_ in used or ns in used:
                continue
            used.update((os_, ns))
            _merge_rename(o, n)
            n["renamed_because"] = why
            merged.append(n)
    return merged


def _merge_rename(old: dict, new: dict) -> None:
    c, b = new["current_samples"], old["baseline_samples"]
    e_cur, e_base = new["current_exposure"], old["baseline_exposure"]
    t = stats.test_counts([c], [b], e_cur, e_base)
    new.update({
        "renamed_from": old["site"], "baseline_samples": b,
        "baseline_bytes": b / e_base * WORD_BYTES,
        "baseline_lines": old.get("lines"),
        "share": max(new["share"], old["share"]),
        "p0": float(t["p0"]), "ratio": stats.finite_or_none(t["ratio"][0]),
        "ci_low": stats.finite_or_none(t["lo"][0]), "ci_high": stats.finite_or_none(t["hi"][0]),
        "p_raw": float(t["p_inc"][0]), "p_raw_decrease": float(t["p_dec"][0])})
    old["renamed_to"] = new["site"]


def _callers(agg: Aggregate, check: str) -> dict:
    """Site key -> its heaviest caller chains (the CALLER_FRAMES frames
    nearest the site frame, outermost first, joined by " > ")."""
    if agg.stacks is None:
        return {}
    weight: dict = {}
    for labels, key, pos, n, live in agg.stacks:
        w = n if check == "alloc" else live
        if not w or pos is None:
            continue
        chain = " > ".join(labels[max(0, pos - CALLER_FRAMES):pos]) or "(root)"
        d = weight.setdefault(key, {})
        d[chain] = d.get(chain, 0) + w
    return {k: [c for c, _ in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:CALLER_CHAINS]]
            for k, d in weight.items()}


def gc_rows(base_gc: dict, cur_gc: dict, bench) -> list:
    """The GC totals compared with the benchmark's tolerances: the counters
    that follow GC timing get gc_timing_tolerance unless the benchmark is
    declared gc_exact (STATISTICS.md)."""
    timing = bench.gc_tolerance if bench.gc_exact else bench.gc_timing_tolerance
    return stats.gc_compare(base_gc, cur_gc, bench.gc_tolerance, timing)


def gc_failure(name: str, rows: list) -> str | None:
    bad = [g for g in rows if g["status"] == "regression"]
    if not bad:
        return None
    parts = [f"{g['counter']} {g['baseline']:.0f} -> {g['current']:.0f} "
             f"({'from zero' if g['change'] is None else format(g['change'] * 100, '+.2f') + '%'}"
             f" > {g['tolerance']:.1%})" for g in bad]
    return f"benchmark {name!r}: GC totals above tolerance: " + "; ".join(parts)


def _count(s, check: str) -> int:
    return {"alloc": s.samples, "live": s.live_samples, "peak": s.peak_samples}[check]


def _total(agg: Aggregate, check: str) -> int:
    return {"alloc": agg.total_samples, "live": agg.total_live,
            "peak": agg.total_peak or 0}[check]


def _site_map(agg: Aggregate, check: str) -> dict:
    out = {}
    for k, s in agg.sites.items():
        n = _count(s, check)
        if n == 0 and check != "alloc":
            continue
        top_via = s.via.most_common(1)[0][0] if s.via else None
        lines = s.lines if check == "alloc" else s.live_lines
        out[k] = (n, {"file": s.file, "function": s.function, "line": s.line, "via": top_via,
                      "lines": {str(a): b for a, b in lines.items()}})
    return out


def site_rows(name: str, check: str, cur: Aggregate, base: Aggregate, params: dict) -> list:
    """Rows of the `alloc`, `live` (at exit) or `peak` (live at the peak)
    check: the same test on each site's counts of that kind."""
    ct, bt = _total(cur, check), _total(base, check)
    params = dict(params, exact=cur.rate == 1 and base.rate == 1)
    rows = stats.site_rows(name, check, _site_map(cur, check), _site_map(base, check),
                           ct, bt, cur.exposure, base.exposure, params)
    # Caller chains, for telling a rename from a new site: only where one
    # side has no samples (the only rows pair_renames looks at).
    cc, bc = _callers(cur, check), _callers(base, check)
    for r in rows:
        if r["current_samples"] == 0 and r["site"] in bc:
            r["callers"] = bc[r["site"]]
        elif r["baseline_samples"] == 0 and r["site"] in cc:
            r["callers"] = cc[r["site"]]
    return rows


def peak_summary(cur: Aggregate, base: Aggregate) -> dict:
    """Sampled live words at the peak (estimated: samples / exposure), both
    sides, for the peak check's report line."""
    return {"baseline_words": (base.total_peak or 0) / base.exposure,
            "current_words": (cur.total_peak or 0) / cur.exposure}


def peak_must_rise(rows: list, summary: dict | None) -> None:
    """A site holds more at the peak only as part of a higher peak: when the
    sampled live words at the peak rose by less than min_effect, the sites'
    increases are a different mix of what is live at one moment (which
    minor-heap garbage, which thread's data), not more peak memory, and
    their rows become "~" with a note."""
    if not summary or not rows:
        return
    b, c = summary["baseline_words"], summary["current_words"]
    rise = c / b - 1 if b > 0 else (math.inf if c > 0 else 0.0)
    for r in rows:
        if r.get("status") == "regression" and rise < r["min_effect"]:
            r["status"] = "~"
            r["note"] = f"the peak rose {rise:+.1%}, less than min_effect"


def peak_line(summary: dict, regs: list) -> str:
    """`peak: +4.4 M words; held by `Prog.phase` (+4.3 M words), ...`: the
    change of the sampled live words at the peak, and the sites holding it."""
    c, b = summary["current_words"], summary["baseline_words"]
    held = ", ".join(f"`{r['function'] or r['site']}` "
                     f"({fmt_words((r['current_bytes'] - r['baseline_bytes']) / WORD_BYTES, True)})"
                     for r in worst_first(regs)[:3])
    more = f" and {len(regs) - 3} more" if len(regs) > 3 else ""
    return (f"peak: {fmt_words(c - b, True)}; held by {held or 'no single site'}{more} "
            f"(sampled live words at the peak {fmt_words(b)} -> {fmt_words(c)})")


def regression_message(name: str, check: str, regs: list) -> str:
    what = {"alloc": "allocate", "live": "retain at exit",
            "peak": "hold at the peak"}[check]
    head = f"benchmark {name!r}: {len(regs)} site(s) {what} more than the baseline:"
    body = [f"  {r['site']}{' (via ' + r['via'] + ')' if r.get('via') else ''}"
            f"{' (renamed or moved from ' + r['renamed_from'] + ')' if r.get('renamed_from') else ''}: "
            f"{fmt_bytes(r['baseline_bytes'])} -> {fmt_bytes(r['current_bytes'])} "
            f"{fmt_delta(r)}" + ("" if r.get("exact") else f", p(Holm)={fmt_p(r['p_adj'])}")
            for r in worst_first(regs)]
    return "\n".join([head] + body)


def allocated_words(gc: dict) -> float | None:
    """Words the program allocated per run, exactly, from its GC totals:
    minor-heap words plus words allocated directly in the major heap
    (major_words less promoted_words).  None when not recorded (a memtrace
    trace has no GC totals)."""
    if any(k not in gc for k in ("minor_words", "major_words", "promoted_words")):
        return None
    if not gc["minor_words"] and not gc["major_words"]:
        return None
    return gc["minor_words"] + gc["major_words"] - gc["promoted_words"]


def stream(cur: Aggregate, base: Aggregate) -> dict:
    """Both sides' allocation stream, as far as the moved rule needs it."""
    return {"baseline_words": allocated_words(base.gc),
            "current_words": allocated_words(cur.gc),
            "same_sampling": cur.rate == base.rate and list(cur.seeds) == list(base.seeds),
            "baseline_samples": base.total_samples, "current_samples": cur.total_samples}


def stream_unchanged(st: dict | None) -> bool:
    """The program allocated the same words, to the word, and (sampled at
    the same rate and seeds) drew the same samples: so a site difference
    can only be a difference of attribution (STATISTICS.md, "Moved")."""
    if not st or st["baseline_words"] is None or st["current_words"] is None:
        return False
    return (st["baseline_words"] == st["current_words"] and st["same_sampling"]
            and st["baseline_samples"] == st["current_samples"])


def _words(r: dict, side: str) -> float:
    return r[f"{side}_bytes"] / WORD_BYTES


def _by_change(rows: list, sign: int) -> list:
    return sorted(rows, key=lambda r: (-sign * (_words(r, "current") - _words(r, "baseline")),
                                       r["site"]))


def _assign(r: dict, decs: list, pool: dict) -> list:
    """Take r's increase from the decreases' remaining pool, greedily."""
    need = _words(r, "current") - _words(r, "baseline")
    got = []
    for d in decs:
        take = min(need - sum(w for _, w in got), pool[d["site"]])
        if take > 0:
            got.append((d, take))
            pool[d["site"]] -= take
    return got


def _moved(r: dict, got: list, relabel: bool = True) -> None:
    if relabel:
        r["status"] = "moved"
    r["moved_from"] = [{"site": d["site"], "words": w} for d, w in got]
    for d, w in got:
        d.setdefault("moved_to", []).append({"site": r["site"], "words": w})


def _same_total(rows: list) -> bool:
    """The check's estimated total moved by less than min_effect: exactly
    for allocation under an unchanged stream; what is live at exit or at
    the peak also follows the GC's schedule, which a new binary shifts."""
    cur = sum(_words(r, "current") for r in rows)
    base = sum(_words(r, "baseline") for r in rows)
    return abs(cur - base) < rows[0]["min_effect"] * base if base else cur == 0


def apply_moves(b: dict) -> None:
    """The moved rule over one benchmark's alloc, live and peak rows.

    When the allocation stream is unchanged (stream_unchanged) and the
    check's total is the same (_same_total), every difference is a move: each regression
    and improvement becomes "moved".  Otherwise a site that allocates (or
    holds) more is a regression only by what is left of its increase once
    the decreases at other sites of the same check (significant ones, or
    any when counted exactly) are taken from, largest increase first: that
    rest must itself be positive and reach min_effect of the site's
    baseline.  Rows explained by moves get status "moved" and `moved_from`
    / `moved_to` lists of {site, words}; they never fail."""
    unchanged_stream = stream_unchanged(b.get("stream"))
    for key in SITE_CHECKS:
        rows = [r for r in b.get(key) or [] if not r.get("renamed_to")]
        for r in rows:
            r.pop("moved_from", None)
            r.pop("moved_to", None)
        if unchanged_stream and rows and _same_total(rows):
            decs = _by_change([r for r in rows if r["current_samples"] < r["baseline_samples"]], -1)
            pool = {d["site"]: _words(d, "baseline") - _words(d, "current") for d in decs}
            for r in _by_change([r for r in rows if r["current_samples"] > r["baseline_samples"]], 1):
                got = _assign(r, decs, pool)
                if r.get("status") == "regression" or got:
                    _moved(r, got, relabel=r.get("status") == "regression")
            for d in decs:
                if d.get("status") == "improvement":
                    d["status"] = "moved"
            continue
        incs = _by_change([r for r in rows if r.get("status") == "regression"], 1)
        decs = _by_change([r for r in rows if decreased(r)], -1)
        pool = {d["site"]: _words(d, "baseline") - _words(d, "current") for d in decs}
        for r in incs:
            got = _assign(r, decs, pool)
            moved = sum(w for _, w in got)
            rest = _words(r, "current") - _words(r, "baseline") - moved
            if rest > 0 and rest >= r["min_effect"] * _words(r, "baseline"):
                if moved > 0:
                    r["note"] = (f"at most {moved:.0f} of its {moved + rest:.0f} more words per "
                                 f"run moved from other sites; the rest fails")
                continue
            _moved(r, got)
        for d in decs:
            if d.get("moved_to") and d.get("status") == "improvement" and \
                    pool[d["site"]] < d["min_effect"] * _words(d, "baseline"):
                d["status"] = "moved"


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
    failed; an "accepted" outcome that does not qualify (a shard report's
    claim, say) is turned back into "failed"."""
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
    for name, b in report["benchmarks"].items():
        checks = b.setdefault("checks", {})
        for key, check in SITE_CHECKS.items():
            c = checks.get(check)
            if b.get(key) is not None and c and c["outcome"] in ("passed", "failed", "accepted"):
                checks[check] = site_outcome(report, name, key)
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


def diff_baselines(trusted: dict, proposed: dict) -> dict:
    """What a PR's proposed baselines change relative to the trusted ones."""
    out = {}
    for name in sorted(set(trusted) | set(proposed)):
        t, p = trusted.get(name), proposed.get(name)
        if t is None:
            out[name] = {"status": "added", "sites": []}
            continue
        if p is None:
            out[name] = {"status": "removed", "sites": []}
            continue
        sites = []
        for k in sorted(set(t.sites) | set(p.sites)):
            ts = t.sites[k].samples if k in t.sites else 0
            ps = p.sites[k].samples if k in p.sites else 0
            tl = t.sites[k].live_samples if k in t.sites else 0
            pl = p.sites[k].live_samples if k in p.sites else 0
            tk = t.sites[k].peak_samples if k in t.sites else 0
            pk = p.sites[k].peak_samples if k in p.sites else 0
            if ts == ps and tl == pl and tk == pk:
                continue
            tb, pb = t.bytes_of(ts), p.bytes_of(ps)
            sites.append({"site": k, "trusted_samples": ts, "proposed_samples": ps,
                          "trusted_live_samples": tl, "proposed_live_samples": pl,
                          "trusted_peak_samples": tk, "proposed_peak_samples": pk,
                          "trusted_bytes": tb, "proposed_bytes": pb,
                          "ratio": (pb / tb) if tb else None})
        sites.sort(key=lambda s: (-abs(s["proposed_bytes"] - s["trusted_bytes"]), s["site"]))
        gc = [{"counter": c, "trusted": t.gc.get(c, 0), "proposed": p.gc.get(c, 0)}
              for c in stats.GC_COUNTERS if t.gc.get(c) != p.gc.get(c)]
        cfg_t = (t.rate, t.seeds, t.frames, t.grouping)
        cfg_p = (p.rate, p.seeds, p.frames, p.grouping)
        changed = bool(sites or gc or cfg_t != cfg_p)
        out[name] = {"status": "changed" if changed else "unchanged", "sites": sites, "gc": gc,
                     "config_changed": cfg_t != cfg_p}
    return {"benchmarks": out}


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
            "gc": stats.gc_compare(a.gc, b.gc, gc_tolerance, gc_timing_tolerance),
            "stream": stream(b, a)}
        if a.total_peak is not None and b.total_peak is not None:
            r["peak"] = site_rows(name, "peak", b, a, params)
            r["peak_summary"] = peak_summary(b, a)
        if a.rate != b.rate or a.runs != b.runs:
            r["notes"].append(f"different exposure: A rate={a.rate} x {a.runs} run(s), "
                              f"B rate={b.rate} x {b.runs} run(s); the test accounts for it")
        gc_msg = gc_failure(name, r["gc"])
        r["checks"] = {"alloc_sites": {"outcome": "passed", "message": ""},
                       "live": {"outcome": "passed", "message": ""},
                       **({"peak": {"outcome": "passed", "message": ""}} if "peak" in r else {}),
                       "gc_totals": {"outcome": "failed" if gc_msg else "passed",
                                     "message": gc_msg or ""}}
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
