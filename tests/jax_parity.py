"""Shared pieces of the JAX parity tests (``tests/test_jax_parity_*.py``): inputs and the
comparison of one call in xlapy and in JAX.

A case calls the same function with the same NumPy inputs in both libraries and checks
that both raise, or neither does and the results agree in structure, shapes, dtypes
and values (floating values within a tolerance that depends on the dtype; NaNs in the
same places). The xlapy side runs on the reference interpreter (no native compiles, so
the sweep stays fast); the compiled backends are checked against the interpreter by
their own tests.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

SHAPES = [(), (5,), (3, 4)]
TOL = {np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.complex64): (2e-5, 2e-6),
       np.dtype(np.float16): (2e-3, 2e-3)}


def rand(dtype: Any, shape: tuple[int, ...], seed: int = 0, low: float | None = None,
         nonzero: bool = False) -> np.ndarray:
    """Random values of ``dtype`` and ``shape``: normals for floats (``low`` shifts them
    positive), small integers, random booleans; ``nonzero`` avoids zeros."""
    rng = np.random.default_rng(seed + 7919 * len(shape) + sum(shape))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -9
        v = rng.integers(lo, 10, size=shape)
        if nonzero:
            v = np.where(v == 0, 3, v)
        return v.astype(dt)
    v = rng.standard_normal(shape) * 2
    if low is not None:
        v = np.abs(v) + low
    if nonzero:
        v = np.where(np.abs(v) < 1e-3, 0.5, v)
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return np.asarray(v).astype(dt)


def _leaves(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        return [leaf for e in x for leaf in _leaves(e)]
    return [x]


def _same_values(name: str, got: np.ndarray, want: np.ndarray, rtol: float | None,
                 atol: float | None) -> None:
    assert got.shape == want.shape, f"{name}: shape {got.shape} != JAX's {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != JAX's {want.dtype}"
    if got.dtype.kind in "fc" or got.dtype.itemsize == 2 and got.dtype.kind not in "iub":
        r, a = TOL.get(got.dtype, (1e-2, 1e-2))
        r, a = (rtol or r), (atol or a)
        g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
        w = want.astype(g.dtype)
        np.testing.assert_allclose(g, w, rtol=r, atol=a, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def check(name: str, xfn: Callable[..., Any], jfn: Callable[..., Any], *args: Any,
          rtol: float | None = None, atol: float | None = None, **kwargs: Any) -> None:
    """Call both functions on the same inputs and compare (see the module docstring)."""
    try:
        want = jfn(*args, **kwargs)
        jax_error = None
    except Exception as e:         # noqa: BLE001  (JAX's error types vary)
        jax_error = e
    try:
        got = xfn(*args, **kwargs)
        ours = None
    except Exception as e:         # noqa: BLE001
        ours = e
    if jax_error is not None:
        assert ours is not None, f"{name}: JAX raises {jax_error!r}, xlapy returns a result"
        return
    if ours is not None:
        raise AssertionError(f"{name}: xlapy raises {ours!r}; JAX returns a result") from ours
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl), f"{name}: {len(gl)} results, JAX gives {len(wl)}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        if isinstance(w, (bool, int, float, complex, str, tuple)) and not hasattr(w, "dtype"):
            assert g == w, f"{name}[{i}]: {g!r} != JAX's {w!r}"
            continue
        _same_values(f"{name}[{i}]", np.asarray(g), np.asarray(w), rtol, atol)


# ------------------------------------------------------------------ recorded references
# JAX compiles every distinct call it sees, which dominates a sweep's time; so JAX's
# answers for the table's calls are recorded in ``tests/data/jax_parity_<table>.npz`` (with
# the JAX version) and the default tests compare xlapy against the record, without
# importing JAX. ``test_*_record_is_current`` (slow, needs JAX of the recorded version)
# recomputes every answer live; ``python tests/jax_parity.py`` rewrites the records.
import json  # noqa: E402
from pathlib import Path  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def _to_record(x: Any) -> Any:
    """One leaf as JSON-able metadata plus, for arrays, the array itself."""
    if isinstance(x, (bool, int, float, complex, str)) and not hasattr(x, "dtype"):
        return {"py": repr(x)}, None
    if isinstance(x, (np.dtype, type)):
        return {"dtype_value": np.dtype(x).name}, None
    a = np.asarray(x)
    if a.dtype == object:
        return {"py": repr(x)}, None
    if a.dtype.kind not in "biufc":          # bfloat16 and other ml_dtypes: store the bits
        return {"dtype": a.dtype.name, "bits": a.dtype.itemsize}, a.view(f"u{a.dtype.itemsize}")
    return {"dtype": a.dtype.name}, a


def _from_record(meta: dict, arr: np.ndarray | None) -> Any:
    if "py" in meta:
        import ast
        return ast.literal_eval(meta["py"])
    if "dtype_value" in meta:
        return np.dtype(meta["dtype_value"]) if meta["dtype_value"] != "bfloat16" else \
            np.dtype(__import__("ml_dtypes").bfloat16)
    if "bits" in meta:
        import ml_dtypes
        return arr.view(getattr(ml_dtypes, meta["dtype"]))
    return arr


def record_calls(cases: dict[str, list[Callable[[Any], Any]]], module: Any) -> tuple[dict, dict]:
    """Run every case on ``module`` (JAX's); returns (metadata, arrays)."""
    meta: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, calls in cases.items():
        for i, fn in enumerate(calls):
            key = f"{name}#{i}"
            try:
                out = fn(module)
            except Exception as e:  # noqa: BLE001
                meta[key] = {"error": type(e).__name__}
                continue
            leaves = []
            for j, leaf in enumerate(_leaves(out)):
                m, a = _to_record(leaf)
                if a is not None:
                    arrays[f"{key}/{j}"] = a
                leaves.append(m)
            meta[key] = {"leaves": leaves}
    return meta, arrays


def write_record(table: str, cases: dict, module: Any, version: str) -> Path:
    meta, arrays = record_calls(cases, module)
    path = DATA / f"jax_parity_{table}.npz"
    arrays["__meta__"] = np.array(json.dumps({"jax_version": version, "calls": meta}))
    np.savez_compressed(path, **arrays)
    return path


class Record:
    """JAX's recorded answers for one table (see above)."""

    def __init__(self, table: str) -> None:
        self.path = DATA / f"jax_parity_{table}.npz"
        self.calls: dict[str, Any] = {}
        self.version = None
        if self.path.exists():
            with np.load(self.path) as z:
                head = json.loads(str(z["__meta__"]))
                self.version, self.calls = head["jax_version"], head["calls"]
                self.arrays = {k: z[k] for k in z.files if k != "__meta__"}

    def expected(self, key: str) -> tuple[bool, list]:
        """(JAX raised?, the result's leaves)."""
        entry = self.calls[key]
        if "error" in entry:
            return True, []
        return False, [_from_record(m, self.arrays.get(f"{key}/{j}"))
                       for j, m in enumerate(entry["leaves"])]


def check_recorded(name: str, xfn: Callable[[], Any], record: Record, key: str,
                   rtol: float | None = None, atol: float | None = None) -> None:
    """``check`` against a recorded JAX answer."""
    raised, want = record.expected(key)
    try:
        got = xfn()
        ours = None
    except Exception as e:  # noqa: BLE001
        ours = e
    if raised:
        assert ours is not None, f"{name}: JAX raises {record.calls[key]['error']}, xlapy " \
                                 "returns a result"
        return
    if ours is not None:
        raise AssertionError(f"{name}: xlapy raises {ours!r}; JAX returns a result") from ours
    gl = _leaves(got)
    assert len(gl) == len(want), f"{name}: {len(gl)} results, JAX gives {len(want)}"
    for i, (g, w) in enumerate(zip(gl, want)):
        if isinstance(w, np.dtype):
            assert np.dtype(g) == w, f"{name}[{i}]: {g!r} != JAX's {w!r}"
        elif not isinstance(w, np.ndarray):
            assert g == w, f"{name}[{i}]: {g!r} != JAX's {w!r}"
        else:
            _same_values(f"{name}[{i}]", np.asarray(g), w, rtol, atol)
