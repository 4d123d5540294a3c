#!/usr/bin/env python3
"""bench_sets.py: which benchmarks lack the baseline the judge needs.

    bench_sets.py --pr-manifest FILE --pr-baselines DIR
                  [--base-manifest FILE] --base-baselines DIR

Run by judge.sh (the trusted checkout's copy) on what base-baselines.sh
extracted from git objects: the base commit's manifest and baselines
(trusted; on pushes the pushed commit's) and the tested commit's (data).
Prints one line `KIND NAME` per finding, sorted, on stdout:

  unbaselined NAME  the tested manifest runs NAME but the tested commit has
                    no baselines/NAME.json: once merged, the branch would
                    run a benchmark nothing can judge;
  untrusted NAME    the base manifest already runs NAME and the tested
                    commit proposes a baseline for it, but the base has no
                    trusted one: what the pull request measures would
                    become the reference unreviewed;
  removed NAME      NAME has a trusted baseline, the tested manifest does
                    not run it and the tested commit deletes its baseline
                    (a benchmark removed, or renamed: removed + new).

Invariants:
  - reads the manifests with tomllib and the directories' listings only;
    never imports or runs anything from them;
  - a baseline is a regular file NAME.json in the directory (what
    base-baselines.sh extracts); a benchmark is a `[[benchmark]]` entry's
    `name`; names must be benchmark names (a letter or digit, then
    letters, digits, `_`, `.`, `-`);
  - without --base-manifest (the base has no manifest: the pull request
    adds memprof-ci) nothing is `untrusted`;
  - a manifest that cannot be read, or a name that is not a benchmark
    name, is one line on stderr and exit 2; otherwise exit 0, findings or
    not: judge.sh decides what each means.
"""
import argparse
import os
import re
import sys
import tomllib

from capped_read import read_capped

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_MANIFEST_BYTES = 4 << 20


class BadInput(Exception):
    """A manifest or a directory that cannot be read as one."""


def manifest_names(path):
    raw = read_capped(path, MAX_MANIFEST_BYTES, BadInput)
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise BadInput(f"{path}: not a TOML manifest: {err}") from None
    entries = doc.get("benchmark", [])
    if not isinstance(entries, list):
        raise BadInput(f"{path}: `benchmark` must be an array of tables")
    names = set()
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise BadInput(f"{path}: {str(name)[:60]!r} is not a benchmark name")
        names.add(name)
    return names


def baseline_names(directory):
    try:
        listing = os.listdir(directory)
    except FileNotFoundError:
        return set()
    except OSError as err:
        raise BadInput(f"{directory}: {err.strerror}") from None
    return {n[:-5] for n in listing
            if n.endswith(".json") and NAME_RE.fullmatch(n[:-5])
            and os.path.isfile(os.path.join(directory, n))
            and not os.path.islink(os.path.join(directory, n))}


def findings(pr_run, proposed, base_run, trusted):
    """[(kind, name)]: see the module's docstring."""
    out = [("unbaselined", n) for n in pr_run - proposed]
    out += [("untrusted", n) for n in (pr_run & base_run & proposed) - trusted]
    out += [("removed", n) for n in trusted - pr_run - proposed]
    return sorted(out, key=lambda f: (f[0], f[1]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pr-manifest", required=True)
    p.add_argument("--pr-baselines", required=True)
    p.add_argument("--base-manifest")
    p.add_argument("--base-baselines", required=True)
    args = p.parse_args(argv)
    try:
        pr_run = manifest_names(args.pr_manifest)
        base_run = manifest_names(args.base_manifest) if args.base_manifest else set()
        found = findings(pr_run, baseline_names(args.pr_baselines), base_run,
                         baseline_names(args.base_baselines))
    except BadInput as err:
        print(f"bench_sets: {err}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(f"{kind} {name}\n" for kind, name in found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
