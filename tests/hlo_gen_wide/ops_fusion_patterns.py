"""Op patterns that make the CPU pipeline fuse: softmax and layer norm over random
dimensions.
"""
from __future__ import annotations

import math

from .computation import V, Comp, Unsupported
from .types_and_values import EPS, FLOATS, is_float, op_err, sum_err


class FusionPatternOps:
    """The fusion pattern ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    def op_softmax(self, c: Comp) -> V | None:
        x = c.pick(lambda v: is_float(v.ty) and v.rank >= 1 and v.mag <= 1e3 and v.err == 0)
        if x is None:
            if c.entry and self.can_add_param():
                dims = self.rand_dims(int(self.rng.integers(1, 4)))
                x = self.new_param(self.rand_type(FLOATS), dims, "tame")
            else:
                return None
        t = x.ty
        d = int(self.rng.integers(x.rank)) if self.rng.random() < 0.4 else x.rank - 1
        n = x.dims[d]
        keep = [i for i in range(x.rank) if i != d]
        red = [s for i, s in enumerate(x.dims) if i != d]
        j = lambda s: ",".join(map(str, s))  # noqa: E731
        ninf = c.constant(t, -math.inf)
        m = c.emit(t, red, f"reduce({x.name}, {ninf.name}), dimensions={{{d}}}, "
                           f"to_apply={self.binary_comp('maximum', t)}", mag=x.mag, pool=False,
                   operands=[x, ninf])
        bm = c.emit(t, x.dims, f"broadcast({m.name}), dimensions={{{j(keep)}}}", mag=x.mag,
                    pool=False)
        s = c.emit(t, x.dims, f"subtract({x.name}, {bm.name})", mag=2 * x.mag, pool=False)
        e = c.emit(t, x.dims, f"exponential({s.name})", err=op_err(t) * (1 + 2 * x.mag),
                   mag=1.0, pool=False)
        zero = c.constant(t, 0)
        z = c.emit(t, red, f"reduce({e.name}, {zero.name}), dimensions={{{d}}}, "
                           f"to_apply={self.binary_comp('add', t)}",
                   err=e.err + sum_err(t, n), mag=float(n), pool=False)
        bz = c.emit(t, x.dims, f"broadcast({z.name}), dimensions={{{j(keep)}}}", err=z.err,
                    mag=float(n), pool=False)
        return c.emit(t, x.dims, f"divide({e.name}, {bz.name})", err=e.err + z.err + EPS[t],
                      mag=1.0, clean=False)

    def op_layernorm(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.ty in ("f32", "f64") and v.rank >= 1 and v.mag <= 1e3 and v.err == 0)
        if x is None:
            if c.entry and self.can_add_param():
                dims = self.rand_dims(int(self.rng.integers(1, 4)))
                x = self.new_param(self.choice(["f32", "f32", "f64"]), dims, "tame")
            else:
                return None
        t = x.ty
        d = x.rank - 1 if self.rng.random() < 0.7 else int(self.rng.integers(x.rank))
        n = x.dims[d]
        if n == 0:
            raise Unsupported
        keep = [i for i in range(x.rank) if i != d]
        red = [s for i, s in enumerate(x.dims) if i != d]
        j = lambda s: ",".join(map(str, s))  # noqa: E731
        zero = c.constant(t, 0)
        se = sum_err(t, n)
        s = c.emit(t, red, f"reduce({x.name}, {zero.name}), dimensions={{{d}}}, "
                           f"to_apply={self.binary_comp('add', t)}", err=se, mag=n * x.mag,
                   pool=False)
        inv = c.constant(t, 1.0 / n)
        binv = c.emit(t, red, f"broadcast({inv.name}), dimensions={{}}", pool=False)
        mean = c.emit(t, red, f"multiply({s.name}, {binv.name})", err=se, mag=x.mag, pool=False)
        bmean = c.emit(t, x.dims, f"broadcast({mean.name}), dimensions={{{j(keep)}}}", err=se,
                       mag=x.mag, pool=False)
        xc = c.emit(t, x.dims, f"subtract({x.name}, {bmean.name})", err=se, mag=2 * x.mag,
                    pool=False)
        sq = c.emit(t, x.dims, f"multiply({xc.name}, {xc.name})", err=2 * se, mag=4 * x.mag ** 2,
                    pool=False)
        v = c.emit(t, red, f"reduce({sq.name}, {zero.name}), dimensions={{{d}}}, "
                           f"to_apply={self.binary_comp('add', t)}", err=3 * se,
                   mag=4 * n * x.mag ** 2,
                   pool=False)
        var = c.emit(t, red, f"multiply({v.name}, {binv.name})", err=3 * se, pool=False)
        eps = c.constant(t, 1e-3)
        beps = c.emit(t, red, f"broadcast({eps.name}), dimensions={{}}", pool=False)
        ve = c.emit(t, red, f"add({var.name}, {beps.name})", pool=False)
        r = c.emit(t, red, f"rsqrt({ve.name})", pool=False)
        br = c.emit(t, x.dims, f"broadcast({r.name}), dimensions={{{j(keep)}}}", pool=False)
        # normwise: the centred values' error relative to the row's spread can be large
        # when a row is (almost) constant; scale by 1/sqrt(eps) relative to x's magnitude
        return c.emit(t, x.dims, f"multiply({xc.name}, {br.name})", err=8 * se * (1 + x.mag) * 32,
                      mag=2 * x.mag * 32, clean=False)
