"""The CPU reduction emitter on fusions: epilogues, multi-output, phases, the pipeline.

Hand-written fusions (including XLA's own softmax/layernorm YNNPACK fusions) run through
``cpu_kernel_harness``; the front end's programs run through the whole CPU backend.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu

from cpu_kernel_harness import (ADD_F32, MAX_F32, Kernel, SharedBuffer,  # noqa: E402
                                check_direct, interpret, rand)
from xlapy.backends.cpu.reduction_emitter import ReductionEmitter  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


# ----------------------------------------------------------------------------- fusions
MOF = "HloModule mof\n" + ADD_F32 + MAX_F32 + """\
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


COLUMN_FUSION = "HloModule colfusion\n" + ADD_F32 + """\
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


NESTED = "HloModule nested\n" + ADD_F32 + """\
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


LOGSUMEXP = "HloModule lse\n" + ADD_F32 + """\
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


XLA_SOFTMAX = "HloModule xla_softmax\n" + ADD_F32 + MAX_F32 + """\
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

XLA_LAYERNORM = "HloModule xla_layernorm\n" + ADD_F32 + """\
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


def sized(text: str, rows: int, cols: int) -> str:
    return (text.replace("[R,C]", f"[{rows},{cols}]").replace("[R]", f"[{rows}]")
            .replace("[C]", f"[{cols}]").replace("INV", repr(1.0 / cols)))


@pytest.mark.parametrize("rows,cols", [(8, 16), (40, 300), (64, 1024)])
def test_xla_style_softmax_and_layernorm_fusions_run_in_phases(rows, cols):
    x = rand(rows, cols, seed=17)
    k = check_direct(sized(XLA_SOFTMAX, rows, cols), [x])
    assert "2 phases" in k.spec.notes[0] and k.spec.notes[0].startswith("row")
    got = k.run([x])[0].astype(np.float64)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    g, b = rand(cols, seed=18), rand(cols, seed=19)
    k = check_direct(sized(XLA_LAYERNORM, rows, cols), [x, g, b], rtol=1e-5, atol=1e-5)
    assert "2 phases" in k.spec.notes[0]


def test_softmax_keeps_exp_for_the_output_sweep(monkeypatch):
    text = sized(XLA_SOFTMAX, 16, 300)
    module = parse_module(text)
    plan = ReductionEmitter().plan(module.entry.root)
    assert [i.opcode for i in plan.comp.instructions if id(i) in plan.row_cache] == \
        ["exponential"]
    x = rand(16, 300, seed=20)
    kept = Kernel(text).run([x])[0]
    from xlapy.backends.cpu import reduction_analysis
    monkeypatch.setattr(reduction_analysis, "ROW_CACHE_ELEMENTS", 0)
    assert ReductionEmitter().plan(parse_module(text).entry.root).row_cache == {}
    assert Kernel(text).run([x])[0].tobytes() == kept.tobytes()


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
    results = []
    for threads in (1, 2):
        be = cpu.CpuBackend(use_disk_cache=False, num_threads=threads, parallel_cost=0)
        results.append((be.compile(parse_module(text)).execute(args),
                        be.compile(parse_module(row_text)).execute([rows])))
    (a1, r1), (a2, r2) = results
    assert np.asarray(a1).tobytes() == np.asarray(a2).tobytes()
    assert np.asarray(r1).tobytes() == np.asarray(r2).tobytes()


IN_PLACE = "HloModule in_place\n" + ADD_F32 + """\
%fused (p0: f32[64,40], p1: f32[64]) -> f32[64] {
  %p0 = f32[64,40]{1,0} parameter(0)
  %p1 = f32[64]{0} parameter(1)
  %z = f32[] constant(0)
  %s = f32[64]{0} reduce(%p0, %z), dimensions={1}, to_apply=%add_f32
  %e = f32[64]{0} exponential(%p1)
  ROOT %o = f32[64]{0} add(%s, %e)
}
ENTRY main {
  %x = f32[64,40]{1,0} parameter(0)
  %t = f32[64]{0} parameter(1)
  ROOT %f = f32[64]{0} fusion(%x, %t), kind=kLoop, calls=%fused
}
"""


def test_epilogue_operand_sharing_the_output_buffer():
    # buffer assignment may put an operand read only by the epilogue (elementwise) in the
    # output's buffer: the kernel reads it through the output pointer, element by element
    k = Kernel(IN_PLACE, shared=1)
    assert k.aliases == {1: 2}
    x, t = rand(64, 40, seed=22), rand(64, seed=23)
    np.testing.assert_allclose(k.run([x, t])[0], interpret(IN_PLACE, [x, t])[0], rtol=1e-5,
                               atol=1e-5)
    # an operand the reduce itself reads cannot share the output buffer
    root = parse_module(IN_PLACE).entry.root
    assert not ReductionEmitter(SharedBuffer(root, 0)).can_emit(root)
