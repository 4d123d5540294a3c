"""`memprof-ci view FILE`: one run (a profile or a CTF trace) as one page
(render/view.py reads it, render/view_html.py draws it)."""

from __future__ import annotations

from ..inputs import atomicio
from ..render.view_html import view_page


def run(args) -> int:
    atomicio.write_page(args.out, view_page(args.file), "-o")
    print(f"memprof-ci: wrote {args.out}")
    return 0
