"""Named-axis collectives that ``jax.lax`` defines over the basic ones:
:func:`pshuffle` (a ``ppermute``), :func:`pswapaxes` (an ``all_to_all``) and
:func:`pbroadcast` (a masked ``psum``)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend.core import Array
from ..frontend.primitives_collective import (all_to_all, axis_index, axis_size, ppermute,
                                              psum)
from ..frontend.pytree import tree_map
from .. import numpy as xnp


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Participant ``i`` gets participant ``perm[i]``'s ``x`` (``perm`` lists every index
    of the axis once)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise InvalidArgumentError(f"lax.pshuffle: perm {perm} is not a permutation")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swap the named axis with positional axis ``axis`` (whose size must be the named
    axis's): ``all_to_all(x, axis_name, axis, axis)``."""
    if axis_index_groups is not None:
        raise InvalidArgumentError("lax.pswapaxes: axis_index_groups is not supported "
                                   "(all participants of the axis take part)")
    return all_to_all(x, axis_name, axis, axis)


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every participant gets participant ``source``'s ``x`` (a psum of ``x`` masked to
    the source)."""
    n = axis_size(axis_name)
    if not 0 <= int(source) < n:
        raise InvalidArgumentError(f"lax.pbroadcast: source {source} is outside the axis "
                                   f"of size {n}")
    here = axis_index(axis_name) == int(source)

    def one(v: Any) -> Array:
        v = xnp.asarray(v)
        work = v.astype(np.int32) if v.dtype == np.bool_ else v
        out = psum(xnp.where(here, work, xnp.zeros_like(work)), axis_name)
        return out.astype(v.dtype) if dtypes.canonicalize(v.dtype) == np.bool_ else out
    return tree_map(one, x)
