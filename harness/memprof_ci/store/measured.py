"""What a check measured, in baseline format: `check --measured-dir DIR`.

The judge of main's pushes writes each benchmark's measurement as
DIR/<name>.json, the document `update-baselines` would have written for it,
so that `memprof-ci record` can store main's run where later judges read it
as their reference.

Invariants:
1. One document per benchmark that has a current measurement; nothing is
   written for a benchmark that failed to run.
2. A document carries the plan and the GC schedule spread of the trusted
   baseline it was judged against (properties of the benchmark that
   update-baselines measured, so a later judge runs and compares it the
   same way), the run's
   overhead record, and the run's runtime patch id when the run has exactly
   one; its git_commit is null (the record names the commit).
3. Files are written atomically (atomicio): a symlink planted at a target is
   replaced, never followed.
4. `runtime_notes` says which runtime measured a check where it is not the
   one its baselines were recorded with: another patch id, none, or another
   OCaml release (report["patch_notes"]).
"""

from __future__ import annotations

import os

from ..inputs import atomicio
from . import baseline as bl
from ..errors import InfraError


def single_patch_id(patch_ids) -> str | None:
    """The runtime patch id the run was measured with, if it has exactly one."""
    ids = {p for p in patch_ids if p}
    return ids.pop() if len(ids) == 1 else None


def write_measured(out_dir: str, sides: dict, run_entries, patch_ids) -> list:
    """sides: {name: (trusted Aggregate or None, current Aggregate or None)};
    run_entries: {name: run_dirs.RunEntry} of a --from-run check, or None.
    Returns the paths written, sorted."""
    patch = single_patch_id(patch_ids)
    written = []
    try:
        os.makedirs(out_dir, exist_ok=True)
        for name, (trusted, cur) in sorted(sides.items()):
            if cur is None:
                continue
            entry = (run_entries or {}).get(name)
            meta = trusted.meta if trusted is not None else {}
            doc = bl.to_document(cur, entry.overhead if entry is not None else None, patch,
                                 None, plan=meta.get("plan"), schedule=meta.get("schedule"))
            path = bl.baseline_path(out_dir, name)
            atomicio.write_atomic(path, bl.dumps(doc))
            written.append(path)
    except OSError as e:
        raise InfraError(f"--measured-dir: cannot write {e.filename or out_dir}: "
                         f"{e.strerror or e}") from None
    return written


def runtime_notes(report: dict, running: list) -> list:
    """Baselines recorded with another runtime patch than the one running,
    or with none (then no change of runtime can be noticed), and baselines
    recorded on another OCaml release than the run's (both are named)."""
    running = sorted({p for p in running if p})
    by_patch: dict = {}
    by_release: dict = {}
    for name, b in sorted(report["benchmarks"].items()):
        if not b.get("baseline"):
            continue
        rec = b["baseline"].get("patch_id")
        if not rec or (running and rec not in running):
            by_patch.setdefault(rec or "", []).append(name)
        then = b["baseline"].get("ocaml_version")
        now = (b.get("current") or {}).get("ocaml_version")
        if then and now and then != now:
            by_release.setdefault((then, now), []).append(name)
    measured = ", ".join(running) if running else "an unknown runtime patch"

    def names(ns):
        return ", ".join(ns) if len(ns) <= 3 else f"{len(ns)} baselines"
    return [f"{names(ns)}: "
            + (f"recorded with runtime patch {rec}" if rec else
               "recorded without a runtime patch id (so a change of runtime goes unseen; "
               "re-record them with `memprof-ci update-baselines`)")
            + f", measured with {measured}"
            for rec, ns in sorted(by_patch.items())] + \
           [f"{names(ns)}: baseline recorded on OCaml {then}, this run on OCaml {now}: "
            "allocation may differ between releases"
            for (then, now), ns in sorted(by_release.items())]
