"""The CPU backend's disk cache: optimized HLO text and object code per compiled module.

An entry is keyed by :func:`cache_key`: sha256 of the canonical HLO text of the module
given to ``compile`` (``canonical.py``: no metadata or debug tables, instructions and
computations renamed in a deterministic order, everything semantic kept -- so another
process that numbered its instructions differently, or an edit of an unrelated line of
the user's file, still hits), the xlapy version, a fingerprint of the compiler's own source
(passes, IR and this backend: a code change can never reuse stale code), llvmlite and
LLVM versions, the target triple, host CPU name and features, every debug option that
is not about dumping, and the backend's kernel choices the pipeline follows (the bf16
dot kernel, for modules with bf16 dots: ``compiler.kernel_choices``). An entry holds the
optimized HLO text (so a second process skips the passes), the object code of its
kernels, the kernel table (name, instruction, units, cost) and a digest of the buffer
assignment.

File format (one file ``<key>.xcache`` per entry)::

    b"XLAPYCPU4\\n" | u64 header length | HMAC-SHA256(secret, magic + key + header)
                    | header JSON | HLO text | object files

The header records the key, the kernel table, the assignment digest, the payload lengths
and their sha256. The HMAC authenticates the header -- and through its digests every
byte of the file -- with the directory's secret key (``cache_files.py``: 32 random
bytes, readable only by this user), and it covers the entry's own key: an entry copied
under another key's file name, or written by anyone without the secret, fails it. Every
header field is also checked for its type and range (:func:`decode`). A file that does
not parse, does not match its key, fails the HMAC, a checksum or a check, or is no
regular file (a FIFO, a symbolic link) is *corrupt*; so is an entry the backend fails
to load for any reason. A corrupt entry is logged, removed and the module recompiled.
Writes are atomic (a fresh temporary file, then ``rename``).

Trust (the threat model is in ``docs/architecture.md``): the directory is created
``0700`` and refused (a warning, then compiling without the disk cache) when others can
write it, unless ``XLAPY_CACHE_SHARED`` says it is shared by its group; entries are read
without following links or blocking, up to ``XLAPY_CACHE_MAX_BYTES``. Size: after each
store the least recently used entries (by mtime, touched on every load) are removed
while the total exceeds ``XLAPY_CACHE_MAX_BYTES`` (``config.CacheSettings``).

Location: ``XLAPY_CACHE_DIR`` or ``~/.cache/xlapy``; ``XLAPY_DISABLE_CACHE=1`` (or
``CpuBackend(use_disk_cache=False)``) turns the cache off. Hits and misses are logged
at debug level on the logger ``xlapy.cpu``; :attr:`DiskCache.stats` counts them.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import hmac
import json
import logging
import math
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ...config import DebugOptions, cache_settings, env_cache_dir, env_cache_disabled
from . import cache_files as files
from .cache_files import SUFFIX
from .jit_engine import HostTarget

log = logging.getLogger("xlapy.cpu")

MAGIC = b"XLAPYCPU4\n"
MAC_BYTES = 32
_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """sha256 over the source of the packages that decide the generated code."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = Path(__file__).resolve().parents[2]          # the xlapy package
        h = hashlib.sha256()
        for sub in ("hlo", "passes", "backends/cpu", "backends/interpreter"):
            for path in sorted((root / sub).rglob("*.py")):
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def cache_key(hlo_text: str, host: HostTarget, options: DebugOptions,
              choices: str = "") -> str:
    """The key of a module's entry from its canonical text (``canonical.canonical_text``),
    and ``choices``, the kernel choices its compilation depends on (module docstring)."""
    flags = {k: v for k, v in dataclasses.asdict(options).items()
             if not (k.startswith("xla_dump") or k == "xla_enable_dumping")}
    h = hashlib.sha256()
    for part in (MAGIC.decode(), __version__, code_fingerprint(), host.llvmlite_version,
                 host.llvm_version, host.triple, host.cpu, host.features,
                 json.dumps(flags, sort_keys=True, default=str), choices, hlo_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@dataclass
class CacheEntry:
    """What one compiled module leaves in the cache."""

    optimized_hlo: str
    objects: list[bytes]
    kernels: list[dict[str, Any]] = field(default_factory=list)
    assignment_digest: str = ""


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    stores: int = 0
    evictions: int = 0
    refused: int = 0          # operations skipped: the directory is not trusted


def default_directory() -> str:
    return env_cache_dir() or os.path.join(
        os.path.expanduser("~"), ".cache", "xlapy")


REMEMBERED_EVICTIONS = 4096     # evicted keys remembered to explain a later miss
RESCAN_STORES = 64             # stores between directory scans that bound its size


class DiskCache:
    """Reads and writes cache entries in one directory (see the module docstring).

    Every operation opens and checks the directory (``cache_files.CacheDirectory``); an
    untrusted directory is warned about once and the operation does nothing."""

    def __init__(self, directory: str | None = None, enabled: bool | None = None) -> None:
        self.directory = Path(directory or default_directory())
        self.enabled = (not env_cache_disabled()) if enabled is None else enabled
        self.stats = CacheStats()
        self._evicted: collections.OrderedDict[str, None] = collections.OrderedDict()
        # bytes in the directory as of the last scan plus this process's stores since; the
        # first store scans (the count starts at the rescan interval)
        self._bytes = 0
        self._stores_since_scan = RESCAN_STORES

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def _open(self, even_disabled: bool = False) -> tuple[int, bytes, bool] | None:
        """(directory descriptor, secret, shared), or None (disabled, refused or
        unavailable)."""
        if not (self.enabled or even_disabled):
            return None
        shared = cache_settings().shared_directory
        try:
            fd, secret = files.CacheDirectory(self.directory, shared).open()
        except files.Refused as e:
            self.stats.refused += 1
            files.warn_once(self.directory, str(e))
            return None
        except OSError as e:
            self.stats.refused += 1
            files.warn_once(self.directory, f"cannot open it: {e}")
            return None
        return fd, secret, shared

    @property
    def secret(self) -> bytes | None:
        """The key entries of this directory are authenticated with (None: refused)."""
        opened = self._open(even_disabled=True)
        if opened is None:
            return None
        os.close(opened[0])
        return opened[1]

    def load(self, key: str) -> CacheEntry | None:
        """The entry for ``key``, or None (missing, disabled, refused or corrupt)."""
        opened = self._open()
        if opened is None:
            return None
        dfd, secret, shared = opened
        name = f"{key}{SUFFIX}"
        try:
            try:
                data = files.read_entry(dfd, name, cache_settings().disk_max_bytes, shared)
            except FileNotFoundError:
                self.stats.misses += 1
                if key in self._evicted:
                    log.info("cpu cache miss %s: its entry was evicted by the size bound "
                             "(XLAPY_CACHE_MAX_BYTES)", key[:16])
                else:
                    log.debug("cpu cache miss %s", key[:16])
                return None
            except (ValueError, OSError) as e:
                self.stats.misses += 1
                self._remove(dfd, name, f"{type(e).__name__}: {e}")
                return None
            try:
                entry = decode(data, key, secret)
            except Exception as e:              # noqa: BLE001 - whatever is wrong: corrupt
                self.stats.misses += 1
                self._remove(dfd, name, f"{type(e).__name__}: {e}")
                return None
        finally:
            os.close(dfd)
        self.stats.hits += 1
        log.debug("cpu cache hit %s", key[:16])
        return entry

    def discard(self, key: str, reason: str) -> None:
        """The entry :meth:`load` returned for ``key`` cannot be used (the backend failed
        to load it): count it as corrupt and a miss instead of a hit, and remove it."""
        self.stats.hits = max(0, self.stats.hits - 1)
        self.stats.misses += 1
        opened = self._open()
        if opened is not None:
            try:
                self._remove(opened[0], f"{key}{SUFFIX}", reason)
            finally:
                os.close(opened[0])

    def _remove(self, dfd: int, name: str, reason: str) -> None:
        self.stats.corrupt += 1
        log.warning("corrupt cpu cache file %s (%s); it is removed and the module "
                    "recompiled", self.directory / name, reason)
        files.remove(dfd, name)

    def store(self, key: str, entry: CacheEntry) -> Path | None:
        """Write ``entry`` atomically, then evict least recently used entries while the
        directory holds more than ``XLAPY_CACHE_MAX_BYTES``; failures are logged, never
        raised."""
        opened = self._open()
        if opened is None:
            return None
        dfd, secret, shared = opened
        path, name = self.path(key), f"{key}{SUFFIX}"
        limit = cache_settings().disk_max_bytes
        try:
            data = encode(entry, key, secret)
            if len(data) > limit:
                log.debug("cpu cache entry %s not stored: %d bytes, more than "
                          "XLAPY_CACHE_MAX_BYTES=%d", key[:16], len(data), limit)
                return None
            files.write_entry(dfd, name, data, shared)
            # The directory is scanned (O(entries)) only when this process's running total
            # may pass the bound, or every RESCAN_STORES stores for other processes' writes.
            self._stores_since_scan += 1
            self._bytes += len(data)
            if self._bytes > limit or self._stores_since_scan >= RESCAN_STORES:
                gone_names, self._bytes = files.evict_counting(dfd, limit, keep=name)
                self._stores_since_scan = 0
            else:
                gone_names = []
            for gone in gone_names:
                self.stats.evictions += 1
                self._evicted[gone[:-len(SUFFIX)]] = None
                log.debug("cpu cache entry %s evicted (XLAPY_CACHE_MAX_BYTES=%d)", gone, limit)
            while len(self._evicted) > REMEMBERED_EVICTIONS:
                self._evicted.popitem(last=False)
        except OSError as e:
            log.warning("cannot write cpu cache file %s: %s", path, e)
            return None
        finally:
            os.close(dfd)
        self.stats.stores += 1
        return path


def mac(secret: bytes, key: str, header: bytes) -> bytes:
    """The HMAC-SHA256 of an entry: over the magic, the entry's key and its header."""
    return hmac.new(secret, MAGIC + key.encode() + b"\0" + header, hashlib.sha256).digest()


def encode(entry: CacheEntry, key: str, secret: bytes) -> bytes:
    """The file contents of ``entry`` under ``key``, authenticated with ``secret``."""
    hlo = entry.optimized_hlo.encode()
    header = json.dumps({
        "key": key, "kernels": entry.kernels, "assignment_digest": entry.assignment_digest,
        "hlo": [len(hlo), hashlib.sha256(hlo).hexdigest()],
        "objects": [[len(o), hashlib.sha256(o).hexdigest()] for o in entry.objects],
    }).encode()
    return (MAGIC + struct.pack("<Q", len(header)) + mac(secret, key, header) + header
            + hlo + b"".join(entry.objects))


_HEX64 = re.compile(r"[0-9a-f]{64}")
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_KEYS = {"key", "kernels", "assignment_digest", "hlo", "objects"}
_KERNEL_KEYS = {"name", "computation", "instruction", "units", "cost"}
MAX_UNITS = 1 << 48


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _payload_entry(v: Any, what: str) -> tuple[int, str]:
    if not (isinstance(v, list) and len(v) == 2 and _is_int(v[0]) and v[0] >= 0
            and isinstance(v[1], str) and _HEX64.fullmatch(v[1])):
        raise ValueError(f"bad {what} entry {v!r:.80}")
    return v[0], v[1]


def _check_kernel(k: Any) -> None:
    if not isinstance(k, dict) or set(k) != _KERNEL_KEYS:
        raise ValueError(f"bad kernel record {k!r:.80}")
    if not (isinstance(k["name"], str) and _SYMBOL.fullmatch(k["name"])):
        raise ValueError(f"bad kernel name {k['name']!r:.80}")
    for f in ("computation", "instruction"):
        if not (isinstance(k[f], str) and k[f]):
            raise ValueError(f"bad kernel {f} {k[f]!r:.80}")
    if not (_is_int(k["units"]) and 0 <= k["units"] <= MAX_UNITS):
        raise ValueError(f"bad kernel units {k['units']!r:.80}")
    cost = k["cost"]
    if not ((_is_int(cost) or isinstance(cost, float)) and math.isfinite(cost) and cost >= 0):
        raise ValueError(f"bad kernel cost {cost!r:.80}")


def decode(data: bytes, key: str, secret: bytes) -> CacheEntry:
    """Parse and verify a cache file; ValueError when anything does not match: the magic,
    the HMAC (made with ``secret`` over the entry's ``key`` and header), the header's
    fields' types and ranges, the key, the payloads' lengths and checksums, the total
    length."""
    if not data.startswith(MAGIC):
        raise ValueError("bad magic")
    pos = len(MAGIC)
    if len(data) < pos + 8 + MAC_BYTES:
        raise ValueError("truncated header")
    (hlen,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    digest, pos = data[pos:pos + MAC_BYTES], pos + MAC_BYTES
    raw = data[pos:pos + hlen]
    if len(raw) != hlen or not hmac.compare_digest(mac(secret, key, raw), digest):
        raise ValueError("authentication failed: the entry was not written under this "
                         "key with this cache's secret")
    pos += hlen
    header = json.loads(raw.decode())
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        raise ValueError("bad header fields")
    if header["key"] != key:
        raise ValueError("key mismatch")
    if not (isinstance(header["assignment_digest"], str)
            and _HEX64.fullmatch(header["assignment_digest"])):
        raise ValueError("bad assignment digest")
    kernels, objects = header["kernels"], header["objects"]
    if not isinstance(kernels, list) or not isinstance(objects, list):
        raise ValueError("bad kernel or object table")
    for k in kernels:
        _check_kernel(k)
    # one kernel per instruction (equal kernels may share a symbol name)
    if len({(k["computation"], k["instruction"]) for k in kernels}) != len(kernels) or \
            bool(kernels) != bool(objects):
        raise ValueError("bad kernel table")
    payloads = []
    for size, sha in [_payload_entry(header["hlo"], "hlo")] + \
            [_payload_entry(o, "object") for o in objects]:
        part = data[pos:pos + size]
        pos += size
        if len(part) != size or hashlib.sha256(part).hexdigest() != sha:
            raise ValueError("checksum mismatch")
        payloads.append(bytes(part))
    if pos != len(data):
        raise ValueError("length mismatch")
    return CacheEntry(payloads[0].decode(), payloads[1:], kernels, header["assignment_digest"])


__all__ = ["CacheEntry", "CacheStats", "DiskCache", "cache_key", "code_fingerprint",
           "decode", "default_directory", "encode"]
