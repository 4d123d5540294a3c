#!/usr/bin/env python3
"""reference.py: main's recorded run as the judge's reference, and the drift.

    reference.py find --repo DIR --data-ref REF [--runs-path runs] --from COMMIT
                      [--accepted COMMIT] [--max-distance N] [--watch PATH]...
                      --baselines DIR --out DIR
    reference.py drift --title TEXT ACCEPTED_DIR NOW_DIR

find: walks the first-parent history of COMMIT (COMMIT itself first, at
distance 0) for the nearest commit C with a record REF:RUNS_PATH/C.json on the
data branch (written by record-run.sh on pushes to main only), and prints one
tab-separated line:

  recorded C DISTANCE REPLACED KEPT  OUT holds the committed baselines of
                                     --baselines with each one the record
                                     measured replaced by the record's
                                     document; KEPT lists (comma-separated)
                                     the committed ones the record lacks
  stale C DISTANCE                   a --watch path (the baselines, the
                                     manifest) differs between C and the
                                     --accepted commit (default COMMIT), whose
                                     committed baselines are --baselines: the
                                     accepted reference changed since C
  none REASON                        no record within N commits, or no data
                                     branch

drift: a Markdown table, per benchmark in both directories, of the bytes
allocated (all seeds) and the minor words in ACCEPTED_DIR (the committed
baselines) and NOW_DIR (a recorded run, or this run's measurement), for the
report: information, never a verdict.

Invariants:
  - the data branch is read as git objects only (ls-tree, cat-file): never
    checked out, never run; a record must be a regular blob (mode 100644) no
    larger than history.MAX_RECORD_BYTES and pass history.read_record (every
    document a valid baseline of the benchmark it is filed under), else one
    line on stderr and exit 2;
  - OUT only ever holds NAME.json for names that are committed baselines in
    --baselines (regular files), so the record cannot add, remove or rename a
    benchmark of the judge; files are written atomically;
  - exit 0 on an answer, 2 on bad input; an internal error is exit 2 too.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from memprof_ci import atomicio
from memprof_ci import baseline as bl
from memprof_ci import history
from memprof_ci.errors import MemprofError
from memprof_ci.fmt import fmt_bytes, fmt_pct
from memprof_ci.mdsafe import printable

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
PATH_RE = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*")


class Bad(Exception):
    """Bad input: one line, exit 2."""


def git(repo, *args, ok=(0,), binary=False):
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=not binary,
                          timeout=120)
    if proc.returncode not in ok:
        err = proc.stderr if not binary else proc.stderr.decode("utf-8", "replace")
        lines = err.strip().splitlines()
        raise Bad(f"git {args[0]} failed: {printable(lines[-1] if lines else '')[:200]}")
    return proc


def committed_names(directory):
    if not os.path.isdir(directory):
        return []
    names = []
    for f in sorted(os.listdir(directory)):
        p = os.path.join(directory, f)
        if f.endswith(".json") and NAME_RE.fullmatch(f[:-5]) and not os.path.islink(p) \
                and os.path.isfile(p):
            names.append(f[:-5])
    return names


def nearest(args):
    """(commit, distance) of the nearest recorded first-parent ancestor, or None."""
    revs = git(args.repo, "rev-list", "--first-parent", f"--max-count={args.max_distance + 1}",
               args.from_commit).stdout.split()
    for distance, c in enumerate(revs):
        ls = git(args.repo, "ls-tree", "-z", args.data_ref, "--",
                 f"{args.runs_path}/{c}.json").stdout
        if not ls:
            continue
        meta, _, path = ls.rstrip("\0").partition("\t")
        mode, kind, _obj = meta.split(" ")
        if mode != "100644" or kind != "blob":
            raise Bad(f"{args.data_ref}:{path}: not a regular file (mode {mode}); "
                      f"the recorded runs are refused")
        return c, distance
    return None


def load_record(args, commit, tmp):
    obj = f"{args.data_ref}:{args.runs_path}/{commit}.json"
    size = int(git(args.repo, "cat-file", "-s", obj).stdout.strip())
    if size > history.MAX_RECORD_BYTES:
        raise Bad(f"{obj}: larger than {history.MAX_RECORD_BYTES} bytes")
    blob = git(args.repo, "cat-file", "blob", obj, binary=True).stdout
    path = os.path.join(tmp, f"{commit}.json")
    with open(path, "wb") as fh:
        fh.write(blob)
    try:
        return history.read_record(path, commit)[1]
    except MemprofError as e:
        raise Bad(f"the recorded run {obj} is refused: "
                  f"{printable(str(e).replace(path, 'record'))[:300]}") from None


def cmd_find(args):
    for p in [args.runs_path] + args.watch:
        if not PATH_RE.fullmatch(p) or ".." in p.split("/"):
            raise Bad(f"{p!r}: not a plain relative path")
    for flag, c in (("--from", args.from_commit), ("--accepted", args.accepted)):
        if c is not None and not re.fullmatch(r"[0-9a-f]{40}(?:[0-9a-f]{24})?", c):
            raise Bad(f"{flag} {printable(c)[:80]!r}: not a full commit id")
    if git(args.repo, "rev-parse", "--verify", "--quiet", f"{args.data_ref}^{{commit}}",
           ok=(0, 1)).returncode != 0:
        print(f"none\tthere is no data branch ({args.data_ref}) yet")
        return 0
    found = nearest(args)
    if found is None:
        print(f"none\tno recorded run among the {args.max_distance + 1} first-parent commits "
              f"up to {args.from_commit[:12]}")
        return 0
    commit, distance = found
    if args.watch and git(args.repo, "diff", "--quiet", commit, args.accepted or args.from_commit,
                          "--",
                          *args.watch, ok=(0, 1)).returncode == 1:
        print(f"stale\t{commit}\t{distance}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        doc = load_record(args, commit, tmp)
    names = committed_names(args.baselines)
    replaced, kept = [], []
    for name in names:
        with open(bl.baseline_path(args.baselines, name), encoding="utf-8") as fh:
            text = fh.read()
        rec = doc["benchmarks"].get(name)
        if rec is not None:
            text = bl.dumps(rec)
            replaced.append(name)
        else:
            kept.append(name)
        atomicio.write_atomic(bl.baseline_path(args.out, name), text)
    print(f"recorded\t{commit}\t{distance}\t{len(replaced)}\t{','.join(kept)}")
    return 0


def cmd_drift(args):
    rows = []
    for name in sorted(set(committed_names(args.accepted)) & set(committed_names(args.now))):
        try:
            a = bl.load_baseline(bl.baseline_path(args.accepted, name), name)
            b = bl.load_baseline(bl.baseline_path(args.now, name), name)
        except MemprofError as e:
            raise Bad(printable(str(e))[:300]) from None
        ba, bb = a.bytes_of(a.total_samples), b.bytes_of(b.total_samples)
        wa, wb = (a.gc or {}).get("minor_words"), (b.gc or {}).get("minor_words")
        words = fmt_pct(wb / wa) if wa and wb is not None else "-"
        rows.append(f"| `{name}` | {fmt_bytes(ba)} | {fmt_bytes(bb)} | "
                    f"{fmt_pct(bb / ba) if ba else '-'} | {words} |")
    print(f"\n### {args.title}\n")
    print("Information only: this never fails the check.\n")
    if not rows:
        print("No benchmark to compare.")
        return 0
    print("| benchmark | allocated (accepted baselines) | allocated (now) | change | "
          "minor words change |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="reference.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("find")
    f.add_argument("--repo", required=True)
    f.add_argument("--data-ref", required=True)
    f.add_argument("--runs-path", default="runs")
    f.add_argument("--from", dest="from_commit", required=True)
    f.add_argument("--accepted", help="the commit whose committed baselines are --baselines")
    f.add_argument("--max-distance", type=int, default=50)
    f.add_argument("--watch", action="append", default=[])
    f.add_argument("--baselines", required=True)
    f.add_argument("--out", required=True)
    d = sub.add_parser("drift")
    d.add_argument("--title", required=True)
    d.add_argument("accepted")
    d.add_argument("now")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "find" and not 0 <= args.max_distance <= 10000:
            raise Bad("--max-distance must be in [0, 10000]")
        return cmd_find(args) if args.cmd == "find" else cmd_drift(args)
    except Bad as e:
        print(f"reference.py: {e}", file=sys.stderr)
        return 2
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"reference.py: internal error: {printable(str(e))[:300]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
