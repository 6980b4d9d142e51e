"""Collectives across processes, and data-parallel training built on them.

**All-reduce bandwidth** (under MPI): xlapy's compiled all-reduce against raw mpi4py
``Allreduce`` on the same buffers, for f32 arrays of 4 KiB .. 64 MiB::

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/collectives.py [--max-mib 64] \
        [--reps 400] [--seconds 0.5]

Rank 0 prints one row per size: the median time of each, the bus bandwidth
(``bytes * 2 * (n - 1) / n / time``, NCCL's convention) and xlapy / raw MPI. xlapy's time is
``executable.execute`` of a one-all-reduce module on the CPU backend (the all-reduce runs as a
runtime thunk on the buffers -- on two processes its own exchange over ``Isend``/``Irecv``
(whole arrays up to 1 MiB, halves beyond), on more ``Iallreduce`` -- with the group's
agreement on the op beside it). Each size takes ``--seconds`` of interleaved samples (at
least 15, at most ``--reps``).

``--breakdown`` adds, per size, where xlapy's time goes (same interleaving): MPI's
``Iallreduce`` polled alone, the communicator's prepared call (``bind_all_reduce``: the
agreement and the data calls on the same buffers) and the whole ``execute``.

**Data-parallel MLP training** (``--mlp``, started without mpiexec): a 784-512-512-10 Keras MLP
trained with Adam (``jit_compile=True``) on random data, the same global batch two ways:
1 process using 2 cores (the compiled step's kernels run on the runtime's thread pool), and
2 processes of 1 core each (this script relaunches itself under ``mpiexec -n 2``; each process
pins itself to one core and trains with ``MultiWorkerMirroredStrategy``: half the batch per
process, gradients all-reduced inside the compiled step)::

    .venv/bin/python benchmarks/collectives.py --mlp [--batch 256] [--steps 40] [--repeats 3]

It prints training examples per second (the best of ``--repeats`` timed ``fit`` runs of
``--steps`` steps, after a warm-up that compiles), and, as the baseline of the scaling, one
process pinned to one core. Figures go in ``docs/performance.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import xlapy
import xlapy.distributed
from xlapy.backends.communicator import Participant, participating
from xlapy.client import get_backend
from xlapy.client.devices import PROCESS
from xlapy.hlo import parse_module

MODULE = """HloModule allreduce_{n}, replica_count={size}
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

ENTRY e {{
  p = f32[{n}] parameter(0)
  ROOT r = f32[{n}] all-reduce(p), replica_groups={{}}, to_apply=add
}}
"""


#: Samples of each implementation at every size, however large: on a shared machine the
#: samples of one size often fall into two clusters (a core taken by another job or not),
#: and the median of a handful then lands in either.
MIN_SAMPLES = 15
#: Seconds of sampling per size (default of ``--seconds``): beyond MIN_SAMPLES, a size takes
#: as many rounds as fit (up to ``--reps``). Below 16 MiB a round costs about a millisecond,
#: and a median of 20 samples of such a call moved by 5-10% from run to run.
SECONDS_PER_SIZE = 0.5


def _medians(fns, reps: int, comm) -> list[float]:
    """The median time of each of ``fns``, their samples interleaved (one of each per
    round, every sample started together on all processes by a barrier), so load from
    other jobs spreads over all of them alike. Every other round runs them in reverse
    order: a call right after another one finds the caches as that one left them (at
    4-16 MiB the first of two all-reduces in a fixed order came out 20-30% faster,
    whichever it was)."""
    times: list[list[float]] = [[] for _ in fns]
    pairs = list(zip(fns, times))
    for k in range(reps):
        for fn, ts in (pairs if k % 2 == 0 else pairs[::-1]):
            comm.Barrier()
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return [statistics.median(ts) for ts in times]


def all_reduce_bandwidth(args: argparse.Namespace) -> None:
    xlapy.distributed.initialize()
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    cpu = get_backend("cpu")
    rows: list = []
    breakdown: list = []
    nbytes = 4096
    while nbytes <= args.max_mib * 2 ** 20:
        n = nbytes // 4
        x = np.full(n, rank + 1, np.float32)
        out = np.empty_like(x)
        exe = cpu.compile(parse_module(MODULE.format(n=n, size=size)))
        me = Participant(rank, 0, size, 1, PROCESS.communicator)

        def xlapy_call():
            with participating(me):
                return exe.execute([x])
        got = xlapy_call()
        assert np.all(got == size * (size + 1) / 2), got[:4]
        del got         # its pooled block is the next call's output, as in a loop
        fns = [lambda: comm.Allreduce(x, out, op=MPI.SUM), xlapy_call]
        if args.breakdown:
            fns += _layers(comm, me, x, out, nbytes)
        start = time.perf_counter()
        for fn in fns:          # untimed: every buffer's pages mapped before the samples
            fn()
        round_seconds = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
        reps = max(MIN_SAMPLES, min(args.reps, int(args.seconds / max(round_seconds, 1e-9))))
        raw, ours, *layers = _medians(fns, reps, comm)
        bus = nbytes * 2 * (size - 1) / size
        rows.append((nbytes, raw, ours, bus / raw / 1e9, bus / ours / 1e9))
        breakdown.append((nbytes, raw, *layers, ours))
        nbytes *= 4
    if rank == 0:
        from machine import busy_text, cpu_model, others_busy
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        print(f"all-reduce f32 over {size} processes (median of {MIN_SAMPLES} to {args.reps} "
              f"interleaved runs, about {args.seconds:g} s per size); CPU: {cpu_model()}; "
              f"load average {load}, other processes keep {busy_text(others_busy())} of "
              f"the cores busy")
        print(f"{'bytes':>10} {'mpi4py us':>10} {'xlapy us':>10} {'mpi GB/s':>9} "
              f"{'xlapy GB/s':>10} {'xlapy/mpi':>9}")
        for nbytes, raw, ours, bw_raw, bw_ours in rows:
            print(f"{nbytes:>10} {raw * 1e6:>10.1f} {ours * 1e6:>10.1f} {bw_raw:>9.2f} "
                  f"{bw_ours:>10.2f} {raw / ours:>9.2f}")
        if args.breakdown:
            print(f"\nbreakdown, us: {'bytes':>10} {'Allreduce':>10} {'Iallreduce':>10} "
                  f"{'prepared':>10} {'execute':>10}")
            for nbytes, *times in breakdown:
                print(f"{'':15}{nbytes:>10} " + " ".join(f"{t * 1e6:>10.1f}" for t in times))


def _layers(comm, me: Participant, x: np.ndarray, out: np.ndarray, nbytes: int) -> list:
    """``--breakdown``'s calls: MPI's ``Iallreduce`` polled alone (no agreement, no
    timeout), and the communicator's prepared all-reduce on the same buffers."""
    from mpi4py import MPI
    from xlapy.backends.communicator import CollectiveCall, signature_of

    def iallreduce() -> None:
        request = comm.Iallreduce(x, out, op=MPI.SUM)
        while not request.Test():
            pass
    call = CollectiveCall(f"all-reduce breakdown {nbytes}", tuple(range(me.replicas)),
                          me.replica, 0, signature_of(f"breakdown {nbytes}", [x]))
    prepared = me.communicator.bind_all_reduce(call, [x], [out], None, "sum", [False])
    sequence = iter(range(1 << 62))
    return [iallreduce, lambda: prepared(next(sequence), [x], [out])]


# ------------------------------------------------------------------ data-parallel training
MLP_SIZES = (784, 512, 512, 10)


def _mlp_examples_per_second(args: argparse.Namespace, strategy) -> float:
    """Train the MLP (in ``strategy``'s scope when given) and return examples/s."""
    from xlapy import keras
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    rows = args.batch * args.steps
    x = rng.normal(size=(rows, MLP_SIZES[0])).astype(np.float32)
    y = rng.integers(0, MLP_SIZES[-1], rows).astype(np.int32)

    def build():
        model = keras.Sequential(
            [keras.layers.Dense(MLP_SIZES[1], activation="relu", input_shape=(MLP_SIZES[0],)),
             keras.layers.Dense(MLP_SIZES[2], activation="relu"),
             keras.layers.Dense(MLP_SIZES[3])])
        model.compile(optimizer="adam", jit_compile=True,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model
    if strategy is None:
        model = build()
    else:
        with strategy.scope():
            model = build()
    model.fit(x[:2 * args.batch], y[:2 * args.batch], batch_size=args.batch, verbose=0,
              shuffle=False)                                    # compiles
    best = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.fit(x, y, batch_size=args.batch, verbose=0, shuffle=False)
        best = min(best, time.perf_counter() - start)
    assert model.train_function.cache_info().misses == 1
    return rows / best


def mlp_worker(args: argparse.Namespace) -> None:
    """A process on one core (before the thread pool exists): under mpiexec, one of the
    2-process run (MultiWorkerMirroredStrategy), else the 1-process, 1-core baseline."""
    import xlapy.tf as tf
    xlapy.distributed.initialize()
    rank = xlapy.process_index()
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[rank % len(cores)]})
    strategy = tf.distribute.MultiWorkerMirroredStrategy() if xlapy.process_count() > 1 \
        else None
    rate = _mlp_examples_per_second(args, strategy)
    if rank == 0:
        print(json.dumps({"examples_per_second": rate}), flush=True)


def _run_worker(args: argparse.Namespace, processes: int) -> float:
    """Examples/s of ``processes`` one-core processes running :func:`mlp_worker`."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--mlp-worker", "--batch",
           str(args.batch), "--steps", str(args.steps), "--repeats", str(args.repeats)]
    if processes > 1:
        cmd = [str(Path(sys.executable).parent / "mpiexec"), "-n", str(processes)] + cmd
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"the {processes}-process run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["examples_per_second"]


def mlp_training(args: argparse.Namespace) -> None:
    from machine import cpu_model
    available = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, set(available[:2]))        # before the thread pool exists
    cores = len(os.sched_getaffinity(0))
    print(f"data-parallel MLP {'-'.join(map(str, MLP_SIZES))}, Adam, jit_compile=True, global "
          f"batch {args.batch}, {args.steps} steps per timed fit, best of {args.repeats}; "
          f"CPU: {cpu_model()} ({len(available)} cores available)")
    one = _mlp_examples_per_second(args, None)
    print(f"  1 process  x {cores} cores : {one:10.0f} examples/s", flush=True)
    single = _run_worker(args, 1)
    print(f"  1 process  x 1 core   : {single:10.0f} examples/s  (baseline of the scaling)",
          flush=True)
    two = _run_worker(args, 2)
    print(f"  2 processes x 1 core  : {two:10.0f} examples/s  ({two / one:.2f}x the first "
          f"row, {two / single:.2f}x one core)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-mib", type=float, default=64)
    ap.add_argument("--reps", type=int, default=400,
                    help="most samples of each implementation per size")
    ap.add_argument("--seconds", type=float, default=SECONDS_PER_SIZE,
                    help="seconds of samples per size (at least %d samples)" % MIN_SAMPLES)
    ap.add_argument("--breakdown", action="store_true",
                    help="also time MPI's Iallreduce alone and the communicator's call")
    ap.add_argument("--mlp", action="store_true", help="data-parallel MLP training throughput")
    ap.add_argument("--mlp-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=256, help="global batch (--mlp)")
    ap.add_argument("--steps", type=int, default=40, help="steps per timed fit (--mlp)")
    ap.add_argument("--repeats", type=int, default=3, help="timed fits, best kept (--mlp)")
    args = ap.parse_args()
    if args.mlp_worker:
        mlp_worker(args)
    elif args.mlp:
        mlp_training(args)
    else:
        all_reduce_bandwidth(args)


if __name__ == "__main__":
    main()
