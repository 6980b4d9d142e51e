"""``tf.distribute.MultiWorkerMirroredStrategy`` across processes: ``mpiexec -n 2`` (the
launcher of the ``mpich`` wheel in the virtual environment) runs
``mpi_tf_distribute_worker.py``. Training data-parallel on 2 processes must give the weights
of one process trained on the global batch; a process that fails or stops mid-step must end
the job with an error within the timeout, never a hang."""
from __future__ import annotations

import numpy as np
import pytest

from mpi_launch import TESTS, launch, require_mpiexec

require_mpiexec()

import tf_distribute_model as tdm  # noqa: E402


def _launch(mode: str, out, timeout: float = 60, devices: int = 1
            ) -> tuple[int, str, float]:
    return launch("mpi_tf_distribute_worker.py", [mode, str(out), str(timeout)], devices,
                  hard_timeout=240)


@pytest.fixture(scope="module")
def reference():
    """One process, one device, the global batch: the weights after ``tdm.STEPS`` steps."""
    return tdm.reference_weights()


def _check_same_weights(out, reference: list) -> None:
    got = np.load(out)
    assert len(got.files) == len(reference)
    for i, want in enumerate(reference):
        np.testing.assert_allclose(got[f"arr_{i}"], want, rtol=1e-5, atol=1e-6)
    # the training moved the weights: equal weights are not the initial ones
    initial = tdm.make_model().get_weights()
    assert max(float(np.abs(w - w0).max()) for w, w0 in zip(reference, initial)) > 1e-2


@pytest.mark.parametrize("mode,devices", [("keras", 1), ("custom", 1),
                                          pytest.param("horovod", 2, marks=pytest.mark.slow)])
def test_data_parallel_training_matches_one_process(mode, devices, reference, tmp_path):
    out = tmp_path / "weights.npz"
    rc, log, _ = _launch(mode, out, devices=devices)
    assert rc == 0, log[-4000:]
    assert "OK 0" in log and "OK 1" in log
    _check_same_weights(out, reference)


def test_a_process_that_raises_mid_step_ends_the_other(tmp_path):
    rc, log, elapsed = _launch("fail", tmp_path / "w.npz", timeout=60)
    assert rc != 0
    assert "process 1 fails in its second step" in log
    assert elapsed < 60, log[-3000:]


def test_a_process_that_stops_mid_step_times_out_naming_the_collective(tmp_path):
    rc, log, elapsed = _launch("hang", tmp_path / "w.npz", timeout=3)
    assert rc != 0
    assert "all-reduce %replica-all-reduce.1 on process 0: timed out after 3 s" in log, \
        log[-3000:]
    assert elapsed < 60


def test_a_process_that_exits_mid_step_ends_the_job(tmp_path):
    rc, log, elapsed = _launch("exit", tmp_path / "w.npz", timeout=5)
    assert rc != 0
    assert "all-reduce %replica-all-reduce.1 on process 0: timed out after 5 s" in log, \
        log[-3000:]
    assert elapsed < 60


def test_distributed_mnist_example_under_mpiexec():
    rc, log, _ = launch(str(TESTS.parent / "examples" / "distributed_mnist.py"),
                        ["--epochs", "1"], hard_timeout=240)
    assert rc == 0, log[-4000:]
    assert "MultiWorkerMirroredStrategy: 2 replicas (2 process(es) x 1 device(s))" in log
    assert "train step compiles: 1" in log and "replicas' weights identical" in log


@pytest.mark.slow
def test_training_benchmark_runs():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, str(TESTS.parent / "benchmarks" / "collectives.py"),
                           "--mlp", "--batch", "16", "--steps", "2", "--repeats", "1"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for row in ("1 process  x 2 cores", "1 process  x 1 core", "2 processes x 1 core"):
        assert row in proc.stdout, proc.stdout
