"""Native ``rng-bit-generator`` kernels: ThreeFry2x32 and Philox4x32, bit-exact with XLA.

The bits are those of XLA's ``RngBitGeneratorExpander`` (``xla/hlo/builder/lib/prng.cc``),
as the interpreter computes them (``interpreter/rng.py``, which documents the state
layout): the state operand is ``u64[N]`` with the key in ``state[0]``.

- ``rng_three_fry``: counter ``state[1]``. 64-bit outputs: element ``i`` (row-major) is
  ThreeFry(key, counter + i), words joined low first. 32-bit and narrower outputs: the
  first even dimension ``s`` (else the first largest) is halved; counter ``j`` (row-major
  over the halved shape) fills positions ``2h`` and ``2h + 1`` along ``s`` with its two
  words. The new counter is ``counter + number of counters``.
- ``rng_philox`` and ``rng_default``: 128-bit counter ``(state[1], state[2])`` for ``N >= 3``,
  else ``(state[1], state[0])``; each counter value gives four 32-bit words used in
  order (two joined 64-bit words for 64-bit outputs).

Narrower outputs keep the low bits of a 32-bit word; float outputs reinterpret the bits.
Work units: blocks of :data:`BLOCK` counters (unit 0 also writes the new state).
"""
from __future__ import annotations

from math import prod
from llvmlite import ir

from ...hlo import types as T
from ...hlo.ir import HloInstruction
from .kernel_api import KernelSpec
from .kernel_support import (KernelScaffold, PlannedEmitter, bytes_of, c64, element_strides,
                             major_to_minor)
from .llvm_types import I32, I64, call_intrinsic, llvm_type

BLOCK = 1024
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_ALGORITHMS = {"rng_three_fry": "threefry", "rng_philox": "philox", "rng_default": "philox"}


def _algorithm(instr: HloInstruction) -> str | None:
    return _ALGORITHMS.get(str(instr.attrs.get("algorithm", "rng_default")).lower())


def split_dim(dims: tuple[int, ...]) -> int:
    """The dimension prng.cc halves for 32-bit ThreeFry: the first even one, else the
    first largest."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


class RngBitGeneratorEmitter(PlannedEmitter):
    """A ``KernelEmitter`` for ``rng-bit-generator`` (ThreeFry, Philox, default)."""

    kind = "rng-bit-generator"

    def analyze(self, instr: HloInstruction) -> HloInstruction | None:
        """``instr`` itself when it is an rng-bit-generator this emitter handles."""
        if instr.opcode != "rng-bit-generator" or _algorithm(instr) is None:
            return None
        shape = instr.shape
        if len(instr.operands) != 1 or not shape.is_tuple or len(shape.tuple_shapes) != 2:
            return None
        state, (new_state, bits) = instr.operands[0].shape, shape.tuple_shapes
        if not (state.is_array and state.element_type is T.U64 and state.rank == 1
                and state.dims[0] >= 2 and new_state.is_array and new_state.dims == state.dims
                and new_state.element_type is T.U64):
            return None
        et = bits.element_type if bits.is_array else None
        ok = et is not None and not et.is_pred and not et.is_complex and \
            et.bits in (8, 16, 32, 64)
        return instr if ok else None

    def build(self, module: ir.Module, name: str, instr: HloInstruction) -> KernelSpec:
        return _RngKernel(module, name, instr).build()


def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v & 0xFFFFFFFF)


class _RngKernel:
    def __init__(self, module: ir.Module, name: str, instr: HloInstruction) -> None:
        self.instr = instr
        self.sc = KernelScaffold(module, name, instr, instr)
        self.b = self.sc.b
        self.algorithm = _algorithm(instr)
        self.n_state = instr.operands[0].shape.dims[0]
        self.bits_shape = self.sc.buffers[self.sc.output_slot(1)].shape
        self.dims = tuple(self.bits_shape.dims)
        self.et = self.bits_shape.element_type
        self.row_major = major_to_minor(self.bits_shape) == list(range(len(self.dims)))

    # ----- words and stores
    def _lo_hi(self, v: ir.Value) -> tuple[ir.Value, ir.Value]:
        b = self.b
        return b.trunc(v, I32), b.trunc(b.lshr(v, c64(32)), I32)

    def _join(self, lo: ir.Value, hi: ir.Value) -> ir.Value:
        b = self.b
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), c64(32)))

    def _store(self, element: ir.Value, bits: ir.Value) -> None:
        """Store raw bits (i32 or i64) as element ``element`` (row-major) of the output."""
        b, sc, et = self.b, self.sc, self.et
        value = b.trunc(bits, ir.IntType(et.bits)) if bits.type.width > et.bits else bits
        ty = llvm_type(et)
        if not isinstance(ty, ir.IntType):
            value = b.bitcast(value, ty)
        slot = sc.output_slot(1)
        if self.row_major:
            ptr = b.gep(sc.ptrs[slot], [element], inbounds=True)
        else:
            index = sc.delinearize(element, list(self.dims))
            ptr = b.gep(sc.ptrs[slot], [sc.offset(index, element_strides(self.bits_shape))],
                        inbounds=True)
        sc.store(slot, value, ptr)

    # ----- the generators
    def _threefry(self, key: tuple[ir.Value, ir.Value], counter: ir.Value
                  ) -> tuple[ir.Value, ir.Value]:
        b = self.b
        ks = (key[0], key[1], b.xor(b.xor(_c32(0x1BD11BDA), key[0]), key[1]))
        x0, x1 = self._lo_hi(counter)
        x0, x1 = b.add(x0, ks[0]), b.add(x1, ks[1])
        for block in range(5):
            rotations = _ROTATIONS[:4] if block % 2 == 0 else _ROTATIONS[4:]
            for r in rotations:
                x0 = b.add(x0, x1)
                x1 = b.xor(call_intrinsic(b, "llvm.fshl", [x1, x1, _c32(r)]), x0)
            x0 = b.add(x0, ks[(block + 1) % 3])
            x1 = b.add(b.add(x1, ks[(block + 2) % 3]), _c32(block + 1))
        return x0, x1

    def _philox(self, key: tuple[ir.Value, ir.Value], lo: ir.Value, hi: ir.Value
                ) -> list[ir.Value]:
        b = self.b
        k0, k1 = key
        x = [*self._lo_hi(lo), *self._lo_hi(hi)]
        for _ in range(10):
            p0 = b.mul(b.zext(x[0], I64), c64(_PHILOX_M[0]))
            p1 = b.mul(b.zext(x[2], I64), c64(_PHILOX_M[1]))
            lo0, hi0 = self._lo_hi(p0)
            lo1, hi1 = self._lo_hi(p1)
            x = [b.xor(b.xor(hi1, x[1]), k0), lo1, b.xor(b.xor(hi0, x[3]), k1), lo0]
            k0, k1 = b.add(k0, _c32(_PHILOX_W[0])), b.add(k1, _c32(_PHILOX_W[1]))
        return x

    # ----- counters per algorithm
    def _plan(self) -> tuple[int, int]:
        """(number of counters, output elements per counter)."""
        n = prod(self.dims)
        if self.algorithm == "threefry":
            if self.et.bits == 64 or not self.dims:
                return n, 1
            s = split_dim(self.dims)
            half = list(self.dims)
            half[s] = (half[s] + 1) // 2
            return prod(half), 2
        per = 2 if self.et.bits == 64 else 4
        return -(-n // per), per

    def _flat_counter(self, state: list[ir.Value], j: ir.Value, guard: bool) -> None:
        """Counter ``j`` of a flat layout: its values are elements ``j * per + q``
        (``guard``: only those below the element count)."""
        b, n = self.b, prod(self.dims)
        key = self._lo_hi(state[0])
        if self.algorithm == "threefry":
            x0, x1 = self._threefry(key, b.add(state[1], j))
            values = [self._join(x0, x1)] if self.et.bits == 64 else [x0]
        else:
            c_lo, c_hi = state[1], state[2] if self.n_state >= 3 else state[0]
            lo = b.add(c_lo, j)
            hi = b.add(c_hi, b.zext(b.icmp_unsigned("<", lo, c_lo), I64))
            words = self._philox(key, lo, hi)
            values = words if self.et.bits < 64 else \
                [self._join(words[0], words[1]), self._join(words[2], words[3])]
        per = len(values)
        for q, v in enumerate(values):
            e = b.add(b.mul(j, c64(per)), c64(q))
            if guard and q:
                with b.if_then(b.icmp_signed("<", e, c64(n))):
                    self._store(e, v)
            else:
                self._store(e, v)

    def _flat_unit(self, state: list[ir.Value], u: ir.Value, counters: int, per: int) -> None:
        """Counters ``[u * BLOCK, (u + 1) * BLOCK)``; the last, partial one is guarded."""
        b = self.b
        full = prod(self.dims) // per           # counters whose elements all exist
        lo = b.mul(u, c64(BLOCK))
        end = b.add(lo, c64(BLOCK))
        hi = b.select(b.icmp_signed("<", end, c64(full)), end, c64(full))
        self.sc.loop(lo, hi, lambda j: self._flat_counter(state, j, False), "ctr")
        if counters > full:
            inside = b.and_(b.icmp_signed("<=", lo, c64(full)), b.icmp_signed(">", end, c64(full)))
            with b.if_then(inside):
                self._flat_counter(state, c64(full), True)

    def _halves_unit(self, state: list[ir.Value], u: ir.Value, rows_per_unit: int) -> None:
        """ThreeFry with a 32-bit (or narrower) output: counter ``j = (a * H + h) * inner
        + c`` fills positions ``2h`` and ``2h + 1`` along the split dimension ``s`` at
        outer index ``a`` and inner index ``c``. A unit does rows ``(a, h)``; the inner
        loop over ``c`` is unit-stride."""
        b, dims = self.b, self.dims
        s = split_dim(dims)
        inner, halves, ds = prod(dims[s + 1:]), (dims[s] + 1) // 2, dims[s]
        rows = prod(dims[:s]) * halves
        key = self._lo_hi(state[0])

        def row(r: ir.Value) -> None:
            a, h = b.udiv(r, c64(halves)), b.urem(r, c64(halves))
            base = b.add(b.mul(a, c64(ds)), b.mul(h, c64(2)))
            first, second = b.mul(base, c64(inner)), b.mul(b.add(base, c64(1)), c64(inner))

            def counters(both: bool) -> None:
                def one(c: ir.Value) -> None:
                    j = b.add(b.mul(r, c64(inner)), c)
                    x0, x1 = self._threefry(key, b.add(state[1], j))
                    self._store(b.add(first, c), x0)
                    if both:
                        self._store(b.add(second, c), x1)
                self.sc.loop(0, inner, one, "c")
            if ds % 2 == 0:
                counters(True)
            else:
                with b.if_else(b.icmp_signed("<", h, c64(halves - 1))) as (full, last):
                    with full:
                        counters(True)
                    with last:
                        counters(False)
        lo = b.mul(u, c64(rows_per_unit))
        end = b.add(lo, c64(rows_per_unit))
        self.sc.loop(lo, b.select(b.icmp_signed("<", end, c64(rows)), end, c64(rows)), row, "row")

    def _write_state(self, state: list[ir.Value], counters: int) -> None:
        b, sc = self.b, self.sc
        new = list(state)
        if self.algorithm == "threefry":
            new[1] = b.add(state[1], c64(counters))
        else:
            c_lo, c_hi = state[1], state[2] if self.n_state >= 3 else state[0]
            lo = b.add(c_lo, c64(counters))
            new[1] = lo
            if self.n_state >= 3:
                new[2] = b.add(c_hi, b.zext(b.icmp_unsigned("<", lo, c_lo), I64))
        out = sc.output_slot(0)
        strides = element_strides(sc.buffers[out].shape)
        for k, v in enumerate(new):
            b.store(v, b.gep(sc.ptrs[out], [c64(k * strides[0])], inbounds=True))

    def build(self) -> KernelSpec:
        b, sc = self.b, self.sc
        counters, per = self._plan()
        in_strides = element_strides(sc.buffers[0].shape)
        halves = self.algorithm == "threefry" and per == 2
        if halves:
            s = split_dim(self.dims)
            inner = prod(self.dims[s + 1:])
            rows = counters // max(inner, 1) if inner else 0
            rows_per_unit = max(1, BLOCK // max(inner, 1))
            units = max(1, -(-rows // rows_per_unit))
        else:
            units = max(1, -(-counters // BLOCK))

        def unit(u: ir.Value) -> None:
            state = [b.load(b.gep(sc.ptrs[0], [c64(k * in_strides[0])], inbounds=True))
                     for k in range(self.n_state)]
            if counters:
                if halves:
                    self._halves_unit(state, u, rows_per_unit)
                else:
                    self._flat_unit(state, u, counters, per)
            with b.if_then(b.icmp_signed("==", u, c64(0))):
                self._write_state(state, counters)
        sc.units_loop(unit)
        sc.finish()
        return KernelSpec(sc.name, self.instr, sc.buffers, units=units,
                          cost=float(bytes_of(sc.buffers) + 60 * counters),
                          notes=[f"rng-bit-generator ({self.algorithm}) of {counters} counters "
                                 f"in {units} units"])


__all__ = ["RngBitGeneratorEmitter", "split_dim"]
