"""TensorFlow-style ``function(fn, jit_compile=...)`` and the process-wide auto-jit setting.

``jit_compile=True`` is ``jit`` (must-compile semantics), ``False`` runs op by op, and
``None`` follows :func:`set_auto_jit` (TensorFlow's ``tf.config.optimizer.set_jit``): op by
op, or, when it is True, *soft* compilation that compiles each signature it can and runs
the others op by op (:class:`EagerFunction`).
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from ..config import tf_xla_flags
from ..errors import InvalidArgumentError, UnimplementedError
from . import core
from .jit import CacheInfo, JitFunction, _aval_text, _Key

log = logging.getLogger("xlapy.jit")

_AUTO_JIT: list[bool | None] = [None]


def set_auto_jit(enabled: bool | None) -> None:
    """The process-wide choice for code that did not say whether to compile (TensorFlow's
    ``tf.config.optimizer.set_jit``): ``True`` compiles, ``False`` runs op by op, ``None``
    (the initial value) leaves each API its own default. Keras ``compile(jit_compile=None)``
    follows it."""
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"set_auto_jit takes True, False or None, got {enabled!r}")
    _AUTO_JIT[0] = enabled


def auto_jit() -> bool | None:
    """The value last given to :func:`set_auto_jit` (None when never set or reset), unless
    ``TF_XLA_FLAGS`` decides, as it does in TensorFlow: ``--tf_xla_auto_jit=-1`` is False,
    ``--tf_xla_auto_jit=2`` (or ``1`` with ``--tf_xla_cpu_global_jit``, xlapy running on
    the CPU) is True."""
    flags = tf_xla_flags()
    if flags.auto_jit < 0:
        return False
    if flags.auto_jit >= 2 or (flags.auto_jit == 1 and flags.cpu_global_jit):
        return True
    return _AUTO_JIT[0]


class EagerFunction:
    """``function(jit_compile=False)``: runs op by op; ``get_compiler_ir`` still traces.

    ``function(jit_compile=None)`` makes one whose mode follows :func:`auto_jit` at call
    time (``soft=None``): op by op unless ``set_auto_jit(True)`` is in effect, and then
    *soft* compilation, TensorFlow's auto-clustering reduced to whole functions: each
    argument signature is compiled like ``jit_compile=True`` when it can be; when tracing
    it fails with a must-compile error (an op that cannot be compiled, Python control
    flow on a traced value), that signature runs op by op from then on and the reason is
    logged once at INFO. ``soft=True`` compiles softly whatever the setting.
    ``cache_info()`` counts the compiled calls; ``fallbacks`` maps the signatures that
    run op by op to their reasons.
    """

    def __init__(self, fn: Callable[..., Any], soft: bool | None = False,
                 **jit_kwargs: Any) -> None:
        self.fn = fn
        self._soft = soft
        self._jit = JitFunction(fn, **jit_kwargs)
        self._eager_keys: dict[_Key, str] = {}
        self.fallbacks: dict[str, str] = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        soft = auto_jit() is True if self._soft is None else self._soft
        if not soft or core._TRACE_STACK.items:
            return self.fn(*args, **kwargs)
        return self._call_soft(args, kwargs)

    def _signature(self, args: tuple, kwargs: dict) -> tuple[_Key, str] | None:
        """This call's cache key and its text, None when the arguments have no key."""
        try:
            a = self._jit._split(args, kwargs)
            key = self._jit._key(a)
        except InvalidArgumentError:
            return None
        return key, ", ".join(f"{p}: {_aval_text(v)}" for p, v in zip(a.paths, key.avals))

    def _call_soft(self, args: tuple, kwargs: dict) -> Any:
        if self._eager_keys:
            sig = self._signature(args, kwargs)
            if sig is not None and sig[0] in self._eager_keys:
                return self.fn(*args, **kwargs)
        try:
            return self._jit(*args, **kwargs)
        except (InvalidArgumentError, UnimplementedError) as e:
            sig = self._signature(args, kwargs)
            if sig is not None and sig[0] in self._jit._cache:
                raise                       # compiled: the error is the program's own
            reason = str(e)
            text = sig[1] if sig is not None else "arguments without an array signature"
            if sig is not None:
                self._eager_keys[sig[0]] = reason
            if text not in self.fallbacks:
                self.fallbacks[text] = reason
                log.info("function %r runs op by op for (%s) (auto-jit): it cannot be "
                         "compiled: %s", self._jit.__name__, text, reason)
        return self.fn(*args, **kwargs)

    def cache_info(self) -> CacheInfo:
        """The compiled calls' hits, misses and compile records (soft mode only)."""
        return self._jit.cache_info()

    def get_compiler_ir(self, *args: Any, **kwargs: Any) -> Callable[..., str]:
        return self._jit.get_compiler_ir(*args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """The traced module for these arguments (``JitFunction.lower``)."""
        return self._jit.lower(*args, **kwargs)

    experimental_get_compiler_ir = get_compiler_ir


def function(fn: Callable[..., Any] | None = None, *, jit_compile: bool | None = None,
             **jit_kwargs: Any) -> Any:
    """TensorFlow-style decorator: ``jit_compile=True`` compiles with must-compile (jit)
    semantics; ``False`` runs eagerly op by op; ``None`` runs op by op unless
    :func:`set_auto_jit` (``tf.config.optimizer.set_jit``) is True at call time, and then
    compiles every signature that can be compiled and runs the others op by op (see
    :class:`EagerFunction`)."""

    def wrap(f: Callable[..., Any]) -> Any:
        if jit_compile:
            return JitFunction(f, **jit_kwargs)
        return EagerFunction(f, soft=None if jit_compile is None else False, **jit_kwargs)
    return wrap if fn is None else wrap(fn)


__all__ = ["function", "EagerFunction", "set_auto_jit", "auto_jit"]
