"""The `budget` check: a benchmark's allocation budgets, judged exactly.

Collected in a check for each benchmark some [[budget]] of the manifest
applies to (Context.budgets) and for each benchmark with `points = true`:
whether its code annotates functions ([@zero_alloc],
[@memprof.words_per_call N]) is known only once it has run, and pytest
must know its checks before, so every benchmark whose runs count exactly
has the check.  Setup runs the benchmark (as the other checks do, once per
session) and decides into the report the manifest budgets' rows from the
first seed's allocation points, a row per annotated function of its
profile, and, against a baseline that recorded annotations, the
annotations changed (decide/budgets.py); a benchmark with none of them
passes with an empty list of rows, which the report shows as "no budgets".
The test fails when a row is over its limit or an annotation was removed
or its limit raised since the baseline.  Invariants: rows read no
baseline, so they are judged with or without one; the accept label
excuses only what budgets.accepted_rows allows; a words_per_run budget of
a benchmark that counted no points, or a words_per_call budget of a
function its profile has no annotated entry for, is an error of setup
(exit 2), never a pass.
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
        per_run, per_call = B.split(ctx.budgets(name))
        if per_run and not self.benchmark.points:
            raise ConfigError(B.needs_points(ctx.manifest.path, per_run[0], name,
                                             "has `points = false`"))
        agg = ctx.profiles(name)
        pts = agg.point_counts
        rows = []
        if per_run:
            if pts is None or pts.unavailable is not None:
                why = pts.unavailable if pts is not None else "no points section"
                raise InputError(B.needs_points(ctx.manifest.path, per_run[0], name,
                                                f"counted no allocation points ({why})"))
            rows = B.budget_rows(name, per_run, pts)
        missing = B.unannotated(per_call, agg.budgets)
        if missing:
            raise InputError(B.unannotated_error(ctx.manifest.path, missing[0], name))
        r = ctx.result(name)
        r["budgets"] = rows + B.annotated_rows(name, agg, per_call)
        base = ctx.baseline(name)
        recorded = base.meta.get("annotations") if base is not None else None
        if recorded is not None:
            r["annotation_changes"] = B.annotation_changes(name, recorded, agg.budgets)

    def runtest(self):
        r = self.ctx.result(self.bench)
        msg = B.budget_failure(self.bench, r["budgets"], r.get("annotation_changes"))
        if msg and B.accepted_rows(self.ctx.report, r["budgets"]):
            pytest.xfail("accepted by label: " + msg)
        if msg:
            raise RegressionFailure(msg)
