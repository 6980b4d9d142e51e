"""``python -m xlapy run_hlo_module``: run an HLO file and compare, like XLA's tool of that name.

The module is optimized with the test platform's pass pipeline (unless
``--run_test_hlo_passes=false``) and run on ``--platform``; unless
``--reference_platform=""``, the unoptimized module also runs on the reference
platform (the interpreter by default) and results are compared with XLA's
``Near`` rule — so the default run checks the optimizer against the interpreter. Given ``--input_data`` with ``out0..`` arrays (the
conformance ``data.npz`` layout), results are also compared with those.
Exit status is 0 when every comparison passes, 1 otherwise (2 for usage or
input errors).
"""
from __future__ import annotations

import argparse
import logging
import sys
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..client import compare_outputs, get_backend, optimize
from ..client.run import flatten_result, prepare_argument, verify_for_execution
from .convert import load_module
from ..errors import InvalidArgumentError, XlapyError
from ..hlo.ir import HloModule
from ..hlo.stablehlo import is_stablehlo
from ..hlo.shape import Shape

log = logging.getLogger("xlapy.run_hlo_module")


def fake_argument(shape: Shape, rng: np.random.Generator, large_range: bool = False):
    """Random data for one parameter, in the spirit of XLA's MakeFakeLiteral."""
    if shape.is_tuple:
        return tuple(fake_argument(s, rng, large_range) for s in shape.tuple_shapes)
    if shape.is_token:
        return None
    et = shape.element_type
    if et.is_pred:
        return rng.integers(0, 2, size=shape.dims).astype(np.bool_)
    if et.is_integral:
        info = np.iinfo(np.int64 if et.is_signed_integral else np.uint64)
        lo = max(-8, int(info.min)) if et.is_signed_integral else 0
        if et.bits <= 4:
            lo, hi = (-2 if et.is_signed_integral else 0), 2
        else:
            hi = 8 if not large_range else min(int(info.max), 2 ** (et.bits - 2))
        return rng.integers(lo, hi, size=shape.dims, endpoint=True).astype(shape.dtype)
    if et.is_complex:
        real = rng.uniform(-1, 1, size=shape.dims) + 1j * rng.uniform(-1, 1, size=shape.dims)
        return real.astype(shape.dtype)
    if large_range:
        mag = np.exp(rng.uniform(-10, 10, size=shape.dims))
        vals = mag * rng.choice([-1.0, 1.0], size=shape.dims)
    else:
        vals = rng.uniform(-1, 1, size=shape.dims)
    return np.asarray(vals).astype(shape.dtype)


def _input_shapes(path: Path) -> list[tuple[int, ...]] | None:
    """The shapes of ``arg0..`` in an npz (they specialize StableHLO's unbounded dims);
    None when it cannot be read (``load_inputs`` then says why)."""
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            return None
        with data:
            names = [f"arg{i}" for i in range(len(data.files)) if f"arg{i}" in data.files]
            return [tuple(data[n].shape) for n in names]
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
        return None


def load_inputs(path: Path, module: HloModule) -> tuple[list, list | None]:
    """Arguments ``arg0..`` (cast to the parameter types) and expected ``out0..`` from an npz.

    Anything unreadable (a missing file, not an npz, a damaged archive, pickled object
    arrays, which are never loaded, values that do not convert) raises
    :class:`~xlapy.errors.InvalidArgumentError` with a one-line reason."""
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise InvalidArgumentError(f"{path}: is a single .npy array, not an npz archive "
                                       "of arg0.. (and out0..) arrays")
        with data:
            arrays = {k: data[k] for k in data.files}
    except XlapyError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        reason = str(e).split(". If you trust")[0]          # NumPy's advice does not apply
        reason = " ".join(reason.split()) or type(e).__name__
        if "pickle" in reason or "Object arrays" in reason:
            reason += " (pickled data is never loaded)"
        raise InvalidArgumentError(f"{path}: cannot read the input data: {reason}") from None
    args = []
    for i, p in enumerate(module.entry.parameters):
        key = f"arg{i}"
        if key not in arrays:
            raise InvalidArgumentError(f"{path}: no array {key!r} for parameter {i} "
                                       f"({p.shape})")
        value = arrays[key]
        if p.shape.is_array:
            try:
                value = np.asarray(value).astype(p.shape.dtype)
            except (TypeError, ValueError, OverflowError) as e:
                raise InvalidArgumentError(f"{path}: array {key!r} ({value.dtype}"
                                           f"{list(value.shape)}) does not convert to "
                                           f"{p.shape}: {e}") from None
        args.append(value)
    outs = [k for k in arrays if k.startswith("out") and k[3:].isdigit()]
    outs.sort(key=lambda k: int(k[3:]))
    expected = [arrays[k] for k in outs] if outs else None
    return args, expected


def _format(values: list) -> str:
    return "\n".join(f"  [{i}] {np.asarray(v).dtype}{list(np.shape(v))}: "
                     f"{np.array2string(np.asarray(v), threshold=20)}" for i, v in enumerate(values))


def _report(result: list, reference: list, opts: argparse.Namespace, what: str,
            ok_words: str) -> int:
    """Compare and print XLA's verdict line; returns 1 on a miscompare, else 0."""
    bad = compare_outputs(result, reference, opts.rel_error_bound, opts.abs_error_bound)
    if not bad:
        print(f"** Results on {what} {ok_words}. **")
        return 0
    print(f"** Results on {what} MISCOMPARE **")
    for m in bad:
        print("  " + m.message)
    return 1


def run_file(path: Path, opts: argparse.Namespace) -> int:
    """Run one HLO file per the options; returns the number of failed comparisons."""
    try:
        text = path.read_text() if path.suffix not in (".pb", ".pbtxt") else None
    except (UnicodeDecodeError, OSError):
        text = None
    mlir = text is not None and is_stablehlo(text)
    module = load_module(path, opts.fill_elided_constants,   # HLO/StableHLO text, or a proto
                         _input_shapes(Path(opts.input_data))
                         if mlir and opts.input_data else None)
    if mlir:
        text = None
    verify_for_execution(module, text)      # problems name their line:column in the file
    test_backend = get_backend(opts.platform)
    ref_name = opts.reference_platform
    ref_backend = get_backend(ref_name) if ref_name else None
    test_module = optimize(module, backend=opts.platform) if opts.run_test_hlo_passes else module
    test_exe = test_backend.compile(test_module)
    ref_exe = ref_backend.compile(module.clone()) if ref_backend else None
    given, expected = (load_inputs(Path(opts.input_data), module) if opts.input_data
                       else (None, None))
    failures = 0
    rng = np.random.default_rng(opts.seed)
    params = module.entry.parameters
    for it in range(opts.iterations):
        if given is not None and not opts.force_fake_data:
            raw = given
        else:
            raw = [fake_argument(p.shape, rng, opts.use_large_float_range) for p in params]
        args = [prepare_argument(a, p.shape, f"argument {i}") for i, (a, p)
                in enumerate(zip(raw, params))]
        if opts.print_literals:
            print(f"** Arguments (iteration {it}) **\n{_format(args)}")
        result = flatten_result(test_exe.execute(args))
        if opts.print_literals:
            print(f"** Result on {opts.platform} **\n{_format(result)}")
        if ref_exe is not None:
            ref = flatten_result(ref_exe.execute(args))
            failures += _report(result, ref, opts, f"{opts.platform} and {ref_name}",
                                "are close enough")
        if expected is not None and given is not None and not opts.force_fake_data:
            failures += _report(result, expected, opts, f"{opts.platform} and the expected outputs",
                                "match")
    return failures


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m xlapy run_hlo_module",
                                description="Run HLO modules and compare with a reference.")
    p.add_argument("files", nargs="+", help="HLO text, StableHLO (.mlir) or HloModuleProto "
                   "(.pb, .pbtxt) files")
    p.add_argument("--platform", default="interpreter", help="test platform (interpreter, cpu, gpu, gpu_sim)")
    p.add_argument("--reference_platform", default="interpreter",
                   help='reference platform; "" for none')
    p.add_argument("--input_data", help="npz with arg0.. (and optionally expected out0..)")
    p.add_argument("--run_test_hlo_passes", type=_bool, default=True,
                   help="optimize the module for the test platform first (default true)")
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--print_literals", action="store_true")
    p.add_argument("--random_init_input_literals", action="store_true", default=True,
                   help="random inputs when no --input_data (the default)")
    p.add_argument("--force_fake_data", action="store_true")
    p.add_argument("--use_large_float_range", action="store_true")
    p.add_argument("--abs_error_bound", type=float, default=1e-3)
    p.add_argument("--rel_error_bound", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--input_format", default="hlo", choices=["hlo", "stablehlo", "pb", "pbtxt"],
                   help="ignored: the form is found from each file's content and suffix")
    p.add_argument("--fill_elided_constants", action="store_true",
                   help="run constants printed as {...} with zeros (the results are then "
                        "not the module's; without it such modules are rejected)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    total_fail = 0
    total_runs = 0
    for f in opts.files:
        try:
            total_fail += run_file(Path(f), opts)
        except (XlapyError, OSError) as e:
            print(f"{f}: error: {e}", file=sys.stderr)
            return 2
        total_runs += opts.iterations
    if total_fail:
        print(f"{total_fail}/{total_runs} runs miscompared.")
    return 1 if total_fail else 0
