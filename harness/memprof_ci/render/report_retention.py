"""Rendering the retaining paths of failing sites, for report.md, the
terminal and report.html.

retention.py decides which rows carry a path and whether it changed
(a row's report_types.Retention: the current and baseline RetainingPath,
`changed`, and `why` / `baseline_why` when one side has none); this module
only words them, reading the typed report (report_types.Report).  Each flagged row reads as a headline, then the current path and the
baseline's path (or why there is none):

    now held by global Cache, field 2, through a block of
    Stdlib.Hashtbl.create @ hashtbl.ml (tag 0, 16 words); was held by ...

A changed path is the headline ("now held by ..."); an unchanged one reads
"held by ..., as in the baseline"; a path with no baseline path reads
"held by ..." and the baseline's reason.  Invariants: every string reaches
Markdown through mdsafe and HTML through the caller's escape function;
nothing is decided here.
"""

from __future__ import annotations

from ..decide.report_types import Report, Retention, SiteRow
from ..sites.retaining import Hop, RetainingPath
from ..text import mdsafe
from ..text.fmt import fmt_words

CHECK_WORDS = {"live": "live at exit", "peak": "live at the peak"}
MAX_ROWS = 8              # failing sites shown with their paths; the rest: report.json
TEXT_LIMIT = 1000         # characters of one headline or path
HTML_BUDGET = 40_000      # bytes of report.html's section


def flagged_rows(report: Report) -> list:
    """(benchmark, row) of each failing row (status "regression": a merged
    report may have re-decided a shard's row) that carries a Retention, in
    benchmark, check and site order."""
    out = []
    for name, b in sorted(report.benchmarks.items()):
        for rows in (b.live, b.peak):
            out += [(name, r) for r in rows or []
                    if isinstance(r.retention, Retention) and r.status == "regression"]
    return out


def _more(n: int) -> str:
    return f"{n} more failing site(s) with a retaining path: see report.json"


def _hop_text(h: Hop) -> str:
    if h.elided:
        return f"({h.elided} hops not recorded)"
    what = h.site if h.site is not None else "a block not sampled"
    inner = f"{h.inner}, " if h.inner else ""
    return f"{what} ({inner}{h.tag}, {h.words} words)"


def holder_text(path: RetainingPath) -> str:
    """The root, and the sampled hop nearest above the site's block."""
    near = path.holder()
    if near is None:
        return path.root
    return f"{path.root}, through a block of {_hop_text(near)}"


def path_text(path: RetainingPath) -> str:
    """The whole path on one line, root first, down to the site's block; a
    run of blocks not sampled with one tag and size (a list's cells) reads
    as one step, "12 blocks not sampled (tag 0, 2 words each)"."""
    parts, run, n = [path.root], None, 0
    for h in path.hops + [None]:
        key = (None if h is None or h.elided or h.site is not None else (h.tag, h.words))
        if key is not None and key == run:
            n += 1
            continue
        if run is not None:
            parts.append(_hop_text(Hop(tag=run[0], words=run[1])) if n == 1
                         else f"{n} blocks not sampled ({run[0]}, {run[1]} words each)")
        run, n = key, 1
        if h is not None and key is None:
            parts.append(_hop_text(h))
    return " → ".join(parts)


def headline(ret: Retention) -> str:
    cur, old = ret.current, ret.baseline
    if cur is None:
        return ret.why or "no path"
    if ret.changed:
        return f"now held by {holder_text(cur)}; was held by {holder_text(old)}"
    if old is not None:
        return f"held by {holder_text(cur)}, as in the baseline"
    return f"held by {holder_text(cur)}"


def details(ret: Retention) -> list:
    """("current" | "baseline", path or None, words) lines under the
    headline: the path on one line (None: no path, and `words` says why)."""
    cur, old = ret.current, ret.baseline
    out = []
    if cur is not None:
        out.append(("current", path_text(cur),
                    f"{fmt_words(cur.shared_words)} of its stack's "
                    f"{fmt_words(cur.live_words)} live at exit share the first hops"))
    if old is not None:
        out.append(("baseline", path_text(old), ""))
    else:
        out.append(("baseline", None, (ret.baseline_why or "baseline: no path recorded")
                    .removeprefix("baseline: ")))
    return out


def markdown(report: Report) -> list:
    """The "What holds them" section of report.md, or nothing."""
    rows = flagged_rows(report)
    if not rows:
        return []
    out = ["### What holds them (retaining paths of the failing sites)", ""]
    for name, r in rows[:MAX_ROWS]:
        ret = r.retention
        check = CHECK_WORDS.get(r.check, str(r.check))
        head = headline(ret)
        head = mdsafe.text(head, limit=TEXT_LIMIT)
        if ret.changed:
            head = f"**{head}**"
        out.append(f"- {mdsafe.text(name)}, {mdsafe.code(str(r.site))} ({check}): "
                   f"{head}")
        for side, text, words in details(ret):
            shown = [mdsafe.code(text, limit=TEXT_LIMIT, cell=False)] if text else []
            shown += [mdsafe.text(words, limit=TEXT_LIMIT)] if words else []
            out.append(f"  - {side}: " + "; ".join(shown))
    if len(rows) > MAX_ROWS:
        out.append(f"- {_more(len(rows) - MAX_ROWS)}")
    out.append("")
    return out


def terminal(report: Report) -> list:
    """The headline of each flagged row, one line each, or nothing."""
    rows = flagged_rows(report)
    if not rows:
        return []
    out = ["", "What holds them:"]
    out += [mdsafe.printable(f"  {name}: {r.site} ({r.check}): {headline(r.retention)}")
            for name, r in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        out.append(f"  {_more(len(rows) - MAX_ROWS)}")
    return out


def _html_row(name: str, r: SiteRow, esc) -> str:
    """One failing site's item: headline, current and baseline lines."""
    ret = r.retention
    cls = "held changed" if ret.changed else "held"
    head = esc(headline(ret), TEXT_LIMIT)
    if ret.changed:
        head = f"<strong>{head}</strong>"
    check = CHECK_WORDS.get(r.check, str(r.check))
    out = [f'<li class="{cls}" data-site="{esc(r.site)}">{esc(name)}, '
           f'<code>{esc(r.site)}</code> ({esc(check)}): '
           f'<span class="headline">{head}</span><ul>']
    for side, text, words in details(ret):
        shown = [f"<code>{esc(text, TEXT_LIMIT)}</code>"] if text else []
        shown += [esc(words, TEXT_LIMIT)] if words else []
        out.append(f'<li class="{side}">{side}: ' + "; ".join(shown) + "</li>")
    out.append("</ul></li>")
    return "".join(out)


def html(report: Report, esc) -> str:
    """The section of report.html (`esc` escapes and clips a string): at
    most MAX_ROWS rows and HTML_BUDGET bytes (a row is at most about 19 KB:
    three texts of TEXT_LIMIT characters, each escaped entity 6 bytes)."""
    rows = flagged_rows(report)
    if not rows:
        return ""
    return bounded_section(
        '<section id="retention"><h2>What holds them</h2><ul class="retention">', "</ul>",
        [_html_row(name, r, esc) for name, r in rows[:MAX_ROWS]], len(rows), HTML_BUDGET,
        lambda n: esc(_more(n)))


def bounded_section(head: str, close: str, rows: list, total: int, budget: int, more) -> str:
    """An HTML section of report.html: `head`, as many of the rendered `rows`
    as fit in `budget` bytes with room for the end, `close`, a note
    (`more(n)`, escaped text) when n of the `total` rows are left out, and
    "</section>"."""
    out, size, shown = [head], len(head), 0
    for row in rows:
        if size + len(row) > budget - 300:
            break
        out.append(row)
        size, shown = size + len(row), shown + 1
    out.append(close)
    if shown < total:
        out.append(f'<p class="note">{more(total - shown)}</p>')
    out.append("</section>")
    return "".join(out)
