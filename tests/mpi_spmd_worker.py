"""One process of the tensor-parallel MLP training run, launched by ``tests/test_spmd_mpi.py``
as ``mpiexec -n 2 python mpi_spmd_worker.py STEPS`` (or, for the one-device run it is
compared with, as a plain ``python mpi_spmd_worker.py STEPS one``).

The training step (loss, gradients, SGD with momentum) of an MLP whose ``w1`` is split by
columns and ``w2`` by rows (Megatron; the momenta like their weights) is
``xlapy.jit(step, in_shardings=..., out_shardings=...)`` over a mesh of the two processes'
devices; each process creates only its shards (``make_array_from_callback``) and keeps
only them between steps. A second step function computes the loss inside ``shard_map``
(per-device code with one ``psum``) and must give the same curve. Each process prints its
loss curves, the bytes of weights and optimizer state it holds and its peak RSS growth
(``resource.getrusage``, the peak started over after compiling the step) to the end of
training; the one-device run prints the same for the whole model."""
from __future__ import annotations

import ctypes
import gc
import resource
import sys

import numpy as np

import xlapy
import xlapy.distributed
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.client import get_backend
from xlapy.sharding import Mesh, NamedSharding, PartitionSpec as P

LR, MU = np.float32(0.05), np.float32(0.9)
D, H, B = 512, 8192, 16          # 16 MiB per weight matrix


def init(scale, a, b):
    """A deterministic weight of any index range (no process builds the whole array)."""
    def make(index):
        i, j = np.ogrid[index[0], index[1]]
        return (scale * np.sin(a * i + b * j + 0.3)).astype(np.float32)
    return make


def loss_fn(w1, w2, x, y):
    return xnp.mean((xnp.tanh(x @ w1) @ w2 - y) ** 2)


def step(x, y, w1, w2, v1, v2, loss=loss_fn):
    value, (g1, g2) = xlapy.value_and_grad(loss, argnums=(0, 1))(w1, w2, x, y)
    v1, v2 = MU * v1 + g1, MU * v2 + g2
    return value, w1 - LR * v1, w2 - LR * v2, v1, v2


def say(line: str) -> None:
    """One line in one write, so the two processes' lines do not interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024      # Linux: KiB


def reset_peak_rss() -> int:
    """Start the peak over from the memory in use now: garbage collected and freed heap
    memory handed back (glibc's ``malloc_trim``), then Linux's ``clear_refs`` 5 (compiling's
    peak may be higher than training's and would hide it); returns the new baseline."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return peak_rss_bytes()


def shaped(*shapes):
    """Arguments for tracing only: the right shapes, no memory."""
    return [np.broadcast_to(np.zeros((), np.float32), s) for s in shapes]


def main() -> None:
    steps, one = int(sys.argv[1]), sys.argv[2:] == ["one"]
    if not one:
        xlapy.distributed.initialize()
    rank = xlapy.process_index()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, D)).astype(np.float32)
    y = rng.standard_normal((B, D)).astype(np.float32)
    inits = [init(0.02, 0.37, 0.11), init(0.02, 0.13, 0.29)]
    shapes = [(D, H), (H, D)]
    if one:
        f = xlapy.jit(step, backend="cpu")
        f.lower(x, y, *shaped(*shapes, *shapes))                  # compiles
        before = reset_peak_rss()
        state = [inits[0]((slice(0, D), slice(0, H))), inits[1]((slice(0, H), slice(0, D))),
                 np.zeros((D, H), np.float32), np.zeros((H, D), np.float32)]
        losses = []
        for _ in range(steps):
            loss, *state = f(x, y, *state)
            losses.append(float(loss))
        held = sum(np.asarray(s).nbytes for s in state)
        say(f"ONE LOSSES {' '.join(f'{v:.7f}' for v in losses)}")
        say(f"ONE STATE_BYTES {held} RSS_GROWTH {peak_rss_bytes() - before}")
        return
    mesh = Mesh(np.arange(2), ("m",))
    rep, cols, rows = (NamedSharding(mesh, s) for s in (P(), P(None, "m"), P("m", None)))
    zero = lambda index: np.zeros(tuple(s.stop - s.start for s in index), np.float32)  # noqa
    sh = (rep, rep, cols, rows, cols, rows)
    f = xlapy.jit(step, in_shardings=sh, out_shardings=(rep,) + sh[2:], backend="cpu")
    get_backend("cpu").compile(f.lower(x, y, *shaped(*shapes, *shapes)).module)

    def fresh():
        mk = xlapy.make_array_from_callback
        return [mk(shapes[0], cols, inits[0]), mk(shapes[1], rows, inits[1]),
                mk(shapes[0], cols, zero), mk(shapes[1], rows, zero)]

    def train(fn):
        state, losses = fresh(), []
        for _ in range(steps):
            loss, *state = fn(x, y, *state)
            losses.append(float(np.asarray(loss)))
        return state, " ".join(f"{v:.7f}" for v in losses)

    before = reset_peak_rss()
    state, losses = train(f)
    held = sum(s.nbytes_held for s in state)
    growth = peak_rss_bytes() - before
    assert all(len(s.addressable_shards) == 1 for s in state)
    say(f"RANK {rank} LOSSES {losses}")
    say(f"RANK {rank} STATE_BYTES {held} OF {2 * sum(4 * a * b for a, b in shapes)} "
        f"RSS_GROWTH {growth}")

    # the loss computed by per-device code: each device's columns of the hidden layer
    def manual_loss(w1, w2, x, y):
        part = xlapy.shard_map(lambda w1, w2, x: lax.psum(xnp.tanh(x @ w1) @ w2, "m"),
                               mesh=mesh, in_specs=(P(None, "m"), P("m", None), P()),
                               out_specs=P())(w1, w2, x)
        return xnp.mean((part - y) ** 2)
    g = xlapy.jit(lambda *a: step(*a, loss=manual_loss), in_shardings=sh,
                  out_shardings=(rep,) + sh[2:], backend="cpu")
    say(f"RANK {rank} SHARD_MAP_LOSSES {train(g)[1]}")
    say(f"OK {rank}")


if __name__ == "__main__":
    main()
