"""Random valid HLO programs for property tests (hypothesis strategies).

``hlo_programs()`` draws a module in XLA's short text form together with
matching random f32 inputs. Programs mix elementwise ops, broadcasts,
reshapes, transposes, slices, concatenates, reductions, compares/selects,
constants and 1-D convolutions (each with its own kernel parameter) — the ops passes
rewrite most — with shapes kept small.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

UNARY = ["negate", "abs", "tanh", "exponential", "floor", "sine", "logistic"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
DIRECTIONS = ["LT", "GT", "LE", "GE", "EQ", "NE"]


@dataclass
class _Prog:
    lines: list[str] = field(default_factory=list)
    values: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    params: list[tuple[int, ...]] = field(default_factory=list)
    counter: int = 0
    needs_add: bool = False
    needs_max: bool = False

    def emit(self, dims: tuple[int, ...], text: str, elem: str = "f32") -> str:
        self.counter += 1
        name = f"v{self.counter}"
        self.lines.append(f"  {name} = {elem}[{','.join(map(str, dims))}] {text}")
        if elem == "f32":
            self.values.append((name, dims))
        return name


def _shape(dims):
    return f"f32[{','.join(map(str, dims))}]"


@st.composite
def hlo_programs(draw, max_ops: int = 12):
    """(hlo_text, inputs) for a random valid program with an f32 root."""
    prog = _Prog()
    nparams = draw(st.integers(1, 3))
    base = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    for i in range(nparams):
        dims = base if i == 0 or draw(st.booleans()) else tuple(
            draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
        prog.params.append(dims)
        prog.counter += 1
        name = f"p{i}"
        prog.lines.append(f"  {name} = {_shape(dims)} parameter({i})")
        prog.values.append((name, dims))
    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "const", "broadcast",
                                     "reshape", "transpose", "slice", "concat", "reduce",
                                     "select", "conv"]))
        name, dims = draw(st.sampled_from(prog.values))
        rank = len(dims)
        if kind == "unary":
            op = draw(st.sampled_from(UNARY))
            prog.emit(dims, f"{op}({name})")
        elif kind == "binary":
            same = [v for v in prog.values if v[1] == dims]
            other, _ = draw(st.sampled_from(same))
            prog.emit(dims, f"{draw(st.sampled_from(BINARY))}({name}, {other})")
        elif kind == "const":
            c = draw(st.sampled_from(["0", "1", "-1", "2", "0.5", "3"]))
            prog.counter += 1
            cname = f"c{prog.counter}"
            prog.lines.append(f"  {cname} = f32[] constant({c})")
            b = prog.emit(dims, f"broadcast({cname}), dimensions={{}}")
            prog.emit(dims, f"{draw(st.sampled_from(BINARY))}({name}, {b})")
        elif kind == "broadcast" and rank < 3:
            extra = draw(st.integers(1, 3))
            pos = draw(st.integers(0, rank))
            out = dims[:pos] + (extra,) + dims[pos:]
            bdims = [i if i < pos else i + 1 for i in range(rank)]
            prog.emit(out, f"broadcast({name}), dimensions={{{','.join(map(str, bdims))}}}")
        elif kind == "reshape":
            n = int(np.prod(dims)) if dims else 1
            choices = [(n,), (1, n)] + ([(n // 2, 2)] if n % 2 == 0 and n > 1 else [])
            prog.emit(draw(st.sampled_from(choices)), f"reshape({name})")
        elif kind == "transpose" and rank >= 2:
            perm = draw(st.permutations(list(range(rank))))
            prog.emit(tuple(dims[p] for p in perm),
                      f"transpose({name}), dimensions={{{','.join(map(str, perm))}}}")
        elif kind == "slice" and rank >= 1:
            spec, out = [], []
            for d in dims:
                lo = draw(st.integers(0, d - 1))
                hi = draw(st.integers(lo + 1, d))
                stride = draw(st.integers(1, 2))
                spec.append(f"[{lo}:{hi}:{stride}]")
                out.append((hi - lo + stride - 1) // stride)
            prog.emit(tuple(out), f"slice({name}), slice={{{', '.join(spec)}}}")
        elif kind == "concat" and rank >= 1:
            axis = draw(st.integers(0, rank - 1))
            same = [v for v in prog.values if len(v[1]) == rank and all(
                a == b for i, (a, b) in enumerate(zip(v[1], dims)) if i != axis)]
            other, odims = draw(st.sampled_from(same))
            out = tuple(d + (odims[axis] if i == axis else 0) for i, d in enumerate(dims))
            prog.emit(out, f"concatenate({name}, {other}), dimensions={{{axis}}}")
        elif kind == "reduce" and rank >= 1:
            rdims = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
            out = tuple(d for i, d in enumerate(dims) if i not in rdims)
            use_max = draw(st.booleans())
            prog.needs_max |= use_max
            prog.needs_add |= not use_max
            prog.counter += 1
            init = f"i{prog.counter}"
            prog.lines.append(f"  {init} = f32[] constant({'-inf' if use_max else '0'})")
            prog.emit(out, f"reduce({name}, {init}), dimensions={{{','.join(map(str, rdims))}}}, "
                           f"to_apply={'max_f32' if use_max else 'add_f32'}")
        elif kind == "conv" and rank == 3:
            # a 1-D NWC convolution with a new kernel parameter (8 or more output channels:
            # the CPU backend's generated kernels take it), odd windows, strides, padding
            n, w, c = dims
            k = draw(st.integers(1, 3))
            dil = draw(st.integers(1, 2))
            stride = draw(st.integers(1, 2))
            lo, hi = draw(st.integers(-1, 2)), draw(st.integers(0, 2))
            span = (k - 1) * dil + 1
            if w + lo + hi < span:
                continue
            o = draw(st.sampled_from([8, 16, 19]))
            kdims = (k, c, o)
            prog.params.append(kdims)
            kname = f"p{len(prog.params) - 1}"
            prog.lines.append(f"  {kname} = {_shape(kdims)} parameter({len(prog.params) - 1})")
            out = (n, (w + lo + hi - span) // stride + 1, o)
            prog.emit(out, f"convolution({name}, {kname}), window={{size={k} stride={stride} "
                           f"pad={lo}_{hi} rhs_dilate={dil}}}, dim_labels=b0f_0io->b0f")
        elif kind == "select":
            same = [v for v in prog.values if v[1] == dims]
            a, _ = draw(st.sampled_from(same))
            b, _ = draw(st.sampled_from(same))
            p = prog.emit(dims, f"compare({name}, {a}), direction={draw(st.sampled_from(DIRECTIONS))}",
                          elem="pred")
            prog.emit(dims, f"select({p}, {a}, {b})")
    root, root_dims = prog.values[-1]
    comps = []
    if prog.needs_add:
        comps.append("add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                     "  ROOT r = f32[] add(a, b)\n}\n")
    if prog.needs_max:
        comps.append("max_f32 {\n  ma = f32[] parameter(0)\n  mb = f32[] parameter(1)\n"
                     "  ROOT mr = f32[] maximum(ma, mb)\n}\n")
    body = "\n".join(prog.lines)
    body = body.replace(f"  {root} = ", f"  ROOT {root} = ")
    text = "HloModule random_program\n\n" + "\n".join(comps) + "\nENTRY main {\n" + body + "\n}\n"
    seed = draw(st.integers(0, 2 ** 31 - 1))
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-2, 2, size=d).astype(np.float32) for d in prog.params]
    return text, inputs
