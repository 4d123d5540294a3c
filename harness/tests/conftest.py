"""pytest fixtures and hooks for the harness tests (helpers: harness_testlib)."""

import os

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def pytest_collection_modifyitems(config, items):
    # Keep the fast unit tests first so that -x fails early and cheaply.
    order = {"test_stats.py": 1, "test_speed.py": 3, "test_e2e_runtime.py": 4}
    items.sort(key=lambda it: order.get(os.path.basename(str(it.fspath)), 2))
