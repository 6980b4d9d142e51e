"""Reference interpreter: rng-bit-generator (bit-exact with XLA), rng, rng-get-and-update-state."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xlapy.backends.interpreter import HANDLERS, Evaluator
from xlapy.backends.interpreter.rng import philox4x32, threefry2x32
from xlapy.errors import InvalidArgumentError, UnimplementedError
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape

U32 = np.uint32


def bitgen(state, algorithm, out_type, dims, state_len=None):
    state = np.asarray(state, np.uint64)
    shape = Shape.tuple([Shape.array("u64", state.shape), Shape.array(out_type, dims)])
    instr = HloInstruction("rng-bit-generator", shape, [], {"algorithm": algorithm})
    new_state, bits = HANDLERS["rng-bit-generator"](Evaluator(), instr, [state])
    assert new_state.dtype == np.uint64 and new_state.shape == state.shape
    assert bits.dtype == Shape.array(out_type, dims).dtype and bits.shape == tuple(dims)
    return new_state, bits


def u64(lo32, hi32):
    return (hi32 << 32) | lo32


# ----------------------------------------------------------------------------------------------
# block ciphers: Random123 known-answer vectors

@pytest.mark.parametrize("key,ctr,expected", [
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry2x32_known_answers(key, ctr, expected):
    x0, x1 = threefry2x32(key, np.array([ctr[0]], U32), np.array([ctr[1]], U32))
    assert (int(x0[0]), int(x1[0])) == expected


@pytest.mark.parametrize("key,ctr,expected", [
    ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox4x32_known_answers(key, ctr, expected):
    out = philox4x32(key, [np.array([c], U32) for c in ctr])
    assert tuple(int(w[0]) for w in out) == expected


# ----------------------------------------------------------------------------------------------
# rng-bit-generator against XLA's outputs (JAX lax.rng_bit_generator, key [1, 2, 3, 4])

XLA_THREEFRY_ROW0 = [1576285164, 740599976, 2436392515, 1335360347, 3981753173, 3812192618,
                     2959620048, 3014899208]
XLA_THREEFRY_ROW3 = [3159671019, 3736842863, 17593395, 3352391975, 3467159726, 3241586659,
                     410245620, 2739331635]
XLA_PHILOX_16 = [1874312149, 4049973063, 541947437, 3173188455, 3261742147, 4106751194,
                 1732556293, 2458340137, 1288684676, 2564716849, 2589698471, 1104122282,
                 1103275057, 412726760, 3798666271, 4103517684]


def test_three_fry_u32_matches_xla():
    state = [u64(1, 2), u64(3, 4)]
    new_state, bits = bitgen(state, "rng_three_fry", "u32", (4, 8))
    assert bits[0].tolist() == XLA_THREEFRY_ROW0
    assert bits[3].tolist() == XLA_THREEFRY_ROW3
    # 4x8 is produced as 16 counters (dim 0 halved): the counter advances by 16
    assert new_state.tolist() == [u64(1, 2), u64(3 + 16, 4)]


def test_philox_u32_matches_xla_with_two_word_state():
    state = [u64(1, 2), u64(19, 4)]
    new_state, bits = bitgen(state, "rng_philox", "u32", (16,))
    assert bits.tolist() == XLA_PHILOX_16
    assert new_state.tolist() == [u64(1, 2), u64(23, 4)]      # 4 blocks of 4 words


def test_rng_default_is_philox_on_cpu():
    state = [u64(1, 2), u64(19, 4)]
    assert bitgen(state, "rng_default", "u32", (16,))[1].tolist() == XLA_PHILOX_16


# ----------------------------------------------------------------------------------------------
# output layouts

def _threefry_words(key, counters):
    ctr = np.asarray(counters, np.uint64)
    return threefry2x32((key & 0xFFFFFFFF, key >> 32), (ctr & 0xFFFFFFFF).astype(U32),
                        (ctr >> np.uint64(32)).astype(U32))


def test_three_fry_u32_odd_dims_split_the_largest_dim():
    key, ctr = 0x0123456789ABCDEF, 1000
    new_state, bits = bitgen([key, ctr], "rng_three_fry", "u32", (3, 5))
    # no even dim: dim 1 (size 5) is halved to 3, giving 3*3 counters
    x0, x1 = _threefry_words(key, ctr + np.arange(9))
    full = np.stack([x0.reshape(3, 3), x1.reshape(3, 3)], axis=2).reshape(3, 6)[:, :5]
    assert (bits == full).all()
    assert new_state.tolist() == [key, ctr + 9]


def test_three_fry_scalar_and_u64_outputs():
    key, ctr = 7, 2**64 - 1
    new_state, bits = bitgen([key, ctr], "rng_three_fry", "u32", ())
    x0, _ = _threefry_words(key, [ctr])
    assert bits.shape == () and int(bits) == int(x0[0])
    assert new_state.tolist() == [key, 0]                      # counter wraps
    new_state, bits = bitgen([key, 5], "rng_three_fry", "u64", (2, 3))
    x0, x1 = _threefry_words(key, 5 + np.arange(6))
    joined = x0.astype(np.uint64) | (x1.astype(np.uint64) << np.uint64(32))
    assert (bits.reshape(-1) == joined).all()
    assert new_state.tolist() == [key, 11]


def test_narrow_signed_and_float_outputs_reuse_u32_bits():
    state = [u64(1, 2), u64(19, 4)]
    _, u32 = bitgen(state, "rng_philox", "u32", (16,))
    _, u16 = bitgen(state, "rng_philox", "u16", (16,))
    _, u8 = bitgen(state, "rng_philox", "u8", (16,))
    _, s32 = bitgen(state, "rng_philox", "s32", (16,))
    _, f32 = bitgen(state, "rng_philox", "f32", (16,))
    _, bf16 = bitgen(state, "rng_philox", "bf16", (16,))
    assert (u16 == (u32 & 0xFFFF)).all() and (u8 == (u32 & 0xFF)).all()
    assert (s32.view(U32) == u32).all() and (f32.view(U32) == u32).all()
    assert (bf16.view(np.uint16) == (u32 & 0xFFFF)).all() and bf16.dtype == ml_dtypes.bfloat16


def test_philox_u64_output_and_three_word_state_carry():
    key, lo, hi = 42, 2**64 - 1, 7
    new_state, bits = bitgen([key, lo, hi], "rng_philox", "u64", (3,))
    # 3 u64 values take 2 Philox blocks at counters (lo, hi) and (lo + 1 = 0, hi + 1)
    blocks = [philox4x32((key, 0), [np.array([w], U32) for w in ws])
              for ws in ((0xFFFFFFFF, 0xFFFFFFFF, 7, 0), (0, 0, 8, 0))]
    words = [int(w[0]) for blk in blocks for w in blk]
    want = [words[0] | words[1] << 32, words[2] | words[3] << 32, words[4] | words[5] << 32]
    assert bits.tolist() == want
    assert new_state.tolist() == [key, 1, 8]


def test_philox_two_word_state_uses_the_key_as_counter_high_word():
    key, ctr = 5, 9
    new_state, bits = bitgen([key, ctr], "rng_philox", "u32", (4,))
    out = philox4x32((key, 0), [np.array([w], U32) for w in (ctr, 0, key, 0)])
    assert bits.tolist() == [int(w[0]) for w in out]
    assert new_state.tolist() == [key, ctr + 1]


def test_rng_bit_generator_errors():
    with pytest.raises(InvalidArgumentError, match="algorithm"):
        bitgen([1, 2], "rng_mersenne", "u32", (2,))
    with pytest.raises(UnimplementedError, match="pred"):
        bitgen([1, 2], "rng_philox", "pred", (2,))
    with pytest.raises(InvalidArgumentError, match="at least 2"):
        bitgen([1], "rng_three_fry", "u32", (2,))


# ----------------------------------------------------------------------------------------------
# rng, rng-get-and-update-state

def _rng(distribution, out_type, dims, a, b, ev=None):
    instr = HloInstruction("rng", Shape.array(out_type, dims), [], {"distribution": distribution})
    return HANDLERS["rng"](ev or Evaluator(), instr, [np.asarray(a), np.asarray(b)])


def test_rng_uniform_float_and_int_ranges():
    x = _rng("rng_uniform", "f32", (2000,), np.float32(-2), np.float32(3))
    assert x.dtype == np.float32 and x.shape == (2000,)
    assert x.min() >= -2 and x.max() < 3 and abs(x.mean() - 0.5) < 0.2
    k = _rng("rng_uniform", "s32", (2000,), np.int32(5), np.int32(9))
    assert k.dtype == np.int32 and set(np.unique(k).tolist()) == {5, 6, 7, 8}
    b = _rng("rng_uniform", "bf16", (10,), np.array(0, ml_dtypes.bfloat16),
             np.array(1, ml_dtypes.bfloat16))
    assert b.dtype == ml_dtypes.bfloat16 and (b.astype(np.float32) < 1).all()


def test_rng_normal_and_determinism():
    x = _rng("rng_normal", "f64", (4000,), 10.0, 2.0)
    assert abs(x.mean() - 10) < 0.2 and abs(x.std() - 2) < 0.2
    same = _rng("rng_normal", "f64", (4000,), 10.0, 2.0)
    assert (x == same).all()          # a fresh Evaluator has the same seed


def test_rng_rejects_bad_distribution():
    with pytest.raises(InvalidArgumentError, match="distribution"):
        _rng("rng_poisson", "f32", (2,), 0.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="rng_normal"):
        _rng("rng_normal", "s32", (2,), np.int32(0), np.int32(1))


def test_rng_get_and_update_state_advances_by_delta():
    ev = Evaluator()
    instr = HloInstruction("rng-get-and-update-state", Shape.array("u64", (2,)), [],
                           {"delta": 5})
    first = HANDLERS["rng-get-and-update-state"](ev, instr, [])
    second = HANDLERS["rng-get-and-update-state"](ev, instr, [])
    assert first.dtype == np.uint64 and first.tolist() == [0, 0]
    assert second.tolist() == [5, 0]
    ev.rng_state = 2**64 - 2
    assert HANDLERS["rng-get-and-update-state"](ev, instr, []).tolist() == [2**64 - 2, 0]
    assert HANDLERS["rng-get-and-update-state"](ev, instr, []).tolist() == [3, 1]
