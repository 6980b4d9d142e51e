"""Reduction, window and sort op generators: reduce, variadic argmax, reduce-window,
select-and-scatter and sort.
"""
from __future__ import annotations

import math

import numpy as np

from .computation import V, Comp, Unsupported
from .types_and_values import (EPS, FMAX, acc_eps, imax, imin, is_float, is_int, is_signed,
                               shape_text, sum_err, type_max)


class ReductionAndSortOps:
    """The reduction, window and sort ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    def _reducer(self, t: str, mag: float, n: int,
                 approx_ok: bool) -> tuple[str, object, float, float]:
        """(op, init value, err, mag) of a reducer for values of type ``t``."""
        rng = self.rng
        if t == "pred":
            op = self.choice(["and", "or", "xor"])
            return op, (op == "and"), 0.0, 1.0
        if is_int(t):
            op = self.choice(["add", "multiply", "maximum", "minimum", "and", "or", "xor"])
            ident = {"add": 0, "multiply": 1, "maximum": imin(t), "minimum": imax(t), "and": -1 if
                     is_signed(t) else imax(t), "or": 0, "xor": 0}[op]
            init = ident
            if rng.random() < 0.25:
                init = int(rng.integers(-3, 4)) if is_signed(t) else int(rng.integers(0, 4))
            return op, init, 0.0, type_max(t)
        op = self.choice(["add", "add", "maximum", "minimum", "multiply"])
        if op == "multiply" and (n > 8 or mag > 4):
            op = "add"
        if op in ("add", "multiply") and n >= 3:
            if not approx_ok or mag * n > FMAX[t] / 64:
                op = "maximum"
        if op == "add":
            init = -0.0 if rng.random() < 0.2 else 0.0
            return op, init, (sum_err(t, n) if n >= 3 else 0.0), mag * max(n, 1)
        if op == "multiply":
            return op, 1.0, (4 * n * acc_eps(t) + EPS[t] if n >= 3 else 0.0), mag ** max(n, 1)
        ident = -math.inf if op == "maximum" else math.inf
        init = ident
        r = rng.random()
        if r < 0.2:
            init = float(self.choice([0.0, -0.0, 1.0, -1.0, math.nan]))
        return op, init, 0.0, mag

    def op_reduce(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        rng = self.rng
        k = int(rng.integers(1, x.rank + 1))
        if rng.random() < 0.05:
            k = 0
        rd = sorted(rng.choice(x.rank, k, replace=False).tolist())
        n = int(np.prod([x.dims[i] for i in rd])) if rd else 1
        approx_ok = x.mag < 1e4
        op, init, err, mag = self._reducer(x.ty, x.mag, n, approx_ok)
        if x.err > 0 and op in ("add", "multiply"):
            err += x.err * (n if op == "multiply" else 1)
        else:
            err = max(err, x.err)
        if x.err > 0 and op == "multiply":
            raise Unsupported
        iv = c.constant(x.ty, init)
        out = [d for i, d in enumerate(x.dims) if i not in rd]
        rds = ",".join(map(str, rd))
        return c.emit(x.ty, out, f"reduce({x.name}, {iv.name}), dimensions={{{rds}}}, "
                                 f"to_apply={self.binary_comp(op, x.ty)}", err=err, mag=mag,
                      clean=False, operands=[x, iv])

    def _argmax_comp(self, t: str, it: str) -> str:
        """A total, index-tie-broken argmax reducer: associative and commutative (NaN wins,
        lower index wins among equal values or among NaNs)."""
        key = ("argmax", t, it)
        if key in self.memo:
            return self.memo[key]
        name = self.new_name("argmax_")
        n = {k: self.new_name("w") for k in ["av", "ai", "bv", "bi", "gt", "eq", "ilt", "an",
                                             "bn", "nbn", "annb", "both", "bothlt", "eqlt",
                                             "w1", "w2", "w3", "win", "rv", "ri", "na"]}
        cmp_extra = ""
        lines = [f"  {n['av']} = {t}[] parameter(0)", f"  {n['ai']} = {it}[] parameter(1)",
                 f"  {n['bv']} = {t}[] parameter(2)", f"  {n['bi']} = {it}[] parameter(3)",
                 f"  {n['gt']} = pred[] compare({n['av']}, {n['bv']}), direction=GT{cmp_extra}",
                 f"  {n['eq']} = pred[] compare({n['av']}, {n['bv']}), direction=EQ{cmp_extra}",
                 f"  {n['ilt']} = pred[] compare({n['ai']}, {n['bi']}), direction=LT",
                 f"  {n['eqlt']} = pred[] and({n['eq']}, {n['ilt']})",
                 f"  {n['w1']} = pred[] or({n['gt']}, {n['eqlt']})"]
        if is_float(t):
            lines += [f"  {n['an']} = pred[] compare({n['av']}, {n['av']}), direction=NE",
                      f"  {n['bn']} = pred[] compare({n['bv']}, {n['bv']}), direction=NE",
                      f"  {n['nbn']} = pred[] not({n['bn']})",
                      f"  {n['annb']} = pred[] and({n['an']}, {n['nbn']})",
                      f"  {n['both']} = pred[] and({n['an']}, {n['bn']})",
                      f"  {n['bothlt']} = pred[] and({n['both']}, {n['ilt']})",
                      f"  {n['w2']} = pred[] or({n['w1']}, {n['annb']})",
                      f"  {n['win']} = pred[] or({n['w2']}, {n['bothlt']})"]
        else:
            lines += [f"  {n['win']} = pred[] copy({n['w1']})"]
        lines += [f"  {n['rv']} = {t}[] select({n['win']}, {n['av']}, {n['bv']})",
                  f"  {n['ri']} = {it}[] select({n['win']}, {n['ai']}, {n['bi']})",
                  f"  ROOT {n['w3']} = ({t}[], {it}[]) tuple({n['rv']}, {n['ri']})"]
        self.add_comp(f"{name} {{\n" + "\n".join(lines) + "\n}\n")
        self.memo[key] = name
        return name

    def op_argmax(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1 and v.err == 0 and v.ty != "pred" and
                   (v.clean or not is_float(v.ty) or True))
        if x is None:
            return None
        rng = self.rng
        d = int(rng.integers(x.rank))
        it = self.choice(["s32", "s32", "s64"])
        idx = c.emit(it, x.dims, f"iota(), iota_dimension={d}", mag=float(max(x.dims)),
                     pool=False)
        iv = c.constant(x.ty, -math.inf if is_float(x.ty) else imin(x.ty))
        ii = c.constant(it, imax(it))
        out = [s for i, s in enumerate(x.dims) if i != d]
        nm = self._argmax_comp(x.ty, it)
        tshape = f"({shape_text(x.ty, out)}, {shape_text(it, out)})"
        tup = c.emit_raw(tshape, f"reduce({x.name}, {idx.name}, {iv.name}, {ii.name}), "
                                 f"dimensions={{{d}}}, to_apply={nm}", operands=[x, idx, iv, ii])
        v0 = c.emit(x.ty, out, f"get-tuple-element({tup}), index=0", mag=x.mag, clean=False)
        v1 = c.emit(it, out, f"get-tuple-element({tup}), index=1", mag=type_max(it))
        return v1 if rng.random() < 0.6 else v0

    def _window(self, dims, allow_dilation: bool, allow_pad: bool = True):
        rng = self.rng
        size, stride, pad, bd, wd, out = [], [], [], [], [], []
        for d in dims:
            for _ in range(20):
                w = int(rng.integers(1, min(d, 4) + 1)) if d > 0 else 1
                s = int(rng.choice([1, 1, 2, 3]))
                lo, hi = (int(rng.integers(0, 3)), int(rng.integers(0, 3))) if allow_pad and \
                    rng.random() < 0.5 else (0, 0)
                b = int(rng.choice([1, 1, 1, 2])) if allow_dilation else 1
                wdl = int(rng.choice([1, 1, 1, 2])) if allow_dilation else 1
                padded = ((d - 1) * b + 1 if d > 0 else 0) + lo + hi
                eff = (w - 1) * wdl + 1
                if padded >= eff:
                    break
            else:
                w, s, lo, hi, b, wdl = 1, 1, 0, 0, 1, 1
                padded, eff = d, 1
            size.append(w)
            stride.append(s)
            pad.append(f"{lo}_{hi}")
            bd.append(b)
            wd.append(wdl)
            out.append(max(0, (padded - eff) // s + 1) if padded >= eff else 0)
        x = lambda a: "x".join(map(str, a))  # noqa: E731
        text = f"size={x(size)} stride={x(stride)} pad={x(pad)}"
        if any(b != 1 for b in bd):
            text += f" lhs_dilate={x(bd)}"
        if any(w != 1 for w in wd):
            text += f" rhs_dilate={x(wd)}"
        return text, out, int(np.prod(size))

    def op_reduce_window(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        win, out, n = self._window(x.dims, allow_dilation=True)
        if int(np.prod(out)) > self.prof.max_elems:
            raise Unsupported
        op, init, err, mag = self._reducer(x.ty, x.mag, n, x.mag < 1e4)
        if op == "add" and is_float(x.ty):
            init = 0.0                              # padding is skipped, not init-filled
            if n >= 3:
                err = sum_err(x.ty, n)
        if is_int(x.ty) and op in ("add", "multiply", "and", "or", "xor"):
            init = {"add": 0, "multiply": 1, "and": -1 if is_signed(x.ty) else imax(x.ty),
                    "or": 0, "xor": 0}[op]
        if x.ty == "pred":
            init = op == "and"
        if x.err > 0:
            if op == "multiply":
                raise Unsupported
            err = err + x.err
        iv = c.constant(x.ty, init)
        return c.emit(x.ty, out, f"reduce-window({x.name}, {iv.name}), window={{{win}}}, "
                                 f"to_apply={self.binary_comp(op, x.ty)}", err=err, mag=mag,
                      clean=False, operands=[x, iv])

    def _select_comp(self, t: str, direction: str) -> str:
        key = ("select", t, direction)
        if key not in self.memo:
            name = self.new_name("select_")
            a, b, r = self.new_name("w"), self.new_name("w"), self.new_name("w")
            self.add_comp(f"{name} {{\n  {a} = {t}[] parameter(0)\n  {b} = {t}[] parameter(1)\n"
                          f"  ROOT {r} = pred[] compare({a}, {b}), direction={direction}\n}}\n")
            self.memo[key] = name
        return self.memo[key]

    def op_select_and_scatter(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1 and v.err == 0 and v.ty != "pred" and v.size > 0)
        if x is None:
            return None
        win, out, n = self._window(x.dims, allow_dilation=False)
        if int(np.prod(out)) == 0:
            raise Unsupported
        t = x.ty
        src = c.like(t, out, tame=True)
        if is_float(t) and src.mag > 1e3:
            raise Unsupported
        err = 0.0
        if is_float(t):
            err = src.err + sum_err(t, 16) + EPS[t]
        iv = c.constant(t, 0)
        sel = self._select_comp(t, self.choice(["GE", "GT", "LE", "LT"]))
        mag = src.mag * 16 if is_float(t) else type_max(t)
        return c.emit(t, x.dims, f"select-and-scatter({x.name}, {src.name}, {iv.name}), "
                                 f"window={{{win}}}, select={sel}, "
                                 f"scatter={self.binary_comp('add', t)}",
                      err=err, mag=mag, clean=False, operands=[x, src, iv])

    def _sort_comp(self, types, direction: str, two_keys: bool) -> str:
        name = self.new_name("cmp_")
        ps = []
        lines = []
        for i, t in enumerate(types):
            for side in ("l", "r"):
                p = self.new_name("w")
                ps.append(p)
                lines.append(f"  {p} = {t}[] parameter({len(ps) - 1})")

        def cmp(i: int, d: str) -> str:
            t = types[i]
            extra = ", type=TOTALORDER" if is_float(t) else ""
            nm = self.new_name("w")
            lines.append(f"  {nm} = pred[] compare({ps[2 * i]}, {ps[2 * i + 1]}), "
                         f"direction={d}{extra}")
            return nm
        first = cmp(0, direction)
        if two_keys:
            eq = cmp(0, "EQ")
            second = cmp(1, direction)
            both = self.new_name("w")
            lines.append(f"  {both} = pred[] and({eq}, {second})")
            r = self.new_name("w")
            lines.append(f"  ROOT {r} = pred[] or({first}, {both})")
        else:
            lines[-1] = lines[-1].replace(f"  {first} =", f"  ROOT {first} =")
        self.add_comp(f"{name} {{\n" + "\n".join(lines) + "\n}\n")
        return name

    def op_sort(self, c: Comp) -> V | None:
        key = c.pick(lambda v: v.rank >= 1 and v.err == 0 and v.clean)
        if key is None:
            return None
        rng = self.rng
        d = int(rng.integers(key.rank))
        if self.prof.large_shapes and key.dims[d] > 5000:
            raise Unsupported
        ops = [key]
        for _ in range(int(rng.choice([0, 0, 1, 2]))):
            ops.append(c.like(self.rand_type(), key.dims))
        two = len(ops) > 1 and ops[1].err == 0 and ops[1].clean and rng.random() < 0.4
        stable = len(ops) > 1 or rng.random() < 0.5
        if len(ops) > 1 and two and rng.random() < 0.5:
            stable = False
        # with only the key compared, ties among equal keys need a stable sort
        if len(ops) > 1 and not two:
            stable = True
        if two and len(ops) > 2:
            stable = True
        comp = self._sort_comp([o.ty for o in ops], self.choice(["LT", "GT"]), two)
        st = ", is_stable=true" if stable else ""
        args = ", ".join(o.name for o in ops)
        if len(ops) == 1:
            return self._move(c, key, key.dims, f"sort({args}), dimensions={{{d}}}, "
                                                f"to_apply={comp}{st}")
        tshape = "(" + ", ".join(o.shape for o in ops) + ")"
        tup = c.emit_raw(tshape, f"sort({args}), dimensions={{{d}}}, to_apply={comp}{st}",
                         operands=ops)
        outs = [c.emit(o.ty, o.dims, f"get-tuple-element({tup}), index={i}", err=o.err,
                       mag=o.mag, clean=o.clean) for i, o in enumerate(ops)]
        return outs[int(rng.integers(len(outs)))]
