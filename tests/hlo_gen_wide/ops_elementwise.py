"""Elementwise op generators: unary, binary, integer edge cases, compare/select, clamp,
convert, bitcast-convert and reduce-precision.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .computation import V, Comp, Unsupported
from .types_and_values import (ALL_TYPES, BITS, EPS, EXP_BITS, FMAX, INF, INTS, MANT_BITS, NP_DTYPE,
                               imax, imin, is_float, is_int, is_signed, op_err, type_max)


class ElementwiseOps:
    """The elementwise ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    UNARY_EXACT = ["negate", "abs", "sign", "floor", "ceil", "round-nearest-afz",
                   "round-nearest-even", "sqrt", "rsqrt", "is-finite"]
    UNARY_APPROX = ["exponential", "exponential-minus-one", "log", "log-plus-one", "tanh",
                    "logistic", "sine", "cosine", "tan", "erf", "cbrt"]

    def op_unary(self, c: Comp) -> V | None:
        rng = self.rng
        x = c.pick(lambda v: v.ty != "pred")
        if x is None:
            return None
        if is_int(x.ty):
            op = self.choice(["negate", "abs", "sign", "not", "popcnt", "count-leading-zeros"])
            mag = type_max(x.ty) if op in ("negate", "abs", "not") else (
                1.0 if op == "sign" else 64.0)
            return c.emit(x.ty, x.dims, f"{op}({x.name})", mag=mag, operands=[x])
        if rng.random() < 0.45:
            op = self.choice(self.UNARY_EXACT)
            if op in ("negate", "abs"):
                return c.emit(x.ty, x.dims, f"{op}({x.name})", err=x.err, mag=x.mag,
                              clean=x.clean, operands=[x])
            if x.err > 0:
                raise Unsupported
            if op == "is-finite":
                return c.emit("pred", x.dims, f"is-finite({x.name})", operands=[x])
            mag = {"sign": 1.0, "sqrt": math.sqrt(x.mag), "rsqrt": INF}.get(op, x.mag + 1)
            return c.emit(x.ty, x.dims, f"{op}({x.name})", mag=mag, clean=False, operands=[x])
        op = self.choice(self.UNARY_APPROX)
        t, e = x.ty, x.err
        if op in ("log", "log-plus-one", "tan", "cbrt") and e > 0:
            raise Unsupported
        if op in ("exponential", "exponential-minus-one"):
            if x.mag > math.log(FMAX[t] / 64):
                raise Unsupported
            mag, err = math.exp(x.mag), e * max(1.0, x.mag) + op_err(t)
        elif op in ("log", "log-plus-one"):
            fi = ml_dtypes.finfo(NP_DTYPE[t])
            mag = max(-math.log(float(fi.smallest_subnormal)), math.log(min(x.mag, FMAX[t]) + 2))
            err = op_err(t)
        elif op == "tan":
            mag, err = (1e17 if t == "f64" else 1e8), op_err(t)
            if t == "f16":
                mag = INF
        elif op == "cbrt":
            mag, err = min(x.mag, FMAX[t]) ** (1 / 3) + 1, op_err(t)
        else:                                      # tanh logistic sine cosine erf
            if e > 0 and x.mag > 1e3:
                raise Unsupported
            mag, err = 1.0, e * max(1.0, x.mag if math.isfinite(x.mag) else 1.0) + op_err(t)
        return c.emit(t, x.dims, f"{op}({x.name})", err=err, mag=mag, clean=False, operands=[x])

    def op_binary(self, c: Comp) -> V | None:
        rng = self.rng
        a = c.pick()
        if a is None:
            return None
        t = a.ty
        if t == "pred":
            op = self.choice(["and", "or", "xor", "add", "multiply", "maximum", "minimum"])
            if op in ("add", "multiply"):
                op = "and" if op == "multiply" else "or"
            b = c.like(t, a.dims)
            return c.emit(t, a.dims, f"{op}({a.name}, {b.name})", operands=[a, b])
        if is_int(t):
            op = self.choice(["add", "subtract", "multiply", "divide", "remainder", "maximum",
                              "minimum", "and", "or", "xor", "shift-left",
                              "shift-right-arithmetic", "shift-right-logical", "power"])
            b = c.like(t, a.dims)
            if rng.random() < 0.5:
                a, b = b, a
            mag = {"add": a.mag + b.mag, "subtract": a.mag + b.mag, "multiply": a.mag * b.mag,
                   "divide": a.mag, "remainder": min(a.mag, b.mag), "maximum": max(a.mag, b.mag),
                   "minimum": max(a.mag, b.mag)}.get(op, type_max(t))
            if op in ("divide", "remainder") and not is_signed(t):
                mag = a.mag if op == "divide" else min(a.mag, b.mag)
            if op == "divide":
                mag = max(mag, 1.0) if not is_signed(t) else max(a.mag, 1.0)
                if not is_signed(t):
                    mag = type_max(t)                  # x / 0 is all ones
            return c.emit(t, a.dims, f"{op}({a.name}, {b.name})", mag=mag, operands=[a, b])
        op = self.choice(["add", "subtract", "multiply", "maximum", "minimum", "add", "multiply",
                          "divide", "remainder", "power", "atan2", "safe_divide"])
        approx_in = a.err > 0
        if op in ("divide", "remainder", "power", "atan2") and approx_in:
            raise Unsupported
        b = c.like(t, a.dims, exact=op in ("divide", "remainder", "power", "atan2"),
                   tame=approx_in)
        if rng.random() < 0.5 and op not in ("safe_divide",):
            a, b = b, a
        e = max(a.err, b.err)
        if op in ("add", "subtract"):
            mag = a.mag + b.mag
            err = (e + EPS[t]) if e > 0 else 0.0
            if e > 0 and mag > FMAX[t] / 64:
                raise Unsupported
        elif op == "multiply":
            mag = a.mag * b.mag
            err = (a.err + b.err + EPS[t]) if e > 0 else 0.0
            if e > 0 and mag > FMAX[t] / 64:
                raise Unsupported
        elif op in ("maximum", "minimum"):
            mag, err = max(a.mag, b.mag), e
        elif op == "divide":
            mag, err = INF, 0.0
        elif op == "remainder":
            mag, err = min(a.mag, b.mag), 0.0
        elif op == "power":
            # 0 ** negative and denormal ** negative are huge or inf: no magnitude bound
            mag, err = INF, op_err(t)
        elif op == "atan2":
            mag, err = 4.0, op_err(t)
        else:                                                      # safe_divide: a / (|b| + 1)
            ab = c.emit(t, b.dims, f"abs({b.name})", err=b.err, mag=b.mag, clean=False,
                        operands=[b])
            one = c.constant(t, 1.0)
            bo = c.emit(t, b.dims, f"broadcast({one.name}), dimensions={{}}", mag=1.0,
                        pool=False, operands=[one])
            den = c.emit(t, b.dims, f"add({ab.name}, {bo.name})",
                         err=(b.err + EPS[t]) if b.err else 0.0, mag=b.mag + 1, clean=False,
                         operands=[ab, bo])
            err = (a.err + den.err + EPS[t]) if (a.err or den.err) else 0.0
            return c.emit(t, a.dims, f"divide({a.name}, {den.name})", err=err, mag=a.mag,
                          clean=False, operands=[a, den])
        return c.emit(t, a.dims, f"{op}({a.name}, {b.name})", err=err, mag=mag, clean=False,
                      operands=[a, b])

    def op_int_special(self, c: Comp) -> V | None:
        """Integer divide/remainder/shifts/power/mulhi with the edge operands XLA defines:
        x / 0, INT_MIN / -1, shift amounts >= the bit width, negative exponents."""
        rng = self.rng
        t = self.rand_type(INTS)
        dims = self.rand_dims(int(rng.integers(1, 3)))
        if not dims or int(np.prod(dims)) == 0:
            dims = (int(rng.integers(4, 9)),)
        if c.entry and self.n_params + 2 <= self.prof.max_params and rng.random() < 0.6:
            a = self.new_param(t, dims, "wild")
            ia = len(self.inputs) - 1
            b = self.new_param(t, dims, "wild")
            ib = len(self.inputs) - 1
            fa, fb = self.inputs[ia].reshape(-1), self.inputs[ib].reshape(-1)
            n = fa.size
            pairs = [(imin(t), -1 % (imax(t) + 1) if not is_signed(t) else -1), (imax(t), 0),
                     (imin(t), 0), (5, BITS[t]), (-7 if is_signed(t) else 7, BITS[t] - 1),
                     (3, BITS[t] + 1), (imin(t), 1), (-1 if is_signed(t) else imax(t), 2)]
            for k in rng.choice(n, min(n, len(pairs)), replace=False):
                pa, pb = pairs[int(rng.integers(len(pairs)))]
                fa[k], fb[k] = np.array(pa).astype(fa.dtype), np.array(pb).astype(fb.dtype)
        else:
            a = c.like(t, dims, reuse=0.3)
            b = c.like(t, dims, reuse=0.3)
        op = self.choice(["divide", "remainder", "shift-left", "shift-right-arithmetic",
                          "shift-right-logical", "power", "multiply", "mulhi", "divide",
                          "remainder"])
        return c.emit(t, dims, f"{op}({a.name}, {b.name})", mag=type_max(t), operands=[a, b])

    def op_compare_select(self, c: Comp) -> V | None:
        rng = self.rng
        a = c.pick(lambda v: v.err == 0)
        if a is None:
            return None
        b = c.like(a.ty, a.dims, exact=True)
        d = self.choice(["LT", "GT", "LE", "GE", "EQ", "NE"])
        extra = ""
        if is_float(a.ty) and a.clean and b.clean and rng.random() < 0.3:
            extra = ", type=TOTALORDER"
        elif is_int(a.ty) and rng.random() < 0.2:
            extra = ", type=" + ("UNSIGNED" if is_signed(a.ty) else "SIGNED")
        p = c.emit("pred", a.dims, f"compare({a.name}, {b.name}), direction={d}{extra}",
                   operands=[a, b])
        if rng.random() < 0.25:
            return p
        x = c.pick(lambda v: v.dims == a.dims and v.ty != "pred") or a
        y = c.like(x.ty, x.dims, tame=x.err > 0)
        return c.emit(x.ty, x.dims, f"select({p.name}, {x.name}, {y.name})",
                      err=max(x.err, y.err), mag=max(x.mag, y.mag), clean=x.clean and y.clean,
                      operands=[p, x, y])

    def op_clamp(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.ty != "pred")
        if x is None:
            return None
        if self.rng.random() < 0.5:
            lo, hi = c.scalar(x.ty), c.scalar(x.ty)
        else:
            lo, hi = c.like(x.ty, x.dims, exact=True), c.like(x.ty, x.dims, exact=True)
        return c.emit(x.ty, x.dims, f"clamp({lo.name}, {x.name}, {hi.name})", err=x.err,
                      mag=max(x.mag, lo.mag, hi.mag), clean=False, operands=[lo, x, hi])

    def op_convert(self, c: Comp) -> V | None:
        x = c.pick()
        if x is None:
            return None
        to = self.rand_type()
        if to == x.ty:
            to = "f32" if x.ty != "f32" else "s32"
        if is_float(x.ty) and not is_float(to) and x.err > 0:
            raise Unsupported
        err, mag = 0.0, x.mag
        if is_float(to):
            if x.err > 0:
                if x.mag >= FMAX[to] / 64:
                    raise Unsupported
                err = x.err + EPS[to]
            if mag > FMAX[to]:
                mag = INF
        elif to == "pred":
            mag = 1.0
        else:
            mag = min(x.mag, type_max(to)) if (is_int(x.ty) and is_signed(x.ty) == is_signed(to)
                                               and BITS[x.ty] <= BITS[to]) else type_max(to)
            if x.ty == "pred":
                mag = 1.0
        return c.emit(to, x.dims, f"convert({x.name})", err=err, mag=mag,
                      clean=not is_float(x.ty) or x.ty == "pred", operands=[x])

    def op_bitcast_convert(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.err == 0 and v.clean and v.ty != "pred")
        if x is None:
            return None
        bits = BITS[x.ty]
        targets = [t for t in ALL_TYPES if t != "pred"]
        same = [t for t in targets if BITS[t] == bits and t != x.ty]
        rng = self.rng
        if same and rng.random() < 0.6:
            to = self.choice(same)
            return c.emit(to, x.dims, f"bitcast-convert({x.name})", mag=type_max(to),
                          operands=[x])
        if rng.random() < 0.5:                        # to a narrower type: extra minor dim
            narrow = [t for t in targets if BITS[t] < bits]
            if not narrow:
                raise Unsupported
            to = self.choice(narrow)
            dims = x.dims + (bits // BITS[to],)
            if int(np.prod(dims)) > self.prof.max_elems:
                raise Unsupported
            return c.emit(to, dims, f"bitcast-convert({x.name})", mag=type_max(to),
                          operands=[x])
        wide = [t for t in targets if BITS[t] > bits]
        if not wide or not x.dims:
            raise Unsupported
        to = self.choice(wide)
        ratio = BITS[to] // bits
        if x.dims[-1] != ratio:
            raise Unsupported
        return c.emit(to, x.dims[:-1], f"bitcast-convert({x.name})", mag=type_max(to),
                      operands=[x])

    def op_reduce_precision(self, c: Comp) -> V | None:
        x = c.pick(lambda v: is_float(v.ty))
        if x is None:
            return None
        eb = int(self.rng.integers(1, EXP_BITS[x.ty] + 1))
        mb = int(self.rng.integers(0, MANT_BITS[x.ty] + 1))
        err = 0.0
        if x.err > 0:
            if mb < 6:
                raise Unsupported
            rmax = 2.0 ** min(2 ** (eb - 1), 1023)
            if x.mag > rmax / 4:
                raise Unsupported
            err = x.err + 2.0 ** -mb
        return c.emit(x.ty, x.dims, f"reduce-precision({x.name}), exponent_bits={eb}, "
                                    f"mantissa_bits={mb}", err=err, mag=x.mag, clean=False,
                      operands=[x])
