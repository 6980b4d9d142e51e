"""A damaged disk-cache entry never gives a wrong answer, a crash or an exception: every
byte of the file is checksummed (header included), every header field is checked, and
any failure while loading an entry removes it and recompiles."""
from __future__ import annotations

import json
import logging
import struct

import numpy as np
import pytest

from xlapy.hlo import parse_module

import xlapy.backends.cpu as cpu
from xlapy.backends.cpu import cache as cache_mod          # noqa: E402
from xlapy.backends.cpu.jit_engine import engine           # noqa: E402

PROGRAM = """
HloModule robust
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[300,40] parameter(0)
  y = f32[40] parameter(1)
  b = f32[300,40] broadcast(y), dimensions={1}
  s = f32[300,40] multiply(x, b)
  t = f32[300,40] tanh(s)
  z = f32[] constant(0)
  r = f32[300] reduce(t, z), dimensions={1}, to_apply=add
  ROOT out = (f32[300,40], f32[300]) tuple(t, r)
}
"""


def inputs():
    rng = np.random.default_rng(1)
    return [rng.standard_normal((300, 40)).astype(np.float32),
            rng.standard_normal(40).astype(np.float32)]


def check(outs) -> None:
    x, y = inputs()
    t = np.tanh(x * y)
    np.testing.assert_allclose(outs[0], t, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(outs[1], t.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def module():
    return parse_module(PROGRAM)


@pytest.fixture
def stored(tmp_path, module):
    """A cache directory holding a valid entry for PROGRAM; (path, bytes)."""
    backend = cpu.CpuBackend(cache_dir=str(tmp_path))
    check(backend.compile(module).execute(inputs()))
    (path,) = list(tmp_path.glob("*.xcache"))
    return path, path.read_bytes()


def load_and_run(path, module):
    """A new backend compiles ``module`` from the directory of ``path``; check the result."""
    backend = cpu.CpuBackend(cache_dir=str(path.parent))
    check(backend.compile(module).execute(inputs()))
    return backend


def secret(path) -> bytes:
    """The key the cache directory holding ``path`` authenticates its entries with."""
    return cache_mod.DiskCache(str(path.parent), True).secret


def decode(path, data=None):
    return cache_mod.decode(path.read_bytes() if data is None else data, path.stem,
                            secret(path))


def header_span(data: bytes) -> tuple[int, int]:
    start = len(cache_mod.MAGIC) + 8 + 32
    (hlen,) = struct.unpack_from("<Q", data, len(cache_mod.MAGIC))
    return start, start + hlen


def flip_positions(data: bytes) -> list[int]:
    """~100 positions over the whole file, a third of them in the header JSON, plus the
    kernel's ``units`` and ``cost`` values."""
    rng = np.random.default_rng(5)
    start, end = header_span(data)
    positions = set(rng.integers(0, len(data), 70).tolist())
    positions |= set(rng.integers(start, end, 30).tolist())
    positions |= {data.index(b'"units"') + 9, data.index(b'"cost"') + 8}
    return sorted(positions)


def test_random_byte_flips_anywhere_are_corrupt_entries(stored):
    """Magic, length, header HMAC, header JSON, HLO text, object code: a flipped bit
    anywhere makes the load a miss that removes the file (never a hit, never raising)."""
    path, data = stored
    rng = np.random.default_rng(6)
    disk = cache_mod.DiskCache(str(path.parent), True)
    positions = flip_positions(data)
    assert len(positions) >= 90
    for pos in positions:
        damaged = bytearray(data)
        damaged[pos] ^= 1 << int(rng.integers(0, 8))
        path.write_bytes(bytes(damaged))
        assert disk.load(path.stem) is None, pos
        assert not path.exists()
    assert disk.stats.corrupt == len(positions) and disk.stats.hits == 0


def test_random_byte_flips_recompile_with_correct_results(stored, module):
    """End to end on a sample of those positions: each compile recompiles (one LLVM run),
    gives correct results and leaves a valid entry."""
    path, data = stored
    rng = np.random.default_rng(7)
    positions = flip_positions(data)
    for pos in sorted(rng.choice(positions, 16, replace=False).tolist()) + positions[-2:]:
        damaged = bytearray(data)
        damaged[pos] ^= 1 << int(rng.integers(0, 8))
        path.write_bytes(bytes(damaged))
        before = engine().compile_count
        backend = load_and_run(path, module)
        assert backend.last_timings.path == "fresh", pos
        assert engine().compile_count == before + 1
        assert backend.disk_cache.stats.corrupt == 1, pos
        decode(path)      # a valid entry again


def test_units_flip_is_detected_by_the_header_mac(stored):
    path, data = stored
    pos = data.index(b'"units": ') + len(b'"units": ')
    damaged = data[:pos] + bytes([data[pos] ^ 0x02]) + data[pos + 1:]
    with pytest.raises(ValueError, match="authentication failed"):
        decode(path, damaged)


def reencode(path, data, change) -> None:
    """Rewrite the entry with ``change(header_dict)`` applied and a valid HMAC (what a
    buggy writer holding the key could leave): the field checks must catch it."""
    entry = decode(path, data)
    start, end = header_span(data)
    header = json.loads(data[start:end])
    change(header)
    raw = json.dumps(header).encode()
    body = data[end:]
    path.write_bytes(cache_mod.MAGIC + struct.pack("<Q", len(raw))
                     + cache_mod.mac(secret(path), path.stem, raw) + raw + body)
    assert entry.objects


BAD_HEADERS = {
    "kernel record is a list": lambda h: h.__setitem__("kernels", [[1, 2]]),
    "units is a string": lambda h: h["kernels"][0].__setitem__("units", "3"),
    "units is negative": lambda h: h["kernels"][0].__setitem__("units", -1),
    "units is a float": lambda h: h["kernels"][0].__setitem__("units", 2.5),
    "cost is NaN": lambda h: h["kernels"][0].__setitem__("cost", float("nan")),
    "name is not a symbol": lambda h: h["kernels"][0].__setitem__("name", "x; rm"),
    "a kernel field is missing": lambda h: h["kernels"][0].pop("instruction"),
    "an extra header field": lambda h: h.__setitem__("extra", 1),
    "digest is not hex": lambda h: h.__setitem__("assignment_digest", "zz"),
    "kernels without objects": lambda h: h.__setitem__("objects", []),
    "object length is negative": lambda h: h["objects"][0].__setitem__(0, -5),
}


@pytest.mark.parametrize("what", list(BAD_HEADERS))
def test_bad_header_fields_are_rejected(stored, module, what, caplog):
    path, data = stored
    reencode(path, data, BAD_HEADERS[what])
    with pytest.raises(ValueError):
        decode(path)
    with caplog.at_level(logging.WARNING, logger="xlapy.cpu"):
        backend = load_and_run(path, module)
    assert backend.last_timings.path == "fresh" and backend.disk_cache.stats.corrupt == 1
    assert any("corrupt" in r.message for r in caplog.records)
    decode(path)         # rewritten, valid


# Well-typed headers that do not fit the stored module: loading fails -> recompile.
BAD_CONTENT = {
    "unknown instruction": lambda h: h["kernels"][0].__setitem__("instruction", "nope"),
    "unknown computation": lambda h: h["kernels"][0].__setitem__("computation", "nope"),
    "unknown symbol": lambda h: h["kernels"][0].__setitem__("name", "xk_not_there"),
    "more units than elements": lambda h: [k.__setitem__("units", 10 ** 9)
                                          for k in h["kernels"]],
    "another buffer assignment": lambda h: h.__setitem__("assignment_digest", "0" * 64),
    "a kernel for a parameter": lambda h: h["kernels"][0].__setitem__("instruction", "x"),
}


@pytest.mark.parametrize("what", list(BAD_CONTENT))
def test_entries_that_fail_to_load_are_removed_and_recompiled(stored, module, what):
    path, data = stored
    reencode(path, data, BAD_CONTENT[what])
    decode(path)           # passes the file checks
    backend = load_and_run(path, module)
    stats = backend.disk_cache.stats
    assert backend.last_timings.path == "fresh"
    assert (stats.hits, stats.misses, stats.corrupt, stats.stores) == (0, 1, 1, 1)
    assert path.read_bytes() == data                          # the fresh entry replaced it


def test_load_never_raises_on_arbitrary_bytes(tmp_path):
    disk = cache_mod.DiskCache(str(tmp_path), True)
    rng = np.random.default_rng(0)
    key = "a" * 64
    blobs = [b"", cache_mod.MAGIC, cache_mod.MAGIC + b"\xff" * 8,
             cache_mod.MAGIC + struct.pack("<Q", 2) + b"\0" * 32 + b"{}"]
    blobs += [cache_mod.MAGIC + rng.bytes(int(n)) for n in rng.integers(1, 200, 20)]
    for blob in blobs:
        disk.path(key).write_bytes(blob)
        assert disk.load(key) is None
        assert not disk.path(key).exists()
    assert disk.stats.corrupt == len(blobs)
