"""The general (non-symmetric) eigendecomposition: primitive ``eig`` (linalg family).

It lowers, as JAX does on CPU, to one ``lapack_<p>geev_ffi`` custom-call over the batch:
real input gives the eigenvalues as real and imaginary parts (combined here into
complex) and complex eigenvectors; a matrix LAPACK fails on (or with non-finite entries)
gets NaN results. The decomposition has no gradient rule: differentiating it raises.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.ir import HloInstruction
from .core import Array, LoweringContext, bind, primitive
from .primitives_linalg import _info_ok, _lapack, _leading_batch, _nan_unless

I = HloInstruction

eig_p = primitive("eig", multiple_results=True, weak=lambda args, params: False)


@eig_p.def_lowering
def _eig_lower(ctx: LoweringContext, a: I, *, compute_left: bool,
               compute_right: bool) -> list[I]:
    dims = a.shape.dims
    nb, n = len(dims) - 2, dims[-1]
    dt = np.dtype(a.shape.dtype)
    cdt = np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)
    vec = (cdt, dims)
    cfg = {"compute_left": "V" if compute_left else "N",
           "compute_right": "V" if compute_right else "N"}
    b = ctx.b
    if dt.kind == "f":
        wr, wi, vl, vr, info = _lapack(ctx, "geev", [a], [(dt, dims[:nb] + (n,)),
                                                          (dt, dims[:nb] + (n,)), vec, vec,
                                                          (np.int32, dims[:nb])], nb, cfg)
        w = b.add_instruction("complex", [wr, wi])
    else:
        w, vl, vr, info = _lapack(ctx, "geev", [a], [(cdt, dims[:nb] + (n,)), vec, vec,
                                                     (np.int32, dims[:nb])], nb, cfg)
    ok = _info_ok(ctx, info)
    outs = [_nan_unless(ctx, ok, w, nb)]
    if compute_left:
        outs.append(_nan_unless(ctx, ok, vl, nb))
    if compute_right:
        outs.append(_nan_unless(ctx, ok, vr, nb))
    return outs


eig_p.def_batching(_leading_batch(eig_p))


def eig(a: Array, *, compute_left_eigenvectors: bool = False,
        compute_right_eigenvectors: bool = True) -> list[Array]:
    """``[w]``, then ``vl`` and/or ``vr`` as requested: eigenvalues and (unit-norm)
    eigenvectors of square matrices (float32 or complex64), all complex."""
    if a.dtype not in (np.dtype(np.float32), np.dtype(np.complex64)):
        raise InvalidArgumentError(f"eig: LAPACK kernels take float32 or complex64 "
                                   f"matrices, got {a.type_text()}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InvalidArgumentError(f"eig: expected a square matrix (or a batch of them), got "
                                   f"{a.type_text()}")
    return list(bind(eig_p, a, compute_left=bool(compute_left_eigenvectors),
                     compute_right=bool(compute_right_eigenvectors)))
