"""Command-line interface: check (also --against REF), update-baselines,
profile, compare, merge, plan, init, list, bisect, record, history, view.

`check`, `update-baselines` and `profile` wrap pytest.main with the
memprof-ci plugin, one function per mode; `compare` and `merge` run nothing.
Invariants: the process exit code is 0 (no regression), 1 (regression) or 2
(usage, configuration or infrastructure error), read from report["verdict"]
as verdict.decide left it (given pytest's own exit code), never from
pytest's code alone; every MemprofError is printed as one line, without a
traceback, and any other exception is an internal error: one line and exit
2 (the traceback only with -v), never 1.  This module only parses arguments
and dispatches: decisions live in verdict.py, reading in the loaders,
rendering in report.py and report_html.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import traceback

import pytest

from . import against, atomicio, bisection, measured, retention, runner, runstore
from . import baseline as bl
from .cliargs import build_parser
from .context import Context
from .errors import ConfigError, InfraError, MemprofError
from .history import make_record, read_runs, write_record
from .history_html import render_history
from .manifest import (EXACT_MIN_EFFECT, SETTINGS, judged_with, load_manifest, parse_shard,
                       shard_names)
from .mdsafe import printable
from .merge import load_shard, merge
from . import plan as P
from .plan import family_size, plan_benchmark, plan_line, render as render_plan, stated_power
from .plugin import MemprofPlugin, finish_report
from .report import render_markdown, render_terminal
from .report_doc import new_report, to_json
from .report_html import render_html
from .scaffold import files, init, next_steps
from .sides import load_pairs
from .stackgraph import stacks_entry
from .steps import cost_line, count_advice
from .validate import is_finite
from .verdict import POWER_SHARE, compare_report, decide
from .view_html import view_page
from .worktree import changed_baselines, commit_info, toplevel

EXIT_OK, EXIT_ERROR = 0, 2


def _err(msg: str) -> None:
    """One line on stderr; control characters from inputs are escaped."""
    print(f"memprof-ci: error: {printable(str(msg))}", file=sys.stderr)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code not in (0, None) else EXIT_OK
    try:
        if args.cmd in ("check", "update-baselines", "profile"):
            return cmd_run(args)
        # Looked up by name at each call, so that a command replaced on the
        # module (the tests' internal-error checks) is the one that runs.
        return globals()[COMMANDS[args.cmd]](args)
    except MemprofError as e:
        _err(str(e))
        return EXIT_ERROR
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_ERROR
    except RecursionError:
        _err("internal error: input nested too deeply")
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - an internal error must never read as exit 1
        if getattr(args, "verbose", 0):
            traceback.print_exc()
        msg = printable(" ".join(f"{type(e).__name__}: {e}".split()))
        print(f"memprof-ci: internal error: {msg[:500]} (run with -v for the traceback)",
              file=sys.stderr)
        return EXIT_ERROR


def _selected_benchmarks(manifest, shard_spec, extra=()):
    """The manifest's benchmarks (and `extra` names: trusted baselines the
    manifest lacks) that this shard owns, round-robin over all names."""
    if not shard_spec:
        return list(manifest.benchmarks), sorted(extra), None
    k, n = parse_shard(shard_spec)
    keep = set(shard_names(manifest.names() + list(extra), k, n))
    return ([b for b in manifest.benchmarks if b.name in keep],
            sorted(x for x in extra if x in keep), (k, n))


def cmd_list(args) -> int:
    man = load_manifest(args.manifest)
    benches, _, _ = _selected_benchmarks(man, args.shard)
    for b in sorted(benches, key=lambda b: b.name):
        print(b.name)
    return EXIT_OK


def cmd_init(args) -> int:
    written = init(args.root, files(args.repository, args.ref, args.manifest, args.baselines,
                                    args.build_command, args.exe, args.label, args.branch),
                   force=args.force)
    for p in written:
        print(f"memprof-ci: wrote {p}")
    for line in next_steps(args.manifest, args.baselines, runner.patch_id()):
        print(f"memprof-ci: {line}")
    return EXIT_OK


def cmd_plan(args) -> int:
    for name, v in (("--target-mde", args.target_mde), ("--target-share", args.target_share)):
        if not (is_finite(v) and 0 < v < 1):
            raise ConfigError(f"{name} must be in (0, 1), got {v}")
    man = load_manifest(args.manifest)
    bases = {}
    for b in man.benchmarks:
        path = bl.baseline_path(args.baselines, b.name)
        if os.path.lexists(path):
            base = bl.load_baseline(path, b.name)
            bl.check_compatible(base, b, path)
            bases[b.name] = base
    if not bases:
        raise ConfigError(f"{args.baselines}: no baselines for the benchmarks of "
                          f"{args.manifest}; record them with `memprof-ci update-baselines`")
    family = family_size(bases.values())
    plans = [plan_benchmark(b, bases[b.name], family, args.target_mde, args.target_share)
             for b in man.benchmarks if b.name in bases]
    print(render_plan(plans, args.target_mde, args.target_share), end="")
    return EXIT_OK


def _check_output_paths(report_dir, results_json, out=None) -> None:
    """Refuse output paths that cannot be written before anything runs."""
    for flag, path in (("--report-dir", report_dir), ("--out", out)):
        if path and os.path.lexists(path) and not os.path.isdir(path):
            raise ConfigError(f"{flag} {path}: exists and is not a directory")
    if results_json and os.path.isdir(results_json):
        raise ConfigError(f"--results-json {results_json}: is a directory; name a file")


def _attach_stacks(rep: dict, sides: dict) -> None:
    """{name: (baseline Aggregate or None, current Aggregate or None)} ->
    each compared benchmark's "stacks" entry (what report.html draws)."""
    for name, (base, cur) in sides.items():
        b = rep["benchmarks"].get(name)
        if b is not None and (base is not None or cur is not None):
            b["stacks"] = stacks_entry(base, cur)


def _write_reports(rep: dict, report_dir: str | None, results_json: str | None) -> None:
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


def cmd_run(args) -> int:
    """check, update-baselines and profile: one function per mode."""
    mode = {"check": _run_check, "update-baselines": _run_update, "profile": _run_profile}
    try:
        if args.cmd == "check" and args.against:
            return against.check_against(args, _run_check)
        return mode[args.cmd](args)
    except MemprofError as e:
        # Leave a report behind even when nothing ran, so that CI steps that
        # merge or publish reports see an error verdict rather than nothing.
        if args.cmd == "check" and (args.report_dir or args.results_json):
            rep = new_report("check")
            rep["errors"] = [str(e)]
            decide(rep)
            with contextlib.suppress(OSError, MemprofError):
                _write_reports(rep, args.report_dir, args.results_json)
        raise


def _trusted_names(baselines_dir: str) -> list:
    """Benchmark names of the *.json files in a baselines directory."""
    if not os.path.isdir(baselines_dir):
        return []
    return sorted(n[:-5] for n in os.listdir(baselines_dir)
                  if n.endswith(".json") and not n.startswith("."))


def _plan(args, mode: str):
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
    _check_output_paths(args.report_dir if check else None,
                        args.results_json if check else None,
                        args.out if mode == "profile" else None)
    missing = {}
    if check:
        in_manifest = set(man.names())
        for name in _trusted_names(baselines):
            if name in in_manifest:
                continue
            gone = proposed and not os.path.lexists(bl.baseline_path(proposed, name))
            missing[name] = "removed" if gone else "missing"
    benches, extra, shard = _selected_benchmarks(man, args.shard, missing)
    missing = {k: missing[k] for k in extra}
    run_entries, patch_ids = None, []
    if check and args.from_run:
        run_entries, patch_ids = runstore.read_all(args.from_run)
    return man, benches, missing, shard, changes, run_entries, patch_ids


def _recorded_plan(baselines_dir: str, bench) -> dict | None:
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
def _session(args, mode: str):
    """The planned run's Context in a scratch directory removed afterwards;
    yields (ctx, the patch ids of a --from-run run)."""
    man, benches, missing, shard, changes, run_entries, patch_ids = _plan(args, mode)
    if mode == "profile":
        benches = [P.planned(b, _recorded_plan(args.baselines, b)) for b in benches]
    check = mode == "check"
    proposed = args.proposed_baselines if check else None
    profiles_dir = (runstore.profiles_dir(os.path.abspath(args.out)) if mode == "profile" else
                    os.path.abspath(args.profiles_dir) if args.profiles_dir else None)
    if mode == "profile":
        os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="memprof-ci.")
    try:
        ctx = Context(man, benches,
                      None if mode == "profile" else os.path.abspath(args.baselines), work,
                      mode=mode, proposed_dir=os.path.abspath(proposed) if proposed else None,
                      no_overhead=args.no_overhead, strict=getattr(args, "strict", False),
                      overhead_info=args.overhead_info,
                      shard=shard, profiles_dir=profiles_dir, missing=missing,
                      run_entries=run_entries, accept=check and args.accept_changes,
                      overhead_family=len(man.benchmarks))
        if changes:
            ctx.report["settings_changes"] = changes
        yield ctx, patch_ids
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_items(ctx, args, report_dir: str | None = None) -> int | None:
    """pytest over the session's items; its exit code, or None for an empty
    shard (N larger than the number of benchmarks is legal)."""
    if not ctx.benches and not ctx.missing:
        print(f"memprof-ci: shard {args.shard} has no benchmarks")
        return None
    man = ctx.manifest
    ini = os.path.join(ctx.work_dir, "pytest.ini")
    with open(ini, "w") as fh:
        fh.write("[pytest]\n")
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
    pargs += list(args.pytest_args)
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


def _finish(rep: dict) -> int:
    for e in rep["verdict"]["errors"]:
        _err(e)
    return rep["verdict"]["exit_code"]


def _run_check(args) -> int:
    with _session(args, "check") as (ctx, patch_ids):
        ctx.report["notes"].extend(args.note)
        if getattr(args, "reference", None):
            ctx.report["reference"] = args.reference
        ret = _run_items(ctx, args, args.report_dir)
        retention.explain(ctx)
        rep = finish_report(ctx, ret)
        running = patch_ids if ctx.run_entries is not None else \
            [runner.patch_id()]
        notes = measured.runtime_notes(rep, running)
        if notes:
            rep["patch_notes"] = notes
        # Cached results only: nothing is run again for the picture.
        _attach_stacks(rep, ctx.sides())
        _write_reports(rep, args.report_dir, args.results_json)
        if args.measured_dir:
            measured.write_measured(args.measured_dir, ctx.sides(), ctx.run_entries, running)
        if ret is not None:
            print(render_terminal(rep, verbose=args.verbose > 0), end="")
        return _finish(rep)


def _run_update(args) -> int:
    with _session(args, "update") as (ctx, _):
        rep = finish_report(ctx, _run_items(ctx, args))
        written = {name: ctx.measurements.peek(name) for name, b in rep["benchmarks"].items()
                   if b.get("baseline_written")}
        family = family_size(a for a in written.values() if a is not None)
        for name in sorted(written):
            print(f"memprof-ci: wrote {rep['benchmarks'][name]['baseline_written']}")
            b = rep["benchmarks"][name]
            if b.get("mode_plan"):
                print("memprof-ci:   " + b["mode_plan"])
            if (b.get("plan") or {}).get("power"):
                print("memprof-ci:   " + plan_line(ctx.benches[name], b["plan"]))
            if written[name] is not None:
                print("memprof-ci:   " + stated_power(ctx.benches[name], written[name], family,
                                                      POWER_SHARE))
            if b.get("cost"):
                print("memprof-ci:   " + cost_line(b))
            bench = ctx.benches[name]
            advice = count_advice(name, b, len(bench.seeds), bench.overhead_args is not None)
            if advice:
                print(f"memprof-ci: note: {advice}", file=sys.stderr)
        for name, b in sorted(rep["benchmarks"].items()):
            if b.get("over_budget") and not args.strict:
                print(f"memprof-ci: warning: {b['over_budget']}", file=sys.stderr)
        return _finish(rep)


def _run_profile(args) -> int:
    with _session(args, "profile") as (ctx, _):
        rep = finish_report(ctx, _run_items(ctx, args))
        path = runstore.write(os.path.abspath(args.out),
                              runner.patch_id(),
                              ctx.results_for_run_dir())
        print(f"memprof-ci: wrote {path}")
        return _finish(rep)


def _render(rep: dict, fmt: str, verbose: bool = False) -> str:
    if fmt == "terminal":
        return render_terminal(rep, verbose=verbose)
    return {"markdown": render_markdown, "json": to_json}[fmt](rep)


def cmd_compare(args) -> int:

    for name, v, lo, hi in (("--alpha", args.alpha, 0, 1), ("--min-share", args.min_share, 0, 1)):
        if not (is_finite(v) and lo < v < hi):
            raise ConfigError(f"{name} must be in ({lo}, {hi}), got {v}")
    given = args.min_effect
    args.min_effect = SETTINGS["min_effect"] if given is None else given
    for name, v in (("--min-effect", args.min_effect), ("--gc-tolerance", args.gc_tolerance),
                    ("--gc-timing-tolerance", args.gc_timing_tolerance)):
        if not (is_finite(v) and v >= 0):
            raise ConfigError(f"{name} must be a finite non-negative number, got {v}")
    _check_output_paths(args.report_dir, None)
    pairs, notes = load_pairs(args.a, args.b, args.grouping)
    rep = compare_report(pairs, notes, {"alpha": args.alpha, "min_effect": args.min_effect,
                                        "exact_min_effect": (EXACT_MIN_EFFECT if given is None
                                                             else args.min_effect),
                                        "min_share": args.min_share},
                         args.gc_tolerance, args.gc_timing_tolerance)
    _attach_stacks(rep, {name: (a, b) for name, a, b in pairs})
    if args.report_dir:
        _write_reports(rep, args.report_dir, None)
    print(_render(rep, args.format, args.verbose > 0), end="")
    return rep["verdict"]["exit_code"]


def cmd_merge(args) -> int:

    _check_output_paths(args.out_dir, None)
    rep = merge(args.shards)
    _write_reports(rep, args.out_dir, None)
    print(render_terminal(rep, verbose=args.verbose > 0), end="")
    for e in rep["verdict"]["errors"]:
        _err(e)
    return rep["verdict"]["exit_code"]


def cmd_bisect(args) -> int:
    return bisection.run_bisect(args)


def cmd_record(args) -> int:
    report = load_shard(args.report, "--report (check report)") if args.report else None
    repo = toplevel(".")
    sha, when, subject, depth = commit_info(repo, args.commit, "--commit")
    changed = (changed_baselines(repo, sha, args.accepted_baselines)
               if args.accepted_baselines else [])
    rec = make_record(sha, when, subject, depth, runner.patch_id(), args.baselines, report,
                      changed)
    print(f"memprof-ci: wrote {write_record(args.runs, rec)}")
    return EXIT_OK


def cmd_history(args) -> int:
    if not 1 <= args.top <= 100:
        raise ConfigError(f"--top must be in [1, 100], got {args.top}")
    page = render_history(read_runs(args.runs), args.top, args.commit_url)
    _check_output_paths(None, args.out)
    atomicio.write_atomic(args.out, page)
    print(f"memprof-ci: wrote {args.out}")
    return EXIT_OK


def cmd_view(args) -> int:
    atomicio.write_page(args.out, view_page(args.file), "-o")
    print(f"memprof-ci: wrote {args.out}")
    return EXIT_OK


COMMANDS = {name: f"cmd_{name}" for name in (
    "compare", "merge", "list", "plan", "init", "bisect", "record", "history", "view")}


if __name__ == "__main__":
    sys.exit(main())
