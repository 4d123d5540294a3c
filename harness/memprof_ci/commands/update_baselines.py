"""`memprof-ci update-baselines`: run the benchmarks and write what they
allocated as their new baselines, under the baselines directory's lock.

Each written baseline is announced on stdout with its plan, the power it
states and its cost; advice and budget warnings go to stderr.
"""

from __future__ import annotations

import sys

from ..decide.power import family_size, plan_line, stated_power
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
        return finish(rep)
