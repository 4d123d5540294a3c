"""`python3 -m overhead`: runs the study's command line (see cli)."""

import sys

from .cli import main

sys.exit(main())
