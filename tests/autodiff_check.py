"""Checking gradient rules against finite differences (shared by the autodiff tests).

The front end has no float64 (dtypes are canonicalized to 32 bits, as JAX without x64),
so the finite differences run in float32 and are made accurate this way:

- inputs are multiples of 2**-10 and the step ``h`` is a power of two, so ``x +- k*h`` is
  exact in float32;
- the derivative uses the fourth-order central stencil
  ``(8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / 12h`` (truncation error O(h**4));
- inputs stay at least ``2h`` away from kinks (ties, clamp bounds, rounding jumps).

With ``h = 2**-6`` the remaining error is float32 rounding, below 1e-5 relative to the
largest derivative, well inside the default tolerance of 2e-4 (a rule off by 0.1%
fails). Ties are checked separately, against the documented convention (in the family
files ``xlapy/frontend/primitives_*.py``) and along directions in which the function is
differentiable.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.frontend import autodiff, core, dtypes
from xlapy.frontend.core import Array, to_array
from xlapy.frontend.pytree import tree_flatten

GRID = 2.0 ** -10
H = 2.0 ** -6


def grid(values: Any) -> np.ndarray:
    """``values`` rounded to multiples of ``GRID``, as float32."""
    return (np.round(np.asarray(values, np.float64) / GRID) * GRID).astype(np.float32)


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def uniform(name: str, shape: Sequence[int], lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    """Reproducible grid-aligned uniform values."""
    return grid(rng_for(name).uniform(lo, hi, shape))


def spaced(name: str, shape: Sequence[int], gap: float = 0.125, lo: float = -1.0) -> np.ndarray:
    """Distinct values at least ``gap`` apart, in random order (no ties anywhere)."""
    n = int(np.prod(shape))
    vals = lo + gap * rng_for(name).permutation(n)
    return grid(vals).reshape(shape)


@dataclass(frozen=True)
class Case:
    """One gradient check: ``fn(*args)`` uses ``prims`` on its differentiable path.

    Float arguments are differentiated; integer arguments (indices) are passed along
    (traced under jit). ``second_order`` also checks Hessian-vector products.
    """

    name: str
    prims: tuple[str, ...]
    fn: Callable[..., Any]
    args: tuple[np.ndarray, ...]
    h: float = H
    tol: float = 2e-4
    second_order: bool = False

    def __repr__(self) -> str:
        return self.name

    @property
    def float_positions(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if a.dtype.kind == "f")

    def with_floats(self, floats: Sequence[Any]) -> list[Array]:
        """The arguments as Arrays, with ``floats`` in the float positions."""
        full = [to_array(a) for a in self.args]
        for p, v in zip(self.float_positions, floats):
            full[p] = to_array(v)
        return full


def case(name: str, prims: str | Sequence[str], fn: Callable[..., Any], *args: Any,
         **kw: Any) -> Case:
    prims = (prims,) if isinstance(prims, str) else tuple(prims)
    return Case(name, prims, fn, tuple(np.asarray(a) for a in args), **kw)


def flat_output(out: Any) -> Array:
    """The float leaves of ``out``, raveled and concatenated into one vector."""
    leaves = [to_array(x) for x in tree_flatten(out)[0]]
    parts = [lax.reshape(x, (x.size,)) for x in leaves if dtypes.is_float(x.dtype)]
    return parts[0] if len(parts) == 1 else lax.concatenate(parts, 0)


def stencil(f: Callable[[float], np.ndarray], h: float) -> np.ndarray:
    """d/dt f(t) at 0 by the fourth-order central difference."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def fd_jacobian(f: Callable[..., Any], xs: Sequence[np.ndarray], h: float) -> np.ndarray:
    """The (outputs, inputs) Jacobian of ``f`` (float32 arrays -> vector) by ``stencil``."""
    cols = []
    for p, x in enumerate(xs):
        for k in range(x.size):
            def at(t: float, p: int = p, k: int = k) -> np.ndarray:
                ys = [a.copy() for a in xs]
                ys[p].reshape(-1)[k] += np.float32(t)
                return np.asarray(f(*ys), np.float64)
            cols.append(stencil(at, h))
    return np.stack(cols, axis=1)


def split_like(vec: np.ndarray, like: Sequence[np.ndarray]) -> list[np.ndarray]:
    out, pos = [], 0
    for a in like:
        out.append(vec[pos:pos + a.size].reshape(a.shape))
        pos += a.size
    return out


def assert_close(got: Any, want: np.ndarray, tol: float, what: str) -> None:
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def prims_on_path(fn: Callable[..., Any], args: Sequence[Any],
                  positions: Sequence[int]) -> set[str]:
    """Names of the primitives a tape records between ``args[positions]`` and the output."""
    tape = autodiff.Tape()
    full = [to_array(a) for a in args]
    for p in positions:
        tape.watch(full[p])
    with autodiff.active(tape):
        fn(*full)
    return {node.prim.name for node in tape.nodes}


class BindRecorder:
    """Sees every primitive bound while active (an entry of the tape stack that tracks
    nothing): ``calls`` holds (primitive, args, params, outs)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple, dict, tuple]] = []

    def record(self, prim: Any, args: Sequence[Array], params: dict,
               outs: Sequence[Array]) -> None:
        self.calls.append((prim, tuple(args), dict(params), tuple(outs)))

    def is_tracked(self, x: Any) -> bool:
        return False

    def __enter__(self) -> "BindRecorder":
        core._TAPES.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        core._TAPES.remove(self)


def check_case(c: Case) -> None:
    """grad, jvp, jit(grad) and jit(jvp) of ``c.fn`` against finite differences."""
    pos = c.float_positions
    floats = [c.args[p] for p in pos]
    missing = set(c.prims) - prims_on_path(c.fn, c.args, pos)
    assert not missing, f"{c.name}: {sorted(missing)} not on the differentiated path"

    def flat_fn(*fs: Any) -> Array:
        return flat_output(c.fn(*c.with_floats(fs)))

    jac = fd_jacobian(flat_fn, floats, c.h)
    rng = rng_for(c.name + "/directions")
    w = grid(rng.uniform(0.5, 1.5, jac.shape[0]) * rng.choice([-1.0, 1.0], jac.shape[0]))
    v = [grid(rng.uniform(-1, 1, a.shape)) for a in floats]
    want_grad = split_like(w.astype(np.float64) @ jac, floats)
    want_tangent = jac @ np.concatenate([t.ravel() for t in v]).astype(np.float64)

    def loss(*args: Any) -> Array:
        return xnp.sum(flat_output(c.fn(*args)) * w)

    grad_fn = xlapy.grad(loss, argnums=pos)
    for label, grads in (("grad", grad_fn(*c.args)), ("jit(grad)", xlapy.jit(grad_fn)(*c.args))):
        assert len(grads) == len(pos)
        for p, g, want in zip(pos, grads, want_grad):
            assert g.shape == want.shape and g.dtype == c.args[p].dtype, (label, p, g)
            assert_close(g, want, c.tol, f"{c.name}: {label} of argument {p}")

    def jvp_fn(*fs_and_ts: Any) -> Array:
        n = len(floats)
        return xlapy.jvp(flat_fn, tuple(fs_and_ts[:n]), tuple(fs_and_ts[n:]))[1]

    assert_close(jvp_fn(*floats, *v), want_tangent, c.tol, f"{c.name}: jvp")
    assert_close(xlapy.jit(jvp_fn)(*floats, *v), want_tangent, c.tol, f"{c.name}: jit(jvp)")
    if c.second_order:
        check_hvp(c, floats, w)


def check_hvp(c: Case, floats: list[np.ndarray], w: np.ndarray) -> None:
    """Hessian-vector product: grad of <grad L, u> against differences of grad L."""
    n = len(floats)
    every = tuple(range(n))

    def loss(*fs: Any) -> Array:
        return xnp.sum(flat_output(c.fn(*c.with_floats(fs))) * w)

    def grad_vec(*fs: Any) -> Array:
        return flat_output(xlapy.grad(loss, argnums=every)(*fs))

    u = [grid(rng_for(c.name + "/hvp").uniform(-1, 1, a.shape)) for a in floats]
    u_flat = np.concatenate([t.ravel() for t in u])

    def along(t: float) -> np.ndarray:
        moved = [to_array(a + np.float32(t) * d) for a, d in zip(floats, u)]
        return np.asarray(grad_vec(*moved), np.float64)

    want = stencil(along, c.h)
    got = xlapy.grad(lambda *fs: xnp.sum(grad_vec(*fs) * u_flat), argnums=every)(*floats)
    assert_close(np.concatenate([np.asarray(g).ravel() for g in got]), want, 4 * c.tol,
                 f"{c.name}: Hessian-vector product")


def directional(fn: Callable[..., Any], args: Sequence[np.ndarray],
                direction: Sequence[np.ndarray], h: float = H) -> np.ndarray:
    """d/dt fn(args + t * direction) at 0, by ``stencil`` (fn returns an array)."""
    def at(t: float) -> np.ndarray:
        moved = [to_array(a + np.float32(t) * d) for a, d in zip(args, direction)]
        return np.asarray(flat_output(fn(*moved)), np.float64)
    return stencil(at, h)


def grads_of(fn: Callable[..., Any], args: Sequence[np.ndarray], ct: np.ndarray) -> tuple:
    """Gradients of ``sum(ct * fn(*args))`` with respect to every argument."""
    every = tuple(range(len(args)))
    return xlapy.grad(lambda *a: xnp.sum(flat_output(fn(*a)) * ct), argnums=every)(*args)


def check_shift_invariance(fn: Callable[..., Any], args: Sequence[np.ndarray],
                           ct: np.ndarray) -> None:
    """For functions that commute with adding ``t`` to every input (max, sort, clamp ...)
    the all-ones direction is smooth even at ties: the jvp along it and ``<grad, ones>``
    must match finite differences there."""
    ones = [np.ones_like(a) for a in args]
    want = directional(fn, args, ones)
    _, tangent = xlapy.jvp(lambda *a: flat_output(fn(*a)), tuple(args), tuple(ones))
    assert_close(tangent, want, 2e-4, "jvp along the all-ones direction")
    total = sum(float(np.asarray(g).sum()) for g in grads_of(fn, args, ct))
    assert_close(total, float(np.dot(np.ravel(ct), want)), 2e-4, "<grad, ones>")


__all__ = ["Case", "case", "check_case", "grid", "uniform", "spaced", "rng_for", "stencil",
           "flat_output", "fd_jacobian", "assert_close", "prims_on_path", "BindRecorder",
           "directional", "grads_of", "check_shift_invariance", "H"]
