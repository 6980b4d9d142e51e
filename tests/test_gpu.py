"""The GPU backend without a GPU: the ``gpu_sim`` grid emulator against the interpreter and
NumPy, every kernel's PTX assembled by ``ptxas`` for sm_80 and sm_90, compiler IR, dumps
and the errors for a missing device or device memory. With ``XLAPY_GPU_TEST_DEVICE=1``
(``benchmarks/gpu_check.sh`` sets it on a GPU machine) a few programs also run on the
device itself.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from conformance import case_params, run_case
from test_buffer_assignment import FORWARDING_PROGRAMS
from gpu_programs import ADD, MAX, ColumnMajorGemm, gpu_kernels, softmax_text, w1_text
from xlapy.client.run import run_hlo
from xlapy.config import debug_options
from xlapy.errors import DeviceUnavailableError, ResourceExhaustedError
from xlapy.hlo import parse_module

gpu = pytest.importorskip("xlapy.backends.gpu")
from xlapy.backends.gpu.device import SimDevice  # noqa: E402
from xlapy.backends.gpu.ptx import ptxas_check, ptxas_path  # noqa: E402

DEVICE = os.environ.get("XLAPY_GPU_TEST_DEVICE") == "1"
@pytest.fixture(scope="module")
def sim():
    return gpu.GpuSimBackend()


_kernels = gpu_kernels


# ----------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("case,which", case_params(("module.hlo",)))
def test_conformance_case_on_gpu_sim(sim, case, which):
    exe, bad = run_case(sim, case, which)
    assert not bad, f"{case.name}/{which}:\n" + "\n".join(m.message for m in bad)
    assert "convolution" not in exe.fallback_opcodes()      # test_gpu_conv.py


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not installed")
@pytest.mark.parametrize("case,which", case_params(("module.hlo",)))
def test_every_kernel_assembles_with_ptxas(case, which):
    ptx = gpu.GpuBackend().compiler_ir(parse_module(case.text(which)), "ptx")
    if not ptx:                         # everything runs in cuBLAS or the host fallback
        return
    for arch in ("sm_80", "sm_90"):
        ptxas_check(ptx, arch)          # raises with ptxas' messages


# ----------------------------------------------------------------------------- kernels
def test_split_full_reduction_matches_numpy_and_resets_its_counters(sim):
    n = 100_003                          # long enough to split, not a multiple of anything
    kernel = next(iter(_kernels(sim, w1_text(n)).values()))
    assert kernel.kind == "row-reduction" and kernel.grid > 1 and kernel.scratch > 0
    rng = np.random.default_rng(1)
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    exe = sim.compile(parse_module(w1_text(n)))
    first, second = exe.execute([x, y, z]), exe.execute([x, y, z])
    want = np.sum(x.astype(np.float64) + y.astype(np.float64) * z)
    assert abs(float(first) - want) < 1e-3 * max(1.0, abs(want))
    assert np.array_equal(first, second)
    # other inputs: a counter left set would leave the first call's value in the output
    other = exe.execute([x + 1, y, z])
    assert abs(float(other) - (want + n)) < 1e-3 * max(1.0, abs(want + n))


@pytest.mark.parametrize("group,unroll", [(1, 1), (4, 1), (4, 2), (2, 4)])
@pytest.mark.parametrize("rows,n", [(1, 40_001), (3, 70_001), (2, 65_536)])
def test_split_row_sweeps_cover_every_element_once(sim, monkeypatch, group, unroll, rows, n):
    """Each split row's blocks cover their chunk in groups of consecutive elements, whole
    stripes then single stripes then the cut group; every element counts once (integers:
    exact) whatever the group, unroll and chunk ends."""
    from xlapy.backends.gpu import reduction
    monkeypatch.setattr(reduction, "GROUP", group)
    monkeypatch.setattr(reduction, "SPLIT_UNROLL", unroll)
    text = ("HloModule s\nadd {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n"
            " ROOT c = s32[] add(a, b)\n}\nENTRY e {\n"
            f" x = s32[{rows},{n}] parameter(0)\n c = s32[] constant(0)\n"
            f" ROOT r = s32[{rows}] reduce(x, c), dimensions={{1}}, to_apply=add\n}}\n")
    kernel = next(iter(_kernels(sim, text).values()))
    assert kernel.kind == "row-reduction" and kernel.grid > rows
    x = np.random.default_rng(3).integers(-1000, 1000, (rows, n), dtype=np.int32)
    got = run_hlo(parse_module(text), [x], backend="gpu_sim")[0]
    np.testing.assert_array_equal(got, x.sum(1, dtype=np.int32))


def test_split_reduction_reads_aligned_operands_with_vector_loads():
    """The W1 kernel's operands are 16-byte aligned: each group is one 128-bit load."""
    ptx = gpu.GpuBackend().compiler_ir(parse_module(w1_text(1_000_000)), "ptx")
    assert ptx.count("ld.global.v4") >= 3


def test_softmax_rows_are_one_kernel_and_match_numpy(sim):
    text = softmax_text(37, 1000)
    kernels = _kernels(sim, text)
    assert [k.kind for k in kernels.values()] == ["row-reduction"]
    x = np.random.default_rng(2).standard_normal((37, 1000), dtype=np.float32)
    got = run_hlo(parse_module(text), [x], backend="gpu_sim")[0]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-9)


def test_row_fusions_with_tuple_and_reshaped_outputs_are_one_kernel(sim):
    """A row reduction fusion whose root is a tuple (the row max and log-sum-exp beside the
    rows) and one whose output is reshaped (a bitcast at the root) stay one GPU kernel."""
    text = (f"HloModule r\n{ADD}{MAX}ENTRY e {{\n x = f32[4,32,256] parameter(0)\n"
            f" n = f32[] constant(-inf)\n z = f32[] constant(0)\n"
            f" m = f32[4,32] reduce(x, n), dimensions={{2}}, to_apply=mx\n"
            f" mb = f32[4,32,256] broadcast(m), dimensions={{0,1}}\n"
            f" d = f32[4,32,256] subtract(x, mb)\n e = f32[4,32,256] exponential(d)\n"
            f" s = f32[4,32] reduce(e, z), dimensions={{2}}, to_apply=add\n"
            f" l = f32[4,32] log(s)\n lb = f32[4,32,256] broadcast(l), dimensions={{0,1}}\n"
            f" o = f32[4,32,256] subtract(d, lb)\n r = f32[128,256] reshape(o)\n"
            f" ROOT t = (f32[4,32], f32[4,32], f32[128,256]) tuple(m, l, r)\n}}\n")
    assert [k.kind for k in _kernels(sim, text).values()] == ["row-reduction"]
    x = np.random.default_rng(8).standard_normal((4, 32, 256), dtype=np.float32)
    got = run_hlo(parse_module(text), [x], backend="gpu_sim")
    want = run_hlo(parse_module(text), [x], backend="interpreter")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,init,dtype", [("xor", -3, "s32"), ("add", 7, "s32"),
                                           ("minimum", 5, "s64"), ("multiply", 3, "u32")])
def test_integer_reductions_apply_the_init_value_once(sim, op, init, dtype):
    text = (f"HloModule r\nred {{\n a = {dtype}[] parameter(0)\n b = {dtype}[] parameter(1)\n"
            f" ROOT c = {dtype}[] {op}(a, b)\n}}\nENTRY e {{\n x = {dtype}[5,300] parameter(0)\n"
            f" i = {dtype}[] constant({init})\n"
            f" ROOT r = {dtype}[5] reduce(x, i), dimensions={{1}}, to_apply=red\n}}\n")
    assert next(iter(_kernels(sim, text).values())).kind == "row-reduction"
    dt = {"s32": np.int32, "s64": np.int64, "u32": np.uint32}[dtype]
    x = np.random.default_rng(3).integers(1, 50, (5, 300)).astype(dt)
    got = run_hlo(parse_module(text), [x], backend="gpu_sim")[0]
    want = run_hlo(parse_module(text), [x], backend="interpreter")[0]
    np.testing.assert_array_equal(got, want)


def test_max_reduction_propagates_nan_and_column_reduction_is_correct(sim):
    text = (f"HloModule r\n{MAX}{ADD}ENTRY e {{\n x = f32[64,130] parameter(0)\n"
            f" n = f32[] constant(-inf)\n z = f32[] constant(0)\n"
            f" a = f32[64] reduce(x, n), dimensions={{1}}, to_apply=mx\n"
            f" b = f32[130] reduce(x, z), dimensions={{0}}, to_apply=add\n"
            f" ROOT t = (f32[64], f32[130]) tuple(a, b)\n}}\n")
    kinds = sorted(k.kind for k in _kernels(sim, text).values())
    assert kinds == ["column-reduction", "row-reduction"]
    x = np.random.default_rng(4).standard_normal((64, 130), dtype=np.float32)
    x[5, 77] = np.nan
    got = run_hlo(parse_module(text), [x], backend="gpu_sim")
    assert np.isnan(got[0][5]) and not np.isnan(np.delete(got[0], 5)).any()
    np.testing.assert_allclose(np.delete(got[0], 5), np.delete(x.max(1), 5))
    np.testing.assert_allclose(got[1], x.sum(0), rtol=1e-5, atol=1e-5)


def test_a_reduce_of_a_reduce_is_not_one_thread(sim):
    """A scalar loss ``-sum(sum((x + b) * y, axis=1)) / n``: the row sums are their own
    kernel with a block per row, so no kernel is a single thread over all elements."""
    text = (f"HloModule l\n{ADD}ENTRY e {{\n x = f32[64,256] parameter(0)\n"
            f" y = f32[64,256] parameter(1)\n b = f32[256] parameter(2)\n"
            f" z = f32[] constant(0)\n bb = f32[64,256] broadcast(b), dimensions={{1}}\n"
            f" xb = f32[64,256] add(x, bb)\n p = f32[64,256] multiply(xb, y)\n"
            f" r = f32[64] reduce(p, z), dimensions={{1}}, to_apply=add\n"
            f" s = f32[] reduce(r, z), dimensions={{0}}, to_apply=add\n"
            f" c = f32[] constant(0.015625)\n m = f32[] multiply(s, c)\n"
            f" ROOT n = f32[] negate(m)\n}}\n")
    kernels = list(_kernels(sim, text).values())
    assert all(k.threads > 32 for k in kernels), [(k.name, k.grid, k.block) for k in kernels]
    # a group of threads per row of 256
    assert any(k.kind == "row-reduction" and k.threads >= 64 * 4 for k in kernels)
    rng = np.random.default_rng(9)
    x, y = (rng.standard_normal((64, 256), dtype=np.float32) for _ in range(2))
    b = rng.standard_normal(256, dtype=np.float32)
    got = run_hlo(parse_module(text), [x, y, b], backend="gpu_sim")[0]
    want = -np.sum((x.astype(np.float64) + b) * y) / 64
    assert abs(float(got) - want) < 1e-4 * max(1.0, abs(want))


def test_ops_without_kernels_fall_back_and_are_logged(sim, caplog):
    text = ("HloModule f\nENTRY e {\n a = c64[8] parameter(0)\n"
            " ROOT f = c64[8] fft(a), fft_type=FFT, fft_length={8}\n}\n")
    a = (np.arange(8) + 1j * np.arange(8)[::-1]).astype(np.complex64)
    with caplog.at_level("INFO", logger="xlapy.gpu"):
        exe = sim.compile(parse_module(text))
    assert exe.fallback_opcodes() == ["fft"]
    assert "fft" in caplog.text
    np.testing.assert_allclose(exe.execute([a]), np.fft.fft(a), rtol=1e-5, atol=1e-4)


# ----------------------------------------------------------------------------- cuBLAS arguments
_ColumnMajorGemm = ColumnMajorGemm


# (lhs dims, rhs dims, batch dims, lhs contracting, rhs contracting, output dims)
_DOTS = [((5, 3), (3, 7), 0, 1, 0, (5, 7)), ((3, 5), (3, 7), 0, 0, 0, (5, 7)),
         ((5, 3), (7, 3), 0, 1, 1, (5, 7)), ((3, 5), (7, 3), 0, 0, 1, (5, 7)),
         ((4, 5, 3), (4, 3, 7), 1, 2, 1, (4, 5, 7)), ((4, 3, 5), (4, 7, 3), 1, 1, 2, (4, 5, 7)),
         ((2, 6, 5, 3), (3, 7), 0, 3, 0, (2, 6, 5, 7)),
         ((2, 3, 4, 8), (2, 3, 5, 8), 2, 3, 3, (2, 3, 4, 5)),
         ((3,), (3, 7), 0, 0, 0, (7,)), ((5, 3), (3,), 0, 1, 0, (5,))]


def _dot_text(ld, rd, nb: int, lc: int, rc: int, od) -> str:
    batch = ",".join(map(str, range(nb)))
    b_attr = f"lhs_batch_dims={{{batch}}}, rhs_batch_dims={{{batch}}}, " if nb else ""
    dims = lambda s: ",".join(map(str, s))      # noqa: E731
    return (f"HloModule d\nENTRY e {{\n a = f32[{dims(ld)}] parameter(0)\n"
            f" b = f32[{dims(rd)}] parameter(1)\n ROOT d = f32[{dims(od)}] dot(a, b), "
            f"{b_attr}lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n")


@pytest.mark.parametrize("ld,rd,nb,lc,rc,od", _DOTS)
def test_cublas_arguments_compute_the_row_major_dot(ld, rd, nb, lc, rc, od):
    """The GemmThunk's column-major call (transposes, leading dimensions, batch strides),
    run by a NumPy model of cuBLAS' gemm on simulator memory, gives the interpreter's dot."""
    from xlapy.backends.cpu.executable import value_ref
    from xlapy.backends.gpu.cublas import GemmThunk, gemm_supported
    from xlapy.backends.gpu.runtime import Buffers
    from xlapy.passes.buffer_assignment import assign_buffers
    text = _dot_text(ld, rd, nb, lc, rc, od)
    module = parse_module(text)
    a = assign_buffers(module)
    dot = module.entry.root
    assert gemm_supported(dot)
    buffers = Buffers(SimDevice(), a)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in (ld, rd)]
    for p, v in zip(module.entry.parameters, args):
        buffers.write(value_ref(a, p), v, p)
    GemmThunk(dot, _ColumnMajorGemm(), buffers, [value_ref(a, o) for o in dot.operands],
              value_ref(a, dot)).run()
    want = run_hlo(parse_module(text), args, backend="interpreter")[0]
    np.testing.assert_allclose(buffers.read(value_ref(a, dot)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ld,rd,nb,lc,rc,od", _DOTS + [
    ((33, 70), (70, 17), 0, 1, 0, (33, 17)), ((3, 40, 18), (3, 19, 18), 1, 2, 2, (3, 40, 19))])
def test_tiled_gemm_kernel_computes_the_dot(sim, ld, rd, nb, lc, rc, od):
    """Without cuBLAS (always on the simulator) dots run the tiled shared-memory kernel."""
    text = _dot_text(ld, rd, nb, lc, rc, od)
    exe = sim.compile(parse_module(text))
    assert "gemm-tiled" in {k.kind for k in _kernels(sim, text).values()}
    assert exe.fallback_opcodes() == []
    rng = np.random.default_rng(9)
    args = [rng.standard_normal(s).astype(np.float32) for s in (ld, rd)]
    want = run_hlo(parse_module(text), args, backend="interpreter")[0]
    np.testing.assert_allclose(exe.execute(args), want, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- compiler IR
def test_jit_lowers_to_ptx_and_llvm_without_a_gpu():
    import xlapy
    import xlapy.numpy as xnp

    def f(x, y):
        return xnp.sum(xnp.exp(x) * y, axis=1)
    x = np.ones((128, 256), np.float32)
    lowered = xlapy.jit(f, backend="gpu").lower(x, x)
    ptx = lowered.compiler_ir("ptx")
    assert ".entry" in ptx and ".target sm_" in ptx and "shfl.sync" in ptx
    llvm_ir = lowered.compiler_ir("llvm")
    assert "ptx_kernel" in llvm_ir and "llvm.nvvm.read.ptx.sreg" in \
        lowered.compiler_ir("llvm_no_opt")


def test_dumps_write_the_llvm_ir_files(tmp_path):
    with debug_options(xla_dump_to=str(tmp_path)):
        gpu.GpuSimBackend().compile(parse_module(softmax_text(4, 256)))
    names = [p.name for p in tmp_path.iterdir()]
    assert any(n.endswith(".ir-no-opt.ll") for n in names), names
    assert any(n.endswith(".ir-with-opt.ll") for n in names), names


def test_hlo_profile_times_every_thunk():
    with debug_options(xla_hlo_profile=True):
        exe = gpu.GpuSimBackend().compile(parse_module(softmax_text(8, 256)))
    exe.execute([np.ones((8, 256), np.float32)])
    exe.execute([np.ones((8, 256), np.float32)])
    text = exe.profile_text()
    assert "Execution profile" in text and "launch" in text
    assert any(line.split()[2] == "2" for line in text.splitlines()[2:])


def test_hlo_profile_times_the_thunks_of_a_loop_body():
    """The profiler wraps the sub-plans too: the body's add runs once per trip."""
    text = ("HloModule w\nc {\n p = (s32[], f32[4]) parameter(0)\n"
            " i = s32[] get-tuple-element(p), index=0\n n = s32[] constant(3)\n"
            " ROOT l = pred[] compare(i, n), direction=LT\n}\nb {\n"
            " p = (s32[], f32[4]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
            " x = f32[4] get-tuple-element(p), index=1\n o = s32[] constant(1)\n"
            " j = s32[] add(i, o)\n y = f32[4] add(x, x)\n"
            " ROOT t = (s32[], f32[4]) tuple(j, y)\n}\nENTRY e {\n x = f32[4] parameter(0)\n"
            " z = s32[] constant(0)\n t = (s32[], f32[4]) tuple(z, x)\n"
            " ROOT w = (s32[], f32[4]) while(t), condition=c, body=b\n}\n")
    with debug_options(xla_hlo_profile=True):
        exe = gpu.GpuSimBackend().compile(parse_module(text))
    assert float(exe.execute([np.ones(4, np.float32)])[1][0]) == 8.0
    calls = {line.split()[0]: line.split()[2] for line in exe.profile_text().splitlines()[2:]}
    assert calls["w"] == "1" and calls["y"] == "3", calls


# ----------------------------------------------------------------------------- errors
@pytest.mark.skipif(DEVICE, reason="a GPU is present")
def test_no_gpu_is_a_clear_error_and_the_cpu_still_works():
    from xlapy.backends.gpu.cuda import CudaDevice
    try:
        CudaDevice()
    except DeviceUnavailableError:
        pass
    else:
        pytest.skip("a CUDA device is usable here")
    module = parse_module(w1_text(10))
    with pytest.raises(DeviceUnavailableError, match="no CUDA driver|no GPU|no usable GPU"):
        run_hlo(module, [np.ones(10, np.float32)] * 3, backend="gpu")
    assert run_hlo(module, [np.ones(10, np.float32)] * 3, backend="cpu")[0] == 20.0


def test_out_of_device_memory_names_the_sizes_and_the_process_goes_on():
    backend = gpu.GpuSimBackend(SimDevice(memory_limit=1 << 20))
    with pytest.raises(ResourceExhaustedError, match=r"allocating \d+ bytes \(\d+ bytes free"):
        backend.compile(parse_module(w1_text(1 << 20)))
    assert float(backend.compile(parse_module(w1_text(100))).execute(
        [np.ones(100, np.float32)] * 3)) == 200.0


# ----------------------------------------------------------------------------- random programs
def _random_programs(profile: str, seeds: range, side: str = "gpu_sim") -> None:
    import hlo_gen_wide as G
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for seed in seeds:
            bad = G.check_case(G.generate(seed, profile), (side,))
            failures.extend(f"{profile} seed {seed}: {m}" for m in bad)
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("profile,count", [("small", 16), ("medium", 6), ("large", 4),
                                           ("zero", 6), ("deep", 3)])
def test_random_programs_on_gpu_sim(profile, count):
    _run = range(7000, 7000 + count)
    _random_programs(profile, _run)


@pytest.mark.slow
@pytest.mark.parametrize("profile,count", [("small", 250), ("medium", 100), ("large", 60),
                                           ("zero", 50), ("deep", 40)])
def test_many_random_programs_on_gpu_sim(request, profile, count):
    if "slow" not in (request.config.getoption("markexpr") or "") and \
            not os.environ.get("XLAPY_SLOW_TESTS"):
        pytest.skip("deep run: pytest -m slow (or XLAPY_SLOW_TESTS=1)")
    _random_programs(profile, range(10_000, 10_000 + count))


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
def test_programs_on_the_device():
    x = np.random.default_rng(7).standard_normal((300, 1000), dtype=np.float32)
    got = run_hlo(parse_module(softmax_text(300, 1000)), [x], backend="gpu")[0]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-9)
    n = 1_000_003
    v = [np.random.default_rng(k).standard_normal(n, dtype=np.float32) for k in range(3)]
    exe = gpu.GpuBackend().compile(parse_module(w1_text(n)))
    first, second = exe.execute(v), exe.execute(v)
    want = np.sum(v[0].astype(np.float64) + v[1].astype(np.float64) * v[2])
    assert abs(float(first) - want) < 1e-3 * max(1.0, abs(want)) and first == second


@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
def test_dumps_on_the_device_include_ptx(tmp_path):
    with debug_options(xla_dump_to=str(tmp_path)):
        gpu.GpuBackend().compile(parse_module(softmax_text(4, 256)))
    names = [p.name for p in tmp_path.iterdir()]
    for ext in (".ir-no-opt.ll", ".ir-with-opt.ll", ".ptx"):
        assert any(n.endswith(ext) for n in names), (ext, names)


@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
def test_random_programs_on_the_device():
    _random_programs("small", range(7000, 7020), side="gpu")
    _random_programs("medium", range(7000, 7006), side="gpu")


@pytest.mark.parametrize("text", FORWARDING_PROGRAMS)
def test_forwarding_ops_run_without_copies_on_gpu_sim(sim, text):
    """opt-barrier and add-dependency alias their operand's buffers on the GPU backend
    too (buffer assignment is shared): the interpreter's values, the argument unchanged."""
    exe = sim.compile(parse_module(text))
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    got = exe.execute([x])
    want = run_hlo(text, [x], backend="interpreter")
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    np.testing.assert_array_equal(x, np.linspace(-2, 2, 64, dtype=np.float32))
