"""The allocation budgets' section of the terminal and Markdown reports.

Renders each benchmark's `budgets` rows (decide/budgets.py) as one table:
the budget (a function or FILE:LINE), its exact words per run, its limit,
passed or FAILED, and its heaviest allocation points.  Invariants: nothing
is decided here (a row's outcome is its own); no section at all when no
row exists, so a report without budgets renders as before; external names
pass through mdsafe, and the terminal's table fits 120 columns
(terminal_table.py).
"""

from __future__ import annotations

from ..text import mdsafe
from .terminal_table import table

TITLE = "Allocation budgets (exact words per run at the function's own allocation points):"


def _rows(report) -> list:
    return [(name, r) for name, b in sorted(report.benchmarks.items())
            for r in b.budgets or []]


def _verdict(r: dict) -> str:
    return "FAILED" if r["outcome"] == "failed" else "passed"


def _points(r: dict) -> str:
    if not r["points"]:
        return "no allocation point of it allocated"
    return "at " + ", ".join(f"{p['point']}{' (C)' if p.get('via_c') else ''} "
                             f"({p['words']:,})" for p in r["points"])


def terminal(report) -> list:
    """The terminal's lines (a blank line, the title, the table), or []."""
    rows = _rows(report)
    if not rows:
        return []
    return ["", TITLE, table(
        ["benchmark", "budget", "words/run", "limit", "verdict", "largest points"],
        [[name, r["what"], f"{r['words_per_run']:,}", f"{r['limit']:,}", _verdict(r),
          _points(r)] for name, r in rows], flex=(1, 5))]


def markdown(report) -> list:
    """The Markdown section, or []."""
    rows = _rows(report)
    if not rows:
        return []
    out = ["### Allocation budgets", "",
           "Exact words per run (first seed, every allocation point counted) at the "
           "function's own allocation points or the line; over the limit fails.", "",
           "| benchmark | budget | words/run | limit | verdict | largest points |",
           "|---|---|--:|--:|:-:|---|"]
    for name, r in rows:
        pts = ", ".join(f"{mdsafe.code(p['point'])}{' (C)' if p.get('via_c') else ''} "
                        f"({p['words']:,})" for p in r["points"]) or \
            "no allocation point of it allocated"
        out.append(f"| {mdsafe.text(name)} | {mdsafe.code(r['what'])} "
                   f"| {r['words_per_run']:,} | {r['limit']:,} "
                   f"| {'**FAILED**' if r['outcome'] == 'failed' else 'passed'} | {pts} |")
    out.append("")
    return out
