"""Checks on every value that enters the harness from outside.

Manifests, baselines, profiles, run directories, shard reports and the
command line are all untrusted: a pull request edits them, a benchmark
writes them, an artifact carries them between jobs.  This module holds the
primitive checks the readers share, so that one rule decides what a
"count" or a "finite number" is everywhere.

Invariants:
1. load_json returns a document with only finite numbers (NaN, Infinity
   and floats that overflow to infinity are rejected), decoded from UTF-8,
   nested at most MAX_DEPTH deep; every failure is an InputError naming the
   file, never a RecursionError or UnicodeDecodeError.
2. Counts are ints (not bools) in [0, MAX_COUNT]; MAX_COUNT (2^53) keeps
   every count exact as a float, which the statistics rely on.
3. regular_file refuses symlinks and anything that is not a regular file,
   so a planted link cannot make the harness read or judge another file.
4. Each checker raises the error class it is given with a message naming
   the place ("FILE: key.path ...") and says nothing else.
5. A line number is an int in [0, MAX_LINE] (nine decimal digits, as a
   baseline's line keys are written), a rate a finite number in
   [MIN_RATE, 1] (so that samples / rate stays finite), and a format
   version an int, never a bool.
"""

from __future__ import annotations

import json
import math
import os
import stat

from ..errors import InputError

MAX_COUNT = 2 ** 53
MAX_DEPTH = 64
MAX_LINE = 999_999_999
# The smallest sampling rate any reader accepts: 2^53 samples at it are
# still a finite number of bytes, far from overflow.
MIN_RATE = 1e-30


def is_count(v) -> bool:
    return type(v) is int and 0 <= v <= MAX_COUNT


def is_finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and \
        math.isfinite(v) and abs(v) <= 1e300


def count(v, where: str, err=InputError) -> int:
    if not is_count(v):
        raise err(f"{where} must be a non-negative integer at most 2^53, got {_short(v)}")
    return v


def is_line(v) -> bool:
    """A source line number: an int (not a bool) in [0, MAX_LINE]."""
    return type(v) is int and 0 <= v <= MAX_LINE


def is_rate(v) -> bool:
    """A sampling rate: a finite number in [MIN_RATE, 1]."""
    return is_finite(v) and MIN_RATE <= v <= 1


def is_version(v, expected) -> bool:
    """`v` is the format version `expected` (or one of them), as an int:
    JSON's `true` is not version 1."""
    want = expected if isinstance(expected, (tuple, list, set)) else (expected,)
    return type(v) is int and v in want


def finite(v, where: str, err=InputError, lo=None, hi=None,
           lo_open=False, hi_open=False) -> float:
    ok = is_finite(v)
    if ok and lo is not None:
        ok = v > lo if lo_open else v >= lo
    if ok and hi is not None:
        ok = v < hi if hi_open else v <= hi
    if not ok:
        rng = ""
        if lo is not None or hi is not None:
            rng = (f" in {'(' if lo_open else '['}{lo if lo is not None else '-inf'}, "
                   f"{hi if hi is not None else 'inf'}{')' if hi_open else ']'}")
        raise err(f"{where} must be a finite number{rng}, got {_short(v)}")
    return float(v)


def text(v, where: str, err=InputError, optional=False, limit=4096) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > limit:
        raise err(f"{where} must be a string of at most {limit} characters, got {_short(v)}")
    return v


def line_counts(m, where: str, unit: str = "samples") -> dict:
    """A baseline's {"line": count} object ("null" or "None": no line) as
    {line or None: count}."""
    if not isinstance(m, dict):
        raise InputError(f"{where} must be an object of line -> {unit}")
    out = {}
    for k, v in m.items():
        if k in ("null", "None"):
            line = None
        elif k.isascii() and k.isdigit() and len(k) <= 9:
            line = int(k)
        else:
            raise InputError(f"{where}: key {k[:40]!r} is not a line number")
        out[line] = count(v, f"{where}.{k}")
    return out


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def regular_file(path: str, what: str, err=InputError) -> None:
    """The path names a regular file, itself (not through a symlink)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise err(f"{path}: {what} not found") from None
    except OSError as e:
        raise err(f"{path}: cannot read {what}: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise err(f"{path}: {what} is a symbolic link; memprof-ci reads only regular files")
    if not stat.S_ISREG(st.st_mode):
        raise err(f"{path}: {what} is not a regular file")


def _bad_constant(name):
    raise ValueError(f"non-finite number {name}")


def _finite_float(s):
    v = float(s)
    if not math.isfinite(v):
        raise ValueError(f"number {s[:40]} overflows to infinity")
    return v


def _depth_ok(doc) -> bool:
    # Iterative, so a hostile document cannot exhaust the Python stack here.
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > MAX_DEPTH:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def loads(data: bytes, path: str, what: str):
    """Strict JSON decoding; see invariant 1."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_bad_constant,
                         parse_float=_finite_float)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: {what} is not valid UTF-8 (byte {e.start})") from None
    except RecursionError:
        raise InputError(f"{path}: {what} is nested too deeply to be a memprof-ci "
                         f"document") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: {what} is not valid JSON ({e.msg} at line "
                         f"{e.lineno}); regenerate it") from None
    except ValueError as e:
        raise InputError(f"{path}: {what} holds a {e}; memprof-ci documents hold "
                         f"only finite numbers") from None
    if not _depth_ok(doc):
        raise InputError(f"{path}: {what} is nested more than {MAX_DEPTH} levels deep")
    return doc


def load_json(path: str, what: str, regular: bool = False):
    """Read and strictly decode a JSON file (regular=True: no symlinks)."""
    if regular:
        regular_file(path, what)
    return loads(read_bytes(path, what), path, what)


def read_bytes(path: str, what: str) -> bytes:
    """A file's bytes; a missing, directory or unreadable file is one
    InputError naming the path and `what` it should have been."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: {what} is a directory, expected a file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read {what}: {e.strerror or e}") from None
