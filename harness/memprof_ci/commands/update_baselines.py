"""`memprof-ci update-baselines`: run the benchmarks and write what they
allocated as their new baselines, under the baselines directory's lock.

Each written baseline is announced on stdout with its plan, the power it
states and its cost; advice and budget warnings go to stderr.  The
allocation budgets are not judged here (check does), but one over its
limit is warned about, each baseline records the annotated functions its
run saw (store/baseline.py), and `--ratchet` lowers each manifest budget
whose benchmarks were all measured to what they now allocate there (per
run, or for words_per_call the most in one call), rewriting only those
lines of the manifest (inputs/budget.lowered_text), atomically.  Sources
are never edited: an annotated function whose calls all allocated less
than its annotation allows gets one line of advice on stdout.
"""

from __future__ import annotations

import sys

from ..decide import budgets as B
from ..decide.power import family_size, plan_line, stated_power
from ..errors import ConfigError
from ..inputs.atomicio import write_atomic
from ..inputs.budget import lowered_text
from ..decide.verdict import POWER_SHARE
from ..render.outputs import finish
from ..session.plugin import finish_report
from ..session.pytest_run import open_session, run_items
from ..session.steps import cost_line, count_advice


def run(args) -> int:
    with open_session(args, "update") as (ctx, _):
        rep = finish_report(ctx, run_items(ctx, args))
        written = {name: ctx.measurements.peek(name) for name, b in rep["benchmarks"].items()
                   if b.get("baseline_written")}
        family = family_size(a for a in written.values() if a is not None)
        for name in sorted(written):
            print(f"memprof-ci: wrote {rep['benchmarks'][name]['baseline_written']}")
            b = rep["benchmarks"][name]
            if b.get("mode_plan"):
                print("memprof-ci:   " + b["mode_plan"])
            if (b.get("plan") or {}).get("power"):
                print("memprof-ci:   " + plan_line(ctx.benches[name], b["plan"]))
            if written[name] is not None:
                print("memprof-ci:   " + stated_power(ctx.benches[name], written[name], family,
                                                      POWER_SHARE))
            if b.get("cost"):
                print("memprof-ci:   " + cost_line(b))
            bench = ctx.benches[name]
            advice = count_advice(name, b, len(bench.seeds), bench.overhead_args is not None)
            if advice:
                print(f"memprof-ci: note: {advice}", file=sys.stderr)
        for name, b in sorted(rep["benchmarks"].items()):
            if b.get("over_budget") and not args.strict:
                print(f"memprof-ci: warning: {b['over_budget']}", file=sys.stderr)
        _budgets(ctx, written, args)
        return finish(rep)


def _rows(ctx, name: str, agg) -> list:
    """The budget rows update-baselines can decide for one measured
    benchmark: those its counts allow (check reports what they do not)."""
    per_run, per_call = B.split(ctx.budgets(name))
    pts = getattr(agg, "point_counts", None)
    rows = []
    if per_run and pts is not None and pts.unavailable is None:
        rows = B.budget_rows(name, per_run, pts)
    if getattr(agg, "budgets", None) is not None:
        rows += B.annotated_rows(name, agg, per_call)
    return rows


def _budgets(ctx, written: dict, args) -> None:
    """Warn of a budget over its limit, advise tighter annotations; with
    --ratchet, lower the manifest budgets the measured benchmarks now
    allocate less than."""
    rows = {}
    for name, agg in sorted(written.items()):
        rows[name] = _rows(ctx, name, agg) if agg is not None else []
        msg = B.budget_failure(name, rows[name])
        if msg:
            print(f"memprof-ci: warning (check fails): {msg}", file=sys.stderr)
    for line in B.annotation_hints([r for name in sorted(rows) for r in rows[name]]):
        print(f"memprof-ci: {line}")
    if not args.ratchet:
        return
    if args.base_manifest:
        raise ConfigError("--ratchet rewrites --manifest's budgets: not with --base-manifest")
    applies = {b.index: {bench.name for bench in ctx.manifest.benchmarks
                         if b.applies_to(bench)} for b in ctx.manifest.budgets}
    limits = B.ratchet_limits(ctx.manifest.budgets, rows, applies)
    if not limits:
        print("memprof-ci: ratchet: no budget to lower")
        return
    with open(ctx.manifest.path, encoding="utf-8") as f:
        text = f.read()
    new = lowered_text(text, limits)
    if new is None:
        raise ConfigError(f"{ctx.manifest.path}: --ratchet cannot rewrite its [[budget]] "
                          f"tables (each needs its own `words_per_run = N` or "
                          f"`words_per_call = N` line); lower by hand: "
                          + ", ".join(f"#{k} to {v:_}" for k, v in sorted(limits.items())))
    write_atomic(ctx.manifest.path, new)
    for b in ctx.manifest.budgets:
        if b.index in limits:
            print(f"memprof-ci: ratchet: [[budget]] #{b.index} {b.what}: {b.unit} "
                  f"{b.limit:,} -> {limits[b.index]:,}")
