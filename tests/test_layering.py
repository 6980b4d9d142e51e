"""Each layer of xlapy imports only layers below it (docs/architecture.md)."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "xlapy"
LAYERS = {"errors": 0, "config": 0, "hlo": 1, "passes": 2, "backends": 3, "client": 4,
          "frontend": 5, "numpy": 5, "lax": 5, "nn": 5, "random": 5, "keras": 6, "aot": 6, "tf": 7,
          "tools": 8}


def _layer_of(module_parts: list[str]) -> int | None:
    return LAYERS.get(module_parts[0]) if module_parts else None


def _imports(path: Path, pkg: Path = PKG) -> list[tuple[int, list[str]]]:
    """(line, xlapy-relative module parts) of every xlapy import in a file, lazy ones included."""
    rel = path.relative_to(pkg).with_suffix("").parts
    package = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = base + (node.module.split(".") if node.module else [])
                if not node.module:       # from . import a, b
                    for alias in node.names:
                        out.append((node.lineno, base + [alias.name]))
                    continue
                out.append((node.lineno, mod))
            elif node.module and node.module.split(".")[0] == "xlapy":
                out.append((node.lineno, node.module.split(".")[1:]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "xlapy":
                    out.append((node.lineno, alias.name.split(".")[1:]))
    return out


def test_layers_import_only_lower_layers():
    problems = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).parts
        own = _layer_of([rel[0].removesuffix(".py")])
        if own is None:        # package root, __main__
            continue
        for line, parts in _imports(path):
            target = _layer_of(parts)
            if target is not None and target > own:
                problems.append(f"{path.relative_to(PKG.parent)}:{line} imports xlapy."
                                f"{'.'.join(parts)} (layer {target} > {own})")
    assert not problems, "\n".join(problems)


def test_checker_sees_a_violation(tmp_path):
    """The import scan resolves relative imports that climb layers."""
    src = tmp_path / "xlapy" / "hlo" / "probe.py"
    src.parent.mkdir(parents=True)
    src.write_text("from ..client import run_hlo\ndef f():\n    from xlapy.frontend import jit\n")
    parts = [p for _, p in _imports(src, tmp_path / "xlapy")]
    assert ["client"] in parts and ["frontend"] in parts
