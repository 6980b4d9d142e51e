"""The CPU backend's runtime: arguments, outputs, memory, threads, control flow, dumps."""
from __future__ import annotations

import threading
import time

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.client import register_backend
from xlapy.config import debug_options, reset_dump_numbering
from xlapy.errors import InvalidArgumentError
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


def compile_text(backend, text):
    return backend.compile(parse_module(text))


AXPY = """
HloModule axpy
ENTRY main {
  x = f32[64,33] parameter(0)
  y = f32[64,33] parameter(1)
  z = f32[64,33] parameter(2)
  yz = f32[64,33] multiply(y, z)
  ROOT s = f32[64,33] add(x, yz)
}
"""


def rand(*dims, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(dims).astype(dtype)


# ----------------------------------------------------------------------------- arguments
def test_fused_elementwise_kernel_is_native_and_correct(backend):
    exe = compile_text(backend, AXPY)
    x, y, z = rand(64, 33, seed=1), rand(64, 33, seed=2), rand(64, 33, seed=3)
    np.testing.assert_array_equal(exe.execute([x, y, z]), x + y * z)
    kinds = exe.thunk_kinds()
    assert list(kinds.values()) == ["kernel"], kinds


def test_wrong_number_of_arguments_is_an_error(backend):
    exe = compile_text(backend, AXPY)
    with pytest.raises(InvalidArgumentError, match=r"takes 3 arguments.*got 2"):
        exe.execute([rand(64, 33), rand(64, 33)])


def test_wrong_shape_names_the_parameter_and_both_shapes(backend):
    exe = compile_text(backend, AXPY)
    with pytest.raises(InvalidArgumentError) as info:
        exe.execute([rand(64, 33), rand(33, 64), rand(64, 33)])
    text = str(info.value)
    assert "argument 1 (y)" in text and "f32[64,33]" in text and "[33, 64]" in text


def test_wrong_dtype_is_an_error_not_a_silent_cast(backend):
    exe = compile_text(backend, AXPY)
    with pytest.raises(InvalidArgumentError, match=r"argument 2 \(z\).*float64"):
        exe.execute([rand(64, 33), rand(64, 33), rand(64, 33, dtype=np.float64)])


def test_non_contiguous_and_python_arguments_are_accepted(backend):
    exe = compile_text(backend, AXPY)
    x = rand(33, 64, seed=4).T                    # a transposed (Fortran-ordered) view
    y = np.ones((64, 33), np.float32)[:, :]
    z = [[2.0] * 33] * 64                         # nested Python lists
    np.testing.assert_array_equal(exe.execute([x, y, z]), x + 2.0)


COL_MAJOR_PARAM = """
HloModule col_major, entry_computation_layout={(f32[3,4]{0,1}, f32[3,4]{1,0})->f32[3,4]{1,0}}
ENTRY main {
  a = f32[3,4]{0,1} parameter(0)
  b = f32[3,4]{1,0} parameter(1)
  ROOT s = f32[3,4]{1,0} subtract(a, b)
}
"""


def test_parameter_in_column_major_layout_gets_logical_values(backend):
    exe = compile_text(backend, COL_MAJOR_PARAM)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 0.5, np.float32)
    np.testing.assert_array_equal(exe.execute([a, b]), a - b)


TUPLE_PARAM = """
HloModule tuple_param
ENTRY main {
  p = (f32[3], (s32[], f32[3])) parameter(0)
  a = f32[3] get-tuple-element(p), index=0
  inner = (s32[], f32[3]) get-tuple-element(p), index=1
  b = f32[3] get-tuple-element(inner), index=1
  k = s32[] get-tuple-element(inner), index=0
  s = f32[3] add(a, b)
  ROOT t = (f32[3], s32[]) tuple(s, k)
}
"""


def test_tuple_shaped_parameter_takes_nested_python_tuples(backend):
    exe = compile_text(backend, TUPLE_PARAM)
    a, b = np.arange(3, dtype=np.float32), np.full(3, 0.25, np.float32)
    s, k = exe.execute([(a, (np.int32(7), b))])
    np.testing.assert_array_equal(s, a + b)
    assert int(k) == 7
    with pytest.raises(InvalidArgumentError, match=r"argument 0 \(p\)\[1\]\[1\]"):
        exe.execute([(a, (np.int32(7), np.zeros(4, np.float32)))])
    with pytest.raises(InvalidArgumentError, match="expected a tuple of 2"):
        exe.execute([a])


# ----------------------------------------------------------------------------- outputs
TUPLE_OUT = """
HloModule tuple_out
ENTRY main {
  x = f32[5] parameter(0)
  n = s32[] parameter(1)
  neg = f32[5] negate(x)
  one = s32[] constant(1)
  m = s32[] add(n, one)
  ROOT t = (f32[5], s32[], f32[5], f32[5]) tuple(neg, m, neg, x)
}
"""


def test_tuple_outputs_are_separate_fresh_arrays(backend):
    exe = compile_text(backend, TUPLE_OUT)
    x = np.arange(5, dtype=np.float32)
    neg, m, neg2, x_out = exe.execute([x, np.int32(41)])
    np.testing.assert_array_equal(neg, -x)
    assert m.dtype == np.int32 and int(m) == 42
    neg2[0] = 100.0                      # the repeated output is its own array
    x_out[1] = 100.0                     # a returned parameter is a copy
    assert neg[0] == 0.0 and x[1] == 1.0
    again = exe.execute([x, np.int32(1)])
    assert again[0] is not neg and neg[0] == 0.0 and int(again[1]) == 2


TEMPS = """
HloModule temps
ENTRY main {
  x = f32[40,40] parameter(0)
  e = f32[40,40] exponential(x)
  d = f32[40,40] dot(e, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[40,40] add(d, e)
}
"""


def temps_expected(x):
    e = np.exp(x.astype(np.float64))
    return e @ x + e

def test_arena_is_allocated_once_and_reused(backend):
    exe = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(TEMPS))
    assert exe.assignment.total_temp_bytes > 0
    address = exe.temp_address
    for seed in range(3):
        x = rand(40, 40, seed=seed)
        np.testing.assert_allclose(exe.execute([x]), temps_expected(x), rtol=1e-4, atol=1e-4)
        assert exe.temp_address == address


def test_run_hlo_uses_the_registered_cpu_backend(tmp_path):
    register_backend("cpu", lambda: cpu.CpuBackend(cache_dir=str(tmp_path)))
    try:
        x, y, z = rand(64, 33), rand(64, 33, seed=5), rand(64, 33, seed=6)
        (out,) = xlapy.run_hlo(AXPY, [x, y, z], backend="cpu")
        np.testing.assert_array_equal(out, x + y * z)
        assert list(tmp_path.glob("*.xcache")), "the disk cache was written"
    finally:
        from xlapy.backends.target import get_target
        register_backend("cpu", get_target("cpu").create_backend)


# ----------------------------------------------------------------------------- threads
BIG = """
HloModule big
ENTRY main {
  x = f32[300,1000] parameter(0)
  y = f32[1000] parameter(1)
  b = f32[300,1000] broadcast(y), dimensions={1}
  t = f32[300,1000] tanh(x)
  m = f32[300,1000] multiply(t, b)
  ROOT r = f32[300,1000] add(m, x)
}
"""


def test_threads_give_the_same_answer_as_one_thread():
    x, y = rand(300, 1000, seed=7), rand(1000, seed=8)
    one = cpu.CpuBackend(use_disk_cache=False, num_threads=1).compile(parse_module(BIG))
    two = cpu.CpuBackend(use_disk_cache=False, num_threads=2, parallel_cost=0).compile(
        parse_module(BIG))
    (kernel,) = [t for t in two.plan.thunks if t.kind == "kernel"]
    assert kernel.pool is not None and kernel.units >= 2
    a, b = one.execute([x, y]), two.execute([x, y])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, np.tanh(x) * y + x, rtol=2e-6, atol=1e-6)


def test_address_of_reads_the_data_pointer_of_any_array():
    from xlapy.backends.cpu.thunks import address_of
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    arrays = [base, base[1:], base[:, 2:], base.T, np.zeros(0, np.float32),
              np.frombuffer(b"0123456789", np.uint8)[3:], np.asarray(np.int8(5)),
              np.empty(100, ml_dtypes.bfloat16)]
    assert not arrays[5].flags.writeable
    for a in arrays:
        assert address_of(a) == a.ctypes.data


def test_thread_pool_waits_for_every_share_when_one_fails():
    from xlapy.backends.cpu.thunks import ThreadPool
    pool = ThreadPool(2)
    finished = []

    def share(tag, begin, end):
        if tag == begin == 0:
            raise ValueError("the calling thread's share failed")
        if tag == begin == 1:
            raise KeyError("a worker's share failed")
        time.sleep(0.05)                       # the worker finishes after the caller
        finished.append((tag, begin, end))

    with pytest.raises(ValueError, match="calling thread"):
        pool.run(share, 0, 2)
    assert finished == [(0, 1, 2)], "run returned before the worker's share was done"
    with pytest.raises(KeyError, match="worker"):
        pool.run(share, 1, 2)
    assert finished == [(0, 1, 2), (1, 0, 1)]
    pool.run(share, 2, 4)
    assert sorted(finished[2:]) == [(2, 0, 2), (2, 2, 4)]


def test_thread_pool_parallel_for_uses_the_workers_and_nests():
    from xlapy.backends.cpu.thunks import ThreadPool
    pool = ThreadPool(2)
    both = threading.Barrier(2, timeout=10)   # broken unless two threads take items at once
    done = []

    def work(item, state):
        if "met" not in state:
            both.wait()
            state["met"] = True
        # a job started inside a share finds the pool busy and runs on this thread
        pool.parallel_for([10 * item, 10 * item + 1], lambda x, _: done.append(x))
        done.append(item)

    pool.parallel_for(list(range(6)), work)
    assert sorted(done) == sorted(list(range(6)) + [10 * i + k for i in range(6)
                                                    for k in (0, 1)])


def test_concurrent_calls_from_python_threads(backend):
    exe = compile_text(backend, TEMPS)
    inputs = [rand(40, 40, seed=s) for s in range(8)]
    results: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        for _ in range(5):
            results[k] = exe.execute([inputs[k]])
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, x in enumerate(inputs):
        np.testing.assert_allclose(results[k], temps_expected(x), rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- control flow
WHILE = """
HloModule loop
cond {
  s = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[256] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  h = f32[] constant(0.5)
  hb = f32[256] broadcast(h), dimensions={}
  v2 = f32[256] multiply(v, hb)
  ROOT t = (s32[], f32[256]) tuple(i2, v2)
}
ENTRY main {
  x = f32[256] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[256]) tuple(zero, x)
  w = (s32[], f32[256]) while(init), condition=cond, body=body
  ROOT r = f32[256] get-tuple-element(w), index=1
}
"""


def test_while_loop_runs_its_body_plan_with_native_kernels(backend):
    exe = compile_text(backend, WHILE)
    x = rand(256, seed=9)
    np.testing.assert_array_equal(exe.execute([x]), x * np.float32(0.5 ** 10))
    kinds = exe.thunk_kinds()
    assert "while" in kinds.values() and "kernel" in kinds.values(), kinds
    np.testing.assert_array_equal(exe.execute([2 * x]), 2 * x * np.float32(0.5 ** 10))


CONDITIONAL = """
HloModule cond
neg {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
dbl {
  b = f32[4] parameter(0)
  ROOT d = f32[4] add(b, b)
}
ident {
  c = f32[4] parameter(0)
  ROOT i = f32[4] copy(c)
}
ENTRY main {
  k = s32[] parameter(0)
  x = f32[4] parameter(1)
  ROOT r = f32[4] conditional(k, x, x, x), branch_computations={neg, dbl, ident}
}
"""


@pytest.mark.parametrize("k,expected", [(0, lambda x: -x), (1, lambda x: 2 * x),
                                        (2, lambda x: x), (7, lambda x: x),
                                        (-1, lambda x: x)])
def test_conditional_picks_the_branch_and_clamps_the_index(backend, k, expected):
    exe = compile_text(backend, CONDITIONAL)
    x = np.array([1, -2, 3, -4], np.float32)
    np.testing.assert_array_equal(exe.execute([np.int32(k), x]), expected(x))


PRED_CONDITIONAL = CONDITIONAL[:CONDITIONAL.index("ENTRY")] + """ENTRY main {
  p = pred[] parameter(0)
  x = f32[4] parameter(1)
  ROOT r = f32[4] conditional(p, x, x), true_computation=neg, false_computation=dbl
}
"""


def test_pred_conditional_runs_the_true_branch_on_true(backend):
    exe = compile_text(backend, PRED_CONDITIONAL)
    x = np.array([1, -2, 3, -4], np.float32)
    np.testing.assert_array_equal(exe.execute([np.bool_(True), x]), -x)
    np.testing.assert_array_equal(exe.execute([np.bool_(False), x]), 2 * x)


DUS = """
HloModule dus
ENTRY main {
  x = f32[6,4] parameter(0)
  w = f32[4,5] parameter(1)
  u = f32[2,3] parameter(2)
  i = s32[] parameter(3)
  j = s32[] parameter(4)
  y = f32[6,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d = f32[6,5] dynamic-update-slice(y, u, i, j)
}
"""


@pytest.mark.parametrize("i,j", [(1, 1), (5, 4), (-3, 0), (100, -100)])
def test_in_place_dynamic_update_slice_writes_the_clamped_window(backend, i, j):
    exe = compile_text(backend, DUS)
    x, w, u = rand(6, 4, seed=10), rand(4, 5, seed=11), rand(2, 3, seed=12)
    expected = (x.astype(np.float64) @ w).astype(np.float32)
    ci, cj = min(max(i, 0), 6 - 2), min(max(j, 0), 5 - 3)
    expected[ci:ci + 2, cj:cj + 3] = u
    out = exe.execute([x, w, u, np.int32(i), np.int32(j)])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[ci:ci + 2, cj:cj + 3], u)
    (dus,) = [t for t in exe.plan.thunks if t.instruction.name == "d"]
    assert dus.kind == "kernel" and ("d", "y") in exe.assignment.in_place_shares
    assert dus.refs[0].same_bytes(dus.refs[-1]), "the update is written into the dot's buffer"


LAYOUT_COPY = """
HloModule relayout
ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  y = f32[3,4]{1,0} negate(x)
  c = f32[3,4]{0,1} copy(y)
  ROOT z = f32[3,4]{0,1} multiply(c, c)
}
"""


def test_layout_changing_copy_gives_logical_values(backend):
    exe = compile_text(backend, LAYOUT_COPY)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(exe.execute([x]), x * x)


DONATE = """
HloModule donate, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = f32[8] parameter(0)
  one = f32[] constant(1)
  b = f32[8] broadcast(one), dimensions={}
  ROOT a = f32[8] add(p, b)
}
"""


def test_donated_parameter_is_not_written_in_the_callers_array(backend):
    """An array the caller did not hand over (``execute(args, owned)``) is copied before
    the program writes the donated parameter (in-place reuse: test_cpu_donation.py)."""
    exe = compile_text(backend, DONATE)
    x = np.arange(8, dtype=np.float32)
    out = exe.execute([x])
    np.testing.assert_array_equal(out, np.arange(8) + 1)
    np.testing.assert_array_equal(x, np.arange(8))


FALLBACK_OPS = {
    "partition-id": "HloModule m\nENTRY e {\n  ROOT p = u32[] partition-id()\n}\n",
    "replica-id": "HloModule m\nENTRY e {\n  ROOT p = u32[] replica-id()\n}\n",
    "stochastic-convert": "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n"
                          "  r = u32[4] parameter(1)\n"
                          "  ROOT c = s32[4] stochastic-convert(a, r)\n}\n",
    "dynamic-reshape": "HloModule m\nENTRY e {\n  a = f32[4,3] parameter(0)\n"
                       "  d0 = s32[] parameter(1)\n  d1 = s32[] parameter(2)\n"
                       "  ROOT r = f32[<=12,1] dynamic-reshape(a, d0, d1)\n}\n",
}


@pytest.mark.parametrize("opcode", list(FALLBACK_OPS))
def test_documented_fallback_ops_run_as_fallbacks(backend, opcode):
    """The list in executable.py's docstring."""
    assert compile_text(backend, FALLBACK_OPS[opcode]).fallback_opcodes() == [opcode]


def test_batch_norm_is_expanded_not_a_fallback(backend):
    exe = compile_text(backend, """
HloModule bn
ENTRY e {
  x = f32[2,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  ROOT b = f32[2,3] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
}
""")
    assert exe.fallback_opcodes() == []


# ----------------------------------------------------------------------------- dumps
def test_dump_writes_llvm_ir_and_assembly_next_to_the_hlo(tmp_path):
    reset_dump_numbering()
    with debug_options(xla_dump_to=str(tmp_path)):
        cpu.CpuBackend(use_disk_cache=False).compile(parse_module(AXPY))
    names = sorted(p.name for p in tmp_path.iterdir())
    prefix = next(n for n in names if n.endswith(".axpy.after_optimizations.txt")).split(".")[0]
    for suffix in ("before_optimizations.txt", "ir-no-opt.ll", "ir-with-opt.ll", "s"):
        assert f"{prefix}.axpy.{suffix}" in names, names
    before = (tmp_path / f"{prefix}.axpy.ir-no-opt.ll").read_text()
    after = (tmp_path / f"{prefix}.axpy.ir-with-opt.ll").read_text()
    asm = (tmp_path / f"{prefix}.axpy.s").read_text()
    assert "define void @" in before and "xk_" in before
    assert "vector.body" in after or "<8 x float>" in after or "<16 x float>" in after
    assert "xk_" in asm


def test_unknown_custom_call_fails_at_compile_time(backend):
    from xlapy.errors import UnimplementedError
    text = """
HloModule cc
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="no_such_library_routine"
}
"""
    with pytest.raises(UnimplementedError, match="no_such_library_routine"):
        compile_text(backend, text)


SCAN = """
HloModule scan
cond {
  s = (s32[], f32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  w = f32[64] get-tuple-element(s), index=1
  acc = f32[64] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  acc2 = f32[64] add(acc, w)
  ROOT t = (s32[], f32[64], f32[64]) tuple(i2, w, acc2)
}
ENTRY main {
  w = f32[64] parameter(0)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  acc = f32[64] broadcast(z), dimensions={}
  init = (s32[], f32[64], f32[64]) tuple(zero, w, acc)
  ROOT r = (s32[], f32[64], f32[64]) while(init), condition=cond, body=body
}
"""


def test_loop_state_is_used_in_place(backend):
    exe = compile_text(backend, SCAN)
    w = rand(64, seed=13)
    i, w_out, acc = exe.execute([w])
    assert int(i) == 5
    np.testing.assert_array_equal(w_out, w)
    np.testing.assert_allclose(acc, 5 * w, rtol=1e-6)
    (loop,) = [t for t in exe.plan.walk() if t.kind == "while"]
    # the state lives in the body's parameter and root buffers: nothing is copied per
    # trip, and the invariant w is read where the caller's array is
    assert loop.to_body_first.pairs == [] and loop.to_body.pairs == []
    assert loop.from_body.pairs == [] and loop.init.pairs == []
    body = exe.module.computation(loop.instruction.attrs["body"].name)
    assert exe.assignment.slice(body.parameters[0], (1,)) == \
        exe.assignment.slice(exe.module.entry.parameters[0])
