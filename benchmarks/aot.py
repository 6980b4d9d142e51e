"""Per-call latency of an ahead-of-time object (timed in C) vs the same function through
``xlapy.jit`` (timed in Python), and the object's size.

Usage: .venv/bin/python benchmarks/aot.py [--repeat N]

Models: the MNIST dense model (784 -> 128 relu -> 10 softmax; weights as constants) at
batch 1 and 256, and a CIFAR-10-style CNN forward (two 3x3 convolutions) at batch 1. Needs ``cc``. The AOT dot is the self-contained kernel (one output
element per unit, no BLAS), the JIT's is the BLAS library call.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time

import numpy as np

import xlapy
import xlapy.aot
import xlapy.numpy as xnp
from xlapy import nn
from xlapy.aot.driver import driver_source

rng = np.random.default_rng(0)
W1 = (rng.standard_normal((784, 128)) / 28).astype(np.float32)
B1 = np.zeros(128, np.float32)
W2 = (rng.standard_normal((128, 10)) / 11).astype(np.float32)
B2 = np.zeros(10, np.float32)


def mnist_dense(x):
    """The MNIST dense model's forward pass (class probabilities)."""
    h = nn.relu(xnp.dot(x, W1) + B1)
    return nn.softmax(xnp.dot(h, W2) + B2, axis=1)


K1 = (rng.standard_normal((3, 3, 3, 32)) / 5).astype(np.float32)
K2 = (rng.standard_normal((3, 3, 32, 64)) / 17).astype(np.float32)
WD = (rng.standard_normal((8 * 8 * 64, 10)) / 64).astype(np.float32)


def cnn(x):
    """A CIFAR-10-style CNN forward pass: two 3x3 conv + relu + 2x2 max-pool, dense."""
    h = nn.max_pool(xnp.maximum(nn.conv(x, K1, padding="same"), 0.0), (2, 2))
    h = nn.max_pool(xnp.maximum(nn.conv(h, K2, padding="same"), 0.0), (2, 2))
    return xnp.dot(xnp.reshape(h, (h.shape[0], -1)), WD)


def jit_us(fn, x, repeat: int) -> float:
    f = xlapy.jit(fn)
    np.asarray(f(x))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            f(x)
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best * 1e6


def aot_us(fn, x, repeat: int, work: str) -> tuple[float, int, int]:
    res = xlapy.aot.compile(fn, x, name="m", out_dir=work)
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(driver_source("m"))
    exe = os.path.join(work, "driver")
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(work, "main.c"), res.object_path,
                    "-lm"], check=True)
    np.ascontiguousarray(x).tofile(os.path.join(work, "x.bin"))
    best = float("inf")
    for _ in range(5):
        out = subprocess.run([exe, os.path.join(work, "x.bin"), os.path.join(work, "y.bin"),
                              "--repeat", str(repeat)], check=True, capture_output=True,
                             text=True).stdout
        best = min(best, float(out.split()[0]) / 1e3)
    return best, os.path.getsize(res.object_path), os.path.getsize(exe)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2000)
    ns = ap.parse_args()
    print("| model | batch | AOT call (C) | JIT call (Python) | AOT / JIT | object | binary |")
    print("|---|---|---|---|---|---|---|")
    runs = [("MNIST dense", mnist_dense, (784,), 1, ns.repeat),
            ("MNIST dense", mnist_dense, (784,), 256, max(20, ns.repeat // 100)),
            ("CNN forward", cnn, (32, 32, 3), 1, max(20, ns.repeat // 20))]
    for label, fn, features, batch, reps in runs:
        x = rng.random((batch, *features), dtype=np.float32)
        with tempfile.TemporaryDirectory() as work:
            a, obj, binary = aot_us(fn, x, reps, work)
        j = jit_us(fn, x, reps)
        print(f"| {label} | {batch} | {a:.1f} us | {j:.1f} us | {a / j:.0%} | "
              f"{obj / 1024:.0f} KiB | {binary / 1024:.0f} KiB |")


if __name__ == "__main__":
    main()
