"""Upstream's own statmemprof tests (testsuite/tests/statmemprof of the
same OCaml 5.3.0 tree), run by ocamltest in the patched build tree, in
every mode upstream runs them (native and bytecode), both as stock
(no OCAMLMEMPROF) and with a seed, which switches on GC-independent
sampling."""

import os
import re
import subprocess

import pytest

from runtime_testlib import ROOT

TREE = ROOT / "_build" / "ocaml-src"
# Upstream 5.3.0 has 19 test files in this directory.
EXPECTED_FILES = 19


@pytest.mark.parametrize("memprof", [None, "seed=12345"], ids=["stock", "seeded"])
def test_upstream_statmemprof_suite(runtime_bin, memprof):
    if not (TREE / "testsuite").is_dir():
        pytest.fail(f"no build tree at {TREE}: run `make runtime` first")
    env = {k: v for k, v in os.environ.items() if k not in ("OCAMLMEMPROF", "OCAMLRUNPARAM")}
    if memprof:
        env["OCAMLMEMPROF"] = memprof
    res = subprocess.run(["make", "-C", str(TREE / "testsuite"), "one", "DIR=tests/statmemprof"],
                         env=env, capture_output=True, text=True, timeout=1800)
    log = res.stdout + res.stderr
    results = re.findall(r"testing '([^']+)'.*=> (\w+(?: \w+)?)", log)
    files = {f for f, _ in results}
    bad = [(f, r) for f, r in results if r not in ("passed", "skipped")]
    assert not bad, f"upstream statmemprof tests failed: {bad}\n{log[-4000:]}"
    assert len(files) == EXPECTED_FILES, (sorted(files), log[-2000:])
    assert sum(r == "passed" for _, r in results) >= EXPECTED_FILES
    assert res.returncode == 0, log[-2000:]
