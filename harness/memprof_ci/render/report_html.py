"""report.html: one self-contained page per report, for reviewers.

Rendered from the same decided report dictionary as report.md and
report.json (report_doc.py), plus the per-benchmark "stacks" entry of
stackgraph.py.  The first screen holds the verdict, the regressed site rows
(largest increase in bytes first) and the icicle graph of the worst one's
heaviest stacks, baseline against current (stackgraph.focus_data), and
what holds each failing live or peak site (report_retention.py).  Then
the status of every benchmark and, per benchmark: the status row and
overhead (fmt.overhead_text: the counted estimate, and time with its
spread), a sortable table of the sites that changed with the unchanged
rows of every check folded in a closed <details>, a differential icicle
(the regressed sites' stacks highlighted where they grew; legend and
colours in report_assets.py), icicle graphs of sampled bytes by call stack
for the baseline and the current run, and, on clicking a site, its
heaviest stacks and its lines with their samples.

Invariants:
1. Self-contained: inline CSS and JS, SVG drawn by that JS; no URL is ever
   fetched (the Content-Security-Policy forbids it: default-src 'none').
   Links to source lines go to the measured commit only when
   GITHUB_SERVER_URL, GITHUB_REPOSITORY and a head sha are well formed.
2. Every string from profiles, baselines, manifests or shard reports reaches
   the page either through html.escape() (clipped to NAME_LIMIT characters,
   non-printables shown escaped, as in mdsafe) or inside the JSON data block,
   which escapes <, > and & as \\u003c, \\u003e, \\u0026 (so neither "</" nor
   "<!--" can occur in it); the script only ever sets textContent and
   attributes, never HTML.
3. Bounded size: at most MAX_SITE_ROWS site rows per benchmark, and a
   benchmark's stack data (stacks and tree) is cut, lightest stacks first,
   to STACK_BUDGET bytes of JSON; the top of the page adds FOCUS_ROWS rows
   and a graph within FOCUS_BUDGET; so report.html is at most about
   PAGE_OVERHEAD + FOCUS_ROWS x ROW_BOUND + FOCUS_BUDGET
   + report_retention.HTML_BUDGET + report_budgets.HTML_BUDGET
   + (MAX_SITE_ROWS x ROW_BOUND + STACK_BUDGET) per benchmark (README,
   "HTML report").
4. Nothing is decided here: the exit code and errors come from
   report["verdict"], statuses from verdict.py, the node colouring of the
   differential view from decide/stack_changes.py.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import urllib.parse

from ..text import mdsafe
from . import report_budgets, report_retention
from ..decide.report_types import Benchmark, Report
from ..text.fmt import callers_text, fmt_bytes, fmt_delta, fmt_mde, fmt_p, overhead_text
from .report import ABSENT_WORD, STATUS_CHECKS, headline, peak_lines, power_cell, preamble
from ..sites.grouping import frame_label
from .report_assets import CSP_META, CSS, JS, LEGEND_PLAIN, LEGEND_REGRESSED
from .stackgraph import FOCUS_BUDGET, focus_data, graph_data
from ..decide.stack_changes import NODE_ALPHA

MAX_SITE_ROWS = 200
PAGE_OVERHEAD = 40_000      # CSS, JS and the page frame
ROW_BOUND = 1_500           # bytes of one site row (names are clipped)
STACKS_PER_SITE = 8         # heaviest stacks shown for a clicked site, drawn for the worst
FOCUS_ROWS = 8              # regressed site rows listed at the top of the page
PAGE_BOUND_FIXED = (PAGE_OVERHEAD + FOCUS_ROWS * ROW_BOUND + FOCUS_BUDGET
                    + report_retention.HTML_BUDGET + report_budgets.HTML_BUDGET)


# ------------------------------------------------------------ source links

_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}")
_SHA_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SERVER_RE = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]{1,5})?")
_FILE_RE = re.compile(r"[A-Za-z0-9_./+-]{1,300}")


def source_base(env=None) -> str | None:
    """`<server>/<owner>/<repo>/blob/<sha>/` on GitHub Actions, else None.
    The sha is MEMPROF_CI_HEAD_SHA (the measured commit, set by the gate)
    or GITHUB_SHA."""
    env = os.environ if env is None else env
    server = env.get("GITHUB_SERVER_URL", "")
    repo = env.get("GITHUB_REPOSITORY", "")
    sha = env.get("MEMPROF_CI_HEAD_SHA") or env.get("GITHUB_SHA", "")
    if not (_SERVER_RE.fullmatch(server) and _REPO_RE.fullmatch(repo)
            and _SHA_RE.fullmatch(sha)) or repo.endswith(("/.", "/..")):
        return None
    return f"{server}/{repo}/blob/{sha}/"


def source_url(base: str | None, file, line=None) -> str | None:
    """A link to file#Lline under `base`, for relative, plain file names only."""
    if not base or not isinstance(file, str) or not _FILE_RE.fullmatch(file) \
            or file.startswith("/") or ".." in file.split("/"):
        return None
    url = base + urllib.parse.quote(file)
    if isinstance(line, int) and line > 0:
        url += f"#L{line}"
    return url


# ------------------------------------------------------------ rendering

def esc(s, limit: int = mdsafe.NAME_LIMIT) -> str:
    return html.escape(mdsafe.shown(s, limit), quote=True)


def _attr_json(obj) -> str:
    return html.escape(json.dumps(obj, ensure_ascii=True, separators=(",", ":")), quote=True)


def script_json(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# Words, not emoji: a machine without an emoji font shows those as boxes.
_OUTCOME = {"passed": ("ok", "ok"), "failed": ("fail", "FAIL"),
            "error": ("error", "ERROR"), "skipped": ("skip", "skipped"),
            "not run": ("skip", "not run"), "accepted": ("accepted", "accepted")}


def _check_td(b: Benchmark, check) -> str:
    if b.status in ABSENT_WORD:     # not run: its presence check's decided status
        if check != STATUS_CHECKS[0]:
            return '<td class="skip">-</td>'
        cls = "fail" if b.status == "missing" else "skip"
        return f'<td class="{cls}">{ABSENT_WORD[b.status][0]}</td>'
    c = b.checks.get(check)
    if c is None:
        return '<td class="skip">-</td>'
    cls, word = _OUTCOME.get(c.outcome, ("skip", "?"))
    title = esc(c.text, mdsafe.MESSAGE_LIMIT)
    return f'<td class="{cls}" title="{title}">{word}</td>'


def _overhead_text(b: Benchmark) -> str:
    return overhead_text(b.overhead.to_json()) if b.overhead else "-"


def _num(x):
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.6g}"


def _site_rows(b) -> list:
    rows = [r for key in ("alloc", "live", "peak") for r in (b.get(key) or [])
            if isinstance(r, dict) and not r.get("renamed_to")]
    sig = {"regression": 0, "improvement": 1}
    rows.sort(key=lambda r: (sig.get(r.get("status"), 2), -(r.get("current_bytes") or 0),
                             str(r.get("site"))))
    return rows


def _generated_note(r) -> str:
    """What compiler-generated code (caml_curry2, ...) is, as a note."""
    return f' <span class="note">{esc(r["generated"])}</span>' if r.get("generated") else ""


def _split_note(r) -> str:
    """A point site's callers (those that changed it, else its largest),
    estimated, as a note under its name."""
    text = callers_text(r)
    return f' <span class="note">{esc(text[2:-1])}</span>' if text else ""


def _delta_text(r) -> str:
    try:
        return fmt_delta(r)
    except (KeyError, TypeError):
        return "?"


MAX_LINES = 50   # lines of a site shown when it is clicked


def _top_lines(lines) -> dict:
    if not isinstance(lines, dict):
        return {}
    ok = [(k, v) for k, v in lines.items() if isinstance(k, str) and len(k) <= 12
          and isinstance(v, int)]
    return dict(sorted(ok, key=lambda kv: (-kv[1], kv[0]))[:MAX_LINES])


_HEAD = ('<thead><tr><th data-t="s">site</th><th data-t="s">check</th>'
         '<th data-t="n">baseline</th><th data-t="n">current</th><th data-t="n">delta [95% CI]</th>'
         '<th data-t="n">p (Holm)</th><th data-t="n">MDE (80%)</th><th data-t="s">status</th>'
         '</tr></thead>')


def unchanged(r) -> bool:
    """A "~" row that is not a rename: folded behind the table's toggle."""
    return str(r.get("status") or "~") == "~" and not r.get("renamed_from")


def _site_row(r, src) -> str:
    status = str(r.get("status") or "~")
    cls = {"regression": "regression", "improvement": "improvement"}.get(status, "")
    if r.get("renamed_from"):
        cls += " renamed"
    if unchanged(r):
        cls += " unchanged"
    label = frame_label(r.get("function"), r.get("file")) if r.get("function") or \
        r.get("file") else str(r.get("site"))
    name = esc(r.get("site"))
    extra = _generated_note(r)
    if r.get("via"):
        extra += f' <span class="via">via {esc(r["via"])}</span>'
    if r.get("renamed_from"):
        extra += f' <span class="note">renamed or moved from {esc(r["renamed_from"])}</span>'
    extra += _split_note(r)
    word = {"regression": "REGRESSION", "improvement": "improvement",
            "moved": "moved", "~": "~"}.get(status, esc(status))
    if r.get("renamed_from") and status == "~":
        word = "renamed or moved"
    ratio = r.get("ratio")
    delta_v = _num(ratio) if ratio is not None else ("1e300" if r.get("baseline_samples") == 0
                                                     else "")
    lines_top = _top_lines(r.get("lines"))
    lines_attr = _attr_json({"cur": lines_top,
                             "base": _top_lines(r.get("baseline_lines")),
                             "file": r.get("file") if isinstance(r.get("file"), str)
                             and len(r["file"]) <= 300 else None})
    line = r.get("line")
    if line is None and lines_top:
        k = next(iter(lines_top))  # the site's heaviest line
        line = int(k) if k.isdigit() else None
    url = source_url(src, r.get("file"), line)
    link = f' <a class="src" href="{esc(url, 2000)}">source</a>' if url else ""
    return (f'<tr class="site {cls.strip()}" data-frame="{esc(label)}" '
            f'data-check="{esc(r.get("check"))}" data-lines="{lines_attr}" tabindex="0">'
            f'<td data-v="{name}"><code>{name}</code>{extra}{link}</td>'
            f'<td data-v="{esc(r.get("check"))}">{esc(r.get("check"))}</td>'
            f'<td data-v="{_num(r.get("baseline_bytes"))}">{fmt_bytes(r.get("baseline_bytes"))}</td>'
            f'<td data-v="{_num(r.get("current_bytes"))}">{fmt_bytes(r.get("current_bytes"))}</td>'
            f'<td data-v="{delta_v}">{esc(_delta_text(r))}</td>'
            f'<td data-v="{_num(r.get("p_adj"))}">{fmt_p(r.get("p_adj"))}</td>'
            f'<td data-v="{_num(r.get("mde"))}">{fmt_mde(r.get("mde"))}</td>'
            f'<td data-v="{esc(status)}" class="st">{word}</td></tr>')


def _site_table(b, bi, src) -> str:
    """The changed rows (regressions, improvements, moves, renames) in one
    table; the unchanged rows of every check in a second table inside a
    closed <details>."""
    rows = _site_rows(b)
    kept = rows[:MAX_SITE_ROWS]
    changed = [r for r in kept if not unchanged(r)]
    same = [r for r in kept if unchanged(r)]
    out = []
    if changed:
        out.append(f'<table class="sites sortable" id="sites-{bi}">{_HEAD}<tbody>'
                   + "".join(_site_row(r, src) for r in changed) + "</tbody></table>")
    else:
        out.append('<p class="note">No site changed significantly.</p>')
    if same:
        per = {}
        for r in same:
            per[str(r.get("check"))] = per.get(str(r.get("check")), 0) + 1
        counts = ", ".join(f"{esc(k)} {n}" for k, n in sorted(per.items()))
        out.append(f'<details class="unchanged" id="unchanged-{bi}"><summary>{len(same)} '
                   f'unchanged site row(s) ({counts}): show</summary>'
                   f'<table class="sites sortable" id="sites-{bi}-same">{_HEAD}<tbody>'
                   + "".join(_site_row(r, src) for r in same) + "</tbody></table></details>")
    if len(rows) > len(kept):
        out.append(f'<p class="note">{len(rows) - len(kept)} more site(s) with the smallest '
                   f'allocation are in report.json.</p>')
    return "".join(out)


def _bench_section(name, b, typed: Benchmark, bi, src) -> str:
    status_cells = "".join(_check_td(typed, c) for c in STATUS_CHECKS)
    out = [f'<section class="bench" id="bench-{bi}" data-name="{esc(name)}">',
           f'<h2>{esc(name)}</h2>',
           '<table class="status"><thead><tr><th>alloc sites</th><th>GC totals</th>'
           '<th>live at exit</th><th>live at peak</th><th>overhead (est. cycles; time)</th></tr></thead>'
           f'<tbody><tr>{status_cells}<td>{esc(_overhead_text(typed))}</td></tr></tbody></table>']
    renames = [r for r in _site_rows(b) if r.get("renamed_from")]
    for r in renames:
        out.append(f'<p class="rename">Renamed or moved: <code>{esc(r["renamed_from"])}</code> → '
                   f'<code>{esc(r.get("site"))}</code> ({esc(r.get("check"))}, '
                   f'{esc(_delta_text(r))})</p>')
    for r in [r for r in _site_rows(b) if r.get("status") == "moved"]:
        srcs = ", ".join(f'{esc(m["site"])} ({esc(fmt_bytes(m["words"] * 8))})'
                         for m in r.get("moved_from") or []) or "other sites"
        out.append(f'<p class="moved">Moved, not a regression: <code>{esc(r.get("site"))}</code> '
                   f'({esc(r.get("check"))}) gained what left {srcs}</p>')
    for n in b.get("notes") or []:
        out.append(f'<p class="note">{esc(n, mdsafe.MESSAGE_LIMIT)}</p>')
    if b.get("alloc") or b.get("live") or b.get("peak"):
        out.append(_site_table(b, bi, src))
        out.append(f'<div class="graphs" id="graphs-{bi}" data-bench="{bi}"></div>'
                   f'<div class="panel" id="panel-{bi}"><p class="hint">Click a site to see its '
                   f'heaviest stacks and lines.</p></div>')
    out.append("</section>")
    return "".join(out)


def _regressions(report, names) -> list:
    """(benchmark index, name, row) of every regressed site row, the
    largest increase in bytes first."""
    out = []
    for bi, name in enumerate(names):
        b = report["benchmarks"][name]
        out += [(bi, name, r) for key in ("alloc", "live", "peak") for r in (b.get(key) or [])
                if isinstance(r, dict) and r.get("status") == "regression"]

    def grew(t):
        r = t[2]
        c, b = r.get("current_bytes"), r.get("baseline_bytes")
        ok = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (c, b))
        return (-(c - b) if ok else 0.0, t[1], str(r.get("site")))
    return sorted(out, key=grew)


def _focus_section(report, names, regs, data) -> str:
    """The regressed site rows and the graph of the worst one, first on the
    page; puts the graph into `data["focus"]`."""
    if not regs:
        return ""
    out = ['<section id="focus"><h2>Regressed sites</h2><table class="sites" id="regressed">'
           '<thead><tr><th>benchmark</th><th>site</th><th>check</th><th>baseline</th>'
           '<th>current</th><th>delta [95% CI]</th><th>p (Holm)</th></tr></thead><tbody>']
    for bi, name, r in regs[:FOCUS_ROWS]:
        out.append(f'<tr class="regression"><td><a href="#bench-{bi}">{esc(name)}</a></td>'
                   f'<td><code>{esc(r.get("site"))}</code>{_generated_note(r)}{_split_note(r)}</td>'
                   f'<td>{esc(r.get("check"))}</td>'
                   f'<td>{fmt_bytes(r.get("baseline_bytes"))}</td>'
                   f'<td>{fmt_bytes(r.get("current_bytes"))}</td>'
                   f'<td>{esc(_delta_text(r))}</td><td>{fmt_p(r.get("p_adj"))}</td></tr>')
    out.append("</tbody></table>")
    if len(regs) > FOCUS_ROWS:
        out.append(f'<p class="note">{len(regs) - FOCUS_ROWS} more regressed site row(s) in '
                   f'the benchmarks\' tables below.</p>')
    bi, name, r = regs[0]
    graph = focus_data(report["benchmarks"][name].get("stacks"), r.get("stacks_site", r.get("site")),
                       STACKS_PER_SITE)
    out.append(f'<h3 id="focus-title">Worst regression: <code>{esc(r.get("site"))}</code> '
               f'({esc(name)}, {esc(r.get("check"))}, {esc(_delta_text(r))}): its heaviest '
               f'call stacks, baseline and current run</h3>')
    if graph is None:
        out.append('<p class="note">No call stacks of both runs were recorded for it.</p>')
    else:
        data["focus"] = {"bench": bi, "graph": graph}
        out.append('<div class="graphs" id="focus-graph"></div>')
    out.append("</section>")
    return "".join(out)


def _status_table(report: Report, names) -> str:
    out = ['<h2>Benchmarks</h2><table class="status sortable" id="status"><thead><tr>'
           '<th data-t="s">benchmark</th><th data-t="s">alloc sites</th>'
           '<th data-t="s">GC totals</th><th data-t="s">live at exit</th>'
           '<th data-t="s">live at peak</th><th data-t="s">detects (80% power)</th>'
           '<th data-t="s">overhead (est. cycles; time)</th></tr></thead><tbody>']
    for bi, name in enumerate(names):
        b = report.benchmarks[name]
        cells = "".join(_check_td(b, c) for c in STATUS_CHECKS).replace("<td ", "<td data-v=\"\" ")
        out.append(f'<tr><td data-v="{esc(name)}"><a href="#bench-{bi}">{esc(name)}</a></td>'
                   f'{cells}<td data-v="">{esc(power_cell(b))}</td>'
                   f'<td data-v="">{esc(_overhead_text(b))}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def render_html(report: dict, env=None) -> str:
    """The page: verdict, regressed sites and the worst one's graph first,
    then the status of every benchmark and each benchmark's section."""
    typed = Report.from_json(report)
    v = typed.verdict
    src = source_base(env)
    names = sorted(report["benchmarks"])
    badge = {0: ("pass", "PASS"), 1: ("fail", "FAIL"), 2: ("error", "ERROR")}[v.exit_code]
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           CSP_META,
           '<meta name="viewport" content="width=device-width">',
           f"<title>memprof-ci report</title><style>{CSS}</style></head><body>",
           f'<h1 id="headline" data-exit="{v.exit_code}"><span class="badge {badge[0]}">'
           f'{badge[1]}</span> {esc(headline(typed), 1000)}</h1>',
           '<pre id="errors"></pre>']
    pre = preamble(typed)
    if pre:
        out.append("<pre class=\"preamble\">" + "\n".join(esc(x, mdsafe.MESSAGE_LIMIT) for x in pre)
                   + "</pre>")
    if v.errors:
        out.append("<h2>Errors</h2><ul>" + "".join(
            f"<li><code>{esc(e, mdsafe.MESSAGE_LIMIT)}</code></li>" for e in v.errors) + "</ul>")
    data = {"benches": [], "src": src, "per_site": STACKS_PER_SITE,
            "legend_regressed": LEGEND_REGRESSED, "legend_plain": LEGEND_PLAIN}
    regs = _regressions(report, names)
    out.append(_focus_section(report, names, regs, data))
    out.append(report_retention.html(typed, esc))
    out.append(report_budgets.html(typed, esc))
    out.append(_status_table(typed, names))
    peaks = peak_lines(typed)
    if peaks:
        out.append('<h2>Peak memory</h2><ul class="peak">' + "".join(
            f"<li>{esc(p, mdsafe.MESSAGE_LIMIT)}</li>" for p in peaks) + "</ul>")
    for bi, name in enumerate(names):
        b = report["benchmarks"][name]
        out.append(_bench_section(name, b, typed.benchmarks[name], bi, src))
        mine = [r for i, _, r in regs if i == bi]
        frames = sorted({mdsafe.shown(frame_label(r.get("function"), r.get("file")))
                         for r in mine if r.get("function") or r.get("file")})
        sites = {r.get("site") for r in mine if isinstance(r.get("site"), str)}
        data["benches"].append({"graph": graph_data(b.get("stacks"), sites),
                                "regressed": frames})
    notes = list(report.get("notes") or [])
    if notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n, mdsafe.MESSAGE_LIMIT)}</li>"
                                                  for n in notes) + "</ul>")
    out.append('<p class="note">Sites are tested with an exact conditional binomial test, '
               'Holm-adjusted over all sites of the run; "~" means no significant change. '
               'The differential graph colours a call-stack node when its own change is '
               f'significant (two-sided exact test, Holm over the benchmark\'s nodes, level '
               f'{NODE_ALPHA}); the regressed sites\' share of a node is strong red when it '
               'grew significantly (the same test, Holm over the nodes they pass through). '
               'See harness/STATISTICS.md.</p>')
    out.append(f'<script type="application/json" id="memprof-data">{script_json(data)}</script>')
    out.append(f"<script>{JS}</script></body></html>\n")
    return "".join(out)
