"""The profile's annotated budgets (format version 6, the `budgets` section).

Job: check and read the section the runtime writes for the functions the
source annotates `[@zero_alloc]` or `[@memprof.words_per_call N]`, and
those the compiler was told to count (OCAMLMEMPROF_COUNT: "counted",
limit 0, a dependency's function, which is no annotation): per
function, its calls and the words allocated while each call was active
(minor and direct major, header words included, callees and C included),
counted exactly.  Invariants: parse_budgets_section returns a tuple of
Annotated, in the section's order, or raises InputError on one line naming
the file and the entry (budgets[i] and its function) and what is wrong:
wrong types, unknown or missing keys, an unknown attribute, zero_alloc
or counted with a limit other than 0, counts that cannot all be true (max_words >
words, words > calls x max_words, words without calls), two entries of
one (function, file, line), or entries not sorted by (file, line,
function).  Nothing here scales or estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import validate
from ..errors import InputError
from ..text import mdsafe

ANNOTATIONS = ("zero_alloc", "words_per_call")
ATTRIBUTES = ANNOTATIONS + ("counted",)
KEYS = ("function", "file", "line", "attribute", "limit", "calls", "words", "max_words",
        "other_domain_calls")
COUNT_KEYS = ("limit", "calls", "words", "max_words", "other_domain_calls")
MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class Annotated:
    """One annotated function's exact counts (the `budgets` entry)."""
    function: str
    file: str
    line: int
    attribute: str            # "zero_alloc", "words_per_call" or "counted"
    limit: int                # words per call (0 for zero_alloc and counted)
    calls: int                # calls finished on the domain that began them
    words: int                # their words, each call inclusive
    max_words: int            # the most one call allocated
    other_domain_calls: int   # calls finished on another domain (not counted)

    @property
    def key(self) -> tuple:
        return (self.file, self.line, self.function)

    @property
    def annotated(self) -> bool:
        """An annotation in the source, with a limit of its own (counted:
        named at compile time, limited only by a manifest budget)."""
        return self.attribute in ANNOTATIONS


def _named(e, i: int) -> str:
    fn = e.get("function") if isinstance(e, dict) else None
    name = mdsafe.printable(fn[:200]) if isinstance(fn, str) else "?"
    return f"budgets[{i}] ({name})"


def _entry(e, i: int, bad) -> Annotated:
    where = _named(e, i)
    if not isinstance(e, dict):
        raise bad(f"{where} is not an object")
    unknown = sorted(set(e) - set(KEYS))
    if unknown:
        raise bad(f"{where}: unknown key(s) {mdsafe.printable(', '.join(unknown)[:200])}")
    missing = [k for k in KEYS if k not in e]
    if missing:
        raise bad(f"{where}: missing key(s) {', '.join(missing)}")
    for k in ("function", "file"):
        if not isinstance(e[k], str) or not e[k] or len(e[k]) > 4096:
            raise bad(f"{where}: {k} is not a non-empty string")
    if not validate.is_line(e["line"]):
        raise bad(f"{where}: line is not a line number")
    if e["attribute"] not in ATTRIBUTES:
        raise bad(f"{where}: attribute {mdsafe.printable(repr(e['attribute'])[:60])} is "
                  f"not zero_alloc, words_per_call or counted")
    for k in COUNT_KEYS:
        if not validate.is_count(e[k]):
            raise bad(f"{where}: {k} is not a non-negative integer at most 2^53")
    a = Annotated(**{k: e[k] for k in KEYS})
    if a.attribute != "words_per_call" and a.limit != 0:
        raise bad(f"{where}: {a.attribute} with limit {a.limit} (its limit is 0)")
    if a.max_words > a.words:
        raise bad(f"{where}: max_words {a.max_words} > words {a.words}")
    if a.calls == 0 and a.words > 0:
        raise bad(f"{where}: {a.words} words in 0 calls")
    if a.words > a.calls * a.max_words:
        raise bad(f"{where}: words {a.words} > calls x max_words")
    return a


def parse_budgets_section(sec, path: str) -> tuple:
    """The checked entries of a profile's `budgets` section."""
    def bad(msg):
        return InputError(f"{path}: malformed budgets section: {msg}; regenerate it with "
                          f"the memprof-ci runtime")
    if not isinstance(sec, list):
        raise bad("budgets is not a list")
    if len(sec) > MAX_ENTRIES:
        raise bad(f"more than {MAX_ENTRIES} entries")
    out = []
    for i, e in enumerate(sec):
        a = _entry(e, i, bad)
        if out and a.key == out[-1].key:
            raise bad(f"{_named(e, i)}: the same function, file and line as budgets[{i - 1}]")
        if out and a.key < out[-1].key:
            raise bad(f"{_named(e, i)}: not sorted by (file, line, function) after "
                      f"budgets[{i - 1}]")
        out.append(a)
    return tuple(out)


RECORDED_KEYS = ("function", "file", "line", "attribute", "limit")


def recorded(entries: tuple) -> list:
    """What a baseline records of a run's annotated functions (not the
    counted ones): each one's {function, file, line, attribute, limit}, in
    the section's order."""
    return [{k: getattr(a, k) for k in RECORDED_KEYS} for a in entries if a.annotated]


def parse_recorded(v) -> list:
    """A baseline's `annotations` (recorded()), checked; InputError
    naming the entry, which the baseline's reader prefixes with its path."""
    if not isinstance(v, list) or len(v) > MAX_ENTRIES:
        raise InputError("annotations must be a list of {function, file, line, attribute, "
                         "limit}")
    for i, e in enumerate(v):
        if not (isinstance(e, dict) and set(e) == set(RECORDED_KEYS)
                and all(isinstance(e[k], str) and e[k] for k in ("function", "file"))
                and validate.is_line(e["line"]) and e["attribute"] in ANNOTATIONS
                and validate.is_count(e["limit"])):
            raise InputError(f"annotations[{i}] is not {{function, file, line, attribute, "
                             f"limit}} with a known attribute and a limit >= 0")
    return [dict(e) for e in v]
