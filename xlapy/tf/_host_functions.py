"""``tf.numpy_function`` and ``tf.py_function``: Python functions inside TF programs.

Op by op they call ``func`` at once. Inside a compiled function (``jit_compile=True``,
where TF's XLA bridge refuses them) they become host callbacks
(``xlapy.frontend.callbacks``): the compiled program calls ``func`` each time it reaches
it. ``numpy_function``'s ``func`` gets NumPy arrays, ``py_function``'s gets tensors; both
return values that are converted to ``Tout``'s dtypes, as TF converts them.

Result shapes must be known when compiling. ``Tout`` entries given as ``tf.TensorSpec``
with every dimension known fix them; for a plain dtype (or a spec with ``None`` dims)
``func`` is called once while tracing, on zeros of the inputs' shapes and dtypes, to learn
them -- that call's side effects happen too, so give full ``TensorSpec``s to avoid it.

``stateful=True`` (``numpy_function``'s default; ``py_function`` always is) keeps every
call, in program order, as ``io_callback`` does; ``stateful=False`` lets the compiler
drop a call whose results are unused. ``py_function`` is differentiable: its gradient
runs ``func`` again under a ``GradientTape`` on the host, as TF's ``EagerPyFunc``
gradient does; ``numpy_function`` has no gradient.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.autodiff import GradientTape
from ..frontend.callbacks import ShapeDtypeStruct, call_host_function, outside_traces, \
    pure_callback
from ..frontend.core import Array, current_trace
from ..frontend.source_info import located
from ._common import tensor, tf_dtype
from ._function import TensorSpec

log = logging.getLogger("xlapy.tf")


def _outputs(Tout: Any) -> tuple[list[tuple[np.dtype, tuple | None]], bool]:
    """Per result (dtype, shape or None when unknown), and whether ``Tout`` is one entry
    (the result is then one tensor, not a list)."""
    if Tout is None:
        return [], False
    single = not isinstance(Tout, (list, tuple))
    out = []
    for t in [Tout] if single else list(Tout):
        if isinstance(t, TensorSpec):
            known = t.shape is not None and all(d is not None for d in t.shape)
            out.append((t.dtype or np.dtype(np.float32), t.shape if known else None))
        else:
            out.append((tf_dtype(t), None))
    return out, single


def _host(api: str, func: Callable[..., Any], specs: list, single: bool,
          as_tensors: bool) -> Callable[..., list]:
    """``func`` on NumPy values, its results converted to ``Tout``'s dtypes."""
    def host(*values: np.ndarray) -> list:
        with outside_traces():
            args = [Array(np.array(v)) for v in values] if as_tensors else list(values)
            out = func(*args)
        outs = [] if out is None and not specs else [out] if single else list(out)
        if len(outs) != len(specs):
            raise InvalidArgumentError(f"{api}: func returned {len(outs)} values for "
                                       f"{len(specs)} entries of Tout")
        return [np.asarray(o, dtype=dt) for o, (dt, _) in zip(outs, specs)]
    host.__qualname__ = getattr(func, "__qualname__", type(func).__name__)
    return host


def _returning(host: Callable[..., list], values: list) -> Callable[..., list]:
    """A stand-in for ``host`` that returns the results of the call already made."""
    def replay(*args: Any) -> list:
        return values
    replay.__qualname__ = host.__qualname__
    return replay


def _py_function_vjp(func: Callable[..., Any], single: bool) -> Callable[..., tuple]:
    """The gradient of ``py_function``: ``func`` under a GradientTape, on the host."""
    def vjp(ct: list, *xs: Array) -> tuple:
        cts = list(ct)                          # one cotangent per entry of Tout

        def host_grad(*values: np.ndarray) -> list:
            ct_vals, x_vals = values[:len(cts)], values[len(cts):]
            with outside_traces():
                args = [Array(np.array(v)) for v in x_vals]
                with GradientTape() as tape:
                    tape.watch(args)
                    out = func(*args)
                outs = [out] if single else list(out)
                grads = tape.gradient(outs, args,
                                      output_gradients=[Array(np.array(c)) for c in ct_vals])
            return [np.zeros(v.shape, v.dtype) if g is None else np.asarray(g, v.dtype)
                    for g, v in zip(grads, x_vals)]
        grads = pure_callback(host_grad, [ShapeDtypeStruct(x.shape, x.dtype) for x in xs],
                              *cts, *xs)
        return tuple(g if x.dtype.kind in "fc" else None for g, x in zip(grads, xs))
    return vjp


def _call(api: str, func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool,
          as_tensors: bool) -> Any:
    if not callable(func):
        raise InvalidArgumentError(located(f"{api}: func must be callable, got "
                                           f"{type(func).__name__}"))
    inputs = [tensor(x) for x in (inp if isinstance(inp, (list, tuple)) else [inp])]
    specs, single = _outputs(Tout)
    host = _host(api, func, specs, single, as_tensors)
    call = host
    if any(shape is None for _, shape in specs):
        if current_trace() is not None:
            log.debug("%s: calling %s on zeros to learn its result shapes", api,
                      host.__qualname__)
            found = host(*[np.zeros(x.shape, x.dtype) for x in inputs])
        else:                                   # op by op: this call's results are kept
            found = host(*[np.asarray(x) for x in inputs])
            call = _returning(host, found)
        specs = [(dt, shape if shape is not None else found[k].shape)
                 for k, (dt, shape) in enumerate(specs)]
    results = [ShapeDtypeStruct(shape or (), dt) for dt, shape in specs]
    vjp = _py_function_vjp(func, single) if as_tensors else None
    outs = call_host_function(api, call, results, tuple(inputs), {},
                              effect=stateful, ordered=False, vjp=vjp,
                              op="io_callback" if stateful else "pure_callback")
    return outs[0] if single else list(outs)


def numpy_function(func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool = True,
                   name: str | None = None) -> Any:
    """``tf.numpy_function``: ``func`` on the NumPy values of ``inp``, its results as
    tensors of ``Tout`` (see the module docstring for compiled functions)."""
    return _call("tf.numpy_function", func, inp, Tout, stateful, as_tensors=False)


def py_function(func: Callable[..., Any], inp: Any, Tout: Any, name: str | None = None) -> Any:
    """``tf.py_function``: ``func`` on tensors (op by op), differentiable; in compiled
    code a host callback (see the module docstring)."""
    return _call("tf.py_function", func, inp, Tout, True, as_tensors=True)


__all__ = ["numpy_function", "py_function"]
