"""Jacobians and Hessians: :func:`jacfwd`, :func:`jacrev`, :func:`hessian` (JAX's API).

``jacrev`` records the function once (:func:`~xlapy.frontend.autodiff.vjp`) and pulls back
one standard basis vector of the output per row; ``jacfwd`` records it once
(:func:`~xlapy.frontend.autodiff_forward.linearize`) and pushes forward one basis vector of
the input per column. Rows / columns are stacked, so the Jacobian of an output leaf of
shape ``out`` with respect to an input leaf of shape ``in`` has shape ``out + in``; with
pytrees the result nests the input structure inside the output structure, as in JAX.
Everything is written with ``xlapy`` ops: the transformations compose with ``jit``,
``grad`` and each other (``hessian = jacfwd(jacrev(f))``).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from . import lax
from .autodiff import _argnums, vjp
from .autodiff_forward import linearize
from .core import Array, to_array
from .pytree import tree_flatten, tree_unflatten


def _check_inputs(leaves: Sequence[Array], holomorphic: bool, allow_int: bool,
                  what: str) -> None:
    for x in leaves:
        kind = np.dtype(x.dtype).kind
        if holomorphic and kind != "c":
            raise InvalidArgumentError(f"{what} with holomorphic=True requires complex "
                                       f"inputs, got {x.type_text()}")
        if not holomorphic and kind == "c":
            raise InvalidArgumentError(f"{what} requires real-valued inputs, got "
                                       f"{x.type_text()}; use holomorphic=True for "
                                       "holomorphic functions of complex inputs")
        if kind in "iub" and not allow_int:
            raise InvalidArgumentError(f"{what} requires real- or complex-valued inputs, "
                                       f"got {x.type_text()}; pass allow_int=True")


def _basis(x: Array) -> list[Array]:
    """The standard basis of ``x``'s space: one one-hot array per element, row-major."""
    n = x.size
    flat = lax.broadcasted_iota(np.int32, (n,), 0)
    return [lax.reshape(lax.convert_element_type(lax.eq(flat, lax.full_like(flat, k)),
                                                 x.dtype), x.shape) for k in range(n)]


def _stack(parts: Sequence[Array], lead: tuple[int, ...], like: Array) -> Array:
    """``parts`` (one per element of a ``lead``-shaped index space, row-major) stacked into
    one array of shape ``lead + like.shape``."""
    if not parts:
        return lax.full_like(lax.broadcast(like, lead) if lead else like, 0)
    rows = [lax.reshape(to_array(p, like.dtype), (1,) + like.shape) for p in parts]
    stacked = rows[0] if len(rows) == 1 else lax.concatenate(rows, 0)
    return lax.reshape(stacked, tuple(lead) + like.shape)


def _move_leading(x: Array, n_lead: int) -> Array:
    """``x`` of shape ``lead + rest`` transposed to ``rest + lead``."""
    if n_lead == 0 or n_lead == x.ndim:
        return x
    perm = tuple(range(n_lead, x.ndim)) + tuple(range(n_lead))
    return lax.transpose(x, perm)


class _Inputs:
    """The differentiated arguments of one call: ``dyn`` (those ``argnums`` picks), their
    array leaves and structure, and ``partial``, ``fun`` as a function of ``dyn``."""

    def __init__(self, fun: Callable[..., Any], args: tuple, kwargs: dict, argnums: Any,
                 holomorphic: bool, allow_int: bool, what: str) -> None:
        self.nums, self.single = _argnums(argnums, len(args))
        self.dyn = tuple(args[i] for i in self.nums)
        leaves, self.tree = tree_flatten(self.dyn)
        self.arrays = [to_array(x) for x in leaves]
        _check_inputs(self.arrays, holomorphic, allow_int, what)
        self.fun, self.args, self.kwargs = fun, args, kwargs

    def partial(self, *diff: Any) -> Any:
        full = list(self.args)
        for i, v in zip(self.nums, diff):
            full[i] = v
        return self.fun(*full, **self.kwargs)

    def nest(self, per_input: list[Array]) -> Any:
        """One output leaf's Jacobian blocks (one per input leaf) in the input structure."""
        tree = tree_unflatten(self.tree, per_input)
        return tree[0] if self.single else tree


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``fun`` with respect to ``argnums`` by reverse mode (like
    ``jax.jacrev``): one pullback per output element."""
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        ins = _Inputs(fun, args, kwargs, argnums, holomorphic, allow_int, "jacrev")
        res = vjp(ins.partial, *ins.dyn, has_aux=has_aux)
        y, pullback = res[0], res[1]
        y_leaves, y_tree = tree_flatten(y)
        y_leaves = [to_array(v) for v in y_leaves]
        if not holomorphic:
            for v in y_leaves:
                if np.dtype(v.dtype).kind == "c":
                    raise InvalidArgumentError(
                        f"jacrev requires real-valued outputs, got {v.type_text()}; use "
                        "holomorphic=True for holomorphic functions")
        per_out = []
        for k, yl in enumerate(y_leaves):
            rows: list[list[Array]] = [[] for _ in ins.arrays]
            for e in _basis(yl):
                ct = [e if j == k else lax.full_like(o, 0) for j, o in enumerate(y_leaves)]
                g_leaves = tree_flatten(pullback(tree_unflatten(y_tree, ct)))[0]
                for r, g in zip(rows, g_leaves):
                    r.append(to_array(g))
            per_out.append(ins.nest([_stack(r, yl.shape, x) for r, x in zip(rows, ins.arrays)]))
        out = tree_unflatten(y_tree, per_out)
        return (out, res[2]) if has_aux else out
    jacfun.__name__ = f"jacrev({getattr(fun, '__name__', 'fun')})"
    return jacfun


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``fun`` with respect to ``argnums`` by forward mode (like
    ``jax.jacfwd``): one pushforward per input element."""
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        ins = _Inputs(fun, args, kwargs, argnums, holomorphic, False, "jacfwd")
        in_arrays = ins.arrays
        res = linearize(ins.partial, *ins.dyn, has_aux=has_aux)
        y, f_jvp = res[0], res[1]
        y_leaves, y_tree = tree_flatten(y)
        y_leaves = [to_array(v) for v in y_leaves]
        # cols[i][k]: the output tangent leaves for basis vector k of input leaf i
        cols: list[list[list[Array]]] = []
        for i, x in enumerate(in_arrays):
            cols.append([])
            for e in _basis(x):
                t = [e if j == i else lax.full_like(a, 0) for j, a in enumerate(in_arrays)]
                out_t = f_jvp(*tree_unflatten(ins.tree, t))
                cols[i].append([to_array(v) for v in tree_flatten(out_t)[0]])
        per_out = []
        for k, yl in enumerate(y_leaves):
            # _stack gives x.shape + y.shape; JAX's order is y.shape + x.shape
            per_out.append(ins.nest([_move_leading(_stack([c[k] for c in cols[i]], x.shape, yl),
                                                   x.ndim) for i, x in enumerate(in_arrays)]))
        out = tree_unflatten(y_tree, per_out)
        return (out, res[2]) if has_aux else out
    jacfun.__name__ = f"jacfwd({getattr(fun, '__name__', 'fun')})"
    return jacfun


def hessian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable[..., Any]:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (like ``jax.hessian``)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


jacobian = jacrev

__all__ = ["jacfwd", "jacrev", "jacobian", "hessian"]
