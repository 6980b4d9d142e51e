"""The JAX names xlapy does not provide, each with the reason: the one exclusion list.

``python -m xlapy coverage`` (:mod:`xlapy.tools.coverage`) counts a JAX name that xlapy
lacks as *excluded* when it is here and as *missing* otherwise. Entries are per JAX
namespace; a key may be an ``fnmatch`` pattern (``"*_p"``). A name xlapy implements is
never counted as excluded, and ``tests/test_api_coverage.py`` fails when an entry names
something xlapy now has or something JAX no longer has, so the list cannot go stale.
"""
from __future__ import annotations

import fnmatch

_PRIMITIVE = ("a JAX-internal Primitive object (the unit of JAX's tracer); xlapy's primitives "
              "are xlapy.frontend.core.PRIMITIVES, with other names and rules")
_NAMED_AXIS = ("a collective over a named mapped axis (pmap/shard_map); xlapy has no named "
               "axes: collectives are HLO ops run by run_hlo on multi-device modules")

EXCLUSIONS: dict[str, dict[str, str]] = {
    "jax.lax": {
        "*_p": _PRIMITIVE,
        "psum": _NAMED_AXIS, "pmax": _NAMED_AXIS, "pmin": _NAMED_AXIS, "pmean": _NAMED_AXIS,
        "ppermute": _NAMED_AXIS, "pshuffle": _NAMED_AXIS, "pswapaxes": _NAMED_AXIS,
        "psum_scatter": _NAMED_AXIS, "all_gather": _NAMED_AXIS, "all_to_all": _NAMED_AXIS,
        "ragged_all_to_all": _NAMED_AXIS, "axis_index": _NAMED_AXIS, "axis_size": _NAMED_AXIS,
        "pbroadcast": _NAMED_AXIS, "pcast": _NAMED_AXIS, "psend": _NAMED_AXIS,
        "precv": _NAMED_AXIS,
    },
}


def exclusion_reason(namespace: str, name: str) -> str | None:
    """Why ``namespace.name`` is excluded, or None when it is not."""
    table = EXCLUSIONS.get(namespace, {})
    if name in table:
        return table[name]
    for pattern, reason in table.items():
        if any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(name, pattern):
            return reason
    return None
