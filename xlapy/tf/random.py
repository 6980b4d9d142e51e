"""``tf.random``: TensorFlow's stateful random ops on ``xlapy.random``'s counter-based keys.

TF's random ops hide their state; xlapy's keys are explicit values. The bridge is a
:class:`Generator` (TF's ``tf.random.Generator``): its state is a threefry key held in a
non-trainable :class:`xlapy.Variable`. Each draw reads the key, splits it, stores one half
back and samples with the other. Because the key is a Variable, a compiled function that
draws numbers takes the key as a parameter and returns the new key through
``input_output_alias``: every call gives new numbers, eagerly and compiled alike.

The legacy ops (``tf.random.uniform``, ``normal``, ``truncated_normal``, ``shuffle``,
``categorical``, ``tf.nn.dropout``) follow TF's seed rules:

- ``tf.random.set_seed(s)`` makes the whole sequence reproducible and restarts it;
- an op-level ``seed=k`` gives that op its own generator, keyed by ``(global seed, k)``
  (TF's default global seed 87654321 when none was set): the same sequence on every run;
- with neither, the global generator starts from a nondeterministic seed.

The numbers are threefry's (JAX's), not TensorFlow's Philox: the same seed gives other
values than TF. The stateless ops (``stateless_uniform`` ...) map their ``seed=[a, b]``
straight to the key ``uint32[a, b]``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as xnp
from .. import random as xr
from ..errors import InvalidArgumentError
from ..frontend import dtypes as _dt
from ..frontend.core import Array
from ..frontend.variables import Variable
from ._common import static_ints, tensor, tf_dtype

DEFAULT_GLOBAL_SEED = 87654321

_STATE: dict[str, Any] = {"seed": None, "global": None, "op": {}}


def _key_data(a: int, b: int) -> np.ndarray:
    return np.array([a & 0xFFFFFFFF, b & 0xFFFFFFFF], np.uint32)


class Generator:
    """A random-number generator whose threefry key lives in a Variable (TF's
    ``tf.random.Generator``; see the module docstring)."""

    def __init__(self, key: Any, name: str = "generator") -> None:
        self.state = Variable(np.asarray(key, np.uint32), trainable=False,
                              name=f"tf_random/{name}")

    @classmethod
    def from_seed(cls, seed: int, alg: Any = None) -> "Generator":
        """A generator starting from ``seed`` (``alg`` must be None or threefry)."""
        if alg not in (None, "threefry", "auto_select"):
            raise InvalidArgumentError(f"tf.random.Generator.from_seed: argument alg={alg!r} "
                                       "is not supported by xlapy: keys are threefry's")
        return cls(_key_data(int(seed) >> 32, int(seed)))

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> "Generator":
        return cls.from_seed(int(np.random.SeedSequence().entropy) & (2 ** 63 - 1), alg)

    def reset_from_seed(self, seed: int) -> None:
        self.state.assign(_key_data(int(seed) >> 32, int(seed)))

    def next_key(self) -> Array:
        """A fresh key; the state advances (inside a compiled function too)."""
        keys = xr.split(self.state.read_value())
        self.state.assign(keys[0])
        return keys[1]

    def split(self, count: int = 1) -> list["Generator"]:
        """``count`` new independent generators (this one advances)."""
        keys = np.asarray(xr.split(self.next_key(), count))
        return [Generator(k) for k in keys]

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = np.float32,
                name: str | None = None) -> Array:
        return _uniform(self.next_key(), shape, minval, maxval, dtype)

    def normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32,
               name: str | None = None) -> Array:
        return _normal(self.next_key(), shape, mean, stddev, dtype)

    def truncated_normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                         dtype: Any = np.float32, name: str | None = None) -> Array:
        return _truncated(self.next_key(), shape, mean, stddev, dtype)


def _uniform(key: Array, shape: Any, minval: Any, maxval: Any, dtype: Any) -> Array:
    dt = tf_dtype(dtype)
    dims = static_ints(shape, "tf.random shape") if shape is not None else []
    if _dt.is_integer(dt):
        if maxval is None:
            raise InvalidArgumentError(f"tf.random.uniform: maxval is required for dtype {dt}")
        return xr.randint(key, dims, tensor(minval, dt), tensor(maxval, dt), dt)
    if not _dt.is_float(dt):
        raise InvalidArgumentError(f"tf.random.uniform: dtype {dt} is not supported")
    lo = tensor(minval, dt)
    hi = tensor(1.0 if maxval is None else maxval, dt)
    return xr.uniform(key, dims, dt, lo, hi)


def _normal(key: Array, shape: Any, mean: Any, stddev: Any, dtype: Any) -> Array:
    dt = tf_dtype(dtype)
    z = xr.normal(key, static_ints(shape, "tf.random shape"), dt)
    return z * tensor(stddev, dt) + tensor(mean, dt)


def _truncated(key: Array, shape: Any, mean: Any, stddev: Any, dtype: Any) -> Array:
    dt = tf_dtype(dtype)
    z = xr.truncated_normal(key, -2.0, 2.0, static_ints(shape, "tf.random shape"), dt)
    return z * tensor(stddev, dt) + tensor(mean, dt)


# ------------------------------------------------------------------ global seed handling
def set_seed(seed: int) -> None:
    """TF's global seed: restarts the global generator and every op-seeded one."""
    _STATE["seed"] = int(seed)
    _STATE["op"] = {}
    if _STATE["global"] is None:
        _STATE["global"] = Generator.from_seed(int(seed))
    else:
        _STATE["global"].reset_from_seed(int(seed))


def get_global_generator() -> Generator:
    """The generator of ops without an op seed (nondeterministic until ``set_seed``)."""
    if _STATE["global"] is None:
        seed = _STATE["seed"]
        _STATE["global"] = Generator.from_seed(seed) if seed is not None else \
            Generator.from_non_deterministic_state()
    return _STATE["global"]


def set_global_generator(generator: Generator) -> None:
    if not isinstance(generator, Generator):
        raise InvalidArgumentError("tf.random.set_global_generator needs a tf.random.Generator")
    _STATE["global"] = generator


def op_generator(seed: Any) -> Generator:
    """The generator behind an op with ``seed`` (None: the global one)."""
    if seed is None:
        return get_global_generator()
    k = int(seed)
    gen = _STATE["op"].get(k)
    if gen is None:
        g = _STATE["seed"] if _STATE["seed"] is not None else DEFAULT_GLOBAL_SEED
        gen = Generator(_key_data(g, k), name=f"op_seed_{k}")
        _STATE["op"][k] = gen
    return gen


# ------------------------------------------------------------------------- stateful ops
def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = np.float32,
            seed: Any = None, name: str | None = None) -> Array:
    """Uniform values in ``[minval, maxval)`` (``maxval`` defaults to 1 for floats and is
    required for integers)."""
    return _uniform(op_generator(seed).next_key(), shape, minval, maxval, dtype)


def normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32,
           seed: Any = None, name: str | None = None) -> Array:
    return _normal(op_generator(seed).next_key(), shape, mean, stddev, dtype)


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32,
                     seed: Any = None, name: str | None = None) -> Array:
    """Normal values redrawn beyond two standard deviations."""
    return _truncated(op_generator(seed).next_key(), shape, mean, stddev, dtype)


def shuffle(value: Any, seed: Any = None, name: str | None = None) -> Array:
    """``value`` with its first dimension randomly permuted."""
    return xr.permutation(op_generator(seed).next_key(), tensor(value), axis=0)


def categorical(logits: Any, num_samples: int, dtype: Any = None, seed: Any = None,
                name: str | None = None) -> Array:
    """``[batch, num_samples]`` class indices drawn from ``softmax(logits)`` per row."""
    lg = tensor(logits)
    if lg.ndim != 2:
        raise InvalidArgumentError(f"tf.random.categorical: logits must be [batch, classes], "
                                   f"got {lg.type_text()}")
    n = int(num_samples)
    out = xr.categorical(op_generator(seed).next_key(), lg, axis=-1, shape=(n, lg.shape[0]))
    return xnp.astype(xnp.transpose(out), tf_dtype(dtype or np.int64))


# ------------------------------------------------------------------------ stateless ops
def _stateless_key(seed: Any) -> Array:
    s = tensor(seed)
    if s.shape != (2,):
        raise InvalidArgumentError(f"tf.random.stateless_*: seed must have shape [2], got "
                                   f"{s.type_text()}")
    return xnp.astype(s, np.uint32)


def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None,
                      dtype: Any = np.float32, name: str | None = None) -> Array:
    return _uniform(_stateless_key(seed), shape, minval, maxval, dtype)


def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = np.float32, name: str | None = None) -> Array:
    return _normal(_stateless_key(seed), shape, mean, stddev, dtype)


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = np.float32, name: str | None = None) -> Array:
    return _truncated(_stateless_key(seed), shape, mean, stddev, dtype)


__all__ = ["Generator", "set_seed", "get_global_generator", "set_global_generator",
           "uniform", "normal", "truncated_normal", "shuffle", "categorical",
           "stateless_uniform", "stateless_normal", "stateless_truncated_normal"]
