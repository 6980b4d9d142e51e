"""GPU row reductions (``backends/gpu/reduction.py``, ``row_tile.py``) on the ``gpu_sim``
grid emulator against the interpreter: softmax, log-softmax, layernorm, RMS norm, integer
and variadic (argmax-like) row reductions over row lengths that take every path -- the
per-unit kernel (rows shorter than a warp), a warp per row, a block per row with the row
cached in registers, reloaded each phase, or swept in a loop (rows too long to tile) --
with vector and scalar accesses, several element types, NaN and infinities; column
reductions (``column_reduction.py``), tiled and serial; the kernels' PTX assembled by
``ptxas`` for sm_80 and sm_90 without spills. With ``XLAPY_GPU_TEST_DEVICE=1`` the same
programs also run on the GPU.
"""
from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest

from gpu_programs import gpu_kernels
from xlapy.client.run import run_hlo
from xlapy.hlo import parse_module

gpu = pytest.importorskip("xlapy.backends.gpu")
from xlapy.backends.gpu.ptx import ptxas_check, ptxas_path  # noqa: E402

DEVICE = os.environ.get("XLAPY_GPU_TEST_DEVICE") == "1"
# the simulator's tests run on every machine; the device check (gpu_check.py, which runs
# this file whole) keeps to the notes, ptxas and device tests
SIMULATOR = pytest.mark.skipif(DEVICE, reason="simulator test: run without a GPU")
LENGTHS = [1, 7, 31, 32, 33, 1000, 4096, 4099, 5000, 20000, 40000]
ROWS = {1: 9, 7: 9, 31: 9, 32: 9, 33: 11, 1000: 9, 4096: 8, 4099: 8, 5000: 8, 20000: 8,
        40000: 2}


# ----------------------------------------------------------------------------- programs
def _reducers(t: str) -> str:
    return "".join(f"{name}_{t} {{\n a = {t}[] parameter(0)\n b = {t}[] parameter(1)\n"
                   f" ROOT s = {t}[] {op}(a, b)\n}}\n"
                   for name, op in (("add", "add"), ("mx", "maximum")))


def _head(name: str, t: str, r: int, c: int, extra: str = "") -> tuple[str, str]:
    """Module text up to the f32 (or ``t``) input ``xf``; returns (text, compute type)."""
    ct = "f32" if t in ("f16", "bf16") else t
    text = (f"HloModule {name}\n{_reducers(ct)}ENTRY e {{\n x = {t}[{r},{c}] parameter(0)\n"
            + extra)
    text += f" xf = {ct}[{r},{c}] convert(x)\n" if ct != t else f" xf = {t}[{r},{c}] copy(x)\n"
    return text, ct


def _out(t: str, ct: str, r: int, c: int, v: str) -> str:
    return (f" ROOT o = {t}[{r},{c}] convert({v})\n}}\n" if ct != t else
            f" ROOT o = {t}[{r},{c}] copy({v})\n}}\n")


def softmax(t: str, r: int, c: int, log: bool = False) -> str:
    s, ct = _head("softmax", t, r, c)
    s += (f" ninf = {ct}[] constant(-inf)\n z = {ct}[] constant(0)\n"
          f" m = {ct}[{r}] reduce(xf, ninf), dimensions={{1}}, to_apply=mx_{ct}\n"
          f" mb = {ct}[{r},{c}] broadcast(m), dimensions={{0}}\n"
          f" d = {ct}[{r},{c}] subtract(xf, mb)\n e = {ct}[{r},{c}] exponential(d)\n"
          f" s = {ct}[{r}] reduce(e, z), dimensions={{1}}, to_apply=add_{ct}\n")
    if log:
        s += (f" ls = {ct}[{r}] log(s)\n lb = {ct}[{r},{c}] broadcast(ls), dimensions={{0}}\n"
              f" y = {ct}[{r},{c}] subtract(d, lb)\n")
    else:
        s += (f" sb = {ct}[{r},{c}] broadcast(s), dimensions={{0}}\n"
              f" y = {ct}[{r},{c}] divide(e, sb)\n")
    return s + _out(t, ct, r, c, "y")


def layernorm(t: str, r: int, c: int, rms: bool = False) -> str:
    s, ct = _head("norm", t, r, c, f" g = {t}[{c}] parameter(1)\n")
    s += (f" gf = {ct}[{c}] convert(g)\n z = {ct}[] constant(0)\n n = {ct}[] constant({c})\n"
          f" nb = {ct}[{r}] broadcast(n), dimensions={{}}\n eps = {ct}[] constant(1e-5)\n"
          f" eb = {ct}[{r}] broadcast(eps), dimensions={{}}\n")
    if rms:
        s += f" xc = {ct}[{r},{c}] copy(xf)\n"
    else:
        s += (f" s = {ct}[{r}] reduce(xf, z), dimensions={{1}}, to_apply=add_{ct}\n"
              f" mean = {ct}[{r}] divide(s, nb)\n"
              f" mb = {ct}[{r},{c}] broadcast(mean), dimensions={{0}}\n"
              f" xc = {ct}[{r},{c}] subtract(xf, mb)\n")
    s += (f" sq = {ct}[{r},{c}] multiply(xc, xc)\n"
          f" v = {ct}[{r}] reduce(sq, z), dimensions={{1}}, to_apply=add_{ct}\n"
          f" var = {ct}[{r}] divide(v, nb)\n ve = {ct}[{r}] add(var, eb)\n"
          f" rs = {ct}[{r}] rsqrt(ve)\n rb = {ct}[{r},{c}] broadcast(rs), dimensions={{0}}\n"
          f" y = {ct}[{r},{c}] multiply(xc, rb)\n"
          f" gb = {ct}[{r},{c}] broadcast(gf), dimensions={{1}}\n"
          f" yg = {ct}[{r},{c}] multiply(y, gb)\n")
    return s + _out(t, ct, r, c, "yg")


def softmax_of_sum(r: int, c: int) -> str:
    """softmax(x + y): two row-sized parameters (at 20000 more than the register budget)."""
    return (f"HloModule sos\n{_reducers('f32')}ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" w = f32[{r},{c}] parameter(1)\n xf = f32[{r},{c}] add(x, w)\n"
            f" ninf = f32[] constant(-inf)\n z = f32[] constant(0)\n"
            f" m = f32[{r}] reduce(xf, ninf), dimensions={{1}}, to_apply=mx_f32\n"
            f" mb = f32[{r},{c}] broadcast(m), dimensions={{0}}\n"
            f" d = f32[{r},{c}] subtract(xf, mb)\n e = f32[{r},{c}] exponential(d)\n"
            f" s = f32[{r}] reduce(e, z), dimensions={{1}}, to_apply=add_f32\n"
            f" sb = f32[{r},{c}] broadcast(s), dimensions={{0}}\n"
            f" ROOT y = f32[{r},{c}] divide(e, sb)\n}}\n")


def int_rows(t: str, r: int, c: int) -> str:
    """Row max and row sum of an integer input and ``x - max`` (a tuple of three)."""
    return (f"HloModule ints\n{_reducers(t)}ENTRY e {{\n x = {t}[{r},{c}] parameter(0)\n"
            f" lo = {t}[] constant({0 if t[0] == 'u' else -7})\n z = {t}[] constant(3)\n"
            f" m = {t}[{r}] reduce(x, lo), dimensions={{1}}, to_apply=mx_{t}\n"
            f" s = {t}[{r}] reduce(x, z), dimensions={{1}}, to_apply=add_{t}\n"
            f" mb = {t}[{r},{c}] broadcast(m), dimensions={{0}}\n"
            f" d = {t}[{r},{c}] subtract(x, mb)\n"
            f" ROOT o = ({t}[{r}], {t}[{r}], {t}[{r},{c}]) tuple(m, s, d)\n}}\n")


def argmax(r: int, c: int) -> str:
    """A variadic (value, index) row reduction, as ``jnp.argmax`` lowers."""
    return ("HloModule am\nam {\n a = f32[] parameter(0)\n ai = s32[] parameter(1)\n"
            " b = f32[] parameter(2)\n bi = s32[] parameter(3)\n"
            " ge = pred[] compare(a, b), direction=GE\n v = f32[] select(ge, a, b)\n"
            " i = s32[] select(ge, ai, bi)\n ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
            f"ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" io = s32[{r},{c}] iota(), iota_dimension=1\n ninf = f32[] constant(-inf)\n"
            f" z = s32[] constant(0)\n"
            f" ROOT m = (f32[{r}], s32[{r}]) reduce(x, io, ninf, z), dimensions={{1}}, "
            f"to_apply=am\n}}\n")


def columns(shape: tuple, dims: tuple, t: str = "f32") -> str:
    """Sum and max over ``dims`` keeping the minor dimension, and ``sum - max``."""
    kept = [shape[d] for d in range(len(shape)) if d not in dims]
    j = lambda v: ",".join(map(str, v))     # noqa: E731
    lo = "-inf" if t[0] == "f" else "-7"
    return (f"HloModule c\n{_reducers(t)}ENTRY e {{\n x = {t}[{j(shape)}] parameter(0)\n"
            f" z = {t}[] constant(0)\n n = {t}[] constant({lo})\n"
            f" s = {t}[{j(kept)}] reduce(x, z), dimensions={{{j(dims)}}}, to_apply=add_{t}\n"
            f" m = {t}[{j(kept)}] reduce(x, n), dimensions={{{j(dims)}}}, to_apply=mx_{t}\n"
            f" d = {t}[{j(kept)}] subtract(s, m)\n"
            f" ROOT o = ({t}[{j(kept)}], {t}[{j(kept)}]) tuple(d, m)\n}}\n")


# ----------------------------------------------------------------------------- helpers
def _data(t: str, shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if t in ("s32", "s64", "u32"):
        dt = {"s32": np.int32, "s64": np.int64, "u32": np.uint32}[t]
        return rng.integers(0 if t == "u32" else -50, 50, shape).astype(dt)
    x = rng.standard_normal(shape) * 2
    if t == "bf16":
        import ml_dtypes
        return x.astype(ml_dtypes.bfloat16)
    return x.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[t])


def _check(text: str, args: list, rtol: float, backend: str = "gpu_sim") -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = run_hlo(parse_module(text), args, backend="interpreter")
        got = run_hlo(parse_module(text), args, backend=backend)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=rtol, atol=rtol * 1e-2)


def _kernels(text: str) -> list:
    return list(gpu_kernels(gpu.GpuSimBackend(), text).values())


def _row_notes(text: str) -> list[str]:
    return [" ".join(k.notes) for k in _kernels(text) if k.kind == "row-reduction"]


# ----------------------------------------------------------------------------- tests
@SIMULATOR
@pytest.mark.parametrize("c", LENGTHS)
@pytest.mark.parametrize("prog", ["softmax", "log_softmax", "layernorm", "rms_norm"])
def test_f32_row_programs_match_the_interpreter(prog, c):
    r = ROWS[c]
    x = _data("f32", (r, c), c)
    if prog in ("softmax", "log_softmax"):
        _check(softmax("f32", r, c, log=prog == "log_softmax"), [x], 2e-5)
    else:
        g = _data("f32", (c,), c + 1)
        _check(layernorm("f32", r, c, rms=prog == "rms_norm"), [x, g], 2e-5)


@SIMULATOR
@pytest.mark.parametrize("c", [33, 1000, 4096])
@pytest.mark.parametrize("t,rtol", [("f16", 2e-3), ("bf16", 1.6e-2), ("f64", 1e-12)])
def test_other_float_types(t, rtol, c):
    r = ROWS[c]
    _check(softmax(t, r, c), [_data(t, (r, c), 1)], rtol)
    _check(layernorm(t, r, c), [_data(t, (r, c), 2), _data(t, (c,), 3)], rtol)


@SIMULATOR
@pytest.mark.parametrize("c", [7, 32, 100, 1000, 4099])
@pytest.mark.parametrize("t", ["s32", "s64", "u32"])
def test_integer_rows_apply_the_init_value_once(t, c):
    r = ROWS.get(c, 6)
    _check(int_rows(t, r, c), [_data(t, (r, c), c)], 0)


@SIMULATOR
@pytest.mark.parametrize("c", [1, 31, 128, 1000, 5000])
def test_variadic_argmax_rows(c):
    r = ROWS.get(c, 6)
    _check(argmax(r, c), [_data("f32", (r, c), 5)], 0)


@SIMULATOR
@pytest.mark.parametrize("c", [33, 128, 1000, 4096, 20000])
def test_nan_and_infinities_propagate_like_the_interpreter(c):
    x = _data("f32", (5, c), 8)
    x[0, c // 2] = np.nan
    x[1, c - 1] = np.inf
    x[2, :] = -np.inf
    x[3, 0] = -np.inf
    _check(softmax("f32", 5, c), [x], 2e-5)
    _check(softmax("f32", 5, c, log=True), [x], 2e-5)
    _check(layernorm("f32", 5, c), [x, _data("f32", (c,), 9)], 2e-5)


@SIMULATOR
def test_softmax_of_two_row_inputs_at_every_path():
    # 16 rows: fewer, long rows are left to the split reduction kernels
    for c in (1000, 20000, 40000):
        r = 16
        # long f32 sums: the interpreter's sequential order is off by more than 2e-5
        _check(softmax_of_sum(r, c), [_data("f32", (r, c), 1), _data("f32", (r, c), 2)],
               2e-5 if c < 10000 else 1e-4)


def test_each_row_length_takes_the_expected_path():
    """The kernels' notes name the path: part of a warp per row for short rows, a block
    per row cached in registers, reloaded when the cache would not fit, the looped sweep
    for rows too long to tile; vector chunks when the row length is a multiple of 4."""
    short, = _row_notes(softmax("f32", 64, 128))
    assert "32 rows x 8 threads" in short and "4 chunks of 4" in short and "cached" in short
    mid, = _row_notes(softmax("f32", 16, 4096))
    assert "1 rows x 256 threads" in mid and "4 chunks of 4" in mid and "cached" in mid
    odd, = _row_notes(layernorm("f32", 16, 4099))
    assert "chunks of 1" in odd and "cached" in odd
    two, = _row_notes(softmax_of_sum(16, 20000))
    assert "1024 threads" in two and "reloaded" in two
    long_notes = _row_notes(softmax("f32", 4, 40000))
    assert long_notes and all("row tiles" not in n for n in long_notes)
    assert _row_notes(softmax("f32", 64, 16)) == []      # a thread per row
    # a long softmax row is one kernel (the GPU's row rules allow tiled rows)
    assert len(_row_notes(softmax("f32", 16, 16384))) == 1


@SIMULATOR
@pytest.mark.parametrize("shape,dims", [((1024, 512), (0,)), ((300, 130), (0,)),
                                        ((3, 200, 70), (1,)), ((200, 3, 40), (0, 1)),
                                        ((129, 33), (0,)), ((64, 130), (0,))])
def test_column_reductions_tiled_and_serial(shape, dims):
    """Long column reductions are tiled (32 kept x row groups a block), short ones a
    thread per kept element; both against the interpreter, NaN included."""
    x = _data("f32", shape, 4)
    x.flat[7] = np.nan
    text = columns(shape, dims)
    notes = [" ".join(k.notes) for k in _kernels(text) if k.kind == "column-reduction"]
    length = int(np.prod([shape[d] for d in dims]))
    assert notes and all(("tiled" in n) == (length >= 128) for n in notes), notes
    # the sums' order differs from the interpreter's: compare at the sums' scale
    want = run_hlo(parse_module(text), [x], backend="interpreter")
    got = run_hlo(parse_module(text), [x], backend="gpu_sim")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        ok = ~np.isnan(w)
        np.testing.assert_allclose(g[ok], w[ok], rtol=1e-5, atol=1e-6 * np.sqrt(length) * 4)
    xi = _data("s32", shape, 5)
    _check(columns(shape, dims, "s32"), [xi], 0)


PTXAS_PROGRAMS = [softmax("f32", 16384, 4096), layernorm("f32", 16384, 4096),
                  softmax("f32", 4096, 16384), layernorm("f32", 256, 32768),
                  layernorm("f32", 262144, 128, rms=True), softmax_of_sum(64, 20000),
                  softmax("f16", 512, 1000), layernorm("f64", 512, 4096),
                  int_rows("s64", 512, 1000), columns((1024, 4096), (0,)),
                  columns((64, 300, 96), (0, 1), "f64")]


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not installed")
@pytest.mark.parametrize("n", range(len(PTXAS_PROGRAMS)))
def test_row_kernels_assemble_for_sm80_and_sm90_without_spills(n):
    ptx = gpu.GpuBackend().compiler_ir(parse_module(PTXAS_PROGRAMS[n]), "ptx")
    assert ".maxntid" in ptx
    for arch in ("sm_80", "sm_90"):
        report = ptxas_check(ptx, arch)
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
        assert spills and all(a == "0" and b == "0" for a, b in spills), report
        assert all(int(v) <= 64 for v in re.findall(r"Used (\d+) registers", report)), report


@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
def test_row_programs_on_the_device():
    for c in (7, 33, 128, 1000, 4096, 4099, 20000, 40000):
        r = ROWS.get(c, 6)
        x = _data("f32", (r, c), c)
        _check(softmax("f32", r, c), [x], 2e-5, backend="gpu")
        _check(layernorm("f32", r, c), [x, _data("f32", (c,), 2)], 2e-5, backend="gpu")
    _check(softmax("f16", 5, 1000), [_data("f16", (5, 1000), 3)], 2e-3, backend="gpu")
    _check(layernorm("f64", 5, 4096), [_data("f64", (5, 4096), 3), _data("f64", (4096,), 4)],
           1e-12, backend="gpu")
    _check(int_rows("s32", 6, 1000), [_data("s32", (6, 1000), 4)], 0, backend="gpu")
    _check(softmax_of_sum(16, 20000), [_data("f32", (16, 20000), 1),
                                       _data("f32", (16, 20000), 2)], 1e-4, backend="gpu")
    _check(columns((1000, 300), (0,), "s32"), [_data("s32", (1000, 300), 6)], 0, backend="gpu")
