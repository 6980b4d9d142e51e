"""What keeps the CPU backend's LLVM work small.

Which loops of a loop kernel are unrolled in the IR (``kernel_support.unrolled_from``):
only the innermost loops over tiny constant extents, so a tiny loop around an inner loop
stays a loop (unrolling it only copied the inner loop, which LLVM then vectorized once per
copy: many times the compile time of a small weight transpose, no gain when run). And
kernels equal but for their names are compiled once (``compiler.kernel_key``)."""
from __future__ import annotations

import tempfile

import numpy as np
import pytest

from cpu_kernel_harness import assert_same, run_both   # noqa: E402
from xlapy.backends.cpu import CpuBackend   # noqa: E402
from xlapy.backends.cpu.jit_engine import engine   # noqa: E402
from xlapy.backends.cpu.kernel_support import unrolled_from   # noqa: E402
from xlapy.backends.cpu.loop_emitter import LoopEmitter   # noqa: E402
from xlapy.hlo import parse_module   # noqa: E402


@pytest.mark.parametrize("extents, limit, max_copies, want", [
    ([100, 3, 3], 4, 16, 1),          # the two innermost tiny loops: 9 copies
    ([3, 3, 100], 4, 16, 3),          # tiny loops around a long one: none
    ([3, 100, 3], 4, 16, 2),          # only the innermost
    ([4, 4, 4], 4, 16, 1),            # 64 copies would be too many: the inner two
    ([2, 2], 4, 16, 0),               # everything
    ([], 4, 16, 0),
    ([100, "n", 3], 4, 16, 2),        # a trip count known only at run time
    ([5], 4, 16, 1),                  # over the limit
])
def test_unrolled_from(extents, limit, max_copies, want):
    assert unrolled_from(extents, limit, max_copies) == want


def kernel_ir(text: str) -> str:
    """The unoptimized LLVM IR of the loop kernel for the entry root of ``text``."""
    root = parse_module(text).entry.root
    emitter = LoopEmitter()
    assert emitter.can_emit(root)
    module = engine().new_module("unroll_test")
    emitter.emit(module, "unroll_test", root)
    return str(module)


def stores(ir_text: str) -> int:
    return sum(1 for line in ir_text.splitlines() if line.strip().startswith("store "))


NEGATE = """HloModule n
ENTRY main {{
  x = f32[{dims}]{{{m2m}}} parameter(0)
  ROOT n = f32[{dims}]{{{m2m}}} negate(x)
}}"""


@pytest.mark.parametrize("dims, m2m, want_stores", [
    ("64,3,4,100", "3,2,1,0", 1),     # tiny dims outside the 100-loop: loops, one store
    ("1000,3", "1,0", 3),             # a tiny innermost dim: three stores per row
    ("100,2,3", "2,1,0", 6),          # two tiny innermost dims: six
])
def test_loop_kernel_unrolls_only_innermost_tiny_dims(dims, m2m, want_stores):
    text = NEGATE.format(dims=dims, m2m=m2m)
    assert stores(kernel_ir(text)) == want_stores
    shape = [int(d) for d in dims.split(",")]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got, want = run_both(CpuBackend(use_disk_cache=False), text, [x], native=("n",))
    assert_same(got, want)


# A convolution weight in PyTorch's layout (O, I, H, W) transposed to (H, W, I, O): tiled
# (large enough), the operand's 3x3 minor dims are the read phase's innermost loops
# (unrolled), the output's are outside the write phase's 64-loop (not unrolled).
WEIGHT = """HloModule w
ENTRY main {
  x = f32[64,32,3,3]{3,2,1,0} parameter(0)
  ROOT t = f32[3,3,32,64]{3,2,1,0} transpose(x), dimensions={2,3,1,0}
}"""


def test_weight_transpose_unrolls_the_read_phase_only():
    ir_text = kernel_ir(WEIGHT)
    assert "alloca" in ir_text                          # tiled
    assert stores(ir_text) == 9 + 1                     # 3x3 reads unrolled, one write
    x = np.random.default_rng(1).standard_normal([64, 32, 3, 3]).astype(np.float32)
    got, want = run_both(CpuBackend(use_disk_cache=False), WEIGHT, [x], native=("t",))
    assert_same(got, want)
    np.testing.assert_array_equal(got[0], x.transpose(2, 3, 1, 0))


# The same layer applied to two inputs: the two fusions print the same IR but for names.
LAYERS = """HloModule layers
ENTRY main {
  x = f32[64,256] parameter(0)
  y = f32[64,256] parameter(1)
  w = f32[256] parameter(2)
  b = f32[64,256] broadcast(w), dimensions={1}
  m1 = f32[64,256] multiply(x, b)
  t1 = f32[64,256] add(m1, b)
  m2 = f32[64,256] multiply(y, b)
  t2 = f32[64,256] add(m2, b)
  ROOT r = (f32[64,256], f32[64,256]) tuple(t1, t2)
}"""


def test_equal_kernels_are_compiled_once():
    backend = CpuBackend(use_disk_cache=False)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal([2, 64, 256]).astype(np.float32)
    w = rng.standard_normal([256]).astype(np.float32)
    got, want = run_both(backend, LAYERS, [x, y, w])
    timings = backend.last_timings
    assert timings.kernels == 2 and timings.compiled_kernels == 1
    assert_same(got, want)
    np.testing.assert_array_equal(got[1], y * w + w)
    # the disk cache stores kernels that share a symbol and loads them back
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(2):
            cached = CpuBackend(cache_dir=cache)
            assert_same(run_both(cached, LAYERS, [x, y, w])[0], want)
        assert cached.last_timings.path == "disk"


def test_kernel_key_names_aside_and_mutable_state_apart():
    from xlapy.backends.cpu.compiler import kernel_key
    a = 'define void @"xk_a"(i8** %t) {\n  ret void\n}\n'
    b = a.replace("xk_a", "xk_b")
    assert kernel_key(a, "xk_a") == kernel_key(b, "xk_b")
    assert kernel_key(a, "xk_a") != kernel_key(a.replace("ret void", "unreachable"), "xk_a")
    state = '@"xk_a.done" = internal global i64 0\n' + a
    assert kernel_key(state, "xk_a") is None
