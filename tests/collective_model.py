"""A NumPy model of XLA's collectives over explicit participant groups, and HLO builders for
the collective tests (interpreter, CPU backend, MPI)."""
from __future__ import annotations

import numpy as np

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def module(header: str, body: str, params: str = "p = f32[8] parameter(0)") -> str:
    """HLO text with an f32 ``add`` reducer, ``header`` after the module name, one entry."""
    return f"HloModule m{header}\n{ADD}\nENTRY e {{\n  {params}\n{body}\n}}\n"


def device_input(d: int, n: int = 8) -> np.ndarray:
    """Inputs that make every group and ordering visible in the numbers."""
    return (np.arange(n) + 100 * d).astype(np.float32)


def group_of(groups: list[list[int]], d: int) -> list[int]:
    return next(g for g in groups if d in g)


def all_reduce(xs, groups, d):
    return np.sum([xs[m] for m in group_of(groups, d)], axis=0)


def all_gather(xs, groups, d, dim=0):
    return np.concatenate([xs[m] for m in group_of(groups, d)], axis=dim)


def reduce_scatter(xs, groups, d, dim=0):
    g = group_of(groups, d)
    total = np.sum([xs[m] for m in g], axis=0)
    return np.split(total, len(g), axis=dim)[g.index(d)]


def all_to_all(xs, groups, d, dim=0):
    g = group_of(groups, d)
    k = g.index(d)
    return np.concatenate([np.split(xs[m], len(g), axis=dim)[k] for m in g], axis=dim)


def permute(xs, pairs, d):
    source = next((s for s, t in pairs if t == d), None)
    return np.zeros_like(xs[d]) if source is None else xs[source]


def broadcast(xs, groups, d):
    return xs[group_of(groups, d)[0]]
