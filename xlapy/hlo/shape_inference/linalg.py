"""Shape rules of linear algebra: dot, convolution, fft, cholesky, triangular-solve, batch-norm.

``dot`` and ``convolution`` may legally produce a wider element type than their operands
(``preferred_element_type``); their rules take the element type from the declared shape
when there is one.
"""
from __future__ import annotations

from .. import types as T
from ..attrs import ConvDimensionNumbers, Window
from ..shape import Shape
from ..types import ElementType
from . import Ctx, array_shape, check_dims_in_range, complex_component, rule, shape_text
from .reduction import window_output_size


def _fmt(dims) -> str:
    return "{" + ",".join(str(d) for d in dims) + "}"


def _result_type(ctx: Ctx, lhs: Shape, rhs: Shape) -> ElementType:
    """Declared element type if given; else the operands' (the wider one if they differ)."""
    if ctx.declared is not None and ctx.declared.is_array:
        return ctx.declared.element_type
    a, b = lhs.element_type, rhs.element_type
    if a == b:
        return a
    rank = {"pred": 0, "s": 1, "u": 1, "f": 2, "c": 3}
    return max((a, b), key=lambda t: (rank.get(t.kind, 0), t.bits))


@rule("dot")
def dot(ctx: Ctx) -> Shape:
    """Result dims: batch dims, then lhs free dims, then rhs free dims."""
    ctx.check(len(ctx.operands) == 2 or ("sparsity" in ctx.attrs and len(ctx.operands) >= 2),
              f"expects 2 operands, got {len(ctx.operands)}")
    lhs, rhs = ctx.array(0), ctx.array(1)
    lc, rc = ctx.ints("lhs_contracting_dims", ()), ctx.ints("rhs_contracting_dims", ())
    lb, rb = ctx.ints("lhs_batch_dims", ()), ctx.ints("rhs_batch_dims", ())
    for name, given, s in (("lhs_contracting_dims", lc, lhs), ("rhs_contracting_dims", rc, rhs),
                           ("lhs_batch_dims", lb, lhs), ("rhs_batch_dims", rb, rhs)):
        check_dims_in_range(ctx, name, given, s.rank)
    ctx.check(not set(lc) & set(lb), f"lhs_contracting_dims={_fmt(lc)} and lhs_batch_dims="
                                     f"{_fmt(lb)} overlap")
    ctx.check(not set(rc) & set(rb), f"rhs_contracting_dims={_fmt(rc)} and rhs_batch_dims="
                                     f"{_fmt(rb)} overlap")
    ctx.check(len(lc) == len(rc), f"lhs_contracting_dims={_fmt(lc)} and rhs_contracting_dims="
                                  f"{_fmt(rc)} must have the same length")
    ctx.check(len(lb) == len(rb), f"lhs_batch_dims={_fmt(lb)} and rhs_batch_dims={_fmt(rb)} "
                                  "must have the same length")
    for a, b in zip(lc, rc):
        ctx.check(lhs.dims[a] == rhs.dims[b],
                  f"contracting dimension {a} of lhs {shape_text(lhs)} and {b} of rhs "
                  f"{shape_text(rhs)} must have the same size")
    for a, b in zip(lb, rb):
        ctx.check(lhs.dims[a] == rhs.dims[b],
                  f"batch dimension {a} of lhs {shape_text(lhs)} and {b} of rhs "
                  f"{shape_text(rhs)} must have the same size")
    dims = [lhs.dims[d] for d in lb]
    dims += [n for i, n in enumerate(lhs.dims) if i not in lb and i not in lc]
    dims += [n for i, n in enumerate(rhs.dims) if i not in rb and i not in rc]
    return array_shape(_result_type(ctx, lhs, rhs), dims)


@rule("convolution")
def convolution(ctx: Ctx) -> Shape:
    """Output batch = input batch / batch_group_count, feature = kernel output features,
    spatial dims from the window over the input spatial dims."""
    ctx.arity(2)
    lhs, rhs = ctx.array(0), ctx.array(1)
    dn = ctx.required("dim_labels")
    if isinstance(dn, str):
        try:
            dn = ConvDimensionNumbers.from_string(dn)
        except ValueError as e:
            raise ctx.fail(str(e)) from None
    labels = dn.to_text()
    nsp = len(dn.input_spatial)
    ctx.check(lhs.rank == nsp + 2 and rhs.rank == nsp + 2,
              f"lhs {shape_text(lhs)} and kernel {shape_text(rhs)} must have rank {nsp + 2} for "
              f"dim_labels={labels}")
    window = ctx.attr("window", Window())
    ctx.check(len(window.dims) == nsp, f"window {window.to_text()} must have {nsp} dimensions "
                                       f"for dim_labels={labels}")
    fgc = int(ctx.attr("feature_group_count", 1))
    bgc = int(ctx.attr("batch_group_count", 1))
    ctx.check(fgc >= 1 and bgc >= 1, f"feature_group_count={fgc} and batch_group_count={bgc} "
                                     "must be positive")
    ctx.check(fgc == 1 or bgc == 1, f"feature_group_count={fgc} and batch_group_count={bgc} "
                                    "cannot both exceed 1")
    in_batch, in_feat = lhs.dims[dn.input_batch], lhs.dims[dn.input_feature]
    k_in, k_out = rhs.dims[dn.kernel_input_feature], rhs.dims[dn.kernel_output_feature]
    ctx.check(in_feat % fgc == 0 and in_feat // fgc == k_in,
              f"input features {in_feat} of {shape_text(lhs)} divided by feature_group_count="
              f"{fgc} must equal the kernel input features {k_in} of {shape_text(rhs)}")
    ctx.check(k_out % fgc == 0, f"kernel output features {k_out} must be divisible by "
                                f"feature_group_count={fgc}")
    ctx.check(in_batch % bgc == 0, f"input batch {in_batch} must be divisible by "
                                   f"batch_group_count={bgc}")
    ctx.check(k_out % bgc == 0, f"kernel output features {k_out} must be divisible by "
                                f"batch_group_count={bgc}")
    spatial = []
    for i, w in enumerate(window.dims):
        k = rhs.dims[dn.kernel_spatial[i]]
        ctx.check(w.size == k, f"window {window.to_text()} size {w.size} in spatial dimension {i} "
                               f"must equal the kernel's {k} ({shape_text(rhs)})")
        ctx.check(w.stride >= 1 and w.lhs_dilate >= 1 and w.rhs_dilate >= 1,
                  f"window {window.to_text()} needs positive strides and dilations")
        spatial.append(window_output_size(lhs.dims[dn.input_spatial[i]], w.size, w.stride,
                                          w.pad_lo, w.pad_hi, w.lhs_dilate, w.rhs_dilate))
    out = [0] * (nsp + 2)
    out[dn.output_batch] = in_batch // bgc
    out[dn.output_feature] = k_out
    for i, p in enumerate(dn.output_spatial):
        out[p] = spatial[i]
    return array_shape(_result_type(ctx, lhs, rhs), out)


@rule("fft")
def fft(ctx: Ctx) -> Shape:
    """FFT/IFFT keep a complex shape; RFFT makes the last dim n//2+1 complex; IRFFT inverts."""
    ctx.arity(1)
    s = ctx.array(0)
    kind = str(ctx.required("fft_type"))
    length = ctx.ints("fft_length")
    n = len(length)
    ctx.check(1 <= n <= 3, f"fft_length={_fmt(length)} must have 1 to 3 entries")
    ctx.check(s.rank >= n, f"operand {shape_text(s)} has fewer dimensions than fft_length="
                           f"{_fmt(length)}")
    et, tail = s.element_type, list(s.dims[s.rank - n:])
    if kind in ("FFT", "IFFT"):
        ctx.check(et.is_complex, f"{kind} operand {shape_text(s)} must be complex")
        ctx.check(tail == list(length), f"{kind} operand {shape_text(s)} must end in "
                                        f"fft_length={_fmt(length)}")
        return array_shape(et, s.dims)
    if kind == "RFFT":
        ctx.check(et in (T.F32, T.F64), f"RFFT operand {shape_text(s)} must be f32 or f64")
        ctx.check(tail == list(length), f"RFFT operand {shape_text(s)} must end in "
                                        f"fft_length={_fmt(length)}")
        dims = s.dims[:-1] + (length[-1] // 2 + 1,)
        return array_shape(T.C128 if et is T.F64 else T.C64, dims)
    if kind == "IRFFT":
        ctx.check(et.is_complex, f"IRFFT operand {shape_text(s)} must be complex")
        want = list(length[:-1]) + [length[-1] // 2 + 1]
        ctx.check(tail == want, f"IRFFT operand {shape_text(s)} must end in {want} for "
                                f"fft_length={_fmt(length)}")
        return array_shape(complex_component(et), s.dims[:-1] + (length[-1],))
    raise ctx.fail(f"fft_type={kind} is not one of FFT, IFFT, RFFT, IRFFT")


@rule("cholesky")
def cholesky(ctx: Ctx) -> Shape:
    """Batched square matrices of floating or complex type; same shape out."""
    ctx.arity(1)
    a = ctx.array(0)
    ctx.check(a.element_type.is_floating or a.element_type.is_complex,
              f"operand {shape_text(a)} must be floating-point or complex")
    ctx.check(a.rank >= 2 and a.dims[-1] == a.dims[-2],
              f"operand {shape_text(a)} must be a (batch of) square matrices")
    return array_shape(a.element_type, a.dims)


@rule("triangular-solve")
def triangular_solve(ctx: Ctx) -> Shape:
    """Solves ``op(a) x = b`` (left_side) or ``x op(a) = b``; result has b's shape."""
    ctx.arity(2)
    a, b = ctx.array(0), ctx.array(1)
    ctx.check(a.element_type == b.element_type and (a.element_type.is_floating
                                                     or a.element_type.is_complex),
              f"a {shape_text(a)} and b {shape_text(b)} must share a floating or complex type")
    ctx.check(a.rank >= 2 and a.dims[-1] == a.dims[-2],
              f"a {shape_text(a)} must be a (batch of) square matrices")
    ctx.check(b.rank == a.rank and b.dims[:-2] == a.dims[:-2],
              f"a {shape_text(a)} and b {shape_text(b)} must have the same batch dimensions")
    left = bool(ctx.attr("left_side", False))
    m = b.dims[-2] if left else b.dims[-1]
    ctx.check(a.dims[-1] == m, f"a {shape_text(a)} does not fit b {shape_text(b)} with "
                               f"left_side={str(left).lower()}")
    tr = str(ctx.attr("transpose_a", "NO_TRANSPOSE"))
    ctx.check(tr in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"),
              f"transpose_a={tr} is not one of NO_TRANSPOSE, TRANSPOSE, ADJOINT")
    return array_shape(b.element_type, b.dims)


def _batch_norm_common(ctx: Ctx, n: int) -> tuple[Shape, Shape]:
    ctx.arity(n)
    x = ctx.array(0)
    ctx.check(x.element_type.is_floating, f"operand {shape_text(x)} must be floating-point")
    fi = int(ctx.required("feature_index"))
    ctx.check(0 <= fi < x.rank, f"feature_index={fi} is out of range for {shape_text(x)}")
    feature = array_shape(x.element_type, (x.dims[fi],))
    return x, feature


def _check_vectors(ctx: Ctx, x: Shape, feature: Shape, indices, names) -> None:
    for i, name in zip(indices, names):
        s = ctx.array(i)
        ctx.check(s.element_type == x.element_type and s.dims == feature.dims,
                  f"{name} {shape_text(s)} must be {shape_text(feature)} (the feature dimension "
                  f"of {shape_text(x)})")


@rule("batch-norm-training")
def batch_norm_training(ctx: Ctx) -> Shape:
    """``(operand, scale, offset)`` -> ``(normalized, batch_mean, batch_var)``."""
    x, f = _batch_norm_common(ctx, 3)
    _check_vectors(ctx, x, f, (1, 2), ("scale", "offset"))
    return Shape.tuple([array_shape(x.element_type, x.dims), f, f])


@rule("batch-norm-inference")
def batch_norm_inference(ctx: Ctx) -> Shape:
    """``(operand, scale, offset, mean, variance)`` -> normalized operand."""
    x, f = _batch_norm_common(ctx, 5)
    _check_vectors(ctx, x, f, (1, 2, 3, 4), ("scale", "offset", "mean", "variance"))
    return array_shape(x.element_type, x.dims)


@rule("batch-norm-grad")
def batch_norm_grad(ctx: Ctx) -> Shape:
    """``(operand, scale, mean, variance, grad_output)`` -> ``(grad_operand, grad_scale,
    grad_offset)``."""
    x, f = _batch_norm_common(ctx, 5)
    _check_vectors(ctx, x, f, (1, 2, 3), ("scale", "mean", "variance"))
    g = ctx.array(4)
    ctx.check(g.element_type == x.element_type and g.dims == x.dims,
              f"grad_output {shape_text(g)} must have the operand's shape {shape_text(x)}")
    return Shape.tuple([array_shape(x.element_type, x.dims), f, f])
