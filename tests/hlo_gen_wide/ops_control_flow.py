"""Control flow op generators: while loops, scan-like loops, conditionals, call and
map (sub-computations generated with the ops in ``SUB_OPS``).
"""
from __future__ import annotations

import numpy as np

from .computation import V, Comp, Unsupported
from .profiles import DEFAULT_WEIGHTS, SUB_OPS
from .types_and_values import FLOATS, INF, is_float


class ControlFlowOps:
    """The control flow ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    def _sub_body(self, name: str, param_shapes: list[V], results: list[V], tuple_param: bool,
                  depth: int, extra_lines=None, n_ops=None):
        """Generate a computation whose parameters look like ``param_shapes`` (values
        with err/mag), and which returns values shaped like ``results``. Returns
        (text, [(err, mag) per result], root names)."""
        sub = Comp(self, name, False, depth)
        if tuple_param:
            pname = self.new_name("w")
            tshape = "(" + ", ".join(p.shape for p in param_shapes) + ")"
            sub.lines.append(f"  {pname} = {tshape} parameter(0)")
            for i, p in enumerate(param_shapes):
                sub.emit(p.ty, p.dims, f"get-tuple-element({pname}), index={i}", err=p.err,
                         mag=p.mag, clean=p.clean)
        else:
            for i, p in enumerate(param_shapes):
                sub.emit(p.ty, p.dims, f"parameter({i})", err=p.err, mag=p.mag, clean=p.clean)
        params = list(sub.pool)
        if extra_lines:
            extra_lines(sub, params)
        weights = {k: v for k, v in DEFAULT_WEIGHTS.items() if k in SUB_OPS}
        if depth >= 2:
            weights.pop("conditional", None)
        self.generate_ops(sub, n_ops if n_ops is not None else int(self.rng.integers(1, 6)),
                          weights)
        outs = []
        for r in results:
            cands = [v for v in sub.pool if v.ty == r.ty and v.dims == r.dims]
            fresh = [v for v in cands if v not in params]
            if fresh and self.rng.random() < 0.85:
                pick = fresh[-1]
            else:
                pick = cands[int(self.rng.integers(len(cands)))] if cands else None
            if pick is None:
                pick = sub.like(r.ty, r.dims)
            outs.append(pick)
        return sub, outs

    def op_while(self, c: Comp) -> V | None:
        if c.depth >= 2:
            return None
        rng = self.rng
        k = int(rng.integers(1, 3))
        vals = []
        for _ in range(k):
            v = c.pick(lambda v: v.size <= 4096)
            if v is None:
                return None
            vals.append(v)
        trip_max = 4
        if c.entry and self.can_add_param() and rng.random() < 0.4:
            bound = self.new_param("s32", (), "index")
            self.inputs[-1] = np.int32(rng.integers(-2, 5))
        else:
            bound = c.constant("s32", int(rng.integers(0, trip_max + 1)))
        zero = c.constant("s32", 0)
        state = [V("", "s32", (), 0.0, 16.0), V("", "s32", (), 0.0, 16.0)] + vals
        tshape = "(" + ", ".join(s.shape for s in state) + ")"
        body_name, cond_name = self.new_name("body_"), self.new_name("cond_")
        # body
        counter = {}

        def setup(sub: Comp, params: list[V]) -> None:
            one = sub.constant("s32", 1)
            counter["next"] = sub.emit("s32", (), f"add({params[0].name}, {one.name})", mag=16.0,
                                       pool=False)
            if rng.random() < 0.5 and params[2:]:
                # make the counter visible to the body's ops
                pv = params[2]
                cv = sub.emit(pv.ty, (), f"convert({params[0].name})", mag=16.0, pool=False)
                sub.emit(pv.ty, pv.dims, f"broadcast({cv.name}), dimensions={{}}", mag=16.0)
        sub, outs = self._sub_body(body_name, state, state[2:], True, c.depth + 1,
                                   extra_lines=setup)
        results = [counter["next"], sub.pool[1]] + outs
        root = self.new_name("w")
        sub.lines.append(f"  ROOT {root} = {tshape} tuple({', '.join(r.name for r in results)})")
        body_text = f"{body_name} {{\n" + "\n".join(sub.lines) + "\n}\n"
        cp, c0, c1, cr = (self.new_name("w") for _ in range(4))
        cond_text = (f"{cond_name} {{\n  {cp} = {tshape} parameter(0)\n"
                     f"  {c0} = s32[] get-tuple-element({cp}), index=0\n"
                     f"  {c1} = s32[] get-tuple-element({cp}), index=1\n"
                     f"  ROOT {cr} = pred[] compare({c0}, {c1}), direction=LT\n}}\n")
        self.add_comp(body_text)
        self.add_comp(cond_text)
        init = c.emit_raw(tshape, f"tuple({zero.name}, {bound.name}, "
                                  f"{', '.join(v.name for v in vals)})",
                          operands=[zero, bound, *vals])
        loop = c.emit_raw(tshape, f"while({init}), condition={cond_name}, body={body_name}")
        res = None
        for i, (v, o) in enumerate(zip(vals, outs)):
            if v.err == 0 and o.err == 0:
                err, mag = 0.0, (v.mag if o.mag <= v.mag else INF)
            else:
                if is_float(v.ty) and o.mag > v.mag:
                    raise Unsupported          # growing approximate values: overflow risk
                err, mag = max(v.err, o.err) * 4.0 ** trip_max, v.mag
            r = c.emit(v.ty, v.dims, f"get-tuple-element({loop}), index={i + 2}", err=err,
                       mag=mag, clean=False)
            res = res or r
        if rng.random() < 0.3:
            c.emit("s32", (), f"get-tuple-element({loop}), index=0", mag=16.0)
        return res

    def op_scan(self, c: Comp) -> V | None:
        """A scan-like while loop: each trip updates ``x`` and writes it into row ``i`` of
        an accumulator with dynamic-update-slice (in place on the CPU), reading the
        previous row back with dynamic-slice."""
        if c.depth >= 2:
            return None
        rng = self.rng
        x = c.pick(lambda v: 0 < v.size <= 1024 and v.rank <= 3)
        if x is None:
            return None
        trips = int(rng.integers(1, 6))
        rows = trips + int(rng.integers(0, 2))
        it = self.choice(["s32", "s32", "s64", "u32"])
        acc_dims = (rows,) + x.dims
        if int(np.prod(acc_dims)) > self.prof.max_elems:
            raise Unsupported
        acc0 = c.like(x.ty, acc_dims, tame=x.err > 0)
        state_t = [V("", it, (), 0.0, 16.0), V("", it, (), 0.0, 16.0), x, acc0]
        tshape = "(" + ", ".join(v.shape for v in state_t) + ")"
        body_name, cond_name = self.new_name("scan_body_"), self.new_name("scan_cond_")
        sub = Comp(self, body_name, False, c.depth + 1)
        pname = self.new_name("w")
        sub.lines.append(f"  {pname} = {tshape} parameter(0)")
        g = [sub.emit(v.ty, v.dims, f"get-tuple-element({pname}), index={i}", err=v.err,
                      mag=v.mag, clean=v.clean, pool=i == 2)
             for i, v in enumerate(state_t)]
        zero = sub.constant(it, 0)
        one = sub.constant(it, 1)
        nxt = sub.emit(it, (), f"add({g[0].name}, {one.name})", mag=16.0, pool=False)
        zeros = ", ".join([zero.name] * x.rank)
        if rng.random() < 0.5:                        # read the previous row back
            prev = sub.emit(it, (), f"subtract({g[0].name}, {one.name})", mag=16.0, pool=False)
            row = sub.emit(x.ty, (1,) + x.dims, f"dynamic-slice({g[3].name}, {prev.name}"
                           f"{', ' + zeros if zeros else ''}), dynamic_slice_sizes="
                           f"{{{','.join(map(str, (1,) + x.dims))}}}", err=g[3].err,
                           mag=g[3].mag, clean=g[3].clean, pool=False)
            sub.emit(x.ty, x.dims, f"reshape({row.name})", err=row.err, mag=row.mag,
                     clean=row.clean)
        self.generate_ops(sub, int(rng.integers(1, 5)),
                          {k: v for k, v in DEFAULT_WEIGHTS.items() if k in SUB_OPS and
                           k not in ("conditional", "sort", "dot")})
        cands = [v for v in sub.pool if v.ty == x.ty and v.dims == x.dims]
        y = cands[-1] if rng.random() < 0.8 else cands[int(rng.integers(len(cands)))]
        upd = sub.emit(x.ty, (1,) + x.dims, f"reshape({y.name})", err=y.err, mag=y.mag,
                       clean=y.clean, pool=False)
        acc = sub.emit(x.ty, acc_dims, f"dynamic-update-slice({g[3].name}, {upd.name}, "
                                       f"{g[0].name}{', ' + zeros if zeros else ''})",
                       err=max(y.err, g[3].err), mag=max(y.mag, g[3].mag),
                       clean=y.clean and g[3].clean, pool=False)
        sub.lines.append(f"  ROOT {self.new_name('w')} = {tshape} tuple({nxt.name}, {g[1].name}, "
                         f"{y.name}, {acc.name})")
        self.add_comp(f"{body_name} {{\n" + "\n".join(sub.lines) + "\n}\n")
        cp, c0, c1, cr = (self.new_name("w") for _ in range(4))
        self.add_comp(f"{cond_name} {{\n  {cp} = {tshape} parameter(0)\n"
                      f"  {c0} = {it}[] get-tuple-element({cp}), index=0\n"
                      f"  {c1} = {it}[] get-tuple-element({cp}), index=1\n"
                      f"  ROOT {cr} = pred[] compare({c0}, {c1}), direction=LT\n}}\n")
        if y.err == 0 and x.err == 0 and acc0.err == 0:
            err = 0.0
            mag = max(x.mag, acc0.mag) if y.mag <= x.mag else INF
        else:
            if is_float(x.ty) and y.mag > x.mag:
                raise Unsupported
            err, mag = max(x.err, y.err, acc0.err) * 4.0 ** trips, max(x.mag, acc0.mag)
        i0 = c.constant(it, 0)
        n = c.constant(it, trips)
        init = c.emit_raw(tshape, f"tuple({i0.name}, {n.name}, {x.name}, {acc0.name})",
                          operands=[x, acc0])
        loop = c.emit_raw(tshape, f"while({init}), condition={cond_name}, body={body_name}")
        last = c.emit(x.ty, x.dims, f"get-tuple-element({loop}), index=2", err=err, mag=mag,
                      clean=False)
        out = c.emit(x.ty, acc_dims, f"get-tuple-element({loop}), index=3", err=err, mag=mag,
                     clean=False)
        return out if rng.random() < 0.7 else last

    def op_conditional(self, c: Comp) -> V | None:
        if c.depth >= 2:
            return None
        rng = self.rng
        x = c.pick(lambda v: v.size <= 4096)
        if x is None:
            return None
        nb = int(rng.choice([2, 2, 3, 1]))
        use_pred = nb == 2 and rng.random() < 0.5
        if use_pred:
            sel = c.pick(lambda v: v.ty == "pred" and v.dims == () and v.err == 0)
            if sel is None:
                if c.entry and self.can_add_param():
                    sel = self.new_param("pred", ())
                else:
                    a = c.pick(lambda v: v.err == 0 and v.ty != "pred" and v.size > 0
                               and v.rank >= 1)
                    if a is None:
                        sel = c.constant("pred", bool(rng.random() < 0.5))
                    else:
                        zi = [c.constant("s32", 0) for _ in a.dims]
                        ones = ",".join(["1"] * a.rank)
                        s = c.emit(a.ty, [1] * a.rank, f"dynamic-slice({a.name}, "
                                   f"{', '.join(z.name for z in zi)}), "
                                   f"dynamic_slice_sizes={{{ones}}}",
                                   mag=a.mag, pool=False)
                        s0 = c.emit(a.ty, (), f"reshape({s.name})", mag=a.mag, pool=False)
                        z = c.constant(a.ty, 0)
                        sel = c.emit("pred", (), f"compare({s0.name}, {z.name}), direction=GT",
                                     pool=False)
        else:
            if c.entry and self.can_add_param() and rng.random() < 0.7:
                sel = self.new_param("s32", (), "index")
                self.inputs[-1] = np.int32(rng.integers(-2, nb + 3))
            else:
                sel = c.constant("s32", int(rng.integers(-1, nb + 2)))
        # branch operands: each branch takes its own operand of x's shape (or a tuple)
        operands, branch_names, outs_info = [], [], []
        for bi in range(nb):
            op = c.like(x.ty, x.dims) if rng.random() < 0.4 else x
            operands.append(op)
            bname = self.new_name("branch_")
            tuple_param = rng.random() < 0.3
            sub, outs = self._sub_body(bname, [op], [x], tuple_param, c.depth + 1)
            o = outs[0]
            sub.lines.append(f"  ROOT {self.new_name('w')} = {o.shape} copy({o.name})")
            self.add_comp(f"{bname} {{\n" + "\n".join(sub.lines) + "\n}\n")
            branch_names.append((bname, tuple_param, op))
            outs_info.append(o)
        args = []
        for bname, tuple_param, op in branch_names:
            if tuple_param:
                args.append(c.emit_raw(f"({op.shape})", f"tuple({op.name})", operands=[op]))
            else:
                args.append(op.name)
                op.uses += 1
        if use_pred:
            comps = f"true_computation={branch_names[0][0]}, false_computation={branch_names[1][0]}"
        else:
            comps = "branch_computations={" + ", ".join(b[0] for b in branch_names) + "}"
        err = max(o.err for o in outs_info)
        mag = max(o.mag for o in outs_info)
        sel.uses += 1
        return c.emit(x.ty, x.dims, f"conditional({sel.name}, {', '.join(args)}), {comps}",
                      err=err, mag=mag, clean=False)

    def op_call(self, c: Comp) -> V | None:
        if c.depth >= 2:
            return None
        x = c.pick(lambda v: v.size <= 4096)
        if x is None:
            return None
        y = c.pick(lambda v: v.size <= 4096) or x
        name = self.new_name("callee_")
        sub, outs = self._sub_body(name, [x, y], [x], False, c.depth + 1)
        o = outs[0]
        sub.lines.append(f"  ROOT {self.new_name('w')} = {o.shape} copy({o.name})")
        self.add_comp(f"{name} {{\n" + "\n".join(sub.lines) + "\n}\n")
        return c.emit(x.ty, x.dims, f"call({x.name}, {y.name}), to_apply={name}", err=o.err,
                      mag=o.mag, clean=False, operands=[x, y])

    def op_map(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.ty in FLOATS + ("s32",) and v.size <= 4096 and v.err == 0)
        if x is None:
            return None
        y = c.like(x.ty, x.dims, exact=True)
        name = self.new_name("mapped_")
        a, b, m, r = (self.new_name("w") for _ in range(4))
        op = self.choice(["add", "multiply", "maximum", "subtract"])
        self.add_comp(f"{name} {{\n  {a} = {x.ty}[] parameter(0)\n  {b} = {x.ty}[] parameter(1)\n"
                      f"  {m} = {x.ty}[] {op}({a}, {b})\n  ROOT {r} = {x.ty}[] negate({m})\n}}\n")
        dims = ",".join(map(str, range(x.rank)))
        return c.emit(x.ty, x.dims, f"map({x.name}, {y.name}), dimensions={{{dims}}}, "
                                    f"to_apply={name}", mag=INF, clean=False, operands=[x, y])
