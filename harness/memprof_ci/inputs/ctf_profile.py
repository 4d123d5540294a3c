"""A memtrace CTF trace as the harness's in-memory profile.

Job: load_ctf(path) reads a trace (ctf.py decodes it) and returns the same
profile.Profile that profile.load_profile gives for a JSON profile, so that
`memprof-ci compare` and the site model treat a trace like a profile;
parse_ctf does the same for bytes already read, and can hand each event
with its time to an observer in the same pass (`memprof-ci view` draws
live words over time and lifetimes from them).

Invariants:
- One stack per distinct backtrace; per stack: blocks = alloc events,
  samples = Σ nsamples, minor/major/custom samples by the event's source
  (memtrace's external allocations count as custom), words = length + 1
  per block (length for external ones, which have no header), promoted
  and collected samples from the promote and collect events of the
  stack's blocks, live = samples - collected.  For a trace the runtime
  wrote beside a profile, these equal the profile's counts.
- peak_live_samples is each stack's live samples at the peak as
  memtrace_viewer finds it: over the events in file order, the first
  moment just after an alloc when Σ nsamples allocated minus collected is
  highest.  A promote or collect that comes before its object's alloc
  (another domain's packet first) is applied right after the alloc.  For
  a single-domain trace the runtime wrote beside a profile, this equals
  the profile's peak_live_samples (runtime-patch/format/profile-format.md,
  "The peak").
- Frames are innermost first, inlined frames expanded, as in profile
  format 1: a backtrace entry with locations L1 (outermost) .. Ln gives
  Ln .. L1, all but L1 inlined; an entry without locations gives one
  unknown frame (all fields null).
- rate comes from the trace info; seed and frames from the context when
  it is an OCAMLMEMPROF setting (the runtime writes it there), else seed
  is None and frames the longest backtrace.  A context with live=off
  makes a profile of undecided liveness (live_mode "off"): the exit
  collected nothing, so live counts only blocks not collected by then.
  The GC counters are unknown and given as 0.
- Any malformed input raises InputError naming the file (exit 2).
"""

from __future__ import annotations

import os
import re

from . import ctf, validate
from ..errors import InputError
from .profile import COUNT_KEYS, PEAK_KEY, Profile

_SETTING = re.compile(r"(?:^|,)(rate|seed|frames)=([0-9.eE+-]+)(?=,|$)")
_LIVE = re.compile(r"(?:^|,)live=(walk|gc|off)(?=,|$)")
DEFAULT_FRAMES = 16      # the runtime's frames= default
_UNKNOWN = {"file": None, "line": None, "col_start": None, "col_end": None,
            "function": None, "inlined": False}


def is_ctf_file(path: str) -> bool:
    """Whether the file starts with the CTF magic number."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ctf.MAGIC.to_bytes(4, "little")
    except OSError:
        return False


def _frames(bt: tuple, locations: dict, path: str) -> list:
    out = []
    for code in reversed(bt):
        locs = locations.get(code)
        if locs is None:
            raise InputError(f"{path}: malformed memtrace trace: backtrace entry "
                             f"{code:#x} has no location event")
        if not locs:
            out.append(dict(_UNKNOWN))
        for i in range(len(locs) - 1, -1, -1):
            f, line, c0, c1, fn = locs[i]
            if line == 0 and c0 == 0xFF and c1 == 0x3FF:
                # Location.none (OCaml 5.4's bytecode has such frames): the
                # writer saturates its columns of -1, as a profile keeps them.
                c0 = c1 = -1
            out.append({"file": f, "line": line, "col_start": c0, "col_end": c1,
                        "function": fn, "inlined": i > 0})
    return out


def _count(stacks: dict, objs: dict, ev: tuple, path: str, moves: list) -> None:
    """Count one event; `moves` receives (stack, ±nsamples) per change of
    the live samples, in event order."""
    kind = ev[0]
    if kind == "alloc":
        _, oid, length, nsamples, source, bt, _dom = ev
        st = stacks.get(bt)
        if st is None:
            st = stacks[bt] = dict.fromkeys(COUNT_KEYS + (PEAK_KEY,), 0)
        st["blocks"] += 1
        st["samples"] += nsamples
        st["words"] += length if source == "external" else length + 1
        key = {"minor": "minor_samples", "major": "major_samples"}.get(source, "custom_samples")
        st[key] += nsamples
        early = objs.pop(oid, (None, set()))[1]
        objs[oid] = (st, nsamples)
        moves.append((st, nsamples))
        for k in sorted(early, reverse=True):     # promote, then collect
            _count(stacks, objs, (k, oid, _dom), path, moves)
        return
    _, oid, _dom = ev
    rec = objs.get(oid)
    if rec is None or rec[0] is None:
        # Another domain's packet may come first: settled at its alloc.
        early = objs.setdefault(oid, (None, set()))[1]
        if kind in early:
            raise InputError(f"{path}: malformed memtrace trace: object {oid} has "
                             f"two {kind} events")
        early.add(kind)
        return
    st, nsamples = rec
    st["promoted_samples" if kind == "promote" else "collected_samples"] += nsamples
    if kind == "collect":
        del objs[oid]
        moves.append((st, -nsamples))


def _peak(moves: list) -> None:
    """Set each stack's peak_live_samples from the live-sample moves."""
    total = best = 0
    at = -1
    for i, (_, n) in enumerate(moves):
        total += n
        if total > best:
            best, at = total, i
    for st, n in moves[:at + 1]:
        st["peak_live_samples"] += n


def load_ctf(path: str) -> Profile:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    return parse_ctf(data, path)


def parse_ctf(data: bytes, path: str, observe=None) -> Profile:
    """The trace in `data` (read from `path`) as a Profile.  `observe`, if
    given, is called once per event, in file order, with the event (ctf.py's
    tuple) and its time in microseconds since the trace's start, during the
    one decoding pass; a malformed trace raises InputError all the same."""
    stacks: dict = {}
    objs: dict = {}
    moves: list = []
    try:
        info, evs, locations = ctf.events(data, timed=observe is not None)
        if observe is None:
            for ev in evs:
                _count(stacks, objs, ev, path, moves)
        else:
            start = info["start"]
            for ev, t in evs:
                _count(stacks, objs, ev, path, moves)
                observe(ev, t - start)
    except ctf.CtfError as e:
        raise InputError(f"{path}: malformed memtrace trace: {e}") from None
    orphan = next((k for k, v in objs.items() if v[0] is None), None)
    if orphan is not None:
        raise InputError(f"{path}: malformed memtrace trace: object {orphan} is promoted "
                         f"or collected but never allocated")
    rate = info["sample_rate"]
    if not validate.is_rate(rate):
        raise InputError(f"{path}: malformed memtrace trace: sample rate {rate!r} "
                         f"is not in [{validate.MIN_RATE}, 1]")
    _peak(moves)
    setting = dict(_SETTING.findall(info["context"]))
    out = []
    totals = dict.fromkeys(COUNT_KEYS + (PEAK_KEY,), 0)
    for bt, st in stacks.items():
        st["live_samples"] = st["samples"] - st["collected_samples"]
        for k in totals:
            totals[k] += st[k]
        out.append(dict(st, frames=_frames(bt, locations, path)))
    depth = max((len(bt) for bt in stacks), default=1)
    return Profile(path=path, ocaml_version="", backend="native",
                   argv=[os.path.basename(info["executable"])], rate=float(rate),
                   seed=int(setting["seed"]) if "seed" in setting and "rate" in setting
                   else None,
                   frames=int(setting.get("frames", DEFAULT_FRAMES if "rate" in setting
                                          else depth)),
                   gc={}, totals=totals, stacks=out,
                   live_mode=m.group(1) if (m := _LIVE.search(info["context"])) else "walk")
