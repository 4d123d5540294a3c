"""Retaining paths: the one type of a path and of its hops.

A path says how a site's sampled block is reachable: a named root (a
global, a stack frame, a C root, a finaliser), then each block down to the
site's own, root first.  The snapshot run of a check (measure/retention.py),
a baseline's "retainers" section, report.json's row["retention"] and the
`view` page all hold paths of this one type; the renderers word it.

A hop is a sampled block (its site, tag and size in words, and `inner`: the
innermost function of its stack when that is not the site's own, e.g.
Stdlib__Hashtbl.resize for a table's bucket array), a block not sampled
(site None: the runtime knows only its tag and size), or `elided` > 0 hops
the runtime did not record.  `field` is the field leading to the next hop,
known from a snapshot and shown by `view`; report.json does not carry it.

JSON form (report.json and baselines): a hop is {"site", "tag", "words"}
plus "inner" when known, or {"elided": n}; a path is {"root", "hops",
"live_words", "shared_words"}.  from_json and to_json are exact inverses on
that form; neither validates (measure/retention.parse_record checks a
baseline's records before they become paths).
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

from ..inputs.snapshot import root_text, tag_name
from .keys import UNKNOWN, classify
from .keys import site_label


@dataclass(frozen=True)
class Hop:
    site: str | None = None
    tag: str | None = None
    words: int | None = None
    field: int | None = None
    inner: str | None = None
    elided: int = 0

    @classmethod
    def from_json(cls, d: dict) -> "Hop":
        if "elided" in d:
            return cls(elided=d["elided"])
        return cls(site=d["site"], tag=d["tag"], words=d["words"], inner=d.get("inner"))

    def to_json(self) -> dict:
        if self.elided:
            return {"elided": self.elided}
        out = {"site": self.site, "tag": self.tag, "words": self.words}
        if self.inner is not None:
            out["inner"] = self.inner
        return out


@dataclass
class RetainingPath:
    """`live_words`: the live words of the site's stack the path was found
    for; `shared_words`: those of them that share its first hops (both
    estimates, samples / rate; None where not known)."""
    root: str
    hops: list = dc_field(default_factory=list)     # [Hop], root first
    live_words: float | None = None
    shared_words: float | None = None

    @classmethod
    def from_json(cls, d: dict) -> "RetainingPath":
        return cls(root=d["root"], hops=[Hop.from_json(h) for h in d["hops"]],
                   live_words=d["live_words"], shared_words=d["shared_words"])

    def to_json(self) -> dict:
        return {"root": self.root, "hops": [h.to_json() for h in self.hops],
                "live_words": self.live_words, "shared_words": self.shared_words}

    def holder(self) -> Hop | None:
        """The sampled hop nearest above the site's own block (it names the
        structure that holds it), or None: the root holds it."""
        return next((h for h in reversed(self.hops[:-1]) if h.site is not None), None)

    def signature(self) -> tuple:
        """What makes two paths the same: the root and the sampled sites
        passed through, in order (tags and sizes left out)."""
        return (self.root, tuple(h.site for h in self.hops if h.site is not None))


def hop_from_snapshot(h: dict, grouping: str) -> Hop:
    """A hop of a snapshot site's "path" (inputs/snapshot.py), its site
    keyed by `grouping`."""
    if "elided" in h:
        return Hop(elided=h["elided"])
    site = inner = None
    frames = h.get("frames")
    if frames is not None:
        idx, fl, fn, _via = classify(frames, grouping)
        if idx is None:
            site = UNKNOWN
        else:
            site = site_label(fn, fl, frames[idx]["line"] if grouping == "line" else None)
        first = next((f["function"] for f in frames if f.get("function")), None)
        if first is not None and not site.startswith(first + " @ "):
            inner = first
    return Hop(site=site, tag=tag_name(h["tag"]), words=h["size"], field=h.get("field"),
               inner=inner)


def path_from_snapshot(entry: dict, grouping: str, rate: float) -> RetainingPath:
    """A snapshot site (inputs/snapshot.py) as a path, words estimated at
    `rate`."""
    return RetainingPath(root=root_text(entry["root"]),
                         hops=[hop_from_snapshot(h, grouping) for h in entry["path"]],
                         live_words=entry["live_samples"] / rate,
                         shared_words=entry["shared_samples"] / rate)
