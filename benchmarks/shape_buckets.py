"""Keras ``fit`` on ragged sequence batches: shape buckets vs one compile per shape.

A text-classifier-like model (Embedding(200, 16) -> GlobalAveragePooling1D -> Dense(16,
relu) -> Dense(2)) is trained for one epoch on ``--batches`` batches of 8 sequences whose
lengths are drawn from [1, 512], once with ``compile(shape_buckets={1: "pow2"})`` and once
without (both from the same initial weights), on the cpu backend with the disk cache off.
It prints the compiles, the wall time of each ``fit`` and the largest difference between
the two runs' losses and final weights.

    .venv/bin/python benchmarks/shape_buckets.py [--batches 50]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=50)
    args = p.parse_args()
    os.environ["XLAPY_DISABLE_CACHE"] = "1"
    from xlapy import keras
    r = np.random.default_rng(3)
    data = []
    for _ in range(args.batches):
        x = r.integers(1, 200, (8, int(r.integers(1, 513)))).astype(np.int32)
        data.append((x, (x.mean(1) > 100).astype(np.int32)))

    def model(buckets):
        m = keras.Sequential([keras.layers.Embedding(200, 16),
                              keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
        m.compile(optimizer="adam", jit_compile=True, shape_buckets=buckets,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.build((None, None))
        return m

    runs = {}
    first = None
    for name, buckets in (("buckets", {1: "pow2"}), ("per shape", None)):
        m = model(buckets)
        if first is None:
            first = m.get_weights()
        else:
            m.set_weights(first)
        t = time.perf_counter()
        loss = m.fit(iter(data), epochs=1, verbose=0).history["loss"]
        runs[name] = (time.perf_counter() - t, m.train_function.cache_info().misses, loss,
                      m.get_weights())
        print(f"{name:10s} compiles {runs[name][1]:3d}  fit {runs[name][0]:7.1f} s")
    (_, _, l1, w1), (_, _, l2, w2) = runs.values()
    diff = max(float(np.abs(a - b).max()) for a, b in zip(w1, w2))
    print(f"loss {l1[0]:.6f} vs {l2[0]:.6f}; largest weight difference {diff:.2e}")


if __name__ == "__main__":
    main()
