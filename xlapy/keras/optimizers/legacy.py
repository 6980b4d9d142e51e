"""``keras.optimizers.legacy``: TensorFlow 2.11+'s names for the pre-2.11 optimizers.

They are the same classes as in :mod:`xlapy.keras.optimizers` (which already accept the
legacy ``lr=`` and ``decay=`` arguments), so code written for either works unchanged.
"""
from __future__ import annotations

from .algorithms import SGD, Adagrad, Adam, RMSprop
from .base import Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad"]
