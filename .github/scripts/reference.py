#!/usr/bin/env python3
"""reference.py: main's recorded run as the judge's reference, and the drift.

    reference.py find --repo DIR --data-ref REF [--runs-path runs] --from COMMIT
                      [--accepted COMMIT] [--max-distance N]
                      [--committed-path PATH] [--manifest PATH]
                      --baselines DIR --out DIR [--record-out DIR]
    reference.py compose --committed DIR --reference DIR [--proposed DIR]
                         [--accept] --out DIR
    reference.py drift --title TEXT ACCEPTED_DIR NOW_DIR

find: walks the first-parent history of COMMIT (COMMIT itself first, at
distance 0) for the nearest commit C with a record REF:RUNS_PATH/C.json on the
data branch (written by record-run.sh on pushes to main only), and prints one
tab-separated line:

  recorded C DISTANCE REPLACED KEPT STALE
                      OUT holds the committed baselines of --baselines with
                      each one the record measured replaced by the record's
                      document, unless the record is stale for it; KEPT
                      lists (comma-separated) the committed ones the record
                      lacks, STALE those it is stale for ("-" for none)
  stale C DISTANCE STALE
                      the record is stale for every benchmark it measured
  none REASON         no record within N commits, or no data branch

A record is stale for a benchmark when, between C and the --accepted commit
(default COMMIT), whose committed baselines are --baselines, its committed
baseline COMMITTED_PATH/NAME.json changed in parsed content
(baseline.same_content: formatting is no change), or the manifest's entry
for it or its shared settings (everything but the `benchmark` list) did, as
parsed TOML. --record-out gets every document of the record for a committed
benchmark, stale or not (the drift's "now").

compose: the directories the harness judges with, given the committed
baselines (the accepted state), the reference find made (or the committed
baselines again) and the pull request's proposed baselines. A proposed
baseline is changed when its parsed content differs from the committed one
(added and removed files are changes); prints `changed NAME` per changed
benchmark, sorted, and writes
  OUT/reference  what the run is judged against: the reference, except that
                 with --accept each changed benchmark has its committed
                 baseline (what the label accepts against);
  OUT/strict     without --accept, only when it differs from OUT/reference:
                 the reference with each changed benchmark's committed
                 baseline; the run is judged against both and the worse
                 verdict stands;
  OUT/proposed   only with changes: the proposed file of each changed
                 benchmark and, for every unchanged one, the document of
                 OUT/reference, so the harness sees no change where there
                 is none.

drift: a Markdown table, per benchmark in both directories, of the bytes
allocated (all seeds) and the minor words in ACCEPTED_DIR (the committed
baselines) and NOW_DIR (a recorded run, or this run's measurement), for the
report: information, never a verdict.

Invariants:
  - the data branch is read as git objects only (ls-tree, cat-file, log):
    never checked out, never run; a record must be a regular blob (mode
    100644) no larger than history.MAX_RECORD_BYTES and pass
    history.read_record (every document a valid baseline of the benchmark
    it is filed under), and the data branch's history must be linear and
    add RUNS_PATH/C.json once, never modify, delete or re-add it (records
    are never replaced), else one line on stderr and exit 2;
  - OUT only ever holds NAME.json for names that are committed baselines in
    --baselines (regular files), so the record cannot add, remove or rename a
    benchmark of the judge; files are written atomically;
  - compose never lets a proposed file stand in for the reference: a
    proposed baseline reaches OUT/proposed only, and only when its content
    changed;
  - every text this prints into Markdown goes through memprof_ci.text.mdsafe;
  - exit 0 on an answer, 2 on bad input; an internal error is exit 2 too.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

from memprof_ci.inputs import atomicio
from memprof_ci.store import baseline as bl
from memprof_ci.store import run_records as history
from memprof_ci.errors import MemprofError
from memprof_ci.text.fmt import fmt_bytes, fmt_pct
from memprof_ci.text.mdsafe import printable, text

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


def check_history(args, commit):
    """The data branch only ever adds a record: a merge in its history, or
    a commit that modifies, deletes or re-adds RUNS_PATH/COMMIT.json, is
    a rewrite of recorded history, refused."""
    path = f"{args.runs_path}/{commit}.json"
    merges = git(args.repo, "rev-list", "--min-parents=2", "--max-count=1", args.data_ref).stdout
    if merges.strip():
        raise Bad(f"{args.data_ref} has a merge commit ({merges.strip()[:12]}): recorded history "
                  f"is a line of records; the recorded runs are refused")
    log = git(args.repo, "log", "--format=%x00%H", "--name-status", "--no-renames",
              args.data_ref, "--", path).stdout
    changes = []
    for entry in log.split("\0")[1:]:
        rev, _, rest = entry.partition("\n")
        for line in rest.splitlines():
            if line.strip():
                changes.append((rev.strip(), line.split("\t", 1)[0]))
    if [status for _rev, status in changes] != ["A"]:
        rewrite = next((rev for rev, status in changes if status != "A"), changes[0][0]
                       if changes else "?")
        raise Bad(f"{args.data_ref}:{path} was rewritten after it was recorded (commit "
                  f"{rewrite[:12]}: {len(changes)} changes, records are only ever added once); "
                  f"the recorded runs are refused")


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


def blob_at(repo, rev, path):
    """The bytes of rev:path, or None when rev has no such file."""
    proc = git(repo, "cat-file", "blob", f"{rev}:{path}", ok=(0, 128), binary=True)
    return proc.stdout if proc.returncode == 0 else None


def manifest_parts(raw):
    """(shared settings, {name: entry}) of a manifest's bytes, or None when
    it is absent or does not parse."""
    if raw is None:
        return None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    entries = doc.pop("benchmark", [])
    named = {}
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, dict) and isinstance(e.get("name"), str):
                named.setdefault(e["name"], []).append(e)
    return doc, named


def stale_names(args, commit, names):
    """The committed benchmarks for which the record of `commit` is stale
    (see the module's docstring), sorted."""
    accepted = args.accepted or args.from_commit
    stale = set()
    if args.manifest:
        then = manifest_parts(blob_at(args.repo, commit, args.manifest))
        now = manifest_parts(blob_at(args.repo, accepted, args.manifest))
        if then is None or now is None or then[0] != now[0]:
            stale.update(names)
        else:
            stale.update(n for n in names if then[1].get(n) != now[1].get(n))
    if args.committed_path:
        for name in names:
            f = f"{args.committed_path}/{name}.json"
            if not bl.same_content(blob_at(args.repo, commit, f), blob_at(args.repo, accepted, f)):
                stale.add(name)
    return sorted(stale)


def cmd_find(args):
    for p in [args.runs_path] + [x for x in (args.committed_path, args.manifest) if x]:
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
    check_history(args, commit)
    with tempfile.TemporaryDirectory() as tmp:
        doc = load_record(args, commit, tmp)
    names = committed_names(args.baselines)
    stale = stale_names(args, commit, names)
    replaced, kept = [], []
    for name in names:
        with open(bl.baseline_path(args.baselines, name), encoding="utf-8") as fh:
            committed = fh.read()
        rec = doc["benchmarks"].get(name)
        if rec is not None and args.record_out:
            atomicio.write_atomic(bl.baseline_path(args.record_out, name), bl.dumps(rec))
        if rec is not None and name not in stale:
            replaced.append(name)
            atomicio.write_atomic(bl.baseline_path(args.out, name), bl.dumps(rec))
        else:
            if rec is None:
                kept.append(name)
            atomicio.write_atomic(bl.baseline_path(args.out, name), committed)
    measured_stale = [n for n in stale if n in doc["benchmarks"]]
    if not replaced and measured_stale:
        print(f"stale\t{commit}\t{distance}\t{','.join(measured_stale)}")
        return 0
    # "-" for an empty list: a shell reading the line splits on tabs and
    # would merge two in a row.
    print(f"recorded\t{commit}\t{distance}\t{len(replaced)}\t{','.join(kept) or '-'}\t"
          f"{','.join(measured_stale) or '-'}")
    return 0


def read_bytes(directory, name):
    p = bl.baseline_path(directory, name)
    if os.path.islink(p) or not os.path.isfile(p):
        return None
    with open(p, "rb") as fh:
        return fh.read()


def as_text(raw, where, name):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Bad(f"{where} baseline {name}.json is not UTF-8") from None


def proposed_names(directory):
    if not directory or not os.path.isdir(directory):
        return []
    return sorted(f[:-5] for f in os.listdir(directory)
                  if f.endswith(".json") and NAME_RE.fullmatch(f[:-5]))


def cmd_compose(args):
    committed = committed_names(args.committed)
    if args.proposed is not None and not os.path.isdir(args.proposed):
        raise Bad(f"--proposed {printable(args.proposed)[:200]}: not a directory")
    names = sorted(set(committed) | set(proposed_names(args.proposed)))
    changed = [] if args.proposed is None else [
        n for n in names
        if not bl.same_content(read_bytes(args.committed, n), read_bytes(args.proposed, n))]
    reference = {n: read_bytes(args.reference, n) for n in committed_names(args.reference)}
    strict = dict(reference)
    for n in changed:
        if n in committed:
            strict[n] = read_bytes(args.committed, n)
    used = strict if args.accept else reference
    for n, raw in used.items():
        atomicio.write_atomic(bl.baseline_path(os.path.join(args.out, "reference"), n),
                              as_text(raw, "the reference's", n))
    if not args.accept and strict != reference:
        for n, raw in strict.items():
            atomicio.write_atomic(bl.baseline_path(os.path.join(args.out, "strict"), n),
                                  as_text(raw, "the committed", n))
    if changed:
        prop = os.path.join(args.out, "proposed")
        os.makedirs(prop, exist_ok=True)
        for n in names:
            if n in changed:
                raw = read_bytes(args.proposed, n)
                if raw is not None:
                    shutil.copyfile(bl.baseline_path(args.proposed, n), bl.baseline_path(prop, n))
            elif n in used:
                atomicio.write_atomic(bl.baseline_path(prop, n), as_text(used[n], "the reference's", n))
    for n in changed:
        print(f"changed {n}")
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
        # committed_names() admits only [A-Za-z0-9_.-] names: inert in a code span.
        rows.append(f"| `{name}` | {fmt_bytes(ba)} | {fmt_bytes(bb)} | "
                    f"{fmt_pct(bb / ba) if ba else '-'} | {words} |")
    print(f"\n### {text(args.title)}\n")
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
    f.add_argument("--committed-path", help="the baselines directory in the repository")
    f.add_argument("--manifest", help="the manifest's path in the repository")
    f.add_argument("--baselines", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--record-out")
    c = sub.add_parser("compose")
    c.add_argument("--committed", required=True)
    c.add_argument("--reference", required=True)
    c.add_argument("--proposed")
    c.add_argument("--accept", action="store_true")
    c.add_argument("--out", required=True)
    d = sub.add_parser("drift")
    d.add_argument("--title", required=True)
    d.add_argument("accepted")
    d.add_argument("now")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "find" and not 0 <= args.max_distance <= 10000:
            raise Bad("--max-distance must be in [0, 10000]")
        return {"find": cmd_find, "compose": cmd_compose, "drift": cmd_drift}[args.cmd](args)
    except Bad as e:
        print(f"reference.py: {e}", file=sys.stderr)
        return 2
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"reference.py: internal error: {printable(str(e))[:300]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
