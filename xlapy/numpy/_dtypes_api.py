"""Dtype objects, dtype queries, print options and construction from buffers (JAX's names).

Concrete dtypes are ``np.dtype`` objects (as ``xnp.float32`` already is); the abstract
classes (``number``, ``floating``, ...) are NumPy's, for :func:`issubdtype`. 64-bit dtypes
exist as names but arrays of them are canonicalized to 32 bits (x64 off, as JAX).
"""
from __future__ import annotations

import builtins
import contextlib
from typing import Any, Callable, Iterator

import ml_dtypes
import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend.core import Array
from ._elementwise import asarray

bool = np.dtype(np.bool_)     # noqa: A001  (jnp.bool)
complex128 = np.dtype(np.complex128)
cdouble = complex_ = complex128
csingle = np.dtype(np.complex64)
double = float_ = np.dtype(np.float64)
single = np.dtype(np.float32)
int_ = np.dtype(np.int64)
uint = np.dtype(np.uint64)
int1, int2, int4 = (np.dtype(getattr(ml_dtypes, n)) for n in ("int1", "int2", "int4"))
uint1, uint2, uint4 = (np.dtype(getattr(ml_dtypes, n)) for n in ("uint1", "uint2", "uint4"))
float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3 = (
    np.dtype(getattr(ml_dtypes, n)) for n in ("float4_e2m1fn", "float6_e2m3fn",
                                              "float6_e3m2fn", "float8_e3m4", "float8_e4m3"))
float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz = (
    np.dtype(getattr(ml_dtypes, n)) for n in ("float8_e4m3b11fnuz", "float8_e4m3fn",
                                              "float8_e4m3fnuz", "float8_e5m2",
                                              "float8_e5m2fnuz"))
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
object_ = np.object_
generic, number, integer, signedinteger, unsignedinteger = (
    np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger)
inexact, floating, complexfloating, character, flexible = (
    np.inexact, np.floating, np.complexfloating, np.character, np.flexible)
dtype = np.dtype
euler_gamma = float(np.euler_gamma)
ComplexWarning = np.exceptions.ComplexWarning
index_exp = np.index_exp
s_ = np.s_
iterable = np.iterable

_ML_FLOATS = frozenset(np.dtype(t) for t in (
    ml_dtypes.bfloat16, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3,
    float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
    float8_e8m0fnu))
_ML_INTS = frozenset((int1, int2, int4, uint1, uint2, uint4))


def _dtype_of(x: Any) -> np.dtype:
    if isinstance(x, Array):
        return x.dtype
    if isinstance(x, (type, np.dtype, str)):
        return np.dtype(x)
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    try:
        return np.dtype(x)
    except TypeError:
        return asarray(x).dtype


def finfo(dtype: Any) -> Any:
    """Machine limits of a floating dtype (ml_dtypes' ``finfo``: bfloat16 and float8 too)."""
    return dtypes.finfo(_dtype_of(dtype))


def iinfo(dtype: Any) -> Any:
    """Machine limits of an integer dtype (int4 and other narrow types too)."""
    return dtypes.iinfo(_dtype_of(dtype))


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype two (strong) dtypes promote to, by JAX's lattice (x64 off)."""
    return dtypes.promote_types((np.dtype(a), False), (np.dtype(b), False))[0]


def can_cast(from_: Any, to: Any, casting: str = "safe") -> builtins.bool:
    """NumPy's ``can_cast`` of the two dtypes (of arrays, their dtypes)."""
    return builtins.bool(np.can_cast(_dtype_of(from_), np.dtype(to), casting=casting))


def _np_class(dt: np.dtype) -> type:
    if dt in _ML_FLOATS:
        return np.floating
    if dt in _ML_INTS:
        return np.signedinteger if dt.name.startswith("int") else np.unsignedinteger
    return dt.type


def issubdtype(arg1: Any, arg2: Any) -> builtins.bool:
    """Whether ``arg1`` is below ``arg2`` in NumPy's type hierarchy; bfloat16 and the
    float8 types count as ``floating``, int4 and friends as integers (as in JAX)."""
    if isinstance(arg2, type) and issubclass(arg2, np.generic) and arg2.__module__ == "numpy" \
            and arg2 in (np.generic, np.number, np.integer, np.signedinteger,
                         np.unsignedinteger, np.inexact, np.floating, np.complexfloating,
                         np.character, np.flexible):
        return issubclass(_np_class(_dtype_of(arg1)), arg2)
    return _dtype_of(arg1) == _dtype_of(arg2)


_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u",
          "integral": "iu", "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """The array API's ``isdtype``: ``kind`` a dtype, a kind name (``"real floating"``,
    ``"integral"``, ...) or a tuple of them."""
    dt = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise InvalidArgumentError(f"isdtype: unknown kind {kind!r}; expected one of "
                                       f"{sorted(_KINDS)}")
        k = "f" if dt in _ML_FLOATS else ("iu"[dt.name.startswith("u")] if dt in _ML_INTS
                                          else dt.kind)
        return k in _KINDS[kind]
    return dt == np.dtype(kind)


def isscalar(element: Any) -> builtins.bool:
    """True for Python and NumPy scalars and for 0-d Arrays (JAX's rule)."""
    if isinstance(element, Array):
        return element.ndim == 0
    return builtins.bool(np.isscalar(element)) or (
        isinstance(element, np.ndarray) and element.ndim == 0)


def iscomplexobj(x: Any) -> builtins.bool:
    """Whether ``x``'s dtype is complex (regardless of its values)."""
    return dtypes.is_complex(_dtype_of(x))


def isrealobj(x: Any) -> builtins.bool:
    """Whether ``x``'s dtype is not complex."""
    return not iscomplexobj(x)


# ----------------------------------------------------------------------------- printing
def get_printoptions() -> dict:
    """NumPy's print options (Arrays print through NumPy)."""
    return np.get_printoptions()


def set_printoptions(**kwargs: Any) -> None:
    """Set NumPy's print options, which Arrays use."""
    np.set_printoptions(**kwargs)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[dict]:
    """Print options for the duration of a ``with`` block."""
    with np.printoptions(**kwargs) as opts:
        yield opts


def array_repr(arr: Any, max_line_width: int | None = None, precision: int | None = None,
               suppress_small: builtins.bool | None = None) -> str:
    """``repr`` of an array's value, NumPy's way (``Array(...)`` for Arrays)."""
    text = np.array_repr(np.asarray(asarray(arr)), max_line_width, precision, suppress_small)
    return "Array" + text[len("array"):] if text.startswith("array") else text


def array_str(a: Any, max_line_width: int | None = None, precision: int | None = None,
              suppress_small: builtins.bool | None = None) -> str:
    """``str`` of an array's value, NumPy's way."""
    return np.array_str(np.asarray(asarray(a)), max_line_width, precision, suppress_small)


# ----------------------------------------------------------------- construction from data
def _from_host(value: np.ndarray) -> Array:
    return asarray(value)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Array:
    """An Array from the bytes of a buffer (``bytes``, ``memoryview``, ...)."""
    return _from_host(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Array:
    """An Array from numbers in a text string separated by ``sep``."""
    return _from_host(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(file: Any, dtype: Any = float, count: int = -1, sep: str = "",
             offset: int = 0) -> Array:
    """An Array from a binary or text file (read on the host, outside ``jit``)."""
    return _from_host(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def fromiter(iterable: Any, dtype: Any, count: int = -1) -> Array:
    """An Array from the values of a Python iterable."""
    return _from_host(np.fromiter(iterable, dtype=dtype, count=count))


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Array:
    """An Array from an object with ``__dlpack__`` (a host copy: xlapy arrays live in
    host memory)."""
    if device is not None:
        raise InvalidArgumentError("from_dlpack: device placement is not supported")
    return _from_host(np.array(np.from_dlpack(x), copy=True))


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                 **kwargs: Any) -> Any:
    """``function(*indices)`` on index grids of ``shape`` (the grids are Arrays)."""
    from ._index_tricks import indices
    return function(*indices(tuple(shape), dtype=dtype), **kwargs)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *,
               identity: Any = None) -> Callable[..., Any]:
    """``func`` made elementwise-broadcasting over Arrays: it is called with broadcast
    Arrays, so it must be written with array operations (as under ``jit``)."""
    from ._manipulation import broadcast_arrays

    def ufunc_like(*args: Any) -> Any:
        if len(args) != nin:
            raise InvalidArgumentError(f"frompyfunc: expected {nin} arguments, got {len(args)}")
        out = func(*broadcast_arrays(*args))
        if nout > 1 and (not isinstance(out, tuple) or len(out) != nout):
            raise InvalidArgumentError(f"frompyfunc: func must return {nout} values")
        return out
    ufunc_like.identity = identity
    ufunc_like.nin, ufunc_like.nout = nin, nout
    ufunc_like.__name__ = getattr(func, "__name__", "ufunc")
    return ufunc_like

