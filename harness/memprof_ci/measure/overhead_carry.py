"""When the baseline's counted overhead still holds, so that a run carries it
instead of counting again (the counted runs are most of a check's cost).

A counted figure is cycles(on) / cycles(off) - 1 for one program run with
one set of arguments, environment, rate, seed and frames, on one runtime
(overhead.py).  Profiling's cycles are what the sampler, the allocation
point counts and the exit's walk and rendering do, and that work follows
the program's allocation: which blocks are sampled (the seeded sampler
draws them from the sequence of allocations), their stacks, what is live
at exit and at the peak.  So a run carries the baseline's figure only when
everything that decides it is unchanged, and it checks that with its own
measurement, never with anything the change under test could state:

1. the baseline counted its overhead, single-domain (a concurrent
   benchmark counts differently on every run: never carried), with the
   same cache model and arguments, and its count records what decided it
   (`counted.key`: program, environment, rate, seed, frames, patch id);
2. that key is this run's: the same program path, environment, rate, seed
   and frames, and the same runtime patch id (known on both sides);
3. this run allocated exactly as the baseline did (same_allocation): the
   same rate, seeds, frames and grouping, the same exact minor and major
   words, the same samples at the same sites, live at exit (decided) and
   at the peak, the same sampled call stacks (the heaviest ones the
   baseline keeps, and the rest's total), and the same exact
   allocation-point counts.

A pull request that changes what it allocates therefore changes (3) and
is counted: its own change makes the count necessary, and it cannot skip
it.  What (3) does not see is a change to the program's own work that
allocates nothing (the figure's denominator); such a change makes
profiling cost the same cycles, and the carried record says so.

When only (3) fails, or the benchmark is concurrent (and the baseline
counted it so), a check (not update-baselines, whose record later checks
start from) may estimate instead of counting (scaled_record()): the
baseline's profiling cycles, cycles(on) - cycles(off), scaled by the
largest growth of what that work follows, all known exactly or sampled
by this run's own profiled runs (drivers()): the exact minor, major and
promoted words, minor and major collections, the heap's peak, the
allocation points' words, blocks and live words and their number, the
samples allocated, live at exit and at the peak, and the sampled frames
(samples times their stacks' depth), never scaled below 1; over the
baseline's cycles(off) (for a concurrent baseline, its median runs, and
its range's upper end scaled alike).  The run counts anyway when that
estimate (the upper end) comes within NEAR of the limit, or when a
driver the run has is missing or zero on the baseline's side.  So a change whose allocation makes profiling
costlier by more than a factor 1 / NEAR of what the estimate says is
counted before it could pass the limit.  What the estimate does not see,
as the carry does not: a change of the program's own work that allocates
nothing (the denominator), and work a program does only when it is
profiled; the record says "estimated" and how.

Invariants: carry() returns the reason either way, and a carried record is
the baseline's counts, re-derived (overhead.carried), never a new figure;
an estimated record keeps the baseline's counts it was scaled from, and
is never written to a baseline or a run directory.
"""

from __future__ import annotations

import statistics

from . import schedule
from .drivers import cachegrind
from .overhead import counted_args, counted_key, threshold_for

# An estimate within this share of the limit is not trusted: the run counts.
NEAR = 0.5


def same_allocation(cur, base) -> str | None:
    """None when `cur` (this run's Aggregate) allocated exactly as `base`
    (the baseline's), else what differs, in a few words."""
    if (cur.rate, list(cur.seeds), cur.frames, cur.grouping) != \
            (base.rate, list(base.seeds), base.frames, base.grouping):
        return "the run was profiled with other settings than the baseline"
    if not cur.live_decided:
        return "this run did not decide what is live at exit (live=off)"
    if cur.live_runs != base.live_runs:
        return "other runs decided what is live at exit than in the baseline"
    for k in ("minor_words", "major_words"):
        if cur.gc.get(k) is None or cur.gc.get(k) != base.gc.get(k):
            return f"its {k} differ from the baseline's ({cur.gc.get(k)} vs {base.gc.get(k)})"
    if (cur.total_samples, cur.total_live, cur.total_peak) != \
            (base.total_samples, base.total_live, base.total_peak):
        return (f"its samples differ from the baseline's ({cur.total_samples} vs "
                f"{base.total_samples} allocated, {cur.total_live} vs {base.total_live} live "
                f"at exit, {cur.total_peak} vs {base.total_peak} at the peak)")

    def sites(a):
        return {k: (s.samples, s.live_samples, s.peak_samples) for k, s in a.sites.items()
                if s.samples or s.live_samples or s.peak_samples}
    if sites(cur) != sites(base):
        moved = sorted(set(sites(cur).items()) ^ set(sites(base).items()))
        return f"its samples fall at other sites than the baseline's ({moved[0][0][:80]}, ...)"
    if cur.stacks is not None and base.stacks is not None and \
            (cur.stacks, cur.stacks_other) != (base.stacks, base.stacks_other):
        return "its sampled call stacks differ from the baseline's"
    if (cur.points is None) != (base.points is None):
        return "one side counted allocation points and the other did not"
    if cur.points is not None:
        def pts(p):
            return {k: (s.words, s.blocks, s.live_words) for k, s in p.sites.items()}
        if pts(cur.points) != pts(base.points):
            return "its exact allocation-point counts differ from the baseline's"
    return None


def same_run(bench, base, cur, patch_id: str | None) -> str | None:
    """None when a run of `bench` on this runtime (`patch_id`) that measured
    `cur` is, for the GC and the heap, the run `base` recorded: single-domain,
    the same runtime patch (known), the same allocation; else why not.
    update-baselines then keeps the replaced baseline's schedule spread and
    retaining paths (which follow from the allocation stream on one
    runtime: the GC is paced by allocation) instead of running them again."""
    if base is None:
        return "no previous baseline"
    if bench.concurrent:
        return "a concurrent benchmark's GC differs from run to run"
    if patch_id is None or base.meta.get("patch_id") != patch_id:
        return "recorded on another runtime patch (or one not known)"
    return same_allocation(cur, base)


def reusable_schedule(bench, base) -> dict | None:
    """The previous baseline's schedule section, if it holds the runs this
    update would make (same number, seed and dithers)."""
    sec = base.meta.get("schedule") if base is not None else None
    runs = schedule.runs_wanted()
    if sec is None or sec["runs"] != runs or sec["seed"] != bench.seeds[0] or \
            sec["dithers"] != schedule.dithers(bench, runs):
        return None
    return sec


def carry(bench, base, current, patch_id: str | None,
          estimate: bool = False) -> tuple[dict | None, str, str]:
    """(the baseline's overhead record to carry, why, "carried") when
    conditions 1-3 of the module docstring hold; with `estimate`, when only
    (3) fails or the benchmark is concurrent, (the scaled record, why,
    "estimated") if scaled_record gives one; else (None, why this run
    counts, "counted").  `current()` gives this run's Aggregate (or None:
    it failed), asked for only once conditions 1 and 2 hold."""
    why = _comparable(bench, base, patch_id)
    if why is not None:
        return None, why, "counted"
    cur = current()
    if cur is None:
        return None, "this run's profiles are not available", "counted"
    rec = base.meta["overhead"]
    if bench.concurrent:
        why = "a concurrent benchmark counts differently on every run"
    else:
        why = same_allocation(cur, base)
        if why is None:
            commit = base.meta.get("git_commit")
            return rec, (
                f"carried from the baseline{' of ' + commit[:12] if commit else ''}: same "
                f"runtime patch {patch_id[:16]}, program, environment, arguments, rate, "
                f"seed and frames, and this run allocated exactly as it did "
                f"({cur.total_samples} samples at the same sites, the same exact words); "
                f"a change that allocates nothing differently was not counted again"), "carried"
        why = f"this run allocated differently: {why}"
    if not estimate:
        return None, why, "counted"
    scaled, how = scaled_record(bench, base, cur)
    return (None, f"{why}; {how}", "counted") if scaled is None else \
        (scaled, f"{why}; {how}", "estimated")


def _comparable(bench, base, patch_id: str | None) -> str | None:
    """None when conditions 1 and 2 of the module docstring hold (but for
    concurrency, on which the baseline must agree), else why not."""
    if base is None:
        return "no baseline to carry from"
    c = (base.meta.get("overhead") or {}).get("counted")
    if c is None:
        return "the baseline has no counted overhead"
    if bench.concurrent != c["concurrent"]:
        return "the baseline counted it as another kind of benchmark (concurrent or not)"
    if c["model"] != cachegrind.MODEL or c["args"] != counted_args(bench):
        return "the baseline counted with another model or other arguments"
    key = c.get("key")
    if key is None:
        return ("the baseline's count does not record what decided it (recorded "
                "before the runs carried counts)")
    if patch_id is None or key["patch_id"] is None:
        return "the runtime's patch id is not known on both sides (MEMPROF_CI_PATCH_ID)"
    now = counted_key(bench, patch_id)
    changed = [k for k in ("patch_id", "program", "env", "rate", "seed", "frames")
               if now[k] != key[k]]
    if changed:
        return f"its {', '.join(changed)} changed since the baseline counted"
    return None


def drivers(a) -> dict:
    """What profiling's work follows in the runs of Aggregate `a`, by name:
    exact GC totals and allocation-point counts, samples, and sampled
    frames (the kept stacks' mean depth stands for the rest's)."""
    d = {k.replace("_", " "): a.gc.get(k) for k in (
        "minor_words", "major_words", "promoted_words", "minor_collections",
        "major_collections", "top_heap_words")}
    d.update({"samples": a.total_samples, "samples live at exit": a.total_live,
              "samples at the peak": a.total_peak})
    if a.points is not None:
        ps = list(a.points.sites.values())
        d.update({"point words": sum(p.words for p in ps),
                  "point blocks": sum(p.blocks for p in ps),
                  "point live words": sum(p.live_words or 0 for p in ps),
                  "allocation points": len(ps)})
    if a.stacks is not None:
        kept = sum(st[3] for st in a.stacks)
        frames = sum(len(st[0]) * st[3] for st in a.stacks)
        d["sampled frames"] = frames + (frames / kept if kept else 0) * a.stacks_other[0]
    return d


def scale(cur, base) -> tuple[float | None, str]:
    """(the largest growth, at least 1, of a driver from `base` to `cur`,
    which driver and how much), or (None, why no scale can be given)."""
    now, then = drivers(cur), drivers(base)
    s, what = 1.0, "no driver grew"
    for k, v in now.items():
        if not v:
            continue
        if not then.get(k):
            return None, f"its {k} ({v:,.0f}) have nothing to scale from on the baseline"
        if v / then[k] > s:
            s, what = v / then[k], f"its {k}, {then[k]:,.0f} -> {v:,.0f}"
    return s, what


def scaled_record(bench, base, cur) -> tuple[dict | None, str]:
    """The baseline's counted overhead record with its figures scaled to
    this run's allocation (module docstring), and how; or (None, why the
    run counts instead)."""
    if cur is None:
        return None, "this run's profiles are not available"
    s, what = scale(cur, base)
    if s is None:
        return None, f"no estimate: {what}"
    rec = base.meta["overhead"]
    prof = max(rec["cycles_on"] - rec["cycles_off"], 0.0) * s
    est = prof / rec["cycles_off"]
    # A concurrent baseline's range: its upper end, scaled, is what is
    # held against the limit.
    high = max(est, rec["ci_high"] * s)
    c = rec["counted"]
    ir_off = statistics.median(e["Ir"] for e in c["off"])
    ir_on = statistics.median(e["Ir"] for e in c["on"])
    limit, _, _ = threshold_for(bench, rec, c["args"])
    how = (f"the baseline's counted {rec['estimate']:+.2%} cycles"
           + (f" (up to {rec['ci_high']:+.2%})" if len(c["on"]) > 1 else "")
           + f" with profiling's part scaled x{s:.3f} ({what}, the largest growth of what "
           f"profiling's work follows) gives {est:+.2%}"
           + (f" (up to {high:+.2%})" if len(c["on"]) > 1 else ""))
    if high >= NEAR * limit:
        return None, f"{how}, within {NEAR:.0%} of the limit {limit:+.2%}: counted"
    figures = {"estimate": est, "ci_low": est, "ci_high": high,
               "instructions": max(ir_on - ir_off, 0) * s / ir_off,
               "cycles_off": rec["cycles_off"], "cycles_on": rec["cycles_off"] + prof,
               "scale": s, "method": f"estimated, not counted: {how}"}
    return {"counted": c, "scaled": figures}, (
        f"estimated, not counted: {how}, under {NEAR:.0%} of the limit {limit:+.2%}; "
        f"an estimate does not see a change of the program's own work that allocates "
        f"nothing, nor work done only when profiled")
