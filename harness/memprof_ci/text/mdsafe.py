"""Making external strings inert in Markdown (report.md, job summary, PR comment).

Site, file and benchmark names, error messages and notes come from programs,
profiles, stderr, manifests and artifacts: anything may be in them.  The
renderers put every such string through one of these functions:

  code(s)        an inline code span, also safe inside a GFM table cell
  text(s)        plain text, safe in Markdown, in table cells and inside the
                 raw HTML of <details><summary>
  code_block(ls) the lines of a fenced code block, fences included
  printable(s)   a terminal-safe string (no control characters)

Invariants of what they return, whatever the input:
  - no control or other non-printable character (str.isprintable() false,
    which includes newlines, ANSI escapes, bidi overrides and lone
    surrogates): each is shown escaped, as \\n, \\x1b, \\u202e...;
  - at most `limit` characters of the input are kept, then an ellipsis;
  - code(): the content is fenced by a backtick run longer than any run
    inside it, padded with the one space CommonMark strips, so nothing can
    end the span early (an empty string shows as one space); with cell=True a `|` is escaped as `\\|`, which
    GFM turns back into `|` inside a table cell (even after a backslash);
  - text(): every character that could start Markdown or HTML
    (& < > ` * _ [ ] | ~ \\ $) is a numeric or named character reference,
    which CommonMark and HTML both render as that literal character; a
    leading block marker (# - + = > or a digit) is preceded by U+200D;
  - both, as defence in depth should a span ever be cut: GitHub's
    post-processing is defused with U+200D ZERO WIDTH JOINER (invisible):
    after "@" before a letter, digit, "_", "." or "-" (mentions, teams, and
    every character GFM's e-mail autolinks accept after the "@"),
    after "#" and "GH-" before a digit (issue references, also
    owner/repo#1), after "www" before "." and after ":" before "//"
    (autolinks), after "<" (tags, autolinks, comments), after "&" before
    "#" or a letter (character references) and after "]" before "(", "["
    or ":" (links, images, reference definitions); in code_block(), before
    the info string of a line that would open a ``` or ~~~ fence.
"""

from __future__ import annotations

import re

ZWJ = "\u200d"
NAME_LIMIT = 200      # site, file, benchmark names
MESSAGE_LIMIT = 2000  # error messages and notes (a stderr tail is 600)

_ENTITIES = {c: f"&#{ord(c)};" for c in "`*_[]|~\\$"}
_ENTITIES.update({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ENTITY_RE = re.compile("[" + re.escape("".join(_ENTITIES)) + "]")
_DEFUSE_RE = re.compile(
    r"(?:@(?=[A-Za-z0-9_.\-])|#(?=[0-9])|(?i:GH-)(?=[0-9])|(?i:www)(?=\.)|:(?=//)"
    r"|<|&(?=[#A-Za-z])|\](?=[(\[:]))(?!" + ZWJ + ")")
_BLOCK_START_RE = re.compile(r"[#\-+=>0-9]")
_BACKTICKS_RE = re.compile(r"`+")
_FENCE_INFO_RE = re.compile(r"^\s*(?:`{3,}(?=[^`]*$)|~{3,})[ \t]*(?=[^\s`~" + ZWJ + "])")


def printable(s) -> str:
    """`s` with every non-printable character escaped (\\n, \\x1b, \\u202e...)."""
    s = str(s)
    if s.isprintable():
        return s
    out = []
    for c in s:
        if c.isprintable():
            out.append(c)
        elif c in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[c])
        else:
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000
                       else f"\\U{n:08x}")
    return "".join(out)


def _clip(s, limit: int) -> str:
    s = str(s)
    return s if len(s) <= limit else s[:limit] + "…"


def shown(s, limit: int = NAME_LIMIT) -> str:
    """`s` (None: empty) clipped to `limit` characters, non-printables
    shown escaped: how an untrusted name reads in any rendering."""
    return printable(_clip("" if s is None else s, limit))


def defuse(s: str) -> str:
    """Insert U+200D where GitHub would link, mention or start a tag."""
    return _DEFUSE_RE.sub(lambda m: m.group(0) + ZWJ, s)


def _longest_backtick_run(s: str) -> int:
    return max((len(m) for m in _BACKTICKS_RE.findall(s)), default=0)


def code(s, *, limit: int = NAME_LIMIT, cell: bool = True) -> str:
    """An inert inline code span showing `s` (cell=True: safe in a table cell)."""
    body = defuse(printable(_clip(s, limit)))
    if cell:
        body = body.replace("|", "\\|")
    if not body.strip(" "):
        return f"`{body or ' '}`"  # all spaces: CommonMark strips nothing
    fence = "`" * (_longest_backtick_run(body) + 1)
    return f"{fence} {body} {fence}"


def text(s, *, limit: int = NAME_LIMIT) -> str:
    """`s` as inert plain text (Markdown paragraphs, list items, cells, raw HTML)."""
    body = printable(_clip(s, limit))
    lead = ZWJ if _BLOCK_START_RE.match(body) else ""
    body = defuse(body)
    return lead + _ENTITY_RE.sub(lambda m: _ENTITIES[m.group(0)], body)


def code_block(lines, *, limit: int = MESSAGE_LIMIT) -> list:
    """A fenced code block (list of lines) showing each of `lines` verbatim."""
    body = [defuse(printable(_clip(x, limit))) for x in lines]
    body = [_FENCE_INFO_RE.sub(lambda m: m.group(0) + ZWJ, x) for x in body]
    fence = "`" * max(3, max((_longest_backtick_run(x) for x in body), default=0) + 1)
    return [fence] + body + [fence]
