"""Native ``reduce-window`` kernels (top level, or the root of a loop fusion).

Semantics are XLA's (and the interpreter's): every output element starts from the
init value(s) and folds in the window's elements **in window order** (row-major over the
window dimensions) with the reducer, as the left operand first; window positions in the
padding or in the holes of base (lhs) dilation are skipped. The fold is sequential, so
float sums are bit-for-bit the interpreter's; ``f16``/``bf16`` ``add``/``multiply``
accumulate in ``float`` and round once (the reducer's compute type, see
``reduction_reducers.Reducer``); variadic reducers (argmax-style) are emitted with the
elemental emitter.

Loop structure. Let ``m`` be the output's minor-most physical dimension:

- **vector mode** (``m`` passes through the window: size 1, stride 1, no padding or
  dilation -- the channel dimension of an NHWC pool): for a block of up to
  :data:`VECTOR_BLOCK` positions along ``m``, accumulators live in a stack array, the
  window loops are outside and the loop over the block inside, so LLVM vectorizes it;
- **scalar mode** otherwise: one accumulator per output element, window loops inside;
- **scan mode** (a cumulative reduction: one dimension ``s`` with stride 1, no dilation,
  ``pad_lo = size - 1``, ``pad_hi = 0`` and ``size >= dim``, every other dimension passing
  through -- how ``cumsum``/``cumprod``/``cummax`` lower): output ``i`` along ``s`` folds
  elements ``0..i``, which is the running accumulator of one sequential pass, so the
  kernel is O(n) instead of O(n^2) and gives the same bits. The **reverse** form
  (``pad_lo = 0``, ``pad_hi = size - 1``: output ``i`` folds ``i..n-1``, e.g. the gradient
  of a cumsum) is a scan from the end only for reducers that are exact, associative and
  commutative (integer/boolean ops, ``maximum``/``minimum``), where the order of the fold
  cannot change a bit; a float ``add``/``multiply`` keeps the per-output fold (XLA's order).

Work units: output rows (every output dimension but ``m``, times blocks of ``m`` in
vector mode); in scan mode the rows exclude ``s``. Units write disjoint outputs.
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable, Sequence

from llvmlite import ir

from ...hlo.attrs import Window, WindowDim
from ...hlo.ir import HloInstruction
from .kernel_api import KernelSpec, kernel_buffers
from .kernel_support import (KernelScaffold, PlanKernelEmitter, buffer_aliases, bytes_of, c64,
                             find_hero, has_register_type, major_to_minor)
from .reduction_reducers import Reducer

VECTOR_BLOCK = 256     # accumulators per stack block in vector mode
UNROLL_LIMIT = 4       # window dimensions this small are unrolled in the IR


# ----------------------------------------------------------------------------- geometry
class WindowGeometry:
    """Where window slot ``k`` of output position ``o`` lands in the input, per dimension.

    ``pos = o * stride + k' * rhs_dilate - pad_lo`` with ``k' = size - 1 - k`` for a
    reversed dimension; the slot is valid when ``0 <= pos < (n - 1) * lhs_dilate + 1``
    and ``pos`` is a multiple of ``lhs_dilate``; the input index is ``pos / lhs_dilate``.
    """

    def __init__(self, window: Window, in_dims: Sequence[int], out_dims: Sequence[int]) -> None:
        self.wd: list[WindowDim] = list(window.dims)
        self.in_dims, self.out_dims = list(in_dims), list(out_dims)

    @property
    def rank(self) -> int:
        return len(self.wd)

    @property
    def window_elements(self) -> int:
        return prod(w.size for w in self.wd)

    def passes_through(self, d: int) -> bool:
        """Output index ``o`` along ``d`` reads input index ``o`` only."""
        w = self.wd[d]
        return (w.size == 1 and w.stride == 1 and w.pad_lo == 0 and w.pad_hi == 0
                and w.lhs_dilate == 1 and self.in_dims[d] == self.out_dims[d])

    def checks(self, d: int) -> tuple[bool, bool, bool]:
        """Which validity tests dimension ``d`` needs: (lower bound, upper bound, holes)."""
        w, n, o = self.wd[d], self.in_dims[d], self.out_dims[d]
        dilated = (n - 1) * w.lhs_dilate + 1
        highest = (o - 1) * w.stride + (w.size - 1) * w.rhs_dilate - w.pad_lo
        return w.pad_lo > 0, highest >= dilated, w.lhs_dilate > 1

    def scan_dim(self) -> tuple[int, bool] | None:
        """``(dimension, reverse)`` of a cumulative reduction (see the module docstring)."""
        rest = [d for d in range(self.rank) if not self.passes_through(d)]
        if len(rest) != 1:
            return None
        s = rest[0]
        w, n = self.wd[s], self.in_dims[s]
        if not (w.stride == 1 and w.lhs_dilate == 1 and w.rhs_dilate == 1 and not w.rhs_reversal
                and w.size >= n and self.out_dims[s] == n and n > 1):
            return None
        if (w.pad_lo, w.pad_hi) == (w.size - 1, 0):
            return s, False
        if (w.pad_lo, w.pad_hi) == (0, w.size - 1):
            return s, True
        return None

    def walk(self, sc: KernelScaffold, dims: Sequence[int], out_index: Sequence[ir.Value],
             body: Callable[[dict[int, ir.Value]], None]) -> None:
        """Visit the valid window slots over ``dims`` (ascending: row-major slot order) for
        output position ``out_index``; ``body`` gets ``{dim: input index}``."""
        b = sc.b
        found: dict[int, ir.Value] = {}

        def level(pos: int) -> None:
            if pos == len(dims):
                body(dict(found))
                return
            d = dims[pos]
            w = self.wd[d]

            def at(k: ir.Value) -> None:
                kk = b.sub(c64(w.size - 1), k) if w.rhs_reversal else k
                p = b.sub(b.add(b.mul(out_index[d], c64(w.stride)),
                                b.mul(kk, c64(w.rhs_dilate))), c64(w.pad_lo))
                lower, upper, holes = self.checks(d)
                tests = []
                if lower:
                    tests.append(b.icmp_signed(">=", p, c64(0)))
                if upper:
                    dilated = (self.in_dims[d] - 1) * w.lhs_dilate + 1
                    tests.append(b.icmp_signed("<", p, c64(dilated)))
                if holes:
                    tests.append(b.icmp_unsigned("==", b.urem(p, c64(w.lhs_dilate)), c64(0)))
                index = b.udiv(p, c64(w.lhs_dilate)) if holes else p

                def inner() -> None:
                    found[d] = index
                    level(pos + 1)
                if tests:
                    ok = tests[0]
                    for t in tests[1:]:
                        ok = b.and_(ok, t)
                    with b.if_then(ok):
                        inner()
                else:
                    inner()
            if w.size <= UNROLL_LIMIT:
                for k in range(w.size):
                    at(c64(k))
            else:
                sc.loop(0, w.size, at, f"w{d}")
        level(0)


# ----------------------------------------------------------------------------- plan
def _order_free(reducer: Reducer) -> bool:
    """Whether the reducer's result is the same bits in any fold order."""
    if not reducer.is_fast:
        return False
    et = reducer.element_types[0]
    return reducer.op in ("maximum", "minimum", "and", "or", "xor") or \
        et.is_integral or et.is_pred


class _Plan:
    """What a reduce-window kernel needs to know about its instruction."""

    def __init__(self, instr: HloInstruction, hero: HloInstruction, geometry: WindowGeometry,
                 reducer: Reducer, n: int) -> None:
        self.instr, self.hero, self.geo, self.reducer, self.n = instr, hero, geometry, reducer, n
        out_shape = hero.shape.tuple_shapes[0] if hero.shape.is_tuple else hero.shape
        self.out_dims = list(out_shape.dims)
        found = geometry.scan_dim()
        if found is not None and found[1] and not _order_free(reducer):
            found = None
        self.scan, self.reverse = found if found is not None else (None, False)


def _analyze(instr: HloInstruction, assignment: Any) -> _Plan | None:
    hero = find_hero(instr, ("reduce-window",))
    if hero is None or len(hero.operands) % 2 or not hero.operands:
        return None
    n = len(hero.operands) // 2
    inputs, inits = hero.operands[:n], hero.operands[n:]
    window = hero.attrs.get("window") or Window(())
    in_dims = inputs[0].shape.dims
    outs = hero.shape.tuple_shapes if hero.shape.is_tuple else (hero.shape,)
    if len(outs) != n or len(window.dims) != len(in_dims) or \
            any(x.shape.dims != in_dims for x in inputs) or \
            any(i.shape.rank != 0 for i in inits) or \
            any(not s.is_array or s.dims != outs[0].dims for s in outs):
        return None
    if not all(has_register_type(s) for s in [x.shape for x in inputs] + list(outs)):
        return None
    ets = [x.shape.element_type for x in inputs]
    if [s.element_type for s in outs] != ets or [i.shape.element_type for i in inits] != ets:
        return None
    if not Reducer.supported(hero.to_apply, ets):
        return None
    if buffer_aliases(assignment, instr, kernel_buffers(instr)) != {}:
        return None
    return _Plan(instr, hero, WindowGeometry(window, in_dims, outs[0].dims), Reducer(
        hero.to_apply, ets), n)


# ----------------------------------------------------------------------------- kernel
class _ReduceWindowKernel:
    def __init__(self, module: ir.Module, name: str, plan: _Plan) -> None:
        self.plan = plan
        self.sc = KernelScaffold(module, name, plan.instr, plan.hero)
        self.b = self.sc.b
        self.reducer = plan.reducer
        out0 = self.sc.buffers[self.sc.output_slot(0)].shape
        order = major_to_minor(out0)
        self.order = order
        self.m = order[-1] if order else None
        geo = plan.geo
        if plan.scan is not None:
            self.vector = self.m is not None and self.m != plan.scan
        else:
            self.vector = self.m is not None and geo.passes_through(self.m)
        self.block = min(plan.out_dims[self.m], VECTOR_BLOCK) if self.vector else 1
        self.accs = [self.sc.alloca(t, self.block, f"acc{k}")
                     for k, t in enumerate(self.reducer.acc_types())]

    # -- accumulators
    def _acc_ptr(self, k: int, j: ir.Value) -> ir.Value:
        return self.b.gep(self.accs[k], [j], inbounds=True)

    def _init(self, j: ir.Value) -> None:
        n = self.plan.n
        values = [self.sc.operand(n + k)([]) for k in range(n)]
        for k, v in enumerate(self.reducer.to_acc(self.b, values)):
            self.b.store(v, self._acc_ptr(k, j))

    def _accumulate(self, j: ir.Value, in_index: list) -> None:
        b, n = self.b, self.plan.n
        accs = [b.load(self._acc_ptr(k, j)) for k in range(n)]
        values = self.reducer.to_acc(b, [self.sc.operand(k)(in_index) for k in range(n)])
        for k, v in enumerate(self.reducer.combine(b, accs, values)):
            b.store(v, self._acc_ptr(k, j))

    def _store(self, j: ir.Value, out_index: list) -> None:
        b = self.b
        accs = [b.load(self._acc_ptr(k, j)) for k in range(self.plan.n)]
        for k, v in enumerate(self.reducer.from_acc(b, accs)):
            slot = self.sc.output_slot(k)
            self.sc.store(slot, v, self.sc.element_ptr(slot, out_index))

    # -- structure
    def _block_loop(self, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value, ir.Value], None],
                    name: str) -> None:
        """``for c in [lo, hi): body(c, c - lo)``."""
        self.sc.loop(lo, hi, lambda c: body(c, self.b.sub(c, lo)), name)

    def build(self) -> KernelSpec:
        plan, sc, b = self.plan, self.sc, self.b
        dims = plan.out_dims
        excluded = set()
        if plan.scan is not None:
            excluded.add(plan.scan)
        if self.vector or (plan.scan is None and self.m is not None):
            excluded.add(self.m)
        outer = [d for d in self.order if d not in excluded]
        nblocks = -(-dims[self.m] // self.block) if self.vector else 1
        units = prod(dims[d] for d in outer) * nblocks if prod(dims) else 0
        empty_input = prod(plan.geo.in_dims) == 0

        def unit(u: ir.Value) -> None:
            coords = sc.delinearize(u, [dims[d] for d in outer] + [nblocks])
            index: list = [None] * len(dims)
            for d, v in zip(outer, coords):
                index[d] = v
            if self.vector:
                lo = b.mul(coords[-1], c64(self.block))
                hi = b.select(b.icmp_signed("<", b.add(lo, c64(self.block)), c64(dims[self.m])),
                              b.add(lo, c64(self.block)), c64(dims[self.m]))
            if plan.scan is not None:
                self._scan(index, lo if self.vector else None, hi if self.vector else None)
            elif self.vector:
                self._vector_windows(index, lo, hi, empty_input)
            elif self.m is None:
                self._scalar_window(index, empty_input)
            else:
                def row(o: ir.Value) -> None:
                    index[self.m] = o
                    self._scalar_window(index, empty_input)
                sc.loop(0, dims[self.m], row, "row")

        if units:
            sc.units_loop(unit)
        sc.finish()
        window = plan.geo.window_elements if plan.scan is None else 1
        work = prod(dims) * window * plan.n * (1 if self.reducer.is_fast else 8)
        mode = ("reverse scan" if plan.reverse else "scan") if plan.scan is not None else \
            ("vector" if self.vector else "scalar")
        return KernelSpec(sc.name, plan.instr, sc.buffers, units=units,
                          cost=float(bytes_of(sc.buffers) + 2 * work),
                          notes=[f"reduce-window ({mode} mode) over {prod(dims)} outputs "
                                 f"in {units} units"])

    def _scalar_window(self, index: list, empty_input: bool) -> None:
        zero = c64(0)
        self._init(zero)
        if not empty_input:
            dims = list(range(len(index)))
            self.plan.geo.walk(self.sc, dims, index,
                               lambda found: self._accumulate(zero, [found[d] for d in dims]))
        self._store(zero, index)

    def _vector_windows(self, index: list, lo: ir.Value, hi: ir.Value, empty_input: bool) -> None:
        m = self.m
        self._block_loop(lo, hi, lambda c, j: self._init(j), "init")
        if not empty_input:
            dims = [d for d in range(len(index)) if d != m]

            def slot(found: dict[int, ir.Value]) -> None:
                def lane(c: ir.Value, j: ir.Value) -> None:
                    self._accumulate(j, [c if d == m else found[d] for d in range(len(index))])
                self._block_loop(lo, hi, lane, "lane")
            self.plan.geo.walk(self.sc, dims, index, slot)

        def out(c: ir.Value, j: ir.Value) -> None:
            self._store(j, [c if d == m else index[d] for d in range(len(index))])
        self._block_loop(lo, hi, out, "out")

    def _scan(self, index: list, lo: ir.Value | None, hi: ir.Value | None) -> None:
        """One sequential pass along the scan dimension, storing the running value."""
        s, m = self.plan.scan, self.m
        n_s = self.plan.out_dims[s]

        def step(k: ir.Value) -> None:
            i = self.b.sub(c64(n_s - 1), k) if self.plan.reverse else k
            if lo is None:
                here = [i if d == s else index[d] for d in range(len(index))]
                self._accumulate(c64(0), here)
                self._store(c64(0), here)
                return

            def lane(c: ir.Value, j: ir.Value) -> None:
                here = [i if d == s else (c if d == m else index[d]) for d in range(len(index))]
                self._accumulate(j, here)
                self._store(j, here)
            self._block_loop(lo, hi, lane, "lane")

        if lo is None:
            self._init(c64(0))
        else:
            self._block_loop(lo, hi, lambda c, j: self._init(j), "init")
        self.sc.loop(0, n_s, step, "scan")


class ReduceWindowEmitter(PlanKernelEmitter):
    """A ``KernelEmitter`` for ``reduce-window`` and loop fusions rooted at one."""

    kind = "reduce-window"
    analyze_plan = staticmethod(_analyze)
    kernel_class = _ReduceWindowKernel


__all__ = ["ReduceWindowEmitter", "WindowGeometry", "VECTOR_BLOCK"]
