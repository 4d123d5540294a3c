"""How a site is named: its key and its file's location-independent form.

Job: the one spelling of a site key, "function @ file" (":line" under the
"line" grouping), shared by the sites grouped from sampled stacks
(sites.py) and those grouped from allocation points (pointsites.py), so
that the same code gets the same key from both.  Invariants: pure
functions of their arguments; a key never depends on where the project is
checked out (norm_file).
"""

from __future__ import annotations


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
