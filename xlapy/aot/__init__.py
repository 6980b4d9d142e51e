"""Ahead-of-time compilation: a function or an HLO module to ``NAME.o`` + ``NAME.h``.

:func:`compile` (and ``python -m xlapy aot MODULE.hlo --name NAME --out_dir DIR``) runs
the CPU backend's passes, buffer assignment and kernel emitters, then writes

- ``NAME.o``: every kernel and one generated entry function ``NAME_run`` that runs the
  whole plan single-threaded over one temp arena (``entry_ir.py``); it needs only libc
  and libm (dots use a self-contained kernel, ``dot_kernel.py``): link with
  ``cc main.c NAME.o -lm``;
- ``NAME.h``: the plain C interface (``NAME_NUM_ARGS``, ``NAME_arg_bytes``, ...,
  ``NAME_run``, ``NAME_error_message``), each buffer's name, shape and dtype in a comment;
- ``NAME_meta.json``: shapes, dtypes, aliasing, the HLO fingerprint, the target.

Programs with a step an object cannot contain (a convolution's library call, an
interpreter fallback) are rejected with an :class:`~xlapy.errors.UnimplementedError`
naming the instruction. See docs/architecture.md, "Ahead-of-time compilation".
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from .artifacts import header_text, meta_dict
from .objects import emit_object, new_llvm_module, resolve_target

log = logging.getLogger("xlapy.aot")

_C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class AotResult:
    """Paths of the files :func:`compile` wrote and the arena size."""

    object_path: str
    header_path: str
    meta_path: str
    temp_bytes: int
    kernels: int


def _as_module(fn_or_module: Any, example_args: tuple) -> tuple[HloModule, str | None]:
    """The HLO module to compile and its source text when it came as text."""
    if isinstance(fn_or_module, HloModule):
        return fn_or_module, None
    from ..hlo import parse_module
    if isinstance(fn_or_module, (str, os.PathLike)):
        text = str(fn_or_module)
        if not text.lstrip().startswith("HloModule") and os.path.exists(text):
            with open(text) as f:
                text = f.read()
        return parse_module(text), text
    if callable(fn_or_module):
        from ..frontend import jit
        lower = getattr(fn_or_module, "lower", None)
        lowered = (lower if callable(lower) else jit(fn_or_module).lower)(*example_args)
        return lowered.hlo_module, None
    raise InvalidArgumentError(
        f"xlapy.aot.compile takes a function, an HloModule, HLO text or a path to an .hlo "
        f"file, not {type(fn_or_module).__name__}")


def compile(fn_or_module: Any, *example_args: Any, name: str = "model", out_dir: str = ".",
            target_cpu: str = "native", target_features: str | None = None) -> AotResult:
    """Compile a function (traced at ``example_args``) or an HLO module ahead of time.

    ``target_cpu``: ``"native"`` (this machine's CPU and features) or an LLVM CPU name
    such as ``"x86-64-v3"``; ``target_features``: LLVM feature string (default: the
    host's for ``"native"``, the CPU's own otherwise). Writes ``name.o``, ``name.h`` and
    ``name_meta.json`` into ``out_dir`` (created if missing). Raises
    InvalidArgumentError for a bad name and UnimplementedError for a program the object
    cannot contain."""
    from .entry_ir import EntryBuilder, internalize_kernels
    from .lowering import lower
    if not _C_NAME.match(name):
        raise InvalidArgumentError(f"aot name {name!r} is not a C identifier")
    module, text = _as_module(fn_or_module, example_args)
    target = resolve_target(target_cpu, target_features)
    llvm_module = new_llvm_module(name, target)
    lowered = lower(module, llvm_module, name, text)
    entry = EntryBuilder(lowered, name, target)
    entry.build()
    internalize_kernels(llvm_module, {f"{name}_run", f"{name}_error_message"})
    obj = emit_object(llvm_module, target)
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, f) for f in (f"{name}.o", f"{name}.h", f"{name}_meta.json")]
    from ..backends.cpu.canonical import canonical_text
    fingerprint = hashlib.sha256(canonical_text(module).encode()).hexdigest()
    with open(paths[0], "wb") as f:
        f.write(obj)
    with open(paths[1], "w") as f:
        f.write(header_text(name, entry, fingerprint, target))
    with open(paths[2], "w") as f:
        json.dump(meta_dict(name, entry, fingerprint, target), f, indent=1)
    log.info("aot: wrote %s (%d bytes, %d kernels, %d temp bytes)", paths[0], len(obj),
             lowered.kernel_count, entry.temp_bytes)
    return AotResult(*paths, entry.temp_bytes, lowered.kernel_count)


__all__ = ["AotResult", "compile"]
