"""What the CPU pipeline's memory-side passes cost and save, each on and off in the same
process with interleaved samples (issue 19, peak memory and the convolution epilogue):

- **elementwise rematerialization** (``--xla_cpu_elementwise_rematerialization``) on the
  W5 training step (``training.py``'s CNN, RMSprop, batch 256) and the W7s step
  (``memory.py``'s BERT-style encoder, Adam, batch 16): step time and the step's bytes by
  the runtime's own count (``memory_analysis().peak_memory_in_bytes``);
- **convolution output fusion** (``--xla_cpu_conv_output_fusion``) on an inference pass
  through W5's convolution layers (conv + bias + relu, twice, pool, twice; batch 256).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/memory_passes.py
    .venv/bin/python benchmarks/memory_passes.py --smoke       # tiny sizes, one sample
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _w5(batch: int) -> tuple[Callable, tuple]:
    import training
    ns = training.namespace("xlapy")
    return training.rmsprop_step(ns, training.cnn_loss), training.cnn_problem(batch)


def _w7s(batch: int, smoke: bool) -> tuple[Callable, tuple]:
    import memory
    import training
    ns = training.namespace("xlapy")
    dims = memory.bert_dims(smoke)
    params, x, target = memory.bert_problem(batch, smoke)
    fn = memory.bert_loss(ns.np, dims["heads"], dims["layers"])
    step = training.adam_step(ns, lambda _ns, p, a, b: fn(p, a, b))
    zeros = [np.zeros_like(p) for p in params]
    return step, (params, zeros, [np.zeros_like(p) for p in params], np.float32(0.0), x, target)


def _conv_inference(batch: int) -> tuple[Callable, tuple]:
    import training
    ns = training.namespace("xlapy")
    params, _, _, x, _ = training.cnn_problem(batch)

    def forward(p: dict, x: Any) -> Any:
        relu = lambda t: ns.np.maximum(t, 0.0)  # noqa: E731
        h = relu(ns.conv(x, p["c1"], "SAME") + p["b1"])
        h = ns.pool(relu(ns.conv(h, p["c2"], "VALID") + p["b2"]))
        h = relu(ns.conv(h, p["c3"], "SAME") + p["b3"])
        return ns.pool(relu(ns.conv(h, p["c4"], "VALID") + p["b4"]))
    return forward, (params, x)


def compare(name: str, fn: Callable, args: tuple, flag: str, samples: int) -> dict[str, Any]:
    """Compile ``fn`` with ``flag`` off and on, run them alternately ``samples`` times."""
    import xlapy
    from xlapy.config import debug_options
    compiled = {}
    for on in (False, True):
        with debug_options(**{flag: on}):
            compiled[on] = xlapy.jit(fn).lower(*args).compile()
    times: dict[bool, list[float]] = {False: [], True: []}
    outs = {}
    for on, c in compiled.items():          # warm-up call each
        outs[on] = [np.asarray(o) for o in xlapy.tree_util.tree_leaves(c(*args))]
    for _ in range(samples):
        for on, c in compiled.items():
            t0 = time.perf_counter()
            leaves = xlapy.tree_util.tree_leaves(c(*args))
            np.asarray(leaves[-1])
            times[on].append(time.perf_counter() - t0)
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(outs[False], outs[True]))
    row = {"case": name, "flag": flag, "max_abs_diff": diff}
    for on, label in ((False, "off"), (True, "on")):
        row[f"{label}_ms"] = 1e3 * statistics.median(times[on])
        row[f"{label}_step_mib"] = compiled[on].memory_analysis().peak_memory_in_bytes / 2**20
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=9, help="interleaved samples per side")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, one sample")
    p.add_argument("--json", metavar="OUT.json")
    args = p.parse_args(argv)
    from machine import machine_header
    print(json.dumps(machine_header(), default=str))
    samples = 1 if args.smoke else args.samples
    remat = "xla_cpu_elementwise_rematerialization"
    cases = [("W5 step", *_w5(4 if args.smoke else 256), remat),
             ("W7s step", *_w7s(2 if args.smoke else 16, args.smoke), remat),
             ("W5 conv layers, inference", *_conv_inference(4 if args.smoke else 256),
              "xla_cpu_conv_output_fusion")]
    rows = [compare(name, fn, a, flag, samples) for name, fn, a, flag in cases]
    print("| case | flag | off ms | on ms | on / off | off step MiB | on step MiB | "
          "max abs diff |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['flag']} | {r['off_ms']:.1f} | {r['on_ms']:.1f} | "
              f"{r['on_ms'] / r['off_ms']:.2f} | {r['off_step_mib']:.0f} | "
              f"{r['on_step_mib']:.0f} | {r['max_abs_diff']:.2g} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
