"""`memprof-ci profile --out RUN_DIR`: run the benchmarks and keep what they
measured in a run directory (store/run_dirs.py) for `check --from-run`."""

from __future__ import annotations

import os

from ..measure import runner
from ..render.outputs import finish
from ..session.plugin import finish_report
from ..session.pytest_run import open_session, run_items
from ..store import run_dirs


def run(args) -> int:
    with open_session(args, "profile") as (ctx, _):
        rep = finish_report(ctx, run_items(ctx, args))
        path = run_dirs.write(os.path.abspath(args.out),
                              runner.patch_id(),
                              ctx.results_for_run_dir())
        print(f"memprof-ci: wrote {path}")
        return finish(rep)
