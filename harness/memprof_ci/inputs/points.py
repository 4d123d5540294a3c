"""The profile's allocation points (format version 5, OCAMLMEMPROF points=on).

Job: check and read a profile's `points` section into a Points value: exact
counts per allocation point, keyed by (file, line, first char, last char,
function), and per call point: what the runtime allocated in C for one
OCaml call, keyed by that call's location the same way.  Invariants:
parse_points returns only checked data or raises InputError naming the
file and the bad entry, whose counts can all be true (_inconsistent), and
no point or call beside `unavailable`; a point listed several times (one location
inlined into several units, or several calls at one location) is one key
with the sum of their counts; live counts are None exactly when the
section says why live was not counted; `calls` is None exactly when the
profile counted allocation in C only in total (no "calls" list); nothing
here scales or estimates: every count is the runtime's exact sum
(runtime-patch/format/profile-format.md, "Allocation points").
"""

from __future__ import annotations

from dataclasses import dataclass

from . import validate
from ..errors import InputError

# The counts of a point, in the order the runtime writes them.
COUNTS = ("minor_blocks", "minor_words", "major_blocks", "major_words",
          "promoted_blocks", "promoted_words", "live_blocks", "live_words")
LIVE = (6, 7)
PSEUDO = ("(runtime)", "(unmarshal)", "(Obj.dup)", "(unregistered)")


@dataclass(frozen=True)
class Points:
    live_missing: str | None      # why live is not counted, or None
    complete: bool
    unavailable: str | None
    counts: dict                  # key -> tuple of len(COUNTS) (live None when missing)
    calls: dict | None = None     # call points, keyed and counted alike

    def allocated_words(self, key) -> int:
        c = self.counts[key]
        return c[1] + c[3]


def parse_points(sec, path: str) -> Points:
    def bad(msg):
        return InputError(f"{path}: malformed points section: {msg}; regenerate "
                          f"it with the memprof-ci runtime")
    if not isinstance(sec, dict) or set(sec) - {"live", "complete", "unavailable", "points",
                                                "calls"}:
        raise bad("not an object of live, complete, unavailable, points and calls")
    live = sec.get("live")
    if live is True:
        missing = None
    elif live is None or (isinstance(live, str) and live):
        missing = validate.text(live or "not counted", f"{path}: points.live")
    else:
        raise bad(f"live is {live!r}")
    complete = sec.get("complete")
    if not isinstance(complete, bool):
        raise bad("complete is not a boolean")
    unavailable = validate.text(sec.get("unavailable"), f"{path}: points.unavailable",
                                optional=True)
    if not isinstance(sec.get("points"), list):
        raise bad("points is not a list")
    calls = sec.get("calls")
    if calls is not None and not isinstance(calls, list):
        raise bad("calls is not a list")
    if unavailable is not None and (sec["points"] or calls):
        raise bad("unavailable says no points were counted, yet points or calls are listed")
    return Points(live_missing=missing, complete=complete, unavailable=unavailable,
                  counts=_entries(sec["points"], "point", missing, bad),
                  calls=None if calls is None else _entries(calls, "call", missing, bad))


def _inconsistent(c: tuple, pseudo: bool) -> str | None:
    """Why one entry's counts cannot all be true, or None.  Every block is
    at least a word; a block is promoted from the minor heap it was counted
    in, and live only if it was allocated.  A pseudo point also holds what
    the runtime allocated before counting began, so only the first rule
    binds it."""
    for b, w, name in ((0, 1, "minor"), (2, 3, "major"), (4, 5, "promoted"), (6, 7, "live")):
        if c[b] is not None and c[b] > c[w]:
            return f"{name}_blocks {c[b]} exceed {name}_words {c[w]}"
    if pseudo:
        return None
    if c[4] > c[0] or c[5] > c[1]:
        return "more promoted than allocated in the minor heap"
    if c[6] is not None and (c[6] > c[0] + c[2] or c[7] > c[1] + c[3]):
        return "more live at exit than allocated"
    return None


def _entries(entries: list, what: str, missing, bad) -> dict:
    """{key: counts} of a list of points or calls, duplicates summed."""
    counts: dict = {}
    for i, e in enumerate(entries):
        if not (isinstance(e, list) and len(e) == 5 + len(COUNTS)
                and isinstance(e[0], str) and isinstance(e[4], str)
                and all(validate.is_count(v) for v in e[1:4])):
            raise bad(f"{what} {i} is not [file, line, first, last, function, "
                      f"{len(COUNTS)} counts]")
        vals = e[5:]
        for j, v in enumerate(vals):
            ok = v is None if (j in LIVE and missing is not None) else validate.is_count(v)
            if not ok:
                raise bad(f"{what} {i}: {COUNTS[j]} is {v!r}")
        if what == "point" and e[0] == "" and e[4].startswith("(") and e[4] not in PSEUDO:
            raise bad(f"point {i}: a pseudo point named {e[4]!r}")
        why = _inconsistent(vals, what == "point" and e[0] == "" and e[4] in PSEUDO)
        if why:
            raise bad(f"{what} {i}: {why}")
        if what == "call" and e[0] == "":
            raise bad(f"call {i} has no file")
        key = (e[0], e[1], e[2], e[3], e[4])
        prev = counts.get(key)
        counts[key] = tuple(vals) if prev is None else tuple(
            None if a is None else a + b for a, b in zip(prev, vals))
    return counts
