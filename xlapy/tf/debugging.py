"""``tf.print`` and ``tf.debugging``: printing and run-time checks.

``tf.print`` prints when it runs: op by op at once; inside a compiled function
(``jit_compile=True``) each time the program reaches it, through an ordered host callback
(``xlapy.frontend.callbacks``; TF's XLA bridge cannot compile ``PrintV2`` at all).

The assertions check values when they run op by op and raise ``InvalidArgumentError``
(TF's error). Inside a compiled function their shape and dtype checks still happen while
tracing, but value checks are skipped: XLA cannot raise at run time, and TF's XLA
bridge compiles ``Assert`` to nothing as well.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from .. import numpy as xnp
from ..errors import InvalidArgumentError
from ..frontend.callbacks import host_print
from ..frontend.core import Array
from ..frontend.pytree import tree_flatten, tree_unflatten
from ..frontend.source_info import located
from ._common import tensor


def _format(x: Any, summarize: int | None) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, (Array, np.ndarray)) or hasattr(x, "__xlapy_array__"):
        v = np.asarray(x)
        edge = 3 if summarize is None else (sys.maxsize if summarize < 0 else summarize)
        threshold = sys.maxsize if edge == sys.maxsize else max(2 * edge, 1)
        return np.array2string(v, separator=" ", threshold=threshold, edgeitems=min(edge, 1000))
    if isinstance(x, (list, tuple)):
        parts = [_format(e, summarize) for e in x]
        return ("(" + ", ".join(parts) + ")") if isinstance(x, tuple) else \
            ("[" + ", ".join(parts) + "]")
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_format(v, summarize)}" for k, v in x.items()) + "}"
    return str(x)


def _writer(output_stream: Any) -> Callable[[str], None]:
    """A function writing text to ``output_stream`` when the print runs (``sys.stdout`` and
    ``sys.stderr`` are looked up then, so redirections made after tracing apply)."""
    if output_stream is None or output_stream is sys.stderr:
        return lambda text: sys.stderr.write(text)
    if output_stream is sys.stdout:
        return lambda text: sys.stdout.write(text)
    if isinstance(output_stream, str):
        if not output_stream.startswith("file://"):
            raise InvalidArgumentError(f"tf.print: output_stream {output_stream!r} is not a "
                                       "stream or a 'file://' path")
        path = output_stream[len("file://"):]

        def append(text: str) -> None:
            with open(path, "a") as f:
                f.write(text)
        return append
    if not callable(getattr(output_stream, "write", None)):
        raise InvalidArgumentError(f"tf.print: output_stream {output_stream!r} has no write "
                                   "method")
    return output_stream.write


def _is_tensor(x: Any) -> bool:
    return isinstance(x, (Array, np.ndarray)) or hasattr(x, "__xlapy_array__")


def print_(*inputs: Any, output_stream: Any = None, summarize: int | None = 3,
           sep: str = " ", end: str = "\n", name: str | None = None) -> None:
    """``tf.print``: print tensors (at most ``summarize`` entries per dimension's edges;
    -1 for all) and Python values to ``output_stream`` (``sys.stderr`` by default,
    ``sys.stdout``, a file object, or ``'file://path'`` to append to a file).

    Op by op it prints at once; in a compiled function it prints each time the program
    reaches it (a host callback, in program order)."""
    write = _writer(output_stream)
    leaves, tree = tree_flatten(inputs, is_leaf=_is_tensor)
    dynamic = [k for k, x in enumerate(leaves) if _is_tensor(x)]

    def render(arrays: list) -> str:
        values = list(leaves)
        for k, a in zip(dynamic, arrays):
            values[k] = a
        return sep.join(_format(x, summarize) for x in tree_unflatten(tree, values)) + end

    host_print("tf.print", render, [leaves[k] for k in dynamic], write, ordered=True)


def _eager_check(ok: Any, message: str | None, default: str, data: Any) -> None:
    """Raise when ``ok`` is concretely false; skip traced values (see the docstring)."""
    ok = tensor(ok)
    if ok.is_traced:
        return
    if not bool(np.all(np.asarray(ok))):
        shown = "" if data is None else " " + " ".join(_format(d, 3) for d in data)
        raise InvalidArgumentError(located(f"{message + ': ' if message else ''}{default}"
                                           f"{shown}"))


def _binary_assert(fn: Any, what: str) -> Any:
    def check(x: Any, y: Any, message: str | None = None, summarize: Any = None,
              name: str | None = None) -> None:
        a, b = tensor(x), tensor(y)
        try:
            xnp.broadcast_shapes(a.shape, b.shape)
        except InvalidArgumentError:
            raise InvalidArgumentError(located(f"{message + ': ' if message else ''}shapes "
                                               f"{a.shape} and {b.shape} are incompatible"))
        _eager_check(fn(a, b), message, f"condition x {what} y did not hold", (a, b))
    check.__name__ = f"assert_{fn.__name__}"
    check.__doc__ = f"Raise InvalidArgumentError unless ``x {what} y`` everywhere."
    return check


assert_equal = _binary_assert(xnp.equal, "==")
assert_none_equal = _binary_assert(xnp.not_equal, "!=")
assert_less = _binary_assert(xnp.less, "<")
assert_less_equal = _binary_assert(xnp.less_equal, "<=")
assert_greater = _binary_assert(xnp.greater, ">")
assert_greater_equal = _binary_assert(xnp.greater_equal, ">=")


def assert_positive(x: Any, message: str | None = None, summarize: Any = None,
                    name: str | None = None) -> None:
    t = tensor(x)
    _eager_check(xnp.greater(t, 0), message, "x > 0 did not hold", (t,))


def assert_non_negative(x: Any, message: str | None = None, summarize: Any = None,
                        name: str | None = None) -> None:
    t = tensor(x)
    _eager_check(xnp.greater_equal(t, 0), message, "x >= 0 did not hold", (t,))


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: str | None = None,
                summarize: Any = None, name: str | None = None) -> None:
    """``|x - y| <= atol + rtol * |y|`` everywhere (default tolerances 10 eps)."""
    a, b = tensor(x), tensor(y)
    eps = float(np.finfo(np.dtype(a.dtype) if a.dtype.kind == "f" else np.float32).eps)
    rt = 10 * eps if rtol is None else rtol
    at = 10 * eps if atol is None else atol
    _eager_check(xnp.less_equal(xnp.abs(a - b), at + rt * xnp.abs(b)), message,
                 "x and y are not near", (a, b))


def assert_rank(x: Any, rank: int, message: str | None = None, name: str | None = None) -> None:
    """The rank is static: checked while tracing too."""
    t = tensor(x)
    if t.ndim != int(rank):
        raise InvalidArgumentError(located(f"{message + ': ' if message else ''}tensor "
                                           f"{t.type_text()} must have rank {int(rank)}"))


def assert_type(tensor_: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> None:
    from ._common import tf_dtype
    t = tensor(tensor_)
    if t.dtype != tf_dtype(tf_type):
        raise InvalidArgumentError(located(f"{message + ': ' if message else ''}tensor "
                                           f"{t.type_text()} must have dtype {tf_type}"))


def check_numerics(tensor_: Any, message: str, name: str | None = None) -> Array:
    """``tensor_`` itself; op by op it raises if it holds a NaN or an infinity."""
    t = tensor(tensor_)
    _eager_check(xnp.all(xnp.isfinite(t)), message, "tensor had NaN or Inf values", None)
    return t


__all__ = ["print_", "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_non_negative",
           "assert_near", "assert_rank", "assert_type", "check_numerics"]
