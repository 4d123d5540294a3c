"""pytest fixtures and hooks for the harness tests (helpers: harness_testlib)."""

import os
import sys

import numpy as np
import pytest

# The package is tested from the source tree, as PYTHONPATH=harness would.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def pytest_collection_modifyitems(config, items):
    # Keep the fast unit tests first so that -x fails early and cheaply.
    order = {"test_stats.py": 1, "test_speed.py": 3, "test_e2e_runtime.py": 4}
    items.sort(key=lambda it: order.get(os.path.basename(str(it.fspath)), 2))
