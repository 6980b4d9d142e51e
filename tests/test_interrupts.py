"""An interrupted (KeyboardInterrupt) or failed call leaves every Variable at its old value,
and the next call works (issue 20, item 7).

The interrupt is delivered while a long compiled loop runs, from a timer thread, both as
``_thread.interrupt_main()`` and as a real SIGINT (``signal.pthread_kill``). It lands in
Python code between thunks: between a ``while`` loop's host-side iterations, between the
thunks of a plan, or in the thread pool's wait for its workers.
"""
from __future__ import annotations

import _thread
import signal
import threading
import time

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import keras, lax
from xlapy.errors import InvalidArgumentError
from xlapy.frontend.variables import transaction

pytest.importorskip("xlapy.backends.cpu")

LONG = 200_000_000          # iterations no test lets finish


class _Interrupter(threading.Thread):
    """Interrupts the main thread after ``seconds``, then again every second until
    cancelled: Python drops a KeyboardInterrupt that lands while a weakref finalizer runs
    (printed as "Exception ignored"), as a user's second Ctrl-C would repeat it."""

    def __init__(self, seconds: float, how: str) -> None:
        super().__init__(daemon=True)
        self.seconds, self.how = seconds, how
        self.cancelled = threading.Event()

    def run(self) -> None:
        main = threading.main_thread().ident
        wait = self.seconds
        while not self.cancelled.wait(wait):
            if self.how == "signal":
                signal.pthread_kill(main, signal.SIGINT)
            else:
                _thread.interrupt_main()
            wait = 1.0

    def cancel(self) -> None:
        self.cancelled.set()


def _interrupt_after(seconds: float, how: str) -> _Interrupter:
    t = _Interrupter(seconds, how)
    t.start()
    return t


def _interrupted(fn, *args, after: float = 0.3, how: str = "interrupt_main") -> float:
    """Run ``fn(*args)`` until the interrupt; the seconds it ran."""
    timer = _interrupt_after(after, how)
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            fn(*args)
            time.sleep(5)               # fn returned early: let the interrupt land here
    finally:
        timer.cancel()
    return time.perf_counter() - start


@pytest.fixture(autouse=True)
def _default_sigint():
    """Python's own SIGINT handler (raises KeyboardInterrupt), whatever the runner set."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("how", ["interrupt_main", "signal"])
def test_interrupted_loop_leaves_the_variable_old(how):
    v = xlapy.Variable(np.full(64, 3.0, np.float32))

    @xlapy.jit
    def step(n):
        v.assign(lax.fori_loop(0, n, lambda i, c: c + 1.0, v.value()))
        return xnp.sum(v.value())

    step(np.int32(7))
    old = v.numpy()
    np.testing.assert_array_equal(old, 10.0)
    ran = _interrupted(step, np.int32(LONG), how=how)
    assert ran < 5
    np.testing.assert_array_equal(v.numpy(), old)            # exactly the old value
    assert float(step(np.int32(5))) == 64 * 15.0              # the next call works
    np.testing.assert_array_equal(v.numpy(), 15.0)


def test_interrupted_step_assigning_several_variables_keeps_them_all():
    a = xlapy.Variable(np.zeros((300, 300), np.float32))      # large: pooled, parallel
    b = xlapy.Variable(np.zeros(10, np.float32))
    x = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32)

    @xlapy.jit
    def step(x, n):
        a.assign(lax.fori_loop(0, n, lambda i, c: xnp.tanh(c + x), a.value()))
        b.assign_add(1.0)
        return b.value()

    step(x, np.int32(2))
    a_old, b_old = a.numpy(), b.numpy()
    _interrupted(step, x, np.int32(LONG))
    np.testing.assert_array_equal(a.numpy(), a_old)
    np.testing.assert_array_equal(b.numpy(), b_old)
    step(x, np.int32(1))
    np.testing.assert_allclose(a.numpy(), np.tanh(a_old + x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(b.numpy(), b_old + 1)


def test_interrupted_call_with_a_donated_array_deletes_it():
    """A donated Array the program may have half written is deleted, never left
    holding garbage; a Variable next to it keeps its value."""
    v = xlapy.Variable(np.ones(8, np.float32))

    @xlapy.jit
    def run(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * 1.0000001 + v.value(), x)

    f = xlapy.jit(run.fn, donate_argnums=0)
    f(xnp.zeros(8), np.int32(1))        # compiled first: the interrupt must land in the run
    x = xnp.zeros(8)
    _interrupted(f, x, np.int32(LONG))
    with pytest.raises(InvalidArgumentError, match="deleted"):
        np.asarray(x)
    np.testing.assert_array_equal(v.numpy(), 1.0)
    np.testing.assert_allclose(np.asarray(f(xnp.zeros(8), np.int32(3))), 3.0, rtol=1e-6)


def test_failed_eager_transaction_puts_variables_back():
    a, b = xlapy.Variable(np.zeros(3, np.float32)), xlapy.Variable(np.ones(2, np.float32))

    @xlapy.jit
    def bump():
        b.assign_add(5.0)
        return b.value()

    with pytest.raises(RuntimeError):
        with transaction():
            a.assign(a + 1.0)
            bump()                           # a compiled call's commit is undone too
            with transaction():
                a.assign(a + 1.0)
            raise RuntimeError("step failed")
    np.testing.assert_array_equal(a.numpy(), 0.0)
    np.testing.assert_array_equal(b.numpy(), 1.0)
    with transaction():
        a.assign(a + 2.0)
    np.testing.assert_array_equal(a.numpy(), 2.0)


# ------------------------------------------------------------------------------ Keras fit
def _model(jit_compile: bool, constraint=None) -> keras.Model:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.layers.Dense(32, activation="relu", input_shape=(16,)),
        keras.layers.Dense(4, kernel_constraint=constraint)])
    model.compile(optimizer="adam", metrics=["accuracy"], jit_compile=jit_compile,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _state(model: keras.Model) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in model.weights + model.optimizer.variables]


def _data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((256, 16)).astype(np.float32),
            rng.integers(0, 4, 256).astype(np.int32))


class _Snapshots(keras.callbacks.Callback):
    """The state before every batch, and the batch's index."""

    def __init__(self) -> None:
        super().__init__()
        self.states: list[tuple[int, list[np.ndarray]]] = []

    def on_train_batch_begin(self, batch, logs=None):
        self.states.append((batch, _state(self.model)))


def _same(s1, s2) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(s1, s2))


def test_interrupted_compiled_fit_leaves_weights_and_optimizer_whole():
    """After the interrupt the state is the one before some batch, or that batch's step
    completed (replayed from the snapshot with train_on_batch): never a mixture."""
    x, y = _data()
    model = _model(jit_compile=True)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)     # compiled
    snaps = _Snapshots()
    _interrupted(lambda: model.fit(x, y, batch_size=32, epochs=100_000, verbose=0,
                                   callbacks=[snaps], shuffle=False), after=0.5)
    assert len(snaps.states) > 2
    state = _state(model)
    batch, last = snaps.states[-1]
    if not _same(state, last):
        for v, value in zip(model.weights + model.optimizer.variables, last):
            v.assign(value)
        model.train_on_batch(x[32 * batch:32 * batch + 32], y[32 * batch:32 * batch + 32])
        assert _same(state, _state(model))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)           # and it goes on
    assert all(np.all(np.isfinite(s)) for s in _state(model))


def test_interrupt_inside_an_eager_step_puts_every_variable_back():
    """Op by op, the interrupt lands in the middle of the optimizer's update (raised by a
    weight constraint, which runs after its own weight was updated)."""
    calls = [0]

    def constraint(w):
        calls[0] += 1
        if calls[0] == 2:
            raise KeyboardInterrupt
        return w
    x, y = _data()
    model = _model(jit_compile=False, constraint=constraint)
    model.fit(x[:32], y[:32], batch_size=32, epochs=1, verbose=0)   # call 1
    before = _state(model)
    with pytest.raises(KeyboardInterrupt):
        model.fit(x[:32], y[:32], batch_size=32, epochs=1, verbose=0)
    assert _same(before, _state(model))
    model.fit(x[:32], y[:32], batch_size=32, epochs=1, verbose=0)
    assert not _same(before, _state(model))
