"""The CPU backend's collective thunks (``backends/cpu/collective_thunk.py``): a row-major
all-reduce, and an all-gather whose members' blocks follow each other in memory, hand their
buffers to the communicator instead of running the interpreter's handler; the answers are the
interpreter's for every reducer and dtype (native MPI ones and the portable path alike), and
anything they do not take still runs as a fallback."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends.communicator import InProcessCommunicator, Participant, participating
from xlapy.client import get_backend
from xlapy.config import debug_options
from xlapy.hlo import parse_module

def _reducer(name: str, dtype: str, op: str) -> str:
    return (f"{name} {{\n  a = {dtype}[] parameter(0)\n  b = {dtype}[] parameter(1)\n"
            f"  ROOT c = {dtype}[] {op}(a, b)\n}}\n")


REDUCERS = "\n".join(_reducer(*r) for r in (("add", "f32", "add"), ("addi", "s32", "add"),
                                              ("maxf", "f32", "maximum"),
                                              ("addbf", "bf16", "add")))

BODY = """  p = f32[2,3] parameter(0)
  i = s32[4] parameter(1)
  h = bf16[5] parameter(2)
  v = f32[4] convert(i)
  t = (f32[2,3], f32[4]) all-reduce(p, v), replica_groups={{0,2},{1,3}}, to_apply=add
  n = s32[4] all-reduce(i), replica_groups={{0,2},{1,3}}, to_apply=addi
  m = f32[2,3] all-reduce(p), replica_groups={}, to_apply=maxf
  b = bf16[5] all-reduce(h), replica_groups={{3,2,1,0}}, to_apply=addbf
  s = f32[2,3] all-reduce-start(p), replica_groups={{1,0},{3,2}}, to_apply=add
  d = f32[2,3] all-reduce-done(s)
  q = f32[2,3]{0,1} copy(p)
  l = f32[2,3]{0,1} all-reduce(q), replica_groups={}, to_apply=add
  g = f32[4,3] all-gather(p), replica_groups={{0,2},{1,3}}, dimensions={0}
  w = f32[1,4] reshape(v)
  g1 = f32[1,16] all-gather(w), replica_groups={}, dimensions={1}
  g2 = f32[2,6] all-gather(p), replica_groups={{3,1},{2,0}}, dimensions={1}
  gb = bf16[10] all-gather(h), replica_groups={{1,0},{2,3}}, dimensions={0}
  t0 = f32[2,3] get-tuple-element(t), index=0
  t1 = f32[4] get-tuple-element(t), index=1
  ROOT r = (f32[2,3], f32[4], s32[4], f32[2,3], bf16[5], f32[2,3], f32[2,3]{0,1}, f32[4,3], f32[1,16], f32[2,6], bf16[10]) tuple(t0, t1, n, m, b, d, l, g, g1, g2, gb)"""


def _text(replicas: int) -> str:
    return f"HloModule thunks, replica_count={replicas}\n\n{REDUCERS}\nENTRY e {{\n{BODY}\n}}\n"


def _args(n: int) -> list[list[np.ndarray]]:
    import ml_dtypes
    rng = np.random.default_rng(7)
    return [[rng.normal(size=(2, 3)).astype(np.float32),
             rng.integers(-50, 50, 4).astype(np.int32),
             rng.normal(size=5).astype(ml_dtypes.bfloat16)] for _ in range(n)]


def test_row_major_all_reduces_run_as_collective_thunks():
    exe = get_backend("cpu").compile(parse_module(_text(4)))
    kinds = exe.thunk_kinds()
    assert kinds["t"] == kinds["n"] == kinds["m"] == kinds["b"] == kinds["s"] == "collective"
    assert kinds["g"] == kinds["g1"] == kinds["gb"] == "collective"
    assert kinds["l"] == "fallback"                 # column-major: the interpreter's handler
    assert kinds["g2"] == "fallback"                # members interleave in memory
    assert exe.fallback_opcodes() == ["all-gather", "all-reduce", "all-reduce-done"]


@pytest.mark.parametrize("replicas", [4, 1])
def test_collective_thunks_match_the_interpreter(replicas):
    text = _text(replicas)
    if replicas == 1:
        text = text.replace("{{0,2},{1,3}}", "{}").replace("{{3,2,1,0}}", "{}") \
            .replace("{{1,0},{3,2}}", "{}").replace("{{3,1},{2,0}}", "{}") \
            .replace("{{1,0},{2,3}}", "{}").replace("f32[4,3]", "f32[2,3]") \
            .replace("f32[1,16]", "f32[1,4]").replace("f32[2,6]", "f32[2,3]") \
            .replace("bf16[10]", "bf16[5]")
    args = _args(replicas)

    def run(backend: str) -> list:
        if replicas == 1:
            return [xlapy.run_hlo(text, args[0], backend=backend)]
        return xlapy.run_hlo(text, args, backend=backend)
    expected = run("interpreter")
    with debug_options(xla_force_host_platform_device_count=replicas):
        for _ in range(2):                  # the second call reuses the kept group plans
            got = run("cpu")
    assert len(got) == replicas
    for g, e in zip(got, expected):
        assert len(g) == len(e) == 11
        for a, b in zip(g, e):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    if replicas == 4:       # the sums and gathers really are over the groups
        np.testing.assert_allclose(got[0][0], args[0][0] + args[2][0], rtol=1e-6)
        np.testing.assert_array_equal(got[1][2], args[1][1] + args[3][1])
        np.testing.assert_array_equal(got[3][7], np.concatenate([args[1][0], args[3][0]]))
        np.testing.assert_array_equal(got[2][10], np.concatenate([args[2][2], args[3][2]]))


def test_one_participant_runs_the_fallback_without_a_communicator():
    text = ("HloModule one\n\n" + REDUCERS + "\nENTRY e {\n  p = f32[6] parameter(0)\n"
            "  ROOT a = f32[6] all-reduce(p), replica_groups={}, to_apply=add\n}\n")
    exe = get_backend("cpu").compile(parse_module(text))
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(exe.execute([x]), x)


class _Recording(InProcessCommunicator):
    """Records the calls that reach the communicator."""

    def __init__(self) -> None:
        super().__init__(timeout=10)
        self.calls = []

    def exchange(self, call, arrays, compute):
        self.calls.append(call)
        return super().exchange(call, arrays, compute)


def test_the_same_executable_serves_several_device_layouts():
    """The thunk keeps a plan per (replicas, partitions, device): one compiled program run
    as device 1 of 2, then as device 0 of 2, then as device 1 again, meets each time with
    its own group and sequence number."""
    text = ("HloModule two, replica_count=2\n\n" + REDUCERS + "\nENTRY e {\n"
            "  p = f32[4] parameter(0)\n"
            "  ROOT a = f32[4] all-reduce(p), replica_groups={{0},{1}}, to_apply=add\n}\n")
    exe = get_backend("cpu").compile(parse_module(text))
    comm = _Recording()
    devices = [Participant(d, 0, 2, 1, comm) for d in range(2)]
    for d in (1, 0, 1):
        x = np.full(4, d + 1, np.float32)
        with participating(devices[d]):
            np.testing.assert_array_equal(exe.execute([x]), x)      # groups of one
    assert [(c.group, c.position, c.sequence) for c in comm.calls] == \
        [((1,), 0, 0), ((0,), 0, 0), ((1,), 0, 1)]
    assert all(c.what == "all-reduce %a" for c in comm.calls)


MOVERS = """  p = f32[8,3] parameter(0)
  h = bf16[4,2] parameter(1)
  i = s32[8] parameter(2)
  rs = f32[2,3] reduce-scatter(p), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=add
  rb = bf16[2,2] reduce-scatter(h), replica_groups={{3,1},{0,2}}, dimensions={0}, to_apply=addbf
  ri = s32[4] reduce-scatter(i), replica_groups={{1,0},{3,2}}, dimensions={0}, to_apply=addi
  rx = f32[4,3] reduce-scatter(p), replica_groups={{0,1},{2,3}}, dimensions={0}, to_apply=maxf
  aa = f32[8,3] all-to-all(p), replica_groups={{2,0,3,1}}, dimensions={0}
  ab = bf16[4,2] all-to-all(h), replica_groups={{0,1},{2,3}}, dimensions={0}
  cp = f32[8,3] collective-permute(p), source_target_pairs={{0,1},{1,2},{2,0}}
  cb = bf16[4,2] collective-permute(h), source_target_pairs={{3,0},{0,3}}
  w = f32[4,6] reshape(p)
  a2 = f32[4,6] all-to-all(w), replica_groups={{0,1},{2,3}}, dimensions={1}
  a = f32[8,3] add(p, p)
  ar = f32[8,3] all-reduce(a), replica_groups={}, to_apply=add
  ROOT r = (f32[2,3], bf16[2,2], s32[4], f32[4,3], f32[8,3], bf16[4,2], f32[8,3], bf16[4,2], f32[4,6], f32[8,3]) tuple(rs, rb, ri, rx, aa, ab, cp, cb, a2, ar)"""


def _movers_args(n: int) -> list[list[np.ndarray]]:
    import ml_dtypes
    rng = np.random.default_rng(11)
    return [[rng.normal(size=(8, 3)).astype(np.float32),
             rng.normal(size=(4, 2)).astype(ml_dtypes.bfloat16),
             rng.integers(-50, 50, 8).astype(np.int32)] for _ in range(n)]


def test_reduce_scatter_all_to_all_and_permute_run_as_collective_thunks():
    """Their blocks follow each other in memory: thunks over the buffers (native MPI ops and
    the portable path alike), answers equal to the interpreter's; an all-to-all along a
    minor dimension stays a fallback, and an all-reduce whose operand dies there reduces
    in its operand's buffer."""
    text = f"HloModule movers, replica_count=4\n\n{REDUCERS}\nENTRY e {{\n{MOVERS}\n}}\n"
    exe = get_backend("cpu").compile(parse_module(text))
    kinds = exe.thunk_kinds()
    for name in ("rs", "rb", "ri", "rx", "aa", "ab", "cp", "cb", "ar"):
        assert kinds[name] == "collective", name
    assert kinds["a2"] == "fallback"
    (ar,) = [t for t in exe.plan.walk() if t.instruction.name == "ar"]
    assert ar._in_place == [True]
    args = _movers_args(4)
    expected = xlapy.run_hlo(text, args, backend="interpreter")
    with debug_options(xla_force_host_platform_device_count=4):
        for _ in range(2):
            got = xlapy.run_hlo(text, args, backend="cpu")
    for g, e in zip(got, expected):
        assert len(g) == len(e) == 10
        for a, b in zip(g, e):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    # the data really moved: device 1 got device 0's operand, device 3 none (zeros)
    np.testing.assert_array_equal(got[1][6], args[0][0])
    np.testing.assert_array_equal(got[3][6], np.zeros((8, 3), np.float32))
    np.testing.assert_array_equal(got[0][2], args[1][2][4:] + args[0][2][4:])   # position 1


TUPLE_ALL_TO_ALL = """  p = f32[3,2] parameter(0)
  h = bf16[5] parameter(1)
  q = f32[3,2] negate(p)
  r = f32[3,2] add(p, p)
  g = bf16[5] negate(h)
  t4 = (f32[3,2], f32[3,2], f32[3,2], f32[3,2]) all-to-all(p, q, r, p), replica_groups={{2,0,3,1}}
  t2 = (bf16[5], bf16[5]) all-to-all(h, g), replica_groups={{1,0},{2,3}}
  a = f32[3,2] get-tuple-element(t4), index=0
  b = f32[3,2] get-tuple-element(t4), index=3
  c = bf16[5] get-tuple-element(t2), index=0
  d = bf16[5] get-tuple-element(t2), index=1
  ROOT o = (f32[3,2], f32[3,2], bf16[5], bf16[5]) tuple(a, b, c, d)"""


def test_tuple_form_all_to_all_runs_as_a_collective_thunk():
    """Operand j goes to group position j, result j comes from position j: a thunk over
    the buffers with the interpreter's answers (4 and 2 members, f32 and bf16)."""
    import ml_dtypes
    text = (f"HloModule tuple_a2a, replica_count=4\n\n{REDUCERS}\nENTRY e {{\n"
            f"{TUPLE_ALL_TO_ALL}\n}}\n")
    exe = get_backend("cpu").compile(parse_module(text))
    kinds = exe.thunk_kinds()
    assert kinds["t4"] == kinds["t2"] == "collective"
    rng = np.random.default_rng(5)
    args = [[rng.normal(size=(3, 2)).astype(np.float32),
             rng.normal(size=5).astype(ml_dtypes.bfloat16)] for _ in range(4)]
    expected = xlapy.run_hlo(text, args, backend="interpreter")
    with debug_options(xla_force_host_platform_device_count=4):
        for _ in range(2):
            got = xlapy.run_hlo(text, args, backend="cpu")
    for g, e in zip(got, expected):
        for a, b in zip(g, e):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    # device 0 is position 1 of {2,0,3,1}: result 0 is position 0's (device 2's) operand 1
    np.testing.assert_array_equal(got[0][0], -args[2][0])
    np.testing.assert_array_equal(got[0][1], -args[1][0])         # position 3: device 1
    np.testing.assert_array_equal(got[2][3], args[3][1])  # {2,3}: device 3's operand 0


def test_tuple_form_all_to_all_with_operands_of_two_sizes_stays_a_fallback():
    text = ("HloModule uneven, replica_count=2\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
            "  q = f32[2] parameter(1)\n"
            "  ROOT t = (f32[4], f32[2]) all-to-all(p, q), replica_groups={{0,1}}\n}\n")
    assert get_backend("cpu").compile(parse_module(text)).thunk_kinds()["t"] == "fallback"
