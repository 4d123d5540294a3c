"""The exit's own memory reuses the minor heap's free pages
(memprof_reach.c, design 5): once the tracker finishes, the whole pages
of the minor heap below its allocation pointer are no longer resident,
whether the walk emptied it (live=walk) or not (live=off); unprofiled,
the same pages stay resident. programs/minor_release.ml writes every page
of its minor heap and counts them from a C atexit handler."""

import re

import pytest

from runtime_testlib import profile, run


def free_pages(stderr):
    m = re.search(r"free (\d+) resident (\d+)", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


@pytest.fixture(scope="module")
def exe(build):
    return build("minor_release")


def test_unprofiled_the_free_pages_stay_resident(exe):
    pages, resident = free_pages(run(exe, runparam="s=256k").stderr)
    assert pages > 16 and resident == pages


@pytest.mark.parametrize("live", ["walk", "off"])
def test_the_tracker_hands_them_back(exe, tmp_path, live):
    prof, _, res = profile(exe, rate=1e-4, live=live, tmp=tmp_path, runparam="s=256k")
    pages, resident = free_pages(res.stderr)
    # with the walk, the emptied minor heap is free from end to end
    assert pages > (480 if live == "walk" else 16) and resident == 0
    assert prof["config"]["live"] == live
