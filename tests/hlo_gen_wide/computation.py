"""Generated values and the computation being generated.

``V`` is one generated HLO value with what is known about it (error bound, magnitude
bound, whether its bits are reproducible); ``Comp`` holds the lines and the value pool
of one computation (the entry or a loop body, branch, callee) and picks or makes
operands for the op generators.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .types_and_values import (BITS, FMAX, INF, NP_DTYPE, imax, is_float, is_int, is_signed,
                               literal_text, random_values, shape_text, type_max)

if TYPE_CHECKING:
    from .module import ModuleGen


@dataclass(eq=False)
class V:
    """A generated HLO value (array-shaped) with what is known about it."""

    name: str
    ty: str
    dims: tuple
    err: float = 0.0     # 0: bit exact vs the oracle; else a normwise relative bound
    mag: float = INF     # bound on |finite values|
    clean: bool = True   # bits reproducible, NaN payloads included
    uses: int = 0

    @property
    def size(self) -> int:
        return int(np.prod(self.dims)) if self.dims else 1

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def shape(self) -> str:
        return shape_text(self.ty, self.dims)


class Unsupported(Exception):
    """The chosen op does not apply to the chosen operands; try another."""


class Comp:
    """One computation being generated."""

    def __init__(self, mg: "ModuleGen", name: str, entry: bool, depth: int) -> None:
        self.mg, self.name, self.entry, self.depth = mg, name, entry, depth
        self.lines: list[str] = []
        self.pool: list[V] = []
        self.params: list[V] = []

    # ----- emission
    def emit(self, ty: str, dims, rhs: str, err: float = 0.0, mag: float = INF,
             clean: bool = True, pool: bool = True, operands=()) -> V:
        """Add ``name = ty[dims] rhs``."""
        dims = tuple(int(d) for d in dims)
        name = self.mg.new_name("v" if self.entry else "w")
        self.lines.append(f"  {name} = {shape_text(ty, dims)} {rhs}")
        for o in operands:
            o.uses += 1
        if is_float(ty) and err > 0 and mag >= FMAX[ty] / 16:
            mag = INF
        if not is_float(ty):
            err = 0.0
        v = V(name, ty, dims, err, min(mag, type_max(ty)) if ty != "pred" else 1.0, clean)
        if pool:
            self.pool.append(v)
        return v

    def emit_raw(self, shape: str, rhs: str, operands=()) -> str:
        name = self.mg.new_name("v" if self.entry else "w")
        self.lines.append(f"  {name} = {shape} {rhs}")
        for o in operands:
            o.uses += 1
        return name

    def constant(self, ty: str, value, pool: bool = False) -> V:
        if is_float(ty):
            value = float(np.asarray(value).astype(NP_DTYPE[ty]).astype(np.float64))
            mag = abs(value) if math.isfinite(value) else 0.0
        elif ty == "pred":
            value, mag = bool(value), 1.0
        else:
            value = int(value)
            mag = float(abs(value))
        return self.emit(ty, (), f"constant({literal_text(ty, value)})", mag=mag, pool=pool)

    def array_constant(self, ty: str, dims, tame: bool = False) -> V:
        prof = "tame" if tame or self.mg.rng.random() < 0.6 else "wild"
        vals = random_values(self.mg.rng, ty, dims, prof)
        if is_float(ty):
            finite = np.abs(vals[np.isfinite(vals.astype(np.float64))].astype(np.float64))
            mag = float(finite.max()) if finite.size else 0.0
        else:
            mag = float(np.abs(vals.astype(np.float64)).max()) if vals.size else 0.0
        return self.emit(ty, dims, f"constant({literal_text(ty, vals)})", mag=mag)

    # ----- picking operands
    def pick(self, ok: Callable[[V], bool] = lambda v: True) -> V | None:
        cands = [v for v in self.pool if ok(v)]
        if not cands:
            return None
        rng = self.mg.rng
        if rng.random() < 0.5:                       # recent values: deep chains, fusion
            cands = cands[-4:]
        elif rng.random() < 0.5:                     # unused values: fewer dead outputs
            unused = [v for v in cands if v.uses == 0]
            cands = unused or cands
        return cands[int(rng.integers(len(cands)))]

    def scalar(self, ty: str, exact: bool = True, small_index: bool = False) -> V:
        """A scalar value of ``ty``: a constant, a parameter or a computed scalar."""
        rng = self.mg.rng
        cands = [v for v in self.pool if v.ty == ty and v.dims == () and (v.err == 0 or not exact)]
        r = rng.random()
        if cands and r < 0.3:
            return self.pick(lambda v: v in cands)
        if self.entry and r < 0.55 and self.mg.can_add_param():
            return self.mg.new_param(ty, (), "index" if small_index else None)
        if small_index:
            return self.constant(ty, int(rng.choice([-5, -1, 0, 1, 2, 3, 7, 100]))
                                 if is_signed(ty) else int(rng.choice([0, 1, 2, 3, 7, 100])))
        return self.constant(ty, self.mg.rand_scalar(ty))

    def like(self, ty: str, dims, exact: bool = False, tame: bool = False, clean: bool = False,
             reuse: float = 0.7) -> V:
        """A value of ``ty[dims]``: an existing one, a new parameter, one derived from
        another value (reshape, convert, broadcast), a random constant or an iota.
        ``exact``: err == 0; ``tame``: finite magnitude bound (floats); ``clean``:
        reproducible bits."""
        dims = tuple(dims)
        rng = self.mg.rng
        size = int(np.prod(dims)) if dims else 1

        def ok(v: V) -> bool:
            return (v.ty == ty and v.dims == dims and (v.err == 0 or not exact)
                    and (v.mag < 1e4 or not tame) and (v.clean or not clean))
        cands = [v for v in self.pool if ok(v)]
        if cands and rng.random() < reuse:
            return self.pick(ok)
        r = rng.random()
        if self.entry and r < 0.5 and self.mg.can_add_param():
            prof = "tame" if tame or rng.random() < 0.7 else "wild"
            return self.mg.new_param(ty, dims, prof)
        if r < 0.85:
            derived = self._derive(ty, dims, size, exact, tame, clean)
            if derived is not None:
                return derived
        if cands:
            return self.pick(ok)
        if size <= 64 and rng.random() < 0.7:
            v = self.array_constant(ty, dims, tame=tame)
            if not clean or v.clean:
                return v
        if dims and ty != "pred" and rng.random() < 0.5:
            d = int(rng.integers(len(dims)))
            mag = float(max(dims))
            if not is_float(ty) or mag < FMAX[ty]:
                return self.emit(ty, dims, f"iota(), iota_dimension={d}", mag=mag)
        c = self.constant(ty, self.mg.rand_scalar(ty, tame=True))
        return self.emit(ty, dims, f"broadcast({c.name}), dimensions={{}}", mag=c.mag,
                         operands=[c])

    def _derive(self, ty: str, dims: tuple, size: int, exact: bool, tame: bool,
                clean: bool) -> V | None:
        rng = self.mg.rng

        def usable(v: V) -> bool:
            return (v.err == 0 or not exact) and (v.mag < 1e4 or not tame) and \
                (v.clean or not clean)
        ways = ["reshape", "convert", "broadcast"]
        rng.shuffle(ways)
        for way in ways:
            if way == "reshape":
                src = self.pick(lambda v: v.ty == ty and v.size == size and v.dims != dims
                                and usable(v))
                if src is not None:
                    return self.emit(ty, dims, f"reshape({src.name})", err=src.err,
                                     mag=src.mag, clean=src.clean, operands=[src])
            elif way == "convert":
                src = self.pick(lambda v: v.dims == dims and v.ty != ty and v.err == 0
                                and v.ty != "pred" and (v.mag < 1e4 or not tame))
                if src is None:
                    continue
                mag = src.mag if ty != "pred" else 1.0
                if is_float(ty) and mag > FMAX[ty]:
                    mag = INF
                if is_int(ty) and not (is_int(src.ty) and mag <= imax(ty) and
                                       (is_signed(src.ty) or BITS[src.ty] < BITS[ty])):
                    mag = type_max(ty)
                if tame and mag >= 1e4:
                    continue
                if clean and is_float(src.ty) and is_float(ty):
                    continue
                return self.emit(ty, dims, f"convert({src.name})", mag=mag,
                                 clean=not is_float(src.ty), operands=[src])
            else:
                # broadcast a lower-rank value whose dims appear in order in ``dims``
                def embeds(v: V) -> bool:
                    if v.ty != ty or v.rank >= len(dims) or not usable(v):
                        return False
                    j = 0
                    for d in dims:
                        if j < v.rank and v.dims[j] == d:
                            j += 1
                    return j == v.rank
                src = self.pick(embeds)
                if src is None:
                    continue
                pos, j = [], 0
                for k, d in enumerate(dims):
                    if j < src.rank and src.dims[j] == d:
                        pos.append(k)
                        j += 1
                return self.emit(ty, dims, f"broadcast({src.name}), dimensions="
                                           f"{{{','.join(map(str, pos))}}}", err=src.err,
                                 mag=src.mag, clean=src.clean, operands=[src])
        return None
