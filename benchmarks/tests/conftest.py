"""pytest setup of the benchmarks' tests: the harness and the overhead study
are imported as packages, as `PYTHONPATH=harness:benchmarks` gives them to
`python3 -m overhead` (benchmarks/overhead/__init__.py, "Usage"); a test
that runs a module in a subprocess passes that PYTHONPATH itself."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for d in (ROOT / "benchmarks", ROOT / "harness"):
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))
