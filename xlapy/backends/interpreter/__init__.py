"""The reference interpreter: exact XLA semantics in NumPy, the oracle for every other backend."""
from __future__ import annotations

from .evaluator import HANDLERS, TOKEN, Evaluator, evaluate_module, handler

# Importing the family modules registers their handlers.
from . import (collective, control_flow, custom_calls, data_movement, elementwise,  # noqa: F401,E402
               host_callbacks, linalg, reduction, rng, xla_linalg_calls)

__all__ = ["Evaluator", "evaluate_module", "handler", "HANDLERS", "TOKEN"]
