"""Products: ``matmul``, ``dot``, ``tensordot``, ``outer``, ``einsum`` (all via ``dot_general``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..frontend import lax
from ..frontend.core import Array
from ._elementwise import broadcast_shapes, broadcast_to, multiply
from ._shape_ops import _promote_only


def matmul(a: Any, b: Any, *, precision: Any = None,
           preferred_element_type: Any = None) -> Array:
    """NumPy's ``a @ b`` as one ``dot_general``, the way JAX lowers it: a batch dimension only
    one operand has (or where the other has size 1) stays a free dimension of that operand
    instead of being broadcast, so ``[B, S, D] @ [D, E]`` is a single GEMM over ``B*S`` rows
    and never materializes the weight ``B`` times."""
    x, y = _promote_only([a, b])
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError("matmul: operands must not be scalars")
    x2 = lax.reshape(x, (1,) + x.shape) if x.ndim == 1 else x
    y2 = lax.reshape(y, y.shape + (1,)) if y.ndim == 1 else y
    if x2.shape[-1] != y2.shape[-2]:
        raise ShapeError(f"matmul: contracting dimensions differ: {x.type_text()} @ "
                         f"{y.type_text()}")
    batch = broadcast_shapes(x2.shape[:-2], y2.shape[:-2])
    nb = len(batch)
    xoff, yoff = nb - (x2.ndim - 2), nb - (y2.ndim - 2)
    roles = []                      # per batch position: shared, x's own, y's own or neither
    for p in range(nb):
        big_x = p >= xoff and x2.shape[p - xoff] != 1
        big_y = p >= yoff and y2.shape[p - yoff] != 1
        roles.append("b" if big_x and big_y else "x" if big_x else "y" if big_y else "")
    x_pos = [p for p in range(xoff, nb) if roles[p] in ("b", "x")]
    y_pos = [p for p in range(yoff, nb) if roles[p] in ("b", "y")]
    x3 = lax.reshape(x2, tuple(x2.shape[p - xoff] for p in x_pos) + x2.shape[-2:])
    y3 = lax.reshape(y2, tuple(y2.shape[p - yoff] for p in y_pos) + y2.shape[-2:])
    x_batch = tuple(i for i, p in enumerate(x_pos) if roles[p] == "b")
    y_batch = tuple(i for i, p in enumerate(y_pos) if roles[p] == "b")
    out = lax.dot_general(x3, y3, (((x3.ndim - 1,), (y3.ndim - 2,)), (x_batch, y_batch)),
                          preferred_element_type=preferred_element_type)
    # dot_general's order: shared batch, x's own dims, m, y's own dims, n
    labels = ([p for p in x_pos if roles[p] == "b"] + [p for p in x_pos if roles[p] == "x"]
              + ["m"] + [p for p in y_pos if roles[p] == "y"] + ["n"])
    want = [p for p in range(nb) if roles[p]] + ["m", "n"]
    perm = [labels.index(t) for t in want]
    if perm != sorted(perm):
        out = lax.transpose(out, perm)
    shape = batch + (x.shape[-2:-1] if x.ndim > 1 else ()) + (y.shape[-1:] if y.ndim > 1 else ())
    return lax.reshape(out, shape)


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Array:
    """NumPy's ``dot``; ``preferred_element_type`` is the result (accumulation) type, as
    in ``jax.numpy.dot`` (``precision`` is accepted and ignored: dots are exact f32)."""
    x, y = _promote_only([a, b])
    if x.ndim == 0 or y.ndim == 0:
        out = multiply(x, y)
        return out if preferred_element_type is None else \
            lax.convert_element_type(out, preferred_element_type)
    rc = 0 if y.ndim == 1 else y.ndim - 2
    if x.shape[-1] != y.shape[rc]:
        raise ShapeError(f"dot: shapes {x.shape} and {y.shape} not aligned")
    return lax.dot_general(x, y, (((x.ndim - 1,), (rc,)), ((), ())),
                           preferred_element_type=preferred_element_type)


def vdot(a: Any, b: Any) -> Array:
    x, y = _promote_only([a, b])
    return dot(lax.reshape(x, (x.size,)), lax.reshape(y, (y.size,)))


def inner(a: Any, b: Any) -> Array:
    x, y = _promote_only([a, b])
    if x.ndim == 0 or y.ndim == 0:
        return multiply(x, y)
    return lax.dot_general(x, y, (((x.ndim - 1,), (y.ndim - 1,)), ((), ())))


def outer(a: Any, b: Any) -> Array:
    x, y = _promote_only([a, b])
    x, y = lax.reshape(x, (x.size, 1)), lax.reshape(y, (1, y.size))
    return multiply(x, y)


def tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    x, y = _promote_only([a, b])
    if isinstance(axes, int):
        ax, bx = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        ax, bx = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                  [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    ax = [i % x.ndim for i in ax]
    bx = [i % y.ndim for i in bx]
    return lax.dot_general(x, y, ((tuple(ax), tuple(bx)), ((), ())))


_SPARE = "".join(chr(c) for c in range(ord("A"), ord("Z") + 1)) + "".join(
    chr(c) for c in range(0x3b1, 0x3c9))         # labels for '...' dims (after A-Z: Greek)


def _parse_einsum(subscripts: str, xs: list[Array]) -> tuple[list[str], str, list[Array]]:
    """Operand labels and output labels with each ``...`` replaced by fresh labels (right
    aligned, NumPy broadcasting); operands whose ellipsis dims are 1 where another operand's
    are larger drop those dims (a size-1 broadcast adds nothing)."""
    spec = subscripts.replace(" ", "")
    lhs, out = spec.split("->") if "->" in spec else (spec, None)
    ins = lhs.split(",")
    if len(ins) != len(xs):
        raise InvalidArgumentError(f"xnp.einsum: {len(ins)} subscripts for {len(xs)} operands")
    used = set(spec) - set(".,->")
    spare = [c for c in _SPARE if c not in used]
    ell_rank = 0
    for lab, x in zip(ins, xs):
        if "..." in lab:
            ell_rank = max(ell_rank, x.ndim - len(lab.replace("...", "")))
    ell = "".join(spare[:ell_rank])
    ell_sizes: dict[str, int] = {}
    new_ins = []
    for lab, x in zip(ins, xs):
        if lab.count("...") > 1 or ("." in lab.replace("...", "")):
            raise InvalidArgumentError(f"xnp.einsum: invalid subscript {lab!r}")
        if "..." in lab:
            k = x.ndim - len(lab.replace("...", ""))
            if k < 0:
                raise ShapeError(f"xnp.einsum: subscript {lab!r} for operand of rank {x.ndim}")
            mine = ell[ell_rank - k:]
            i = lab.index("...")
            for c, size in zip(mine, x.shape[i:i + k]):
                if size != 1:
                    if ell_sizes.setdefault(c, size) != size:
                        raise ShapeError(f"xnp.einsum: '...' dimensions {size} and "
                                         f"{ell_sizes[c]} cannot be broadcast together")
            lab = lab.replace("...", mine)
        new_ins.append(lab)
    # Drop size-1 ellipsis dims where another operand has the label at a larger size.
    out_xs = []
    for j, (lab, x) in enumerate(zip(new_ins, xs)):
        drop = [d for d, c in enumerate(lab) if c in ell and x.shape[d] == 1 and c in ell_sizes]
        if drop:
            x = lax.reshape(x, [s for d, s in enumerate(x.shape) if d not in drop])
            new_ins[j] = "".join(c for d, c in enumerate(lab) if d not in drop)
        out_xs.append(x)
    if out is None:
        letters = "".join(new_ins)
        out = ell + "".join(sorted(c for c in set(letters) - set(ell) if letters.count(c) == 1))
    else:
        if out.count("...") > 1:
            raise InvalidArgumentError(f"xnp.einsum: invalid output subscript {out!r}")
        if ell and "..." not in out:
            raise InvalidArgumentError(f"xnp.einsum: {subscripts!r}: the output needs '...' "
                                       "for the broadcast dimensions (as in NumPy)")
        out = out.replace("...", ell)
    return new_ins, out, out_xs


def _diagonal_reduce(x: Array, labels: str) -> tuple[Array, str]:
    """Remove repeated labels of one operand by taking the diagonal."""
    while True:
        dup = next((c for c in labels if labels.count(c) > 1), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        n = x.shape[i]
        eye = lax.eq(lax.broadcasted_iota(np.int32, x.shape, i),
                     lax.broadcasted_iota(np.int32, x.shape, j))
        x = lax.select(eye, x, broadcast_to(lax.convert_element_type(0, x.dtype), x.shape))
        x = lax.reduce_sum(x, (j,))
        labels = labels[:j] + labels[j + 1:]
        assert x.shape[i] == n


def _sum_out(x: Array, labels: str, keep: set[str]) -> tuple[Array, str]:
    axes = [i for i, c in enumerate(labels) if c not in keep]
    if axes:
        x = lax.reduce_sum(x, axes)
        labels = "".join(c for c in labels if c in keep)
    return x, labels


def einsum(subscripts: str, *operands: Any, optimize: Any = None) -> Array:
    """Einstein summation (with ``...`` broadcasting), contracted left to right with
    ``dot_general``; ``optimize`` is accepted and ignored (the order is left to right)."""
    xs = _promote_only(operands)
    ins, out, xs = _parse_einsum(subscripts, list(xs))
    for x, lab in zip(xs, ins):
        if len(lab) != x.ndim:
            raise ShapeError(f"xnp.einsum: subscript {lab!r} for operand of rank {x.ndim}")
    terms = [_diagonal_reduce(x, lab) for x, lab in zip(xs, ins)]
    acc, acc_lab = terms[0]
    for k in range(1, len(terms) + 1):
        later = set(out).union(*[set(lab) for _, lab in terms[k:]])
        if k == len(terms):
            acc, acc_lab = _sum_out(acc, acc_lab, later)
            break
        y, y_lab = terms[k]
        acc, acc_lab = _sum_out(acc, acc_lab, later | set(y_lab))
        later_after = set(out).union(*[set(lab) for _, lab in terms[k + 1:]])
        y, y_lab = _sum_out(y, y_lab, later_after | set(acc_lab))
        shared = [c for c in acc_lab if c in y_lab]
        batch = [c for c in shared if c in later_after]
        contract = [c for c in shared if c not in later_after]
        dn = ((tuple(acc_lab.index(c) for c in contract), tuple(y_lab.index(c) for c in contract)),
              (tuple(acc_lab.index(c) for c in batch), tuple(y_lab.index(c) for c in batch)))
        acc = lax.dot_general(acc, y, dn)
        acc_lab = "".join(batch) + "".join(c for c in acc_lab if c not in shared) + "".join(
            c for c in y_lab if c not in shared)
    missing = set(out) - set(acc_lab)
    if missing:
        raise InvalidArgumentError(f"xnp.einsum: output labels {sorted(missing)} do not appear "
                                   "in the inputs")
    return lax.transpose(acc, [acc_lab.index(c) for c in out])


__all__ = ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum"]
