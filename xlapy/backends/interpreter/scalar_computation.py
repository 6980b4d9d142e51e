"""Running scalar computations (reducers, comparators, combiners) over whole arrays.

Reducers, sort comparators and scatter combiners are computations on scalars.
:func:`apply_scalar` evaluates one on equally shaped arrays at once: the
elementwise handlers accept arrays, and the few shape ops that can appear
between scalars (``bitcast``, ``reshape``, ``broadcast`` of a rank-0 value) are
identities or a reinterpretation of the bits. A computation containing anything
else falls back to one call per element, which is slow but exact.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...hlo.ir import HloComputation
from ...hlo.opcodes import OPCODES
from ...hlo.shape import Shape
from .evaluator import Evaluator

# Opcodes that leave a rank-0 value unchanged (apart from a bit reinterpretation for bitcast).
_SCALAR_IDENTITIES = frozenset({"reshape", "broadcast", "bitcast", "opt-barrier", "domain"})
_STRUCTURAL = frozenset({"parameter", "constant", "tuple", "get-tuple-element"})
_CALLS = frozenset({"call", "fusion"})


def _all_scalar(shape: Shape) -> bool:
    if shape.is_tuple:
        return all(_all_scalar(s) for s in shape.tuple_shapes)
    return shape.is_array and shape.rank == 0


def is_vectorizable(comp: HloComputation) -> bool:
    """True if every value in ``comp`` is a scalar and every op works elementwise on arrays."""
    for instr in comp.instructions:
        if not _all_scalar(instr.shape):
            return False
        op = instr.opcode
        info = OPCODES.get(op)
        if op in _STRUCTURAL or op in _SCALAR_IDENTITIES:
            continue
        if op in _CALLS:
            if not all(is_vectorizable(c) for c in instr.called_computations):
                return False
            continue
        if info is None or info.family != "elementwise":
            return False
    return True


def _run_vectorized(ev: Evaluator, comp: HloComputation, args: Sequence[Any]) -> Any:
    env: dict[int, Any] = {}
    for instr in comp.post_order():
        ops = [env[id(o)] for o in instr.operands]
        op = instr.opcode
        if op == "parameter":
            value = args[instr.parameter_number]
        elif op == "constant":
            value = instr.literal
        elif op == "tuple":
            value = tuple(ops)
        elif op == "get-tuple-element":
            value = ops[0][instr.attrs["index"]]
        elif op in _CALLS:
            value = _run_vectorized(ev, instr.called_computations[0], ops)
        elif op == "bitcast" and np.asarray(ops[0]).dtype != instr.shape.dtype:
            value = np.asarray(ops[0]).view(instr.shape.dtype)
        elif op in _SCALAR_IDENTITIES:
            value = ops[0]
        else:
            value = ev.evaluate(instr, ops)
        env[id(instr)] = value
    return env[id(comp.root)]


def _fit(value: Any, shape: Shape, dims: tuple[int, ...]) -> Any:
    """Broadcast a (possibly 0-d) result leaf to ``dims`` with the shape's dtype."""
    if shape.is_tuple:
        return tuple(_fit(v, s, dims) for v, s in zip(value, shape.tuple_shapes))
    a = np.asarray(value)
    if a.dtype != shape.dtype:
        a = a.astype(shape.dtype)
    if a.shape != dims:
        a = np.array(np.broadcast_to(a, dims))
    return a


def apply_scalar(ev: Evaluator, comp: HloComputation, *arrays: Any) -> Any:
    """Evaluate scalar computation ``comp`` elementwise over equally shaped ``arrays``.

    Returns an array of the common shape (a tuple of arrays when ``comp`` returns a tuple).
    """
    arrays_np = [np.asarray(a) for a in arrays]
    dims = np.broadcast_shapes(*(a.shape for a in arrays_np)) if arrays_np else ()
    root_shape = comp.root.shape
    if is_vectorizable(comp):
        if _only_elementwise(comp):
            out = ev.call_elementwise(comp, *arrays_np)
        else:
            out = _run_vectorized(ev, comp, arrays_np)
        return _fit(out, root_shape, tuple(dims))
    return _apply_per_element(ev, comp, arrays_np, tuple(dims))


def _only_elementwise(comp: HloComputation) -> bool:
    """No scalar shape ops or calls: the evaluator's own walk handles it directly."""
    return all(i.opcode not in _SCALAR_IDENTITIES and i.opcode not in _CALLS
               for i in comp.instructions)


def _apply_per_element(ev: Evaluator, comp: HloComputation, arrays: list[np.ndarray],
                       dims: tuple[int, ...]) -> Any:
    root_shape = comp.root.shape
    leaves = root_shape.tuple_shapes if root_shape.is_tuple else (root_shape,)
    outs = [np.empty(dims, dtype=s.dtype) for s in leaves]
    full = [np.broadcast_to(a, dims) for a in arrays]
    for idx in np.ndindex(*dims):
        r = ev.call(comp, [np.asarray(a[idx]) for a in full])
        parts = r if root_shape.is_tuple else (r,)
        for o, p in zip(outs, parts):
            o[idx] = p
    return tuple(outs) if root_shape.is_tuple else outs[0]


def as_list(value: Any) -> list:
    """A computation result as a list of arrays (a tuple's elements, or the single array)."""
    return list(value) if isinstance(value, tuple) else [value]


def simple_binary_op(comp: HloComputation) -> str | None:
    """The opcode if ``comp`` is exactly ``ROOT op(p0, p1)`` (either operand order), else None."""
    if comp.num_parameters != 2:
        return None
    root = comp.root
    if len(root.operands) != 2 or any(o.opcode != "parameter" for o in root.operands):
        return None
    if {o.parameter_number for o in root.operands} != {0, 1}:
        return None
    if root.opcode not in ("add", "multiply", "maximum", "minimum", "and", "or", "xor"):
        return None
    return root.opcode


def comparator_direction(comp: HloComputation) -> tuple[str, str | None] | None:
    """``(direction, type)`` if ``comp`` is exactly ``ROOT compare(p0, p1)``, else None."""
    root = comp.root
    if root.opcode != "compare" or len(comp.instructions) != comp.num_parameters + 1:
        return None
    a, b = root.operands
    if not (a.opcode == b.opcode == "parameter"
            and a.parameter_number == 0 and b.parameter_number == 1):
        return None
    return str(root.attrs.get("direction")), root.attrs.get("type")
