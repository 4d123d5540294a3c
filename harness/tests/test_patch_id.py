"""The runtime's patch id is read where the runtime is (runner.patch_id):
beside the `ocamlopt` on PATH (a `make runtime` build or a `make install`
prefix, also through a link), with MEMPROF_CI_PATCH_ID as the override."""

import os

from memprof_ci.measure import runner

ID = "0123456789abcdef"


def compiler(prefix, patch_id_at=None, text=ID):
    """PREFIX/bin/ocamlopt (an empty executable) and, at PREFIX/patch_id_at,
    the patch id."""
    os.makedirs(prefix / "bin", exist_ok=True)
    exe = prefix / "bin" / "ocamlopt"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    if patch_id_at:
        (prefix / patch_id_at).parent.mkdir(parents=True, exist_ok=True)
        (prefix / patch_id_at).write_text(text + "\n")
    return str(prefix / "bin")


def test_read_beside_the_ocamlopt_on_path(tmp_path):
    build = compiler(tmp_path / "runtime", "patch-id")
    assert runner.patch_id({"PATH": f"{tmp_path / 'nothing'}:{build}:/usr/bin"}) == ID
    installed = compiler(tmp_path / "prefix", "share/memprof-ci/patch-id", "fedcba9876543210")
    assert runner.patch_id({"PATH": installed}) == "fedcba9876543210"


def test_read_through_a_link_to_the_compiler(tmp_path):
    compiler(tmp_path / "runtime", "patch-id")
    os.makedirs(tmp_path / "tools" / "bin")
    os.symlink(tmp_path / "runtime" / "bin" / "ocamlopt", tmp_path / "tools" / "bin" / "ocamlopt")
    assert runner.patch_id({"PATH": str(tmp_path / "tools" / "bin")}) == ID


def test_the_first_ocamlopt_on_path_decides_and_a_bad_file_is_no_id(tmp_path):
    first = compiler(tmp_path / "a", "patch-id", "aaaaaaaaaaaaaaaa")
    second = compiler(tmp_path / "b", "patch-id", "bbbbbbbbbbbbbbbb")
    assert runner.patch_id({"PATH": f"{first}:{second}"}) == "aaaaaaaaaaaaaaaa"
    bad = compiler(tmp_path / "c", "patch-id", "not an id")
    files = runner.patch_id_files({"PATH": bad})
    assert files[0] == str(tmp_path / "c" / "patch-id")
    assert runner.patch_id({"PATH": bad}) != "not an id"


def test_the_variable_overrides_and_set_empty_means_none(tmp_path):
    build = compiler(tmp_path / "runtime", "patch-id")
    assert runner.patch_id({"PATH": build, "MEMPROF_CI_PATCH_ID": "feedfeedfeedfeed"}) == \
        "feedfeedfeedfeed"
    assert runner.patch_id({"PATH": build, "MEMPROF_CI_PATCH_ID": ""}) is None


def test_without_a_patched_compiler_on_path_the_harness_own_runtimes_are_looked_at(tmp_path):
    stock = compiler(tmp_path / "stock")
    files = runner.patch_id_files({"PATH": stock})
    assert files[:2] == [str(tmp_path / "stock" / "patch-id"),
                         str(tmp_path / "stock" / "share" / "memprof-ci" / "patch-id")]
    assert files[-2:] == [runner.installed_patch_id_file(), runner.source_patch_id_file()]
    assert runner.source_patch_id_file().endswith(os.path.join("_build", "runtime", "patch-id"))
