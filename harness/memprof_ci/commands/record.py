"""`memprof-ci record`: a run of main (its commit, baselines and report)
written as a run record (store/run_records.py) for `history` and the
reference of later judges."""

from __future__ import annotations

from ..commits.worktree import changed_baselines, commit_info, toplevel
from ..measure import runner
from ..store.run_records import make_record, write_record
from .merge import load_shard


def run(args) -> int:
    report = load_shard(args.report, "--report (check report)") if args.report else None
    repo = toplevel(".")
    sha, when, subject, depth = commit_info(repo, args.commit, "--commit")
    changed = (changed_baselines(repo, sha, args.accepted_baselines)
               if args.accepted_baselines else [])
    rec = make_record(sha, when, subject, depth, runner.patch_id(), args.baselines, report,
                      changed)
    print(f"memprof-ci: wrote {write_record(args.runs, rec)}")
    return 0
