"""pytest fixtures for the patched runtime's tests (see runtime_testlib)."""

from runtime_testlib import build, runtime_bin  # noqa: F401  (fixtures)
