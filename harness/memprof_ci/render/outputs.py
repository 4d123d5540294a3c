"""A command's outputs: the report files it writes and the lines it ends with.

Every command that reports (check, compare, merge) writes report.md,
report.json and report.html through write_reports, after refusing output
paths that cannot be written (check_output_paths) before anything runs.
Invariants: a report file is replaced atomically or not at all, and a
failure to write one is an InfraError (exit 2); an error line names its
input with control characters escaped (print_error), on stderr.
"""

from __future__ import annotations

import os
import sys

from ..decide.report_doc import to_json
from ..errors import ConfigError, InfraError
from ..inputs import atomicio
from ..text.mdsafe import printable
from .report import render_markdown
from .report_html import render_html
from .stackgraph import stacks_entry


def print_error(msg: str) -> None:
    """One line on stderr; control characters from inputs are escaped."""
    print(f"memprof-ci: error: {printable(str(msg))}", file=sys.stderr)


def finish(rep: dict) -> int:
    """The decided report's errors on stderr; its exit code."""
    for e in rep["verdict"]["errors"]:
        print_error(e)
    return rep["verdict"]["exit_code"]


def check_output_paths(report_dir, results_json, out=None) -> None:
    """Refuse output paths that cannot be written before anything runs."""
    for flag, path in (("--report-dir", report_dir), ("--out", out)):
        if path and os.path.lexists(path) and not os.path.isdir(path):
            raise ConfigError(f"{flag} {path}: exists and is not a directory")
    if results_json and os.path.isdir(results_json):
        raise ConfigError(f"--results-json {results_json}: is a directory; name a file")


def attach_stacks(rep: dict, sides: dict) -> None:
    """{name: (baseline Aggregate or None, current Aggregate or None)} ->
    each compared benchmark's "stacks" entry (what report.html draws)."""
    for name, (base, cur) in sides.items():
        b = rep["benchmarks"].get(name)
        if b is not None and (base is not None or cur is not None):
            b["stacks"] = stacks_entry(base, cur)


def write_reports(rep: dict, report_dir: str | None, results_json: str | None) -> None:
    """report.md, report.json and report.html into report_dir, and the
    JSON again at results_json, each when given."""
    try:
        if report_dir:
            os.makedirs(report_dir, exist_ok=True)
            atomicio.write_atomic(os.path.join(report_dir, "report.md"), render_markdown(rep))
            atomicio.write_atomic(os.path.join(report_dir, "report.json"), to_json(rep))
            atomicio.write_atomic(os.path.join(report_dir, "report.html"), render_html(rep))
        if results_json:
            atomicio.write_atomic(results_json, to_json(rep))
    except OSError as e:
        raise InfraError(f"cannot write the report: {e.filename or ''}: "
                         f"{e.strerror or e}") from None
