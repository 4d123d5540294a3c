"""The walk that counts the minor heap by allocation point, on made-up
heaps (walk_check.c against a count one block at a time), built with the
installed runtime's headers two ways: as the runtime builds it (the amd64
assembly on amd64) and with the C loops every other target uses. The
trials come from a fixed seed, so the verdict does not depend on the
machine; a mismatch names the trial, the id and both counts."""

import os
import subprocess

import pytest

from runtime_testlib import RUNTIME

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "walk_check.c")


@pytest.mark.parametrize("defines", [[], ["-DCAML_POINTS_WALK_IN_C"]],
                         ids=["as-built", "c-loops"])
def test_walk_counts_every_block_once(defines, runtime_bin, tmp_path):
    include = RUNTIME / "lib" / "ocaml"
    exe = tmp_path / "walk_check"
    cc = os.environ.get("CC", "gcc")
    build = subprocess.run([cc, "-O2", "-Wall", "-Werror", *defines, "-I", str(include),
                            SOURCE, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    blocks = int(res.stdout.split()[1])
    assert blocks > 10_000_000, res.stdout
