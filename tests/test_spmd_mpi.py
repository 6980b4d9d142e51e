"""A tensor-parallel MLP trained a few steps as ``mpiexec -n 2`` (``mpi_spmd_worker.py``): the
same loss curve as the one-device run (also with the loss computed in ``shard_map``), and
each process holds half the weights and optimizer state; the peak memory of both runs is
measured and printed (peak RSS growth after compiling: about 0.4x of the one-device run's
when run alone, but what compiling leaves in the heap varies with the process's history, so
only the state bytes are asserted)."""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import numpy as np

from mpi_launch import TESTS, launch, require_mpiexec

require_mpiexec()
log = logging.getLogger(__name__)


def _curve(text: str, label: str) -> list[float]:
    m = re.search(label + r" ((?:-?\d+\.\d{7} ?)+)", text)
    assert m, text
    return [float(v) for v in m.group(1).split()]


def test_two_process_tensor_parallel_training():
    steps = "4"
    rc, out, _ = launch("mpi_spmd_worker.py", [steps], hard_timeout=300)
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    one = subprocess.run([sys.executable, str(TESTS / "mpi_spmd_worker.py"), steps, "one"],
                         env=env, cwd=TESTS, capture_output=True, text=True, timeout=300)
    assert one.returncode == 0, one.stdout + one.stderr
    ref = _curve(one.stdout, "ONE LOSSES")
    assert ref[-1] < ref[0]                                          # it trains
    for rank in "01":
        np.testing.assert_allclose(_curve(out, f"RANK {rank} LOSSES"), ref, rtol=2e-5)
        np.testing.assert_allclose(_curve(out, f"RANK {rank} SHARD_MAP_LOSSES"), ref,
                                   rtol=2e-5)
    whole, one_growth = map(int, re.search(r"ONE STATE_BYTES (\d+) RSS_GROWTH (-?\d+)",
                                           one.stdout).groups())
    held = re.findall(r"RANK (\d) STATE_BYTES (\d+) OF (\d+) RSS_GROWTH (-?\d+)", out)
    assert len(held) == 2, out
    report = [f"one device: state {whole} B, peak RSS growth {one_growth} B"]
    for rank, mine, total, growth in held:
        assert int(total) == whole
        assert abs(int(mine) / whole - 0.5) < 0.01, (mine, whole)    # half the state each
        assert int(growth) > 0
        report.append(f"process {rank}: state {mine} B of {total}, peak RSS growth {growth} B")
    print("\n".join(report))
    log.info("%s", "; ".join(report))


def test_two_process_halo_exchange():
    rc, out, _ = launch("mpi_spmd_halo_worker.py", [])
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    assert re.findall(r"RANK \d COLLECTIVES (\S+)", out) == ["collective-permute"] * 2, out
