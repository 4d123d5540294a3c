"""The allocation budgets' section of the terminal and Markdown reports.

Renders each benchmark's `budgets` rows (decide/budgets.py) as one table:
the budget (a function or FILE:LINE), its exact words per run, its limit,
passed or FAILED, and its heaviest allocation points, in the terminal,
Markdown and HTML reports.  Invariants: nothing is decided here (a row's
outcome is its own); no section at all when no row exists, so a report
without budgets renders as before; external names pass through mdsafe (or
the HTML page's `esc`), the terminal's table fits 120 columns
(terminal_table.py), and the HTML section is at most HTML_BUDGET bytes.
"""

from __future__ import annotations

from ..text import mdsafe
from .report_retention import bounded_section
from .terminal_table import table

MAX_HTML_ROWS = 100
HTML_BUDGET = 60_000       # bytes of report.html's section
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


def _html_row(name: str, r: dict, esc) -> str:
    failed = r["outcome"] == "failed"
    pts = ", ".join(f"{esc(p['point'])}{' (C)' if p.get('via_c') else ''} ({p['words']:,})"
                    for p in r["points"][:3]) or "no allocation point of it allocated"
    return (f'<tr class="{"regression" if failed else "ok"}"><td>{esc(name)}</td>'
            f"<td><code>{esc(r['what'])}</code></td><td>{r['words_per_run']:,}</td>"
            f"<td>{r['limit']:,}</td><td>{'FAILED' if failed else 'passed'}</td>"
            f"<td>{pts}</td></tr>")


def html(report, esc) -> str:
    """report.html's section (`esc` escapes and clips a string), or "": at
    most MAX_HTML_ROWS rows and HTML_BUDGET bytes, failing rows first."""
    rows = sorted(_rows(report), key=lambda nr: (nr[1]["outcome"] != "failed", nr[0]))
    if not rows:
        return ""
    head = ('<section id="budgets"><h2>Allocation budgets</h2>'
            '<p class="note">Exact words per run (first seed, every allocation point '
            "counted) at the function's own allocation points or the line; over the "
            'limit fails.</p><table class="budgets"><thead><tr><th>benchmark</th>'
            "<th>budget</th><th>words/run</th><th>limit</th><th>verdict</th>"
            "<th>largest points</th></tr></thead><tbody>")
    return bounded_section(head, "</tbody></table>",
                           [_html_row(name, r, esc) for name, r in rows[:MAX_HTML_ROWS]],
                           len(rows), HTML_BUDGET,
                           lambda n: f"{n} more budget row(s): see report.json")
