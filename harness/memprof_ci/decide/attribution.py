"""Where allocation went: renamed sites and allocation that moved.

Two decisions of verdict.py's pass live here, both about attribution
rather than amount (harness/STATISTICS.md, "Renamed sites" and "Moved"):

1. pair_renames(), before Holm: a site that vanished and a new site of the
   same benchmark and check whose counts the two-sided exact test cannot
   tell apart (p > alpha; counted exactly: equal) and whose code is the same
   (_same_code), neither below the noise floor (below_noise_floor), become
   one row: the new row carries both counts,
   `renamed_from` and `renamed_because`, and the vanished row gets
   `renamed_to` and status "renamed" and leaves the family.  Pairing is
   one-to-one, deterministic and idempotent (merged rows have both counts).
2. apply_moves(), after the rules: a regression that other sites'
   decreases account for, or any difference under an unchanged allocation
   stream, is "moved" and never fails; `moved_from` / `moved_to` say where,
   naming no row below the noise floor.
3. attribute_changes(), last: a regressed or improved row at a shared
   allocation point (the standard library's, the runtime's) names, as
   `cause`, the callers whose part of it changed in the row's direction
   (comparison.py's `caller_changes`, estimated from both sides' samples), not
   its largest callers; its graph (`stacks_site`) is the first of them.
   It changes no status.
"""

from __future__ import annotations

from ..sites import point_sites
from . import stats
from ..inputs.profile import WORD_BYTES
from ..sites.keys import is_generated
from ..sites.keys import is_stdlib

SITE_KEYS = ("alloc", "live", "peak")   # the report's row lists of the site checks
RENAMED = "renamed"


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


# Rows under this many samples on both sides are below the noise floor:
# the exact test cannot tell such a count from one several times as large,
# so agreeing counts say nothing of where the allocation went.
NOISE_SAMPLES = 10
# A counted change smaller than this per run never fails: the startup
# allocations that hold the executable's path (Sys.executable_name), argv
# and environment variables differ by that much between two checkouts of
# the same code.  Counted rows under it on both sides are below the noise
# floor too.
EXACT_MIN_BYTES = 1024


def below_noise_floor(r: dict) -> bool:
    """A row too small to say where allocation went: under min_share, or
    with fewer than NOISE_SAMPLES samples (counted: EXACT_MIN_BYTES bytes)
    on each side.  Such rows are never paired as renames nor named as the
    two ends of a move."""
    if r["share"] < r["min_share"]:
        return True
    if r.get("exact"):
        return max(r["baseline_bytes"], r["current_bytes"]) < EXACT_MIN_BYTES
    return max(r["baseline_samples"], r["current_samples"]) < NOISE_SAMPLES


def _kind(r: dict) -> tuple:
    """What a site is, which a rename never changes: code of the standard
    library (or the runtime's pseudo points) or the user's, and allocated
    at an OCaml point or by runtime primitives (counted or sampled)."""
    site = r["site"]
    primitive = next((x for x in point_sites.PRIMITIVE_SUFFIXES if site.endswith(x)), "")
    fn, fl = r.get("function"), r.get("file")
    shared = (fl is None and fn in point_sites.PSEUDO) or \
        is_stdlib({"function": fn, "file": fl}) or is_generated(fn)
    return shared, primitive


def _same_code(old: dict, new: dict) -> str | None:
    """Why a vanished and a new site are one piece of code, or None.

    Never across kinds (_kind: the standard library's code against the
    user's, an OCaml point against a runtime primitive).  In one file (a
    file both rows name): their heaviest caller chains share one, or their
    line numbers are the same, or neither side records either.  Across
    files, or where a file is unknown, a line number or a caller chain
    alone is no evidence (unrelated code shares both); the function,
    without its module path, must be the same."""
    if _kind(old) != _kind(new):
        return None
    if old.get("file") is None or old.get("file") != new.get("file"):
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
                and not r.get("renamed_to") and not below_noise_floor(r)]
        new = [r for r in g if r["baseline_samples"] == 0 and r["current_samples"] > 0
               and not below_noise_floor(r)]
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


def decreased(r: dict) -> bool:
    """The site allocates (holds) less: significantly, or, counted, at all."""
    if r["current_samples"] >= r["baseline_samples"]:
        return False
    if r.get("exact"):
        return True
    return r.get("p_adj_decrease") is not None and r["p_adj_decrease"] < r["alpha"]


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
    """Relabel r "moved" (when asked) and record where its increase came
    from; sources below the noise floor are not named (the reports then
    say "other sites"), and a row below it that keeps its status records
    nothing."""
    if relabel:
        r["status"] = "moved"
    elif below_noise_floor(r):
        return
    got = [(d, w) for d, w in got if not below_noise_floor(d)]
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
    for key in SITE_KEYS:
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


CAUSE_CALLERS = 3   # callers a regressed or improved shared point names


def attribute_changes(b: dict) -> None:
    """Module step 3 over one benchmark's alloc, live and peak rows:
    `cause` is the (at most CAUSE_CALLERS) callers whose estimated part
    changed in the direction of the row's change (an increase for a
    regression, a decrease for an improvement) with an interval that
    excludes no change, largest first, or, when no caller's does, the one
    whose estimate changed most that way; each {"site", "change_words",
    "change_low", "change_high", "new", "gone"} ("new": the baseline drew
    no sample from that caller at the point; "gone": the current run drew
    none).  A row without that evidence, or of another status, gets none
    and keeps its overall split; a changed one whose baseline kept no
    callers (comparison.py's `callers_unrecorded`) says so (`cause_unknown`).
    Idempotent."""
    for key in SITE_KEYS:
        for r in b.get(key) or []:
            r.pop("cause", None)
            r.pop("cause_unknown", None)
            if r.get("split"):
                r["stacks_site"] = r["split"][0]["site"]
            sign = {"regression": 1, "improvement": -1}.get(r.get("status"))
            if sign is not None and r.get("callers_unrecorded"):
                r["cause_unknown"] = "the baseline recorded no callers to compare"
            if sign is None or not r.get("caller_changes"):
                continue
            if sign * (r["current_bytes"] - r["baseline_bytes"]) <= 0:
                continue
            grew = sorted((c for c in r["caller_changes"] if sign * c["change_words"] > 0),
                          key=lambda c: (-sign * c["change_words"], c["site"]))
            # Those whose interval excludes no change; else the likeliest one.
            sure = [c for c in grew
                    if sign * c["change_low" if sign > 0 else "change_high"] > 0]
            cause = [{"site": c["site"], "change_words": c["change_words"],
                      "change_low": c["change_low"], "change_high": c["change_high"],
                      "new": c["baseline_samples"] == 0, "gone": c["current_samples"] == 0}
                     for c in (sure or grew[:1])[:CAUSE_CALLERS]]
            if cause:
                r["cause"] = cause
                r["stacks_site"] = cause[0]["site"]
