"""Three small primitives: ``reduce_precision`` (elementwise family), ``optimization_barrier``
(control flow family) and ``rng_bit_generator`` (rng family).

- ``reduce_precision(x, exponent_bits, mantissa_bits)``: HLO ``reduce-precision``; its
  gradient passes the cotangent through the same rounding (as JAX's jvp does);
- ``optimization_barrier(*xs)``: HLO ``opt-barrier`` over a tuple: the values unchanged,
  but no computation moves across it; its gradient is a barrier over the cotangents;
- ``rng_bit_generator(key, shape, dtype, algorithm)``: HLO ``rng-bit-generator``. The key is
  JAX's ``u32[4]`` (bit-cast to the op's ``u64[2]`` state inside the program) and so is the
  new key returned; not differentiable.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from . import dtypes
from .core import Array, LoweringContext, bind, primitive, to_array

I = HloInstruction

reduce_precision_p = primitive("reduce_precision")


@reduce_precision_p.def_lowering
def _rp_lower(ctx: LoweringContext, x: I, *, exponent_bits: int, mantissa_bits: int) -> I:
    return ctx.b.reduce_precision(x, exponent_bits, mantissa_bits)


reduce_precision_p.def_vjp(lambda g, ans, x, **p: (bind(reduce_precision_p, g, **p),))
reduce_precision_p.def_batching(lambda args, dims, **p: (bind(reduce_precision_p, *args, **p),
                                                         dims[0]))


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Array:
    """Round floating ``operand`` to a format with these exponent and mantissa bits (the
    dtype is kept): ``reduce_precision(x, 8, 7)`` rounds to bfloat16's precision."""
    x = to_array(operand)
    if not dtypes.is_float(x.dtype):
        raise InvalidArgumentError(f"lax.reduce_precision takes a floating operand, got "
                                   f"{x.type_text()}")
    e, m = int(exponent_bits), int(mantissa_bits)
    if e < 1 or m < 0:
        raise InvalidArgumentError(f"lax.reduce_precision: exponent_bits >= 1 and "
                                   f"mantissa_bits >= 0, got {e}, {m}")
    return bind(reduce_precision_p, x, exponent_bits=e, mantissa_bits=m)


optimization_barrier_p = primitive("optimization_barrier", multiple_results=True)


@optimization_barrier_p.def_lowering
def _ob_lower(ctx: LoweringContext, *xs: I) -> list[I]:
    t = ctx.b.tuple(list(xs))
    ob = ctx.b.opt_barrier(t)
    return [ctx.b.get_tuple_element(ob, i) for i in range(len(xs))]


optimization_barrier_p.def_vjp(lambda cts, outs, *xs: tuple(bind(optimization_barrier_p, *cts)))
optimization_barrier_p.def_batching(
    lambda args, dims: (bind(optimization_barrier_p, *args), list(dims)))


def optimization_barrier(operand: Any) -> Any:
    """``operand`` (an Array or a tuple/list of them) unchanged, with a barrier that keeps
    the compiler from moving computation across it."""
    single = not isinstance(operand, (tuple, list))
    xs = [to_array(operand)] if single else [to_array(o) for o in operand]
    outs = bind(optimization_barrier_p, *xs)
    return outs[0] if single else type(operand)(outs)


rng_bit_generator_p = primitive("rng_bit_generator", multiple_results=True,
                                weak=lambda args, params: [False, False])


@rng_bit_generator_p.def_lowering
def _rbg_lower(ctx: LoweringContext, key: I, *, shape: tuple[int, ...], dtype: np.dtype,
               algorithm: str) -> list[I]:
    b = ctx.b
    state = b.bitcast_convert(b.reshape(key, (2, 2)), as_element_type(np.uint64))
    out = b.rng_bit_generator(algorithm, state, Shape.array(as_element_type(dtype), shape))
    new_state = b.get_tuple_element(out, 0)
    new_key = b.reshape(b.bitcast_convert(new_state, as_element_type(np.uint32)), (4,))
    return [new_key, b.get_tuple_element(out, 1)]



def _rbg_batching(args: Sequence[Array], dims: Sequence[int | None], **params: Any) -> tuple:
    """A batch of keys draws each example's bits from its own key (one generator per key,
    stacked), so ``vmap`` gives the same bits as calling per example."""
    from . import lax                        # the bind wrappers sit beside this module
    (key,), (d,) = args, dims
    if d is None:
        return list(bind(rng_bit_generator_p, key, **params)), [None, None]
    keys, bits = [], []
    for i in range(key.shape[d]):
        start = [0, 0]
        start[d] = i
        limit = [i + 1 if a == d else 4 for a in range(2)]
        k = lax.reshape(lax.slice(key, start, limit), (4,))
        new_key, b = bind(rng_bit_generator_p, k, **params)
        keys.append(lax.reshape(new_key, (1, 4)))
        bits.append(lax.reshape(b, (1,) + tuple(b.shape)))
    return [lax.concatenate(keys, 0), lax.concatenate(bits, 0)], [0, 0]


rng_bit_generator_p.def_batching(_rbg_batching)
# integer bits from an integer key: no cotangent flows to the key
rng_bit_generator_p.def_vjp(lambda cts, outs, key, **params: (None,))

_ALGORITHMS = {"default": "rng_default", "three_fry": "rng_three_fry", "philox": "rng_philox",
               "rng_default": "rng_default", "rng_three_fry": "rng_three_fry",
               "rng_philox": "rng_philox"}


def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: Any = "default") -> tuple[Array, Array]:
    """``(new_key, bits)``: XLA's RngBitGenerator from a ``u32[4]`` key (``algorithm``:
    ``default``, ``three_fry`` or ``philox``, or a ``RandomAlgorithm``)."""
    k = to_array(key)
    if k.dtype != np.uint32 or k.shape != (4,):
        raise InvalidArgumentError(f"lax.rng_bit_generator: the key must be uint32[4], got "
                                   f"{k.type_text()}")
    name = str(getattr(algorithm, "name", algorithm)).lower().removeprefix("rng_")
    alg = _ALGORITHMS.get(name) or _ALGORITHMS.get(f"rng_{name}")
    if alg is None:
        raise InvalidArgumentError(f"lax.rng_bit_generator: unknown algorithm {algorithm!r}")
    dt = np.dtype(dtype)
    if dt not in (np.uint8, np.uint16, np.uint32):
        raise InvalidArgumentError(f"lax.rng_bit_generator: dtype must be uint8, uint16 or "
                                   f"uint32 (x64 off), got {dt}")
    return tuple(bind(rng_bit_generator_p, k, shape=tuple(int(s) for s in shape), dtype=dt,
                      algorithm=alg))


__all__ = ["reduce_precision", "optimization_barrier", "rng_bit_generator"]
