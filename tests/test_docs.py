"""The documentation: the site builds strictly, the command-line reference is the commands' own,
the README stays short and its links lead somewhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLI_DOCS = [str(Path(sys.executable).with_name("typer")), "flows.cli", "utils", "docs", "--name", "flywheel"]


def test_the_docs_site_builds_strictly(tmp_path):
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("mkdocs is not installed: pip install -e '.[dev]' (the docs extra)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # Material's notice about its successor
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").exists() and (tmp_path / "site" / "cli" / "index.html").exists()


def test_the_command_line_reference_is_generated_from_the_commands(tmp_path):
    proc = subprocess.run([*CLI_DOCS, "--output", str(tmp_path / "cli.md")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"COLUMNS": "100", "PATH": "/usr/bin:/bin", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stderr
    fresh = (tmp_path / "cli.md").read_text(encoding="utf-8")
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == fresh, (
        "docs/cli.md is stale: typer flows.cli utils docs --name flywheel --output docs/cli.md")
    for command in ("run", "export", "decide", "import", "reviewer add", "label-studio sync"):
        assert f"## `flywheel {command}`" in fresh, command


def test_the_readme_is_short_and_its_links_lead_somewhere():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target
    # the two commands, as a user copies them
    assert "pip install -e . && flywheel run" in text and "pip install -e '.[dev]' && pytest" in text
