"""`memprof-ci check`: run (or read) the benchmarks and judge them against
the trusted baselines; with `--against REF`, against a git ref's own
measurement (commits/against.py).

Invariants: the exit code is the decided report's (verdict.decide, given
pytest's exit code); a check that fails before its items run still leaves
a report with the error behind when --report-dir or --results-json is
given, so that the CI steps that merge or publish reports see an error
verdict rather than nothing.
"""

from __future__ import annotations

import contextlib

from ..commits import against
from ..decide.report_doc import new_report
from ..decide.verdict import decide
from ..errors import MemprofError
from ..measure import retention, runner
from ..render.outputs import attach_stacks, finish, write_reports
from ..render.report import render_terminal
from ..session.plugin import finish_report
from ..session.pytest_run import open_session, run_items
from ..store import measured


def run(args) -> int:
    try:
        if args.against:
            return against.check_against(args, check)
        return check(args)
    except MemprofError as e:
        if args.report_dir or args.results_json:
            rep = new_report("check")
            rep["errors"] = [str(e)]
            decide(rep)
            with contextlib.suppress(OSError, MemprofError):
                write_reports(rep, args.report_dir, args.results_json)
        raise


def check(args) -> int:
    """One check of the working tree against args.baselines."""
    with open_session(args, "check") as (ctx, patch_ids):
        ctx.report["notes"].extend(args.note)
        if getattr(args, "reference", None):
            ctx.report["reference"] = args.reference
        ret = run_items(ctx, args, args.report_dir)
        retention.explain(ctx)
        rep = finish_report(ctx, ret)
        running = patch_ids if ctx.run_entries is not None else \
            [runner.patch_id()]
        notes = measured.runtime_notes(rep, running)
        if notes:
            rep["patch_notes"] = notes
        # Cached results only: nothing is run again for the picture.
        attach_stacks(rep, ctx.sides())
        write_reports(rep, args.report_dir, args.results_json)
        if args.measured_dir:
            measured.write_measured(args.measured_dir, ctx.sides(), ctx.run_entries, running)
        if ret is not None:
            print(render_terminal(rep, verbose=args.verbose > 0), end="")
        return finish(rep)
