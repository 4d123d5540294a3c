"""The walk that counts the minor heap by allocation point, on made-up
heaps (walk_check.c against a count one block at a time), built with the
installed runtime's headers, as the runtime builds it. The trials come from a fixed seed, so the verdict does not depend on the
machine; a mismatch names the trial, the id and both counts."""

import os
import subprocess

import pytest

from runtime_testlib import RUNTIME

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "walk_check.c")


def test_walk_counts_every_block_once(runtime_bin, tmp_path):
    include = RUNTIME / "lib" / "ocaml"
    exe = tmp_path / "walk_check"
    cc = os.environ.get("CC", "gcc")
    build = subprocess.run([cc, "-O2", "-Wall", "-Werror", "-I", str(include),
                            SOURCE, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    blocks = int(res.stdout.split()[1])
    assert blocks > 10_000_000, res.stdout
