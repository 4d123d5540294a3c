"""The base of every pytest item of a session: one benchmark's check.

Job: give an item its session's Context (stashed under CTX_KEY by the
plugin), its benchmark, and the two ways a check ends besides passing:
regression (RegressionFailure, exit 1, or an expected failure under the
accept label) and need_baseline (skip, or fail under --strict, when the
benchmark has no trusted baseline).
"""

from __future__ import annotations

import pytest

from ..store import baseline as bl
from ..decide import verdict as V
from ..errors import RegressionFailure
from .context import Context

CTX_KEY = pytest.StashKey["Context"]()


class CheckItem(pytest.Item):
    check = ""

    @property
    def ctx(self) -> Context:
        return self.config.stash[CTX_KEY]

    @property
    def benchmark(self):
        return self.ctx.benches[self.bench]

    def reportinfo(self):
        return self.path, None, f"{self.bench}::{self.check}"

    def regression(self, message: str):
        """Fail this check, or, under the accept label with a matching
        proposed baseline, mark it an expected failure ("accepted")."""
        if self.check in V.ACCEPTABLE and self.ctx.accepts(self.bench):
            pytest.xfail("accepted by label: " + message)
        raise RegressionFailure(message)

    def need_baseline(self):
        base = self.ctx.baseline(self.bench)
        if base is None:
            r = self.ctx.result(self.bench)
            r["status"] = "new"
            path = bl.baseline_path(self.ctx.baselines_dir, self.bench)
            if self.ctx.strict:
                raise RegressionFailure(
                    f"benchmark {self.bench!r}: no baseline at {path} (--strict); create it "
                    f"with `memprof-ci update-baselines -k {self.bench}`")
            pytest.skip(f"new benchmark {self.bench!r}: no baseline at {path}; create it with "
                        f"`memprof-ci update-baselines -k {self.bench}`")
        return base
