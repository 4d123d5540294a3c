"""The manifest's allocation budgets ([[budget]]), read and compared.

A budget caps the words one run of a benchmark allocates at one function's
own allocation points (`function`, spelled as the profile's points spell
it: "Inject.small") or at one source line (`point = "FILE:LINE"`, FILE
being the point's file or a path suffix of it at a `/`), counted exactly
by the first seed's run (OCAMLMEMPROF points=on): `words_per_run`.  Or it
caps the words each call of an annotated function allocates
(`words_per_call`, with `function` and `benchmark`): it applies to the
profile's annotated entry of that function, whose limit becomes the
smaller of the two.  `benchmark` names the one benchmark it applies to;
absent, it applies to every benchmark that counts points.  Invariants:
parse_budgets returns only checked Budgets or raises ConfigError naming
the file, "[[budget]] #N" and the key; unknown keys and wrong types are
errors; budget_changes lists every budget a pull request raised, lowered,
removed or added, in judged_with's change shape (a words_per_call budget's
setting ends in " per call"); lowered_text rewrites only the
`words_per_run = INT` or `words_per_call = INT` line of the budgets it
lowers, and returns a text that tomllib reads as the same manifest with
those limits changed, or None.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

from ..errors import ConfigError

KEYS = ("function", "point", "words_per_run", "words_per_call", "benchmark")
POINT_RE = re.compile(r"^(.+):([0-9]{1,9})$")
MAX_BUDGETS = 10_000


@dataclass(frozen=True)
class Budget:
    function: str | None      # the function whose own points count, or None
    file: str | None          # the point's file (or a path suffix of it), or None
    line: int | None
    words_per_run: int | None  # None for a words_per_call budget
    benchmark: str | None     # None: every benchmark that counts points
    index: int = 0            # its place in the manifest, from 1
    words_per_call: int | None = None   # the per-call cap of an annotated function

    @property
    def limit(self) -> int:
        """Its words per run, or per call."""
        return self.words_per_run if self.words_per_call is None else self.words_per_call

    @property
    def unit(self) -> str:
        return "words_per_run" if self.words_per_call is None else "words_per_call"

    @property
    def what(self) -> str:
        """The function, or FILE:LINE, as the manifest spells it."""
        return self.function if self.function is not None else f"{self.file}:{self.line}"

    @property
    def key(self) -> tuple:
        """What identifies a budget across two manifests."""
        kind = "function" if self.function is not None else "point"
        return (self.benchmark, kind if self.words_per_call is None else "call", self.what)

    def applies_to(self, bench) -> bool:
        if self.benchmark is not None:
            return bench.name == self.benchmark
        return bool(bench.points)

    def matches(self, pkey: tuple) -> bool:
        """Whether the point or call point keyed (file, line, first, last,
        function) is one of this budget's."""
        file, line, _first, _last, fn = pkey
        if self.function is not None:
            return fn == self.function
        return line == self.line and (file == self.file or file.endswith("/" + self.file))


def parse_budgets(v, path: str, names: list) -> list:
    """The [[budget]] tables of a manifest whose benchmarks are `names`."""
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(b, dict) for b in v):
        raise ConfigError(f"{path}: `budget` must be an array of tables ([[budget]])")
    if len(v) > MAX_BUDGETS:
        raise ConfigError(f"{path}: more than {MAX_BUDGETS} [[budget]] tables")
    out, seen = [], {}
    for i, b in enumerate(v):
        budget = _parse_one(b, f"{path}: [[budget]] #{i + 1}", i + 1, names)
        if budget.key in seen:
            raise ConfigError(f"{path}: [[budget]] #{i + 1}: the same budget as "
                              f"[[budget]] #{seen[budget.key]} ({budget.what})")
        seen[budget.key] = i + 1
        out.append(budget)
    return out


def _parse_one(b: dict, where: str, index: int, names: list) -> Budget:
    for k in b:
        if k not in KEYS:
            raise ConfigError(f"{where}: unknown key `{k}`; allowed: {', '.join(KEYS)}")
    if ("function" in b) == ("point" in b):
        raise ConfigError(f"{where}: needs exactly one of `function` (e.g. \"Main.parse\") "
                          f"and `point` (\"FILE:LINE\")")
    function = file = line = None
    if "function" in b:
        function = b["function"]
        if not isinstance(function, str) or not function or len(function) > 1000:
            raise ConfigError(f"{where}: `function` must be a function's name as the profile "
                              f"spells it, e.g. \"Main.parse\", got {function!r}")
    else:
        m = POINT_RE.match(b["point"]) if isinstance(b["point"], str) else None
        if m is None or len(b["point"]) > 1000:
            raise ConfigError(f"{where}: `point` must be \"FILE:LINE\", e.g. "
                              f"\"src/main.ml:12\", got {b['point']!r}")
        file, line = m.group(1), int(m.group(2))
    unit = "words_per_call" if "words_per_call" in b else "words_per_run"
    if unit == "words_per_call" and ("words_per_run" in b or function is None
                                     or "benchmark" not in b):
        raise ConfigError(f"{where}: `words_per_call` caps each call of an annotated "
                          f"`function` in one `benchmark`: it needs both, and no "
                          f"`point` or `words_per_run`")
    words = b.get(unit)
    if not isinstance(words, int) or isinstance(words, bool) or not 0 <= words < 2 ** 63:
        what = "one run may allocate there" if unit == "words_per_run" else \
            "one call may allocate"
        raise ConfigError(f"{where}: `{unit}` must be an integer >= 0 (the words {what}), "
                          f"got {words!r}")
    bench = b.get("benchmark")
    if bench is not None and (not isinstance(bench, str) or bench not in names):
        raise ConfigError(f"{where}: `benchmark` {bench!r} names no [[benchmark]] of the "
                          f"manifest")
    per_call = unit == "words_per_call"
    return Budget(function=function, file=file, line=line,
                  words_per_run=None if per_call else words, benchmark=bench, index=index,
                  words_per_call=words if per_call else None)


def budget_changes(pr: list, base: list) -> list:
    """Every budget the pull request's list `pr` changed from `base`'s:
    {"benchmark", "setting", "pull_request", "base"}, words per run (or
    per call) or None for a budget one side lacks."""
    mine = {b.key: b.limit for b in pr}
    theirs = {b.key: b.limit for b in base}
    out = []
    for key in sorted(set(mine) | set(theirs), key=lambda k: (k[0] or "", k[1], k[2])):
        if mine.get(key) != theirs.get(key):
            out.append({"benchmark": key[0] or "(every benchmark)",
                        "setting": f"budget {key[2]}" + (" per call" if key[1] == "call" else ""),
                        "pull_request": mine.get(key), "base": theirs.get(key)})
    return out


_TABLE = re.compile(r"^\s*\[")
_BUDGET_TABLE = re.compile(r"^\s*\[\[\s*budget\s*\]\]\s*(#.*)?$")
_WORDS_LINE = re.compile(r"^(\s*words_per_(?:run|call)\s*=\s*)([0-9][0-9_]*)(\s*(#.*)?)$")


def lowered_text(text: str, limits: dict) -> str | None:
    """The manifest `text` with [[budget]] #N's words_per_run (or
    words_per_call) set to limits[N] (N from 1), each on its own
    `words_per_run = INT` line of its table; None when a budget is not written that way (an inline
    table, say) or the result would read differently from the intended
    change."""
    lines = text.splitlines(keepends=True)
    n, in_budget, done = 0, False, set()
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        if _BUDGET_TABLE.match(body):
            n, in_budget = n + 1, True
        elif _TABLE.match(body):
            in_budget = False
        elif in_budget and n in limits and (m := _WORDS_LINE.match(body)):
            lines[i] = f"{m.group(1)}{limits[n]:_}{m.group(3)}{line[len(body):]}"
            done.add(n)
    if done != set(limits):
        return None
    new = "".join(lines)
    try:
        before, after = tomllib.loads(text), tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return None
    for k, limit in limits.items():
        table = before["budget"][k - 1]
        table["words_per_call" if "words_per_call" in table else "words_per_run"] = limit
    return new if after == before else None
