"""Entry point for `python3 -m memprof_ci`; same as the memprof-ci script."""

import sys

from .entry import main

sys.exit(main())
