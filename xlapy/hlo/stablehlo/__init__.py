"""StableHLO import: MLIR text of the ``stablehlo`` dialect (as JAX prints it) to HLO.

``jax.jit(f).lower(*args).as_text()`` prints a module such as::

    module @jit_f attributes {mhlo.num_partitions = 1 : i32, ...} {
      func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {...}) {
        %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
        return %0 : tensor<4xf32>
      }
    }

:func:`to_hlo_module` turns that text into an :class:`~xlapy.hlo.ir.HloModule`, as XLA's
``stablehlo -> hlo`` conversion does (``convert.py`` says how functions, regions and
attributes map). ``xlapy.hlo.parse_module``, ``xlapy.run_hlo`` and ``python -m xlapy
run_hlo_module`` accept either text (:func:`is_stablehlo` tells them apart);
``python -m xlapy convert in.mlir --to hlo`` prints the HLO. Bad text or an op without a
conversion raises :class:`~xlapy.errors.HloParseError` with the ``line:column``.

Layout: ``syntax.py`` (types, attributes, locations), ``parse.py`` (modules, functions,
op forms), ``convert.py`` (functions and regions), ``ops.py`` (the op table),
``chlo.py`` (CHLO decompositions), ``constants.py`` (dense values), ``dynamic.py``
(bounded and unbounded dynamic dims: the latter specialized from the argument shapes).
"""
from __future__ import annotations

import re
from typing import Sequence

from ..ir import HloModule

_LEADING = re.compile(r"(?:\s+|//[^\n]*\n?)*")


def is_stablehlo(text: str) -> bool:
    """Whether ``text`` is MLIR (a ``module`` / ``func.func``) rather than HLO text."""
    start = _LEADING.match(text).end()
    head = text[start:start + 16]
    if head.startswith("HloModule"):
        return False
    if head.startswith(("module", "func.func", "#loc", "#")):
        return True
    return "func.func" in text[:4096] and "HloModule" not in text[:4096]


def to_hlo_module(text: str, arg_shapes: Sequence[Sequence[int]] | None = None
                  ) -> HloModule:
    """The HloModule of StableHLO MLIR text (raises ``HloParseError`` with line:column).

    ``arg_shapes`` (the dims of each argument of ``@main``) specialize ``tensor<?x...>``
    dims without a bound (``dynamic.py``); without them such a dim is an error."""
    from .convert import convert_module
    from .parse import read_module
    try:
        return convert_module(read_module(text), arg_shapes)
    except RecursionError:
        from ...errors import HloParseError
        raise HloParseError("the MLIR text nests too deeply to convert") from None


__all__ = ["is_stablehlo", "to_hlo_module"]
