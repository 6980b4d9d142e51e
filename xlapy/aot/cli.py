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
    parser.add_argument("--no-blas", dest="blas", action="store_false",
                        help="self-contained dot/convolution kernels: link only libc/libm")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of the object's pool (default 1: the calling thread)")
    parser.add_argument("--shared", action="store_true",
                        help="also link NAME.so (needs a C compiler)")
    ns = parser.parse_args(list(argv))
    from . import compile as aot_compile
    try:
        result = aot_compile(ns.module, name=ns.name, out_dir=ns.out_dir,
                             target_cpu=ns.target_cpu, target_features=ns.target_features,
                             blas=ns.blas, threads=ns.threads, shared=ns.shared)
    except (XlapyError, OSError) as e:
        sys.stderr.write(f"xlapy aot: {e}\n")
        return 1
    written = [result.object_path, result.header_path, result.meta_path]
    if result.shared_path:
        written.append(result.shared_path)
    sys.stdout.write("".join(f"{p}\n" for p in written))
    return 0


__all__ = ["main"]
