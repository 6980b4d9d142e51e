"""Running a case: the CPU backends, the oracle, ``check_case``, and child processes.

``check_case`` runs a case on each side (``SIDES``) and compares with the unoptimized
interpreter; ``run_isolated`` does it in a child process (the package's command line)
so that a crash is reported instead of taking the caller down. Cases are saved as
.hlo/.npz/.pkl files for reproduction.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

from .compare import compare_output, same_bits
from .module import Case, OutSpec
from .types_and_values import NP_DTYPE

# the command line (the package directory run as a script), for child processes
CLI = [sys.executable, os.path.dirname(os.path.abspath(__file__))]


_BACKENDS: dict = {}


def cpu_backend(split: bool):
    """Shared CPU backends: default threading, and every kernel split into units."""
    from xlapy.backends import cpu
    key = "split" if split else "default"
    if key not in _BACKENDS:
        _BACKENDS[key] = (cpu.CpuBackend(use_disk_cache=False, num_threads=2, parallel_cost=0)
                          if split else cpu.CpuBackend(use_disk_cache=False))
    return _BACKENDS[key]


@dataclass
class Mismatch:
    seed: int
    side: str              # "cpu", "cpu_split", "opt_interp"
    output: int            # -1: the whole run (an exception)
    message: str
    case: Case | None = None

    def __str__(self) -> str:
        where = f"output {self.output}" if self.output >= 0 else "run"
        return f"seed {self.seed} [{self.side}] {where}: {self.message}"


SIDES = ("cpu", "cpu_split", "opt_interp")


class SecondCallDiffers(AssertionError):
    """A compiled executable gave different bits on its second call with the same inputs
    (state left in the reused arena or in a kernel's globals)."""


def run_side(side: str, module, inputs):
    """Outputs of ``module`` on ``side``. The CPU sides call the executable twice (the arena
    and kernel state are reused across calls) and require the same bits both times. They
    compile with ``--xla_allow_excess_precision=false``: the oracle rounds every bf16 op,
    as HLO says, so the bits can agree (XLA's default lets chains skip roundings)."""
    from xlapy.config import debug_options
    with debug_options(xla_allow_excess_precision=False):
        return _run_side(side, module, inputs)


def _run_side(side: str, module, inputs):
    from xlapy.client.run import flatten_result
    if side in ("cpu", "cpu_split"):
        exe = cpu_backend(side == "cpu_split").compile(module)
        first = flatten_result(exe.execute(inputs))
        first = [np.array(a, copy=True) for a in first]
        second = flatten_result(exe.execute(inputs))
        for i, (a, b) in enumerate(zip(first, second)):
            if not same_bits(a, b):
                raise SecondCallDiffers(f"output {i} of the second call differs from the first")
        return first
    if side in ("gpu", "gpu_sim"):
        from xlapy.client.backends import get_backend
        exe = get_backend(side).compile(module)
        first = [np.array(a, copy=True) for a in flatten_result(exe.execute(inputs))]
        second = flatten_result(exe.execute(inputs))
        for i, (a, b) in enumerate(zip(first, second)):
            if not same_bits(a, b):
                raise SecondCallDiffers(f"output {i} of the second call differs from the first")
        return first
    if side == "opt_interp":
        import xlapy
        from xlapy.backends.interpreter import evaluate_module
        return flatten_result(evaluate_module(xlapy.optimize(module, backend="cpu"), inputs))
    raise ValueError(side)


def oracle(module, inputs):
    from xlapy.backends.interpreter import evaluate_module
    from xlapy.client.run import flatten_result
    return flatten_result(evaluate_module(module, inputs))


def check_case(case: Case, sides=SIDES) -> list[Mismatch]:
    """Run ``case`` on ``sides`` and compare each with the unoptimized interpreter."""
    from xlapy.hlo import parse_module
    module = parse_module(case.text)
    want = oracle(module, case.inputs)
    out = []

    def leaves(x):
        return [b for y in x for b in leaves(y)] if isinstance(x, (tuple, list)) else [x]
    before = [np.asarray(a).tobytes() for a in leaves(case.inputs)]
    for side in sides:
        try:
            got = run_side(side, module, case.inputs)
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            out.append(Mismatch(case.seed, side, -1, f"{type(e).__name__}: {e}", case))
            continue
        after = [np.asarray(a).tobytes() for a in leaves(case.inputs)]
        if after != before:
            out.append(Mismatch(case.seed, side, -1, "the run wrote into an argument array",
                                case))
        if len(got) != len(want):
            out.append(Mismatch(case.seed, side, -1, f"{len(got)} outputs != {len(want)}", case))
            continue
        for i, (g, w, spec) in enumerate(zip(got, want, case.outputs)):
            msg = compare_output(g, w, spec)
            if msg:
                out.append(Mismatch(case.seed, side, i, msg, case))
    return out


def _pack(a):
    if isinstance(a, tuple):
        return ("tuple", [_pack(x) for x in a])
    a = np.asarray(a)
    name = next(t for t, d in NP_DTYPE.items() if d == a.dtype)
    return (name, a.shape, a.tobytes())


def _unpack(p):
    if p[0] == "tuple":
        return tuple(_unpack(x) for x in p[1])
    name, shape, data = p
    return np.frombuffer(data, NP_DTYPE[name]).reshape(shape).copy()


def case_to_file(case: Case, path: str) -> None:
    import pickle
    with open(path, "wb") as f:
        pickle.dump({"seed": case.seed, "profile": case.profile, "text": case.text,
                     "inputs": [_pack(a) for a in case.inputs],
                     "outputs": [(o.ty, o.err) for o in case.outputs]}, f)


def case_from_file(path: str) -> Case:
    import pickle
    with open(path, "rb") as f:
        d = pickle.load(f)
    return Case(d["seed"], d["profile"], d["text"], [_unpack(a) for a in d["inputs"]],
                [OutSpec(*o) for o in d["outputs"]])


def run_isolated(case: Case, sides=SIDES, timeout: float = 600) -> tuple[str, str]:
    """Check ``case`` in a child process: ("ok" | "mismatch" | "crash" | "timeout", output).
    A crash (the process killed by a signal, e.g. an LLVM assertion) cannot take the
    caller down."""
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".pkl", dir="/tmp", delete=False) as f:
        path = f.name
    try:
        case_to_file(case, path)
        try:
            r = subprocess.run([*CLI, "--run-case", path, "--sides", ",".join(sides)],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", ""
        out = r.stdout + r.stderr
        if r.returncode < 0 or r.returncode > 2:
            return "crash", f"exit status {r.returncode}\n{out[-2000:]}"
        return ("ok" if r.returncode == 0 else "mismatch"), out
    finally:
        os.unlink(path)


def save_case(case: Case, path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".hlo", "w") as f:
        f.write(case.text)
    np.savez(path + ".npz", **{f"arg{i}": np.asarray(a) for i, a in enumerate(case.inputs)
                               if not isinstance(a, tuple)})
    case_to_file(case, path + ".pkl")
