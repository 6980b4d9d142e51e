"""The generated entry function of an ahead-of-time object, in LLVM IR.

``int <name>_run(const void* const* args, void* const* results, void* temp)`` runs the
plan that ``lowering.py`` built, on the calling thread (and, with ``threads > 1``, the
workers of ``runtime.py``'s pool for kernels of at least ``parallel_cost``):

- **checks first**: a null ``args``/``results`` array, a null or misaligned (element
  alignment) argument or result pointer, and a null or not 64-byte-aligned ``temp`` when
  the arena is not empty return a non-zero code before any byte is touched;
  ``<name>_error_message(code)`` says which;
- **buffers**: every allocation of the buffer assignment gets a base address: an entry
  parameter's is its argument pointer (a parameter the program may overwrite, because an
  output aliases it, is copied into the arena first: ``args`` are read-only); a result
  leaf that is alone in its output allocation is written straight into its result
  buffer; constants are private globals holding their bytes in their layouts; every
  other allocation (temps, other outputs) sits at a fixed 64-aligned offset of ``temp``,
  followed by the kernels' scratch (``blas_kernels.py``), one slice per thread;
- **steps**: a kernel thunk becomes a call ``kernel(table, 0, units)`` with its buffer
  table filled on the stack; copies become ``memmove``; ``while``, ``conditional`` and
  ``call`` become loops, a switch and inline sub-plans with the same copies in and out as
  the JIT runtime's thunks (``thunks.py``);
- at the end, result leaves that live elsewhere (a parameter, a constant, a repeated
  leaf, a shared allocation) are copied into their result buffers.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..backends.cpu.executable import value_ref
from ..backends.cpu.kernel_api import KERNEL_TYPE, indexed_leaves
from ..backends.cpu.plan_builder import materialize_constants
from ..backends.cpu.thunks import (BufferRef, CallThunk, ConditionalThunk, KernelThunk,
                                   Memory, Plan, WhileThunk, aligned_empty,
                                   leaves, major_to_minor)
from ..errors import UnimplementedError
from ..hlo.shape import Shape
from ..passes.buffer_assignment import CONSTANT, OUTPUT, PARAMETER, TEMP
from ..backends.cpu.compiler import DEFAULT_PARALLEL_COST
from .blas_kernels import SCRATCH_KERNEL_TYPE
from .cpu_check import emit_feature_check, required_features
from .lowering import Lowered
from .objects import AotTarget

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
I8P = I8.as_pointer()
ARENA_ALIGN = 64


@dataclass
class Leaf:
    """One flattened argument or result: its name and array shape."""

    name: str
    shape: Shape

    @property
    def nbytes(self) -> int:
        return self.shape.byte_size

    @property
    def alignment(self) -> int:
        et = self.shape.element_type
        size = et.byte_size // 2 if et.is_complex else et.byte_size
        return max(1, min(int(size), 8))


def _row_major(shape: Shape) -> bool:
    return major_to_minor(shape) == list(range(shape.rank))


class EntryBuilder:
    """Adds ``<name>_run``, ``<name>_error_message`` and the size tables to the module."""

    def __init__(self, lowered: Lowered, name: str, target: AotTarget | None = None,
                 threads: int = 1, parallel_cost: float = DEFAULT_PARALLEL_COST) -> None:
        """``target``: check its CPU features at run time (x86-64 only; module
        ``cpu_check``). ``threads > 1``: kernels of at least ``parallel_cost`` with more
        than one unit run on the runtime's pool (``runtime.py``)."""
        self.lo, self.name = lowered, name
        self.threads, self.parallel_cost = max(1, int(threads)), parallel_cost
        # the runtime (one-time setup, pool) is linked in when there is something to set up
        self.uses_runtime = self.threads > 1 or lowered.uses_blas
        self.features = (required_features(target.cpu, target.features)
                         if target is not None and target.triple.startswith("x86_64") else [])
        self.module = lowered.llvm_module
        entry = lowered.module.entry
        self.args: list[Leaf] = []
        self._arg_of: dict[tuple[int, tuple[int, ...]], int] = {}
        for p in entry.parameters:
            for ix, sub in indexed_leaves(p.shape):
                label = p.name + ("" if not ix else "{" + ",".join(map(str, ix)) + "}")
                self._arg_of[(p.parameter_number, tuple(ix))] = len(self.args)
                self.args.append(Leaf(label, sub))
        self.result_refs = leaves(value_ref(lowered.assignment, entry.root))
        self.results = [Leaf(f"result{j}" if len(self.result_refs) > 1 else "result", r.shape)
                        for j, r in enumerate(self.result_refs)]
        for leaf in self.args + self.results:
            if not _row_major(leaf.shape):
                raise UnimplementedError(
                    f"ahead-of-time entry {leaf.name} has layout {leaf.shape}; the C interface "
                    "takes row-major buffers only")
        self.messages: list[str] = ["ok"]
        self._layout_arena()

    # ----- memory layout
    def _layout_arena(self) -> None:
        """Decide each allocation's home; constants' bytes; the arena size."""
        allocs = self.lo.assignment.allocations
        self.claimed: dict[int, int] = {}          # allocation -> result leaf written there
        for j, ref in enumerate(self.result_refs):
            a = allocs[ref.alloc]
            if a.kind == OUTPUT and ref.offset == 0 and a.size == ref.size and \
                    ref.alloc not in self.claimed:
                self.claimed[ref.alloc] = j
        self.arena_offset: dict[int, int] = {}
        self.copy_in: list[tuple[int, int]] = []     # (allocation, argument)
        size = 0
        for a in allocs:
            home_in_arena = a.kind in (TEMP, OUTPUT) and a.index not in self.claimed
            if a.kind == PARAMETER and a.aliased_with_output:
                home_in_arena = True
                self.copy_in.append((a.index, self._arg_of[(a.parameter_number,
                                                             tuple(a.param_index))]))
            if home_in_arena:
                self.arena_offset[a.index] = size
                size += -(-a.size // ARENA_ALIGN) * ARENA_ALIGN
        # the kernels' scratch (one slice per thread) is at the end, shared by all kernels
        self.scratch_offset = size
        self.scratch_stride = -(-max(self.lo.scratch.values(), default=0) // ARENA_ALIGN) \
            * ARENA_ALIGN
        size += self.scratch_stride * self.threads
        self.temp_bytes = size
        # buffer assignment gives every constant a constant allocation of its own
        mem = Memory(len(allocs))
        for a in allocs:
            if a.kind == CONSTANT:
                mem.set(a.index, aligned_empty(a.size, zero=True))
        materialize_constants(mem, self.lo.assignment, self.lo.module)
        self.constant_bytes = {a.index: bytes(mem.bases[a.index]) for a in allocs
                               if a.kind == CONSTANT}

    # ----- module-level symbols
    def _global(self, suffix: str, ty: ir.Type, init: ir.Constant) -> ir.GlobalVariable:
        g = ir.GlobalVariable(self.module, ty, name=f"{self.name}_{suffix}")
        g.global_constant = True
        g.initializer = init
        return g

    def build(self) -> None:
        """Emit the size tables, the entry function and the error-message function."""
        for suffix, items in (("arg_bytes", self.args), ("result_bytes", self.results)):
            ty = ir.ArrayType(I64, max(1, len(items)))
            self._global(suffix, ty, ir.Constant(ty, [leaf.nbytes for leaf in items] or [0]))
        self._global("temp_bytes", I64, ir.Constant(I64, self.temp_bytes))
        self.constants = {}
        for index, raw in self.constant_bytes.items():
            ty = ir.ArrayType(I8, max(1, len(raw)))
            g = ir.GlobalVariable(self.module, ty, name=f"{self.name}_const{index}")
            g.global_constant, g.linkage, g.align = True, "internal", ARENA_ALIGN
            g.initializer = ir.Constant(ty, bytearray(raw or b"\0"))
            self.constants[index] = g
        self.memmove = self.module.declare_intrinsic("llvm.memmove", [I8P, I8P, I64])
        self._run_function()
        if self.features:
            self._checked_wrapper()
        self._message_function()

    def _fail_code(self, message: str) -> int:
        self.messages.append(message)
        return len(self.messages) - 1

    def _run_function(self) -> None:
        fnty = ir.FunctionType(I32, [I8P.as_pointer(), I8P.as_pointer(), I8P])
        fn = ir.Function(self.module, fnty, name=f"{self.name}_run" + (
            "_impl" if self.features else ""))
        args, results, temp = fn.args
        args.name, results.name, temp.name = "args", "results", "temp"
        self.fn = fn
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.table = b.alloca(I8P, size=ir.Constant(I64, max(
            [len(t.refs) for t in self.lo.plan.walk() if isinstance(t, KernelThunk)] + [1])),
            name="table")
        self.leaf_ptr: dict[str, list[ir.Value]] = {}
        for what, arr, items in (("args", args, self.args), ("results", results, self.results)):
            if items:
                self._check(b.icmp_unsigned("==", arr, ir.Constant(arr.type, None)),
                            f"{what} is a null pointer")
            ptrs = []
            for k, leaf in enumerate(items):
                p = b.load(b.gep(arr, [ir.Constant(I64, k)]), name=f"{what}{k}")
                self._check(b.icmp_unsigned("==", p, ir.Constant(I8P, None)),
                            f"{what}[{k}] ({leaf.name}) is a null pointer")
                if leaf.alignment > 1:
                    low = b.and_(b.ptrtoint(p, I64), ir.Constant(I64, leaf.alignment - 1))
                    self._check(b.icmp_unsigned("!=", low, ir.Constant(I64, 0)),
                                f"{what}[{k}] ({leaf.name}) is not aligned to "
                                f"{leaf.alignment} bytes")
                ptrs.append(p)
            self.leaf_ptr[what] = ptrs
        if self.temp_bytes:
            self._check(b.icmp_unsigned("==", temp, ir.Constant(I8P, None)),
                        "temp is a null pointer (the arena needs temp_bytes bytes)")
            low = b.and_(b.ptrtoint(temp, I64), ir.Constant(I64, ARENA_ALIGN - 1))
            self._check(b.icmp_unsigned("!=", low, ir.Constant(I64, 0)),
                        f"temp is not aligned to {ARENA_ALIGN} bytes")
        self.bases: dict[int, ir.Value] = {}
        for a in self.lo.assignment.allocations:
            if a.index in self.arena_offset:
                self.bases[a.index] = b.gep(temp, [ir.Constant(I64, self.arena_offset[a.index])])
            elif a.kind == PARAMETER:
                self.bases[a.index] = self.leaf_ptr["args"][
                    self._arg_of[(a.parameter_number, tuple(a.param_index))]]
            elif a.kind == CONSTANT:
                self.bases[a.index] = b.bitcast(self.constants[a.index], I8P)
            elif a.index in self.claimed:
                self.bases[a.index] = self.leaf_ptr["results"][self.claimed[a.index]]
        if self.uses_runtime:
            b.call(self._runtime("init", ir.FunctionType(ir.VoidType(), [])), [])
        self.scratch = b.gep(temp, [ir.Constant(I64, self.scratch_offset)])
        for alloc, k in self.copy_in:
            self._move(self.bases[alloc], self.leaf_ptr["args"][k], self.args[k].nbytes)
        self._plan(self.lo.plan)
        for j, ref in enumerate(self.result_refs):
            if self.claimed.get(ref.alloc) != j or ref.offset != 0:
                self._move(self.leaf_ptr["results"][j], self._addr(ref), ref.size)
        self.b.ret(ir.Constant(I32, 0))

    def _checked_wrapper(self) -> None:
        """``NAME_run``: the cached CPU-feature check, then the real entry (out of line)."""
        impl = self.fn
        impl.linkage = "internal"
        impl.attributes.add("noinline")
        codes = {f: self._fail_code(f"this CPU lacks {f}, which the object was compiled for"
                                    " (see the target in NAME_meta.json)".replace(
                                        "NAME", self.name)) for f in self.features}
        os_code = self._fail_code("the operating system does not enable the AVX registers "
                                  "the object was compiled for")
        fn = ir.Function(self.module, impl.function_type, name=f"{self.name}_run")
        state = ir.GlobalVariable(self.module, I32, name=f"{self.name}_cpu_state")
        state.linkage, state.initializer = "internal", ir.Constant(I32, 0)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        known = b.load(state)
        probe = fn.append_basic_block("probe")
        decide = fn.append_basic_block("decide")
        start = b.block
        b.cbranch(b.icmp_unsigned("==", known, ir.Constant(I32, 0)), probe, decide)
        b.position_at_end(probe)
        found = b.add(emit_feature_check(fn, b, self.features, codes, os_code),
                      ir.Constant(I32, 1))
        b.store(found, state)
        probed = b.block
        b.branch(decide)
        b.position_at_end(decide)
        st = b.phi(I32)
        st.add_incoming(known, start)
        st.add_incoming(found, probed)
        code = b.sub(st, ir.Constant(I32, 1))
        run = fn.append_basic_block("run")
        fail = fn.append_basic_block("fail")
        b.cbranch(b.icmp_unsigned("==", code, ir.Constant(I32, 0)), run, fail)
        b.position_at_end(fail)
        b.ret(code)
        b.position_at_end(run)
        b.ret(b.call(impl, list(fn.args)))

    def _check(self, failed: ir.Value, message: str) -> None:
        """Return ``message``'s code from the entry function when ``failed``."""
        code = self._fail_code(message)
        bad = self.fn.append_basic_block(f"fail{code}")
        good = self.fn.append_basic_block(f"ok{code}")
        self.b.cbranch(failed, bad, good)
        self.b.position_at_end(bad)
        self.b.ret(ir.Constant(I32, code))
        self.b.position_at_end(good)

    def _message_function(self) -> None:
        fn = ir.Function(self.module, ir.FunctionType(I8P, [I32]),
                         name=f"{self.name}_error_message")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        strings = []
        for k, text in enumerate(self.messages + ["unknown error code"]):
            raw = bytearray(f"{self.name}: {text}".encode()) + b"\0"
            g = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(raw)),
                                  name=f"{self.name}_msg{k}")
            g.global_constant, g.linkage = True, "internal"
            g.initializer = ir.Constant(g.type.pointee, raw)
            strings.append(g)
        table_ty = ir.ArrayType(I8P, len(strings))
        table = ir.GlobalVariable(self.module, table_ty, name=f"{self.name}_messages")
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(table_ty, [g.bitcast(I8P) for g in strings])
        code = fn.args[0]
        known = b.icmp_unsigned("<", code, ir.Constant(I32, len(self.messages)))
        index = b.select(known, b.zext(code, I64), ir.Constant(I64, len(self.messages)))
        b.ret(b.load(b.gep(table, [ir.Constant(I64, 0), index])))

    # ----- plan steps
    def _addr(self, ref: BufferRef) -> ir.Value:
        base = self.bases.get(ref.alloc)
        if base is None:
            raise UnimplementedError(f"allocation {ref.alloc} has no home in the object")
        return self.b.gep(base, [ir.Constant(I64, ref.offset)]) if ref.offset else base

    def _move(self, dst: ir.Value, src: ir.Value, nbytes: int) -> None:
        if nbytes:
            self.b.call(self.memmove, [dst, src, ir.Constant(I64, nbytes), ir.Constant(I1, 0)])

    def _copies(self, pairs) -> None:
        for s, d in pairs:
            if s.size and not s.same_bytes(d):
                self._move(self._addr(d), self._addr(s), s.size)

    def _plan(self, plan: Plan) -> None:
        for t in plan.thunks:
            if isinstance(t, KernelThunk):
                self._kernel(t)
            elif isinstance(t, WhileThunk):
                self._while(t)
            elif isinstance(t, ConditionalThunk):
                self._conditional(t)
            elif isinstance(t, CallThunk):
                self._copies(t.to_params.pairs)
                self._plan(t.plan)
                self._copies(t.from_root.pairs)
            else:                     # lowering.py rejects these before we get here
                raise UnimplementedError(f"no object code for a {t.kind} step")

    def _runtime(self, what: str, fnty: ir.FunctionType) -> ir.Function:
        """A declaration of the runtime's ``what`` (defined in ``runtime.py``'s IR)."""
        name = f"{self.name}_rt_{what}"
        fn = self.module.globals.get(name)
        return fn if fn is not None else ir.Function(self.module, fnty, name=name)

    def _kernel(self, t: KernelThunk) -> None:
        if t.units <= 0:
            return
        scratch = t.name in self.lo.scratch
        fn = self.module.globals.get(t.name)
        if fn is None:
            fn = ir.Function(self.module, SCRATCH_KERNEL_TYPE if scratch else KERNEL_TYPE,
                             name=t.name)
        b = self.b
        for i, ref in enumerate(t.refs):
            b.store(self._addr(ref), b.gep(self.table, [ir.Constant(I64, i)]))
        if self.threads > 1 and t.units > 1 and t.cost >= self.parallel_cost:
            chunk = max(1, -(-t.units // (2 * self.threads)))
            parallel = self._runtime("parallel", ir.FunctionType(ir.VoidType(), [
                I8P, I32, I8P.as_pointer(), I64, I8P, I64, I64]))
            b.call(parallel, [b.bitcast(fn, I8P), ir.Constant(I32, int(scratch)), self.table,
                              ir.Constant(I64, t.units), self.scratch,
                              ir.Constant(I64, self.scratch_stride), ir.Constant(I64, chunk)])
            return
        args = [self.table, ir.Constant(I64, 0), ir.Constant(I64, t.units)]
        b.call(fn, args + ([self.scratch] if scratch else []))

    def _load_scalar(self, ref: BufferRef) -> ir.Value:
        """The i64 value of a pred or integer scalar buffer."""
        et = ref.shape.element_type
        bits = 8 if et.is_pred else et.bits
        p = self.b.bitcast(self._addr(ref), ir.IntType(bits).as_pointer())
        v = self.b.load(p)
        if et.is_pred:
            return self.b.zext(self.b.icmp_unsigned("!=", v, ir.Constant(I8, 0)), I64)
        return self.b.sext(v, I64) if et.is_signed_integral else self.b.zext(v, I64)

    def _while(self, t: WhileThunk) -> None:
        b, fn = self.b, self.fn
        self._copies(t.init.pairs)
        pre = b.block
        head = fn.append_basic_block("while.head")
        body = fn.append_basic_block("while.body")
        first_bb = fn.append_basic_block("while.first")
        rest_bb = fn.append_basic_block("while.rest")
        main = fn.append_basic_block("while.main")
        exit_bb = fn.append_basic_block("while.exit")
        b.branch(head)
        b.position_at_end(head)
        first = b.phi(I1, "first")
        first.add_incoming(ir.Constant(I1, 1), pre)
        self._copies(t.to_condition.pairs)
        self._plan(t.condition)
        go = b.icmp_unsigned("!=", self._load_scalar(t.predicate), ir.Constant(I64, 0))
        b.cbranch(go, body, exit_bb)
        b.position_at_end(body)
        b.cbranch(first, first_bb, rest_bb)
        b.position_at_end(first_bb)
        self._copies(t.to_body_first.pairs)
        b.branch(main)
        b.position_at_end(rest_bb)
        self._copies(t.to_body.pairs)
        b.branch(main)
        b.position_at_end(main)
        self._plan(t.body)
        self._copies(t.from_body.pairs)
        first.add_incoming(ir.Constant(I1, 0), b.block)
        b.branch(head)
        b.position_at_end(exit_bb)

    def _conditional(self, t: ConditionalThunk) -> None:
        b, fn = self.b, self.fn
        s = self._load_scalar(t.selector)
        n = len(t.branches)
        if t.pred:
            index = b.select(b.icmp_unsigned("!=", s, ir.Constant(I64, 0)),
                             ir.Constant(I64, 0), ir.Constant(I64, 1))
        else:                 # out of range runs the last branch
            inside = b.icmp_unsigned("<", s, ir.Constant(I64, n))
            index = b.select(inside, s, ir.Constant(I64, n - 1))
        join = fn.append_basic_block("cond.join")
        blocks = [fn.append_basic_block(f"cond.branch{k}") for k in range(n)]
        sw = b.switch(index, blocks[-1])
        for k, blk in enumerate(blocks[:-1]):
            sw.add_case(ir.Constant(I64, k), blk)
        for blk, (plan, to_params, from_root) in zip(blocks, t.branches):
            b.position_at_end(blk)
            self._copies(to_params.pairs)
            self._plan(plan)
            self._copies(from_root.pairs)
            b.branch(join)
        b.position_at_end(join)


def internalize_kernels(module: ir.Module, keep: set[str]) -> None:
    """Give every defined function but ``keep`` internal linkage (no symbol clashes
    between two models linked into one program)."""
    for g in module.globals.values():
        if isinstance(g, ir.Function) and not g.is_declaration and g.name not in keep:
            g.linkage = "internal"


__all__ = ["EntryBuilder", "Leaf", "internalize_kernels", "ARENA_ALIGN"]
