"""`make install PREFIX=...`: the installed patched compiler works with the
distribution's dune and ocamlfind, and with opam's ocaml-system route, with
PREFIX/bin first on PATH and no other variable (adopt_testlib.clean_env).

Uses the install `make test` keeps in _build/adopt/prefix (adopt_testlib).
"""

import json
import os
import shutil
import subprocess
import textwrap

import pytest

from adopt_testlib import ROOT, adopt_prefix, clean_env, patch_id, prefix_release, run

# The release the adopt prefix holds, and the next patch release, for the
# opam stubs' version bounds.
OCAML = prefix_release()
OCAML_NEXT = ".".join(OCAML.split(".")[:2] + [str(int(OCAML.split(".")[2]) + 1)])

THREADS_PROG = textwrap.dedent("""\
    (* unix and threads from the compiler's own libraries *)
    let () =
      let m = Mutex.create () and total = ref 0 in
      let work k () =
        let l = List.init 10_000 (fun i -> i * k) in
        Mutex.lock m; total := !total + List.length l; Mutex.unlock m in
      let ts = List.init 3 (fun k -> Thread.create (work k) ()) in
      List.iter Thread.join ts;
      let t = Unix.gettimeofday () in
      Printf.printf "total=%d clock=%b words=%d\\n" !total (t > 0.)
        (List.length (Str.split (Str.regexp " ") "a b c"))
    """)


@pytest.fixture(scope="module")
def prefix():
    return adopt_prefix()


@pytest.fixture(scope="module")
def env(prefix):
    return clean_env(prefix)


def test_compiler_is_at_home_in_prefix(prefix, env):
    """The install is configured for PREFIX (not a copy of _build/runtime):
    ocamlc -where, the tools on PATH and the recorded patch id."""
    r = run(["ocamlc", "-where"], env=env)
    assert r.stdout.strip() == str(prefix / "lib" / "ocaml")
    for tool in ("ocamlc", "ocamlopt", "ocamlfind", "dune"):
        assert shutil.which(tool, path=env["PATH"]) == str(prefix / "bin" / tool)
    assert (prefix / "share/memprof-ci/patch-id").read_text().strip() == patch_id()
    assert "_build/runtime" not in (prefix / "lib/ocaml/Makefile.config").read_text()


def test_memprof_ci_command_runs_the_installed_harness(tmp_path, prefix, env):
    """PREFIX/bin/memprof-ci runs the harness copied into PREFIX with
    Debian's interpreter, whatever python3 comes first on PATH and from
    any directory: no pip step, no PYTHONPATH."""
    assert shutil.which("memprof-ci", path=env["PATH"]) == str(prefix / "bin" / "memprof-ci")
    harness = prefix / "share/memprof-ci/harness/memprof_ci"
    source = ROOT / "harness/memprof_ci"
    assert sorted(str(p.relative_to(harness)) for p in harness.rglob("*.py")) == sorted(
        str(p.relative_to(source)) for p in source.rglob("*.py"))
    (tmp_path / "m.toml").write_text('[[benchmark]]\nname = "b"\ncommand = ["./b.exe"]\n')
    env = dict(env, PYTHONPATH="/nonexistent")
    r = run(["memprof-ci", "list", "--manifest", "m.toml"], env=env, cwd=tmp_path)
    assert r.stdout.split() == ["b"]


def test_ocamlfind_configuration(prefix, env):
    r = run(["ocamlfind", "printconf", "path"], env=env)
    assert r.stdout.split() == [str(prefix / "lib/ocaml"), str(prefix / "lib")]
    assert r.stderr == ""
    r = run(["ocamlfind", "printconf", "stdlib"], env=env)
    assert r.stdout.strip() == str(prefix / "lib/ocaml")
    r = run(["ocamlfind", "list"], env=env)
    assert r.stderr == "", r.stderr  # no "has multiple definitions"
    names = {line.split()[0] for line in r.stdout.splitlines()}
    assert {"unix", "threads", "threads.posix", "str", "dynlink"} <= names
    r = run(["ocamlfind", "query", "unix"], env=env)
    assert r.stdout.strip() == str(prefix / "lib/ocaml/unix")


@pytest.mark.parametrize("mode", ["native", "bytecode"])
def test_ocamlfind_builds_with_unix_threads_str(tmp_path, prefix, env, mode):
    """ocamlfind compiles and links against the patched compiler's own
    unix, threads and str, without a warning; the native program runs on
    the patched runtime (OCAMLMEMPROF writes a profile)."""
    (tmp_path / "prog.ml").write_text(THREADS_PROG)
    tool = "ocamlopt" if mode == "native" else "ocamlc"
    # findlib needs -thread with the threads package (its manual says so).
    r = run(["ocamlfind", tool, "-package", "unix,threads.posix,str", "-thread", "-linkpkg",
             "-g", "prog.ml", "-o", "prog"], env=env, cwd=tmp_path)
    assert r.stderr == "", r.stderr
    out = tmp_path / "p.json"
    r = run(["./prog"], env=dict(env, OCAMLMEMPROF=f"rate=1e-3,seed=1,out={out}"), cwd=tmp_path)
    assert r.stdout == "total=30000 clock=true words=3\n"
    if mode == "native":
        profile = json.loads(out.read_text())
        assert profile["ocaml_version"].startswith(OCAML)
        assert profile["totals"]["samples"] > 0


def test_ocamlfind_unix_only(tmp_path, env):
    (tmp_path / "u.ml").write_text('let () = print_string (Unix.getcwd () |> Filename.basename)\n')
    r = run(["ocamlfind", "ocamlopt", "-package", "unix", "-linkpkg", "u.ml", "-o", "u"],
            env=env, cwd=tmp_path)
    assert r.stderr == "", r.stderr
    assert run(["./u"], env=env, cwd=tmp_path).stdout == tmp_path.name


DUNE_PROJECT = {
    "dune-project": "(lang dune 2.9)\n",
    "lib/dune": "(library (name mylib) (libraries unix))\n",
    "lib/mylib.ml": "let now () = Unix.gettimeofday ()\n",
    "bin/dune": "(executable (name prog) (libraries mylib threads str))\n",
    "bin/prog.ml": THREADS_PROG + "let () = assert (Mylib.now () > 0.)\n",
    "bin2/dune": "(executable (name prog2) (libraries unix threads.posix))\n",
    "bin2/prog2.ml": "let () = Thread.join (Thread.create (fun () -> print_float (Unix.time ())) ())\n",
}


def test_dune_wrapper_runs_the_next_dune_whatever_its_version(tmp_path):
    """The wrapper install-tools.sh writes looks at no dune version: it runs
    the next `dune` on PATH (here a stand-in reporting 3.12.0) with the
    prefix's library directories first in OCAMLPATH."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib/ocaml/unix").mkdir(parents=True)
    (prefix / "bin/ocamlopt").write_text("")
    (prefix / "bin/ocamlopt").chmod(0o755)
    (prefix / "lib/ocaml/unix/META").write_text("")
    subprocess.run(["bash", str(ROOT / "runtime-patch/install-tools.sh"), str(prefix)],
                   check=True, capture_output=True)
    stand = tmp_path / "stand"
    stand.mkdir()
    (stand / "dune").write_text('#!/bin/sh\necho "dune 3.12.0 $* OCAMLPATH=$OCAMLPATH"\n')
    (stand / "dune").chmod(0o755)
    env = {"PATH": f"{prefix}/bin:{stand}:/usr/bin:/bin"}
    r = subprocess.run(["dune", "build", "--root", "."], env=env, capture_output=True,
                       text=True, check=True)
    assert r.stdout == (f"dune 3.12.0 build --root . "
                        f"OCAMLPATH={prefix}/lib/ocaml:{prefix}/lib\n"), r.stdout + r.stderr


def test_dune_builds_with_unix_and_threads(tmp_path, prefix, env):
    """Debian's dune (library path /usr/lib/ocaml compiled in) finds the
    patched compiler's unix and threads through PREFIX/bin/dune."""
    for name, text in DUNE_PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    r = run(["dune", "build", "--root", ".", "./bin/prog.exe", "./bin2/prog2.exe"],
            env=env, cwd=tmp_path)
    assert "hidden" not in r.stderr and "Error" not in r.stderr, r.stderr
    log = (tmp_path / "_build/log").read_text()
    assert f"{prefix}/bin/ocamlopt.opt" in log
    r = run(["./_build/default/bin/prog.exe"], env=env, cwd=tmp_path)
    assert r.stdout == "total=30000 clock=true words=3\n"
    run(["./_build/default/bin2/prog2.exe"], env=env, cwd=tmp_path)
    # INSTALL.md names the dune version the wrapper is tested with (the
    # README points there): this one.
    version = run(["dune", "--version"], env=env).stdout.strip()
    install = (ROOT / "runtime-patch" / "INSTALL.md").read_text()
    assert f"`dune --version` prints `{version}`" in install
    assert f"dune {version} only" in (ROOT / "README.md").read_text()


def test_install_with_destdir_uses_the_reused_build(tmp_path, prefix):
    """`make install PREFIX=P DESTDIR=D` stages an install configured for P
    (from the build tree make test already has for P: no rebuild)."""
    stage = tmp_path / "stage"
    r = subprocess.run(["make", "--no-print-directory", "install", f"PREFIX={prefix}",
                        f"DESTDIR={stage}"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reusing the build" in r.stdout + r.stderr
    staged = stage / str(prefix).lstrip("/")
    assert (staged / "bin/ocamlopt").exists()
    conf = (staged / "lib/findlib.conf").read_text()
    assert f'path="{prefix}/lib/ocaml:{prefix}/lib"' in conf and str(stage) not in conf
    assert str(stage) not in (staged / "bin/ocamlfind").read_text()


def test_install_refuses_a_foreign_ocaml(tmp_path):
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    (other / "bin/ocamlc").write_text("#!/bin/sh\n")
    r = subprocess.run(["runtime-patch/build-runtime.sh"], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, MEMPROF_CI_PREFIX=str(other)), timeout=60)
    assert r.returncode == 2 and "did not install" in r.stderr, r.stderr
    r = subprocess.run(["make", "--no-print-directory", "install"], cwd=ROOT, capture_output=True,
                       text=True, env={k: v for k, v in os.environ.items() if k != "PREFIX"})
    assert r.returncode != 0 and "make install PREFIX=" in r.stderr


# ---- opam: the ocaml-system route --------------------------------------

def _opam_file(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(text).replace("@V@", OCAML).replace("@NEXT@", OCAML_NEXT)
    path.write_text('opam-version: "2.0"\n' + text)


def _stub_repository(repo):
    """A local opam repository standing in for opam-repository (no network
    here): ocaml-system as there (available when `ocamlc -vnum` on PATH is
    the release the prefix was built from), ocaml, and the base-* packages as
    empty stubs."""
    _opam_file(repo / "repo", "")
    for base in ("base-unix", "base-bigarray", "base-threads", "base-domains", "base-nnp",
                 "base-effects"):
        _opam_file(repo / f"packages/{base}/{base}.base/opam", 'synopsis: "stub"\n')
    _opam_file(repo / f"packages/ocaml/ocaml.{OCAML}/opam", """\
        synopsis: "stub of opam-repository's ocaml.@V@"
        depends: [
          "ocaml-system" {>= "@V@" & < "@NEXT@~"} |
          "ocaml-variants" {>= "@V@~" & < "@NEXT@~"}
        ]
        flags: conf
        """)
    _opam_file(repo / f"packages/ocaml-system/ocaml-system.{OCAML}/opam", """\
        synopsis: "The OCaml compiler (system version, from outside of opam)"
        available: sys-ocaml-version = "@V@"
        depends: [ "ocaml" {post} "base-unix" {post} "base-threads" {post}
                   "base-bigarray" {post} "base-domains" {post} "base-nnp" {post}
                   "base-effects" {post} ]
        conflict-class: "ocaml-core-compiler"
        flags: compiler
        build: ["sh" "-c" "test \\"$(ocamlc -vnum)\\" = @V@"]
        """)


def test_opam_ocaml_system_route(tmp_path, prefix, env):
    """With PREFIX/bin first on PATH, opam takes the patched compiler as its
    ocaml-system compiler; a library installed with opam (built by dune) is
    then found by dune, next to unix and threads, and the program runs on the
    patched runtime."""
    repo, root = tmp_path / "repo", tmp_path / "opamroot"
    _stub_repository(repo)
    lib_src = tmp_path / "wordlib"
    files = {
        "dune-project": "(lang dune 2.9)\n",
        "wordlib.opam": 'opam-version: "2.0"\nversion: "1.0"\nsynopsis: "test library"\n'
                        'depends: ["ocaml"]\nbuild: ["dune" "build" "-p" name "@install"]\n',
        "src/dune": "(library (public_name wordlib) (name wordlib) (libraries unix))\n",
        "src/wordlib.ml": "let words s = List.length (String.split_on_char ' ' s)\n"
                          "let stamp () = Unix.gettimeofday () > 0.\n",
    }
    for name, text in files.items():
        (lib_src / name).parent.mkdir(parents=True, exist_ok=True)
        (lib_src / name).write_text(text)
    oenv = dict(env, OPAMROOT=str(root), OPAMYES="1", OPAMCOLOR="never", OPAMNODEPEXTS="1")

    def opam(*args, **kw):
        return run(["opam", *args], env=oenv, cwd=tmp_path, **kw)

    opam("init", "--bare", "-n", "--disable-sandboxing", "local", str(repo))
    opam("switch", "create", "sys", f"ocaml-system.{OCAML}")
    assert opam("exec", "--switch", "sys", "--", "ocamlc", "-where").stdout.strip() == \
        str(prefix / "lib/ocaml")
    opam("pin", "add", "--switch", "sys", "--kind=path", "wordlib", str(lib_src))
    switch_lib = root / "sys" / "lib"
    assert (switch_lib / "wordlib" / "META").exists()
    # ocamlfind (the wrapper) finds it in the switch, and unix in PREFIX.
    r = opam("exec", "--switch", "sys", "--", "ocamlfind", "query", "wordlib", "unix")
    assert r.stdout.split() == [str(switch_lib / "wordlib"), str(prefix / "lib/ocaml/unix")]
    # (opam itself may warn that it runs as root; nothing else may be said)
    assert [ln for ln in r.stderr.splitlines() if "Running as root" not in ln] == [], r.stderr

    app = tmp_path / "app"
    (app / "bin").mkdir(parents=True)
    (app / "dune-project").write_text("(lang dune 2.9)\n")
    (app / "bin/dune").write_text("(executable (name app) (libraries wordlib unix threads))\n")
    (app / "bin/app.ml").write_text(
        "let () = Thread.join (Thread.create (fun () ->\n"
        "  Printf.printf \"%d %b\\n\" (Wordlib.words \"a b c d\") (Wordlib.stamp ())) ())\n")
    r = opam("exec", "--switch", "sys", "--", "dune", "build", "--root", str(app), "./bin/app.exe")
    assert "Error" not in r.stderr, r.stderr
    out = tmp_path / "app.json"
    r = run([str(app / "_build/default/bin/app.exe")],
            env=dict(env, OCAMLMEMPROF=f"rate=1e-2,seed=1,out={out}"))
    assert r.stdout == "4 true\n"
    assert json.loads(out.read_text())["ocaml_version"].startswith(OCAML)
