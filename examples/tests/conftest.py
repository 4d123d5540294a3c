import sys
from pathlib import Path

# The install helpers live with the runtime's tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime-patch" / "tests"))
