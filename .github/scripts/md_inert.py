#!/usr/bin/env python3
"""md_inert.py: make an untrusted Markdown document inert before it is posted.

Imported by post_report.py; run as a filter (stdin to stdout) by
publish-report.sh for the job summary, so the summary and the comment
are made inert by this one function.

post_report.py posts report.md from an artifact that a pull request's code
produced, with a token that can write comments: whatever that file says, the
comment must not ping anyone, link anywhere, show images or carry HTML.  It
cannot rely on the harness's own escaping (harness/memprof_ci/text/mdsafe.py, which
it must not import), so it works on the document as a whole, without parsing
it, by rules that hold in every Markdown context (text, code span, code
block, table cell, raw HTML block) at once.  Standard library only.

Invariants of inert(text), whatever the input:
  - line endings are "\\n"; no other non-printable character remains except
    tab and U+200D ZERO WIDTH JOINER (ANSI escapes, NUL, bidi overrides...
    are shown escaped, as \\x1b, \\u202e...);
  - every "<" except the exact attribute-less tags <details> <summary>
    <sub> and their closing tags is followed by U+200D, so no other HTML
    tag, comment or <...> autolink can start;
  - an "&" starts a character reference only if it is one that
    mdsafe.text() writes (&lt; &gt; &amp; &quot; and &#N; for
    ` * _ [ ] | ~ \\ $ < > & " '), none of which decodes to a character that
    GitHub links or mentions by; any other "&" before "#" or a letter
    becomes "&amp;";
  - "$" becomes "&#36;" (no GitHub math);
  - U+200D is inserted after "@" before a letter, digit, "_", "." or "-"
    (every character GFM's e-mail autolinks accept after the "@", and
    mentions, teams), after "#" (but not the "&#" of a kept reference)
    and "GH-" before a digit (issue references), after "www" before "."
    and after ":" before "//" (autolinks), after "]" before "(", "[" or
    ":" (links, images, reference definitions), and before the info
    string of a ``` or ~~~ fence opening a line (no mermaid, geojson...);
  - tables, headings, lists, emphasis and code spans keep working; the
    function is idempotent, and on what mdsafe renders it only turns "$"
    into "&#36;" (so a "$" inside a code span shows as "&#36;").
"""
import re
import sys

ZWJ = "\u200d"
_SAFE_REFS = ["lt", "gt", "amp", "quot"] + [f"#{ord(c)}" for c in "`*_[]|~\\$<>&\"'"]
_REF_RE = re.compile("&(?=[#A-Za-z])(?!(?:" + "|".join(_SAFE_REFS) + ");)")
_TAG_RE = re.compile("<(?!" + ZWJ + "|/?(?:details|summary|sub)>)")
_DEFUSE_RE = re.compile(
    r"(?:@(?=[A-Za-z0-9_.\-])|(?<!&)#(?=[0-9])|(?i:GH-)(?=[0-9])|(?i:www)(?=\.)|:(?=//)"
    r"|\](?=[(\[:]))(?!" + ZWJ + ")")
# A fence opens a line, after container markers (quotes, list items, indent);
# a backtick fence's info string has no backtick (else it is a code span).
_FENCE_INFO_RE = re.compile("(?m)^[ \t>*+\\-0-9.)]*?(?:`{3,}(?=[^`\n]*$)|~{3,})[ \t]*"
                            "(?=[^\\s`~" + ZWJ + "])")


def _escape_char(c):
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _printable(text):
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" + ZWJ else _escape_char(c) for c in text)


def inert(text):
    """The Markdown document `text` with every injectable construct defused."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _printable(text)
    text = _REF_RE.sub("&amp;", text)
    text = text.replace("$", "&#36;")
    text = _TAG_RE.sub("<" + ZWJ, text)
    text = _DEFUSE_RE.sub(lambda m: m.group(0) + ZWJ, text)
    return _FENCE_INFO_RE.sub(lambda m: m.group(0) + ZWJ, text)


def clip_lines(text, limit):
    """`text` cut to at most `limit` characters at a line end; (text, was it cut)."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit + 1)
    return text[:cut if cut > 0 else limit], True


if __name__ == "__main__":
    # Bytes in and out, whatever the locale: a report cut inside a UTF-8
    # sequence (publish-report.sh keeps its first 512 KiB) shows U+FFFD there.
    sys.stdout.buffer.write(inert(sys.stdin.buffer.read().decode("utf-8", "replace")).encode())
