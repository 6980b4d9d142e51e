"""Weight initializers (Keras's formulas), computed eagerly with NumPy.

An initializer is called as ``init(shape, dtype)`` and returns a NumPy array. With a
``seed`` it returns the same values on every call (Keras 3's rule); without one it
draws a fresh seed from the global generator (``xlapy.keras.utils.set_random_seed``).

Variance scaling (Glorot, He, LeCun) uses Keras's fans: for a 2-D kernel ``(in, out)``
``fan_in = in`` and ``fan_out = out``; for a convolution kernel ``(kh, kw, in, out)`` both
are multiplied by the receptive field ``kh * kw``. The truncated normal is cut at two
standard deviations and rescaled by ``0.87962566103423978`` so that the truncated
distribution has the requested variance.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from . import backend


def compute_fans(shape: Sequence[int]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of this shape (Keras's rule)."""
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: ``__call__(shape, dtype=None) -> np.ndarray``."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed if self.seed is not None else backend.draw_seed())

    def __call__(self, shape: Sequence[int], dtype: Any = None) -> np.ndarray:
        dtype = np.dtype(dtype or backend.floatx())
        return np.asarray(self.generate(tuple(int(s) for s in shape), self._rng()), dtype)

    def generate(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        raise InvalidArgumentError(f"{type(self).__name__} does not define generate()")

    def get_config(self) -> dict:
        return {"seed": self.seed}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Every element is ``value``."""

    def __init__(self, value: float = 0.0) -> None:
        super().__init__(None)
        self.value = value

    def generate(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        return np.full(shape, self.value)

    def get_config(self) -> dict:
        return {"value": self.value}


class Zeros(Constant):
    def __init__(self) -> None:
        super().__init__(0.0)

    def get_config(self) -> dict:
        return {}


class Ones(Constant):
    def __init__(self) -> None:
        super().__init__(1.0)

    def get_config(self) -> dict:
        return {}


def _truncated_normal(rng: np.random.Generator, shape: tuple[int, ...], mean: float,
                      stddev: float) -> np.ndarray:
    """Normal samples redrawn until they lie within two standard deviations."""
    out = rng.standard_normal(shape)
    bad = np.abs(out) > 2.0
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2.0
    return mean + stddev * out


class RandomNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def generate(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        return rng.normal(self.mean, self.stddev, shape)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal within two standard deviations of the mean (values outside are redrawn)."""

    def generate(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        return _truncated_normal(rng, shape, self.mean, self.stddev)


class RandomUniform(Initializer):
    def __init__(self, minval: float = -0.05, maxval: float = 0.05,
                 seed: int | None = None) -> None:
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def generate(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(self.minval, self.maxval, shape)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class VarianceScaling(Initializer):
    """Samples with variance ``scale / n`` where ``n`` is the fan picked by ``mode``."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None) -> None:
        super().__init__(seed)
        if scale <= 0:
            raise InvalidArgumentError(f"VarianceScaling: scale must be positive, got {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise InvalidArgumentError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or "
                                       f"'fan_avg', got {mode!r}")
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise InvalidArgumentError(
                "VarianceScaling: distribution must be 'truncated_normal', "
                f"'untruncated_normal' or 'uniform', got {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def generate(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return _truncated_normal(rng, shape, 0.0, math.sqrt(scale) / 0.87962566103423978)
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, math.sqrt(scale), shape)
        limit = math.sqrt(3.0 * scale)
        return rng.uniform(-limit, limit, shape)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


def _preset(name: str, scale: float, mode: str, distribution: str, doc: str) -> type:
    def __init__(self: VarianceScaling, seed: int | None = None) -> None:
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self: VarianceScaling) -> dict:
        return {"seed": self.seed}
    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": doc})


GlorotUniform = _preset("GlorotUniform", 1.0, "fan_avg", "uniform",
                        "Uniform in ``±sqrt(6 / (fan_in + fan_out))``.")
GlorotNormal = _preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal",
                       "Truncated normal with variance ``2 / (fan_in + fan_out)``.")
HeUniform = _preset("HeUniform", 2.0, "fan_in", "uniform",
                    "Uniform in ``±sqrt(6 / fan_in)``.")
HeNormal = _preset("HeNormal", 2.0, "fan_in", "truncated_normal",
                   "Truncated normal with variance ``2 / fan_in``.")
LecunUniform = _preset("LecunUniform", 1.0, "fan_in", "uniform",
                       "Uniform in ``±sqrt(3 / fan_in)``.")
LecunNormal = _preset("LecunNormal", 1.0, "fan_in", "truncated_normal",
                      "Truncated normal with variance ``1 / fan_in``.")

# Keras's lower-case aliases of the classes (``initializers.glorot_uniform(seed=1)``).
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling = VarianceScaling
glorot_uniform, glorot_normal, he_uniform, he_normal = GlorotUniform, GlorotNormal, HeUniform, \
    HeNormal
lecun_uniform, lecun_normal = LecunUniform, LecunNormal

_BY_NAME: dict[str, Callable[[], Initializer]] = {
    "zeros": Zeros, "ones": Ones, "constant": Constant,
    "random_normal": RandomNormal, "normal": RandomNormal,
    "random_uniform": RandomUniform, "uniform": RandomUniform,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal,
}


def get(identifier: Any) -> Callable[..., np.ndarray]:
    """An initializer from a name (``'glorot_uniform'``), an instance or a callable."""
    if isinstance(identifier, Initializer) or (callable(identifier)
                                               and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, str):
        key = backend.snake_case(identifier) if identifier[:1].isupper() else identifier
        if key in _BY_NAME:
            return _BY_NAME[key]()
    raise InvalidArgumentError(f"unknown initializer {identifier!r}; expected one of "
                               f"{sorted(_BY_NAME)}, an Initializer or a callable")


__all__ = ["Initializer", "Constant", "Zeros", "Ones", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeUniform",
           "HeNormal", "LecunUniform", "LecunNormal", "compute_fans", "get"]
