"""Real git repositories of a small OCaml program, for the tests of
`check --against`, `bisect` and `history`.

The program has three allocation sites (make_lists, make_arrays, retain);
`arrays` sets the length of make_arrays' arrays (16: the base program).
Its manifest's `build` is ./build.sh, which compiles it with the `ocamlopt`
first on PATH (path_env() puts the patched one there, and keeps the
dithered runs of the GC's schedule that update-baselines records by
default: a commit built in another directory moves this small program's
top_heap_words by a heap chunk) and, when
MEMPROF_TEST_BUILDS names a file, appends a line to it, so a test counts
builds.
"""

import os
import subprocess

import pytest
from harness_testlib import REPO

RUNTIME_BIN = os.path.join(REPO, "_build", "runtime", "bin")

PROGRAM = """\
(* {comment} *)
let keep = ref [||]

let make_lists n =
  let acc = ref 0 in
  for i = 1 to n do
    let l = List.init 10 (fun j -> i + j) in
    acc := !acc + List.length (Sys.opaque_identity l)
  done;
  !acc

let make_arrays n =
  let acc = ref 0 in
  for i = 1 to n do
    let a = Array.make {arrays} i in
    acc := !acc + Array.length (Sys.opaque_identity a)
  done;
  !acc

let retain n = keep := Array.init n (fun i -> Sys.opaque_identity (ref i))

let () =
  let k = 200_000 in
  let a = make_lists k in
  let b = make_arrays (k + {extra}) in
  retain 20_000;
  Printf.printf "%d %d %d\\n" a b (Array.length !keep)
"""

BUILD_SH = """\
#!/bin/sh
set -e
if [ -n "$MEMPROF_TEST_BUILDS" ]; then echo "$(git rev-parse HEAD)" >> "$MEMPROF_TEST_BUILDS"; fi
ocamlopt -g -o alloc.exe alloc.ml
"""

MANIFEST = """\
build = ["sh", "./build.sh"]

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


def write_program(repo, arrays=16, comment="base", extra=0):
    """`extra` more iterations of make_arrays (3000: about +0.5% of all
    allocation)."""
    (repo / "alloc.ml").write_text(PROGRAM.format(arrays=arrays, comment=comment, extra=extra))


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
