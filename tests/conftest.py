import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The suite checks the CPU backend's semantics by default, also on a machine with a GPU
# (where "gpu" would be the default backend); the GPU tests name their backend.
os.environ.setdefault("XLAPY_DEFAULT_BACKEND", "cpu")

# Variables the benchmark scripts set for their own process (several tests call their
# ``main``); restored after every test so no later test of the worker inherits them (a
# leaked XLAPY_DISABLE_CACHE turns the disk cache off for the cache tests).
_PROCESS_ENV = ("XLAPY_DISABLE_CACHE", "OMP_WAIT_POLICY", "TF_CPP_MIN_LOG_LEVEL",
                "KERAS_BACKEND")


@pytest.fixture(autouse=True)
def _restore_process_env():
    before = {k: os.environ.get(k) for k in _PROCESS_ENV}
    yield
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    # a torch.compile test hands the CPU runtime's products to PyTorch's BLAS
    # (process_blas.py): later tests of the worker plan theirs on OpenBLAS again
    process_blas = sys.modules.get("xlapy.backends.cpu.process_blas")
    if process_blas is not None:
        process_blas.stop_process_blas()
