"""Dot and convolution op generators: random batch/contracting dimension numbers, mixed
result types, dim_labels, strides, padding, dilations and feature/batch groups.
"""
from __future__ import annotations

import numpy as np

from .computation import V, Comp, Unsupported
from .types_and_values import EPS, FMAX, is_float, sum_err, type_max


class DotConvOps:
    """The dot and convolution ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    def op_dot(self, c: Comp) -> V | None:
        rng = self.rng
        kind = rng.random()
        if kind < 0.55:
            t_in = t_out = "f32"
        elif kind < 0.65:
            t_in = t_out = "f64"
        elif kind < 0.72:
            t_in = t_out = self.choice(["f16", "bf16"])
        elif kind < 0.78:
            t_in, t_out = self.choice(["f16", "bf16"]), "f32"
        elif kind < 0.9:
            t_in = t_out = self.choice(["s32", "s32", "s64", "u32", "s8"])
        else:
            t_in, t_out = self.choice(["s8", "u8", "s16"]), "s32"
        nb, nc = int(rng.choice([0, 0, 1, 2])), int(rng.choice([0, 1, 1, 1, 2]))
        nl, nr = int(rng.choice([0, 1, 1, 2])), int(rng.choice([0, 1, 1, 2]))
        big = self.prof.large_shapes
        hi = 70 if big else 6

        def sz():
            return int(rng.integers(1, hi + 1)) if rng.random() < 0.8 else int(rng.integers(1, 4))
        B = [sz() for _ in range(nb)]
        C = [sz() for _ in range(nc)]
        L = [sz() for _ in range(nl)]
        R = [sz() for _ in range(nr)]
        if big and rng.random() < 0.3:
            B, C, L, R = [], [int(rng.integers(100, 300))], [int(rng.integers(64, 300))], \
                [int(rng.integers(64, 300))]
        nb, nc, nl, nr = len(B), len(C), len(L), len(R)
        lhs_dims = B + L + C
        rhs_dims = B + C + R
        lp = rng.permutation(len(lhs_dims)).tolist() if rng.random() < 0.5 else \
            list(range(len(lhs_dims)))
        rp = rng.permutation(len(rhs_dims)).tolist() if rng.random() < 0.5 else \
            list(range(len(rhs_dims)))
        # position of logical dim k of the lhs in the permuted operand: inverse permutation
        lpos = {k: lp.index(k) for k in range(len(lhs_dims))}
        rpos = {k: rp.index(k) for k in range(len(rhs_dims))}
        lhs_shape = [lhs_dims[k] for k in lp]
        rhs_shape = [rhs_dims[k] for k in rp]
        # free dimensions come out in operand order
        out = B + [lhs_dims[k] for k in lp if nb <= k < nb + nl] + \
            [rhs_dims[k] for k in rp if k >= nb + nc]
        if max(int(np.prod(lhs_shape)), int(np.prod(rhs_shape)),
               int(np.prod(out))) > self.prof.max_elems:
            raise Unsupported
        k = int(np.prod(C)) if C else 1
        tame = is_float(t_in)
        a = c.like(t_in, lhs_shape, tame=tame)
        b = c.like(t_in, rhs_shape, tame=tame)
        j = lambda s: ",".join(map(str, s))  # noqa: E731
        lb = [lpos[i] for i in range(nb)]
        rb = [rpos[i] for i in range(nb)]
        lc = [lpos[nb + nl + i] for i in range(nc)]
        rc = [rpos[nb + i] for i in range(nc)]
        dn = f"lhs_contracting_dims={{{j(lc)}}}, rhs_contracting_dims={{{j(rc)}}}"
        if nb:
            dn = f"lhs_batch_dims={{{j(lb)}}}, rhs_batch_dims={{{j(rb)}}}, " + dn
        err, mag = 0.0, type_max(t_out)
        if is_float(t_out):
            mag = k * a.mag * b.mag
            if mag > FMAX[t_out] / 64 or mag > FMAX[t_in] / 64:
                raise Unsupported
            err = a.err + b.err + sum_err(t_out, k) + (EPS[t_out] if t_out != "f64" else 0)
            if t_in in ("f16", "bf16"):
                err += EPS[t_in]
        if rng.random() < 0.1 and is_float(t_in):
            dn += ", operand_precision={highest,highest}"
        return c.emit(t_out, out, f"dot({a.name}, {b.name}), {dn}", err=err, mag=mag,
                      clean=False, operands=[a, b])

    def op_convolution(self, c: Comp) -> V | None:
        rng = self.rng
        ns = int(rng.choice([1, 2, 2, 3]))
        t = self.choice(["f32", "f32", "f32", "f64", "f16", "bf16", "s32"])
        spatial = [int(rng.integers(1, 7)) for _ in range(ns)]
        kern = [int(rng.integers(1, 4)) for _ in range(ns)]
        G = int(rng.choice([1, 1, 1, 2, 3]))
        BG = int(rng.choice([1, 1, 1, 1, 2])) if G == 1 else 1
        N = int(rng.integers(1, 3)) * BG
        Cin = int(rng.integers(1, 4)) * G
        O = int(rng.integers(1, 4)) * G * BG
        stride = [int(rng.choice([1, 1, 2])) for _ in range(ns)]
        lhs_dil = [int(rng.choice([1, 1, 1, 2])) for _ in range(ns)]
        rhs_dil = [int(rng.choice([1, 1, 1, 2])) for _ in range(ns)]
        pads, outsp = [], []
        for i in range(ns):
            for _ in range(10):
                lo, hi = int(rng.integers(-1, 3)), int(rng.integers(-1, 3))
                padded = (spatial[i] - 1) * lhs_dil[i] + 1 + lo + hi
                eff = (kern[i] - 1) * rhs_dil[i] + 1
                if padded >= eff:
                    break
            else:
                lo, hi = 0, 0
                kern[i], rhs_dil[i], lhs_dil[i] = 1, 1, 1
                padded, eff = spatial[i], 1
            pads.append(f"{lo}_{hi}")
            outsp.append((padded - eff) // stride[i] + 1)
        digits = [str(i) for i in range(ns)]
        lhs_lab = ["b", "f"] + digits
        rhs_lab = ["o", "i"] + digits
        out_lab = ["b", "f"] + digits
        for lab in (lhs_lab, rhs_lab, out_lab):
            if rng.random() < 0.6:
                rng.shuffle(lab)
        lhs_size = {"b": N, "f": Cin, **{str(i): spatial[i] for i in range(ns)}}
        rhs_size = {"o": O, "i": Cin // G, **{str(i): kern[i] for i in range(ns)}}
        out_size = {"b": N // BG, "f": O, **{str(i): outsp[i] for i in range(ns)}}
        lhs_shape = [lhs_size[ch] for ch in lhs_lab]
        rhs_shape = [rhs_size[ch] for ch in rhs_lab]
        out_shape = [out_size[ch] for ch in out_lab]
        if int(np.prod(out_shape)) > self.prof.max_elems or int(np.prod(out_shape)) == 0:
            raise Unsupported
        a = c.like(t, lhs_shape, tame=is_float(t))
        b = c.like(t, rhs_shape, tame=is_float(t))
        K = (Cin // G) * int(np.prod(kern))
        err, mag = 0.0, type_max(t)
        if is_float(t):
            mag = K * a.mag * b.mag
            if mag > FMAX[t] / 64:
                raise Unsupported
            err = a.err + b.err + sum_err(t, K) + EPS[t]
        x = lambda s: "x".join(map(str, s))  # noqa: E731
        win = f"size={x(kern)}"
        if any(s != 1 for s in stride):
            win += f" stride={x(stride)}"
        win += f" pad={x(pads)}"
        if any(d != 1 for d in lhs_dil):
            win += f" lhs_dilate={x(lhs_dil)}"
        if any(d != 1 for d in rhs_dil):
            win += f" rhs_dilate={x(rhs_dil)}"
        labels = f"{''.join(lhs_lab)}_{''.join(rhs_lab)}->{''.join(out_lab)}"
        extra = ""
        if G > 1:
            extra += f", feature_group_count={G}"
        if BG > 1:
            extra += f", batch_group_count={BG}"
        return c.emit(t, out_shape, f"convolution({a.name}, {b.name}), window={{{win}}}, "
                                    f"dim_labels={labels}{extra}", err=err, mag=mag, clean=False,
                      operands=[a, b])
