"""Helpers shared by the patched runtime's tests: where the runtime and
programs are, running programs with a clean environment, reading
profiles. Imported by name (not as `conftest`) so that it cannot be
confused with another test directory's conftest in one pytest run.

Invariants: programs are compiled once per session into a temporary
directory, never into the source tree; the runtime under test is
_build/runtime (or $MEMPROF_CI_RUNTIME, such as _build/runtime-5.3.0 for
`make test-runtime OCAML_VERSION=5.3.0`), its build tree the matching
_build/ocaml-src (_build/ocaml-src-5.3.0), and its absence is a test
failure that names `make runtime`, never a skip.
"""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = pathlib.Path(__file__).resolve().parent / "programs"
RUNTIME = pathlib.Path(os.environ.get("MEMPROF_CI_RUNTIME", ROOT / "_build" / "runtime"))
# build-runtime.sh names the build tree after the runtime: runtime-V, ocaml-src-V.
SRC_TREE = RUNTIME.parent / ("ocaml-src" + RUNTIME.name[len("runtime"):])
# The release of the runtime under test ("5.4.1"), as its ocamlc -version
# says it, or None while it is not built (runtime_bin then fails the test).
try:
    OCAML_VERSION = subprocess.run([str(RUNTIME / "bin" / "ocamlc"), "-version"],
                                   capture_output=True, text=True).stdout.strip() or None
except OSError:
    OCAML_VERSION = None
SCHEMA = ROOT / "runtime-patch" / "format" / "profile.schema.json"

THREAD_FLAGS = ["-I", "+unix", "-I", "+threads"]


def binomial_bound_ok(samples, words, rate, sigmas=5.7):
    """The check of upstream's statmemprof tests: a sample count lies
    within `sigmas` standard deviations of Binomial(words, rate)."""
    mean = words * rate
    sd = (words * rate * (1 - rate)) ** 0.5
    return abs(samples - mean) <= sigmas * sd


@pytest.fixture(scope="session")
def runtime_bin():
    bindir = RUNTIME / "bin"
    if not (bindir / "ocamlopt").exists():
        pytest.fail(f"no patched runtime at {RUNTIME}: run `make runtime` first")
    return bindir


class Builder:
    def __init__(self, bindir, outdir):
        self.bindir = bindir
        self.outdir = outdir
        self.cache = {}

    def __call__(self, name, backend="native", debug=True, threads=False, variant=None):
        """Build programs/NAME.ml (with NAME_stub.c if there is one);
        variant="d" links the debug runtime, whose assertions are on."""
        key = (name, backend, debug, threads, variant)
        if key in self.cache:
            return self.cache[key]
        src = PROGRAMS / f"{name}.ml"
        stub = PROGRAMS / f"{name}_stub.c"   # C primitives, if the program has any
        tag = f"{name}.{backend}{'' if debug else '.nodebug'}{'.' + variant if variant else ''}"
        work = self.outdir / tag
        work.mkdir(parents=True, exist_ok=True)
        (work / f"{name}.ml").write_text(src.read_text())
        stubs = []
        if stub.exists():
            (work / stub.name).write_text(stub.read_text())
            stubs = [stub.name]
        exe = work / f"{name}.exe"
        if backend == "native":
            cmd = [str(self.bindir / "ocamlopt")]
            libs = ["unix.cmxa", "threads.cmxa"] if threads else []
        else:
            cmd = [str(self.bindir / "ocamlc")] + (["-custom"] if stubs else [])
            libs = ["unix.cma", "threads.cma"] if threads else []
        cmd += (["-g"] if debug else []) + (THREAD_FLAGS if threads else [])
        cmd += ["-runtime-variant", variant] if variant else []
        cmd += libs + stubs + [f"{name}.ml", "-o", exe.name]
        res = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if res.returncode != 0:
            pytest.fail(f"compiling {name}.ml failed:\n{res.stderr}")
        self.cache[key] = exe
        return exe


@pytest.fixture(scope="session")
def build(runtime_bin, tmp_path_factory):
    return Builder(runtime_bin, tmp_path_factory.mktemp("programs"))


def run(exe, *args, env=None, memprof=None, runparam=None, check=True, cwd=None,
        timeout=300):
    """Run a test program with a clean OCAMLMEMPROF/OCAMLRUNPARAM."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("OCAMLMEMPROF", "OCAMLRUNPARAM", "CAMLRUNPARAM")}
    if memprof is not None:
        e["OCAMLMEMPROF"] = memprof
    if runparam is not None:
        e["OCAMLRUNPARAM"] = runparam
    e.update(env or {})
    res = subprocess.run([str(exe), *map(str, args)], env=e, cwd=cwd,
                         capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{exe.name} {args} exited {res.returncode}:\n{res.stderr}")
    return res


def points_minor_words(prof):
    """The minor words of every allocation point and call point of a
    points=on profile: all of the minor heap's."""
    return sum(p[6] for p in prof["points"]["points"] + prof["points"]["calls"])


def points_promoted_words(prof):
    """The promoted words of every allocation point and call point of a
    points=on profile: in a one-domain program, all the GC promoted."""
    return sum(p[10] for p in prof["points"]["points"] + prof["points"]["calls"])


def profile(exe, *args, rate, seed=1, frames=16, live=None, stackmem=None,
            snapshot=None, points=None, tmp, name="p.json", **kw):
    """Run under the built-in tracker and return (parsed profile, raw bytes, result)."""
    out = tmp / name
    spec = f"rate={rate},frames={frames},out={out}"
    if seed is not None:
        spec += f",seed={seed}"
    if live is not None:
        spec += f",live={live}"
    if stackmem is not None:
        spec += f",stackmem={stackmem}"
    if snapshot is not None:
        spec += f",snapshot={snapshot}"
    if points is not None:
        spec += f",points={points}"
    res = run(exe, *args, memprof=spec, **kw)
    raw = out.read_bytes()
    return read_profile(raw), raw, res


def same_but_live_mode(walk: bytes, gc: bytes) -> bool:
    """Whether the profiles of live=walk and live=gc are byte-identical
    apart from the mode their config names."""
    w, g = b'"live":"walk"', b'"live":"gc"'
    assert walk.count(w) == 1 and gc.count(g) == 1
    return walk == gc.replace(g, w)


_validator = None


def read_profile(raw) -> dict:
    """A profile the runtime wrote, checked against the format's JSON Schema,
    with each stack's missing counts given as zeros and its frame indices
    replaced by the frame table's objects (so tests read `st["live_samples"]`
    and `st["frames"]` as in format version 1), the snapshot's sites' too.
    Version 4 is the one with a snapshot, 5 any with allocation points, 6
    any with allocation budgets."""
    global _validator
    import jsonschema
    if _validator is None:
        schema = json.loads(SCHEMA.read_text())
        _validator = jsonschema.validators.validator_for(schema)(schema)
    doc = json.loads(raw)
    _validator.validate(doc)
    assert doc["version"] == (6 if "budgets" in doc else 5 if "points" in doc
                              else 4 if "snapshot" in doc else 3)
    table = doc.pop("frame_table")
    for st in doc["stacks"]:
        st["frames"] = [table[i] for i in st["frames"]]
        for k in doc["totals"]:
            st.setdefault(k, 0)
    for site in doc.get("snapshot", {}).get("sites", []):
        site["frames"] = [table[i] for i in site["frames"]]
    return doc


def site_totals(prof, key="samples"):
    """Sum a count per innermost known function name."""
    totals = {}
    for st in prof["stacks"]:
        fn = next((f["function"] for f in st["frames"] if f["function"]), None)
        totals[fn] = totals.get(fn, 0) + st[key]
    return totals
