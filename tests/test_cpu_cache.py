"""The CPU backend's disk cache: a second compile reuses object code; bad files recompile."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from xlapy.config import debug_options, get_debug_options
from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu
from xlapy.backends.cpu import cache as cache_mod          # noqa: E402
from xlapy.backends.cpu.jit_engine import engine           # noqa: E402

PROGRAM = """
HloModule cached
ENTRY main {
  x = f32[100,7] parameter(0)
  y = f32[7] parameter(1)
  b = f32[100,7] broadcast(y), dimensions={1}
  s = f32[100,7] multiply(x, b)
  ROOT t = f32[100,7] tanh(s)
}
"""


def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((100, 7)).astype(np.float32),
            rng.standard_normal(7).astype(np.float32)]


def expected(x, y):
    return np.tanh(x * y)


def compile_and_run(cache_dir):
    backend = cpu.CpuBackend(cache_dir=str(cache_dir))
    before = engine().compile_count
    exe = backend.compile(parse_module(PROGRAM))
    out = exe.execute(inputs())
    np.testing.assert_allclose(out, expected(*inputs()), rtol=2e-6, atol=1e-7)
    return backend, exe, engine().compile_count - before


def test_second_compile_in_a_new_backend_compiles_nothing(tmp_path):
    first, exe1, llvm_runs = compile_and_run(tmp_path)
    assert llvm_runs == 1 and first.disk_cache.stats.stores == 1
    second, exe2, llvm_runs = compile_and_run(tmp_path)
    assert llvm_runs == 0, "the cached object code was loaded"
    assert second.disk_cache.stats.hits == 1
    assert exe2.thunk_kinds() == exe1.thunk_kinds()
    assert exe2.module.to_text() == exe1.module.to_text()   # optimized HLO from the cache


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_cache_file_is_recompiled(tmp_path, caplog, damage):
    compile_and_run(tmp_path)
    (path,) = list(tmp_path.glob("*.xcache"))
    data = path.read_bytes()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        pos = len(data) - 10
        data = data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:]
    elif damage == "garbage":
        data = b"not a cache file at all"
    else:
        data = b""
    path.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="xlapy.cpu"):
        backend, _exe, llvm_runs = compile_and_run(tmp_path)
    assert llvm_runs == 1 and backend.disk_cache.stats.corrupt == 1
    assert any("corrupt" in r.message for r in caplog.records)
    secret = cache_mod.DiskCache(str(tmp_path), True).secret
    rewritten = cache_mod.decode(path.read_bytes(), path.stem, secret)     # valid again
    assert rewritten.objects and "fusion(" in rewritten.optimized_hlo


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XLAPY_DISABLE_CACHE", "1")
    backend = cpu.CpuBackend(cache_dir=str(tmp_path))
    backend.compile(parse_module(PROGRAM))
    assert not list(tmp_path.iterdir()) and not backend.disk_cache.enabled


def test_cache_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(tmp_path / "here"))
    monkeypatch.delenv("XLAPY_DISABLE_CACHE", raising=False)
    cpu.CpuBackend().compile(parse_module(PROGRAM))
    assert list((tmp_path / "here").glob("*.xcache"))


def test_key_depends_on_program_and_flags():
    host = engine().host
    text = parse_module(PROGRAM).to_text()
    base = cache_mod.cache_key(text, host, get_debug_options())
    assert base == cache_mod.cache_key(text, host, get_debug_options())
    assert base != cache_mod.cache_key(text.replace("tanh", "exponential"), host,
                                       get_debug_options())
    with debug_options(xla_cpu_enable_fast_math=True):
        assert base != cache_mod.cache_key(text, host, get_debug_options())
    with debug_options(xla_dump_to="/tmp/somewhere"):            # dumping is not a codegen flag
        assert base == cache_mod.cache_key(text, host, get_debug_options())


def test_entry_stored_under_another_key_is_rejected(tmp_path):
    compile_and_run(tmp_path)
    (path,) = list(tmp_path.glob("*.xcache"))
    secret = cache_mod.DiskCache(str(tmp_path), True).secret
    with pytest.raises(ValueError, match="authentication failed"):
        cache_mod.decode(path.read_bytes(), "0" * 64, secret)


# ------------------------------------------------------------------ canonical cache keys
def key_of(text: str) -> str:
    return cpu.CpuBackend(use_disk_cache=False).cache_key(parse_module(text))


REDUCE = """
HloModule canon, entry_computation_layout={(f32[8,4]{1,0}, f32[8,4]{1,0})->f32[8]{0}}
%add.7 {
  %p.1 = f32[] parameter(0)
  %p.2 = f32[] parameter(1)
  ROOT %sum.3 = f32[] add(%p.1, %p.2)
}
ENTRY %main.9 {
  %x.4 = f32[8,4]{1,0} parameter(0), metadata={op_name="x" source_file="a.py" source_line=3}
  %y.5 = f32[8,4]{1,0} parameter(1)
  %d.6 = f32[8,4]{1,0} subtract(%x.4, %y.5), metadata={op_name="jit(f)/sub" source_line=4}
  %c.8 = f32[] constant(0.5)
  ROOT %r.10 = f32[8]{0} reduce(%d.6, %c.8), dimensions={1}, to_apply=%add.7
}
"""


def test_key_ignores_names_numbering_and_metadata():
    renamed = (REDUCE.replace("%add.7", "%add_f32").replace("%d.6", "%subtract.91")
               .replace("%x.4", "%Arg_0").replace("%main.9", "%main.2")
               .replace('source_line=4', 'source_line=44').replace('op_name="x" ', ""))
    assert renamed != REDUCE and key_of(renamed) == key_of(REDUCE)


@pytest.mark.parametrize("change", [
    ("constant(0.5)", "constant(0.25)"),                              # a constant
    ("dimensions={1}", "dimensions={0}"),                             # an attribute
    ("subtract(%x.4, %y.5)", "subtract(%y.5, %x.4)"),                 # operand order
    ("ROOT %sum.3 = f32[] add", "ROOT %sum.3 = f32[] maximum"),       # the called computation
    ("%y.5 = f32[8,4]{1,0} parameter(1)", "%y.5 = f32[8,4]{0,1} parameter(1)"),     # layout
    ("(f32[8,4]{1,0}, f32[8,4]{1,0})->", "(f32[8,4]{1,0}, f32[8,4]{0,1})->"),  # entry layout
    ("entry_computation_layout", "input_output_alias={ {}: (0, {}, may-alias) }, x"),
    ("metadata={op_name=\"jit(f)/sub\" source_line=4}", "frontend_attributes={k=\"v\"}"),
    ("HloModule canon", "HloModule canon2"),
])
def test_key_changes_with_anything_semantic(change):
    old, new = change
    assert old in REDUCE
    text = REDUCE.replace(old, new)
    if "input_output_alias" in new:          # keep the layout attribute's text valid
        text = text.replace("x={(", "entry_computation_layout={(")
    assert key_of(text) != key_of(REDUCE)


def test_key_distinguishes_parameter_numbers():
    a = "HloModule p\nENTRY e {\n  x = f32[2] parameter(0)\n  y = f32[2] parameter(1)\n" \
        "  ROOT s = f32[2] subtract(x, y)\n}\n"
    b = a.replace("parameter(0)", "parameter(2)").replace("parameter(1)", "parameter(0)") \
        .replace("parameter(2)", "parameter(1)")
    assert key_of(a) != key_of(b)


def test_large_constants_are_keyed_by_their_bytes():
    values = ",".join(["1"] * 99)
    a = f"HloModule c\nENTRY e {{\n  ROOT k = f32[100] constant({{{values},1}})\n}}\n"
    b = a.replace("1})", "2})")
    assert key_of(a) != key_of(b) and key_of(a) == key_of(a.replace("ROOT k", "ROOT kk"))


CHILD = r'''
import sys
import numpy as np
import xlapy, xlapy.numpy as xnp
from xlapy.backends.cpu.jit_engine import engine
from xlapy.client.backends import get_backend
if sys.argv[1] == "perturb":                 # trace something else first: other numbering
    xlapy.jit(lambda a: a * 2)(xnp.ones(3))
    xlapy.jit(lambda a, b: a @ b + 1)(xnp.ones((2, 2)), xnp.ones((2, 2)))
pad = "\n" * int(sys.argv[2])                 # the function on another line of the file
exec(compile(pad + """
def step(x, y):
    return xnp.sum(xnp.tanh(x @ y) + 1.0)
""", "user_program.py", "exec"))
before = engine().compile_count
out = xlapy.jit(step)(np.ones((16, 8), np.float32), np.ones((8, 4), np.float32))
print(float(out), engine().compile_count - before, get_backend("cpu").last_timings.path)
'''


def test_second_process_hits_despite_other_numbering_and_lines(tmp_path):
    import os
    import subprocess
    import sys
    env = dict(os.environ, XLAPY_CACHE_DIR=str(tmp_path))
    runs = []
    for args in (["plain", "0"], ["perturb", "7"]):
        proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                              text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(proc.stdout.split())
    (value1, llvm1, path1), (value2, llvm2, path2) = runs
    assert value1 == value2 and (llvm1, path1) == ("1", "fresh")
    assert (llvm2, path2) == ("0", "disk"), "the second process compiled nothing"
