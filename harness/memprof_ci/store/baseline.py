"""Baseline files: one diff-friendly JSON document per benchmark.

A baseline records what a benchmark allocated (per-site samples, live
samples and line detail, summed over seeds), its exact GC totals and its
profiling overhead, plus the settings and provenance needed to decide
whether a later run is comparable.  Invariants: files are written atomically
(temp file + os.replace) under an flock on the <baselines> directory; keys are
sorted and each site sits on its own line so that `git diff` shows one line
per changed site; load_baseline never returns a baseline of another format
version.

The optional "stacks" section (written by update-baselines since the HTML
report; older baselines lack it and still load, with Aggregate.stacks None)
keeps the heaviest call chains for the baseline side of the flame graphs: a
sorted frame table ("frames", one label per line) and "list", one line per
stack: [site key, index of the site frame or null, samples, live, [frame
indices, root first]], sorted by frame labels so that a changed stack is a
changed line.  A structurally malformed section is rejected with the
baseline; one whose stacks plus "other" do not add up to the totals (site
counts edited by hand, say) is ignored (stacks None, meta["stacks_ignored"]
says why): stacks only draw pictures and support rename pairing, and never
outweigh the site counts.

Samples live at the peak are kept per site ("peak_samples") and in
totals ("peak_samples"), with config "peak": "events" (the definition of
the peak they were counted at); a baseline without them, or with another
definition (no config.peak: major-cycle ends), or without the GC's
heap_words/top_heap_words, loads with Aggregate.total_peak None (or those
GC keys absent), and the checks that need them are skipped.

The optional "schedule" section (schedule.py: the GC counters and the live
words at the peak of runs with the GC's schedule dithered; one line per
run and per site) is validated into meta["schedule"]; a baseline without
it loads with no such key, and its GC and peak checks then use
gc_timing_tolerance and the sampling test alone.

The optional "retainers" section (retention.py: the retaining path of each
site live at exit that a heap snapshot of the baseline's code gave one, one
line per site) is validated into meta["retainers"]; a baseline without it
loads with no such key, and a failing site's report then says that the
baseline has no path recorded.

The optional "points" section (point_sites.py: exact words, blocks and
live words per site from the allocation points of the first seed's run,
with the sampled callers of each, one line per site) loads into
Aggregate.points; a baseline without it
loads with None, and its alloc and live checks compare sampled sites.
With the points, config "live_runs" says how many runs (the first seed's)
decided what is live at exit: the live samples are theirs alone
(Aggregate.live_runs; absent: every run's).

The optional "annotations" section lists the annotated budgets the run
saw ([@zero_alloc], [@memprof.words_per_call N]), one line each:
{function, file, line, attribute, limit}; it loads into
meta["annotations"], None when absent (none recorded).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter

from ..sites import point_sites
from ..measure import retention
from ..inputs import validate as V
from ..inputs.profile_budgets import parse_recorded, recorded
from ..errors import InputError, MemprofError
from ..measure.overhead import parse_record
from ..inputs.profile import (GC_KEYS, GC_OPTIONAL_KEYS, PEAK_EVENTS, VERSION as PROFILE_VERSION,
                              VERSIONS as PROFILE_VERSIONS, load_json)
from ..measure.schedule import parse_section as parse_schedule
from ..sites.keys import norm_file
from ..sites.grouping import GROUPINGS, MAX_DEPTH, MAX_STACKS, Aggregate, Site

FORMAT = "memprof-ci/baseline"
VERSION = 1


def baseline_path(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}.json")


def canonical(raw: bytes) -> str | bytes:
    """What a baseline file says, independent of its formatting: its JSON
    re-serialised with sorted keys and no spaces (true, 1 and 1.0 stay
    distinct); bytes that are not UTF-8 JSON stand for themselves."""
    try:
        return json.dumps(json.loads(raw.decode("utf-8")), sort_keys=True,
                          separators=(",", ":"), ensure_ascii=False)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return bytes(raw)


def same_content(a: bytes | None, b: bytes | None) -> bool:
    """Whether two baseline files (their bytes, None for an absent one) say
    the same thing: re-indenting, reordering keys or changing line endings
    is no change; any value that differs, or a file added or removed, is."""
    if a is None or b is None:
        return a is None and b is None
    return a == b or canonical(a) == canonical(b)


def git_commit(cwd: str | None = None) -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def to_document(agg: Aggregate, overhead: dict | None, patch_id: str | None,
                commit: str | None, plan: dict | None = None,
                schedule: dict | None = None, retainers: dict | None = None) -> dict:
    return {
        "format": FORMAT, "version": VERSION,
        "profile_format_version": PROFILE_VERSION,
        "benchmark": agg.name,
        "ocaml_version": agg.ocaml_version,
        "backend": agg.backend,
        "patch_id": patch_id,
        "git_commit": commit,
        "config": {"rate": agg.rate, "seeds": list(agg.seeds), "frames": agg.frames,
                   "grouping": agg.grouping,
                   **({"peak": PEAK_EVENTS} if agg.total_peak is not None else {}),
                   **({"live_runs": agg.live_runs} if agg.live_runs is not None else {}),
                   **({"plan": plan} if plan else {})},
        "totals": {"samples": agg.total_samples, "live_samples": agg.total_live,
                   **({"peak_samples": agg.total_peak} if agg.total_peak is not None else {})},
        "gc": agg.gc,
        "gc_runs": agg.gc_runs,
        "overhead": overhead,
        "sites": {k: s.to_json() for k, s in sorted(agg.sites.items())},
        **({"stacks": stacks_document(agg)} if agg.stacks is not None else {}),
        **({"points": point_sites.section(agg.points)} if agg.points is not None else {}),
        **({"schedule": schedule} if schedule is not None else {}),
        **({"retainers": retainers} if retainers is not None else {}),
        # the annotations' files named location-independently, as the sites'
        **({"annotations": [dict(r, file=norm_file(r["file"]))
                            for r in recorded(agg.budgets)]}
           if agg.budgets is not None else {}),
    }


def stacks_document(agg: Aggregate) -> dict:
    """The baseline's "stacks" section: frame table + one entry per stack."""
    frames = sorted({f for st in agg.stacks for f in st[0]})
    index = {f: i for i, f in enumerate(frames)}
    rows = sorted(agg.stacks, key=lambda t: (t[0], t[1]))
    return {"depth": MAX_DEPTH, "limit": MAX_STACKS, "frames": frames,
            "other": list(agg.stacks_other),
            "list": [[key, pos, n, live, [index[f] for f in labels]]
                     for labels, key, pos, n, live in rows]}


def dumps(doc: dict) -> str:
    """Sorted, indented JSON with one line per site (and per GC run, and per
    key of the overhead record)."""
    def one(v):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)
    parts = []
    for k in sorted(doc):
        v = doc[k]
        if k in ("sites", "retainers") and v:
            inner = ",\n".join(f"    {one(sk)}: {one(sv)}" for sk, sv in sorted(v.items()))
            parts.append(f"  {one(k)}: {{\n{inner}\n  }}")
        elif k == "stacks" and v:
            parts.append(f"  {one(k)}: " + _section_text(v, one, ("frames", "list")))
        elif k == "points" and v:
            parts.append(f"  {one(k)}: " + _section_text(v, one, (), ("sites",)))
        elif k == "schedule" and v:
            parts.append(f"  {one(k)}: " + _section_text(v, one, ("gc", "dithers"), ("sites",)))
        elif k in ("gc_runs", "annotations") and v:
            inner = ",\n".join(f"    {one(r)}" for r in v)
            parts.append(f"  {one(k)}: [\n{inner}\n  ]")
        elif k == "overhead" and isinstance(v, dict):
            parts.append(f"  {one(k)}: " + _nested(v, 2, one))
        else:
            text = json.dumps(v, sort_keys=True, indent=2, ensure_ascii=False)
            parts.append(f"  {one(k)}: " + text.replace("\n", "\n  "))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def recorded_mode(directory: str, name: str) -> str | None:
    """The mode ("exact" or "sampled") that the baseline of `name` in
    `directory` records in config.plan, for the update that replaces it
    (exact_or_sampled.STICKY); None when it has none, or does not load: it is
    being replaced, so its errors are not the update's."""
    path = baseline_path(directory, name)
    if not os.path.lexists(path):
        return None
    try:
        plan = load_baseline(path, name).meta.get("plan") or {}
    except MemprofError:
        return None
    return plan.get("mode")


def _plan(plan, rate: float, seeds: list) -> dict | None:
    """config.plan: the mode an "auto" benchmark was given (exact_or_sampled.py)
    and the settings a manifest's `detect` planned (plan.plan_sampling);
    they must be the ones the baseline was recorded with."""
    if plan is None:
        return None
    if not isinstance(plan, dict):
        raise InputError("config.plan must be an object")
    out = {"detect": None if plan.get("detect") is None else
           V.finite(plan.get("detect"), "config.plan.detect", lo=0, hi=1, lo_open=True),
           "from_rate": V.finite(plan.get("from_rate"), "config.plan.from_rate",
                                 lo=V.MIN_RATE, hi=1)}
    if "mode" in plan:
        if plan["mode"] not in ("exact", "sampled"):
            raise InputError("config.plan.mode must be \"exact\" or \"sampled\"")
        out["exact_limit"] = V.finite(plan.get("exact_limit"), "config.plan.exact_limit", lo=0)
        if plan.get("exact_cost") is not None:
            out["exact_cost"] = V.finite(plan["exact_cost"], "config.plan.exact_cost", lo=0)
        if (plan["mode"] == "exact") != (rate == 1):
            raise InputError("config.plan.mode does not match config.rate")
    elif out["detect"] is None:
        raise InputError("config.plan has neither a mode nor a detect")
    for k in ("seeds", "from_seeds"):
        v = plan.get(k)
        if not (isinstance(v, list) and v and len(v) <= 10_000):
            raise InputError(f"config.plan.{k} must be a non-empty list")
        out[k] = [V.count(x, f"config.plan.{k}[{i}]") for i, x in enumerate(v)]
    out["rate"] = V.finite(plan.get("rate"), "config.plan.rate", lo=V.MIN_RATE, hi=1)
    if out["rate"] != rate or out["seeds"] != list(seeds):
        raise InputError("config.plan does not match config.rate and config.seeds")
    return dict(plan, **out)


def _nested(d: dict, indent: int, one) -> str:
    """An object with one line per key, and objects in it likewise: an
    overhead record whose counts and times each sit on their own line."""
    pad = " " * (indent + 2)
    body = ",\n".join(f"{pad}{one(k)}: " + (_nested(v, indent + 2, one) if isinstance(v, dict)
                                             else one(v)) for k, v in sorted(d.items()))
    return "{\n" + body + "\n" + " " * indent + "}" if d else "{}"


def _section_text(v: dict, one, lists=(), maps=()) -> str:
    """A section of the baseline ("stacks", "schedule") with one line per
    element of the lists and per entry of the maps named, the other keys
    on one line each."""
    inner = []
    for sk in sorted(v):
        sv = v[sk]
        if sk in lists and sv:
            body = ",\n".join(f"      {one(x)}" for x in sv)
            inner.append(f"    {one(sk)}: [\n{body}\n    ]")
        elif sk in maps and sv:
            body = ",\n".join(f"      {one(a)}: {one(b)}" for a, b in sorted(sv.items()))
            inner.append(f"    {one(sk)}: {{\n{body}\n    }}")
        else:
            inner.append(f"    {one(sk)}: {one(sv)}")
    return "{\n" + ",\n".join(inner) + "\n  }"


def is_baseline_doc(doc) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def load_baseline(path: str, name: str | None = None) -> Aggregate:
    """Read a baseline file: a regular file (never through a symlink), fully
    validated, and, given `name`, recorded for that benchmark."""
    agg = parse_baseline(load_json(path, "baseline", regular=True), path)
    if name is not None and agg.name != name:
        raise InputError(f"{path}: baseline records benchmark {agg.name!r}, not {name!r}; "
                         f"regenerate it with `memprof-ci update-baselines -k {name}`")
    return agg


def _site(key: str, d, where: str) -> Site:
    if not isinstance(d, dict):
        raise InputError(f"{where} must be an object")
    samples = V.count(d.get("samples"), f"{where}.samples")
    live = V.count(d.get("live_samples"), f"{where}.live_samples")
    if live > samples:
        raise InputError(f"{where}: live_samples {live} exceeds samples {samples}")
    peak = V.count(d.get("peak_samples", 0), f"{where}.peak_samples")
    if peak > samples:
        raise InputError(f"{where}: peak_samples {peak} exceeds samples {samples}")
    line = d.get("line")
    if line is not None and not V.is_line(line):
        raise InputError(f"{where}.line must be null or a line number")
    via = d.get("via", {})
    if not isinstance(via, dict):
        raise InputError(f"{where}.via must be an object")
    return Site(key=key, file=V.text(d.get("file"), f"{where}.file", optional=True),
                function=V.text(d.get("function"), f"{where}.function", optional=True),
                line=line, samples=samples, live_samples=live, peak_samples=peak,
                lines=Counter(V.line_counts(d.get("lines", {}), f"{where}.lines")),
                live_lines=Counter(V.line_counts(d.get("live_lines", {}),
                                                 f"{where}.live_lines")),
                via=Counter({V.text(k, f"{where}.via key"): V.count(v, f"{where}.via.{k}")
                             for k, v in via.items()}))


def _gc(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise InputError(f"{where} must be an object")
    out = {}
    for k in GC_KEYS:
        if k not in d:
            raise InputError(f"{where}.{k} is missing")
        out[k] = V.finite(d[k], f"{where}.{k}", lo=0, hi=V.MAX_COUNT)
    for k in GC_OPTIONAL_KEYS:
        if k in d:
            out[k] = V.finite(d[k], f"{where}.{k}", lo=0, hi=V.MAX_COUNT)
    return out


def _stacks(d, total: int, live_total: int):
    """The optional "stacks" section -> (stacks, other), validated."""
    if not isinstance(d, dict):
        raise InputError("stacks must be an object")
    frames = d.get("frames")
    rows = d.get("list")
    if not isinstance(frames, list) or not isinstance(rows, list):
        raise InputError("stacks.frames and stacks.list must be lists")
    if len(rows) > MAX_STACKS * 10 or len(frames) > MAX_STACKS * MAX_DEPTH * 10:
        raise InputError("stacks: too many stacks or frames")
    labels = [V.text(f, f"stacks.frames[{i}]", limit=1000) for i, f in enumerate(frames)]
    other = d.get("other", [0, 0])
    if not (isinstance(other, list) and len(other) == 2):
        raise InputError("stacks.other must be [samples, live]")
    o_n, o_live = V.count(other[0], "stacks.other[0]"), V.count(other[1], "stacks.other[1]")
    out, s_n, s_live = [], o_n, o_live
    for i, r in enumerate(rows):
        where = f"stacks.list[{i}]"
        if not (isinstance(r, list) and len(r) == 5 and isinstance(r[4], list)):
            raise InputError(f"{where} must be [site, site frame, samples, live, [frames]]")
        key = V.text(r[0], f"{where}[0]")
        idx = r[4]
        if not idx or len(idx) > MAX_DEPTH * 4:
            raise InputError(f"{where}: bad number of frames")
        for j in idx:
            if not (V.is_count(j) and j < len(labels)):
                raise InputError(f"{where}: frame index {j!r} out of range")
        pos = r[1]
        if pos is not None and not (V.is_count(pos) and pos < len(idx)):
            raise InputError(f"{where}[1]: site frame must be null or an index into the stack")
        n, live = V.count(r[2], f"{where}[2]"), V.count(r[3], f"{where}[3]")
        s_n += n
        s_live += live
        out.append((tuple(labels[j] for j in idx), key, pos, n, live))
    if s_n != total or s_live != live_total:
        return None, (0, 0)
    out.sort(key=lambda t: (-t[3], -t[4], t[0], t[1]))
    return out, (o_n, o_live)


def _check_header(doc, path: str, fix: str) -> None:
    """The document is a baseline of a format and profile version this
    harness reads (InputError naming the file otherwise)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{path}: not a memprof-ci baseline (format="
                         f"{doc.get('format') if isinstance(doc, dict) else None!r}); {fix}")
    if not V.is_version(doc.get("version"), VERSION):
        raise InputError(f"{path}: baseline format version {doc.get('version')!r} is not "
                         f"supported (expected {VERSION}); {fix}")
    pv = doc.get("profile_format_version")
    if type(pv) is not int or pv not in PROFILE_VERSIONS:
        raise InputError(f"{path}: baseline was made from profile format version "
                         f"{pv!r}, expected one of "
                         f"{', '.join(map(str, PROFILE_VERSIONS))}; {fix}")


def _config(cfg) -> tuple:
    """The baseline's config section, checked: (rate, seeds, frames)."""
    if not isinstance(cfg, dict):
        raise InputError("config must be an object")
    rate = V.finite(cfg.get("rate"), "config.rate", lo=V.MIN_RATE, hi=1)
    seeds = cfg.get("seeds")
    if not (isinstance(seeds, list) and seeds and len(seeds) <= 10_000):
        raise InputError("config.seeds must be a non-empty list")
    for i, sd in enumerate(seeds):
        V.count(sd, f"config.seeds[{i}]")
    frames = V.count(cfg.get("frames"), "config.frames")
    if cfg.get("grouping") not in GROUPINGS:
        raise InputError(f"config.grouping must be one of {', '.join(GROUPINGS)}")
    return rate, seeds, frames


def _optional_sections(doc: dict, agg: Aggregate, meta: dict) -> None:
    """The schedule, retainers, points and stacks sections, where present,
    into the Aggregate and its meta."""
    if doc.get("schedule") is not None:
        meta["schedule"] = parse_schedule(doc["schedule"])
    if doc.get("retainers") is not None:
        meta["retainers"] = retention.parse_section(doc["retainers"])
    if doc.get("points") is not None:
        agg.points = point_sites.parse_section(doc["points"])
    # The annotated budgets update-baselines saw; absent: none recorded.
    meta["annotations"] = parse_recorded(doc["annotations"]) \
        if doc.get("annotations") is not None else None
    if doc.get("stacks") is not None:
        agg.stacks, agg.stacks_other = _stacks(doc["stacks"], agg.total_samples,
                                               agg.total_live)
        if agg.stacks is None:
            meta["stacks_ignored"] = ("its stacks do not add up to its totals (edited by "
                                      "hand?), so they were ignored")


def _live_runs(cfg: dict, runs: int) -> int | None:
    """config.live_runs: how many runs (the first seeds') decided what is
    live at exit and sum into the live counts; absent, all of them."""
    if "live_runs" not in cfg:
        return None
    n = cfg["live_runs"]
    if type(n) is not int or not 1 <= n < runs:
        raise InputError(f"config.live_runs must be an integer from 1 to {runs - 1} "
                         f"(the runs that decided live at exit), not {str(n)[:40]!r}")
    return n


def parse_baseline(doc, path: str) -> Aggregate:
    fix = "regenerate it with `memprof-ci update-baselines`"
    _check_header(doc, path, fix)
    try:
        for k in ("benchmark", "config", "totals", "gc", "sites"):
            if k not in doc:
                raise InputError(f"key `{k}` is missing")
        cfg = doc["config"]
        rate, seeds, frames = _config(cfg)
        totals = doc["totals"]
        if not isinstance(totals, dict):
            raise InputError("totals must be an object")
        raw_sites = doc["sites"]
        if not isinstance(raw_sites, dict):
            raise InputError("sites must be an object")
        sites = {V.text(k, "site key"): _site(k, v, f"sites[{k[:80]!r}]")
                 for k, v in raw_sites.items()}
        runs = doc.get("gc_runs") or []
        if not isinstance(runs, list):
            raise InputError("gc_runs must be a list")
        agg = Aggregate(name=V.text(doc["benchmark"], "benchmark", limit=200), rate=rate,
                        seeds=list(seeds), frames=frames, grouping=cfg["grouping"],
                        ocaml_version=V.text(doc.get("ocaml_version"), "ocaml_version",
                                             optional=True, limit=100),
                        backend=V.text(doc.get("backend"), "backend", optional=True,
                                       limit=100),
                        gc=_gc(doc["gc"], "gc"),
                        gc_runs=[_gc(r, f"gc_runs[{i}]") for i, r in enumerate(runs)],
                        total_samples=V.count(totals.get("samples"), "totals.samples"),
                        total_live=V.count(totals.get("live_samples"), "totals.live_samples"),
                        sites=sites, sources=[path])
        agg.live_runs = _live_runs(cfg, len(seeds))
        if "peak_samples" in totals and cfg.get("peak") == PEAK_EVENTS:
            agg.total_peak = V.count(totals["peak_samples"], "totals.peak_samples")
        meta = {"plan": _plan(cfg.get("plan"), rate, seeds),
                "overhead": parse_record(doc.get("overhead"), "overhead"),
                "patch_id": V.text(doc.get("patch_id"), "patch_id", optional=True, limit=200),
                "git_commit": V.text(doc.get("git_commit"), "git_commit", optional=True,
                                     limit=200),
                "path": path}
        _optional_sections(doc, agg, meta)
    except InputError as e:
        raise InputError(f"{path}: malformed baseline: {e}; {fix}") from None
    if sum(s.samples for s in sites.values()) != agg.total_samples or \
            sum(s.live_samples for s in sites.values()) != agg.total_live or \
            (agg.total_peak is not None
             and sum(s.peak_samples for s in sites.values()) != agg.total_peak):
        raise InputError(f"{path}: malformed baseline (site samples do not sum to "
                         f"totals); {fix}")
    agg.meta = meta
    return agg


def incompatibility(base: Aggregate, bench, path: str) -> str | None:
    """Why a baseline cannot be compared with runs of `bench`, or None."""
    want = {"rate": bench.rate, "seeds": list(bench.seeds), "frames": bench.frames,
            "grouping": bench.grouping}
    have = {"rate": base.rate, "seeds": list(base.seeds), "frames": base.frames,
            "grouping": base.grouping}
    diff = [k for k in ("rate", "seeds", "frames", "grouping") if want[k] != have[k]]
    if not diff:
        return None
    return ", ".join(f"{k}={have[k]!r} (judged with {want[k]!r})" for k in diff)


def check_compatible(base: Aggregate, bench, path: str) -> None:
    """A baseline is only comparable if taken with the same sampling setup."""
    why = incompatibility(base, bench, path)
    if why:
        raise InputError(
            f"{path}: baseline for {bench.name!r} was made with {why}; run `memprof-ci "
            f"update-baselines -k {bench.name}` or restore the manifest setting")
