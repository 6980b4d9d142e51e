"""Data movement op generators: broadcast, reshape, transpose, slice, concatenate, pad,
reverse, iota, copy, constants, dynamic-slice / dynamic-update-slice (out-of-range
starts) and rng-bit-generator.
"""
from __future__ import annotations

import numpy as np

from .computation import V, Comp, Unsupported
from .profiles import LARGE_SHAPES
from .types_and_values import ALL_TYPES, FMAX, INF, imax, is_float, is_int, shape_text, type_max


class DataMovementOps:
    """The data movement ``op_*`` generators of ``ModuleGen`` (mixed into it)."""

    def _move(self, c: Comp, x: V, dims, rhs: str, extra=()) -> V:
        if int(np.prod(dims)) > self.prof.max_elems:
            raise Unsupported
        ops = [x, *extra]
        return c.emit(x.ty, dims, rhs, err=max(o.err for o in ops), mag=max(o.mag for o in ops),
                      clean=all(o.clean for o in ops), operands=ops)

    def op_broadcast(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank < self.prof.max_rank)
        if x is None:
            return None
        rng = self.rng
        out_rank = x.rank + int(rng.integers(1, min(2, self.prof.max_rank - x.rank) + 1))
        pos = sorted(rng.choice(out_rank, x.rank, replace=False).tolist())
        if rng.random() < 0.2 and x.rank >= 2:                  # transposing broadcast
            perm = rng.permutation(x.rank)
            pos = [pos[i] for i in perm]
        dims = [0] * out_rank
        for i, p in enumerate(pos):
            dims[p] = x.dims[i]
        for j in range(out_rank):
            if j not in pos:
                dims[j] = int(rng.integers(1, 5 if not self.prof.large_shapes else 4))
        return self._move(c, x, dims,
                          f"broadcast({x.name}), dimensions={{{','.join(map(str, pos))}}}")

    def op_reshape(self, c: Comp) -> V | None:
        x = c.pick()
        if x is None:
            return None
        n = x.size
        rng = self.rng
        if n == 0:
            dims = list(x.dims)
            rng.shuffle(dims)
            return self._move(c, x, dims, f"reshape({x.name})")
        # random factorization of n
        factors = []
        m = n
        p = 2
        while m > 1 and p * p <= m:
            while m % p == 0:
                factors.append(p)
                m //= p
            p += 1
        if m > 1:
            factors.append(m)
        rank = int(rng.integers(0 if n == 1 else 1, min(self.prof.max_rank, 4) + 1))
        rank = max(rank, 1) if n > 1 else rank
        dims = [1] * rank
        for f in factors:
            dims[int(rng.integers(rank))] *= f
        return self._move(c, x, dims, f"reshape({x.name})")

    def op_transpose(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 2)
        if x is None:
            return None
        perm = self.rng.permutation(x.rank).tolist()
        dims = [x.dims[p] for p in perm]
        return self._move(c, x, dims,
                          f"transpose({x.name}), dimensions={{{','.join(map(str, perm))}}}")

    def op_slice(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        rng = self.rng
        spec, dims = [], []
        for d in x.dims:
            if d == 0:
                spec.append("[0:0]")
                dims.append(0)
                continue
            lo = int(rng.integers(0, d)) if rng.random() < 0.6 else 0
            hi = int(rng.integers(lo, d + 1)) if rng.random() < 0.6 else d
            st = int(rng.choice([1, 1, 2, 3]))
            spec.append(f"[{lo}:{hi}:{st}]")
            dims.append((hi - lo + st - 1) // st)
        return self._move(c, x, dims, f"slice({x.name}), slice={{{', '.join(spec)}}}")

    def op_concatenate(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        axis = int(self.rng.integers(x.rank))
        parts = [x]
        for _ in range(int(self.rng.integers(1, 3))):
            dims = list(x.dims)
            dims[axis] = int(self.rng.integers(0 if self.prof.zero_dims else 1, 5))
            if self.rng.random() < 0.4:
                dims[axis] = x.dims[axis]
            parts.append(c.like(x.ty, dims, tame=x.err > 0))
        if self.rng.random() < 0.5:
            self.rng.shuffle(parts)
        out = list(x.dims)
        out[axis] = sum(p.dims[axis] for p in parts)
        first, rest = parts[0], parts[1:]
        return self._move(c, first, out, f"concatenate({', '.join(p.name for p in parts)}), "
                                         f"dimensions={{{axis}}}", extra=rest)

    def op_pad(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        rng = self.rng
        cfg, dims = [], []
        for d in x.dims:
            for _ in range(10):
                lo, hi = int(rng.integers(-2, 4)), int(rng.integers(-2, 4))
                it = int(rng.choice([0, 0, 0, 1, 2]))
                if self.prof.large_shapes:
                    it = 0
                n = lo + hi + d + max(d - 1, 0) * it
                if n >= 0:
                    break
            else:
                lo, hi, it, n = 0, 0, 0, d
            cfg.append(f"{lo}_{hi}" + (f"_{it}" if it else ""))
            dims.append(n)
        pv = c.scalar(x.ty, exact=x.err == 0)
        if pv.err > 0 and x.err == 0:
            raise Unsupported
        return self._move(c, x, dims, f"pad({x.name}, {pv.name}), padding={'x'.join(cfg)}",
                          extra=[pv])

    def op_reverse(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        k = int(self.rng.integers(1, x.rank + 1))
        ds = sorted(self.rng.choice(x.rank, k, replace=False).tolist())
        return self._move(c, x, x.dims,
                          f"reverse({x.name}), dimensions={{{','.join(map(str, ds))}}}")

    def op_iota(self, c: Comp) -> V | None:
        t = self.rand_type(tuple(t for t in ALL_TYPES if t != "pred"))
        dims = self.rand_dims(int(self.rng.integers(1, 4)))
        if self.prof.large_shapes and self.rng.random() < 0.5:
            big = [s for s in LARGE_SHAPES if int(np.prod(s)) <= self.prof.max_elems]
            dims = big[int(self.rng.integers(len(big)))]
        d = int(self.rng.integers(len(dims)))
        mag = float(max(dims))
        if is_float(t) and mag > FMAX[t]:
            mag = INF
        if is_int(t):
            mag = min(mag, type_max(t)) if mag <= imax(t) else type_max(t)
        return c.emit(t, dims, f"iota(), iota_dimension={d}", mag=mag)

    def op_copy(self, c: Comp) -> V | None:
        x = c.pick()
        if x is None:
            return None
        return self._move(c, x, x.dims, f"copy({x.name})")

    def op_constant(self, c: Comp) -> V | None:
        t = self.rand_type()
        dims = self.rand_dims(int(self.rng.integers(0, 3)))
        if int(np.prod(dims)) > 64:
            raise Unsupported
        return c.array_constant(t, dims)

    def _index_type(self) -> str:
        return self.choice(["s32", "s32", "s64", "u32", "s8", "u8", "s16", "u64"])

    def op_dynamic_slice(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        it = self._index_type()
        starts = [c.scalar(it, small_index=True) for _ in x.dims]
        sizes = [int(self.rng.integers(0 if d == 0 else 1, d + 1)) for d in x.dims]
        return self._move(c, x, sizes,
                          f"dynamic-slice({x.name}, {', '.join(s.name for s in starts)}), "
                          f"dynamic_slice_sizes={{{','.join(map(str, sizes))}}}", extra=starts)

    def op_dynamic_update_slice(self, c: Comp) -> V | None:
        x = c.pick(lambda v: v.rank >= 1)
        if x is None:
            return None
        it = self._index_type()
        starts = [c.scalar(it, small_index=True) for _ in x.dims]
        udims = [int(self.rng.integers(0 if d == 0 else 1, d + 1)) for d in x.dims]
        u = c.like(x.ty, udims, tame=x.err > 0)
        if u.err > 0 and x.mag > 1e4:
            raise Unsupported
        return self._move(c, x, x.dims, f"dynamic-update-slice({x.name}, {u.name}, "
                                        f"{', '.join(s.name for s in starts)})", extra=[u, *starts])

    def op_rng_bit_generator(self, c: Comp) -> V | None:
        rng = self.rng
        alg = self.choice(["rng_three_fry", "rng_philox", "rng_default"])
        n_state = 2 if alg == "rng_three_fry" else 3
        if alg == "rng_default":
            n_state = 2
        st = c.array_constant("u64", (n_state,)) if not (c.entry and self.can_add_param()) else \
            self.new_param("u64", (n_state,), "wild")
        ot = self.choice(["u32", "u64", "u8", "s32", "u16"])
        dims = self.rand_dims(int(rng.integers(1, 3)))
        tshape = f"({shape_text('u64', (n_state,))}, {shape_text(ot, dims)})"
        tup = c.emit_raw(tshape, f"rng-bit-generator({st.name}), algorithm={alg}", operands=[st])
        c.emit("u64", (n_state,), f"get-tuple-element({tup}), index=0", mag=type_max("u64"))
        return c.emit(ot, dims, f"get-tuple-element({tup}), index=1", mag=type_max(ot))
