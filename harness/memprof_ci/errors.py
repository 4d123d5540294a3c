"""Exception types that decide memprof-ci's exit codes.

Invariant: RegressionFailure (an AssertionError, so pytest reports it as a
normal test failure) is the only exception that maps to exit code 1; every
MemprofError maps to exit code 2.  Messages are single lines that name the
offending file or benchmark and say how to fix it.
"""


class MemprofError(Exception):
    """Bad input, bad configuration or broken infrastructure: exit 2."""


class ConfigError(MemprofError):
    """The manifest or the command line is wrong."""


class InputError(MemprofError):
    """A profile, baseline or report file is malformed or incompatible."""


class InfraError(MemprofError):
    """A benchmark or tool crashed, timed out, or is missing."""


class CpuLimit(InfraError):
    """A run stopped at the CPU time it was allowed (runner.run_once's
    cpu_limit); the caller decides whether that is an error."""


class ProposedBaselineMismatch(MemprofError):
    """Proposed baselines disagree with what the code actually allocates."""


class OverBudget(MemprofError):
    """update-baselines --strict: profiling costs more than overhead_budget."""


class RegressionFailure(AssertionError):
    """A check found a regression: the only outcome that maps to exit 1."""
