#!/usr/bin/env python3
"""has-label.py [--added-by-event] LABEL: is LABEL among the pull request's labels?

Reads the labels from the environment variable LABELS_JSON, which the workflow
sets to `${{ toJSON(github.event.pull_request.labels) }}` (the event payload,
never interpolated into a shell script). Prints `true` or `false` on stdout.

With --added-by-event, `true` means more: the event that started this run
added LABEL (EVENT_ACTION, from `github.event.action`, is `labeled` and
EVENT_LABEL, from `github.event.label.name`, names LABEL), so the label
applies to the commit it was added on. A LABEL that is on the pull request
but was added before this run's event (a push, another label, a reopening)
prints `earlier`.

Invariants:
  - LABELS_JSON may be unset, empty or `null` (push events): `false`;
  - otherwise it must be a JSON list whose items are label objects with a
    string `name` (as in the payload) or plain strings, else exit 2: a
    malformed payload never reads as "label present";
  - names (EVENT_LABEL too) are compared with str.casefold() after
    stripping surrounding whitespace, because GitHub treats label names
    case-insensitively;
  - with --added-by-event, `true` needs all three: LABEL in LABELS_JSON,
    EVENT_ACTION exactly `labeled`, EVENT_LABEL naming LABEL; anything
    missing is never `true`;
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


def same(a, b):
    return a.strip().casefold() == b.strip().casefold()


def has_label(raw, label):
    return any(same(name, label) for name in label_names(raw))


def main(argv):
    args = argv[1:]
    bound = args[:1] == ["--added-by-event"]
    if bound:
        args = args[1:]
    if len(args) != 1 or not args[0].strip():
        print("usage: has-label.py [--added-by-event] LABEL  (labels in $LABELS_JSON)", file=sys.stderr)
        return 2
    try:
        present = has_label(os.environ.get("LABELS_JSON"), args[0])
    except (ValueError, RecursionError) as err:  # json.JSONDecodeError is a ValueError
        print(f"has-label: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return 2
    if present and bound:
        added = (os.environ.get("EVENT_ACTION") == "labeled"
                 and same(os.environ.get("EVENT_LABEL") or "", args[0]))
        print("true" if added else "earlier")
        return 0
    print("true" if present else "false")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
