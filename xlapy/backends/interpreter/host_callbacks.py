"""Host callbacks: compiled code calling back into Python (``custom-call`` to
``xla_ffi_python_cpu_callback``, the target jaxlib uses on CPU).

A host callback is an HLO instruction of the form JAX emits::

    r = f32[3]{0} custom-call(x), custom_call_target="xla_ffi_python_cpu_callback",
        api_version=API_VERSION_TYPED_FFI, backend_config={index = 7 : ui64}

``index`` names a Python callable in this process's registry (:func:`register`). When
the instruction runs -- in the interpreter, or in the CPU runtime's callback thunk --
:func:`call_host` gives the callable its array operands as read-only NumPy views
(operands of type ``token[]`` are left out), checks what it returns against the
instruction's result shape (array leaves, in order; ``token[]`` leaves of the result
are produced here) and returns the interpreter value. A callable that raises: the
exception propagates unchanged to whoever runs the program, with a note naming the
callback and the instruction. A result of the wrong shape or dtype is an
``InvalidArgumentError`` naming both.

The index means something only in the process that registered it, so modules with
host callbacks are never stored in or loaded from the CPU backend's disk cache
(:func:`has_host_callbacks`). Registered callables stay alive for the life of the
process (as JAX's do while their executables can run): a module may be compiled and
run at any time after it was traced.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloInstruction, HloModule
from ...hlo.shape import Shape
from ...hlo.shape_inference.custom_calls import backend_config_fields
from .evaluator import TOKEN, Evaluator, custom_call, describe

#: The custom-call target of host callbacks (jaxlib's typed-FFI CPU callback).
CALLBACK_TARGET = "xla_ffi_python_cpu_callback"


@dataclass(frozen=True)
class HostCallback:
    """A registered callable: ``fn(*arrays) -> sequence of arrays`` (one per array leaf
    of the instruction's result) and ``name``, how errors call it."""

    fn: Callable[..., Sequence[Any]]
    name: str


_REGISTRY: dict[int, HostCallback] = {}
_COUNTER = itertools.count()
_LOCK = threading.Lock()


def register(fn: Callable[..., Sequence[Any]], name: str) -> int:
    """Register ``fn`` and return its index (unique in this process)."""
    with _LOCK:
        index = next(_COUNTER)
        _REGISTRY[index] = HostCallback(fn, name)
    return index


def registered(index: int) -> HostCallback | None:
    """The callback registered under ``index``, None if there is none."""
    return _REGISTRY.get(index)


def is_host_callback(instr: HloInstruction) -> bool:
    return instr.opcode == "custom-call" and \
        instr.attrs.get("custom_call_target") == CALLBACK_TARGET


def has_host_callbacks(module: HloModule) -> bool:
    """Whether any computation of ``module`` calls back into this process."""
    return any(is_host_callback(i) for c in module.computations for i in c.instructions)


def callback_index(instr: HloInstruction) -> int:
    """The registry index in ``instr``'s ``backend_config`` (``{index = N : ui64}``, or a
    bare number as the string form)."""
    cfg = instr.attrs.get("backend_config")
    fields = backend_config_fields(instr) if not isinstance(cfg, str) else {}
    value = fields.get("index", cfg if isinstance(cfg, str) else None)
    try:
        return int(value)                                     # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{describe(instr)}: host callback without an index in "
                                   f"backend_config (expected {{index = N : ui64}})") from None


def lookup(instr: HloInstruction) -> HostCallback:
    """The callback ``instr`` calls; a typed error when this process has none by that index
    (a module traced in another process)."""
    index = callback_index(instr)
    cb = _REGISTRY.get(index)
    if cb is None:
        raise UnimplementedError(
            f"{describe(instr)}: host callback {index} is not registered in this process "
            "(host callbacks run only in the process that traced them)")
    return cb


def _result_leaves(shape: Shape) -> list[Shape]:
    return list(shape.tuple_shapes) if shape.is_tuple else [shape]


def _type_text(a: np.ndarray) -> str:
    from ...hlo.types import from_dtype
    try:
        name = from_dtype(a.dtype).name
    except Exception:                  # noqa: BLE001 - a dtype HLO has no name for
        name = str(a.dtype)
    return f"{name}[{','.join(map(str, a.shape))}]"


def _checked(name: str, k: int, value: Any, want: Shape) -> np.ndarray:
    """Result ``k`` as an array of ``want``'s dtype and dims, or an error naming both.

    Arrays must have the result's dtype (or its 64-bit form: the front end computes 64-bit
    types as 32-bit, as JAX does without x64); Python numbers and lists only need to cast
    to it within their kind (an int for a float result, not a float for an int)."""
    typed = isinstance(value, (np.ndarray, np.generic)) or (
        hasattr(value, "__array__") and not isinstance(value, (list, tuple)))
    expected = want.without_layout()
    try:
        a = np.asarray(value)
    except Exception as e:            # noqa: BLE001 - anything NumPy cannot convert
        raise InvalidArgumentError(f"{name} returned a {type(value).__name__} for result "
                                   f"{k}, expected {expected}: {e}") from None
    if typed:
        dtype_ok = a.dtype == want.dtype or (a.dtype.kind == want.dtype.kind
                                             and a.dtype.itemsize == 8 and want.dtype.itemsize == 4)
    else:
        dtype_ok = a.dtype != object and np.can_cast(a.dtype, want.dtype, "same_kind")
    if not dtype_ok or tuple(a.shape) != tuple(want.dims):
        raise InvalidArgumentError(f"{name} returned {_type_text(a)} for result {k}, "
                                   f"expected {expected}")
    return a if a.dtype == want.dtype else a.astype(want.dtype)


def call_host(instr: HloInstruction, operands: Sequence[Any]) -> Any:
    """Run the host callback ``instr`` on its operand values (interpreter values: arrays,
    TOKEN) and return its result value (see the module docstring)."""
    cb = lookup(instr)
    args = []
    for v in operands:
        if v is TOKEN:
            continue
        view = np.asarray(v).view()
        view.flags.writeable = False
        args.append(view)
    try:
        results = cb.fn(*args)
    except Exception as e:
        note = getattr(e, "add_note", None)          # Python >= 3.11
        if note is not None:
            note(f"(raised by {cb.name}, called back from compiled code at {describe(instr)})")
        raise
    leaves = _result_leaves(instr.shape)
    it = iter(check_results(cb.name, results, [s for s in leaves if not s.is_token]))
    values = [TOKEN if s.is_token else next(it) for s in leaves]
    return tuple(values) if instr.shape.is_tuple else values[0]


def check_results(name: str, results: Sequence[Any] | None,
                  shapes: Sequence[Shape]) -> list[np.ndarray]:
    """What callback ``name`` returned, as arrays of ``shapes`` (one per result), or an
    ``InvalidArgumentError`` naming what came back and what was expected."""
    results = [] if results is None else list(results)
    if len(results) != len(shapes):
        wanted = ", ".join(str(s.without_layout()) for s in shapes) or "none"
        raise InvalidArgumentError(f"{name} returned {len(results)} results, expected "
                                   f"{len(shapes)} ({wanted})")
    return [_checked(name, k, r, s) for k, (r, s) in enumerate(zip(results, shapes))]


@custom_call(CALLBACK_TARGET)
def _host_callback(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return call_host(instr, operands)


__all__ = ["CALLBACK_TARGET", "HostCallback", "register", "registered", "is_host_callback",
           "has_host_callbacks", "callback_index", "lookup", "call_host", "check_results"]
