# ruff: noqa: E501  (HLO text lines)
"""Host callbacks in compiled code: ``xlapy.debug.print``, ``pure_callback``, ``io_callback``
(``xla_ffi_python_cpu_callback`` custom-calls run by the interpreter and the CPU runtime)."""
from __future__ import annotations

import traceback

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.backends.cpu import CpuBackend
from xlapy.backends.interpreter import host_callbacks as hc
from xlapy.errors import InvalidArgumentError, UnimplementedError
from xlapy.hlo import parse_module

BACKENDS = ["interpreter", "cpu"]
S = xlapy.ShapeDtypeStruct


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_in_a_while_loop_prints_every_iteration_in_order(backend, capsys):
    @xlapy.jit(backend=backend)
    def f(x):
        xlapy.debug.print("start {}", x[0])

        def body(c):
            i, v = c
            xlapy.debug.print("iter {i} v={v}", i=i, v=v)
            return i + 1, v * 2
        _, v = lax.while_loop(lambda c: c[0] < 4, body, (0, x[0]))
        xlapy.debug.print("end {}", "static")       # depends on nothing: ordered by effects
        return x * v

    expected = "start 1.0\niter 0 v=1.0\niter 1 v=2.0\niter 2 v=4.0\niter 3 v=8.0\nend static\n"
    for _ in range(2):                               # the second call runs the cached program
        out = f(xnp.ones(3))
        np.testing.assert_array_equal(np.asarray(out), [16.0] * 3)
        assert capsys.readouterr().out == expected
    assert f.cache_info().misses == 1


def test_debug_print_outside_jit_prints_at_once(capsys):
    xlapy.debug.print("x={x} n={n}", x=xnp.arange(3), n=7)
    assert capsys.readouterr().out == "x=[0 1 2] n=7\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_pure_callback_results_feed_later_compiled_ops(backend):
    def host_sort(a):
        assert isinstance(a, np.ndarray) and not a.flags.writeable
        return np.sort(a), np.argsort(a).astype(np.int32)

    @xlapy.jit(backend=backend)
    def f(x):
        s, idx = xlapy.pure_callback(host_sort, (S(x.shape, x.dtype), S(x.shape, np.int32)),
                                     x * 2)
        return s.sum() + idx[0], s * 3

    x = np.array([3.0, -1.0, 2.0], np.float32)
    total, scaled = f(x)
    np.testing.assert_allclose(np.asarray(scaled), np.sort(x * 2) * 3)
    assert float(total) == pytest.approx(np.sum(x * 2) + 1)


def test_pure_callback_eager_and_in_a_grad_use_the_same_checks():
    y = xlapy.pure_callback(lambda a, b: a + b, S((2,), np.float32), xnp.ones(2), b=np.ones(2))
    np.testing.assert_array_equal(np.asarray(y), [2.0, 2.0])
    with pytest.raises(InvalidArgumentError, match=r"returned f32\[3\] for result 0, "
                                                   r"expected f32\[2\]"):
        xlapy.pure_callback(lambda a: np.zeros(3, np.float32), S((2,), np.float32), xnp.ones(2))


def _host_sin(x):
    return np.sin(x)


def _sin_vjp(ct, x):
    return (ct * xlapy.pure_callback(np.cos, S(x.shape, x.dtype), x),)


def _loss(x):
    y = xlapy.pure_callback(_host_sin, S(x.shape, x.dtype), x, vjp=_sin_vjp)
    return xnp.sum(y * x)


@pytest.mark.parametrize("compiled", [False, True])
def test_gradient_through_pure_callback_with_a_vjp_matches_finite_differences(compiled):
    grad = xlapy.grad(_loss)
    if compiled:
        grad = xlapy.jit(grad)
    x = np.array([0.3, -1.2, 2.0], np.float64)
    g = np.asarray(grad(xnp.asarray(x, dtype=np.float32)), np.float64)
    eps = 1e-3
    fd = [(np.sum(np.sin(x + e) * (x + e)) - np.sum(np.sin(x - e) * (x - e))) / (2 * eps)
          for e in np.eye(3) * eps]
    np.testing.assert_allclose(g, fd, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-5, atol=1e-5)


def test_gradient_without_a_vjp_says_how_to_give_one():
    with pytest.raises(InvalidArgumentError, match="pass vjp=fn to pure_callback"):
        xlapy.grad(lambda x: xnp.sum(xlapy.pure_callback(_host_sin, S((2,), np.float32), x)))(
            xnp.ones(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_raising_callback_reaches_the_caller_and_the_executable_stays_usable(backend):
    def fragile(a):
        if a[0] < 0:
            raise ValueError("negative input")
        return a + 1

    @xlapy.jit(backend=backend)
    def f(x):
        return xlapy.pure_callback(fragile, S(x.shape, x.dtype), x) * 2

    with pytest.raises(ValueError, match="negative input") as info:
        f(-xnp.ones(2))
    frames = [fr.name for fr in traceback.extract_tb(info.value.__traceback__)]
    assert "fragile" in frames
    notes = getattr(info.value, "__notes__", None)          # Python >= 3.11
    assert notes is None or any("raised by pure_callback 'test_a_raising" in n for n in notes)
    np.testing.assert_array_equal(np.asarray(f(xnp.ones(2))), [4.0, 4.0])
    assert f.cache_info().misses == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad, got", [(lambda a: np.zeros(4, np.float32), r"f32\[4\]"),
                                      (lambda a: np.zeros(3, np.int32), r"s32\[3\]"),
                                      (lambda a: [a, a], "2 results")])
def test_a_wrong_result_is_an_error_naming_both(backend, bad, got):
    f = xlapy.jit(lambda x: xlapy.pure_callback(bad, S((3,), np.float32), x) + 1,
                  backend=backend)
    with pytest.raises(InvalidArgumentError, match=got) as info:
        f(xnp.ones(3))
    assert "f32[3]" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_io_callback_runs_once_per_execution_in_order(backend):
    log = []

    def record(tag, v):
        log.append((int(tag), v))            # a copy: safe to keep
        return np.int32(len(log))

    @xlapy.jit(backend=backend)
    def f(x):
        n1 = xlapy.io_callback(record, S((), np.int32), 1, x, ordered=True)
        n2 = xlapy.io_callback(record, S((), np.int32), 2, x * 2, ordered=True)
        xlapy.io_callback(lambda t, v: log.append((int(t), v)), (), 3, x)   # no result
        return n1 + n2

    assert int(f(xnp.ones(2))) == 3
    assert int(f(xnp.ones(2))) == 9
    assert [t for t, _ in log] == [1, 2, 3] * 2
    np.testing.assert_array_equal(log[1][1], [2.0, 2.0])
    text = f.lower(xnp.ones(2)).compiler_ir("hlo")
    assert "token[] after-all()" in text and "custom_call_has_side_effect=true" in text


def test_ordered_calls_thread_a_token():
    f = xlapy.jit(lambda x: (xlapy.debug.print("a {}", x, ordered=True),
                             xlapy.debug.print("b {}", x, ordered=True), x)[2])
    module = parse_module(f.lower(xnp.ones(1)).compiler_ir("hlo"))
    calls = [i for i in module.entry.instructions if i.opcode == "custom-call"]
    assert [c.metadata.op_type for c in calls] == ["debug_print", "debug_print"]
    first, second = calls
    assert first.operands[0].opcode == "after-all" and str(first.shape) == "token[]"
    assert second.operands[0] is first and first in second.control_predecessors


def test_a_module_from_another_process_names_the_missing_callback():
    text = """HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="xla_ffi_python_cpu_callback", api_version=API_VERSION_TYPED_FFI, backend_config={index = 987654321 : ui64}
}"""
    for backend in BACKENDS:
        with pytest.raises(UnimplementedError, match="987654321 is not registered"):
            xlapy.run_hlo(parse_module(text), [np.ones(2, np.float32)], backend=backend)


def test_callback_modules_are_not_written_to_the_disk_cache(tmp_path):
    index = hc.register(lambda a: [a * 3], "triple")
    text = f"""HloModule m
ENTRY e {{
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="xla_ffi_python_cpu_callback", api_version=API_VERSION_TYPED_FFI, backend_config={{index = {index} : ui64}}
}}"""
    backend = CpuBackend(cache_dir=str(tmp_path))
    exe = backend.compile(parse_module(text))
    np.testing.assert_array_equal(exe.execute([np.ones(2, np.float32)]), [3.0, 3.0])
    assert exe.plan.thunk_kinds()["c"] == "host-callback"
    plain = parse_module(text.replace('custom-call(x), custom_call_target='
                                      '"xla_ffi_python_cpu_callback", api_version='
                                      f'API_VERSION_TYPED_FFI, backend_config={{index = '
                                      f'{index} : ui64}}', "negate(x)"))
    backend.compile(plain)
    entries = [p for p in tmp_path.iterdir() if p.name != "hmac-key"]
    assert len(entries) == 1                       # the plain module only
    fresh = CpuBackend(cache_dir=str(tmp_path))
    fresh.compile(parse_module(text))
    assert fresh.last_timings.path != "disk"


def test_ahead_of_time_compilation_refuses_a_host_callback():
    from xlapy.aot.lowering import lower
    from llvmlite import ir
    f = xlapy.jit(lambda x: xlapy.pure_callback(np.sin, S((2,), np.float32), x) + 1)
    module = parse_module(f.lower(xnp.ones(2)).compiler_ir("hlo"))
    with pytest.raises(UnimplementedError, match="a call back into this Python process"):
        lower(module, ir.Module("m"), "m")
