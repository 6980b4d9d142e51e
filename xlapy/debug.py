"""``xlapy.debug``: printing and inspecting values from inside compiled code (``jax.debug``).

``xlapy.debug.print("x = {x}", x=x)`` formats with ``str.format`` when the program runs
and writes the line to ``sys.stdout``: inside ``jit`` (a loop body included, once per
iteration, in order) through a host callback (``xlapy.frontend.callbacks``), and at once
outside it. ``xlapy.debug.callback(fn, *args)`` calls ``fn`` on the arguments' NumPy
values the same way, for its side effects.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import InvalidArgumentError
from .frontend.callbacks import call_host_function, host_print
from .frontend.core import Array
from .frontend.pytree import tree_flatten, tree_unflatten


def _is_array(x: Any) -> bool:
    return isinstance(x, (Array, np.ndarray, np.generic)) or hasattr(x, "__xlapy_array__")


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` when the program runs (``jax.debug.print``).

    Array leaves of ``args``/``kwargs`` are passed to the host as NumPy arrays; other
    leaves (strings, Python numbers) are formatted as given. ``ordered=True`` threads a
    token through the prints of a computation (``jax.debug.print(..., ordered=True)``);
    prints keep program order either way."""
    if not isinstance(fmt, str):
        raise InvalidArgumentError(f"xlapy.debug.print: fmt must be a str, got "
                                   f"{type(fmt).__name__}")
    leaves, tree = tree_flatten((args, kwargs))
    dynamic = [k for k, x in enumerate(leaves) if _is_array(x)]

    def render(arrays: list[np.ndarray]) -> str:
        values = list(leaves)
        for k, a in zip(dynamic, arrays):
            values[k] = a
        a, kw = tree_unflatten(tree, values)
        return fmt.format(*a, **kw) + "\n"
    host_print("debug.print", render, [leaves[k] for k in dynamic], ordered=ordered)


def callback(fn: Callable[..., Any], *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Call ``fn(*args, **kwargs)`` for its side effects when the program runs
    (``jax.debug.callback``); its return value is ignored."""
    def run(*a: Any, **kw: Any) -> tuple:
        fn(*a, **kw)
        return ()
    run.__qualname__ = getattr(fn, "__qualname__", "callback")
    call_host_function("debug.callback", run, (), args, kwargs, effect=True, ordered=ordered,
                       copy_args=True)


__all__ = ["print", "callback"]
