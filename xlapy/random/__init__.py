"""``xlapy.random``: counter-based random numbers, bit-compatible with ``jax.random``.

``import xlapy.random as xr``::

    key = xr.key(0)                      # uint32[2]
    key, sub = xr.split(key)
    x = xr.normal(sub, (3, 4))

Design (JAX's): a *key* is an explicit value, never hidden state; ``split`` and
``fold_in`` derive new keys; a sampler turns a key into values deterministically, so the
same key gives the same numbers eagerly and under ``xlapy.jit`` (where keys and seeds
may be traced; shapes are static). The generator is Threefry-2x32 (see ``_threefry``),
written with ``xlapy.lax`` integer ops, so it compiles to plain HLO on any backend.

Compatibility with JAX 0.10.2 (default configuration):

- ``jax_threefry_partitionable=True`` (the default) and x64 off: seeds keep their low 32
  bits, ``bits`` gives at most 32-bit values, 64-bit dtypes are canonicalized to 32 bits;
- keys are raw ``uint32[2]`` arrays (JAX's legacy ``PRNGKey`` form); typed key arrays are
  not modelled: ``key(seed)`` equals ``PRNGKey(seed)`` and ``key_data`` is the identity;
- samplers take one key (no batched keys);
- ``default_prng_impl`` is ``threefry2x32``; the ``rbg`` and ``unsafe_rbg`` generators and
  ``jax_random_seed_offset`` are not modelled;
- bit-exactness: keys, ``bits``, ``uniform`` on ``[0, 1)``, ``bernoulli``, ``randint``,
  ``permutation``, ``shuffle`` and ``choice`` without ``p`` use only integer, bit-cast
  and exactly rounded float ops, so they give JAX's bits on any backend that implements
  HLO exactly (tested on the interpreter). The float samplers build the same HLO as JAX
  (compiled by the real XLA:CPU it gives JAX's bits, tested), but JAX's values also
  depend on XLA:CPU's ``log``/``log1p``/``erf`` approximations and on its contraction of
  ``a * b + c`` into a fused multiply-add, while xlapy's interpreter rounds every op
  exactly: ``normal`` (f32), ``truncated_normal``, ``gumbel``, ``exponential``,
  ``laplace``, ``logistic`` and ``uniform`` with other bounds differ from JAX by about one
  f32 ulp in a fraction of the elements. ``categorical`` and ``choice`` with ``p`` return
  integers computed from such floats: equal to JAX's in every tested case, though a
  last-ulp difference could flip a near tie.
"""
from __future__ import annotations

from ._discrete import categorical, choice, permutation, randint, shuffle
from ._distributions import (bernoulli, exponential, gumbel, laplace, logistic, normal,
                             truncated_normal, uniform)
from ._keys import PRNGKey, bits, fold_in, key, key_data, split, wrap_key_data
from ._threefry import threefry2x32
from ._gamma import (ball, beta, chisquare, dirichlet, f, gamma, generalized_normal, loggamma,
                     t)
from ._more import (binomial, cauchy, clone, double_sided_maxwell, geometric, key_dtype,
                    key_impl, lognormal, maxwell, multinomial, multivariate_normal, orthogonal,
                    pareto, poisson, rademacher, rayleigh, triangular, wald, weibull_min)


def default_prng_impl() -> str:
    """The generator behind every key: ``"threefry2x32"``."""
    return "threefry2x32"


__all__ = ["key", "PRNGKey", "split", "fold_in", "bits", "key_data", "wrap_key_data",
           "uniform", "normal", "truncated_normal", "bernoulli", "exponential", "laplace",
           "logistic", "gumbel", "randint", "categorical", "permutation", "shuffle", "choice",
           "threefry2x32", "default_prng_impl", "gamma", "loggamma", "beta", "dirichlet",
           "chisquare", "f", "t", "generalized_normal", "ball", "poisson", "binomial",
           "multinomial", "multivariate_normal", "cauchy", "pareto", "rademacher", "maxwell",
           "double_sided_maxwell", "weibull_min", "orthogonal", "rayleigh", "wald",
           "geometric", "triangular", "lognormal", "clone", "key_impl", "key_dtype"]
