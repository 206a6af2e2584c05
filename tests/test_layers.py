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
