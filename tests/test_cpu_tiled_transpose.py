"""Tiled transposes in CPU loop kernels (``transpose_emitter``): when they are planned, and
that tiled kernels give the interpreter's values bit for bit.

Most tests emit one loop kernel for a hand-written module's entry root (operands are
entry parameters, laid out in each buffer's layout), with small tiles and no size
threshold so that small arrays have many tiles and clipped edge tiles; the kernel's
units run in several ranges, in reverse order, as threads may run them.
"""
from __future__ import annotations

import ctypes
import glob
import itertools
from math import prod
import os

import ml_dtypes
import numpy as np
import pytest

import xlapy.backends.cpu as cpu
from cpu_kernel_harness import SharedBuffer, assert_same, interpret, run_both   # noqa: E402
from xlapy.backends.cpu import transpose_emitter   # noqa: E402
from xlapy.backends.cpu.jit_engine import engine   # noqa: E402
from xlapy.backends.cpu.loop_emitter import LoopEmitter   # noqa: E402
from xlapy.backends.cpu.thunks import KERNEL_CFUNC, logical_view, physical_bytes   # noqa: E402
from xlapy.config import debug_options   # noqa: E402
from xlapy.hlo import parse_module   # noqa: E402

_names = itertools.count()

# element type -> (NumPy dtype, a unary op, a binary op) valid for it
TYPES = {
    "f32": (np.float32, "negate", "add"),
    "f64": (np.float64, "negate", "multiply"),
    "s8": (np.int8, "negate", "add"),
    "bf16": (ml_dtypes.bfloat16, "negate", "add"),
    "c64": (np.complex64, "negate", "add"),
    "pred": (np.bool_, "not", "xor"),
}


@pytest.fixture
def small_tiles(monkeypatch):
    """Tile every transposing kernel, with 8-element runs (many edge tiles)."""
    monkeypatch.setattr(transpose_emitter, "MIN_TILED_ELEMENTS", 1)
    monkeypatch.setattr(transpose_emitter, "TILE_ELEMENTS", 8)
    monkeypatch.setattr(transpose_emitter, "TILE_MIN_BYTES", 8)
    monkeypatch.setattr(transpose_emitter, "TILE_MAX_BYTES", 64)


def values(et: str, dims, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = TYPES[et][0]
    if et == "pred":
        return rng.random(dims) < 0.5
    if et == "s8":
        return rng.integers(-128, 128, dims).astype(np.int8)
    if et == "c64":
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    return rng.standard_normal(dims).astype(dtype)


class LoopKernel:
    """One loop kernel for the entry root of ``text``, compiled and callable on arrays."""

    def __init__(self, text: str, shared: int | None = None) -> None:
        """``shared``: an operand that buffer assignment put in the output's buffer."""
        self.module = parse_module(text)
        root = self.module.entry.root
        emitter = LoopEmitter(SharedBuffer(root, shared) if shared is not None else None)
        assert emitter.can_emit(root), f"the loop emitter declined {root.name}"
        self.plan = emitter.plan(root)
        self.name = f"tiled_test_{next(_names)}"
        llvm_module = engine().new_module(self.name)
        self.spec = emitter.emit(llvm_module, self.name, root)
        compiled = engine().compile([llvm_module], [self.name])
        self.loaded = engine().load(compiled.objects, [self.name])
        self.fn = KERNEL_CFUNC(self.loaded.address(self.name))

    @property
    def tiling(self):
        return self.plan.tiling

    def run(self, args: list, pieces: int = 3) -> list[np.ndarray]:
        """Run the units in ``pieces`` ranges, last range first; returns the outputs."""
        keep, outputs = [], []
        shared = {k: j for j, k in self.plan.aliases.items()}
        for slot, kb in enumerate(self.spec.buffers):
            if kb.role == "operand":
                value = np.asarray(args[kb.instruction.parameter_number], kb.shape.dtype)
                raw = physical_bytes(value, kb.shape).copy()
            else:
                raw = keep[shared[slot]] if slot in shared else \
                    np.full(max(kb.shape.byte_size, 1), 0xA5, np.uint8)
                outputs.append((raw, kb.shape))
            keep.append(raw)
        table = (ctypes.c_void_p * len(keep))(*[k.ctypes.data for k in keep])
        units = self.spec.units
        bounds = sorted({0, units, *(units * k // pieces for k in range(1, pieces))})
        for begin, end in reversed(list(zip(bounds, bounds[1:]))):
            self.fn(ctypes.addressof(table), begin, end)
        return [logical_view(raw, 0, shape).copy() for raw, shape in outputs]


def check(text: str, args: list) -> LoopKernel:
    """The kernel's outputs equal the interpreter's bit for bit."""
    kernel = LoopKernel(text)
    assert_same(kernel.run(args), interpret(text, args))
    return kernel


def layout(m2m) -> str:
    return "{" + ",".join(map(str, m2m)) + "}"


def shape(et: str, dims, m2m=None) -> str:
    return f"{et}[{','.join(map(str, dims))}]" + (layout(m2m) if m2m is not None else "")


def transpose_module(et, in_dims, perm, in_m2m, out_m2m, pre=None, post=None) -> str:
    """``post(transpose(pre(x)), y)`` as a loop fusion (plain transpose without ops)."""
    out_dims = [in_dims[p] for p in perm]
    x, out = shape(et, in_dims, in_m2m), shape(et, out_dims, out_m2m)
    dims = "{" + ",".join(map(str, perm)) + "}"
    if pre is None and post is None:
        return f"""HloModule t
ENTRY main {{
  x = {x} parameter(0)
  ROOT t = {out} transpose(x), dimensions={dims}
}}"""
    y_param = f"\n  y = {out} parameter(1)" if post else ""
    body = [f"p = {x} parameter(0)"]
    if pre:
        body.append(f"v = {shape(et, in_dims)} {pre}(p)")
    body.append(f"t = {shape(et, out_dims)} transpose({'v' if pre else 'p'}), dimensions={dims}")
    if post:
        body.append(f"q = {out} parameter(1)")
        body.append(f"ROOT r = {out} {post}(t, q)")
    else:
        body[-1] = "ROOT " + body[-1].replace(shape(et, out_dims), out, 1)
    operands = "x, y" if post else "x"
    return "HloModule t\nf {\n  " + "\n  ".join(body) + f"""
}}
ENTRY main {{
  x = {x} parameter(0){y_param}
  ROOT r = {out} fusion({operands}), kind=kLoop, calls=f
}}"""


def moves_minor(in_dims, perm, in_m2m, out_m2m) -> bool:
    """Whether the input's physically minor dimension (of extent > 1) is not the output's."""
    out_dims = [in_dims[p] for p in perm]
    in_minor = next((d for d in in_m2m if in_dims[d] > 1), None)
    out_minor = next((d for d in out_m2m if out_dims[d] > 1), None)
    if in_minor is None or out_minor is None:
        return False
    return list(perm).index(in_minor) != out_minor and \
        sum(1 for n in out_dims if n > 1) >= 2


# ----------------------------------------------------------------------------- correctness
@pytest.mark.parametrize("seed", range(24))
def test_random_transposes_match_the_interpreter(small_tiles, seed):
    rng = np.random.default_rng(seed)
    rank = 2 + seed % 3
    in_dims = [int(rng.choice([1, 2, 3, 7, 9, 16, 21])) for _ in range(rank)]
    perm = [int(p) for p in rng.permutation(rank)]
    in_m2m = [int(d) for d in rng.permutation(rank)]
    out_m2m = list(range(rank - 1, -1, -1)) if seed % 2 else \
        [int(d) for d in rng.permutation(rank)]
    et = list(TYPES)[seed % len(TYPES)]
    _, unary, binary = TYPES[et]
    pre, post = [(None, None), (unary, None), (None, binary), (unary, binary)][seed % 4]
    text = transpose_module(et, in_dims, perm, in_m2m, out_m2m, pre, post)
    out_dims = [in_dims[p] for p in perm]
    args = [values(et, in_dims, seed)] + ([values(et, out_dims, seed + 100)] if post else [])
    kernel = check(text, args)
    assert (kernel.tiling is not None) == moves_minor(in_dims, perm, in_m2m, out_m2m), \
        (text, kernel.tiling)


@pytest.mark.parametrize("et", list(TYPES))
@pytest.mark.parametrize("ops", ["plain", "before", "after", "both"])
def test_every_element_type_with_fused_ops(small_tiles, et, ops):
    _, unary, binary = TYPES[et]
    pre = unary if ops in ("before", "both") else None
    post = binary if ops in ("after", "both") else None
    in_dims, perm = [19, 5, 12], [2, 0, 1]
    text = transpose_module(et, in_dims, perm, [2, 1, 0], [2, 1, 0], pre, post)
    args = [values(et, in_dims, 1)] + ([values(et, [12, 19, 5], 2)] if post else [])
    kernel = check(text, args)
    assert kernel.tiling is not None
    assert "tiled transpose" in " ".join(kernel.spec.notes)


@pytest.mark.parametrize("in_m2m,out_m2m,tiled", [
    ([1, 0], [1, 0], True),        # logical transpose, row-major both: minor moves
    ([0, 1], [1, 0], False),       # column-major input: the transpose reads it in order
    ([1, 0], [0, 1], False),
    ([0, 1], [0, 1], True),
])
def test_layouts_decide_whether_a_transpose_is_tiled(small_tiles, in_m2m, out_m2m, tiled):
    text = transpose_module("f32", [37, 23], [1, 0], in_m2m, out_m2m)
    kernel = check(text, [values("f32", [37, 23], 3)])
    assert (kernel.tiling is not None) == tiled


@pytest.mark.parametrize("in_m2m,out_m2m", [([1, 0], [0, 1]), ([0, 1], [1, 0]),
                                            ([2, 1, 0], [0, 2, 1])])
def test_layout_changing_copy_is_tiled(small_tiles, in_m2m, out_m2m):
    dims = [13, 30] if len(in_m2m) == 2 else [6, 13, 30]
    text = f"""HloModule c
ENTRY main {{
  x = {shape('f32', dims, in_m2m)} parameter(0)
  ROOT c = {shape('f32', dims, out_m2m)} copy(x)
}}"""
    x = values("f32", dims, 4)
    kernel = check(text, [x])
    assert kernel.tiling is not None
    np.testing.assert_array_equal(kernel.run([x])[0], x)


MULTI_OUTPUT = """HloModule m
f {
  p = f32[40,27]{1,0} parameter(0)
  t = f32[27,40]{1,0} transpose(p), dimensions={1,0}
  n = f32[27,40]{0,1} negate(t)
  ROOT r = (f32[27,40]{1,0}, f32[27,40]{0,1}) tuple(t, n)
}
ENTRY main {
  x = f32[40,27]{1,0} parameter(0)
  ROOT r = (f32[27,40]{1,0}, f32[27,40]{0,1}) fusion(x), kind=kLoop, calls=f
}"""


def test_multi_output_fusion_in_two_layouts(small_tiles):
    x = values("f32", [40, 27], 5)
    kernel = check(MULTI_OUTPUT, [x])
    assert kernel.tiling is not None
    t, n = kernel.run([x])
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(n, -x.T)


BITCAST_ROOT = """HloModule b
f {
  p = f32[24,10]{1,0} parameter(0)
  t = f32[10,24]{1,0} transpose(p), dimensions={1,0}
  e = f32[10,24]{1,0} negate(t)
  ROOT b = f32[240]{0} bitcast(e)
}
ENTRY main {
  x = f32[24,10]{1,0} parameter(0)
  ROOT r = f32[240]{0} fusion(x), kind=kLoop, calls=f
}"""


def test_fusion_with_a_bitcast_root(small_tiles):
    kernel = check(BITCAST_ROOT, [values("f32", [24, 10], 6)])
    assert kernel.tiling is not None


BROADCAST_AND_SLICE = """HloModule bs
f {
  p = f32[50,3,41]{2,1,0} parameter(0)
  s = f32[50,3,33]{2,1,0} slice(p), slice={[0:50], [0:3], [4:37]}
  t = f32[33,3,50]{2,1,0} transpose(s), dimensions={2,1,0}
  v = f32[50]{0} parameter(1)
  b = f32[33,3,50]{2,1,0} broadcast(v), dimensions={2}
  ROOT r = f32[33,3,50]{2,1,0} subtract(t, b)
}
ENTRY main {
  x = f32[50,3,41]{2,1,0} parameter(0)
  y = f32[50]{0} parameter(1)
  ROOT r = f32[33,3,50]{2,1,0} fusion(x, y), kind=kLoop, calls=f
}"""


def test_sliced_operand_and_broadcast_are_traced(small_tiles):
    kernel = check(BROADCAST_AND_SLICE, [values("f32", [50, 3, 41], 7), values("f32", [50], 8)])
    assert kernel.tiling is not None and kernel.tiling.hero_slot == 0


RESHAPED = """HloModule rs
f {
  p = f32[40,48]{1,0} parameter(0)
  r = f32[40,6,8]{2,1,0} reshape(p)
  t = f32[8,6,40]{2,1,0} transpose(r), dimensions={2,1,0}
  ROOT b = f32[8,1,6,40]{3,2,1,0} bitcast(t)
}
ENTRY main {
  x = f32[40,48]{1,0} parameter(0)
  ROOT r = f32[8,1,6,40]{3,2,1,0} fusion(x), kind=kLoop, calls=f
}"""


def test_reshapes_and_bitcasts_are_traced(small_tiles):
    x = values("f32", [40, 48], 15)
    kernel = check(RESHAPED, [x])
    plan = kernel.tiling
    # the operand's minor dim 48 is reshaped into (6, 8): its reads run along output dim 0
    assert plan is not None and plan.read_order[-1] == 0 and plan.write_order[-1] == 2
    np.testing.assert_array_equal(kernel.run([x])[0],
                                  x.reshape(40, 6, 8).transpose(2, 1, 0)[:, None])


def test_tile_buffers_too_large_for_the_stack_stay_untiled(small_tiles, monkeypatch):
    monkeypatch.setattr(transpose_emitter, "MAX_TILE_BUFFER_BYTES", 64)
    kernel = check(MULTI_OUTPUT, [values("f32", [40, 27], 16)])
    assert kernel.tiling is None


RMSPROP_UPDATE = """HloModule rms
f {
  w = f32[230,51]{1,0} parameter(0)
  g = f32[51,230]{1,0} parameter(1)
  lr = f32[] parameter(2)
  v = f32[230,51]{1,0} parameter(3)
  b = f32[51,230]{1,0} broadcast(lr), dimensions={}
  m = f32[51,230]{1,0} multiply(b, g)
  t = f32[230,51]{1,0} transpose(m), dimensions={1,0}
  s = f32[230,51]{1,0} sqrt(v)
  d = f32[230,51]{1,0} divide(t, s)
  ROOT r = f32[230,51]{1,0} subtract(w, d)
}
ENTRY main {
  w = f32[230,51]{1,0} parameter(0)
  g = f32[51,230]{1,0} parameter(1)
  lr = f32[] parameter(2)
  v = f32[230,51]{1,0} parameter(3)
  ROOT r = f32[230,51]{1,0} fusion(w, g, lr, v), kind=kLoop, calls=f
}"""


def test_only_the_transpose_goes_through_the_tile_buffer(small_tiles):
    """The read phase computes the transpose (and what it reads); the operands read in
    output order are read in the write phase."""
    rng = np.random.default_rng(17)
    args = [values("f32", [230, 51], 18), values("f32", [51, 230], 19), np.float32(0.01),
            rng.random((230, 51)).astype(np.float32) + 0.5]
    kernel = check(RMSPROP_UPDATE, args)
    assert [h.name for h in kernel.tiling.heroes] == ["t"]


def test_a_parameter_in_the_transposed_layout_is_the_tile_buffer(small_tiles):
    text = """HloModule lay
f {
  p = f32[90,70]{0,1} parameter(0)
  q = f32[90,70]{1,0} parameter(1)
  ROOT a = f32[90,70]{1,0} add(p, q)
}
ENTRY main {
  x = f32[90,70]{0,1} parameter(0)
  y = f32[90,70]{1,0} parameter(1)
  ROOT r = f32[90,70]{1,0} fusion(x, y), kind=kLoop, calls=f
}"""
    kernel = check(text, [values("f32", [90, 70], 20), values("f32", [90, 70], 21)])
    assert [h.name for h in kernel.tiling.heroes] == ["p"]


def test_plain_elementwise_op_on_a_transposed_layout(small_tiles):
    text = """HloModule plain
ENTRY main {
  x = f32[90,70]{0,1} parameter(0)
  y = f32[90,70]{1,0} parameter(1)
  ROOT a = f32[90,70]{1,0} multiply(x, y)
}"""
    kernel = check(text, [values("f32", [90, 70], 22), values("f32", [90, 70], 23)])
    assert [h.name for h in kernel.tiling.heroes] == ["x"]


def test_a_transpose_also_read_at_other_indices_is_computed_whole_in_the_read_phase(
        small_tiles):
    """``t`` is an output and also reversed into the other output: the write phase would
    need it outside the tile, so both outputs are computed in the read phase."""
    text = """HloModule rev
f {
  p = f32[40,27]{1,0} parameter(0)
  t = f32[27,40]{1,0} transpose(p), dimensions={1,0}
  v = f32[27,40]{1,0} reverse(t), dimensions={0,1}
  ROOT r = (f32[27,40]{1,0}, f32[27,40]{1,0}) tuple(t, v)
}
ENTRY main {
  x = f32[40,27]{1,0} parameter(0)
  ROOT r = (f32[27,40]{1,0}, f32[27,40]{1,0}) fusion(x), kind=kLoop, calls=f
}"""
    x = values("f32", [40, 27], 24)
    kernel = check(text, [x])
    assert [h.name for h in kernel.tiling.heroes] == ["t", "v"]
    t, v = kernel.run([x])
    np.testing.assert_array_equal(v, x.T[::-1, ::-1])


IN_PLACE = """HloModule ip
f {
  p = f32[33,45]{1,0} parameter(0)
  q = f32[45,33]{1,0} parameter(1)
  t = f32[45,33]{1,0} transpose(p), dimensions={1,0}
  ROOT r = f32[45,33]{1,0} add(t, q)
}
ENTRY main {
  x = f32[33,45]{1,0} parameter(0)
  y = f32[45,33]{1,0} parameter(1)
  ROOT r = f32[45,33]{1,0} fusion(x, y), kind=kLoop, calls=f
}"""


def test_operand_sharing_the_output_buffer(small_tiles):
    kernel = LoopKernel(IN_PLACE, shared=1)
    assert kernel.plan.aliases and kernel.tiling is not None
    x, y = values("f32", [33, 45], 9), values("f32", [45, 33], 10)
    assert_same(kernel.run([x, y]), interpret(IN_PLACE, [x, y]))


TRANSCENDENTAL = """HloModule tr
f {
  p = f32[70,45]{1,0} parameter(0)
  q = f32[45,70]{0,1} parameter(1)
  e = f32[70,45]{1,0} exponential(p)
  t = f32[45,70]{1,0} transpose(e), dimensions={1,0}
  h = f32[45,70]{1,0} tanh(q)
  ROOT r = f32[45,70]{1,0} divide(t, h)
}
ENTRY main {
  x = f32[70,45]{1,0} parameter(0)
  y = f32[45,70]{0,1} parameter(1)
  ROOT r = f32[45,70]{1,0} fusion(x, y), kind=kLoop, calls=f
}"""


def test_tiled_and_untiled_kernels_agree_bit_for_bit(monkeypatch, small_tiles):
    """Tiling changes only the order of the work: the same generators give the same bits
    (here with transcendental ops, whose last bit may differ from NumPy's)."""
    args = [values("f32", [70, 45], 13), values("f32", [45, 70], 14)]
    tiled = LoopKernel(TRANSCENDENTAL)
    monkeypatch.setattr(transpose_emitter, "MIN_TILED_ELEMENTS", 1 << 62)
    untiled = LoopKernel(TRANSCENDENTAL)
    assert tiled.tiling is not None and untiled.tiling is None
    assert_same(tiled.run(args), untiled.run(args, pieces=1))


# ----------------------------------------------------------------------------- when to tile
CIFAR = """HloModule cifar
f {
  p = f32[256,32,32,32]{3,2,1,0} parameter(0)
  z = f32[] constant(0)
  bz = f32[256,32,32,32]{3,2,1,0} broadcast(z), dimensions={}
  m = f32[256,32,32,32]{3,2,1,0} maximum(p, bz)
  ROOT t = f32[32,32,32,256]{3,2,1,0} transpose(m), dimensions={1,2,3,0}
}
ENTRY main {
  x = f32[256,32,32,32]{3,2,1,0} parameter(0)
  ROOT maximum_transpose_fusion = f32[32,32,32,256]{3,2,1,0} fusion(x), kind=kLoop, calls=f
}"""


def test_large_transpose_fusion_is_tiled_by_default():
    kernel = LoopKernel(CIFAR)
    plan = kernel.tiling
    # output runs along dim 3 (the operand's dim 0); operand runs along dim 2 (its minor
    # dim 3), taken whole
    assert plan is not None and plan.write_order[-1] == 3 and plan.read_order[-1] == 2
    assert plan.tile[0] == 1 and plan.tile[2] == 32 and 1 < plan.tile[3] < 256
    assert kernel.spec.units == plan.units > 1
    x = values("f32", [256, 32, 32, 32], 11)
    np.testing.assert_array_equal(kernel.run([x])[0],
                                  np.maximum(x, 0).transpose(1, 2, 3, 0))


def test_the_backend_compiles_a_large_transpose_to_a_tiled_kernel(tmp_path):
    backend = cpu.CpuBackend(use_disk_cache=False)
    x = values("f32", [256, 32, 32, 32], 12)
    with debug_options(xla_dump_to=str(tmp_path)):
        got, want = run_both(backend, CIFAR, [x], native=("maximum_transpose_fusion",))
    assert_same(got, want)
    (ir_file,) = glob.glob(os.path.join(tmp_path, "*.ir-no-opt.ll"))
    text = open(ir_file).read()
    kernel = text[text.index("maximum_transpose_fusion"):]
    assert "%\"tile0\" = alloca" in kernel or "%tile0 = alloca" in kernel


@pytest.mark.parametrize("text", [
    # the minor dimension stays minor: rows are read contiguously already
    """HloModule keep
ENTRY main {
  x = f32[256,32,32,32]{3,2,1,0} parameter(0)
  ROOT t = f32[32,32,256,32]{3,2,1,0} transpose(x), dimensions={1,2,0,3}
}""",
    # small: stays in cache
    """HloModule small
ENTRY main {
  x = f32[64,64]{1,0} parameter(0)
  ROOT t = f32[64,64]{1,0} transpose(x), dimensions={1,0}
}""",
    # no transpose at all
    """HloModule ew
ENTRY main {
  x = f32[512,512]{1,0} parameter(0)
  ROOT n = f32[512,512]{1,0} negate(x)
}""",
    # the transposed operand is broadcast along the output's minor dimension
    """HloModule bcast
ENTRY main {
  x = f32[512]{0} parameter(0)
  ROOT b = f32[512,512]{1,0} broadcast(x), dimensions={0}
}""",
])
def test_untiled_kernels(text):
    assert LoopKernel(text).tiling is None


def test_in_place_dynamic_update_slice_is_not_tiled():
    text = """HloModule dus
ENTRY main {
  x = f32[300,300]{1,0} parameter(0)
  u = f32[300,8]{0,1} parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[300,300]{1,0} dynamic-update-slice(x, u, i, i)
}"""
    kernel = LoopKernel(text, shared=0)
    assert kernel.plan.in_place_dus and kernel.tiling is None


def test_tile_shapes_follow_the_operand_and_output_minor_dims():
    reads = "HloModule s\nENTRY main {\n  x = f32[256,32,32,3]{3,2,1,0} parameter(0)\n" \
            "  ROOT t = f32[3,32,32,256]{3,2,1,0} transpose(x), dimensions={3,1,2,0}\n}"
    plan = LoopKernel(reads).tiling
    # output runs along dim 3; operand runs cover its minor dim 3 (output dim 0) whole
    # and continue into its next dim (output dim 2)
    assert plan.tile[0] == 3 and plan.tile[3] > 1 and plan.tile[2] > 1 and plan.tile[1] == 1
    assert plan.read_order[-2:] == (2, 0) and plan.write_order[-1] == 3


# ----------------------------------------------------------------------------- register blocks
@pytest.mark.parametrize("et", ["f32", "f64", "s8", "bf16", "pred"])
@pytest.mark.parametrize("in_dims,perm", [
    ([131, 130], [1, 0]),                  # edge tiles of 3 and 2 elements on both sides
    ([5, 30, 30, 32], [2, 3, 0, 1]),       # a weight gradient's operand: 30 padded to 32
    ([3, 13, 13, 64], [0, 2, 3, 1]),       # NCHW to NHWC with 13 x 13 planes
])
def test_register_blocks_at_default_tile_sizes(et, in_dims, perm):
    """Full-size tiles whose transposed extents are not multiples of the block: the
    block phase moves padded blocks, the write phase reads only the tile's elements."""
    _, unary, binary = TYPES[et]
    out_dims = [in_dims[p] for p in perm]
    rank = len(in_dims)
    m2m = list(range(rank - 1, -1, -1))
    for pre, post in [(None, None), (unary, binary)]:
        text = transpose_module(et, in_dims, perm, m2m, m2m, pre, post)
        args = [values(et, in_dims, 3)] + ([values(et, out_dims, 4)] if post else [])
        kernel = check(text, args)
        assert kernel.tiling is not None and kernel.tiling.block_dims is not None
        assert f"{transpose_emitter.BLOCK}x{transpose_emitter.BLOCK} register blocks" in \
            " ".join(kernel.spec.notes)


def test_complex_tiles_are_read_without_register_blocks(small_tiles):
    text = transpose_module("c64", [19, 12], [1, 0], [1, 0], [1, 0])
    kernel = check(text, [values("c64", [19, 12], 5)])
    assert kernel.tiling is not None and kernel.tiling.block_dims is None


def test_register_blocks_need_room_for_both_tile_buffers(monkeypatch):
    """A tile whose buffer fits the stack budget but not twice over keeps one buffer."""
    text = transpose_module("f32", [200, 130], [1, 0], [1, 0], [1, 0])
    plan = LoopKernel(text).tiling
    need = 2 * prod(plan.tile) * 4         # 64 x 64 tiles: no padding
    monkeypatch.setattr(transpose_emitter, "MAX_TILE_BUFFER_BYTES", need - 4)
    kernel = check(text, [values("f32", [200, 130], 6)])
    assert kernel.tiling is not None and kernel.tiling.block_dims is None


def test_narrow_minor_dims_keep_the_gathering_write_phase():
    """A 3-wide operand-minor dim would fill 3 of each block's 8 columns: not blocked."""
    text = transpose_module("f32", [2048, 16, 3], [0, 2, 1], [2, 1, 0], [2, 1, 0])
    kernel = check(text, [values("f32", [2048, 16, 3], 8)])
    assert kernel.tiling is not None and kernel.tiling.block_dims is None
