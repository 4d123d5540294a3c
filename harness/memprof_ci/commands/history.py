"""`memprof-ci history`: every run record of `--runs` as one page
(render/history_html.py)."""

from __future__ import annotations

from ..errors import ConfigError
from ..inputs import atomicio
from ..render.history_html import render_history
from ..render.outputs import check_output_paths
from ..store.run_records import read_runs


def run(args) -> int:
    if not 1 <= args.top <= 100:
        raise ConfigError(f"--top must be in [1, 100], got {args.top}")
    page = render_history(read_runs(args.runs), args.top, args.commit_url)
    check_output_paths(None, args.out)
    atomicio.write_atomic(args.out, page)
    print(f"memprof-ci: wrote {args.out}")
    return 0
