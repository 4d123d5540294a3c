"""Comparison rows: what the checks compare, built from two Aggregates.

Per benchmark and check (alloc, live at exit, live at the peak) one row per
site seen on either side, with both counts, exposures, the exact test's raw
p-values and interval (stats.site_rows), and the evidence renames need (line
detail, heaviest caller chains); the GC totals' rows; the allocation stream
that the moved rule reads; and what a pull request's proposed baselines
change.  Invariants: nothing is decided here (statuses come from
verdict.py); rows are plain JSON-able dicts, so `merge` re-decides them
exactly as a single run would.
"""

from __future__ import annotations

from collections import Counter

from ..sites import point_sites
from . import stats
from ..errors import InfraError, InputError
from ..sites.keys import generated_what
from ..sites.grouping import Aggregate

CALLER_FRAMES = 4   # nearest callers compared to tell a rename from a new site
CALLER_CHAINS = 3   # heaviest caller chains kept per vanished or new site


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


def schedule_draws(agg: Aggregate) -> int:
    """How many schedules an Aggregate's runs saw: its distinct GC runs (one
    for a single-domain program, whose seeds' runs collect alike)."""
    return max(1, len({tuple(sorted(g.items())) for g in agg.gc_runs}))


def gc_rows(base: Aggregate, cur: Aggregate, settings: dict) -> list:
    """The GC totals compared (STATISTICS.md, "GC totals"): minor_words
    with gc_tolerance; the counters that follow the GC's schedule against
    the spread the baseline recorded (stats.gc_spread_rows), or, when it
    recorded none, with gc_timing_tolerance; all four with gc_tolerance
    when the benchmark is declared gc_exact.  With settings["runs_spread"]
    (`compare`, whose sides record no dithered runs) and no recorded
    spread, those counters are judged against the spread of both sides'
    runs where each side's runs saw at least two schedules (several
    domains or systhreads: each run its own schedule).  A `concurrent`
    benchmark's counters judged against the recorded spread must also
    change by its gc_timing_tolerance: the OS's interleaving moves them by
    more than the dithered schedules show.  Without a manifest (`compare`)
    a benchmark whose runs on both sides saw several schedules counts as
    concurrent."""
    sched = base.meta.get("schedule")
    if not settings["gc_exact"] and not sched and settings.get("runs_spread") and \
            min(schedule_draws(base), schedule_draws(cur)) >= 2:
        rows = [g for g in stats.gc_compare(base.gc, cur.gc, settings["gc_tolerance"])
                if g["counter"] not in stats.GC_TIMING_COUNTERS]
        return rows + stats.gc_spread_rows(base.gc, base.gc_runs, [], cur.gc, cur.gc_runs,
                                           settings, pooled=True)
    if settings["gc_exact"] or not sched:
        timing = settings["gc_tolerance" if settings["gc_exact"] else "gc_timing_tolerance"]
        return stats.gc_compare(base.gc, cur.gc, settings["gc_tolerance"], timing)
    rows = [g for g in stats.gc_compare(base.gc, cur.gc, settings["gc_tolerance"])
            if g["counter"] not in stats.GC_TIMING_COUNTERS]
    if settings.get("concurrent") or min(schedule_draws(base), schedule_draws(cur)) >= 2:
        # Several domains or systhreads: which blocks survive a collection
        # follows how the OS interleaves them, which the dithered schedules
        # recorded at one machine load do not span; a change must also
        # reach the benchmark's gc_timing_tolerance.
        settings = dict(settings, min_effect=max(settings["min_effect"],
                                                 settings["gc_timing_tolerance"]))
    return rows + stats.gc_spread_rows(base.gc, base.gc_runs, sched["gc"], cur.gc,
                                       cur.gc_runs, settings)


def run_peaks(cur: Aggregate, base: Aggregate) -> bool:
    """Both sides were summed from at least two runs that each recorded
    their peak, so the runs themselves show how far the peak spreads."""
    return len(cur.peak_runs) >= 2 and len(base.peak_runs) >= 2


def _peak_spread(rows: list, cur: Aggregate, base: Aggregate) -> None:
    """Peak rows judged against the sites' schedule spread, when the
    baseline recorded one (its dithered runs: one run each at its rate);
    else, when both sides are runs with their own peaks (a `compare` of
    profile sets), against the spread of both sides' runs (each run's
    words at the site around its side's mean, pooled): a run's seed and
    schedule move which moment is the peak and what is live then, which
    the sampling test alone does not allow for."""
    sched = base.meta.get("schedule")
    if sched and "sites" in sched:
        sigma = {k: stats.sample_sd(v) / base.rate for k, v in sched["sites"].items()}
        stats.schedule_adjust(rows, sigma, schedule_draws(cur), schedule_draws(base),
                              sched["runs"] - 1)
        return
    if sched or not run_peaks(cur, base):
        return
    sigma, df = {}, 0
    for r in rows:
        k = r["site"]
        sigma[k], df = stats.pooled_sd([s.get(k, 0) / base.rate for _, s in base.peak_runs],
                                       [s.get(k, 0) / cur.rate for _, s in cur.peak_runs])
    stats.schedule_adjust(rows, sigma, len(cur.peak_runs), len(base.peak_runs), df)
    for r in rows:
        if "schedule_spread_bytes" in r:
            r["spread_from"] = "runs"


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


def counted_points(cur: Aggregate, base: Aggregate, check: str) -> bool:
    """Both sides counted `check` exactly per allocation point."""
    return (cur.points is not None and base.points is not None
            and cur.points.counts(check) and base.points.counts(check))


def _point_map(agg: Aggregate, check: str) -> dict:
    out = {}
    for k, s in agg.points.sites.items():
        n = s.words if check == "alloc" else s.live_words
        if (n == 0 and check != "alloc") or point_sites.is_pseudo(s):
            continue
        lines = s.lines if check == "alloc" else s.live_lines
        out[k] = (n, {"file": s.file, "function": s.function, "line": s.line, "via": None,
                      "lines": {str(a): b for a, b in lines.items()}})
    return out


def _in_c_map(agg: Aggregate, check: str) -> dict:
    j = 0 if check == "alloc" else 1
    suffix = point_sites.in_c_suffix(agg.points)
    out = {}
    for k, v in agg.points.in_c.items():
        if v[j] or check == "alloc":
            s = agg.sites.get(k)
            out[k + suffix] = (v[j], {"file": s.file if s else None,
                                      "function": s.function if s else None,
                                      "line": None, "via": None, "lines": {}})
    return out


CHANGED_CALLERS = 4   # callers kept per direction in a row's `caller_changes`


def _own(s) -> str:
    return s.key[:-len(point_sites.IN_C)] if s.key.endswith(point_sites.IN_C) else s.key


def caller_changes(cur, base, check: str = "alloc",
                   limit: int = CHANGED_CALLERS) -> list:
    """How each sampled caller's part of a point site's words (alloc) or
    live words changed between two sides (point_sites.PointSite each, None
    on a side that lacks the site): each side's exact words split by its
    samples' callers, estimated with an interval
    (stats.scaled_share_change), per caller {"site", "baseline_words",
    "current_words", "change_words", "change_low", "change_high",
    "baseline_samples", "current_samples"}.  Kept: the `limit` largest
    increases, then the `limit` largest decreases.  Empty when the site is
    its own only caller on both sides (user code) or neither side sampled
    a caller."""
    sides = []
    for s in (cur, base):
        if s is None:
            sides.append((Counter(), 0, 0.0))
            continue
        c = s.callers if check == "alloc" else s.live_callers
        w = s.words if check == "alloc" else (s.live_words or 0)
        sides.append((c, sum(c.values()), float(w)))
    (cc, cn, cw), (bc, bn, bw) = sides
    names = set(cc) | set(bc)
    own = {_own(s) for s in (cur, base) if s is not None}
    if not names or names <= own:
        return []
    out = []
    for k in sorted(names):
        d = stats.scaled_share_change(cc[k], cn, cw, bc[k], bn, bw)
        out.append(dict(site=k, baseline_samples=bc[k], current_samples=cc[k], **d))
    up = sorted((x for x in out if x["change_words"] > 0),
                key=lambda x: (-x["change_words"], x["site"]))[:limit]
    down = sorted((x for x in out if x["change_words"] < 0),
                  key=lambda x: (x["change_words"], x["site"]))[:limit]
    return up + down


def _point_rows(name: str, check: str, cur: Aggregate, base: Aggregate, params: dict) -> list:
    """The alloc or live rows of two sides counted per allocation point:
    words, one run each (exposure 1), judged as counted rows with the
    min_effect of exact counts; a point site that is not user code carries
    its estimated split among the sampled callers (`split`) and how each
    caller's part changed between the sides (`caller_changes`, the evidence
    moves.attribute_changes decides from; `callers_unrecorded` instead
    when a side, a baseline written before callers were kept, has none),
    and one in C (a call point's)
    the sampled site it stands for.  Then what C
    allocated that no call point counted, per calling site, from the
    samples (sampled rows, tested as any: point_sites.py).  Sides that
    disagree on call points would key C's allocation apart: an error."""
    if cur.points.calls != base.points.calls:
        old = base if cur.points.calls else cur
        raise InputError(f"{name}: the {'baseline' if old is base else 'current run'} counted "
                         f"allocation in C only in total, the other per OCaml call: "
                         f"record both with one runtime (memprof-ci update-baselines)")
    exact = dict(params, exact=True,
                 min_effect=params.get("exact_min_effect", params["min_effect"]))
    rows = stats.site_rows(name, check, _point_map(cur, check), _point_map(base, check),
                           cur.points.total(check), base.points.total(check), 1.0, 1.0, exact)
    for r in rows:
        r["points"] = True
        cs, bs = cur.points.sites.get(r["site"]), base.points.sites.get(r["site"])
        s = cs or bs
        if s is not None and point_sites.split(s, check):
            r["split"] = point_sites.split(s, check)
            # the sampled site whose stacks picture it: its heaviest caller
            # (moves.attribute_changes names the caller that changed instead)
            r["stacks_site"] = r["split"][0]["site"]
        elif r["site"].endswith(point_sites.IN_C):
            r["stacks_site"] = r["site"][:-len(point_sites.IN_C)]
        if cur.points.callers and base.points.callers:
            changes = caller_changes(cs, bs, check)
            if changes:
                r["caller_changes"] = changes
        elif r.get("split"):
            r["callers_unrecorded"] = True
    in_c = stats.site_rows(name, check, _in_c_map(cur, check), _in_c_map(base, check),
                           _total(cur, check), _total(base, check), cur.exposure_of(check),
                           base.exposure_of(check), dict(params, exact=cur.rate == 1 and base.rate == 1))
    suffix = point_sites.in_c_suffix(cur.points)
    for r in in_c:
        r["stacks_site"] = r["site"][:-len(suffix)]
    return rows + in_c


def site_rows(name: str, check: str, cur: Aggregate, base: Aggregate, params: dict) -> list:
    """Rows of the `alloc`, `live` (at exit) or `peak` (live at the peak)
    check: the same test on each site's counts of that kind; the exact
    counts per allocation point where both sides have them (alloc, and
    live when both counted it).  Live rows of a side that did not decide
    what is live at exit are an internal error, never a verdict.  A site
    in code the compiler generated (caml_curry2, ...) says what that code
    is (`generated`)."""
    if check == "live" and not (cur.live_decided and base.live_decided):
        raise InfraError(f"benchmark {name!r}: internal error: the live check was given "
                         f"runs that did not decide what is live at exit")
    if check != "peak" and counted_points(cur, base, check):
        rows = _point_rows(name, check, cur, base, params)
    else:
        ct, bt = _total(cur, check), _total(base, check)
        rows = stats.site_rows(name, check, _site_map(cur, check), _site_map(base, check),
                               ct, bt, cur.exposure_of(check), base.exposure_of(check),
                               dict(params, exact=cur.rate == 1 and base.rate == 1))
    if check == "peak":
        _peak_spread(rows, cur, base)
    for r in rows:
        what = generated_what(r.get("function"))
        if what:
            r["generated"] = what
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
    sides, for the peak check's report line; with the baseline's schedule
    spread of the total, "p_rise", the one-sided p of a higher peak against
    sampling and schedule (stats.spread_test)."""
    b, c = (base.total_peak or 0) / base.exposure, (cur.total_peak or 0) / cur.exposure
    out = {"baseline_words": b, "current_words": c}
    sched = base.meta.get("schedule")
    samp = 0.0 if cur.rate == 1 and base.rate == 1 else (
        (cur.total_peak or 0) / cur.exposure ** 2 + (base.total_peak or 0) / base.exposure ** 2)
    if sched and "peak_samples" in sched:
        sigma = stats.sample_sd(sched["peak_samples"]) / base.rate
        sched_var = sigma * sigma * (1 / schedule_draws(cur) + 1 / schedule_draws(base))
        out["spread_words"] = sigma
        out["p_rise"] = stats.spread_test(c - b, samp, sched_var, sched["runs"] - 1)[0]
    elif not sched and run_peaks(cur, base):
        # No schedule recorded: the spread of both sides' runs (_peak_spread).
        sigma, df = stats.pooled_sd([t / base.rate for t, _ in base.peak_runs],
                                    [t / cur.rate for t, _ in cur.peak_runs])
        sched_var = sigma * sigma * (1 / len(cur.peak_runs) + 1 / len(base.peak_runs))
        out["spread_words"], out["spread_from"] = sigma, "runs"
        out["p_rise"] = stats.spread_test(c - b, samp, sched_var, df)[0]
    return out


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
        # The sections that judge later runs besides the sites and GC totals
        # (the schedule's spread, the overhead record, the exact points).
        sections = [k for k, a, b in (("schedule", t.meta.get("schedule"), p.meta.get("schedule")),
                                      ("overhead", t.meta.get("overhead"), p.meta.get("overhead")),
                                      ("points", t.points, p.points)) if a != b]
        changed = bool(sites or gc or cfg_t != cfg_p or sections)
        out[name] = {"status": "changed" if changed else "unchanged", "sites": sites, "gc": gc,
                     "config_changed": cfg_t != cfg_p, "sections": sections}
    return {"benchmarks": out}
