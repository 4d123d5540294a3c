"""Which frame of a stack is its site, and how a site is named: its key and
its file's location-independent form.

Job: the one spelling of a site key, "function @ file" (":line" under the
"line" grouping), shared by the sites grouped from sampled stacks
(grouping.py) and those grouped from allocation points (point_sites.py), so
that the same code gets the same key from both.  Invariants: pure
functions of their arguments; a key never depends on where the project is
checked out (norm_file); classify picks the site frame from the frames'
function and file names alone, never their lines: the innermost known
frame outside the standard library (is_stdlib), and the stdlib function
it entered it through ("via").  Functions the compiler generates (caml_curryN
and its kin: is_generated) keep their names in keys; generated_what says
what they are, for the reports.
"""

from __future__ import annotations

import os
import re

# Functions the native compiler writes itself, with no source location:
# caml_curryN[_M[_app]] (partial application), caml_applyN (a call of a
# closure whose arity is unknown), caml_tuplifyN (a function taking a
# tuple called with its components), caml_sendN (a method call).
_GENERATED = re.compile(r"caml_(curry|apply|tuplify|send)\d+(_\d+)*(_app)?")
_GENERATED_WHAT = {"curry": "compiler-generated partial application",
                   "apply": "compiler-generated call of a closure of unknown arity",
                   "tuplify": "compiler-generated tuple argument unpacking",
                   "send": "compiler-generated method call"}


def is_generated(function) -> bool:
    """The function is code the compiler generated (caml_curry2, ...)."""
    return bool(function) and _GENERATED.fullmatch(function) is not None


def generated_what(function) -> str | None:
    """What a compiler-generated function does, in words, or None."""
    m = _GENERATED.fullmatch(function) if function else None
    return _GENERATED_WHAT[m.group(1)] if m else None


UNKNOWN = "<unknown>"   # the site of a stack with no known frame
_STDLIB_FN_PREFIXES = ("Stdlib", "Camlinternal", "Std_exit")


def is_stdlib(frame: dict) -> bool:
    fn = frame.get("function")
    if fn:
        return fn.startswith(_STDLIB_FN_PREFIXES)
    f = frame.get("file")
    if f:
        # Only names that cannot be user modules: a user's own list.ml is
        # recognised as user code by its (non-Stdlib) function name above.
        base = os.path.basename(f)
        return base in ("stdlib.ml", "std_exit.ml") or base.startswith("camlinternal")
    return False


def is_known(frame: dict) -> bool:
    """The frame names a function or a file (a C frame may name neither)."""
    return frame.get("function") is not None or frame.get("file") is not None


def classify(frames: list, grouping: str):
    """Return (index of the site frame or None, file, function, via).

    Depends only on the frames' function and file names, never on lines,
    which is what lets callers memoise it on those names.
    """
    idx = None
    if grouping == "innermost":
        for i, fr in enumerate(frames):
            if is_known(fr):
                idx = i
                break
    else:
        first_known = None
        for i, fr in enumerate(frames):
            if not is_known(fr):
                continue
            if first_known is None:
                first_known = i
            if not is_stdlib(fr):
                idx = i
                break
        if idx is None:
            idx = first_known
    if idx is None:
        return None, None, None, None
    fr = frames[idx]
    fn, fl = fr.get("function"), norm_file(fr.get("file"))
    via = None
    if grouping != "innermost" and not is_stdlib(fr):
        # The entry point into the stdlib is the nearest known frame inside
        # the site; deeper stdlib frames are implementation detail.
        for j in range(idx - 1, -1, -1):
            if is_known(frames[j]):
                if is_stdlib(frames[j]):
                    via = frames[j].get("function") or frames[j].get("file")
                break
    return idx, fl, fn, via


def norm_file(f):
    """Location-independent file name for site keys.

    Compilers record absolute paths when given absolute paths, and a CI
    checkout lives elsewhere than a developer's clone; keeping only the last
    two components of an absolute path (".../bench/foo.ml" -> "bench/foo.ml")
    makes baselines portable.  Relative paths are kept as they are.
    """
    if f and f.startswith("/"):
        return "/".join(f.rsplit("/", 2)[-2:])
    return f


def site_label(function, file, line=None) -> str:
    where = file if file is not None else "?"
    if line is not None:
        where = f"{where}:{line}"
    return f"{function if function is not None else '?'} @ {where}"
