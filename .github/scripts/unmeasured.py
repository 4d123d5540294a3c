#!/usr/bin/env python3
"""unmeasured.py RUN_DIR...: benchmarks whose profiling overhead a run left out.

judge.sh runs it (the trusted checkout's copy) when the gate measures the
overhead: a build job that profiled with --no-overhead, or a run.json that
says `"overhead": null`, would otherwise make the harness skip the overhead
check without a word. Prints, one per line and sorted, the benchmarks of
each RUN_DIR/run.json that have no error (an error is already a failure)
and no overhead record.

Invariants:
  - reads only RUN_DIR/run.json, as JSON data (a regular file, not a
    symlink, at most 64 MiB); never the profiles, never runs anything;
  - a RUN_DIR without run.json is skipped (judge.sh reports missing runs);
  - a record is "present" if it is a JSON object: whether it is valid is
    the harness's to decide (it refuses a malformed one);
  - a run.json that cannot be read, whose `benchmarks` is not an object or
    names something that is not a benchmark name, is one line on stderr and
    exit 2; otherwise exit 0.
"""
import json
import os
import re
import stat
import sys

MAX_BYTES = 64 << 20
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


def unmeasured(run_dir):
    path = os.path.join(run_dir, "run.json")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is not a regular file")
    with open(path, "rb") as fh:
        raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ValueError(f"{path} is larger than {MAX_BYTES} bytes")
    doc = json.loads(raw)
    benches = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benches, dict):
        raise ValueError(f"{path}: `benchmarks` must be an object")
    bad = [n for n in benches if not NAME_RE.fullmatch(n)]
    if bad:
        raise ValueError(f"{path}: {bad[0][:60]!r} is not a benchmark name")
    return [name for name, b in benches.items()
            if not (isinstance(b, dict) and (b.get("error") or isinstance(b.get("overhead"), dict)))]


def main(argv):
    if len(argv) < 2:
        print("usage: unmeasured.py RUN_DIR...", file=sys.stderr)
        return 2
    names = []
    try:
        for run_dir in argv[1:]:
            names += unmeasured(run_dir)
    except (OSError, ValueError, RecursionError) as err:  # json.JSONDecodeError is a ValueError
        print(f"unmeasured: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(f"{n}\n" for n in sorted(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
