"""Hostile names and messages stay inert in report.md and on the terminal.

A report is built (through stats.site_rows and verdict.decide, as `compare`
does) whose site, file, function and benchmark names, GC counter, error
messages and notes carry backtick runs, HTML, mentions, issue references,
links, images, bare URLs, newlines, ANSI escapes and a 100 KB name.  It is
rendered with render_markdown, converted to HTML by the real cmark-gfm with
GitHub's extensions, and the HTML is inspected: only the tags the renderer
writes itself, no attributes but table alignment, no mention, issue reference
or URL outside <code>, no control character, every table row and code span
intact and every hostile string visible as literal text.

cmark-gfm runs with --unsafe: GitHub passes raw HTML through its renderer
(and sanitises afterwards), whereas cmark-gfm's default would drop it and hide
any injected tag from these tests.
Needs the cmark-gfm binary (harness/scripts/ensure-deps.sh python installs it).
"""

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from harness_testlib import REPO  # noqa: F401  (puts harness/ on sys.path)
from memprof_ci.text import mdsafe
from memprof_ci.decide import stats
from memprof_ci.decide.verdict import decide
from memprof_ci.render.report import render_markdown, render_terminal
from memprof_ci.decide.report_doc import new_report
from memprof_ci.sites.keys import site_label

ZWJ = "\u200d"
HUGE = "N" * 100_000
HOSTILE = [
    'x` @octocat <img src=x onerror=alert(1)> `.ml',
    "``double`` and ```triple``` and ````four````",
    "`", "a`", "`b", " ` ",
    "<details open><summary>pwn</summary>",
    "<script>alert(1)</script>",
    "@org/team and @octocat",
    "see #1 and owner/repo#12 and GH-7",
    "[x](http://evil) ![i](http://evil/p.png)",
    "bare https://evil.example and www.evil.example and me@evil.example",
    "<http://evil.example>",
    "line one\nline two\n\n# heading\n| a | b |",
    "\x1b[31mred\x1b[0m\r\x00\u202eevil",
    "pipe | in \\| name",
    "&#64;octocat &lt;b&gt; *em* _em_ ~~del~~ $x^2$",
    "- [ ] task\n> quote",
]
# Where GitHub would act on text outside code: mentions, issue references, URLs.
LIVE = re.compile(r"@[A-Za-z0-9_]|(?<!&)#[0-9]|(?i:GH-[0-9])|[A-Za-z]+://|(?i:www\.)")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REPORT_TAGS = {"h2", "h3", "p", "ul", "li", "code", "pre", "table", "thead", "tbody", "tr",
               "th", "td", "details", "summary", "sub", "strong", "em"}


def cmark(md: str) -> str:
    exe = shutil.which("cmark-gfm")
    if exe is None:
        pytest.fail("cmark-gfm is missing: run harness/scripts/ensure-deps.sh python "
                    "(Debian package cmark-gfm)")
    r = subprocess.run([exe, "--extension", "table", "--extension", "autolink",
                        "--extension", "tagfilter", "--extension", "strikethrough", "--unsafe",
                        "-t", "html"], input=md, capture_output=True, text=True, check=True)
    return r.stdout


class Page(HTMLParser):
    """Tags, text (inside <code> or not), tables, list items of an HTML page."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.texts, self.comments = [], [], []
        self.tables, self.items, self.summaries = [], [], []
        self._code = 0
        self._cell = self._item = self._summary = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        if tag == "code":
            self._code += 1
            for holder in (self._cell, self._item):
                if holder is not None:
                    holder["codes"].append("")
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = {"text": "", "codes": []}
            self.tables[-1][-1].append(self._cell)
        elif tag == "li":
            self._item = {"text": "", "codes": []}
            self.items.append(self._item)
        elif tag == "summary":
            self._summary = ""

    def handle_endtag(self, tag):
        if tag == "code":
            self._code -= 1
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "li":
            self._item = None
        elif tag == "summary":
            self.summaries.append(self._summary)
            self._summary = None

    def handle_data(self, data):
        self.texts.append((data, self._code > 0))
        for holder in (self._cell, self._item):
            if holder is not None:
                holder["text"] += data
                if self._code:
                    holder["codes"][-1] += data
        if self._summary is not None:
            self._summary += data

    def handle_comment(self, data):
        self.comments.append(data)

    def all_text(self) -> str:
        return "".join(t for t, _ in self.texts).replace(ZWJ, "")


def shown(s, limit=mdsafe.NAME_LIMIT) -> str:
    """What a reader must see for `s`: escaped control characters, clipped."""
    s = s if len(s) <= limit else s[:limit] + "…"
    esc = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return "".join(c if c.isprintable() else esc.get(c) or
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in s)


def assert_inert(page: Page, html: str, allowed_tags=REPORT_TAGS, live_in_code_ok=True):
    bad = [(t, a) for t, a in page.tags if t not in allowed_tags]
    assert not bad, f"unexpected tags: {bad[:5]}"
    for tag, attrs in page.tags:
        if tag == "a":
            continue  # the caller checks its links
        if tag == "code" and attrs and attrs[0][0] == "class":
            # A fence's info string: defused, so no language GitHub renders.
            assert len(attrs) == 1 and attrs[0][1].startswith("language-" + ZWJ), attrs
            continue
        assert all(k == "align" for k, _ in attrs), (tag, attrs)
    assert not CONTROL.search(html), "raw control character in the HTML"
    for text, in_code in page.texts:
        if in_code and live_in_code_ok:
            continue
        m = LIVE.search(text)
        assert m is None, f"GitHub would link/mention {text[max(0, m.start() - 20):m.end() + 20]!r}"


# ------------------------------------------------------------ the report

def _sites(names, count):
    return {site_label(fn, fl): (count, {"file": fl, "function": fn, "line": 1, "via": via,
                                         "lines": {"1": count}})
            for fn, fl, via in names}


def hostile_report():
    """A report whose every external string is hostile; also the expectations."""
    params = {"alpha": 0.01, "min_effect": 0.05, "min_share": 0.001}
    rep = new_report("compare")
    names = HOSTILE + [HUGE]
    grow = [(fn, "main.ml", None) for fn in names] + [("Main.f", fl, None) for fl in names]
    shrink = [("Main.g", "g.ml", via) for via in names[:3]]
    cur = {**_sites(grow, 400), **_sites(shrink, 10)}
    base = {**_sites(grow, 10), **_sites(shrink, 400)}
    benches = {}
    for i, bname in enumerate([HOSTILE[0], HOSTILE[3], HOSTILE[11], HUGE]):
        rows = stats.site_rows(bname, "alloc", cur, base, 2000, 2000, 1.0, 1.0, params) if i < 2 else []
        gc = [{"counter": HOSTILE[6], "baseline": 1.0, "current": 9.0, "change": 8.0,
               "tolerance": 0.01, "status": "regression"}] if i == 0 else []
        checks = {"alloc_sites": {"outcome": "passed", "message": ""},
                  "gc_totals": {"outcome": "failed" if gc else "passed", "message": ""}}
        if i == 2:
            checks = {"alloc_sites": {"outcome": "error", "message": "crashed; stderr tail: "
                                      + " | ".join(HOSTILE)}}
        benches[bname] = {"name": bname, "checks": checks, "alloc": rows, "live": None,
                          "gc": gc, "notes": [HOSTILE[8]], "overhead": None}
    rep["benchmarks"] = benches
    rep["notes"] = list(HOSTILE) + [HUGE]
    rep["errors"] = [HOSTILE[1], HUGE]
    rep["proposed_baselines"] = {"benchmarks": {HOSTILE[0]: {
        "status": "changed", "gc": [],
        "sites": [{"site": s, "trusted_bytes": 8.0, "proposed_bytes": 16.0, "ratio": 2.0}
                  for s in ["```", "````\n```\n<img src=x>", HOSTILE[5]]]}}}
    decide(rep)
    return rep


@pytest.fixture(scope="module")
def rendered():
    rep = hostile_report()
    md = render_markdown(rep)
    html = cmark(md)
    return rep, md, html, Page(html)


def test_report_has_only_its_own_markup(rendered):
    rep, md, html, page = rendered
    assert_inert(page, html)
    assert page.comments == []
    # One per benchmark's site table, and one for improvements if any.
    improved = any(r["status"] == "improvement" for b in rep["benchmarks"].values()
                   for k in ("alloc", "live", "peak") for r in b.get(k) or [])
    n_details = improved + sum(1 for b in rep["benchmarks"].values() if b["alloc"])
    assert [t for t, _ in page.tags].count("details") == n_details == len(page.summaries)


def test_tables_keep_their_rows_and_code_spans(rendered):
    rep, md, html, page = rendered
    regs = [r for b in rep["benchmarks"].values() for r in b["alloc"] if r["status"] == "regression"]
    assert len(regs) >= 2 * len(HOSTILE)
    site_tables = [t for t in page.tables if t[0][2]["text"] == "site"]
    reg_table = site_tables[0]
    assert len(reg_table) == 1 + len(regs)
    want = sorted(shown(r["site"]) for r in regs)
    got = []
    for row in reg_table[1:]:
        assert len(row) == 7
        assert len(row[2]["codes"]) == 1, row[2]
        assert row[2]["text"] == row[2]["codes"][0], "text outside the code span"
        got.append(row[2]["codes"][0].replace(ZWJ, ""))
        assert row[0]["text"].replace(ZWJ, "") in {shown(n) for n in rep["benchmarks"]}
    assert sorted(got) == want
    # GC table: the hostile counter stays one cell.
    gc_table = [t for t in page.tables if t[0][1]["text"] == "counter"][0]
    assert gc_table[1][1]["text"].replace(ZWJ, "") == shown(HOSTILE[6])
    # Top-sites tables: every site is exactly one code span.
    for table in [t for t in page.tables if t[0][0]["text"] == "site"]:
        for row in table[1:]:
            assert len(row) == 7 and len(row[0]["codes"]) == 1
            assert row[0]["text"] == row[0]["codes"][0]


def test_errors_notes_and_summaries_are_literal(rendered):
    rep, md, html, page = rendered
    items = [(it["text"].replace(ZWJ, ""), [c.replace(ZWJ, "") for c in it["codes"]])
             for it in page.items]
    for e in rep["verdict"]["errors"]:
        assert (shown(e, mdsafe.MESSAGE_LIMIT), [shown(e, mdsafe.MESSAGE_LIMIT)]) in items
    for n in rep["notes"]:
        assert (shown(n, mdsafe.MESSAGE_LIMIT).strip(), []) in items
    summaries = [s.replace(ZWJ, "") for s in page.summaries]
    for name, b in rep["benchmarks"].items():
        if b["alloc"]:
            assert any(s.startswith(shown(name) + ": top ") for s in summaries), name
    # The proposed-baselines block: one <pre>, all its lines inside it.
    assert [t for t, _ in page.tags].count("pre") == 1
    block = [t for t, c in page.texts if c and "baseline changed" in t]
    assert len(block) == 1 and "<img src=x>" in block[0].replace(ZWJ, "")


def test_every_hostile_string_is_visible_as_text(rendered):
    rep, md, html, page = rendered
    text = page.all_text()
    for s in HOSTILE:
        assert shown(s) in text, s
    assert shown(HUGE) in text and HUGE not in text


def test_report_md_is_bounded_and_line_per_entry(rendered):
    rep, md, html, page = rendered
    assert len(md) < 200_000  # the 100 KB name appears clipped, never whole
    assert not CONTROL.search(md)


@pytest.mark.parametrize("s", ["`", "``", "a`b", "a``b", "```", "a````b`````c", "`x`", " `", "` ",
                               "  ", "", "a|b", "a\\|b", "a\\", "\\", "| x |", "<b>", "x\ny"])
def test_code_span_shows_exactly_its_content(s):
    for md, cell in ((f"p {mdsafe.code(s, cell=False)} q\n", False),
                     (f"| h | i |\n|---|---|\n| {mdsafe.code(s)} | z |\n", True)):
        page = Page(cmark(md))
        codes = [t for t, c in page.texts if c]
        assert "".join(codes).replace(ZWJ, "") == (shown(s) or " "), (md, page.texts)
        if cell:
            assert page.tables[0][1][1]["text"] == "z", md


@pytest.mark.parametrize("s", HOSTILE + ["# x", "1. x", "- x", "> x", "+ x", "=== x", "\\*x\\*"])
def test_text_is_plain_in_paragraph_list_cell_and_summary(s):
    t = mdsafe.text(s)
    for md in (f"{t}\n", f"- {t}\n", f"| h |\n|---|\n| {t} |\n",
               f"<details><summary>{t}: top</summary>\n\nbody\n\n</details>\n"):
        html = cmark(md)
        page = Page(html)
        assert_inert(page, html)
        assert {tag for tag, _ in page.tags} <= {"p", "ul", "li", "table", "thead", "tr", "th",
                                                  "tbody", "td", "details", "summary"}, (md, html)
        assert shown(s).strip() in page.all_text(), (md, html)


def test_terminal_report_escapes_control_characters():
    out = render_terminal(hostile_report())
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out)
    assert "\\x1b[31mred" in out and "line one\\nline two" in out


def test_a_regression_message_gets_one_line_per_site_whatever_the_names():
    """pytest's failure section keeps a regression message's lines (one per
    site), so a site's name must not bring lines of its own."""
    from memprof_ci.decide.verdict import regression_message
    row = {"benchmark": "demo", "check": "alloc", "site": "Evil.f @ e.ml\nFAILED other::check",
           "via": "x\x1b[2J", "baseline_samples": 10, "baseline_bytes": 100, "current_bytes": 300,
           "significant": True, "exact": True, "ratio": 3.0}
    lines = regression_message("demo", "alloc", [row]).split("\n")
    # the head, the site's line, its note (via ...) on an indented line
    assert len(lines) == 3 and "FAILED other::check" in lines[1], lines
    assert lines[2].startswith("    via x") and not any("\x1b" in x for x in lines), lines


def test_a_budget_failure_gets_one_line_per_row_whatever_the_names():
    """The budget check's message is kept line by line too: a function's or
    a point's name from the profile cannot add lines or escapes."""
    from memprof_ci.decide.budgets import budget_failure
    row = {"what": "Evil.f\nFAILED other::check", "kind": "annotation", "calls": 3,
           "max_words": 9, "limit": 2, "outcome": "failed",
           "points": [{"point": "e.ml:1:2-3\x1b[2J", "words": 9}]}
    change = {"setting": "annotation Evil.g\nPASSED", "note": "limit raised", "base": 1,
              "needs_label": True}
    lines = budget_failure("demo", [row], [change]).split("\n")
    assert len(lines) == 4, lines
    assert "FAILED other::check" in lines[1] and "\x1b" not in lines[1]
    assert "PASSED" in lines[3]
