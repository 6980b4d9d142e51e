"""Buffer assignment: liveness, heap packing, in-place reuse, donation, tuple aliasing, report."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from cpu_kernel_harness import assert_same, run_both
from xlapy.backends.cpu import CpuBackend
from xlapy.hlo import parse_module
from xlapy.passes import heap_simulator as heap
from xlapy.passes.buffer_assignment import (
    CONSTANT, OUTPUT, PARAMETER, TEMP, assign_buffers, human_bytes, intermediate_bytes)
from xlapy.backends.cpu.pipeline import fusion_passes
from xlapy.passes.liveness import Liveness, best_schedule, list_schedule
from conformance import CASES_DIR

ADD = """
add_f32 {
  add_lhs = f32[] parameter(0)
  add_rhs = f32[] parameter(1)
  ROOT add_sum = f32[] add(add_lhs, add_rhs)
}
"""


def module(body: str, header: str = ""):
    return parse_module(f"HloModule m{header}\n" + ADD + body)


CHAIN = """
ENTRY main {
  x = f32[256] parameter(0)
  a = f32[256] exponential(x)
  r1 = f32[128] slice(a), slice={[0:128]}
  b = f32[128] negate(r1)
  r2 = f32[64] slice(b), slice={[0:64]}
  c = f32[64] sine(r2)
  r3 = f32[32] slice(c), slice={[0:32]}
  zero = f32[] constant(0)
  ROOT s = f32[] reduce(r3, zero), dimensions={0}, to_apply=add_f32
}
"""


def test_reuse_makes_temp_smaller_than_no_reuse_on_a_chain():
    m = module(CHAIN)
    ba = assign_buffers(m)
    base = assign_buffers(module(CHAIN), allow_reuse=False)
    assert ba.total_temp_bytes < base.total_temp_bytes == ba.no_reuse_temp_bytes
    assert base.total_temp_bytes == 1024 + 512 + 512 + 256 + 256 + 128
    assert ba.min_temp_bytes <= ba.total_temp_bytes
    # no two temps that are live at the same time overlap in memory
    live = ba._infos[id(m.entry)].live
    placed = [(b, off, size) for b, off, size in ba.temp_allocation.assigned]
    for i, (b1, o1, s1) in enumerate(placed):
        for b2, o2, s2 in placed[i + 1:]:
            if live.ranges[b1.id].overlaps(live.ranges[b2.id]) and \
                    ba._infos[id(m.entry)].groups.find(b1.id) != \
                    ba._infos[id(m.entry)].groups.find(b2.id):
                assert o1 + s1 <= o2 or o2 + s2 <= o1


def test_in_place_reuse_of_a_dying_elementwise_operand():
    m = module("""
ENTRY main {
  x = f32[64] parameter(0)
  a = f32[64] exponential(x)
  b = f32[64] negate(a)
  zero = f32[] constant(0)
  ROOT s = f32[] reduce(b, zero), dimensions={0}, to_apply=add_f32
}
""")
    ba = assign_buffers(m)
    a, b = m.entry.instruction("a"), m.entry.instruction("b")
    assert ("b", "a") in ba.in_place_shares
    assert ba.slice(a) == ba.slice(b)
    assert ba.total_temp_bytes == 256
    # x is a parameter: never overwritten in place
    assert ("a", "x") not in ba.in_place_shares


def test_an_array_all_reduce_reduces_in_its_dying_operands_buffer():
    """All-reduce is elementwise across the participants: its result may take its dying
    operand's buffer (the runtime then passes MPI_IN_PLACE); a tuple all-reduce, or one
    whose operand lives on, gets its own."""
    m = module("""
ENTRY main {
  x = f32[64] parameter(0)
  a = f32[64] exponential(x)
  r = f32[64] all-reduce(a), replica_groups={}, to_apply=add_f32
  b = f32[64] exponential(x)
  c = f32[64] exponential(x)
  t = (f32[64], f32[64]) all-reduce(b, c), replica_groups={}, to_apply=add_f32
  t0 = f32[64] get-tuple-element(t), index=0
  t1 = f32[64] get-tuple-element(t), index=1
  d = f32[64] exponential(x)
  k = f32[64] all-reduce(d), replica_groups={}, to_apply=add_f32
  s1 = f32[64] add(r, t0)
  s2 = f32[64] add(s1, t1)
  s3 = f32[64] add(s2, k)
  ROOT s = f32[64] add(s3, d)
}
""", ", replica_count=2")
    ba = assign_buffers(m)
    assert ("r", "a") in ba.in_place_shares
    assert ba.slice(m.entry.instruction("r")) == ba.slice(m.entry.instruction("a"))
    assert ("t", "b") not in ba.in_place_shares and ("t", "c") not in ba.in_place_shares
    assert ("k", "d") not in ba.in_place_shares             # d is read after k


def test_no_in_place_reuse_when_operand_is_still_live():
    m = module("""
ENTRY main {
  x = f32[64] parameter(0)
  a = f32[64] exponential(x)
  b = f32[64] negate(a)
  c = f32[64] add(a, b)
  zero = f32[] constant(0)
  ROOT s = f32[] reduce(c, zero), dimensions={0}, to_apply=add_f32
}
""")
    ba = assign_buffers(m, schedule="post_order")
    assert ("b", "a") not in ba.in_place_shares
    assert ba.slice(m.entry.instruction("a")) != ba.slice(m.entry.instruction("b"))


DONATE = """
ENTRY main {
  x = f32[16] parameter(0)
  one = f32[] constant(1)
  b1 = f32[16] broadcast(one), dimensions={}
  ROOT y = f32[16] add(x, b1)
}
"""


def test_donation_is_honoured_by_writing_into_the_parameter():
    m = module(DONATE, ", input_output_alias={ {}: (0, {}, may-alias) }")
    ba = assign_buffers(m)
    out = ba.slice(m.entry.root)
    assert out.allocation.kind == PARAMETER and out.allocation.parameter_number == 0
    assert out.allocation.aliased_with_output
    assert [d.honoured for d in ba.donation_messages] == [True]
    assert not [a for a in ba.allocations if a.kind == OUTPUT]


def test_donation_refused_when_parameter_is_read_after_the_output_is_written():
    m = module("""
ENTRY main {
  x = f32[16] parameter(0)
  one = f32[] constant(1)
  b1 = f32[16] broadcast(one), dimensions={}
  y = f32[16] add(x, b1)
  z = f32[16] multiply(x, x)
  ROOT t = (f32[16], f32[16]) tuple(y, z)
}
""", ", input_output_alias={ {0}: (0, {}, may-alias) }")
    ba = assign_buffers(m, schedule="post_order")
    (d,) = ba.donation_messages
    assert not d.honoured
    assert "still read by z" in d.message and "not honoured" in d.message
    assert ba.slice(m.entry.instruction("y")).allocation.kind == OUTPUT
    assert "donation:" in ba.to_text()


def test_donation_refused_on_shape_mismatch():
    m = module("""
ENTRY main {
  x = f32[16] parameter(0)
  ROOT y = f32[8] slice(x), slice={[0:8]}
}
""", ", input_output_alias={ {}: (0, {}, may-alias) }")
    ba = assign_buffers(m)
    (d,) = ba.donation_messages
    assert not d.honoured and "shape mismatch" in d.message


def test_tuple_and_get_tuple_element_alias_their_operands():
    m = module("""
ENTRY main {
  x = f32[8] parameter(0)
  a = f32[8] exponential(x)
  b = f32[8] negate(x)
  t = (f32[8], f32[8]) tuple(a, b)
  g = f32[8] get-tuple-element(t), index=1
  ROOT r = f32[8] add(g, a)
}
""")
    ba = assign_buffers(m)
    e = m.entry
    live = ba._infos[id(e)].live
    assert ba.slice(e.instruction("g")) == ba.slice(e.instruction("b"))
    assert ba.slice(e.instruction("t"), (0,)) == ba.slice(e.instruction("a"))
    (table,) = live.defined_by(e.instruction("t"))
    assert table.index == () and table.size == 16          # two 8-byte pointers
    assert live.defined_by(e.instruction("g")) == []


OPT_BARRIER = """
ENTRY main {
  x = f32[64] parameter(0)
  a = f32[64] abs(x)
  b = f32[64] negate(x)
  t = (f32[64], f32[64]) tuple(a, b)
  o = (f32[64], f32[64]) opt-barrier(t)
  g0 = f32[64] get-tuple-element(o), index=0
  g1 = f32[64] get-tuple-element(o), index=1
  s = f32[64] sqrt(g0)
  tok = token[] after-all()
  d = f32[64] add-dependency(b, tok)
  ROOT r = f32[64] add(s, d)
}
"""


def test_forwarding_ops_alias_their_operand():
    """opt-barrier and add-dependency define no buffers (XLA's dataflow forwards operand
    0's values): no copies at run time."""
    m = module(OPT_BARRIER)
    ba = assign_buffers(m)
    e = m.entry
    live = ba._infos[id(e)].live
    assert live.defined_by(e.instruction("o")) == []
    assert live.defined_by(e.instruction("d")) == []
    assert ba.slice(e.instruction("g0")) == ba.slice(e.instruction("a"))
    assert ba.slice(e.instruction("o"), (1,)) == ba.slice(e.instruction("b"))
    assert ba.slice(e.instruction("d")) == ba.slice(e.instruction("b"))
    # b is read through the barrier's alias after s: s may not write into it
    assert ba.slice(e.instruction("s")) != ba.slice(e.instruction("b"))


def test_allocation_kinds_and_report():
    m = module("""
ENTRY main {
  x = f32[4,8] parameter(0)
  c = f32[8] constant({1,2,3,4,5,6,7,8})
  bc = f32[4,8] broadcast(c), dimensions={1}
  a = f32[4,8] multiply(x, bc)
  e = f32[4,8] exponential(a)
  zero = f32[] constant(0)
  ROOT s = f32[4] reduce(e, zero), dimensions={1}, to_apply=add_f32
}
""")
    ba = assign_buffers(m)
    kinds = {a.kind for a in ba.allocations}
    assert kinds == {PARAMETER, CONSTANT, OUTPUT, TEMP}
    assert ba.parameter_bytes == 128 and ba.output_bytes == 16
    assert ba.constant_bytes == 32 + 4
    text = ba.to_text()
    assert text.startswith("BufferAssignment:")
    assert "allocation 0: size 128, parameter 0, shape |f32[4,8]| at ShapeIndex {}:" in text
    assert f"Total temp bytes: {ba.total_temp_bytes}" in text
    assert "preallocated temp allocation:" in text and "BufferAssignment stats:" in text
    assert ", preallocated-temp:" in text
    assert ba.peak_memory == sum(a.size for a in ba.allocations)


def test_while_body_buffers_are_assigned():
    m = module("""
cond {
  cs = (s32[], f32[8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  v = f32[8] get-tuple-element(s), index=1
  e = f32[8] exponential(v)
  ROOT bt = (s32[], f32[8]) tuple(i1, e)
}
ENTRY main {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(t), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}
""")
    ba = assign_buffers(m)
    body = m.computation("body")
    sl = ba.slice(body.instruction("e"))
    assert sl.size == 32
    # the loop state, the body's parameter and root share the while's result buffer
    w = m.entry.instruction("w")
    assert sl == ba.slice(w, (1,)) == ba.slice(body.parameters[0], (1,))
    assert ba.slice(m.entry.root).allocation.kind == OUTPUT
    # the initial value is a parameter: it keeps its own (read-only) buffer
    assert ba.slice(m.entry.instruction("x")) != sl


def test_heap_simulator_best_fit_and_bounds():
    ivs = [heap.BufferInterval("a", 100, 0, 2), heap.BufferInterval("b", 100, 3, 5),
           heap.BufferInterval("c", 50, 1, 4)]
    res = heap.simulate(ivs, alignment=1)
    assert res.heap_size == 150 == heap.min_memory(ivs)
    assert res.offsets["a"] == res.offsets["b"]
    assert heap.no_reuse(ivs, alignment=1).heap_size == 250
    assert heap.no_reuse(ivs, alignment=16).heap_size == 112 + 112 + 50
    with pytest.raises(ValueError):
        heap.best_fit(ivs, order="random")


def test_list_schedule_is_topological_and_not_worse_than_post_order():
    m = module(CHAIN)
    order = list_schedule(m.entry)
    pos = {id(i): k for k, i in enumerate(order)}
    assert len(order) == len(m.entry.instructions)
    assert all(pos[id(o)] < pos[id(i)] for i in order for o in i.operands)
    best = Liveness(m.entry, best_schedule(m.entry)).peak_live_bytes()
    assert best == min(Liveness(m.entry, order).peak_live_bytes(),
                       Liveness(m.entry, m.entry.post_order()).peak_live_bytes())


def test_human_bytes():
    assert human_bytes(400) == "400B"
    assert human_bytes(1200) == "1.17KiB"
    assert human_bytes(3 * 1024 * 1024) == "3.00MiB"


TRAIN = [d for d in sorted(glob.glob(str(CASES_DIR / "training" / "*") + "/"))
         if os.path.basename(d.rstrip("/")) in ("train_mlp_adam", "train_cifar_cnn_rmsprop")]


@pytest.mark.skipif(not TRAIN, reason="conformance cases not present")
@pytest.mark.parametrize("case_dir", TRAIN, ids=[d.split("/")[-2] for d in TRAIN])
def test_training_step_temp_bytes_well_below_unfused_sum(case_dir):
    m = parse_module(open(os.path.join(case_dir, "module.hlo")).read())
    unfused = intermediate_bytes(m)
    for p in fusion_passes():
        p.run(m)
    ba = assign_buffers(m)
    print(f"{case_dir.split('/')[-2]}: temp {ba.total_temp_bytes} B "
          f"(lower bound {ba.min_temp_bytes}, no reuse {ba.no_reuse_temp_bytes}), "
          f"unfused sum of intermediates {unfused} B")
    assert 0 < ba.total_temp_bytes < ba.no_reuse_temp_bytes
    assert ba.total_temp_bytes * 4 < unfused
    for instr in m.entry.instructions:          # every value has a home
        if instr.shape.is_array:
            assert ba.slice(instr).size == instr.shape.byte_size


def test_layout_changing_copy_does_not_write_into_its_operand():
    from xlapy.hlo import parse_module
    from xlapy.passes.buffer_assignment import assign_buffers
    module = parse_module("""HloModule m
ENTRY e {
  p = f32[4,8]{1,0} parameter(0)
  n = f32[4,8]{1,0} negate(p)
  c = f32[4,8]{0,1} copy(n)
  ROOT r = f32[4,8]{0,1} negate(c)
}""")
    ba = assign_buffers(module)
    entry = module.entry
    by_name = {i.name: i for i in entry.instructions}
    n_slice, c_slice = ba.slice(by_name["n"]), ba.slice(by_name["c"])
    same = n_slice.allocation is c_slice.allocation and n_slice.offset == c_slice.offset
    assert not same


# Programs with forwarding ops, f32[64] argument (also run on the GPU simulator: test_gpu).
FORWARDING_PROGRAMS = [
    "HloModule m\n" + ADD + OPT_BARRIER,
    """HloModule param_through_barrier
ENTRY main {
  x = f32[64] parameter(0)
  t = (f32[64]) tuple(x)
  ROOT o = (f32[64]) opt-barrier(t)
}""",
]


@pytest.mark.parametrize("text", FORWARDING_PROGRAMS)
def test_forwarding_ops_run_on_the_cpu_backend(text):
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    got, want = run_both(CpuBackend(use_disk_cache=False), text, [x])
    assert_same(got, want)
    np.testing.assert_array_equal(x, np.linspace(-2, 2, 64, dtype=np.float32))
    assert not any(np.shares_memory(g, x) for g in got)    # a result is never the argument


def test_cpu_buffers_start_on_cache_lines():
    """The CPU target places every temporary on a 64-byte boundary (XLA's own minimum is 16):
    the kernels' 64-byte vector loads and stores of a row then never straddle two lines."""
    from xlapy.backends.cpu.pipeline import BUFFER_ALIGNMENT, TARGET
    m = module("""
ENTRY main {
  x = f32[5] parameter(0)
  a = f32[5] exponential(x)
  b = f32[5] negate(x)
  c = f32[5] sine(x)
  d = f32[5] add(a, b)
  e = f32[5] multiply(d, c)
  ROOT f = f32[5] add(e, a)
}""")
    assert BUFFER_ALIGNMENT == 64
    assert any(s.offset % 16 == 0 and s.offset % 64
               for s in assign_buffers(m)._slices.values())
    cpu = TARGET.assign_buffers(m)
    assert all(s.offset % 64 == 0 for s in cpu._slices.values())
