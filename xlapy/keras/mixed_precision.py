"""``keras.mixed_precision``: dtype policies, as in Keras 3.

A policy names the dtype a layer's variables are stored in and the dtype it computes in::

    from xlapy import keras
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    layer = keras.layers.Dense(10)                 # variables float32, compute bfloat16
    head = keras.layers.Dense(10, dtype="float32")  # a per-layer policy

- ``"float32"``, ``"float64"``, ``"bfloat16"``, ``"float16"``: both dtypes the same;
- ``"mixed_bfloat16"``, ``"mixed_float16"``: variables ``float32``, compute in the
  narrow type.

Under a mixed policy a layer casts its floating inputs to the compute dtype and reads its
variables as the compute dtype inside ``call`` (``xlapy.Variable`` reads in an
``autocast_scope``; the gradients come back in float32, so the optimizer updates float32
variables); normalization layers compute their statistics in float32 and return the
compute dtype; losses cast predictions to float32 (the loss is computed in float32).
A ``float16`` model's gradients may underflow: as in Keras, ``Model.compile`` wraps the
optimizer of a ``mixed_float16`` model in a ``LossScaleOptimizer`` (dynamic loss scaling,
:mod:`xlapy.keras.optimizers.loss_scale`; also importable from here). ``bfloat16`` has
float32's range and needs no loss scaling.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from . import backend

_POLICIES = {"float16": ("float16", "float16"), "bfloat16": ("bfloat16", "bfloat16"),
             "float32": ("float32", "float32"), "float64": ("float64", "float64"),
             "mixed_float16": ("float16", "float32"),
             "mixed_bfloat16": ("bfloat16", "float32")}


class DTypePolicy:
    """A named pair (compute dtype, variable dtype); see the module docstring."""

    def __init__(self, name: str | None = None) -> None:
        name = backend.floatx() if name is None else str(name)
        if name not in _POLICIES:
            raise InvalidArgumentError(f"keras.mixed_precision: unknown dtype policy "
                                       f"{name!r}; expected one of {sorted(_POLICIES)}")
        self._name = name
        self._compute, self._variable = _POLICIES[name]

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype layers compute in (a NumPy dtype name, e.g. ``"bfloat16"``)."""
        return self._compute

    @property
    def variable_dtype(self) -> str:
        """The dtype layers store their weights in."""
        return self._variable

    @property
    def is_mixed(self) -> bool:
        return self._compute != self._variable

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict) -> "DTypePolicy":
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DTypePolicy) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self._name}">'


Policy = DTypePolicy
_GLOBAL: list[DTypePolicy | None] = [None]


def get_policy(dtype: Any) -> DTypePolicy:
    """The policy a layer's ``dtype=`` argument names: a policy, a policy name, a NumPy
    dtype, or None (the global policy)."""
    if dtype is None:
        return global_policy()
    if isinstance(dtype, DTypePolicy):
        return dtype
    if isinstance(dtype, dict):                        # a serialized policy
        return DTypePolicy.from_config(dtype.get("config", dtype))
    if isinstance(dtype, str) and dtype in _POLICIES:
        return DTypePolicy(dtype)
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise InvalidArgumentError(f"keras.mixed_precision: {dtype!r} is neither a dtype "
                                   "nor a dtype policy") from None
    return DTypePolicy(name)


def set_global_policy(policy: Any) -> None:
    """The policy layers created from now on use when given no ``dtype`` (None: back to
    ``backend.floatx()``)."""
    _GLOBAL[0] = None if policy is None else get_policy(policy)


def global_policy() -> DTypePolicy:
    """The current global policy (``backend.floatx()`` unless set)."""
    return _GLOBAL[0] if _GLOBAL[0] is not None else DTypePolicy(backend.floatx())


dtype_policy = global_policy
set_dtype_policy = set_global_policy



def __getattr__(name: str) -> Any:
    if name == "LossScaleOptimizer":      # optimizers import layers' modules: imported late
        from .optimizers.loss_scale import LossScaleOptimizer
        return LossScaleOptimizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DTypePolicy", "Policy", "set_global_policy", "global_policy", "get_policy",
           "dtype_policy", "set_dtype_policy", "LossScaleOptimizer"]
