"""The terminal's width, and text wrapped to it on indented lines.

Job: one width for every line the harness prints to a terminal (the
report's tables, pytest's failure section), and the indented lines that
carry what a row or a message line says beyond its short cells.
Invariants: every line detail_lines returns is at most `width`
characters, starts with DETAIL_INDENT and is printable (mdsafe.printable:
external names never move the terminal); nothing of the text is dropped.
"""

from __future__ import annotations

import textwrap

from . import mdsafe

WIDTH = 120         # the widest line of the default terminal output
DETAIL_INDENT = "    "


def detail_lines(text: str, width: int = WIDTH) -> list:
    """`text` wrapped under a row, indented, each line at most `width`."""
    if not text:
        return []
    return textwrap.wrap(mdsafe.printable(text), width=width, initial_indent=DETAIL_INDENT,
                         subsequent_indent=DETAIL_INDENT, break_long_words=True,
                         break_on_hyphens=False)
