"""The terminal's tables: columns cut to fit a width, detail wrapped below a row.

benchstat's layout for memprof-ci's terminal output: each table row holds
short cells (a site's name, its sizes, the change and its interval, p),
and what a row says beyond them (a shared point's callers, a rename, the
full text of a cell that was cut) goes on indented lines under it.

Invariants:
1. Every line table() returns is at most `width` characters, as long as
   the columns that are not flexible fit with each flexible one at
   MIN_FLEX characters: flexible columns are cut, widest first, and a cut
   cell ends with CUT.
2. Nothing is lost: a cut cell's full text opens its row's detail lines.
3. Every cell and detail passes through mdsafe.printable (external names
   never move the terminal).
4. Display only: a table decides nothing; it lays out cells its caller
   worded from the decided report.
"""

from __future__ import annotations

from ..text import mdsafe
from ..text.wrap import WIDTH, detail_lines

MIN_FLEX = 24       # a flexible column is cut to no fewer characters
CUT = "…"


def _widths(headers, rows, flex, width) -> list:
    """Column widths: the widest cell, flexible columns cut (widest
    first) until a line fits `width` or each is at MIN_FLEX."""
    w = [len(h) for h in headers]
    for r in rows:
        w = [max(a, len(x)) for a, x in zip(w, r)]
    while True:
        over = sum(w) + 2 * (len(w) - 1) - width
        cuttable = [i for i in flex if w[i] > max(MIN_FLEX, len(headers[i]))]
        if over <= 0 or not cuttable:
            return w
        i = max(cuttable, key=lambda k: (w[k], -k))
        w[i] = max(MIN_FLEX, len(headers[i]), w[i] - over)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - len(CUT)] + CUT


def table(headers, rows, details=None, flex=(), width: int = WIDTH) -> str:
    """A table of `rows` (lists of cells) under `headers`; `details[i]`, when
    given, is wrapped under row i; the columns `flex` (indices) are cut to
    fit `width` (module invariants)."""
    rows = [[mdsafe.printable(str(x)) for x in r] for r in rows]
    details = list(details) if details is not None else [""] * len(rows)
    w = _widths(headers, rows, flex, width)
    line = lambda r: "  ".join(x.ljust(a) for x, a in zip(r, w)).rstrip()
    out = [line(headers), line(["-" * a for a in w])]
    for r, more in zip(rows, details):
        cut = [r[i] for i in flex if len(r[i]) > w[i]]
        out.append(line([_cut(x, a) for x, a in zip(r, w)]))
        out.extend(detail_lines("; ".join(x for x in cut + [more or ""] if x), width))
    return "\n".join(out)
