"""A check, update-baselines or profile session: read its setup from the
command line, open its Context, and run its items under pytest.

The three commands share this path (commands/check.py,
commands/update_baselines.py, commands/profile.py): read_setup loads the
manifest and everything the run needs from the files the command line
names, raising ConfigError or InputError before anything runs;
open_session makes the Context in a scratch directory removed afterwards;
run_items calls pytest.main with the memprof-ci plugin (plugin.py).
Invariant: pytest's own exit code only says whether items ran; the verdict
is read from the report (plugin.finish_report), never from it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from typing import NamedTuple

import pytest

from ..decide import power
from ..errors import ConfigError, MemprofError
from ..inputs import atomicio
from ..inputs.manifest import judged_with, load_manifest, selected_benchmarks
from ..render.outputs import check_output_paths
from ..store import baseline as bl
from ..store import run_dirs
from .context import Context
from .plugin import MemprofPlugin


class RunSetup(NamedTuple):
    """What a session runs, read from the command line and its files."""
    manifest: object        # inputs.manifest.Manifest, judged with --base-manifest's settings
    benches: list           # the benchmarks of this shard
    missing: dict           # trusted baselines the manifest lacks: name -> "removed" or "missing"
    shard: tuple | None     # (k, n) of --shard
    changes: list           # the verdict settings the change asked for (settings_changes)
    run_entries: dict | None  # a --from-run run directory's entries
    patch_ids: list         # the runtime patch ids of those run directories


def trusted_names(baselines_dir: str) -> list:
    """Benchmark names of the *.json files in a baselines directory."""
    if not os.path.isdir(baselines_dir):
        return []
    return sorted(n[:-5] for n in os.listdir(baselines_dir)
                  if n.endswith(".json") and not n.startswith("."))


def read_setup(args, mode: str) -> RunSetup:
    """Manifest, selection and everything the run needs from the command
    line and the files it names; raises ConfigError/InputError early."""
    man = load_manifest(args.manifest)
    changes = []
    if args.base_manifest:
        man, changes = judged_with(man, load_manifest(args.base_manifest))
    check = mode == "check"
    baselines = None if mode == "profile" else args.baselines
    proposed = args.proposed_baselines if check else None
    if proposed and not os.path.isdir(proposed):
        raise ConfigError(f"--proposed-baselines {proposed}: not a directory")
    if check and args.accept_changes and not proposed:
        raise ConfigError("--accept-changes needs --proposed-baselines: only a change whose "
                          "proposed baselines match the measured code can be accepted")
    if baselines and os.path.lexists(baselines) and not os.path.isdir(baselines):
        raise ConfigError(f"--baselines {baselines}: not a directory")
    check_output_paths(args.report_dir if check else None,
                       args.results_json if check else None,
                       args.out if mode == "profile" else None)
    missing = {}
    if check:
        in_manifest = set(man.names())
        for name in trusted_names(baselines):
            if name in in_manifest:
                continue
            gone = proposed and not os.path.lexists(bl.baseline_path(proposed, name))
            missing[name] = "removed" if gone else "missing"
    benches, extra, shard = selected_benchmarks(man, args.shard, missing)
    missing = {k: missing[k] for k in extra}
    run_entries, patch_ids = None, []
    if check and args.from_run:
        run_entries, patch_ids = run_dirs.read_all(args.from_run)
    return RunSetup(man, benches, missing, shard, changes, run_entries, patch_ids)


def recorded_plan(baselines_dir: str, bench) -> dict | None:
    """The plan of the benchmark's baseline (exact or sampled for "auto",
    a `detect` plan's rate and seeds), if it has one and loads: profile mode
    only chooses how to run from it; the judge verifies it."""
    path = bl.baseline_path(baselines_dir, bench.name)
    if (bench.detect is None and bench.mode != "auto") or not os.path.lexists(path):
        return None
    try:
        return bl.load_baseline(path, bench.name).meta.get("plan")
    except MemprofError:
        return None


@contextlib.contextmanager
def open_session(args, mode: str):
    """The planned run's Context in a scratch directory removed afterwards;
    yields (ctx, the patch ids of a --from-run run)."""
    setup = read_setup(args, mode)
    benches = setup.benches
    if mode == "profile":
        benches = [power.planned(b, recorded_plan(args.baselines, b)) for b in benches]
    check = mode == "check"
    proposed = args.proposed_baselines if check else None
    profiles_dir = (run_dirs.profiles_dir(os.path.abspath(args.out)) if mode == "profile" else
                    os.path.abspath(args.profiles_dir) if args.profiles_dir else None)
    if mode == "profile":
        os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="memprof-ci.")
    try:
        ctx = Context(setup.manifest, benches,
                      None if mode == "profile" else os.path.abspath(args.baselines), work,
                      mode=mode, proposed_dir=os.path.abspath(proposed) if proposed else None,
                      no_overhead=args.no_overhead, strict=getattr(args, "strict", False),
                      overhead_info=args.overhead_info,
                      shard=setup.shard, profiles_dir=profiles_dir, missing=setup.missing,
                      run_entries=setup.run_entries, accept=check and args.accept_changes,
                      overhead_family=len(setup.manifest.benchmarks))
        if setup.changes:
            ctx.report["settings_changes"] = setup.changes
        yield ctx, setup.patch_ids
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pytest_args(ctx, args, ini: str, report_dir: str | None) -> list:
    """pytest's command line for the session's items."""
    man = ctx.manifest
    pargs = [man.path, "-c", ini, "--rootdir", man.directory, "-p", "no:cacheprovider",
             "--noconftest", "--no-header", "-rfEsx", "-o", "console_output_style=classic"]
    if args.keyword:
        pargs += ["-k", args.keyword]
    if args.markexpr:
        pargs += ["-m", args.markexpr]
    if args.exitfirst:
        pargs.append("-x")
    pargs += ["-v"] * args.verbose + ["-q"] * args.quiet
    if report_dir:
        os.makedirs(report_dir, exist_ok=True)
        pargs.append(f"--junitxml={os.path.join(os.path.abspath(report_dir), 'junit.xml')}")
    return pargs + list(args.pytest_args)


def run_items(ctx, args, report_dir: str | None = None) -> int | None:
    """pytest over the session's items; its exit code, or None for an empty
    shard (N larger than the number of benchmarks is legal)."""
    if not ctx.benches and not ctx.missing:
        print(f"memprof-ci: shard {args.shard} has no benchmarks")
        return None
    ini = os.path.join(ctx.work_dir, "pytest.ini")
    with open(ini, "w") as fh:
        fh.write("[pytest]\n")
    pargs = pytest_args(ctx, args, ini, report_dir)
    # Third-party pytest plugins have no business in a benchmark session;
    # benchmarks started meanwhile get ctx-built environments without it.
    had = "PYTEST_DISABLE_PLUGIN_AUTOLOAD" in os.environ
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    lock = atomicio.locked(ctx.baselines_dir) if ctx.mode == "update" else contextlib.nullcontext()
    sys.stdout.flush()
    try:
        with lock:
            ret = int(pytest.main(pargs, plugins=[MemprofPlugin(ctx)]))
    finally:
        if not had:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    if ret == 5:
        raise ConfigError("no checks selected; check -k/-m/--shard against "
                          f"`memprof-ci list --manifest {args.manifest}`")
    print()
    return ret
