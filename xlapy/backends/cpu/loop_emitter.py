"""Loop kernels: elementwise / data-movement instructions and loop fusions as LLVM loops.

For an instruction ``instr`` the kernel computes every element of the result by
composing elemental generators (``elemental.ElementalEmitter``): a fusion's fused
computation becomes a tree of generators whose leaves are its **parameters**, which
load from the fusion's operand buffers with layout-aware linearization (the buffer's
``Layout.minor_to_major``). A plain instruction is treated as a one-op fusion.

The **loop nest** walks the (first) output in its layout's physical order, the
minor-most dimension innermost, so stores are unit-stride and LLVM's loop vectorizer
can vectorize the inner loop (loops over dimensions of at most :data:`UNROLL_LIMIT`
elements are unrolled here; LLVM's own unroller is off, see ``jit_engine``). Work
**units** partition the nest: the major dimensions before a *unit dimension* ``j``
times blocks of dimension ``j``, chosen so a unit holds about :data:`UNIT_ELEMENTS`
elements; ``kernel(buffers, begin, end)`` runs units ``[begin, end)``.

Multi-output (tuple-rooted) loop fusions whose outputs share dims are one loop
writing every output (each in its own layout). A root ``bitcast`` that keeps the
element type is looked through: the bytes of a bitcast are its operand's bytes, so
the operand is stored in the operand's layout.

**In place.** When the buffer assignment puts an operand in the output's buffer, the
kernel reads that operand through the output pointer (so LLVM sees one pointer); this
is accepted only when every read of that operand is at the element being written
(elementwise on that operand). A ``dynamic-update-slice`` (top level, or a fusion's
root) whose operand 0 shares the output buffer only writes the update window.
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable

from llvmlite import ir

from ...errors import InvalidArgumentError
from ...hlo.ir import HloComputation, HloInstruction
from ...hlo.shape import Shape
from ...passes.fusion_utils import is_elementwise_on_operand
from .kernel_api import (I64, Generator, KernelBuffer, KernelSpec, buffer_pointer,
                         declare_kernel, kernel_buffers)

UNIT_ELEMENTS = 4096        # elements per work unit (at least, when the output is large)
UNROLL_LIMIT = 4            # loops over a dimension this small are unrolled in the IR

# Rough cost of one element of an op relative to an add (for KernelSpec.cost, which the
# runtime compares with its threshold for splitting a kernel across threads).
_OP_COST = {op: 20 for op in ("exponential", "exponential-minus-one", "log", "log-plus-one",
                               "tanh", "logistic", "sine", "cosine", "tan", "erf", "power",
                               "atan2", "cbrt", "acos", "asin", "atan", "cosh", "sinh")}
_OP_COST.update({"divide": 4, "sqrt": 4, "rsqrt": 4, "remainder": 8})

# Never emitted by this emitter, whatever the elemental emitter supports.
_EXCLUDED = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                       "while", "conditional", "call", "custom-call", "after-all",
                       "dot", "convolution", "rng", "rng-get-and-update-state",
                       "rng-bit-generator", "opt-barrier", "add-dependency"})


def _elemental():
    """The elemental emitter class, or None while ``elemental.py`` is not available."""
    try:
        from .elemental import ElementalEmitter
    except ImportError:
        return None
    return ElementalEmitter


def major_to_minor(shape: Shape) -> list[int]:
    if shape.layout is None or len(shape.layout.minor_to_major) != shape.rank:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


def _strip_bitcasts(value: HloInstruction) -> HloInstruction:
    """Look through root bitcasts that keep the element type (same bytes, other shape)."""
    while value.opcode == "bitcast" and \
            value.operands[0].shape.element_type == value.shape.element_type and \
            value.operands[0].shape.is_array:
        value = value.operands[0]
    return value


def operand_numbers(instr: HloInstruction, buffers: list[KernelBuffer]) -> list[int]:
    """For each operand entry of a kernel buffer table, the operand it belongs to."""
    out: list[int] = []
    n, seen_leaves = 0, 0
    for buf in buffers:
        if buf.role != "operand":
            break
        while seen_leaves >= _num_leaves(instr.operands[n].shape):
            n, seen_leaves = n + 1, 0
        out.append(n)
        seen_leaves += 1
    return out


def _num_leaves(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_num_leaves(s) for s in shape.tuple_shapes)
    return 0 if shape.is_token else 1


class _Analysis:
    """What a kernel for ``instr`` needs: the computation, outputs and buffer aliasing."""

    def __init__(self, instr: HloInstruction, comp: HloComputation | None,
                 outputs: list[HloInstruction], buffers: list[KernelBuffer],
                 aliases: dict[int, int], in_place_dus: bool) -> None:
        self.instr = instr
        self.comp = comp                  # fused computation (None for a plain instruction)
        self.outputs = outputs            # values stored, one per output buffer
        self.buffers = buffers
        self.aliases = aliases            # operand buffer index -> output buffer index
        self.in_place_dus = in_place_dus
        self.num_operand_buffers = sum(1 for b in buffers if b.role == "operand")
        self.stripped = [False] * len(outputs)   # output k looks through root bitcasts
        self.operand_number = operand_numbers(instr, buffers)

    def needed(self) -> list[HloInstruction]:
        """Fused instructions whose generators the kernel calls, operands first.

        For an in-place dynamic-update-slice the update and the start indices are needed,
        not the dynamic-update-slice itself."""
        if self.comp is None:
            return [self.instr]
        wanted = [o for out in self.outputs
                  for o in (out.operands[1:] if self.in_place_dus else [out])]
        seen: set[int] = set()
        order: list[HloInstruction] = []
        for w in wanted:                       # iterative post order (fusions can be deep)
            stack = [(w, False)]
            while stack:
                i, expanded = stack.pop()
                if expanded:
                    order.append(i)
                    continue
                if id(i) in seen:
                    continue
                seen.add(id(i))
                stack.append((i, True))
                if i.opcode != "get-tuple-element":
                    stack.extend((o, False) for o in reversed(i.operands) if id(o) not in seen)
        return order


class LoopEmitter:
    """A ``KernelEmitter`` for loop fusions and elementwise / data-movement instructions.

    ``assignment`` (a ``BufferAssignment``) tells which operand shares the output
    buffer; without it no buffers are assumed to coincide.
    """

    def __init__(self, assignment: Any = None, unit_elements: int = UNIT_ELEMENTS) -> None:
        self.assignment = assignment
        self.unit_elements = unit_elements
        self._analyses: dict[int, _Analysis | None] = {}

    # ----- deciding
    def can_emit(self, instr: HloInstruction) -> bool:
        return self._analyze(instr) is not None

    def _analyze(self, instr: HloInstruction) -> _Analysis | None:
        key = id(instr)
        if key not in self._analyses:
            self._analyses[key] = self._analysis(instr)
        return self._analyses[key]

    def _analysis(self, instr: HloInstruction) -> _Analysis | None:
        em = _elemental()
        if em is None or instr.opcode in _EXCLUDED:
            return None
        if instr.opcode == "fusion":
            if instr.attrs.get("kind") == "kCustom":
                return None
            comp = instr.attrs["calls"]
            root = comp.root
            roots = list(root.operands) if root.opcode == "tuple" else [root]
        else:
            if not instr.shape.is_array or any(not op.shape.is_array for op in instr.operands):
                return None
            comp, roots = None, [instr]
        outputs = [_strip_bitcasts(o) for o in roots]
        if any(not o.shape.is_array for o in outputs) or \
                len({tuple(o.shape.dims) for o in outputs}) != 1:
            return None
        buffers = kernel_buffers(instr)
        if sum(1 for b in buffers if b.role == "output") != len(outputs):
            return None
        aliases = self._aliases(instr, buffers)
        in_place_dus = False
        if aliases:
            if len(outputs) != 1:
                return None
            in_place_dus = self._is_in_place_dus(instr, comp, outputs[0], aliases)
            numbers = operand_numbers(instr, buffers)
            if not in_place_dus and not all(
                    self._elementwise_on(instr, numbers[j], buffers[j]) for j in aliases):
                return None
        a = _Analysis(instr, comp, outputs, buffers, aliases, in_place_dus)
        a.stripped = [o is not r for o, r in zip(outputs, roots)]
        if comp is None:
            return a if (in_place_dus or em.supports(instr)) else None
        if all(self._fusable(i, em) for i in a.needed()):
            return a
        return None

    @staticmethod
    def _fusable(i: HloInstruction, em) -> bool:
        if i.opcode == "parameter":
            return i.shape.is_array
        if i.opcode == "get-tuple-element":
            base = i.operands[0]
            while base.opcode == "get-tuple-element":
                base = base.operands[0]
            return base.opcode == "parameter" and i.shape.is_array
        if i.opcode in _EXCLUDED - {"constant", "bitcast"}:
            return False
        return em.supports(i)

    def _aliases(self, instr: HloInstruction, buffers: list[KernelBuffer]) -> dict[int, int]:
        if self.assignment is None:
            return {}
        slices = [self.assignment.slice(b.instruction, b.index) for b in buffers]
        out = {}
        for j, b in enumerate(buffers):
            if b.role != "operand" or slices[j].size == 0:
                continue
            for k, o in enumerate(buffers):
                if o.role == "output" and slices[k].allocation is slices[j].allocation and \
                        slices[k].offset == slices[j].offset:
                    out[j] = k
        return out

    @staticmethod
    def _elementwise_on(instr: HloInstruction, i: int, buf: KernelBuffer) -> bool:
        if buf.index != ():
            return False
        return is_elementwise_on_operand(instr, i) and \
            buf.shape.dims == instr.shape.dims and buf.shape.layout == instr.shape.layout

    @staticmethod
    def _is_in_place_dus(instr: HloInstruction, comp: HloComputation | None,
                         out: HloInstruction, aliases: dict[int, int]) -> bool:
        """A dynamic-update-slice whose operand 0 (only read there) is the output buffer."""
        if out.opcode != "dynamic-update-slice" or len(aliases) != 1:
            return False
        (j,) = aliases
        # the elements outside the window keep their bytes: operand 0 must be stored in
        # the result's layout
        if out.operands[0].shape.layout != out.shape.layout:
            return False
        if comp is None:
            return j == 0 and out is instr
        base = out.operands[0]
        while base.opcode == "bitcast" and len(base.users) == 1:
            base = base.operands[0]
        return base.opcode == "parameter" and base.parameter_number == j and \
            len(base.users) == 1 and all(p.shape.is_array for p in comp.parameters)

    # ----- emitting
    def emit(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        a = self._analyze(instr)
        if a is None:
            raise InvalidArgumentError(f"the loop emitter cannot emit {instr.name} "
                                       f"({instr.opcode}); ask can_emit first")
        return _KernelBuilder(module, name, a, self.unit_elements).build()


def _linear(b: ir.IRBuilder, index: list, shape: Shape) -> ir.Value:
    """Physical element offset of a logical ``index`` in ``shape``'s layout."""
    order = major_to_minor(shape)
    linear = None
    for d in order:
        if linear is None:
            linear = index[d]
        else:
            linear = b.add(b.mul(linear, ir.Constant(I64, shape.dims[d])), index[d])
    return linear if linear is not None else ir.Constant(I64, 0)


class _KernelBuilder:
    """Builds one kernel function from an analysis."""

    def __init__(self, module: ir.Module, name: str, a: _Analysis, unit_elements: int) -> None:
        from . import llvm_types as lt
        self.lt = lt
        self.module, self.name, self.a = module, name, a
        self.unit_elements = unit_elements
        self.fn, self.b = declare_kernel(module, name)
        em_cls = _elemental()
        self.em = em_cls(self.b, module)

    # -- buffers and generators
    def _pointers(self) -> list[ir.Value]:
        ptrs: list[ir.Value] = []
        for i, buf in enumerate(self.a.buffers):
            ptrs.append(buffer_pointer(self.b, self.fn, i, self.lt.storage_type(
                buf.shape.element_type)))
        for j, k in self.a.aliases.items():
            ptrs[j] = self.b.bitcast(ptrs[k], ptrs[j].type)
        return ptrs

    def _load(self, ptr: ir.Value, shape: Shape) -> Generator:
        b, et = self.b, shape.element_type

        def gen(index: list) -> ir.Value:
            return self.lt.load_element(b, b.gep(ptr, [_linear(b, index, shape)], inbounds=True),
                                        et)
        return gen

    def _memo(self, gen: Generator) -> Generator:
        """Reuse a generated value for the same index within the same basic block."""
        cache: dict[tuple, tuple[Any, ir.Value, list]] = {}
        b = self.b

        def memo(index: list) -> ir.Value:
            key = tuple(id(v) for v in index)
            hit = cache.get(key)
            if hit is not None and hit[0] is b.block:
                return hit[1]
            value = gen(index)
            # the entry keeps the index values alive, so their ids cannot be reused
            cache[key] = (b.block, value, list(index))
            return value
        return memo

    def _generators(self, ptrs: list[ir.Value]) -> dict[int, Generator]:
        """Generators of every value of the fused computation (or of the operands)."""
        a = self.a
        slot = {(a.operand_number[i], buf.index): i for i, buf in enumerate(a.buffers)
                if buf.role == "operand"}
        gens: dict[int, Generator] = {}
        if a.comp is None:
            for n, op in enumerate(a.instr.operands):
                s = slot[(n, ())]
                gens[id(op)] = self._memo(self._load(ptrs[s], a.buffers[s].shape))
            if not a.in_place_dus:
                gens[id(a.instr)] = self._memo(self.em.generator(
                    a.instr, [gens[id(op)] for op in a.instr.operands]))
            return gens
        for i in a.needed():
            if i.opcode in ("parameter", "get-tuple-element"):
                path, base = [], i
                while base.opcode == "get-tuple-element":
                    path.insert(0, base.attrs["index"])
                    base = base.operands[0]
                s = slot[(base.parameter_number, tuple(path))]
                gens[id(i)] = self._memo(self._load(ptrs[s], a.buffers[s].shape))
            else:
                gens[id(i)] = self._memo(self.em.generator(i, [gens[id(o)] for o in i.operands]))
        return gens

    # -- loops
    def _for(self, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value], None],
             name: str) -> None:
        """``for (i = lo; i < hi; ++i) body(i)`` at the builder's position."""
        b = self.b
        pre = b.block
        header = b.append_basic_block(f"{name}.header")
        loop = b.append_basic_block(f"{name}.body")
        exit_ = b.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64, name=name)
        iv.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", iv, hi), loop, exit_)
        b.position_at_end(loop)
        body(iv)
        nxt = b.add(iv, ir.Constant(I64, 1), name=f"{name}.next", flags=["nsw"])
        iv.add_incoming(nxt, b.block)
        b.branch(header)
        b.position_at_end(exit_)

    def build(self) -> KernelSpec:
        a, b = self.a, self.b
        ptrs = self._pointers()
        gens = self._generators(ptrs)
        out_bufs = [(ptrs[a.num_operand_buffers + k], a.buffers[a.num_operand_buffers + k])
                    for k in range(len(a.outputs))]
        if a.in_place_dus:
            units, elements = self._in_place_dus(gens, out_bufs[0][0])
        else:
            space = Shape.array(a.outputs[0].shape.element_type, a.outputs[0].shape.dims,
                                layout=self._store_shape(0).layout)
            stores = []
            for k, out in enumerate(a.outputs):
                ptr, _buf = out_bufs[k]
                stores.append((gens[id(out)], ptr, self._store_shape(k), None))
            units, elements = self._nest(space, stores)
        b.ret_void()
        self._annotate_aliasing(ptrs)
        nbytes = sum(buf.shape.byte_size for buf in a.buffers)
        ops = sum(_OP_COST.get(i.opcode, 1) for i in a.needed())
        return KernelSpec(self.name, a.instr, a.buffers, units=units,
                          cost=float(nbytes + elements * ops),
                          notes=[f"loop over {elements} elements in {units} units"])

    def _annotate_aliasing(self, ptrs: list[ir.Value]) -> None:
        """Tell LLVM that distinct buffers do not overlap (scoped ``noalias`` metadata).

        Every load and store through a buffer pointer gets that buffer's scope and
        ``noalias`` for all other buffers; buffers that share memory (in place) use the
        same pointer and so the same scope. Without this LLVM must guard vectorized
        loops with run-time overlap checks."""
        distinct: list[ir.Value] = []
        for p in ptrs:
            if all(p is not q for q in distinct):
                distinct.append(p)
        if len(distinct) < 2:
            return
        m = self.module
        domain = m.add_metadata([ir.MetaDataString(m, f"{self.name}.buffers")])
        scopes = [m.add_metadata([ir.MetaDataString(m, f"{self.name}.b{i}"), domain])
                  for i in range(len(distinct))]
        own = [m.add_metadata([sc]) for sc in scopes]
        others = [m.add_metadata([o for j, o in enumerate(scopes) if j != i])
                  for i in range(len(scopes))]
        index = {id(p): i for i, p in enumerate(distinct)}
        base_of: dict[int, int | None] = {}

        def base(v: ir.Value) -> int | None:
            key = id(v)
            if key not in base_of:
                found = index.get(key)
                if found is None and isinstance(v, (ir.GEPInstr, ir.CastInstr)):
                    found = base(v.operands[0])
                base_of[key] = found
            return base_of[key]

        for block in self.fn.blocks:
            for ins in block.instructions:
                if isinstance(ins, ir.LoadInstr):
                    k = base(ins.operands[0])
                elif isinstance(ins, ir.StoreInstr):
                    k = base(ins.operands[1])
                else:
                    continue
                if k is not None:
                    ins.set_metadata("alias.scope", own[k])
                    ins.set_metadata("noalias", others[k])

    def _store_shape(self, k: int) -> Shape:
        """The shape output ``k``'s bytes are written in: the output buffer's, or for a
        looked-through root bitcast its operand's (same bytes)."""
        if not self.a.stripped[k]:
            return self.a.buffers[self.a.num_operand_buffers + k].shape
        out = self.a.outputs[k]
        return out.shape if out.shape.layout is not None else out.shape.with_default_layout()

    def _units(self, dims_phys: list[int]) -> tuple[int, int, int]:
        """(unit dim j, block size along j, blocks along j) for a physical nest."""
        rank = len(dims_phys)
        for j in range(rank):
            inner = prod(dims_phys[j + 1:])
            if inner < self.unit_elements or j == rank - 1:
                block = max(1, min(dims_phys[j], -(-self.unit_elements // max(inner, 1))))
                return j, block, -(-dims_phys[j] // block)
        return 0, 1, 1

    def _nest(self, space: Shape, stores: list) -> tuple[int, int]:
        """Emit the unit loop and the loop nest over ``space``; returns (units, elements)."""
        b, fn = self.b, self.fn
        order = major_to_minor(space)
        phys = [space.dims[d] for d in order]
        elements = prod(phys)
        if space.rank == 0:
            self._store_all(stores, [])
            return 1, 1
        if elements == 0:
            return 0, 0
        j, block, nblocks = self._units(phys)
        units = prod(phys[:j]) * nblocks
        c = lambda v: ir.Constant(I64, v)       # noqa: E731

        def unit_body(u: ir.Value) -> None:
            idx_phys: list[ir.Value] = [None] * len(phys)        # type: ignore[list-item]
            outer, blk = (b.sdiv(u, c(nblocks)), b.srem(u, c(nblocks))) if nblocks > 1 \
                else (u, c(0))
            for k in range(j - 1, -1, -1):
                if k == 0:
                    idx_phys[k] = outer
                else:
                    idx_phys[k] = b.srem(outer, c(phys[k]))
                    outer = b.sdiv(outer, c(phys[k]))
            lo = b.mul(blk, c(block))
            hi = b.select(b.icmp_signed("<", b.add(lo, c(block)), c(phys[j])),
                          b.add(lo, c(block)), c(phys[j]))

            def level(k: int, lo_k: ir.Value, hi_k: ir.Value) -> None:
                def body(iv: ir.Value) -> None:
                    idx_phys[k] = iv
                    if k + 1 < len(phys):
                        level(k + 1, c(0), c(phys[k + 1]))
                    else:
                        index = [None] * len(phys)
                        for pos, d in enumerate(order):
                            index[d] = idx_phys[pos]
                        self._store_all(stores, index)
                if k > j and phys[k] <= UNROLL_LIMIT:
                    for t in range(phys[k]):       # tiny constant trip count: unrolled
                        body(c(t))
                else:
                    self._for(lo_k, hi_k, body, f"i{k}")
            level(j, lo, hi)

        self._for(fn.args[1], fn.args[2], unit_body, "unit")
        return units, elements

    def _store_all(self, stores: list, index: list) -> None:
        """Compute and store each output at ``index`` (shifted by the store's offsets)."""
        b = self.b
        for gen, ptr, shape, offsets in stores:
            value = gen(index)
            where = index if offsets is None else [b.add(i, o) for i, o in zip(index, offsets)]
            self.lt.store_element(b, value, b.gep(ptr, [_linear(b, where, shape)],
                                                  inbounds=True), shape.element_type)

    def _in_place_dus(self, gens: dict[int, Generator], out_ptr: ir.Value) -> tuple[int, int]:
        """Write only the update window of a dynamic-update-slice into the shared buffer.

        Start indices are clamped to ``[0, dim - update_dim]`` as XLA specifies.
        """
        b = self.b
        dus = self.a.outputs[0]
        update, starts = dus.operands[1], dus.operands[2:]
        shape = self._store_shape(0)
        offsets = []
        for d, s in enumerate(starts):
            v = gens[id(s)]([])
            et = s.shape.element_type
            if v.type.width < 64:
                v = b.sext(v, I64) if et.is_signed_integral else b.zext(v, I64)
            limit = ir.Constant(I64, shape.dims[d] - update.shape.dims[d])
            if et.is_unsigned_integral and v.type.width == 64:
                # a u64 start above 2^63 reads as negative: it is past the end, clamp high
                v = b.select(b.icmp_signed("<", v, ir.Constant(I64, 0)), limit, v)
            v = b.select(b.icmp_signed("<", v, ir.Constant(I64, 0)), ir.Constant(I64, 0), v)
            v = b.select(b.icmp_signed(">", v, limit), limit, v)
            offsets.append(v)
        space = Shape.array(update.shape.element_type, update.shape.dims, layout=shape.layout)
        return self._nest(space, [(gens[id(update)], out_ptr, shape, offsets)])


__all__ = ["LoopEmitter", "UNIT_ELEMENTS"]
