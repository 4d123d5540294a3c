"""Reading and validating memprof-ci runtime profiles (format versions 1 to 6).

A profile is the JSON document one process run writes when OCAMLMEMPROF is
set (see runtime-patch/format/profile-format.md).  Version 1 spells out each
stack's frame objects; version 2 lists every frame object once in
`frame_table` and each stack's frames as indices into it; version 3 is
version 2 with a stack's counts of zero left out; version 4 is version 3
with a `snapshot` section (retainer paths at exit, checked by snapshot.py
and kept in Profile.snapshot, None for other versions); version 5 is
version 3 or 4 with a `points` section (exact counts per allocation point,
checked by points.py and kept in Profile.points); version 6 is a version 3,
4 or 5 document (its `points` and `snapshot` as version 5 allows them, and
`points` optional) with a `budgets` section: the annotated functions'
exact counts per call, checked by profile_budgets.py and kept in
Profile.budgets (None for other versions).  Invariants: load_profile
either returns a Profile whose structure, counter types and per-stack
identities have been checked, or raises InputError naming the file; all
versions give the same Profile (a version-3 stack gets its missing counts
as zeros, and a version-2 or 3 stack's indices are replaced by the table's
frame objects, shared, before anything else reads them); any other format
or version is rejected.
"""

from __future__ import annotations

import contextlib
import gc
import operator
import os
from dataclasses import dataclass, field

from ..text import mdsafe
from . import points, profile_budgets, snapshot, validate
from ..errors import InputError

FORMAT = "memprof-ci/profile"
VERSIONS = (1, 2, 3, 4, 5, 6)
VERSION = 3          # what the runtime writes (4 with snapshot=exit, 5 with points=on,
                     # 6 when an annotated function was called)
WORD_BYTES = 8

TOP_KEYS = ("format", "version", "ocaml_version", "backend", "argv", "config",
            "gc", "totals", "stacks")
CONFIG_KEYS = ("rate", "seed", "frames")
GC_KEYS = ("minor_words", "promoted_words", "major_words", "minor_collections",
           "major_collections", "compactions")
COUNT_KEYS = ("blocks", "samples", "words", "minor_samples", "major_samples",
              "marshal_samples", "custom_samples", "promoted_samples",
              "collected_samples", "live_samples")
# Recorded by current runtimes, absent from older profiles (not recorded).
GC_OPTIONAL_KEYS = ("heap_words", "top_heap_words")
PEAK_KEY = "peak_live_samples"
# config.peak of a profile whose peak is the first maximum over every
# allocation (runtime-patch/format/profile-format.md, "The peak").
PEAK_EVENTS = "events"
# config.stacks: "site" when the runtime cut each stack after its innermost
# frame outside the standard library (OCAMLMEMPROF stacks=site); absent
# means whole stacks ("full").  The site table is the same either way.
STACKS_MODES = ("full", "site")
# config.live: how the runtime told live blocks at exit from dead ones
# (OCAMLMEMPROF live=; absent: walk).  With "off" it did not, and
# live_samples counts the blocks not yet collected: the checks, which
# take live_samples as live, refuse such profiles; the viewer shows them
# as what they are.
LIVE_MODES = ("walk", "gc")
LIVE_UNDECIDED = "off"
FRAME_KEYS = ("file", "line", "col_start", "col_end", "function", "inlined")


@dataclass
class Profile:
    path: str
    ocaml_version: str
    backend: str
    argv: list
    rate: float
    seed: int | None
    frames: int
    gc: dict
    totals: dict
    stacks: list = field(repr=False)
    stacks_mode: str = "full"
    stackmem: int | None = None        # config.stackmem: the whole-stack budget
    # Version 4: snapshot.parse_snapshot's result (retainer paths at exit);
    # sites.retainers_by_site keys its sites as the site table does.
    snapshot: dict | None = field(default=None, repr=False)
    # Version 5: points.parse_points's result (exact counts per point).
    points: points.Points | None = field(default=None, repr=False)
    # Version 6: profile_budgets.parse_budgets_section's Annotated entries.
    budgets: tuple | None = field(default=None, repr=False)
    # config.live: "walk" or "gc", or "off" (LIVE_UNDECIDED), read only where
    # nothing judges live samples (undecided_live: the viewer, the GC
    # schedule's runs, a check that reads nothing live).
    live_mode: str = "walk"


_is_count = validate.is_count


def is_profile_doc(doc) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic GC while building large acyclic JSON trees.

    Decoding a profile allocates millions of containers, which triggers
    repeated full collections that scan the whole (acyclic) heap; pausing
    the collector makes loading large profiles several times faster.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_json(path: str, what: str, regular: bool = False):
    """validate.load_json with the cyclic GC paused (large profiles)."""
    with gc_paused():
        return validate.load_json(path, what, regular)


def load_profile(path: str, check_stacks: bool = True,
                 undecided_live: bool = False) -> Profile:
    return parse_profile(load_json(path, "profile"), path, check_stacks, undecided_live)


def _malformed(path: str):
    def bad(msg):
        return InputError(f"{path}: malformed profile: {msg}; regenerate it "
                          f"with the memprof-ci runtime")
    return bad


def undecided_live_error(path: str) -> InputError:
    """The refusal of a profile or trace made with live=off where live
    samples are judged."""
    return InputError(f"{path}: profile made with OCAMLMEMPROF live=off: its live_samples "
                      f"count blocks not yet collected, not blocks live at exit; the live "
                      f"check cannot judge it; run without live=off")


def _check_header(doc, path: str, bad, undecided_live: bool = False) -> tuple:
    """Format, version, keys, run description and config; (version, cfg)."""
    if not isinstance(doc, dict):
        raise bad("top level is not an object")
    if doc.get("format") != FORMAT:
        raise InputError(f"{path}: not a memprof-ci profile (format="
                         f"{doc.get('format')!r}, expected {FORMAT!r})")
    version = doc.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise InputError(f"{path}: profile format version {version!r}"
                         f" is not supported (this harness reads versions "
                         f"{' and '.join(map(str, VERSIONS))}); upgrade memprof-ci or "
                         f"rebuild the runtime")
    keys = TOP_KEYS + (("frame_table",) if version >= 2 else ()) + \
        (("snapshot",) if version == 4 or (version >= 5 and "snapshot" in doc) else ()) + \
        (("points",) if version == 5 or (version == 6 and "points" in doc) else ()) + \
        (("budgets",) if version == 6 else ())
    missing = [k for k in keys if k not in doc]
    if missing:
        raise bad(f"missing key(s) {', '.join(missing)}")
    if version >= 2 and "incomplete" in doc:
        reason = validate.text(doc["incomplete"], f"{path}: incomplete")
        raise InputError(f"{path}: incomplete profile, the run ended abnormally: "
                         f"{mdsafe.printable(reason[:300])}; its counts cannot be judged")
    extra = sorted(set(doc) - set(keys))
    if extra:
        raise bad(f"unknown key(s) {', '.join(extra)}")
    if not isinstance(doc["ocaml_version"], str):
        raise bad("ocaml_version is not a string")
    if doc["backend"] not in ("native", "bytecode"):
        raise bad(f"backend {doc['backend']!r} is neither native nor bytecode")
    if not isinstance(doc["argv"], list):
        raise bad("argv is not a list")
    cfg = doc["config"]
    if not isinstance(cfg, dict) or any(k not in cfg for k in CONFIG_KEYS):
        raise bad("config must have rate, seed and frames")
    rate = cfg["rate"]
    if not validate.is_rate(rate):
        raise bad(f"config.rate {rate!r} is not in [{validate.MIN_RATE}, 1]")
    if cfg["seed"] is not None and not _is_count(cfg["seed"]):
        raise bad(f"config.seed {cfg['seed']!r} is not a non-negative integer")
    if not (_is_count(cfg["frames"]) and cfg["frames"] >= 1):
        raise bad(f"config.frames {cfg['frames']!r} is not a positive integer")
    if "stackmem" in cfg and not _is_count(cfg["stackmem"]):
        raise bad(f"config.stackmem {mdsafe.printable(repr(cfg['stackmem'])[:100])} is not a "
                  f"non-negative integer")
    if cfg.get("stacks", "full") not in STACKS_MODES:
        raise bad(f"config.stacks {mdsafe.printable(repr(cfg['stacks'])[:100])} is neither "
                  f"full nor site")
    if "stop" in cfg:
        # A run ended after N minor collections (OCAMLMEMPROF stop=N): the
        # gate's counted runs only, whose profiles are never read.
        raise bad(f"config.stop {mdsafe.printable(repr(cfg['stop'])[:100])}: the run was stopped "
                  f"early, so this profile describes a prefix of it and is not compared")
    live = cfg.get("live", "walk")
    if live == LIVE_UNDECIDED and not undecided_live:
        raise undecided_live_error(path)
    if live not in LIVE_MODES and live != LIVE_UNDECIDED:
        raise bad(f"config.live {mdsafe.printable(repr(live)[:100])} is neither walk, gc "
                  f"nor off")
    return version, cfg


def _check_gc(gc, bad) -> dict:
    if not isinstance(gc, dict):
        raise bad("gc is not an object")
    for k in GC_KEYS:
        if not _is_count(gc.get(k)):
            raise bad(f"gc.{k} is missing or not a non-negative integer at most 2^53")
    for k in GC_OPTIONAL_KEYS:
        if k in gc and not _is_count(gc[k]):
            raise bad(f"gc.{k} is not a non-negative integer at most 2^53")
    return {k: gc[k] for k in GC_KEYS + GC_OPTIONAL_KEYS if k in gc}


def _check_counts(obj, where: str, bad) -> None:
    if not isinstance(obj, dict):
        raise bad(f"{where} is not an object")
    for k in COUNT_KEYS:
        if not _is_count(obj.get(k)):
            raise bad(f"{where}.{k} is missing or not a non-negative integer at most 2^53")
    if obj["samples"] != obj["minor_samples"] + obj["major_samples"] + obj["custom_samples"]:
        raise bad(f"{where}: samples != minor + major + custom samples")
    if obj["collected_samples"] + obj["live_samples"] != obj["samples"]:
        raise bad(f"{where}: collected + live samples != samples")
    if PEAK_KEY in obj and not (_is_count(obj[PEAK_KEY]) and obj[PEAK_KEY] <= obj["samples"]):
        raise bad(f"{where}.{PEAK_KEY} is not a count at most samples")


def _check_stacks(stacks, totals, path: str, bad) -> None:
    tot_samples = tot_live = 0
    for i, st in enumerate(stacks):
        vals = stack_counts(st)
        if vals is None:
            explain_bad_stack(st, i, path)
        check_frames(stack_frames(st, i, path), i, path)
        peak_of(st, i, path)
        tot_samples += vals[SAMPLES]
        tot_live += vals[LIVE]
    if tot_samples != totals["samples"] or tot_live != totals["live_samples"]:
        raise bad("totals do not equal the sum over stacks (truncated file?)")


def parse_profile(doc, path: str, check_stacks: bool = True,
                  undecided_live: bool = False) -> Profile:
    """Validate a decoded profile.  With check_stacks=False the caller takes
    over validation of the stacks with this module's stack_counts,
    check_frames and explain_bad_stack (sites.group_stacks does, in the pass
    that groups them); the header is always checked here.  A profile of
    live=off is refused unless `undecided_live` (the viewer)."""
    bad = _malformed(path)
    version, cfg = _check_header(doc, path, bad, undecided_live)
    gc_out = _check_gc(doc["gc"], bad)
    _check_counts(doc["totals"], "totals", bad)
    stacks = doc["stacks"]
    if not isinstance(stacks, list):
        raise bad("stacks is not a list")
    peak = cfg.get("peak") == PEAK_EVENTS
    if not peak:
        _forget_peak(doc["totals"], stacks)
    if version >= 3:
        fill_zero_counts(stacks, COUNT_KEYS + ((PEAK_KEY,) if peak else ()))
    snap = pts = None
    if version >= 4 and "snapshot" in doc:
        snap = snapshot.parse_snapshot(doc["snapshot"], doc["frame_table"], path)
    if version >= 5 and "points" in doc:
        pts = points.parse_points(doc["points"], path)
    budgets = None
    if version == 6:
        budgets = profile_budgets.parse_budgets_section(doc["budgets"], path)
    if version >= 2:
        expand_frame_table(doc["frame_table"], stacks, path)
    if check_stacks:
        _check_stacks(stacks, doc["totals"], path, bad)
    return Profile(path=path, ocaml_version=doc["ocaml_version"],
                   backend=doc["backend"], argv=list(doc["argv"]),
                   rate=float(cfg["rate"]), seed=cfg["seed"], frames=cfg["frames"],
                   gc=gc_out, totals=doc["totals"], stacks=stacks,
                   stacks_mode=cfg.get("stacks", "full"), stackmem=cfg.get("stackmem"),
                   snapshot=snap, points=pts, live_mode=cfg.get("live", "walk"),
                   budgets=budgets)


# ---- Stacks: the one validator, shared with sites.group_stacks' hot loop.

SAMPLES, MINOR, MAJOR, CUSTOM, COLLECTED, LIVE = (
    COUNT_KEYS.index(k) for k in ("samples", "minor_samples", "major_samples",
                                  "custom_samples", "collected_samples", "live_samples"))
_COUNTS = operator.itemgetter(*COUNT_KEYS)
_FRAME_KEYS = frozenset(FRAME_KEYS)
_INT = {int}


def stack_counts(st):
    """The stack's counts (in COUNT_KEYS order) when they are valid counts
    satisfying the format's identities, else None (then explain_bad_stack
    says why).  Cheap: this runs once per stack."""
    try:
        vals = _COUNTS(st)
    except (KeyError, TypeError):
        return None
    if set(map(type, vals)) != _INT or min(vals) < 0 or max(vals) > validate.MAX_COUNT:
        return None
    if vals[SAMPLES] != vals[MINOR] + vals[MAJOR] + vals[CUSTOM] or \
            vals[COLLECTED] + vals[LIVE] != vals[SAMPLES]:
        return None
    return vals


def _forget_peak(totals: dict, stacks: list) -> None:
    """Counts at a peak of another definition (a runtime that took it at
    major-cycle ends, without config.peak) are not compared with today's:
    the profile is read as recording no peak."""
    totals.pop(PEAK_KEY, None)
    for st in stacks:
        if isinstance(st, dict):
            st.pop(PEAK_KEY, None)


def peak_of(st: dict, i: int, path: str):
    """A valid stack's peak_live_samples, or None when not recorded."""
    pk = st.get(PEAK_KEY)
    if pk is not None and (type(pk) is not int or pk < 0 or pk > st["samples"]):
        raise InputError(f"{path}: malformed profile: stacks[{i}].{PEAK_KEY} is not a count "
                         f"at most samples; regenerate it")
    return pk


def stack_frames(st: dict, i: int, path: str):
    """A valid stack's frames (not yet checked), or the InputError that
    says they are missing."""
    try:
        return st["frames"]
    except KeyError:
        raise InputError(f"{path}: malformed profile: stacks[{i}].frames is missing; "
                         f"regenerate it") from None


def check_frames(frames, i: int, path: str, where: str | None = None) -> None:
    """A stack's frames (or, with `where`, the frame table): a list of
    objects with the frame keys, typed."""
    where = where or f"stacks[{i}].frames"
    if type(frames) is not list:
        raise InputError(f"{path}: malformed profile: {where} is not a list; "
                         f"regenerate it")
    for j, fr in enumerate(frames):
        if type(fr) is not dict or not _FRAME_KEYS <= fr.keys():
            raise InputError(f"{path}: malformed profile: {where}[{j}] lacks "
                             f"file/line/function; regenerate it")
        fn, fl, ln = fr["function"], fr["file"], fr["line"]
        if not ((fn is None or type(fn) is str) and (fl is None or type(fl) is str)
                and (ln is None or validate.is_line(ln))):
            raise InputError(f"{path}: malformed profile: {where}[{j}] has a "
                             f"field of the wrong type; regenerate it")


def fill_zero_counts(stacks: list, keys: tuple) -> None:
    """Version 3: each stack lists only its counts that are not zero; give
    it the others as zeros, so that it reads as version 2's.  A stack that
    is not an object is left for the stack validator to name."""
    for st in stacks:
        if type(st) is dict:
            for k in keys:
                if k not in st:
                    st[k] = 0


def expand_frame_table(table, stacks: list, path: str) -> None:
    """Versions 2 and 3: check the frame table once, then replace each stack's
    list of indices by the table's frame objects (shared, not copied), so
    the stacks read as version 1's.  A stack that is not an object or
    whose frames are not a list is left for the stack validator to name."""
    check_frames(table, 0, path, where="frame_table")
    n = len(table)
    get = table.__getitem__
    for i, st in enumerate(stacks):
        idx = st.get("frames") if type(st) is dict else None
        if type(idx) is not list:
            continue
        for j, k in enumerate(idx):
            if type(k) is not int or not 0 <= k < n:
                raise InputError(f"{path}: malformed profile: stacks[{i}].frames[{j}] is "
                                 f"{k!r}, not an index into frame_table (0 to {n - 1}); "
                                 f"regenerate it")
        st["frames"] = list(map(get, idx))


def explain_bad_stack(st, i: int, path: str):
    """Raise the InputError that says what is wrong with stacks[i]."""
    where = f"stacks[{i}]"
    if not isinstance(st, dict):
        raise InputError(f"{path}: malformed profile: {where} is not an object; regenerate it")
    for k in COUNT_KEYS:
        if not _is_count(st.get(k)):
            raise InputError(f"{path}: malformed profile: {where}.{k} is missing or not a "
                             f"non-negative integer at most 2^53; regenerate it")
    if "frames" not in st:
        raise InputError(f"{path}: malformed profile: {where}.frames is missing; regenerate it")
    check_frames(st["frames"], i, path)
    raise InputError(f"{path}: malformed profile: {where} breaks samples = minor + major + "
                     f"custom or collected + live = samples; regenerate it")


def profile_files(directory: str) -> list[str]:
    """Every *.json in a directory, sorted, so profile sets sum deterministically."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError as e:
        raise InputError(f"{directory}: cannot list directory: {e}") from None
    return [os.path.join(directory, n) for n in names]


def check_totals(totals, total: int, live_total: int, peak_total: int, path: str) -> None:
    """The profile's totals equal the sums over its stacks (InputError)."""
    if totals is not None and (totals.get("samples") != total
                               or totals.get("live_samples") != live_total
                               or totals.get(PEAK_KEY, peak_total) != peak_total):
        raise InputError(f"{path}: malformed profile: totals do not equal the sum over "
                         f"stacks (truncated file?); regenerate it with the memprof-ci runtime")
