"""xlapy.keras optimizers and schedules against NumPy re-implementations of Keras's
update formulas, eagerly and inside one compiled step."""
from __future__ import annotations

import math

import numpy as np
import pytest

import xlapy
from xlapy.errors import InvalidArgumentError
from xlapy.keras import optimizers
from xlapy.keras.optimizers import schedules

GRADS = [np.array([0.5, -1.0, 2.0], np.float32), np.array([-0.3, 0.2, 0.1], np.float32),
         np.array([1.5, 0.0, -0.7], np.float32), np.array([0.1, 0.4, -2.0], np.float32)]
W0 = np.array([1.0, -2.0, 0.5], np.float32)


def ref_sgd(lr=0.01, momentum=0.0, nesterov=False):
    w, m = W0.astype(np.float64), np.zeros(3)
    for g in GRADS:
        if momentum:
            m = momentum * m - lr * g
            w = w + (momentum * m - lr * g if nesterov else m)
        else:
            w = w - lr * g
    return w


def ref_adam(lr=0.001, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False, weight_decay=0.0):
    w, m, v, vhat = W0.astype(np.float64), np.zeros(3), np.zeros(3), np.zeros(3)
    for t, g in enumerate(GRADS, start=1):
        w = w - w * weight_decay * lr
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        alpha = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        if amsgrad:
            vhat = np.maximum(vhat, v)
            w = w - alpha * m / (np.sqrt(vhat) + eps)
        else:
            w = w - alpha * m / (np.sqrt(v) + eps)
    return w


def ref_rmsprop(lr=0.001, rho=0.9, momentum=0.0, eps=1e-7, centered=False, decay=0.0):
    w, a, mg, mom = W0.astype(np.float64), np.zeros(3), np.zeros(3), np.zeros(3)
    for it, g in enumerate(GRADS):
        lr_t = lr / (1 + decay * it)
        a = rho * a + (1 - rho) * g * g
        denom = a + eps
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = denom - mg * mg
        inc = lr_t * g / np.sqrt(denom)
        if momentum:
            mom = momentum * mom + inc
            w = w - mom
        else:
            w = w - inc
    return w


def ref_adagrad(lr=0.001, init=0.1, eps=1e-7):
    w, acc = W0.astype(np.float64), np.full(3, init)
    for g in GRADS:
        acc = acc + g * g
        w = w - lr * g / np.sqrt(acc + eps)
    return w


CASES = [
    ("sgd", lambda: optimizers.SGD(0.1), ref_sgd(0.1)),
    ("sgd-momentum", lambda: optimizers.SGD(0.1, momentum=0.9), ref_sgd(0.1, 0.9)),
    ("sgd-nesterov", lambda: optimizers.SGD(0.1, momentum=0.8, nesterov=True),
     ref_sgd(0.1, 0.8, True)),
    ("adam", lambda: optimizers.Adam(0.1), ref_adam(0.1)),
    ("adam-amsgrad", lambda: optimizers.Adam(0.05, beta_1=0.8, amsgrad=True),
     ref_adam(0.05, b1=0.8, amsgrad=True)),
    ("adamw", lambda: optimizers.AdamW(0.1, weight_decay=0.1),
     ref_adam(0.1, weight_decay=0.1)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01), ref_rmsprop(0.01)),
    ("rmsprop-centered-momentum",
     lambda: optimizers.RMSprop(0.01, rho=0.8, momentum=0.5, centered=True),
     ref_rmsprop(0.01, rho=0.8, momentum=0.5, centered=True)),
    ("rmsprop-legacy-decay", lambda: optimizers.RMSprop(lr=0.01, decay=0.5),
     ref_rmsprop(0.01, decay=0.5)),
    ("adagrad", lambda: optimizers.Adagrad(0.1), ref_adagrad(0.1)),
]


@pytest.mark.parametrize("name,make,expected", CASES, ids=[c[0] for c in CASES])
def test_update_formulas_eager(name, make, expected):
    opt = make()
    w = xlapy.Variable(W0.copy())
    for g in GRADS:
        opt.apply_gradients([(g, w)])
    np.testing.assert_allclose(w.numpy(), expected, rtol=2e-5, atol=1e-6)
    assert int(opt.iterations.numpy()) == len(GRADS)


@pytest.mark.parametrize("name,make,expected", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_update_formulas_compiled(name, make, expected):
    opt = make()
    w = xlapy.Variable(W0.copy())
    step = xlapy.function(lambda g: opt.apply_gradients([(g, w)]), jit_compile=True)
    for g in GRADS:
        step(g)
    np.testing.assert_allclose(w.numpy(), expected, rtol=2e-5, atol=1e-6)
    assert step.cache_info().misses == 1


def test_changing_the_learning_rate_does_not_recompile():
    opt = optimizers.SGD(0.1)
    w = xlapy.Variable(np.zeros(2, np.float32))
    step = xlapy.function(lambda g: opt.apply_gradients([(g, w)]), jit_compile=True)
    step(np.ones(2, np.float32))
    opt.learning_rate = 0.5
    step(np.ones(2, np.float32))
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.6], rtol=1e-6)
    assert step.cache_info().misses == 1
    assert float(opt.learning_rate.numpy()) == 0.5


def test_gradient_clipping():
    g = np.array([3.0, 4.0], np.float32)              # norm 5
    for kwargs, want in [({"clipnorm": 1.0}, g / 5), ({"clipvalue": 3.5}, [3.0, 3.5]),
                         ({"global_clipnorm": 2.5}, g / 2)]:
        w = xlapy.Variable(np.zeros(2, np.float32))
        optimizers.SGD(1.0, **kwargs).apply_gradients([(g, w)])
        np.testing.assert_allclose(w.numpy(), -np.asarray(want), rtol=1e-6)
    w1, w2 = xlapy.Variable(np.zeros(1, np.float32)), xlapy.Variable(np.zeros(1, np.float32))
    optimizers.SGD(1.0, global_clipnorm=1.0).apply_gradients(
        [(np.array([3.0], np.float32), w1), (np.array([4.0], np.float32), w2)])
    np.testing.assert_allclose([w1.numpy()[0], w2.numpy()[0]], [-0.6, -0.8], rtol=1e-6)


def test_none_gradients_are_skipped_and_slots_are_variables():
    a, b = xlapy.Variable(np.ones(2, np.float32)), xlapy.Variable(np.ones(3, np.float32))
    opt = optimizers.Adam(0.1)
    opt.apply_gradients([(np.ones(2, np.float32), a), (None, b)])
    np.testing.assert_array_equal(b.numpy(), np.ones(3))
    names = [v.name for v in opt.variables]
    assert any(n.endswith("/m") for n in names) and any(n.endswith("/v") for n in names)
    assert all(not v.trainable for v in opt.variables)
    with pytest.raises(InvalidArgumentError, match="shape"):
        opt.apply_gradients([(np.ones(5, np.float32), a)])


# ---------------------------------------------------------------------------- schedules
def test_schedules_follow_keras_formulas():
    steps = np.array([0, 1, 5, 10, 25, 100])
    ed = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    np.testing.assert_allclose([float(ed(s)) for s in steps], 0.1 * 0.5 ** (steps / 10),
                               rtol=1e-5)
    eds = schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)
    np.testing.assert_allclose([float(eds(s)) for s in steps], 0.1 * 0.5 ** (steps // 10),
                               rtol=1e-5)
    it = schedules.InverseTimeDecay(0.1, 10, 0.5)
    np.testing.assert_allclose([float(it(s)) for s in steps], 0.1 / (1 + 0.5 * steps / 10),
                               rtol=1e-5)
    its = schedules.InverseTimeDecay(0.1, 10, 0.5, staircase=True)
    np.testing.assert_allclose([float(its(s)) for s in steps], 0.1 / (1 + 0.5 * (steps // 10)),
                               rtol=1e-5)
    assert (ed.name, its.name) == ("ExponentialDecay", "InverseTimeDecay")
    with pytest.raises(InvalidArgumentError, match="decay_steps must be positive"):
        schedules.InverseTimeDecay(0.1, 0, 0.5)
    pc = schedules.PiecewiseConstantDecay([5, 10], [1.0, 0.5, 0.1])
    assert [float(pc(s)) for s in (0, 5, 6, 10, 11)] == [1.0, 1.0, 0.5, 0.5, pytest.approx(0.1)]
    cd = schedules.CosineDecay(0.1, decay_steps=20, alpha=0.1)
    want = [0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 20) / 20)) + 0.1) for s in steps]
    np.testing.assert_allclose([float(cd(s)) for s in steps], want, rtol=1e-5)


def test_optimizer_follows_a_schedule_inside_a_compiled_step():
    sched = schedules.ExponentialDecay(0.5, decay_steps=1, decay_rate=0.5)
    opt = optimizers.SGD(sched)
    w = xlapy.Variable(np.zeros(1, np.float32))
    step = xlapy.function(lambda g: opt.apply_gradients([(g, w)]), jit_compile=True)
    for _ in range(3):
        step(np.ones(1, np.float32))
    np.testing.assert_allclose(w.numpy(), [-(0.5 + 0.25 + 0.125)], rtol=1e-6)
    assert step.cache_info().misses == 1


def test_get_by_name():
    assert isinstance(optimizers.get("adam"), optimizers.Adam)
    assert isinstance(optimizers.get("RMSprop"), optimizers.RMSprop)
    with pytest.raises(InvalidArgumentError, match="unknown optimizer"):
        optimizers.get("lbfgs")
