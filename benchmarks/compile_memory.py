"""Native memory over compile cycles: does a compile's memory come back when its
executable dies?

Each cycle compiles a new program and lets it die, in one of three ways (``--mode``):

- ``delete`` (default): a new ``xlapy.jit`` function (``tanh(x * c) + c`` with a new
  constant ``c``, so every cycle really compiles), called once and deleted;
- ``clear``: one function called with a new shape each cycle, ``clear_cache()`` every
  100 cycles;
- ``recompile``: one function called with a new shape each cycle and never cleared
  (the jit cache's LRU bound, ``XLAPY_JIT_CACHE_PER_FUNCTION``, keeps it bounded).

Results are checked through NumPy (an eager ``out[0]`` would compile one-op programs,
kept in the eager cache, ``XLAPY_EAGER_CACHE_SIZE``). The resident set size (``/proc/self/statm``) is read after ``--warmup`` cycles (which
fill the bounded caches: the backend's in-memory cache, the in-process LLVM budget)
and after ``--cycles`` more; the growth between them is what the cycles leaked. Run it
without the disk cache so that every cycle compiles::

    XLAPY_DISABLE_CACHE=1 .venv/bin/python benchmarks/compile_memory.py --cycles 1000

``--json`` prints one JSON line (the test ``tests/test_jit_cache_bounds.py`` runs a
short version). ``docs/performance.md`` has the measurements.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import xlapy                      # noqa: E402
import xlapy.numpy as xnp         # noqa: E402
from xlapy.frontend import jit_cache   # noqa: E402


def rss_mib() -> float:
    """Results are checked through NumPy (an eager ``out[0]`` would compile one-op programs,
kept in the eager cache, ``XLAPY_EAGER_CACHE_SIZE``). The resident set size of this process (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def cycles(mode: str) -> Callable[[int], None]:
    """One compile cycle of ``mode`` (see the module docstring)."""
    if mode == "delete":
        def cycle(i: int) -> None:
            c = 1.0 + i
            f = xlapy.jit(lambda x: xnp.tanh(x * c) + c)
            out = np.asarray(f(np.ones(33, np.float32)))    # no eager op: only the jit
            assert abs(float(out[0]) - (np.tanh(c) + c)) < 1e-3 * c
        return cycle
    shared = xlapy.jit(lambda x: xnp.tanh(x) * 2.0)

    def reshaped(i: int) -> None:
        n = 16 + i
        out = np.asarray(shared(np.full(n, 0.5, np.float32)))
        assert out.shape == (n,) and abs(float(out[0]) - 2 * np.tanh(0.5)) < 1e-5
        if mode == "clear" and i % 100 == 99:
            shared.clear_cache()
    return reshaped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["delete", "clear", "recompile"], default="delete")
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)
    cycle = cycles(args.mode)
    start = time.perf_counter()
    for i in range(args.warmup):
        cycle(i)
    gc.collect()
    base = rss_mib()
    samples = []
    for i in range(args.warmup, args.warmup + args.cycles):
        cycle(i)
        if (i - args.warmup + 1) % max(1, args.cycles // 10) == 0:
            gc.collect()
            samples.append(round(rss_mib() - base, 2))
    gc.collect()
    growth = rss_mib() - base
    result = {"mode": args.mode, "cycles": args.cycles, "warmup": args.warmup,
              "rss_base_mib": round(base, 1), "growth_mib": round(growth, 2),
              "kib_per_cycle": round(growth * 1024 / max(1, args.cycles), 2),
              "samples_mib": samples, "jit_entries": jit_cache.total_entries(),
              "seconds": round(time.perf_counter() - start, 1)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"mode {args.mode}: {args.cycles} cycles after {args.warmup} of warm-up, "
              f"RSS {base:.1f} MiB -> +{growth:.2f} MiB "
              f"({result['kib_per_cycle']} KiB per cycle) in {result['seconds']} s")
        print("growth every tenth of the cycles (MiB):", samples)
        print("jit cache entries held:", result["jit_entries"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
