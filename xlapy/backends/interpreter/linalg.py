"""Interpreter handlers: linalg (dot, convolution, fft, cholesky, triangular-solve, batch-norm-*).

Numerics follow XLA:CPU: operands are first converted to the result element
type; floating-point dots accumulate at the result precision (f16, bf16 and the
f8 types accumulate in f32 and round once), convolutions accumulate in f64 (or
c128) and round once, integer results wrap modulo 2^bits. ``operand_precision``
and ``algorithm`` do not change CPU results and are ignored.
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...errors import InvalidArgumentError, ShapeError
from ...hlo.attrs import ConvDimensionNumbers, Window, WindowDim
from ...hlo.ir import HloInstruction
from ...hlo.types import ElementType
from .evaluator import Evaluator, describe, handler


# --------------------------------------------------------------------------------------------
# numeric helpers

def wrap_integers(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Integer values (any NumPy int dtype) reduced modulo 2^bits into ``et`` (two's complement)."""
    if et.is_pred:
        return x != 0
    bits = et.bits
    if bits >= 64:
        return x.astype(et.dtype)
    v = x.astype(np.int64) & ((1 << bits) - 1)
    if et.is_signed_integral:
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return v.astype(et.dtype)


def _accumulation_dtype(et: ElementType, wide_floats: bool) -> np.dtype:
    """The NumPy dtype in which products of ``et`` values are summed."""
    if et.is_complex:
        return np.dtype(np.complex128) if wide_floats or et.bits == 128 else np.dtype(np.complex64)
    if et.is_floating:
        if wide_floats or et.bits == 64:
            return np.dtype(np.float64)
        return np.dtype(np.float32)
    if et.is_unsigned_integral and et.bits == 64:
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def _to_result(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Round (floats) or wrap (integers, pred) an accumulated array to ``et``."""
    if et.is_integral or et.is_pred:
        return wrap_integers(x, et)
    return np.asarray(x).astype(et.dtype)


def _as_operand(x: np.ndarray, et: ElementType, acc: np.dtype) -> np.ndarray:
    """Convert an operand to the result type ``et`` (XLA semantics), then to ``acc``."""
    x = np.asarray(x)
    if x.dtype != et.dtype and not (et.is_integral or et.is_pred):
        x = x.astype(et.dtype)
    if et.is_integral or et.is_pred:
        return x.astype(np.int64 if acc != np.uint64 else np.uint64)
    return x.astype(acc)


# --------------------------------------------------------------------------------------------
# dot

def _dims(instr: HloInstruction, name: str) -> tuple[int, ...]:
    return tuple(int(d) for d in instr.attr(name, ()) or ())


@handler("dot")
def _dot(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """dot_general: result dims are batch, lhs free (in order), rhs free (in order)."""
    lhs, rhs = (np.asarray(o) for o in operands)
    lb, lc = _dims(instr, "lhs_batch_dims"), _dims(instr, "lhs_contracting_dims")
    rb, rc = _dims(instr, "rhs_batch_dims"), _dims(instr, "rhs_contracting_dims")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise ShapeError(f"{describe(instr)}: batch/contracting dimension lists differ in length "
                         f"(lhs {lb}/{lc}, rhs {rb}/{rc})")
    for a, b, kind in ((lb, rb, "batch"), (lc, rc, "contracting")):
        for da, db in zip(a, b):
            if lhs.shape[da] != rhs.shape[db]:
                raise ShapeError(f"{describe(instr)}: lhs {kind} dim {da} (size {lhs.shape[da]}) "
                                 f"!= rhs dim {db} (size {rhs.shape[db]})")
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    batch = [lhs.shape[d] for d in lb]
    m = prod(lhs.shape[d] for d in lf)
    n = prod(rhs.shape[d] for d in rf)
    k = prod(lhs.shape[d] for d in lc)
    et = instr.shape.element_type
    acc = _accumulation_dtype(et, wide_floats=False)
    lhs3 = _as_operand(lhs, et, acc).transpose(list(lb) + lf + list(lc)).reshape(prod(batch), m, k)
    rhs3 = _as_operand(rhs, et, acc).transpose(list(rb) + list(rc) + rf).reshape(prod(batch), k, n)
    out = np.matmul(lhs3, rhs3)
    out = out.reshape(batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf])
    return _to_result(out, et)


# --------------------------------------------------------------------------------------------
# convolution

def _dilate(x: np.ndarray, factors: list[int], first_axis: int) -> np.ndarray:
    """Insert ``factor - 1`` zeros between neighbours along axes first_axis, first_axis+1, ..."""
    if all(f == 1 for f in factors):
        return x
    shape = list(x.shape)
    index = [slice(None)] * x.ndim
    for i, f in enumerate(factors):
        ax = first_axis + i
        if f > 1 and shape[ax] > 0:
            shape[ax] = (shape[ax] - 1) * f + 1
            index[ax] = slice(None, None, f)
    out = np.zeros(shape, dtype=x.dtype)
    out[tuple(index)] = x
    return out


def _pad(x: np.ndarray, pads: list[tuple[int, int]], first_axis: int) -> np.ndarray:
    """Edge padding with zeros; negative amounts remove elements."""
    index = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for i, (lo, hi) in enumerate(pads):
        ax = first_axis + i
        size = x.shape[ax]
        start = -lo if lo < 0 else 0
        stop = size + hi if hi < 0 else size
        index[ax] = slice(start, max(start, stop))
        widths[ax] = (max(lo, 0), max(hi, 0))
    x = x[tuple(index)]
    return np.pad(x, widths) if any(w != (0, 0) for w in widths) else x


def convolve(lhs: np.ndarray, rhs: np.ndarray, dn: ConvDimensionNumbers, window: Window,
             feature_group_count: int, batch_group_count: int, et: ElementType,
             where: str = "convolution") -> np.ndarray:
    """XLA ConvGeneralDilated on NumPy arrays; returns the result in ``dn``'s output layout.

    The input is dilated (lhs_dilate) and padded, windows are gathered with strided views
    (stride and rhs_dilate become view steps), and each feature/batch group is one matmul.
    """
    nsp = len(dn.input_spatial)
    wdims = list(window.dims) if window is not None else []
    if not wdims and nsp:
        raise InvalidArgumentError(f"{where}: {nsp} spatial dims but no window")
    if len(wdims) != nsp:
        raise ShapeError(f"{where}: window has {len(wdims)} dims, dim_labels have {nsp} "
                         "spatial dims")
    acc = _accumulation_dtype(et, wide_floats=True)
    x = _as_operand(lhs, et, acc).transpose([dn.input_batch, dn.input_feature, *dn.input_spatial])
    w = _as_operand(rhs, et, acc).transpose(
        [dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial])
    for i, wd in enumerate(wdims):
        if wd.size != w.shape[2 + i]:
            raise ShapeError(f"{where}: window size {wd.size} != kernel spatial dim {i} "
                             f"size {w.shape[2 + i]}")
        if wd.rhs_reversal:
            w = np.flip(w, axis=2 + i)
    x = _dilate(x, [wd.lhs_dilate for wd in wdims], 2)
    x = _pad(x, [(wd.pad_lo, wd.pad_hi) for wd in wdims], 2)

    groups_b, groups_f = batch_group_count, feature_group_count
    n, c = x.shape[:2]
    o, i_per_group = w.shape[:2]
    if n % groups_b or c % groups_f or o % (groups_b * groups_f) or c // groups_f != i_per_group:
        raise ShapeError(f"{where}: input batch {n}, input features {c}, kernel input features "
                         f"{i_per_group}, kernel output features {o} do not fit "
                         f"feature_group_count={groups_f}, batch_group_count={groups_b}")
    nb, o_per_group = n // groups_b, o // (groups_b * groups_f)

    effective = [(wd.size - 1) * wd.rhs_dilate + 1 for wd in wdims]
    padded = list(x.shape[2:])
    out_sp = [(p - e) // wd.stride + 1 if p >= e else 0
              for p, e, wd in zip(padded, effective, wdims)]
    canon = np.zeros((nb, o, *out_sp), dtype=acc)
    if prod(out_sp) and nb and o and i_per_group:
        # views: [N, C, P1..Pn, E1..En] -> positions by stride, window taps by rhs_dilate
        v = sliding_window_view(x, effective, axis=tuple(range(2, 2 + nsp)))
        v = v[(slice(None), slice(None))
              + tuple(slice(None, sz * wd.stride, wd.stride) for sz, wd in zip(out_sp, wdims))
              + tuple(slice(None, None, wd.rhs_dilate) for wd in wdims)]
        ksize = prod(wd.size for wd in wdims)
        cols = prod(out_sp)
        for b in range(groups_b):
            for g in range(groups_f):
                patches = v[b * nb:(b + 1) * nb, g * i_per_group:(g + 1) * i_per_group]
                # -> [Nb, P..., C_g, K...] -> rows (Nb*P), cols (C_g*K)
                perm = [0, *range(2, 2 + nsp), 1, *range(2 + nsp, 2 + 2 * nsp)]
                mat = patches.transpose(perm).reshape(nb * cols, i_per_group * ksize)
                o_lo = (b * groups_f + g) * o_per_group
                kmat = w[o_lo:o_lo + o_per_group].reshape(o_per_group, i_per_group * ksize)
                res = (mat @ kmat.T).reshape(nb, *out_sp, o_per_group)
                canon[:, o_lo:o_lo + o_per_group] = np.moveaxis(res, -1, 1)
    perm = [dn.output_batch, dn.output_feature, *dn.output_spatial]
    return _to_result(canon.transpose(np.argsort(perm)), et)


@handler("convolution")
def _convolution(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    dn = instr.attr("dim_labels")
    if dn is None:
        raise InvalidArgumentError(f"{describe(instr)}: convolution needs dim_labels")
    if isinstance(dn, str):
        dn = ConvDimensionNumbers.from_string(dn)
    window = instr.attr("window") or Window(tuple(WindowDim() for _ in dn.input_spatial))
    out = convolve(operands[0], operands[1], dn, window,
                   int(instr.attr("feature_group_count", 1) or 1),
                   int(instr.attr("batch_group_count", 1) or 1),
                   instr.shape.element_type, where=describe(instr))
    if out.shape != instr.shape.dims:
        raise ShapeError(f"{describe(instr)}: computed result dims {out.shape} do not match the "
                         f"instruction shape {instr.shape}")
    return out


# --------------------------------------------------------------------------------------------
# fft

@handler("fft")
def _fft(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """FFT/IFFT (complex->complex), RFFT (real->complex), IRFFT (complex->real) over the
    trailing ``len(fft_length)`` dimensions."""
    x = np.asarray(operands[0])
    kind = str(instr.attr("fft_type", "FFT")).upper()
    lengths = tuple(int(v) for v in instr.attr("fft_length", ()) or ())
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    out_dtype = instr.shape.dtype
    if not lengths or any(v == 0 for v in lengths) or x.size == 0:
        return np.zeros(instr.shape.dims, dtype=out_dtype)
    out: np.ndarray
    if kind == "FFT":
        out = np.fft.fftn(x, s=lengths, axes=axes)
    elif kind == "IFFT":
        out = np.fft.ifftn(x, s=lengths, axes=axes)
    elif kind == "RFFT":
        out = np.fft.rfftn(np.real(x), s=lengths, axes=axes)
    elif kind == "IRFFT":
        out = np.fft.irfftn(x, s=lengths, axes=axes)
    else:
        raise InvalidArgumentError(f"{describe(instr)}: unknown fft_type {kind!r}")
    out = out.astype(out_dtype)
    if out.shape != instr.shape.dims:
        raise ShapeError(f"{describe(instr)}: fft result dims {out.shape} do not match "
                         f"{instr.shape}")
    return out


# --------------------------------------------------------------------------------------------
# cholesky and triangular-solve

def _lapack_dtype(dtype: np.dtype) -> np.dtype:
    """The LAPACK-supported dtype values of ``dtype`` are computed in."""
    if np.issubdtype(dtype, np.complexfloating):
        return np.dtype(np.complex128) if dtype == np.complex128 else np.dtype(np.complex64)
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _batched_matrices(x: np.ndarray) -> np.ndarray:
    return x.reshape((prod(x.shape[:-2]),) + x.shape[-2:])


@handler("cholesky")
def _cholesky(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    """Cholesky factor from one triangle of ``a`` (``lower``); the other triangle is zero.

    As in XLA's CholeskyExpander, a matrix that is not positive definite gives all NaN.
    """
    a = np.asarray(operands[0])
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{describe(instr)}: cholesky needs square matrices, got {a.shape}")
    lower = bool(instr.attr("lower", False))
    work = _batched_matrices(a.astype(_lapack_dtype(a.dtype)))
    out = np.empty_like(work)
    from scipy.linalg.lapack import get_lapack_funcs   # lazy: scipy.linalg is slow to load
    potrf = get_lapack_funcs("potrf", (work,))
    for i, m in enumerate(work if a.shape[-1] else []):
        c, info = potrf(m, lower=lower, clean=1)
        out[i] = np.nan if info != 0 else c
    return out.reshape(a.shape).astype(instr.shape.dtype)


_TRANSPOSE = {"NO_TRANSPOSE": 0, "TRANSPOSE": 1, "ADJOINT": 2}


def triangular_solve(a: np.ndarray, b: np.ndarray, left_side: bool, lower: bool,
                     unit_diagonal: bool, transpose: int, alpha: Any = 1.0) -> np.ndarray:
    """BLAS trsm over leading batch dims: solve op(a) x = alpha b (left) or x op(a) = alpha b.

    ``transpose`` is 0 (none), 1 (transpose) or 2 (adjoint). Only the ``lower``/upper
    triangle of ``a`` is read; with ``unit_diagonal`` its diagonal is taken as ones.
    """
    dtype = _lapack_dtype(np.result_type(a.dtype, b.dtype))
    if b.size == 0:
        return b.astype(dtype)
    aw = _batched_matrices(a.astype(dtype))
    bw = _batched_matrices(b.astype(dtype))
    from scipy.linalg.blas import get_blas_funcs
    trsm = get_blas_funcs("trsm", (aw, bw))
    out = np.empty_like(bw)
    for i in range(bw.shape[0]):
        out[i] = trsm(alpha, aw[i], bw[i], side=0 if left_side else 1, lower=int(lower),
                      trans_a=transpose, diag=int(unit_diagonal))
    return out.reshape(b.shape)


@handler("triangular-solve")
def _triangular_solve(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    a, b = (np.asarray(o) for o in operands)
    left = bool(instr.attr("left_side", False))
    t = str(instr.attr("transpose_a", "NO_TRANSPOSE")).upper()
    if t not in _TRANSPOSE:
        raise InvalidArgumentError(f"{describe(instr)}: unknown transpose_a {t!r}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.ndim != a.ndim:
        raise ShapeError(f"{describe(instr)}: a must be batched square matrices matching b's "
                         f"rank, got a {a.shape}, b {b.shape}")
    k = b.shape[-2] if left else b.shape[-1]
    if a.shape[-1] != k or a.shape[:-2] != b.shape[:-2]:
        raise ShapeError(f"{describe(instr)}: a {a.shape} does not fit b {b.shape} "
                         f"(left_side={left})")
    out = triangular_solve(a, b, left, bool(instr.attr("lower", False)),
                           bool(instr.attr("unit_diagonal", False)), _TRANSPOSE[t])
    return out.astype(instr.shape.dtype)


# --------------------------------------------------------------------------------------------
# batch normalization (as XLA's BatchNormExpander computes it)

def _feature_view(instr: HloInstruction, x: np.ndarray) -> tuple[int, tuple[int, ...], list[int]]:
    fi = int(instr.attr("feature_index", 0))
    if not 0 <= fi < x.ndim:
        raise InvalidArgumentError(f"{describe(instr)}: feature_index {fi} out of range for "
                                   f"operand of rank {x.ndim}")
    reduce_axes = tuple(d for d in range(x.ndim) if d != fi)
    bshape = [1] * x.ndim
    bshape[fi] = x.shape[fi]
    return fi, reduce_axes, bshape


def _f64(v: Any) -> np.ndarray:
    return np.asarray(v).astype(np.float64)


@handler("batch-norm-training")
def _batch_norm_training(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    """(normalized, batch mean, biased batch variance); var = E[x^2] - E[x]^2."""
    x, scale, offset = (_f64(o) for o in operands)
    fi, axes, bshape = _feature_view(instr, x)
    eps = float(instr.attr("epsilon", 0.0))
    count = max(1, x.size // max(1, x.shape[fi]))
    mean = x.sum(axis=axes) / count
    var = (x * x).sum(axis=axes) / count - mean * mean
    inv = 1.0 / np.sqrt(var + eps)
    out = (x - mean.reshape(bshape)) * inv.reshape(bshape) * scale.reshape(bshape) \
        + offset.reshape(bshape)
    shapes = instr.shape.tuple_shapes
    return (out.astype(shapes[0].dtype), mean.astype(shapes[1].dtype),
            var.astype(shapes[2].dtype))


@handler("batch-norm-inference")
def _batch_norm_inference(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    x, scale, offset, mean, var = (_f64(o) for o in operands)
    _, _, bshape = _feature_view(instr, x)
    eps = float(instr.attr("epsilon", 0.0))
    true_scale = scale / np.sqrt(var + eps)
    true_shift = offset - mean * true_scale
    out = x * true_scale.reshape(bshape) + true_shift.reshape(bshape)
    return out.astype(instr.shape.dtype)


@handler("batch-norm-grad")
def _batch_norm_grad(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    """(grad_operand, grad_scale, grad_offset) for
    y = scale * (x - mean) / sqrt(var + eps) + offset."""
    x, scale, mean, var, dy = (_f64(o) for o in operands)
    fi, axes, bshape = _feature_view(instr, x)
    eps = float(instr.attr("epsilon", 0.0))
    count = max(1, x.size // max(1, x.shape[fi]))
    rsqrt = 1.0 / np.sqrt(var + eps)
    centered = x - mean.reshape(bshape)
    sum_dy = dy.sum(axis=axes)
    sum_dy_centered = (dy * centered).sum(axis=axes)
    grad_scale = sum_dy_centered * rsqrt
    grad_offset = sum_dy
    grad_x = (scale * rsqrt).reshape(bshape) / count * (
        count * dy - sum_dy.reshape(bshape)
        - centered * (sum_dy_centered / (var + eps)).reshape(bshape))
    shapes = instr.shape.tuple_shapes
    return (grad_x.astype(shapes[0].dtype), grad_scale.astype(shapes[1].dtype),
            grad_offset.astype(shapes[2].dtype))
