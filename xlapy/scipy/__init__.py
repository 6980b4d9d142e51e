"""``xlapy.scipy``: SciPy-style functions with ``jax.scipy``'s API, written with
``xlapy.numpy``/``xlapy.lax`` so they run eagerly, compile under ``jit`` and (where
loop-free) differentiate: :mod:`.special`, :mod:`.linalg`, :mod:`.signal`,
:mod:`.stats`."""
from __future__ import annotations

from . import linalg, signal, special, stats  # noqa: F401

__all__ = ["linalg", "signal", "special", "stats"]
