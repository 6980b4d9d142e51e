"""gpu_check section: arrays resident on the GPU and donation (``benchmarks/gpu_check.py``
runs ``section(ctx, be)``).

An MLP training step (``value_and_grad`` of a softmax cross-entropy, SGD update) written
with ``xlapy.numpy`` and jitted on the backend, the parameters on the device and donated
(``donate_argnums=0``), called back to back with one synchronization at the end, vs the
same step in JAX on the same card (``jax.jit(donate_argnums=0)``, full fp32 matmuls in
both). Also: the host<->device copies of one call (the device's counters: none expected),
whether the donated parameters kept their buffers, the same step with host (NumPy)
arguments and results read back each call (what every call did before arrays stayed on
the device), and the loss after the steps vs JAX's.

    GPU_CHECK_BACKEND=gpu_sim PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh
"""
from __future__ import annotations

import time

import numpy as np


def _params(rng, sizes):
    return [((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
             np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]


def _make_step(value_and_grad, nn, xnp):
    """The MLP training step written once for xlapy and JAX (``nn``: relu, log_softmax)."""
    def loss(p, x, y):
        h = x
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < len(p) - 1:
                h = nn.relu(h)
        return -xnp.mean(xnp.sum(nn.log_softmax(h) * y, axis=-1))

    def step(p, x, y):
        value, grads = value_and_grad(loss)(p, x, y)
        return value, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(p, grads)]
    return step


def _xlapy_step():
    import xlapy
    import xlapy.nn as nn
    import xlapy.numpy as xnp
    return _make_step(xlapy.value_and_grad, nn, xnp)


def _jax_step():
    import jax
    import jax.numpy as jnp
    return _make_step(jax.value_and_grad, jax.nn, jnp)


def _loop(call, state, sync, k: int):
    """(seconds per call of ``k`` calls back to back, final state)."""
    state = call(state)
    sync(state)
    t = time.perf_counter()
    for _ in range(k):
        state = call(state)
    sync(state)
    return (time.perf_counter() - t) / k, state


def _one(ctx, be, name: str, sizes: list[int], batch: int, steps: int) -> None:
    import xlapy
    rng = np.random.default_rng(3)
    params = _params(rng, sizes)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    dev = be.device
    device = xlapy.devices(ctx.BACKEND)[0]
    step = xlapy.jit(_xlapy_step(), donate_argnums=0, backend=ctx.BACKEND)
    p = xlapy.device_put(params, device)
    xd, yd = xlapy.device_put(x, device), xlapy.device_put(y, device)
    t = time.perf_counter()
    loss, p = step(p, xd, yd)
    loss.block_until_ready()
    ctx.say(f"  {name}: trace+compile+first call {time.perf_counter() - t:.2f} s")
    addr = [w.device_value.address for w, _ in p]
    before = dev.copies.snapshot()
    loss, p = step(p, xd, yd)
    after = dev.copies.snapshot()
    per_call = {k: after[k] - before[k] for k in ("h2d", "d2h", "d2d")}
    same = [w.device_value.address for w, _ in p] == addr
    ctx.say(f"  {name}: copies in one call {per_call}; donated weights kept their "
            f"buffers: {same}")

    def call(state):
        return step(state[1], xd, yd)

    def sync(state):
        state[0].block_until_ready()
    ours, (loss, p) = _loop(call, (loss, p), sync, steps)
    n_ours = steps + 3

    host_step = xlapy.jit(_xlapy_step(), backend=ctx.BACKEND)
    host_p = params

    def host_call(state):
        v, q = host_step(state[1], x, y)
        return float(v), [(np.asarray(w), np.asarray(b)) for w, b in q]
    k_host = max(3, steps // 4)
    host, _ = _loop(host_call, (0.0, host_p), lambda s: None, k_host)

    jx = None
    try:
        if ctx.SIM:
            raise RuntimeError("simulator rehearsal: no JAX GPU")
        import jax
        with jax.default_matmul_precision("highest"):
            jstep = jax.jit(_jax_step(), donate_argnums=0)
            jp = jax.device_put(params)
            jxd, jyd = jax.device_put(x), jax.device_put(y)
            jl, jp = jstep(jp, jxd, jyd)
            jl, jp = jstep(jp, jxd, jyd)
            jx, (jl, jp) = _loop(lambda s: jstep(s[1], jxd, jyd), (jl, jp),
                                 lambda s: s[0].block_until_ready(), steps)
        ctx.say(f"  {name}: loss after {n_ours} steps xlapy {float(loss):.6f}, "
                f"jax {float(jl):.6f}")
    except Exception as e:  # noqa: BLE001 - the section reports and goes on
        ctx.say(f"  {name}: no JAX comparison ({type(e).__name__}: {str(e)[:160]})")
    ms = lambda s: f"{s * 1e3:.3f}"      # noqa: E731
    ratio = f"{jx / ours:.2f}x JAX" if jx else "-"
    ctx.say(f"  {name}: resident+donated {ms(ours)} ms/step back to back; host arguments "
            f"and reads {ms(host)} ms/step; jax {ms(jx) if jx else '-'} ms/step; "
            f"speed-up {ratio}")
    ctx.TABLE.append((f"resident {name} (copies/call {sum(per_call.values())})",
                      f"{ms(ours)} ms/step (host args {ms(host)})",
                      f"jax {ms(jx) if jx else '-'}", ratio))


def section(ctx, be) -> None:
    """The resident-array and donation check (module docstring)."""
    ctx.say("== resident arrays and donation (gpu_check_resident.py)")
    if ctx.SIM:
        jobs = [("MLP step [32,64,64,16] b16", [32, 64, 64, 16], 16, 5)]
    else:
        jobs = [("MLP step [256,512,512,10] b128", [256, 512, 512, 10], 128, 200),
                ("MLP step [1024,4096,4096,1024] b1024", [1024, 4096, 4096, 1024], 1024, 30)]
    for name, sizes, batch, steps in jobs:
        if ctx.left() < 20:
            ctx.say("  (out of time)")
            return
        _one(ctx, be, name, sizes, batch, steps)
