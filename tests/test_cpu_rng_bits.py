"""Native rng-bit-generator kernels: bit-exact with the interpreter (and so with XLA)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu


@pytest.fixture(scope="module")
def backend():
    return cpu.CpuBackend(use_disk_cache=False)


def module(alg: str, et: str, dims, n: int, layout: str = "") -> str:
    j = ",".join(map(str, dims))
    return f"""HloModule rbg
ENTRY main {{
  s = u64[{n}] parameter(0)
  ROOT r = (u64[{n}], {et}[{j}]{layout}) rng-bit-generator(s), algorithm={alg}
}}"""


def state(n: int, seed: int) -> np.ndarray:
    st = np.random.default_rng(seed).integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + \
        np.uint64(1)
    st[1] = np.uint64(2**64 - 3)            # the counter wraps around inside the output
    return st


def check(backend, text: str, st: np.ndarray) -> tuple:
    exe = backend.compile(parse_module(text))
    assert exe.thunk_kinds()["r"] == "kernel"
    got = exe.execute([st])
    want = xlapy.run_hlo(text, [st], backend="interpreter")
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()
    return got


ELEMENT_TYPES = ["u32", "u64", "f32", "s8", "bf16"]
DIMS = [(4, 8), (3, 5), (5, 3, 2), ()]


def many(alg: str, n: int) -> str:
    """One rng-bit-generator per (element type, dims) on the same state, all returned."""
    lines, results, shapes = [], [], []
    for k, (et, dims) in enumerate((et, d) for et in ELEMENT_TYPES for d in DIMS):
        j = ",".join(map(str, dims))
        lines.append(f"  r{k} = (u64[{n}], {et}[{j}]) rng-bit-generator(s), algorithm={alg}")
        lines.append(f"  st{k} = u64[{n}] get-tuple-element(r{k}), index=0")
        lines.append(f"  b{k} = {et}[{j}] get-tuple-element(r{k}), index=1")
        results += [f"st{k}", f"b{k}"]
        shapes += [f"u64[{n}]", f"{et}[{j}]"]
    body = "\n".join(lines)
    return (f"HloModule rbg\nENTRY main {{\n  s = u64[{n}] parameter(0)\n{body}\n"
            f"  ROOT r = ({', '.join(shapes)}) tuple({', '.join(results)})\n}}")


@pytest.mark.parametrize("alg,n", [("rng_three_fry", 3), ("rng_philox", 2), ("rng_philox", 3)])
def test_bits_and_new_state_match_interpreter(backend, alg, n):
    text = many(alg, n)
    st = state(n, seed=n)
    exe = backend.compile(parse_module(text))
    kinds = exe.thunk_kinds()
    assert all(kinds[f"r{k}"] == "kernel" for k in range(len(ELEMENT_TYPES) * len(DIMS)))
    got = exe.execute([st])
    want = xlapy.run_hlo(text, [st], backend="interpreter")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


def test_large_output_column_major_and_threads():
    text = module("rng_three_fry", "u32", (1001, 37), 2, "{0,1}")
    outs = []
    for threads in (1, 2):
        be = cpu.CpuBackend(use_disk_cache=False, num_threads=threads, parallel_cost=0)
        outs.append(check(be, text, state(2, seed=5)))
    assert outs[0][1].tobytes() == outs[1][1].tobytes()
    # dims 1001 and 37 are odd: the largest (1001) is halved, 501 * 37 counters are used
    assert int(outs[0][0][1]) == (2**64 - 3 + 501 * 37) % 2**64


@pytest.mark.parametrize("alg,et", [("rng_default", "f64"), ("rng_three_fry", "f64"),
                                    ("rng_three_fry", "u16")])
def test_default_algorithm_and_other_types(backend, alg, et):
    check(backend, module(alg, et, (7,), 2), state(2, seed=4))


def test_declines_sub_byte_outputs():
    from xlapy.backends.cpu.rng_emitter import RngBitGeneratorEmitter
    instr = parse_module(module("rng_philox", "u4", (8,), 2)).entry.root
    assert not RngBitGeneratorEmitter().can_emit(instr)
    assert RngBitGeneratorEmitter().can_emit(parse_module(module("rng_philox", "u8", (8,), 2))
                                             .entry.root)
