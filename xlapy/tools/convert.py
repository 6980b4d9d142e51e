"""``python -m xlapy convert IN --to hlo|pb|pbtxt``: convert a program between forms.

``IN`` is HLO text, StableHLO MLIR text (``jax.jit(f).lower(...).as_text()``), or an
``HloModuleProto`` (binary ``.pb`` or text ``.pbtxt``). The result goes to standard
output (``-o FILE`` writes it to a file; binary protos need ``-o``). Errors print one
line with the ``line:column`` in the input and exit with status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from ..errors import InvalidArgumentError, XlapyError
from ..hlo.ir import HloModule


def load_module(path: Path, fill_elided_constants: bool = False,
                arg_shapes: Sequence[Sequence[int]] | None = None) -> HloModule:
    """A module from a file of any accepted form (by content; ``.pb``/``.pbtxt`` by name);
    ``fill_elided_constants`` fills HLO text's ``constant({...})`` with zeros;
    ``arg_shapes`` specialize StableHLO's unbounded ``tensor<?x...>`` dims."""
    from ..hlo import parse_module
    if path.suffix == ".pb":
        from ..hlo.proto import module_from_proto_bytes
        return module_from_proto_bytes(path.read_bytes())
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidArgumentError(f"{path}: not HLO text (not UTF-8 at byte {e.start}); "
                                   "a binary HloModuleProto needs the suffix .pb") from None
    if path.suffix == ".pbtxt":
        from ..hlo.proto import module_from_proto_text
        return module_from_proto_text(text)
    if arg_shapes is not None:
        from ..hlo.stablehlo import is_stablehlo, to_hlo_module
        if is_stablehlo(text):
            return to_hlo_module(text, arg_shapes)
    return parse_module(text, fill_elided_constants=fill_elided_constants)


def parse_arg_shapes(text: str) -> list[tuple[int, ...]]:
    """``"3x4,8,"`` -> ``[(3, 4), (8,), ()]`` (``--arg-shapes``: one entry per argument,
    dims joined by ``x``, an empty entry for a scalar)."""
    try:
        return [tuple(int(d) for d in part.split("x")) if part else ()
                for part in text.split(",")]
    except ValueError:
        raise InvalidArgumentError(f"--arg-shapes {text!r}: expected dims such as "
                                   "'3x4,4' (one entry per argument)") from None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xlapy convert",
                                description="Convert StableHLO / HLO / HloModuleProto.")
    p.add_argument("input", help="a .mlir, .hlo, .pb or .pbtxt file")
    p.add_argument("--to", default="hlo", choices=["hlo", "pb", "pbtxt"],
                   help="output form (default hlo: XLA's HLO text)")
    p.add_argument("-o", "--output", help="write here instead of standard output")
    p.add_argument("--arg-shapes", help="StableHLO: the argument shapes that specialize "
                   "its unbounded tensor<?x...> dims, e.g. 3x4,4")
    opts = p.parse_args(argv)
    try:
        shapes = parse_arg_shapes(opts.arg_shapes) if opts.arg_shapes is not None else None
        module = load_module(Path(opts.input), arg_shapes=shapes)
        if opts.to == "hlo":
            data: str | bytes = module.to_text()
        else:
            from ..hlo.proto import module_to_proto_bytes, module_to_proto_text
            data = module_to_proto_bytes(module) if opts.to == "pb" else \
                module_to_proto_text(module)
    except (XlapyError, OSError) as e:
        print(f"{opts.input}:{e}" if str(e)[:1].isdigit() else f"{opts.input}: {e}",
              file=sys.stderr)
        return 2
    if opts.output:
        out = Path(opts.output)
        if isinstance(data, bytes):
            out.write_bytes(data)
        else:
            out.write_text(data)
    elif isinstance(data, bytes):
        print("a binary proto needs -o FILE", file=sys.stderr)
        return 2
    else:
        sys.stdout.write(data if data.endswith("\n") else data + "\n")
    return 0
