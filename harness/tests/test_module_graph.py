"""The harness's shape: folders in layers, a cycle-free import graph with
imports at module level, no module reading another's private names, and
rooms of a bounded size (a folder at most MAX_FOLDER_MODULES modules, a
module at most MAX_MODULE_LINES lines, a function at most
MAX_FUNCTION_LINES).

The layers, lowest first (LAYERS): a folder's modules import from their own
folder and from folders below it, never from one above or beside it.  The
top-level errors.py is below every folder; cli.py, cliargs.py, entry.py
and __main__.py are above them all.

Each rule is read from the source with ast, so a breach names the file and
line; and every module is imported alone, at top level, in a fresh
interpreter, which is where a cycle hidden behind a late import breaks.
"""

import ast
import graphlib
import os
import subprocess
import sys

import pytest

from harness_testlib import REPO

PKG = os.path.join(REPO, "harness", "memprof_ci")
MAX_FOLDER_MODULES = 12
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
SELF_NAMES = ("self", "cls")
# Folder -> its layer; a folder imports only from folders of a lower layer.
LAYERS = {"text": 0, "inputs": 1, "sites": 2, "decide": 3, "measure": 4, "store": 5,
          "render": 6, "commits": 6, "session": 7, "commands": 8}
BOTTOM = ("errors",)                 # top-level modules every folder may import
# Top-level modules no folder may import.
TOP = ("cli", "cliargs", "entry", "__main__", "__init__")


def modules() -> dict:
    """Dotted name -> parsed module, for every .py file of the package: "cli",
    "decide.verdict"; a folder's __init__.py is the folder's own name, the
    package's is "__init__"."""
    out = {}
    for d, dirs, files in os.walk(PKG):
        dirs[:] = sorted(x for x in dirs if not x.startswith(("_", ".")))
        rel = os.path.relpath(d, PKG)
        parts = [] if rel == "." else rel.split(os.sep)
        for f in sorted(files):
            if f.endswith(".py"):
                name = ".".join(parts + [f[:-3]]) if f != "__init__.py" else (
                    ".".join(parts) or "__init__")
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    out[name] = ast.parse(fh.read(), filename=os.path.join(d, f))
    return out


def is_package(name: str, mods: dict) -> bool:
    return name == "__init__" or any(m.startswith(name + ".") for m in mods)


def folder(name: str, mods: dict) -> str:
    """The folder a module is in ("" for the package's top level)."""
    parts = name.split(".")
    if name != "__init__" and (len(parts) > 1 or is_package(name, mods)):
        return parts[0]
    return ""


def package_imports(node, name: str, mods: dict) -> list:
    """Dotted names of the package's modules that an import statement of
    module `name` names (a folder's name for its __init__)."""
    if not isinstance(node, ast.ImportFrom) or node.level == 0:
        return []
    here = name.split(".") if is_package(name, mods) and name != "__init__" else \
        name.split(".")[:-1]
    base = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
    base_name = ".".join(base) or "__init__"
    out = []
    for a in node.names:
        sub = ".".join(base + [a.name])
        out.append(sub if sub in mods else base_name)
    return [m for m in dict.fromkeys(out) if m in mods]


def import_graph(mods: dict) -> dict:
    return {name: {m for node in tree.body for m in package_imports(node, name, mods)
                   if m != name}
            for name, tree in mods.items()}


def imports_of(mods: dict):
    """(module, line, imported module) for every import of the package."""
    for name, tree in mods.items():
        for node in tree.body:
            for m in package_imports(node, name, mods):
                yield name, node.lineno, m


def layer_breaches(mods: dict) -> list:
    """Imports against LAYERS: from a folder to one above or beside it, or
    from a folder to a top-level module other than BOTTOM."""
    out = []
    for name, line, m in imports_of(mods):
        src, dst = folder(name, mods), folder(m, mods)
        if src == "" or src == dst:
            continue
        if dst == "":
            bad = m not in BOTTOM
        else:
            bad = LAYERS[dst] >= LAYERS[src]
        if bad:
            out.append(f"{name}:{line} imports {m}")
    return out


def imports_between(mods: dict, src: str, dsts) -> list:
    """Imports from folder src into any folder of dsts."""
    return [f"{name}:{line} imports {m}" for name, line, m in imports_of(mods)
            if folder(name, mods) == src and folder(m, mods) in dsts]


def crowded_folders(mods: dict) -> list:
    """Folders holding more than MAX_FOLDER_MODULES modules (__init__ aside)."""
    count = {}
    for name in mods:
        if name != "__init__" and not is_package(name, mods):
            f = name.rsplit(".", 1)[0] if "." in name else ""
            count[f] = count.get(f, 0) + 1
    return [f"{f or 'memprof_ci'}/ has {n} modules" for f, n in sorted(count.items())
            if n > MAX_FOLDER_MODULES]


def late_imports(mods: dict) -> list:
    """Import statements inside a function or class body: file:line."""
    out = []
    for name, tree in mods.items():
        for top in tree.body:
            if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out += [f"{name}:{n.lineno}" for n in ast.walk(top)
                        if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


def private_reads(mods: dict) -> list:
    """`from .m import _x`, and `obj._x` on anything but self or cls."""
    out = []
    for name, tree in mods.items():
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.level >= 1:
                out += [f"{name}:{n.lineno} imports {a.name}" for a in n.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
            elif (isinstance(n, ast.Attribute) and n.attr.startswith("_")
                  and not n.attr.startswith("__")
                  and not (isinstance(n.value, ast.Name) and n.value.id in SELF_NAMES)):
                out.append(f"{name}:{n.lineno} reads {ast.unparse(n)}")
    return out


def oversized(mods: dict) -> list:
    out = []
    for name, tree in mods.items():
        lines = max((getattr(n, "end_lineno", 0) or 0) for n in ast.walk(tree))
        if lines > MAX_MODULE_LINES:
            out.append(f"{name} has {lines} lines")
        out += [f"{name}:{n.lineno} {n.name} has {n.end_lineno - n.lineno + 1} lines"
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    return out


def test_import_graph_has_no_cycle():
    graph = import_graph(modules())
    assert "decide.verdict" in graph["session.plugin"], "the graph reader finds no imports"
    list(graphlib.TopologicalSorter(graph).static_order())   # CycleError on a cycle
    # The formatters are a leaf that the decision pass words its messages with.
    assert graph["text.fmt"] == set() and "text.fmt" in graph["decide.verdict"]


def test_every_module_of_a_folder_is_in_a_layer():
    folders = {folder(name, modules()) for name in modules()} - {""}
    assert folders == set(LAYERS)


def test_folders_import_only_from_the_layers_below():
    assert layer_breaches(modules()) == []


def test_render_imports_nothing_from_measure():
    assert imports_between(modules(), "render", {"measure"}) == []


def test_decide_imports_nothing_from_render():
    assert imports_between(modules(), "decide", {"render"}) == []


def test_inputs_imports_nothing_from_the_layers_above_it():
    above = {f for f, rank in LAYERS.items() if rank > LAYERS["inputs"]}
    assert above >= {"sites", "decide", "measure", "render", "commands"}
    assert imports_between(modules(), "inputs", above) == []


def test_no_folder_holds_more_than_twelve_modules():
    assert crowded_folders(modules()) == []


def test_each_subcommand_has_its_module_and_its_entry_in_the_table():
    from memprof_ci import cli
    from memprof_ci.cliargs import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    assert set(cli.COMMANDS) == set(sub.choices)
    for name, run in cli.COMMANDS.items():
        assert run.__module__ == "memprof_ci.commands." + name.replace("-", "_"), name


def test_imports_are_at_module_level():
    assert late_imports(modules()) == []


def test_no_module_reads_another_modules_private_names():
    assert private_reads(modules()) == []


def test_modules_and_functions_are_of_bounded_size():
    assert oversized(modules()) == []


@pytest.mark.parametrize("name", sorted(modules()))
def test_each_module_imports_alone_in_a_fresh_interpreter(name):
    if name == "__main__":
        pytest.skip("runs the CLI when imported")
    r = subprocess.run([sys.executable, "-c", f"import memprof_ci.{name}" if name != "__init__"
                        else "import memprof_ci"],
                       cwd=os.path.join(REPO, "harness"), capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "harness")))
    assert r.returncode == 0, r.stderr


# The checks above must be able to fail: each is fed a small module tree
# with the defect it looks for.

def _tree(sources: dict) -> dict:
    return {k: ast.parse(v) for k, v in sources.items()}


def test_the_checks_see_each_defect():
    cyclic = _tree({"a": "from .b import x\n", "b": "from . import a\n"})
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(import_graph(cyclic)).static_order())
    assert late_imports(_tree({"a": "def f():\n    from .b import x\n"})) == ["a:2"]
    assert private_reads(_tree({"a": "from .b import _h\n",
                                "c": "def f(ctx):\n    return ctx._bases\n",
                                "d": "class C:\n    def f(self):\n        return self._x\n"})) == [
        "a:1 imports _h", "c:2 reads ctx._bases"]
    long_fn = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert oversized(_tree({"a": long_fn})) == [f"a:1 f has {MAX_FUNCTION_LINES + 1} lines"]


def test_the_layer_checks_see_each_breach():
    tree = _tree({"errors": "", "cli": "", "measure": "", "measure.runner": "",
                  "render": "", "render.report": "from ..measure.runner import run\n",
                  "decide": "", "decide.verdict": "from ..render import report\n",
                  "inputs": "",
                  "inputs.profile": "from ..errors import E\nfrom ..cli import main\n",
                  "inputs.manifest": "from ..decide.verdict import decide\n",
                  "text": "", "text.fmt": "from ..inputs import profile\n"})
    assert imports_between(tree, "render", {"measure"}) == [
        "render.report:1 imports measure.runner"]
    assert imports_between(tree, "decide", {"render"}) == ["decide.verdict:1 imports render.report"]
    assert imports_between(tree, "inputs", {"decide"}) == [
        "inputs.manifest:1 imports decide.verdict"]
    assert sorted(layer_breaches(tree)) == [
        "decide.verdict:1 imports render.report",
        "inputs.manifest:1 imports decide.verdict", "inputs.profile:2 imports cli",
        "text.fmt:1 imports inputs.profile"]
    crowded = {"text": ""} | {f"text.m{i}": "" for i in range(MAX_FOLDER_MODULES + 1)}
    assert crowded_folders(_tree(crowded)) == [f"text/ has {MAX_FOLDER_MODULES + 1} modules"]
    assert crowded_folders(_tree({"text": ""} | {f"text.m{i}": ""
                                                 for i in range(MAX_FOLDER_MODULES)})) == []
