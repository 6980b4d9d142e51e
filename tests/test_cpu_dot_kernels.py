"""Generated small-GEMM kernels (xlapy/backends/cpu/dot_emitter.py) against NumPy and the
interpreter: both kernel shapes (outer, inner), odd sizes (row, column and K remainders),
transposed operands and outputs through layouts, batch dims, f32 and f64, 512- and 256-bit
vectors, and the dispatch (which dots become kernels, which stay in OpenBLAS)."""
from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu.dot_emitter import DotEmitter
from xlapy.backends.cpu.dot_kernel_plan import (CpuDotOperandLayouts, MAX_KERNEL_MACS,
                                                kernel_wanted)
from xlapy.backends.cpu.jit_engine import engine
from xlapy.backends.cpu.thunks import KERNEL_CFUNC, logical_view, physical_bytes
from xlapy.client import get_backend
from xlapy.hlo import parse_module

_names = itertools.count()


def _lay(layout) -> str:
    return "" if layout is None else "{" + ",".join(map(str, layout)) + "}"


def dot_module(et: str, lshape, rshape, lb=(), lc=(1,), rb=(), rc=(0,), llay=None, rlay=None,
               olay=None) -> str:
    lf = [d for d in range(len(lshape)) if d not in lb + lc]
    rf = [d for d in range(len(rshape)) if d not in rb + rc]
    out = [lshape[d] for d in lb] + [lshape[d] for d in lf] + [rshape[d] for d in rf]

    def dims(s):
        return ",".join(map(str, s))

    def nums(s):
        return "{" + dims(s) + "}"
    batch = f", lhs_batch_dims={nums(lb)}, rhs_batch_dims={nums(rb)}" if lb else ""
    return f"""HloModule dot_test
ENTRY main {{
  a = {et}[{dims(lshape)}]{_lay(llay)} parameter(0)
  b = {et}[{dims(rshape)}]{_lay(rlay)} parameter(1)
  ROOT d = {et}[{dims(out)}]{_lay(olay)} dot(a, b), lhs_contracting_dims={nums(lc)}, rhs_contracting_dims={nums(rc)}{batch}
}}
"""


class DotKernel:
    """The kernel emitted for the entry root of ``text``, called on buffers in the
    layouts the module names."""

    def __init__(self, text: str, width_bytes: int) -> None:
        self.module = parse_module(text)
        root = self.module.entry.root
        emitter = DotEmitter(width_bytes=width_bytes)
        assert emitter.can_emit(root), f"the dot emitter declined {root.name}"
        self.plan = emitter.plan(root)
        self.name = f"dot_test_{next(_names)}"
        llvm_module = engine().new_module(self.name)
        self.spec = emitter.emit(llvm_module, self.name, root)
        compiled = engine().compile([llvm_module], [self.name])
        self.loaded = engine().load(compiled.objects, [self.name])
        self.fn = KERNEL_CFUNC(self.loaded.address(self.name))

    def run(self, args: list[np.ndarray], ranges=None) -> np.ndarray:
        keep, out = [], None
        for kb in self.spec.buffers:
            if kb.role == "operand":
                raw = physical_bytes(args[kb.instruction.parameter_number], kb.shape).copy()
            else:
                raw = np.full(max(kb.shape.byte_size, 1), 0xA5, np.uint8)   # NaN poison
                out = (raw, kb.shape)
            keep.append(raw)
        table = (ctypes.c_void_p * len(keep))(*[k.ctypes.data for k in keep])
        for begin, end in ranges or [(0, self.spec.units)]:
            self.fn(ctypes.addressof(table), begin, end)
        return logical_view(out[0], 0, out[1]).copy()


def _args(text: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(p.shape.dims).astype(p.shape.dtype)
            for p in parse_module(text).entry.parameters]


def _check(text: str, width_bytes: int = 64, kind: str | None = None, ranges=None) -> DotKernel:
    kernel = DotKernel(text, width_bytes)
    if kind is not None:
        assert kernel.plan.kind == kind, kernel.plan.summary()
    args = _args(text)
    got = kernel.run(args, ranges)
    want = np.asarray(xlapy.run_hlo(text, args, backend="interpreter")[0])
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-5 if got.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    return kernel


# (lhs, rhs, lhs contracting, rhs contracting) over odd and tile-sized shapes
_SHAPES = [((1, 1), (1, 1)), ((1, 7), (7, 1)), ((3, 5), (5, 17)), ((32, 64), (64, 512)),
           ((7, 33), (33, 70)), ((5, 130), (130, 3)), ((1, 64), (64, 129)), ((9, 16), (16, 16))]


@pytest.mark.parametrize("width", [64, 32])
@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("lshape,rshape", _SHAPES)
def test_row_major_products(lshape, rshape, et, width):
    _check(dot_module(et, lshape, rshape), width)


@pytest.mark.parametrize("width", [64, 32])
@pytest.mark.parametrize("m,k,n", [(32, 512, 128), (5, 137, 9), (4, 128, 4), (3, 200, 1),
                                   (1, 144, 6), (6, 172, 5), (3, 130, 7)])
def test_inner_kernel_for_k_contiguous_operands(m, k, n, width):
    # A @ B^T with B stored [N, K]: both operands unit-stride along K
    _check(dot_module("f32", (m, k), (n, k), lc=(1,), rc=(1,)), width, kind="inner")


@pytest.mark.parametrize("m,k,n", [(512, 32, 64), (13, 7, 21), (70, 3, 33)])
def test_transposed_lhs(m, k, n):
    # A^T @ B as the weight gradient of a dense layer: A stored [K, M]
    _check(dot_module("f32", (k, m), (k, n), lc=(0,), rc=(0,)), kind="outer")


@pytest.mark.parametrize("width", [64, 32])
@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m,k,n", [(512, 256, 10), (40, 7, 3), (17, 33, 15), (16, 5, 1)])
def test_short_n_weight_gradient_is_computed_transposed(m, k, n, et, width):
    """X^T @ G with N shorter than a vector: the kernel computes C^T with vectors along
    M (A^T is unit-stride there) and stores C an element at a time."""
    kernel = _check(dot_module(et, (k, m), (k, n), lc=(0,), rc=(0,)), width, kind="outer")
    lanes = width // (4 if et == "f32" else 8)
    if 1 < n < lanes <= m:       # (N = 1: C is unit-stride along M either way)
        assert (kernel.plan.m, kernel.plan.n) == (n, m) and kernel.plan.sc[2] == n
    else:
        assert (kernel.plan.m, kernel.plan.n) == (m, n)


@pytest.mark.parametrize("llay,rlay,olay,fits", [
    ((0, 1), (1, 0), (1, 0), True),      # A column-major: broadcasts read any stride
    ((1, 0), (0, 1), (1, 0), "long k"),  # B column-major: inner kernel, for a long K
    ((0, 1), (0, 1), (0, 1), True),      # all column-major: C^T = B^T A^T
    ((0, 1), (1, 0), (0, 1), True),
    ((1, 0), (1, 0), (0, 1), False),     # C column-major, A and B row-major: OpenBLAS
])
@pytest.mark.parametrize("m,k,n", [(11, 19, 37), (32, 20, 3), (7, 130, 9)])
def test_layouts(m, k, n, llay, rlay, olay, fits):
    text = dot_module("f32", (m, k), (k, n), llay=llay, rlay=rlay, olay=olay)
    if fits == "long k":
        fits = k >= 8 * 16
    if not fits:
        assert kernel_wanted(parse_module(text).entry.root, 64) is None
        return
    _check(text)


@pytest.mark.parametrize("lshape,rshape,lb,lc,rb,rc", [
    ((3, 5, 7), (3, 7, 9), (0,), (2,), (0,), (1,)),
    ((4, 6, 133), (4, 17, 133), (0,), (2,), (0,), (2,)),     # batched inner
    ((2, 3, 5, 6), (2, 3, 6, 4), (0, 1), (3,), (0, 1), (2,)),  # two batch dims
    ((5, 2, 8), (8, 2, 3), (1,), (2,), (1,), (0,)),          # batch dim not leading
])
def test_batch_dims(lshape, rshape, lb, lc, rb, rc):
    _check(dot_module("f32", lshape, rshape, lb, lc, rb, rc))


def test_unit_ranges_cover_the_output():
    # units are row blocks of one batch matrix; any split of the range gives the same result
    text = dot_module("f32", (3, 21, 10), (3, 10, 19), (0,), (2,), (0,), (1,))
    kernel = _check(text)
    units = kernel.spec.units
    assert units == 3 * -(-21 // kernel.plan.rows)
    _check(text, ranges=[(k, k + 1) for k in reversed(range(units))])


def test_dispatch_keeps_large_and_unsupported_dots_in_blas():
    # A @ B^T with a short K: the inner kernel's lane sums cost more than OpenBLAS
    short = parse_module(dot_module("f32", (64, 32), (128, 32), lc=(1,), rc=(1,))).entry.root
    assert kernel_wanted(short, 64) is None
    big = parse_module(dot_module("f32", (256, 784), (784, 512))).entry.root
    assert 256 * 784 * 512 > MAX_KERNEL_MACS and kernel_wanted(big) is None
    ints = parse_module(dot_module("s32", (4, 4), (4, 4))).entry.root
    assert kernel_wanted(ints) is None
    mixed = parse_module(dot_module("f32", (4, 4), (4, 4)).replace(
        "a = f32[4,4] parameter", "a = bf16[4,4] parameter")).entry.root
    assert kernel_wanted(mixed) is None


def test_compiled_module_runs_small_dots_as_kernels():
    text = dot_module("f32", (32, 64), (64, 512))
    exe = get_backend("cpu").compile(parse_module(text))
    assert exe.thunk_kinds()["d"] == "kernel"
    args = _args(text, 3)
    np.testing.assert_allclose(np.asarray(exe.execute(args)), args[0] @ args[1],
                               rtol=1e-5, atol=1e-5)
    big = get_backend("cpu").compile(parse_module(dot_module("f32", (256, 256), (256, 256))))
    assert big.thunk_kinds()["d"] == "library"


def test_batches_of_small_products_are_kernels_whatever_their_length():
    """Attention's per-head products: the limit is per matrix, not per batch."""
    heads = dot_module("f32", (64, 64, 32), (64, 32, 64), (0,), (2,), (0,), (1,))
    assert 64 * 64 * 32 * 64 > MAX_KERNEL_MACS
    assert kernel_wanted(parse_module(heads).entry.root, 64) is not None
    exe = get_backend("cpu").compile(parse_module(heads))
    assert exe.thunk_kinds()["d"] == "kernel"
    args = _args(heads, 5)
    np.testing.assert_allclose(np.asarray(exe.execute(args)), args[0] @ args[1],
                               rtol=1e-5, atol=1e-5)
    wide = dot_module("f32", (2, 256, 256), (2, 256, 256), (0,), (2,), (0,), (1,))
    assert kernel_wanted(parse_module(wide).entry.root, 64) is None


@pytest.mark.parametrize("et,lshape,rshape,lb,lc,rb,rc", [
    ("f32", (8, 64, 32), (8, 48, 32), (0,), (2,), (0,), (2,)),     # attention's q @ k^T
    ("f32", (256, 10), (512, 10), (), (1,), (), (1,)),               # g @ W^T, K = 10
    ("f32", (2, 3, 20, 7), (2, 3, 33, 7), (0, 1), (3,), (0, 1), (3,)),
    ("f64", (4, 17, 9), (4, 23, 9), (0,), (2,), (0,), (2,)),
])
def test_short_k_times_transposed_rhs_is_a_kernel_after_a_layout_change(et, lshape, rshape,
                                                                          lb, lc, rb, rc):
    """Both operands K-minor with a K too short for the inner kernel: layout assignment
    gives the right operand its N dims minor (one copy), and the outer kernel computes
    the product."""
    text = dot_module(et, lshape, rshape, lb, lc, rb, rc)
    dot = parse_module(text).entry.root
    want = CpuDotOperandLayouts().operand_layout(dot, 1)
    assert want is not None and want.minor_to_major[0] == len(rshape) - 2
    assert CpuDotOperandLayouts().operand_layout(dot, 0) is None
    exe = get_backend("cpu").compile(parse_module(text))
    kinds = exe.thunk_kinds()
    assert kinds["d"] == "kernel" and any(name.startswith("copy") for name in kinds), kinds
    args = _args(text, 7)
    a, b = args
    expect = np.einsum("...mk,...nk->...mn", a, b)
    np.testing.assert_allclose(np.asarray(exe.execute(args)), expect, rtol=1e-5, atol=1e-5)


def test_operand_layouts_left_alone():
    rules = CpuDotOperandLayouts()
    nn = parse_module(dot_module("f32", (8, 64, 32), (8, 32, 48), (0,), (2,), (0,), (1,)))
    long_k = parse_module(dot_module("f32", (8, 16, 256), (8, 16, 256), (0,), (2,), (0,), (2,)))
    big = parse_module(dot_module("f32", (256, 64), (1024, 64), lc=(1,), rc=(1,)))
    ints = parse_module(dot_module("s32", (8, 4), (6, 4), lc=(1,), rc=(1,)))
    for m in (nn, long_k, big, ints):
        assert rules.operand_layout(m.entry.root, 1) is None, m.to_text()


def test_dots_in_a_loop_run_in_the_native_driver():
    # a recurrence h = tanh(h @ w) in a while loop: the dot is a kernel, so every trip is
    # kernel calls only and the loop runs in native_loop's driver
    def step(h, w):
        return xlapy.lax.fori_loop(0, 5, lambda i, h: xlapy.numpy.tanh(h @ w), h)
    rng = np.random.default_rng(1)
    h = rng.standard_normal((8, 40)).astype(np.float32)
    w = (rng.standard_normal((40, 40)) * 0.2).astype(np.float32)
    exe = get_backend("cpu").compile(parse_module(xlapy.jit(step).lower(h, w).as_text()))
    got = np.asarray(exe.execute([h, w]))
    want = h.astype(np.float64)
    for _ in range(5):
        want = np.tanh(want @ w)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    loops = [t for t in exe.plan.walk() if t.kind == "while"]
    assert loops and all(t._native for t in loops)
    assert [t.kind for t in exe.plan.walk() if t.instruction.opcode == "dot"] == ["kernel"]


def _output_fusion_module(m, k, n, dlay=None, transposed_rhs=False):
    rhs = f"f32[{n},{k}]" if transposed_rhs else f"f32[{k},{n}]"
    rc = 1 if transposed_rhs else 0
    return f"""HloModule out_fusion
ENTRY main {{
  a = f32[{m},{k}] parameter(0)
  b = {rhs} parameter(1)
  c = f32[{m},{n}]{_lay(dlay)} parameter(2)
  d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{rc}}}
  ROOT r = f32[{m},{n}] add(c, d)
}}
"""


@pytest.mark.parametrize("m,k,n,transposed_rhs", [
    (32, 64, 512, False), (7, 19, 33, False), (32, 128, 20, True), (5, 130, 3, True)])
def test_dot_plus_addend_is_one_output_fused_kernel(m, k, n, transposed_rhs):
    text = _output_fusion_module(m, k, n, None, transposed_rhs)
    exe = get_backend("cpu").compile(parse_module(text))
    (thunk,) = [t for t in exe.plan.walk() if t.instruction.opcode == "fusion"]
    assert thunk.instruction.attrs["kind"] == "kOutput" and thunk.kind == "kernel"
    args = _args(text, 5)
    want = np.asarray(xlapy.run_hlo(text, args, backend="interpreter")[0])
    np.testing.assert_allclose(np.asarray(exe.execute(args)), want, rtol=1e-5, atol=1e-5)


def test_matrix_vector_output_fusion_runs_as_a_kernel():
    # XLA:CPU's matrix-vector output fusion ran in the interpreter before
    text = """HloModule mv
ENTRY main {
  a = f32[64,48] parameter(0)
  v = f32[48] parameter(1)
  c = f32[64] parameter(2)
  d = f32[64] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[64] add(d, c)
}
"""
    exe = get_backend("cpu").compile(parse_module(text))
    assert list(exe.thunk_kinds().values()) == ["kernel"]
    args = _args(text, 6)
    np.testing.assert_allclose(np.asarray(exe.execute(args)), args[0] @ args[1] + args[2],
                               rtol=1e-5, atol=1e-5)


def test_large_dots_are_not_output_fused():
    text = _output_fusion_module(256, 256, 256)
    exe = get_backend("cpu").compile(parse_module(text))
    kinds = {t.instruction.opcode: t.kind for t in exe.plan.walk()}
    assert kinds == {"dot": "library", "add": "kernel"}


@pytest.mark.parametrize("width", [64, 32])
@pytest.mark.parametrize("m,k,n,llay,rlay,dlay,olay,rc", [
    (7, 19, 33, (1, 0), (1, 0), (0, 1), (1, 0), 0),     # outer, addend column-major
    (7, 19, 33, (0, 1), (1, 0), (0, 1), (0, 1), 0),     # C^T = B^T A^T
    (9, 40, 6, (1, 0), (1, 0), (1, 0), (0, 1), 1),      # inner, output column-major
    (20, 33, 18, (0, 1), (1, 0), (0, 1), (1, 0), 0)])
def test_output_fusion_kernel_reads_the_addend_in_its_layout(m, k, n, llay, rlay, dlay, olay,
                                                             rc, width):
    rhs = (n, k) if rc else (k, n)
    text = f"""HloModule out_fusion_direct
fused {{
  p0 = f32[{m},{k}]{_lay(llay)} parameter(0)
  p1 = f32[{rhs[0]},{rhs[1]}]{_lay(rlay)} parameter(1)
  p2 = f32[{m},{n}]{_lay(dlay)} parameter(2)
  d = f32[{m},{n}]{_lay(olay)} dot(p0, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{rc}}}
  ROOT r = f32[{m},{n}]{_lay(olay)} add(p2, d)
}}
ENTRY main {{
  a = f32[{m},{k}]{_lay(llay)} parameter(0)
  b = f32[{rhs[0]},{rhs[1]}]{_lay(rlay)} parameter(1)
  c = f32[{m},{n}]{_lay(dlay)} parameter(2)
  ROOT f = f32[{m},{n}]{_lay(olay)} fusion(a, b, c), kind=kOutput, calls=fused
}}
"""
    kernel = _check(text, width)
    assert kernel.plan.slot_d == 2


@pytest.mark.parametrize("m,k,n,axis", [(32, 64, 100, 1), (5, 7, 3, 1), (9, 20, 40, 0)])
def test_bias_is_added_in_the_dot_kernel(m, k, n, axis):
    # a dense layer relu(x @ w + b): the bias broadcast is read inside the output fusion
    # (axis 0: one value per row, read with stride 0 along the vectors)
    blen = n if axis == 1 else m
    text = f"""HloModule dense
ENTRY main {{
  x = f32[{m},{k}] parameter(0)
  w = f32[{k},{n}] parameter(1)
  b = f32[{blen}] parameter(2)
  d = f32[{m},{n}] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = f32[{m},{n}] broadcast(b), dimensions={{{axis}}}
  z = f32[{m},{n}] add(d, bb)
  zero = f32[] constant(0)
  zz = f32[{m},{n}] broadcast(zero), dimensions={{}}
  ROOT r = f32[{m},{n}] maximum(z, zz)
}}
"""
    exe = get_backend("cpu").compile(parse_module(text))
    fusions = [t for t in exe.plan.walk() if t.instruction.opcode == "fusion"
               and t.instruction.attrs["kind"] == "kOutput"]
    assert len(fusions) == 1 and fusions[0].kind == "kernel"
    inner = [i.opcode for i in fusions[0].instruction.attrs["calls"].instructions]
    assert "broadcast" in inner and "dot" in inner
    args = _args(text, 7)
    bias = args[2][None, :] if axis == 1 else args[2][:, None]
    want = np.maximum(args[0].astype(np.float64) @ args[1] + bias, 0)
    np.testing.assert_allclose(np.asarray(exe.execute(args)), want, rtol=1e-5, atol=1e-5)
