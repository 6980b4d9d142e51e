"""Which dots the generated small-GEMM kernels compute, and how (``dot_emitter.py``).

:func:`kernel_wanted` answers for a ``dot``, a ``kCustom`` fusion wrapping one, or a
``kOutput`` fusion ``add(dot(a, b), d)`` (the dot's result plus an addend of its shape, or
a broadcast bias, added as the result is stored: XLA's output fusion); it gives a
:class:`DotKernelPlan`
or None. It needs no LLVM, so the fusion pass asks it too (through the CPU pipeline's
:class:`~xlapy.passes.backend_rules.DotOutputFusionRules`) before it forms a ``kOutput``
fusion. ``dot_emitter.py``'s docstring describes the kernels and the shapes they take.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from ...hlo import types as T
from ...hlo.ir import HloInstruction
from ...hlo.shape import Layout, Shape
from .blas import DotDims, dot_dims, supports_dot
from .blas_lib import collapse
from .thunks import element_strides

#: Dots with more multiply-adds than this per matrix of the batch run in OpenBLAS. A batch
#: of products up to this size runs as a kernel whatever its length: its units (row
#: blocks of each matrix) spread over the threads, where the library's batch call or
#: per-matrix calls were slower (docs/performance.md).
MAX_KERNEL_MACS = 1 << 21

# register tiles: outer kernel rows x vectors, inner kernel rows x cols
OUTER_VECTORS = 4
OUTER_ACCUMULATORS = 16
INNER_ROWS, INNER_COLS = 4, 4
#: The inner kernel sums lanes once per output element: below this many vectors of K
#: OpenBLAS was faster (docs/performance.md); an output fusion (no library path) takes
#: it from one vector.
INNER_MIN_VECTORS = 8


def vector_bytes() -> int:
    """The host's vector register size in bytes (64 with AVX-512, else 32)."""
    from .jit_engine import engine
    features = engine().host.features.split(",")
    return 64 if "+avx512f" in features else 32


Strides = tuple[int, int, int]


@dataclass(frozen=True)
class DotKernelPlan:
    """A dot as ``C[b] = A[b] @ B[b] (+ D[b])`` with element strides ``(batch, row, col)``
    per array; ``slot_d`` is None without an addend."""

    instr: HloInstruction          # the top-level instruction (a dot or a fusion)
    slot_a: int                    # buffer-table slots of A and B (after any swap), D
    slot_b: int
    slot_d: int | None
    et: T.ElementType
    batch: int
    m: int
    n: int
    k: int
    sa: Strides
    sb: Strides
    sc: Strides
    sd: Strides
    kind: str                      # "outer" or "inner"
    rows: int                      # rows of C per work unit
    width: int                     # vector width in elements

    @property
    def row_blocks(self) -> int:
        return -(-self.m // self.rows)

    @property
    def units(self) -> int:
        return self.batch * self.row_blocks

    def summary(self) -> str:
        add = " +addend" if self.slot_d is not None else ""
        return f"{self.kind} {self.batch}x{self.m}x{self.n}x{self.k} rows={self.rows}{add}"


def _strides(shape: Shape, groups: list[tuple[int, ...]]) -> Strides | None:
    """Element strides of each group of ``shape``'s dims collapsed into one (0 for a group
    of size <= 1), or None when a group does not collapse."""
    es = element_strides(shape)
    out = []
    for g in groups:
        s = collapse(shape.dims, es, g, 1)
        if s is None:
            return None
        out.append(s.stride or 0)
    return out[0], out[1], out[2]


def output_fusion_parts(instr: HloInstruction) -> tuple[HloInstruction, list[int], int] | None:
    """``(dot, fusion operands of its lhs and rhs, fusion operand of the addend)`` of a
    ``kOutput`` fusion ``add(dot(p_a, p_b), p_d)`` (either operand order), else None."""
    if instr.opcode != "fusion" or instr.attrs.get("kind") != "kOutput":
        return None
    root = instr.attrs["calls"].root
    if root.opcode != "add":
        return None
    dots = [o for o in root.operands if o.opcode == "dot"]
    if len(dots) != 1:
        return None
    dot = dots[0]
    addend = root.operands[1] if root.operands[0] is dot else root.operands[0]
    if addend.opcode == "broadcast":          # a bias: read through the broadcast
        addend = addend.operands[0]
    if not all(o.opcode == "parameter" for o in (*dot.operands, addend)):
        return None
    return dot, [o.parameter_number for o in dot.operands], addend.parameter_number


def _addend_strides(instr: HloInstruction, slot: int,
                    groups: list[tuple[int, ...]]) -> Strides | None:
    """The addend's element strides over the output's (batch, row, col) groups; a
    broadcast addend (a bias) has stride 0 along the dims it is broadcast over."""
    root = instr.attrs["calls"].root
    addend = next(o for o in root.operands if o.opcode != "dot")
    shape = instr.operands[slot].shape
    if addend.opcode != "broadcast":
        return _strides(shape, groups)
    own = element_strides(shape)
    per_dim = [0] * instr.shape.rank
    for j, d in enumerate(addend.attrs.get("dimensions", ())):
        per_dim[d] = own[j]
    out = []
    for g in groups:
        s = collapse(instr.shape.dims, per_dim, g, 1)
        if s is None:
            return None
        out.append(s.stride or 0)
    return out[0], out[1], out[2]


def _one_float_type(dot: HloInstruction) -> bool:
    """An f32 or f64 dot whose operands have its element type (what the kernels take)."""
    et = dot.shape.element_type
    return et in (T.F32, T.F64) and all(o.shape.element_type == et for o in dot.operands)


def _sizes(dot: HloInstruction, d: DotDims) -> tuple[int, int, int, int]:
    """(batch, M, K, N) of ``dot`` with dimension numbers ``d`` (``blas.dot_dims``)."""
    ls, rs = dot.operands[0].shape, dot.operands[1].shape
    return (prod(ls.dims[i] for i in d.lhs_batch), prod(ls.dims[i] for i in d.lhs_free),
            prod(ls.dims[i] for i in d.lhs_contract), prod(rs.dims[i] for i in d.rhs_free))


def _dot_of(instr: HloInstruction) -> tuple[HloInstruction, list[int], int | None] | None:
    fused = output_fusion_parts(instr)
    if fused is not None:
        return fused
    from .plan_builder import library_target
    target = library_target(instr)
    return None if target is None else (target[0], target[1], None)


def kernel_wanted(instr: HloInstruction, width_bytes: int | None = None) -> DotKernelPlan | None:
    """The kernel plan for a dot, a kCustom fusion wrapping one, or a kOutput fusion
    ``add(dot, d)`` that a generated kernel should compute (instead of OpenBLAS, or of the
    interpreter for a fusion), or None (see ``dot_emitter``'s docstring)."""
    target = _dot_of(instr)
    if target is None or target[0].opcode != "dot" or not supports_dot(target[0]):
        return None
    dot, feeds, addend = target
    et = dot.shape.element_type
    if not _one_float_type(dot) or instr.shape.element_type != et or not instr.shape.is_array:
        return None
    d = dot_dims(dot)
    batch, m, k, n = _sizes(dot, d)
    # an output fusion has no library path (it would run in the interpreter): any size
    if (addend is None and m * n * k > MAX_KERNEL_MACS) or batch * m * n == 0:
        return None
    sa = _strides(instr.operands[feeds[0]].shape, [d.lhs_batch, d.lhs_free, d.lhs_contract])
    sb = _strides(instr.operands[feeds[1]].shape, [d.rhs_batch, d.rhs_contract, d.rhs_free])
    nb, nl = len(d.lhs_batch), len(d.lhs_free)
    out_groups = [tuple(range(nb)), tuple(range(nb, nb + nl)),
                  tuple(range(nb + nl, instr.shape.rank))]
    sc = _strides(instr.shape, out_groups)
    sd = _addend_strides(instr, addend, out_groups) if addend is not None else (0, 0, 0)
    if sa is None or sb is None or sc is None or sd is None:
        return None
    width = (width_bytes or vector_bytes()) // et.byte_size
    slot_a, slot_b = feeds[0], feeds[1]

    def unit(s: int, size: int) -> bool:
        return size <= 1 or s == 1

    def plan(kind: str, rows: int) -> DotKernelPlan:
        return DotKernelPlan(instr, slot_a, slot_b, addend, et, batch, m, n, k, sa, sb, sc, sd,
                             kind, rows, width)
    min_k = width * (1 if addend is not None else INNER_MIN_VECTORS)
    inner_fits = unit(sa[2], k) and unit(sb[1], k) and k >= min_k
    # inner: both operands unit-stride along K, unless B is unit-stride along a wide N
    if inner_fits and (n < width or not unit(sb[2], n)):
        return plan("inner", INNER_ROWS)
    # C^T = B^T A^T, stored transposed (an element at a time), when N is shorter than a
    # vector and A^T is unit-stride along M: a few-way layer's weight gradient X^T @ G
    # fills whole vectors along M instead of one partial vector along N
    short_n = n < width <= m and unit(sa[1], m) and not unit(sc[1], m)
    if short_n or (not unit(sc[2], n) and unit(sc[1], m)):      # C^T = B^T A^T
        m, n = n, m
        slot_a, slot_b = slot_b, slot_a
        sa, sb = (sb[0], sb[2], sb[1]), (sa[0], sa[2], sa[1])
        sc, sd = (sc[0], sc[2], sc[1]), (sd[0], sd[2], sd[1])
    if (unit(sc[2], n) or short_n) and unit(sb[2], n):
        vectors = min(OUTER_VECTORS, -(-n // width))
        return plan("outer", max(1, min(m, OUTER_ACCUMULATORS // vectors)))
    if inner_fits:
        return plan("inner", INNER_ROWS)
    return None


class CpuDotOutputFusionRules:
    """The fusion pass's question (a
    :class:`~xlapy.passes.backend_rules.DotOutputFusionRules`): a dot is output-fused into
    its ``add`` when a generated kernel computes it (OpenBLAS writes only the product)."""

    def output_fusible(self, dot: HloInstruction) -> bool:
        return kernel_wanted(dot, 64) is not None


class CpuDotOperandLayouts:
    """Layout assignment's question (a
    :class:`~xlapy.passes.backend_rules.DotOperandLayoutRules`): the right operand of a
    small ``A @ B^T`` product or batch of them (attention's ``q @ k^T``, a layer's input
    gradient ``g @ W^T``: both operands K-minor) whose K is too short for the inner
    kernel's lane sums is wanted with its N dims minor, so the outer kernel computes it;
    layout assignment copies it (a tiled transpose) where it has another layout, instead
    of leaving the product to the library (which is slow at a short K)."""

    def operand_layout(self, dot: HloInstruction, index: int) -> Layout | None:
        if index != 1 or dot.opcode != "dot" or not supports_dot(dot) or \
                not _one_float_type(dot):
            return None
        d = dot_dims(dot)
        if not d.rhs_free or not d.rhs_contract:
            return None
        _, m, k, n = _sizes(dot, d)
        lanes = vector_bytes() // dot.shape.element_type.byte_size
        if m * n * k > MAX_KERNEL_MACS or k >= INNER_MIN_VECTORS * lanes:
            return None
        if max(d.rhs_free) > max(d.rhs_contract):     # row-major B is N-minor already
            return None
        major_to_minor = [*d.rhs_batch, *d.rhs_contract, *d.rhs_free]
        return Layout(tuple(reversed(major_to_minor)))


__all__ = ["DotKernelPlan", "kernel_wanted", "output_fusion_parts", "MAX_KERNEL_MACS",
           "vector_bytes", "CpuDotOutputFusionRules", "CpuDotOperandLayouts", "OUTER_VECTORS",
           "OUTER_ACCUMULATORS", "INNER_ROWS", "INNER_COLS", "INNER_MIN_VECTORS"]
