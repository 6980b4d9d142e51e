"""All-reduce across 2 processes: xlapy's compiled all-reduce against raw mpi4py ``Allreduce``
on the same buffers, for f32 arrays of 4 KiB .. 64 MiB. Run under MPI::

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/collectives.py [--max-mib 64] [--reps 20]

Rank 0 prints one row per size: the median time of each, the bus bandwidth
(``bytes * 2 * (n - 1) / n / time``, NCCL's convention) and xlapy / raw MPI. xlapy's time is
``executable.execute`` of a one-all-reduce module on the CPU backend (the all-reduce runs as a
runtime thunk: the group agrees on the op, then ``Iallreduce`` on the buffer). Figures go in
``docs/performance.md``.
"""
from __future__ import annotations

import argparse
import statistics
import time

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


def _median(fn, reps: int, comm) -> float:
    times = []
    for _ in range(reps):
        comm.Barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-mib", type=float, default=64)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    xlapy.distributed.initialize()
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    cpu = get_backend("cpu")
    rows = []
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
        reps = max(3, min(args.reps, int(args.reps * 2 ** 20 / nbytes) or 3))
        raw = _median(lambda: comm.Allreduce(x, out, op=MPI.SUM), reps, comm)
        ours = _median(xlapy_call, reps, comm)
        bus = nbytes * 2 * (size - 1) / size
        rows.append((nbytes, raw, ours, bus / raw / 1e9, bus / ours / 1e9))
        nbytes *= 4
    if rank == 0:
        print(f"all-reduce f32 over {size} processes (median of up to {args.reps} runs)")
        print(f"{'bytes':>10} {'mpi4py us':>10} {'xlapy us':>10} {'mpi GB/s':>9} "
              f"{'xlapy GB/s':>10} {'xlapy/mpi':>9}")
        for nbytes, raw, ours, bw_raw, bw_ours in rows:
            print(f"{nbytes:>10} {raw * 1e6:>10.1f} {ours * 1e6:>10.1f} {bw_raw:>9.2f} "
                  f"{bw_ours:>10.2f} {raw / ours:>9.2f}")


if __name__ == "__main__":
    main()
