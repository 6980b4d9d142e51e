"""``__truncdfhf2``, the compiler-runtime function the CPU backend defines itself
(``backends/cpu/runtime_support.py``): generated code that LLVM lowers to a double ->
half truncation loads and rounds once to nearest even, as the runtime function is
specified (NumPy's ``astype(float16)`` from float64 does the same). HLO's ``convert``
f64 -> f16 rounds through f32 as XLA:CPU does (``test_cpu_elemental.py``)."""
import ctypes

import numpy as np
from llvmlite import ir

from xlapy.backends.cpu.jit_engine import engine
from xlapy.backends.cpu.llvm_types import F16, F64

I64 = ir.IntType(64)


def _truncate_kernel():
    """A kernel ``out[i] = (half) in[i]``, ``in`` double: LLVM calls __truncdfhf2."""
    eng = engine()
    m = eng.new_module("trunc_df_hf_test")
    ptr_d, ptr_h = F64.as_pointer(), F16.as_pointer()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr_d, ptr_h, I64]), "trunc_df_hf")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), entry)
    x = b.load(b.gep(fn.args[0], [i]))
    b.store(b.fptrunc(x, F16), b.gep(fn.args[1], [i]))
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[2]), loop, done)
    b.position_at_end(done)
    b.ret_void()
    compiled = eng.compile([m], ["trunc_df_hf"])
    loaded = eng.load(compiled.objects, ["trunc_df_hf"])
    cfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        loaded.address("trunc_df_hf"))
    return loaded, cfn


def _values() -> np.ndarray:
    rng = np.random.default_rng(7)
    special = [1 + 2**-11 + 2**-40, 1 + 2**-11, 1 + 3 * 2**-11, 65519.99, 65520.0, -65504.5,
               2**-25, 2**-25 + 2**-60, 3 * 2**-26, 1.5 * 2**-24, 2**-14 * (1 - 2**-11),
               np.nan, -np.inf, np.inf, 1e-300, 5e-324, -0.0, 0.0, 1e300]
    near_halves = rng.integers(0, 0x7C00, 2000).astype(np.uint16).view(np.float16)
    jitter = 1 + rng.uniform(-2**-11, 2**-11, near_halves.size)
    wide = rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000)
    return np.concatenate([special, near_halves.astype(np.float64) * jitter, wide])


def test_truncdfhf2_rounds_once_to_nearest_even():
    loaded, fn = _truncate_kernel()
    x = _values()
    got = np.empty(x.size, np.float16)
    fn(x.ctypes.data, got.ctypes.data, x.size)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    assert got[0] == np.float16(1 + 2**-10)          # above the tie: up, not through f32
    del loaded
