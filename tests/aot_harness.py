"""Helpers of the ahead-of-time tests: build the generic C driver against an object, run
it as a separate process (no Python in it) and compare with the interpreter."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

import xlapy.aot as aot
from xlapy.aot.driver import driver_source
from xlapy.client import run_hlo
from xlapy.hlo import parse_module

CC = shutil.which("cc")
ROOT = Path(__file__).resolve().parents[1]


def build_driver(out: Path, name: str) -> Path:
    """Compile the generic driver against ``out/name.h`` and ``out/name.o`` with the link
    flags the metadata names."""
    (out / "main.c").write_text(driver_source(name))
    exe = out / "driver"
    link = json.loads((out / f"{name}_meta.json").read_text())["link_flags"]
    subprocess.run([CC, "-O1", "-Wall", "-Werror", "-o", str(exe), str(out / "main.c"),
                    str(out / f"{name}.o"), *link], check=True, capture_output=True)
    return exe


def run_driver(exe: Path, args, result_specs, *flags: str) -> tuple[subprocess.CompletedProcess,
                                                                   list[np.ndarray]]:
    """Run the driver (no Python in that process) on ``args``; read back the results."""
    work = exe.parent
    ins, outs = [], []
    for k, a in enumerate(args):
        p = work / f"in{k}.bin"
        np.ascontiguousarray(a).tofile(p)
        ins.append(str(p))
    outs = [str(work / f"out{k}.bin") for k in range(len(result_specs))]
    proc = subprocess.run([str(exe), *ins, *outs, *flags], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "")}, timeout=120)
    results = []
    if proc.returncode == 0:
        for path, (dtype, shape) in zip(outs, result_specs):
            results.append(np.fromfile(path, dtype=dtype).reshape(shape))
    return proc, results


def aot_matches_interpreter(module_or_text, args, out: Path, name: str = "m",
                            rtol: float = 1e-5, atol: float = 1e-5,
                            **options) -> list[np.ndarray]:
    """Compile ahead of time (``options``: blas, threads, ...), run the C driver and
    compare with the interpreter."""
    module = parse_module(module_or_text) if isinstance(module_or_text, str) else module_or_text
    aot.compile(module_or_text, name=name, out_dir=str(out), **options)
    exe = build_driver(out, name)
    expected = [np.asarray(e) for e in run_hlo(module, args)]
    proc, got = run_driver(exe, args, [(e.dtype, e.shape) for e in expected])
    assert proc.returncode == 0, proc.stderr
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    return got
