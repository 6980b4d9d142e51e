"""run_hlo and the run_hlo_module command-line tool."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.errors import InvalidArgumentError
from xlapy.tools import run_hlo_module

AXPY = """
HloModule axpy_module, entry_computation_layout={(f32[], f32[2,4]{1,0}, f32[2,4]{1,0})->f32[2,4]{1,0}}

ENTRY %axpy.v5 (alpha: f32[], x: f32[2,4], y: f32[2,4]) -> f32[2,4] {
  %alpha = f32[] parameter(0)
  %broadcast = f32[2,4]{1,0} broadcast(f32[] %alpha), dimensions={}
  %x = f32[2,4]{1,0} parameter(1)
  %multiply = f32[2,4]{1,0} multiply(f32[2,4]{1,0} %broadcast, f32[2,4]{1,0} %x)
  %y = f32[2,4]{1,0} parameter(2)
  ROOT %add = f32[2,4]{1,0} add(f32[2,4]{1,0} %multiply, f32[2,4]{1,0} %y)
}
"""

TUPLE_ROOT = """
HloModule t
ENTRY e {
  a = s32[2] parameter(0)
  b = s32[2] negate(a)
  inner = (s32[2], s32[2]) tuple(a, b)
  ROOT t = ((s32[2], s32[2]), s32[2]) tuple(inner, b)
}
"""


def test_run_hlo_from_text_and_scalars():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.ones((2, 4), np.float32)
    (out,) = xlapy.run_hlo(AXPY, [2.0, x, y])
    np.testing.assert_array_equal(out, 2 * x + y)


def test_tuple_root_is_flattened_depth_first():
    a = np.array([1, -2], np.int32)
    outs = xlapy.run_hlo(TUPLE_ROOT, [a])
    assert [o.tolist() for o in outs] == [[1, -2], [-1, 2], [-1, 2]]


def test_bad_arguments_name_the_parameter():
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(InvalidArgumentError, match="takes 3 arguments"):
        xlapy.run_hlo(AXPY, [x])
    with pytest.raises(InvalidArgumentError, match=r"argument 1 \(x\).*f32\[2,4\].*\(3, 4\)"):
        xlapy.run_hlo(AXPY, [1.0, np.zeros((3, 4), np.float32), x])
    with pytest.raises(InvalidArgumentError, match="float64"):
        xlapy.run_hlo(AXPY, [1.0, np.zeros((2, 4)), x])
    with pytest.raises(InvalidArgumentError, match="unknown or unavailable backend"):
        xlapy.run_hlo(AXPY, [1.0, x, x], backend="tpu")


def _write_case(tmp_path: Path, outs: list[np.ndarray]) -> tuple[Path, Path]:
    hlo = tmp_path / "m.hlo"
    hlo.write_text(AXPY)
    data = tmp_path / "data.npz"
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.savez(data, arg0=np.float32(3), arg1=x, arg2=x, **{f"out{i}": o for i, o in enumerate(outs)})
    return hlo, data


def test_cli_matches_expected_outputs(tmp_path, capsys):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    hlo, data = _write_case(tmp_path, [4 * x])
    assert run_hlo_module.main([str(hlo), "--input_data", str(data), "--print_literals"]) == 0
    out = capsys.readouterr().out
    assert "and the expected outputs match" in out and "Result on interpreter" in out


def test_cli_exits_nonzero_on_mismatch(tmp_path, capsys):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    hlo, data = _write_case(tmp_path, [4 * x + 1])
    assert run_hlo_module.main([str(hlo), "--input_data", str(data)]) == 1
    assert "MISCOMPARE" in capsys.readouterr().out


def test_cli_random_inputs_and_parse_error(tmp_path, capsys):
    hlo = tmp_path / "m.hlo"
    hlo.write_text(AXPY)
    assert run_hlo_module.main([str(hlo), "--iterations", "2"]) == 0
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT x = f32[] bogus-op()\n}\n")
    assert run_hlo_module.main([str(bad)]) == 2
    assert "3:" in capsys.readouterr().err


def test_python_dash_m_entry_point(tmp_path):
    hlo = tmp_path / "m.hlo"
    hlo.write_text(AXPY)
    proc = subprocess.run([sys.executable, "-m", "xlapy", "run_hlo_module", str(hlo)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Results on interpreter and interpreter are close enough" in proc.stdout


def test_cli_without_reference_or_passes(tmp_path, capsys):
    hlo = tmp_path / "m.hlo"
    hlo.write_text(AXPY)
    assert run_hlo_module.main([str(hlo), "--reference_platform=", "--run_test_hlo_passes",
                                "false"]) == 0
    assert "close enough" not in capsys.readouterr().out


# ------------------------------------------------------------ Python values as arguments
NEG_S32 = "HloModule n\nENTRY e {\n  a = s32[] parameter(0)\n  ROOT r = s32[] negate(a)\n}\n"
NOT_PRED = "HloModule p\nENTRY e {\n  a = pred[2] parameter(0)\n  ROOT r = pred[2] not(a)\n}\n"
NEG_F32 = "HloModule f\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT r = f32[2] negate(a)\n}\n"
NEG_EMPTY = "HloModule z\nENTRY e {\n  a = s32[0] parameter(0)\n  ROOT r = s32[0] negate(a)\n}\n"


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("text, value, match", [
    (NEG_S32, object(), r"argument 0 \(a\): expected s32\[\] \(dtype int32\), got object"),
    (NEG_S32, 2 ** 40, r"argument 0 \(a\): expected s32\[\].*1099511627776 is out of range"),
    (NEG_S32, -2 ** 31 - 1, r"out of range \[-2147483648, 2147483647\]"),
    (NEG_S32, 2 ** 70, r"out of range"),
    (NEG_S32, 1.7, r"argument 0 \(a\): expected s32\[\].*got a float \(float 1.7\)"),
    (NEG_S32, 2.0, r"got a float"),
    (NEG_S32, "3", r"expected element type s32"),
    (NOT_PRED, [1, 0], r"expected pred\[2\].*got an int"),
    (NEG_F32, [1j, 2], r"expected f32\[2\].*got a complex number"),
    (NEG_F32, [1.0, None], r"expected f32\[2\]"),
])
def test_python_values_that_do_not_convert_exactly_are_rejected(backend, text, value, match):
    with pytest.raises(InvalidArgumentError, match=match):
        xlapy.run_hlo(text, [value], backend=backend)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_python_values_that_convert_exactly_are_accepted(backend):
    assert xlapy.run_hlo(NEG_S32, [3], backend=backend)[0] == -3
    assert xlapy.run_hlo(NEG_S32, [True], backend=backend)[0] == -1
    assert xlapy.run_hlo(NEG_S32, [-2 ** 31 + 1], backend=backend)[0] == 2 ** 31 - 1
    assert xlapy.run_hlo(NOT_PRED, [[True, False]], backend=backend)[0].tolist() == [False, True]
    assert xlapy.run_hlo(NEG_F32, [[1, 2.5]], backend=backend)[0].tolist() == [-1.0, -2.5]
    assert xlapy.run_hlo(NEG_EMPTY, [[]], backend=backend)[0].shape == (0,)


def test_executable_checks_python_values_the_same_way():
    import xlapy.backends.cpu as cpu
    from xlapy.hlo import parse_module
    exe = cpu.CpuBackend(use_disk_cache=False).compile(parse_module(NEG_S32))
    assert exe.execute([5]) == -5
    for value, match in ((1.7, "float64 values do not convert"), (2 ** 40, "out of"),
                         (object(), "object values do not convert")):
        with pytest.raises(InvalidArgumentError, match=r"argument 0 \(a\).*" + match):
            exe.execute([value])


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_cli_rejects_malformed_hlo(tmp_path, capsys, platform):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  a = f32[10] parameter(0)\n"
                   "  ROOT r = f32[50000000] negate(a)\n}\n")
    for passes in ("true", "false"):
        assert run_hlo_module.main([str(bad), f"--platform={platform}",
                                    f"--run_test_hlo_passes={passes}"]) != 0
        err = capsys.readouterr().err
        assert "4:8: e/r: shape f32[50000000] does not match" in err      # line:column
        assert "ROOT r = f32[50000000] negate(a)" in err


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (input file, a phrase of its one-line error)."""
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, arg0=np.array([object(), 1], dtype=object), arg1=x, arg2=x)
    pickle_file = tmp_path / "pickle.npz"
    import pickle
    pickle_file.write_bytes(pickle.dumps({"arg0": 3.0}))
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"PK\x03\x04 not really a zip archive")
    wrong = tmp_path / "wrong_shape.npz"
    np.savez(wrong, arg0=np.float32(3), arg1=np.ones((3, 3), np.float32), arg2=x)
    strings = tmp_path / "strings.npz"
    np.savez(strings, arg0=np.float32(3), arg1=np.array(["a", "b"]), arg2=x)
    missing_arg = tmp_path / "missing_arg.npz"
    np.savez(missing_arg, arg0=np.float32(3), arg1=x)
    single = tmp_path / "single.npy"
    np.save(single, x)
    return {
        "pickled object arrays": (pickled, "Object arrays cannot be loaded"),
        "a pickle": (pickle_file, "pickled data is never loaded"),
        "a damaged archive": (damaged, "File is not a zip file"),
        "wrong shape": (wrong, "argument 1: expected shape f32[2,4], got dims (3, 3)"),
        "strings": (strings, "does not convert to f32[2,4]"),
        "missing argument": (missing_arg, "no array 'arg2' for parameter 2"),
        "a .npy file": (single, "is a single .npy array"),
        "a missing file": (tmp_path / "nowhere.npz", "No such file or directory"),
    }


@pytest.mark.parametrize("case", ["pickled object arrays", "a pickle", "a damaged archive",
                                  "wrong shape", "strings", "missing argument", "a .npy file",
                                  "a missing file"])
def test_cli_reports_bad_input_files_in_one_line(tmp_path, capsys, case):
    hlo = tmp_path / "m.hlo"
    hlo.write_text(AXPY)
    path, phrase = _bad_inputs(tmp_path)[case]
    assert run_hlo_module.main([str(hlo), "--input_data", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"{hlo}: error: ") and phrase in err, err


def test_cli_reports_a_binary_hlo_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.hlo"
    bad.write_bytes(b"\xff\xfe HloModule m")
    assert run_hlo_module.main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{bad}: error: {bad}: not HLO text (not UTF-8 at byte 0)"), err
