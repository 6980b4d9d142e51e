"""Every module is verified before it runs: malformed HLO raises VerificationError naming
the instruction (and its line:column when it came from text) instead of running native
code out of bounds. The malformed cases run in a subprocess, so a crash fails the test
instead of killing pytest."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xlapy
from xlapy.client import get_backend
from xlapy.errors import VerificationError
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu

ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"

# name -> (HLO text, argument specs (dtype, shape), bad instruction, its line, a phrase)
CASES = {
    "declared shape larger than the operand": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n"
        "  ROOT r = f32[50000000] negate(a)\n}\n",
        [("f4", (10,))], "e/r", 4, "does not match the inferred f32[10]"),
    "slice out of range": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n"
        "  ROOT r = f32[5] slice(a), slice={[8:13]}\n}\n",
        [("f4", (10,))], "e/r", 4, "out of bounds"),
    "dynamic-slice larger than its operand": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n  i = s32[] parameter(1)\n"
        "  ROOT r = f32[12] dynamic-slice(a, i), dynamic_slice_sizes={12}\n}\n",
        [("f4", (10,)), ("i4", ())], "e/r", 5, "exceeds f32[10]"),
    "dynamic-update-slice update larger than its operand": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n  u = f32[12] parameter(1)\n"
        "  i = s32[] parameter(2)\n  ROOT r = f32[10] dynamic-update-slice(a, u, i)\n}\n",
        [("f4", (10,)), ("f4", (12,)), ("i4", ())], "e/r", 6, "fit in it"),
    "gather slice_sizes larger than the operand": (
        "HloModule m\nENTRY e {\n  a = f32[5,4] parameter(0)\n  i = s32[3,1] parameter(1)\n"
        "  ROOT g = f32[3,7,4] gather(a, i), offset_dims={1,2}, collapsed_slice_dims={}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={7,4}\n}\n",
        [("f4", (5, 4)), ("i4", (3, 1))], "e/g", 5, "out of bounds"),
    "gather collapsed dimension with slice size 0": (       # read past the buffer before
        "HloModule m\nENTRY e {\n  a = f32[1,8] parameter(0)\n  i = s32[2] parameter(1)\n"
        "  ROOT g = f32[] gather(a, i), offset_dims={}, collapsed_slice_dims={0,1}, "
        "start_index_map={0,1}, index_vector_dim=0, slice_sizes={0,0}\n}\n",
        [("f4", (1, 8)), ("i4", (2,))], "e/g", 5, "has slice size 0"),
    "gather from an empty operand": (
        "HloModule m\nENTRY e {\n  a = f32[0,3] parameter(0)\n  i = s32[2,1] parameter(1)\n"
        "  ROOT g = f32[2,3] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={0,3}\n}\n",
        [("f4", (0, 3)), ("i4", (2, 1))], "e/g", 5, "has slice size 0"),
    "reshape changes the element count": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n  ROOT r = f32[20] reshape(a)\n}\n",
        [("f4", (10,))], "e/r", 4, "cannot reshape"),
    "bitcast changes the byte size": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n  ROOT r = f32[20] bitcast(a)\n}\n",
        [("f4", (10,))], "e/r", 4, "cannot bitcast"),
    "scatter update window larger than the operand": (
        "HloModule m\n" + ADD + "ENTRY e {\n  a = f32[5,4] parameter(0)\n"
        "  i = s32[2,1] parameter(1)\n  u = f32[2,9,4] parameter(2)\n"
        "  ROOT s = f32[5,4] scatter(a, i, u), update_window_dims={1,2}, "
        "inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
        "to_apply=add\n}\n",
        [("f4", (5, 4)), ("i4", (2, 1)), ("f4", (2, 9, 4))], "e/s", 11, "window dimension"),
    "binary operands of different dims": (
        "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[5] parameter(1)\n"
        "  ROOT r = f32[4] add(a, b)\n}\n",
        [("f4", (4,)), ("f4", (5,))], "e/r", 5, "same dimensions"),
    "get-tuple-element index out of range": (
        "HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n  t = (f32[10]) tuple(a)\n"
        "  ROOT r = f32[10] get-tuple-element(t), index=3\n}\n",
        [("f4", (10,))], "e/r", 5, "out of range"),
}

RUNNER = textwrap.dedent('''
    import json, sys
    import numpy as np
    import xlapy
    from xlapy.errors import VerificationError
    from xlapy.hlo import parse_module
    from xlapy.backends.cpu import CpuBackend
    cases = json.loads(sys.stdin.read())
    out = {}
    for name, (text, specs) in cases.items():
        args = [np.ones(shape, dtype) for dtype, shape in specs]
        res = {}
        for how in ("cpu", "interpreter", "compile"):
            try:
                if how == "compile":
                    CpuBackend(use_disk_cache=False).compile(parse_module(text))
                else:
                    xlapy.run_hlo(text, args, backend=how)
                res[how] = "ran"
            except VerificationError as e:
                res[how] = str(e)
            except Exception as e:
                res[how] = "other " + type(e).__name__ + ": " + str(e)
            print(name, how, "done", file=sys.stderr, flush=True)
        out[name] = res
    print(json.dumps(out))
''')


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every malformed case on the cpu and interpreter backends, in one child process."""
    cases = {name: (c[0], [(d, list(s)) for d, s in c[1]]) for name, c in CASES.items()}
    env = dict(os.environ, XLAPY_CACHE_DIR=str(tmp_path_factory.mktemp("cache")))
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, (
        f"the child process died (exit {proc.returncode}) after:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_module_raises_verification_error(outcomes, name):
    _text, _specs, where, line, phrase = CASES[name]
    for how in ("cpu", "interpreter", "compile"):
        message = outcomes[name][how]
        assert message != "ran" and not message.startswith("other "), (how, message)
        assert f"{where}:" in message and phrase in message, (how, message)
        if how != "compile":                     # from text: the line and column too
            assert f"\n  {line}:" in message, (how, message)


def test_error_shows_the_offending_line():
    text = CASES["slice out of range"][0]
    with pytest.raises(VerificationError) as info:
        xlapy.run_hlo(text, [np.ones(10, np.float32)], backend="interpreter")
    (problem,) = info.value.problems
    assert problem.startswith("4:8: e/r: slice:")
    assert "ROOT r = f32[5] slice(a), slice={[8:13]}" in problem


def test_optimize_verifies_first():
    text = CASES["reshape changes the element count"][0]
    with pytest.raises(VerificationError, match=r"4:8: e/r: reshape"):
        xlapy.optimize(text)


def test_duplicate_names_in_different_computations_are_accepted():
    """XLA's parser renames such duplicates; xlapy keeps them (names are per computation)."""
    text = ("HloModule m\n" + ADD + "ENTRY e {\n  x = f32[4] parameter(0)\n"
            "  z = f32[] constant(0)\n  ROOT s = f32[] reduce(x, z), dimensions={0}, "
            "to_apply=add\n}\n")
    for backend in ("cpu", "interpreter"):
        (out,) = xlapy.run_hlo(text, [np.arange(4, dtype=np.float32)], backend=backend)
        assert float(out) == 6.0


def test_a_cache_hit_is_not_verified_again(tmp_path, monkeypatch):
    """Verification runs on a miss; a hit's key covers the canonical text of a module that
    passed the verifier before it was stored."""
    from xlapy.backends.cpu import compiler
    calls = []
    real = compiler.verify_module
    monkeypatch.setattr(compiler, "verify_module", lambda m, **kw: calls.append(m) or real(m, **kw))
    text = "HloModule ok\nENTRY e {\n  a = f32[8] parameter(0)\n  ROOT r = f32[8] negate(a)\n}\n"
    first = cpu.CpuBackend(cache_dir=str(tmp_path))
    first.compile(parse_module(text))
    first.compile(parse_module(text))                # memory hit
    second = cpu.CpuBackend(cache_dir=str(tmp_path))
    exe = second.compile(parse_module(text))         # disk hit
    assert len(calls) == 1 and second.last_timings.path == "disk"
    np.testing.assert_array_equal(exe.execute([np.ones(8, np.float32)]), -np.ones(8))


def test_malformed_module_is_never_stored(tmp_path):
    backend = cpu.CpuBackend(cache_dir=str(tmp_path))
    with pytest.raises(VerificationError):
        backend.compile(parse_module(CASES["bitcast changes the byte size"][0]))
    assert not list(tmp_path.glob("*.xcache"))


GATHER_PAST_THE_END = (
    "HloModule m\nENTRY e {{\n  a = f32[1,{n}] parameter(0)\n  i = s32[2] parameter(1)\n"
    "  ROOT g = f32[] gather(a, i), offset_dims={{}}, collapsed_slice_dims={{0,1}}, "
    "start_index_map={{0,1}}, index_vector_dim=0, slice_sizes={{0,0}}\n}}\n")


def test_gather_that_crashed_with_sigsegv_is_rejected_before_allocation():
    """The reported input (f32[1,2^26], slice sizes {0,0}, start [1, 2^26]) read 256 MiB
    past the operand; now neither backend gets as far as compiling it."""
    text = GATHER_PAST_THE_END.format(n=2 ** 26)
    for backend in (cpu.CpuBackend(use_disk_cache=False), get_backend("interpreter")):
        with pytest.raises(VerificationError, match="slice size 0"):
            backend.compile(parse_module(text))


@pytest.mark.parametrize("starts", [(1, 8), (0, 0), (-5, 3), (0, 7), (2**31 - 1, -2**31)])
def test_gather_starts_clamp_exactly_as_xla(starts):
    """Slice size 1 on collapsed dims (XLA's other allowed size): starts clamp to
    ``[0, dim - 1]`` and both backends read the same element."""
    text = GATHER_PAST_THE_END.format(n=8).replace("slice_sizes={0,0}", "slice_sizes={1,1}")
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    i = np.array(starts, np.int32)
    want = x[min(max(starts[0], 0), 0), min(max(starts[1], 0), 7)]
    for backend in ("cpu", "interpreter"):
        (out,) = xlapy.run_hlo(text, [x, i], backend=backend)
        assert float(out) == want, backend


def test_gather_with_size_0_slices_and_an_empty_result_runs():
    """A size-0 collapsed dimension is XLA-legal when the result is empty."""
    text = ("HloModule m\nENTRY e {\n  a = f32[0,3] parameter(0)\n  i = s32[0,1] parameter(1)\n"
            "  ROOT g = f32[0,3] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, "
            "start_index_map={0}, index_vector_dim=1, slice_sizes={0,3}\n}\n")
    for backend in ("cpu", "interpreter"):
        (out,) = xlapy.run_hlo(text, [np.ones((0, 3), np.float32), np.ones((0, 1), np.int32)],
                               backend=backend)
        assert out.shape == (0, 3)
