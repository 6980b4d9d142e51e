"""LLVM helper processes (``xlapy/backends/cpu/llvm_worker.py``): the object code they make
is the object code this process makes, invalid IR is reported the same way, a dead helper
costs nothing but time, and the helper count follows ``XLAPY_LLVM_HELPERS``."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from xlapy.backends.cpu import jit_engine   # noqa: E402
from xlapy.backends.cpu.jit_engine import JitEngine, helper_count   # noqa: E402
from xlapy.backends.cpu.llvm_worker import HelperDied, HelperProcess, InvalidIRError   # noqa: E402
from xlapy.errors import ExecutionError   # noqa: E402


def saxpy_ir(name: str, scale: float) -> str:
    """``out[i] = scale * x[i] + y[i]`` over n floats: a loop LLVM vectorizes."""
    return f"""
define void @{name}(float* noalias %out, float* noalias %x, float* noalias %y, i64 %n) {{
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr float, float* %x, i64 %i
  %py = getelementptr float, float* %y, i64 %i
  %po = getelementptr float, float* %out, i64 %i
  %vx = load float, float* %px
  %vy = load float, float* %py
  %m = fmul float %vx, {float(scale)!r}
  %s = fadd float %m, %vy
  store float %s, float* %po
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


@pytest.fixture
def engines(monkeypatch):
    """An engine with one helper (sharing even small compiles) and one without."""
    monkeypatch.setattr(jit_engine, "HELPER_MIN_BYTES", 0)
    with_helper, alone = JitEngine(helpers=1), JitEngine(helpers=0)
    yield with_helper, alone
    with_helper.close_helpers()


def modules(engine: JitEngine, count: int = 4) -> list[str]:
    head = f'target triple = "{engine.host.triple}"\n'
    return [head + saxpy_ir(f"saxpy{k}", k + 0.5) for k in range(count)]


def test_helper_makes_the_same_object_code(engines):
    with_helper, alone = engines
    assert (with_helper.parallelism, alone.parallelism) == (2, 1)
    texts = modules(alone)
    shared = with_helper.compile(texts, [f"saxpy{k}" for k in range(4)], keep_text=True)
    local = alone.compile(texts, [f"saxpy{k}" for k in range(4)], keep_text=True)
    assert shared.objects == local.objects
    assert shared.assembly == local.assembly and "saxpy3" in shared.assembly
    assert with_helper._helpers[0]._proc is not None        # the helper did take part


def test_code_from_a_helper_runs(engines):
    with_helper, _ = engines
    texts = modules(with_helper, 2)
    compiled = with_helper.compile(texts, ["saxpy0", "saxpy1"])
    loaded = with_helper.load(compiled.objects, ["saxpy0", "saxpy1"])
    fn_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_int64)
    x = np.arange(37, dtype=np.float32)
    y = np.full(37, 2.0, np.float32)
    for k, scale in enumerate((0.5, 1.5)):
        out = np.zeros(37, np.float32)
        fn_type(loaded.address(f"saxpy{k}"))(out.ctypes.data, x.ctypes.data, y.ctypes.data,
                                              37)
        np.testing.assert_array_equal(out, np.float32(scale) * x + y)


def test_invalid_ir_in_a_helper_is_an_execution_error(engines):
    with_helper, _ = engines
    bad = "define void @broken() {\nentry:\n  ret i32 0\n}\n"
    with pytest.raises(ExecutionError, match="generated LLVM IR is invalid"):
        with_helper.compile([bad, bad, bad], ["broken"])
    # the helper is fine afterwards
    texts = modules(with_helper, 2)
    assert len(with_helper.compile(texts, ["saxpy0", "saxpy1"]).objects) == 2


def test_a_dead_helper_leaves_its_work_to_this_process(engines):
    with_helper, alone = engines
    helper = with_helper._helpers[0]
    helper.start()
    helper._proc.kill()
    helper._proc.wait()
    texts = modules(alone)
    compiled = with_helper.compile(texts, [f"saxpy{k}" for k in range(4)])
    assert compiled.objects == alone.compile(texts, [f"saxpy{k}" for k in range(4)]).objects
    assert helper.broken and not helper.usable


def test_helper_process_reports_invalid_ir_and_its_end():
    helper = HelperProcess()
    engine = JitEngine(helpers=0)
    try:
        with pytest.raises(InvalidIRError):
            helper.compile("this is not IR", 3, False, engine.target_spec)
        obj = helper.compile(modules(engine, 1)[0], 3, False, engine.target_spec)[0]
        assert obj == engine._compile_one(modules(engine, 1)[0], 3, False)[0]
        helper._proc.kill()
        helper._proc.wait()
        with pytest.raises(HelperDied):
            helper.compile(modules(engine, 1)[0], 3, False, engine.target_spec)
        assert helper.broken
    finally:
        helper.close()


def test_helper_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv("XLAPY_LLVM_HELPERS", "0")
    assert helper_count() == 0
    monkeypatch.setenv("XLAPY_LLVM_HELPERS", "2")
    assert helper_count() == 2
    monkeypatch.setenv("XLAPY_LLVM_HELPERS", "many")
    assert helper_count() == 0
    monkeypatch.delenv("XLAPY_LLVM_HELPERS")
    assert 0 <= helper_count() <= jit_engine.MAX_HELPERS
