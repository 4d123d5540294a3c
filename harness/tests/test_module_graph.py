"""The harness's shape: a cycle-free import graph with imports at module
level, no module reading another's private names, and rooms of a bounded
size (a module at most MAX_MODULE_LINES lines, a function at most
MAX_FUNCTION_LINES).

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
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100
SELF_NAMES = ("self", "cls")


def modules() -> dict:
    """name -> parsed module, for every .py file of the package."""
    out = {}
    for f in sorted(os.listdir(PKG)):
        if f.endswith(".py"):
            with open(os.path.join(PKG, f), encoding="utf-8") as fh:
                out[f[:-3]] = ast.parse(fh.read(), filename=f)
    return out


def package_imports(node) -> list:
    """Names of the package's modules that an import statement names."""
    if not isinstance(node, ast.ImportFrom) or node.level != 1:
        return []
    if node.module:
        return [node.module.split(".")[0]]
    return [a.name for a in node.names]


def import_graph(mods: dict) -> dict:
    return {name: {m for node in tree.body for m in package_imports(node) if m in mods}
            for name, tree in mods.items()}


def late_imports(mods: dict) -> list:
    """Import statements inside a function or class body: file:line."""
    out = []
    for name, tree in mods.items():
        for top in tree.body:
            if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out += [f"{name}.py:{n.lineno}" for n in ast.walk(top)
                        if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


def private_reads(mods: dict) -> list:
    """`from .m import _x`, and `obj._x` on anything but self or cls."""
    out = []
    for name, tree in mods.items():
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.level == 1:
                out += [f"{name}.py:{n.lineno} imports {a.name}" for a in n.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
            elif (isinstance(n, ast.Attribute) and n.attr.startswith("_")
                  and not n.attr.startswith("__")
                  and not (isinstance(n.value, ast.Name) and n.value.id in SELF_NAMES)):
                out.append(f"{name}.py:{n.lineno} reads {ast.unparse(n)}")
    return out


def oversized(mods: dict) -> list:
    out = []
    for name, tree in mods.items():
        lines = max((getattr(n, "end_lineno", 0) or 0) for n in ast.walk(tree))
        if lines > MAX_MODULE_LINES:
            out.append(f"{name}.py has {lines} lines")
        out += [f"{name}.py:{n.lineno} {n.name} has {n.end_lineno - n.lineno + 1} lines"
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    return out


def test_import_graph_has_no_cycle():
    graph = import_graph(modules())
    assert "verdict" in graph["plugin"], "the graph reader finds no imports"
    order = list(graphlib.TopologicalSorter(graph).static_order())   # CycleError on a cycle
    # The decision module is below every renderer, the formatters below it.
    assert order.index("fmt") < order.index("verdict") < order.index("report_html")
    assert graph["fmt"] == set()


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
    r = subprocess.run([sys.executable, "-c", f"import memprof_ci.{name}"],
                       cwd=os.path.join(REPO, "harness"), capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "harness")))
    assert r.returncode == 0, r.stderr


# The checks above must be able to fail: each is fed a small module tree
# with the defect it looks for.

def _tree(**sources) -> dict:
    return {k: ast.parse(v) for k, v in sources.items()}


def test_the_checks_see_each_defect():
    cyclic = _tree(a="from .b import x\n", b="from . import a\n")
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(import_graph(cyclic)).static_order())
    assert late_imports(_tree(a="def f():\n    from .b import x\n")) == ["a.py:2"]
    assert private_reads(_tree(a="from .b import _h\n", c="def f(ctx):\n    return ctx._bases\n",
                               d="class C:\n    def f(self):\n        return self._x\n")) == [
        "a.py:1 imports _h", "c.py:2 reads ctx._bases"]
    long_fn = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert oversized(_tree(a=long_fn)) == [f"a.py:1 f has {MAX_FUNCTION_LINES + 1} lines"]
