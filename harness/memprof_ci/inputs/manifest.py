"""Loading and validating the benchmark manifest (TOML).

The manifest has an optional top-level `build` (argv: what builds the
benchmarks, run in the manifest's directory before them by whatever builds
a commit itself: check --against, bisect), an optional [defaults] table and
a [[benchmark]] array, and an optional [[budget]] array: allocation budgets,
words per run at one function or line counted exactly (budget.py).  Invariants: load_manifest returns fully resolved Benchmark objects (absolute
command/cwd, every setting filled from benchmark > defaults > built-in) or
raises ConfigError naming the file, the benchmark and the key; unknown keys
and wrong types are errors, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field

from ..errors import ConfigError
from .budget import budget_changes, parse_budgets
from .validate import MIN_RATE, is_finite, is_rate

# Settings allowed both in [defaults] and per benchmark, with their defaults.
SETTINGS = {
    "rate": 1e-4,
    "seeds": [1, 2, 3],
    "frames": 16,
    "alpha": 0.01,
    "min_effect": 0.05,
    "min_share": 0.005,
    "gc_tolerance": 0.01,
    "gc_timing_tolerance": 0.10,
    "gc_exact": False,
    "overhead_budget": 0.10,
    "overhead_tolerance": 0.10,
    "overhead_runs": 5,
    "overhead_time_fails": False,
    "concurrent": False,
    "grouping": "function",
    "mode": "auto",
    "exact_limit": 2.0,
    "points": True,
    "detect": None,
    "detect_cost": 4.0,
    "timeout": 600.0,
}
# The settings that decide a verdict.  On a pull request they come from the
# base branch's manifest (judged_with); the pull request's own manifest only
# says how to build and run (command, cwd, env, timeout) and may add
# benchmarks.
VERDICT_SETTINGS = tuple(k for k in SETTINGS if k != "timeout")
MODES = ("auto", "sampled", "exact")
GROUPINGS = ("function", "line", "innermost")   # how sites are keyed (sites/grouping.py)
EXACT_MIN_EFFECT = 0.01   # min_effect of an exact benchmark unless the manifest sets one
BENCH_ONLY = ("name", "command", "cwd", "env", "overhead_args")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass
class Benchmark:
    name: str
    command: list
    cwd: str
    env: dict = field(default_factory=dict)
    rate: float = 1e-4
    seeds: list = field(default_factory=lambda: [1, 2, 3])
    frames: int = 16
    alpha: float = 0.01
    min_effect: float = 0.05
    min_share: float = 0.005
    gc_tolerance: float = 0.01
    gc_timing_tolerance: float = 0.10
    # The counters that follow GC timing (stats.GC_TIMING_COUNTERS) get
    # gc_tolerance like minor_words instead of gc_timing_tolerance.
    gc_exact: bool = False
    overhead_budget: float = 0.10
    overhead_tolerance: float = 0.10
    overhead_runs: int = 5
    # Time fails the overhead check too (it is information otherwise).
    overhead_time_fails: bool = False
    # Several domains or systhreads: the counted overhead is a range over
    # repeated runs (overhead.py).
    concurrent: bool = False
    grouping: str = "function"
    # "exact": every word is counted (rate 1, so one run; the seed cannot
    # change anything) and the site verdict needs no test (verdict.classify).
    # "auto": exact when update-baselines finds that one run at rate 1 costs
    # at most exact_limit times the sampled runs (exact_or_sampled.py), as its
    # baseline then records; sampled otherwise.
    mode: str = "auto"
    exact_limit: float = 2.0
    # Count every allocation point exactly (OCAMLMEMPROF points=on) in the
    # first seed's run: the alloc and live checks then compare exact words
    # per site wherever the baseline counted them too (point_sites.py), and
    # an "auto" benchmark needs no run at rate 1 (exact_or_sampled.choose).
    points: bool = True
    # The smallest increase to catch with 90% power at every site holding
    # min_share: update-baselines plans rate and seeds for it (power.py),
    # spending at most detect_cost times the manifest's profiled runs.
    detect: float | None = None
    detect_cost: float = 4.0
    timeout: float = 600.0
    # Arguments of the counted overhead runs in place of command[1:].
    overhead_args: list | None = None
    # Not manifest keys: the min_effect an exact run takes (the manifest's
    # own, else EXACT_MIN_EFFECT), and the rate of the sampled runs that
    # an exact run replaced (the overhead check measures that rate).
    exact_min_effect: float = EXACT_MIN_EFFECT
    sampled_rate: float | None = None
    # Not a manifest key: the manifest's directory, which relative paths
    # in `command` are resolved against ("" when not read from a file).
    directory: str = ""

    def __post_init__(self):
        if self.mode == "exact":
            if self.sampled_rate is None:
                self.sampled_rate = self.rate
            self.rate = 1.0
            self.seeds = list(self.seeds[:1])

    @property
    def profiled_rate(self) -> float:
        """The rate profiling costs are measured at: the sampled rate."""
        return self.rate if self.sampled_rate is None else self.sampled_rate

    def params(self) -> dict:
        return {"alpha": self.alpha, "min_effect": self.min_effect,
                "exact_min_effect": self.exact_min_effect, "min_share": self.min_share}

    def settings(self) -> dict:
        return {k: getattr(self, k) for k in SETTINGS}


@dataclass
class Manifest:
    path: str
    directory: str
    benchmarks: list
    # argv run in `directory` to build the benchmarks, or None.
    build: list | None = None
    # The [[budget]] tables, as budget.Budget.
    budgets: list = field(default_factory=list)

    def names(self) -> list:
        return [b.name for b in self.benchmarks]


def _num(v):
    return is_finite(v)


def _check_setting(where: str, key: str, v):
    def bad(why):
        return ConfigError(f"{where}: `{key}` {why}")
    if key == "rate":
        if not _num(v) or not is_rate(v):
            raise bad(f"must be a number in [{MIN_RATE}, 1], got {v!r}")
        return float(v)
    if key == "seeds":
        if not isinstance(v, list) or not 0 < len(v) <= 1000 or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2 ** 62 for s in v):
            raise bad(f"must be a non-empty list of at most 1000 integers in [0, 2^62), "
                      f"got {v!r}")
        if len(set(v)) != len(v):
            raise bad(f"has duplicate seeds {v!r}")
        return list(v)
    if key in ("frames", "overhead_runs"):
        lo, hi = (1, 4096) if key == "frames" else (2, 1000)
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise bad(f"must be an integer in [{lo}, {hi}], got {v!r}")
        return v
    if key in ("alpha", "min_share"):
        if not _num(v) or not 0 < v < 1:
            raise bad(f"must be a number in (0, 1), got {v!r}")
        return float(v)
    if key in ("min_effect", "gc_tolerance", "gc_timing_tolerance", "overhead_budget",
               "overhead_tolerance"):
        if not _num(v) or not 0 <= v <= 1e6:
            raise bad(f"must be a non-negative number (at most 1e6), got {v!r}")
        return float(v)
    if key == "timeout":
        if not _num(v) or not 0 < v <= 1e7:
            raise bad(f"must be a positive number of seconds (at most 1e7), got {v!r}")
        return float(v)
    if key in ("gc_exact", "overhead_time_fails", "concurrent", "points"):
        if not isinstance(v, bool):
            raise bad(f"must be true or false, got {v!r}")
        return v
    if key == "detect":
        if not _num(v) or not 0 < v < 1:
            raise bad(f"must be a fraction in (0, 1) such as 0.05 (5%), got {v!r}")
        return float(v)
    if key == "exact_limit":
        if not _num(v) or not 0 <= v <= 1000:
            raise bad(f"must be a number in [0, 1000] (0: never exact), got {v!r}")
        return float(v)
    if key == "detect_cost":
        if not _num(v) or not 1 <= v <= 1000:
            raise bad(f"must be a number in [1, 1000], got {v!r}")
        return float(v)
    if key == "mode":
        if v not in MODES:
            raise bad(f"must be one of {', '.join(MODES)}, got {v!r}")
        return v
    if key == "grouping":
        if v not in GROUPINGS:
            raise bad(f"must be one of {', '.join(GROUPINGS)}, got {v!r}")
        return v
    raise AssertionError(key)


def _resolve_arg(arg: str, base: str, first: bool) -> str:
    # argv[0] with a slash is a path; later arguments only when they are
    # explicitly relative (./ or ../), since anything else may be data.
    if os.path.isabs(arg):
        return arg
    if (first and "/" in arg) or arg.startswith(("./", "../")):
        return os.path.normpath(os.path.join(base, arg))
    return arg


def load_manifest(path: str) -> Manifest:
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: manifest not found; pass --manifest PATH "
                          f"or create benchmarks/benchmarks.toml") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read manifest: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: manifest is not valid UTF-8 (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: manifest is not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: manifest is nested too deeply") from None
    return parse_manifest(doc, path)


def parse_manifest(doc: dict, path: str) -> Manifest:
    directory = os.path.dirname(os.path.abspath(path))
    unknown = sorted(set(doc) - {"build", "defaults", "benchmark", "budget"})
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {', '.join(unknown)}; "
                          f"allowed: build, [defaults], [[benchmark]] and [[budget]]")
    build = _check_build(path, doc.get("build"), directory)
    defaults = dict(SETTINGS)
    d = doc.get("defaults", {})
    if not isinstance(d, dict):
        raise ConfigError(f"{path}: `defaults` must be a table")
    for k, v in d.items():
        if k not in SETTINGS:
            raise ConfigError(f"{path}: [defaults]: unknown key `{k}`; allowed: "
                              f"{', '.join(SETTINGS)}")
        defaults[k] = _check_setting(f"{path}: [defaults]", k, v)
    benches = doc.get("benchmark", [])
    if not isinstance(benches, list) or not all(isinstance(b, dict) for b in benches):
        raise ConfigError(f"{path}: `benchmark` must be an array of tables ([[benchmark]])")
    if not benches:
        raise ConfigError(f"{path}: no [[benchmark]] entries")
    out, seen = [], set()
    for i, b in enumerate(benches):
        name = b.get("name")
        where = f"{path}: benchmark {name!r}" if isinstance(name, str) else \
            f"{path}: [[benchmark]] #{i + 1}"
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ConfigError(f"{where}: `name` must be a string of letters, digits, "
                              f"'_', '.', '-' (it names the baseline file)")
        if name in seen:
            raise ConfigError(f"{where}: duplicate benchmark name")
        seen.add(name)
        for k in b:
            if k not in SETTINGS and k not in BENCH_ONLY:
                raise ConfigError(f"{where}: unknown key `{k}`; allowed: "
                                  f"{', '.join(BENCH_ONLY + tuple(SETTINGS))}")
        cmd = b.get("command")
        if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd):
            raise ConfigError(f"{where}: `command` must be a non-empty list of strings "
                              f"(argv), e.g. [\"./_build/default/bench.exe\"]")
        cwd = b.get("cwd", ".")
        if not isinstance(cwd, str):
            raise ConfigError(f"{where}: `cwd` must be a string")
        env = b.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ConfigError(f"{where}: `env` must be a table of strings")
        if "OCAMLMEMPROF" in env:
            raise ConfigError(f"{where}: `env` must not set OCAMLMEMPROF; use rate/seeds/frames")
        settings = dict(defaults)
        for k in SETTINGS:
            if k in b:
                settings[k] = _check_setting(where, k, b[k])
        if "min_effect" in b or "min_effect" in d:
            settings["exact_min_effect"] = settings["min_effect"]
        else:
            if settings["mode"] == "exact":
                # Counted, not sampled: a smaller change is no noise.
                settings["min_effect"] = EXACT_MIN_EFFECT
            elif settings["detect"] is not None:
                # A true +detect change must fail: its estimate falls below
                # detect half the time, and below detect / 2 rarely at the
                # planned power (STATISTICS.md, "Planning for `detect`").
                settings["min_effect"] = settings["detect"] / 2
        oargs = b.get("overhead_args")
        if oargs is not None and (not isinstance(oargs, list) or len(oargs) > 1000 or
                                  not all(isinstance(a, str) for a in oargs)):
            raise ConfigError(f"{where}: `overhead_args` must be a list of strings (the "
                              f"counted overhead runs' arguments after the program)")
        out.append(Benchmark(
            name=name,
            command=[_resolve_arg(a, directory, j == 0) for j, a in enumerate(cmd)],
            cwd=os.path.normpath(os.path.join(directory, cwd)),
            env=dict(env), directory=directory, **settings,
            overhead_args=None if oargs is None else
            [_resolve_arg(a, directory, False) for a in oargs]))
    return Manifest(path=os.path.abspath(path), directory=directory, benchmarks=out,
                    build=build, budgets=parse_budgets(doc.get("budget"), path,
                                                       [b.name for b in out]))


MAX_ARGV = 1000
MAX_ARG = 100_000


def _check_build(path: str, v, directory: str) -> list | None:
    """`build`: a non-empty argv of at most MAX_ARGV strings without NUL,
    resolved like `command`; None when absent."""
    if v is None:
        return None
    if not isinstance(v, list) or not v or len(v) > MAX_ARGV or not all(
            isinstance(a, str) and "\0" not in a and len(a) <= MAX_ARG for a in v) or not v[0]:
        raise ConfigError(f"{path}: `build` must be a non-empty list of strings (argv, run in "
                          f"the manifest's directory), e.g. [\"make\", \"bench\"]")
    return [_resolve_arg(a, directory, j == 0) for j, a in enumerate(v)]


def judged_with(pr: Manifest, base: Manifest) -> tuple[Manifest, list]:
    """The pull request's benchmarks with every verdict setting from `base`.

    A benchmark of both manifests takes the base benchmark's settings.  One
    that only the pull request has keeps its own: it has no trusted baseline,
    so nothing is judged against one, and a rename cannot use this to escape
    (the old name's baseline is then reported missing).  Returns the manifest
    to judge with and the differences, one dict per benchmark and setting the
    pull request asked to change.  The budgets are the base's too: each one
    the pull request raised, lowered, removed or added is a change, and a
    base budget of a benchmark the pull request lacks is dropped."""
    base_by_name = {b.name: b for b in base.benchmarks}
    out, changes = [], []
    for b in pr.benchmarks:
        src = base_by_name.get(b.name)
        if src is None:
            out.append(b)
            continue
        want = src.settings()
        for k in VERDICT_SETTINGS:
            if getattr(b, k) != want[k]:
                changes.append({"benchmark": b.name, "setting": k,
                                "pull_request": getattr(b, k), "base": want[k]})
        out.append(dataclasses.replace(b, exact_min_effect=src.exact_min_effect,
                                       **{k: want[k] for k in VERDICT_SETTINGS}))
    changes += budget_changes(pr.budgets, base.budgets)
    names = {b.name for b in out}
    budgets = [b for b in base.budgets if b.benchmark is None or b.benchmark in names]
    return dataclasses.replace(pr, benchmarks=out, budgets=budgets), changes


def parse_shard(spec: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d{1,4})/(\d{1,4})", spec or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ConfigError(f"--shard {spec!r}: expected K/N with 1 <= K <= N, e.g. 2/4")
    return int(m.group(1)), int(m.group(2))


def shard_names(names: list, k: int, n: int) -> list:
    """Round-robin over sorted names: deterministic and balanced by count."""
    return [x for i, x in enumerate(sorted(names)) if i % n == k - 1]


def exact_form(bench):
    """The benchmark counted exactly: rate 1, its first seed, and the
    min_effect of exact runs."""
    return dataclasses.replace(bench, mode="exact", min_effect=bench.exact_min_effect)


def selected_benchmarks(manifest, shard_spec, extra=()):
    """The manifest's benchmarks (and `extra` names: trusted baselines the
    manifest lacks) that this shard owns, round-robin over all names:
    (benchmarks, extra names, (k, n) or None)."""
    if not shard_spec:
        return list(manifest.benchmarks), sorted(extra), None
    k, n = parse_shard(shard_spec)
    keep = set(shard_names(manifest.names() + list(extra), k, n))
    return ([b for b in manifest.benchmarks if b.name in keep],
            sorted(x for x in extra if x in keep), (k, n))
