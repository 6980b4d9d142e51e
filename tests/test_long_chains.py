"""Long chains of elementwise ops: every stage iterates instead of recursing on program
depth, and fusion bounds kernel size so compile time grows linearly (the measurements
are in docs/performance.md, from ``benchmarks/compile_time.py --programs ew-chain``)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.hlo import parse_module
from xlapy.passes.instruction_fusion import MAX_FUSION_SIZE

pytest.importorskip("xlapy.backends.cpu")


def _steps(first: str, steps: int, half: str, ones: str) -> list[str]:
    """Lines of ``x = x * half + ones``, ``steps`` times from ``first``; the last is ROOT."""
    lines, prev = [], first
    for i in range(steps):
        lines.append(f"  m{i} = f32[16] multiply({prev}, {half})")
        lines.append(f"  a{i} = f32[16] add(m{i}, {ones})")
        prev = f"a{i}"
    lines[-1] = "  ROOT" + lines[-1][1:]
    return lines


def _chain_text(steps: int) -> str:
    """``x = x * 0.5 + 1`` ``steps`` times (2 * steps instructions in one chain)."""
    lines = ["HloModule chain", "ENTRY e {", "  x0 = f32[16] parameter(0)",
             "  h = f32[] constant(0.5)", "  half = f32[16] broadcast(h), dimensions={}",
             "  o = f32[] constant(1)", "  ones = f32[16] broadcast(o), dimensions={}"]
    return "\n".join(lines + _steps("x0", steps, "half", "ones") + ["}"]) + "\n"


def _chain_reference(x: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        x = x * np.float32(0.5) + np.float32(1)
    return x


def test_sin_chain_of_250_steps_compiles():
    """The reported program: 250 steps of x = sin(x) + 1 raised RecursionError in the
    CPU emitter."""
    def f(x):
        for _ in range(250):
            x = xnp.sin(x) + 1
        return x
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    want = x.astype(np.float64)
    for _ in range(250):
        want = np.sin(want) + 1
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(x)), want, rtol=1e-4, atol=1e-4)


def test_1600_instruction_chain_on_every_stage():
    """Parser, printer, verifier, passes, buffer assignment, emitter, cache key and
    interpreter on one chain of 1,600 instructions."""
    steps = 800
    text = _chain_text(steps)
    module = parse_module(text)
    assert parse_module(module.to_text()).to_text() == module.to_text()
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    want = _chain_reference(x, steps)
    for backend in ("interpreter", "cpu"):
        (out,) = xlapy.run_hlo(text, [x], backend=backend)
        np.testing.assert_allclose(out, want, rtol=1e-6, err_msg=backend)


def test_fusions_of_a_long_chain_are_bounded():
    from xlapy.backends.cpu import CpuBackend
    exe = CpuBackend(use_disk_cache=False).compile(parse_module(_chain_text(300)))
    fusions = [i for i in exe.module.entry.instructions if i.opcode == "fusion"]
    sizes = [len(i.attrs["calls"].instructions) for i in fusions]
    assert len(fusions) >= 600 // MAX_FUSION_SIZE and max(sizes) <= MAX_FUSION_SIZE + 1, sizes
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    np.testing.assert_allclose(exe.execute([x]), _chain_reference(x, 300), rtol=1e-6)


def test_emitter_iterates_over_a_deep_fused_computation():
    """A fusion written in the text (the fusion pass's size bound does not apply) whose
    fused chain is deeper than Python's recursion limit allows nested generators."""
    steps = 700
    body = ["fused {", "  p0 = f32[16] parameter(0)", "  p1 = f32[16] parameter(1)",
            "  p2 = f32[16] parameter(2)"] + _steps("p0", steps, "p1", "p2")
    text = ("HloModule deep\n" + "\n".join(body) + "\n}\nENTRY e {\n"
            "  x = f32[16] parameter(0)\n  h = f32[] constant(0.5)\n"
            "  half = f32[16] broadcast(h), dimensions={}\n  o = f32[] constant(1)\n"
            "  ones = f32[16] broadcast(o), dimensions={}\n"
            "  ROOT f = f32[16] fusion(x, half, ones), kind=kLoop, calls=fused\n}\n")
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    (out,) = xlapy.run_hlo(text, [x], backend="cpu")
    np.testing.assert_allclose(out, _chain_reference(x, steps), rtol=1e-6)


def _array_fusions(exe) -> list:
    """The entry's fusions with an array result of more than one element."""
    return [i for i in exe.module.entry.instructions
            if i.opcode == "fusion" and i.shape.is_array and i.shape.num_elements > 1]


def test_dropout_mask_and_its_select_are_one_kernel():
    """A dropout mask's threefry bits (~190 cheap integer ops) fuse with the select that
    applies them: no intermediate bits array is materialized."""
    from xlapy.backends.cpu import CpuBackend
    import xlapy.random as xr

    def dropout(key, x):
        keep = xr.bernoulli(key, 0.75, x.shape)
        return xnp.where(keep, x / 0.75, 0.0)
    key = xr.PRNGKey(3)
    x = np.linspace(-1, 1, 4 * 257, dtype=np.float32).reshape(4, 257)
    module = xlapy.jit(dropout).lower(key, x).hlo_module
    exe = CpuBackend(use_disk_cache=False).compile(module)
    fusions = _array_fusions(exe)
    assert len(fusions) == 1, [f.name for f in fusions]
    assert not any(i.opcode in ("broadcast", "iota") and i.shape.num_elements > 1
                   for i in exe.module.entry.instructions)
    (want,) = xlapy.run_hlo(module, [np.asarray(key), x], backend="interpreter")
    got = exe.execute([np.asarray(key), x])
    np.testing.assert_array_equal(got, want)


def test_transcendentals_count_more_toward_the_fusion_size():
    """A chain of sines is cut into kernels of at most MAX_FUSION_SIZE in fusion_size,
    each sine counting TRANSCENDENTAL_SIZE."""
    from xlapy.backends.cpu import CpuBackend
    from xlapy.passes.instruction_fusion import TRANSCENDENTAL_SIZE, fusion_size

    def f(x):
        for _ in range(120):
            x = xnp.sin(x) + 1
        return x
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    exe = CpuBackend(use_disk_cache=False).compile(xlapy.jit(f).lower(x).hlo_module)
    fusions = _array_fusions(exe)
    sizes = [fusion_size(i) for i in fusions]
    assert max(sizes) <= MAX_FUSION_SIZE + TRANSCENDENTAL_SIZE, sizes
    assert len(fusions) >= 120 * (TRANSCENDENTAL_SIZE + 1) // (MAX_FUSION_SIZE
                                                               + TRANSCENDENTAL_SIZE), sizes
    want = x.astype(np.float64)
    for _ in range(120):
        want = np.sin(want) + 1
    np.testing.assert_allclose(exe.execute([x]), want, rtol=1e-4, atol=1e-4)
