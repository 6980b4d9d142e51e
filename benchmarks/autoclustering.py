"""Auto-clustering: a ``tf.function`` with ``tf.unique`` between two groups of math ops, run
as a graph op by op (``set_jit(False)``) and auto-clustered (``set_jit(True)``: two
compiled clusters, ``tf.unique`` between them).

Each group is about 60 elementwise ops (arithmetic, ``abs``, ``tanh``) and a reduction on
f32[N, N] (default N = 256): the math dominates; ``tf.unique`` runs on 16 values. Prints
the clusters, the median time per call of each mode (after warm-up) and the speed-up; the
two modes' results are compared.

    .venv/bin/python benchmarks/autoclustering.py [--n 256] [--calls 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--calls", type=int, default=20)
    args = p.parse_args()
    os.environ.pop("TF_XLA_FLAGS", None)
    import xlapy.tf as tf
    r = np.random.default_rng(0)
    x = r.standard_normal((args.n, args.n)).astype(np.float32) / np.sqrt(args.n)
    w = r.standard_normal((args.n, args.n)).astype(np.float32) / np.sqrt(args.n)

    def group(a):
        for _ in range(8):
            a = (a * 0.9 + w * 0.1) * (1.0 - a * a * 0.01) + tf.abs(a) * 0.05
        return tf.tanh(a) / (tf.reduce_max(tf.abs(a)) + 1.0)

    @tf.function
    def step(x, w):
        c = group(x)
        ids = tf.unique(tf.cast(c[0, :16] > 0.0, tf.int32)).idx
        f = group(c + tf.reduce_sum(tf.cast(ids, tf.float32)) * 0.01)
        return tf.reduce_sum(f * f) / tf.reduce_max(tf.abs(f) + 1.0)

    results = {}
    for mode in (False, True):
        tf.config.optimizer.set_jit(mode)
        step(x, w)
        step(x, w)                                   # warm-up: record, compile
        times = []
        for _ in range(args.calls):
            t = time.perf_counter()
            out = float(step(x, w))
            times.append(time.perf_counter() - t)
        results[mode] = (statistics.median(times), out)
        name = "set_jit(True), clustered" if mode else "set_jit(False), op by op"
        print(f"{name:26s} {results[mode][0] * 1e3:8.2f} ms/call  result {out:.6f}")
    c = step._inner.clustering(x, w)
    print(c.summary(), end="")
    print(f"speed-up: {results[False][0] / results[True][0]:.2f}x; results differ by "
          f"{abs(results[False][1] - results[True][1]):.2e}")


if __name__ == "__main__":
    main()
