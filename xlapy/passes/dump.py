"""Writing HLO modules to XLA's dump files (text, Graphviz ``.dot``, ``.html``, and
``HloProto`` as ``.hlo.pb`` with ``--xla_dump_hlo_as_proto``).

File names and the on/off decisions come from :class:`xlapy.config.DumpConfig`;
this module renders the module. ``key`` identifies the module for numbering
(``module_0001``): pass the same key for every dump of one compilation (the
default is the module object's ``unique_id``, or the key :func:`share_dump_key` gave
the clone a compiler optimizes, so its per-pass dumps carry the compile's number).
"""
from __future__ import annotations

import html
import weakref
from typing import Any

from ..config import DumpConfig
from ..hlo.ir import HloComputation, HloModule


_SHARED_KEYS: dict[int, Any] = {}


def module_key(module: HloModule) -> Any:
    """The dump-numbering identity of ``module`` (see the module docstring)."""
    shared = _SHARED_KEYS.get(id(module))
    return shared if shared is not None else ("hlo-module", module.unique_id)


def share_dump_key(module: HloModule, key: Any) -> None:
    """Number ``module``'s dumps (the per-pass ones too) with ``key``: a compiler passes the
    key of the module it was given to the clone it optimizes."""
    if id(module) not in _SHARED_KEYS:
        weakref.finalize(module, _SHARED_KEYS.pop, id(module), None)
    _SHARED_KEYS[id(module)] = key


def dump_hlo_module(module: HloModule, suffix: str, config: DumpConfig | None = None,
                    key: Any = None) -> list[str]:
    """Dump ``module`` as ``...<suffix>.txt`` (and ``.hlo.pb``/``.dot``/``.html`` when asked);
    returns the paths.

    ``suffix`` is e.g. ``before_optimizations`` or ``0003.simplification.after_dce.before_cse``.
    """
    config = config or DumpConfig()
    if not config.should_dump_module(module.name):
        return []
    key = key if key is not None else module_key(module)
    paths: list[str] = []
    if config.as_text:
        text = module.to_text(long=config.long_text,
                              print_large_constants=config.large_constants)
        paths.append(config.write(key, module.name, f"{suffix}.txt", text))
    if config.as_proto:
        from ..hlo.proto import module_to_hlo_proto_bytes
        paths.append(config.write(key, module.name, f"{suffix}.hlo.pb",
                                  module_to_hlo_proto_bytes(module)))
    if config.as_dot or config.as_html:
        dot = module_to_dot(module)
        if config.as_dot:
            paths.append(config.write(key, module.name, f"{suffix}.dot", dot))
        if config.as_html:
            paths.append(config.write(key, module.name, f"{suffix}.html",
                                      dot_to_html(dot, f"{module.name} {suffix}")))
    return [p for p in paths if p is not None]


def dump_text(module: HloModule, suffix: str, text: str, config: DumpConfig | None = None,
              key: Any = None) -> str | None:
    """Dump arbitrary text (e.g. a buffer assignment) under the module's file-name prefix.

    ``suffix`` includes the extension: ``after_optimizations-buffer-assignment.txt``.
    """
    config = config or DumpConfig()
    key = key if key is not None else module_key(module)
    return config.write(key, module.name, suffix, text)


def module_to_dot(module: HloModule) -> str:
    """A Graphviz digraph: one cluster per computation, one node per instruction, operand edges."""
    lines = [f"digraph {_dot_quote(module.name)} {{", "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=10];']
    ids: dict[int, str] = {}
    for ci, comp in enumerate(module.computations):
        lines.extend(_computation_cluster(comp, ci, ids, comp is module.entry))
    for comp in module.computations:
        for instr in comp.instructions:
            for op in instr.operands:
                if id(op) in ids:
                    lines.append(f"  {ids[id(op)]} -> {ids[id(instr)]};")
            for callee in instr.called_computations:
                if callee.root is not None and id(callee.root) in ids:
                    lines.append(f"  {ids[id(callee.root)]} -> {ids[id(instr)]} "
                                 "[style=dashed, color=gray];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _computation_cluster(comp: HloComputation, index: int, ids: dict[int, str],
                         is_entry: bool) -> list[str]:
    title = ("ENTRY " if is_entry else "") + comp.name
    out = [f"  subgraph cluster_{index} {{", f"    label={_dot_quote(title)};"]
    for j, instr in enumerate(comp.instructions):
        node = f"n{index}_{j}"
        ids[id(instr)] = node
        label = f"{instr.name}\n{instr.opcode} {instr.shape}"
        style = ", style=filled, fillcolor=lightyellow" if instr is comp.root else ""
        out.append(f"    {node} [label={_dot_quote(label)}{style}];")
    out.append("  }")
    return out


def _dot_quote(text: str) -> str:
    """A Graphviz double-quoted string (newlines become ``\\n`` line breaks)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_to_html(dot: str, title: str) -> str:
    """A standalone page that renders ``dot`` in the browser (d3-graphviz, as XLA's html dump)."""
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script src="https://d3js.org/d3.v7.min.js"></script>
<script src="https://unpkg.com/@hpcc-js/wasm@2/dist/graphviz.umd.js"></script>
<script src="https://unpkg.com/d3-graphviz@5/build/d3-graphviz.js"></script>
</head><body>
<h3>{html.escape(title)}</h3>
<div id="graph"></div>
<pre id="source" style="display:none">{html.escape(dot)}</pre>
<script>
d3.select("#graph").graphviz().renderDot(document.getElementById("source").textContent);
</script>
</body></html>
"""


__all__ = ["dot_to_html", "dump_hlo_module", "dump_text", "module_key", "module_to_dot"]
