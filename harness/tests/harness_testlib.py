"""Shared helpers for the harness tests: synthetic profiles and CLI runners.

Imported by this unique name, not as `conftest`, so that it cannot be
confused with another test directory's conftest in one pytest run.

Invariant: nothing here needs the OCaml runtime; benchmarks are played by
tests/fakebench.py, which writes format-1 profiles from a JSON spec.
"""

import json
import os
import subprocess
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.dirname(HERE)
REPO = os.path.dirname(HARNESS)
sys.path.insert(0, HARNESS)
FAKE = os.path.join(HERE, "fakebench.py")
PY = "/usr/bin/python3"


def frame(fn, fl, ln):
    return {"file": fl, "line": ln, "col_start": 0, "col_end": 1, "function": fn,
            "inlined": False}


def make_profile(stacks, rate=1e-4, seed=1, frames=16, gc=None):
    """stacks: list of (frames[(fn, file, line)], samples, live)."""
    keys = ("blocks", "samples", "words", "minor_samples", "major_samples", "marshal_samples",
            "custom_samples", "promoted_samples", "collected_samples", "live_samples")
    out, totals = [], dict.fromkeys(keys, 0)
    for fr, n, live in stacks:
        st = {"frames": [frame(*f) for f in fr], "blocks": n, "samples": n, "words": 3 * n,
              "minor_samples": n, "major_samples": 0, "marshal_samples": 0, "custom_samples": 0,
              "promoted_samples": live, "collected_samples": n - live, "live_samples": live}
        out.append(st)
        for k in keys:
            totals[k] += st[k]
    g = {"minor_words": 1000, "promoted_words": 10, "major_words": 100, "minor_collections": 1,
         "major_collections": 0, "compactions": 0}
    g.update(gc or {})
    return {"format": "memprof-ci/profile", "version": 1, "ocaml_version": "5.3.0",
            "backend": "native", "argv": ["x"], "config": {"rate": rate, "seed": seed,
                                                          "frames": frames},
            "gc": g, "totals": totals, "stacks": out}


def to_version2(doc):
    """The same profile in format version 2: each distinct frame object once
    in `frame_table` (sorted by its JSON text, as the runtime orders it),
    stacks listing indices."""
    texts = sorted({json.dumps(f, sort_keys=True) for st in doc["stacks"] for f in st["frames"]})
    index = {t: i for i, t in enumerate(texts)}
    stacks = [dict(st, frames=[index[json.dumps(f, sort_keys=True)] for f in st["frames"]])
              for st in doc["stacks"]]
    return dict(doc, version=2, frame_table=[json.loads(t) for t in texts], stacks=stacks)


def to_version3(doc):
    """The same profile in format version 3: version 2 with each stack's
    counts of zero left out (the totals keep every count)."""
    v2 = to_version2(doc)
    stacks = [{k: v for k, v in st.items() if k == "frames" or v != 0} for st in v2["stacks"]]
    return dict(v2, version=3, stacks=stacks)


def write_json(path, doc):
    os.makedirs(os.path.dirname(str(path)) or ".", exist_ok=True)
    with open(path, "w") as fh:
        json.dump(doc, fh)
    return str(path)


def user_site(i):
    return [("Stdlib__List.map", "list.ml", 80), (f"Main.f{i}", "main.ml", 10 + i),
            ("Main.main", "main.ml", 200)]


def spec_sites(words_by_site, live=0.1):
    return [{"frames": user_site(i), "words": w, "live": live} for i, w in enumerate(words_by_site)]


def write_manifest(d, benches, defaults=None):
    """benches: list of dicts with name and spec (dict) or raw command.
    The mode is "sampled" unless the test sets one: "auto" decides by timing
    a run (test_exactplan.py tests it on its own)."""
    lines = []
    if not any("mode" in x for x in [defaults or {}, *benches]):
        defaults = dict(defaults or {}, mode="sampled")
    if defaults:
        lines.append("[defaults]")
        for k, v in defaults.items():
            lines.append(f"{k} = {json.dumps(v)}")
    for b in benches:
        b = dict(b)
        if "spec" in b:
            spec = b.pop("spec")
            sp = os.path.join(d, f"{b['name']}.spec.json")
            write_json(sp, spec)
            b["command"] = [PY, FAKE, sp] + b.pop("args", [])
        lines.append("[[benchmark]]")
        for k, v in b.items():
            if isinstance(v, dict):     # a TOML inline table of strings
                v = "{ " + ", ".join(f"{a} = {json.dumps(x)}" for a, x in v.items()) + " }"
                lines.append(f"{k} = {v}")
            else:
                lines.append(f"{k} = {json.dumps(v)}")
    path = os.path.join(d, "benchmarks.toml")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def run_cli(args, cwd=None, timeout=120, env_extra=None):
    # No dithered runs of the GC's schedule unless a test asks for them
    # (they multiply update-baselines' runs).
    env = dict(os.environ, PYTHONPATH=HARNESS,
               **dict({"MEMPROF_CI_SCHEDULE_RUNS": "0"}, **(env_extra or {})))
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    r = subprocess.run([PY, "-m", "memprof_ci", *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    return r


def run_many(calls, timeout=120):
    """Run several CLI invocations concurrently: [(args, cwd)] -> results."""
    env = dict(os.environ, PYTHONPATH=HARNESS, MEMPROF_CI_SCHEDULE_RUNS="0")
    env.pop("PYTEST_ADDOPTS", None)
    procs = [subprocess.Popen([PY, "-m", "memprof_ci", *a], cwd=cwd, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for a, cwd in calls]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=timeout)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, so, se))
    return out


# ---- a small fake project driven through the CLI (tests of check/update)

BASE_WORDS = [2e7, 1e7, 5e6, 1e5]


def project(tmp_path, benches=None, defaults=None):
    d = str(tmp_path)
    if benches is None:
        benches = [{"name": "alpha", "spec": {"sites": spec_sites(BASE_WORDS)}},
                   {"name": "beta", "spec": {"sites": spec_sites([3e7, 2e6])}}]
    return write_manifest(d, benches, defaults=dict({"rate": 1e-3, "seeds": [1, 2]},
                                                          **(defaults or {})))


def bump(tmp_path, name, site, factor, salt=1):
    p = os.path.join(str(tmp_path), f"{name}.spec.json")
    spec = json.load(open(p))
    spec["sites"][site]["words"] *= factor
    spec["salt"] = salt
    json.dump(spec, open(p, "w"))


def cli(tmp_path, *args, **kw):
    return run_cli(list(args), cwd=str(tmp_path), **kw)


def update(tmp_path, *extra):
    r = cli(tmp_path, "update-baselines", "--manifest", "benchmarks.toml", "--no-overhead", *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def check(tmp_path, *extra):
    return cli(tmp_path, "check", "--manifest", "benchmarks.toml", "--no-overhead", *extra)


def no_traceback(r):
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
