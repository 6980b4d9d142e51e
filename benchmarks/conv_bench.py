"""Convolution timings: xlapy's convolution thunk vs JAX (XLA:CPU), NumPy and the interpreter.

Cases are the convolutions of a small CNN layer at batch 256 (NHWC 32x32x32 -> 32, 3x3):
the forward convolution, its input gradient (``b01f_01oi``) and its weight gradient
(``f01b_i01o->01bf``, a 32x32 window) in the labels JAX emits, a strided and a depthwise
convolution, and a 1-D convolution. For each case:

- ``xlapy``: ``make_convolution_thunk(instr)`` called on the same input arrays and ``out``
  (what the runtime does);
- ``jax``: ``jax.jit(lax.conv_general_dilated)`` with the same dimension numbers (skipped
  when JAX is not installed);
- ``numpy``: a direct NumPy formulation (one f32 ``matmul`` per kernel tap over a padded
  input), for the plain convolutions;
- ``interpreter``: the reference interpreter, timed once (it works in f64), when
  ``--interpreter`` is given.

Results are checked against JAX (or the interpreter) before timing. Run as::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/conv_bench.py

``--batch N`` changes the batch size (``--batch 16`` for a quick run); ``--w5`` times the
convolutions of the W5 CNN training step (benchmarks/training.py) instead, each weight
gradient both canonicalized and in autodiff's ``f01b_i01o->01bf`` labels; ``--one-core``
pins the process to one CPU and reports CPU time per call (for a loaded machine).

Measured on the development machine (2 cores, Xeon with AVX-512, OpenBLAS 0.3.34 SkylakeX
kernel, no OPENBLAS_* variables, JAX 0.10.2; medians, two runs, ms):

| case (batch 256)            | GFLOP | xlapy     | JAX jit | NumPy taps |
|-----------------------------|-------|-----------|---------|------------|
| fwd 3x3 SAME                | 4.83  | 30.5-31.1 | 61-64   | 114-117    |
| input grad (01oi)           | 4.83  | 29.2-31.0 | 62-63   |            |
| input grad canonical        | 4.83  | 29.8      | 61-62   |            |
| weight grad (f01b_i01o)     | 4.83  | 108-113   | 174-195 |            |
| weight grad canonical       | 4.83  | 41-46     | 152-190 |            |
| fwd 3x3 stride 2 -> 64      | 2.42  | 16.4-17.0 | 30-32   |            |
| depthwise 3x3               | 0.15  | 58-60     | 213     |            |
| 1-D k=5 (batch 64)          | 2.68  | 14.7-14.9 | 9.5     |            |

``--w5`` (same machine, idle, one run; the input gradients are the padded "full"
convolutions, their GFLOP counting the padding products):

| case (batch 256)                  | GFLOP | strategy | xlapy ms | JAX jit ms |
|-----------------------------------|-------|----------|----------|------------|
| conv1 fwd (3 channels)            | 0.45  | im2col   | 9.5      | 32         |
| conv1 weight grad canonical       | 0.45  | im2col   | 5.1      | 19         |
| conv1 weight grad f01b_i01o       | 0.45  | im2col   | 10.3     | 42         |
| conv2 fwd                         | 4.25  | taps     | 19.2     | 137        |
| conv2 input grad                  | 4.83  | taps     | 20.2     | 28         |
| conv2 weight grad canonical       | 4.25  | taps     | 24.0     | 223        |
| conv2 weight grad f01b_i01o       | 4.25  | taps_t   | 33.1     | 262        |
| conv3 fwd                         | 2.12  | taps     | 8.5      | 14.5       |
| conv3 input grad                  | 2.12  | taps     | 9.0      | 14.6       |
| conv3 weight grad canonical       | 2.12  | taps     | 14.4     | 66         |
| conv3 weight grad f01b_i01o       | 2.12  | taps_t   | 16.1     | 69         |
| conv4 fwd                         | 3.19  | taps     | 11.5     | 58         |
| conv4 input grad                  | 4.25  | taps     | 12.8     | 15.6       |
| conv4 weight grad canonical       | 3.19  | taps     | 17.2     | 134        |
| conv4 weight grad f01b_i01o       | 3.19  | taps_t   | 18.5     | 140        |

The canonical weight gradients exclude the transposes the pipeline puts before them; the
``f01b_i01o`` ones include the copies ``taps_t`` makes of both operands. Both tables predate
the generated kernels (``direct`` / ``direct_wgrad`` in the strategy column, which now take
the NHWC cases); docs/performance.md ("Generated convolution kernels") has their figures.

The interpreter takes 916 ms for the forward case. The first call of a thunk is about
twice as slow (it allocates the padded input it keeps).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from xlapy.backends.cpu import blas
from xlapy.backends.cpu.conv import make_convolution_thunk
from xlapy.backends.interpreter import Evaluator
from xlapy.hlo.attrs import ConvDimensionNumbers, Window
from xlapy.hlo.ir import HloInstruction
from xlapy.hlo.shape import Shape
from xlapy.hlo.shape_inference import infer_shape


@dataclass
class Case:
    name: str
    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    labels: str
    window: Window
    jax_dn: tuple[str, str, str]
    feature_groups: int = 1
    numpy_taps: bool = False      # a plain NHWC/HWIO convolution numpy can do tap by tap


def cases(n: int) -> list[Case]:
    same = Window.make((3, 3), padding=((1, 1), (1, 1)))
    return [
        Case("fwd 3x3 SAME", (n, 32, 32, 32), (3, 3, 32, 32), "b01f_01io->b01f", same,
             ("NHWC", "HWIO", "NHWC"), numpy_taps=True),
        Case("input grad (01oi)", (n, 32, 32, 32), (3, 3, 32, 32), "b01f_01oi->b01f", same,
             ("NHWC", "HWOI", "NHWC")),
        Case("weight grad (f01b_i01o)", (n, 32, 32, 32), (n, 32, 32, 32), "f01b_i01o->01bf",
             Window.make((32, 32), padding=((1, 1), (1, 1))), ("CHWN", "IHWO", "HWNC")),
        Case("input grad canonical", (n, 32, 32, 32), (3, 3, 32, 32), "b01f_01io->b01f",
             same, ("NHWC", "HWIO", "NHWC")),
        Case("weight grad canonical", (32, 32, 32, n), (32, 32, n, 32), "b01f_01io->b01f",
             Window.make((32, 32), padding=((1, 1), (1, 1))), ("NHWC", "HWIO", "NHWC")),
        Case("fwd 3x3 stride 2 -> 64", (n, 32, 32, 32), (3, 3, 32, 64), "b01f_01io->b01f",
             Window.make((3, 3), stride=(2, 2), padding=((0, 1), (0, 1))),
             ("NHWC", "HWIO", "NHWC")),
        Case("depthwise 3x3", (n, 32, 32, 32), (3, 3, 1, 32), "b01f_01io->b01f", same,
             ("NHWC", "HWIO", "NHWC"), feature_groups=32),
        Case("1-D k=5", (max(1, n // 4), 1024, 64), (5, 64, 64), "b0f_0io->b0f",
             Window.make((5,), padding=((2, 2),)), ("NWC", "WIO", "NWC")),
    ]


def w5_cases(n: int) -> list[Case]:
    """Every convolution of the W5 CIFAR-10 CNN training step (benchmarks/training.py) at
    batch ``n``: forward, input gradients (full convolutions, padding 2 for the valid layers)
    and weight gradients, the latter both as the CPU pipeline canonicalizes them (the
    operands transposed to ``b01f_01io``) and in the labels autodiff emits
    (``f01b_i01o->01bf`` on the NHWC activations)."""
    same, valid = Window.make((3, 3), padding=((1, 1), (1, 1))), Window.make((3, 3))
    full = Window.make((3, 3), padding=((2, 2), (2, 2)))
    fwd = ("NHWC", "HWIO", "NHWC")
    out = []
    for i, (hw, cin, cout, pad) in enumerate([(32, 3, 32, True), (32, 32, 32, False),
                                               (15, 32, 64, True), (15, 64, 64, False)], 1):
        ho = hw if pad else hw - 2
        out.append(Case(f"W5 conv{i} fwd", (n, hw, hw, cin), (3, 3, cin, cout),
                        "b01f_01io->b01f", same if pad else valid, fwd))
        if i > 1:
            out.append(Case(f"W5 conv{i} input grad", (n, ho, ho, cout), (3, 3, cout, cin),
                            "b01f_01io->b01f", same if pad else full, fwd))
        wwin = Window.make((ho, ho), padding=((1, 1), (1, 1)) if pad else ((0, 0), (0, 0)))
        out.append(Case(f"W5 conv{i} weight grad canonical", (cin, hw, hw, n),
                        (ho, ho, n, cout), "b01f_01io->b01f", wwin, fwd))
        out.append(Case(f"W5 conv{i} weight grad f01b_i01o", (n, hw, hw, cin),
                        (n, ho, ho, cout), "f01b_i01o->01bf", wwin, ("CHWN", "IHWO", "HWNC")))
    return out


def make_instr(c: Case) -> HloInstruction:
    p0 = HloInstruction("parameter", Shape.array("f32", c.lhs), parameter_number=0)
    p1 = HloInstruction("parameter", Shape.array("f32", c.rhs), parameter_number=1)
    attrs = dict(window=c.window, dim_labels=ConvDimensionNumbers.from_string(c.labels),
                 feature_group_count=c.feature_groups)
    return HloInstruction("convolution", infer_shape("convolution", [p0.shape, p1.shape], attrs),
                          [p0, p1], attrs)


#: What ``per_call`` measures: wall time, or (``--one-core``) the process's CPU time.
CLOCK: Callable[[], float] = time.perf_counter


def per_call(fn: Callable[[], object], min_time: float = 1.0, max_calls: int = 20) -> float:
    """Median seconds per call over up to ``max_calls`` calls (after one warm-up call).

    Sleeps first so that idle threads of the previous implementation (JAX's pool, the other
    OpenBLAS) stop spinning before this one is timed."""
    time.sleep(0.3)
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max_calls and (len(times) < 3 or time.perf_counter() - start < min_time):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return float(np.median(times))


def numpy_taps(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """NHWC x HWIO 'SAME' stride-1 convolution: one f32 matmul per kernel tap."""
    kh, kw = w.shape[:2]
    n, h, wd, _ = x.shape
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    acc = np.zeros((n, h, wd, w.shape[3]), np.float32)
    for i in range(kh):
        for j in range(kw):
            acc += xp[:, i:i + h, j:j + wd, :] @ w[i, j]
    return acc


def jax_fn(c: Case):
    try:
        import jax
    except ImportError:
        return None
    w = c.window.dims
    fn = jax.jit(lambda a, b: jax.lax.conv_general_dilated(
        a, b, [d.stride for d in w], [(d.pad_lo, d.pad_hi) for d in w],
        lhs_dilation=[d.lhs_dilate for d in w], rhs_dilation=[d.rhs_dilate for d in w],
        dimension_numbers=c.jax_dn, feature_group_count=c.feature_groups))
    return lambda a, b: fn(a, b).block_until_ready()


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--interpreter", action="store_true", help="also time the interpreter once")
    ap.add_argument("--only", help="run only cases whose name contains this text")
    ap.add_argument("--w5", action="store_true",
                    help="the convolutions of the W5 CNN training step instead")
    ap.add_argument("--one-core", action="store_true",
                    help="run on one CPU and time the process's CPU time per call (steadier "
                         "than wall time on a loaded machine; every column single-threaded)")
    args = ap.parse_args(argv)
    if args.one_core:
        global CLOCK
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        CLOCK = time.process_time
    lib = blas.library()
    env = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS")}
    print(f"# OpenBLAS kernel {lib.corename()}, {lib.num_threads()} threads, "
          f"{os.cpu_count()} cores, env {env or 'no OPENBLAS_* variables'}, "
          f"load {os.getloadavg()[0]:.2f}")
    print("| case | GFLOP | strategy | xlapy ms | xlapy GFLOP/s | jax ms | numpy ms | "
          "interpreter ms | max rel err |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for c in (w5_cases if args.w5 else cases)(args.batch):
        if args.only and args.only not in c.name:
            continue
        instr = make_instr(c)
        x = rng.standard_normal(c.lhs).astype(np.float32)
        w = rng.standard_normal(c.rhs).astype(np.float32)
        out = np.empty(instr.shape.dims, np.float32)
        thunk = make_convolution_thunk(instr)
        thunk([x, w], out)
        jf = jax_fn(c)
        ref, t_interp, t_jax = None, "-", "-"
        if jf is not None:
            import jax.numpy as jnp
            xj, wj = jnp.asarray(x), jnp.asarray(w)
            ref = np.asarray(_jax_call(c, xj, wj))
            t_jax = f"{per_call(lambda: jf(xj, wj)) * 1e3:.1f}"
        if args.interpreter or ref is None:
            t0 = time.perf_counter()
            ref_i = Evaluator().evaluate(instr, [x, w])
            t_interp = f"{(time.perf_counter() - t0) * 1e3:.0f}"
            ref = ref_i if ref is None else ref
        err = float(np.max(np.abs(out - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
        t_x = per_call(lambda: thunk([x, w], out))
        t_np = f"{per_call(lambda: numpy_taps(x, w)) * 1e3:.1f}" if c.numpy_taps else "-"
        gflop = c_flops(instr, c) / 1e9
        print(f"| {c.name} | {gflop:.2f} | {thunk.strategy} | {t_x * 1e3:.1f} | "
              f"{gflop / t_x:.0f} | {t_jax} | {t_np} | {t_interp} | {err:.1e} |")
        sys.stdout.flush()


def _jax_call(c: Case, xj, wj):
    import jax
    w = c.window.dims
    return jax.lax.conv_general_dilated(
        xj, wj, [d.stride for d in w], [(d.pad_lo, d.pad_hi) for d in w],
        lhs_dilation=[d.lhs_dilate for d in w], rhs_dilation=[d.rhs_dilate for d in w],
        dimension_numbers=c.jax_dn, feature_group_count=c.feature_groups)


def c_flops(instr: HloInstruction, c: Case) -> float:
    from xlapy.backends.cpu.conv import conv_geometry
    return conv_geometry(instr).flops


if __name__ == "__main__":
    main(sys.argv[1:])
