"""Loop kernels: layouts, bitcast roots, multi-output fusions, in-place operands, units."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.backends.interpreter import evaluate_module
from xlapy.client.run import flatten_result
from xlapy.config import debug_options
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu
from cpu_kernel_harness import rand   # noqa: E402
from xlapy.backends.cpu.loop_emitter import UNIT_ELEMENTS, LoopEmitter   # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


def run_both(backend, text, args):
    """(cpu result, interpreter result, executable), results flattened."""
    module = parse_module(text)
    exe = backend.compile(module)
    got = flatten_result(exe.execute(args))
    want = flatten_result(evaluate_module(parse_module(text), args))
    return got, want, exe


COLUMN_MAJOR_RESULT = """
HloModule colmajor, entry_computation_layout={(f32[30,70]{1,0}, f32[70,30]{1,0})->f32[30,70]{0,1}}
ENTRY main {
  a = f32[30,70]{1,0} parameter(0)
  b = f32[70,30]{1,0} parameter(1)
  t = f32[30,70]{1,0} transpose(b), dimensions={1,0}
  ROOT s = f32[30,70]{0,1} add(a, t)
}
"""


def test_result_in_column_major_layout(backend):
    a, b = rand(30, 70, seed=1), rand(70, 30, seed=2)
    (got,), _, exe = run_both(backend, COLUMN_MAJOR_RESULT, [a, b])
    np.testing.assert_array_equal(got, a + b.T)
    assert got.flags.f_contiguous and not got.flags.c_contiguous   # the layout's bytes
    assert set(exe.thunk_kinds().values()) == {"kernel"}


BITCAST_ROOT = """
HloModule bitcast_root
fused {
  p = f32[4,6]{1,0} parameter(0)
  n = f32[4,6]{0,1} negate(p)
  ROOT b = f32[24]{0} bitcast(n)
}
ENTRY main {
  x = f32[4,6]{1,0} parameter(0)
  ROOT f = f32[24]{0} fusion(x), kind=kLoop, calls=fused
}
"""


def test_fusion_with_a_bitcast_root_stores_the_operand_layout(backend):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    (got,), (want,), exe = run_both(backend, BITCAST_ROOT, [x])
    np.testing.assert_array_equal(want, (-x).T.reshape(-1))     # column-major bytes of n
    np.testing.assert_array_equal(got, want)
    assert exe.thunk_kinds() == {"f": "kernel"}


SIBLINGS = """
HloModule siblings
ENTRY main {
  x = f32[50,40] parameter(0)
  y = f32[50,40] parameter(1)
  e = f32[50,40] exponential(x)
  a = f32[50,40] add(e, y)
  m = f32[50,40] multiply(e, y)
  ROOT t = (f32[50,40], f32[50,40]) tuple(a, m)
}
"""


def test_multi_output_loop_fusion_is_one_native_loop():
    x, y = rand(50, 40, seed=3), rand(50, 40, seed=4)
    with debug_options(xla_backend_extra_options="xla_cpu_use_multi_output_fusion"):
        exe = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(SIBLINGS))
    a, m = exe.execute([x, y])
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(a, e + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(m, e * y, rtol=1e-6, atol=1e-6)
    fusions = [i for i in exe.module.entry.instructions if i.opcode == "fusion"]
    assert any(f.shape.is_tuple for f in fusions), exe.module.to_text()
    assert all(exe.thunk_kinds()[f.name] == "kernel" for f in fusions)


ZERO_SIZED = """
HloModule zero
ENTRY main {
  x = f32[0,3] parameter(0)
  y = f32[0,3] parameter(1)
  ROOT s = f32[0,3] add(x, y)
}
"""


def test_zero_sized_arrays(backend):
    (got,), _, _ = run_both(backend, ZERO_SIZED, [np.zeros((0, 3), np.float32)] * 2)
    assert got.shape == (0, 3) and got.dtype == np.float32


@pytest.mark.parametrize("dtype,op", [("s32", "multiply"), ("u8", "add"), ("pred", "and"),
                                      ("f64", "divide"), ("bf16", "subtract"),
                                      ("s16", "maximum")])
def test_element_types(backend, dtype, op):
    text = f"""
HloModule types
ENTRY main {{
  x = {dtype}[9,13] parameter(0)
  y = {dtype}[9,13] parameter(1)
  ROOT r = {dtype}[9,13] {op}(x, y)
}}
"""
    module = parse_module(text)
    np_dtype = module.entry.parameters[0].shape.dtype
    rng = np.random.default_rng(5)
    x = rng.integers(1, 100, (9, 13)).astype(np_dtype)
    y = rng.integers(1, 100, (9, 13)).astype(np_dtype)
    (got,), (want,), exe = run_both(backend, text, [x, y])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


IN_PLACE = """
HloModule in_place
ENTRY main {
  x = f32[32,16] parameter(0)
  w = f32[16,24] parameter(1)
  d = f32[32,24] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[32,24] tanh(d)
}
"""


def test_elementwise_op_writes_into_its_dying_operand(backend):
    x, w = rand(32, 16, seed=6), rand(16, 24, seed=7)
    (got,), (want,), exe = run_both(backend, IN_PLACE, [x, w])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    (kernel,) = [t for t in exe.plan.thunks if t.instruction.name == "e"]
    assert kernel.kind == "kernel" and kernel.refs[0].same_bytes(kernel.refs[1])


def test_units_partition_a_large_one_dimensional_loop(backend):
    n = 10 * UNIT_ELEMENTS + 5
    text = f"""
HloModule units
ENTRY main {{
  x = f32[{n}] parameter(0)
  ROOT r = f32[{n}] negate(x)
}}
"""
    exe = backend.compile(parse_module(text))
    (kernel,) = exe.plan.thunks
    assert kernel.units == 11
    x = rand(n, seed=8)
    np.testing.assert_array_equal(exe.execute([x]), -x)
    # any split of the unit range covers every element exactly once
    out = np.full(n, np.nan, np.float32)
    exe.memory.set(kernel.refs[0].alloc, x.view(np.uint8))
    exe.memory.set(kernel.refs[1].alloc, out.view(np.uint8))
    kernel.table[0], kernel.table[1] = x.ctypes.data, out.ctypes.data
    for begin, end in ((0, 3), (3, 4), (4, 11)):
        kernel.fn(kernel.table_address, begin, end)
    np.testing.assert_array_equal(out, -x)


def test_loop_emitter_declines_what_it_cannot_emit():
    module = parse_module("""
HloModule declines
ENTRY main {
  x = f32[8,8] parameter(0)
  d = f32[8,8] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT c = f32[8,8] custom-call(d), custom_call_target="some_library_function"
}
""")
    emitter = LoopEmitter()
    for instr in module.entry.instructions:
        assert not emitter.can_emit(instr), instr.name
