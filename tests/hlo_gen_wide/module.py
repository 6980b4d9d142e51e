"""Building one module: ``ModuleGen`` (the op generators' host), ``Case`` and ``OutSpec``.

``generate(seed, profile)`` makes a verified ``Case``: the module's text, its inputs and
how exactly each output must match the oracle.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .computation import V, Comp, Unsupported
from .ops_control_flow import ControlFlowOps
from .ops_data_movement import DataMovementOps
from .ops_dot_conv import DotConvOps
from .ops_elementwise import ElementwiseOps
from .ops_fusion_patterns import FusionPatternOps
from .ops_gather_scatter import GatherScatterOps
from .ops_reductions_and_sort import ReductionAndSortOps
from .profiles import DEFAULT_WEIGHTS, LARGE_OPS, LARGE_SHAPES, Profile, profile_for
from .types_and_values import (ALL_TYPES, TYPE_WEIGHTS, edge_values, is_float, is_int, is_signed,
                               profile_mag, random_values, shape_text)


@dataclass
class OutSpec:
    """How exactly one (flattened) output must match the oracle: ``err`` 0 is bit exact."""

    ty: str
    err: float


@dataclass
class Case:
    """A generated module (its text), its inputs and an ``OutSpec`` per output."""

    seed: int
    profile: str
    text: str
    inputs: list
    outputs: list          # OutSpec per flattened output
    features: list = field(default_factory=list)


class ModuleGen(ElementwiseOps, DataMovementOps, GatherScatterOps, ReductionAndSortOps,
                DotConvOps, ControlFlowOps, FusionPatternOps):
    """Generates one module; see :func:`generate`."""

    def __init__(self, seed: int, profile: Profile) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.prof = profile
        self.counter = 0
        self.comps: list[str] = []        # finished non-entry computations, callees first
        self.memo: dict = {}
        self.inputs: list = []
        self.n_params = 0
        self.entry = Comp(self, "main", True, 0)
        self.features: set[str] = set()
        self.param_shapes: list[str] = []          # entry parameter shapes, with layouts
        self.param_layout: dict[str, tuple | None] = {}

    # ----- naming and helpers
    def new_name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def can_add_param(self) -> bool:
        return self.n_params < self.prof.max_params

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def rand_type(self, allowed=ALL_TYPES) -> str:
        types = [t for t in allowed]
        w = np.array([TYPE_WEIGHTS[t] for t in types], float)
        return types[int(self.rng.choice(len(types), p=w / w.sum()))]

    def rand_dims(self, rank: int | None = None) -> tuple:
        rng = self.rng
        if rank is None:
            rank = int(rng.choice([0, 1, 2, 2, 3, 3, 4][: self.prof.max_rank + 3]))
            rank = min(rank, self.prof.max_rank)
        for _ in range(20):
            dims = tuple(int(rng.integers(1, self.prof.dim_max + 1)) for _ in range(rank))
            if self.prof.zero_dims and rank and rng.random() < 0.15:
                d = list(dims)
                d[int(rng.integers(rank))] = 0
                dims = tuple(d)
            if int(np.prod(dims)) <= self.prof.max_elems:
                return dims
        return tuple(1 for _ in range(rank))

    def rand_scalar(self, ty: str, tame: bool = False):
        rng = self.rng
        if ty == "pred":
            return bool(rng.random() < 0.5)
        if is_float(ty):
            if not tame and rng.random() < 0.3:
                return float(self.choice(edge_values(ty, rng.random() < 0.3)))
            return float(self.choice([0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1.5, 0.25]))
        if not tame and rng.random() < 0.3:
            return int(self.choice(edge_values(ty, True)))
        vals = [0, 1, 2, 3, 5, 7] + ([-1, -3] if is_signed(ty) else [])
        return int(self.choice(vals))

    def new_param(self, ty: str, dims, profile: str | None = None) -> V:
        rng = self.rng
        if profile is None:
            profile = "tame" if rng.random() < 0.7 else "wild"
        if profile == "index" and not is_int(ty):
            profile = "tame"
        dims = tuple(dims)
        layout = None
        if len(dims) >= 2 and rng.random() < 0.5:
            layout = list(rng.permutation(len(dims)))
        elif len(dims) >= 1 and rng.random() < 0.2:
            layout = list(range(len(dims) - 1, -1, -1))
        c = self.entry
        name = self.new_name("p")
        c.lines.append(f"  {name} = {shape_text(ty, dims, layout)} parameter({self.n_params})")
        self.param_shapes.append(shape_text(ty, dims, layout if layout is not None else
                                            list(range(len(dims) - 1, -1, -1))))
        self.param_layout[name] = tuple(layout) if layout is not None else None
        self.n_params += 1
        self.inputs.append(random_values(rng, ty, dims, profile))
        v = V(name, ty, dims, 0.0, profile_mag(ty, profile), True)
        c.pool.append(v)
        c.params.append(v)
        return v

    def op_tuple_param(self, c: Comp) -> V | None:
        """A tuple-shaped entry parameter (leaves with their own layouts) read with
        get-tuple-element."""
        if not c.entry or not self.can_add_param():
            return None
        rng = self.rng
        leaves = []
        for _ in range(int(rng.integers(1, 4))):
            t = self.rand_type()
            dims = self.rand_dims()
            lay = list(rng.permutation(len(dims))) if len(dims) >= 2 and rng.random() < 0.5 \
                else list(range(len(dims) - 1, -1, -1))
            prof = "tame" if rng.random() < 0.7 else "wild"
            leaves.append((t, dims, lay, prof))
        tshape = "(" + ", ".join(shape_text(t, d, lay) for t, d, lay, _ in leaves) + ")"
        name = self.new_name("p")
        c.lines.append(f"  {name} = {tshape} parameter({self.n_params})")
        self.param_shapes.append(tshape)
        self.n_params += 1
        self.inputs.append(tuple(random_values(rng, t, d, prof) for t, d, _, prof in leaves))
        out = None
        for i, (t, d, _, prof) in enumerate(leaves):
            if rng.random() < 0.8 or out is None:
                out = c.emit(t, d, f"get-tuple-element({name}), index={i}",
                             mag=profile_mag(t, prof))
        return out

    def add_comp(self, text: str) -> None:
        self.comps.append(text)

    def binary_comp(self, op: str, ty: str) -> str:
        """A scalar computation ``op(a, b)`` of type ``ty`` (reducers, combiners)."""
        key = ("bin", op, ty)
        if key not in self.memo:
            name = self.new_name(f"{op.replace('-', '_')}_{ty}_")
            a, b, r = self.new_name("w"), self.new_name("w"), self.new_name("w")
            body = (f"  ROOT {r} = {ty}[] {op}({a}, {b})" if op != "set" else
                    f"  ROOT {r} = {ty}[] copy({b})")
            self.add_comp(f"{name} {{\n  {a} = {ty}[] parameter(0)\n  {b} = {ty}[] "
                          f"parameter(1)\n{body}\n}}\n")
            self.memo[key] = name
        return self.memo[key]

    # ----- generation
    def generate_ops(self, c: Comp, n: int, weights: dict) -> None:
        names = list(weights)
        w = np.array([weights[k] for k in names], float)
        p = w / w.sum()
        done = tries = 0
        while done < n and tries < n * 12:
            tries += 1
            kind = names[int(self.rng.choice(len(names), p=p))]
            fn = getattr(self, "op_" + kind)
            mark = (len(c.lines), len(c.pool), self.counter, len(self.comps), self.n_params,
                    len(self.inputs))
            uses = [(v, v.uses) for v in c.pool]
            try:
                out = fn(c)
            except Unsupported:
                out = None
            if out is None:
                # roll back partial emission
                del c.lines[mark[0]:]
                del c.pool[mark[1]:]
                del self.comps[mark[3]:]
                kept = {text.split(" ", 1)[0] for text in self.comps}
                self.memo = {k: v for k, v in self.memo.items() if v in kept}
                for v, u in uses:
                    v.uses = u
                if self.n_params != mark[4]:
                    self.n_params = mark[4]
                    del self.inputs[mark[5]:]
                    del self.param_shapes[mark[4]:]
                    c.params[:] = [p_ for p_ in c.params if p_ in c.pool]
                continue
            self.features.add(kind)
            done += 1

    def generate(self) -> "Case":
        rng, prof, c = self.rng, self.prof, self.entry
        if prof.large_shapes:
            big = [s for s in LARGE_SHAPES if int(np.prod(s)) <= prof.max_elems]
            dims = big[int(rng.integers(len(big)))]
            t = self.rand_type(("f32", "f32", "f32", "s32", "f16", "bf16", "f64", "u8", "s64"))
            self.new_param(t, dims, "tame")
            if rng.random() < 0.5:
                self.new_param(self.rand_type(("f32", "s32", "pred", "f64")), dims)
        else:
            for _ in range(int(rng.integers(1, 4))):
                self.new_param(self.rand_type(), self.rand_dims())
        weights = dict(prof.weights or (LARGE_OPS if prof.large_shapes else DEFAULT_WEIGHTS))
        n = int(rng.integers(prof.n_ops[0], prof.n_ops[1] + 1))
        self.generate_ops(c, n, weights)
        return self.finish()

    def finish(self) -> "Case":
        c, rng = self.entry, self.rng
        vals = [v for v in c.pool if v not in c.params]
        sinks = [v for v in vals if v.uses == 0]
        others = [v for v in vals if v.uses > 0]
        rng.shuffle(sinks)
        outs = sinks[: self.prof.max_outputs]
        if len(outs) < 2 and others:
            outs.append(others[int(rng.integers(len(others)))])
        if not outs or rng.random() < 0.05:
            outs.append(c.params[int(rng.integers(len(c.params)))])
        if rng.random() < 0.05:
            outs.append(outs[0])                       # a repeated leaf
        header = ""
        aliases: list[str] = []
        result_layouts = rng.random() < 0.25
        lay = {}
        for i, v in enumerate(outs):
            if result_layouts and v.rank >= 2 and rng.random() < 0.6:
                lay[i] = list(rng.permutation(v.rank))
            else:
                lay[i] = list(range(v.rank - 1, -1, -1))
        nested = len(outs) >= 3 and rng.random() < 0.1
        if len(outs) == 1 and rng.random() < 0.5:
            root = outs[0].name
            c.lines = [ln.replace(f"  {root} = ", f"  ROOT {root} = ", 1)
                       if ln.startswith(f"  {root} = ") else ln for ln in c.lines]
            if outs[0] in c.params:
                nm = c.emit_raw(outs[0].shape, f"copy({root})")
                c.lines[-1] = c.lines[-1].replace(f"  {nm} = ", f"  ROOT {nm} = ")
            result = shape_text(outs[0].ty, outs[0].dims, lay[0])
            indices = [""]
        elif nested:
            inner = outs[1:3]
            ishape = "(" + ", ".join(v.shape for v in inner) + ")"
            iname = c.emit_raw(ishape, f"tuple({', '.join(v.name for v in inner)})")
            rest = [outs[0]] + outs[3:]
            tshape = "(" + ", ".join([rest[0].shape, ishape] + [v.shape for v in rest[1:]]) + ")"
            nm = self.new_name("v")
            elems = [rest[0].name, iname] + [v.name for v in rest[1:]]
            c.lines.append(f"  ROOT {nm} = {tshape} tuple({', '.join(elems)})")
            lays = [shape_text(v.ty, v.dims, lay[i]) for i, v in enumerate(outs)]
            result = "(" + ", ".join([lays[0], "(" + ", ".join(lays[1:3]) + ")"] + lays[3:]) + ")"
            indices = ["0", "1,0", "1,1"] + [str(k) for k in range(2, len(outs) - 1)]
        else:
            tshape = "(" + ", ".join(v.shape for v in outs) + ")"
            nm = self.new_name("v")
            c.lines.append(f"  ROOT {nm} = {tshape} tuple({', '.join(v.name for v in outs)})")
            result = "(" + ", ".join(shape_text(v.ty, v.dims, lay[i])
                                     for i, v in enumerate(outs)) + ")"
            indices = [str(i) for i in range(len(outs))]
        if rng.random() < 0.2:                         # donate parameters to outputs
            used = set()
            for i, v in enumerate(outs):
                for k, pv in enumerate(c.params):
                    if pv is v or pv.name in used or pv.ty != v.ty or pv.dims != v.dims:
                        continue
                    pl = self.param_layout.get(pv.name)
                    if pl is not None and list(pl) != lay[i]:
                        continue
                    if pl is None and lay[i] != list(range(v.rank - 1, -1, -1)):
                        continue
                    pnum = next(j for j, ln in enumerate(self._param_names()) if ln == pv.name)
                    kind = "may-alias" if rng.random() < 0.7 else "must-alias"
                    aliases.append(f"{{{indices[i]}}}: ({pnum}, {{}}, {kind})")
                    used.add(pv.name)
                    break
        if result_layouts or aliases:
            header = (", entry_computation_layout={(" + ", ".join(self.param_shapes) + ")->" +
                      result + "}")
        if aliases:
            header += ", input_output_alias={ " + ", ".join(aliases) + " }"
            self.features.add("input_output_alias")
        if result_layouts:
            self.features.add("result_layouts")
        text = (f"HloModule wide_{self.seed}{header}\n\n" + "\n".join(self.comps) +
                "\nENTRY main {\n" + "\n".join(c.lines) + "\n}\n")
        return Case(self.seed, self.prof.name, text, list(self.inputs),
                    [OutSpec(v.ty, v.err) for v in outs], sorted(self.features))

    def _param_names(self) -> list[str]:
        """Entry parameter names in parameter-number order."""
        names = {}
        for ln in self.entry.lines:
            m = re.match(r"  (?:ROOT )?(\S+) = .* parameter\((\d+)\)$", ln)
            if m:
                names[int(m.group(2))] = m.group(1)
        return [names[i] for i in sorted(names)]


def generate(seed: int, profile: str = "mixed") -> Case:
    """A random module and inputs for ``seed`` (deterministic); the module is verified."""
    from xlapy.hlo import parse_module
    from xlapy.hlo.verifier import verify_module
    case = ModuleGen(seed, profile_for(seed, profile)).generate()
    verify_module(parse_module(case.text))
    return case
