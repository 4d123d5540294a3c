#!/usr/bin/env python3
"""capped_read.py: reading an input file whole, up to a size cap, for the
gate's scripts. Not run on its own: judge_policy.py and bench_sets.py
import it.

read_capped(path, cap, error) returns the file's bytes, or raises `error`
(an Exception class) with one line naming the file.

Invariants:
  - never more than cap + 1 bytes are read;
  - a file that cannot be read, or is larger than `cap` bytes, is `error`
    with the path in its message, never an OSError.
"""


def read_capped(path, cap, error):
    try:
        with open(path, "rb") as fh:
            raw = fh.read(cap + 1)
    except OSError as err:
        raise error(f"{path}: {err.strerror}") from None
    if len(raw) > cap:
        raise error(f"{path}: larger than {cap} bytes")
    return raw
