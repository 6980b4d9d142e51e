"""Graphs with some ops xlapy cannot lower: the lowerable pieces compiled by xlapy, the
rest run by PyTorch (an in-graph break, like Dynamo's graph breaks one level down)."""
from __future__ import annotations

import logging
from typing import Any, Callable

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

log = logging.getLogger("xlapy.interop.torch")

__all__ = ["split_unsupported"]


class _Lowerable(OperatorSupport):
    def __init__(self, supported: Callable[[torch.fx.Node], bool]):
        super().__init__()
        self._supported = supported

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return self._supported(node)


class _CompiledPiece(torch.nn.Module):
    """A fused piece of the graph, run by its xlapy-compiled function."""

    def __init__(self, fn: Callable[[list], list], single: bool):
        super().__init__()
        self.fn = fn
        self.single = single

    def forward(self, *args: Any) -> Any:
        outs = self.fn(list(args))
        return outs[0] if self.single else tuple(outs)


def split_unsupported(gm: torch.fx.GraphModule, supported: Callable[[torch.fx.Node], bool],
                      compile_piece: Callable[[torch.fx.GraphModule, str], Callable]
                      ) -> tuple[torch.fx.GraphModule, int]:
    """``gm`` with each maximal group of ``supported`` nodes fused into a submodule
    compiled by ``compile_piece``; the other nodes stay PyTorch ops. Returns the new
    graph module and the number of compiled pieces (0: nothing worth compiling)."""
    partitioner = CapabilityBasedPartitioner(gm, _Lowerable(supported),
                                             allows_single_node_partition=False)
    partitions = partitioner.propose_partitions()
    if not partitions:
        return gm, 0
    fused = partitioner.fuse_partitions(partitions, prefix="xlapy_piece_")
    pieces = 0
    for name, sub in list(fused.named_children()):
        if not name.startswith("xlapy_piece_") or not isinstance(sub, torch.fx.GraphModule):
            continue
        out = next(n for n in sub.graph.nodes if n.op == "output")
        single = not isinstance(out.args[0], (list, tuple))
        setattr(fused, name, _CompiledPiece(compile_piece(sub, name), single))
        pieces += 1
    fused.recompile()
    return fused, pieces
