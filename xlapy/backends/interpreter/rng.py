"""Interpreter handlers: rng-bit-generator, rng, rng-get-and-update-state.

``rng-bit-generator`` is bit-exact with XLA (RngBitGeneratorExpander plus the
ThreeFry / Philox bit generators of ``xla/hlo/builder/lib/prng.cc``). The
state operand is ``u64[N]``; ``state[0]`` is the key.

- ``rng_three_fry``: the counter is ``state[1]``. Element ``i`` (row-major) of a
  64-bit output is ThreeFry2x32(key, counter + i) with the two 32-bit words
  joined low word first; the new counter is ``counter + n``. A 32-bit (or
  narrower) output of shape ``D`` is produced in halves: the first even
  dimension of ``D`` (else the largest) is split, ``ceil(d/2)`` counters feed
  ThreeFry and its two output words fill the even and odd positions along that
  dimension; the counter advances by the number of counters used.
- ``rng_philox`` (also ``rng_default``, which XLA's CPU backend expands to
  Philox): the 128-bit counter is ``(state[1], state[2])`` when ``N >= 3``, and
  ``(state[1], state[0])`` -- the key doubling as the high word -- when
  ``N == 2``, in which case only the low word is written back. Each counter
  value gives four 32-bit words, used in order (two 64-bit words, low word
  first, for 64-bit outputs).

Outputs narrower than 32 bits keep the low bits of a 32-bit result; signed and
float outputs reinterpret the unsigned bits. The value is ``(new_state, bits)``.

``rng`` (the legacy stateful op) and ``rng-get-and-update-state`` draw from
the evaluator's own generator and counter; XLA leaves their bits unspecified.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloInstruction
from ...hlo.types import ElementType
from .evaluator import Evaluator, describe, handler
from .numeric import as_array, from_bit_pattern

_U32 = np.uint32
_MASK32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _split64(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 32-bit words of uint64 values."""
    return (v & _MASK32).astype(_U32), (v >> _S32).astype(_U32)


def _join64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << _S32)


# ----------------------------------------------------------------------------------------------
# ThreeFry2x32 (20 rounds)

_THREEFRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _rotl32(v: np.ndarray, d: int) -> np.ndarray:
    return (v << _U32(d)) | (v >> _U32(32 - d))


def threefry2x32(key: tuple[int, int], x0: np.ndarray,
                 x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ThreeFry2x32 of counter words ``(x0, x1)`` (uint32 arrays) under a 2-word key."""
    ks = (_U32(key[0]), _U32(key[1]), _U32(0x1BD11BDA ^ key[0] ^ key[1]))
    x0 = x0.astype(_U32) + ks[0]
    x1 = x1.astype(_U32) + ks[1]
    for block in range(5):
        rotations = _THREEFRY_ROTATIONS[:4] if block % 2 == 0 else _THREEFRY_ROTATIONS[4:]
        for r in rotations:
            x0 = x0 + x1
            x1 = _rotl32(x1, r) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + _U32(block + 1)
    return x0, x1


def _split_dim(dims: tuple[int, ...]) -> int:
    """The dimension prng.cc halves: the first even one, else the first largest."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


def threefry_bits32(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """u32 bits of shape ``dims`` and the new counter (ThreeFryRngBit32)."""
    k = (key & 0xFFFFFFFF, key >> 32)
    if not dims:
        x0, _ = _threefry_counters(k, counter, 1)
        return x0.reshape(()), (counter + 1) % (1 << 64)
    s = _split_dim(dims)
    half = dims[:s] + ((dims[s] + 1) // 2, 1) + dims[s + 1:]
    n = prod(half)
    x0, x1 = _threefry_counters(k, counter, n)
    both = np.concatenate([x0.reshape(half), x1.reshape(half)], axis=s + 1)
    full = both.reshape(dims[:s] + (2 * half[s],) + dims[s + 1:])
    return full[(slice(None),) * s + (slice(0, dims[s]),)], (counter + n) % (1 << 64)


def threefry_bits64(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """u64 bits of shape ``dims`` and the new counter (ThreeFryRngBit64)."""
    n = prod(dims)
    x0, x1 = _threefry_counters((key & 0xFFFFFFFF, key >> 32), counter, n)
    return _join64(x0, x1).reshape(dims), (counter + n) % (1 << 64)


def _threefry_counters(key: tuple[int, int], counter: int,
                       n: int) -> tuple[np.ndarray, np.ndarray]:
    ctr = np.uint64(counter) + np.arange(n, dtype=np.uint64)
    lo, hi = _split64(ctr)
    return threefry2x32(key, lo, hi)


# ----------------------------------------------------------------------------------------------
# Philox4x32 (10 rounds)

_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


def _mul_hi_lo(x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    p = x.astype(np.uint64) * np.uint64(m)
    return (p >> _S32).astype(_U32), (p & _MASK32).astype(_U32)


def philox4x32(key: tuple[int, int], words: list[np.ndarray]) -> list[np.ndarray]:
    """Philox4x32-10 of four uint32 counter words under a 2-word key."""
    k0, k1 = key
    x = [w.astype(_U32) for w in words]
    for _ in range(10):
        hi0, lo0 = _mul_hi_lo(x[0], _PHILOX_M[0])
        hi1, lo1 = _mul_hi_lo(x[2], _PHILOX_M[1])
        x = [hi1 ^ x[1] ^ _U32(k0), lo1, hi0 ^ x[3] ^ _U32(k1), lo0]
        k0 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF
        k1 = (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
    return x


def _philox_blocks(key: int, counter: tuple[int, int], n_blocks: int) -> list[np.ndarray]:
    """Philox outputs for 128-bit counters ``counter + 0 .. counter + n_blocks - 1``."""
    lo = np.uint64(counter[0]) + np.arange(n_blocks, dtype=np.uint64)
    carry = lo < np.uint64(counter[0])
    hi = np.uint64(counter[1]) + carry.astype(np.uint64)
    words = [*_split64(lo), *_split64(hi)]
    return philox4x32((key & 0xFFFFFFFF, key >> 32), words)


def _advance128(counter: tuple[int, int], n: int) -> tuple[int, int]:
    value = (counter[0] + (counter[1] << 64) + n) % (1 << 128)
    return value & ((1 << 64) - 1), value >> 64


def philox_bits32(key: int, counter: tuple[int, int],
                  dims: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, int]]:
    """u32 bits of shape ``dims`` and the new 128-bit counter (PhiloxRngBit32)."""
    n = prod(dims)
    blocks = (n + 3) // 4
    words = _philox_blocks(key, counter, blocks)
    flat = np.stack(words, axis=1).reshape(-1)[:n]
    return flat.reshape(dims), _advance128(counter, blocks)


def philox_bits64(key: int, counter: tuple[int, int],
                  dims: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, int]]:
    """u64 bits of shape ``dims`` and the new 128-bit counter (PhiloxRngBit64)."""
    n = prod(dims)
    blocks = (n + 1) // 2
    w = _philox_blocks(key, counter, blocks)
    flat = np.stack([_join64(w[0], w[1]), _join64(w[2], w[3])], axis=1).reshape(-1)[:n]
    return flat.reshape(dims), _advance128(counter, blocks)


# ----------------------------------------------------------------------------------------------
# rng-bit-generator

def rng_bit_generator(state: np.ndarray, algorithm: str,
                      out: ElementType, dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(new_state, bits) of XLA's RngBitGenerator for a ``u64[N]`` state."""
    st = [int(v) for v in np.asarray(state, np.uint64).reshape(-1)]
    if algorithm == "rng_default":
        algorithm = "rng_philox"
    if algorithm == "rng_three_fry":
        if len(st) < 2:
            raise InvalidArgumentError(f"rng_three_fry needs a state of at least 2 u64 "
                                       f"values, got {len(st)}")
        if out.bits == 64:
            bits, ctr = threefry_bits64(st[0], st[1], dims)
        else:
            bits, ctr = threefry_bits32(st[0], st[1], dims)
        new_state = [st[0], ctr] + st[2:]
    elif algorithm == "rng_philox":
        if len(st) < 2:
            raise InvalidArgumentError(f"rng_philox needs a state of at least 2 u64 values, "
                                       f"got {len(st)}")
        counter = (st[1], st[2]) if len(st) >= 3 else (st[1], st[0])
        if out.bits == 64:
            bits, new_ctr = philox_bits64(st[0], counter, dims)
        else:
            bits, new_ctr = philox_bits32(st[0], counter, dims)
        new_state = ([st[0], *new_ctr] + st[3:]) if len(st) >= 3 else [st[0], new_ctr[0]]
    else:
        raise InvalidArgumentError(f"unknown rng-bit-generator algorithm {algorithm!r}")
    return np.array(new_state, np.uint64), from_bit_pattern(bits, out)


@handler("rng-bit-generator")
def _rng_bit_generator(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    (state,) = operands
    if not instr.shape.is_tuple or len(instr.shape.tuple_shapes) != 2:
        raise InvalidArgumentError(f"rng-bit-generator must return (state, bits): "
                                   f"{describe(instr)}")
    out_shape = instr.shape.tuple_shapes[1]
    out = out_shape.element_type
    if out.is_pred or out.is_complex or out.bits not in (2, 4, 8, 16, 32, 64):
        raise UnimplementedError(f"rng-bit-generator cannot produce {out} values: "
                                 f"{describe(instr)}")
    algorithm = str(instr.attrs.get("algorithm", "rng_default")).lower()
    try:
        return rng_bit_generator(state, algorithm, out, out_shape.dims)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{e}: {describe(instr)}") from None


# ----------------------------------------------------------------------------------------------
# rng, rng-get-and-update-state

@handler("rng")
def _rng(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    a, b = (np.asarray(o) for o in operands)
    et = instr.shape.element_type
    dims = instr.shape.dims
    distribution = str(instr.attrs.get("distribution", "")).lower()
    if distribution == "rng_uniform":
        if et.is_integral:
            lo, hi = int(a), int(b)
            if hi <= lo:
                return np.full(dims, lo, et.dtype)
            return as_array(ev.rng.integers(lo, hi, size=dims), et)
        if et.is_floating:
            low, high = float(a), float(b)
            v = low + (high - low) * ev.rng.random(size=dims)
            v = np.where(v >= high, low, v) if high > low else np.full(dims, low)
            return as_array(v, et)
        if et.is_pred:
            return np.asarray(ev.rng.integers(int(a), max(int(b), int(a) + 1), size=dims) != 0)
    elif distribution == "rng_normal":
        if et.is_floating:
            return as_array(ev.rng.normal(float(a), float(b), size=dims), et)
    else:
        raise InvalidArgumentError(f"rng needs distribution=rng_uniform|rng_normal, got "
                                   f"{distribution!r}: {describe(instr)}")
    raise InvalidArgumentError(f"rng {distribution} is not defined for {et}: {describe(instr)}")


@handler("rng-get-and-update-state")
def _rng_get_and_update_state(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    delta = int(instr.attrs.get("delta", 0))
    state = ev.rng_state % (1 << 128)
    ev.rng_state = (state + delta) % (1 << 128)
    return np.array([state & ((1 << 64) - 1), state >> 64], np.uint64)

