"""The page of `memprof-ci view`: one run (a view.View) as one HTML file.

The first screen holds what was run, then, only when the input carries
retainer paths (a profile with a snapshot), the heaviest site live at exit
and the path that holds it ("Held at exit"), then the table of top sites,
heaviest first (estimated words, share, sampled blocks, and the promoted,
collected, live at exit and live at peak words where the input records
them; a site with a retainer path has it on one line under its name), then
each site's retainer path hop by hop when there are any.  Below: the
icicle of call stacks (report_assets' script, one run), live words over
time and the lifetimes of sampled blocks (inline SVG written here, from a
trace; for an input without events a note says where they come from).

Invariants:
1. The style, script and Content-Security-Policy are report.html's
   (report_assets.CSP_META, CSS, JS): nothing is fetched, the script only
   sets text and attributes, and it sets body[data-ready] when drawn.
2. Every string from the input reaches the page through report_html.esc
   (escaped, clipped, non-printables shown) or inside the JSON data block
   (report_html.script_json); numbers are formatted here.
3. Display only: every figure is the View's; nothing is estimated or
   decided here.  A section whose data the View lacks is left out
   (held at exit, retainer paths) or replaced by a note saying why
   (timeline, lifetimes).
"""

from __future__ import annotations

from ..text.fmt import fmt_bytes, fmt_words
from ..inputs.profile import WORD_BYTES
from .report_assets import CSP_META, CSS, JS, LEGEND_PLAIN, LEGEND_REGRESSED
from .report_html import esc, script_json
from .stackgraph import graph_data
from .view import LIFETIME_EDGES_US, Lifetimes, Timeline, View, load_view

EXTRA_CSS = """
table.facts th{font-weight:normal;color:#555;background:none}table.facts td,table.facts th{border:0;
padding:0 .8em 0 0}table.top td.n{text-align:right}svg.chart{display:block;border:1px solid #eee;
margin:.3em 0}svg.chart .area{fill:#f2b8a2;stroke:#c0392b;stroke-width:1}svg.chart .bar{fill:#e07b54}
svg.chart .live{fill:#999}svg.chart .axis{stroke:#888;stroke-width:1}svg.chart circle{fill:#a00}
ol.path{margin:.2em 0 .6em;font:12px monospace}ol.path li{white-space:pre-wrap}
table.top div.held{font-size:12px;color:#444;white-space:normal;max-width:70em}
"""
CHART_W, CHART_H, PAD_L, PAD_B = 1000, 220, 90, 30

# (attribute of SiteRow, column heading): shown when some row has a value.
OPTIONAL_COLUMNS = (("blocks", "sampled blocks"), ("promoted", "promoted"),
                    ("collected", "collected"), ("live", None), ("peak", "live at peak"))


def fmt_us(us: float) -> str:
    """A duration in microseconds, in the unit that reads best."""
    for unit, div in (("s", 1e6), ("ms", 1e3)):
        if us >= div:
            return f"{us / div:.3g} {unit}"
    return f"{us:.0f} µs"


def _wcell(x) -> str:
    if x is None:
        return '<td class="n" data-v="">-</td>'
    return f'<td class="n" data-v="{x:.6g}" title="{fmt_bytes(x * WORD_BYTES)}">{fmt_words(x)}</td>'


def _facts(v: View) -> str:
    return ('<table class="facts" id="facts">' + "".join(
        f"<tr><th>{esc(k)}</th><td>{esc(t, 1000)}</td></tr>" for k, t in v.facts) + "</table>")


def _top_sites(v: View) -> str:
    cols = [(a, h or v.live_what) for a, h in OPTIONAL_COLUMNS
            if any(getattr(s, a) is not None for s in v.sites)]
    head = ('<thead><tr><th data-t="n">#</th><th data-t="s">site</th>'
            f'<th data-t="n">words ({esc(v.words_what)}, est.)</th><th data-t="n">share</th>'
            + "".join(f'<th data-t="n">{esc(h)}</th>' for _, h in cols) + "</tr></thead>")
    rows = []
    for i, s in enumerate(v.sites, 1):
        share = s.words / v.total_words if v.total_words else 0.0
        line = f' <span class="via">line {s.line}</span>' if s.line is not None else ""
        cells = "".join(
            (f'<td class="n" data-v="{s.blocks}">{s.blocks}</td>' if a == "blocks"
             else _wcell(getattr(s, a))) for a, _ in cols)
        held = "".join(f'<div class="held">{_inline(p)}</div>' for p in s.retainers or [])
        rows.append(f'<tr data-site="{esc(s.key)}"><td class="n" data-v="{i}">{i}</td>'
                    f'<td data-v="{esc(s.key)}"><code>{esc(s.key)}</code>{line}{held}</td>'
                    f"{_wcell(s.words)}"
                    f'<td class="n" data-v="{share:.6g}">{share:.1%}</td>{cells}</tr>')
    more = ""
    if v.rest[0]:
        more = (f'<p class="note">{v.rest[0]} more site(s), {esc(fmt_words(v.rest[1]))} in '
                f"all, are not listed.</p>")
    return ('<section id="top-sites"><h2>Top sites</h2>'
            f'<table class="top sortable" id="top-sites-table">{head}<tbody>'
            + "".join(rows) + f"</tbody></table>{more}</section>")


def _hop(h, fields: bool = True) -> str:
    """A hop as HTML: its site (or "a block not sampled"), then what else
    is known of it in parentheses."""
    if h.elided:
        return f"… {h.elided} hop(s) not recorded …"
    what = ", ".join(x for x in (h.inner and f"in {esc(h.inner)}", h.tag and esc(h.tag),
                                 h.words is not None and f"{h.words} words",
                                 fields and h.field is not None and f"field {h.field}") if x)
    name = f"<code>{esc(h.site)}</code>" if h.site is not None else "a block not sampled"
    return name + (f" ({what})" if what else "")


def _path(p) -> str:
    return (f'<ol class="path"><li>root: {esc(p.root)}</li>'
            + "".join(f"<li>{_hop(h)}</li>" for h in p.hops) + "</ol>")


def _inline(p) -> str:
    """The path on one line, for the site's row of the table."""
    return ("held by " + esc(p.root) + "".join(f" → {_hop(h, False)}" for h in p.hops))


def _share(p, live=None) -> str:
    if p.shared_words is None:
        return ""
    if p.live_words is None or live is None or p.live_words == live:
        return f" ({esc(fmt_words(p.shared_words))} of its live words share the first hops)"
    return (f" ({esc(fmt_words(p.shared_words))} of the stack shown's "
            f"{esc(fmt_words(p.live_words))} live share the first hops)")


def _held(v: View) -> str:
    """The heaviest site live at exit (or at the snapshot) that has a path,
    and that path."""
    held = [s for s in v.sites if s.retainers]
    if not held:
        return ""
    s = max(held, key=lambda r: r.live or 0.0)
    live = f", {esc(fmt_words(s.live))} live" if s.live is not None else ""
    p = s.retainers[0]
    return (f'<section id="held"><h2>Held {esc(v.moment)}</h2>'
            f'<p data-site="{esc(s.key)}">The heaviest site live {esc(v.moment)}, '
            f"<code>{esc(s.key)}</code>{live}{_share(p, s.live)}, is held by:</p>{_path(p)}"
            '<p class="note">Every site\'s path: "Retainer paths", below the table.</p>'
            "</section>")


def _retainers(v: View) -> str:
    if not v.has_retainers:
        return ""
    out = ['<section id="retainers"><h2>Retainer paths</h2>']
    for s in v.sites:
        for p in s.retainers or []:
            out.append(f"<h3>Held: <code>{esc(s.key)}</code>{_share(p, s.live)}</h3>{_path(p)}")
    out.append("</section>")
    return "".join(out)


def _axes(y_top: float, x_end: str, y_label: str) -> str:
    h = CHART_H - PAD_B
    return (f'<line class="axis" x1="{PAD_L}" y1="{h}" x2="{CHART_W}" y2="{h}"/>'
            f'<line class="axis" x1="{PAD_L}" y1="0" x2="{PAD_L}" y2="{h}"/>'
            f'<text x="{PAD_L - 4}" y="12" text-anchor="end">{esc(fmt_words(y_top))}</text>'
            f'<text x="{PAD_L - 4}" y="{h}" text-anchor="end">0</text>'
            f'<text x="{PAD_L}" y="{CHART_H - 8}">{esc(y_label)}</text>'
            f'<text x="{CHART_W - 4}" y="{CHART_H - 8}" text-anchor="end">{esc(x_end)}</text>')


def _timeline(t: Timeline | None) -> str:
    out = ['<section id="timeline"><h2>Live words over time</h2>']
    if t is None:
        out.append('<p class="note">Not shown: the input records no allocation and '
                   "collection events (a profile holds counts only; a trace has them).</p>")
        return "".join(out) + "</section>"
    top = max(t.peak_words, 1.0)
    h, w = CHART_H - PAD_B, CHART_W - PAD_L
    span = max(t.end_us, 1)

    def xy(us, words):
        return f"{PAD_L + w * us / span:.1f},{h - h * words / top:.1f}"
    pts = [xy(0, 0)] + [xy(us, words) for us, words in t.points] + [xy(t.end_us, 0)]
    out.append(f'<p class="note">Estimated live words of the sampled blocks (allocated and not '
               f"yet found dead), the highest in each of {len(t.points)} steps of time; peak "
               f"{esc(fmt_words(t.peak_words))} ({esc(fmt_bytes(t.peak_words * WORD_BYTES))}) "
               f"at {esc(fmt_us(t.peak_us))}.</p>")
    out.append(f'<svg class="chart" id="timeline-svg" viewBox="0 0 {CHART_W} {CHART_H}" '
               f'width="{CHART_W}" height="{CHART_H}" role="img">'
               f'<polygon class="area" points="{" ".join(pts)}"/>'
               f'<circle cx="{xy(t.peak_us, t.peak_words).split(",")[0]}" '
               f'cy="{xy(t.peak_us, t.peak_words).split(",")[1]}" r="4"><title>peak: '
               f"{esc(fmt_words(t.peak_words))} at {esc(fmt_us(t.peak_us))}</title></circle>"
               + _axes(top, fmt_us(t.end_us), "time since start") + "</svg>")
    return "".join(out) + "</section>"


def _span(a: float, b: float) -> str:
    """"a–b unit" in the unit of b: 100 and 1000 µs read "0.1–1 ms"."""
    unit, div = next((u, d) for u, d in (("s", 1e6), ("ms", 1e3), ("µs", 1)) if b >= d)
    return f"{a / div:g}–{b / div:g} {unit}"


def _bin_names() -> list:
    e = LIFETIME_EDGES_US
    return ([f"< {fmt_us(e[0])}"] + [_span(a, b) for a, b in zip(e, e[1:])]
            + [f"≥ {fmt_us(e[-1])}"])


def _lifetimes(lt: Lifetimes | None, live_what: str) -> str:
    out = ['<section id="lifetimes"><h2>Lifetimes of sampled blocks</h2>']
    if lt is None:
        out.append('<p class="note">Not shown: the input records no allocation and '
                   "collection events (a profile holds counts only; a trace has them).</p>")
        return "".join(out) + "</section>"
    names = _bin_names() + ["not collected"]
    rows = lt.bins + [lt.live]
    top = max(max(b for b, _ in rows), 1)
    h, bw = CHART_H - PAD_B, (CHART_W - PAD_L) / len(rows)
    bars = []
    for i, ((blocks, words), name) in enumerate(zip(rows, names)):
        bh = h * blocks / top
        cls = "live" if i == len(rows) - 1 else "bar"
        bars.append(f'<rect class="{cls}" x="{PAD_L + i * bw + 2:.1f}" y="{h - bh:.1f}" '
                    f'width="{bw - 4:.1f}" height="{bh:.1f}"><title>{esc(name)}: {blocks} '
                    f"blocks, {esc(fmt_words(words))}</title></rect>"
                    f'<text x="{PAD_L + i * bw + 4:.1f}" y="{h + 14}">{esc(name)}</text>')
    out.append('<p class="note">Time from a sampled block\'s allocation to its collection; '
               f"grey: blocks not collected ({esc(live_what)}). A block is sampled with a "
               "chance that grows with its size, so the counts weigh blocks by their "
               "words.</p>")
    out.append(f'<svg class="chart" id="lifetimes-svg" viewBox="0 0 {CHART_W} {CHART_H + 10}" '
               f'width="{CHART_W}" height="{CHART_H + 10}" role="img">' + "".join(bars)
               + f'<line class="axis" x1="{PAD_L}" y1="{h}" x2="{CHART_W}" y2="{h}"/>'
               f'<text x="{PAD_L - 4}" y="12" text-anchor="end">{top} blocks</text></svg>')
    out.append('<table class="top" id="lifetimes-table"><thead><tr><th>lifetime</th>'
               "<th>sampled blocks</th><th>words (est.)</th></tr></thead><tbody>"
               + "".join(f'<tr><td>{esc(n)}</td><td class="n">{b}</td>{_wcell(w)}</tr>'
                         for n, (b, w) in zip(names, rows)) + "</tbody></table>")
    return "".join(out) + "</section>"


def render_view(v: View) -> str:
    """The page; see the invariants."""
    graph = graph_data(v.stacks) if v.stacks is not None else None
    data = {"benches": [{"graph": graph, "regressed": [], "single": True}] if graph else [],
            "src": None, "per_site": 8,
            "legend_regressed": LEGEND_REGRESSED, "legend_plain": LEGEND_PLAIN}
    title = f"memprof-ci view: {v.program}"
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">', CSP_META,
           '<meta name="viewport" content="width=device-width">',
           f"<title>{esc(title)}</title><style>{CSS}{EXTRA_CSS}</style></head><body>",
           f'<h1 id="headline" data-kind="{esc(v.kind)}">{esc(title)} ({esc(v.kind)})</h1>',
           '<pre id="errors"></pre>', _facts(v), _held(v), _top_sites(v), _retainers(v),
           '<section id="stacks"><h2>Call stacks</h2>']
    if graph:
        out.append('<div class="graphs" id="graphs-0"></div>')
    else:
        out.append('<p class="note">Not shown: the input records no call stacks.</p>')
    out += ["</section>", _timeline(v.timeline), _lifetimes(v.lifetimes, v.live_what)]
    if v.notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n, 1000)}</li>" for n in v.notes)
                   + "</ul>")
    out.append(f'<script type="application/json" id="memprof-data">{script_json(data)}</script>')
    out.append(f"<script>{JS}</script></body></html>\n")
    return "".join(out)


def view_page(path: str) -> str:
    """The page of the file at `path` (view.load_view's errors pass through)."""
    return render_view(load_view(path))
