"""Gather and scatter op generators: random dimension numbers, batching dimensions,
out-of-range indices, add/mul/max/min/overwrite combiners and variadic scatter.
"""
from __future__ import annotations

import numpy as np

from .computation import V, Comp, Unsupported
from .types_and_values import (EPS, FMAX, INF, imax, imin, is_float, is_int, is_signed,
                               literal_text, sum_err, type_max)


class GatherScatterOps:
    """The gather and scatter ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    def _indices(self, c: Comp, dims, bound: int) -> V:
        it = self.choice(["s32", "s32", "s64", "u32", "s8", "u8"])
        if c.entry and self.can_add_param() and self.rng.random() < 0.8:
            return self.new_param(it, dims, "index")
        vals = self.rng.integers(-2, bound + 3, size=dims)
        if not is_signed(it):
            vals = np.abs(vals)
        vals = np.clip(vals, imin(it), imax(it))
        return c.emit(it, dims, f"constant({literal_text(it, vals)})", mag=float(bound + 3))

    def op_gather(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1 and v.size > 0)
        if x is None:
            return None
        rng = self.rng
        r = x.rank
        # operand batching dimension (paired with an indices dimension of the same size)
        obd = [int(rng.integers(r))] if r >= 2 and rng.random() < 0.2 else []
        free = [i for i in range(r) if i not in obd]
        nidx = int(rng.integers(1, len(free) + 1))
        sim = rng.choice(free, nidx, replace=False).tolist()
        slice_sizes = [1 if i in obd else (int(rng.integers(1, d + 1)) if rng.random() < 0.7
                                           else d) for i, d in enumerate(x.dims)]
        ones = [i for i in range(r) if slice_sizes[i] == 1 and i not in obd]
        collapsed = sorted(i for i in ones if rng.random() < 0.7)
        batch = list(self.rand_dims(int(rng.integers(0, 3))))
        bpos = []
        if obd:
            k = int(rng.integers(len(batch) + 1))
            batch.insert(k, x.dims[obd[0]])
            bpos = [k]
        ivd = int(rng.integers(0, len(batch) + 1))
        idims = list(batch)
        if not (ivd == len(batch) and nidx == 1 and rng.random() < 0.5 and not obd):
            idims.insert(ivd, nidx)
        # the batching dimension's position among the indices' dimensions
        sibd = [b + (1 if len(idims) > len(batch) and b >= ivd else 0) for b in bpos]
        n_off = r - len(collapsed) - len(obd)
        out_rank = len(batch) + n_off
        offset_dims = sorted(rng.choice(out_rank, n_off, replace=False).tolist())
        out, bi, oi = [], 0, 0
        kept = [slice_sizes[i] for i in range(r) if i not in collapsed and i not in obd]
        for j in range(out_rank):
            if j in offset_dims:
                out.append(kept[oi])
                oi += 1
            else:
                out.append(batch[bi])
                bi += 1
        if int(np.prod(out)) > self.prof.max_elems:
            raise Unsupported
        idx = self._indices(c, idims, max(x.dims))
        j = lambda s: ",".join(map(str, s))  # noqa: E731
        bd = (f", operand_batching_dims={{{j(obd)}}}, start_indices_batching_dims={{{j(sibd)}}}"
              if obd else "")
        if obd:
            self.features.add("gather_batching_dims")
        return self._move(c, x, out,
                          f"gather({x.name}, {idx.name}), offset_dims={{{j(offset_dims)}}}, "
                          f"collapsed_slice_dims={{{j(collapsed)}}}, start_index_map="
                          f"{{{j(sim)}}}{bd}, index_vector_dim={ivd}, slice_sizes="
                          f"{{{j(slice_sizes)}}}", extra=[idx])

    def op_scatter(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1 and v.size > 0 and v.ty != "pred")
        if x is None:
            return None
        rng = self.rng
        r = x.rank
        ibd = [int(rng.integers(r))] if r >= 2 and rng.random() < 0.2 else []
        free = [i for i in range(r) if i not in ibd]
        nidx = int(rng.integers(1, len(free) + 1))
        sdims = rng.choice(free, nidx, replace=False).tolist()
        inserted = sorted(i for i in free if rng.random() < 0.4)
        win = [1 if i in inserted or i in ibd else
               (int(rng.integers(1, x.dims[i] + 1)) if rng.random() < 0.7 else 1)
               for i in range(r)]
        batch = list(self.rand_dims(int(rng.integers(0, 3))))
        bpos = []
        if ibd:
            k = int(rng.integers(len(batch) + 1))
            batch.insert(k, x.dims[ibd[0]])
            bpos = [k]
        ivd = int(rng.integers(0, len(batch) + 1))
        idims = list(batch)
        if not (ivd == len(batch) and nidx == 1 and rng.random() < 0.5 and not ibd):
            idims.insert(ivd, nidx)
        sibd = [b + (1 if len(idims) > len(batch) and b >= ivd else 0) for b in bpos]
        n_win = r - len(inserted) - len(ibd)
        urank = len(batch) + n_win
        uwd = sorted(rng.choice(urank, n_win, replace=False).tolist())
        kept = [win[i] for i in range(r) if i not in inserted and i not in ibd]
        udims, bi, wi = [], 0, 0
        for j in range(urank):
            if j in uwd:
                udims.append(kept[wi])
                wi += 1
            else:
                udims.append(batch[bi])
                bi += 1
        if int(np.prod(udims)) > self.prof.max_elems:
            raise Unsupported
        t = x.ty
        comb = self.choice(["add", "multiply", "maximum", "minimum", "set"])
        if is_float(t):
            if comb == "multiply":
                comb = "set"
            if comb == "add" and x.mag > 1e3:
                comb = "maximum"
        u = c.like(t, udims, tame=x.err > 0 or (is_float(t) and comb == "add"))
        if comb == "add" and is_float(t) and u.mag > 1e3:
            comb = "minimum"
        idx = self._indices(c, idims, max(x.dims))
        err = max(x.err, u.err)
        mag = max(x.mag, u.mag)
        if is_float(t) and comb == "add":
            err = max(err, sum_err(t, 8)) + EPS[t]
            mag = x.mag + 64 * u.mag
            if mag > FMAX[t] / 64:
                raise Unsupported
        elif is_int(t) and comb in ("add", "multiply"):
            mag = type_max(t)
        j = lambda s: ",".join(map(str, s))  # noqa: E731
        nm = self.binary_comp(comb, t)
        operands, updates = [x], [u]
        if rng.random() < 0.15:                                   # variadic scatter
            x2 = c.like(self.rand_type(("f32", "s32", "f16")), x.dims, exact=True)
            u2 = c.like(x2.ty, udims, exact=True, tame=True)
            nm = self._variadic_combiner(t, x2.ty)
            operands, updates = [x, x2], [u, u2]
            if is_float(t):
                err = max(err, sum_err(t, 8)) + EPS[t]
        dn = (f"update_window_dims={{{j(uwd)}}}, inserted_window_dims={{{j(inserted)}}}, "
              f"scatter_dims_to_operand_dims={{{j(sdims)}}}, index_vector_dim={ivd}")
        if ibd:
            dn += f", input_batching_dims={{{j(ibd)}}}, scatter_indices_batching_dims={{{j(sibd)}}}"
            self.features.add("scatter_batching_dims")
        args = ", ".join(o.name for o in operands + [idx] + updates)
        if len(operands) == 1:
            return c.emit(t, x.dims, f"scatter({args}), {dn}, to_apply={nm}", err=err, mag=mag,
                          clean=False, operands=operands + [idx] + updates)
        tshape = "(" + ", ".join(o.shape for o in operands) + ")"
        tup = c.emit_raw(tshape, f"scatter({args}), {dn}, to_apply={nm}",
                         operands=operands + [idx] + updates)
        outs = []
        for i, o in enumerate(operands):
            e = err if i == 0 else (max(err, sum_err(o.ty, 8) + EPS.get(o.ty, 0))
                                    if is_float(o.ty) else 0.0)
            outs.append(c.emit(o.ty, o.dims, f"get-tuple-element({tup}), index={i}", err=e,
                               mag=type_max(o.ty) if not is_float(o.ty) else INF, clean=False))
        return outs[0]

    def _variadic_combiner(self, t0: str, t1: str) -> str:
        """(a0, a1), (b0, b1) -> (b0 + a0 or max, a1 + b1): a simple two-output combiner."""
        name = self.new_name("vcomb_")
        p = [self.new_name("w") for _ in range(6)]
        op0 = "maximum" if is_float(t0) else "add"
        self.add_comp(f"{name} {{\n  {p[0]} = {t0}[] parameter(0)\n  {p[1]} = {t1}[] parameter(1)\n"
                      f"  {p[2]} = {t0}[] parameter(2)\n  {p[3]} = {t1}[] parameter(3)\n"
                      f"  {p[4]} = {t0}[] {op0}({p[0]}, {p[2]})\n"
                      f"  {p[5]} = {t1}[] add({p[1]}, {p[3]})\n"
                      f"  ROOT {self.new_name('w')} = ({t0}[], {t1}[]) tuple({p[4]}, {p[5]})\n}}\n")
        return name
