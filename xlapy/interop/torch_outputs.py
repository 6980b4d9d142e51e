"""How an xlapy-compiled ATen graph hands its outputs back to PyTorch.

AOTAutograd's forward graphs return, beside the model's outputs, the tensors the backward
graph needs: often the graph's own inputs (parameters), views of them (a linear layer's
transposed weight) and the same activation twice (``relu`` and ``alias(relu)``). Computing
those in the compiled program would copy them on every call. :class:`OutputPlan` decides
once per graph which outputs the program computes (each distinct node once) and which
are made in PyTorch from the call's inputs and the program's results: graph inputs as
they are, and view ops (``permute``, ``alias``, ``t``, ...) replayed as PyTorch views,
which copy nothing.

Program results become tensors sharing xlapy's result buffers (``torch.from_numpy``).
int64 results (xlapy computes them in 32 bits: indices, index arithmetic) are marked with
the attribute :data:`SMALL_INT64`, so that passing them back into a compiled graph (saved
pooling indices going to the backward graph) skips the check that they fit 32 bits.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch.fx.node import map_arg

__all__ = ["OutputPlan", "SMALL_INT64"]

#: Attribute set on int64 tensors whose values are known to fit 32 bits.
SMALL_INT64 = "_xlapy_small_int64"

# View ops that are valid on a tensor of any strides (``view`` is only replayed on the
# program's results, which are dense).
_ANY_STRIDES = frozenset(f"aten.{n}" for n in (
    "alias.default", "detach.default", "permute.default", "t.default", "transpose.int",
    "expand.default", "unsqueeze.default", "squeeze.dim", "squeeze.dims",
    "squeeze.default", "slice.Tensor", "select.int"))
_DENSE_ONLY = frozenset(["aten.view.default", "aten._unsafe_view.default"])


class OutputPlan:
    """Which outputs of an ATen graph a compiled program computes (:attr:`computed`, each
    node once) and how :meth:`results` builds the graph's outputs from them."""

    def __init__(self, nodes: Sequence[torch.fx.Node], placeholders: Sequence[torch.fx.Node],
                 outputs: Sequence[Any]) -> None:
        slot = {ph: i for i, ph in enumerate(placeholders)}
        out_nodes = {o for o in outputs if isinstance(o, torch.fx.Node)}
        self.computed: list[torch.fx.Node] = []
        self.replayed: list[torch.fx.Node] = []
        made: set[torch.fx.Node] = set(slot)
        for node in nodes:              # graph order: a view's source comes before it
            if node not in out_nodes or node in made:
                continue
            (self.replayed if self._replayable(node, made, self.computed)
             else self.computed).append(node)
            made.add(node)
        self.outputs = list(outputs)
        used = [o for o in self.outputs if isinstance(o, torch.fx.Node)]
        for node in self.replayed:
            used.extend(node.all_input_nodes)
        self.inputs = sorted({(slot[n], n) for n in used if n in slot}, key=lambda p: p[0])

    @staticmethod
    def _replayable(node: torch.fx.Node, available: set, dense: Sequence) -> bool:
        if node.op != "call_function":
            return False
        name = str(node.target)
        if name not in _ANY_STRIDES and name not in _DENSE_ONLY:
            return False
        nodes = node.all_input_nodes
        if not nodes or any(a not in available for a in nodes):
            return False
        if name in _DENSE_ONLY and node.args[0] not in dense:    # only the program's results
            return False
        val = node.meta.get("val")
        return isinstance(val, torch.Tensor)

    def results(self, args: Sequence[Any], outs: Sequence[Any]) -> list[Any]:
        """The graph's outputs for the call with ``args`` whose program returned ``outs``
        (the values of :attr:`computed`, None where a lowering gave no array)."""
        env: dict[torch.fx.Node, Any] = {}
        for node, v in zip(self.computed, outs):
            env[node] = None if v is None else _tensor(v, node)
        for i, ph in self.inputs:
            env[ph] = args[i]
        for node in self.replayed:
            env[node] = node.target(*map_arg(node.args, env.__getitem__),
                                    **map_arg(node.kwargs, env.__getitem__))
        return [env[o] if isinstance(o, torch.fx.Node) else None for o in self.outputs]


def _tensor(v: Any, node: torch.fx.Node) -> torch.Tensor:
    t = torch.from_numpy(np.asarray(v))
    want = node.meta["val"].dtype
    if t.dtype == want:
        return t
    t = t.to(want)
    if want == torch.int64:
        setattr(t, SMALL_INT64, True)
    return t
