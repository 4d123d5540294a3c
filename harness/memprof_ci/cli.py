"""Command-line interface: parse the command line and dispatch to the
subcommand's module, one per subcommand under commands/.

COMMANDS maps each subcommand to the function that runs it: check (also
--against REF), update-baselines, profile, compare, merge, list, plan,
init, bisect, record, history, view.  Invariants: the process exit code is
0 (no regression), 1 (regression) or 2 (usage, configuration or
infrastructure error), as the command returns it (check, compare and merge
read it from report["verdict"] as verdict.decide left it, never from
pytest's code alone); every MemprofError is printed as one line, without a
traceback, and any other exception is an internal error: one line and exit
2 (the traceback only with -v), never 1.  This module only parses and
dispatches: decisions live in decide/, reading in inputs/ and store/,
rendering in render/.
"""

from __future__ import annotations

import sys
import traceback

from .cliargs import build_parser
from .commands import (bisect, check, compare, history, init, list as list_, merge, plan,
                       profile, record, update_baselines, view)
from .errors import MemprofError
from .render.outputs import print_error
from .text.mdsafe import printable

EXIT_OK, EXIT_ERROR = 0, 2

# Subcommand -> the function that runs it, given the parsed arguments.
COMMANDS = {
    "check": check.run,
    "update-baselines": update_baselines.run,
    "profile": profile.run,
    "compare": compare.run,
    "merge": merge.run,
    "list": list_.run,
    "plan": plan.run,
    "init": init.run,
    "bisect": bisect.run,
    "record": record.run,
    "history": history.run,
    "view": view.run,
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code not in (0, None) else EXIT_OK
    try:
        return COMMANDS[args.cmd](args)
    except MemprofError as e:
        print_error(str(e))
        return EXIT_ERROR
    except KeyboardInterrupt:
        print_error("interrupted")
        return EXIT_ERROR
    except RecursionError:
        print_error("internal error: input nested too deeply")
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - an internal error must never read as exit 1
        if getattr(args, "verbose", 0):
            traceback.print_exc()
        msg = printable(" ".join(f"{type(e).__name__}: {e}".split()))
        print(f"memprof-ci: internal error: {msg[:500]} (run with -v for the traceback)",
              file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
