"""What the generated convolution kernels (``conv_kernels.py``) are built from: the host's
vector width (:func:`lanes`), the register budget of a tile, output channels cut into
vector blocks, and :class:`Emitter`, a kernel function under construction (loops, loops
carrying a register tile, guarded blocks, vector loads/stores, broadcasts, FMAs, the
bias/relu epilogue of a stored tile)."""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from .kernel_support import carried_loop, for_loop

F32 = ir.FloatType()
I64 = ir.IntType(64)
F32P = F32.as_pointer()


def lanes() -> int:
    """f32 lanes of the host's widest vectors with FMA (16 with AVX-512, 8 with AVX2), or 0
    when the host has no vector FMA (then no kernel here is used: ``llvm.fma`` would be a
    library call per element)."""
    from .jit_engine import engine
    features = engine().host.features
    if "+fma" not in features and "+avx512f" not in features:
        return 0
    if "+avx512f" in features:
        return 16
    return 8 if "+avx2" in features else 0


def tile_registers(width: int) -> int:
    """Accumulator registers a tile may use with vectors of ``width`` lanes: 24 of
    AVX-512's 32 vector registers, 12 of AVX2's 16 (the rest hold the loaded vectors and
    broadcasts)."""
    return 24 if width >= 16 else 12


def vector_chunks(o: int, width: int, most: int) -> list[tuple[int, list[int]]]:
    """Output channels ``[0, o)`` cut into blocks of at most ``most`` vectors of ``width``
    lanes: ``[(first channel, [vector widths])]`` (the last vector may be narrower)."""
    widths = [width] * (o // width) + ([o % width] if o % width else [])
    out, start = [], 0
    for i in range(0, len(widths), most):
        block = widths[i:i + most]
        out.append((start, block))
        start += sum(block)
    return out


# --------------------------------------------------------------------------------------------
# IR helpers

class Emitter:
    """A function under construction: loops, vector loads/stores, broadcasts, FMAs."""

    def __init__(self, module: ir.Module, name: str, args: list[str]) -> None:
        self.module = module
        fnty = ir.FunctionType(ir.VoidType(), [F32P, F32P, F32P, I64, I64])
        self.fn = ir.Function(module, fnty, name=name)
        for a, n in zip(self.fn.args, args):
            a.name = n
        for a in self.fn.args[:3]:
            a.add_attribute("noalias")
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self._fma: dict[int, ir.Function] = {}

    def const(self, v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    def loop(self, start, end, body: Callable[[ir.Value], None], name: str = "i") -> None:
        """``for i in [start, end): body(i)`` (``start``/``end``: ints or i64 values)."""
        for_loop(self.b, start, end, body, name)

    def carried(self, start: int, end: int, values: dict, body: Callable[[ir.Value, dict],
                                                                        dict]) -> dict:
        """A loop over ``[start, end)`` carrying the tile ``values`` (a dict) through phis:
        ``body(i, values) -> new values``; returns the values after the loop."""
        keys = sorted(values)

        def step(i: ir.Value, cur: list) -> list:
            new = body(i, dict(zip(keys, cur)))
            return [new[k] for k in keys]
        return dict(zip(keys, carried_loop(self.b, start, end, [values[k] for k in keys],
                                           step, "t")))

    def guarded(self, cond: ir.Value, values: dict, body: Callable[[dict], dict]) -> dict:
        """``if (cond) values = body(values)``; returns the values after it (phis)."""
        b = self.b
        before = b.block
        then = b.append_basic_block("if.then")
        merge = b.append_basic_block("if.done")
        b.cbranch(cond, then, merge)
        b.position_at_end(then)
        new = body(dict(values))
        end = b.block
        b.branch(merge)
        b.position_at_end(merge)
        out = {}
        for k in sorted(values):
            phi = b.phi(values[k].type)
            phi.add_incoming(values[k], before)
            phi.add_incoming(new[k], end)
            out[k] = phi
        return out

    def ptr(self, base: ir.Value, offset) -> ir.Value:
        off = self.const(offset) if isinstance(offset, int) else offset
        return self.b.gep(base, [off], inbounds=True)

    def off(self, *terms) -> ir.Value:
        """Sum of ``value * constant`` pairs and plain ints as an i64."""
        b, total, const = self.b, None, 0
        for t in terms:
            if isinstance(t, int):
                const += t
                continue
            v, k = t
            v = v if k == 1 else b.mul(v, self.const(k))
            total = v if total is None else b.add(total, v)
        if total is None:
            return self.const(const)
        return b.add(total, self.const(const)) if const else total

    def vload(self, base: ir.Value, offset, width: int) -> ir.Value:
        p = self.b.bitcast(self.ptr(base, offset), ir.VectorType(F32, width).as_pointer())
        return self.b.load(p, align=4)

    def vstore(self, value: ir.Value, base: ir.Value, offset, width: int) -> None:
        p = self.b.bitcast(self.ptr(base, offset), ir.VectorType(F32, width).as_pointer())
        self.b.store(value, p, align=4)

    def splat(self, scalar: ir.Value, width: int) -> ir.Value:
        vt = ir.VectorType(F32, width)
        v = self.b.insert_element(ir.Constant(vt, ir.Undefined), scalar, ir.Constant(I64, 0))
        mask = ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width)
        return self.b.shuffle_vector(v, ir.Constant(vt, ir.Undefined), mask)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value, width: int) -> ir.Value:
        fn = self._fma.get(width)
        if fn is None:
            vt = ir.VectorType(F32, width)
            fn = self._fma[width] = ir.Function(self.module, ir.FunctionType(vt, [vt] * 3),
                                                name=f"llvm.fma.v{width}f32")
        return self.b.call(fn, [a, b, c])

    def zero(self, width: int) -> ir.Value:
        return ir.Constant(ir.VectorType(F32, width), [0.0] * width)

    def epilogue(self, value: ir.Value, bias: ir.Value | None, relu: bool,
                 width: int) -> ir.Value:
        """A stored tile's epilogue: ``value + bias`` (``bias`` None: none), then with
        ``relu`` HLO's ``maximum(v, 0)`` (a NaN stays NaN: the select keeps ``v`` when it is
        greater than zero or unordered)."""
        if bias is not None:
            value = self.b.fadd(value, bias)
        if relu:
            zero = self.zero(width)
            value = self.b.select(self.b.fcmp_unordered(">", value, zero), value, zero)
        return value


def runs(n: int, valid: Callable[[int], tuple]) -> list[tuple[int, int, tuple]]:
    """``[0, n)`` cut into maximal runs ``[a, b)`` over which ``valid(i)`` is the same:
    ``[(a, b, valid(a))]``."""
    out: list[tuple[int, int, tuple]] = []
    for i in range(n):
        v = valid(i)
        if out and out[-1][2] == v and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1, v)
        else:
            out.append((i, i + 1, v))
    return out


__all__ = ["Emitter", "lanes", "tile_registers", "vector_chunks", "runs", "F32", "I64",
           "F32P"]
