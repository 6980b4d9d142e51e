"""The per-call argument work of ``jit`` that does not trace: binding plans and fast keys.

**Binding plans.** A :class:`CallBinding` says how one *call shape* (the number of
positional arguments and the keyword names, in call order) fills the function's
parameters: one :class:`Slot` per argument given, named as jit names it (``x``,
``args[1]``, ``kwargs['k']``), where its value comes from and whether it is static.
It is computed once per call shape with ``inspect.Signature.bind`` on placeholders, so a
call does not bind its arguments again; a call shape the signature rejects raises the
``TypeError`` of ``bind``.

**Fast signatures.** :func:`fast_signature` makes in one pass over a call's arguments a
cheap, hashable key of everything the full cache key depends on -- per leaf its Python
type with shape and dtype (and weak type for xlapy Arrays; a device Array's value is the
Array itself, whose buffer a GPU executable binds), the structure of tuples,
lists, dicts and namedtuples, Variables by identity, static values by value -- and the
NumPy values the executable takes for the array leaves, converted exactly as the full
path converts them (64-bit types to 32-bit, Python scalars to their weak default types).
Two calls through one binding with equal fast signatures have equal full keys, so jit
maps a fast signature straight to its compiled entry (except for argument structures
with must-be-constant leaves, whose key holds values; jit keeps those on the full path).

Arguments the pass does not cover -- registered pytree nodes, dataclasses, NumPy array
subclasses, other objects that ``np.asarray`` converts, traced Arrays, Python ints that
overflow int32, unhashable static values -- make it return None: the call takes the full
path, which handles (or rejects) them with its usual messages.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes
from .core import Array
from .device_array import DeviceArray
from .pytree import _REGISTRY, _sort_key
from .variables import Variable

_STATIC = object()          # marks a static value in a fast signature

# Python scalar type -> the dtype of its (weak) array, as ``to_array`` makes it.
_SCALAR_DTYPES: dict[type, np.dtype] = {
    bool: dtypes.bool_, int: dtypes.DEFAULT_INT, float: dtypes.DEFAULT_FLOAT,
    complex: dtypes.DEFAULT_COMPLEX,
}
_CANONICAL = dtypes._CANONICAL


@dataclass(frozen=True)
class Slot:
    """One argument of a call: its jit name, ``source`` (a positional index or a keyword
    name) and whether it is static."""

    name: str
    source: int | str
    static: bool


class CallBinding:
    """How calls of one shape fill the parameters (see the module docstring).

    ``calls`` maps fast signatures of calls of this shape to their compiled entries; jit
    fills and clears it.
    """

    __slots__ = ("slots", "positional", "calls")

    def __init__(self, slots: list[Slot]) -> None:
        self.slots = slots
        # The positional arguments are the slots, in order, none static: walk ``args``.
        self.positional = all(isinstance(s.source, int) and s.source == i and not s.static
                              for i, s in enumerate(slots))
        self.calls: dict[tuple, Any] = {}

    def values(self, args: tuple, kwargs: dict) -> list[tuple[Slot, Any]]:
        """Each slot with its value in this call."""
        return [(s, args[s.source] if isinstance(s.source, int) else kwargs[s.source])
                for s in self.slots]


def make_binding(sig: inspect.Signature | None, static_names: set[str], nargs: int,
                 kwnames: tuple[str, ...]) -> CallBinding:
    """The binding plan of calls with ``nargs`` positional arguments and keywords
    ``kwnames`` (raises ``TypeError`` when ``sig`` does not accept such calls)."""
    if sig is None:
        named: list[tuple[str, int | str]] = [(f"args[{i}]", i) for i in range(nargs)]
        named += [(k, k) for k in kwnames]
    else:
        bound = sig.bind(*range(nargs), **{k: k for k in kwnames})
        named = []
        for name, source in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                named += [(f"{name}[{i}]", s) for i, s in enumerate(source)]
            elif kind is inspect.Parameter.VAR_KEYWORD:
                named += [(f"{name}[{k!r}]", s) for k, s in source.items()]
            else:
                named.append((name, source))
    return CallBinding([Slot(n, s, n in static_names) for n, s in named])


def fast_signature(binding: CallBinding, args: tuple,
                   kwargs: dict) -> tuple[tuple, list[np.ndarray]] | None:
    """``(signature, executable inputs)`` of a call, or None when the call needs the full
    path (see the module docstring)."""
    sig: list[Any] = []
    values: list[Any] = []
    try:
        if binding.positional:
            if not _walk_all(args, sig, values):
                return None
        else:
            for slot in binding.slots:
                x = args[slot.source] if isinstance(slot.source, int) else kwargs[slot.source]
                if slot.static:
                    hash(x)
                    sig += (_STATIC, x)
                elif not _walk(x, sig, values):
                    return None
    except (TypeError, ValueError, OverflowError):
        return None
    return tuple(sig), values


def _walk(x: Any, sig: list[Any], values: list[Any]) -> bool:
    """Append ``x``'s part of the signature and its array values; False if not covered.

    Containers are visited in the order of ``pytree.tree_flatten``, so ``values`` lines up
    with the full path's leaves.
    """
    t = type(x)
    if _REGISTRY and t in _REGISTRY:
        return False
    if t is np.ndarray:
        dt = x.dtype
        sig += (t, x.shape, dt)
        canonical = _CANONICAL.get(dt)
        values.append(x if canonical is None else np.asarray(x, canonical))
        return True
    if t is Array:
        if x._value is None:
            return False
        sig += (t, x.shape, x.dtype, x.weak_type)
        values.append(x._value if type(x._value) is np.ndarray else np.asarray(x._value))
        return True
    if t is DeviceArray:        # the executable binds its buffer (or reads it: CPU)
        sig += (t, x.shape, x.dtype, x.weak_type)
        values.append(x if x._device is not None else np.asarray(x._value))
        return True
    scalar_dtype = _SCALAR_DTYPES.get(t)
    if scalar_dtype is not None:
        sig.append(t)
        values.append(np.asarray(x, scalar_dtype))
        return True
    if t is tuple or t is list:
        sig += (t, len(x))
        return _walk_all(x, sig, values)
    if t is dict:
        keys = tuple(sorted(x, key=_sort_key))
        sig += (t, keys)
        return _walk_all([x[k] for k in keys], sig, values)
    if x is None:
        sig.append(None)
        return True
    if t is Variable:
        sig += (t, id(x))
        return True
    if isinstance(x, tuple) and hasattr(t, "_fields"):       # namedtuple
        sig.append(t)
        return _walk_all(x, sig, values)
    if isinstance(x, np.generic):
        dt = x.dtype
        sig += (t, dt)
        values.append(np.asarray(x, _CANONICAL.get(dt, dt)))
        return True
    return False


def _walk_all(children: Any, sig: list[Any], values: list[Any]) -> bool:
    for c in children:
        if not _walk(c, sig, values):
            return False
    return True


__all__ = ["Slot", "CallBinding", "make_binding", "fast_signature"]
