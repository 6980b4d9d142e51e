"""A tensor-parallel MLP training step partitioned for 2 partitions and run as
``mpiexec -n 2`` (``mpi_spmd_worker.py``): the same loss curve as one device, and each
process holds half the weights."""
from __future__ import annotations

import re

from mpi_launch import launch, require_mpiexec

require_mpiexec()


def test_two_process_tensor_parallel_training_step():
    rc, out, _ = launch("mpi_spmd_worker.py", ["5"])
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    curves = dict(re.findall(r"RANK (\d) LOSSES ((?:\d+\.\d{7} ?){5})", out))
    assert set(curves) == {"0", "1"} and curves["0"] == curves["1"], out
    losses = [float(v) for v in curves["0"].split()]
    assert losses[-1] < losses[0]                                # it trains
    held = re.findall(r"RANK \d WEIGHT_BYTES (\d+) OF (\d+)", out)
    assert len(held) == 2 and all(int(h) * 2 == int(t) for h, t in held), out


def test_two_process_halo_exchange():
    rc, out, _ = launch("mpi_spmd_halo_worker.py", [])
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    assert re.findall(r"RANK \d COLLECTIVES (\S+)", out) == ["collective-permute"] * 2, out
