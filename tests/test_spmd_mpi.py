"""A tensor-parallel MLP training step partitioned for 2 partitions and run as
``mpiexec -n 2`` (``mpi_spmd_worker.py``): the same loss curve as one device, and each
process holds half the weights."""
from __future__ import annotations

from mpi_launch import launch, require_mpiexec

require_mpiexec()


def test_two_process_tensor_parallel_training_step():
    rc, out, _ = launch("mpi_spmd_worker.py", ["5"])
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    curves = {line.split()[1]: line.split()[3:] for line in out.splitlines()
              if line.startswith("RANK") and "LOSSES" in line}
    assert curves["0"] == curves["1"]
    assert float(curves["0"][-1]) < float(curves["0"][0])       # it trains
    for line in out.splitlines():
        if "WEIGHT_BYTES" in line:
            held, total = int(line.split()[3]), int(line.split()[5])
            assert held * 2 == total, line
