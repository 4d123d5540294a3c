"""pytest plugin: one pytest item per benchmark and check, from the manifest.

The CLI passes the manifest path to pytest.main together with this plugin,
which turns it into items such as `benchmarks.toml::parser::alloc_sites`, so
-k, -m, -x and --junitxml behave as usual.  Invariants: each benchmark runs
once per seed per session whatever the number of items (context.py caches
runs and errors); every decision is verdict.py's: the site items read
verdict.site_outcome of rows decided over every selected benchmark at once,
the accept label's expected failures mirror verdict.accepted, and
finish_report ends with verdict.decide; infrastructure problems are raised
in item setup (pytest ERROR, exit 2) and regressions in the test body as
RegressionFailure (pytest FAILED, exit 1); outcomes are recorded by
exception type for the CLI.  update-baselines also makes the run with a
heap snapshot whose retaining paths go into the baseline (retention.py).
"""

from __future__ import annotations

import contextlib
import os
import sys

import pytest

from ..inputs import atomicio
from ..store import baseline as bl
from ..measure import (exact_or_sampled, overhead, overhead_carry, retention, runner,
                       schedule)
from ..decide import overhead_verdict
from ..decide import power as P
from ..decide import verdict as V
from .budget_item import BudgetItem
from .check_item import CTX_KEY, CheckItem
from .context import Context
from ..errors import (InfraError, InputError, MemprofError, OverBudget, ProposedBaselineMismatch,
                      RegressionFailure)
from ..text.mdsafe import printable

MARKERS = {
    "memprof_ci": "a memprof-ci benchmark check",
    "alloc_sites": "per-site allocation check",
    "gc_totals": "exact GC totals check",
    "live": "live-at-exit (retention) check",
    "peak": "live-at-peak (peak memory) check",
    "overhead": "profiling overhead check (cachegrind counts; hyperfine times)",
    "proposed_baseline": "proposed baselines agree with the measured code",
    "update_baseline": "rewrite a benchmark's baseline",
    "profile": "run a benchmark for a later judge (memprof-ci profile)",
    "budget": "allocation budgets: exact words per run at a function or line, per call "
              "of an annotated function",
    "present": "a benchmark with a trusted baseline is still in the manifest",
}


# ------------------------------------------------------------------- items

class ManifestFile(pytest.File):
    def collect(self):
        ctx = self.config.stash[CTX_KEY]
        for name in sorted(set(ctx.benches) | set(ctx.missing)):
            yield BenchmarkNode.from_parent(self, name=name)


class BenchmarkNode(pytest.Collector):
    def collect(self):
        ctx = self.config.stash[CTX_KEY]
        if self.name not in ctx.benches:
            kinds = [PresenceItem]
        elif ctx.mode == "update":
            kinds = [UpdateItem]
        elif ctx.mode == "profile":
            kinds = [ProfileItem]
        else:
            # The proposed baseline is judged first: the accept label of the
            # other checks reads its outcome (verdict.accepted).
            kinds = [ProposedItem] if ctx.proposed_dir else []
            kinds += [AllocSitesItem, GcTotalsItem, LiveItem, PeakItem]
            if not ctx.no_overhead:
                kinds.append(OverheadItem)
            if ctx.budgets(self.name) or ctx.benches[self.name].points:
                kinds.append(BudgetItem)
        for k in kinds:
            it = k.from_parent(self, name=k.check)
            it.bench = self.name
            it.add_marker("memprof_ci")
            it.add_marker(k.check)
            yield it


class _AgainstBaselineItem(CheckItem):
    """A check of the run's profiles against the baseline: with a baseline,
    setup runs the benchmark and decides the site rows of every selected
    benchmark (Context.family), so that a failed run is an error of setup."""

    def setup(self):
        if self.ctx.baseline(self.bench) is not None:
            self.ctx.profiles(self.bench)
            why = self.ctx.unmeasured(self.bench, self.check)
            if why:
                raise InputError(why)
            self.ctx.family()


class _SitesItem(_AgainstBaselineItem):
    key = ""

    def runtest(self):
        self.need_baseline()
        out = V.site_outcome(self.ctx.report, self.bench, self.key)
        if out["outcome"] == "failed":
            self.regression(out["message"])


class AllocSitesItem(_SitesItem):
    check, key = "alloc_sites", "alloc"


class LiveItem(_SitesItem):
    check, key = "live", "live"


class PeakItem(_SitesItem):
    check, key = "peak", "peak"

    def runtest(self):
        base = self.need_baseline()
        if base.total_peak is None or self.ctx.profiles(self.bench).total_peak is None:
            side = ("baseline of {!r} has" if base.total_peak is None
                    else "current profiles of {!r} have").format(self.bench)
            pytest.skip(f"the {side} no live-at-peak samples (made before the runtime "
                        f"kept them, or with the peak taken at major-cycle ends); "
                        f"regenerate with `memprof-ci update-baselines -k {self.bench}`")
        super().runtest()


class GcTotalsItem(_AgainstBaselineItem):
    check = "gc_totals"

    def runtest(self):
        self.need_baseline()
        msg = V.gc_failure(self.bench, self.ctx.result(self.bench)["gc"] or [])
        if msg:
            self.regression(msg)


class OverheadItem(CheckItem):
    check = "overhead"

    def setup(self):
        base = self.ctx.baseline(self.bench)
        self.base_overhead = base.meta.get("overhead") if base is not None else None
        b = self.benchmark
        self.level = V.overhead_level(b.alpha, len(self.ctx.selected(("overhead",))))
        if self.ctx.run_entries is None:
            # The run's own profiles decide whether the baseline's count
            # still holds, or, when only the allocation changed, whether an
            # estimate scaled from it is far enough from the limit
            # (overhead_carry.py); a failed run counts.
            carry = overhead_carry.carry(b, base, self._current, runner.patch_id(),
                                         estimate=True)
            self.measured = overhead.measure(
                b, os.path.join(self.ctx.work_dir, "overhead"), level=self.level,
                time_threshold=overhead_verdict.time_threshold_for(b, self.base_overhead),
                info=self.ctx.overhead_info, patch_id=runner.patch_id(),
                step=lambda what: self.ctx.steps.step(self.bench, what), carry=carry,
                profiles=self._current)
            return
        e = self.ctx.run_entry(self.bench)
        if e is not None and e.error:
            raise InfraError(e.error)
        self.measured = None if e is None else e.overhead
        how = ((self.measured or {}).get("obtained") or {}).get("count", "counted")
        if how != "counted":
            # Only a run that has the baseline's profiles and patch id can
            # decide that its count still holds; a run directory counts.
            raise InputError(f"the run's overhead record of {self.bench!r} was not counted "
                             f"in that run ({how}); "
                             f"`memprof-ci profile` counts every benchmark it measures")
        self._check_stop(b)

    def _check_stop(self, b):
        """A run directory's count covers the part of the run that the
        run's own profiles give (overhead.stop_for), never a part the
        build job chose."""
        c = (self.measured or {}).get("counted")
        if c is None:
            return
        want = overhead.stop_for(b, self._current)
        if c.get("stop") != want:
            def part(s):
                return "the whole run" if s is None else (
                    f"the first {s['after']:,} of {s['of']:,} minor collections")
            raise InputError(f"the run's overhead record of {self.bench!r} counted "
                             f"{part(c.get('stop'))}, but its profiles give {part(want)}")

    def _current(self):
        try:
            return self.ctx.profiles(self.bench)
        except MemprofError:
            return None

    def runtest(self):
        if self.measured is None:
            pytest.skip(f"overhead of {self.bench!r} was not measured in the run "
                        f"(`memprof-ci profile --no-overhead`)")
        if self.measured.get("counted") is None:
            # A run directory can come from an untrusted build: a record
            # without counts must not turn the check into a skip.
            raise InputError(f"the run's overhead record of {self.bench!r} has no cachegrind "
                             f"counts (made by an older `memprof-ci profile`); profile again "
                             f"with this harness, or pass --no-overhead to skip the check")
        b = self.benchmark
        # The arguments actually counted (a run directory's may be the pull
        # request's) decide whether the baseline is comparable.
        threshold, basis, note = overhead.threshold_for(b, self.base_overhead,
                                                        self.measured["counted"]["args"])
        j = overhead_verdict.judge(self.measured, b, threshold, basis, note,
                                   self.base_overhead, self.level)
        r = self.ctx.result(self.bench)
        r["overhead"] = j
        if j.get("obtained", {}).get("count") in ("carried", "estimated"):
            r["notes"].append(f"overhead: {j['obtained']['reason']}")
        if j["note"]:
            r["notes"].append(f"overhead: {j['note']}")
        if j["status"] == "regression":
            self.regression(overhead_verdict.failure_message(j, b))


class ProposedItem(CheckItem):
    check = "proposed_baseline"

    def setup(self):
        self.status = self.ctx.proposed_status(self.bench)

    def runtest(self):
        if self.status not in ("changed", "added"):
            pytest.skip(f"proposed baseline for {self.bench!r} is {self.status}")
        msgs = self.ctx.proposed_mismatches(self.bench)
        if msgs:
            raise ProposedBaselineMismatch(
                f"benchmark {self.bench!r}: the proposed baselines do not match the code: "
                + "; ".join(msgs[:5]) + (f"; and {len(msgs) - 5} more" if len(msgs) > 5 else "")
                + f"; regenerate {bl.baseline_path(self.ctx.proposed_dir, self.bench)} with "
                f"`memprof-ci update-baselines -k {self.bench}` on this commit")


class UpdateItem(CheckItem):
    check = "update_baseline"

    def setup(self):
        self.agg = self.ctx.profiles(self.bench)
        with self.step("mode and plan runs"):
            self.plan = self._plan()
        prev = self._previous()
        same = overhead_carry.same_run(self.benchmark, prev, self.agg, runner.patch_id())
        kept = [] if same is not None else [
            k for k in ("schedule", "retainers") if prev.meta.get(k) is not None]
        self.schedule = (overhead_carry.reusable_schedule(self.benchmark, prev)
                         if "schedule" in kept else None)
        if self.schedule is None:
            kept = [k for k in kept if k != "schedule"]
            with self.step("schedule runs"):
                self.schedule = schedule.measure(self.benchmark, self.ctx.work_dir)
        if "retainers" in kept:
            self.retainers = prev.meta["retainers"]
        else:
            with self.step("snapshot run"):
                paths, why = retention.snapshot_run(self.benchmark, self.ctx.work_dir)
            self.retainers = None if why else paths
        if kept:
            what = {"schedule": "the schedule spread", "retainers": "the retaining paths"}
            self.ctx.result(self.bench)["kept"] = (
                "kept from the replaced baseline (same runtime patch, same allocation): "
                + " and ".join(what[k] for k in kept))
        self.ov = None
        if not self.ctx.no_overhead:
            # The baseline being replaced: its count still holds when this
            # run allocated exactly as it did (overhead_carry.py).
            self.ov = overhead.measure(
                self.benchmark, os.path.join(self.ctx.work_dir, "overhead"),
                time_threshold=self.benchmark.overhead_budget, info=self.ctx.overhead_info,
                patch_id=runner.patch_id(), step=self.step,
                carry=overhead_carry.carry(self.benchmark, prev, lambda: self.agg,
                                           runner.patch_id()),
                profiles=lambda: self.agg)

    def step(self, what):
        return self.ctx.steps.step(self.bench, what)

    def _previous(self):
        """The baseline this update replaces, if it loads (else None: its
        errors are not the update's)."""
        path = bl.baseline_path(self.ctx.baselines_dir, self.bench)
        try:
            return bl.load_baseline(path, self.bench) if os.path.lexists(path) else None
        except MemprofError:
            return None

    def _plan(self):
        """Mode "auto": exact or sampled, from this first run (the
        manifest's settings) and one run at rate 1 (exact_or_sampled.py).  With
        `detect` and sampling: rate and seeds planned from the first run.
        When the settings change, the planned run is the measurement."""
        bench, pilot, plan = self.benchmark, self.agg, None
        if bench.mode == "auto":
            previous = bl.recorded_mode(self.ctx.baselines_dir, self.bench)
            fields, exact = exact_or_sampled.choose(bench, pilot,
                                                    self.ctx.measurements.profiles_dir,
                                                    previous=previous)
            self.ctx.result(self.bench)["mode_plan"] = exact_or_sampled.describe(self.bench, fields)
            if exact is not None:
                plan = dict(fields, detect=bench.detect, rate=exact.rate,
                            seeds=list(exact.seeds))
                self._use(P.planned(bench, plan), exact)
                self.ctx.result(self.bench)["plan"] = plan
                return plan
            plan = dict(fields, detect=bench.detect, rate=bench.rate, seeds=list(bench.seeds))
        family = (len(pilot.sites) + sum(1 for x in pilot.sites.values() if x.live_samples)
                  + sum(1 for x in pilot.sites.values() if x.peak_samples)) * len(self.ctx.benches)
        detect = P.plan_sampling(bench, pilot, family)
        if detect is not None:
            plan = dict(plan or {}, **detect)
        if plan is None:
            return None
        planned = P.planned(bench, plan)
        agg = None
        if (plan["rate"], plan["seeds"]) != (pilot.rate, list(pilot.seeds)):
            agg = runner.collect(planned, self.ctx.measurements.profiles_dir)
        self._use(planned, agg)
        self.ctx.result(self.bench)["plan"] = plan
        return plan

    def _use(self, bench, agg):
        """The benchmark now runs as `bench`; `agg`, if any, is its run."""
        self.ctx.benches[self.bench] = bench
        if agg is not None:
            self.agg = agg
            self.ctx.measurements.replace(self.bench, agg)

    def runtest(self):
        doc = bl.to_document(self.agg, self.ov, runner.patch_id(),
                             bl.git_commit(), plan=self.plan, schedule=self.schedule,
                             retainers=self.retainers)
        path = bl.baseline_path(self.ctx.baselines_dir, self.bench)
        atomicio.write_atomic(path, bl.dumps(doc))
        r = self.ctx.result(self.bench)
        r["baseline_written"] = path
        r["overhead"] = self.ov
        over = overhead.over_budget(self.ov, self.benchmark) if self.ov else None
        if over:
            r["over_budget"] = over
            if self.ctx.strict:
                raise OverBudget(over + " (--strict)")


class PresenceItem(CheckItem):
    """A benchmark with a trusted baseline that the manifest does not run."""

    check = "present"

    def runtest(self):
        path = bl.baseline_path(self.ctx.baselines_dir, self.bench)
        r = self.ctx.result(self.bench)
        if self.ctx.missing[self.bench] == "removed":
            r["status"] = "removed"
            pytest.skip(f"benchmark {self.bench!r} removed: not in the manifest, and this "
                        f"change deletes its baseline")
        r["status"] = "missing"
        raise RegressionFailure(
            f"benchmark {self.bench!r} has a trusted baseline ({path}) but is not in the "
            f"manifest, so it was not run; to remove or rename it, delete "
            f"{os.path.basename(path)} from the baselines in the same change (a rename then "
            f"shows as removed + new)")


class ProfileItem(CheckItem):
    """profile mode: run the benchmark (and time it) for a later judge."""

    check = "profile"

    def setup(self):
        self.ctx.profiles(self.bench)

    def runtest(self):
        if not self.ctx.no_overhead:
            family = self.ctx.overhead_family or len(self.ctx.benches)
            self.ctx.result(self.bench)["overhead"] = overhead.measure(
                self.benchmark, os.path.join(self.ctx.work_dir, "overhead"),
                level=V.overhead_level(self.benchmark.alpha, family),
                time_threshold=self.benchmark.overhead_budget, info=self.ctx.overhead_info,
                patch_id=runner.patch_id(),
                step=lambda what: self.ctx.steps.step(self.bench, what),
                profiles=lambda: self.ctx.profiles(self.bench))


# ------------------------------------------------------------------ plugin

class MemprofPlugin:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def pytest_configure(self, config):
        config.stash[CTX_KEY] = self.ctx
        if self.ctx.mode == "update":
            self.ctx.steps.show = lambda line: _show(config, line)
        for name, doc in MARKERS.items():
            config.addinivalue_line("markers", f"{name}: {doc}")

    def pytest_collect_file(self, file_path, parent):
        if os.path.abspath(str(file_path)) == self.ctx.manifest.path:
            return ManifestFile.from_parent(parent, path=file_path)
        return None

    def pytest_collection_finish(self, session):
        self.ctx.items = [it for it in session.items if isinstance(it, CheckItem)]
        for it in self.ctx.items:
            self.ctx.result(it.bench)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if not isinstance(item, CheckItem):
            return
        exc = call.excinfo.value if call.excinfo is not None else None
        if rep.skipped and isinstance(rep.longrepr, tuple):
            # pytest's summary places a skip at the manifest, not at the
            # harness line that raised it.
            rep.longrepr = (str(item.path), None, rep.longrepr[2])
        if isinstance(exc, (MemprofError, RegressionFailure)) and rep.failed:
            # Our own failures and errors read as their message, not a
            # traceback of the harness, in any phase; the message quotes
            # input, so it is escaped (mdsafe.printable) as on stderr. A
            # regression's lines (a site each, its notes wrapped under it,
            # input escaped where the message is made, decide/verdict.py)
            # stay lines.
            lines = str(exc).split("\n") if isinstance(exc, RegressionFailure) \
                else [str(exc)]
            rep.longrepr = "\n".join(map(printable, lines))
        elif exc is not None and rep.failed and not item.config.option.verbose > 0:
            # Anything else is a bug of the harness: one line, as the CLI
            # prints one (the traceback with -v).
            rep.longrepr = (f"internal error: {printable(f'{type(exc).__name__}: {exc}')[:500]}"
                            f" (run with -v for the traceback)")
        if rep.when == "call" or (rep.when == "setup" and not rep.passed):
            if hasattr(rep, "wasxfail"):
                self.ctx.record(item.bench, item.check, "accepted",
                                rep.wasxfail.removeprefix("reason: ")
                                .removeprefix("accepted by label: "))
            elif rep.passed:
                self.ctx.record(item.bench, item.check, "passed")
            elif rep.skipped:
                msg = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
                self.ctx.record(item.bench, item.check, "skipped",
                                msg.removeprefix("Skipped: "))
            elif isinstance(exc, RegressionFailure):
                self.ctx.record(item.bench, item.check, "failed", str(exc))
            elif isinstance(exc, MemprofError):
                self.ctx.record(item.bench, item.check, "error", str(exc))
            else:
                self.ctx.record(item.bench, item.check, "error",
                                f"internal error: {type(exc).__name__}: {exc}")


def _show(config, line: str) -> None:
    """A progress line on stdout, past pytest's capture (stderr keeps an
    error to its one line), on a line of its own (not after pytest's
    file name and dots)."""
    cap = config.pluginmanager.getplugin("capturemanager")
    term = config.pluginmanager.getplugin("terminalreporter")
    with cap.global_and_fixture_disabled() if cap else contextlib.nullcontext():
        if term is not None:
            term.ensure_newline()
        print(printable(line), file=sys.stdout, flush=True)


def finish_report(ctx: Context, runner_exit: int | None = None) -> dict:
    """Mark unselected checks "not run" and decide the report (verdict.decide,
    given pytest's own exit code)."""
    rep = ctx.report
    for it in ctx.items:
        ctx.result(it.bench)["checks"].setdefault(it.check, {"outcome": "not run",
                                                              "message": "not run (-x?)"})
    if ctx.proposed_dir and rep.get("proposed_baselines") is None:
        ctx.baseline_diff()
    V.decide(rep, runner_exit)
    return rep
