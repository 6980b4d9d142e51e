"""Abstract evaluation: :class:`ShapeDtypeStruct`, :func:`eval_shape`, :func:`make_jaxpr`,
and :func:`block_until_ready`.

``eval_shape`` and ``make_jaxpr`` trace the function into a throwaway trace whose
parameters stand for the arguments (arrays, or ``ShapeDtypeStruct``\\ s giving only a shape
and a dtype); nothing is compiled or run. ``make_jaxpr`` also records the primitives applied
(:mod:`.program`) and prints them in JAX's jaxpr form; it is the front end's view of a
function. The compiler's view is the HLO: ``jit(f).lower(*args).as_text()`` (and
``compiler_ir("optimized_hlo")`` after the passes), which also accepts ShapeDtypeStructs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.shape import Shape
from . import dtypes
from .autodiff import paused_recording
from .core import Array, to_array
from .program import Program, record_program
from .pytree import tree_flatten, tree_map, tree_unflatten
from .tracing import Trace, trace_context


class ShapeDtypeStruct:
    """A shape and a dtype standing for an array (``jax.ShapeDtypeStruct``): what
    :func:`eval_shape` returns, and an argument of ``eval_shape``, ``make_jaxpr`` and
    ``jit(f).lower`` where only the type matters."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape: Sequence[int], dtype: Any, sharding: Any = None,
                 weak_type: bool = False) -> None:
        self.shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            raise InvalidArgumentError(f"ShapeDtypeStruct: negative dimension in {self.shape}")
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def abstract_leaf(x: Any) -> tuple[tuple[int, ...], np.dtype, bool]:
    """(shape, dtype, weak type) of an argument leaf: an Array, a ShapeDtypeStruct, a
    NumPy array or a Python scalar (dtypes canonicalized as arrays are)."""
    if isinstance(x, ShapeDtypeStruct):
        return x.shape, dtypes.canonicalize(x.dtype), x.weak_type
    a = to_array(x)
    return a.shape, a.dtype, a.weak_type


def _static_split(args: tuple, static_argnums: Sequence[int]) -> tuple[list[int], list[Any]]:
    n = len(args)
    statics = sorted({i % n for i in static_argnums if -n <= i < n})
    return statics, [a for i, a in enumerate(args) if i not in statics]


def _trace_abstract(fun: Callable[..., Any], args: tuple, kwargs: dict,
                    static_argnums: Sequence[int], name: str,
                    record: bool) -> tuple[list[Array], Any, Program | None]:
    """Trace ``fun`` on abstract arguments; returns the output leaves, their structure and
    (``record``) the recorded program."""
    statics, dyn = _static_split(args, static_argnums)
    leaves, tree = tree_flatten((dyn, kwargs))
    trace = Trace("abstract", name)
    program = None
    with trace_context(trace), paused_recording():
        params = []
        for leaf in leaves:
            shape, dt, weak = abstract_leaf(leaf)
            params.append(trace.new_param(Shape.array(as_element_type(dt), shape),
                                          weak_type=weak))
        dyn_vals, kw = tree_unflatten(tree, params)
        it = iter(dyn_vals)
        full = [args[i] if i in statics else next(it) for i in range(len(args))]
        if record:
            def flat(*xs: Array) -> list[Array]:
                out = fun(*full, **kw)
                flat.tree = tree_flatten(out)[1]           # type: ignore[attr-defined]
                return tree_flatten(out)[0]
            program, outs = record_program(flat, params)
            out_tree = flat.tree                            # type: ignore[attr-defined]
        else:
            leaves_out, out_tree = tree_flatten(fun(*full, **kw))
            outs = [to_array(o) for o in leaves_out]
    return outs, out_tree, program


def eval_shape(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``fun(*args, **kwargs)`` as a pytree of
    :class:`ShapeDtypeStruct`, found by tracing (nothing runs); arguments may be arrays or
    ShapeDtypeStructs."""
    outs, tree, _ = _trace_abstract(fun, args, kwargs, (), "eval_shape", record=False)
    return tree_unflatten(tree, [ShapeDtypeStruct(o.shape, o.dtype, weak_type=o.weak_type)
                                 for o in outs])


def make_jaxpr(fun: Callable[..., Any], static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[..., Any]:
    """``make_jaxpr(f)(*args)``: the primitives ``f`` applies to abstract ``args``, as a
    :class:`~xlapy.frontend.program.Program` that prints in JAX's jaxpr form (with
    ``return_shape``, also the output ShapeDtypeStructs, as JAX)."""
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        name = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
        outs, tree, program = _trace_abstract(fun, args, kwargs, nums, name, record=True)
        if return_shape:
            shapes = tree_unflatten(tree, [ShapeDtypeStruct(o.shape, o.dtype,
                                                            weak_type=o.weak_type)
                                           for o in outs])
            return program, shapes
        return program
    wrapped.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    return wrapped


def block_until_ready(x: Any) -> Any:
    """Wait for every array of the pytree ``x`` and return ``x`` (host results are
    complete when a call returns; a device Array waits for its device's queued work)."""
    def wait(leaf: Any) -> Any:
        ready = getattr(leaf, "block_until_ready", None)
        return ready() if callable(ready) else leaf
    tree_map(wait, x)
    return x


__all__ = ["ShapeDtypeStruct", "eval_shape", "make_jaxpr", "block_until_ready",
           "abstract_leaf"]
