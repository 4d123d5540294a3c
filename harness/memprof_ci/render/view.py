"""One run, viewed: what `memprof-ci view FILE` shows, read from one file.

Job: load_view(path) reads one input and returns a View: the run's
description, its allocation sites (heaviest first), the call stacks behind
them (stackgraph's entry, for the icicle) and, when the input carries them,
live words over time, the lifetimes of sampled blocks and retainer paths.
view_html.py renders it; nothing here writes or prints.

Inputs, told apart by content and never by name: a file that starts with
the CTF magic is a trace (ours, `OCAMLMEMPROF=...,trace=FILE`, or
memtrace's; ctf_profile.py decodes it); any other file must be a JSON
document whose "format" names a kind in JSON_KINDS (a memprof-ci profile,
profile.py, of any version: a version-4 profile carries a heap snapshot
taken at exit, whose sites' retainer paths (snapshot.py) go to their rows
through sites.retainers_by_site).  Another kind plugs in with
register_json_kind(format, loader): the loader turns the decoded document
into a View.

Invariants:
1. load_view returns a View or raises InputError naming the file (exit 2):
   a missing, unreadable, corrupt, truncated or unknown file never gives a
   partial View.
2. Sites are the harness's (sites.classify, "function" grouping: the
   innermost frame outside the standard library, keyed "Function @ file"),
   so a site reads here as in `check` and `compare`.  Words are estimates,
   samples / rate (exact at rate 1); blocks are sampled blocks.
3. What an input does not carry is None, never zero or invented: a profile
   has no timeline and no lifetimes, a trace no GC counters and no
   retainer paths, a profile has them only from its snapshot (and only for
   the sites the snapshot gives a path); the page leaves out or explains
   what is None.  A hop of a path that is not a sampled block has no site
   (None): the runtime knows only its tag and size.
4. Bounded: at most MAX_SITES site rows (the rest summed in `rest`), a
   timeline of at most TIMELINE_BINS points, LIFETIME_EDGES_US bins;
   stackgraph bounds the stacks.  A trace is decoded once; the times and
   changes of its events and the lifetimes are kept in arrays of 8-byte
   integers, and only the blocks not yet collected in a dict.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..inputs import ctf, validate
from ..text import mdsafe
from ..inputs.ctf_profile import parse_ctf
from ..errors import InputError
from ..text.fmt import fmt_bytes, fmt_words
from ..inputs.profile import (FORMAT as PROFILE_FORMAT, LIVE_UNDECIDED, WORD_BYTES, Profile,
                              parse_profile)
from ..sites.keys import site_label
from ..sites.grouping import aggregate, retainers_by_site
from ..sites.keys import UNKNOWN, classify
from ..sites.retaining import path_from_snapshot
from .stackgraph import stacks_entry

MAX_SITES = 100
# The live column of a profile whose runtime told no live block from a
# dead one (OCAMLMEMPROF live=off): the sampled blocks not yet collected.
UNDECIDED_LIVE = "not collected by exit (live=off)"
TIMELINE_BINS = 400
# Upper edges of the lifetime bins, in microseconds (the last bin is open).
LIFETIME_EDGES_US = (10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)


@dataclass
class SiteRow:
    key: str
    function: str | None
    file: str | None
    line: int | None            # the heaviest line, when known
    words: float                # estimated words (allocated, or live for a snapshot)
    samples: int
    blocks: int | None = None
    promoted: float | None = None
    collected: float | None = None
    live: float | None = None
    peak: float | None = None
    retainers: list | None = None   # [RetainingPath]: only from an input that has them


@dataclass
class Timeline:
    """Estimated live words (sampled blocks allocated and not yet collected,
    samples / rate) over time: `points` [(µs since the start, the highest
    value in the bin ending there)], and the peak's value and time."""
    points: list
    end_us: int
    peak_words: float
    peak_us: int


@dataclass
class Lifetimes:
    """Sampled blocks by time from allocation to collection: per bin of
    LIFETIME_EDGES_US, [blocks, estimated words]; blocks never collected
    before the trace ended are counted apart, in `live`."""
    bins: list
    live: list


@dataclass
class View:
    path: str
    kind: str                   # "profile", "trace", or a registered kind
    program: str
    words_what: str             # what the words column counts
    total_words: float
    facts: list                 # [(label, text)] describing the run
    sites: list                 # [SiteRow], heaviest first, at most MAX_SITES
    rest: tuple = (0, 0.0)      # (sites, words) beyond MAX_SITES
    live_what: str = "live at exit"
    moment: str = "at exit"     # when retainer paths were taken
    stacks: dict | None = None  # stackgraph.stacks_entry(None, run)
    timeline: Timeline | None = None
    lifetimes: Lifetimes | None = None
    notes: list = field(default_factory=list)

    @property
    def has_retainers(self) -> bool:
        return any(s.retainers for s in self.sites)


# ------------------------------------------------------------ kinds

JSON_KINDS: dict = {}


def register_json_kind(fmt: str, loader: Callable) -> None:
    """A JSON document whose "format" is `fmt` is read by loader(doc, path),
    which returns a View or raises InputError."""
    JSON_KINDS[fmt] = loader


def load_view(path: str) -> View:
    """The View of one file; see the invariants."""
    data = validate.read_bytes(path, f"input ({_expected()})")
    if data[:4] == ctf.MAGIC.to_bytes(4, "little"):
        return _trace_view(data, path)
    if not data.strip():
        raise InputError(f"{path}: empty file ({_expected()})")
    doc = validate.loads(data, path, "input (not a CTF trace)")
    fmt = doc.get("format") if isinstance(doc, dict) else None
    loader = JSON_KINDS.get(fmt) if isinstance(fmt, str) else None
    if loader is None:
        raise InputError(f"{path}: JSON of an unknown format {mdsafe.shown(repr(fmt), 80)} "
                         f"({_expected()})")
    return loader(doc, path)


def _expected() -> str:
    return ("expected a CTF trace or a JSON document of format "
            + " or ".join(sorted(JSON_KINDS)))


# ------------------------------------------------------------ profiles and traces

def _est(samples: int, rate: float) -> float:
    return samples / rate


def site_rows(p: Profile, peak: bool) -> tuple[list, tuple]:
    """Per site of the profile's stacks: the heaviest MAX_SITES rows and
    (number of sites, words) of the others.  Stacks are already valid."""
    acc: dict = {}
    keys: dict = {}
    for st in p.stacks:
        frames = st["frames"]
        sig = tuple((f.get("function"), f.get("file")) for f in frames)
        c = keys.get(sig)
        if c is None:
            idx, fl, fn, _via = classify(frames, "function")
            c = keys[sig] = (idx, fl, fn, UNKNOWN if idx is None else site_label(fn, fl))
        idx, fl, fn, key = c
        a = acc.get(key)
        if a is None:
            a = acc[key] = {"fn": fn, "fl": fl, "lines": {}, "samples": 0, "blocks": 0,
                            "promoted": 0, "collected": 0, "live": 0, "peak": 0}
        a["samples"] += st["samples"]
        a["blocks"] += st["blocks"]
        a["promoted"] += st["promoted_samples"]
        a["collected"] += st["collected_samples"]
        a["live"] += st["live_samples"]
        a["peak"] += st.get("peak_live_samples") or 0
        if idx is not None and st["samples"]:
            ln = frames[idx].get("line")
            a["lines"][ln] = a["lines"].get(ln, 0) + st["samples"]
    order = sorted(acc.items(), key=lambda kv: (-kv[1]["samples"], kv[0]))
    rows = []
    for key, a in order[:MAX_SITES]:
        lines = [(n, ln) for ln, n in a["lines"].items() if ln is not None]
        rows.append(SiteRow(
            key=key, function=a["fn"], file=a["fl"],
            line=min(lines, key=lambda t: (-t[0], t[1]))[1] if lines else None,
            words=_est(a["samples"], p.rate), samples=a["samples"], blocks=a["blocks"],
            promoted=_est(a["promoted"], p.rate), collected=_est(a["collected"], p.rate),
            live=_est(a["live"], p.rate), peak=_est(a["peak"], p.rate) if peak else None))
    rest = order[MAX_SITES:]
    return rows, (len(rest), _est(sum(a["samples"] for _, a in rest), p.rate))


def _words(x: float) -> str:
    return f"{fmt_words(x)} ({fmt_bytes(x * WORD_BYTES)})"


def _run_view(p: Profile, path: str, kind: str) -> View:
    peak = "peak_live_samples" in p.totals
    rows, rest = site_rows(p, peak)
    name = os.path.basename(path)
    run = aggregate([p], "function", name)
    t = p.totals
    exact = p.rate == 1
    facts = [("input", f"{kind} {path}")]
    if p.argv:
        facts.append(("program", " ".join(map(str, p.argv))))
    if p.ocaml_version:
        facts.append(("OCaml", f"{p.ocaml_version} ({p.backend})"))
    facts.append(("sampling", f"rate {p.rate:g}" + (" (every word: exact)" if exact else "")
                  + (f", seed {p.seed}" if p.seed is not None else ", seed unknown")
                  + f", {p.frames} frames"))
    facts.append(("allocated", _words(_est(t["samples"], p.rate))
                  + f", {t['blocks']} sampled blocks, {t['samples']} samples"))
    live_what = ("live at end of trace" if kind == "trace" else
                 UNDECIDED_LIVE if p.live_mode == LIVE_UNDECIDED else
                 "live at exit" if p.snapshot is None or p.snapshot["at"] == "exit"
                 else "live at the snapshot")
    facts.append((live_what, _words(_est(t["live_samples"], p.rate))))
    if peak:
        facts.append(("live at peak", _words(_est(t["peak_live_samples"], p.rate))))
    if p.gc:
        facts.append(("GC (exact)", ", ".join(f"{k} {p.gc[k]}" for k in
                                              ("minor_words", "promoted_words", "major_words",
                                               "minor_collections", "major_collections")
                                              if k in p.gc)))
    return View(path=path, kind=kind, program=" ".join(map(str, p.argv[:1])) or name,
                words_what="allocated", total_words=_est(t["samples"], p.rate), facts=facts,
                sites=rows, rest=rest, live_what=live_what, stacks=stacks_entry(None, run))


def attach_retainers(rows: list, snap: dict | None, rate: float) -> int:
    """Give each row the retainer path the snapshot has for its site (the
    grouping is view's, "function"; of a site's stacks, the one with the
    most live samples); returns how many rows got one.  Words are
    estimates, samples / rate, as in the table (sites/retaining.py)."""
    by_site = retainers_by_site(snap, "function")
    n = 0
    for row in rows:
        e = by_site.get(row.key)
        if e is None:
            continue
        row.retainers = [path_from_snapshot(e, "function", rate)]
        n += 1
    return n


# When a snapshot was taken, by its `at` (snapshot.AT_KINDS).
MOMENTS = {"exit": "at exit", "signal": "on SIGUSR1", "call": "at the program's call"}


def _snapshot_fact(snap: dict, shown: int) -> str:
    if not snap["taken"]:
        return f"not taken: {snap['reason']}"
    return (f"{MOMENTS[snap['at']]}, breadth first: {len(snap['sites'])} stack(s) with a retainer path "
            f"(at most {snap['sites_limit']}), for {shown} of the sites below; "
            f"{snap['reachable_blocks']} reachable blocks, {snap['tracked_reachable']} of "
            f"{snap['tracked_blocks']} sampled blocks reachable; its tables took "
            f"{fmt_bytes(snap['table_bytes'])}")


def _profile_view(doc, path: str) -> View:
    p = parse_profile(doc, path, undecided_live=True)
    v = _run_view(p, path, "profile")
    if p.snapshot is not None:
        v.moment = "at exit" if p.snapshot["at"] == "exit" else "at the snapshot"
        shown = attach_retainers(v.sites, p.snapshot, p.rate)
        v.facts.append(("snapshot", _snapshot_fact(p.snapshot, shown)))
    v.notes.append("A profile holds counts, not events: live words over time and the "
                   "lifetimes of blocks come from a trace of the run "
                   "(OCAMLMEMPROF=...,trace=t.ctf; then `memprof-ci view t.ctf`).")
    return v


register_json_kind(PROFILE_FORMAT, _profile_view)


class _Events:
    """The trace's alloc and collect events, compactly: what the timeline
    and the lifetimes need."""

    def __init__(self):
        self.t = array("q")          # time of each change of the live samples
        self.d = array("q")          # the change (+ at alloc, - at collect)
        self.alloc: dict = {}        # object id -> (time, samples), until collected
        self.early: dict = {}        # object id -> collect time seen before its alloc
        self.life = array("q")       # lifetime (µs) of each collected block
        self.life_n = array("q")     # its samples

    def __call__(self, ev, t: int) -> None:
        kind = ev[0]
        if kind == "alloc":
            oid, n = ev[1], ev[3]
            self.t.append(t)
            self.d.append(n)
            tc = self.early.pop(oid, None)
            if tc is None:
                self.alloc[oid] = (t, n)
            else:
                self._died(t, n, tc)
        elif kind == "collect":
            rec = self.alloc.pop(ev[1], None)
            if rec is None:          # another domain's packet first: settled at its alloc
                self.early[ev[1]] = t
            else:
                self._died(rec[0], rec[1], t)

    def _died(self, ta: int, n: int, tc: int) -> None:
        self.t.append(tc)
        self.d.append(-n)
        self.life.append(max(0, tc - ta))
        self.life_n.append(n)

    def timeline(self, rate: float) -> Timeline | None:
        if not self.t:
            return None
        t = np.frombuffer(self.t, dtype=np.int64)
        order = np.argsort(t, kind="stable")
        t = t[order]
        live = np.cumsum(np.frombuffer(self.d, dtype=np.int64)[order])
        end = int(t[-1])
        at = int(np.argmax(live))
        edges = np.linspace(0, max(end, 1), TIMELINE_BINS + 1)
        cut = np.searchsorted(t, edges[1:], side="right")
        points, lo, last = [], 0, 0
        for i, hi in enumerate(cut):
            top = max(last, int(live[lo:hi].max())) if hi > lo else last
            if hi > lo:
                last = int(live[hi - 1])
            points.append((int(round(edges[i + 1])), top / rate))
            lo = hi
        return Timeline(points=points, end_us=end, peak_words=int(live[at]) / rate,
                        peak_us=int(t[at]))

    def lifetimes(self, rate: float) -> Lifetimes:
        bins = [[0, 0.0] for _ in range(len(LIFETIME_EDGES_US) + 1)]
        if self.life:
            life = np.frombuffer(self.life, dtype=np.int64)
            n = np.frombuffer(self.life_n, dtype=np.int64)
            which = np.searchsorted(np.array(LIFETIME_EDGES_US), life, side="right")
            blocks = np.bincount(which, minlength=len(bins))
            samples = np.bincount(which, weights=n, minlength=len(bins))
            bins = [[int(b), float(s) / rate] for b, s in zip(blocks, samples)]
        live_n = sum(n for _, n in self.alloc.values())
        return Lifetimes(bins=bins, live=[len(self.alloc), live_n / rate])


def _trace_view(data: bytes, path: str) -> View:
    evs = _Events()
    p = parse_ctf(data, path, observe=evs)
    v = _run_view(p, path, "trace")
    v.timeline = evs.timeline(p.rate)
    v.lifetimes = evs.lifetimes(p.rate)
    v.notes.append("A trace records no GC counters.")
    return v
