"""`memprof-ci init`: the files a repository needs to adopt memprof-ci.

Writes a commented manifest, an empty baselines directory and the two
workflow files (the gate and its fork-safe comment poster) that call this
repository's reusable workflows, with the memprof-ci repository and ref
filled in once.

Invariants: nothing is overwritten without --force: if any file to be
written exists (or is a symlink), nothing is written and the command exits
2 naming it; with --force only the files init writes are replaced, and
nothing is ever deleted; each file is written atomically; the manifest parses with manifest.parse_manifest
and the workflows are the ones .github/PULL_REQUESTS.md documents.
"""

from __future__ import annotations

import os
import re

from ..inputs.atomicio import write_atomic
from ..errors import ConfigError
from ..measure import runner

REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./-]{0,99}$")

MANIFEST = """\
# memprof-ci manifest: the benchmarks whose allocations are checked.
#
# memprof-ci runs each [[benchmark]] under the patched OCaml runtime once per
# seed, groups the sampled allocations into sites (function @ file), and
# compares them with the baselines in {baselines}/. On a pull request every
# setting below that decides a verdict is taken from the BASE branch's copy
# of this file; the pull request's copy only says how to run.
#
# [defaults] applies to every benchmark; a [[benchmark]] may override any key.
#   rate            sampling rate per allocated word (1e-4: ~1 sample / 80 KB)
#   seeds           one profiled run per seed; samples are summed
#   frames          callstack frames kept per sample
#   alpha           family-wise error rate over all sites of a run
#   min_effect      smallest relative increase that can fail (default 0.05
#                   = 5% when sampled, 0.01 when counted exactly)
#   min_share       smallest share of a benchmark's allocation that can fail
#   gc_tolerance    largest accepted increase of minor_words
#   gc_timing_tolerance  ... of promoted_words and major_words
#   overhead_budget profiling's cost (counted estimated cycles) accepted by
#                   update-baselines
#   overhead_tolerance  a check fails when profiling became costlier than the
#                   baseline recorded by more than this
#   overhead_runs   paired timed runs with and without profiling, made with
#                   --overhead-info (time is shown, not judged, unless
#                   overhead_time_fails = true, which always times them)
#   mode            "auto": counted exactly (rate 1, one run) when that run
#                   costs at most exact_limit (2) times the sampled runs, as
#                   update-baselines measures once and records; "exact" or
#                   "sampled" forces either; a benchmark with points needs
#                   no run at rate 1 and is sampled
#   points          count every allocation point exactly (one run per
#                   check): the alloc and live checks compare exact words
#                   per site (true; native code only)
#   timeout         seconds per run
# `memprof-ci plan` tells what these settings can detect, and what would
# detect more.
#
# Each [[benchmark]]: name (names {baselines}/<name>.json), command (argv;
# relative paths are resolved against this file's directory, and a name
# without a slash is looked up on PATH), optional cwd and env. Programs must be built with the patched compiler (with -g for
# source locations) and be deterministic: same input, same allocations.

[defaults]
rate = 1e-4
seeds = [1, 2, 3]
frames = 16
alpha = 0.01

[[benchmark]]
name = "main"
command = ["{exe}"]
timeout = 600
# The overhead check's counted runs go through valgrind, 50-120 times slower;
# a check counts again whenever the allocation changes, so give them about a
# fiftieth of the work (else they run the full command):
# overhead_args = ["SMALLER", "ARGUMENTS"]

# Allocation budgets: a function annotated [@zero_alloc] or
# [@memprof.words_per_call N] in the code is checked per call, exactly, on
# every check. For code that cannot carry an annotation, such as a
# dependency's function, a limit per run (function as the report names it):
# [[budget]]
# function = "Stdlib__Hashtbl.find_opt"
# words_per_run = 100_000
"""

GATE = """\
# memprof-ci allocation gate: profiles the benchmarks of {manifest} with the
# patched OCaml runtime and fails a pull request that allocates more than the
# base branch's baselines allow. Make `alloc / judge` the required check.
# A maintainer's label `{label}` accepts an intended change whose updated
# baselines match the code. Written by `memprof-ci init`.
name: alloc
on:
  pull_request:
    types: [opened, synchronize, reopened, labeled, unlabeled]
  push:
    branches: [{branch}]
permissions: {{}}
jobs:
  alloc:
    permissions:
      contents: read
    uses: {repo}/.github/workflows/memprof-ci.yml@{ref}
    with:
      memprof-ci-repository: {repo}
      memprof-ci-ref: {ref}
      manifest: {manifest}
      baselines: {baselines}
      build-command: {build}
      check-args: ''
      profile-args: ''
      accept-label: '{label}'
      # Judge each pull request against {branch}'s recorded run of its merge
      # base (the baselines stay the fallback): uncomment, uncomment
      # `secrets:` below, and set up the data branch's deploy key as
      # memprof-ci's .github/PULL_REQUESTS.md says ("Main's recorded history").
      # runs-branch: memprof-ci-data
    # secrets:
    #   MEMPROF_CI_DATA_KEY: ${{{{ secrets.MEMPROF_CI_DATA_KEY }}}}
"""

COMMENT = """\
# Posts the alloc gate's report on the pull request. It runs from the default
# branch with a write token and treats the gate's artifact as data only, so
# pull requests from forks get comments too. Written by `memprof-ci init`.
name: alloc-comment
on:
  workflow_run:
    workflows: [alloc]
    types: [completed]
permissions: {{}}
jobs:
  comment:
    if: github.event.workflow_run.event == 'pull_request'
    permissions:
      contents: read
      actions: read
      pull-requests: write
    uses: {repo}/.github/workflows/memprof-ci-comment.yml@{ref}
    with:
      memprof-ci-repository: {repo}
      memprof-ci-ref: {ref}
      workflow-path: .github/workflows/alloc.yml
"""


def _yaml_scalar(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def command_path(exe: str) -> str:
    """--exe (a path relative to the manifest) as the manifest's argv[0]:
    a bare name gets "./", since a command without a slash is looked up on
    PATH."""
    return exe if "/" in exe else "./" + exe


def files(repo: str, ref: str, manifest: str, baselines: str, build: str, exe: str,
          label: str, branch: str) -> dict:
    """{relative path: content} of everything init writes."""
    if not REPO_RE.match(repo):
        raise ConfigError(f"--repository {repo!r}: expected OWNER/NAME of the memprof-ci "
                          f"repository")
    if not REF_RE.match(ref) or ".." in ref:
        raise ConfigError(f"--ref {ref!r}: expected a tag, branch or commit")
    for flag, v in (("--manifest", manifest), ("--baselines", baselines)):
        if os.path.isabs(v) or ".." in v.split("/") or not v or "\n" in v:
            raise ConfigError(f"{flag} {v!r}: expected a relative path inside the repository")
    for flag, v in (("--build-command", build), ("--label", label), ("--exe", exe),
                    ("--branch", branch)):
        if not v or any(c in v for c in "\n\r'\"{}"):
            raise ConfigError(f"{flag} {v!r}: must be one line without quotes or braces")
    baselines = baselines.rstrip("/")
    return {
        manifest: MANIFEST.format(baselines=baselines, exe=command_path(exe)),
        os.path.join(baselines, ".gitkeep"): "",
        ".github/workflows/alloc.yml": GATE.format(
            repo=repo, ref=ref, manifest=manifest, baselines=baselines, label=label,
            build=_yaml_scalar(build), branch=branch),
        ".github/workflows/alloc-comment.yml": COMMENT.format(repo=repo, ref=ref),
    }


def init(root: str, contents: dict, force: bool = False) -> list:
    """Write `contents` under `root`, refusing if any of them exists unless
    `force`; then only those files are replaced (a symlink among them is
    replaced, not followed) and nothing else is touched or deleted."""
    paths = {os.path.join(root, rel): text for rel, text in contents.items()}
    taken = [p for p in paths if os.path.lexists(p)]
    if taken and not force:
        raise ConfigError(f"{taken[0]}: exists; memprof-ci init never overwrites "
                          f"({len(taken)} of {len(paths)} files exist); `memprof-ci init "
                          f"--force` replaces these files and nothing else")
    for p in taken:
        if os.path.isdir(p) and not os.path.islink(p):
            raise ConfigError(f"{p}: is a directory; memprof-ci init writes a file there")
    for p, text in paths.items():
        write_atomic(p, text)
    return sorted(paths)


def next_steps(manifest: str, baselines: str, patch_id: str | None) -> list:
    """What init says after writing: the runtime patch id baselines will
    record (runner.patch_id), or how to make one known, and the next
    commands."""
    if patch_id:
        out = [f"runtime patch id {patch_id}: update-baselines records it in each baseline, "
               f"and check notes a baseline of another runtime"]
        env = ""
    else:
        out = ["no runtime patch id known (no patched `ocamlopt` on PATH, and this memprof-ci "
               "was not installed with `make install PREFIX=DIR`): put PREFIX/bin first on "
               "PATH, or set MEMPROF_CI_PATCH_ID as below, so baselines record it"]
        env = "MEMPROF_CI_PATCH_ID=$(cat PREFIX/share/memprof-ci/patch-id) "
    out.append("next: edit the manifest's [[benchmark]] entries, build the benchmarks with the "
               f"patched compiler, run `{env}memprof-ci update-baselines --manifest {manifest} "
               f"--baselines {baselines}` and commit the result")
    return out


def run(args) -> int:
    written = init(args.root, files(args.repository, args.ref, args.manifest, args.baselines,
                                    args.build_command, args.exe, args.label, args.branch),
                   force=args.force)
    for p in written:
        print(f"memprof-ci: wrote {p}")
    for line in next_steps(args.manifest, args.baselines, runner.patch_id()):
        print(f"memprof-ci: {line}")
    return 0
