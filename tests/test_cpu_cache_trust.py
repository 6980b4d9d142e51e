"""A disk cache that trusts no one (issue 20, item 5), each defect with its input:

- a forged entry (object code calling ``puts`` with an attacker's text, under the key
  anyone can compute) is rejected by the HMAC and recompiled; so is a valid entry copied
  under another key's file name;
- a world-writable directory, a group-writable one and one owned by another user are
  refused with a warning (the module is compiled without the disk cache), unless
  ``XLAPY_CACHE_SHARED`` accepts the group's directory;
- an entry that is a FIFO or a symbolic link to ``/dev/zero`` does not hang;
- the key file is ``0600``, made once, refused when others can read it or it is a link;
- the size bound evicts the least recently used entries and says so on the next miss.
"""
from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from llvmlite import ir

from xlapy.hlo import parse_module

cpu = pytest.importorskip("xlapy.backends.cpu")
from xlapy.backends.cpu import cache as cache_mod            # noqa: E402
from xlapy.backends.cpu import cache_files                   # noqa: E402
from xlapy.backends.cpu.compiler import assignment_digest    # noqa: E402
from xlapy.backends.cpu.jit_engine import engine             # noqa: E402
from xlapy.passes.buffer_assignment import assign_buffers    # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

VICTIM = """
HloModule victim
ENTRY main {
  x = f32[64] parameter(0)
  ROOT t = f32[64] tanh(x)
}
"""
OTHER = """
HloModule other
ENTRY main {
  x = f32[64] parameter(0)
  ROOT t = f32[64] exponential(x)
}
"""
ATTACKER_TEXT = "ATTACKER TEXT 9f3c"


def run(backend, text):
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    out = backend.compile(parse_module(text)).execute([x])
    want = np.tanh(x) if "tanh" in text else np.exp(x)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-7)
    return backend


def forged_entry(text: str) -> tuple[str, cache_mod.CacheEntry]:
    """What an attacker can build without the secret: the victim's key (computable by
    anyone) and an entry whose only kernel calls ``puts`` with the attacker's text."""
    clean = cpu.CpuBackend(use_disk_cache=False)
    key = clean.cache_key(parse_module(text))
    optimized = clean.compile(parse_module(text)).module.to_text()
    opt_module = parse_module(optimized)
    root = opt_module.entry.root
    m = engine().new_module("forged")
    i8p = ir.IntType(8).as_pointer()
    name = "xk_forged"
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), ir.IntType(64),
                                                         ir.IntType(64)]), name)
    puts = ir.Function(m, ir.FunctionType(ir.IntType(32), [i8p]), "puts")
    msg = bytearray(ATTACKER_TEXT.encode() + b"\0")
    g = ir.GlobalVariable(m, ir.ArrayType(ir.IntType(8), len(msg)), "msg")
    g.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(msg)), msg)
    b = ir.IRBuilder(fn.append_basic_block())
    b.call(puts, [b.bitcast(g, i8p)])
    b.ret_void()
    objects = engine().compile([m], [name]).objects
    kernel = {"name": name, "computation": root.parent.name, "instruction": root.name,
              "units": 64, "cost": 1.0}
    return key, cache_mod.CacheEntry(optimized, objects, [kernel],
                                     assignment_digest(assign_buffers(opt_module)))


@pytest.mark.parametrize("secret", ["random", "plain sha256 era"])
def test_forged_entry_calling_puts_is_rejected(tmp_path, capfd, caplog, secret):
    key, entry = forged_entry(VICTIM)
    backend = cpu.CpuBackend(cache_dir=str(tmp_path))
    assert backend.disk_cache.secret is not None                 # the directory has its key
    forged = cache_mod.encode(entry, key, os.urandom(32) if secret == "random" else b"")
    backend.disk_cache.path(key).write_bytes(forged)
    with caplog.at_level(logging.WARNING, logger="xlapy.cpu"):
        run(backend, VICTIM)
    assert ATTACKER_TEXT not in capfd.readouterr().out
    assert backend.last_timings.path == "fresh" and backend.disk_cache.stats.corrupt == 1
    assert any("authentication failed" in r.message for r in caplog.records)


def test_the_same_entry_with_the_secret_would_run(tmp_path, capfd):
    """The forging above is a real attack: signed with the directory's secret (what only
    this user can do) the entry loads and its code runs."""
    key, entry = forged_entry(VICTIM)
    disk = cache_mod.DiskCache(str(tmp_path), True)
    disk.path(key).write_bytes(cache_mod.encode(entry, key, disk.secret))
    exe = cpu.CpuBackend(cache_dir=str(tmp_path)).compile(parse_module(VICTIM))
    exe.execute([np.zeros(64, np.float32)])
    assert ATTACKER_TEXT in capfd.readouterr().out


def test_valid_entry_under_another_keys_name_is_rejected(tmp_path):
    run(cpu.CpuBackend(cache_dir=str(tmp_path)), OTHER)
    (other_path,) = tmp_path.glob("*.xcache")
    victim_key = cpu.CpuBackend(use_disk_cache=False).cache_key(parse_module(VICTIM))
    (tmp_path / f"{victim_key}.xcache").write_bytes(other_path.read_bytes())
    backend = run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    assert backend.last_timings.path == "fresh" and backend.disk_cache.stats.corrupt == 1


def refused(tmp_path, caplog, expect_in_warning: str, monkeypatch=None, shared=False):
    if monkeypatch is not None and shared:
        monkeypatch.setenv("XLAPY_CACHE_SHARED", "1")
    with caplog.at_level(logging.WARNING, logger="xlapy.cpu"):
        backend = run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    stats = backend.disk_cache.stats
    assert stats.stores == 0 and stats.hits == 0 and stats.refused >= 1
    assert not list(tmp_path.glob("*.xcache"))
    assert any(expect_in_warning in r.message and "compiling without it" in r.message
               for r in caplog.records), [r.message for r in caplog.records]


def test_world_writable_directory_is_refused_even_when_shared(tmp_path, caplog, monkeypatch):
    cache_files._WARNED.clear()
    tmp_path.chmod(0o777)
    refused(tmp_path, caplog, "world-writable (mode 0777)")
    cache_files._WARNED.clear()
    refused(tmp_path, caplog, "world-writable", monkeypatch, shared=True)


def test_group_writable_directory_is_refused_unless_shared(tmp_path, caplog, monkeypatch):
    cache_files._WARNED.clear()
    tmp_path.chmod(0o770)
    refused(tmp_path, caplog, "group-writable (mode 0770)")
    monkeypatch.setenv("XLAPY_CACHE_SHARED", "1")
    backend = run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    assert backend.disk_cache.stats.stores == 1
    key_mode = stat.S_IMODE((tmp_path / cache_files.KEY_NAME).stat().st_mode)
    assert key_mode == 0o640                    # the group may read the key, nobody else
    assert run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM).last_timings.path == "disk"


def test_directory_of_another_user_is_refused(tmp_path, caplog, monkeypatch):
    cache_files._WARNED.clear()
    monkeypatch.setattr(os, "geteuid", lambda: tmp_path.stat().st_uid + 4242)
    refused(tmp_path, caplog, "not by this user")


def test_new_directory_is_private_and_the_key_0600(tmp_path):
    where = tmp_path / "a" / "cache"
    run(cpu.CpuBackend(cache_dir=str(where)), VICTIM)
    assert stat.S_IMODE(where.stat().st_mode) & 0o077 == 0
    key = where / cache_files.KEY_NAME
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    first = key.read_bytes()
    run(cpu.CpuBackend(cache_dir=str(where)), VICTIM)
    assert key.read_bytes() == first                     # made once, then reused


@pytest.mark.parametrize("bad", ["readable by others", "symbolic link", "wrong size"])
def test_untrusted_key_file_refuses_the_directory(tmp_path, caplog, bad):
    cache_files._WARNED.clear()
    key = tmp_path / cache_files.KEY_NAME
    if bad == "readable by others":
        key.write_bytes(os.urandom(32))
        key.chmod(0o644)
        expect = "mode 0644"
    elif bad == "symbolic link":
        (tmp_path / "elsewhere").write_bytes(os.urandom(32))
        key.symlink_to(tmp_path / "elsewhere")
        expect = "symbolic link"
    else:
        key.write_bytes(b"short")
        key.chmod(0o600)
        expect = "5 bytes"
    refused(tmp_path, caplog, expect)


def test_key_creation_race_keeps_the_first_key(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        cache_files._create_key(fd, False)
        first = (tmp_path / cache_files.KEY_NAME).read_bytes()
        cache_files._create_key(fd, False)           # a second process losing the race
    finally:
        os.close(fd)
    assert (tmp_path / cache_files.KEY_NAME).read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache_files.KEY_NAME]


HANG = textwrap.dedent("""
    import os, sys
    import numpy as np
    from xlapy.hlo import parse_module
    from xlapy.backends.cpu import CpuBackend
    d, kind, text = sys.argv[1], sys.argv[2], sys.argv[3]
    backend = CpuBackend(cache_dir=d)
    path = backend.disk_cache.path(backend.cache_key(parse_module(text)))
    backend.disk_cache.secret                       # creates the directory and its key
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    out = backend.compile(parse_module(text)).execute([np.zeros(64, np.float32)])
    print("ok", float(out[0]), backend.disk_cache.stats.corrupt, os.path.lexists(path),
          os.path.isfile(path) and not os.path.islink(path))
""")


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero"])
def test_fifo_or_device_link_entry_does_not_hang(tmp_path, kind):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("XLAPY_DISABLE_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", HANG, str(tmp_path / "c"), kind.split()[0],
                           VICTIM], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # corrupt once, replaced by a regular file holding the fresh entry
    assert proc.stdout.split() == ["ok", "0.0", "1", "True", "True"], proc.stdout


def test_entry_larger_than_the_bound_is_not_read(tmp_path, monkeypatch):
    run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    (path,) = tmp_path.glob("*.xcache")
    monkeypatch.setenv("XLAPY_CACHE_MAX_BYTES", str(path.stat().st_size - 1))
    backend = run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    assert backend.last_timings.path == "fresh" and backend.disk_cache.stats.corrupt == 1
    assert not list(tmp_path.glob("*.xcache"))           # too large to be stored either


def programs(n: int) -> list[str]:
    """``x * (k + 2)`` for k < n: n modules with distinct keys."""
    return [f"""
HloModule scale
ENTRY main {{
  x = f32[64] parameter(0)
  k = f32[] constant({k + 2})
  c = f32[64] broadcast(k), dimensions={{}}
  ROOT t = f32[64] multiply(x, c)
}}
""" for k in range(n)]


def test_size_bound_evicts_least_recently_used(tmp_path, monkeypatch, caplog):
    texts = programs(4)
    x = np.ones(64, np.float32)
    backend = cpu.CpuBackend(cache_dir=str(tmp_path))
    for t in texts[:2]:
        backend.compile(parse_module(t)).execute([x])
    sizes = [p.stat().st_size for p in tmp_path.glob("*.xcache")]
    monkeypatch.setenv("XLAPY_CACHE_MAX_BYTES", str(int(max(sizes) * 2.5)))
    keys = [backend.cache_key(parse_module(t)) for t in texts]
    old = os.stat(backend.disk_cache.path(keys[0])).st_mtime_ns - 10**9
    for k in keys[:2]:                                   # both older than what comes
        os.utime(backend.disk_cache.path(k), ns=(old, old))
    assert cpu.CpuBackend(cache_dir=str(tmp_path)).disk_cache.load(keys[0]) is not None
    backend.compile(parse_module(texts[2])).execute([x])        # a store: over the bound
    assert not backend.disk_cache.path(keys[1]).exists()        # least recently used
    assert backend.disk_cache.path(keys[0]).exists()            # loaded (touched) since
    assert backend.disk_cache.stats.evictions == 1
    fresh = cpu.CpuBackend(cache_dir=str(tmp_path))
    fresh.disk_cache._evicted = backend.disk_cache._evicted
    with caplog.at_level(logging.INFO, logger="xlapy.cpu"):
        out = fresh.compile(parse_module(texts[1])).execute([x])
    np.testing.assert_array_equal(out, x * 3)
    assert any("evicted by the size bound" in r.message for r in caplog.records)
    total = sum(p.stat().st_size for p in tmp_path.glob("*.xcache"))
    assert total <= max(sizes) * 2.5


def test_shared_cache_loads_another_members_entry_it_may_not_touch(tmp_path, monkeypatch):
    """In a shared directory an entry written by another member is ``0640``: readable, but
    its times are not ours to set (``utime`` fails with EACCES). The load is a hit and the
    entry stays; it used to count as corrupt and be removed for every other member."""
    monkeypatch.setenv("XLAPY_CACHE_SHARED", "1")
    tmp_path.chmod(0o770)
    writer = run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    key = writer.cache_key(parse_module(VICTIM))

    def not_owner(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(cache_files.os, "utime", not_owner)
    reader = run(cpu.CpuBackend(cache_dir=str(tmp_path)), VICTIM)
    assert reader.last_timings.path == "disk"
    assert reader.disk_cache.stats.corrupt == 0
    assert writer.disk_cache.path(key).exists()


def test_eviction_passes_over_an_entry_it_cannot_remove(tmp_path, monkeypatch):
    """In a shared directory with the sticky bit another member's entry cannot be
    unlinked: eviction goes on to the next least recently used entry instead of counting
    the stuck one as removed (and stopping over the bound)."""
    for k, name in enumerate(["theirs", "old", "new"]):
        path = tmp_path / f"{name}{cache_files.SUFFIX}"
        path.write_bytes(b"x" * 100)
        os.utime(path, ns=(10**18 + k * 10**9,) * 2)       # theirs is the oldest
    real_unlink = os.unlink

    def sticky(name, *args, **kwargs):
        if str(name).startswith("theirs"):
            raise PermissionError(1, "Operation not permitted")
        return real_unlink(name, *args, **kwargs)
    monkeypatch.setattr(cache_files.os, "unlink", sticky)
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        removed = cache_files.evict(dfd, 200, keep=f"new{cache_files.SUFFIX}")
    finally:
        os.close(dfd)
    assert removed == [f"old{cache_files.SUFFIX}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"new{cache_files.SUFFIX}", f"theirs{cache_files.SUFFIX}"]
