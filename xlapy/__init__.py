"""xlapy: an XLA-compatible machine-learning compiler written in Python.

HLO text is the interchange format: ``xlapy.hlo.parse_module`` reads what the
real XLA dumps, ``xlapy.run_hlo`` runs it.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import errors  # noqa: E402
from .client import optimize, run_hlo  # noqa: E402

__all__ = ["__version__", "errors", "optimize", "run_hlo"]
