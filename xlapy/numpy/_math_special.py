"""NumPy's special-function names, from :mod:`xlapy.frontend.lax_special`."""
from __future__ import annotations

from typing import Any

from ..frontend import lax, lax_special
from ..frontend.core import Array
from ._elementwise import promote


def i0(x: Any) -> Array:
    """The modified Bessel function of the first kind, order 0: ``exp(|x|) i0e(x)``."""
    (x,) = promote(x, to_inexact=True)
    return lax.mul(lax_special.bessel_i0e(x), lax.exp(lax.abs(x)))
