"""`memprof-ci compare A B`: two profiles, traces, baselines or directories
of them judged against each other, with nothing run.

Each side is a profile, a memtrace CTF trace (ctf_profile.py), a baseline,
or a directory of profiles or baselines, read as {benchmark:
sites.Aggregate}; decide/verdict.compare_report judges the pairs with the
command line's settings (the manifest's defaults unless given).

Invariants: every file is validated by its own loader (profile.py,
baseline.py) before use; a directory must hold only profiles or only
baselines; profiles named <bench>.<seed>.json are summed per benchmark.
"""

from __future__ import annotations

import os
import re

from ..store.baseline import is_baseline_doc, parse_baseline
from ..inputs.ctf_profile import is_ctf_file, load_ctf
from ..errors import InputError
from ..inputs.profile import (LIVE_UNDECIDED, is_profile_doc, load_json, parse_profile,
                              profile_files, undecided_live_error)
from ..sites.grouping import Aggregate, aggregate, aggregate_paths
from ..decide.report_doc import to_json
from ..decide.verdict import compare_report
from ..errors import ConfigError
from ..inputs.manifest import EXACT_MIN_EFFECT, SETTINGS
from ..inputs.validate import is_finite
from ..render.outputs import attach_stacks, check_output_paths, write_reports
from ..render.report import render_markdown, render_terminal


_PROFILE_NAME = re.compile(r"^(?P<bench>.+)\.(?P<seed>\d+)\.json$")


def load_side(path: str, grouping: str) -> dict:
    """A profile, a baseline, or a directory of either -> {benchmark: Aggregate}."""
    if os.path.isdir(path):
        profiles: dict = {}
        baselines: dict = {}
        for f in profile_files(path):
            kind = _sniff(f)
            if kind == "baseline":
                b = parse_baseline(load_json(f, "baseline"), f)
                baselines[b.name] = b
            elif kind == "profile":
                m = _PROFILE_NAME.match(os.path.basename(f))
                key = m.group("bench") if m else os.path.basename(os.path.abspath(path))
                profiles.setdefault(key, []).append(f)
            else:
                raise InputError(f"{f}: neither a memprof-ci profile nor a baseline; "
                                 f"remove it from {path}")
        if profiles and baselines:
            raise InputError(f"{path}: mixes profiles and baselines; compare them separately")
        if not profiles and not baselines:
            raise InputError(f"{path}: no profiles or baselines (*.json) found")
        if baselines:
            return baselines
        return {k: aggregate_paths(v, grouping, k) for k, v in sorted(profiles.items())}
    if is_ctf_file(path):
        name = os.path.basename(path)
        name = name[:-4] if name.endswith(".ctf") else name
        p = load_ctf(path)
        if p.live_mode == LIVE_UNDECIDED:
            raise undecided_live_error(path)
        return {name: aggregate([p], grouping, name)}
    doc = load_json(path, "profile or baseline")
    if is_baseline_doc(doc):
        b = parse_baseline(doc, path)
        return {b.name: b}
    if is_profile_doc(doc):
        p = parse_profile(doc, path, check_stacks=False)   # aggregate() checks them
        m = _PROFILE_NAME.match(os.path.basename(path))
        name = m.group("bench") if m else os.path.splitext(os.path.basename(path))[0]
        return {name: aggregate([p], grouping, name)}
    raise InputError(f"{path}: neither a memprof-ci profile nor a baseline")


def _sniff(path: str) -> str | None:
    """Cheap format detection from the first bytes (full parsing comes later).

    Both writers put "format" first (the runtime by schema order, baselines by
    sorted keys after "backend"/"benchmark"/"config"...), so look at a prefix
    large enough to hold it and fall back to a full parse otherwise.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    if b'"memprof-ci/profile"' in head:
        return "profile"
    if b'"memprof-ci/baseline"' in head:
        return "baseline"
    doc = load_json(path, "profile or baseline")
    return "profile" if is_profile_doc(doc) else "baseline" if is_baseline_doc(doc) else None


def regroup_check(a: Aggregate, b: Aggregate, pa: str, pb: str) -> None:
    if a.grouping != b.grouping:
        raise InputError(f"{pa} is grouped by {a.grouping!r} but {pb} by {b.grouping!r}; "
                         f"a baseline keeps only its own grouping, so pass --grouping "
                         f"{a.grouping if a.meta.get('path') else b.grouping} or compare profiles")


def _baseline_grouping(side: dict):
    gs = {a.grouping for a in side.values() if a.meta.get("path")}
    return gs.pop() if len(gs) == 1 else None


def pair_label(na: str, nb: str) -> str:
    """The benchmark's name for two single inputs: their common name, or the
    dotted prefix their file names share (`compile_many.old` and
    `compile_many.new` are `compile_many`), else `A..B`."""
    if na == nb:
        return na
    common = []
    for x, y in zip(na.split("."), nb.split(".")):
        if x != y:
            break
        common.append(x)
    return ".".join(common) or f"{na}..{nb}"


def load_pairs(path_a: str, path_b: str, grouping: str | None):
    """The benchmarks to compare, [(name, A, B)], and notes on the rest.

    Without an explicit grouping, profiles are grouped like the baseline on
    the other side (a baseline keeps only its own grouping).  Two single
    inputs are compared whatever their names; two sets by common names."""
    g = grouping or "function"
    A, B = load_side(path_a, g), load_side(path_b, g)
    if not grouping:
        ga, gb = _baseline_grouping(A), _baseline_grouping(B)
        if ga and not gb and ga != g:
            B = load_side(path_b, ga)
        elif gb and not ga and gb != g:
            A = load_side(path_a, gb)
    notes = []
    if len(A) == 1 and len(B) == 1:
        (na, a), (nb, b) = next(iter(A.items())), next(iter(B.items()))
        pairs = [(pair_label(na, nb), a, b)]
    else:
        pairs = [(n, A[n], B[n]) for n in sorted(set(A) & set(B))]
        notes = [f"{n}: only in {'A' if n in A else 'B'}" for n in sorted(set(A) ^ set(B))]
    if not pairs:
        raise InputError(f"{path_a} and {path_b} have no benchmark in common")
    for _, a, b in pairs:
        regroup_check(a, b, path_a, path_b)
    return pairs, notes


def render_as(rep: dict, fmt: str, verbose: bool = False) -> str:
    """The report in --format's form."""
    if fmt == "terminal":
        return render_terminal(rep, verbose=verbose)
    return {"markdown": render_markdown, "json": to_json}[fmt](rep)


def run(args) -> int:
    for name, v, lo, hi in (("--alpha", args.alpha, 0, 1), ("--min-share", args.min_share, 0, 1)):
        if not (is_finite(v) and lo < v < hi):
            raise ConfigError(f"{name} must be in ({lo}, {hi}), got {v}")
    given = args.min_effect
    args.min_effect = SETTINGS["min_effect"] if given is None else given
    for name, v in (("--min-effect", args.min_effect), ("--gc-tolerance", args.gc_tolerance),
                    ("--gc-timing-tolerance", args.gc_timing_tolerance)):
        if not (is_finite(v) and v >= 0):
            raise ConfigError(f"{name} must be a finite non-negative number, got {v}")
    check_output_paths(args.report_dir, None)
    pairs, notes = load_pairs(args.a, args.b, args.grouping)
    rep = compare_report(pairs, notes, {"alpha": args.alpha, "min_effect": args.min_effect,
                                        "exact_min_effect": (EXACT_MIN_EFFECT if given is None
                                                             else args.min_effect),
                                        "min_share": args.min_share},
                         args.gc_tolerance, args.gc_timing_tolerance)
    attach_stacks(rep, {name: (a, b) for name, a, b in pairs})
    if args.report_dir:
        write_reports(rep, args.report_dir, None)
    print(render_as(rep, args.format, args.verbose > 0), end="")
    return rep["verdict"]["exit_code"]
