"""The allocation budgets' section of the terminal and Markdown reports.

Renders each benchmark's `budgets` rows (decide/budgets.py) as two tables:
the manifest's budgets (a function or FILE:LINE, its exact words per run,
its limit, passed or FAILED, its heaviest allocation points) and the
annotated functions (calls, mean and most words per call against the
limit per call, passed or FAILED, the heaviest points, an estimated one's
words marked "≈"); then the annotations changed since the baseline
(`annotation_changes`), and the benchmarks whose budget check had nothing
to judge ("No budgets: …"); in the terminal, Markdown and HTML reports.
Invariants: nothing is decided here (a row's outcome is its own); no
section at all when no benchmark has budget rows (even empty ones), so a
report without the budget check renders as before; external names pass
through mdsafe (or the HTML page's `esc`), the terminal's tables fit 120
columns (terminal_table.py), and the HTML sections together are at most
HTML_BUDGET bytes.
"""

from __future__ import annotations

from ..text import mdsafe
from .report_retention import bounded_section
from .terminal_table import table
from ..text.wrap import WIDTH

MAX_HTML_ROWS = 100
HTML_BUDGET = 60_000       # bytes of report.html's section
TITLE = "Allocation budgets (exact words per run at the function's own allocation points):"
ANN_TITLE = ("Annotated functions (exact words per call, callees included; "
             "every call must fit the limit):")
NO_BUDGETS = "No budgets (no manifest budget applies, no annotated function was called): "
MAX_NAMES = 20


def _rows(report, annotated: bool = False) -> list:
    return [(name, r) for name, b in sorted(report.benchmarks.items())
            for r in b.budgets or [] if (r.get("kind") == "annotation") == annotated]


def _changes(report) -> list:
    return [c for _, b in sorted(report.benchmarks.items()) for c in b.annotation_changes or []]


def _no_budgets(report) -> str:
    """The benchmarks whose budget check judged nothing, named, or ""."""
    names = [n for n, b in sorted(report.benchmarks.items())
             if b.budgets == [] and not b.annotation_changes]
    if not names:
        return ""
    more = f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
    return ", ".join(names[:MAX_NAMES]) + more


def _words(p: dict) -> str:
    return f"≈{p['words']:,}" if p.get("estimated") else f"{p['words']:,}"


def _ann_points(r: dict, name=str) -> str:
    if not r["points"]:
        # words but no point: not in its own code, and no sample in a callee
        return "in callees, not sampled" if r["words"] else "allocated nothing"
    return ", ".join(f"{name(p['point'])}{' (C)' if p.get('via_c') else ''} ({_words(p)})"
                     for p in r["points"])


def _limit(r: dict) -> str:
    own = r["annotation_limit"]
    tight = " (manifest)" if r.get("manifest_limit") is not None and \
        (own is None or r["limit"] < own) else ""
    return f"{r['limit']:,}{tight}"


def _ann_cells(r: dict) -> list:
    """calls, words/call, max/call, limit/call, attribute."""
    mean = r["words_per_call"]
    mean = f"{mean:,.2f}" if mean >= 1 else f"{mean:.2g}"
    return [f"{r['calls']:,}", mean, f"{r['max_words']:,}",
            _limit(r), r["attribute"]]


def _change_text(c: dict) -> str:
    def limit(v):
        return "none" if v is None else f"{v:,}"
    limits = f"limit {limit(c['base'])} -> {limit(c['pull_request'])}"
    return (f"{c['benchmark']}: {c['setting']}: {c['note']} ({limits})"
            + ("; fails without the accept label" if c.get("needs_label") else ""))


def _cut_line(line: str) -> str:
    """A line of the terminal, printable and cut to its width."""
    line = mdsafe.printable(line)
    return line if len(line) <= WIDTH else line[:WIDTH - 1] + "…"


def _verdict(r: dict) -> str:
    return "FAILED" if r["outcome"] == "failed" else "passed"


def _points(r: dict) -> str:
    if not r["points"]:
        return "no allocation point of it allocated"
    return "at " + ", ".join(f"{p['point']}{' (C)' if p.get('via_c') else ''} "
                             f"({p['words']:,})" for p in r["points"])


def terminal(report) -> list:
    """The terminal's lines (a blank line, each table under its title, a
    blank line between the two, the changes and the benchmarks without
    budgets), or []."""
    rows, ann, changes, none = (_rows(report), _rows(report, True), _changes(report),
                                _no_budgets(report))
    if not (rows or ann or changes or none):
        return []
    out = [""]
    if rows:
        out += [TITLE, table(
            ["benchmark", "budget", "words/run", "limit", "verdict", "largest points"],
            [[name, r["what"], f"{r['words_per_run']:,}", f"{r['limit']:,}", _verdict(r),
              _points(r)] for name, r in rows], flex=(1, 5))]
    if ann:
        out += [""] * bool(rows) + [ANN_TITLE, table(
            ["benchmark", "function", "calls", "words/call", "max/call", "limit/call",
             "annotation", "verdict", "largest points"],
            [[name, r["what"], *_ann_cells(r), _verdict(r), _ann_points(r)]
             for name, r in ann], flex=(1, 8))]
    if changes:
        out.append("Annotations changed since the baseline:")
        out += [_cut_line("  " + _change_text(c)) for c in changes]
    if none:
        out.append(_cut_line(NO_BUDGETS + none))
    return out


def markdown(report) -> list:
    """The Markdown section, or []."""
    rows, ann, changes, none = (_rows(report), _rows(report, True), _changes(report),
                                _no_budgets(report))
    if not (rows or ann or changes or none):
        return []
    out = ["### Allocation budgets", ""]
    if rows:
        out += ["Exact words per run (first seed, every allocation point counted) at the "
                "function's own allocation points or the line; over the limit fails.", "",
                "| benchmark | budget | words/run | limit | verdict | largest points |",
                "|---|---|--:|--:|:-:|---|"]
        for name, r in rows:
            pts = ", ".join(f"{mdsafe.code(p['point'])}{' (C)' if p.get('via_c') else ''} "
                            f"({p['words']:,})" for p in r["points"]) or \
                "no allocation point of it allocated"
            out.append(f"| {mdsafe.text(name)} | {mdsafe.code(r['what'])} "
                       f"| {r['words_per_run']:,} | {r['limit']:,} "
                       f"| {_md_verdict(r)} | {pts} |")
        out.append("")
    if ann:
        out += _md_annotated(ann)
    if changes:
        out += ["Annotations changed since the baseline:", ""]
        out += [f"- {mdsafe.text(_change_text(c), limit=400)}" for c in changes] + [""]
    if none:
        out += [mdsafe.text(NO_BUDGETS + none, limit=4000), ""]
    return out


def _md_verdict(r: dict) -> str:
    return "**FAILED**" if r["outcome"] == "failed" else "passed"


def _md_annotated(ann: list) -> list:
    out = ["Annotated functions: exact words per call, callees included (≈: estimated "
           "from the sampled stacks); a call over the limit fails.", "",
           "| benchmark | function | calls | words/call | max/call | limit/call | annotation "
           "| verdict | largest points |", "|---|---|--:|--:|--:|--:|---|:-:|---|"]
    for name, r in ann:
        out.append(f"| {mdsafe.text(name)} | {mdsafe.code(r['what'])} | "
                   + " | ".join(_ann_cells(r)) + f" | {_md_verdict(r)} | "
                   + _ann_points(r, mdsafe.code) + " |")
    return out + [""]


def _html_row(name: str, r: dict, esc) -> str:
    failed = r["outcome"] == "failed"
    pts = ", ".join(f"{esc(p['point'])}{' (C)' if p.get('via_c') else ''} ({p['words']:,})"
                    for p in r["points"][:3]) or "no allocation point of it allocated"
    return (f'<tr class="{"regression" if failed else "ok"}"><td>{esc(name)}</td>'
            f"<td><code>{esc(r['what'])}</code></td><td>{r['words_per_run']:,}</td>"
            f"<td>{r['limit']:,}</td><td>{'FAILED' if failed else 'passed'}</td>"
            f"<td>{pts}</td></tr>")


def _html_ann_row(name: str, r: dict, esc) -> str:
    failed = r["outcome"] == "failed"
    cells = "".join(f"<td>{esc(c)}</td>" for c in _ann_cells(r))
    return (f'<tr class="{"regression" if failed else "ok"}"><td>{esc(name)}</td>'
            f"<td><code>{esc(r['what'])}</code></td>{cells}"
            f"<td>{'FAILED' if failed else 'passed'}</td><td>{_ann_points(r, esc)}</td></tr>")


def _html_annotated(report, esc, budget: int) -> str:
    """report.html's annotated functions, their changes and the benchmarks
    without budgets, in at most `budget` bytes, or ""."""
    ann = sorted(_rows(report, True), key=lambda nr: (nr[1]["outcome"] != "failed", nr[0]))
    changes, none = _changes(report), _no_budgets(report)
    if not (ann or changes or none):
        return ""
    lines = [_change_text(c) for c in changes] + ([NO_BUDGETS + none] if none else [])
    notes = ""
    for i, line in enumerate(lines):
        p = f'<p class="note">{esc(line, 1000)}</p>'
        if len(notes) + len(p) > budget // 2:
            notes += f'<p class="note">{len(lines) - i} more line(s): see report.json</p>'
            break
        notes += p
    head = ('<section id="annotated-budgets"><h2>Annotated functions</h2>'
            '<p class="note">Exact words per call, callees included (≈: estimated from the '
            'sampled stacks); a call over the limit fails.</p>' + notes +
            '<table class="budgets"><thead><tr><th>benchmark</th><th>function</th>'
            "<th>calls</th><th>words/call</th><th>max/call</th><th>limit/call</th>"
            "<th>annotation</th><th>verdict</th><th>largest points</th></tr></thead><tbody>")
    return bounded_section(head, "</tbody></table>",
                           [_html_ann_row(name, r, esc) for name, r in ann[:MAX_HTML_ROWS]],
                           len(ann), budget,
                           lambda n: f"{n} more annotated function row(s): see report.json")


def html(report, esc) -> str:
    """report.html's sections (`esc` escapes and clips a string), or "":
    at most MAX_HTML_ROWS rows each and HTML_BUDGET bytes together,
    failing rows first."""
    ann = _html_annotated(report, esc, HTML_BUDGET // 2)
    rows = sorted(_rows(report), key=lambda nr: (nr[1]["outcome"] != "failed", nr[0]))
    if not rows:
        return ann
    head = ('<section id="budgets"><h2>Allocation budgets</h2>'
            '<p class="note">Exact words per run (first seed, every allocation point '
            "counted) at the function's own allocation points or the line; over the "
            'limit fails.</p><table class="budgets"><thead><tr><th>benchmark</th>'
            "<th>budget</th><th>words/run</th><th>limit</th><th>verdict</th>"
            "<th>largest points</th></tr></thead><tbody>")
    return bounded_section(head, "</tbody></table>",
                           [_html_row(name, r, esc) for name, r in rows[:MAX_HTML_ROWS]],
                           len(rows), HTML_BUDGET - len(ann),
                           lambda n: f"{n} more budget row(s): see report.json") + ann
