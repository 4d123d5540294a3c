"""The `budget` check: a benchmark's allocation budgets, judged exactly.

Collected in a check for each benchmark some [[budget]] of the manifest
applies to (Context.budgets).  Setup runs the benchmark (as the other
checks do, once per session) and decides the budget rows from the first
seed's allocation points into the report (decide/budgets.py); the test
fails when a row is over its limit.  Invariants: no baseline is read, so a
budget is judged with or without one, and the accept label never excuses
it; a benchmark that counted no points is an error of setup (exit 2), never
a pass.
"""

from __future__ import annotations

import pytest

from ..decide import budgets as B
from ..errors import ConfigError, InputError, RegressionFailure
from .check_item import CheckItem


class BudgetItem(CheckItem):
    check = "budget"

    def setup(self):
        ctx, name = self.ctx, self.bench
        budgets = ctx.budgets(name)
        if not self.benchmark.points:
            raise ConfigError(B.needs_points(ctx.manifest.path, budgets[0], name,
                                             "has `points = false`"))
        pts = ctx.profiles(name).point_counts
        if pts is None or pts.unavailable is not None:
            why = pts.unavailable if pts is not None else "no points section"
            raise InputError(B.needs_points(ctx.manifest.path, budgets[0], name,
                                            f"counted no allocation points ({why})"))
        ctx.result(name)["budgets"] = B.budget_rows(name, budgets, pts)

    def runtest(self):
        rows = self.ctx.result(self.bench)["budgets"]
        msg = B.budget_failure(self.bench, rows)
        if msg and B.accepted_rows(self.ctx.report, rows):
            pytest.xfail("accepted by label: " + msg)
        if msg:
            raise RegressionFailure(msg)
