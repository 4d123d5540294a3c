#!/usr/bin/env python3
"""has-label.py LABEL: is LABEL among the pull request's labels?

Reads the labels from the environment variable LABELS_JSON, which the workflow
sets to `${{ toJSON(github.event.pull_request.labels) }}` (the event payload,
never interpolated into a shell script). Prints `true` or `false` on stdout.

Invariants:
  - LABELS_JSON may be unset, empty or `null` (push events): `false`;
  - otherwise it must be a JSON list whose items are label objects with a
    string `name` (as in the payload) or plain strings, else exit 2: a
    malformed payload never reads as "label present";
  - names are compared with str.casefold() after stripping surrounding
    whitespace, because GitHub treats label names case-insensitively;
    nothing else is normalised and no pattern matching is done;
  - at most 1 MiB of LABELS_JSON is read; the value is never executed.
"""
import json
import os
import sys

MAX_BYTES = 1 << 20


def label_names(raw):
    raw = (raw or "").strip()
    if raw in ("", "null"):
        return []
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ValueError("LABELS_JSON is larger than 1 MiB")
    doc = json.loads(raw)
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise ValueError(f"LABELS_JSON must be a JSON list, got {type(doc).__name__}")
    names = []
    for item in doc:
        if isinstance(item, dict):
            item = item.get("name")
        if not isinstance(item, str):
            raise ValueError(f"label without a string name: {item!r:.80}")
        names.append(item)
    return names


def has_label(raw, label):
    want = label.strip().casefold()
    return any(name.strip().casefold() == want for name in label_names(raw))


def main(argv):
    if len(argv) != 2 or not argv[1].strip():
        print("usage: has-label.py LABEL  (labels in $LABELS_JSON)", file=sys.stderr)
        return 2
    try:
        present = has_label(os.environ.get("LABELS_JSON"), argv[1])
    except (ValueError, RecursionError) as err:  # json.JSONDecodeError is a ValueError
        print(f"has-label: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return 2
    print("true" if present else "false")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
