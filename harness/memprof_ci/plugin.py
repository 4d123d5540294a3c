"""pytest plugin: one pytest item per benchmark and check, from the manifest.

The CLI passes the manifest path to pytest.main together with this plugin,
which turns it into items such as `benchmarks.toml::parser::alloc_sites`, so
-k, -m, -x and --junitxml behave as usual.  Invariants: each benchmark runs
once per seed per session whatever the number of items (Context caches runs
and errors); every decision is verdict.py's (the items call it with the
rows of every selected benchmark, so Holm covers them all, and finish_report
runs verdict.finalize); infrastructure problems are raised in item setup (pytest
ERROR, exit 2) and regressions in the test body as RegressionFailure (pytest
FAILED, exit 1); outcomes are recorded by exception type for the CLI.
"""

from __future__ import annotations

import os

import pytest

from . import baseline as bl
from . import overhead, runner
from . import verdict as V
from .verdict import ACCEPTABLE, check_outcome, diff_baselines, finalize, site_rows
from .errors import (InfraError, MemprofError, OverBudget, ProposedBaselineMismatch,
                     RegressionFailure)
from .report import fmt_bytes, fmt_pct, new_report

CTX_KEY = pytest.StashKey["Context"]()
MARKERS = {
    "memprof_ci": "a memprof-ci benchmark check",
    "alloc_sites": "per-site allocation check",
    "gc_totals": "exact GC totals check",
    "live": "live-at-exit (retention) check",
    "peak": "live-at-peak (peak memory) check",
    "overhead": "profiling overhead check (hyperfine)",
    "proposed_baseline": "proposed baselines agree with the measured code",
    "update_baseline": "rewrite a benchmark's baseline",
}


class Context:
    """Per-session state: settings, cached runs/baselines, and the report."""

    def __init__(self, manifest, benches, baselines_dir, work_dir, mode="check",
                 proposed_dir=None, no_overhead=False, strict=False, shard=None,
                 profiles_dir=None, missing=None, run_entries=None, accept=False,
                 overhead_family=None):
        self.manifest = manifest
        self.benches = {b.name: b for b in benches}
        # Benchmarks with a trusted baseline that the manifest no longer has:
        # {name: "missing" | "removed"} (removed: the change deletes the file).
        self.missing = dict(missing or {})
        # check --from-run: {name: runstore.RunEntry}; nothing is executed.
        self.run_entries = run_entries
        self.overhead_family = overhead_family
        self.baselines_dir = baselines_dir
        self.proposed_dir = proposed_dir
        self.work_dir = work_dir
        self.profiles_dir = profiles_dir or os.path.join(work_dir, "profiles")
        self.mode = mode
        self.no_overhead = no_overhead
        self.strict = strict
        self.report = new_report(mode)
        if accept:
            self.report["accept_changes"] = True
        if shard:
            self.report["shard"] = {"index": shard[0], "count": shard[1]}
        self.report["manifest"] = manifest.path
        self.items: list = []
        self._aggs: dict = {}
        self._bases: dict = {}
        self._props: dict = {}
        self._family_done = False
        self._proposed_done = False
        self._diff = None

    # -- state
    def result(self, name: str) -> dict:
        b = self.report["benchmarks"].get(name)
        if b is None:
            bench = self.benches.get(name)
            b = self.report["benchmarks"][name] = {
                "name": name, "settings": bench.settings() if bench else None,
                "checks": {}, "notes": [],
                "alloc": None, "live": None, "peak": None, "gc": None, "overhead": None}
        return b

    def record(self, name, check, outcome, message=""):
        self.result(name)["checks"][check] = {"outcome": outcome, "message": message}

    @staticmethod
    def _cached(cache, key, fn):
        if key not in cache:
            try:
                cache[key] = (fn(), None)
            except MemprofError as e:
                cache[key] = (None, e)
        val, err = cache[key]
        if err is not None:
            raise err
        return val

    def profiles(self, name):
        bench = self.benches[name]

        def run():
            if self.run_entries is None:
                agg = runner.collect(bench, self.profiles_dir)
            else:
                agg = runner.collect_from(bench, self.run_entries.get(name))
            r = self.result(name)
            r["current"] = {"rate": agg.rate, "seeds": agg.seeds, "frames": agg.frames,
                            "grouping": agg.grouping, "ocaml_version": agg.ocaml_version,
                            "backend": agg.backend, "total_samples": agg.total_samples,
                            "total_live_samples": agg.total_live,
                            "total_peak_samples": agg.total_peak, "gc": agg.gc,
                            "profiles": agg.sources}
            if any(g != agg.gc_runs[0] for g in agg.gc_runs[1:]):
                r["notes"].append("GC totals differ between seeds; gc_totals compares "
                                  "their mean")
            return agg
        return self._cached(self._aggs, name, run)

    def _load(self, directory, name, cache):
        bench = self.benches[name]

        def load():
            path = bl.baseline_path(directory, name)
            if not os.path.lexists(path):
                return None
            b = bl.load_baseline(path, name)
            if directory == self.proposed_dir:
                # A proposed baseline made with settings this run does not
                # judge with cannot be verified here (the settings come from
                # the base branch); the diff still lists it.
                b.meta["incompatible"] = bl.incompatibility(b, bench, path)
            else:
                bl.check_compatible(b, bench, path)
            return b
        return self._cached(cache, name, load)

    def baseline(self, name):
        b = self._load(self.baselines_dir, name, self._bases)
        r = self.result(name)
        if b is not None and "baseline" not in r:
            r["baseline"] = {"path": b.meta["path"], "git_commit": b.meta.get("git_commit"),
                             "patch_id": b.meta.get("patch_id"),
                             "ocaml_version": b.ocaml_version,
                             "total_samples": b.total_samples}
        return b

    def proposed(self, name):
        return self._load(self.proposed_dir, name, self._props)

    def run_entry(self, name):
        return (self.run_entries or {}).get(name)

    # -- families
    def selected(self, checks) -> list:
        return sorted({it.bench for it in self.items if it.check in checks})

    def results_for_run_dir(self) -> dict:
        """profile mode: what runstore.write records per benchmark."""
        out = {}
        for name in sorted(self.benches):
            val, _ = self._aggs.get(name, (None, None))
            r = self.report["benchmarks"].get(name, {})
            errs = [c["message"] for c in r.get("checks", {}).values()
                    if c["outcome"] == "error"]
            out[name] = {"profiles": list(val.sources) if val is not None else [],
                         "overhead": r.get("overhead"),
                         "error": errs[0] if errs else None}
        return out

    def family(self):
        if self._family_done:
            return
        self._family_done = True
        rows, peaks = [], []
        for name in self.selected(("alloc_sites", "live", "peak")):
            try:
                base = self.baseline(name)
                if base is None:
                    continue
                cur = self.profiles(name)
            except MemprofError:
                continue  # reported by this benchmark's own items
            r = self.result(name)
            bench = self.benches[name]
            mine = {it.check for it in self.items if it.bench == name}
            if "alloc_sites" in mine:
                r["alloc"] = site_rows(name, "alloc", cur, base, bench.params())
                rows.extend(r["alloc"])
            if "live" in mine:
                r["live"] = site_rows(name, "live", cur, base, bench.params())
                rows.extend(r["live"])
            if "peak" in mine and base.total_peak is not None and cur.total_peak is not None:
                r["peak"] = site_rows(name, "peak", cur, base, bench.params())
                r["peak_summary"] = V.peak_summary(cur, base)
                rows.extend(r["peak"])
                peaks.append(r)
            if base.ocaml_version != cur.ocaml_version:
                r["notes"].append(f"baseline runtime {base.ocaml_version}, current "
                                  f"{cur.ocaml_version}")
        V.decide_family(rows)
        for r in peaks:
            V.peak_must_rise(r["peak"], r["peak_summary"])

    def baseline_diff(self) -> dict:
        if self._diff is None:
            trusted, proposed = {}, {}
            for name in sorted(set(self.benches) | set(self.missing)):
                if name not in self.benches:
                    # Not in the manifest: loaded without a settings check.
                    for d, out in ((self.baselines_dir, trusted), (self.proposed_dir, proposed)):
                        p = bl.baseline_path(d, name)
                        if os.path.lexists(p):
                            try:
                                out[name] = bl.load_baseline(p, name)
                            except MemprofError:
                                pass
                    continue
                for d, cache, out in ((self.baselines_dir, self._bases, trusted),
                                      (self.proposed_dir, self._props, proposed)):
                    try:
                        b = self._load(d, name, cache)
                    except MemprofError:
                        continue
                    if b is not None:
                        out[name] = b
            self._diff = diff_baselines(trusted, proposed)
            self.report["proposed_baselines"] = self._diff
        return self._diff

    def proposed_status(self, name) -> str:
        """changed / added / unchanged / removed / missing, or why the proposed
        baseline cannot be verified (made with other settings)."""
        # Load first so a malformed proposed baseline is an error, not "removed".
        prop = self.proposed(name)
        status = self.baseline_diff()["benchmarks"].get(name, {}).get("status", "missing")
        if prop is not None and prop.meta.get("incompatible"):
            status = "made with other settings: " + prop.meta["incompatible"]
        if status in ("changed", "added"):
            self.profiles(name)
            self.proposed_family()
        return status

    def proposed_mismatches(self, name) -> list:
        """Where the proposed baseline of a changed benchmark disagrees with
        the measurement (two-sided, Holm over all proposed rows), as lines."""
        cur, prop = self.profiles(name), self.proposed(name)
        bench = self.benches[name]
        bad = [x for x in self.result(name).get("proposed") or [] if x["status"] == "mismatch"]
        msgs = [f"{x['check']} {x['site']}: proposed {fmt_bytes(x['baseline_bytes'])}, "
                f"measured {fmt_bytes(x['current_bytes'])} ({fmt_pct(x['ratio'])}, "
                f"p(Holm)={x['p_adj']:.2g})" for x in bad]
        for g in V.gc_rows(prop.gc, cur.gc, bench):
            if g["status"] != "~":
                msgs.append(f"gc.{g['counter']}: proposed {g['baseline']:.0f}, measured "
                            f"{g['current']:.0f}")
        return msgs

    def accepts(self, name) -> bool:
        """The accept label is on and this benchmark's proposed baseline
        changed and matches the measurement (verdict.accept_changes decides
        the same from a finished report)."""
        if not self.report.get("accept_changes") or not self.proposed_dir:
            return False
        try:
            return (self.proposed_status(name) in ("changed", "added")
                    and not self.proposed_mismatches(name))
        except MemprofError:
            return False

    def proposed_family(self):
        if self._proposed_done:
            return
        self._proposed_done = True
        rows = []
        diff = self.baseline_diff()["benchmarks"]
        for name in self.selected(("proposed_baseline",)):
            if diff.get(name, {}).get("status") not in ("changed", "added"):
                continue
            try:
                prop = self.proposed(name)
                cur = self.profiles(name)
            except MemprofError:
                continue
            if prop is None or prop.meta.get("incompatible"):
                continue
            params = self.benches[name].params()
            r = self.result(name)
            r["proposed"] = (site_rows(name, "alloc", cur, prop, params)
                             + site_rows(name, "live", cur, prop, params))
            if prop.total_peak is not None and cur.total_peak is not None:
                r["proposed"] += site_rows(name, "peak", cur, prop, params)
            rows.extend(r["proposed"])
        V.decide_family(rows, two_sided=True)


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
            kinds = [AllocSitesItem, GcTotalsItem, LiveItem, PeakItem]
            if not ctx.no_overhead:
                kinds.append(OverheadItem)
            if ctx.proposed_dir:
                kinds.append(ProposedItem)
        for k in kinds:
            it = k.from_parent(self, name=k.check)
            it.bench = self.name
            it.add_marker("memprof_ci")
            it.add_marker(k.check)
            yield it


class CheckItem(pytest.Item):
    check = ""

    @property
    def ctx(self) -> Context:
        return self.config.stash[CTX_KEY]

    @property
    def benchmark(self):
        return self.ctx.benches[self.bench]

    def reportinfo(self):
        return self.path, None, f"{self.bench}::{self.check}"

    def regression(self, message: str):
        """Fail this check, or, under the accept label with a matching
        proposed baseline, mark it an expected failure ("accepted")."""
        if self.check in ACCEPTABLE and self.ctx.accepts(self.bench):
            pytest.xfail("accepted by label: " + message)
        raise RegressionFailure(message)

    def need_baseline(self):
        base = self.ctx.baseline(self.bench)
        if base is None:
            r = self.ctx.result(self.bench)
            r["status"] = "new"
            path = bl.baseline_path(self.ctx.baselines_dir, self.bench)
            if self.ctx.strict:
                raise RegressionFailure(
                    f"benchmark {self.bench!r}: no baseline at {path} (--strict); create it "
                    f"with `memprof-ci update-baselines -k {self.bench}`")
            pytest.skip(f"new benchmark {self.bench!r}: no baseline at {path}; create it with "
                        f"`memprof-ci update-baselines -k {self.bench}`")
        return base


class _SitesItem(CheckItem):
    key = ""

    def setup(self):
        if self.ctx.baseline(self.bench) is not None:
            self.ctx.profiles(self.bench)
            self.ctx.family()

    def runtest(self):
        self.need_baseline()
        r = self.ctx.result(self.bench)
        rows = r[self.key] or []
        out = check_outcome(rows, self.key, self.bench, r.get("peak_summary"))
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
            side = "baseline" if base.total_peak is None else "current profiles"
            pytest.skip(f"the {side} of {self.bench!r} record no live-at-peak samples "
                        f"of this runtime's peak (made before the runtime recorded them, "
                        f"or when it took the peak at major-cycle ends); regenerate with "
                        f"`memprof-ci update-baselines -k {self.bench}`")
        super().runtest()


class GcTotalsItem(CheckItem):
    check = "gc_totals"

    def setup(self):
        if self.ctx.baseline(self.bench) is not None:
            self.ctx.profiles(self.bench)

    def runtest(self):
        base = self.need_baseline()
        cur = self.ctx.profiles(self.bench)
        rows = V.gc_rows(base.gc, cur.gc, self.benchmark)
        r = self.ctx.result(self.bench)
        r["gc"] = rows
        gone = [k for k in V.stats.GC_COUNTERS if k not in {g["counter"] for g in rows}]
        if gone:
            r["notes"].append(f"GC check without {', '.join(gone)}: not recorded in the "
                              f"baseline or the profiles")
        msg = V.gc_failure(self.bench, rows)
        if msg:
            self.regression(msg)


class OverheadItem(CheckItem):
    check = "overhead"

    def setup(self):
        base = self.ctx.baseline(self.bench)
        self.base_overhead = base.meta.get("overhead") if base is not None else None
        self.threshold, self.basis = overhead.threshold_for(self.benchmark, self.base_overhead)
        family = len(self.ctx.selected(("overhead",)))
        if self.ctx.run_entries is None:
            self.measured = overhead.measure(self.benchmark,
                                             os.path.join(self.ctx.work_dir, "overhead"),
                                             family_size=family, threshold=self.threshold)
            return
        e = self.ctx.run_entry(self.bench)
        if e is not None and e.error:
            raise InfraError(e.error)
        if e is None or e.overhead is None:
            self.measured = None
            return
        # The judge's family (every overhead check it judges) sets the level.
        self.measured = dict(e.overhead, level=self.benchmark.alpha / max(1, family))

    def runtest(self):
        if self.measured is None:
            pytest.skip(f"overhead of {self.bench!r} was not measured in the run "
                        f"(`memprof-ci profile --no-overhead`)")
        j = overhead.judge(self.measured, self.threshold, self.basis,
                           self.benchmark.overhead_budget, self.base_overhead)
        self.ctx.result(self.bench)["overhead"] = j
        if j["status"] == "regression":
            against = (f"the baseline's {j['baseline_estimate']:+.1%} (interval up to "
                       f"{j['baseline_ci_high']:+.1%}) plus the tolerance "
                       f"{self.benchmark.overhead_tolerance:.0%}"
                       if self.basis == "baseline" else
                       f"the budget {j['budget']:.0%} (the baseline records no overhead)")
            self.regression(
                f"benchmark {self.bench!r}: profiling overhead {j['estimate']:+.1%} "
                f"[{j['ci_low']:+.1%}, {j['ci_high']:+.1%}] is over {j['threshold']:+.1%}, "
                f"{against}: {j['above_budget']} of {j['runs']} paired rounds over it, "
                f"sign test p = {j['p_value']:.2g} <= {j['level']:.2g}")


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
        self.ov = (None if self.ctx.no_overhead else
                   overhead.measure(self.benchmark, os.path.join(self.ctx.work_dir, "overhead")))

    def runtest(self):
        doc = bl.to_document(self.agg, self.ov, os.environ.get("MEMPROF_CI_PATCH_ID") or None,
                             bl.git_commit())
        path = bl.baseline_path(self.ctx.baselines_dir, self.bench)
        bl.write_atomic(path, bl.dumps(doc))
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
                family_size=family)


# ------------------------------------------------------------------ plugin

class MemprofPlugin:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def pytest_configure(self, config):
        config.stash[CTX_KEY] = self.ctx
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
        if isinstance(exc, (MemprofError, RegressionFailure)) and rep.failed:
            # Our own failures and errors read as their one message, not a
            # traceback of the harness, in any phase.
            rep.longrepr = str(exc)
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


def finish_report(ctx: Context) -> dict:
    """Mark unselected checks, re-apply family decisions, compute the verdict."""
    rep = ctx.report
    for it in ctx.items:
        ctx.result(it.bench)["checks"].setdefault(it.check, {"outcome": "not run",
                                                              "message": "not run (-x?)"})
    if ctx.proposed_dir and rep.get("proposed_baselines") is None:
        ctx.baseline_diff()
    finalize(rep)
    rep["verdict"] = V.verdict(rep)
    return rep
