"""Native scatter and sort kernels on the CPU backend vs the interpreter.

Modules go through the whole CPU backend; each test checks that the instruction runs
as a native kernel and that the result is the interpreter's bit for bit (scatter
combines in update order, sort is stable; NaN compares equal to NaN here).
"""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu

from cpu_kernel_harness import assert_same, rand, run_both  # noqa: E402
from xlapy.backends.cpu import sort_emitter  # noqa: E402
from xlapy.backends.cpu.scatter_emitter import ScatterEmitter  # noqa: E402
from xlapy.backends.cpu.sort_comparator import key_expression  # noqa: E402
from xlapy.backends.cpu.sort_emitter import SortEmitter  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


# ----------------------------------------------------------------------------- scatter
COMBINERS = {"add": "add(a, b)", "mul": "multiply(a, b)", "max": "maximum(a, b)",
             "min": "minimum(a, b)", "set": None}


def scatter_module(et: str, x_dims, i_dims, u_dims, dnums: str, combiner: str,
                   index_type: str = "s32") -> str:
    body = COMBINERS[combiner]
    root = f"ROOT r = {et}[] {body}" if body else "ROOT b2 = " + f"{et}[] copy(b)"
    if combiner == "set":
        comb = f"comb {{ a = {et}[] parameter(0)\n  ROOT b = {et}[] parameter(1) }}"
    else:
        comb = f"comb {{ a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n  {root} }}"
    j = lambda d: ",".join(map(str, d))       # noqa: E731
    return f"""HloModule scatter
{comb}
ENTRY main {{
  x = {et}[{j(x_dims)}] parameter(0)
  i = {index_type}[{j(i_dims)}] parameter(1)
  u = {et}[{j(u_dims)}] parameter(2)
  ROOT r = {et}[{j(x_dims)}] scatter(x, i, u), {dnums}, to_apply=comb
}}"""


SCATTERS = [
    # rows of a table (indices [n,1])
    ((10, 4), (6, 1), (6, 4), "update_window_dims={1}, inserted_window_dims={0}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
    # whole windows that may hang over the end (then skipped)
    ((10, 4), (6, 1), (6, 3, 4), "update_window_dims={1,2}, inserted_window_dims={}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
    # 2-d starts, partial windows
    ((8, 9), (5, 2), (5, 3, 2), "update_window_dims={1,2}, inserted_window_dims={}, "
     "scatter_dims_to_operand_dims={0,1}, index_vector_dim=1"),
    # scalar updates at permuted 2-d points, index vector in the middle
    ((6, 7), (2, 2, 3), (2, 3), "update_window_dims={}, inserted_window_dims={0,1}, "
     "scatter_dims_to_operand_dims={1,0}, index_vector_dim=1"),
    # implicit trailing index vector dimension
    ((12,), (4, 3), (4, 3), "update_window_dims={}, inserted_window_dims={0}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=2"),
    # batching dimensions
    ((3, 5, 4), (3, 2), (3, 2, 4), "update_window_dims={2}, inserted_window_dims={1}, "
     "input_batching_dims={0}, scatter_indices_batching_dims={0}, "
     "scatter_dims_to_operand_dims={1}, index_vector_dim=2"),
    # long rows: units split the row dimension (3 blocks of 334, 334, 333)
    ((8, 1001), (30, 1), (30, 1001), "update_window_dims={1}, inserted_window_dims={0}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
]


@pytest.mark.parametrize("combiner", list(COMBINERS))
@pytest.mark.parametrize("case", range(len(SCATTERS)))
def test_scatter_combiners_and_out_of_bounds(backend, case, combiner):
    x_dims, i_dims, u_dims, dnums = SCATTERS[case]
    rng = np.random.default_rng(case)
    x = rand(*x_dims, seed=case, scale=3)
    u = rand(*u_dims, seed=50 + case, scale=3)
    i = rng.integers(-2, max(x_dims) + 2, i_dims).astype(np.int32)   # duplicates and OOB
    text = scatter_module("f32", x_dims, i_dims, u_dims, dnums, combiner)
    assert_same(*run_both(backend, text, [x, i, u], native=("r",)))


@pytest.mark.parametrize("et,dtype", [("s32", np.int32), ("u8", np.uint8), ("f64", np.float64)])
def test_scatter_integer_and_f64(backend, et, dtype):
    x_dims, i_dims, u_dims, dnums = SCATTERS[0]
    i = np.array([[3], [3], [9], [-1], [10], [0]], np.int32)
    for combiner in ("add", "max", "set"):
        text = scatter_module(et, x_dims, i_dims, u_dims, dnums, combiner)
        x = (rand(*x_dims, seed=1, scale=20)).astype(dtype)
        u = (rand(*u_dims, seed=2, scale=20)).astype(dtype)
        assert_same(*run_both(backend, text, [x, i, u], native=("r",)))


@pytest.mark.parametrize("index_type,values", [
    ("u32", [0, 4294967295, 5, 9, 10, 5]),
    ("s64", [0, -9223372036854775808, 9223372036854775807, 2, 2, 9]),
    ("u64", [0, 18446744073709551615, 9223372036854775808, 1, 3, 3]),
    ("s8", [-128, 127, 9, 0, 0, -1])])
def test_scatter_index_types_and_extreme_indices(backend, index_type, values):
    x_dims, i_dims, u_dims, dnums = SCATTERS[0]
    dtype = {"u32": np.uint32, "s64": np.int64, "u64": np.uint64, "s8": np.int8}[index_type]
    i = np.array(values, dtype).reshape(i_dims)
    text = scatter_module("f32", x_dims, i_dims, u_dims, dnums, "add", index_type)
    x, u = rand(*x_dims, seed=3), rand(*u_dims, seed=4)
    got, want = run_both(backend, text, [x, i, u], native=("r",))
    assert_same(got, want)
    expect = x.copy()
    for row, idx in enumerate(np.asarray(values, dtype=object)):
        if 0 <= idx < x_dims[0]:
            expect[int(idx)] += u[row]
    np.testing.assert_array_equal(got[0], expect)


VARIADIC_SCATTER = """HloModule variadic_scatter
comb {
  a0 = f32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  gt = pred[] compare(b0, a0), direction=GT
  v = f32[] select(gt, b0, a0)
  k = s32[] select(gt, b1, a1)
  ROOT t = (f32[], s32[]) tuple(v, k)
}
ENTRY main {
  x = f32[10,4] parameter(0)
  y = s32[10,4] parameter(1)
  i = s32[8,1] parameter(2)
  u = f32[8,4] parameter(3)
  w = s32[8,4] parameter(4)
  ROOT r = (f32[10,4], s32[10,4]) scatter(x, y, i, u, w), update_window_dims={1},
      inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,
      to_apply=comb
}
"""


def test_variadic_scatter(backend):
    x, y = rand(10, 4, seed=5), np.arange(40, dtype=np.int32).reshape(10, 4)
    i = np.array([[1], [1], [7], [12], [-3], [0], [7], [1]], np.int32)
    u, w = rand(8, 4, seed=6, scale=2), np.arange(100, 132, dtype=np.int32).reshape(8, 4)
    assert_same(*run_both(backend, VARIADIC_SCATTER, [x, y, i, u, w], native=("r",)))


FUSED_SCATTER = """HloModule fused_scatter
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
fused {
  p0 = f32[16,8] parameter(0)
  p1 = s32[5,1] parameter(1)
  p2 = f32[5,8] parameter(2)
  two = f32[] constant(2)
  b2 = f32[5,8] broadcast(two), dimensions={}
  m = f32[5,8] multiply(p2, b2)
  ROOT s = f32[16,8] scatter(p0, p1, m), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
ENTRY main {
  x = f32[16,8] parameter(0)
  i = s32[5,1] parameter(1)
  u = f32[5,8] parameter(2)
  n = f32[16,8] negate(x)
  ROOT f = f32[16,8] fusion(n, i, u), kind=kLoop, calls=fused
}
"""

IN_PLACE_SCATTER = """HloModule in_place_scatter
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT }
ENTRY main {
  x = f32[16,8] parameter(0)
  i = s32[5,1] parameter(1)
  u = f32[5,8] parameter(2)
  sorted = f32[16,8] sort(x), dimensions={1}, to_apply=lt
  s = f32[16,8] scatter(sorted, i, u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT out = f32[16,8] negate(s)
}
"""


def test_fused_scatter_with_update_producer(backend):
    x, u = rand(16, 8, seed=7), rand(5, 8, seed=8)
    i = np.array([[3], [15], [3], [16], [0]], np.int32)
    assert_same(*run_both(backend, FUSED_SCATTER, [x, i, u], native=("f",)))


def test_scatter_in_place_skips_the_copy(backend):
    exe = backend.compile(parse_module(IN_PLACE_SCATTER))
    s = exe.module.entry.root.operands[0]
    assert s.opcode == "scatter"
    # the sorted operand dies at the scatter: its buffer is the scatter's, updated in place
    assert exe.assignment.slice(s.operands[0]) == exe.assignment.slice(s)
    x, u = rand(16, 8, seed=7), rand(5, 8, seed=8)
    i = np.array([[3], [15], [3], [16], [0]], np.int32)
    assert_same(*run_both(backend, IN_PLACE_SCATTER, [x, i, u], native=("s", "sorted")))


SHARED_OPERAND = """HloModule shared_operand
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT }
fused {
  p0 = f32[16,8] parameter(0)
  p1 = s32[5,1] parameter(1)
  upd = f32[5,8] slice(p0), slice={[2:7], [0:8]}
  ROOT s = f32[16,8] scatter(p0, p1, upd), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
ENTRY main {
  x = f32[16,8] parameter(0)
  i = s32[5,1] parameter(1)
  sorted = f32[16,8] sort(x), dimensions={1}, to_apply=lt
  f = f32[16,8] fusion(sorted, i), kind=kLoop, calls=fused
  ROOT out = f32[16,8] negate(f)
}
"""


def test_scatter_declines_an_in_place_operand_that_is_also_read(backend):
    """The updates are a slice of the operand that shares the output buffer: updating
    in place would change updates not yet read, so the emitter leaves it to the fallback."""
    exe = backend.compile(parse_module(SHARED_OPERAND))
    f = exe.module.entry.root.operands[0]
    assert exe.assignment.slice(f.operands[0]) == exe.assignment.slice(f)
    assert exe.thunk_kinds()["f"] == "fallback"
    x, i = rand(16, 8, seed=1), np.array([[3], [15], [2], [16], [0]], np.int32)
    assert_same(*run_both(backend, SHARED_OPERAND, [x, i], native=("sorted",)))


def test_scatter_threads_agree_and_empty_updates():
    x_dims, i_dims, u_dims, dnums = SCATTERS[-1]
    text = scatter_module("f32", x_dims, i_dims, u_dims, dnums, "add")
    x, u = rand(*x_dims, seed=9), rand(*u_dims, seed=10)
    i = np.random.default_rng(11).integers(0, x_dims[0], i_dims).astype(np.int32)
    outs = [cpu.CpuBackend(use_disk_cache=False, num_threads=t, parallel_cost=0)
            .compile(parse_module(text)).execute([x, i, u]) for t in (1, 2)]
    assert outs[0].tobytes() == outs[1].tobytes()
    empty = scatter_module("f32", (6, 4), (0, 1), (0, 4), SCATTERS[0][3], "add")
    out = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(empty)).execute(
        [x[:6, :4].copy(), np.zeros((0, 1), np.int32), np.zeros((0, 4), np.float32)])
    np.testing.assert_array_equal(out, x[:6, :4])


# ----------------------------------------------------------------------------- sort
def sort_module(et: str, dims, d: int, direction: str = "LT", ctype: str = "",
                layout: str = "") -> str:
    typ = f", type={ctype}" if ctype else ""
    j = ",".join(map(str, dims))
    return f"""HloModule sort
cmp {{ a = {et}[] parameter(0)
  b = {et}[] parameter(1)
  ROOT r = pred[] compare(a, b), direction={direction}{typ} }}
ENTRY main {{
  x = {et}[{j}]{layout} parameter(0)
  ROOT r = {et}[{j}]{layout} sort(x), dimensions={{{d}}}, to_apply=cmp
}}"""


def with_specials(x: np.ndarray) -> np.ndarray:
    x = np.round(x * 2) / 2                                   # ties
    flat = x.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = -np.nan
    flat[5::13] = -0.0
    flat[6::17] = np.inf
    return x


@pytest.mark.parametrize("dims,d", [((7, 33), 1), ((33, 7), 0), ((4, 5, 6), 1), ((3, 200), 1),
                                    ((2, 6000), 1), ((1,), 0), ((17,), 0)])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_total_order_sort_with_nans(backend, dims, d, direction):
    text = sort_module("f32", dims, d, direction, "TOTALORDER")
    assert_same(*run_both(backend, text, [with_specials(rand(*dims, seed=len(dims)))],
                          native=("r",)))


@pytest.mark.parametrize("et,dtype", [("s32", np.int32), ("u16", np.uint16), ("f64", np.float64),
                                      ("bf16", "bfloat16"), ("pred", np.bool_)])
def test_sort_types_and_column_major(backend, et, dtype):
    import ml_dtypes
    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    x = (rand(9, 40, seed=12, scale=50)).astype(dtype)
    for layout in ("", "{0,1}"):
        text = sort_module(et, (9, 40), 1, "LT", "", layout)
        assert_same(*run_both(backend, text, [x], native=("r",)))


JAX_ARGSORT = """HloModule argsort
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  na = pred[] compare(a, a), direction=NE
  za = pred[] compare(a, zero), direction=EQ
  ca0 = f32[] select(za, zero, a)
  ca = f32[] select(na, nan, ca0)
  nb = pred[] compare(b, b), direction=NE
  zb = pred[] compare(b, zero), direction=EQ
  cb0 = f32[] select(zb, zero, b)
  cb = f32[] select(nb, nan, cb0)
  ROOT lt = pred[] compare(ca, cb), direction=LT, type=TOTALORDER
}
ENTRY main {
  x = f32[5,300] parameter(0)
  i = s32[5,300] iota(), iota_dimension=1
  ROOT s = (f32[5,300], s32[5,300]) sort(x, i), dimensions={1}, is_stable=true, to_apply=cmp
}
"""

LEXICOGRAPHIC = """HloModule lexsort
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT
  eq = pred[] compare(a, b), direction=EQ
  lt2 = pred[] compare(c, d), direction=GT
  both = pred[] and(eq, lt2)
  ROOT r = pred[] or(lt, both)
}
ENTRY main {
  k = s32[3,500] parameter(0)
  v = f32[3,500] parameter(1)
  ROOT s = (s32[3,500], f32[3,500]) sort(k, v), dimensions={1}, to_apply=cmp
}
"""


def test_jax_comparator_uses_precomputed_keys(backend):
    module = parse_module(JAX_ARGSORT)
    sort = module.entry.root
    assert key_expression(sort.to_apply) is not None
    assert key_expression(parse_module(sort_module("f32", (4,), 0)).entry.root.to_apply) is None
    x = with_specials(rand(5, 300, seed=13))
    got, want = run_both(backend, JAX_ARGSORT, [x], native=("s",))
    assert_same(got, want)
    keys = np.where(x == 0, 0.0, x)
    np.testing.assert_array_equal(got[1], np.argsort(keys, axis=1, kind="stable"))


def test_lexicographic_two_operand_sort(backend):
    k = np.random.default_rng(14).integers(0, 6, (3, 500)).astype(np.int32)
    v = np.round(rand(3, 500, seed=15) * 2) / 2
    got, want = run_both(backend, LEXICOGRAPHIC, [k, v], native=("s",))
    assert_same(got, want)
    order = np.lexsort((-v, k), axis=1)
    np.testing.assert_array_equal(got[0], np.take_along_axis(k, order, axis=1))


def test_float_lt_sort_matches_numpy_without_nans(backend):
    x = rand(64, 1000, seed=16)
    text = sort_module("f32", (64, 1000), 1)
    exe = backend.compile(parse_module(text))
    np.testing.assert_array_equal(exe.execute([x]), np.sort(x, axis=1))


FUSED_SORT = """HloModule fused_sort
cmp { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER }
fused {
  p0 = f32[6,50] parameter(0)
  n = f32[6,50] negate(p0)
  i = s32[6,50] iota(), iota_dimension=1
  ROOT s = (f32[6,50], s32[6,50]) sort(n, i), dimensions={1}, to_apply=cmp
}
ENTRY main {
  x = f32[6,50] parameter(0)
  ROOT f = (f32[6,50], s32[6,50]) fusion(x), kind=kLoop, calls=fused
}
"""


def test_fusion_rooted_at_sort(backend):
    x = np.round(rand(6, 50, seed=20) * 2) / 2 + 0.0       # ties, no -0
    got, want = run_both(backend, FUSED_SORT, [x], native=("f",))
    assert_same(got, want)
    # descending -x is ascending x; ties keep their order
    np.testing.assert_array_equal(got[1], np.argsort(x, axis=1, kind="stable"))


def test_sort_without_scratch_memory_still_sorts(backend, monkeypatch):
    """If malloc fails the kernel insertion-sorts each row in the output buffer."""
    def no_heap(self):
        null = sort_emitter.ir.Constant(sort_emitter.I8.as_pointer(), None)
        return null, null
    monkeypatch.setattr(sort_emitter._SortKernel, "_scratch", no_heap)
    x = with_specials(rand(3, 70, seed=17))
    text = sort_module("f32", (3, 70), 1, "GT", "TOTALORDER")
    assert_same(*run_both(cpu.CpuBackend(use_disk_cache=False), text, [x], native=("r",)))
    got, want = run_both(cpu.CpuBackend(use_disk_cache=False), JAX_ARGSORT,
                         [with_specials(rand(5, 300, seed=18))], native=("s",))
    assert_same(got, want)


def test_sort_threads_agree():
    x = rand(256, 700, seed=19)
    text = sort_module("f32", (256, 700), 1, "LT", "TOTALORDER")
    outs = [cpu.CpuBackend(use_disk_cache=False, num_threads=t, parallel_cost=0)
            .compile(parse_module(text)).execute([x]) for t in (1, 2)]
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_array_equal(outs[0], np.sort(x, axis=1))


def test_emitters_decline_other_instructions():
    root = parse_module(sort_module("f32", (4,), 0)).entry.root
    assert SortEmitter().can_emit(root)
    assert not ScatterEmitter().can_emit(root)
    neg = parse_module("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
                       "  ROOT n = f32[4] negate(x)\n}").entry.root
    assert not SortEmitter().can_emit(neg) and not ScatterEmitter().can_emit(neg)
