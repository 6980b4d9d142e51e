"""``python -m xlapy aot MODULE.hlo --name NAME --out_dir DIR``: an HLO module to
``NAME.o``, ``NAME.h`` and ``NAME_meta.json`` (see :mod:`xlapy.aot`)."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..errors import XlapyError



def main(argv: Sequence[str]) -> int:
    """Run the tool; returns the process exit status (1 when the module is rejected)."""
    parser = argparse.ArgumentParser(prog="python -m xlapy aot",
                                     description="Compile an HLO module ahead of time.")
    parser.add_argument("module", help="HLO text file")
    parser.add_argument("--name", default="model", help="C prefix of every symbol")
    parser.add_argument("--out_dir", default=".", help="where NAME.o/.h/_meta.json go")
    parser.add_argument("--target_cpu", default="native",
                        help="LLVM CPU name (e.g. x86-64-v3) or 'native'")
    parser.add_argument("--target_features", default=None,
                        help="LLVM feature string, e.g. +avx2,+fma")
    ns = parser.parse_args(list(argv))
    from . import compile as aot_compile
    try:
        result = aot_compile(ns.module, name=ns.name, out_dir=ns.out_dir,
                             target_cpu=ns.target_cpu, target_features=ns.target_features)
    except (XlapyError, OSError) as e:
        sys.stderr.write(f"xlapy aot: {e}\n")
        return 1
    sys.stdout.write(f"{result.object_path}\n{result.header_path}\n{result.meta_path}\n")
    return 0


__all__ = ["main"]
