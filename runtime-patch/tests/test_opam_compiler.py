"""The opam compiler package runtime-patch/opam/ocaml-variants.opam, pinned
from this checkout and built by opam in a throwaway root, offline.

Slow (opam builds the whole compiler: 8 min 47 s on a loaded 2-core machine), so it is not
part of `make test`: `make opam-check` runs it (MEMPROF_CI_OPAM_COMPILER=1).

What it can exercise here: opam reads the package, fetches the pinned OCaml
tarball (from opam's download cache, seeded with the sha256-named copy
`make runtime` uses, so that opam downloads nothing itself), checks its
sha256, runs build-runtime.sh's build and install steps
into the switch, and the switch's compiler is the patched one. What it cannot:
opam-repository's real `ocaml`, `ocaml-config`, `dune` and `ocamlfind`
packages (stubs stand in for the first two; Debian's dune is used with
OCAMLPATH naming the switch's library directory, as opam's own dune would not
need).
"""

import json
import os
import shutil
import textwrap

import pytest

from adopt_testlib import ROOT, clean_env, patch_id, run
from test_install import _stub_repository

OCAML_SHA256 = "b1e297adc186635540758eb064c7fab025598ae4436f3b9767e5025188b4e0ab"

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMPROF_CI_OPAM_COMPILER") != "1",
    reason="slow (a full compiler build by opam): run `make opam-check`")


def test_opam_compiler_package(tmp_path):
    tarball = ROOT / "_build" / "ocaml_5.4.1.orig.tar.xz"
    assert tarball.exists(), "needs _build/ocaml_5.4.1.orig.tar.xz: run `make runtime` first"
    repo, root = tmp_path / "repo", tmp_path / "opamroot"
    _stub_repository(repo)
    # No compiler of ours on PATH: opam must build its own.
    env = clean_env(tmp_path / "nowhere", OPAMROOT=str(root), OPAMYES="1", OPAMCOLOR="never",
                    OPAMNODEPEXTS="1")

    def opam(*args, timeout=600):
        return run(["opam", *args], env=env, cwd=tmp_path, timeout=timeout)

    opam("init", "--bare", "-n", "--disable-sandboxing", "local", str(repo))
    cache = root / "download-cache" / "sha256" / OCAML_SHA256[:2]
    cache.mkdir(parents=True)
    shutil.copyfile(tarball, cache / OCAML_SHA256)

    opam("switch", "create", "memprof", "--empty")
    opam("pin", "add", "--switch", "memprof", "-n", "--kind=path",
         "ocaml-variants.5.4.1+memprof-ci", str(ROOT / "runtime-patch"))
    opam("install", "--switch", "memprof", "ocaml-variants.5.4.1+memprof-ci", timeout=3600)

    switch = root / "memprof"
    r = opam("exec", "--switch", "memprof", "--", "ocamlc", "-where")
    assert r.stdout.strip() == str(switch / "lib" / "ocaml")
    assert (switch / "share/memprof-ci/patch-id").read_text().strip() == patch_id()
    r = opam("list", "--switch", "memprof", "--installed", "--short", "--columns=name,version")
    assert "ocaml-variants 5.4.1+memprof-ci" in " ".join(r.stdout.split()), r.stdout

    prog = tmp_path / "prog.ml"
    prog.write_text(textwrap.dedent("""\
        let () = Thread.join (Thread.create (fun () ->
          let l = List.init 100_000 (fun i -> (i, Unix.getpid ())) in
          print_int (List.length l)) ())
        """))
    opam("exec", "--switch", "memprof", "--", "ocamlopt", "-g", "-I", "+unix", "-I", "+threads",
         "unix.cmxa", "threads.cmxa", str(prog), "-o", str(tmp_path / "prog"))
    out = tmp_path / "p.json"
    r = run([str(tmp_path / "prog")], env=dict(env, OCAMLMEMPROF=f"rate=1e-3,seed=1,out={out}"))
    assert r.stdout == "100000"
    assert json.loads(out.read_text())["totals"]["samples"] > 0
