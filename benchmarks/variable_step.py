"""What interrupt safety costs a step that updates state: Variables vs donated arrays.

A compiled call never writes a Variable's array: the executable copies it (onto recycled
memory) and the Variable takes the result when the call completes, so an interrupted call
leaves it whole (docs/architecture.md, "Threads and interrupts"). A donated xlapy Array is
written in place instead (no copy; it is deleted after the call). Both columns run the same
update on the same amount of state:

- ``update``: ``s += 1`` on three vectors (``--mb`` MB of state in all): the copy alone;
- ``adam``: an MLP's Adam step (784-512-512-10, batch 256; 8 MB of weights and slots).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/variable_step.py
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import numpy as np

import xlapy
import xlapy.numpy as xnp

SIZES = [(784, 512), (512, 512), (512, 10)]


def _median_ms(step: Callable[[], Any], calls: int, repeat: int) -> float:
    for _ in range(3):
        step()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        samples.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(samples)


def _update(mb: float) -> tuple[Callable[[], Any], Callable[[], Any]]:
    n = int(mb * 2**20 / 4 / 3)
    variables = [xlapy.Variable(np.zeros(n, np.float32)) for _ in range(3)]

    @xlapy.jit
    def with_variables():
        for v in variables:
            v.assign_add(1.0)
        return variables[0].value()[0]

    donated = xlapy.jit(lambda s: [x + 1.0 for x in s], donate_argnums=0)
    state = [[xnp.zeros(n) for _ in range(3)]]

    def with_donation():
        state[0] = donated(state[0])
    return with_variables, with_donation


def _loss(ws, x, y):
    h = x
    for i, w in enumerate(ws):
        h = xnp.matmul(h, w)
        if i < len(ws) - 1:
            h = xnp.maximum(h, 0)
    return xnp.mean((h - y) ** 2)


def _adam(w, m, v, g):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return w - 0.001 * m / (xnp.sqrt(v) + 1e-7), m, v


def _adam_steps() -> tuple[Callable[[], Any], Callable[[], Any]]:
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in SIZES]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.standard_normal((256, 10)).astype(np.float32)
    W = [xlapy.Variable(w) for w in init]
    M = [xlapy.Variable(np.zeros(s, np.float32)) for s in SIZES]
    V = [xlapy.Variable(np.zeros(s, np.float32)) for s in SIZES]

    @xlapy.jit
    def with_variables(x, y):
        with xlapy.GradientTape() as tape:
            loss = _loss(W, x, y)
        for w, m, v, g in zip(W, M, V, tape.gradient(loss, W)):
            nw, nm, nv = _adam(w.value(), m.value(), v.value(), g)
            w.assign(nw), m.assign(nm), v.assign(nv)
        return loss

    def step(state, x, y):
        ws, ms, vs = state
        loss, gs = xlapy.value_and_grad(_loss)(ws, x, y)
        new = [_adam(w, m, v, g) for w, m, v, g in zip(ws, ms, vs, gs)]
        return ([n[0] for n in new], [n[1] for n in new], [n[2] for n in new]), loss
    donated = xlapy.jit(step, donate_argnums=0)
    state = [([xnp.asarray(w) for w in init], [xnp.zeros(s) for s in SIZES],
              [xnp.zeros(s) for s in SIZES])]

    def with_donation():
        state[0], loss = donated(state[0], x, y)
        return loss
    return lambda: with_variables(x, y), with_donation


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=8.0, help="MB of state in the update step")
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    print("| step | Variables (copy) ms | donated arrays (in place) ms | ratio |")
    print("|---|---|---|---|")
    for name, (variables, donation) in (("update", _update(args.mb)), ("adam", _adam_steps())):
        tv = _median_ms(variables, args.calls, args.repeat)
        td = _median_ms(donation, args.calls, args.repeat)
        print(f"| {name} | {tv:.3f} | {td:.3f} | {tv / td:.2f} |")


if __name__ == "__main__":
    main()
