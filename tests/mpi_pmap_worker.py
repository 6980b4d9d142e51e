"""One process of the multi-process ``pmap`` test, launched by
``tests/test_collectives_mpi.py`` as
``mpiexec -n 2 python mpi_pmap_worker.py``: each process maps over its local devices
(``--xla_force_host_platform_device_count``), the axis spans every device of the run, and
the results must equal the same program computed on the whole global batch."""
from __future__ import annotations

import numpy as np

import xlapy
import xlapy.distributed
import xlapy.errors
import xlapy.numpy as xnp
from xlapy import lax


def main() -> None:
    xlapy.distributed.initialize()
    rank, local = xlapy.process_index(), xlapy.local_device_count()
    n = local * xlapy.process_count()
    mine = slice(rank * local, (rank + 1) * local)
    xs = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    ring = [(k, (k + 1) % n) for k in range(n)]

    def f(v):
        return (lax.psum(v, "i"), lax.all_gather(v, "i"), lax.ppermute(v, "i", ring),
                lax.axis_index("i"))

    total, gathered, shifted, index = xlapy.pmap(f, "i", backend="cpu")(xs[mine])
    np.testing.assert_array_equal(total, np.broadcast_to(xs.sum(0), (local, 3)))
    np.testing.assert_array_equal(gathered, np.broadcast_to(xs, (local, n, 3)))
    np.testing.assert_array_equal(shifted, np.roll(xs, 1, axis=0)[mine])
    np.testing.assert_array_equal(index, np.arange(n)[mine])

    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((n, 4, 3)).astype(np.float32)

    def loss(w, x):
        return xnp.mean(xnp.tanh(x @ w) ** 2)

    step = xlapy.pmap(lambda w, x: lax.pmean(xlapy.grad(loss)(w, x), "i"), "i",
                      in_axes=(None, 0), backend="cpu")
    grads = step(w, x[mine])
    whole = np.asarray(xlapy.grad(loss)(w, x.reshape(n * 4, 3)))
    for g in np.asarray(grads):
        np.testing.assert_allclose(g, whole, rtol=1e-5, atol=1e-6)
    try:            # inside jit the axis would cover this process's slices only: refused
        xlapy.jit(lambda v: xlapy.pmap(f, "i")(v))(xs[mine])
    except xlapy.errors.InvalidArgumentError as e:
        assert "in a run of 2 processes" in str(e), e
    else:
        raise AssertionError("pmap inside jit across processes was not refused")
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
