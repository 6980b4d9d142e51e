"""Handing donated buffers to compiled code (``jit(donate_argnums=...)`` and Variables).

A jitted function's module aliases an output with a parameter (``input_output_alias``)
for every donated argument that has an output of its type, and for every Variable it
assigns. The CPU executable can then write that output into the argument's array itself
instead of a copy -- but only if nobody else can see the array. This module decides, per
call, which arrays jit may hand over (``execute(args, owned)``):

- a **donated xlapy Array** (a concrete ``Array`` passed for a donated argument): after
  the call it is *deleted*, as in JAX -- its value is replaced by a
  :class:`DeletedBuffer` and any use raises ``InvalidArgumentError("Array has been
  deleted ...")``. Its NumPy array is handed over when no other object references it
  (no other Array, view or NumPy name shares it: checked with CPython reference counts,
  views count through ``base``). A NumPy array passed by the user is never handed over
  nor changed: the executable copies it (JAX copies host arrays to the device too);
- a **Variable assigned** by the function is never handed over: the executable copies
  its value (onto recycled memory, ``output_pool``) and writes the copy, and the
  Variable takes the result only when the call completed (``variables.commit_values``).
  Writing the Variable's own array in place would save that copy, but a call
  interrupted (KeyboardInterrupt) or failing half-way would leave the Variable neither
  old nor new; keeping the old value until commit costs the same copy.

The executable still copies when it cannot use an array in place (wrong layout,
misaligned, read-only, overlapping another argument; see ``executable.py``).

A donated Array that was handed over is deleted even when the call fails or is
interrupted: the program may have written part of it.

A **device Array** (``DeviceArray``, a GPU backend's result) donated to a GPU computation
hands over its device buffer when no other Array shares it (:func:`sole_device_owner`):
the aliased output is written into it and the result Array owns it; otherwise the
executable copies it on the device first. Either way the donated Array is deleted.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from .core import Array
from .device_array import DeviceArray


class DeletedBuffer:
    """The value of an Array whose buffer was donated: every use raises a clear error."""

    __slots__ = ("shape", "dtype", "where")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, where: str) -> None:
        self.shape, self.dtype, self.where = shape, dtype, where

    def _fail(self, *_: Any, **__: Any) -> Any:
        raise InvalidArgumentError(
            f"Array has been deleted: this {self.dtype}{list(self.shape)} array was donated "
            f"to {self.where} (donate_argnums), which may reuse its buffer for an output; "
            "use that function's result instead, or do not donate the argument")

    __array__ = __float__ = __int__ = __bool__ = __index__ = __complex__ = _fail
    __len__ = __iter__ = __getitem__ = _fail

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._fail()

    def __repr__(self) -> str:
        return f"<deleted {self.dtype}{list(self.shape)}, donated to {self.where}>"


_HOLDER = Array(np.empty(1))
_SOLE_VALUE = sys.getrefcount(_HOLDER._value)       # references of an unshared value
_VIEW = np.empty(2)[:1]
_SOLE_BASE = sys.getrefcount(_VIEW.base)             # references of a base only a view has
del _HOLDER, _VIEW


class _Holder:
    __slots__ = ("v",)


_H = _Holder()
_H.v = object()
_SOLE_SLOT = sys.getrefcount(_H.v)      # references of an object one slot holds
del _H


def sole_device_owner(holder: DeviceArray) -> bool:
    """Whether ``holder``'s device value and its buffer are referenced by ``holder`` alone
    (no other Array shares them): then the buffer may become an output's."""
    return sys.getrefcount(holder._device) <= _SOLE_SLOT and \
        sys.getrefcount(holder._device.buffer) <= _SOLE_SLOT


def sole_owner(holder: Array) -> bool:
    """Whether ``holder``'s NumPy array is referenced by ``holder`` alone (no other Array,
    view, NumPy name or exported buffer): then writing it changes no other value."""
    if sys.getrefcount(holder._value) > _SOLE_VALUE:
        return False
    value = holder._value
    if type(value) is not np.ndarray:
        return False
    base = value.base
    if base is None:
        return True
    if type(base) is not np.ndarray and not getattr(base, "memory_lease", False):
        return False        # a base that is neither an array nor a memory lease (see below)
    # an ndarray owning its data, or a backend's memory lease (the CPU backend's recycled
    # output memory): unshared when only this array refers to it
    # (+1: the local name ``base``)
    return getattr(base, "base", None) is None and sys.getrefcount(base) <= _SOLE_BASE + 1


class DonationPlan:
    """Per compiled entry: donated argument parameters, and those the executable can
    take in place."""

    __slots__ = ("arguments", "in_place", "warned")

    def __init__(self, entry: Any) -> None:
        self.warned = False         # a host argument donated on a device backend
        n = len(entry.param_leaves)
        aliased = {a.param_number for a in entry.module.input_output_alias}
        take = getattr(entry.executable, "donatable_parameters", None)
        self.in_place = set(take()) if callable(take) else set()
        # donated function arguments (a Variable's parameter comes after them)
        self.arguments = tuple(p for p in sorted(aliased) if p < n)


def plan_of(entry: Any) -> DonationPlan:
    """The entry's :class:`DonationPlan` (made on first use, kept on the entry)."""
    plan = entry.__dict__.get("_donation")
    if plan is None:
        plan = entry.__dict__["_donation"] = DonationPlan(entry)
    return plan


def donated_arrays(entry: Any, leaves: Sequence[Any],
                   inputs: Sequence[Array]) -> tuple[list[int], list[Array]]:
    """For a call through the full path: ``(owned, arrays)`` -- the parameters whose
    arrays may be written in place, and the xlapy Arrays donated (deleted after the call).
    Call it before any list holds the arrays' NumPy values."""
    plan = plan_of(entry)
    if not plan.arguments:
        return [], []
    owned, arrays = [], []
    for p in plan.arguments:
        x = leaves[entry.param_leaves[p]]
        if type(x) is Array and inputs[p] is x and x._value is not None:
            arrays.append(x)
            if p in plan.in_place and sole_owner(x):
                owned.append(p)
        elif type(x) is DeviceArray and inputs[p] is x and x._device is not None:
            arrays.append(x)        # on a device backend its buffer becomes the output's
            if entry.resident and p in plan.in_place and sole_device_owner(x):
                owned.append(p)
            continue
        if entry.resident and not plan.warned and not (
                isinstance(x, Array) and isinstance(x._value, DeletedBuffer)):
            plan.warned = True      # as JAX: the call runs on a copy made on the device
            warnings.warn(f"donated argument {p} of {entry.module.name} is not on the "
                          f"device: it is copied to a new device buffer (device_put it, "
                          f"or pass the result of a previous call)", stacklevel=4)
    return owned, arrays


def has_donated_array(entry: Any, leaves: Sequence[Any]) -> bool:
    """Whether a call with these leaves donates an xlapy Array (such calls stay on the
    full path, which deletes it)."""
    plan = plan_of(entry)
    return any(isinstance(leaves[entry.param_leaves[p]], Array) for p in plan.arguments)


def warn_unusable(name: str, donate_names: set[str], paths: Sequence[str],
                  param_leaves: Sequence[int], aliases: Sequence[Any]) -> None:
    """On a GPU backend, as JAX: a donated argument that no output can take (no output of
    its type) is a warning; the call runs and only reads it."""
    aliased = {e.param_number for e in aliases}
    unused = [paths[leaf] for p, leaf in enumerate(param_leaves)
              if paths[leaf].split("[")[0].split(".")[0] in donate_names and p not in aliased]
    if unused:
        warnings.warn(f"Some donated buffers were not usable in jit({name}): no output has "
                      f"the type of {', '.join(unused)}", stacklevel=7)


def delete(arrays: Sequence[Array], where: str) -> None:
    """Mark donated Arrays deleted (their value becomes a :class:`DeletedBuffer`)."""
    for x in arrays:
        x._value = DeletedBuffer(x.shape, x.dtype, where)


__all__ = ["DeletedBuffer", "sole_owner", "sole_device_owner", "warn_unusable",
           "donated_arrays", "has_donated_array", "delete", "plan_of"]
