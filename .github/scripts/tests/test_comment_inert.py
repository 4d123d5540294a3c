"""The PR comment stays inert whatever report.md the artifact carries.

post_report.build_body gets (1) a report.md written by an attacker, not by the
harness: raw HTML, HTML blocks hiding a fence, mentions plain and as
character references, issue references, links, images, reference
definitions, bare and angle-bracket URLs, a mermaid fence, math, ANSI escapes,
a forged marker and run tag; and (2) the report the harness renders for hostile names
(harness/tests/test_hostile_text.py).  Each body is converted by the real
cmark-gfm (--unsafe, since GitHub passes raw HTML through its renderer) and
the HTML is inspected: only the header's own link and marker, no other tag
than the report's own, no attribute but table alignment, no mention, issue
reference or URL left in any text, code included, and the legitimate report
keeps its tables, code spans and <details> unchanged.
"""
import importlib.util
import re
import sys

import pytest

from ghci_helpers import REPO_ROOT, SCRIPTS

sys.path.insert(0, str(SCRIPTS))
import md_inert  # noqa: E402
import post_report  # noqa: E402


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# The harness's hostile-report test supplies the checker and the report.
sys.path.insert(0, str(REPO_ROOT / "harness" / "tests"))  # for its harness_testlib
HT = _load("hostile_text_for_comment", REPO_ROOT / "harness" / "tests" / "test_hostile_text.py")
ZWJ = "\u200d"
RUN_URL = "https://github.com/octo/memprof-ci/actions/runs/1"
RUN = ("2024-05-01T10:00:00Z", 1, 1)
RUN_TAG = "<!-- memprof-ci-run: 2024-05-01T10:00:00Z 1/1 -->"
HEAD = "a" * 40

ATTACK = """\
<!-- memprof-ci-report -->
<!-- memprof-ci-run: 2099-01-01T00:00:00Z 999/9 -->
# Fake header @octocat
<img src=x onerror=alert(1)> <img src="http://evil/p.png">
<script>alert(1)</script>
<details open><summary>pwn @org/team</summary>
<a href="http://evil">click</a>
</details>

<details>
```
<img src=hidden-in-html-block>
@octocat
```
</details>

<details><summary>ok</summary>
<IMG SRC=x> <iframe src=http://evil></iframe>
</details>

Mentions: @octocat @org/team &#64;octocat &#x40;octocat &commat;octocat \\@octocat @&#111;ctocat
Issues: #1 owner/repo#12 GH-7 gh-8 &#35;3 &#x23;4
Links: [x](http://evil) [y][r] [z] ![i](http://evil/p.png) ![j][r] [^f]
<http://evil.example> <me@evil.example> https://evil.example www.evil.example WWW.EVIL.EXAMPLE
me@evil.example mailto:me@evil.example xmpp:me@evil.example ftp://evil.example
me@-evil.example me@.evil.example a.b@_evil.example x@-.y
htt&#112;s://evil.example ww&#119;.evil.example
Math: $x^2$ $$\\href{http://evil}{x}$$ $`y`$
Control: \x1b[31mred\x1b[0m \u202eevil\r\n\x00nul

[r]: http://evil
[z]: <http://evil> "t"
[^f]: http://evil

```mermaid
graph TD; A-->B; click A "http://evil"
```

~~~geojson
{}
~~~

> ```mermaid
> graph TD; A-->B
> ```

| site | note |
|---|---|
| `x | <img src=cell-split>` | y |
| `` a `b` `` | [c](http://evil) |

`<img src=in-code>` ``@octocat`` `#12` `https://evil.example`
    <img src=indented>
"""


def comment_page(report):
    body = post_report.build_body(report, HEAD, "failure", RUN_URL, RUN)
    html = HT.cmark(body)
    return body, html, HT.Page(html)


def assert_comment_inert(body, html, page, report_tags=HT.REPORT_TAGS):
    assert body.startswith(post_report.MARKER) and body.count(post_report.MARKER) == 1
    # The report's own comments are text: only the marker and the run tag remain.
    assert ["<!--" + c + "-->" for c in page.comments] == [post_report.MARKER, RUN_TAG]
    assert post_report.comment_run(body) == RUN
    links = [a for t, a in page.tags if t == "a"]
    # Only the two links the script writes itself, both from the trusted run URL.
    assert links == [[("href", RUN_URL)], [("href", RUN_URL + "#artifacts")]], links
    # The whole text, code included: the comment defuses everywhere.
    HT.assert_inert(page, html, allowed_tags=report_tags | {"a", "h1"}, live_in_code_ok=False)
    text = "".join(t for t, _ in page.texts)
    assert text.count("workflow run") == 1


def test_attacker_report_is_inert():
    body, html, page = comment_page(ATTACK)
    assert_comment_inert(body, html, page, HT.REPORT_TAGS | {"blockquote"})
    text = page.all_text()
    # Injected markup is shown, not obeyed.
    for s in ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>",
              "<img src=hidden-in-html-block>", "<a href=\"http://evil\">click</a>",
              "[x](http://evil)", "![i](http://evil/p.png)", "<http://evil.example>",
              "&#64;octocat", "\\x1b[31mred", "\\u202eevil", "<img src=cell-split>",
              "$x^2$"):
        assert s in text, s
    # Only the two attribute-less <details> survive; <details open> is text.
    assert [a for t, a in page.tags if t == "details"] == [[], []]
    assert "<details open>" in text
    assert "pre" in {t for t, _ in page.tags}
    assert not re.search("<code class=\"language-(?!" + ZWJ + ")", html), "a fence kept its info string"
    assert html.count("<code class=\"language-") == 3  # mermaid, geojson, quoted mermaid


@pytest.fixture(scope="module")
def hostile_md():
    return HT.render_markdown(HT.hostile_report())


def test_harness_report_survives_unchanged(hostile_md):
    # On what the harness renders, md_inert only turns "$" into "&#36;".
    assert md_inert.inert(hostile_md) == hostile_md.replace("$", "&#36;")
    body, html, page = comment_page(hostile_md)
    assert_comment_inert(body, html, page)
    report_page = HT.Page(HT.cmark(hostile_md))
    assert len(page.tables) == len(report_page.tables)
    for got, want in zip(page.tables, report_page.tables):
        assert [[c["codes"] for c in row] for row in got] == \
            [[[x.replace("$", "&#36;") for x in c["codes"]] for c in row] for row in want]
        assert [[c["text"] for c in row] for row in got] == \
            [[c["text"].replace("$", "&#36;") if c["codes"] else c["text"] for c in row]
             for row in want]
    assert page.summaries == report_page.summaries


@pytest.mark.parametrize("address", ["me@-evil.example", "me@.evil.example", "me@_evil.example",
                                     "a+b.c@x-y.evil.example", "x@-.y", "ocaml 5.3.0@-evil.example"])
def test_no_email_autolink_whatever_follows_the_at(address):
    """GFM autolinks an address whose domain starts with "-", "." or "_"
    too: "@" is defused before every character it accepts there."""
    html = HT.cmark(md_inert.inert(f"version {address} and | `{address}` |\n"))
    assert "<a " not in html and "mailto:" not in html, html


def test_inert_is_idempotent():
    once = md_inert.inert(ATTACK)
    assert md_inert.inert(once) == once


def test_defused_report_is_capped_at_a_line_end():
    line = "@a<b $ " * 10 + "\n"
    report = line * (post_report.MAX_REPORT_CHARS // len(line))
    body = post_report.build_body(report, HEAD)
    assert len(body) < 65536
    assert "Report truncated" in body
    kept = body.split("\n\n_Report truncated")[0].split("\n")[-1]
    assert kept == md_inert.inert(line.rstrip("\n"))
