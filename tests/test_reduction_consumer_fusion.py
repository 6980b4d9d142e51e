"""``reduction_consumer_fusion``: row reductions fused with the consumers that read them.

Structure (softmax, log-softmax and layernorm become one fusion; what must stay apart
stays apart), values (the same bits before and after the pass, on the interpreter and on
the CPU backend, NaN/inf rows included), and that the CPU reduction emitter accepts every
fusion the pass makes.
"""
from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from pass_check import assert_same_bits, run_passes
from xlapy.hlo import parse_module
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo import types as T
from xlapy.backends.cpu.pipeline import ROW_REDUCTION_RULES, fusion_passes
from xlapy.passes.fusion_utils import fused_computation, reachable_from
from xlapy.passes.instruction_fusion import CpuInstructionFusion
from xlapy.passes.layout_assignment import CpuLayoutAssignment
from xlapy.passes.reduction_consumer_fusion import ReductionConsumerFusion, row_fusion_decision

import xlapy.backends.cpu as cpu
from xlapy.backends.cpu.reduction_analysis import analyze  # noqa: E402
from xlapy.config import debug_options  # noqa: E402

PASS = "reduction_consumer_fusion"


# ----------------------------------------------------------------------------- programs
def softmax(x):
    m = xnp.max(x, axis=-1, keepdims=True)
    e = xnp.exp(x - m)
    return e / xnp.sum(e, axis=-1, keepdims=True)


def layernorm(x, g, b):
    mean = xnp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xnp.mean(d * d, axis=-1, keepdims=True)
    return d * xlapy.lax.rsqrt(var + 1e-5) * g + b


def layernorm_div(x, g, b):
    mean = xnp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xnp.mean(d * d, axis=-1, keepdims=True)
    return d / xnp.sqrt(var + 1e-5) * g + b


def rand(*dims, seed=0, dtype=np.float32, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(dims) * scale).astype(dtype)


def lower(fn, *args) -> str:
    return xlapy.jit(fn).lower(*args).as_text()


def compile_cpu(text: str, fused: bool = True):
    backend = cpu.CpuBackend(use_disk_cache=False)
    if fused:
        return backend.compile(parse_module(text))
    with debug_options(xla_disable_hlo_passes=(PASS,)):
        return backend.compile(parse_module(text))


def results(exe, args) -> tuple:
    out = exe.execute(args)
    return tuple(np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out]))


def row_fusions(module) -> list[HloInstruction]:
    return [i for c in module.computations for i in c.instructions
            if i.opcode == "fusion" and i.name.startswith("row_reduction_fusion")]


def check_cpu(text: str, args: list) -> tuple:
    """Compile with and without the pass: the same bits; every new fusion is a reduction
    kernel the emitter plans (with the executable's buffer assignment)."""
    exe = compile_cpu(text)
    for f in row_fusions(exe.module):
        assert analyze(f, exe.assignment) is not None, f.name
        assert exe.thunk_kinds()[f.name] == "kernel"
    got = results(exe, args)
    assert_same_bits(results(compile_cpu(text, fused=False), args), got)
    return exe, got


FRONT_END = [
    ("softmax", softmax, lambda: [rand(40, 300, seed=1)]),
    ("nn.softmax", xlapy.nn.softmax, lambda: [rand(8, 16, seed=2)]),
    ("nn.log_softmax", xlapy.nn.log_softmax, lambda: [rand(64, 1024, seed=3)]),
    ("layernorm", layernorm, lambda: [rand(32, 96, seed=4), rand(96, seed=5), rand(96, seed=6)]),
    ("layernorm 3-d", layernorm_div,
     lambda: [rand(4, 16, 64, seed=7), rand(64, seed=8), rand(64, seed=9)]),
]


@pytest.mark.parametrize("name,fn,make", FRONT_END, ids=[c[0] for c in FRONT_END])
def test_front_end_programs_become_one_kernel(name, fn, make):
    args = make()
    text = lower(fn, *args)
    exe, got = check_cpu(text, args)
    kinds = exe.thunk_kinds()
    assert list(kinds.values()) == ["kernel"], kinds
    (f,) = row_fusions(exe.module)
    assert f.attrs["kind"] == "kInput"
    body = fused_computation(f)
    assert sum(i.opcode == "reduce" for i in body.instructions) >= 2
    want = fn(*[a.astype(np.float64) for a in args]) if name != "nn.softmax" else None
    if name.startswith("layernorm"):
        x, g, b = [a.astype(np.float64) for a in args]
        d = x - x.mean(-1, keepdims=True)
        want = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g + b
    elif name == "nn.log_softmax":
        x = args[0].astype(np.float64)
        m = x.max(-1, keepdims=True)
        want = x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))
    else:
        x = args[0].astype(np.float64)
        e = np.exp(x - x.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(got[0], want, rtol=2e-5, atol=2e-5)


def tanh_layernorm(x, g, b):
    return layernorm(xnp.tanh(x) * 2.0 + x, g, b)


@pytest.mark.parametrize("rows,cols", [(64, 77), (16, 1000)])
def test_sums_keep_their_bits_when_fused_with_expensive_producers(rows, cols):
    # unfused, tanh is its own kernel and the mean sums a plain load; fused, the sum's
    # loop also computes tanh: the pinned vector loops add in the same order either way
    args = [rand(rows, cols, seed=23), rand(cols, seed=24), rand(cols, seed=25)]
    exe, got = check_cpu(lower(tanh_layernorm, *args), args)
    assert len(exe.thunk_kinds()) == 1
    x, g, b = [a.astype(np.float64) for a in args]
    y = np.tanh(x) * 2 + x
    d = y - y.mean(-1, keepdims=True)
    want = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)


def test_expensive_ops_are_not_duplicated():
    args = [rand(16, 200, seed=10)]
    text = lower(softmax, *args)
    fused, unfused = compile_cpu(text), compile_cpu(text, fused=False)

    def count(module, op):
        return sum(i.opcode == op for c in module.computations for i in c.instructions)
    for op in ("exponential", "divide", "reduce"):
        assert count(fused.module, op) == count(unfused.module, op), op


# ----------------------------------------------------------------------------- NaN and inf
def test_nan_and_inf_rows_keep_their_bits():
    x = rand(12, 40, seed=11)
    x[0] = -np.inf                          # max = -inf: every x - max is NaN
    x[1, 3] = np.inf                        # inf - inf = NaN at the max, 0 elsewhere
    x[2, 5] = np.nan                        # NaN max propagates
    x[3] = 0.0
    x[3, ::2] = -0.0                        # signed zeros
    x[4] = 3e38                             # exp(0) over a row of huge equal values
    x[5, 7] = -np.inf
    for fn in (softmax, xlapy.nn.log_softmax):
        text = lower(fn, x)
        _, got = check_cpu(text, [x])
        want = xlapy.run_hlo(text, [x], backend="interpreter")
        np.testing.assert_allclose(got[0], np.asarray(want[0]), rtol=1e-5, atol=1e-6,
                                   equal_nan=True)
        assert np.isnan(got[0][0]).all() and np.isnan(got[0][2]).all()
    g, b = rand(40, seed=12), rand(40, seed=13)
    check_cpu(lower(layernorm, x, g, b), [x, g, b])


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_other_float_types(dtype):
    x = rand(24, 130, seed=14, dtype=dtype)
    exe, _ = check_cpu(lower(softmax, x), [x])
    assert len(row_fusions(exe.module)) == 1


# ----------------------------------------------------------------------------- interpreter
ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}
%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %larger = f32[] maximum(%c, %d)
}
"""

# XLA's stable softmax as JAX emits it (keepdims reshapes, the max feeding two users).
JAX_SOFTMAX = "HloModule jax_softmax\n" + ADD + """
ENTRY %main (x: f32[6,33]) -> f32[6,33] {
  %x = f32[6,33]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[6]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mr = f32[6,1]{1,0} reshape(%mx)
  %mb0 = f32[6]{0} reshape(%mr)
  %mb = f32[6,33]{1,0} broadcast(%mb0), dimensions={0}
  %dx = f32[6,33]{1,0} subtract(%x, %mb)
  %e = f32[6,33]{1,0} exponential(%dx)
  %z = f32[] constant(0)
  %s = f32[6]{0} reduce(%e, %z), dimensions={1}, to_apply=%add
  %sr = f32[6,1]{1,0} reshape(%s)
  %sb0 = f32[6]{0} reshape(%sr)
  %sb = f32[6,33]{1,0} broadcast(%sb0), dimensions={0}
  ROOT %o = f32[6,33]{1,0} divide(%e, %sb)
}
"""

def fresh_passes():
    return [CpuLayoutAssignment(), CpuInstructionFusion(), ReductionConsumerFusion(ROW_REDUCTION_RULES)]


def test_interpreter_values_unchanged_and_rule_holds():
    x = rand(6, 33, seed=15)
    x[1] = -np.inf
    passes = fresh_passes()
    m, changed = run_passes(JAX_SOFTMAX, passes, args=[x])
    assert changed
    (f,) = row_fusions(m)
    assert m.entry.root is f
    assert row_fusion_decision(fused_computation(f), ROW_REDUCTION_RULES)
    assert analyze(f) is not None
    assert passes[2].created == [f]


SHARED_MAX = "HloModule shared_max\n" + ADD + """
ENTRY %main (x: f32[16,64]) -> (f32[16,64], f32[16]) {
  %x = f32[16,64]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[16]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[16,64]{1,0} broadcast(%mx), dimensions={0}
  %dx = f32[16,64]{1,0} subtract(%x, %mb)
  %e = f32[16,64]{1,0} exponential(%dx)
  %z = f32[] constant(0)
  %s = f32[16]{0} reduce(%e, %z), dimensions={1}, to_apply=%add
  %l = f32[16]{0} log(%s)
  %lse = f32[16]{0} add(%l, %mx)
  %lb = f32[16,64]{1,0} broadcast(%l), dimensions={0}
  %o = f32[16,64]{1,0} subtract(%dx, %lb)
  ROOT %t = (f32[16,64]{1,0}, f32[16]{0}) tuple(%o, %lse)
}
"""


def test_values_used_outside_become_outputs():
    x = rand(16, 64, seed=16)
    m, _ = run_passes(SHARED_MAX, fresh_passes(), args=[x])
    (f,) = row_fusions(m)
    assert f.shape.is_tuple                       # the log-softmax and the logsumexp
    assert m.entry.root.opcode == "tuple"
    assert all(o.opcode == "get-tuple-element" and o.operands[0] is f
               for o in m.entry.root.operands)
    assert analyze(f) is not None
    check_cpu(SHARED_MAX, [x])


# The softmax is read as it is (a column sum, as a bias gradient) and through a bitcast to
# two dims (a matrix product, as a weight gradient).
VIEWED = "HloModule viewed\n" + ADD + """
ENTRY %main (x: f32[4,16,64], w: f32[64,8]) -> (f32[64], f32[64,8]) {
  %x = f32[4,16,64]{2,1,0} parameter(0)
  %w = f32[64,8]{1,0} parameter(1)
  %ninf = f32[] constant(-inf)
  %mx = f32[4,16]{1,0} reduce(%x, %ninf), dimensions={2}, to_apply=%max
  %mb = f32[4,16,64]{2,1,0} broadcast(%mx), dimensions={0,1}
  %dx = f32[4,16,64]{2,1,0} subtract(%x, %mb)
  %e = f32[4,16,64]{2,1,0} exponential(%dx)
  %z = f32[] constant(0)
  %s = f32[4,16]{1,0} reduce(%e, %z), dimensions={2}, to_apply=%add
  %sb = f32[4,16,64]{2,1,0} broadcast(%s), dimensions={0,1}
  %p = f32[4,16,64]{2,1,0} divide(%e, %sb)
  %col = f32[64]{0} reduce(%p, %z), dimensions={0,1}, to_apply=%add
  %p2 = f32[64,64]{1,0} bitcast(%p)
  %y = f32[64,8]{1,0} dot(%p2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[64]{0}, f32[64,8]{1,0}) tuple(%col, %y)
}
"""


def test_a_value_read_through_a_bitcast_is_stored_once():
    """The bitcast of an output leaves the group as a bitcast of that output's
    get-tuple-element, not as a second output with the same bytes."""
    args = [rand(4, 16, 64, seed=21), rand(64, 8, seed=22)]
    m, _ = run_passes(VIEWED, fresh_passes(), args=args)
    (f,) = row_fusions(m)
    leaves = f.shape.leaves() if f.shape.is_tuple else [f.shape]
    assert sum(1 for s in leaves if s.num_elements == 4 * 16 * 64) == 1
    dot = next(i for i in m.entry.instructions if i.opcode == "dot")
    view = dot.operands[0]
    assert view.opcode == "bitcast" and view.shape.dims == (64, 64)
    source = view.operands[0]
    assert source is f or (source.opcode == "get-tuple-element" and source.operands[0] is f)
    check_cpu(VIEWED, args)


# ----------------------------------------------------------------------------- left apart
COLUMN = "HloModule column\n" + ADD + """
ENTRY %main (x: f32[64,48]) -> f32[64,48] {
  %x = f32[64,48]{1,0} parameter(0)
  %z = f32[] constant(0)
  %s = f32[48]{0} reduce(%x, %z), dimensions={0}, to_apply=%add
  %sb = f32[64,48]{1,0} broadcast(%s), dimensions={1}
  ROOT %o = f32[64,48]{1,0} divide(%x, %sb)
}
"""

OTHER_ROW = "HloModule other_row\n" + ADD + """
ENTRY %main (x: f32[40,40]) -> f32[40,40] {
  %x = f32[40,40]{1,0} parameter(0)
  %z = f32[] constant(0)
  %s = f32[40]{0} reduce(%x, %z), dimensions={1}, to_apply=%add
  %sb = f32[40,40]{1,0} broadcast(%s), dimensions={1}
  ROOT %o = f32[40,40]{1,0} divide(%x, %sb)
}
"""

REVERSED_ROWS = "HloModule reversed_rows\n" + ADD + """
ENTRY %main (x: f32[40,30]) -> f32[40,30] {
  %x = f32[40,30]{1,0} parameter(0)
  %z = f32[] constant(0)
  %s = f32[40]{0} reduce(%x, %z), dimensions={1}, to_apply=%add
  %r = f32[40]{0} reverse(%s), dimensions={0}
  %sb = f32[40,30]{1,0} broadcast(%r), dimensions={0}
  ROOT %o = f32[40,30]{1,0} divide(%x, %sb)
}
"""

# The consumer also reads the sum through a dot: fusing it would make a cycle.
THROUGH_DOT = "HloModule through_dot\n" + ADD + """
ENTRY %main (x: f32[32,24], w: f32[24,24]) -> f32[32,24] {
  %x = f32[32,24]{1,0} parameter(0)
  %w = f32[24,24]{1,0} parameter(1)
  %z = f32[] constant(0)
  %s = f32[32]{0} reduce(%x, %z), dimensions={1}, to_apply=%add
  %sb = f32[32,24]{1,0} broadcast(%s), dimensions={0}
  %y = f32[32,24]{1,0} dot(%sb, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %q = f32[32,24]{1,0} divide(%x, %sb)
  ROOT %o = f32[32,24]{1,0} add(%q, %y)
}
"""


@pytest.mark.parametrize("text", [COLUMN, OTHER_ROW, REVERSED_ROWS],
                         ids=["column", "other-row", "reversed-rows"])
def test_consumers_that_are_not_row_local_stay_apart(text):
    module = parse_module(text)
    args = [rand(*p.shape.dims, seed=17 + k) for k, p in enumerate(module.entry.parameters)]
    passes = fresh_passes()
    m, _ = run_passes(text, passes, args=args)
    assert not passes[2].created and not row_fusions(m)
    assert passes[2].refusals
    check_cpu(text, args)


def test_a_consumer_reading_the_group_through_an_outsider_stays_apart():
    x, w = rand(32, 24, seed=19), rand(24, 24, seed=20)
    m, _ = run_passes(THROUGH_DOT, fresh_passes(), args=[x, w])
    (f,) = row_fusions(m)                  # the sum and its broadcast (read by the dot)
    dot = next(i for i in m.entry.instructions if i.opcode == "dot")
    root = m.entry.root
    assert root.opcode == "fusion" and root is not f and any(o is dot for o in root.operands)
    assert not any(i.opcode == "dot" for i in fused_computation(f).instructions)
    check_cpu(THROUGH_DOT, [x, w])


def test_long_rows_keep_exp_computed_once():
    # rows longer than the emitter's row cache: exp(x - max) is needed by the sum and by
    # the output, so the max and the exp are one fusion (exp is stored once), the sum and
    # the divide another (they read the stored exp twice)
    x = rand(8, 10000, seed=21)
    passes = fresh_passes()
    text = lower(softmax, x)
    m, _ = run_passes(text, passes, args=[x])
    first, second = row_fusions(m)
    ops = [[i.opcode for i in fused_computation(f).instructions] for f in (first, second)]
    assert ops[0].count("reduce") == 1 and "exponential" in ops[0]
    assert ops[1].count("reduce") == 1 and "exponential" not in ops[1]
    assert second.operands == [first]
    assert any("computed again" in r.reason for r in passes[2].refusals)
    check_cpu(text, [x])


def test_few_long_rows_stay_splittable():
    x = rand(2, 40000, seed=22)
    passes = fresh_passes()
    m, _ = run_passes(lower(softmax, x), passes, args=[x])
    assert not passes[2].created and not row_fusions(m)
    assert all("split across threads" in r.reason for r in passes[2].refusals)


def test_the_rule_stays_within_the_emitter():
    # the pass's own thresholds are at most the CPU reduction emitter's; the row cache
    # is the emitter's, asked through the CPU target's rules
    from xlapy.backends.cpu import reduction_plan as plan
    from xlapy.backends.target import get_target
    from xlapy.passes import reduction_consumer_fusion as rcf
    assert get_target("cpu").row_reduction_rules.row_cache_elements == plan.ROW_CACHE_ELEMENTS
    assert rcf.SPLIT_ROWS >= plan.SPLIT_ITEMS and rcf.SPLIT_WORK <= 2 * plan.UNIT_WORK


def test_pass_runs_after_instruction_fusion_in_the_cpu_pipeline():
    names = [p.name for p in fusion_passes()]
    # right after instruction fusion (and the convolution's output fusion, which only
    # touches convolutions), before copy insertion
    between = names[names.index("fusion") + 1:names.index(PASS)]
    assert set(between) <= {"conv-output-fusion"}
    assert names.index(PASS) < names.index("copy-insertion")
    assert PASS not in [p.name for p in fusion_passes(reduction_consumer_fusion=False)]


# ----------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("case_name", ["nn_attention", "red_logsumexp",
                                       "train_transformer_block"])
def test_jax_programs_fuse_and_keep_their_bits(case_name):
    from conformance import all_cases
    cases = [c for c in all_cases() if c.path.name == case_name]
    if not cases:
        pytest.skip(f"conformance case {case_name} not found")
    case = cases[0]
    text = case.text("module.hlo")
    args, expected = case.inputs_and_outputs([p.shape for p in
                                              parse_module(text).entry.parameters])
    exe, got = check_cpu(text, args)
    assert row_fusions(exe.module)
    for g, w in zip(got, expected):
        np.testing.assert_allclose(g, w, rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-4))


# ----------------------------------------------------------------------------- reachable_from
def test_reachable_from_follows_users_and_control_edges_in_linear_time():
    m = parse_module(JAX_SOFTMAX)
    comp = m.entry
    x, e, o = comp.instruction("x"), comp.instruction("e"), comp.instruction("o")
    mx = comp.instruction("mx")
    reach = reachable_from([e])
    assert id(o) in reach and id(mx) not in reach and id(x) not in reach
    z = comp.instruction("z")
    z.control_predecessors.append(o)               # o -> z by a control edge
    assert id(z) in reachable_from([e])
    # a long chain: each step used to scan the whole computation for control successors
    prev = x
    for k in range(6000):
        prev = comp.add_instruction(HloInstruction("negate", Shape.array(T.F32, (6, 33)),
                                                   [prev], name=f"chain.{k}"))
    start = time.perf_counter()
    assert len(reachable_from([x])) > 6000
    assert time.perf_counter() - start < 2.0
