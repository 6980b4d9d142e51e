"""Keras ``ModelParallel`` across 2 MPI processes (``mpi_keras_distribution_worker.py``):
the same loss curve and weights as one device, each process holding half of the split
weights and optimizer slots."""
from __future__ import annotations

import re

from mpi_launch import launch, require_mpiexec

require_mpiexec()


def test_model_parallel_fit_across_two_processes():
    rc, out, _ = launch("mpi_keras_distribution_worker.py", [], hard_timeout=300)
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    rows = dict((r, (c, int(h), int(t))) for r, c, h, t in re.findall(
        r"RANK (\d) LOSSES ([\d. ]+?) HELD (\d+) OF (\d+)", out))
    assert set(rows) == {"0", "1"} and rows["0"][0] == rows["1"][0], out
    assert all(2 * held == whole for _, held, whole in rows.values()), out
