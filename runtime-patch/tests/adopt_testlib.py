"""Helpers for the tests of the installed patched compiler (`make install`).

The tests use the install that `make test` makes in _build/adopt/prefix
(the Makefile's adopt-prefix target), or MEMPROF_CI_ADOPT_PREFIX. They fail,
never skip, when it is missing.

Every tool runs with PATH=PREFIX/bin:$PATH and none of the variables that
could point OCaml, findlib, dune or opam elsewhere: the point is that the
install works with no extra environment.
"""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PREFIX = ROOT / "_build" / "adopt" / "prefix"

# Variables that would redirect a tool, removed from every test run.
_REDIRECTING = ("OCAML", "CAML", "OPAM", "DUNE", "INSIDE_DUNE", "FINDLIB")


def adopt_prefix() -> Path:
    prefix = Path(os.environ.get("MEMPROF_CI_ADOPT_PREFIX", DEFAULT_PREFIX))
    missing = [p for p in ("bin/ocamlopt", "lib/findlib.conf", "bin/ocamlfind", "bin/dune",
                           "share/memprof-ci/patch-id") if not (prefix / p).exists()]
    assert not missing, (
        f"no complete install in {prefix} (missing {', '.join(missing)}): run `make test`, "
        "or `make adopt-prefix`, or set MEMPROF_CI_ADOPT_PREFIX to a `make install` PREFIX")
    return prefix


def prefix_release() -> str:
    """The OCaml release installed in the adopting prefix (`make test-runtime
    OCAML_VERSION=5.3.0` tests a 5.3.0 one), or the default release while
    the prefix is not built yet (adopt_prefix() then fails the test)."""
    prefix = Path(os.environ.get("MEMPROF_CI_ADOPT_PREFIX", DEFAULT_PREFIX))
    try:
        return subprocess.run([str(prefix / "bin" / "ocamlc"), "-version"], capture_output=True,
                              text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return (ROOT / "runtime-patch" / "patches" / "default-version").read_text().strip()


def clean_env(prefix: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_REDIRECTING)}
    env["PATH"] = f"{prefix}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}"
    env.update(extra)
    return env


def run(cmd, *, env, cwd=None, timeout=600, check=True):
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} exited {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}")
    return r


def patch_id() -> str:
    return subprocess.run([str(ROOT / "runtime-patch" / "patch-id.sh")], capture_output=True,
                          text=True, check=True).stdout.strip()
