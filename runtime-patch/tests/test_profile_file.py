"""Where the profile is written (memprof_outfile.c, design 1-3): a name
planted where the temporary file goes is never written through, a
symlink at `out` is replaced rather than followed to a regular file,
and an existing non-regular `out` is still written in place."""

import json
import os
import pathlib
import stat

import pytest

from runtime_testlib import run

SH = pathlib.Path("/bin/sh")


def plant_then_exec(exe, tmp_path, link_target, *, memprof):
    """Run `exe` from a shell that first makes `p.json.tmp.<its pid>` a
    symlink to `link_target`: exec keeps the pid, so the link sits
    exactly where the temporary profile is first tried."""
    script = f'ln -s {link_target} "p.json.tmp.$$" && exec "$0" normal'
    return run(SH, "-c", script, exe, memprof=memprof, cwd=tmp_path, check=False)


def test_symlink_at_the_temporary_name_is_not_followed(build, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    res = plant_then_exec(build("exits"), tmp_path, "victim.txt",
                          memprof="rate=1e-2,out=p.json")
    assert res.returncode == 0, res.stderr
    assert victim.read_text() == "precious\n"
    prof = json.loads((tmp_path / "p.json").read_bytes())
    assert prof["format"] == "memprof-ci/profile" and prof["totals"]["samples"] > 0
    (link,) = tmp_path.glob("p.json.tmp.*")
    assert link.is_symlink() and os.readlink(link) == "victim.txt"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["p.json", "victim.txt", link.name])


def test_dangling_symlink_at_the_temporary_name_creates_nothing(build, tmp_path):
    res = plant_then_exec(build("exits"), tmp_path, "created-by-the-runtime",
                          memprof="rate=1e-2,out=p.json")
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "created-by-the-runtime").exists()
    assert json.loads((tmp_path / "p.json").read_bytes())["format"] == "memprof-ci/profile"


def test_symlink_out_to_a_regular_file_is_replaced(build, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "p.json").symlink_to("victim.txt")
    res = run(build("exits"), "normal", memprof="rate=1e-2,out=p.json", cwd=tmp_path)
    assert res.returncode == 0
    assert victim.read_text() == "precious\n"
    out = tmp_path / "p.json"
    assert not out.is_symlink() and out.is_file()
    assert json.loads(out.read_bytes())["format"] == "memprof-ci/profile"


def test_profile_mode_follows_the_umask(build, tmp_path):
    res = run(SH, "-c", 'umask 027 && exec "$0" normal', build("exits"),
              memprof="rate=1e-2,out=p.json", cwd=tmp_path)
    assert res.returncode == 0
    assert stat.S_IMODE((tmp_path / "p.json").stat().st_mode) == 0o640


def test_dev_stdout_is_written_in_place(build, tmp_path):
    # /dev/stdout is a symlink to the (non-regular) stdout: followed.
    if not os.path.exists("/dev/stdout"):
        pytest.fail("this test needs /dev/stdout")
    res = run(build("exits"), "normal", memprof="rate=1e-2,out=/dev/stdout", cwd=tmp_path)
    assert json.loads(res.stdout)["format"] == "memprof-ci/profile"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_a_program_that_runs_out_of_descriptors_still_gets_its_profile(build, tmp_path, backend):
    """The tracker keeps one descriptor in reserve (memprof_outfile.c,
    design 6): a program that opens files until none is left exits with
    its profile written and nothing on stderr, having had one descriptor
    fewer than without the tracker."""
    import resource
    import subprocess

    from runtime_testlib import read_profile

    exe = build("fd_exhaust", backend=backend)

    def opened(memprof=None):
        env = {k: v for k, v in os.environ.items() if k not in ("OCAMLMEMPROF", "OCAMLRUNPARAM")}
        if memprof:
            env["OCAMLMEMPROF"] = memprof
        res = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=120,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                   (128, 128)))
        assert res.returncode == 0 and res.stderr == "", res.stderr
        return int(res.stdout)

    out = tmp_path / "p.json"
    with_tracker = opened(f"rate=1e-2,seed=1,out={out}")
    assert with_tracker == opened() - 1
    prof = read_profile(out.read_bytes())
    assert prof["totals"]["samples"] > 0
    assert not list(tmp_path.glob("*.tmp.*"))
