"""Command-line entry point: ``python -m xlapy <tool> ...`` (also the ``xlapy`` script)."""
from __future__ import annotations

import logging
import sys
from typing import Sequence

TOOLS = {
    "run_hlo_module": "xlapy.tools.run_hlo_module",
    "fuzz": "xlapy.tools.fuzz",
    "aot": "xlapy.aot.cli",
    "convert": "xlapy.tools.convert",
    "coverage": "xlapy.tools.coverage",
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in TOOLS:
        print("usage: python -m xlapy {" + ",".join(TOOLS) + "} [options]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    import importlib
    return importlib.import_module(TOOLS[argv[0]]).main(argv[1:])
