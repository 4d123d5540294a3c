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
   benchmark counts differently on every run: always counted), with the
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

Invariants: carry() returns the reason either way, and a carried record is
the baseline's counts, re-derived (overhead.carried), never a new figure.
"""

from __future__ import annotations

from . import schedule
from .drivers import cachegrind
from .overhead import counted_args, counted_key


def same_allocation(cur, base) -> str | None:
    """None when `cur` (this run's Aggregate) allocated exactly as `base`
    (the baseline's), else what differs, in a few words."""
    if (cur.rate, list(cur.seeds), cur.frames, cur.grouping) != \
            (base.rate, list(base.seeds), base.frames, base.grouping):
        return "the run was profiled with other settings than the baseline"
    if not cur.live_decided:
        return "this run did not decide what is live at exit (live=off)"
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


def carry(bench, base, current, patch_id: str | None) -> tuple[dict | None, str]:
    """(the baseline's overhead record to carry, why) when conditions 1-3
    of the module docstring hold; else (None, why this run counts).
    `current()` gives this run's Aggregate (or None: it failed), asked for
    only once conditions 1 and 2 hold."""
    if base is None:
        return None, "no baseline to carry from"
    rec = base.meta.get("overhead")
    c = (rec or {}).get("counted")
    if c is None:
        return None, "the baseline has no counted overhead"
    if bench.concurrent or c["concurrent"]:
        return None, "a concurrent benchmark counts differently on every run"
    if c["model"] != cachegrind.MODEL or c["args"] != counted_args(bench):
        return None, "the baseline counted with another model or other arguments"
    key = c.get("key")
    if key is None:
        return None, ("the baseline's count does not record what decided it (recorded "
                      "before the runs carried counts)")
    if patch_id is None or key["patch_id"] is None:
        return None, "the runtime's patch id is not known on both sides (MEMPROF_CI_PATCH_ID)"
    now = counted_key(bench, patch_id)
    changed = [k for k in ("patch_id", "program", "env", "rate", "seed", "frames")
               if now[k] != key[k]]
    if changed:
        return None, f"its {', '.join(changed)} changed since the baseline counted"
    cur = current()
    if cur is None:
        return None, "this run's profiles are not available"
    why = same_allocation(cur, base)
    if why is not None:
        return None, f"this run allocated differently: {why}"
    commit = base.meta.get("git_commit")
    return rec, (f"carried from the baseline{' of ' + commit[:12] if commit else ''}: same "
                 f"runtime patch {patch_id[:16]}, program, environment, arguments, rate, "
                 f"seed and frames, and this run allocated exactly as it did "
                 f"({cur.total_samples} samples at the same sites, the same exact words); "
                 f"a change that allocates nothing differently was not counted again")
