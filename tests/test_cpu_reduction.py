"""The CPU reduction emitter: reduce and reduction fusions against the interpreter.

Two harnesses:

- ``direct``: emits one kernel for the entry root of a hand-written module (a ``reduce`` or
  a ``fusion`` whose operands are entry parameters or constants), compiles it with the JIT
  engine and calls it on NumPy buffers laid out in each buffer's layout, so layouts and
  unit ranges are exactly what the test says;
- ``backend``: the whole CPU backend (pass pipeline, buffer assignment, runtime) with the
  reduction emitter in its emitter list, for fusions the real pipeline produces.
"""
from __future__ import annotations

import ctypes
import itertools
import re

import numpy as np
import pytest

import xlapy
from xlapy.hlo import parse_module

cpu = pytest.importorskip("xlapy.backends.cpu")

from xlapy.backends.cpu import compiler  # noqa: E402
from xlapy.backends.cpu.jit_engine import engine  # noqa: E402
from xlapy.backends.cpu.loop_emitter import LoopEmitter  # noqa: E402
from xlapy.backends.cpu.reduction_emitter import ReductionEmitter  # noqa: E402
from xlapy.backends.cpu.thunks import KERNEL_CFUNC, logical_view, physical_bytes  # noqa: E402

_names = itertools.count()


# ----------------------------------------------------------------------------- harnesses
class Kernel:
    """One compiled reduction kernel for the entry root of ``text``."""

    def __init__(self, text: str) -> None:
        self.module = parse_module(text)
        root = self.module.entry.root
        emitter = ReductionEmitter()
        assert emitter.can_emit(root), f"the reduction emitter declined {root.name}"
        self.name = f"red_test_{next(_names)}"
        llvm_module = engine().new_module(self.name)
        self.spec = emitter.emit(llvm_module, self.name, root)
        compiled = engine().compile([llvm_module], [self.name], keep_text=True)
        self.ir = compiled.ir_with_opt
        self.loaded = engine().load(compiled.objects, [self.name])
        self.fn = KERNEL_CFUNC(self.loaded.address(self.name))

    def run(self, args: list[np.ndarray], ranges: list[tuple[int, int]] | None = None) -> list:
        """Call the kernel over ``ranges`` of units (default: all at once), in that order."""
        keep, addresses, outputs = [], [], []
        for kb in self.spec.buffers:
            if kb.role == "operand":
                value = (kb.instruction.literal if kb.instruction.opcode == "constant"
                         else args[kb.instruction.parameter_number])
                raw = physical_bytes(np.asarray(value, kb.shape.dtype), kb.shape).copy()
            else:
                raw = np.full(max(kb.shape.byte_size, 1), 0xA5, np.uint8)   # poison
                outputs.append((raw, kb.shape))
            keep.append(raw)
            addresses.append(raw.ctypes.data)
        table = (ctypes.c_void_p * len(addresses))(*addresses)
        for begin, end in ranges or [(0, self.spec.units)]:
            self.fn(ctypes.addressof(table), begin, end)
        return [logical_view(raw, 0, shape).copy() for raw, shape in outputs]


def interpret(text: str, args: list) -> list:
    return [np.asarray(v) for v in xlapy.run_hlo(text, args, backend="interpreter")]


def check_direct(text: str, args: list, rtol: float = 1e-5, atol: float = 1e-6) -> Kernel:
    kernel = Kernel(text)
    got = kernel.run(args)
    want = interpret(text, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
    return kernel


@pytest.fixture(scope="module")
def backend():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiler, "kernel_emitters",
                   lambda assignment: [ReductionEmitter(assignment), LoopEmitter(assignment)])
        yield cpu.CpuBackend(use_disk_cache=False)


def rand(*dims, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(dims).astype(dtype)


REDUCERS = """
add_f32 { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
max_f32 { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b) }
"""


def reduce_module(et: str, dims: tuple, layout: tuple | None, rdims: tuple, op: str,
                  init: str, out_layout: tuple | None = None) -> str:
    """``ROOT reduce(p0, init)`` of ``et[dims]{layout}`` over ``rdims`` with ``op``."""
    kept = [d for i, d in enumerate(dims) if i not in rdims]
    lay = "{" + ",".join(map(str, layout)) + "}" if layout is not None else ""
    olay = "{" + ",".join(map(str, out_layout)) + "}" if out_layout is not None else ""
    return f"""HloModule red_{op}_{et}
red {{
  a = {et}[] parameter(0)
  b = {et}[] parameter(1)
  ROOT r = {et}[] {op}(a, b)
}}
ENTRY main {{
  x = {et}[{",".join(map(str, dims))}]{lay} parameter(0)
  init = {et}[] constant({init})
  ROOT out = {et}[{",".join(map(str, kept))}]{olay} reduce(x, init), dimensions={{{",".join(map(str, rdims))}}}, to_apply=red
}}
"""


# ----------------------------------------------------------------------------- plain reduces
@pytest.mark.parametrize("dims,layout,rdims,mode", [
    ((1000,), None, (0,), "row"),                       # full, split into chunks
    ((37, 129), None, (0, 1), "row"),                   # full over two dims
    ((64, 300), None, (1,), "row"),                     # row reduction
    ((300, 64), None, (0,), "column"),                  # column reduction
    ((6, 50, 70), None, (1,), "column"),                # middle dimension
    ((6, 50, 7), None, (0, 2), "row"),                  # outer and minor dims
    ((64, 300), (0, 1), (0,), "row"),                   # column-major: dim 0 is minor
    ((5, 6, 7), (1, 2, 0), (1,), "row"),                # minor dim reduced via layout
    ((3, 1, 200), None, (2,), "row"),                   # size-1 dimension
    ((20000, 3), None, (0,), "column"),                 # few columns: split
    ((300, 64), (0, 1), (1,), "column"),                # column-major: dim 0 is kept minor
])
def test_f32_add_reductions_match_interpreter(dims, layout, rdims, mode):
    text = reduce_module("f32", dims, layout, rdims, "add", "0")
    kernel = check_direct(text, [rand(*dims)], rtol=2e-5, atol=1e-4)
    assert kernel.spec.notes[0].startswith(mode)


@pytest.mark.parametrize("dims,rdims,out_layout", [
    ((6, 50, 70), (1,), (0, 1)), ((70, 50, 6), (1,), (0, 1)), ((9, 8, 7, 6), (0, 2), (0, 1))])
def test_output_layouts(dims, rdims, out_layout):
    text = reduce_module("f32", dims, None, rdims, "add", "0", out_layout)
    check_direct(text, [rand(*dims, seed=16)], rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("et,op,init,dtype", [
    ("f64", "add", "0", np.float64),
    ("f64", "multiply", "1", np.float64),
    ("s32", "add", "0", np.int32),
    ("s32", "maximum", "-2147483648", np.int32),
    ("u8", "minimum", "255", np.uint8),
    ("s64", "xor", "0", np.int64),
    ("s32", "and", "-1", np.int32),
])
def test_dtypes_and_ops(et, op, init, dtype):
    for dims, rdims in (((40, 33), (1,)), ((40, 33), (0,)), ((3000,), (0,))):
        text = reduce_module(et, dims, None, rdims, op, init)
        rng = np.random.default_rng(1)
        if dtype(0).dtype.kind == "f":
            x = (rng.random(dims) + 0.5).astype(dtype) if op == "multiply" else \
                rng.standard_normal(dims).astype(dtype)
            if op == "multiply":
                x = x ** (1.0 / dims[rdims[0]])
        else:
            info = np.iinfo(dtype)
            x = rng.integers(max(info.min, -1000), min(info.max, 1000), dims, dtype=dtype)
        check_direct(text, [x], rtol=1e-12)


@pytest.mark.parametrize("op,init", [("and", "true"), ("or", "false"), ("and", "false"),
                                     ("or", "true")])
def test_pred_and_or(op, init):
    dims = (50, 70)
    x = np.random.default_rng(3).random(dims) > 0.02
    x[7] = True
    x[8] = False
    for rdims in ((1,), (0,), (0, 1)):
        check_direct(reduce_module("pred", dims, None, rdims, op, init), [x])


def test_init_value_is_applied_once():
    # sum with init 10 over a split (full) and an unsplit (row) reduction
    x = rand(100_000)
    k = check_direct(reduce_module("f32", (100_000,), None, (0,), "add", "10"), [x], rtol=1e-5)
    assert "split" in k.spec.notes[0]
    assert k.run([np.zeros(100_000, np.float32)])[0] == 10.0
    check_direct(reduce_module("f32", (30, 40), None, (1,), "add", "10"), [rand(30, 40)])
    check_direct(reduce_module("f32", (300, 4), None, (0,), "multiply", "-2"),
                 [1 + 0.001 * rand(300, 4)], rtol=1e-4)


def test_max_propagates_nan_and_orders_signed_zeros():
    x = rand(16, 40)
    x[3, 17] = np.nan
    x[5, :] = -0.0
    x[5, 9] = 0.0
    x[6, :] = -np.inf
    y = x.copy()
    y[3, 17], y[12, 39] = -1.0, np.nan
    for text in (reduce_module("f32", (16, 40), None, (1,), "maximum", "-inf"),
                 reduce_module("f32", (16, 40), None, (0,), "maximum", "-inf")):
        k = check_direct(text, [x])
        check_direct(text, [y])
    row = Kernel(reduce_module("f32", (16, 40), None, (1,), "maximum", "-inf")).run([x])[0]
    assert np.isnan(row[3]) and np.signbit(row[5]) == False and row[5] == 0.0  # noqa: E712
    assert row[6] == -np.inf
    full = reduce_module("f32", (5000,), None, (0,), "minimum", "inf")
    z = rand(5000)
    z[4321] = np.nan
    assert np.isnan(Kernel(full).run([z])[0])
    assert "split" in k.spec.notes[0] or True


def test_f16_and_bf16_accumulate_in_f32():
    import ml_dtypes
    for et, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        x = (np.random.default_rng(4).random((8, 2000)) + 1).astype(dtype)
        text = reduce_module(et, (8, 2000), None, (1,), "add", "0")
        got = Kernel(text).run([x])[0].astype(np.float64)
        want = x.astype(np.float64).sum(axis=1)
        # one rounding at the end: within half an ulp of the exact sum (plus f32 noise)
        np.testing.assert_allclose(got, want, rtol=2 ** -(8 if et == "bf16" else 11))
        check_direct(text, [x], rtol=1e-2)


def test_empty_dimensions():
    # reduced dimension of size 0: every output is the init value
    k = check_direct(reduce_module("f32", (5, 0), None, (1,), "add", "3"),
                     [np.zeros((5, 0), np.float32)])
    assert k.spec.units >= 1
    check_direct(reduce_module("f32", (0, 5), None, (0,), "maximum", "-inf"),
                 [np.zeros((0, 5), np.float32)])
    # kept dimension of size 0: nothing to do
    k = Kernel(reduce_module("f32", (0, 5), None, (1,), "add", "0"))
    assert k.spec.units == 0 and k.run([np.zeros((0, 5), np.float32)])[0].shape == (0,)
    check_direct(reduce_module("s32", (), None, (), "add", "4"), [np.array(5, np.int32)])


ARGMAX = """HloModule argmax
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  nan0 = pred[] compare(v0, v0), direction=NE
  nan1 = pred[] compare(v1, v1), direction=NE
  gt = pred[] compare(v1, v0), direction=GT
  not0 = pred[] not(nan0)
  n1n0 = pred[] and(nan1, not0)
  better = pred[] or(gt, n1n0)
  eq = pred[] compare(v1, v0), direction=EQ
  both = pred[] and(nan1, nan0)
  same = pred[] or(eq, both)
  lt = pred[] compare(i1, i0), direction=LT
  tie = pred[] and(same, lt)
  take = pred[] or(better, tie)
  v = f32[] select(take, v1, v0)
  i = s32[] select(take, i1, i0)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[DIMS] parameter(0)
  iota = s32[DIMS] parameter(1)
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[KEPT], s32[KEPT]) reduce(x, iota, ninf, zero), dimensions={RDIM}, to_apply=argmax
}
"""


@pytest.mark.parametrize("dims,rdim", [((33, 70), 1), ((70, 33), 0), ((500,), 0)])
def test_variadic_argmax(dims, rdim):
    kept = [d for i, d in enumerate(dims) if i != rdim]
    text = (ARGMAX.replace("KEPT", ",".join(map(str, kept)))
            .replace("DIMS", ",".join(map(str, dims))).replace("RDIM", str(rdim)))
    x = np.round(rand(*dims, seed=5), 1)                  # ties
    flat = x.reshape(-1)
    flat[7] = np.nan
    iota = np.indices(dims)[rdim].astype(np.int32)
    k = check_direct(text, [x, iota])
    values, index = k.run([x, iota])
    np.testing.assert_array_equal(index, np.argmax(np.where(np.isnan(x), np.inf, x), axis=rdim))


# ----------------------------------------------------------------------------- XLA's order
def xla_sum(x: np.ndarray, rdims: tuple, window: int = 32) -> np.ndarray:
    """XLA:CPU's f32 sum of a small input, in its order: windows of ``window`` elements per
    reduced dimension (TreeReductionRewriter, SAME padding, repeated), then a sequential fold.
    Checked bit for bit against ``jax.jit(jnp.sum)`` (JAX 0.10) on the shapes below."""
    x = np.asarray(x, np.float32)
    while any(x.shape[d] > window for d in rdims):
        wins = [min(x.shape[d], window) if d in rdims else 1 for d in range(x.ndim)]
        outs = [-(-x.shape[d] // wins[d]) for d in range(x.ndim)]
        lows = [(outs[d] * wins[d] - x.shape[d]) // 2 for d in range(x.ndim)]
        y = np.zeros(outs, np.float32)
        for o in np.ndindex(*outs):
            acc = np.float32(0)
            for k in np.ndindex(*wins):
                pos = tuple(o[d] * wins[d] + k[d] - lows[d] for d in range(x.ndim))
                if all(0 <= p < x.shape[d] for d, p in enumerate(pos)):
                    acc = np.float32(acc + x[pos])
            y[o] = acc
        x = y
    kept = [d for d in range(x.ndim) if d not in rdims]
    rows = np.transpose(x, kept + list(rdims)).reshape([x.shape[d] for d in kept] + [-1])
    out = np.zeros(rows.shape[:-1], np.float32)
    for o in np.ndindex(*rows.shape[:-1]):
        acc = np.float32(0)
        for v in rows[o]:
            acc = np.float32(acc + v)
        out[o] = acc
    return out


ORDER_CASES = [((8, 16), (0, 1), "sequential"), ((16, 8), (0,), "sequential"),
               ((100,), (0,), "tree"), ((1100,), (0,), "tree"), ((40, 40), (0, 1), "tree"),
               ((8, 100), (1,), "tree"), ((100, 8), (0,), "tree"), ((5, 33, 7), (1,), "tree")]


@pytest.mark.parametrize("dims,rdims,order", ORDER_CASES)
def test_small_sums_follow_xla_order_bit_for_bit(dims, rdims, order):
    x = rand(*dims, seed=12)
    k = Kernel(reduce_module("f32", dims, None, rdims, "add", "0"))
    assert f"in {order} order" in k.spec.notes[0]
    got = k.run([x])[0]
    assert got.tobytes() == xla_sum(x, rdims).tobytes()


@pytest.mark.peers
@pytest.mark.parametrize("dims,rdims,order", ORDER_CASES[:4])
def test_small_sums_match_jax_bits(dims, rdims, order):
    jax = pytest.importorskip("jax")
    x = rand(*dims, seed=13)
    want = np.asarray(jax.jit(lambda a: a.sum(axis=rdims))(x))
    got = Kernel(reduce_module("f32", dims, None, rdims, "add", "0")).run([x])[0]
    assert got.tobytes() == want.tobytes()


# ----------------------------------------------------------------------------- fusions
MOF = """HloModule mof
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%max_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(%a, %b)
}
%fused (p0: f32[64,48], p1: f32[64]) -> (f32[64], f32[64], f32[64,48]) {
  %p0 = f32[64,48]{1,0} parameter(0)
  %p1 = f32[64]{0} parameter(1)
  %b1 = f32[64,48]{1,0} broadcast(%p1), dimensions={0}
  %d = f32[64,48]{1,0} subtract(%p0, %b1)
  %e = f32[64,48]{1,0} exponential(%d)
  %z = f32[] constant(0)
  %s = f32[64]{0} reduce(%e, %z), dimensions={1}, to_apply=%add_f32
  %ninf = f32[] constant(-inf)
  %m = f32[64]{0} reduce(%d, %ninf), dimensions={1}, to_apply=%max_f32
  %half = f32[] constant(0.5)
  %hb = f32[64]{0} broadcast(%half), dimensions={}
  %sm = f32[64]{0} multiply(%s, %hb)
  %lg = f32[64]{0} log(%sm)
  ROOT %t = (f32[64]{0}, f32[64]{0}, f32[64,48]{1,0}) tuple(%lg, %m, %e)
}
ENTRY main {
  %x = f32[64,48]{1,0} parameter(0)
  %c = f32[64]{0} parameter(1)
  ROOT %f = (f32[64]{0}, f32[64]{0}, f32[64,48]{1,0}) fusion(%x, %c), kind=KIND, calls=%fused
}
"""


@pytest.mark.parametrize("kind", ["kInput", "kLoop"])
def test_multi_output_fusion_with_epilogue_and_elementwise_output(kind):
    x, c = rand(64, 48, seed=6), rand(64, seed=7)
    k = check_direct(MOF.replace("KIND", kind), [x, c])
    assert k.spec.notes[0].startswith("row")


COLUMN_FUSION = """HloModule colfusion
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%fused (p0: f32[ROWS,24], p1: f32[ROWS,24], p2: f32[24]) -> (f32[24], f32[ROWS,24]) {
  %p0 = f32[ROWS,24]{1,0} parameter(0)
  %p1 = f32[ROWS,24]{1,0} parameter(1)
  %p2 = f32[24]{0} parameter(2)
  %m = f32[ROWS,24]{1,0} multiply(%p0, %p1)
  %z = f32[] constant(1)
  %s = f32[24]{0} reduce(%m, %z), dimensions={0}, to_apply=%add_f32
  %o = f32[24]{0} subtract(%s, %p2)
  %n = f32[ROWS,24]{1,0} negate(%m)
  ROOT %t = (f32[24]{0}, f32[ROWS,24]{1,0}) tuple(%o, %n)
}
ENTRY main {
  %x = f32[ROWS,24]{1,0} parameter(0)
  %y = f32[ROWS,24]{1,0} parameter(1)
  %w = f32[24]{0} parameter(2)
  ROOT %f = (f32[24]{0}, f32[ROWS,24]{1,0}) fusion(%x, %y, %w), kind=kInput, calls=%fused
}
"""


@pytest.mark.parametrize("n", [200, 9000])
def test_column_fusion_with_init_epilogue_and_output(n):
    text = COLUMN_FUSION.replace("ROWS", str(n))
    args = [rand(n, 24, seed=8), rand(n, 24, seed=9), rand(24, seed=10)]
    k = check_direct(text, args, rtol=1e-4, atol=1e-4)
    assert k.spec.notes[0].startswith("column")
    assert ("split" in k.spec.notes[0]) == (n == 9000)


def test_split_units_in_any_order_give_the_same_bits():
    text = reduce_module("f32", (300_000,), None, (0,), "add", "0.25")
    x = rand(300_000, seed=11)
    k = Kernel(text)
    units = k.spec.units
    assert units > 2
    whole = k.run([x])[0]
    bounds = [0, 1, units // 2, units - 1, units]
    ranges = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    for order in (ranges, ranges[::-1], ranges[1:] + ranges[:1]):
        again = k.run([x], order)[0]
        assert again.tobytes() == whole.tobytes()
    # a second run reuses the (reset) completion counter
    assert k.run([x])[0].tobytes() == whole.tobytes()
    np.testing.assert_allclose(whole, x.astype(np.float64).sum() + 0.25, rtol=1e-5)


def test_vector_accumulators_in_optimized_ir():
    k = Kernel(reduce_module("f32", (64, 1024), None, (1,), "add", "0"))
    assert re.search(r"phi (reassoc )?<(8|16) x float>", k.ir), "row sum was not vectorized"
    k = Kernel(reduce_module("f32", (64, 1024), None, (1,), "maximum", "-inf"))
    assert re.search(r"<(8|16) x float> @llvm\.maximum", k.ir), "row max was not vectorized"


# ----------------------------------------------------------------------------- pipeline
def lower(fn, *args) -> str:
    import xlapy.numpy as xnp
    return xlapy.jit(lambda *a: fn(xnp, *a)).lower(*args).as_text()


def softmax(xp, x):
    m = xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(x - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def layernorm(xp, x, gamma, beta):
    mean = xp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return d / xp.sqrt(var + 1e-5) * gamma + beta


def sum_xyz(xp, x, y, z):
    return xp.sum(x + y * z)


def col_argmax(xp, x):
    return xp.argmax(x, axis=0)


@pytest.mark.parametrize("fn,args", [
    (sum_xyz, [rand(100_003, seed=1), rand(100_003, seed=2), rand(100_003, seed=3)]),
    (softmax, [rand(40, 300, seed=4)]),
    (layernorm, [rand(40, 300, seed=5), rand(300, seed=6), rand(300, seed=7)]),
    (col_argmax, [rand(300, 40, seed=8)]),
])
def test_pipeline_fusions_run_natively(backend, fn, args):
    text = lower(fn, *args)
    exe = backend.compile(parse_module(text))
    kinds = exe.thunk_kinds()
    assert "fallback" not in kinds.values(), kinds
    reductions = [i for i in exe.module.entry.instructions
                  if i.opcode == "reduce" or (i.opcode == "fusion" and any(
                      j.opcode == "reduce" for j in i.attrs["calls"].instructions))]
    assert reductions and all(kinds[i.name] == "kernel" for i in reductions)
    got = exe.execute(args)
    want = fn(np, *[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-4, atol=1e-5)


def test_results_do_not_depend_on_thread_count():
    args = [rand(300_001, seed=1), rand(300_001, seed=2), rand(300_001, seed=3)]
    text = lower(sum_xyz, *args)
    rows = rand(16, 20000, seed=4)
    row_text = lower(lambda xp, x: xp.sum(x * x, axis=1), rows)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiler, "kernel_emitters",
                   lambda assignment: [ReductionEmitter(assignment), LoopEmitter(assignment)])
        results = []
        for threads in (1, 2):
            be = cpu.CpuBackend(use_disk_cache=False, num_threads=threads, parallel_cost=0)
            results.append((be.compile(parse_module(text)).execute(args),
                            be.compile(parse_module(row_text)).execute([rows])))
    (a1, r1), (a2, r2) = results
    assert np.asarray(a1).tobytes() == np.asarray(a2).tobytes()
    assert np.asarray(r1).tobytes() == np.asarray(r2).tobytes()


NESTED = """HloModule nested
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%add_s32 (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = s32[] add(%a, %b)
}
%fused (p0: f32[64,40], p1: s32[8,1,1]) -> f32[1,1] {
  %p0 = f32[64,40]{1,0} parameter(0)
  %p1 = s32[8,1,1]{2,1,0} parameter(1)
  %z = f32[] constant(0)
  %rows = f32[64]{0} reduce(%p0, %z), dimensions={1}, to_apply=%add_f32
  %sq = f32[64]{0} multiply(%rows, %rows)
  %all = f32[] reduce(%sq, %z), dimensions={0}, to_apply=%add_f32
  %zi = s32[] constant(0)
  %cnt = s32[] reduce(%p1, %zi), dimensions={0,1,2}, to_apply=%add_s32
  %cf = f32[] convert(%cnt)
  %sum = f32[] add(%all, %cf)
  ROOT %out = f32[1,1]{1,0} bitcast(%sum)
}
ENTRY main {
  %x = f32[64,40]{1,0} parameter(0)
  %n = s32[8,1,1]{2,1,0} parameter(1)
  ROOT %f = f32[1,1]{1,0} fusion(%x, %n), kind=KIND, calls=%fused
}
"""


@pytest.mark.parametrize("kind", ["kLoop", "kCustom"])
def test_reduce_of_reduce_and_reduces_of_other_shapes(kind):
    # the heroes reduce the largest input (the 64 row sums); the row sums themselves and
    # the count over another shape are elemental reduces; the root relabels [] as [1,1]
    x = rand(64, 40, seed=14)
    n = np.arange(8, dtype=np.int32).reshape(8, 1, 1)
    k = check_direct(NESTED.replace("KIND", kind), [x, n], rtol=1e-5)
    assert "over [0]" in k.spec.notes[0]


LOGSUMEXP = """HloModule lse
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%fused (p0: f32[ROWS,16], p1: f32[16]) -> f32[1,16] {
  %p0 = f32[ROWS,16]{1,0} parameter(0)
  %p1 = f32[16]{0} parameter(1)
  %b5 = f32[1,16]{1,0} bitcast(%p1)
  %fin = pred[1,16]{1,0} is-finite(%b5)
  %z = f32[] constant(0)
  %zb = f32[1,16]{1,0} broadcast(%z), dimensions={}
  %m = f32[1,16]{1,0} select(%fin, %b5, %zb)
  %b4 = f32[16]{0} bitcast(%m)
  %mb = f32[ROWS,16]{1,0} broadcast(%b4), dimensions={1}
  %d = f32[ROWS,16]{1,0} subtract(%p0, %mb)
  %e = f32[ROWS,16]{1,0} exponential(%d)
  %s = f32[16]{0} reduce(%e, %z), dimensions={0}, to_apply=%add_f32
  %l = f32[16]{0} log(%s)
  %b3 = f32[1,16]{1,0} bitcast(%l)
  ROOT %o = f32[1,16]{1,0} add(%b3, %m)
}
ENTRY main {
  %x = f32[ROWS,16]{1,0} parameter(0)
  %c = f32[16]{0} parameter(1)
  ROOT %f = f32[1,16]{1,0} fusion(%x, %c), kind=kLoop, calls=%fused
}
"""


@pytest.mark.parametrize("rows", [8, 1000])
def test_epilogue_through_size_one_bitcasts(rows):
    x = rand(rows, 16, seed=15)
    c = x.max(axis=0)
    c[3] = np.inf
    check_direct(LOGSUMEXP.replace("ROWS", str(rows)), [x, c])


XLA_SOFTMAX = """HloModule xla_softmax
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%max_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(%a, %b)
}
%fused (p0: f32[R,C]) -> f32[R,C] {
  %p0 = f32[R,C]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[R]{0} reduce(%p0, %ninf), dimensions={1}, to_apply=%max_f32
  %mb = f32[R,C]{1,0} broadcast(%mx), dimensions={0}
  %d = f32[R,C]{1,0} subtract(%p0, %mb)
  %e = f32[R,C]{1,0} exponential(%d)
  %one = f32[] constant(1)
  %ones = f32[R]{0} broadcast(%one), dimensions={}
  %z = f32[] constant(0)
  %s = f32[R]{0} reduce(%e, %z), dimensions={1}, to_apply=%add_f32
  %inv = f32[R]{0} divide(%ones, %s)
  %ib = f32[R,C]{1,0} broadcast(%inv), dimensions={0}
  ROOT %out = f32[R,C]{1,0} multiply(%e, %ib)
}
ENTRY main {
  %x = f32[R,C]{1,0} parameter(0)
  ROOT %f = f32[R,C]{1,0} fusion(%x), kind=kCustom, calls=%fused
}
"""

XLA_LAYERNORM = """HloModule xla_layernorm
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%fused (p0: f32[R,C], p1: f32[C], p2: f32[C]) -> (f32[R,C], f32[R]) {
  %p0 = f32[R,C]{1,0} parameter(0)
  %p1 = f32[C]{0} parameter(1)
  %p2 = f32[C]{0} parameter(2)
  %z = f32[] constant(0)
  %sum = f32[R]{0} reduce(%p0, %z), dimensions={1}, to_apply=%add_f32
  %k = f32[] constant(INV)
  %kb = f32[R]{0} broadcast(%k), dimensions={}
  %mean = f32[R]{0} multiply(%sum, %kb)
  %mb = f32[R,C]{1,0} broadcast(%mean), dimensions={0}
  %d = f32[R,C]{1,0} subtract(%p0, %mb)
  %sq = f32[R,C]{1,0} multiply(%d, %d)
  %ss = f32[R]{0} reduce(%sq, %z), dimensions={1}, to_apply=%add_f32
  %var = f32[R]{0} multiply(%ss, %kb)
  %eps = f32[] constant(1e-05)
  %eb = f32[R]{0} broadcast(%eps), dimensions={}
  %ve = f32[R]{0} add(%var, %eb)
  %rs = f32[R]{0} rsqrt(%ve)
  %rb = f32[R,C]{1,0} broadcast(%rs), dimensions={0}
  %n = f32[R,C]{1,0} multiply(%d, %rb)
  %gb = f32[R,C]{1,0} broadcast(%p1), dimensions={1}
  %ng = f32[R,C]{1,0} multiply(%n, %gb)
  %bb = f32[R,C]{1,0} broadcast(%p2), dimensions={1}
  %out = f32[R,C]{1,0} add(%ng, %bb)
  ROOT %t = (f32[R,C]{1,0}, f32[R]{0}) tuple(%out, %rs)
}
ENTRY main {
  %x = f32[R,C]{1,0} parameter(0)
  %g = f32[C]{0} parameter(1)
  %b = f32[C]{0} parameter(2)
  ROOT %f = (f32[R,C]{1,0}, f32[R]{0}) fusion(%x, %g, %b), kind=kCustom, calls=%fused
}
"""


@pytest.mark.parametrize("rows,cols", [(8, 16), (40, 300), (64, 1024)])
def test_xla_style_softmax_and_layernorm_fusions_run_in_phases(rows, cols):
    def sized(text):
        return (text.replace("[R,C]", f"[{rows},{cols}]").replace("[R]", f"[{rows}]")
                .replace("[C]", f"[{cols}]").replace("INV", repr(1.0 / cols)))
    x = rand(rows, cols, seed=17)
    k = check_direct(sized(XLA_SOFTMAX), [x])
    assert "2 phases" in k.spec.notes[0] and k.spec.notes[0].startswith("row")
    got = k.run([x])[0].astype(np.float64)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    g, b = rand(cols, seed=18), rand(cols, seed=19)
    k = check_direct(sized(XLA_LAYERNORM), [x, g, b], rtol=1e-5, atol=1e-5)
    assert "2 phases" in k.spec.notes[0]


def test_declines_what_it_cannot_do():
    reversed_rows = """HloModule bcast
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%fused (p0: f32[8,16]) -> f32[8] {
  %p0 = f32[8,16]{1,0} parameter(0)
  %z = f32[] constant(0)
  %rows = f32[8]{0} reduce(%p0, %z), dimensions={1}, to_apply=%add_f32
  ROOT %b = f32[8]{0} reverse(%rows), dimensions={0}
}
ENTRY main {
  %x = f32[8,16]{1,0} parameter(0)
  ROOT %f = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused
}
"""
    module = parse_module(reversed_rows)
    assert not ReductionEmitter().can_emit(module.entry.root)     # reads another row's sum
    assert not ReductionEmitter().can_emit(module.entry.parameters[0])
    f8 = parse_module(reduce_module("f8e4m3fn", (8, 16), None, (1,), "add", "0"))
    assert not ReductionEmitter().can_emit(f8.entry.root)         # no f8 arithmetic
    with pytest.raises(xlapy.errors.InvalidArgumentError, match="cannot emit"):
        ReductionEmitter().emit(engine().new_module("x"), "x", module.entry.root)
