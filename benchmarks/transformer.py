"""W6 transformer block forward: batch 8, seq 256, d_model 512, 8 heads, MLP 2048 (float32).

Pre-layernorm block: ``x1 = x + attn(layernorm(x))``, ``out = x1 + mlp(layernorm(x1))``, with
softmax attention (no mask) and a tanh-gelu MLP. About 14 GFLOP per call, most of it in
matrix products, so the BLAS matters as much as fusion; the C column is hand-fused C around
the same OpenBLAS sgemm that xlapy's CPU backend calls (``benchmarks/c/transformer.c``).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/transformer.py
"""
from __future__ import annotations

import ctypes
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

import harness
from c_loops import C_THREADS, Pinned, load, ptr


@dataclass(frozen=True)
class Config:
    batch: int
    seq: int
    d_model: int
    heads: int
    mlp: int

    def __str__(self) -> str:
        return (f"B={self.batch} S={self.seq} D={self.d_model} H={self.heads} "
                f"F={self.mlp}")


FULL = Config(8, 256, 512, 8, 2048)
SMOKE = Config(2, 8, 16, 2, 32)
PARAMS = ("g1", "b1", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "g2", "b2",
          "w1", "c1", "w2", "c2")


def layernorm(xp: Any, x: Any, g: Any, b: Any) -> Any:
    mean = xp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return d / xp.sqrt(var + 1e-5) * g + b


def softmax(xp: Any, x: Any) -> Any:
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def gelu(xp: Any, x: Any) -> Any:
    return 0.5 * x * (1 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def make_block(heads: int) -> Callable[..., Any]:
    """The block as ``block(xp, x, *params)`` for any NumPy-like namespace ``xp``."""

    def transformer_block(xp: Any, x: Any, g1: Any, b1: Any, wq: Any, bq: Any, wk: Any,
                          bk: Any, wv: Any, bv: Any, wo: Any, bo: Any, g2: Any, b2: Any,
                          w1: Any, c1: Any, w2: Any, c2: Any) -> Any:
        batch, seq, d = x.shape
        hd = d // heads

        def split_heads(t: Any) -> Any:          # [B, S, D] -> [B, H, S, hd]
            return xp.transpose(xp.reshape(t, (batch, seq, heads, hd)), (0, 2, 1, 3))

        h = layernorm(xp, x, g1, b1)
        q = split_heads(h @ wq + bq)
        k = split_heads(h @ wk + bk)
        v = split_heads(h @ wv + bv)
        scores = (q @ xp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(hd))
        o = softmax(xp, scores) @ v                                      # [B, H, S, hd]
        o = xp.reshape(xp.transpose(o, (0, 2, 1, 3)), (batch, seq, d))
        x1 = x + (o @ wo + bo)
        h2 = layernorm(xp, x1, g2, b2)
        return x1 + (gelu(xp, h2 @ w1 + c1) @ w2 + c2)

    return transformer_block


def make_inputs(cfg: Config) -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    d, f = cfg.d_model, cfg.mlp

    def normal(shape: tuple[int, ...], scale: float, mean: float = 0.0) -> np.ndarray:
        return (mean + scale * rng.standard_normal(shape)).astype(np.float32)

    shapes = {"g1": (d,), "b1": (d,), "wq": (d, d), "bq": (d,), "wk": (d, d), "bk": (d,),
              "wv": (d, d), "bv": (d,), "wo": (d, d), "bo": (d,), "g2": (d,), "b2": (d,),
              "w1": (d, f), "c1": (f,), "w2": (f, d), "c2": (d,)}
    params = []
    for name in PARAMS:
        shape = shapes[name]
        if name.startswith("g"):
            params.append(normal(shape, 0.1, 1.0))
        elif len(shape) == 2:
            params.append(normal(shape, 1 / math.sqrt(shape[0])))
        else:
            params.append(normal(shape, 0.1))
    return [normal((cfg.batch, cfg.seq, d), 1.0)] + params


def c_block(cfg: Config, args: list[np.ndarray]) -> Callable[[], Any]:
    lib = load("transformer", with_openblas=True)
    lib.block_workspace_floats.restype = ctypes.c_int64
    lib.block_workspace_floats.argtypes = [ctypes.c_int64] * 4
    ws = np.empty(lib.block_workspace_floats(cfg.batch, cfg.seq, cfg.d_model, cfg.mlp),
                  np.float32)                  # allocated once, as xlapy's arena is
    f = lib.block_forward
    f.restype = None
    f.argtypes = [ctypes.c_void_p] * 19 + [ctypes.c_int64] * 5
    inputs = Pinned(*args, ws)             # x, the 16 parameters, then the workspace
    x = args[0]
    dims = (cfg.batch, cfg.seq, cfg.d_model, cfg.heads, cfg.mlp)

    # The C block uses OpenBLAS's own threads for its sgemm calls; xlapy keeps the same
    # library (one copy per process) at one thread, so the count is raised for the call.
    from xlapy.backends.cpu.blas_lib import library
    blas = library()

    def call() -> np.ndarray:
        out = np.empty_like(x)
        blas.set_num_threads(C_THREADS)
        try:
            f(*inputs.ptrs[:-1], ptr(out), inputs.ptrs[-1], *dims)
        finally:
            blas.set_num_threads(1)
        return out
    return call


def build_cases(s: harness.Settings) -> Iterator[harness.Case]:
    cfg = SMOKE if s.smoke else FULL
    args = make_inputs(cfg)
    fn = make_block(cfg.heads)
    impls = harness.peer_impls(fn, args, s, lambda: c_block(cfg, args))
    ref = fn(np, *[a.astype(np.float64) for a in args])
    yield harness.Case("W6 transformer block", str(cfg), ref, impls, rtol=1e-3, atol=1e-3)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(argv, __doc__.splitlines()[0], build_cases, default_repeat=11)


if __name__ == "__main__":
    sys.exit(main())
