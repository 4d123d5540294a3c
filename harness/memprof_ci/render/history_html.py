"""history.html: main's recorded runs (run_records.py) on one self-contained page.

The page lists the commits, oldest first, each linked (to the commit on
the forge when its URL is known, else to its entry in the list), and per
benchmark a chart of the estimated allocated bytes with their intervals and
a table: totals, the exact minor_words and the heaviest sites of the latest
run, one column per commit.  A commit whose run the maintainers accepted a
change of the benchmark in is marked "accepted" in the chart and table.

Invariants:
1. The style and Content-Security-Policy of report.html (default-src
   'none'; no script at all here): nothing is fetched, the chart is inline
   SVG written here.
2. Every string from a record reaches the page through report_html.esc
   (escaped and clipped); links are only built from a full commit id under
   an https prefix of a fixed shape (commit_base).
3. Nothing is decided here: an interval is history.interval's; accepted
   marks are the records' own.
"""

from __future__ import annotations

import datetime
import os
import re

from ..text import mdsafe
from ..text.fmt import fmt_bytes
from ..store.run_records import COMMIT_RE, LEVEL, series
from .report_assets import CSP_META
from .report_html import CSS, esc

_PREFIX_RE = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9_.-]+){1,6}/")
EXTRA_CSS = """
.history td.accepted,.history th.accepted{background:#fff4cc}
svg.chart{display:block;width:100%;max-width:1000px;border:1px solid #eee;margin:.3em 0}
svg.chart line.iv{stroke:#555;stroke-width:1.5}svg.chart circle{fill:#236}
svg.chart circle.accepted{fill:#c80}svg.chart polyline{fill:none;stroke:#236;stroke-width:1}
ol#commits li{font:12px monospace}.mark{color:#a60;font-weight:bold}
"""


def commit_base(prefix: str | None, env=None) -> str | None:
    """The URL prefix that a commit id completes: `prefix` when given and
    well formed, else GitHub's from the workflow environment, else None."""
    env = os.environ if env is None else env
    if prefix is None:
        server, repo = env.get("GITHUB_SERVER_URL", ""), env.get("GITHUB_REPOSITORY", "")
        prefix = f"{server}/{repo}/commit/" if server and repo else None
    if prefix is None or not _PREFIX_RE.fullmatch(prefix) or "/../" in prefix \
            or "/./" in prefix:
        return None
    return prefix


def _href(base, sha: str) -> str:
    if base and COMMIT_RE.fullmatch(sha):
        return esc(base + sha, 400)
    return f"#c-{sha}"


def _cell(v, exact_words: bool = False) -> str:
    if v is None:
        return "-"
    if exact_words:
        return f"{v:.0f} (exact)"
    est, lo, hi = v
    if lo == hi:
        return f"{fmt_bytes(est)} (exact)"
    return f"{fmt_bytes(est)} [{fmt_bytes(lo)}, {fmt_bytes(hi)}]"


def _chart(cells: list, marks: list) -> str:
    """Inline SVG: each run's estimate and interval, accepted runs marked."""
    pts = [(i, c) for i, c in enumerate(cells) if c is not None]
    if not pts:
        return ""
    w, h, pad = 1000, 160, 20
    top = max(c[2] for _, c in pts) or 1.0
    step = (w - 2 * pad) / max(len(cells) - 1, 1)

    def y(v):
        return h - pad - (h - 2 * pad) * v / top
    out = [f'<svg class="chart" viewBox="0 0 {w} {h}" role="img">',
           '<polyline points="' + " ".join(f"{pad + i * step:.1f},{y(c[0]):.1f}"
                                           for i, c in pts) + '"/>']
    for i, c in pts:
        x = pad + i * step
        out.append(f'<line class="iv" x1="{x:.1f}" x2="{x:.1f}" y1="{y(c[1]):.1f}" '
                   f'y2="{y(c[2]):.1f}"/>')
        cls = ' class="accepted"' if marks[i] else ""
        out.append(f'<circle{cls} cx="{x:.1f}" cy="{y(c[0]):.1f}" r="3.5">'
                   f"<title>{esc(_cell(c))}</title></circle>")
    out.append("</svg>")
    return "".join(out)


def _bench_section(bi: int, name: str, s: dict, runs: list, base) -> str:
    marks = [name in r.accepted for r in runs]
    head = "".join(
        f'<th class="{"accepted" if m else ""}" data-commit="{r.commit}">'
        f'<a href="{_href(base, r.commit)}">{r.commit[:12]}</a>'
        + ('<br><span class="mark">accepted</span>' if m else "") + "</th>"
        for r, m in zip(runs, marks))
    rows = [("total allocated", s["totals"], False), ("minor_words", s["minor_words"], True)]
    rows += [(site, cells, False) for site, cells in s["sites"].items()]
    body = []
    for label, cells, exact in rows:
        tds = "".join(f'<td class="{"accepted" if m else ""}">{esc(_cell(c, exact))}</td>'
                      for c, m in zip(cells, marks))
        body.append(f'<tr><th><code>{esc(label)}</code></th>{tds}</tr>')
    return (f'<section class="history" id="bench-{bi}" data-bench="{esc(name)}">'
            f"<h2>{esc(name)}</h2><p class=\"note\">Estimated bytes allocated per run "
            f"({LEVEL:.0%} interval of the sampled count; exact when counted), per "
            f"commit, oldest first.</p>{_chart(s['totals'], marks)}"
            f'<table class="sites"><thead><tr><th></th>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table></section>")


def _commit_item(r, base) -> str:
    when = datetime.datetime.fromtimestamp(r.time, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M")
    acc = (f' <span class="mark">accepted: {esc(", ".join(r.accepted), 1000)}</span>'
           if r.accepted else "")
    return (f'<li id="c-{r.commit}" data-commit="{r.commit}"><a href="{_href(base, r.commit)}">'
            f"{r.commit[:12]}</a> {when} {esc(r.subject)}"
            f' <span class="note">runtime patch {esc(r.patch_id or "unknown")}</span>{acc}</li>')


def render_history(runs: list, top: int = 10, commit_url: str | None = None,
                   env=None) -> str:
    base = commit_base(commit_url, env)
    data = series(runs, top)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           CSP_META,
           '<meta name="viewport" content="width=device-width">',
           f"<title>memprof-ci history</title><style>{CSS}{EXTRA_CSS}</style></head><body>",
           f"<h1>memprof-ci history: {len(runs)} recorded runs of main</h1>",
           '<h2>Commits</h2><ol id="commits">',
           *(_commit_item(r, base) for r in runs), "</ol>"]
    for bi, name in enumerate(sorted(data)):
        out.append(_bench_section(bi, name, data[name], runs, base))
    out.append(f'<p class="note">Sites: the {top} heaviest of each benchmark\'s latest run. '
               f"Names are clipped to {mdsafe.NAME_LIMIT} characters.</p></body></html>\n")
    return "".join(out)
