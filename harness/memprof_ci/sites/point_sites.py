"""Sites counted exactly: a profile's allocation points grouped into sites.

Job: turn points.Points (the runtime's exact counts per allocation point,
OCAMLMEMPROF points=on) into PointSites, the exact counterpart of the
sampled sites that grouping.py groups from stacks, which the alloc and
live-at-exit checks compare when both sides have them (comparison.py); read and
write their baseline section.

A point is keyed as grouping.py keys a stack whose innermost frame is the
point: "function @ file" (with ":line" under the "line" grouping), the
file shortened by keys.norm_file; a pseudo point (no OCaml allocation
point: C primitives, unmarshalling, Obj.dup) keeps its name, "(runtime)".
So a point in user code is the same site as its sampled counterpart,
while a point inside the standard library (List.map's cons cells,
Hashtbl's buckets) is a site of its own: the words it allocated are
known exactly, but not which user function called it.  That split is
estimated (`callers`): each sampled stack is matched to the point it was
drawn at (its innermost frame's file, line, characters and function equal
a point's), and the samples are summed per sampled site.

Allocation by runtime primitives (C functions: caml_alloc_string,
caml_make_vect, custom blocks, ...) has no OCaml allocation point.  The
runtime counts it exactly per OCaml call that made it (a call point: the
profile's `calls`), keyed as the site of that call with " (via runtime
primitives)" (IN_C; a baseline's older spelling " (in C)" is read as it);
a call inside the standard library (Buffer.resize's Bytes.create) gets
its callers estimated as a point there does.  What remains (unmarshalled
blocks, Obj.dup's copies, and calls with no source location) is counted
only in total, as pseudo points; lumped together it would hide a change
at one caller, so the checks judge it per calling site from the samples
that matched no point or call (`in_c`), with the sampled test, keyed
"<site> (via runtime primitives, sampled)".  A profile from a runtime
without call points has all of it that way, keyed "<site> (via runtime
primitives)" (`calls` False).  The pseudo points' words stay in the
totals every share is taken of.  A sample drawn in code the compiler
generated (caml_curry2, ...) is charged to the OCaml function that called
it when its stack records one (grouping.py's `inner`).

Invariants: `words`, `blocks` and `live_words` are the runtime's exact
sums, never scaled or estimated; a baseline keeps each site's sampled
callers (`callers` True) so that a later check can tell which caller's
part changed; live_words is None for every site exactly
when the profile says why live was not counted (`live_missing`); `callers`
only ever holds sample counts, is marked estimated wherever it is shown,
and never enters a verdict (nor does rows.caller_changes, the change of
each caller's part between two sides); an IN_C site is exact only when `calls`
is True, and two sides are compared only when their `calls` agree
(comparison.py); a baseline's section is validated whole or rejected with the
baseline (parse_section raises InputError).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..inputs import validate as V
from ..errors import InputError
from ..inputs.points import PSEUDO, Points
from .keys import norm_file, site_label

# Suffix of the site key of what runtime primitives (C) allocated for a
# site's OCaml calls, counted at the call points; ... of what no call point
# counted, sampled.
IN_C = " (via runtime primitives)"
IN_C_SAMPLED = " (via runtime primitives, sampled)"
PRIMITIVE_SUFFIXES = (IN_C_SAMPLED, IN_C)
_OLD_IN_C = " (in C)"   # the suffix's former spelling, in older baselines


def in_c_suffix(ps: "PointSites") -> str:
    """The suffix of the sampled rows of allocation in C (`in_c`)."""
    return IN_C_SAMPLED if ps.calls else IN_C


@dataclass
class PointSite:
    key: str
    file: str | None
    function: str | None
    line: int | None = None
    words: int = 0
    blocks: int = 0
    live_words: int | None = 0
    lines: Counter = field(default_factory=Counter)
    live_lines: Counter = field(default_factory=Counter)
    # Estimated: sampled site key -> samples (live samples) drawn at this
    # site's points.
    callers: Counter = field(default_factory=Counter)
    live_callers: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        out = {"file": self.file, "function": self.function, "line": self.line,
               "words": self.words, "blocks": self.blocks, "live_words": self.live_words,
               "lines": {str(k): v for k, v in sorted(self.lines.items())},
               "live_lines": {str(k): v for k, v in sorted(self.live_lines.items())}}
        for k, c in (("callers", self.callers), ("live_callers", self.live_callers)):
            if c:
                out[k] = dict(sorted(c.items()))
        return out


@dataclass
class PointSites:
    live_missing: str | None     # why live at exit is not counted, or None
    sites: dict                  # key -> PointSite
    # Sampled: site key -> [samples, live samples] drawn at allocations made
    # in C that no point or call counted, over every run of the Aggregate.
    in_c: dict = field(default_factory=dict)
    calls: bool = False          # allocation in C counted per call point
    # The sites' sampled callers were recorded (always from profiles; a
    # baseline written before they were kept has none, and no change can
    # then be attributed to a caller).
    callers: bool = True

    def total(self, check: str) -> int:
        if check == "alloc":
            return sum(s.words for s in self.sites.values())
        return sum(s.live_words or 0 for s in self.sites.values())

    def counts(self, check: str) -> bool:
        """Whether these counts serve `check` ("alloc" or "live")."""
        return check == "alloc" or (check == "live" and self.live_missing is None)


def point_key(pkey: tuple, grouping: str) -> tuple:
    """(site key, file, function, line) of a point keyed (file, line,
    first, last, function)."""
    file, line, _first, _last, fn = pkey
    if file == "" and fn in PSEUDO:
        return fn, None, fn, None
    fl, fn = norm_file(file) or None, fn or None
    return site_label(fn, fl, line if grouping == "line" else None), fl, fn, line


def _keyed(pts: Points, grouping: str):
    """(point key, counts, site key, file, function, line) of every point,
    then every call point, whose site key takes IN_C."""
    for pk, c in pts.counts.items():
        yield (pk, c) + point_key(pk, grouping)
    for pk, c in (pts.calls or {}).items():
        key, fl, fn, line = point_key(pk, grouping)
        yield pk, c, key + IN_C, fl, fn, line


def group(pts: Points, grouping: str) -> PointSites | None:
    """The points' sites; None when the runtime counted none (bytecode)."""
    if pts is None or pts.unavailable is not None:
        return None
    out: dict = {}
    for _pk, c, key, fl, fn, line in _keyed(pts, grouping):
        words, blocks, live = c[1] + c[3], c[0] + c[2], c[7]
        if not words and not live:
            continue
        s = out.get(key)
        if s is None:
            s = out[key] = PointSite(key=key, file=fl, function=fn,
                                     line=line if grouping == "line" else None,
                                     live_words=None if pts.live_missing else 0)
        s.words += words
        s.blocks += blocks
        if words and line is not None:
            s.lines[line] += words
        if live:
            s.live_words += live
            if line is not None:
                s.live_lines[line] += live
    return PointSites(live_missing=pts.live_missing, sites=out, calls=pts.calls is not None)


def add_samples(ps: PointSites, pts: Points, inner: dict, grouping: str) -> None:
    """Add one run's samples from `inner`, its sampled stacks'
    {((file, line, first, last, function) of the innermost frame, sampled
    site key): [samples, live]} (sites._group_stacks): a sample drawn at
    an OCaml allocation point of `pts`, or in C under one of its call
    points, counts toward that site's estimated callers, any other (an
    allocation in C that no call point counted) toward `in_c`.  A location
    that is both a point and a call point is the point's."""
    known: dict = {}
    for pk, _c, key, _fl, _fn, _line in _keyed(pts, grouping):
        if pk[0]:
            known.setdefault((norm_file(pk[0]), pk[1], pk[2], pk[3], pk[4]), key)
    for (ik, site), (n, live) in inner.items():
        fl, line, first, last, fn = ik
        key = known.get((norm_file(fl), line, first, last, fn))
        if key is None:
            c = ps.in_c.setdefault(site, [0, 0])
            c[0] += n
            c[1] += live
        elif key in ps.sites:
            if n:
                ps.sites[key].callers[site] += n
            if live:
                ps.sites[key].live_callers[site] += live


def split(s: PointSite, check: str = "alloc", limit: int = 3) -> list:
    """The estimated split of a point site's allocation ("alloc") or
    live words ("live") among its sampled callers, heaviest first:
    [{"site", "share"}]; empty when the site is its own only caller (a
    point or a call in user code, whose samples' site is the caller's) or
    no sample was drawn there."""
    callers = s.callers if check == "alloc" else s.live_callers
    total = sum(callers.values())
    own = s.key[:-len(IN_C)] if s.key.endswith(IN_C) else s.key
    if not total or set(callers) == {own}:
        return []
    top = sorted(callers.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return [{"site": k, "share": n / total} for k, n in top]


def section(ps: PointSites) -> dict:
    """The baseline's "points" section."""
    return {"live": True if ps.live_missing is None else ps.live_missing,
            "sites": {k: s.to_json() for k, s in sorted(ps.sites.items())},
            "in_c": {k: list(v) for k, v in sorted(ps.in_c.items())},
            "calls": ps.calls, "callers": ps.callers}


def is_pseudo(s: PointSite) -> bool:
    return s.file is None and s.function in PSEUDO


def parse_section(sec) -> PointSites:
    """A baseline's "points" section, validated whole (InputError)."""
    if not isinstance(sec, dict) or not (
            {"live", "sites", "in_c"} <= set(sec) <= {"live", "sites", "in_c", "calls",
                                                       "callers"}):
        raise InputError("points must be an object of live, sites, in_c, calls and callers")
    calls, callers = sec.get("calls", False), sec.get("callers", False)
    if not isinstance(calls, bool) or not isinstance(callers, bool):
        raise InputError(f"points.{'calls' if not isinstance(calls, bool) else 'callers'} "
                         f"must be true or false")
    live = sec["live"]
    if live is True:
        missing = None
    else:
        missing = V.text(live, "points.live", limit=500)
        if not missing:
            raise InputError("points.live must be true or the reason live is not counted")
    raw = sec["sites"]
    if not isinstance(raw, dict) or len(raw) > 1_000_000:
        raise InputError("points.sites must be an object")
    out = {}
    for k, d in raw.items():
        where = f"points.sites[{k[:80]!r}]"
        V.text(k, "points site key", limit=1000)
        if k.endswith(_OLD_IN_C):
            k = k[:-len(_OLD_IN_C)] + IN_C
        if not isinstance(d, dict):
            raise InputError(f"{where} must be an object")
        words = V.count(d.get("words"), f"{where}.words")
        blocks = V.count(d.get("blocks"), f"{where}.blocks")
        if blocks > words:
            raise InputError(f"{where}: blocks {blocks} exceed words {words}")
        lw = d.get("live_words")
        if missing is None:
            lw = V.count(lw, f"{where}.live_words")
            # What the runtime allocated before counting began is live at
            # (runtime) without having been counted there: only a pseudo
            # site may hold more live words than it allocated.
            if lw > words and not (d.get("file") is None and d.get("function") in PSEUDO):
                raise InputError(f"{where}: live_words {lw} exceed words {words}")
        elif lw is not None:
            raise InputError(f"{where}.live_words must be null: live is not counted")
        line = d.get("line")
        if line is not None and not V.is_line(line):
            raise InputError(f"{where}.line must be null or a line number")
        lines = Counter(V.line_counts(d.get("lines", {}), f"{where}.lines", "words"))
        live_lines = Counter(V.line_counts(d.get("live_lines", {}), f"{where}.live_lines",
                                           "words"))
        if (lines and sum(lines.values()) != words) or \
                (live_lines and sum(live_lines.values()) != (lw or 0)):
            raise InputError(f"{where}: its lines do not add up to its words")
        out[k] = PointSite(key=k, file=V.text(d.get("file"), f"{where}.file", optional=True),
                           function=V.text(d.get("function"), f"{where}.function",
                                           optional=True),
                           line=line, words=words, blocks=blocks, live_words=lw,
                           lines=lines, live_lines=live_lines,
                           callers=_caller_counts(d.get("callers", {}), f"{where}.callers"),
                           live_callers=_caller_counts(d.get("live_callers", {}),
                                                       f"{where}.live_callers"))
    in_c = sec["in_c"]
    if not isinstance(in_c, dict) or len(in_c) > 1_000_000:
        raise InputError("points.in_c must be an object")
    c = {}
    for k, v in in_c.items():
        where = f"points.in_c[{k[:80]!r}]"
        if not (isinstance(v, list) and len(v) == 2):
            raise InputError(f"{where} must be [samples, live samples]")
        c[k] = [V.count(v[0], f"{where}[0]"), V.count(v[1], f"{where}[1]")]
    return PointSites(live_missing=missing, sites=out, in_c=c, calls=calls, callers=callers)


def _caller_counts(m, where: str) -> Counter:
    """A site's {sampled site key: samples} (InputError when malformed)."""
    if not isinstance(m, dict) or len(m) > 1_000_000:
        raise InputError(f"{where} must be an object of site -> samples")
    out = Counter()
    for k, v in m.items():
        V.text(k, f"{where} site key", limit=1000)
        out[k] = V.count(v, f"{where}[{k[:80]!r}]")
    return out


