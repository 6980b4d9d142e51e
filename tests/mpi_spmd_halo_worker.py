"""One process of the 2-process spatially split convolution + max pool, launched by
``tests/test_spmd_mpi.py`` as ``mpiexec -n 2 python mpi_spmd_halo_worker.py``.

A SAME 3x3 convolution followed by a 3x3/2 max pool, the image rows split over the two
processes: each process holds its rows, runs its partition of the program (the halo rows come
from the other process by ``collective-permute`` over MPI) and checks its rows of the result
against the unpartitioned program run on one device (interpreter)."""
from __future__ import annotations

import sys

import numpy as np

import xlapy
import xlapy.distributed
from xlapy.client.run import run_hlo
from xlapy.client.spmd import shard_array, spmd_partition
from xlapy.hlo.parser import parse_module

TEXT = """HloModule halo

max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}

ENTRY main {
  x = f32[2,11,8,3] parameter(0), sharding={devices=[1,2,1,1]<=[2]}
  k = f32[3,3,3,4] parameter(1), sharding={replicated}
  c = f32[2,11,8,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  t = f32[2,11,8,4] tanh(c)
  m = f32[] constant(-inf)
  ROOT p = f32[2,6,4,4] reduce-window(t, m), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
}
"""


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    xlapy.distributed.initialize()
    rank = xlapy.process_index()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 11, 8, 3)).astype(np.float32)
    k = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    module = parse_module(TEXT)
    part = spmd_partition(module, 2)
    mine = [shard_array(a, s, 2)[rank] for a, s in zip((x, k), part.in_shardings)]
    (out,) = run_hlo(part.module, [mine], backend="cpu")
    ref = run_hlo(module, [x, k], backend="interpreter")[0]
    want = shard_array(ref, part.out_sharding, 2)[rank]
    rows = min(want.shape[1], ref.shape[1] - rank * want.shape[1])
    np.testing.assert_allclose(out[0][:, :rows], want[:, :rows], rtol=1e-5, atol=1e-5)
    kinds = sorted(part.collective_bytes())
    say(f"RANK {rank} COLLECTIVES {','.join(kinds)} ROWS {rows}")
    say(f"OK {rank}")


if __name__ == "__main__":
    main()
