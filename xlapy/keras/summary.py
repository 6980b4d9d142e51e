"""``model.summary()``: Keras's layer table (name and type, output shape, parameters).

Graphs where a layer has several inputs get a fourth column, ``Connected to``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np


def _shape_text(shape: Any) -> str:
    if shape is None:
        return "?"
    if isinstance(shape, list):
        return "[" + ", ".join(_shape_text(s) for s in shape) + "]"
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _row(fields: Sequence[str], positions: Sequence[int]) -> list[str]:
    """The lines of one table row; text too long for its column continues below."""
    widths = []
    for i in range(len(fields)):
        start = positions[i - 1] if i else 0
        widths.append(max(positions[i] - start - (2 if i < len(positions) - 1 else 0), 1))
    cells = [[t[j:j + w] for j in range(0, max(len(t), 1), w)]
             for t, w in zip([" " + fields[0]] + list(fields[1:]), widths)]
    lines = []
    for k in range(max(len(c) for c in cells)):
        line = ""
        for i, chunks in enumerate(cells):
            start = positions[i - 1] if i else 0
            text = chunks[k] if k < len(chunks) else ""
            if i == 0 and k > 0:
                text = " " + text if not text.startswith(" ") else text
            line += text.ljust(positions[i] - start)
        lines.append(line.rstrip())
    return lines


def _count(weights: Sequence[Any]) -> int:
    return int(sum(int(np.prod(w.shape, dtype=np.int64)) for w in weights))


def summarize(model: Any, line_length: int | None = None,
              print_fn: Callable[[str], None] | None = None) -> None:
    """Print the table for ``model`` (layers, output shapes, parameter counts)."""
    print_fn = print_fn or print
    rows = model._summary_rows()          # (name (type), output shape, params, connected)
    connected = any(r[3] for r in rows)
    if connected:
        line_length = line_length or 98
        fractions = (0.33, 0.55, 0.67, 1.0)
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    else:
        line_length = line_length or 65
        fractions = (0.45, 0.85, 1.0)
        header = ["Layer (type)", "Output Shape", "Param #"]
    positions = [int(line_length * f) for f in fractions]
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    for line in _row(header, positions):
        print_fn(line)
    print_fn("=" * line_length)
    for i, (name, shape, params, inbound) in enumerate(rows):
        fields = [name, _shape_text(shape), str(params)] + ([inbound] if connected else [])
        for line in _row(fields, positions):
            print_fn(line)
        if i < len(rows) - 1:
            print_fn("")
    print_fn("=" * line_length)
    trainable = _count(model.trainable_weights)
    total = _count(model.weights)
    print_fn(f"Total params: {total:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {total - trainable:,}")
    print_fn("_" * line_length)


__all__ = ["summarize"]
