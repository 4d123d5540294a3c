#!/usr/bin/env python3
"""shard_plan.py [COUNT]: turn a requested shard count into GitHub step outputs.

Prints `count=N` and `matrix=[1,...,N]` (JSON for `fromJSON` in a job matrix)
on stdout, and appends them to $GITHUB_OUTPUT when that is set.

Invariants:
  - an empty or missing COUNT means 1 (unsharded);
  - COUNT must be a plain decimal integer in 1..MAX_SHARDS, else exit 2 and
    print nothing to $GITHUB_OUTPUT (a typo in a repository variable must not
    silently turn into a single shard or a 1000-job matrix);
  - the matrix always lists exactly the shards 1..N, each once, in order.
"""
import json
import os
import re
import sys

MAX_SHARDS = 32


def plan(raw):
    raw = (raw or "").strip()
    if raw == "":
        raw = "1"
    if not re.fullmatch(r"[0-9]{1,3}", raw):
        raise ValueError(f"shard count must be an integer, got {raw!r}")
    count = int(raw)
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"shard count must be between 1 and {MAX_SHARDS}, got {count}")
    return {"count": str(count), "matrix": json.dumps(list(range(1, count + 1)), separators=(",", ":"))}


def main(argv):
    if len(argv) > 2:
        print("usage: shard_plan.py [COUNT]", file=sys.stderr)
        return 2
    try:
        outputs = plan(argv[1] if len(argv) == 2 else "")
    except ValueError as err:
        print(f"shard_plan: {err}", file=sys.stderr)
        return 2
    lines = "".join(f"{key}={value}\n" for key, value in outputs.items())
    sys.stdout.write(lines)
    out = os.environ.get("GITHUB_OUTPUT")
    if out:
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
