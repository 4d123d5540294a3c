"""How a site is named: its key and its file's location-independent form.

Job: the one spelling of a site key, "function @ file" (":line" under the
"line" grouping), shared by the sites grouped from sampled stacks
(grouping.py) and those grouped from allocation points (point_sites.py), so
that the same code gets the same key from both.  Invariants: pure
functions of their arguments; a key never depends on where the project is
checked out (norm_file).  Functions the compiler generates (caml_curryN
and its kin: is_generated) keep their names in keys; generated_what says
what they are, for the reports.
"""

from __future__ import annotations

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
