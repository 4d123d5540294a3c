"""Retaining paths for the sites that fail the live-at-exit or peak check.

This module owns the decision of which site rows get a retaining path,
where the path comes from and whether it changed; report.py and
report_html.py only render what it attaches (row["retention"]).

Design:
1. Current run.  Once the check's items have run (their site rows are
   decided by then, Context.family) and before the report is finished, each
   benchmark with a "live" or "peak" row whose status is "regression" and
   that this session ran itself gets one more run: its first seed at its
   sampled rate and frames, plus OCAMLMEMPROF snapshot=exit,snapshot_sites=
   SNAPSHOT_SITES.  The seeded sampler draws the same samples, so the
   snapshot's sites are the sampled runs' sites, and the snapshot leaves
   stacks and totals as they are without it (runtime-patch/format/
   profile-format.md, "The snapshot").  A benchmark counted exactly is
   snapshotted at the rate its exact run replaced (Bench.profiled_rate):
   at rate 1 every block would be a target of the walk, whose tables grow
   with them (benchmarks/RESULTS.md, "Retaining paths at rate 1"), while a
   path needs one sampled block of the site.  Benchmarks that pass cost
   nothing.
   A check that reads a run directory (--from-run) runs nothing, so its
   flagged rows say that no path was taken.
2. Baseline.  update-baselines makes the same run for every benchmark and
   stores, in the baseline's optional "retainers" section, the path of
   each site the snapshot gives one (at most SNAPSHOT_SITES, the heaviest
   live at exit).  That is one run more than the seeds, beside the
   schedule's dithered runs and the overhead runs update already makes.  A
   baseline without the section says "baseline: no path recorded".
   `check --against REF` measures REF with update-baselines, so REF's
   paths are there too.  `compare` runs nothing and shows no path; `merge`
   keeps the shards' (merge.py checks them).
3. Changed.  Two paths are the same when they start at the same root and
   pass through the same sampled sites in the same order (tags and sizes
   of the hops are left out: a table that grew is still the same table).
   A flagged row whose current path differs from the baseline's has
   "changed" set; the renderers make "now held by ..." its headline.
4. The holder of a path is the nearest hop above the site's own block that
   is itself a sampled block (its site names the structure, e.g. the
   function that made a Hashtbl's bucket array), else the root.

Invariants: a path record is plain JSON (parse_record checks one from a
baseline and raises InputError naming the place); a malformed snapshot
section of the extra run is one InputError naming its file (profile.py),
which explain() adds to the report's errors (exit 2) without dropping the
verdict's rows; an extra run that fails is an error of the report too,
never a regression; rows that do not fail get nothing.
"""

from __future__ import annotations

import dataclasses
import os

from ..inputs import validate
from ..errors import InputError, MemprofError
from ..inputs.profile import load_profile
from .runner import run_once
from ..sites.grouping import retainers_by_site
from ..sites.retaining import RetainingPath, path_from_snapshot

# Sites given a path by the snapshot of one run (OCAMLMEMPROF
# snapshot_sites): the heaviest live at exit.
SNAPSHOT_SITES = 50
CHECKS = ("live", "peak")
_FLAGGED = "regression"
MAX_HOPS = 64


def record(entry: dict, grouping: str, rate: float) -> dict:
    """A snapshot site (snapshot.py) as the path record the report and the
    baseline carry (sites/retaining.py's JSON form of a RetainingPath)."""
    return path_from_snapshot(entry, grouping, rate).to_json()


def holder(rec: dict) -> dict | None:
    """The hop that holds the site's block (design 4), or None: the root."""
    h = RetainingPath.from_json(rec).holder()
    return None if h is None else h.to_json()


def same_path(a: dict, b: dict) -> bool:
    """Design 3 on two path records."""
    return RetainingPath.from_json(a).signature() == RetainingPath.from_json(b).signature()


def parse_record(rec, where: str) -> dict:
    """A path record read from a baseline, checked (InputError naming
    `where`)."""
    if not isinstance(rec, dict) or set(rec) != {"root", "hops", "live_words", "shared_words"}:
        raise InputError(f"{where} must have exactly root, hops, live_words, shared_words")
    root = validate.text(rec["root"], f"{where}.root", limit=1000)
    hops = rec["hops"]
    if not isinstance(hops, list) or not 1 <= len(hops) <= MAX_HOPS:
        raise InputError(f"{where}.hops must be a list of 1 to {MAX_HOPS} hops")
    out = []
    for i, h in enumerate(hops):
        w = f"{where}.hops[{i}]"
        if isinstance(h, dict) and set(h) == {"elided"}:
            out.append({"elided": validate.count(h["elided"], f"{w}.elided")})
            continue
        if not isinstance(h, dict) or not {"site", "tag", "words"} <= set(h) <= {
                "site", "tag", "words", "inner"}:
            raise InputError(f"{w} must have site, tag, words and maybe inner (or elided)")
        hop = {"site": validate.text(h["site"], f"{w}.site", optional=True, limit=1000),
               "tag": validate.text(h["tag"], f"{w}.tag", limit=40),
               "words": validate.count(h["words"], f"{w}.words")}
        if "inner" in h:
            hop["inner"] = validate.text(h["inner"], f"{w}.inner", limit=1000)
        out.append(hop)
    if "elided" in out[-1]:
        raise InputError(f"{where}.hops ends with elided hops, not the site's block")
    return {"root": root, "hops": out,
            "live_words": validate.finite(rec["live_words"], f"{where}.live_words", lo=0),
            "shared_words": validate.finite(rec["shared_words"], f"{where}.shared_words",
                                            lo=0)}


def parse_section(section, where: str = "retainers") -> dict:
    """A baseline's "retainers" section: {site key: path record}."""
    if not isinstance(section, dict):
        raise InputError(f"{where} must be an object")
    return {validate.text(k, f"{where} key", limit=1000): parse_record(v, f"{where}[{k[:80]!r}]")
            for k, v in section.items()}


def sampled_form(bench):
    """The benchmark as its snapshot run makes it (design 1): at its
    sampled rate."""
    if bench.rate == bench.profiled_rate:
        return bench
    return dataclasses.replace(bench, mode="sampled", rate=bench.profiled_rate,
                               sampled_rate=None)


def snapshot_run(bench, work_dir: str) -> tuple[dict, str | None]:
    """One run of `bench`'s first seed with a snapshot at exit: ({site key:
    path record}, None), or ({}, why there are no paths) when the runtime
    took none.  Run failures raise (InfraError); a malformed profile or
    snapshot raises InputError naming the file."""
    seed = bench.seeds[0]
    out_dir = os.path.join(work_dir, "retention")
    bench = sampled_form(bench)
    path = run_once(bench, seed, out_dir, tag=".snapshot", snapshot_sites=SNAPSHOT_SITES)
    prof = load_profile(path)
    snap = prof.snapshot
    if snap is None:
        return {}, (f"no path: the run with snapshot=exit wrote no snapshot into {path} "
                    f"(is the benchmark built with this runtime?)")
    if not snap["taken"]:
        return {}, f"no path: the runtime took no snapshot ({snap['reason']})"
    return ({k: record(e, bench.grouping, prof.rate)
             for k, e in retainers_by_site(snap, bench.grouping).items()}, None)


def flagged(b: dict) -> list:
    """A benchmark's rows that fail the live-at-exit or peak check."""
    return [r for key in CHECKS for r in b.get(key) or []
            if r.get("status") == _FLAGGED and not r.get("renamed_to")]


def _current_why(r: dict, n_paths: int, live_sites: set) -> str:
    if r.get("stacks_site", r["site"]) not in live_sites:
        return "no path: not live at exit, where the snapshot is taken"
    return (f"no path: not among the {n_paths} site(s) the snapshot gave a path "
            f"(the heaviest with sampled blocks live at exit, at most {SNAPSHOT_SITES})")


def attach(rows: list, current: dict | None, why: str | None,
           base: dict | None, live_sites: set) -> None:
    """Give each flagged row its "retention": the current and baseline
    path records (or None, with "why" and "baseline_why"), and whether the
    path changed.  `current` None: no path was taken (`why` says so);
    `base` None: the baseline has no "retainers" section; `live_sites`:
    the sites live at exit in the current run."""
    for r in rows:
        # A row counted per allocation point outside user code, or in C,
        # takes the path of the sampled site that stands for it.
        site = r.get("stacks_site", r["site"])
        cur = None if current is None else current.get(site)
        old = None if base is None else base.get(r.get("renamed_from") or site)
        out = {"current": cur, "baseline": old,
               "changed": cur is not None and old is not None and not same_path(cur, old)}
        if cur is None:
            out["why"] = why if current is None else _current_why(r, len(current), live_sites)
        if old is None:
            out["baseline_why"] = ("baseline: no path recorded" if base is None else
                                   "baseline: no path for this site (not live at exit, "
                                   "or not among its heaviest)")
        r["retention"] = out


def explain(ctx) -> None:
    """Design 1 over a decided session (Context): the extra run of each
    benchmark with a flagged row, and the rows' "retention".  Errors go to
    the report's errors (exit 2), the decided rows stay."""
    rep = ctx.report
    for name in sorted(rep["benchmarks"]):
        b = rep["benchmarks"][name]
        rows = flagged(b)
        if not rows or name not in ctx.benches:
            continue
        bench = ctx.benches[name]
        try:
            base_agg = ctx.baseline(name)
        except MemprofError:
            base_agg = None
        base = None if base_agg is None else base_agg.meta.get("retainers")
        cur_agg = ctx.measurements.peek(name)
        live = ({k for k, s in cur_agg.sites.items() if s.live_samples}
                if cur_agg is not None else set())
        if ctx.run_entries is not None:
            attach(rows, None, "no path: the check read a run directory and ran nothing",
                   base, live)
            continue
        try:
            current, why = snapshot_run(bench, ctx.work_dir)
        except MemprofError as e:
            rep.setdefault("errors", []).append(
                f"benchmark {name!r}: the run for retaining paths failed: {e}")
            attach(rows, None, "no path: the run with a snapshot failed (see errors)",
                   base, live)
            continue
        attach(rows, current if why is None else None, why, base, live)
