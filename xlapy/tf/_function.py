"""``tf.function``, ``tf.TensorSpec`` and TF's functional control flow.

``tf.function`` maps onto xlapy's functions:

- ``jit_compile=True``: must-compile semantics — the whole function is one XLA program
  per argument signature (shapes, dtypes), or ``InvalidArgumentError`` names the op and
  the user's line; ``f.experimental_get_compiler_ir(*args)(stage=...)`` and
  ``f.cache_info()`` work;
- ``jit_compile=False``: a graph, recorded once per signature and replayed
  (``graph_function``);
- ``jit_compile=None`` (the default): the same, and under
  ``tf.config.optimizer.set_jit(True)`` or ``TF_XLA_FLAGS=--tf_xla_auto_jit=...`` each
  signature is compiled whole when it can be and auto-clustered (TF's
  mark-for-compilation rules) when it cannot.

With ``autograph=True`` (the default) Python ``if``/``while`` statements are converted as
TF's AutoGraph converts them (``autograph.py``): on a tensor condition they become
``tf.cond`` / ``tf.while_loop``, so they compile.

On a method, each instance gets its own function (``self`` is bound, not an argument), as
in TF. What differs from TF: a graph whose body has Python control flow that AutoGraph
left on a tensor, or ``tf.cond``/``tf.while_loop`` on a tensor, is not recorded: that
signature runs op by op on every call (its Python side effects repeat). String and enum
arguments are static (one program per value, as TF retraces per value); Python numbers
are traced as weakly typed scalars (TF retraces per value) and other Python objects must be
named static. With
``jit_compile=True``, ``reduce_retracing`` / ``experimental_relax_shapes`` compile one
program per *bucket* of shapes (every dimension padded to the next power of two, the
padding masked: ``xlapy.frontend.buckets``, ``shape_buckets="auto"``), falling back to one
program per shape when the function has an op that cannot run on padded dimensions;
``f.bucket_info()`` counts compiles per bucket. ``input_signature`` is checked on every
call (a mismatch is an error, as in TF) but programs are still compiled per concrete
shape.
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import control_flow as _cf
from ..frontend.jit import jit as _jit
from . import autograph as _autograph
from ..frontend.tf_function import function as _xla_function
from ..frontend.pytree import tree_flatten
from ._common import tensor, tf_dtype, unsupported


class TensorSpec:
    """``tf.TensorSpec(shape, dtype=tf.float32, name=None)``: ``None`` dims match any size."""

    def __init__(self, shape: Any, dtype: Any = np.float32, name: str | None = None) -> None:
        self.shape = None if shape is None else tuple(None if d is None else int(d)
                                                      for d in shape)
        self.dtype = tf_dtype(dtype)
        self.name = name

    def is_compatible_with(self, value: Any) -> bool:
        x = tensor(value)
        if self.dtype is not None and x.dtype != self.dtype:
            return False
        if self.shape is None:
            return True
        return len(self.shape) == x.ndim and all(
            d is None or d == s for d, s in zip(self.shape, x.shape))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype}, name={self.name!r})"


def _checked(fn: Callable[..., Any], signature: Sequence[Any]) -> Callable[..., Any]:
    specs, spec_tree = tree_flatten(list(signature))

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise InvalidArgumentError(f"{fn.__name__}: a function with an input_signature "
                                       "takes positional arguments only")
        leaves, tree = tree_flatten(list(args))
        if tree != spec_tree:
            raise InvalidArgumentError(f"{fn.__name__}: arguments do not match the "
                                       f"input_signature {list(signature)}")
        for i, (x, spec) in enumerate(zip(leaves, specs)):
            if isinstance(spec, TensorSpec) and not spec.is_compatible_with(x):
                t = tensor(x)
                raise InvalidArgumentError(f"{fn.__name__}: argument {i} {t.type_text()} is "
                                           f"not compatible with {spec}")
        return fn(*args)
    return call


def function(func: Callable[..., Any] | None = None, input_signature: Any = None,
             autograph: bool = True, jit_compile: bool | None = None,
             reduce_retracing: bool = False, experimental_implements: Any = None,
             experimental_autograph_options: Any = None, experimental_attributes: Any = None,
             experimental_relax_shapes: Any = None, experimental_compile: Any = None,
             experimental_follow_type_hints: Any = None) -> Any:
    """TensorFlow's ``tf.function`` (see the module docstring); a decorator with or without
    arguments, or ``tf.function(f, jit_compile=True)``."""
    for arg, value in (("experimental_implements", experimental_implements),
                       ("experimental_autograph_options", experimental_autograph_options),
                       ("experimental_attributes", experimental_attributes),
                       ("experimental_follow_type_hints", experimental_follow_type_hints)):
        if value is not None:
            raise unsupported("tf.function", arg, value, "xlapy does not build TF graphs")
    if experimental_compile is not None:          # TF 2.4's name of jit_compile
        if jit_compile is not None and bool(jit_compile) != bool(experimental_compile):
            raise InvalidArgumentError("tf.function: jit_compile and experimental_compile "
                                       "disagree")
        jit_compile = experimental_compile
    if jit_compile is not None and not isinstance(jit_compile, (bool, np.bool_)):
        raise InvalidArgumentError(f"tf.function: jit_compile must be True, False or None, "
                                   f"got {jit_compile!r}")

    mode = None if jit_compile is None else bool(jit_compile)

    relax = bool(reduce_retracing or experimental_relax_shapes)

    def make(f: Callable[..., Any]) -> Any:
        converted = _autograph.convert(f) if autograph else None
        body = converted or f
        body = body if input_signature is None else _checked(body, input_signature)
        if mode and relax:
            return _jit(body, shape_buckets="auto")
        if mode:
            return _xla_function(body, jit_compile=True)
        from .graph_function import GraphFunction
        return GraphFunction(body, autocluster=None if mode is None else False)

    def wrap(f: Callable[..., Any]) -> "Function":
        return Function(f, make, input_signature)
    return wrap if func is None else wrap(func)


class Function:
    """What ``tf.function`` returns: the xlapy function (``JitFunction`` or
    ``EagerFunction``, whose attributes — ``cache_info``, ``experimental_get_compiler_ir``,
    ``fallbacks`` — it forwards), bound per instance when it decorates a method (each
    instance gets its own compiled function, as in TF)."""

    def __init__(self, fn: Callable[..., Any], make: Callable[[Callable[..., Any]], Any],
                 input_signature: Any = None) -> None:
        self.python_function = fn
        self.input_signature = None if input_signature is None else tuple(input_signature)
        self._make = make
        self._inner = make(fn)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        cached = getattr(obj, "__dict__", {}).get(self.__name__)
        if isinstance(cached, Function):       # implicit calls (obj(x)) skip obj.__dict__
            return cached
        bound = Function(types.MethodType(self.python_function, obj), self._make,
                         self.input_signature)
        try:                       # cache on the instance: later lookups find it first
            obj.__dict__[self.__name__] = bound
        except (AttributeError, TypeError):
            pass
        return bound

    def export_aot(self, *example_args: Any, name: str = "model", out_dir: str = ".",
                   **options: Any) -> Any:
        """Compile this function ahead of time into ``name.o`` + ``name.h``
        (:func:`xlapy.aot.compile`; ``options``: ``blas``, ``threads``, ``shared``, ...):
        traced at ``example_args``, or at the ``input_signature`` when none are given
        (every dim must be known). Variables it reads are frozen as constants. Returns
        the :class:`~xlapy.aot.AotResult`."""
        from .. import aot
        return aot.compile(self, *example_args, name=name, out_dir=out_dir, **options)

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("_inner")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    def __repr__(self) -> str:
        return f"<tf.function {self.__name__}: {type(self._inner).__name__}>"


# ---------------------------------------------------------------------- control flow
def cond(pred: Any, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, name: str | None = None) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``; compiled, an HLO ``conditional``."""
    if true_fn is None or false_fn is None:
        raise InvalidArgumentError("tf.cond needs true_fn and false_fn")
    return _cf.cond(tensor(pred), true_fn, false_fn)


def switch_case(branch_index: Any, branch_fns: Any, default: Callable[[], Any] | None = None,
                name: str | None = None) -> Any:
    """``branch_fns[branch_index]()`` (a list, or a dict with keys 0..n-1); an index out
    of range runs ``default`` (the last branch when None, as TF)."""
    if isinstance(branch_fns, dict):
        keys = sorted(branch_fns)
        if keys != list(range(len(keys))):
            raise InvalidArgumentError(f"tf.switch_case: branch keys must be 0..n-1, got {keys}")
        fns = [branch_fns[k] for k in keys]
    else:
        fns = [f[1] if isinstance(f, tuple) else f for f in branch_fns]
    if default is not None:
        idx = tensor(branch_index)
        n = len(fns)
        inside = (idx >= 0) & (idx < n)
        idx = _cf.cond(inside, lambda: idx, lambda: tensor(n, idx.dtype))
        fns = fns + [default]
        return _cf.switch(idx, fns)
    return _cf.switch(tensor(branch_index), fns)


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None) -> Any:
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; compiled, an HLO
    ``while``. ``loop_vars`` is a tuple/list (unpacked into the calls) or one value."""
    if shape_invariants is not None:
        raise unsupported("tf.while_loop", "shape_invariants", shape_invariants,
                          "loop variables keep their shapes in XLA")
    packed = isinstance(loop_vars, (list, tuple))
    kind = type(loop_vars) if packed else None

    def call(fn: Callable[..., Any], v: Any) -> Any:
        return fn(*v) if packed else fn(v)

    def norm(v: Any) -> Any:
        return tuple(v) if packed else v

    init = norm(loop_vars)
    if maximum_iterations is None:
        out = _cf.while_loop(lambda v: tensor(call(cond, v)), lambda v: norm(call(body, v)),
                             init)
    else:
        limit = tensor(maximum_iterations, np.int32)
        _, out = _cf.while_loop(
            lambda s: tensor(call(cond, s[1])) & (s[0] < limit),
            lambda s: (s[0] + 1, norm(call(body, s[1]))), (tensor(0, np.int32), init))
    return kind(out) if kind is list else out


__all__ = ["function", "Function", "TensorSpec", "cond", "switch_case", "while_loop"]
