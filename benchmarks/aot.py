"""Per-call latency of an ahead-of-time object (timed in C) vs the same function through
``xlapy.jit`` (timed in Python), and the sizes of the object and of the whole program.

Usage: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/aot.py
       [--rounds N] [--quick]

Models: the MNIST dense model (784 -> 128 relu -> 10 softmax) at batch 1 and 256 and a
CIFAR-10-style CNN forward (32x32x3; 3x3 convolutions to 32 and 64 features, relu, 2x2
max-pools, dense to 10) at batch 1 and 256; weights are constants in both. Each AOT
variant -- BLAS (the default link mode), ``blas=False`` (self-contained kernels, libc/libm
only) and, at batch 256, BLAS with ``threads=2`` -- is linked into the generic C driver
(``xlapy.aot.driver``), which times ``--repeat`` calls with ``clock_gettime``. The JIT
runs with its defaults (its thread pool uses every core). Samples are interleaved: each
round takes one AOT sample of every variant and one JIT sample per model and batch; the
table gives medians over the rounds. The C driver runs with ``OPENBLAS_NUM_THREADS=1``
(the object sets OpenBLAS to one thread anyway; this only keeps OpenBLAS from starting
idle threads when it loads). "binary" is the driver executable; with BLAS the program
also needs ``libscipy_openblas`` (its size is printed below the table). The CPU columns
are the CPU time per call of all the process's threads (medians too): on a loaded machine
a single-threaded call's CPU time is close to its latency on an idle one, while the
wall-clock includes the time other processes held the core.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import xlapy
import xlapy.aot
import xlapy.numpy as xnp
from xlapy import nn
from xlapy.aot.blas_kernels import blas_library_path
from xlapy.aot.driver import driver_source

from machine import busy_text, check_openblas_env, cpu_model, others_busy

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


def _env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


class AotProgram:
    """One compiled variant: the driver executable and how to time it."""

    def __init__(self, fn, x: np.ndarray, work: str, blas: bool, threads: int) -> None:
        self.res = xlapy.aot.compile(fn, x, name="m", out_dir=work, blas=blas, threads=threads)
        with open(os.path.join(work, "main.c"), "w") as f:
            f.write(driver_source("m"))
        self.exe = os.path.join(work, "driver")
        subprocess.run(["cc", "-O2", "-o", self.exe, os.path.join(work, "main.c"),
                        self.res.object_path, *self.res.link], check=True)
        self.inp, self.out = os.path.join(work, "x.bin"), os.path.join(work, "y.bin")
        np.ascontiguousarray(x).tofile(self.inp)
        self.expected = np.asarray(xlapy.jit(fn)(x))

    def sample_us(self, repeat: int) -> tuple[float, float]:
        """(wall-clock, CPU) microseconds per call."""
        out = subprocess.run([self.exe, self.inp, self.out, "--repeat", str(repeat)],
                             check=True, capture_output=True, text=True, env=_env()).stdout
        words = out.split()
        return float(words[0]) / 1e3, float(words[4]) / 1e3

    def check(self) -> None:
        got = np.fromfile(self.out, np.float32).reshape(self.expected.shape)
        np.testing.assert_allclose(got, self.expected, rtol=1e-4, atol=1e-5)


def jit_sample_us(f, x: np.ndarray, repeat: int) -> tuple[float, float]:
    """(wall-clock, CPU of the whole process) microseconds per call."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        y = f(x)
    np.asarray(y)
    t1, c1 = time.perf_counter(), time.process_time()
    return (t1 - t0) / repeat * 1e6, (c1 - c0) / repeat * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="few calls per sample (smoke test)")
    ap.add_argument("--allow-openblas-env", action="store_true")
    ns = ap.parse_args()
    check_openblas_env(allow=ns.allow_openblas_env or ns.quick)
    busy = others_busy()
    scale = 20 if ns.quick else 1
    runs = [("MNIST dense", mnist_dense, (784,), 1, 2000),
            ("MNIST dense", mnist_dense, (784,), 256, 40),
            ("CNN forward", cnn, (32, 32, 3), 1, 200),
            ("CNN forward", cnn, (32, 32, 3), 256, 2)]
    variants = [("BLAS", True, 1), ("no BLAS", False, 1), ("BLAS, 2 threads", True, 2)]
    with tempfile.TemporaryDirectory() as root:
        cases = []
        for k, (label, fn, features, batch, reps) in enumerate(runs):
            x = rng.random((batch, *features), dtype=np.float32)
            progs = []
            for v, (vlabel, blas, threads) in enumerate(variants):
                if threads > 1 and batch == 1:
                    continue
                work = os.path.join(root, f"{k}-{v}")
                os.makedirs(work)
                progs.append((vlabel, AotProgram(fn, x, work, blas, threads)))
            f = xlapy.jit(fn)
            f(x)
            cases.append((label, batch, max(1, reps // scale), x, f, progs))
        aot = {(c[0], c[1], v): [] for c in cases for v, _ in c[5]}
        jit = {(c[0], c[1]): [] for c in cases}
        for _ in range(ns.rounds):
            for label, batch, reps, x, f, progs in cases:
                for vlabel, prog in progs:
                    aot[(label, batch, vlabel)].append(prog.sample_us(reps))
                jit[(label, batch)].append(jit_sample_us(f, x, reps))
        print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average "
              f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}; other processes kept "
              f"{busy_text(busy)} of the cores busy before the run; {ns.rounds} rounds")
        print("| model | batch | AOT variant | AOT call (C) | JIT call (Python) | AOT / JIT | "
              "AOT CPU | JIT CPU | object | binary |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for label, batch, reps, x, f, progs in cases:
            j, jc = (statistics.median(t) for t in zip(*jit[(label, batch)]))
            for vlabel, prog in progs:
                prog.check()
                a, ac = (statistics.median(t) for t in zip(*aot[(label, batch, vlabel)]))
                print(f"| {label} | {batch} | {vlabel} | {a:.1f} us | {j:.1f} us | {a / j:.0%} | "
                      f"{ac:.1f} us | {jc:.1f} us | "
                      f"{os.path.getsize(prog.res.object_path) / 1024:.0f} KiB | "
                      f"{os.path.getsize(prog.exe) / 1024:.0f} KiB |")
        print(f"BLAS library the BLAS variants also load: {blas_library_path()} "
              f"({os.path.getsize(blas_library_path()) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
