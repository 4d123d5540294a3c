"""Real git repositories of a small OCaml program, for the tests of
`check --against`, `bisect` and `history`.

The program is data/e2e/alloc_base.ml, test_e2e_runtime's base program,
with three allocation sites (make_lists, make_arrays, retain); `arrays`
sets the length of make_arrays' arrays (16: the base program) and
`new_sites` adds that many small sites of their own.
Its manifest is RUN_MANIFEST (the defaults and the benchmark, which
test_e2e_runtime shares) with a `build`, ./build.sh, which compiles it with
the `ocamlopt` first on PATH (path_env() puts the patched one there, and
keeps the dithered runs of the GC's schedule that update-baselines records
by default: a commit built in another directory moves this small program's
top_heap_words by a heap chunk) and, when MEMPROF_TEST_BUILDS names a file,
appends a line to it, so a test counts builds.
"""

import os
import subprocess

import pytest
from harness_testlib import HERE, REPO

RUNTIME_BIN = os.path.join(REPO, "_build", "runtime", "bin")
BASE_PROGRAM = os.path.join(HERE, "data", "e2e", "alloc_base.ml")

BUILD_SH = """\
#!/bin/sh
set -e
if [ -n "$MEMPROF_TEST_BUILDS" ]; then echo "$(git rev-parse HEAD)" >> "$MEMPROF_TEST_BUILDS"; fi
ocamlopt -g -o alloc.exe alloc.ml
"""

# The program's defaults and benchmark, without a build: test_e2e_runtime
# builds the program itself before each run.
RUN_MANIFEST = """\
[defaults]
mode = "sampled"   # "auto" would choose by timing a run (test_exactplan.py)
rate = 1e-3
seeds = [1, 2, 3]
frames = 32
timeout = 60

[[benchmark]]
name = "alloc"
command = ["./alloc.exe"]
"""

MANIFEST = 'build = ["sh", "./build.sh"]\n\n' + RUN_MANIFEST


def need_runtime():
    if not os.path.exists(os.path.join(RUNTIME_BIN, "ocamlopt")):
        pytest.fail(f"{RUNTIME_BIN}/ocamlopt not found: run `make runtime` first")


def path_env(**extra) -> dict:
    """env_extra for run_cli: the patched compiler first on PATH."""
    return dict({"PATH": RUNTIME_BIN + os.pathsep + os.environ.get("PATH", ""),
                 "MEMPROF_CI_SCHEDULE_RUNS": "12"}, **extra)


def git(repo, *args) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, GIT_AUTHOR_NAME="t",
                                            GIT_AUTHOR_EMAIL="t@example.org",
                                            GIT_COMMITTER_NAME="t",
                                            GIT_COMMITTER_EMAIL="t@example.org"))
    assert r.returncode == 0, f"git {args}: {r.stderr}"
    return r.stdout.strip()


def program(arrays=16, comment="base", new_sites=0) -> str:
    """data/e2e/alloc_base.ml (test_e2e_runtime's base program) with its
    first-line comment replaced by `comment`, `arrays` as make_arrays' array
    length and `new_sites` functions step1, step2, ... called once each,
    every one allocating 2,600 arrays of 16 words in C: about +0.43% of all
    allocation each, below the default min_share of 0.5%.  Each edited line
    must occur once in the file."""
    with open(BASE_PROGRAM) as fh:
        first, text = fh.read().split("\n", 1)
    steps = "".join(f"let step{i} () =\n  for i = 1 to 2_600 do "
                    f"ignore (Sys.opaque_identity (Array.make 16 i)) done\n\n"
                    for i in range(1, new_sites + 1))
    calls = "".join(f"  step{i} ();\n" for i in range(1, new_sites + 1))
    for old, new in (("Array.make 16 i", f"Array.make {arrays} i"),
                     ("let () =\n", f"{steps}let () =\n"),
                     ("  retain 20_000;\n", f"  retain 20_000;\n{calls}")):
        assert text.count(old) == 1, f"{BASE_PROGRAM}: {old!r} is not there once"
        text = text.replace(old, new)
    assert first.startswith("(*") and first.endswith("*)"), BASE_PROGRAM
    return f"(* {comment} *)\n{text}"


def write_program(repo, arrays=16, comment="base", new_sites=0):
    (repo / "alloc.ml").write_text(program(arrays, comment, new_sites))


def commit_all(repo, message) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def new_repo(path, arrays=16, manifest=MANIFEST):
    """A git repository with the program, its build and manifest committed."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    write_program(path, arrays)
    (path / "build.sh").write_text(BUILD_SH)
    (path / "benchmarks.toml").write_text(manifest)
    (path / ".gitignore").write_text("*.exe\n*.cm*\n*.o\n")
    return commit_all(path, "the program")


def worktrees(repo) -> list:
    return [x for x in git(repo, "worktree", "list", "--porcelain").splitlines()
            if x.startswith("worktree ")]
