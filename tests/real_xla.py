"""Run HLO text on the real XLA:CPU through jaxlib (for tests that compare against XLA).

jax and jaxlib are test dependencies (the ``test`` extra), so a missing jax fails.
"""
from __future__ import annotations

import numpy as np


def warm_jax_lapack() -> None:
    """jaxlib fills in its LAPACK function pointers when jax first lowers a linalg op;
    running foreign HLO with LAPACK custom-calls before that calls through null pointers."""
    import jax.numpy as jnp
    for dt in (np.float32, np.complex64):
        e = np.eye(2, dtype=dt)
        jnp.linalg.cholesky(e), jnp.linalg.svd(e), jnp.linalg.eigh(e), jnp.linalg.qr(e)
        jnp.linalg.solve(e, e)


def run_on_xla(text: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """Parse ``text`` with XLA's own HLO parser, compile it for XLA:CPU and run it on
    ``args``; returns the flattened outputs.

    64-bit types are enabled while the arguments are transferred and the module runs (so
    an ``s64``/``f64`` argument keeps its type) and restored afterwards: other tests need
    JAX's default.
    """
    import jax
    import jax.extend.backend as jeb
    from jax._src.lib import xla_client as xc
    if "lapack_" in text:
        warm_jax_lapack()
    was_x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        module = xc.hlo.hlo_module_from_text(text)
        computation = xc.XlaComputation(module.as_serialized_hlo_module_proto())
        mlir = xc._xla.mlir.xla_computation_to_mlir_module(computation)
        backend = jeb.get_backend("cpu")
        exe = backend.compile_and_load(mlir, backend.devices()[:1], xc.CompileOptions())
        return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]
    finally:
        jax.config.update("jax_enable_x64", was_x64)
