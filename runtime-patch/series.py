#!/usr/bin/python3
"""The runtime patch series: apply it, check it, and report it against a
new upstream tree.

How the series is laid out (runtime-patch/patches/):

1. One file per feature, `NN-name.patch`, in the order the features build
   on each other. Each opens with a paragraph saying what it does; the
   design comment it adds to an upstream file is its own part of that
   file's design comment.
2. The hunks that are the same on every supported release live in
   `patches/NN-name.patch`, cut against the default release
   (`patches/default-version`). A hunk that differs on a release, and a
   backport that a release lacks, lives in `patches/VERSION/NN-name.patch`.
3. `patches/VERSION/series` lists, in order, the files applied for that
   release (paths relative to patches/), as quilt's series file does.
   A release's own file of a feature comes right after the shared one.
4. Every file applies with `patch -p1 --fuzz=0`. On the default release
   nothing moves either: every hunk lands at the line its header names.
   On another release the shared hunks may land some lines away
   (an offset: the upstream file differs above them), never with fuzz;
   that release's own files land exactly.

Usage (from anywhere; paths are the caller's):
  series.py apply VERSION TREE     apply the series to TREE, in place
  series.py check VERSION TREE     apply to a copy of TREE under the rules
                                   of 4; one line per broken rule, exit 1
  series.py report TREE [--like V] which patches of V's series (default:
                                   the default release) apply to TREE, and
                                   which hunks fail, with their files: the
                                   first step of a port to a new release
  series.py list VERSION           the patch files of VERSION's series
Exit codes: 0 clean, 1 a rule broken or a hunk failed, 2 usage or input
error.
"""

import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

PATCHES = pathlib.Path(__file__).resolve().parent / "patches"


class SeriesError(Exception):
    """Bad input: an unknown release, a missing file, a tree that is not OCaml's."""


def default_version():
    return (PATCHES / "default-version").read_text().strip()


def versions():
    return sorted(p.parent.name for p in PATCHES.glob("*/series"))


def series(version):
    """The patch files of `version`'s series, in order."""
    path = PATCHES / version / "series"
    if not path.is_file():
        raise SeriesError(f"no series for OCaml {version!r} (supported: {', '.join(versions())})")
    files = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        p = PATCHES / line
        if not p.is_file():
            raise SeriesError(f"{path}: lists {line}, which does not exist")
        files.append(p)
    return files


def hunk_count(patch):
    return sum(1 for line in patch.read_text().splitlines() if line.startswith("@@ "))


# GNU patch's words for each hunk that does not land exactly.
_HUNK = re.compile(r"Hunk #(\d+) (succeeded|FAILED) at (\d+)"
                   r"(?: with fuzz (\d+))?(?: \(offset (-?\d+) lines?\))?")
_FILE = re.compile(r"^patching file (\S+)")


def run_patch(tree, patch, dry_run=False):
    """Apply `patch` to `tree` with no fuzz. Returns (ok, [(file, hunk,
    status, line, fuzz, offset)]) for the hunks that did not land exactly."""
    cmd = ["patch", "-d", str(tree), "-p1", "--fuzz=0", "--forward", "--no-backup-if-mismatch",
           "--reject-file=-", "-i", str(patch)]
    if dry_run:
        cmd.append("--dry-run")
    r = subprocess.run(cmd, capture_output=True, text=True)
    moved, current = [], None
    for line in r.stdout.splitlines():
        m = _FILE.match(line)
        if m:
            current = m.group(1)
            continue
        m = _HUNK.search(line)
        if m:
            moved.append((current, int(m.group(1)), m.group(2), int(m.group(3)),
                          int(m.group(4) or 0), int(m.group(5) or 0)))
    return r.returncode == 0, moved, r.stdout + r.stderr


def _is_tree(tree):
    if not (tree / "runtime" / "memprof.c").is_file():
        raise SeriesError(f"{tree} is not an OCaml source tree (no runtime/memprof.c)")


def apply(version, tree):
    tree = pathlib.Path(tree)
    _is_tree(tree)
    for p in series(version):
        ok, _, out = run_patch(tree, p)
        if not ok:
            raise SeriesError(f"{p.relative_to(PATCHES)} does not apply to {tree}:\n{out.strip()}")


def check(version, tree):
    """The rules of design 4, on a copy of `tree`; returns the broken ones."""
    tree = pathlib.Path(tree)
    _is_tree(tree)
    own = version == default_version()
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp) / "tree"
        shutil.copytree(tree, work, symlinks=True)
        for p in series(version):
            name = p.relative_to(PATCHES)
            shared = p.parent == PATCHES
            ok, moved, out = run_patch(work, p)
            for file, hunk, status, line, fuzz, offset in moved:
                where = f"{name}: {file} hunk #{hunk}"
                if status == "FAILED":
                    problems.append(f"{where} fails")
                elif fuzz:
                    problems.append(f"{where} needs fuzz {fuzz}")
                elif offset and (own or not shared):
                    problems.append(f"{where} lands {offset:+d} lines from its header")
            if not ok and not moved:
                problems.append(f"{name}: patch failed: {out.strip().splitlines()[-1]}")
    return problems


def report(tree, like):
    """Each patch of `like`'s series against a copy of `tree`, applied in
    order so that each sees the ones before; failed hunks are left out."""
    tree = pathlib.Path(tree)
    _is_tree(tree)
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp) / "tree"
        shutil.copytree(tree, work, symlinks=True)
        for p in series(like):
            name = str(p.relative_to(PATCHES))
            n = hunk_count(p)
            _, moved, _ = run_patch(work, p)
            bad = [m for m in moved if m[2] == "FAILED"]
            shifted = [m for m in moved if m[2] != "FAILED"]
            failed += len(bad)
            if bad:
                rows.append(f"{name}: {len(bad)} of {n} hunks fail")
                for file, hunk, _, line, _, _ in bad:
                    rows.append(f"    {file}: hunk #{hunk} (at line {line})")
            elif shifted:
                rows.append(f"{name}: applies, {len(shifted)} of {n} hunks moved")
            else:
                rows.append(f"{name}: applies")
    total = sum(hunk_count(p) for p in series(like))
    rows.append(f"{failed} of {total} hunks fail against {tree} (series of {like})")
    return rows, failed


def main(argv=None):
    ap = argparse.ArgumentParser(prog="series.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("apply", "check"):
        s = sub.add_parser(name)
        s.add_argument("version")
        s.add_argument("tree")
    s = sub.add_parser("report")
    s.add_argument("tree")
    s.add_argument("--like", default=None)
    s = sub.add_parser("list")
    s.add_argument("version")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "apply":
            apply(args.version, args.tree)
        elif args.cmd == "check":
            problems = check(args.version, args.tree)
            for line in problems:
                print(line)
            if problems:
                return 1
            print(f"series of {args.version}: {len(series(args.version))} files apply to {args.tree}")
        elif args.cmd == "report":
            rows, failed = report(args.tree, args.like or default_version())
            print("\n".join(rows))
            return 1 if failed else 0
        elif args.cmd == "list":
            for p in series(args.version):
                print(p.relative_to(PATCHES))
    except SeriesError as e:
        print(f"series.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
