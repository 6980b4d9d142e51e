"""``x.at[idx]`` and ``take`` with JAX's out-of-bounds semantics, vs a NumPy reference.

The reference pads every dimension with one extra slot and sends out-of-range indices
(after wrapping negative ones once, as JAX does) there: a scatter into the slot is dropped
when the padding is cropped off, and a read from it gives the fill value. ``mode="clip"``
clamps the wrapped index instead. Each pattern runs eagerly and under jit; an optional
comparison with jax itself is marked ``peers``.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError, UnimplementedError

X = np.arange(1, 25, dtype=np.float32).reshape(2, 3, 4) * np.float32(0.5) - 3


def _per_dim(idx, ndim):
    items = list(idx) if isinstance(idx, tuple) else [idx]
    out = []
    for e in items:
        if isinstance(e, np.ndarray) and e.dtype == np.bool_:
            out.extend(np.nonzero(e))
        else:
            out.append(e)
    real = sum(1 for e in out if e is not None and e is not Ellipsis)
    if Ellipsis in [e for e in out if not isinstance(e, np.ndarray)]:
        k = next(i for i, e in enumerate(out) if e is Ellipsis and not isinstance(e, np.ndarray))
        out[k:k + 1] = [slice(None)] * (ndim - real)
    else:
        out += [slice(None)] * (ndim - real)
    return out


def _reference_index(idx, shape, clip):
    """The index for the padded array, and which dims were real."""
    out, d = [], 0
    for e in _per_dim(idx, len(shape)):
        if e is None:
            out.append(None)
            continue
        n = shape[d]
        if isinstance(e, slice):
            start, stop, step = e.indices(n)
            out.append(slice(start, None if stop < 0 else stop, step))
        else:
            a = np.asarray(e).astype(np.int64)
            a = np.where(a < 0, a + n, a)
            a = np.clip(a, 0, n - 1) if clip else np.where((a < 0) | (a >= n), n, a)
            out.append(a if a.ndim else int(a))
        d += 1
    return tuple(out)


def reference(x, idx, op, v=None, mode=None, fill_value=None):
    clip = mode == "clip"
    if op == "get":
        fill = np.nan if fill_value is None else fill_value
        pad_value = fill if mode in ("fill", "drop") else 0
        xp = np.pad(x, [(0, 1)] * x.ndim, constant_values=pad_value)
        ridx = _reference_index(idx, x.shape, clip or mode not in ("fill", "drop"))
        return xp[ridx]
    xp = np.pad(x, [(0, 1)] * x.ndim)
    ridx = _reference_index(idx, x.shape, clip)
    target = xp[ridx]
    vb = np.broadcast_to(np.asarray(v, x.dtype), target.shape)
    if op == "set":
        xp[ridx] = vb
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[op]
        ufunc.at(xp, ridx, vb)
    return xp[tuple(slice(0, n) for n in x.shape)]


IDX = [
    ("int_in_range", (1, 2, 3)),
    ("int_out_of_range", (0, 3)),
    ("int_negative_wraps", -1),
    ("int_too_negative", (0, -4)),
    ("array_mixed", np.array([0, 1, 5, -1, -3], np.int32)),
    ("array_2d_last_axis", (Ellipsis, np.array([[0, 4], [-5, 3]], np.int32))),
    ("slice_and_array", (slice(None), np.array([2, 3, -4, 9], np.int32))),
    ("reversed_slice_none", (slice(None, None, -1), None, 1, slice(1, 3))),
    ("nonadjacent_arrays", (np.array([1, 2], np.int32), slice(None), np.array([0, -9], np.int32))),
    ("int_and_arrays", (np.array([0, 1, 3], np.int32), 1, np.array([2, 2, 0], np.int32))),
    ("slice_past_end", (slice(None), slice(1, 10))),
    ("bool_mask", (slice(None), np.array([True, False, True]))),
    ("uint_index", (1, np.array([2, 7], np.uint8))),
]
OPS = ["get", "set", "add", "mul", "min", "max"]
MODES = [None, "clip", "drop", "fill", "promise_in_bounds"]


def _unique_for_set(idx):
    """Patterns whose targets repeat are skipped for ``set`` (the winner is unspecified)."""
    ref = np.arange(X.size, dtype=np.float32).reshape(X.shape)
    pos = np.asarray(reference(ref, idx, "get", mode="fill", fill_value=-1)).ravel()
    pos = pos[pos >= 0]
    return len(set(pos.tolist())) == len(pos)


def _run(x, idx, op, v, mode, fill_value=None):
    kw = {} if mode is None else {"mode": mode}
    ref = x.at[idx] if isinstance(x, xnp.ndarray) else xnp.asarray(x).at[idx]
    if op == "get":
        return ref.get(fill_value=fill_value, **kw)
    return getattr(ref, op)(v, **kw)


# "promise_in_bounds" behaves as the default, and "drop" as "fill" (reads) or the default.
COMBOS = [(op, mode) for op in OPS for mode in
          ([None, "clip", "fill", "drop"] if op == "get" else [None, "clip", "drop"])]


@pytest.mark.parametrize("name,idx", IDX, ids=[n for n, _ in IDX])
def test_at_matches_reference(name, idx):
    """Every (op, mode) of one index pattern: eagerly one by one, and in one jit."""
    v = np.float32(7.5)
    todo = [(op, mode) for op, mode in COMBOS if op != "set" or _unique_for_set(idx)]
    wants = [reference(X, idx, op, v, mode) for op, mode in todo]
    for (op, mode), want in zip(todo, wants):
        got = _run(X, idx, op, v, mode)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"eager {op} {mode}")
    jitted = xlapy.jit(lambda x: [_run(x, idx, op, v, mode) for op, mode in todo])(X)
    for (op, mode), got, want in zip(todo, jitted, wants):
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"jit {op} {mode}")


def test_issue_example_update_out_of_range_is_dropped():
    x = xnp.arange(10.0)
    np.testing.assert_array_equal(np.asarray(x.at[np.array([10])].set(-1)), np.arange(10.0))
    np.testing.assert_array_equal(np.asarray(x.at[10].set(-1)), np.arange(10.0))
    np.testing.assert_array_equal(np.asarray(x.at[np.array([-1])].set(-1)),
                                  np.r_[np.arange(9.0), -1])
    clipped = x.at[np.array([10, -11])].set(-1, mode="clip")
    np.testing.assert_array_equal(np.asarray(clipped), np.r_[-1, np.arange(1.0, 9), -1])


def test_repeated_indices_accumulate_and_updates_broadcast():
    x = np.zeros((3, 2), np.float32)
    i = np.array([0, 2, 0, 5, -1], np.int32)
    v = np.arange(10, dtype=np.float32).reshape(5, 2)
    for fn in (lambda a, b: a.at[i].add(b), xlapy.jit(lambda a, b: a.at[i].add(b))):
        got = fn(xnp.asarray(x), v)
        np.testing.assert_array_equal(np.asarray(got), [[4, 6], [0, 0], [10, 12]])
    got = xnp.asarray(np.ones(4, np.float32)).at[np.array([1, 1, 9])].mul(3.0)
    np.testing.assert_array_equal(np.asarray(got), [1, 9, 1, 1])
    got = xnp.asarray(np.full(4, 5, np.int32)).at[np.array([1, 1, 9])].min(np.array([3, 2, 0]))
    np.testing.assert_array_equal(np.asarray(got), [5, 2, 5, 5])


def test_subtract_divide_power():
    x = np.arange(1, 6, dtype=np.float32)
    i = np.array([1, 3, 3, 7], np.int32)
    np.testing.assert_allclose(np.asarray(xnp.asarray(x).at[i].subtract(1.0)), [1, 1, 3, 2, 5])
    np.testing.assert_allclose(np.asarray(xnp.asarray(x).at[i].divide(2.0)), [1, 1, 3, 1, 5])
    np.testing.assert_allclose(np.asarray(xnp.asarray(x).at[i].power(2.0)), [1, 4, 3, 256, 5])


@pytest.mark.parametrize("dtype,fill", [(np.float32, np.nan), (np.int32, np.iinfo(np.int32).min),
                                        (np.uint8, 255), (np.bool_, True)])
def test_take_default_fill_values(dtype, fill):
    x = (np.arange(6) % 3).astype(dtype)
    got = xnp.take(x, np.array([1, 6, -1, -7], np.int32))
    want = np.array([x[1], fill, x[-1], fill], dtype)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert got.dtype == np.dtype(dtype)
    got = xlapy.jit(lambda a, i: xnp.take(a, i, fill_value=0))(x, np.array([7, 2], np.int32))
    np.testing.assert_array_equal(np.asarray(got), np.array([0, x[2]], dtype))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
def test_take_modes(axis, mode):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[0, 5], [-1, -13]], np.int32)
    flat = x.ravel() if axis is None else x
    ax = 0 if axis is None else axis % x.ndim
    n = flat.shape[ax]
    if mode == "clip":
        want = np.take(flat, np.clip(i, 0, n - 1), axis=ax)      # no wrapping first (JAX)
    elif mode == "wrap":
        want = np.take(flat, i, axis=ax, mode="wrap")
    else:
        wrapped = np.where(i < 0, i + n, i)
        mapped = np.where((wrapped >= 0) & (wrapped < n), wrapped, n)
        pads = [(0, 1) if d == ax else (0, 0) for d in range(flat.ndim)]
        want = np.take(np.pad(flat, pads, constant_values=np.nan), mapped, axis=ax)
    for fn in (lambda a: xnp.take(a, i, axis=axis, mode=mode),
               xlapy.jit(lambda a: xnp.take(a, i, axis=axis, mode=mode))):
        np.testing.assert_array_equal(np.asarray(fn(x)), want)


def test_take_traced_indices_and_bad_modes():
    x = np.arange(5, dtype=np.float32)
    got = xlapy.jit(xnp.take)(x, np.array([4, 5, -6], np.int32))
    np.testing.assert_array_equal(np.asarray(got), [4, np.nan, np.nan])
    with pytest.raises(UnimplementedError, match="raise"):
        xnp.take(x, np.array([1]), mode="raise")
    with pytest.raises(InvalidArgumentError, match="mode"):
        xnp.take(x, np.array([1]), mode="drop")
    with pytest.raises(InvalidArgumentError, match="mode"):
        xnp.asarray(x).at[1].set(0.0, mode="wrap")


def test_getitem_keeps_numpy_errors_for_static_ints_and_clamps_arrays():
    x = xnp.arange(10.0)
    with pytest.raises(IndexError):
        x[10]
    np.testing.assert_array_equal(np.asarray(x[np.array([10, -11])]), [9, 0])   # as JAX
    np.testing.assert_array_equal(np.asarray(x.at[10].get()), 9)
    assert np.isnan(np.asarray(x.at[10].get(mode="fill")))


def test_gradients_skip_dropped_updates():
    x = np.arange(4, dtype=np.float32)
    v = np.array([10.0, 20.0, 30.0], np.float32)
    i = np.array([1, 7, -1], np.int32)
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)

    def loss(a, b):
        return xnp.sum(xnp.asarray(a).at[i].set(b) * w)
    for g in (xlapy.grad(loss, argnums=(0, 1)), xlapy.jit(xlapy.grad(loss, argnums=(0, 1)))):
        gx, gv = g(x, v)
        np.testing.assert_array_equal(np.asarray(gx), [1, 0, 3, 0])
        np.testing.assert_array_equal(np.asarray(gv), [2, 0, 4])
    gx = xlapy.grad(lambda a: xnp.sum(xnp.take(a, np.array([0, 9, 0], np.int32), fill_value=0.0)))(x)
    np.testing.assert_array_equal(np.asarray(gx), [2, 0, 0, 0])


PEER_IDX = ["int_out_of_range", "int_too_negative", "array_mixed", "array_2d_last_axis",
            "nonadjacent_arrays", "uint_index"]


@pytest.mark.peers
def test_at_matches_jax():
    """A sample of the patterns above against jax itself (one jax compile per pattern)."""
    import jax
    combos = [("get", None), ("get", "clip"), ("get", "fill"), ("add", None), ("max", "clip"),
              ("set", None), ("set", "clip")]
    for name, idx in IDX:
        if name not in PEER_IDX:
            continue
        todo = [(op, m) for op, m in combos if op != "set" or _unique_for_set(idx)]

        def all_ops(a):
            return [a.at[idx].get(**({} if m is None else {"mode": m})) if op == "get" else
                    getattr(a.at[idx], op)(7.5, **({} if m is None else {"mode": m}))
                    for op, m in todo]
        for (op, mode), want in zip(todo, jax.jit(all_ops)(X)):
            got = _run(X, idx, op, np.float32(7.5), mode)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want),
                                          err_msg=f"{name} {op} {mode}")


@pytest.mark.peers
def test_take_matches_jax():
    import jax.numpy as jnp
    i = np.array([[0, 5], [-1, -13]], np.int32)
    for dtype in (np.float32, np.uint8):
        x = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
        for mode in (None, "clip", "wrap"):
            for axis in (None, 1):
                want = jnp.take(x, i, axis=axis, mode=mode)
                got = xnp.take(x, i, axis=axis, mode=mode)
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_take_along_axis_modes():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    i = np.array([[5], [-1]], np.int32)
    for fn in (xnp.take_along_axis, xlapy.jit(xnp.take_along_axis, static_argnums=2)):
        np.testing.assert_array_equal(np.asarray(fn(x, i, 1)), [[np.nan], [5]])
    got = xnp.take_along_axis(x, i, 1, mode="clip")                # wrapped, then clamped
    np.testing.assert_array_equal(np.asarray(got), [[2], [5]])
    got = xnp.take_along_axis(x, i, 1, fill_value=-1.0)
    np.testing.assert_array_equal(np.asarray(got), [[-1], [5]])
