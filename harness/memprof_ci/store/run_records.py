"""Recorded runs of main: one JSON document per commit, and the series
`memprof-ci history` draws from them (history_html.py renders them).

A run record (`memprof-ci record`) is the file <commit id>.json in a runs
directory (a directory of the workflow's data branch, say):

    {"format": "memprof-ci/run-record", "version": 1,
     "commit": 40 or 64 hex digits, "time": commit time (Unix seconds),
     "depth": the number of commits in its first-parent history,
     "subject": the commit's first line, "patch_id": the runtime's patch id,
     "benchmarks": {name: baseline document (baseline.py's format)},
     "accepted": [names whose change the maintainers accepted here: by the
                  label in the report, or by changing the committed baseline
                  in this commit (`record --accepted-baselines`)],
     "report": the check report of the run (report.json), or null}

Invariants:
1. Records are written atomically (atomicio) under their commit's name, so
   a rerun of a commit replaces its record and a planted symlink is
   replaced, never followed.
2. read_runs (read_record for one file) loads every *.json of the
   directory or fails with one line
   naming the file: a record whose name is not its commit, whose format is
   another, or whose baselines do not load (baseline.parse_baseline) is an
   InputError; symlinks and non-files are refused; the document is decoded
   as every memprof-ci document is (validate.loads: finite numbers, UTF-8,
   bounded nesting), its version is the int 1 and its time a moment the
   page can print (before the year 10000).
3. Runs are ordered by depth (main's first-parent order, whatever the
   clocks say), then commit time and id: the same directory always gives
   the same page.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from scipy.stats import chi2

from ..inputs import atomicio
from . import baseline as bl
from ..inputs import validate as V
from ..errors import ConfigError, InputError
from ..text.mdsafe import printable

FORMAT = "memprof-ci/run-record"
VERSION = 1
COMMIT_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
MAX_RECORD_BYTES = 256 * 1024 * 1024
# 10000-01-01T00:00:00Z: the first commit time a calendar date cannot show.
MAX_TIME = 253402300800
LEVEL = 0.95


@dataclass
class Run:
    commit: str
    time: int
    depth: int
    subject: str
    patch_id: str | None
    benchmarks: dict      # name -> sites.Aggregate
    accepted: list


def accepted_names(report: dict | None) -> list:
    """Benchmarks of a check report with a check accepted by the label."""
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), dict):
        return []
    return sorted(n for n, b in report["benchmarks"].items() if isinstance(b, dict) and any(
        isinstance(c, dict) and c.get("outcome") == "accepted"
        for c in (b.get("checks") or {}).values()))


def make_record(commit: str, time: int, subject: str, depth: int, patch_id: str | None,
                baselines_dir: str, report: dict | None, changed: list = ()) -> dict:
    """The record of one run: every baseline of `baselines_dir`, checked.
    Accepted: the benchmarks the report's label accepted, and `changed`,
    those whose committed baseline the commit changed."""
    if not COMMIT_RE.fullmatch(commit or ""):
        raise ConfigError(f"commit {printable(commit)!r}: not a full commit id")
    if not os.path.isdir(baselines_dir):
        raise ConfigError(f"--baselines {baselines_dir}: not a directory")
    docs = {}
    for name in sorted(os.listdir(baselines_dir)):
        path = bl.baseline_path(baselines_dir, name[:-5])
        if not name.endswith(".json") or name.startswith("."):
            continue
        bl.load_baseline(path, name[:-5])
        docs[name[:-5]] = V.load_json(path, "baseline", regular=True)
    if not docs:
        raise ConfigError(f"--baselines {baselines_dir}: no baselines to record")
    # The runs' own id, when they agree, over the recording machine's runtime.
    ids = {d.get("patch_id") for d in docs.values()}
    if len(ids) == 1 and None not in ids:
        patch_id = ids.pop()
    return {"format": FORMAT, "version": VERSION, "commit": commit, "time": int(time),
            "depth": int(depth), "subject": subject, "patch_id": patch_id, "benchmarks": docs,
            "accepted": sorted(set(accepted_names(report)) | set(changed)),
            "report": report}


def write_record(runs_dir: str, record: dict) -> str:
    if os.path.lexists(runs_dir) and not os.path.isdir(runs_dir):
        raise ConfigError(f"--runs {runs_dir}: exists and is not a directory")
    os.makedirs(runs_dir, exist_ok=True)
    path = os.path.join(runs_dir, f"{record['commit']}.json")
    atomicio.write_atomic(path, json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
    return path


def _parse(doc, path: str, stem: str) -> Run:
    def bad(why):
        return InputError(f"{path}: {why}")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f"not a run record (format {FORMAT!r} expected)")
    if not V.is_version(doc.get("version"), VERSION):
        raise bad(f"run record version {printable(str(doc.get('version')))}, expected {VERSION}")
    if doc.get("commit") != stem or not COMMIT_RE.fullmatch(stem):
        raise bad("the file is not named after the record's commit id")
    t, depth = doc.get("time"), doc.get("depth")
    if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < MAX_TIME:
        raise bad(f"`time` must be the commit time in Unix seconds, in [0, {MAX_TIME})")
    if not isinstance(depth, int) or isinstance(depth, bool) or not 0 < depth < 2 ** 40:
        raise bad("`depth` must be the commit's count of first-parent commits")
    subject, pid = doc.get("subject"), doc.get("patch_id")
    accepted = doc.get("accepted")
    if not isinstance(subject, str) or not (pid is None or isinstance(pid, str)):
        raise bad("`subject` must be a string and `patch_id` a string or null")
    if not isinstance(accepted, list) or not all(isinstance(a, str) for a in accepted):
        raise bad("`accepted` must be a list of benchmark names")
    benches = doc.get("benchmarks")
    if not isinstance(benches, dict):
        raise bad("`benchmarks` must be a table of baseline documents")
    aggs = {}
    for name, b in benches.items():
        agg = bl.parse_baseline(b, f"{path}: benchmark {printable(name)}")
        if agg.name != name:
            raise bad(f"benchmark {printable(name)!r} holds the baseline of {agg.name!r}")
        aggs[name] = agg
    return Run(stem, t, depth, subject, pid, aggs, sorted(accepted))


def read_record(path: str, commit: str) -> tuple:
    """(Run, its raw document) of the record file `path` of `commit`,
    validated as read_runs validates every record (invariant 2)."""
    if os.path.islink(path) or not os.path.isfile(path):
        raise InputError(f"{path}: not a regular file")
    if os.path.getsize(path) > MAX_RECORD_BYTES:
        raise InputError(f"{path}: larger than {MAX_RECORD_BYTES} bytes")
    doc = V.loads(V.read_bytes(path, "run record"), path, "run record")
    return _parse(doc, path, commit), doc


def read_runs(runs_dir: str) -> list:
    """Every record of the directory, oldest first (invariants 2, 3)."""
    if not os.path.isdir(runs_dir):
        raise ConfigError(f"--runs {runs_dir}: not a directory")
    runs = []
    for name in sorted(os.listdir(runs_dir)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        runs.append(read_record(os.path.join(runs_dir, name), name[:-5])[0])
    if not runs:
        raise ConfigError(f"--runs {runs_dir}: no run records (<commit>.json)")
    runs.sort(key=lambda r: (r.depth, r.time, r.commit))
    return runs


def interval(agg, samples: int) -> tuple:
    """(estimate, low, high) bytes of `samples` sampled at the benchmark's
    rate: the exact Poisson interval at LEVEL; exact counts (rate 1) have
    low == high == the estimate."""
    est = agg.bytes_of(samples)
    if agg.rate >= 1.0:
        return est, est, est
    a = 1 - LEVEL
    lo = 0.0 if samples == 0 else chi2.ppf(a / 2, 2 * samples) / 2
    hi = chi2.ppf(1 - a / 2, 2 * samples + 2) / 2
    return est, agg.bytes_of(lo), agg.bytes_of(hi)


def series(runs: list, top: int) -> dict:
    """{benchmark: {"totals": [cell per run], "sites": {site: [cell per run]},
    "minor_words": [value or None per run]}}; a cell is (est, lo, hi) or
    None where the run lacks the benchmark or the site.  The sites are the
    `top` heaviest of the benchmark's latest run, heaviest first."""
    out = {}
    names = sorted({n for r in runs for n in r.benchmarks})
    for name in names:
        present = [r.benchmarks.get(name) for r in runs]
        latest = next(a for a in reversed(present) if a is not None)
        heavy = sorted(latest.sites.values(), key=lambda s: (-s.samples, s.key))[:top]
        out[name] = {
            "totals": [None if a is None else interval(a, a.total_samples) for a in present],
            "minor_words": [None if a is None else (a.gc or {}).get("minor_words")
                            for a in present],
            "sites": {s.key: [None if a is None or s.key not in a.sites
                              else interval(a, a.sites[s.key].samples) for a in present]
                      for s in heavy},
        }
    return out
