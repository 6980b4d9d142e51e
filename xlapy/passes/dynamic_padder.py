"""DynamicPadder ("dynamic-padder"): lower bounded dynamic dimensions to static ones, as
XLA's ``DynamicPadder`` does.

A dimension ``<=N`` holds at most ``N`` elements; ``set-dimension-size(x, n)`` gives it
its run-time size ``n`` and ``get-dimension-size`` reads it. This pass computes, for every
array value, an ``s32[]`` instruction holding the size of each dynamic dimension (XLA's
``DynamicDimensionInference``, written here as a forward data-flow walk), then makes the
program static: every value is kept at its bound (the elements past the size, the
*padding*, hold unspecified values) and the ops whose result the padding could change
are rewritten so it cannot:

- ``reduce`` over a dynamic dimension: each input is first masked with its init value
  (``select(iota < size, x, init)``), so padding adds nothing to sums, maxima, argmaxes;
- ``dot`` contracting a dynamic dimension: both operands are masked with zeros there;
- ``scatter`` whose updates have a dynamic scatter dimension: the indices past the size
  are replaced by an out-of-bounds index, so those updates are dropped (XLA skips
  out-of-bounds scatter updates);
- ``get-dimension-size`` becomes the tracked size (a constant for a static dimension),
  ``set-dimension-size`` its operand.

Sizes flow through elementwise ops, ``broadcast``, ``transpose``, ``reshape`` that keeps
the dimension whole, ``reduce`` (kept dimensions), ``dot`` (batch and free dimensions),
``gather`` (batch dimensions from the indices, whole slices of the operand),
``scatter``, ``slice``/``pad``/``concatenate``/``reverse``/``sort`` along other
dimensions, tuples. An op that would need a size it cannot carry (a dynamic value
entering a loop, a window or a partial slice over a dynamic dimension, ...) is an
``UnimplementedError`` naming it. An entry parameter declared ``<=N`` has no run-time
size here: it is read as static at its bound.

Needs: nothing (runs first, on any module; a module without dynamic shapes is left
unchanged). Guarantees: no dynamic shape, ``set-dimension-size`` or
``get-dimension-size`` is left; results agree with the dynamic program on every element
within the sizes.
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import UnimplementedError
from ..hlo.ir import HloComputation, HloInstruction, HloModule
from ..hlo.opcodes import OPCODES
from ..hlo.shape import Shape
from ..hlo.types import PRED, S32
from .base import HloPass
from .context import PassContext
from .hlo_utils import (add_constant, add_instruction, array_shape, non_fusion_computations,
                        sort_instructions)

Sizes = dict[int, HloInstruction]          # dimension -> s32[] size of a dynamic dimension

# Ops whose result has no run-time sizes and ignores its operands' padding.
_SIZELESS = frozenset({"parameter", "constant", "iota", "rng", "rng-bit-generator",
                       "rng-get-and-update-state", "after-all", "replica-id", "partition-id",
                       "get-dimension-size"})


def is_dynamic(module: HloModule) -> bool:
    """Whether ``module`` has a dynamic shape or a dimension-size op."""
    return any(i.shape.is_dynamic or i.opcode in ("set-dimension-size", "get-dimension-size")
               for c in module.computations for i in c.instructions)


def _static(shape: Shape) -> Shape:
    if shape.is_tuple:
        return Shape.tuple([_static(s) for s in shape.tuple_shapes])
    if not shape.is_array or not any(shape.dynamic):
        return shape
    return Shape(shape.element_type, shape.dims, (False,) * len(shape.dims), shape.layout)


class DynamicPadder(HloPass):
    """XLA's ``DynamicPadder`` (see the module docstring)."""

    name = "dynamic-padder"

    def run(self, module: HloModule, ctx: PassContext | None = None) -> bool:
        if not is_dynamic(module):
            return False
        for comp in non_fusion_computations(module):
            _Padder(comp).run()
        for comp in module.computations:
            for instr in comp.instructions:
                instr.shape = _static(instr.shape)
        layout = module.attributes.get("entry_computation_layout")
        if layout is not None and hasattr(layout, "parameters"):
            layout.parameters[:] = [_static(s) for s in layout.parameters]
            layout.result = _static(layout.result)
        return True


class _Padder:
    """Tracks the sizes of one computation and rewrites its padding-sensitive ops."""

    def __init__(self, comp: HloComputation) -> None:
        self.comp = comp
        self.sizes: dict[tuple[int, tuple[int, ...]], Sizes] = {}
        self.replace: list[tuple[HloInstruction, HloInstruction]] = []

    def of(self, instr: HloInstruction, index: tuple[int, ...] = ()) -> Sizes:
        return self.sizes.get((id(instr), index), {})

    def run(self) -> None:
        for instr in list(self.comp.post_order()):
            self.visit(instr)
        for old, new in self.replace:
            old.replace_all_uses_with(new)
            if self.comp.root is old:
                self.comp.root = new
        for old, _ in self.replace:
            if not old.users and old is not self.comp.root:
                self.comp.remove_instruction(old)
        sort_instructions(self.comp)

    # ----- helpers
    def unsupported(self, instr: HloInstruction, what: str) -> UnimplementedError:
        return UnimplementedError(f"dynamic-padder: {what} in %{instr.name} ({instr.opcode}) "
                                  f"of computation {self.comp.name} is not supported")

    def const(self, value: Any, et: Any, like: HloInstruction) -> HloInstruction:
        return add_constant(self.comp, value, Shape.array(et, ()))

    def mask(self, x: HloInstruction, dim: int, size: HloInstruction,
             fill: HloInstruction) -> HloInstruction:
        """``select(iota(dim) < size, x, broadcast(fill))`` over ``x``'s dims."""
        c = self.comp
        idx_shape = array_shape(x.shape, S32)
        iota = add_instruction(c, "iota", idx_shape, [], {"iota_dimension": dim}, like=x)
        bound = add_instruction(c, "broadcast", idx_shape, [size], {"dimensions": ()}, like=x)
        keep = add_instruction(c, "compare", array_shape(x.shape, PRED), [iota, bound],
                               {"direction": "LT"}, like=x)
        filled = add_instruction(c, "broadcast", array_shape(x.shape), [fill],
                                 {"dimensions": ()}, like=x)
        return add_instruction(c, "select", array_shape(x.shape), [keep, x, filled], like=x)

    def put(self, instr: HloInstruction, sizes: Sizes, index: tuple[int, ...] = ()) -> None:
        if sizes:
            self.sizes[(id(instr), index)] = dict(sizes)

    # ----- the walk
    def visit(self, instr: HloInstruction) -> None:
        op = instr.opcode
        handler = getattr(self, "_" + op.replace("-", "_"), None)
        if handler is not None:
            handler(instr)
            return
        if op in _SIZELESS:
            return
        info = OPCODES.get(op)
        if info is not None and info.elementwise:
            merged: Sizes = {}
            for o in instr.operands:
                if o.shape.is_array and o.shape.rank == instr.shape.rank:
                    merged.update(self.of(o))
            self.put(instr, merged)
            return
        if any(self.of(o) for o in instr.operands) or any(
                self.sizes.get((id(o), (k,))) for o in instr.operands
                for k in range(len(o.shape.tuple_shapes))):
            raise self.unsupported(instr, "a dynamic dimension reaching this op")

    def _set_dimension_size(self, instr: HloInstruction) -> None:
        x, size = instr.operands
        sizes = dict(self.of(x))
        sizes[instr.attrs["dimensions"][0]] = size
        self.put(instr, sizes)
        self.replace.append((instr, x))

    def _get_dimension_size(self, instr: HloInstruction) -> None:
        x = instr.operands[0]
        d = instr.attrs["dimensions"][0]
        size = self.of(x).get(d)
        if size is None:
            size = self.const(x.shape.dims[d], S32, instr)
        self.replace.append((instr, size))

    def _broadcast(self, instr: HloInstruction) -> None:
        src = self.of(instr.operands[0])
        dims = instr.attrs.get("dimensions", ())
        self.put(instr, {dims[i]: s for i, s in src.items()})

    def _transpose(self, instr: HloInstruction) -> None:
        src = self.of(instr.operands[0])
        perm = instr.attrs["dimensions"]
        self.put(instr, {j: src[p] for j, p in enumerate(perm) if p in src})

    def _reshape(self, instr: HloInstruction) -> None:
        x = instr.operands[0]
        src = self.of(x)
        out: Sizes = {}
        ind, outd = x.shape.dims, instr.shape.dims
        for i, s in src.items():
            before = prod(ind[:i])
            match = [j for j in range(len(outd))
                     if prod(outd[:j]) == before and outd[j] == ind[i]]
            if not match:
                raise self.unsupported(instr, f"a reshape merging or splitting dynamic "
                                              f"dimension {i}")
            out[match[0]] = s
        self.put(instr, out)

    _bitcast = _reshape

    def _copy(self, instr: HloInstruction) -> None:
        self.put(instr, self.of(instr.operands[0]))

    def _reduce(self, instr: HloInstruction) -> None:
        n = len(instr.operands) // 2
        inputs, inits = instr.operands[:n], instr.operands[n:]
        reduced = set(instr.attrs["dimensions"])
        src: Sizes = {}
        for x in inputs:
            src.update(self.of(x))
        for d in sorted(reduced & set(src)):
            for k in range(n):
                masked = self.mask(instr.operands[k], d, src[d], inits[k])
                instr.replace_operand(k, masked)
        kept = [d for d in range(inputs[0].shape.rank) if d not in reduced]
        out = {j: src[d] for j, d in enumerate(kept) if d in src}
        if instr.shape.is_tuple:
            for k in range(n):
                self.put(instr, out, (k,))
        else:
            self.put(instr, out)

    def _dot(self, instr: HloInstruction) -> None:
        lhs, rhs = instr.operands
        a = instr.attrs
        lb, lc = list(a.get("lhs_batch_dims", ())), list(a.get("lhs_contracting_dims", ()))
        rb, rc = list(a.get("rhs_batch_dims", ())), list(a.get("rhs_contracting_dims", ()))
        ls, rs = self.of(lhs), self.of(rhs)
        for dl, dr in zip(lc, rc):
            size = ls.get(dl, rs.get(dr))
            if size is None:
                continue
            zero_l = self.const(0, lhs.shape.element_type, instr)
            zero_r = self.const(0, rhs.shape.element_type, instr)
            instr.replace_operand(0, self.mask(instr.operands[0], dl, size, zero_l))
            instr.replace_operand(1, self.mask(instr.operands[1], dr, size, zero_r))
        lfree = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
        rfree = [d for d in range(rhs.shape.rank) if d not in rb and d not in rc]
        out: Sizes = {}
        for j, (dl, dr) in enumerate(zip(lb, rb)):
            size = ls.get(dl, rs.get(dr))
            if size is not None:
                out[j] = size
        for j, d in enumerate(lfree, start=len(lb)):
            if d in ls:
                out[j] = ls[d]
        for j, d in enumerate(rfree, start=len(lb) + len(lfree)):
            if d in rs:
                out[j] = rs[d]
        self.put(instr, out)

    def _gather(self, instr: HloInstruction) -> None:
        operand, indices = instr.operands
        a = instr.attrs
        offset = list(a.get("offset_dims", ()))
        collapsed = set(a.get("collapsed_slice_dims", ())) | set(a.get("operand_batching_dims",
                                                                         ()))
        ivd = a.get("index_vector_dim", indices.shape.rank)
        slice_sizes = a.get("slice_sizes", ())
        out: Sizes = {}
        for d, s in self.of(operand).items():
            if d in collapsed or slice_sizes[d] != operand.shape.dims[d]:
                raise self.unsupported(instr, f"a gather slicing dynamic operand dimension {d}")
            window = [k for k in range(operand.shape.rank) if k not in collapsed]
            out[offset[window.index(d)]] = s
        batch_in = [d for d in range(indices.shape.rank) if d != ivd]
        batch_out = [d for d in range(instr.shape.rank) if d not in offset]
        for d, s in self.of(indices).items():
            if d == ivd:
                raise self.unsupported(instr, "a dynamic index vector dimension")
            out[batch_out[batch_in.index(d)]] = s
        self.put(instr, out)

    def _scatter(self, instr: HloInstruction) -> None:
        n = (len(instr.operands) - 1) // 2
        operands, indices, updates = instr.operands[:n], instr.operands[n], instr.operands[n + 1:]
        a = instr.attrs
        window = set(a.get("update_window_dims", ()))
        ivd = a.get("index_vector_dim", indices.shape.rank)
        scatter_dims = [d for d in range(updates[0].shape.rank) if d not in window]
        batch_in = [d for d in range(indices.shape.rank) if d != ivd]
        dyn: Sizes = dict(self.of(indices))
        dyn.pop(ivd, None)
        for u in updates:
            for d, s in self.of(u).items():
                if d in window:
                    raise self.unsupported(instr, f"a dynamic update window dimension {d}")
                dyn.setdefault(batch_in[scatter_dims.index(d)], s)
        for d, s in sorted(dyn.items()):
            et = indices.shape.element_type
            far = self.const(np.iinfo(et.dtype).max, et, instr)
            instr.replace_operand(n, self.mask(instr.operands[n], d, s, far))
        out: Sizes = {}
        for o in operands:
            out.update(self.of(o))
        for k in range(n):
            self.put(instr, out, (k,) if instr.shape.is_tuple else ())

    def _same_dims(self, instr: HloInstruction, along: set[int], what: str,
                   operands: list[HloInstruction] | None = None) -> Sizes:
        """Sizes of ``instr``'s operands, which must not be dynamic along ``along``."""
        out: Sizes = {}
        for o in instr.operands if operands is None else operands:
            out.update(self.of(o))
        bad = along & set(out)
        if bad:
            raise self.unsupported(instr, f"{what} along dynamic dimension {min(bad)}")
        return out

    def _slice(self, instr: HloInstruction) -> None:
        x = instr.operands[0]
        full = {d for d, (lo, hi, st) in enumerate(instr.attrs["slice"])
                if lo == 0 and hi == x.shape.dims[d] and st == 1}
        along = set(range(x.shape.rank)) - full
        self.put(instr, self._same_dims(instr, along, "a partial slice"))

    def _pad(self, instr: HloInstruction) -> None:
        cfg = instr.attrs["padding"]
        along = {d for d, p in enumerate(cfg) if tuple(p) != (0, 0, 0)}
        self.put(instr, self._same_dims(instr, along, "padding", instr.operands[:1]))

    def _concatenate(self, instr: HloInstruction) -> None:
        d = instr.attrs["dimensions"][0]
        self.put(instr, self._same_dims(instr, {d}, "a concatenation"))

    def _reverse(self, instr: HloInstruction) -> None:
        self.put(instr, self._same_dims(instr, set(instr.attrs["dimensions"]), "a reverse"))

    def _sort(self, instr: HloInstruction) -> None:
        sizes = self._same_dims(instr, set(instr.attrs["dimensions"]), "a sort")
        if instr.shape.is_tuple:
            for k in range(len(instr.shape.tuple_shapes)):
                self.put(instr, sizes, (k,))
        else:
            self.put(instr, sizes)

    def _dynamic_slice(self, instr: HloInstruction) -> None:
        x = instr.operands[0]
        sizes = instr.attrs["dynamic_slice_sizes"]
        along = {d for d in range(x.shape.rank) if sizes[d] != x.shape.dims[d]}
        self.put(instr, self._same_dims(instr, along, "a dynamic slice", [x]))

    def _dynamic_update_slice(self, instr: HloInstruction) -> None:
        x, u = instr.operands[:2]
        along = {d for d in range(x.shape.rank) if u.shape.dims[d] != x.shape.dims[d]}
        self.put(instr, self._same_dims(instr, along, "a dynamic update", [x, u]))

    def _tuple(self, instr: HloInstruction) -> None:
        for k, o in enumerate(instr.operands):
            self.put(instr, self.of(o), (k,))

    def _get_tuple_element(self, instr: HloInstruction) -> None:
        self.put(instr, self.of(instr.operands[0], (instr.attrs["index"],)))


__all__ = ["DynamicPadder", "is_dynamic"]
