"""The OCAMLMEMPROF parser under libFuzzer with ASan and UBSan
(runtime-patch/fuzz/fuzz_env.c, which asserts the parser's promises):
a fixed number of runs from a fixed seed, so the verdict does not
depend on the machine's speed. A missing clang or fuzzer runtime is a
failure that names the apt-get command, never a skip."""

import os
import shutil
import subprocess

import pytest

from runtime_testlib import ROOT

RUNS = 500_000
FUZZ = ROOT / "runtime-patch" / "fuzz"
EXE = ROOT / "_build" / "fuzz" / "fuzz_env"
INSTALL = "sudo apt-get install -y clang libclang-rt-dev"


def fuzzer_runtime_missing(cc, tmp_path):
    """The compiler's output when it cannot link a trivial libFuzzer
    target with the sanitizers, else None."""
    src = tmp_path / "probe.c"
    src.write_text("#include <stddef.h>\n#include <stdint.h>\n"
                   "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)"
                   " { (void)d; (void)n; return 0; }\n")
    res = subprocess.run([cc, "-fsanitize=fuzzer,address,undefined", str(src),
                          "-o", str(tmp_path / "probe")],
                         capture_output=True, text=True)
    return None if res.returncode == 0 else res.stderr


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory):
    cc = os.environ.get("FUZZ_CC", "clang")
    if shutil.which(cc) is None:
        pytest.fail(f"the parser's fuzz test needs {cc}: run '{INSTALL}'")
    missing = fuzzer_runtime_missing(cc, tmp_path_factory.mktemp("probe"))
    if missing is not None:
        pytest.fail(f"{cc} cannot link a libFuzzer target (no fuzzer or sanitizer "
                    f"runtime): run '{INSTALL}'\n{missing}")
    res = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT),
                          "fuzz-env-build", f"FUZZ_CC={cc}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"building the fuzz target failed:\n{res.stdout}{res.stderr}")
    return EXE


def test_parser_survives_fuzzing(fuzz_env, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    res = subprocess.run(
        [str(fuzz_env), "-seed=1", f"-runs={RUNS}", "-max_len=1024",
         f"-dict={FUZZ / 'env.dict'}", f"-artifact_prefix={tmp_path}/",
         str(corpus), str(FUZZ / "corpus")],
        cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=1800)
    crashes = sorted(p.name for p in tmp_path.iterdir()
                     if p.name.startswith(("crash-", "leak-", "timeout-", "oom-")))
    lines = res.stderr.splitlines()
    first = next((i for i, line in enumerate(lines)
                  if "ERROR" in line or "broken promise" in line or "runtime error" in line),
                 max(len(lines) - 30, 0))
    assert res.returncode == 0 and not crashes, (
        f"fuzz_env failed (exit {res.returncode}, inputs {crashes} in {tmp_path}):\n"
        + "\n".join(lines[first:first + 30]))
    assert f"Done {RUNS} runs" in res.stderr


def test_seed_corpus_has_both_kinds():
    names = [p.name for p in (FUZZ / "corpus").iterdir()]
    assert any(n.startswith("good-") for n in names)
    assert any(n.startswith("bad-") for n in names)
