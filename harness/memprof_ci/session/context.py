"""The state of one `check`, `update-baselines` or `profile` session.

The pytest items (plugin.py) ask this module for what they judge; each job
has its own small class:

- Measurements: each benchmark's profiles, run once per session (or read
  from a `profile --out` run directory), and the run's record of them;
- Baselines: the trusted and the proposed baselines, each file loaded and
  checked once;
- Proposals: what a pull request's proposed baselines change, and whether
  they match what the code measures;
- Context: the report being filled in, the families of site rows handed to
  verdict.py, and the accept label's mirror for pytest.

Invariants:
1. Each benchmark runs once per seed per session, and each baseline file is
   loaded once, whatever the number of items: results and MemprofErrors are
   both cached, so every item of a broken benchmark reports the same error.
2. Nothing is decided here: rows go to verdict.decide_sites and
   verdict.decide_proposed, each over every selected benchmark at once, and
   the accept label is verdict.accepted.
3. sides() hands the cached Aggregates out for report.html; nothing is run
   or loaded again for the picture.
4. What the trusted baseline measured, the benchmark's settings ask for and
   a selected check reads, the run must have measured too (unmeasured()):
   exact point counts (alloc_sites; their live words for live), the
   live-at-peak samples (peak), the GC's heap_words and top_heap_words
   (gc_totals).  A run without one is an error naming the benchmark, never
   a quieter check: a run directory comes from the code under test.
5. A benchmark's runs decide what is live at exit, except in a check none
   of whose selected items for it reads live samples (LIVE_READERS): those
   runs skip the exit's walk (`live=off`), their Aggregate says so
   (live_decided), and the report's live total is null.
"""

from __future__ import annotations

import contextlib
import os

from ..store import baseline as bl
from ..decide import power as P
from ..decide import comparison as R
from ..measure import runner
from ..decide import stats
from ..decide import verdict as V
from ..errors import MemprofError
from ..text.fmt import fmt_bytes, fmt_pct
from ..inputs.profile import GC_OPTIONAL_KEYS
from ..decide.report_doc import new_report
from .steps import Steps

# The checks that read what the runs found live at exit (the overhead
# check: whether the baseline's count still holds, overhead_carry.py).
LIVE_READERS = ("live", "proposed_baseline", "overhead")


class _Cache:
    """name -> value or the MemprofError computing it raised (invariant 1)."""

    def __init__(self):
        self._d: dict = {}

    def get(self, key, fn):
        if key not in self._d:
            try:
                self._d[key] = (fn(), None)
            except MemprofError as e:
                self._d[key] = (None, e)
        val, err = self._d[key]
        if err is not None:
            raise err
        return val

    def peek(self, key):
        """The cached value, or None when absent or an error."""
        return self._d.get(key, (None, None))[0]

    def put(self, key, val):
        self._d[key] = (val, None)


class Measurements:
    """Each benchmark's Aggregate over its seeds, run or read once."""

    def __init__(self, benches: dict, profiles_dir: str, run_entries, on_collect,
                 live_needed, steps=None):
        self.benches = benches
        self.steps = steps
        self.profiles_dir = profiles_dir
        # check --from-run: {name: run_dirs.RunEntry}; nothing is executed.
        self.run_entries = run_entries
        self._on_collect = on_collect
        # Whether a benchmark's runs must decide what is live at exit.
        self._live_needed = live_needed
        self._cache = _Cache()

    def get(self, name):
        bench = self.benches[name]

        def run():
            if self.run_entries is None:
                with self.steps.step(name, "seed runs"):
                    agg = runner.collect(bench, self.profiles_dir,
                                         live=self._live_needed(name))
            else:
                agg = runner.collect_from(bench, self.run_entries.get(name))
            self._on_collect(name, agg)
            return agg
        return self._cache.get(name, run)

    def peek(self, name):
        return self._cache.peek(name)

    def replace(self, name, agg):
        """The benchmark's measurement is now `agg` (a planned re-run)."""
        self._cache.put(name, agg)
        self._on_collect(name, agg)

    def entry(self, name):
        return (self.run_entries or {}).get(name)


class Baselines:
    """The trusted (and, in a pull request, proposed) baselines."""

    def __init__(self, benches: dict, trusted_dir: str | None, proposed_dir: str | None):
        self.benches = benches
        self.trusted_dir = trusted_dir
        self.proposed_dir = proposed_dir
        self._trusted = _Cache()
        self._proposed = _Cache()

    def _load(self, directory, name, cache):
        def load():
            path = bl.baseline_path(directory, name)
            if not os.path.lexists(path):
                return None
            b = bl.load_baseline(path, name)
            bench = self.benches[name]
            if directory == self.trusted_dir:
                # A `detect` plan recorded with the trusted baseline says how
                # this benchmark runs (rate and seeds); every job reads the
                # benchmark from this shared table.
                self.benches[name] = bench = P.planned(bench, b.meta.get("plan"))
            if directory == self.proposed_dir:
                # A proposed baseline made with settings this run does not
                # judge with cannot be verified here (the settings come from
                # the base branch); the diff still lists it.
                b.meta["incompatible"] = bl.incompatibility(b, bench, path)
            else:
                bl.check_compatible(b, bench, path)
            return b
        return cache.get(name, load)

    def trusted(self, name):
        return self._load(self.trusted_dir, name, self._trusted)

    def proposed(self, name):
        with contextlib.suppress(MemprofError):   # the trusted plan first; its error is its own
            self.trusted(name)
        return self._load(self.proposed_dir, name, self._proposed)

    def peek(self, name):
        return self._trusted.peek(name)

    def both(self, names) -> tuple:
        """({name: trusted}, {name: proposed}) of every name that loads;
        names outside the manifest are loaded without a settings check."""
        trusted, proposed = {}, {}
        for name in names:
            for d, out, loader in ((self.trusted_dir, trusted, self.trusted),
                                   (self.proposed_dir, proposed, self.proposed)):
                try:
                    if name in self.benches:
                        b = loader(name)
                    else:
                        p = bl.baseline_path(d, name)
                        b = bl.load_baseline(p, name) if os.path.lexists(p) else None
                except MemprofError:
                    continue
                if b is not None:
                    out[name] = b
        return trusted, proposed


class Proposals:
    """A pull request's proposed baselines against the trusted ones and
    against what the code measures."""

    def __init__(self, ctx: "Context"):
        self.ctx = ctx
        self._diff = None

    def diff(self) -> dict:
        if self._diff is None:
            ctx = self.ctx
            names = sorted(set(ctx.benches) | set(ctx.missing))
            self._diff = R.diff_baselines(*ctx.baselines.both(names))
            ctx.report["proposed_baselines"] = self._diff
        return self._diff

    def status(self, name) -> str:
        """changed / added / unchanged / removed / missing, or why the proposed
        baseline cannot be verified (made with other settings)."""
        # Load first so a malformed proposed baseline is an error, not "removed".
        prop = self.ctx.baselines.proposed(name)
        status = self.diff()["benchmarks"].get(name, {}).get("status", "missing")
        if prop is not None and prop.meta.get("incompatible"):
            status = "made with other settings: " + prop.meta["incompatible"]
        if status in ("changed", "added"):
            self.ctx.profiles(name)
            self.family()
        return status

    def mismatches(self, name) -> list:
        """Where the proposed baseline of a changed benchmark disagrees with
        the measurement (two-sided, Holm over all proposed rows), as lines."""
        ctx = self.ctx
        cur, prop = ctx.profiles(name), ctx.baselines.proposed(name)
        bad = [x for x in ctx.result(name).get("proposed") or [] if x["status"] == "mismatch"]
        msgs = [f"{x['check']} {x['site']}: proposed {fmt_bytes(x['baseline_bytes'])}, "
                f"measured {fmt_bytes(x['current_bytes'])} ({fmt_pct(x['ratio'])}, "
                f"p(Holm)={x['p_adj']:.2g})" for x in bad]
        for g in V.gc_mismatch(R.gc_rows(prop, cur, ctx.benches[name].settings())):
            msgs.append(f"gc.{g['counter']}: proposed {g['baseline']:.0f}, measured "
                        f"{g['current']:.0f}")
        return msgs

    def family(self):
        """Rows of every selected changed benchmark against its proposed
        baseline, decided together (verdict.decide_proposed)."""
        ctx = self.ctx
        if ctx.report.get("proposed_family") is not None:
            return
        diff = self.diff()["benchmarks"]
        for name in ctx.selected(("proposed_baseline",)):
            if diff.get(name, {}).get("status") not in ("changed", "added"):
                continue
            try:
                prop = ctx.baselines.proposed(name)
                cur = ctx.profiles(name)
            except MemprofError:
                continue
            if prop is None or prop.meta.get("incompatible"):
                continue
            params = ctx.benches[name].params()
            checks = ["alloc", "live"] + (
                ["peak"] if prop.total_peak is not None and cur.total_peak is not None else [])
            ctx.result(name)["proposed"] = [row for check in checks
                                            for row in R.site_rows(name, check, cur, prop, params)]
        V.decide_proposed(ctx.report)


class Context:
    """Per-session state: settings, the jobs above, and the report."""

    def __init__(self, manifest, benches, baselines_dir, work_dir, mode="check",
                 proposed_dir=None, no_overhead=False, strict=False, shard=None,
                 profiles_dir=None, missing=None, run_entries=None, accept=False,
                 overhead_family=None, overhead_info=False):
        self.manifest = manifest
        self.benches = {b.name: b for b in benches}
        # Benchmarks with a trusted baseline that the manifest no longer has:
        # {name: "missing" | "removed"} (removed: the change deletes the file).
        self.missing = dict(missing or {})
        self.overhead_family = overhead_family
        self.baselines_dir = baselines_dir
        self.proposed_dir = proposed_dir
        self.work_dir = work_dir
        self.mode = mode
        self.no_overhead = no_overhead
        # Timed pairs and peak RSS: information, measured only when asked.
        self.overhead_info = overhead_info
        self.strict = strict
        self.report = new_report(mode)
        self.steps = Steps(self.report, self.benches)
        if accept:
            self.report["accept_changes"] = True
        if shard:
            self.report["shard"] = {"index": shard[0], "count": shard[1]}
        self.report["manifest"] = manifest.path
        self.items: list = []
        self.measurements = Measurements(self.benches,
                                         profiles_dir or os.path.join(work_dir, "profiles"),
                                         run_entries, self._collected, self._live_needed,
                                         self.steps)
        self.baselines = Baselines(self.benches, baselines_dir, proposed_dir)
        self.proposals = Proposals(self)

    @property
    def run_entries(self):
        return self.measurements.run_entries

    # -- the report
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

    def _live_needed(self, name) -> bool:
        """Whether the runs of `name` must decide what is live at exit:
        always, except in a check none of whose selected items for it reads
        live samples (the live check, the proposed baseline's rows); its
        runs then skip the exit's walk of the heap (`live=off`)."""
        return self.mode != "check" or any(
            it.bench == name and it.check in LIVE_READERS for it in self.items)

    def _collected(self, name, agg):
        r = self.result(name)
        if not agg.live_decided:
            r["notes"].append("live at exit not decided: no selected check reads it, so the "
                              "runs skipped the exit's walk of the heap (OCAMLMEMPROF live=off)")
        r["current"] = {"rate": agg.rate, "seeds": agg.seeds, "frames": agg.frames,
                        "grouping": agg.grouping, "ocaml_version": agg.ocaml_version,
                        "backend": agg.backend, "total_samples": agg.total_samples,
                        "total_live_samples": agg.total_live if agg.live_decided else None,
                        "total_peak_samples": agg.total_peak, "gc": agg.gc,
                        "profiles": agg.sources}
        if any(g != agg.gc_runs[0] for g in agg.gc_runs[1:]):
            r["notes"].append("GC totals differ between seeds; gc_totals compares their mean")

    # -- what the items judge
    def profiles(self, name):
        return self.measurements.get(name)

    def baseline(self, name):
        b = self.baselines.trusted(name)
        r = self.result(name)
        if b is not None and "baseline" not in r:
            r["baseline"] = {"path": b.meta["path"], "git_commit": b.meta.get("git_commit"),
                             "patch_id": b.meta.get("patch_id"),
                             "ocaml_version": b.ocaml_version,
                             "total_samples": b.total_samples}
        return b

    def unmeasured(self, name, check) -> str | None:
        """Why the run of `name` cannot be judged by `check` as its trusted
        baseline was measured (invariant 4), or None."""
        base, cur, bench = self.baselines.peek(name), self.measurements.peek(name), \
            self.benches[name]
        if base is None or cur is None:
            return None
        path = base.meta.get("path")
        what = None
        if check in ("alloc_sites", "live") and bench.points and base.points is not None:
            key = "alloc" if check == "alloc_sites" else "live"
            if base.points.counts(key):
                if cur.points is None:
                    what = ("exact allocation-point counts (the manifest's `points`), but its "
                            "profiles have none (no points section, or points.unavailable)")
                elif not cur.points.counts(key):
                    what = (f"the live words of each allocation point, but its profiles did "
                            f"not count them ({cur.points.live_missing})")
        elif check == "peak" and base.total_peak is not None and cur.total_peak is None:
            what = "live-at-peak samples, but its profiles record none of this runtime's peak"
        elif check == "gc_totals":
            gone = [k for k in GC_OPTIONAL_KEYS if k in base.gc and k not in cur.gc]
            if gone:
                what = f"the GC's {' and '.join(gone)}, but its profiles do not"
        if what is None:
            return None
        return (f"benchmark {name!r}: the trusted baseline {path} has {what}; a run that "
                f"lacks what its baseline measured is not judged with a weaker check. "
                f"Profile it again with the memprof-ci runtime this baseline was recorded with")

    def run_entry(self, name):
        return self.measurements.entry(name)

    def budgets(self, name) -> list:
        """The manifest's budgets that apply to benchmark `name`."""
        bench = self.benches.get(name)
        if bench is None:
            return []
        return [b for b in self.manifest.budgets if b.applies_to(bench)]

    def selected(self, checks) -> list:
        return sorted({it.bench for it in self.items if it.check in checks})

    def sides(self) -> dict:
        """{name: (trusted baseline, current Aggregate)} as cached (invariant 3)."""
        return {n: (self.baselines.peek(n), self.measurements.peek(n))
                for n in self.report["benchmarks"]}

    def results_for_run_dir(self) -> dict:
        """profile mode: what run_dirs.write records per benchmark."""
        out = {}
        for name in sorted(self.benches):
            val = self.measurements.peek(name)
            r = self.report["benchmarks"].get(name, {})
            errs = [c["message"] for c in r.get("checks", {}).values()
                    if c["outcome"] == "error"]
            out[name] = {"profiles": list(val.sources) if val is not None else [],
                         "overhead": r.get("overhead"),
                         "error": errs[0] if errs else None}
        return out

    def family(self):
        """Site rows of every selected benchmark with a baseline, decided
        together (verdict.decide_sites)."""
        if self.report.get("family") is not None:
            return
        for name in self.selected(("alloc_sites", "live", "peak", "gc_totals")):
            try:
                base = self.baseline(name)
                if base is None:
                    continue
                cur = self.profiles(name)
            except MemprofError:
                continue  # reported by this benchmark's own items
            r = self.result(name)
            r["stream"] = R.stream(cur, base)
            params = self.benches[name].params()
            mine = {it.check for it in self.items if it.bench == name}
            for key, check in V.SITE_CHECKS.items():
                if check not in mine:
                    continue
                if key == "peak":
                    if base.total_peak is None or cur.total_peak is None:
                        continue
                    r["peak_summary"] = R.peak_summary(cur, base)
                r[key] = R.site_rows(name, key, cur, base, params)
            if "gc_totals" in mine:
                self._gc(r, base, cur, self.benches[name].settings())
            if base.ocaml_version != cur.ocaml_version:
                r["notes"].append(f"baseline recorded on OCaml {base.ocaml_version}, this "
                                  f"run on OCaml {cur.ocaml_version}: allocation may differ "
                                  f"between releases")
        V.decide_sites(self.report)
        V.decide_gc(self.report)

    @staticmethod
    def _gc(r: dict, base, cur, settings: dict) -> None:
        """The benchmark's GC rows (decided with the run's: V.decide_gc)."""
        r["gc"] = R.gc_rows(base, cur, settings)
        gone = [k for k in stats.GC_COUNTERS if k not in {g["counter"] for g in r["gc"]}]
        if gone:
            r["notes"].append(f"GC check without {', '.join(gone)}: not recorded in the "
                              f"baseline or the profiles")
        if not settings["gc_exact"] and not base.meta.get("schedule"):
            r["notes"].append("the baseline records no schedule spread: promoted_words, "
                              "major_words and top_heap_words judged with gc_timing_tolerance; "
                              "re-record it with `memprof-ci update-baselines`")

    # -- proposed baselines and the accept label
    def baseline_diff(self) -> dict:
        return self.proposals.diff()

    def proposed_status(self, name) -> str:
        return self.proposals.status(name)

    def proposed_mismatches(self, name) -> list:
        return self.proposals.mismatches(name)

    def accepts(self, name) -> bool:
        """The accept label covers this benchmark (verdict.accepted, read
        from the outcomes recorded so far: its proposed_baseline item runs
        first)."""
        return V.accepted(self.report, name)
