"""The verifier checks the custom calls xlapy runs (JAX's CPU LAPACK kernels and TopK):
operand and result shapes, element types and character options, and every custom call's
``operand_layout_constraints`` against its operands. A mismatch is a VerificationError
with line:column on both backends, never a ValueError from inside LAPACK."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.errors import VerificationError

# name -> (operand shapes, result shape, backend_config or "")
VALID = {
    "spotrf": (["f32[2,4,4]"], "(f32[2,4,4], s32[2])", "uplo = 76 : ui8"),
    "sgetrf": (["f32[3,5]"], "(f32[3,5], s32[3], s32[])", ""),
    "sgeqrf": (["f32[5,3]"], "(f32[5,3], f32[3])", ""),
    "sgeqp3": (["f32[5,3]", "s32[3]"], "(f32[5,3], s32[3], f32[3])", ""),
    "sorgqr": (["f32[5,3]", "f32[3]"], "f32[5,3]", ""),
    "ssyevd": (["f32[4,4]"], "(f32[4,4], f32[4], s32[])", "mode = 86 : ui8, uplo = 76 : ui8"),
    "sgesdd": (["f32[5,3]"], "(f32[5,3], f32[3], f32[5,3], f32[3,3], s32[])",
               "mode = 83 : ui8"),
    "sgesvd": (["f32[3,5]"], "(f32[3,5], f32[3], f32[3,3], f32[5,5], s32[])",
               "mode = 65 : ui8"),
    "sgeev": (["f32[4,4]"], "(f32[4], f32[4], c64[4,4], c64[4,4], s32[])", ""),
    "cgeev": (["c64[4,4]"], "(c64[4], c64[4,4], c64[4,4], s32[])", ""),
    "sgees": (["f32[4,4]"], "(f32[4,4], f32[4,4], f32[4], f32[4], s32[], s32[])", ""),
    "sgehrd": (["f32[4,4]"], "(f32[4,4], f32[3], s32[])", "high = 4 : i32, low = 1 : i32"),
    "ssytrd": (["f32[4,4]"], "(f32[4,4], f32[4], f32[3], f32[3], s32[])", ""),
    "strsm": (["f32[4,4]", "f32[4,2]"], "f32[4,2]", "side = 76 : ui8"),
    "sgtsv": (["f32[4]", "f32[4]", "f32[4]", "f32[4,2]"],
              "(f32[4], f32[4], f32[4], f32[4,2], s32[])", ""),
}


def _module(name: str, operands: list[str], result: str, config: str,
            constraints: str | None = None) -> str:
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(operands))
    names = ", ".join(f"p{i}" for i in range(len(operands)))
    extra = f", backend_config={{{config}}}" if config else ""
    if constraints is not None:
        extra += f", operand_layout_constraints={{{constraints}}}"
    return (f"HloModule m\nENTRY e {{\n{params}\n  ROOT c = {result} custom-call({names}), "
            f'custom_call_target="lapack_{name}_ffi"{extra}\n}}\n')


def _args(operands: list[str]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for s in operands:
        et, dims = s.split("[")
        shape = tuple(int(d) for d in dims.rstrip("]").split(",") if d)
        dtype = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "c64": np.complex64}[et]
        if dtype is np.int32:
            out.append(np.zeros(shape, dtype))
            continue
        x = rng.standard_normal(shape).astype(dtype)
        if len(shape) >= 2 and shape[-1] == shape[-2]:      # well conditioned, symmetric
            x = x @ np.swapaxes(x, -1, -2).conj() + 4 * np.eye(shape[-1], dtype=dtype)
        out.append(x)
    return out


@pytest.mark.parametrize("name", list(VALID))
def test_valid_lapack_calls_run(name):
    operands, result, config = VALID[name]
    outs = xlapy.run_hlo(_module(name, operands, result, config), _args(operands),
                         backend="interpreter")
    assert outs and all(np.all(np.isfinite(o)) for o in outs if o.dtype.kind in "fc")


def _mismatches():
    """Each valid call with one thing wrong: a non-square or resized operand, a result of
    another size or type, a missing result, an option LAPACK rejects."""
    for name, (operands, result, config) in VALID.items():
        first = operands[0]
        et, dims = first.split("[")
        dims = [int(d) for d in dims.rstrip("]").split(",")]
        grown = list(dims)
        grown[-1] += 1
        yield f"{name}-operand-resized", name, [f"{et}[{','.join(map(str, grown))}]"] \
            + operands[1:], result, config
        other = "f64" if et != "f64" else "f32"
        yield f"{name}-operand-type", name, [f"{other}[{','.join(map(str, dims))}]"] \
            + operands[1:], result, config
        if result.startswith("("):
            leaves = result[1:-1].split(", ")
            yield f"{name}-result-missing", name, operands, "(" + ", ".join(leaves[:-1]) + ")", \
                config
            swapped = leaves[-1].replace("s32", "f32").replace("f32[3]", "s32[3]")
            yield f"{name}-last-result-type", name, operands, \
                "(" + ", ".join(leaves[:-1] + [swapped]) + ")", config
        else:
            yield f"{name}-result-resized", name, operands, result.replace("]", ",1]"), config
    yield "strsm-right-side", "strsm", ["f32[4,4]", "f32[4,2]"], "f32[4,2]", "side = 82 : ui8"
    yield "sorgqr-wide", "sorgqr", ["f32[3,5]", "f32[3]"], "f32[3,5]", ""
    yield "spotrf-bad-uplo", "spotrf", ["f32[4,4]"], "(f32[4,4], s32[])", "uplo = 88 : ui8"
    yield "sgesdd-full-u-in-s-mode", "sgesdd", ["f32[5,3]"], \
        "(f32[5,3], f32[3], f32[5,5], f32[3,3], s32[])", "mode = 83 : ui8"


MISMATCHES = {m[0]: m[1:] for m in _mismatches()}


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_mismatched_lapack_calls_are_verification_errors(case):
    name, operands, result, config = MISMATCHES[case]
    text = _module(name, operands, result, config)
    line = 3 + len(operands)
    for backend in ("interpreter", "cpu"):
        with pytest.raises(VerificationError) as info:
            xlapy.run_hlo(text, _args(operands), backend=backend)
        message = str(info.value)
        assert f"\n  {line}:8: e/c: custom-call: lapack_{name}_ffi" in message, message


def test_operand_layout_constraints_must_match_the_operands():
    text = _module("spotrf", ["f32[4,4]"], "(f32[4,4]{0,1}, s32[])", "",
                   constraints="f32[4,3]{0,1}")
    for backend in ("interpreter", "cpu"):
        with pytest.raises(VerificationError, match=r"4:8: e/c: custom-call: "
                           r"operand_layout_constraints entry 0 f32\[4,3\]\{0,1\} does not "
                           r"match operand 0 f32\[4,4\]"):
            xlapy.run_hlo(text, _args(["f32[4,4]"]), backend=backend)
    count = _module("spotrf", ["f32[4,4]"], "(f32[4,4]{0,1}, s32[])", "",
                    constraints="f32[4,4]{0,1}, f32[4,4]{0,1}")
    with pytest.raises(VerificationError, match="has 2 shapes for 1 operands"):
        xlapy.run_hlo(count, _args(["f32[4,4]"]), backend="cpu")
    good = _module("spotrf", ["f32[4,4]"], "(f32[4,4]{0,1}, s32[])", "",
                   constraints="f32[4,4]{0,1}")
    a = _args(["f32[4,4]"])
    want = xlapy.run_hlo(good, a, backend="interpreter")
    got = xlapy.run_hlo(good, a, backend="cpu")
    np.testing.assert_allclose(np.tril(got[0]), np.tril(want[0]), rtol=1e-5, atol=1e-5)


def test_topk_result_must_fit_the_operand():
    text = ("HloModule m\nENTRY e {\n  x = f32[2,5] parameter(0)\n"
            '  ROOT t = (f32[2,7], s32[2,7]) custom-call(x), custom_call_target="TopK"\n}\n')
    with pytest.raises(VerificationError, match=r"4:8: e/t: custom-call: TopK result"):
        xlapy.run_hlo(text, [np.ones((2, 5), np.float32)], backend="interpreter")
    ok = text.replace("f32[2,7], s32[2,7]", "f32[2,3], s32[2,3]")
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    values, indices = xlapy.run_hlo(ok, [x], backend="interpreter")
    np.testing.assert_array_equal(values, [[4, 3, 2], [9, 8, 7]])


RECURSIVE = """HloModule rec
f {
  p = f32[4] parameter(0)
  ROOT c = f32[4] call(p), to_apply=g
}
g {
  q = f32[4] parameter(0)
  ROOT d = f32[4] call(q), to_apply=f
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] call(x), to_apply=f
}
"""


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_recursive_call_graph_is_rejected(backend, tmp_path, monkeypatch):
    """It raised RecursionError on both backends, the CPU one after storing a cache entry."""
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(tmp_path))
    with pytest.raises(VerificationError, match=r"8:8: g/d: calls computation f, which is "
                       r"already being called: the call graph is recursive \(f -> g -> f\)"):
        xlapy.run_hlo(RECURSIVE, [np.ones(4, np.float32)], backend=backend)
    assert not list(tmp_path.rglob("*.xcache"))


def test_self_recursive_while_body_is_rejected():
    text = """HloModule w
body {
  p = f32[] parameter(0)
  ROOT r = f32[] while(p), condition=cond, body=body
}
cond {
  p = f32[] parameter(0)
  ROOT t = pred[] constant(false)
}
ENTRY e {
  x = f32[] parameter(0)
  ROOT w = f32[] while(x), condition=cond, body=body
}
"""
    with pytest.raises(VerificationError, match=r"body/r: calls computation body.*\(body -> "
                                                r"body\)"):
        xlapy.run_hlo(text, [np.float32(1)], backend="interpreter")
