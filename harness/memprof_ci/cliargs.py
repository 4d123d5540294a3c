"""The command line's grammar: every subcommand, option and default.

cli.py parses with build_parser() and dispatches; nothing here runs or
decides.  Invariant: the defaults of compare's statistical options are the
manifest's (manifest.SETTINGS), so `compare` and `check` judge alike unless
told otherwise.
"""

from __future__ import annotations

import argparse

from . import __version__
from .inputs.manifest import EXACT_MIN_EFFECT, SETTINGS


def _add_run_options(p, check: bool, profile: bool = False):
    p.add_argument("--manifest", default="benchmarks/benchmarks.toml",
                   help="benchmark manifest (TOML); default: %(default)s")
    p.add_argument("--base-manifest", metavar="FILE",
                   help="the base branch's manifest: every setting that decides a verdict "
                        "(rate, seeds, frames, grouping, alpha, min_effect, min_share, "
                        "tolerances, overhead budget and runs) is taken from it; --manifest "
                        "then only says how to run and may add benchmarks")
    if profile:
        p.add_argument("--out", required=True, metavar="DIR",
                       help="run directory to write (run.json and profiles/) for "
                            "`memprof-ci check --from-run DIR`")
        p.add_argument("--baselines", default="baselines",
                       help="where the rate and seeds that a benchmark's `detect` planned "
                            "are read from (the judge checks them against its trusted "
                            "baselines); default: %(default)s/")
    else:
        p.add_argument("--baselines", default="baselines",
                       help="directory of baseline files; default: %(default)s/")
    p.add_argument("-k", dest="keyword", metavar="EXPR",
                   help="only run checks matching the pytest keyword expression")
    p.add_argument("-m", dest="markexpr", metavar="EXPR",
                   help="only run checks matching the pytest marker expression "
                        "(alloc_sites, gc_totals, live, overhead, proposed_baseline)")
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more pytest output")
    p.add_argument("-q", "--quiet", action="count", default=0, help="less pytest output")
    p.add_argument("--no-overhead", action="store_true",
                   help="skip the overhead check (its counted runs and timing)")
    p.add_argument("--overhead-info", action="store_true",
                   help="also time profiling's cost (overhead_runs hyperfine pairs) and "
                        "measure the peak RSS it adds: information, not run by default "
                        "(timed anyway for a benchmark with overhead_time_fails)")
    if not profile:
        p.add_argument("--profiles-dir", metavar="DIR",
                       help="keep the raw profiles in DIR (default: a temporary directory)")
    p.add_argument("--shard", metavar="K/N",
                   help="run only shard K of N (round-robin over sorted benchmark names)")
    if check:
        p.add_argument("--from-run", metavar="DIR", action="append", default=[],
                       help="judge the profiles of a `memprof-ci profile` run directory "
                            "instead of running the benchmarks (repeatable, one per shard)")
        p.add_argument("--accept-changes", action="store_true",
                       help="(the maintainer's accept label) a regression of a benchmark "
                            "whose proposed baseline changed and matches the measurement "
                            "is accepted; needs --proposed-baselines")
        p.add_argument("--note", metavar="TEXT", action="append", default=[],
                       help="a line for the report's notes (repeatable)")
        p.add_argument("--proposed-baselines", metavar="DIR",
                       help="baselines proposed by the change under test; they are diffed "
                            "against --baselines and must agree with the measurement")

        p.add_argument("--against", metavar="REF",
                       help="judge the working tree against git REF instead of stored "
                            "baselines: REF is built (its manifest's `build`) and profiled "
                            "in a temporary worktree, and both sides use REF's settings")
        p.add_argument("--report-dir", metavar="DIR",
                       help="write report.md, report.json, report.html and junit.xml to DIR")
        p.add_argument("--results-json", metavar="PATH",
                       help="also write the JSON report (input of `merge`) to PATH")
        p.add_argument("--measured-dir", metavar="DIR",
                       help="also write each benchmark's measurement in baseline format "
                            "to DIR/NAME.json (for `memprof-ci record`)")
    if not profile:
        p.add_argument("--strict", action="store_true",
                       help="check: a benchmark without a baseline fails instead of being "
                            "reported new; update-baselines: a benchmark whose profiling "
                            "overhead is over overhead_budget is an error")
    p.add_argument("pytest_args", nargs="*", metavar="-- PYTEST_ARG",
                   help="extra arguments passed to pytest after `--`")


def _add_commit_commands(sub) -> None:
    """bisect, record and history: commands over git commits and main's runs."""
    bi = sub.add_parser("bisect", help="find the first commit between two whose allocation "
                                       "changed, by git bisect over the deterministic check")
    bi.add_argument("--manifest", default="benchmarks/benchmarks.toml")
    bi.add_argument("--good", required=True, metavar="A",
                    help="the reference commit: every tested commit is compared with it")
    bi.add_argument("--bad", required=True, metavar="B", help="a descendant of A that changed")
    bi.add_argument("--bench", metavar="NAME", help="only this benchmark")
    bi.add_argument("--site", metavar="PATTERN",
                    help="changed = a site whose name contains PATTERN changed significantly "
                         "(either way); default: a check of the benchmark fails")
    bi.add_argument("-v", "--verbose", action="count", default=0,
                    help="show the traceback of an internal error")
    rc = sub.add_parser("record", help="record a run of main (its baselines and report) as "
                                       "RUNS/<commit>.json, for `history` and later judges")
    rc.add_argument("--runs", required=True, metavar="DIR", help="the runs directory")
    rc.add_argument("--baselines", required=True, metavar="DIR",
                    help="the run's measurements in baseline format (update-baselines --baselines)")
    rc.add_argument("--report", metavar="REPORT_JSON", help="the run's check report.json")
    rc.add_argument("--accepted-baselines", metavar="PATH",
                    help="the committed baselines' directory, relative to the repository: "
                         "benchmarks whose baseline the commit changed are marked accepted")
    rc.add_argument("--commit", default="HEAD", metavar="REV",
                    help="the measured commit, in the current directory's repository; "
                         "default: %(default)s")
    rc.add_argument("-v", "--verbose", action="count", default=0,
                    help="show the traceback of an internal error")
    hi = sub.add_parser("history", help="render main's recorded runs as one HTML page")
    hi.add_argument("--runs", required=True, metavar="DIR", help="the runs directory")
    hi.add_argument("--out", default="history.html", metavar="FILE",
                    help="the page to write; default: %(default)s")
    hi.add_argument("--top", type=int, default=10,
                    help="sites shown per benchmark (the heaviest of the latest run); "
                         "default: %(default)s")
    hi.add_argument("--commit-url", metavar="PREFIX",
                    help="https URL a commit id completes (default on GitHub Actions: "
                         "the repository's /commit/)")
    hi.add_argument("-v", "--verbose", action="count", default=0,
                    help="show the traceback of an internal error")


def _add_compare_commands(sub) -> None:
    """compare and merge: commands that judge reports or profiles and run nothing."""
    c = sub.add_parser("compare", help="compare two profiles, profile directories or "
                                       "baselines without running anything (A = before, B = after)")
    c.add_argument("a", metavar="A")
    c.add_argument("b", metavar="B")
    c.add_argument("--grouping", choices=("function", "line", "innermost"),
                   help="site grouping for profiles (default: the baseline's, else function)")
    c.add_argument("--alpha", type=float, default=SETTINGS["alpha"])
    c.add_argument("--min-effect", type=float, default=None,
                   help=f"smallest change that fails: default {SETTINGS['min_effect']:g} for "
                        f"sampled sites, {EXACT_MIN_EFFECT:g} for sites counted per "
                        f"allocation point")
    c.add_argument("--min-share", type=float, default=SETTINGS["min_share"])
    c.add_argument("--gc-tolerance", type=float, default=SETTINGS["gc_tolerance"])
    c.add_argument("--gc-timing-tolerance", type=float,
                   default=SETTINGS["gc_timing_tolerance"])
    c.add_argument("--format", choices=("terminal", "markdown", "json"), default="terminal")
    c.add_argument("--report-dir", metavar="DIR",
                   help="also write report.md, report.json and report.html")
    c.add_argument("-v", "--verbose", action="count", default=0,
                   help="site tables of every benchmark (not only those with a significant "
                        "change); the traceback of an internal error")
    m = sub.add_parser("merge", help="combine shard reports into one report and verdict")
    m.add_argument("out_dir", metavar="OUT_DIR")
    m.add_argument("shards", metavar="SHARD_DIR", nargs="+",
                   help="directories holding a shard's report.json (or the JSON files)")
    m.add_argument("-v", "--verbose", action="count", default=0,
                   help="show the traceback of an internal error")


def _add_planning_commands(sub) -> None:
    """plan and init: what the settings detect, and the files to adopt memprof-ci."""
    pl = sub.add_parser("plan", help="what each benchmark's settings can detect, and the "
                                     "rate or seeds that would detect a target change")
    pl.add_argument("--manifest", default="benchmarks/benchmarks.toml")
    pl.add_argument("--baselines", default="baselines")
    pl.add_argument("--target-mde", type=float, default=0.05,
                    help="increase to detect with 80%% power (default %(default)s)")
    pl.add_argument("--target-share", type=float, default=0.05,
                    help="at every site holding at least this share of the benchmark's "
                         "allocation (default %(default)s)")
    i = sub.add_parser("init", help="write a manifest, a baselines directory and the two "
                                    "workflow files into a repository (never overwrites "
                                    "without --force)")
    i.add_argument("--root", default=".", help="the repository's root; default: %(default)s")
    i.add_argument("--repository", required=True, metavar="OWNER/NAME",
                   help="the memprof-ci repository the workflows call")
    i.add_argument("--ref", default="v1", help="tag or commit of memprof-ci to pin; "
                                              "default: %(default)s")
    i.add_argument("--manifest", default="bench/memprof-ci.toml")
    i.add_argument("--baselines", default="bench/baselines")
    i.add_argument("--build-command", default="dune build ./bench/main.exe",
                   help="what builds the benchmarks on CI; default: %(default)s")
    i.add_argument("--exe", default="../_build/default/bench/main.exe",
                   help="the benchmark program, relative to the manifest; default: %(default)s")
    i.add_argument("--label", default="memprof-ci: accept",
                   help="the maintainers' accept label; default: %(default)s")
    i.add_argument("--branch", default="main", help="the protected branch; default: %(default)s")
    i.add_argument("--force", action="store_true",
                   help="replace the files init writes if they exist (nothing else is "
                        "touched or deleted)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="memprof-ci",
        description="Catch allocation regressions in OCaml programs. Exit codes: 0 no "
                    "regression, 1 regression, 2 usage/configuration/infrastructure error.")
    ap.add_argument("--version", action="version", version=f"memprof-ci {__version__}")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True
    _add_run_options(sub.add_parser("check", help="run benchmarks and compare with baselines"),
                     True)
    ub = sub.add_parser("update-baselines", help="run benchmarks and rewrite their baselines")
    _add_run_options(ub, False)
    ub.add_argument("--ratchet", action="store_true",
                    help="also lower each [[budget]]'s words_per_run in the manifest to what "
                         "the benchmarks it applies to now allocate there, where that is less "
                         "(budgets only tighten)")
    _add_run_options(sub.add_parser("profile",
                                    help="run benchmarks and keep their profiles and overhead "
                                         "in a run directory, for a separate judge "
                                         "(check --from-run)"), False, profile=True)
    _add_compare_commands(sub)
    _add_planning_commands(sub)
    _add_commit_commands(sub)
    vw = sub.add_parser("view", help="render one run (a profile, a CTF trace) as one "
                                     "self-contained HTML page")
    vw.add_argument("file", metavar="FILE",
                    help="a memprof-ci profile (JSON) or a CTF trace (ours or memtrace's); "
                         "the kind is read from the content")
    vw.add_argument("-o", "--out", default="report.html", metavar="HTML",
                    help="the page to write (never through a symbolic link); "
                         "default: %(default)s")
    vw.add_argument("-v", "--verbose", action="count", default=0,
                    help="show the traceback of an internal error")
    l = sub.add_parser("list", help="list the benchmarks of the manifest (or of a shard)")
    l.add_argument("--manifest", default="benchmarks/benchmarks.toml")
    l.add_argument("--shard", metavar="K/N")
    return ap
