"""What the heap snapshot at exit (OCAMLMEMPROF snapshot=exit) costs.

Runs one command under the built-in tracker in pairs, without and with
`snapshot=exit` (the order alternating between pairs), and prints per
setting the median CPU time (user + system) and the median peak RSS of
the runs, the median of the paired CPU differences, and the snapshot's
own `table_bytes` as the profile reports it. The two settings differ
only at exit, so the difference is the snapshot's cost there. Each run's
CPU time and peak RSS come from wait4 on that child alone.

Usage: snapshot_cost.py [--pairs N] [--spec SPEC] [--cwd DIR] -- CMD [ARGS...]
SPEC is the OCAMLMEMPROF setting without out= (default
rate=1e-4,seed=1). Exit status 0, or 2 with one line on a bad argument
or a failed run. A timing, not a test: it judges nothing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(cmd, env, cwd):
    """(CPU seconds, peak RSS in KiB) of one run; raises on failure."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=null, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {err.strip()[:300]}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--spec", default="rate=1e-4,seed=1")
    ap.add_argument("--cwd", default=None)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd or a.pairs < 1:
        print("snapshot_cost.py: give --pairs >= 1 and a command after --", file=sys.stderr)
        return 2
    base = {k: v for k, v in os.environ.items() if k not in ("OCAMLMEMPROF", "OCAMLRUNPARAM")}
    res = {"off": [], "on": []}
    table_bytes = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.json")
        for i in range(a.pairs):
            order = ("off", "on") if i % 2 == 0 else ("on", "off")
            for mode in order:
                spec = a.spec + (",snapshot=exit" if mode == "on" else "") + f",out={out}"
                try:
                    res[mode].append(run_once(cmd, dict(base, OCAMLMEMPROF=spec), a.cwd))
                except (OSError, RuntimeError) as e:
                    print(f"snapshot_cost.py: {e}", file=sys.stderr)
                    return 2
                if mode == "on":
                    with open(out) as fh:
                        snap = json.load(fh).get("snapshot", {})
                    table_bytes.append(snap.get("table_bytes"))
    for mode in ("off", "on"):
        cpu = statistics.median(c for c, _ in res[mode])
        rss = statistics.median(r for _, r in res[mode])
        print(f"{mode}: CPU {cpu:.3f} s, peak RSS {rss / 1024:.1f} MiB (median of {a.pairs})")
    diffs = [on[0] - off[0] for on, off in zip(res["on"], res["off"])]
    print(f"on - off: CPU {statistics.median(diffs):+.3f} s (median of paired differences;"
          f" all: {', '.join(f'{d:+.3f}' for d in diffs)})")
    print(f"table_bytes: {sorted(set(table_bytes), key=str)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
