"""Upstream statmemprof fixes released after OCaml 5.3.0, carried by the
patched runtime, each with a program that goes wrong without it:

* the callstack handed to an allocation callback stays rooted while the
  runtime allocates the callback's sample record (callstack_root: the
  record's allocation empties the minor heap right after the callstack is
  copied there, for entries older than the last minor collection);
* memprof looks at tracked minor blocks only after the barrier that ends a
  minor collection, when every domain has finished promoting
  (promoted_elsewhere: blocks of one domain promoted, late, by another);
* a profile's boxed floats are allocated in the major heap, where no minor
  collection moves them while other domains read them (config_floats).

Each runs as stock (no OCAMLMEMPROF) and beside the built-in tracker."""

import pytest

from runtime_testlib import profile, run, site_totals

TRACKER = "rate=1e-2,seed=1"


def counts(stdout):
    words = stdout.split()
    return {k: int(v) for k, v in zip(words[::2], words[1::2])}


@pytest.mark.parametrize("backend", ["native", "bytecode"])
@pytest.mark.parametrize("memprof", [None, TRACKER], ids=["stock", "tracker"])
def test_callstack_rooted_across_a_minor_collection(build, tmp_path, backend, memprof):
    exe = build("callstack_root", backend=backend)
    env = None if memprof is None else f"{memprof},out={tmp_path / 'p.json'}"
    c = counts(run(exe, 2000, memprof=env).stdout)
    # 2000 rounds of 2-4 blocks from C: all but the first of each round get
    # their record allocated through a minor collection.
    assert c["from_c"] == 6001, c
    assert c["checked"] > c["from_c"]
    assert c["bad"] == 0, c


def test_blocks_promoted_by_another_domain_own_profile(build):
    c = counts(run(build("promoted_elsewhere"), "own", 30).stdout)
    assert c["tracked"] == 30 * 200, c
    assert c["promoted"] == c["tracked"], c
    assert c["dead_minor"] == 0 and c["dead_major"] == 0, c


def test_blocks_promoted_by_another_domain_builtin_tracker(build, tmp_path):
    prof, _, res = profile(build("promoted_elsewhere"), "none", 30, rate=0.1, tmp=tmp_path)
    assert res.stdout.split() == ["rounds", "30"]
    site = {k: site_totals(prof, k).get("Promoted_elsewhere.make_tracked", 0)
            for k in ("samples", "minor_samples", "promoted_samples",
                      "collected_samples", "live_samples")}
    assert site["samples"] > 1000, site          # 6000 blocks of 12 words at 0.1
    assert site["promoted_samples"] == site["minor_samples"] == site["samples"], site
    assert site["collected_samples"] == 0 and site["live_samples"] == site["samples"], site


@pytest.mark.parametrize("backend", ["native", "bytecode"])
@pytest.mark.parametrize("memprof", [None, TRACKER], ids=["stock", "tracker"])
def test_profile_floats_are_not_young(build, tmp_path, backend, memprof):
    exe = build("config_floats", backend=backend)
    env = None if memprof is None else f"{memprof},out={tmp_path / 'p.json'}"
    assert run(exe, "0.01", memprof=env).stdout.split() == ["young", "0"]
