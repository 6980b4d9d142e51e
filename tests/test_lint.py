"""ruff and mypy find nothing in the core packages (hlo, passes, backends), with the
settings in pyproject.toml (the same as ``make lint``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ["xlapy/hlo", "xlapy/passes", "xlapy/backends"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing_in_the_core_packages():
    result = _run("ruff", "check", "--no-cache", *CORE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing_in_the_core_packages():
    result = _run("mypy")                   # packages and settings: pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def test_the_checks_can_fail(tmp_path):
    """Both tools report a planted finding with these settings."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef f(x: int) -> str:\n    return x\n")
    ruff = _run("ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                str(bad))
    assert ruff.returncode != 0 and "F401" in ruff.stdout
    mypy = _run("mypy", "--config-file", str(ROOT / "pyproject.toml"), str(bad))
    assert mypy.returncode != 0 and "return-value" in mypy.stdout
