"""``python -m xlapy coverage``: the JAX API report and its one exclusion list."""
from __future__ import annotations

import json

import pytest

from xlapy.tools import coverage
from xlapy.tools.coverage_exclusions import EXCLUSIONS, exclusion_reason
from xlapy.tools.cli import main


def test_stored_names_cover_every_namespace():
    stored = json.loads(coverage.NAMES_FILE.read_text())
    assert {ns for ns, _ in coverage.NAMESPACES} <= set(stored["namespaces"])
    assert "cumsum" in stored["namespaces"]["jax.numpy"]


def test_stored_names_are_jax_names():
    jax = pytest.importorskip("jax")
    stored = json.loads(coverage.NAMES_FILE.read_text())
    if stored["jax_version"] != jax.__version__:
        pytest.skip(f"stored names are from jax {stored['jax_version']}")
    live, _ = coverage.jax_names("jax")
    assert live == stored["namespaces"], "regenerate with python -m xlapy coverage --write-names"


def test_classification():
    names = {"jax.numpy": ["sum", "no_such_function_xyz"], "jax.lax": ["add_p", "add"]}
    reports = {r.jax_name: r for r in coverage.coverage(names)}
    assert reports["jax.numpy"].implemented == ["sum"]
    assert reports["jax.numpy"].missing == ["no_such_function_xyz"]
    assert list(reports["jax.lax"].excluded) == ["add_p"]
    assert reports["jax.lax"].ratio == 0.5 and reports["jax.lax"].ratio_in_scope == 1.0


def test_exclusions_are_not_stale():
    """Every entry names a JAX name xlapy lacks (patterns: match at least one)."""
    stored = json.loads(coverage.NAMES_FILE.read_text())["namespaces"]
    reports = {r.jax_name: r for r in coverage.coverage(stored)}
    for ns, table in EXCLUSIONS.items():
        assert ns in reports, ns
        for key in table:
            if any(c in key for c in "*?["):
                assert any(exclusion_reason(ns, n) for n in reports[ns].excluded), key
            else:
                assert key in stored[ns], f"{ns}.{key} is not a JAX name"
                assert key in reports[ns].excluded, f"{ns}.{key} is implemented: drop it"


def test_cli_report(capsys):
    assert main(["coverage", "--names", "stored"]) == 0
    out = capsys.readouterr().out
    assert "jax.numpy" in out and "impl/all" in out
    assert main(["coverage", "--names", "stored", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert {n["jax"] for n in rep["namespaces"]} == {ns for ns, _ in coverage.NAMESPACES}
    assert main(["coverage", "--names", "stored", "--fail-under", "1.01"]) == 1
