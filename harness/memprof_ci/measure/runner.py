"""Running benchmarks under the profiling runtime and collecting profiles.

Each benchmark runs once per seed with OCAMLMEMPROF=rate=..,seed=..,frames=..,
out=<dir>/<bench>.<seed>.json; the first seed's run also writes the
memtrace CTF trace <dir>/<bench>.<seed>.ctf (trace=), for a reviewer to open
in memtrace_viewer; the judge never reads it; with the benchmark's `points`,
that run also counts every allocation point (points=on) and alone decides
what is live at exit (the others run with live=off).  Invariants: a stale profile is removed before
each run so a run that writes nothing can never be mistaken for a result;
every failure (missing command, crash, non-zero exit, timeout, no profile,
profile taken with other settings) raises InfraError or InputError with the
tail of the benchmark's stderr.  Each run's CPU time (user + system of the
benchmark's processes) is measured; `collect` records their sum and the
harness's own CPU time reading the profiles in the aggregate's
meta["cpu_seconds"].
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import time

from ..errors import CpuLimit, InfraError, InputError
from ..inputs.profile import load_json
from ..sites.grouping import Aggregate, aggregate_paths

STDERR_TAIL = 600
# The directory that holds the memprof_ci package (harness/ in a checkout).
HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def installed_patch_id_file() -> str:
    """Where `make install` records the runtime's patch id, if this harness
    is the one installed with it (PREFIX/share/memprof-ci/harness)."""
    share = os.path.dirname(HARNESS_DIR)
    return os.path.join(share, "patch-id")


def source_patch_id_file() -> str:
    """Where `make runtime` records the patch id of the runtime it builds
    beside this harness when it runs from a source checkout
    (ROOT/harness -> ROOT/_build/runtime/patch-id)."""
    root = os.path.dirname(HARNESS_DIR)
    return os.path.join(root, "_build", "runtime", "patch-id")


def patch_id_files(env=None) -> list:
    """Where the runtime's patch id is recorded, first found first: beside
    the `ocamlopt` that PATH finds (the compiler the benchmarks are built
    with): PREFIX/patch-id of a `make runtime` build, or
    PREFIX/share/memprof-ci/patch-id of a `make install`, PREFIX being its
    bin/'s parent, as found and with links resolved; then beside an
    installed harness; then the source checkout's _build/runtime."""
    env = os.environ if env is None else env
    out = []
    found = shutil.which("ocamlopt", path=env.get("PATH", os.defpath))
    if found:
        for exe in (os.path.abspath(found), os.path.realpath(found)):
            prefix = os.path.dirname(os.path.dirname(exe))
            out += [os.path.join(prefix, "patch-id"),
                    os.path.join(prefix, "share", "memprof-ci", "patch-id")]
    out += [installed_patch_id_file(), source_patch_id_file()]
    return list(dict.fromkeys(out))


def _read_patch_id(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read(256).strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if re.fullmatch(r"[0-9a-f]{8,64}", text) else None


def patch_id(env=None) -> str | None:
    """The runtime's patch id: MEMPROF_CI_PATCH_ID when set (set and empty:
    none), else the first one recorded where patch_id_files() looks; None
    when none is known."""
    env = os.environ if env is None else env
    if "MEMPROF_CI_PATCH_ID" in env:
        return env["MEMPROF_CI_PATCH_ID"] or None
    for path in patch_id_files(env):
        pid = _read_patch_id(path)
        if pid:
            return pid
    return None


def program_argv0(bench) -> str:
    """argv[0] of the benchmark's runs: its program relative to the
    benchmark's directory (the runs' working directory), so that what the
    program allocates for its own argv (OCaml 5.4 allocates Sys.argv in
    the minor heap) is the same in every checkout of the project."""
    prog = bench.command[0]
    if not os.path.isabs(prog):
        return prog
    rel = os.path.relpath(prog, bench.cwd)
    return rel if "/" in rel else "./" + rel


def memprof_env_value(rate: float, seed: int, frames: int, out: str,
                      trace: str | None = None, per_process: bool = False,
                      snapshot_sites: int | None = None, points: bool = False,
                      live: bool = True) -> str:
    """The OCAMLMEMPROF value for these settings.  Paths are taken
    literally (a `%` is written `%%` and a comma `%,`; spaces need no
    escape); with `per_process`, the profile's
    name gets the run's pid (`.%p` before its extension), so that runs
    repeated with one setting each write a new file instead of replacing
    the last one (replacing a large file costs its removal, which is not
    the profiler's cost).  At rate 1 the stacks are cut at their sites
    (`stacks=site`).  With `snapshot_sites`, the exit also writes a heap
    snapshot with retainer paths for that many sites (`snapshot=exit`).
    With `points`, every allocation point is counted exactly
    (`points=on`).  Without `live`, the exit does not decide which blocks
    are live (`live=off`): no walk of the heap, for runs that read
    nothing live at exit."""
    out = _literal(out)
    if per_process:
        root, ext = os.path.splitext(out)
        out = f"{root}.%p{ext}"
    spec = f"rate={rate!r},seed={seed},frames={frames},out={out}"
    if rate == 1.0:
        # Counting every word: each stack is cut at its site (the runtime's
        # stacks=site), which keeps the profile small and gives the same
        # site table as whole stacks.
        spec += ",stacks=site"
    if snapshot_sites is not None:
        spec += f",snapshot=exit,snapshot_sites={int(snapshot_sites)}"
    if points:
        spec += ",points=on"
    if not live:
        spec += ",live=off"
    return spec + f",trace={_literal(trace)}" if trace else spec


def _literal(path: str) -> str:
    """`path` as an OCAMLMEMPROF path template that names it exactly."""
    return path.replace("%", "%%").replace(",", "%,")


def bench_env(bench, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCAMLMEMPROF", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    env.update(bench.env)
    if extra:
        env.update(extra)
    return env


def _did_you_mean(bench) -> str | None:
    """The fix when a command without a slash, looked up on PATH, names a
    file beside the manifest (or in the benchmark's cwd)."""
    name = bench.command[0]
    if "/" in name:
        return None
    for d in dict.fromkeys(x for x in (bench.directory, bench.cwd) if x):
        if os.path.isfile(os.path.join(d, name)):
            rel = os.path.relpath(os.path.join(d, name), bench.directory or bench.cwd)
            fix = rel if "/" in rel else "./" + rel
            return (f"did you mean {fix}? (a command without a slash is looked up on PATH; "
                    f"a path in `command` is relative to the manifest)")
    return None


def _tail(data) -> str:
    if not data:
        return "(no stderr)"
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = text.strip()
    if len(text) > STDERR_TAIL:
        text = "..." + text[-STDERR_TAIL:]
    return "stderr tail: " + text.replace("\n", " | ")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _cpu_limiter(seconds: float | None):
    """A preexec_fn that stops the child (SIGXCPU) after `seconds` of CPU."""
    if seconds is None:
        return None
    soft = max(1, math.ceil(seconds))

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
    return limit


def run_once(bench, seed: int, out_dir: str, trace: bool = False, extra_env: dict | None = None,
             argv0: str | None = None, tag: str = "", usage: dict | None = None,
             cpu_limit: float | None = None, snapshot_sites: int | None = None,
             points: bool = False, live: bool = True) -> str:
    """One profiled run; `extra_env`, `argv0` (the program's argv[0], the
    same file) and `tag` (in the profile's name) serve the GC schedule's
    dithered runs (schedule.py); `snapshot_sites` the run with a heap
    snapshot at exit (retention.py); `points` the run that counts every
    allocation point; without `live`, one whose profile
    decides nothing at exit (`live=off`).  `usage["cpu"]` gains the run's CPU
    seconds; with `cpu_limit`, a run past that much CPU time is stopped and
    raises CpuLimit."""
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{bench.name}.{seed}{tag}.json")
    ctf = os.path.join(out_dir, f"{bench.name}.{seed}.ctf") if trace else None
    for stale in (out, ctf):
        if stale and os.path.lexists(stale):
            os.unlink(stale)
    env = bench_env(bench, dict(extra_env or {}, OCAMLMEMPROF=memprof_env_value(
        bench.rate, seed, bench.frames, out, ctf, snapshot_sites=snapshot_sites,
        points=points, live=live)))
    if not os.path.isdir(bench.cwd):
        raise InfraError(f"benchmark {bench.name!r}: working directory {bench.cwd} does not "
                         f"exist; fix `cwd` in the manifest")
    cpu0 = _children_cpu()
    try:
        # A new session lets a timeout kill the whole process group, so a
        # grandchild holding stderr open cannot hang the harness.
        proc = subprocess.Popen([argv0 or program_argv0(bench), *bench.command[1:]],
                                executable=bench.command[0], cwd=bench.cwd, env=env,
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=_cpu_limiter(cpu_limit))
    except FileNotFoundError:
        raise InfraError(f"benchmark {bench.name!r}: command not found: {bench.command[0]}; "
                         + (_did_you_mean(bench) or
                            "build it (with the memprof-ci runtime: `make runtime`) or fix "
                            "`command` in the manifest")) from None
    except PermissionError:
        raise InfraError(f"benchmark {bench.name!r}: command not executable: "
                         f"{bench.command[0]}; fix `command` in the manifest") from None
    try:
        _, err = proc.communicate(timeout=bench.timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            err = b""
        raise InfraError(f"benchmark {bench.name!r} (seed {seed}) timed out after "
                         f"{bench.timeout:g}s; raise `timeout` in the manifest or make it "
                         f"faster; {_tail(err)}") from None
    r = subprocess.CompletedProcess(bench.command, proc.returncode, None, err)
    if usage is not None:
        usage["cpu"] = usage.get("cpu", 0.0) + _children_cpu() - cpu0
    if cpu_limit is not None and r.returncode == -signal.SIGXCPU:
        raise CpuLimit(f"benchmark {bench.name!r} (seed {seed}) stopped at its CPU limit "
                       f"of {cpu_limit:.2f}s")
    if r.returncode != 0:
        how = (f"was killed by signal {-r.returncode}" if r.returncode < 0
               else f"exited with status {r.returncode}")
        raise InfraError(f"benchmark {bench.name!r} (seed {seed}) {how}; {_tail(r.stderr)}")
    if not os.path.exists(out):
        raise InfraError(f"benchmark {bench.name!r} (seed {seed}) wrote no profile at {out}; "
                         f"is it built with the memprof-ci runtime (`make runtime`) and "
                         f"does it exit normally through at_exit? {_tail(r.stderr)}")
    return out


def counted_points(path: str) -> bool:
    """Whether the profile at `path` counted the allocation points (a
    runtime that cannot, such as bytecode's, says they are unavailable).
    Malformed profiles answer False here and are refused when read."""
    try:
        doc = load_json(path, "profile")
    except InputError:
        return False
    pts = doc.get("points") if isinstance(doc, dict) else None
    return isinstance(pts, dict) and "unavailable" not in pts


def collect(bench, out_dir: str, cpu_limit: float | None = None,
            live: bool = True) -> Aggregate:
    """Run every seed, validate the profiles and sum them into sites; with
    `cpu_limit`, each run may use that much CPU time (else CpuLimit);
    without `live`, the runs do not decide what is live at exit (`live=off`,
    the Aggregate's live_decided is False).  With the points counted, only
    the first seed's run decides it: its points count the live words of
    every allocation point exactly, and the other runs skip the exit's walk
    of the heap (the Aggregate's live_runs is 1)."""
    usage = {}
    # The reviewer's memtrace trace comes from a sampled run: at rate 1 it
    # would hold every allocation.  The points are counted once: they do not
    # depend on the seed.
    first, *others = bench.seeds
    paths = [run_once(bench, first, out_dir, trace=bench.rate < 1, usage=usage,
                      cpu_limit=cpu_limit, points=bench.points, live=live)]
    live_rest = live and not (bench.points and others and counted_points(paths[0]))
    paths += [run_once(bench, seed, out_dir, usage=usage, cpu_limit=cpu_limit, live=live_rest)
              for seed in others]
    own = time.process_time()
    agg = _checked(bench, aggregate_paths(paths, bench.grouping, bench.name,
                                          live_decided=live))
    agg.meta["cpu_seconds"] = usage.get("cpu", 0.0) + time.process_time() - own
    return agg


def collect_one(bench, seed: int, out_dir: str, extra_env: dict, argv0: str | None,
                tag: str) -> Aggregate:
    """One run of `seed` with `extra_env` and `argv0`, validated.  Its
    profile decides nothing live at exit (`live=off`: the schedule's runs
    read the GC counters and the peak, which the exit's decision does not
    change), so the run skips the exit's walk of the heap."""
    path = run_once(bench, seed, out_dir, extra_env=extra_env, argv0=argv0, tag=tag,
                    live=False)
    return _checked(bench, aggregate_paths([path], bench.grouping, bench.name,
                                           live_decided=False))


def _checked(bench, agg: Aggregate) -> Aggregate:
    got = list(zip(agg.sources, agg.seeds))
    for (path, pseed), seed in zip(got, bench.seeds):
        if agg.rate != bench.rate or pseed != seed or agg.frames != bench.frames:
            raise InputError(f"{path}: profile has rate={agg.rate} seed={pseed} "
                             f"frames={agg.frames} but benchmark {bench.name!r} asked "
                             f"rate={bench.rate} seed={seed} frames={bench.frames}; "
                             f"does the runtime parse OCAMLMEMPROF correctly?")
    return agg


def collect_from(bench, entry) -> Aggregate:
    """check --from-run: the profiles a run directory holds for `bench`,
    validated and checked against the settings the judge uses."""
    if entry is None:
        raise InfraError(f"benchmark {bench.name!r} is not in the run directories; was "
                         f"its profiling job (or shard) lost?")
    if entry.error:
        raise InfraError(f"benchmark {bench.name!r} failed in the profiling run: "
                         f"{entry.error}")
    by_seed = dict(entry.profiles)
    if sorted(by_seed) != sorted(bench.seeds):
        raise InputError(f"{entry.directory}: benchmark {bench.name!r} was profiled with "
                         f"seeds {sorted(by_seed)} but is judged with seeds "
                         f"{sorted(bench.seeds)}")
    return _checked(bench, aggregate_paths([by_seed[s] for s in bench.seeds],
                                           bench.grouping, bench.name))
