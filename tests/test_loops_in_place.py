"""Loops and conditionals in place: the loop state, the body's parameter and root share one
buffer (``passes/buffer_sets.py``), and what must still be copied is.

Every program runs on the CPU backend twice (a constant or parameter clobbered by the first
call shows up in the second) and is compared with the interpreter; each also runs with
``copy-insertion`` disabled, so buffer assignment's own checks (not the copies) must keep it
correct.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.backends.cpu as cpu
from xlapy.backends.interpreter import evaluate_module
from xlapy.client.run import flatten_result
from xlapy.config import debug_options
from xlapy.hlo import parse_module


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


def rand(*dims, seed=0):
    return np.random.default_rng(seed).standard_normal(dims).astype(np.float32)


def check(backend, text, args, copy_insertion=True):
    """Compile ``text``, run it twice, compare with the interpreter; the arguments must be
    left untouched. Returns the executable."""
    saved = [np.array(a, copy=True) for a in args]
    want = flatten_result(evaluate_module(parse_module(text), args))
    flags = {} if copy_insertion else {"xla_disable_hlo_passes": ("copy-insertion",)}
    with debug_options(**flags):
        exe = backend.compile(parse_module(text))
    for _ in range(2):
        got = flatten_result(exe.execute(args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    for a, s in zip(args, saved):
        np.testing.assert_array_equal(a, s)
    return exe


def while_thunks(exe):
    return [t for t in exe.plan.walk() if t.kind == "while"]


ROW_WRITES = """
HloModule row_writes
cond {
  cs = (s32[], f32[64,32]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[64,32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[64,32] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  fi = f32[] convert(i)
  row = f32[1,32] broadcast(fi), dimensions={}
  seven = s32[] constant(7)
  at = s32[] multiply(i, seven)
  zero = s32[] constant(0)
  u = f32[64,32] dynamic-update-slice(b, row, at, zero)
  ROOT r = (s32[], f32[64,32]) tuple(i1, u)
}
ENTRY main {
  x = f32[64,32] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[64,32]) tuple(z, x)
  w = (s32[], f32[64,32]) while(t), condition=cond, body=body
  ROOT o = f32[64,32] get-tuple-element(w), index=1
}
"""


def test_row_writes_update_the_loop_state_in_place(backend):
    exe = check(backend, ROW_WRITES, [rand(64, 32)])
    (loop,) = while_thunks(exe)
    # nothing is copied per trip: the body writes the state's own buffer
    assert loop.to_body.pairs == [] and loop.from_body.pairs == []
    assert loop.to_condition.pairs == []
    body = exe.module.computation(loop.instruction.attrs["body"].name)
    ba = exe.assignment
    assert ba.slice(body.root, (1,)) == ba.slice(body.parameters[0], (1,)) \
        == ba.slice(loop.instruction, (1,))
    check(backend, ROW_WRITES, [rand(64, 32)], copy_insertion=False)


READ_AFTER_UPDATE = """
HloModule read_after_update
cond {
  cs = (s32[], f32[16,8], f32[8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body {
  s = (s32[], f32[16,8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[16,8] get-tuple-element(s), index=1
  acc = f32[8] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  row = f32[1,8] broadcast(f32[] constant(100)), dimensions={}
  zero = s32[] constant(0)
  u = f32[16,8] dynamic-update-slice(b, row, i, zero)
  old = f32[1,8] dynamic-slice(b, i, zero), dynamic_slice_sizes={1,8}
  oldr = f32[8] reshape(old)
  acc1 = f32[8] add(acc, oldr)
  ROOT r = (s32[], f32[16,8], f32[8]) tuple(i1, u, acc1)
}
ENTRY main {
  x = f32[16,8] parameter(0)
  z = s32[] constant(0)
  a0 = f32[8] broadcast(f32[] constant(0)), dimensions={}
  t = (s32[], f32[16,8], f32[8]) tuple(z, x, a0)
  w = (s32[], f32[16,8], f32[8]) while(t), condition=cond, body=body
  o = f32[16,8] get-tuple-element(w), index=1
  s = f32[8] get-tuple-element(w), index=2
  ROOT res = (f32[16,8], f32[8], f32[16,8]) tuple(o, s, x)
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_state_read_after_it_is_updated(backend, copy_insertion):
    check(backend, READ_AFTER_UPDATE, [rand(16, 8, seed=3)], copy_insertion)


SAME_BUFFER_TWICE = """
HloModule same_twice
cond {
  cs = (s32[], f32[32], f32[32]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[32], f32[32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[32] get-tuple-element(s), index=1
  b = f32[32] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  two = f32[32] broadcast(f32[] constant(2)), dimensions={}
  a1 = f32[32] multiply(a, two)
  b1 = f32[32] add(b, two)
  ROOT r = (s32[], f32[32], f32[32]) tuple(i1, a1, b1)
}
ENTRY main {
  x = f32[32] parameter(0)
  x2 = f32[32] add(x, x)
  z = s32[] constant(0)
  t = (s32[], f32[32], f32[32]) tuple(z, x2, x2)
  w = (s32[], f32[32], f32[32]) while(t), condition=cond, body=body
  a = f32[32] get-tuple-element(w), index=1
  b = f32[32] get-tuple-element(w), index=2
  ROOT res = (f32[32], f32[32]) tuple(a, b)
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_same_buffer_twice_in_the_loop_state(backend, copy_insertion):
    check(backend, SAME_BUFFER_TWICE, [rand(32, seed=4)], copy_insertion)


PARAM_AND_CONSTANT_STATE = """
HloModule param_constant_state
cond {
  cs = (s32[], f32[8], f32[4], f32[8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[8], f32[4], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  p = f32[8] get-tuple-element(s), index=1
  c = f32[4] get-tuple-element(s), index=2
  k = f32[8] get-tuple-element(s), index=3
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  p1 = f32[8] add(p, k)
  c1 = f32[4] multiply(c, c)
  ROOT r = (s32[], f32[8], f32[4], f32[8]) tuple(i1, p1, c1, k)
}
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  z = s32[] constant(0)
  c0 = f32[4] constant({1.5, 0.5, -1, 1.1})
  t = (s32[], f32[8], f32[4], f32[8]) tuple(z, x, c0, y)
  w = (s32[], f32[8], f32[4], f32[8]) while(t), condition=cond, body=body
  p = f32[8] get-tuple-element(w), index=1
  c = f32[4] get-tuple-element(w), index=2
  k = f32[8] get-tuple-element(w), index=3
  ky = f32[8] add(k, y)
  ROOT res = (f32[8], f32[4], f32[8], f32[8], f32[4]) tuple(p, c, ky, x, c0)
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_state_that_is_a_parameter_or_constant_is_copied(backend, copy_insertion):
    exe = check(backend, PARAM_AND_CONSTANT_STATE, [rand(8, seed=5), rand(8, seed=6)],
                copy_insertion)
    if copy_insertion:
        # y is passed through unchanged: the loop reads the caller's array in place
        (loop,) = while_thunks(exe)
        w = loop.instruction
        y = exe.module.entry.parameters[1]
        assert exe.assignment.slice(w, (3,)) == exe.assignment.slice(y)


SWAP = """
HloModule swap
cond {
  cs = (s32[], f32[8], f32[8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[8] get-tuple-element(s), index=1
  b = f32[8] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  na = f32[8] negate(a)
  ROOT r = (s32[], f32[8], f32[8]) tuple(i1, b, na)
}
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  x1 = f32[8] exponential(x)
  y1 = f32[8] exponential(y)
  z = s32[] constant(0)
  t = (s32[], f32[8], f32[8]) tuple(z, x1, y1)
  ROOT w = (s32[], f32[8], f32[8]) while(t), condition=cond, body=body
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_swapped_state_elements(backend, copy_insertion):
    check(backend, SWAP, [rand(8, seed=7), rand(8, seed=8)], copy_insertion)


NESTED = """
HloModule nested
icond {
  cs = (s32[], s32[], f32[12,4]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
ibody {
  s = (s32[], s32[], f32[12,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  j = s32[] get-tuple-element(s), index=1
  b = f32[12,4] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  three = s32[] constant(3)
  j3 = s32[] multiply(j, three)
  at = s32[] add(j3, i)
  v = f32[] convert(at)
  row = f32[1,4] broadcast(v), dimensions={}
  zero = s32[] constant(0)
  u = f32[12,4] dynamic-update-slice(b, row, at, zero)
  ROOT r = (s32[], s32[], f32[12,4]) tuple(i1, j, u)
}
ocond {
  cs = (s32[], f32[12,4]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
obody {
  s = (s32[], f32[12,4]) parameter(0)
  j = s32[] get-tuple-element(s), index=0
  b = f32[12,4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j1 = s32[] add(j, one)
  zero = s32[] constant(0)
  t = (s32[], s32[], f32[12,4]) tuple(zero, j, b)
  w = (s32[], s32[], f32[12,4]) while(t), condition=icond, body=ibody
  b1 = f32[12,4] get-tuple-element(w), index=2
  ROOT r = (s32[], f32[12,4]) tuple(j1, b1)
}
ENTRY main {
  x = f32[12,4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[12,4]) tuple(z, x)
  w = (s32[], f32[12,4]) while(t), condition=ocond, body=obody
  ROOT o = f32[12,4] get-tuple-element(w), index=1
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_nested_loops(backend, copy_insertion):
    exe = check(backend, NESTED, [rand(12, 4, seed=9)], copy_insertion)
    if copy_insertion:
        outer, inner = sorted(while_thunks(exe), key=lambda t: t.instruction.parent.is_entry)
        for loop in (outer, inner):
            assert loop.to_body.pairs == [] and loop.from_body.pairs == []


CONDITIONAL = """
HloModule cond_in_place
keep {
  p = (f32[16], f32[16]) parameter(0)
  a = f32[16] get-tuple-element(p), index=0
  b = f32[16] get-tuple-element(p), index=1
  ROOT r = (f32[16], f32[16]) tuple(a, b)
}
change {
  p = (f32[16], f32[16]) parameter(0)
  a = f32[16] get-tuple-element(p), index=0
  b = f32[16] get-tuple-element(p), index=1
  na = f32[16] negate(a)
  s = f32[16] add(a, b)
  ROOT r = (f32[16], f32[16]) tuple(s, na)
}
ENTRY main {
  k = s32[] parameter(0)
  x = f32[16] parameter(1)
  y = f32[16] parameter(2)
  x1 = f32[16] sine(x)
  t = (f32[16], f32[16]) tuple(x1, y)
  c = (f32[16], f32[16]) conditional(k, t, t), branch_computations={keep, change}
  c0 = f32[16] get-tuple-element(c), index=0
  c1 = f32[16] get-tuple-element(c), index=1
  after = f32[16] add(c0, x1)
  ROOT res = (f32[16], f32[16], f32[16]) tuple(after, c1, y)
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
@pytest.mark.parametrize("branch", [0, 1, 5])
def test_conditional_branches(backend, copy_insertion, branch):
    check(backend, CONDITIONAL, [np.int32(branch), rand(16, seed=10), rand(16, seed=11)],
          copy_insertion)


DOT_STATE = """
HloModule dot_state
cond {
  cs = (s32[], f32[8,8], f32[8,8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[8,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  m = f32[8,8] get-tuple-element(s), index=1
  k = f32[8,8] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  d = f32[8,8] dot(m, k), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (s32[], f32[8,8], f32[8,8]) tuple(i1, d, k)
}
ENTRY main {
  x = f32[8,8] parameter(0)
  y = f32[8,8] parameter(1)
  z = s32[] constant(0)
  x1 = f32[8,8] negate(x)
  t = (s32[], f32[8,8], f32[8,8]) tuple(z, x1, y)
  w = (s32[], f32[8,8], f32[8,8]) while(t), condition=cond, body=body
  ROOT o = f32[8,8] get-tuple-element(w), index=1
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_state_rewritten_by_an_op_that_cannot_write_in_place(backend, copy_insertion):
    """A dot reads the state and produces its next value: they cannot share a buffer."""
    exe = check(backend, DOT_STATE, [rand(8, 8, seed=12) * 0.3, rand(8, 8, seed=13)],
                copy_insertion)
    body = exe.module.computation(while_thunks(exe)[0].instruction.attrs["body"].name)
    dot = next(i for i in body.instructions if i.opcode == "dot" or (
        i.opcode == "fusion" and i.attrs["calls"].root.opcode == "dot"))
    mat = next(o for o in dot.operands if o.shape.dims == (8, 8))
    assert exe.assignment.slice(dot) != exe.assignment.slice(mat) or \
        exe.assignment.slice(dot) != exe.assignment.slice(dot.operands[1])


def test_fori_loop_donated_state():
    """A donated buffer updated by a loop of row writes (the front end's donation path)."""
    def f(buf, rows):
        def body(i, b):
            return xlapy.lax.dynamic_update_slice(b, rows[i][None, :], (i * 3, 0))
        return xlapy.lax.fori_loop(0, 5, body, buf)

    jf = xlapy.jit(f, donate_argnums=0)
    rows = rand(5, 4, seed=14)
    want = rand(20, 4, seed=15)
    for k in range(5):
        want[3 * k] = rows[k]
    for _ in range(2):
        buf = xlapy.numpy.asarray(rand(20, 4, seed=15))
        np.testing.assert_array_equal(np.asarray(jf(buf, rows)), want)
    np.testing.assert_array_equal(np.asarray(xlapy.jit(f)(rand(20, 4, seed=15), rows)), want)


def test_loop_of_kernels_runs_in_the_native_driver(backend):
    """A loop left with no copies per trip runs its trips natively, chunk by chunk."""
    from xlapy.backends.cpu import native_loop
    text = ROW_WRITES.replace("n = s32[] constant(10)", "n = s32[] constant(600)") \
        .replace("seven = s32[] constant(7)", "seven = s32[] constant(0)")
    assert 600 > 2 * native_loop.TRIPS_PER_CALL
    exe = check(backend, text, [rand(64, 32, seed=16)])
    (loop,) = while_thunks(exe)
    assert loop._native
    np.testing.assert_array_equal(exe.execute([rand(64, 32)])[0], np.full(32, 599.0))
    with debug_options(xla_hlo_profile=True):
        profiled = backend.compile(parse_module(text))
    profiled.execute([rand(64, 32)])
    (loop,) = while_thunks(profiled)
    assert loop._native is False          # the profile times each kernel of the trip


CALL = """
HloModule call_in_place
callee {
  a = f32[16] parameter(0)
  b = f32[16] parameter(1)
  e = f32[16] exponential(a)
  ROOT r = (f32[16], f32[16], f32[16]) tuple(e, b, a)
}
ENTRY main {
  x = f32[16] parameter(0)
  y = f32[16] parameter(1)
  x1 = f32[16] negate(x)
  c = (f32[16], f32[16], f32[16]) call(x1, y), to_apply=callee
  c0 = f32[16] get-tuple-element(c), index=0
  c2 = f32[16] get-tuple-element(c), index=2
  s = f32[16] add(c2, x1)
  ROOT res = (f32[16], f32[16], f32[16]) tuple(c0, s, y)
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
def test_call_that_returns_its_parameters(backend, copy_insertion):
    with debug_options(xla_disable_hlo_passes=("call-inliner",)):
        flags = {} if copy_insertion else {"xla_disable_hlo_passes": ("call-inliner",
                                                                      "copy-insertion")}
        with debug_options(**flags):
            exe = backend.compile(parse_module(CALL))
    assert any(t.kind == "call" for t in exe.plan.walk())
    args = [rand(16, seed=17), rand(16, seed=18)]
    want = flatten_result(evaluate_module(parse_module(CALL), args))
    for _ in range(2):
        for g, w in zip(flatten_result(exe.execute(args)), want):
            np.testing.assert_allclose(g, w, rtol=1e-6)


SHARED_BODY = """
HloModule shared_body
cond {
  cs = (s32[], f32[8,4]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[8,4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  fi = f32[] convert(i1)
  row = f32[1,4] broadcast(fi), dimensions={}
  zero = s32[] constant(0)
  u = f32[8,4] dynamic-update-slice(b, row, i, zero)
  ROOT r = (s32[], f32[8,4]) tuple(i1, u)
}
twice {
  p = f32[8,4] parameter(0)
  ROOT d = f32[8,4] add(p, p)
}
ENTRY main {
  x = f32[8,4] parameter(0)
  z = s32[] constant(0)
  t1 = (s32[], f32[8,4]) tuple(z, x)
  w1 = (s32[], f32[8,4]) while(t1), condition=cond, body=body
  a = f32[8,4] get-tuple-element(w1), index=1
  e = f32[8,4] exponential(x)
  t2 = (s32[], f32[8,4]) tuple(z, e)
  w2 = (s32[], f32[8,4]) while(t2), condition=cond, body=body
  b = f32[8,4] get-tuple-element(w2), index=1
  k = s32[] parameter(1)
  c = f32[8,4] conditional(k, a, b), branch_computations={twice, twice}
  ROOT res = (f32[8,4], f32[8,4], f32[8,4]) tuple(a, b, c)
}
"""


@pytest.mark.parametrize("copy_insertion", [True, False])
@pytest.mark.parametrize("branch", [0, 1])
def test_computations_called_from_several_places(backend, copy_insertion, branch):
    """Two loops share their body and condition, and a conditional runs one computation
    for both branches: those are not colocated with either caller."""
    check(backend, SHARED_BODY, [rand(8, 4, seed=19), np.int32(branch)], copy_insertion)


def test_consecutive_kernels_run_in_one_native_call(backend):
    """A loop body mixing kernels and a library dot: runs of kernels are one native call
    each, the dot stays a Python call, and the answer is the interpreter's."""
    from xlapy.backends.cpu.thunks import _KernelRun
    exe = check(backend, DOT_STATE, [rand(8, 8, seed=20) * 0.3, rand(8, 8, seed=21)])
    grouped = [r for t in exe.plan.walk() if t.kind == "while"
               for plan in t.subplans for r in plan._runs
               if getattr(r, "__self__", None).__class__ is _KernelRun]
    entry = [r for r in exe.plan._runs if getattr(r, "__self__", None).__class__ is _KernelRun]
    assert grouped or entry
    for run in grouped + entry:
        assert run.__self__.n > 1
