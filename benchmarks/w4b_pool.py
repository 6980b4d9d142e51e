"""The W4b step (``training.py``) under the CPU pool's options, against JAX, in one process.

Each round times every variant twice: *harness-like* (a 0.25 s pause, 3 untimed calls,
then 3 timed, as ``training.py``'s samples start) and *steady* (20 untimed, 20 timed);
rounds alternate the order, medians are printed with the ratio to JAX. Variants:

- ``default``: the step as configured (f32 products in the packed GEMM on AVX-512 hosts;
  the pool's idle workers' poll adapts to how often the process is preempted,
  ``thread_pool.ThreadPool._update_spin``);
- ``short-poll``: the same executable, the poll fixed at ``thread_pool.SPIN_TICKS``;
- ``openblas``: the step compiled again, its dot plans made under
  ``XLAPY_F32_GEMM=openblas`` (OpenBLAS calls split over the pool);
- ``openblas-threads``: compiled again under ``XLAPY_CPU_OPENBLAS_THREADS=1`` (kept set
  for its calls: one OpenBLAS call threaded on the pool, ``openblas_threads.py``).

``--after-pause`` prints instead the per-call times of the first 10 calls after a 0.25 s
pause (medians over the rounds), xlapy and JAX.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/w4b_pool.py
"""
from __future__ import annotations

import os
import statistics
import time
from typing import Callable, Sequence

import numpy as np

import training
from machine import check_openblas_env, machine_header

W4B = "W4b MLP 784-512-512-10 Adam"
PAUSE_S = 0.25


def variants(args: tuple) -> dict[str, tuple[Callable[[], None], Callable[[], object]]]:
    """``name -> (switch, call)``: ``switch`` sets the options the variant runs under,
    ``call`` runs its xlapy step on ``args``. The dot plans are made on a step's first call
    (under the options then set), so the library variants are steps compiled afresh."""
    from xlapy.backends.cpu import thread_pool
    from xlapy.client.backends import get_backend
    pool = thread_pool.shared_pool()
    env = ("XLAPY_F32_GEMM", "XLAPY_CPU_OPENBLAS_THREADS")

    def with_env(**values: str) -> Callable[[], None]:
        def switch() -> None:
            for name in env:
                os.environ.pop(name, None)
            os.environ.update(values)
            pool.__dict__.pop("_update_spin", None)
        return switch

    def short_poll() -> None:
        with_env()()
        pool._update_spin = lambda: None            # type: ignore[method-assign]
        pool.spin_ticks = thread_pool.SPIN_TICKS

    def compiled(switch: Callable[[], None]) -> Callable[[], object]:
        get_backend("cpu").clear_memory_cache()
        switch()
        call = training.xlapy_impls(W4B, args, "cpu")[0].call
        call()                                       # the plans, made under ``switch``
        with_env()()
        return call
    default = compiled(with_env())
    out = {"default": (with_env(), default), "short-poll": (short_poll, default)}
    for name, switch in (("openblas", with_env(XLAPY_F32_GEMM="openblas")),
                         ("openblas-threads", with_env(XLAPY_CPU_OPENBLAS_THREADS="1"))):
        out[name] = (switch, compiled(switch))
    return out


def timed(f: Callable[[], object], untimed: int, calls: int) -> float:
    """Seconds per call of ``calls`` calls of ``f`` after ``untimed`` ones."""
    for _ in range(untimed):
        f()
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


def after_pause(calls: dict[str, Callable[[], object]], rounds: int) -> None:
    seqs: dict[str, list[list[float]]] = {k: [] for k in calls}
    for _ in range(rounds):
        for name, f in calls.items():
            time.sleep(PAUSE_S)
            seqs[name].append([timed(f, 0, 1) for _ in range(10)])
    print("| calls after a pause | " + " | ".join(str(i + 1) for i in range(10)) + " |")
    print("|---" * 11 + "|")
    for name, v in seqs.items():
        med = np.median(np.array(v), axis=0) * 1e3
        print(f"| {name} ms | " + " | ".join(f"{x:.2f}" for x in med) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=11, help="rounds (default %(default)s)")
    p.add_argument("--after-pause", action="store_true",
                   help="per-call times of the first calls after a pause instead")
    p.add_argument("--smoke", action="store_true", help="a tiny MLP, to check the script")
    args = p.parse_args(argv)
    check_openblas_env(allow=args.smoke)
    h = machine_header(measure_busy=False)
    load = ", ".join(f"{v:.2f}" for v in h["load_average"])
    print(f"# {h['cpu']} (LLVM: {h['llvm_host_cpu']}), {h['cores']} cores; load average "
          f"{load}; {args.repeat} rounds, medians")
    problem = training.WORKLOADS[W4B][1](args.smoke)
    steps = variants(problem)
    switches = {name: switch for name, (switch, _) in steps.items()}
    jax = training.jax_impl(W4B, problem)
    calls = {"xlapy": steps["default"][1]} if args.after_pause else \
        {name: call for name, (_, call) in steps.items()}
    if jax.call is not None:
        calls["jax"] = jax.call
    for f in calls.values():
        timed(f, 10, 1)
    if args.after_pause:
        after_pause(calls, args.repeat)
        return 0
    samples = {mode: {k: [] for k in calls} for mode in ("harness-like", "steady")}
    order = list(calls)
    for r in range(args.repeat):
        for name in order if r % 2 == 0 else order[::-1]:
            switches.get(name, switches["default"])()
            f = calls[name]
            time.sleep(PAUSE_S)
            samples["harness-like"][name].append(timed(f, 3, 3))
            samples["steady"][name].append(timed(f, 17, 20))
    switches["default"]()
    print("| samples | " + " | ".join(calls) + " |")
    print("|---" * (len(calls) + 1) + "|")
    for mode, d in samples.items():
        ref = statistics.median(d["jax"]) if "jax" in d else None
        cells = []
        for v in d.values():
            m = statistics.median(v)
            cells.append(f"{m * 1e3:.2f} ms" + (f" ({m / ref:.2f})" if ref else ""))
        print(f"| {mode} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
