"""Ctrl-C during LLVM compilation leaves the process able to compile: every llvmlite
object is disposed in order when a compile is abandoned, the interrupt is delivered once
the LLVM work in hand has ended, and helper processes ignore the terminal's SIGINT.

Each scenario runs in a child process, so a crash (the SIGSEGV in ``ModuleRef.__del__``
this guards against) fails the test instead of killing pytest."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("llvmlite")

PRELUDE = textwrap.dedent('''
    import gc, os, signal, sys, threading, time
    import numpy as np
    from xlapy.hlo import parse_module
    from xlapy.backends.cpu import CpuBackend

    def chain(n, width, name):
        """n steps of x = sin(x) + c in one fusion, then a sum: one LLVM module."""
        lines = ["HloModule " + name,
                 "add {", "  p = f32[] parameter(0)", "  q = f32[] parameter(1)",
                 "  ROOT s = f32[] add(p, q)", "}",
                 "ENTRY e {", "  x0 = f32[%d] parameter(0)" % width]
        prev = "x0"
        for i in range(n):
            lines.append("  c%d = f32[] constant(%d)" % (i, i % 7 + 1))
            lines.append("  b%d = f32[%d] broadcast(c%d), dimensions={}" % (i, width, i))
            lines.append("  s%d = f32[%d] sine(%s)" % (i, width, prev))
            lines.append("  a%d = f32[%d] add(s%d, b%d)" % (i, width, i, i))
            prev = "a%d" % i
        lines += ["  z = f32[] constant(0)",
                  "  ROOT r = f32[] reduce(%s, z), dimensions={0}, to_apply=add" % prev, "}"]
        return parse_module("\\n".join(lines) + "\\n")

    def keep_in_a_cycle(fn):
        """Run fn; an exception ends up in a reference cycle with the frames it passed
        through (as callers that store errors do), so only the collector frees them."""
        errors = []
        try:
            fn()
        except BaseException as e:
            errors.append(e)
        return errors

    def check_next_compile(be, name):
        gc.collect()
        exe = be.compile(chain(3, 8, name))
        out = exe.execute([np.zeros(8, np.float32)])
        want = np.sum(np.sin(np.sin(np.sin(np.zeros(8)) + 1) + 2) + 3)
        assert abs(float(out) - want) < 1e-4, (float(out), want)
''')


def _run(body: str, tmp_path, helpers: str = "0", timeout: int = 300) -> str:
    env = dict(os.environ, XLAPY_CACHE_DIR=str(tmp_path), XLAPY_LLVM_HELPERS=helpers)
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, (
        f"child exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def test_interrupt_between_llvm_calls_then_collected(tmp_path):
    """The interrupt arrives right after LLVM's optimizer returns (simulated by raising
    KeyboardInterrupt there); the abandoned compile's frames are freed by the collector.
    Before the fix the module and its context were finalized in any order: SIGSEGV."""
    out = _run('''
        from xlapy.backends.cpu import llvm_worker
        real = llvm_worker.optimize
        def interrupted(mod, tm, level):
            real(mod, tm, level)
            raise KeyboardInterrupt
        be = CpuBackend(use_disk_cache=False)
        for k in range(20):
            llvm_worker.optimize = interrupted
            errors = keep_in_a_cycle(lambda: be.compile(chain(2, 16, "first%d" % k)))
            assert errors and isinstance(errors[0], KeyboardInterrupt), errors
            llvm_worker.optimize = real
            check_next_compile(be, "next%d" % k)
        print("ok")
    ''', tmp_path)
    assert out.strip().endswith("ok")


@pytest.mark.parametrize("helpers", ["0", "1"])
def test_sigint_at_several_points_of_a_compile(tmp_path, helpers):
    """A real SIGINT at several moments of a compile of about a second: the compile either
    finishes or raises KeyboardInterrupt, and the next compile works."""
    out = _run('''
        be = CpuBackend(use_disk_cache=False)
        outcomes = []
        for k, delay in enumerate([0.05, 0.2, 0.4, 0.7, 1.0, 1.5]):
            timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
            timer.start()
            errors = keep_in_a_cycle(lambda: be.compile(chain(60, 1000 + k, "big%d" % k)))
            try:
                timer.join()
                time.sleep(0.05)
            except KeyboardInterrupt:
                pass              # the signal came after the compile had finished
            outcomes.append("interrupted" if errors else "finished")
            assert all(isinstance(e, KeyboardInterrupt) for e in errors), errors
            check_next_compile(be, "after%d" % k)
        print(" ".join(outcomes))
        print("ok")
    ''', tmp_path, helpers=helpers)
    assert out.strip().endswith("ok")
    assert "interrupted" in out          # at least one signal landed inside a compile


def test_helpers_ignore_the_terminal_interrupt(tmp_path):
    """SIGINT to the whole process group (Ctrl-C at a terminal) does not kill the LLVM
    helper processes; the parent gets KeyboardInterrupt and the helpers keep serving."""
    out = _run('''
        from xlapy.backends.cpu.jit_engine import engine
        os.setpgid(0, 0)
        eng = engine()
        eng.start_helpers()
        helpers = [h for h in eng._helpers if h._proc is not None]
        assert helpers, "no helper started"
        time.sleep(1.0)                   # let them load llvmlite
        try:
            os.killpg(0, signal.SIGINT)
            time.sleep(1.0)
        except KeyboardInterrupt:
            pass
        time.sleep(1.0)                   # a helper killed by the signal has exited by now
        assert all(h._proc.poll() is None for h in helpers), "a helper died of SIGINT"
        be = CpuBackend(use_disk_cache=False)
        check_next_compile(be, "after")
        print("ok")
    ''', tmp_path, helpers="1")
    assert out.strip().endswith("ok")
