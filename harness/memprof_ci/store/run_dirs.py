"""Run directories: what `memprof-ci profile` measured, for a later judge.

On a pull request the code under test builds and profiles the benchmarks
in one job, and a separate job, whose files the pull request cannot
change, judges the result (`check --from-run DIR`).  A run directory is the
data passed between them:

    DIR/run.json                  what ran: per benchmark its settings,
                                  profile files, overhead and error
    DIR/profiles/<bench>.<seed>.json

Invariants:
1. write() is called once, after every benchmark ran, and replaces run.json
   atomically; a directory without run.json is not a run.
2. read() trusts nothing: run.json and every profile must be regular files
   (no symlinks) inside DIR, whose profiles/ is a directory of its own (not a
   symlink), names are benchmark names, numbers finite, and
   every error is an InputError naming DIR and the key.  The profiles
   themselves are validated when they are aggregated (grouping.py), and the
   judge compares their recorded rate, seed and frames with the settings it
   judges with, so a run made with other settings is an error, not a pass.
3. What code under test reports about itself can always be false; a run
   directory moves the decision (settings, baselines, statistics) out of the
   pull request's reach, not the measurement.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..inputs import validate as V
from ..inputs.atomicio import write_atomic
from ..errors import InputError
from ..measure.overhead import parse_record
from ..inputs.profile import load_json
from ..decide.report_doc import to_json

FORMAT = "memprof-ci/run"
VERSION = 1
RUN_FILE = "run.json"
PROFILES = "profiles"
_BENCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass
class RunEntry:
    name: str
    directory: str
    profiles: list = field(default_factory=list)   # [(seed, path)]
    overhead: dict | None = None
    error: str | None = None


@dataclass
class Run:
    directory: str
    patch_id: str | None
    entries: dict


def profiles_dir(run_dir: str) -> str:
    return os.path.join(run_dir, PROFILES)


def write(run_dir: str, patch_id: str | None, results: dict) -> str:
    """results: {bench: {"profiles": [abs paths], "overhead": dict|None,
    "error": str|None}}.  Returns the path of run.json."""
    benches = {}
    for name, r in sorted(results.items()):
        rel = [os.path.relpath(p, run_dir) for p in r.get("profiles") or []]
        benches[name] = {"profiles": rel, "overhead": r.get("overhead"),
                         "error": r.get("error")}
    doc = {"format": FORMAT, "version": VERSION, "patch_id": patch_id, "benchmarks": benches}
    path = os.path.join(run_dir, RUN_FILE)
    # to_json renders strict JSON (non-finite floats as null) with one line
    # per benchmark; run.json has the same top-level shape as a report.
    write_atomic(path, to_json(doc))
    return path


def read(run_dir: str) -> Run:
    """Load and validate a run directory (invariant 2)."""
    if not os.path.isdir(run_dir) or os.path.islink(run_dir):
        raise InputError(f"{run_dir}: not a run directory (made by `memprof-ci profile "
                         f"--out DIR`)")
    path = os.path.join(run_dir, RUN_FILE)
    doc = load_json(path, "run description", regular=True)
    try:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"not a memprof-ci run (format={FORMAT!r} expected)")
        if not V.is_version(doc.get("version"), VERSION):
            raise InputError(f"run format version {doc.get('version')!r} is not supported "
                             f"(expected {VERSION})")
        patch_id = V.text(doc.get("patch_id"), "patch_id", optional=True, limit=200)
        benches = doc.get("benchmarks")
        if not isinstance(benches, dict):
            raise InputError("benchmarks must be an object")
        if any(b.get("profiles") for b in benches.values() if isinstance(b, dict)):
            _own_directory(profiles_dir(run_dir))
        entries = {}
        for name, b in benches.items():
            if not _BENCH_NAME.match(name) or len(name) > 200:
                raise InputError(f"benchmark name {name[:60]!r} is not a benchmark name")
            where = f"benchmarks.{name}"
            if not isinstance(b, dict):
                raise InputError(f"{where} must be an object")
            err = V.text(b.get("error"), f"{where}.error", optional=True, limit=20000)
            profs = b.get("profiles")
            if not isinstance(profs, list) or len(profs) > 1000:
                raise InputError(f"{where}.profiles must be a list")
            paths = []
            for i, rel in enumerate(profs):
                rel = V.text(rel, f"{where}.profiles[{i}]", limit=300)
                head, base = os.path.split(rel)
                m = re.fullmatch(re.escape(name) + r"\.([0-9]{1,18})\.json", base)
                if head != PROFILES or not m:
                    raise InputError(f"{where}.profiles[{i}] {rel[:80]!r} is not "
                                     f"{PROFILES}/{name}.<seed>.json")
                p = os.path.join(run_dir, PROFILES, base)
                V.regular_file(p, "profile")
                paths.append((int(m.group(1)), p))
            entries[name] = RunEntry(name=name, directory=run_dir, profiles=paths,
                                     overhead=parse_record(b.get("overhead"), f"{where}.overhead"),
                                     error=err)
    except InputError as e:
        raise InputError(f"{path}: malformed run description: {e}") from None
    return Run(directory=run_dir, patch_id=patch_id, entries=entries)


def _own_directory(path: str) -> None:
    """The run directory's profiles/ is a real directory, not a link that
    would make its profiles another directory's files."""
    if os.path.islink(path):
        raise InputError(f"{PROFILES}/ is a symbolic link; a run directory holds its "
                         f"profiles itself")
    if not os.path.isdir(path):
        raise InputError(f"{PROFILES}/ is not a directory")


def read_all(run_dirs: list) -> tuple[dict, list]:
    """Several run directories (one per profiling shard) -> ({bench: entry},
    [patch ids]).  A benchmark in two of them is an error."""
    entries, patch_ids = {}, []
    for d in run_dirs:
        run = read(d)
        patch_ids.append(run.patch_id)
        for name, e in run.entries.items():
            if name in entries:
                raise InputError(f"{d}: benchmark {name!r} is also in "
                                 f"{entries[name].directory}; pass each run directory once")
            entries[name] = e
    return entries, patch_ids
