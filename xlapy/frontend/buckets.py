"""Shape buckets: one compile per *bucket* of sizes instead of one per shape.

``jit(fn, shape_buckets={"x": {1: "pow2"}})`` pads dimension 1 of argument ``x`` up to
the next bucket (powers of two, or a given list of sizes) and compiles once per bucket.
Inside, the dimension is *dynamic*: the traced function sees ``set-dimension-size(x,
n)`` (``f32[<=512,64]``), so XLA's ``DynamicPadder`` (``passes/dynamic_padder.py``)
masks the padding out of reductions and contractions, ``xnp.mean`` and friends divide by
the run-time size (``get-dimension-size``), and each output is sliced back to its own
run-time sizes on the host. The answers are those of the unpadded computation; an op
the padder cannot run on a dynamic dimension is an ``UnimplementedError`` naming it.

Specs: ``{arg: axis}`` (powers of two), ``{arg: {axis: "pow2" | [sizes...]}}``, where
``arg`` is a parameter name or position; every array leaf of that argument is bucketed
along those axes. ``"auto"`` buckets every dimension of every array argument by powers
of two and falls back to one compile per shape when the function has an op the padder
cannot handle (the behaviour behind ``tf.function(experimental_relax_shapes=True)``).
``cache_info()`` is the inner jit function's, and ``bucket_info()`` counts compiles and
hits per bucket.
"""
from __future__ import annotations

import collections
import inspect
import logging
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError
from . import core
from .batching import NO_RULE
from .core import Array, primitive, to_array
from .pytree import tree_flatten, tree_unflatten
from .source_info import located

log = logging.getLogger("xlapy.jit")

# ----------------------------------------------------------------------- dimension sizes
set_dimension_size_p = primitive("set_dimension_size", doc="x with dimension d of run-time "
                                 "size n (at most its static size)")
get_dimension_size_p = primitive("get_dimension_size", weak=lambda args, params: False,
                                 doc="the run-time size of dimension d (s32)")
set_dimension_size_p.def_lowering(
    lambda ctx, x, n, dimension: ctx.b.set_dimension_size(x, n, dimension))
set_dimension_size_p.def_vjp(lambda ct, ans, x, n, dimension: (ct, None))
get_dimension_size_p.def_lowering(
    lambda ctx, x, dimension: ctx.b.get_dimension_size(x, dimension))
get_dimension_size_p.def_vjp(lambda ct, ans, x, dimension: (None,))
for _p in (set_dimension_size_p, get_dimension_size_p):
    NO_RULE[_p.name] = ("dynamic dimensions come from shape buckets, which pad and call the "
                        "function outside vmap; a batched dynamic size is not modelled")


def set_dimension_size(x: Array, size: Any, dimension: int) -> Array:
    """``x`` whose dimension ``dimension`` holds ``size`` elements at run time (HLO
    ``set-dimension-size``; the elements past it are padding). Compiled code only: an
    eager array has no run-time size, so op by op the padding would not be masked."""
    if core.current_trace() is None:
        raise InvalidArgumentError(located(
            "set_dimension_size makes a dynamic dimension, which exists only inside a "
            "compiled function", "call it under jit, or use jit(..., shape_buckets=...)"))
    return core.bind(set_dimension_size_p, to_array(x), to_array(size, np.int32),
                     dimension=int(dimension))


def get_dimension_size(x: Array, dimension: int) -> Array:
    """The run-time size of ``x``'s dimension ``dimension`` as an s32 scalar."""
    return core.bind(get_dimension_size_p, to_array(x), dimension=int(dimension))


def dynamic_trace() -> bool:
    """Whether the current trace runs with dynamic (bucketed) dimensions, where counts
    must come from :func:`get_dimension_size` rather than the static shape."""
    trace = core.current_trace()
    while trace is not None:
        if getattr(trace, "dynamic_shapes", False):
            return True
        trace = trace.parent
    return False


def element_count(x: Array, axes: Sequence[int], dtype: Any) -> Array | None:
    """The run-time number of elements of ``x`` over ``axes`` in ``dtype`` inside a
    dynamic trace; None elsewhere (the static count is exact then)."""
    if not dynamic_trace() or not axes:
        return None
    from . import lax
    count = None
    for a in axes:
        n = get_dimension_size(x, a)
        count = n if count is None else lax.mul(count, n)
    return core.convert(count, dtype)


@contextmanager
def _dynamic(trace: Any) -> Iterator[None]:
    trace.dynamic_shapes = True
    try:
        yield
    finally:
        trace.dynamic_shapes = False


# ------------------------------------------------------------------------------- buckets
def bucket_size(n: int, buckets: Any) -> int:
    """The bucket holding size ``n``: the next power of two, or the smallest given size
    that is at least ``n``."""
    if buckets in (None, "pow2"):
        return 1 << max(0, int(n) - 1).bit_length()
    for b in sorted(int(b) for b in buckets):
        if b >= n:
            return b
    raise InvalidArgumentError(f"size {n} is larger than the largest shape bucket "
                               f"{max(int(b) for b in buckets)}")


def _normalize(spec: Any) -> dict[Any, dict[int, Any]]:
    if not isinstance(spec, dict):
        raise InvalidArgumentError(f"shape_buckets must be a dict {{argument: axis or "
                                   f"{{axis: buckets}}}} or 'auto', got {spec!r}")
    out: dict[Any, dict[int, Any]] = {}
    for arg, axes in spec.items():
        if isinstance(axes, int):
            axes = {axes: "pow2"}
        elif isinstance(axes, (list, tuple)):
            axes = {int(a): "pow2" for a in axes}
        if not isinstance(axes, dict):
            raise InvalidArgumentError(f"shape_buckets[{arg!r}] must be an axis, a list of "
                                       f"axes or {{axis: buckets}}, got {axes!r}")
        for a, b in axes.items():
            if b != "pow2" and not (isinstance(b, (list, tuple)) and b):
                raise InvalidArgumentError(f"shape_buckets[{arg!r}][{a}] must be 'pow2' or a "
                                           f"list of sizes, got {b!r}")
        out[arg] = {int(a): b for a, b in axes.items()}
    return out


class BucketedFunction:
    """``jit(fn, shape_buckets=...)`` (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], shape_buckets: Any,
                 jit_function: Callable[..., Any], **jit_kwargs: Any) -> None:
        """``jit_function`` makes the jit functions (``JitFunction``; passed in, so this
        module does not import ``jit``, which imports it)."""
        JitFunction = jit_function
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "fn")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self._auto = shape_buckets == "auto"
        self._spec = {} if self._auto else _normalize(shape_buckets)
        self._sig = inspect.signature(fn)
        static = set(jit_kwargs.pop("static_argnames", ()) or ())
        names = list(self._sig.parameters)
        nums = jit_kwargs.pop("static_argnums", ()) or ()
        static |= {names[i] for i in ([nums] if isinstance(nums, int) else nums)}
        self._static = static
        def padded(dyn: dict, sizes: Array, statics: tuple, layout: tuple) -> tuple:
            return self._inner(dyn, sizes, statics, layout)
        padded.__name__ = self.__name__
        self._jit = JitFunction(padded, static_argnames=("statics", "layout"), **jit_kwargs)
        self._out_trees: dict[Any, Any] = {}
        self._exact = JitFunction(fn, static_argnames=tuple(static), **jit_kwargs) \
            if self._auto else None
        self._fallback = False
        self._tracing = False
        self._buckets: dict[str, collections.Counter] = {}

    # ----- calls
    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """(static (name, value) pairs, dynamic arguments): keyed by parameter name, by
        position for ``*args`` elements, by keyword for ``**kwargs`` entries."""
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise InvalidArgumentError(f"{self.__name__}: {e}") from None
        statics, dyn = [], {}
        for name, value in bound.arguments.items():
            kind = self._sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                first = len(args) - len(value)
                dyn.update({first + i: v for i, v in enumerate(value)})
            elif kind is inspect.Parameter.VAR_KEYWORD:
                dyn.update(value)
            elif name in self._static:
                statics.append((name, value))
            else:
                dyn[name] = value
        return tuple(statics), dyn

    def _call_fn(self, values: dict) -> Any:
        """Call ``fn`` with the arguments ``_split`` gave (values may be traced)."""
        args, kwargs = [], {}
        for name, p in self._sig.parameters.items():
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                args += [values[k] for k in sorted(k for k in values if isinstance(k, int))]
            elif p.kind is inspect.Parameter.VAR_KEYWORD:
                kwargs.update({k: v for k, v in values.items() if isinstance(k, str)
                               and k not in self._sig.parameters})
            elif name not in values:
                continue
            elif p.kind is inspect.Parameter.KEYWORD_ONLY:
                kwargs[name] = values[name]
            else:
                args.append(values[name])
        return self.fn(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fallback:
            return self._exact(*args, **kwargs)
        statics, dyn = self._split(args, kwargs)
        leaves, tree = tree_flatten(dyn)
        padded, sizes, layout, key = self._pad(dyn, leaves)
        before = self._jit.cache_info().misses
        self._tracing = False
        try:
            outs, out_sizes = self._jit(tree_unflatten(tree, padded),
                                        np.asarray(sizes, np.int32), statics=statics,
                                        layout=layout)
        except (UnimplementedError, InvalidArgumentError) as e:
            # "auto" tries buckets first: an op the padder refuses, or one that needs a
            # static size while tracing, means one program per shape (a genuine error
            # then comes back from that path).
            if not self._auto or not (self._tracing or isinstance(e, UnimplementedError)):
                raise
            log.info("%s: compiling one program per shape: %s", self.__name__, e)
            self._fallback = True
            return self._exact(*args, **kwargs)
        counts = self._buckets.setdefault(key, collections.Counter())
        counts["compiles" if self._jit.cache_info().misses > before else "hits"] += 1
        return self._unpad(outs, np.asarray(out_sizes), self._out_trees[(statics, layout)])

    def _pad(self, dyn: dict, leaves: list) -> tuple[list, list[int], tuple, str]:
        """The padded leaves, the real sizes, which (leaf, axis) they belong to, and the
        bucket key text."""
        paths = self._leaf_args(dyn)
        padded, sizes, layout, key = [], [], [], []
        for k, (x, arg) in enumerate(zip(leaves, paths)):
            axes = self._axes_for(arg, x)
            if not axes:
                padded.append(x)
                continue
            a = np.asarray(x)
            widths = [(0, 0)] * a.ndim
            for ax, buckets in sorted(axes.items()):
                if not -a.ndim <= ax < a.ndim:
                    raise InvalidArgumentError(f"shape_buckets: axis {ax} is out of range for "
                                               f"argument {arg!r} of rank {a.ndim}")
                ax %= a.ndim
                n = a.shape[ax]
                b = bucket_size(n, buckets)
                widths[ax] = (0, b - n)
                sizes.append(n)
                layout.append((k, ax))
                key.append(f"{arg}[{ax}]={b}")
            padded.append(np.pad(a, widths) if any(w for _, w in widths) else a)
        return padded, sizes, tuple(layout), ", ".join(key) or "(no bucketed dimension)"

    def _leaf_args(self, dyn: dict) -> list[str]:
        out = []
        for name in sorted(dyn, key=lambda k: (type(k).__name__, k)):   # tree_flatten's order
            out += [name] * len(tree_flatten(dyn[name])[0])
        return out

    def _axes_for(self, arg: Any, x: Any) -> dict[int, Any]:
        """The bucketed axes of leaf ``x`` of argument ``arg`` (a name, or the position
        of a ``*args`` element); a spec may name a positional parameter by position."""
        if self._auto:
            ndim = np.ndim(x) if not isinstance(x, Array) else x.ndim
            if isinstance(x, (bool, int, float, complex)) or not ndim:
                return {}
            return {ax: "pow2" for ax in range(ndim)}
        if arg in self._spec:
            return self._spec[arg]
        names = list(self._sig.parameters)
        return self._spec.get(names.index(arg), {}) if arg in names else {}

    def _inner(self, dyn: dict, sizes: Array, statics: tuple, layout: tuple) -> tuple:
        self._tracing = True
        trace = core.current_trace()
        leaves, tree = tree_flatten(dyn)
        leaves = [to_array(x) if not hasattr(x, "__xlapy_array__") else x for x in leaves]
        for j, (k, ax) in enumerate(layout):
            leaves[k] = set_dimension_size(leaves[k], sizes[j], ax)
        values = tree_unflatten(tree, leaves)
        values.update(dict(statics))
        with _dynamic(trace):
            out = self._call_fn(values)
            out_leaves, out_tree = tree_flatten(out)
            arrays = [to_array(o) for o in out_leaves]
            dims = [get_dimension_size(o, d) for o in arrays for d in range(o.ndim)]
        from .. import numpy as xnp
        size_vec = xnp.stack(dims) if dims else xnp.zeros((0,), np.int32)
        self._out_trees[(statics, layout)] = out_tree
        self._tracing = False
        return arrays, size_vec

    @staticmethod
    def _unpad(outs: list, sizes: np.ndarray, out_tree: Any) -> Any:
        pos, result = 0, []
        for o in outs:
            want = tuple(int(s) for s in sizes[pos:pos + o.ndim])
            pos += o.ndim
            if want != tuple(o.shape):
                o = Array(np.ascontiguousarray(np.asarray(o)[tuple(slice(0, n) for n in want)]),
                          weak_type=o.weak_type)
            result.append(o)
        return tree_unflatten(out_tree, result)

    # ----- introspection
    def cache_info(self) -> Any:
        """The inner jit function's hits, misses and compile reasons."""
        return (self._exact if self._fallback else self._jit).cache_info()

    def bucket_info(self) -> dict[str, dict[str, int]]:
        """Per bucket (``"x[1]=128"``): how many calls compiled and how many hit."""
        return {k: {"compiles": c["compiles"], "hits": c["hits"]}
                for k, c in self._buckets.items()}

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """The padded program for these arguments (traced like a call, not run)."""
        statics, dyn = self._split(args, kwargs)
        padded, sizes, layout, _ = self._pad(dyn, tree_flatten(dyn)[0])
        return self._jit.lower(tree_unflatten(tree_flatten(dyn)[1], padded),
                               np.asarray(sizes, np.int32), statics=statics, layout=layout)


__all__ = ["BucketedFunction", "bucket_size", "set_dimension_size", "get_dimension_size",
           "dynamic_trace", "element_count"]
