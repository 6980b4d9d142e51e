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
_TOKENS = ("XLA tokens order side effects; xlapy's front end has no side-effecting ops "
           "(infeed, outfeed, send/recv) to order")
_BLOCK_SCALED = ("cuDNN's block-scaled (MX/NV fp8, fp4) quantizing dot for Blackwell GPUs; "
                 "xlapy has scaled_matmul (the math) but not the quantization configs")
_INTERNAL = "a JAX-internal tracing/staging helper, not an operation"
_IMPLICIT = ("its meaning is the implicit gradient, which needs custom_vjp (issue 14 item 1, "
             "being added separately); to be built on it")

_PCAST = ("a cast between shard_map's varying/invariant/unreduced manual-axis types; its "
          "meaning is defined by shard_map's type system, which xlapy does not have")
_SEND_RECV = ("token-ordered point-to-point Send/Recv HLO returning/consuming XLA tokens; "
              "xlapy's front end has no tokens (use lax.ppermute)")
_RAGGED = ("needs HLO's ragged all-to-all collective (per-participant offsets and sizes), "
           "which xlapy's HLO, interpreter and backends do not have")

EXCLUSIONS: dict[str, dict[str, str]] = {
    "jax.lax": {
        "*_p": _PRIMITIVE,
        "after_all": _TOKENS, "create_token": _TOKENS,
        "dce_sink": _INTERNAL, "stage": _INTERNAL, "shape_as_value": _INTERNAL,
        "scaled_dot": _BLOCK_SCALED,
        "rng_uniform": ("XLA's stateful RNG op, whose values each backend defines; use "
                        "lax.rng_bit_generator or xlapy.random"),
        "custom_root": _IMPLICIT, "custom_linear_solve": _IMPLICIT,
        "pcast": _PCAST, "psend": _SEND_RECV, "precv": _SEND_RECV,
        "ragged_all_to_all": _RAGGED,
    },
    "jax.nn": {"scaled_dot_general": _BLOCK_SCALED, "get_scaled_dot_general_config": _BLOCK_SCALED},
    "jax.random": {"random_gamma_p": _PRIMITIVE},
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
