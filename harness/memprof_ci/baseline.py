"""Baseline files: one diff-friendly JSON document per benchmark.

A baseline records what a benchmark allocated (per-site samples, live
samples and line detail, summed over seeds), its exact GC totals and its
profiling overhead, plus the settings and provenance needed to decide
whether a later run is comparable.  Invariants: files are written atomically
(temp file + os.replace) under an flock on <baselines>/.lock; keys are
sorted and each site sits on its own line so that `git diff` shows one line
per changed site; load_baseline never returns a baseline of another format
version.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import tempfile

from .errors import InputError
from .profile import VERSION as PROFILE_VERSION, load_json
from .sites import GROUPINGS, Aggregate, Site

FORMAT = "memprof-ci/baseline"
VERSION = 1


def baseline_path(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}.json")


def git_commit(cwd: str | None = None) -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def to_document(agg: Aggregate, overhead: dict | None, patch_id: str | None,
                commit: str | None) -> dict:
    return {
        "format": FORMAT, "version": VERSION,
        "profile_format_version": PROFILE_VERSION,
        "benchmark": agg.name,
        "ocaml_version": agg.ocaml_version,
        "backend": agg.backend,
        "patch_id": patch_id,
        "git_commit": commit,
        "config": {"rate": agg.rate, "seeds": list(agg.seeds), "frames": agg.frames,
                   "grouping": agg.grouping},
        "totals": {"samples": agg.total_samples, "live_samples": agg.total_live},
        "gc": agg.gc,
        "gc_runs": agg.gc_runs,
        "overhead": overhead,
        "sites": {k: s.to_json() for k, s in sorted(agg.sites.items())},
    }


def dumps(doc: dict) -> str:
    """Sorted, indented JSON with one line per site (and per GC run)."""
    def one(v):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)
    parts = []
    for k in sorted(doc):
        v = doc[k]
        if k == "sites" and v:
            inner = ",\n".join(f"    {one(sk)}: {one(sv)}" for sk, sv in sorted(v.items()))
            parts.append(f"  {one(k)}: {{\n{inner}\n  }}")
        elif k == "gc_runs" and v:
            inner = ",\n".join(f"    {one(r)}" for r in v)
            parts.append(f"  {one(k)}: [\n{inner}\n  ]")
        else:
            text = json.dumps(v, sort_keys=True, indent=2, ensure_ascii=False)
            parts.append(f"  {one(k)}: " + text.replace("\n", "\n  "))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_atomic(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(directory: str):
    """Exclusive lock so concurrent update-baselines runs cannot interleave."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def is_baseline_doc(doc) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def load_baseline(path: str) -> Aggregate:
    return parse_baseline(load_json(path, "baseline"), path)


def parse_baseline(doc, path: str) -> Aggregate:
    fix = "regenerate it with `memprof-ci update-baselines`"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{path}: not a memprof-ci baseline (format="
                         f"{doc.get('format') if isinstance(doc, dict) else None!r}); {fix}")
    if doc.get("version") != VERSION:
        raise InputError(f"{path}: baseline format version {doc.get('version')!r} is not "
                         f"supported (expected {VERSION}); {fix}")
    if doc.get("profile_format_version") != PROFILE_VERSION:
        raise InputError(f"{path}: baseline was made from profile format version "
                         f"{doc.get('profile_format_version')!r}, expected "
                         f"{PROFILE_VERSION}; {fix}")
    try:
        cfg = doc["config"]
        rate, seeds, frames, grouping = cfg["rate"], cfg["seeds"], cfg["frames"], cfg["grouping"]
        if not (isinstance(rate, (int, float)) and 0 < rate <= 1):
            raise ValueError("config.rate")
        if not (isinstance(seeds, list) and seeds):
            raise ValueError("config.seeds")
        if grouping not in GROUPINGS:
            raise ValueError("config.grouping")
        sites = {k: Site.from_json(k, v) for k, v in doc["sites"].items()}
        agg = Aggregate(name=str(doc["benchmark"]), rate=float(rate), seeds=list(seeds),
                        frames=int(frames), grouping=grouping,
                        ocaml_version=doc.get("ocaml_version"), backend=doc.get("backend"),
                        gc={k: float(v) for k, v in doc["gc"].items()},
                        gc_runs=list(doc.get("gc_runs") or []),
                        total_samples=int(doc["totals"]["samples"]),
                        total_live=int(doc["totals"]["live_samples"]),
                        sites=sites, sources=[path])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"{path}: malformed baseline ({type(e).__name__}: {e}); {fix}") from None
    if sum(s.samples for s in sites.values()) != agg.total_samples:
        raise InputError(f"{path}: malformed baseline (site samples do not sum to "
                         f"totals.samples); {fix}")
    agg.meta = {"overhead": doc.get("overhead"), "patch_id": doc.get("patch_id"),
                "git_commit": doc.get("git_commit"), "path": path}
    return agg


def check_compatible(base: Aggregate, bench, path: str) -> None:
    """A baseline is only comparable if taken with the same sampling setup."""
    want = {"rate": bench.rate, "seeds": list(bench.seeds), "frames": bench.frames,
            "grouping": bench.grouping}
    have = {"rate": base.rate, "seeds": list(base.seeds), "frames": base.frames,
            "grouping": base.grouping}
    for k in ("rate", "seeds", "frames", "grouping"):
        if want[k] != have[k]:
            raise InputError(
                f"{path}: baseline for {bench.name!r} was made with {k}={have[k]!r} but "
                f"the manifest asks {k}={want[k]!r}; run `memprof-ci update-baselines "
                f"-k {bench.name}` or restore the manifest setting")
