"""LLVM IR -> PTX with llvmlite's NVPTX target, and assembling PTX with ``ptxas``.

:func:`compile_ptx` parses one module's IR text, optimizes it for ``nvptx64-nvidia-cuda``
at the chosen ``sm`` (O3, the NVPTX target machine's own passes) and prints PTX. The
driver JIT-compiles that PTX when the runtime loads it (``cuda.py``), so a machine with
no GPU can still produce every text a dump or ``compiler_ir("ptx")`` asks for.
:func:`ptxas_check` runs ``ptxas`` (when installed) on a PTX text for one architecture;
the tests assemble every kernel for ``sm_80`` and ``sm_90`` with it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

from ...errors import ExecutionError

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
DEFAULT_SM = "sm_80"
# The PTX ISA version written into the PTX (CUDA 12.x drivers read 8.x, CUDA 13 too).
PTX_FEATURES = "+ptx80"

_LOCK = threading.Lock()
_READY = False
_LAYOUT: str | None = None


def _init() -> None:
    global _READY
    with _LOCK:
        if not _READY:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _READY = True


@dataclass
class PtxModule:
    """The texts of one compiled GPU module."""

    ir_no_opt: str
    ir_with_opt: str
    ptx: str
    sm: str


def _target_machine(sm: str) -> "llvm.TargetMachine":
    _init()
    try:
        target = llvm.Target.from_triple(TRIPLE)
    except RuntimeError as e:
        raise ExecutionError(f"llvmlite's LLVM has no NVPTX target ({e}): the GPU backend "
                             f"cannot produce PTX") from e
    return target.create_target_machine(cpu=sm, features=PTX_FEATURES, opt=3)


def data_layout() -> str:
    """The NVPTX data layout of this LLVM (it changes between LLVM versions)."""
    global _LAYOUT
    if _LAYOUT is None:
        try:
            _LAYOUT = str(_target_machine(DEFAULT_SM).target_data)
        except ExecutionError:
            _LAYOUT = DATA_LAYOUT
    return _LAYOUT


def compile_ptx(ir_texts: list[str], sm: str = DEFAULT_SM) -> PtxModule:
    """Link ``ir_texts`` (NVPTX modules, one per kernel), optimize and print PTX for ``sm``."""
    tm = _target_machine(sm)
    with _LOCK:
        try:
            mod = llvm.parse_assembly(ir_texts[0])
            for text in ir_texts[1:]:
                mod.link_in(llvm.parse_assembly(text))
            mod.verify()
        except RuntimeError as e:
            raise ExecutionError(f"generated NVPTX IR is invalid: {e}") from e
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = False
        pto.slp_vectorization = False
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        try:
            pb.getModulePassManager().run(mod, pb)
        finally:
            pb.close()
            pto.close()
        with_opt = str(mod)
        ptx = tm.emit_assembly(mod)
    return PtxModule("\n".join(ir_texts), with_opt, ptx, sm)


def ptxas_path() -> str | None:
    """The ``ptxas`` executable on PATH (or ``$CUDA_HOME/bin``), None when absent."""
    found = shutil.which("ptxas")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.exists(os.path.join(home, "bin", "ptxas")):
        return os.path.join(home, "bin", "ptxas")
    return None


def ptxas_check(ptx: str, arch: str) -> str:
    """Assemble ``ptx`` with ``ptxas -arch=<arch>``; return its report (``-v``), raise
    :class:`ExecutionError` with ptxas' messages when it fails."""
    exe = ptxas_path()
    if exe is None:
        raise ExecutionError("ptxas is not installed (not on PATH, no $CUDA_HOME/bin/ptxas)")
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([exe, f"-arch={arch}", "-v", src, "-o", out],
                           capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise ExecutionError(f"ptxas -arch={arch} failed:\n{r.stderr.strip()[:4000]}")
    return r.stderr


__all__ = ["PtxModule", "compile_ptx", "data_layout", "ptxas_check", "ptxas_path", "TRIPLE",
           "DATA_LAYOUT", "DEFAULT_SM"]
