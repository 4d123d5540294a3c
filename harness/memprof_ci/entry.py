"""The memprof-ci command's entry point: the harness, or one line saying
which dependency this interpreter lacks.

Invariant: an interpreter without one of the harness's dependencies gets
one line on stderr naming the interpreter, the missing module and the
command that fixes it, and exit status 2; never a traceback or "internal
error".  Any other import failure is a bug and propagates.
"""

from __future__ import annotations

import sys

# Module -> the Debian package that provides it for /usr/bin/python3.
DEPENDENCIES = {"numpy": "python3-numpy", "scipy": "python3-scipy",
                "pytest": "python3-pytest", "jsonschema": "python3-jsonschema"}

try:
    from .cli import main as run_cli
    MISSING = None
except ModuleNotFoundError as e:
    top = (e.name or "").split(".")[0]
    if top not in DEPENDENCIES:
        raise
    run_cli, MISSING = None, top


def missing_message(interpreter: str, module: str) -> str:
    packages = " ".join(sorted(set(DEPENDENCIES.values())))
    return (f"memprof-ci: error: {interpreter} cannot import {module}, a dependency of "
            f"memprof-ci; run the harness with /usr/bin/python3 after `apt-get install "
            f"{packages}` (or use the memprof-ci command that `make install PREFIX=DIR` "
            f"writes, which does)")


def main(argv=None) -> int:
    if MISSING is not None:
        print(missing_message(sys.executable, MISSING), file=sys.stderr)
        return 2
    return run_cli(argv)
