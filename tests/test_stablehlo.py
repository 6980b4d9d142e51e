"""StableHLO import: JAX's MLIR text converts to HLO and runs with XLA's and JAX's outputs.

``tests/data/stablehlo/conformance/<case>.mlir`` is the StableHLO of each JAX case of the
real-XLA conformance corpus (``tests/make_stablehlo_cases.py`` regenerates it); the
expected outputs are the corpus's (XLA's own). ``functions/`` holds further JAX functions
(``tests/stablehlo_functions.py``) with JAX's outputs; with JAX installed they are also
lowered and run live.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance import all_cases
from xlapy.client import compare_outputs, get_backend
from xlapy.client.run import flatten_result, prepare_argument
from xlapy.errors import HloParseError
from xlapy.hlo import parse_module
from xlapy.hlo.stablehlo import is_stablehlo, to_hlo_module

DATA = Path(__file__).resolve().parent / "data" / "stablehlo"
CONFORMANCE = sorted(DATA.glob("conformance/*.mlir"))
FUNCTIONS = sorted(DATA.glob("functions/*.mlir"))


def _run(module, args, backend="interpreter"):
    params = module.entry.parameters
    args = [prepare_argument(np.asarray(a).astype(p.shape.dtype), p.shape, f"argument {i}")
            for i, (a, p) in enumerate(zip(args, params))]
    return flatten_result(get_backend(backend).compile(module).execute(args))


@pytest.fixture(scope="module")
def cases():
    found = {c.name: c for c in all_cases()}
    if not found:
        pytest.skip("no conformance corpus")
    return found


def test_every_jax_corpus_case_has_its_stablehlo(cases):
    jax_cases = {n for n, c in cases.items() if c.info.get("source") == "jax"}
    assert jax_cases == {p.stem for p in CONFORMANCE}


@pytest.mark.parametrize("path", CONFORMANCE, ids=lambda p: p.stem)
def test_conformance_stablehlo_matches_xla(cases, path):
    case = cases[path.stem]
    module = parse_module(path.read_text())
    args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
    bad = compare_outputs(_run(module, args), expected, case.rtol, case.atol)
    assert not bad, [m.message for m in bad]


@pytest.mark.parametrize("name", ["cf_scan_grad", "la_conv_grads", "misc_custom_call_cholesky",
                                  "nn_pool_grads", "shape_scatter_variants", "ew_trig_special"])
def test_conformance_stablehlo_on_cpu(cases, name):
    case = cases[name]
    module = parse_module((DATA / "conformance" / f"{name}.mlir").read_text())
    args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
    bad = compare_outputs(_run(module, args, "cpu"), expected, case.rtol, case.atol)
    assert not bad, [m.message for m in bad]


def _stored(path: Path):
    data = np.load(path.with_suffix(".npz"))
    args = [data[k] for k in sorted((k for k in data.files if k.startswith("arg")),
                                    key=lambda k: int(k[3:]))]
    outs = [data[k] for k in sorted((k for k in data.files if k.startswith("out")),
                                    key=lambda k: int(k[3:]))]
    return args, outs


def test_at_least_thirty_functions():
    assert len(FUNCTIONS) >= 30


@pytest.mark.parametrize("path", FUNCTIONS, ids=lambda p: p.stem)
def test_function_roundtrip_stored(path):
    args, outs = _stored(path)
    module = to_hlo_module(path.read_text())
    bad = compare_outputs(_run(module, args), outs, 1e-4, 1e-4)
    assert not bad, [m.message for m in bad]


@pytest.mark.peers
@pytest.mark.parametrize("name", [p.stem for p in FUNCTIONS])
def test_function_roundtrip_live_jax(name):
    """Lower with the installed JAX, convert, and compare with JAX's own run."""
    jax = pytest.importorskip("jax")
    sys.path.insert(0, str(Path(__file__).parent))
    from stablehlo_functions import load
    fn, make_args = load()[name]
    import zlib
    args = make_args(np.random.RandomState(zlib.crc32(name.encode()) + 1))
    text = jax.jit(fn).lower(*args).as_text()
    expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    bad = compare_outputs(_run(parse_module(text), args), expected, 1e-4, 1e-4)
    assert not bad, [m.message for m in bad]


# ------------------------------------------------------------------ detection, entry points
SIMPLE = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {tf.aliasing_output = 0 : i32},
      %arg1: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    %1 = func.call @twice(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @twice(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""


def test_detection_and_structure():
    assert is_stablehlo(SIMPLE) and is_stablehlo("// c\nfunc.func @main() {}")
    assert not is_stablehlo("HloModule m\nENTRY e { ROOT p = f32[] parameter(0) }")
    m = parse_module(SIMPLE)
    assert m.name == "jit_f" and [c.name.split(".")[0] for c in m.computations] == \
        ["twice", "main"]
    assert m.entry.root.opcode == "call"
    alias = m.attributes["input_output_alias"]
    assert alias[0].param_number == 0 and alias[0].output_index == ()
    again = parse_module(m.to_text())                 # the printed HLO parses back
    assert again.to_text() == m.to_text()


def test_run_hlo_accepts_stablehlo_text():
    import xlapy
    x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    (out,) = xlapy.run_hlo(SIMPLE, [x, y])
    np.testing.assert_array_equal(out, (x + y) * 2)


def test_convert_tool_prints_hlo(tmp_path):
    src = tmp_path / "f.mlir"
    src.write_text(SIMPLE)
    r = subprocess.run([sys.executable, "-m", "xlapy", "convert", str(src), "--to", "hlo"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("HloModule jit_f") and "multiply(" in r.stdout
    bad = tmp_path / "bad.mlir"
    bad.write_text(SIMPLE.replace("stablehlo.add", "stablehlo.frobnicate"))
    r = subprocess.run([sys.executable, "-m", "xlapy", "convert", str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "4:5: unsupported op 'stablehlo.frobnicate'" in r.stderr
    assert "Traceback" not in r.stderr


def test_run_hlo_module_tool_runs_mlir(tmp_path):
    src = tmp_path / "f.mlir"
    src.write_text(SIMPLE)
    np.savez(tmp_path / "d.npz", arg0=np.ones(4, np.float32), arg1=np.ones(4, np.float32),
             out0=np.full(4, 4.0, np.float32))
    r = subprocess.run([sys.executable, "-m", "xlapy", "run_hlo_module", str(src),
                        "--input_data", str(tmp_path / "d.npz")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "expected outputs match" in r.stdout


# -------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("text, where, words", [
    (SIMPLE.replace("stablehlo.add", "stablehlo.frobnicate"), "4:5",
     "unsupported op 'stablehlo.frobnicate'"),
    (SIMPLE.replace("%arg0, %arg1 :", "%arg0, %argX :"), "4:5", "undefined value %argX"),
    (SIMPLE.replace("tensor<4xf32>\n    %1 = func", "tensor<5xf32>\n    %1 = func"), "4:5",
     "add"),
    (SIMPLE.replace("dense<2.000000e+00>", "dense<2.000000e+00"), "9:50", "closing dense"),
    (SIMPLE.replace("dense<2.000000e+00>", "dense<\"0xZZ\">"), "9:5", "non-hexadecimal"),
    (SIMPLE.replace("tensor<f32>) -> tensor<4xf32>", "tensor<f32>) -> tensor<4xq32>"), "10:",
     "unsupported element type 'q32'"),
    (SIMPLE[:-3], "", "missing '}'"),
    (SIMPLE.replace("@twice(%0)", "@nothere(%0)"), "5:5", "undefined function @nothere"),
    ("module {\n}\n", "1:1", "no func.func"),
])
def test_bad_mlir_names_line_and_column(text, where, words):
    with pytest.raises(HloParseError) as info:
        to_hlo_module(text)
    message = str(info.value)
    assert words in message
    if where:
        assert message.startswith(where)


def test_location_is_reported():
    text = SIMPLE.replace("%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>",
                          '%0 = stablehlo.bogus %arg0, %arg1 : tensor<4xf32> loc(#loc3)'
                          ) + '#loc3 = loc("/src/model.py":12:7)\n'
    with pytest.raises(HloParseError) as info:
        to_hlo_module(text)
    assert "4:5:" in str(info.value) and "/src/model.py:12:7" in str(info.value)


def test_locations_become_names_and_metadata():
    text = SIMPLE.replace("%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>",
                          '%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32> loc(#loc3)'
                          ) + '#loc3 = loc("jit(f)/add"("/src/model.py":12:7))\n'
    m = to_hlo_module(text)
    add = next(i for i in m.entry.instructions if i.opcode == "add")
    assert add.metadata.op_name == "jit(f)/add" and add.metadata.source_line == 12


# ------------------------------------------------------------------ collectives and sdy
COLLECTIVES = """module @jit_spmd attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<ui32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> : (tensor<2x3xf32>) -> tensor<4x3xf32>
    %2 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = stablehlo.partition_id : tensor<ui32>
    return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<ui32>
  }
}
"""


def test_collectives_run_per_device():
    import xlapy
    m = to_hlo_module(COLLECTIVES)
    assert m.attributes["num_partitions"] == 2
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    x1 = x0 * 10
    outs = xlapy.run_hlo(m, [[x0], [x1]])
    for d, (mine, other) in enumerate(((x0, x1), (x1, x0))):
        total, gathered, permuted, pid = outs[d]
        np.testing.assert_array_equal(total, x0 + x1)
        np.testing.assert_array_equal(gathered, np.concatenate([x0, x1]))
        np.testing.assert_array_equal(permuted, other)
        assert int(pid) == d


ONE_DEVICE_SDY = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=1]>
  func.func public @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}) -> (tensor<4xf32>) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}]>] out_shardings=[<@mesh, [{"a"}]>] manual_axes={"a"} (%arg1: tensor<4xf32>) {
      %1 = stablehlo.multiply %arg1, %arg1 : tensor<4xf32>
      sdy.return %1 : tensor<4xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    %2 = sdy.sharding_constraint %0 <@mesh, [{"a"}]> : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""


def test_one_device_shardy_program_runs():
    import xlapy
    m = to_hlo_module(ONE_DEVICE_SDY)
    p = m.entry.parameters[0]
    assert p.attrs["frontend_attributes"]["xla.sdy.sharding"].startswith("#sdy.sharding<@mesh")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(xlapy.run_hlo(m, [x])[0], x * x)


def test_multi_device_manual_computation_is_refused_at_its_line():
    text = ONE_DEVICE_SDY.replace("mhlo.num_partitions = 1", "mhlo.num_partitions = 4")
    with pytest.raises(HloParseError, match=r"^4:5: .*needs XLA's SPMD partitioner"):
        to_hlo_module(text)


def test_mutated_texts_give_typed_errors_only():
    """Damaged MLIR (characters dropped or inserted, lines cut) converts or raises an
    XlapyError: never another exception from inside the parser or converter."""
    import random
    from xlapy.errors import XlapyError
    rng = random.Random(3)
    texts = [p.read_text() for p in CONFORMANCE[:12]]
    for _ in range(300):
        lines = rng.choice(texts).split("\n")
        k = rng.randrange(len(lines))
        line = lines[k]
        i = rng.randrange(len(line) + 1)
        lines[k] = rng.choice([line[:i] + line[i + 1:], line[:i] + rng.choice("<>()[]{},:=%@#x?-09")
                               + line[i:], ""])
        try:
            to_hlo_module("\n".join(lines[:len(lines) if rng.random() < 0.8 else k]))
        except XlapyError:
            pass


COMPOSITE = """module @jit_g attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.composite "my.tanh" %arg0 {composite_attributes = {scale = 2.000000e+00 : f64}, decomposition = @my.tanh} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
  func.func private @my.tanh(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<3xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<3xf32>
    return %2 : tensor<3xf32>
  }
}
"""


def test_composite_becomes_a_composite_call():
    import xlapy
    m = to_hlo_module(COMPOSITE)
    call = m.entry.root
    assert call.opcode == "call" and call.attrs["is_composite"] is True
    assert call.attrs["frontend_attributes"] == {
        "composite.attributes": "{scale = 2.000000e+00 : f64}",
        "composite.name": "my.tanh", "composite.version": "0"}
    x = np.linspace(-1, 1, 3).astype(np.float32)
    np.testing.assert_allclose(xlapy.run_hlo(m, [x])[0], np.tanh(x) * 2, rtol=1e-6)


def test_dot_algorithm_and_frontend_attributes_are_kept():
    text = SIMPLE.replace(
        "%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>",
        '%0 = stablehlo.add %arg0, %arg1 {mhlo.frontend_attributes = {_xla_stream = "1"}, '
        'mhlo.sharding = "{replicated}"} : tensor<4xf32>\n'
        "    %d = stablehlo.dot_general %arg0, %arg1, contracting_dims = [0] x [0], "
        "algorithm = <lhs_precision_type = bf16, rhs_precision_type = bf16, accumulation_type "
        "= f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = "
        "1, allow_imprecise_accumulation = false> : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<f32>")
    m = to_hlo_module(text)
    add = next(i for i in m.entry.instructions if i.opcode == "add")
    assert add.attrs["frontend_attributes"] == {"_xla_stream": "1"}
    assert str(add.attrs["sharding"]) == "{replicated}"
    dot = next(i for i in m.entry.instructions if i.opcode == "dot")
    assert dot.attrs["algorithm"] == "dot_bf16_bf16_f32"


MAP_BROADCAST = """func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %0 = stablehlo.broadcast %arg0, sizes = [2] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "stablehlo.map"(%arg0, %arg1) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}
"""


def test_bare_function_with_broadcast_and_map():
    import xlapy
    x, y = np.array([1, 5, 3], np.float32), np.array([4, 2, 6], np.float32)
    b, m = xlapy.run_hlo(MAP_BROADCAST, [x, y])
    np.testing.assert_array_equal(b, np.stack([x, x]))
    np.testing.assert_array_equal(m, np.maximum(x, y))


def test_location_aliases_are_followed_for_metadata():
    text = SIMPLE.replace("%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>",
                          '%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32> loc(#loc4)'
                          ) + ('#loc2 = loc("/src/model.py":12:7)\n'
                               '#loc3 = loc(callsite(#loc2 at #loc2))\n'
                               '#loc4 = loc("jit(f)/add"(#loc3))\n')
    add = next(i for i in to_hlo_module(text).entry.instructions if i.opcode == "add")
    assert add.metadata.op_name == "jit(f)/add"
    assert add.metadata.source_file == "/src/model.py" and add.metadata.source_line == 12


@pytest.mark.peers
def test_debug_info_text_of_corpus_cases_converts():
    """``as_text(debug_info=True)`` (locations everywhere) gives the same programs."""
    jax = pytest.importorskip("jax")
    sys.path.insert(0, str(Path(__file__).parent))
    from make_stablehlo_cases import case_arguments, case_function
    found = {c.name: c for c in all_cases()}
    for name in ("cf_scan_grad", "nn_attention", "misc_custom_call_cholesky"):
        case = found[name]
        fn, donate = case_function(case.info)
        text = jax.jit(fn, donate_argnums=donate).lower(*case_arguments(case)).as_text(
            debug_info=True)
        module = parse_module(text)
        assert any(i.metadata is not None and i.metadata.source_line
                   for i in module.entry.instructions)
        args, expected = case.inputs_and_outputs([p.shape for p in module.entry.parameters])
        bad = compare_outputs(_run(module, args), expected, case.rtol, case.atol)
        assert not bad, [m.message for m in bad]


def test_named_locations_name_the_instructions():
    text = SIMPLE.replace("%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>",
                          '%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32> loc(#loc4)'
                          ) + '#loc4 = loc("jit(f)/transpose(jvp())/add_any"("/a.py":1:2))\n'
    names = [i.name for i in to_hlo_module(text).entry.instructions]
    assert any(n.startswith("add_any.") for n in names), names


GENERIC_IF_WHILE = """func.func public @main(%p: tensor<i1>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<i32>) {
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0 = "stablehlo.if"(%p) ({
    %a = stablehlo.add %x, %x : tensor<3xf32>
    stablehlo.return %a : tensor<3xf32>
  }, {
    %b = stablehlo.negate %x : tensor<3xf32>
    stablehlo.return %b : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<3xf32>
  %1:2 = "stablehlo.while"(%c0, %0) ({
  ^bb0(%i: tensor<i32>, %v: tensor<3xf32>):
    %lim = stablehlo.constant dense<4> : tensor<i32>
    %lt = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<3xf32>):
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %w = stablehlo.multiply %v, %x : tensor<3xf32>
    stablehlo.return %n, %w : tensor<i32>, tensor<3xf32>
  }) : (tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>)
  return %1#1, %1#0 : tensor<3xf32>, tensor<i32>
}
"""


@pytest.mark.parametrize("pred", [True, False])
def test_generic_if_and_while_with_captures(pred):
    import xlapy
    x = np.array([1.0, -2.0, 0.5], np.float32)
    v, i = xlapy.run_hlo(GENERIC_IF_WHILE, [np.bool_(pred), x])
    start = x + x if pred else -x
    np.testing.assert_allclose(v, start * x ** 4, rtol=1e-6)
    assert int(i) == 4


# ------------------------------------------------------------ shard_map / pmap programs
SPMD = DATA / "spmd"


def _blocks(x: np.ndarray) -> list[np.ndarray]:
    """Device d = 2a + b of a 2x2 mesh ("a", "b") holds block (a, b) of ``x``."""
    return [x[a * 2:a * 2 + 2, b * 2:b * 2 + 2] for a in range(2) for b in range(2)]


def test_shard_map_runs_on_four_devices():
    import xlapy
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    blocks = _blocks(x)
    m = parse_module((SPMD / "shard_map_psum.mlir").read_text())
    assert m.attributes["num_partitions"] == 4
    assert m.entry.parameters[0].shape.dims == (2, 2)          # each device's block
    outs = xlapy.run_hlo(m, [[b] for b in blocks])
    for d in range(4):
        np.testing.assert_array_equal(outs[d][0], blocks[d] + blocks[d ^ 1])   # psum over b
    m = parse_module((SPMD / "shard_map_gather_permute.mlir").read_text())
    outs = xlapy.run_hlo(m, [[b] for b in blocks])
    for d in range(4):
        b = d % 2
        expected = x[:, b * 2:b * 2 + 2] + blocks[d ^ 1].sum()
        np.testing.assert_array_equal(outs[d][0], expected)


def test_pmap_runs_on_four_devices():
    import xlapy
    m = parse_module((SPMD / "pmap_psum.mlir").read_text())
    rows = [np.full((1, 3), i + 1, np.float32) for i in range(4)]
    outs = xlapy.run_hlo(m, [[r] for r in rows])
    for d in range(4):
        np.testing.assert_array_equal(outs[d][0], rows[d] * 10)
