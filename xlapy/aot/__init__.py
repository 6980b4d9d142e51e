"""Ahead-of-time compilation: a function or an HLO module to ``NAME.o`` + ``NAME.h``.

:func:`compile` (and ``python -m xlapy aot MODULE.hlo --name NAME --out_dir DIR``) runs
the CPU backend's passes, buffer assignment and kernel emitters, then writes

- ``NAME.o``: every kernel and one generated entry function ``NAME_run`` that runs the
  whole plan over one temp arena (``entry_ir.py``). Dots and convolutions call the BLAS
  the CPU backend links (``blas_kernels.py``; link line :func:`link_flags`), or with
  ``blas=False`` (``--no-blas``) use self-contained kernels, so the object needs only
  libc and libm. ``threads=N`` runs large kernels on a pool of ``N`` threads inside the
  object (``runtime.py``; links pthreads);
- ``NAME.h``: the plain C interface (``NAME_NUM_ARGS``, ``NAME_arg_bytes``, ...,
  ``NAME_run``, ``NAME_error_message``), each buffer's name, shape and dtype in a comment;
- ``NAME_meta.json``: shapes, dtypes, aliasing, the HLO fingerprint, the target, the
  link line;
- with ``shared=True``, ``NAME.so`` too (linked by the system C compiler).

Functions come traced at example arguments (plain functions and ``xlapy.jit`` ones);
``xlapy.tf.function``s and Keras models have their own entry points that land here
(``tf.function(...).export_aot``, ``model.export_aot``). Programs with a step an object
cannot contain (an interpreter fallback such as a host callback) are rejected with an
:class:`~xlapy.errors.UnimplementedError` naming the instruction. See
docs/architecture.md, "Ahead-of-time compilation".
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from .artifacts import header_text, meta_dict
from .frontends import as_module
from .objects import emit_object, new_llvm_module, resolve_target

log = logging.getLogger("xlapy.aot")

_C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class AotResult:
    """Paths of the files :func:`compile` wrote, the arena size and how to link."""

    object_path: str
    header_path: str
    meta_path: str
    temp_bytes: int
    kernels: int
    link: list[str] = field(default_factory=list)    # linker arguments after NAME.o
    shared_path: str | None = None
    uses_blas: bool = False


def link_flags(uses_blas: bool, threads: int = 1) -> list[str]:
    """The libraries a program linking an object needs: BLAS (:mod:`.blas_kernels`), or
    just libm (plus pthreads for a multi-threaded object)."""
    from .blas_kernels import blas_link_flags
    if uses_blas:
        return blas_link_flags()
    return ["-lm"] + (["-lpthread"] if threads > 1 else [])


def compile(fn_or_module: Any, *example_args: Any, name: str = "model", out_dir: str = ".",
            target_cpu: str = "native", target_features: str | None = None,
            blas: bool = True, threads: int = 1, shared: bool = False) -> AotResult:
    """Compile a function (traced at ``example_args``) or an HLO module ahead of time.

    ``target_cpu``: ``"native"`` (this machine's CPU and features) or an LLVM CPU name
    such as ``"x86-64-v3"``; ``target_features``: LLVM feature string (default: the
    host's for ``"native"``, the CPU's own otherwise). ``blas``: dots and convolutions
    call OpenBLAS (False: self-contained kernels, libc/libm only). ``threads``: the size
    of the object's thread pool (1: everything on the calling thread). ``shared``: also
    link ``name.so`` with the system C compiler. Writes ``name.o``, ``name.h`` and
    ``name_meta.json`` into ``out_dir`` (created if missing). Raises
    InvalidArgumentError for a bad name, thread count or a missing C compiler, and
    UnimplementedError for a program the object cannot contain."""
    from .entry_ir import EntryBuilder, internalize_kernels
    from .lowering import lower
    from .runtime import runtime_ir
    if not _C_NAME.match(name):
        raise InvalidArgumentError(f"aot name {name!r} is not a C identifier")
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 256:
        raise InvalidArgumentError(f"aot threads must be an int in [1, 256], not {threads!r}")
    module, text = as_module(fn_or_module, example_args)
    target = resolve_target(target_cpu, target_features)
    llvm_module = new_llvm_module(name, target)
    lowered = lower(module, llvm_module, name, text, blas=bool(blas))
    entry = EntryBuilder(lowered, name, target, threads=threads)
    entry.build()
    internalize_kernels(llvm_module, {f"{name}_run", f"{name}_error_message"})
    extra = None
    if entry.uses_runtime:
        from .blas_kernels import BLAS_SYMBOL_PREFIX
        extra = runtime_ir(name, threads, f"{BLAS_SYMBOL_PREFIX}openblas_set_num_threads"
                           if lowered.uses_blas else None)
    obj = emit_object(llvm_module, target, extra)
    link = link_flags(lowered.uses_blas, threads)
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, f) for f in (f"{name}.o", f"{name}.h", f"{name}_meta.json")]
    from ..backends.cpu.canonical import canonical_text
    fingerprint = hashlib.sha256(canonical_text(module).encode()).hexdigest()
    with open(paths[0], "wb") as f:
        f.write(obj)
    with open(paths[1], "w") as f:
        f.write(header_text(name, entry, fingerprint, target, link))
    with open(paths[2], "w") as f:
        json.dump(meta_dict(name, entry, fingerprint, target, link), f, indent=1)
    so = link_shared(paths[0], os.path.join(out_dir, f"{name}.so"), link) if shared else None
    log.info("aot: wrote %s (%d bytes, %d kernels, %d temp bytes, blas=%s, threads=%d)",
             paths[0], len(obj), lowered.kernel_count, entry.temp_bytes, lowered.uses_blas,
             threads)
    return AotResult(*paths, entry.temp_bytes, lowered.kernel_count, link, so,
                     lowered.uses_blas)


def link_shared(object_path: str, so_path: str, link: list[str]) -> str:
    """Link ``object_path`` into the shared library ``so_path`` with the system C compiler
    (``$CC`` or ``cc``); InvalidArgumentError when there is none or it fails."""
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        raise InvalidArgumentError(f"aot shared=True needs a C compiler to link {so_path}: "
                                   f"{cc!r} is not on PATH")
    proc = subprocess.run([cc, "-shared", "-o", so_path, object_path, *link],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise InvalidArgumentError(f"linking {so_path} failed: {proc.stderr.strip()}")
    return so_path


__all__ = ["AotResult", "compile", "link_flags", "link_shared"]
