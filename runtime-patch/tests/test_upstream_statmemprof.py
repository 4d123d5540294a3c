"""Upstream's own statmemprof tests (testsuite/tests/statmemprof of the
same OCaml tree), run by ocamltest in the patched build tree, in
every mode upstream runs them (native and bytecode): all of its files
(19 in 5.3.0, 21 in 5.4.1) as stock (no OCAMLMEMPROF) and with a seed, which switches on GC-independent
sampling; and a subset with the built-in tracker on as well
(OCAMLMEMPROF=rate=1e-2,seed=1), whose profiles, one per program run
(ocamltest and the compilers included), must all be valid and complete.
`make test-upstream` (runtime-patch/upstream_suite.py) runs this directory
and 21 more of the testsuite that way."""

import sys

import pytest

from runtime_testlib import OCAML_VERSION, ROOT, SRC_TREE

sys.path.insert(0, str(ROOT / "runtime-patch"))
import upstream_suite  # noqa: E402

TREE = SRC_TREE
# The test files of this directory in each release (5.4 adds bigarray.ml,
# Unix.map_file and bigarray memory, and user_data_regression.ml).
EXPECTED_FILES = {"5.3.0": 19, "5.4.1": 21}.get(OCAML_VERSION)
# The tests of starting, stopping and discarding profiles, of exceptions
# and restarts in callbacks, of comballoc callstacks, exact counts at rate
# 1, and callbacks deferred from C: what a profile running beside the
# built-in tracker's could get wrong.
TRACKER_SUBSET = ["start_stop.ml", "discard_in_callback.ml", "stop_start_in_callback.ml",
                  "exception_comballoc.ml", "comballoc.ml", "alloc_counts.ml",
                  "minor_no_postpone.ml"]


def tree():
    if not (TREE / "testsuite").is_dir():
        pytest.fail(f"no build tree at {TREE}: run `make runtime` first")
    return TREE


def assert_all_pass(results, expected, log):
    bad = {f: r for f, r in results.items() if r not in ("passed", "skipped")}
    assert not bad, f"upstream statmemprof tests failed: {bad}\n{log[-4000:]}"
    assert sorted(results) == sorted(expected), (sorted(results), log[-2000:])
    assert sum(r == "passed" for r in results.values()) == len(expected)


@pytest.mark.parametrize("memprof", [None, "seed=12345"], ids=["stock", "seeded"])
def test_upstream_statmemprof_suite(runtime_bin, memprof):
    results, log = upstream_suite.run_tests(tree(), "DIR=tests/statmemprof",
                                            upstream_suite.clean_env(memprof), timeout=1800)
    assert len(results) == EXPECTED_FILES, (sorted(results), log[-2000:])
    assert_all_pass(results, list(results), log)


def test_upstream_statmemprof_subset_with_the_tracker(runtime_bin, tmp_path):
    out = tmp_path / "profiles"
    out.mkdir()
    env = upstream_suite.clean_env(f"rate=1e-2,seed=1,out={out}/%p.json")
    results, log = {}, ""
    for f in TRACKER_SUBSET:
        r, one_log = upstream_suite.run_tests(tree(), f"TEST=tests/statmemprof/{f}", env,
                                              timeout=900)
        results.update(r)
        log += one_log
    assert_all_pass(results, TRACKER_SUBSET, log)
    count, problems, _ = upstream_suite.check_profiles(out)
    assert not problems, problems
    # Each file runs in native and bytecode: two test programs, at least,
    # besides the compilers.
    assert count >= 2 * len(TRACKER_SUBSET), count


def test_check_profiles_counts_the_runtimes_own_abnormal_end_apart(build, tmp_path):
    """A profile the runtime marked incomplete because it ended the program
    for an unhandled effect (what tests/effects asks for) is counted apart;
    any other reason for an incomplete profile is a problem."""
    import json

    from runtime_testlib import run
    exe = build("unhandled_effect")
    out = tmp_path / "profiles"
    out.mkdir()
    run(exe, memprof=f"rate=1e-2,seed=1,out={out / 'p.json'}", check=False)
    assert upstream_suite.check_profiles(out) == (1, [], 1)
    doc = json.loads((out / "p.json").read_text())
    doc["incomplete"] = "some other end"
    (out / "p.json").write_text(json.dumps(doc))
    count, problems, ended = upstream_suite.check_profiles(out)
    assert (count, ended) == (1, 0) and problems == [("p.json", "incomplete: some other end")]
