"""Grouping profile stacks into allocation sites and summing them over runs.

A site must survive code motion: under the default "function" grouping it is
the innermost frame outside the OCaml standard library, keyed by (file,
function) and never by line, so adding lines above an allocation keeps the
same key; absolute file names are shortened to their last two components so
that baselines do not depend on where the project is checked out.  Line
numbers are kept only as per-site detail.  Invariants: every
stack lands in exactly one site (stacks with no known non-stdlib frame go to
the innermost known frame, else "<unknown>"), and an Aggregate's per-site
samples sum to its totals.  Samples live at the peak (`peak_samples`) are
summed the same way; `total_peak` is None when a profile did not record them.

Stacks (for flame graphs and for telling a rename from a new site) are kept
per distinct call chain, bounded: frames are "Function @ file" labels (no
line, names clipped to FRAME_LABEL_LIMIT characters), root first, at most
MAX_DEPTH innermost frames; an Aggregate keeps its MAX_STACKS heaviest
stacks and sums the rest into `stacks_other`, so that the kept stacks plus
`stacks_other` always add up to the totals.  `stacks` is None when the source
(an old baseline) recorded none.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import operator
import os
from collections import Counter
from dataclasses import dataclass, field

from . import point_sites
from ..errors import InputError
from ..inputs.profile import (GC_KEYS, GC_OPTIONAL_KEYS, LIVE, LIVE_UNDECIDED, PEAK_KEY, SAMPLES,
                              WORD_BYTES, Profile, check_frames, check_totals,
                              explain_bad_stack, gc_paused, load_profile, peak_of, stack_counts,
                              stack_frames, undecided_live_error)
from .keys import UNKNOWN, classify, is_generated, is_known, is_stdlib, norm_file, site_label
from ..inputs.manifest import GROUPINGS


MAX_DEPTH = 32           # innermost frames kept per stack
MAX_STACKS = 300         # heaviest stacks kept per benchmark (rest: stacks_other)
FRAME_LABEL_LIMIT = 200  # characters of a frame label
@dataclass
class Site:
    key: str
    file: str | None
    function: str | None
    line: int | None = None
    samples: int = 0
    live_samples: int = 0
    peak_samples: int = 0
    lines: Counter = field(default_factory=Counter)
    live_lines: Counter = field(default_factory=Counter)
    via: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {
            "file": self.file, "function": self.function, "line": self.line,
            "samples": self.samples, "live_samples": self.live_samples,
            "peak_samples": self.peak_samples,
            "lines": {str(k): v for k, v in sorted(self.lines.items(), key=_line_order)},
            "live_lines": {str(k): v for k, v in sorted(self.live_lines.items(), key=_line_order)},
            "via": dict(sorted(self.via.items())),
        }


def _line_order(kv):
    k = kv[0]
    return (k is None, k if k is not None else 0)


@dataclass
class Aggregate:
    """Samples of one benchmark summed over runs (seeds), grouped into sites."""

    name: str
    rate: float
    seeds: list
    frames: int
    grouping: str
    ocaml_version: str | None = None
    backend: str | None = None
    gc: dict = field(default_factory=dict)
    gc_runs: list = field(default_factory=list)
    total_samples: int = 0
    total_live: int = 0
    total_peak: int | None = None   # None: not recorded (old profile or baseline)
    # Each run's peak, (total peak samples, {site key: peak samples}), when
    # summed from profiles: the spread of the runs themselves (comparison.py).
    peak_runs: list = field(default_factory=list)
    sites: dict = field(default_factory=dict)
    sources: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    # [(frames root first, site key, index of the site frame or None,
    #   samples, live)], heaviest first; None: not recorded (old baseline).
    stacks: list | None = None
    stacks_other: tuple = (0, 0)
    # Exact counts per site from the allocation points of the first run
    # that counted them (point_sites.py); None: no run did.
    points: object = None
    # That run's points as read (inputs/points.Points), for the budgets;
    # None from a baseline, or when no run counted them.
    point_counts: object = None
    # The annotated functions' exact counts (Profile.budgets) of that run,
    # or of the first run when none counted points; None: not written.
    budgets: tuple | None = None
    # False when the runs did not decide what is live at exit (OCAMLMEMPROF
    # live=off): total_live and every live count are then blocks not yet
    # collected, which nothing may judge (rows.site_rows refuses them).
    live_decided: bool = True
    # How many runs the live counts sum: None, every run; else those that
    # decided what is live at exit (the first seed's, which counted the
    # allocation points; the others skipped the exit's walk: _live_once).
    live_runs: int | None = None

    @property
    def runs(self) -> int:
        return len(self.seeds)

    @property
    def exposure(self) -> float:
        # Expected samples per word allocated in every run, summed over runs.
        return self.rate * self.runs

    def exposure_of(self, check: str) -> float:
        """The exposure of the counts of `check` ("alloc", "live" at exit or
        "peak"): live at exit sums only the runs that decided it."""
        if check == "live" and self.live_runs is not None:
            return self.rate * self.live_runs
        return self.exposure

    def bytes_of(self, samples: float) -> float:
        return samples / self.exposure * WORD_BYTES


_NAMES = operator.itemgetter("function", "file")


def retainers_by_site(snapshot: dict | None, grouping: str = "function") -> dict:
    """A profile's snapshot sites (Profile.snapshot, snapshot.py) keyed as
    this module keys a stack with the same frames under `grouping`:
    {site key: {frames, live_*, shared_*, root, depth, path}}.  A site
    reached by several stacks keeps the entry with the most live samples
    (the first on a tie: the section lists the heaviest first).  Empty
    when there is no snapshot or it was not taken."""
    out: dict = {}
    for entry in (snapshot or {}).get("sites", []):
        idx, fl, fn, _via = classify(entry["frames"], grouping)
        if idx is None:
            key = UNKNOWN
        elif grouping == "line":
            key = site_label(fn, fl, entry["frames"][idx]["line"])
        else:
            key = site_label(fn, fl)
        if key not in out or entry["live_samples"] > out[key]["live_samples"]:
            out[key] = entry
    return out


def charged_caller(frames: list, idx):
    """When a stack's site frame (at `idx`) is code the compiler generated
    (caml_curry2, ...), the index of the OCaml function that called it:
    the next known frame outward that is neither generated nor in the
    standard library; else None (the site stands for itself)."""
    if idx is None or not is_generated(frames[idx].get("function")):
        return None
    for j in range(idx + 1, len(frames)):
        fr = frames[j]
        if is_known(fr) and not is_stdlib(fr) and not is_generated(fr.get("function")):
            return j
    return None


def _charge_key(frame: dict, by_line: bool) -> str:
    return site_label(frame.get("function"), norm_file(frame.get("file")),
                      frame["line"] if by_line else None)


def _stack_shape(cache: dict, st, i: int, path: str, grouping: str):
    """A stack's frames and what its frame sequence decides, cached by the
    sequence of (function, file): (frames, (idx, file, function, via, key,
    labels, pos, charged caller's index)).  Checks the frames once per
    distinct sequence, and a line that is not an int every time."""
    frames = stack_frames(st, i, path)
    try:
        sig = tuple(map(_NAMES, frames))
    except (KeyError, TypeError):
        check_frames(frames, i, path)
        raise
    c = cache.get(sig)
    if c is None:
        check_frames(frames, i, path)
        idx, fl, fn, via = classify(frames, grouping)
        labels, pos = stack_labels(sig, idx)
        c = cache[sig] = (idx, fl, fn, via, UNKNOWN if idx is None else site_label(fn, fl),
                          labels, pos, charged_caller(frames, idx))
    if c[0] is not None:
        line = frames[c[0]]["line"]
        if line is not None and type(line) is not int:
            check_frames(frames, i, path)
    return frames, c


def _add_pair(acc: dict, key, n: int, live: int) -> None:
    """acc[key] += [n, live]."""
    t = acc.setdefault(key, [0, 0])
    t[0] += n
    t[1] += live


def _add_to_site(a: list, n: int, live: int, line, via) -> None:
    """A stack's samples and live samples into its site's compact tuple
    (a[4], a[5]) and their lines (a[6], a[7]) and "via" (a[8])."""
    a[4] += n
    a[5] += live
    if n:
        d = a[6]
        d[line] = d.get(line, 0) + n
        if via:
            d = a[8]
            d[via] = d.get(via, 0) + n
    if live:
        d = a[7]
        d[line] = d.get(line, 0) + live


def _group_stacks(stacks: list, grouping: str, path: str = "profile", totals=None,
                  inner: dict | None = None):
    """Site counts of one profile's stacks: (compact site tuples, samples, live).

    With `inner`, also sums each stack's [samples, live] by its innermost
    frame's (file, line, first, last, function) and site key into it, which
    point_sites.add_samples reads to tell the samples drawn at OCaml
    allocation points from those drawn in C; a stack whose site is code
    the compiler generated is summed under its OCaml caller's key
    (charged_caller) where the stack records one.

    Also validates the stacks in the same pass, with profile.py's stack
    validator (counter types and identities for every stack; frames once per
    distinct (function, file) sequence) and,
    given the profile's totals, that they add up: this is the hot loop on
    profiles with tens of thousands of stacks.
    """
    cache: dict = {}
    acc: dict = {}
    st_acc: dict = {}
    total = live_total = peak_total = 0
    has_peak = totals is None or PEAK_KEY in totals
    by_line = grouping == "line"
    for i, st in enumerate(stacks):
        vals = stack_counts(st)
        if vals is None:
            explain_bad_stack(st, i, path)
        frames, (idx, fl, fn, via, key, labels, pos, cidx) = _stack_shape(cache, st, i, path,
                                                                           grouping)
        line = None
        if idx is not None:
            line = frames[idx]["line"]
            if by_line:
                key = site_label(fn, fl, line)
        n, live = vals[SAMPLES], vals[LIVE]
        a = acc.get(key)
        if a is None:
            a = acc[key] = [key, fl, fn, line if by_line else None, 0, 0, {}, {}, {}, 0]
        pk = peak_of(st, i, path)
        if pk is None:
            has_peak = False
        else:
            a[9] += pk
            peak_total += pk
        _add_to_site(a, n, live, line, via)
        if (n or live) and inner is not None and frames:
            f0 = frames[0]
            _add_pair(inner, ((f0.get("file"), f0.get("line"), f0.get("col_start"),
                               f0.get("col_end"), f0.get("function")),
                              key if cidx is None else _charge_key(frames[cidx], by_line)),
                      n, live)
        if n or live:
            _add_pair(st_acc, (labels, key, pos), n, live)
        total += n
        live_total += live
    check_totals(totals, total, live_total, peak_total, path)
    return ([tuple(a) for a in acc.values()], total, live_total, st_acc,
            peak_total if has_peak else None)


def frame_label(function, file) -> str:
    """A stack frame as shown in flame graphs: "Function @ file", clipped."""
    lab = site_label(function, norm_file(file))
    return lab if len(lab) <= FRAME_LABEL_LIMIT else lab[:FRAME_LABEL_LIMIT] + "…"


def stack_labels(sig: tuple, idx):
    """(labels root first, at most MAX_DEPTH innermost; index of the site
    frame in them or None) for a stack's (function, file) signature, given
    innermost first with the site frame at `idx`."""
    labels = tuple(frame_label(fn, fl) for fn, fl in reversed(sig[:MAX_DEPTH]))
    pos = None if idx is None or idx >= MAX_DEPTH else len(labels) - 1 - idx
    return labels, pos


def truncate_stacks(acc: dict, limit: int | None = None):
    """{(labels, key, pos): [samples, live]} -> (kept stacks, heaviest first;
    (samples, live) of the rest)."""
    items = sorted(((k[0], k[1], k[2], v[0], v[1]) for k, v in acc.items()),
                   key=lambda t: (-t[3], -t[4], t[0], t[1]))
    limit = MAX_STACKS if limit is None else limit
    kept, rest = items[:limit], items[limit:]
    return kept, (sum(t[3] for t in rest), sum(t[4] for t in rest))


def _load_grouped(path: str, grouping: str, live_decided: bool = True):
    # Runs in a worker process: parse, validate and group one profile, and
    # return only the small grouped result plus the stack-less metadata.
    with gc_paused():
        p = load_profile(path, check_stacks=False, undecided_live=not live_decided)
        if not isinstance(p.stacks, list):
            raise InputError(f"{path}: malformed profile: stacks is not a list; regenerate it")
        inner: dict = {}
        grouped = _group_stacks(p.stacks, grouping, path, p.totals, inner)
    p.stacks = []
    # Plain tuples and dicts: they pickle several times faster than Site/Counter.
    return p, grouped + (inner,)


def _counted(p: Profile) -> bool:
    """The profile has exact counts per allocation point."""
    return p.points is not None and p.points.unavailable is None


def _check_set(profiles: list, name: str):
    if not profiles:
        raise InputError(f"{name}: no profiles to aggregate")
    p0 = profiles[0]
    for p in profiles[1:]:
        if p.rate != p0.rate:
            raise InputError(f"{p.path}: rate {p.rate} differs from {p0.path} "
                             f"(rate {p0.rate}); a profile set must share one rate")
        if p.frames != p0.frames:
            raise InputError(f"{p.path}: frames {p.frames} differs from {p0.path} "
                             f"(frames {p0.frames}); a profile set must share one frames")


def _forget_live(grouped: tuple) -> tuple:
    """One profile's grouped counts (_group_stacks) without its live
    samples: those of a run that did not decide what is live at exit."""
    sites, total, _live, st_acc, peak, inner = grouped
    return ([t[:5] + (0, t[6], {}, t[8], t[9]) for t in sites], total, 0,
            {k: [v[0], 0] for k, v in st_acc.items() if v[0]}, peak,
            {k: [v[0], 0] for k, v in inner.items() if v[0]})


def _live_once(parts: list, name: str, live_decided: bool) -> tuple[list, int | None]:
    """(parts, live_runs): a set whose first run decided what is live at
    exit and counted the allocation points may leave it undecided in the
    others (runner.collect: they skip the exit's walk); their live samples
    are then dropped and live_runs is 1.  A set that must decide live
    (`live_decided`) and does not is refused, naming the profile."""
    undecided = [p.live_mode == LIVE_UNDECIDED for p, _ in parts]
    if not any(undecided) or all(undecided):
        if live_decided and any(undecided):
            raise undecided_live_error(parts[0][0].path)
        return parts, None
    first = parts[0][0]
    if undecided[0] or not _counted(first):
        bad = next(p for (p, _), u in zip(parts, undecided) if u)
        raise InputError(f"{bad.path}: {name}: this run did not decide what is live at exit "
                         f"(OCAMLMEMPROF live=off) but the set's first run "
                         f"{'did not either' if undecided[0] else 'counted no allocation points'}; "
                         f"only the runs after a first one that counts the points may skip it")
    return [(p, _forget_live(g) if u else g) for (p, g), u in zip(parts, undecided)], \
        undecided.count(False)


def _combine(parts: list, grouping: str, name: str, live_decided: bool = False) -> Aggregate:
    profiles = [p for p, _ in parts]
    _check_set(profiles, name)
    parts, live_runs = _live_once(parts, name, live_decided)
    p0 = profiles[0]
    agg = Aggregate(name=name, rate=p0.rate, seeds=[p.seed for p in profiles],
                    frames=p0.frames, grouping=grouping,
                    ocaml_version=p0.ocaml_version, backend=p0.backend,
                    sources=[p.path for p in profiles])
    acc: dict = {}
    st_acc: dict = {}
    peaks = []
    counted = next((p for p, _ in parts if _counted(p)), None)
    if counted is not None:
        agg.points = point_sites.group(counted.points, grouping)
        agg.point_counts = counted.points
        for _, grouped in parts:
            point_sites.add_samples(agg.points, counted.points, grouped[5], grouping)
    agg.budgets = (counted or p0).budgets
    for p, (sites, total, live, stacks, peak, _inner) in parts:
        peaks.append(peak)
        agg.peak_runs.append((peak, {t[0]: t[9] for t in sites if t[9]}))
        for k, v in stacks.items():
            t = st_acc.get(k)
            if t is None:
                st_acc[k] = list(v)
            else:
                t[0] += v[0]
                t[1] += v[1]
        agg.gc_runs.append(dict(p.gc))
        agg.total_samples += total
        agg.total_live += live
        # Merge plain dicts first and build Site/Counter objects once at the
        # end: constructing them per profile dominated large comparisons.
        for t in sites:
            a = acc.get(t[0])
            if a is None:
                acc[t[0]] = [t[1], t[2], t[3], t[4], t[5], dict(t[6]), dict(t[7]), dict(t[8]),
                             t[9]]
                continue
            a[3] += t[4]
            a[4] += t[5]
            a[8] += t[9]
            for d, src in ((a[5], t[6]), (a[6], t[7]), (a[7], t[8])):
                for k, v in src.items():
                    d[k] = d.get(k, 0) + v
    for key, a in acc.items():
        agg.sites[key] = Site(key=key, file=a[0], function=a[1], line=a[2], samples=a[3],
                              live_samples=a[4], peak_samples=a[8], lines=Counter(a[5]),
                              live_lines=Counter(a[6]), via=Counter(a[7]))
    agg.total_peak = None if None in peaks else sum(peaks)
    agg.peak_runs = [] if None in peaks else agg.peak_runs
    agg.gc = mean_gc(agg.gc_runs)
    agg.live_runs = live_runs
    agg.live_decided = live_runs is not None or all(p.live_mode != LIVE_UNDECIDED
                                                    for p in profiles)
    agg.stacks, agg.stacks_other = truncate_stacks(st_acc)
    return agg


def aggregate(profiles: list[Profile], grouping: str, name: str) -> Aggregate:
    if grouping not in GROUPINGS:
        raise InputError(f"unknown grouping {grouping!r}; use one of {', '.join(GROUPINGS)}")
    _check_set(profiles, name)
    parts = []
    for p in profiles:
        inner: dict = {}
        parts.append((p, _group_stacks(p.stacks, grouping, p.path, inner=inner) + (inner,)))
    return _combine(parts, grouping, name)


PARALLEL_MIN_BYTES = 4 << 20


def aggregate_paths(paths: list[str], grouping: str, name: str,
                    live_decided: bool = True) -> Aggregate:
    """Load, validate and group profile files, in parallel when they are big.
    With `live_decided`, the set must decide what is live at exit: a
    profile of `live=off` is refused, except after a first run that decided
    it and counted the allocation points (_live_once); without, such
    profiles' live samples count the blocks not yet collected.

    Parsing JSON dominates for large profiles, so files are spread over
    worker processes; results are combined in the given (sorted) order, so
    the outcome does not depend on scheduling.
    """
    if grouping not in GROUPINGS:
        raise InputError(f"unknown grouping {grouping!r}; use one of {', '.join(GROUPINGS)}")
    if not paths:
        raise InputError(f"{name}: no profiles to aggregate")
    size = 0
    for p in paths:
        try:
            size += os.path.getsize(p)
        except OSError:
            pass
    jobs = min(len(paths), os.cpu_count() or 1)
    if jobs > 1 and size >= PARALLEL_MIN_BYTES:
        with cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("fork")) as ex:
            parts = list(ex.map(_load_grouped, paths, [grouping] * len(paths),
                                [False] * len(paths)))
    else:
        parts = [_load_grouped(p, grouping, False) for p in paths]
    return _combine(parts, grouping, name, live_decided)


def mean_gc(runs: list[dict]) -> dict:
    if not runs:
        return {}
    out = {}
    # A counter some run does not carry (a memtrace trace carries none) is
    # not measured, and left out: never a zero.
    for k in tuple(k for k in GC_KEYS + GC_OPTIONAL_KEYS if all(k in r for r in runs)):
        m = sum(r[k] for r in runs) / len(runs)
        # Deterministic programs give equal totals per seed: keep them exact ints.
        out[k] = int(m) if m == int(m) else m
    return out
