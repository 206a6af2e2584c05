"""DESIGN.md's table of who may import whom, kept by a test rather than by hope."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"warehouse", "generators", "curation", "review_app", "flows"}

# package -> module prefixes of the project it may import (besides itself)
ALLOWED: dict[str, tuple[str, ...]] = {
    "warehouse": (),
    "generators": ("warehouse.contract", "warehouse.ids", "warehouse.errors"),
    "curation": ("warehouse", "generators.phone"),
    "review_app": ("warehouse", "curation"),
    "flows": ("warehouse", "generators", "curation", "review_app"),
}


PROJECT_DYNAMIC = "flows"  # a computed import name is reported as a violation (nothing may import flows)


def _is_import_module(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    fn = node.func
    if isinstance(fn, ast.Attribute):
        return fn.attr == "import_module"
    return isinstance(fn, ast.Name) and fn.id in ("import_module", "__import__")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif _is_import_module(node):
            # importlib.import_module("pkg.mod") / __import__("pkg.mod"): an import all the same
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(arg.value)
            else:  # a computed name cannot be checked against the layers
                names.add(f"{PROJECT_DYNAMIC}.<computed name on line {node.lineno}>")
    return {n for n in names if n.split(".")[0] in PROJECT}


def _violations(package: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top == package:
                continue
            if not any(name == p or name.startswith(p + ".") for p in ALLOWED[package]):
                # "from warehouse import contract" shows up as warehouse and warehouse.contract
                if any(p.startswith(name + ".") for p in ALLOWED[package]):
                    continue
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_its_layer_allows(package):
    assert _violations(package) == []


def test_import_module_of_a_project_module_counts_as_an_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "import importlib\nfrom importlib import import_module\n"
        "importlib.import_module('generators.phone.screens')\nimport_module('flows.cli')\n"
        "importlib.import_module('json')\nimportlib.import_module(name)\n"
    )
    found = _imports(path)
    assert {"generators.phone.screens", "flows.cli"} <= found and "json" not in found
    assert "flows.<computed name on line 6>" in found  # a computed name is flagged, not trusted


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the project's packages under ``root`` by dotted name (a package by its own name)."""
    out = {}
    for package in sorted(PROJECT):
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _targets(node: ast.AST, package: str, modules: dict[str, Path]) -> list[str]:
    """The dotted names one node imports: ``from pkg import sub`` names the submodule, ``from mod import f`` the
    module; a relative import is made absolute from ``package``."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parent + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    if _is_import_module(node) and node.args and isinstance(node.args[0], ast.Constant):
        return [str(node.args[0].value)]
    return []


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Each project module -> the project modules it imports.

    Every import counts, at module level, inside a function, or under ``if TYPE_CHECKING``: a function-level
    import runs the other module's top level all the same, only later, and deferring it to get round a circle
    leaves the circle. A module's parent packages are not edges (``import a.b.c`` runs ``a/b/__init__.py``,
    and a package's ``__init__`` importing its own submodules would otherwise be a circle of itself), which
    is also what import-linter counts."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            for target in _targets(node, package, modules):
                while target and target not in modules:  # ``from mod import f``: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle of imports per back edge a depth-first walk meets (each as the modules along it), none when
    the graph has no circle."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    path: list[str] = []

    def walk(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                found.append(path[path.index(target):] + [target])
            elif target not in state:
                walk(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)
    return found


def test_no_module_imports_itself_round_a_circle():
    # a circle makes import order matter (a module half-loaded when the other needs it), ties modules
    # that should be apart, and keeps an isort pass from being safe
    cycles = _cycles(_import_graph(ROOT))
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_circle_finder_sees_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "warehouse" / "sub").mkdir(parents=True)
    (tmp_path / "warehouse" / "__init__.py").write_text("from warehouse import a\n")
    (tmp_path / "warehouse" / "a.py").write_text("from warehouse.sub import b\n")
    (tmp_path / "warehouse" / "sub" / "__init__.py").write_text("")
    (tmp_path / "warehouse" / "sub" / "b.py").write_text("def f():\n    from ..a import x\n")
    (tmp_path / "warehouse" / "c.py").write_text("import warehouse.a\n")
    for package in PROJECT - {"warehouse"}:
        (tmp_path / package).mkdir()
    graph = _import_graph(tmp_path)
    assert graph["warehouse"] == {"warehouse.a"} and graph["warehouse.c"] == {"warehouse.a"}
    assert _cycles(graph) == [["warehouse.a", "warehouse.sub.b", "warehouse.a"]]


def test_the_core_imports_without_the_ui_or_orchestrator():
    import subprocess
    import sys

    code = (
        "import sys, warehouse.store, generators.collect, curation.checks;"
        "bad = [m for m in ('streamlit', 'prefect', 'review_app', 'flows') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


MODEL_CLIENTS = {"openai", "anthropic", "litellm"}  # libraries that reach a model endpoint


def _model_reach(path: Path) -> list[str]:
    """Where ``path`` reaches a model other than through the engine: a model client library, the raw
    chat API (``.chat.completions``, or a client's own ``post`` to its path), or an endpoint built
    outside its factory (each by function)."""
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            where = node.name
        elif isinstance(node, ast.Import):
            found.update(f"imports {a.name}" for a in node.names if a.name.split(".")[0] in MODEL_CLIENTS)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in MODEL_CLIENTS:
            found.add(f"imports {node.module}")
        elif isinstance(node, ast.Attribute) and node.attr == "completions":
            found.add(f"calls .completions in {where}")
        elif isinstance(node, ast.Constant) and node.value == "/chat/completions":
            found.add(f"posts to /chat/completions in {where}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "OpenAIEndpoint":
            found.add(f"builds OpenAIEndpoint in {where}")
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "<module>")
    return sorted(found)


def test_every_model_call_goes_through_the_engine():
    # the planner, the task writer, the judges and the eval all get their engine from engine_for
    # (flows/model_setup.py): limits, retries, the breaker and token counts in one place. Only the
    # endpoint itself holds a client (and builds one more for the probe, which lists models only).
    reach = {str(p.relative_to(ROOT)): r for pkg in sorted(PROJECT) for p in sorted((ROOT / pkg).rglob("*.py"))
             if (r := _model_reach(p))}
    assert reach.pop("generators/models/openai_endpoint.py") == [
        "builds OpenAIEndpoint in probe_endpoint", "imports openai", "posts to /chat/completions in complete"]
    assert reach == {"flows/model_setup.py": ["builds OpenAIEndpoint in engine_for"]}

    import asyncio

    from flows.model_setup import engine_for
    from generators.models import Engine
    from warehouse.settings import OpenAISettings

    async def build():
        return engine_for(OpenAISettings(), base_url="http://127.0.0.1:9/v1", api_key="none", model="m")

    assert isinstance(asyncio.run(build()), Engine)


def _function_imports_without_reason(path: Path) -> list[str]:
    """Imports inside a function or method whose line (or the line above) gives no ``# deferred:`` reason."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    bad = []
    for fn in ast.walk(ast.parse(text, filename=str(path))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom):
                said = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
                if "# deferred:" not in said:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(bad))


def test_an_import_inside_a_function_says_why_it_is_deferred():
    # module top is the rule; a function may defer a heavy or optional import, with its reason
    bad = [b for package in sorted(PROJECT) for path in sorted((ROOT / package).rglob("*.py"))
           for b in _function_imports_without_reason(path)]
    assert bad == []
