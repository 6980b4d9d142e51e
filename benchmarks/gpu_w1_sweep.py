"""The split row reduction's constants swept on a GPU: W1 ``sum(x + y*z)`` at N=1e8 (as in
``gpu_check.py``) compiled under each setting of ``reduction.GROUP``, ``SPLIT_UNROLL`` and
``TARGET_BLOCKS``, every setting checked against float64 and timed (CUDA events, call +
synchronize, calls back to back) in rounds interleaved with JAX's ``jnp.sum`` on the same
card. Run from the repository root, as ``gpu_check.sh`` runs its script::

    PYTHONPATH=$PWD python3 benchmarks/gpu_w1_sweep.py [--rounds 3]
    GPU_CHECK_BACKEND=gpu_sim PYTHONPATH=$PWD python3 benchmarks/gpu_w1_sweep.py  # rehearsal
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check as ctx  # noqa: E402  (sets up the paths, the backend and the timers)

#: (GROUP, SPLIT_UNROLL, TARGET_BLOCKS); GROUP 1 is the strided sweep of UNROLL elements
SETTINGS = [(1, 1, 2048), (4, 1, 2048), (4, 2, 2048), (4, 2, 1056), (4, 2, 528),
            (4, 4, 1056), (4, 2, 4224), (2, 2, 2048)]


def run(rounds: int) -> int:
    from xlapy.backends.gpu import reduction
    from xlapy.client.backends import get_backend
    from xlapy.hlo import parse_module
    be = get_backend(ctx.BACKEND)
    n = 1_000_000 if ctx.SIM else 100_000_000
    reps = 3 if ctx.SIM else 20
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    want = np.sum(x.astype(np.float64) + y.astype(np.float64) * z)
    saved = reduction.GROUP, reduction.SPLIT_UNROLL, reduction.TARGET_BLOCKS
    exes = {}
    for s in SETTINGS:
        reduction.GROUP, reduction.SPLIT_UNROLL, reduction.TARGET_BLOCKS = s
        try:
            exe = be.compile(parse_module(ctx.w1_text(n)))
            ctx.check_result(exe.execute([x, y, z]), want, 1e-5)
            exes[s] = exe
        finally:
            reduction.GROUP, reduction.SPLIT_UNROLL, reduction.TARGET_BLOCKS = saved
    times: dict = {s: [] for s in exes}
    jax_times: list = []
    sync = be.device.synchronize
    for _ in range(rounds):
        for s, exe in exes.items():
            times[s].append((ctx.median_time(exe.run_on_device, ctx.timer(be), reps),
                             ctx.wall_time(exe.run_on_device, sync, reps),
                             ctx.loop_time(exe.run_on_device, sync, reps)))
        tj = ctx.jax_time(lambda a, b, d: ctx._jnp().sum(a + b * d), [x, y, z], reps)
        if tj:
            jax_times.append(tj)
    jw = statistics.median(t[0] for t in jax_times) if jax_times else float("nan")
    jl = statistics.median(t[1] for t in jax_times) if jax_times else float("nan")
    ctx.say(f"W1 N={n:.0e}: jax {jw * 1e3:.3f} ms wall, {jl * 1e3:.3f} ms loop "
            f"({len(jax_times)} rounds)")
    for s, ts in times.items():
        ev, wa, lo = (statistics.median(t[i] for t in ts) for i in range(3))
        ctx.say(f"  GROUP {s[0]} SPLIT_UNROLL {s[1]} TARGET_BLOCKS {s[2]:5d}: "
                f"events {ev * 1e3:.3f} wall {wa * 1e3:.3f} loop {lo * 1e3:.3f} ms "
                f"[{3 * 4 * n / ev / 1e9:.0f} GB/s]; vs jax {jw / wa:.2f}x wall, "
                f"{jl / lo:.2f}x loop")
    ctx.save()
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    sys.exit(run(ap.parse_args().rounds))
