"""Tracing, compiling and running from several threads at once (issue 20, item 3).

Eight threads start together and each traces, compiles and runs functions of its own
and functions shared by all (``jit``, ``grad`` eagerly and under ``jit``, a
``GradientTape``, ``cond`` and ``fori_loop`` bodies, eager ops, a Variable-free training
step, a shared CPU executable called concurrently), while Python switches threads
every few microseconds. Every result is checked against NumPy; a function that all
threads call for the first time at once compiles once.
"""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.frontend import core

cpu_executable = pytest.importorskip("xlapy.backends.cpu.executable")

THREADS = 8
ROUNDS = 3


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _run_threads(work) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def run(k: int) -> None:
        try:
            barrier.wait()
            work(k)
        except BaseException as e:      # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _mse_loss(w, x, y):
    return xnp.mean((xnp.matmul(x, w) - y) ** 2)


def _numpy_step(w, x, y, lr):
    g = 2.0 * x.T @ (x @ w - y) / y.size
    return w - lr * g, np.mean((x @ w - y) ** 2)


def test_eight_threads_trace_compile_and_run(fast_switching):
    @xlapy.jit
    def shared(x):                       # the same function, first called by all at once
        return xnp.tanh(x) * 2.0 + xnp.sum(x)

    @xlapy.jit
    def train_step(w, x, y):             # a Variable-free training step, shared
        loss, g = xlapy.value_and_grad(_mse_loss)(w, x, y)
        return w - 0.1 * g, loss

    rng = np.random.default_rng(0)
    x_shared = rng.standard_normal(6).astype(np.float32)
    xs = [rng.standard_normal((16, 3)).astype(np.float32) for _ in range(THREADS)]
    ys = [rng.standard_normal((16, 2)).astype(np.float32) for _ in range(THREADS)]

    def work(k: int) -> None:
        n = 3 + k                         # a shape of this thread's own

        @xlapy.jit
        def own(x, flag):                # different per thread: a cond and a loop
            y = lax.cond(flag, lambda v: xnp.sin(v) * k, lambda v: xnp.cos(v) + k, x)
            return lax.fori_loop(0, 3, lambda i, c: c + x * i, y)

        grad_own = xlapy.jit(xlapy.grad(lambda w, x: xnp.sum(xnp.sin(w * x) * k)))
        w = np.full((3, 2), 0.1, np.float32)
        w_np = w.copy()
        for r in range(ROUNDS):
            x = (np.arange(n, dtype=np.float32) + r) / n
            np.testing.assert_allclose(np.asarray(shared(x_shared)),
                                       np.tanh(x_shared) * 2 + x_shared.sum(), rtol=1e-5)
            for flag in (True, False):
                base = np.sin(x) * k if flag else np.cos(x) + k
                np.testing.assert_allclose(np.asarray(own(x, flag)), base + 3 * x,
                                           rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(np.asarray(grad_own(x, x + 1)),
                                       np.cos(x * (x + 1)) * (x + 1) * k, rtol=1e-4,
                                       atol=1e-5)
            # eager ops, a grad and a tape, op by op, while the others trace
            np.testing.assert_allclose(np.asarray(xnp.cos(x) * x), np.cos(x) * x, rtol=1e-6)
            np.testing.assert_allclose(np.asarray(xlapy.grad(
                lambda v: xnp.sum(v ** 3))(xnp.asarray(x))), 3 * x ** 2, rtol=1e-5)
            v = xnp.asarray(x)
            with xlapy.GradientTape() as tape:
                tape.watch(v)
                out = xnp.sum(xnp.exp(v))
            np.testing.assert_allclose(np.asarray(tape.gradient(out, v)), np.exp(x),
                                       rtol=1e-5)
            # a training step, compiled once for all threads
            w, loss = train_step(w, xs[k], ys[k])
            w_np, loss_np = _numpy_step(w_np, xs[k], ys[k], np.float32(0.1))
            np.testing.assert_allclose(float(loss), loss_np, rtol=1e-4)
            np.testing.assert_allclose(np.asarray(w), w_np, rtol=1e-4, atol=1e-6)
        assert not core._TRACE_STACK and not core._TAPES     # nothing left behind

    _run_threads(work)
    assert shared.cache_info().misses == 1
    assert train_step.cache_info().misses == 1
    assert shared.cache_info().reasons == ["first call"]


def test_one_executable_called_from_threads_at_once(fast_switching):
    """Concurrent calls of one CPU executable run on replicas (their own arenas)."""
    @xlapy.jit
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: xnp.sin(c) + x, x)

    xs = [np.linspace(-1, 1, 4096).astype(np.float32) * (k + 1) for k in range(THREADS)]

    def expected(x, n):
        c = x.copy()
        for _ in range(n):
            c = np.sin(c) + x
        return c

    def work(k: int) -> None:
        for r in range(ROUNDS):
            n = 300 + k + r
            np.testing.assert_allclose(np.asarray(f(xs[k], np.int32(n))), expected(xs[k], n),
                                       rtol=1e-4, atol=1e-4)

    _run_threads(work)
    assert f.cache_info().misses == 1
    (entry,) = f._cache.values()
    assert 1 <= entry.executable._replica_count <= cpu_executable.MAX_REPLICAS


def test_trace_state_is_per_thread():
    """A thread sees neither another thread's trace nor its tapes."""
    seen = []
    inside = threading.Event()
    release = threading.Event()

    @xlapy.jit
    def slow(x):
        inside.set()
        release.wait(10)
        return x + 1

    def other() -> None:
        inside.wait(10)
        seen.append((core.current_trace(), bool(core._TAPES),
                     np.asarray(xnp.cos(xnp.zeros(2))).tolist()))
        release.set()
    t = threading.Thread(target=other)
    t.start()
    with xlapy.GradientTape():          # active while the other thread looks
        np.testing.assert_array_equal(np.asarray(slow(np.zeros(2, np.float32))), 1.0)
    t.join()
    assert seen == [(None, False, [1.0, 1.0])]
