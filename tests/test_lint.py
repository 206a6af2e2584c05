"""`ruff check` (pyflakes and isort, configured in pyproject.toml) is clean: CI runs the test suite, so this is
the lint step of CI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str | None:
    """The ruff executable: the one the ``ruff`` package installed beside this Python, else one on PATH."""
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        return shutil.which("ruff")
    try:
        return str(find_ruff_bin())
    except FileNotFoundError:
        return shutil.which("ruff")


def test_ruff_check_is_clean():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]' brings it)")
    proc = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        pytest.fail(f"ruff check found problems (`ruff check --fix` mends most):\n{proc.stdout}{proc.stderr}",
                    pytrace=False)
