"""Per-example gradients with ``vmap`` and a data-parallel step with ``pmap``.

1. Per-example gradients of an MLP (``--features``-``--hidden``-10, tanh, softmax cross
   entropy) for a batch of ``--batch``: ``jit(vmap(grad(loss)))`` (one compiled program)
   against a Python loop calling ``jit(grad(loss))`` once per example, and JAX's
   ``jit(vmap(grad(loss)))`` when JAX is installed.
2. One data-parallel gradient step on ``--devices`` CPU devices: ``pmap`` of ``grad`` then
   ``pmean`` against ``jit(grad)`` of the whole batch on one device.

Usage: ``python benchmarks/vmap_pmap.py [--batch 64] [--devices 4]`` (sets
``--xla_force_host_platform_device_count`` itself). Prints the median of ``--repeats`` calls
after a warm-up call.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _median_ms(fn, repeats: int) -> float:
    fn()                                      # compile and warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--features", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={args.devices}")
    import numpy as np

    import xlapy
    import xlapy.numpy as xnp
    from xlapy import lax

    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((args.features, args.hidden)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((args.hidden, 10)) * 0.05).astype(np.float32)
    x = rng.standard_normal((args.batch, args.features)).astype(np.float32)
    y = rng.integers(0, 10, args.batch).astype(np.int32)

    def make_loss(np_):
        def loss(params, x, y):
            a, b = params
            logits = np_.tanh(x @ a) @ b
            logp = logits - np_.log(np_.sum(np_.exp(logits), axis=-1, keepdims=True))
            onehot = (np_.arange(10) == y[..., None]).astype(np.float32)
            return -np_.mean(np_.sum(onehot * logp, axis=-1))
        return loss

    loss = make_loss(xnp)
    params = (w1, w2)
    per_example = xlapy.jit(xlapy.vmap(xlapy.grad(loss), in_axes=(None, 0, 0)))
    one = xlapy.jit(xlapy.grad(loss))
    rows = [("per-example grads, xlapy jit(vmap(grad))",
             _median_ms(lambda: per_example(params, x, y), args.repeats)),
            ("per-example grads, loop of xlapy jit(grad)",
             _median_ms(lambda: [one(params, x[i], y[i]) for i in range(args.batch)],
                        max(2, args.repeats // 4)))]
    try:
        import jax
        jloss = make_loss(jax.numpy)
        jfn = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        rows.append(("per-example grads, JAX jit(vmap(grad))",
                     _median_ms(lambda: jax.block_until_ready(jfn(params, x, y)),
                                args.repeats)))
    except ImportError:
        pass
    n = args.devices
    step = xlapy.pmap(lambda p, xb, yb: lax.pmean(xlapy.grad(loss)(p, xb, yb), "i"), "i",
                      in_axes=(None, 0, 0))
    xs, ys = x.reshape(n, -1, args.features), y.reshape(n, -1)
    whole = xlapy.jit(xlapy.grad(loss))
    rows.append((f"data-parallel grad step, pmap on {n} devices",
                 _median_ms(lambda: step(params, xs, ys), args.repeats)))
    rows.append(("data-parallel grad step, jit(grad) on 1 device",
                 _median_ms(lambda: whole(params, x, y), args.repeats)))
    width = max(len(r[0]) for r in rows)
    print(f"batch {args.batch}, MLP {args.features}-{args.hidden}-10, median of "
          f"{args.repeats} calls", file=sys.stdout)
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:9.2f} ms")


if __name__ == "__main__":
    main()
