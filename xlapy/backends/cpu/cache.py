"""The CPU backend's disk cache: optimized HLO text and object code per compiled module.

An entry is keyed by :func:`cache_key`: sha256 of the canonical HLO text of the module
given to ``compile``, the xlapy version, a fingerprint of the compiler's own source
(passes, IR and this backend: a code change can never reuse stale code), llvmlite and
LLVM versions, the target triple, host CPU name and features, and every debug option
that is not about dumping. An entry holds the optimized HLO text (so a second process
skips the passes), the object code of its kernels, the kernel table (name, instruction,
units, cost) and a digest of the buffer assignment.

File format (one file ``<key>.xcache`` per entry)::

    b"XLAPYCPU2\\n" | u64 header length | header JSON | HLO text | object files

The header records the key, the payload lengths and their sha256. A file that does not
parse, does not match its key or fails a checksum is *corrupt*: it is logged, removed and
the module is recompiled. Writes are atomic (temporary file + ``os.replace``).

Location: ``XLAPY_CACHE_DIR`` or ``~/.cache/xlapy``; ``XLAPY_DISABLE_CACHE=1`` (or
``CpuBackend(use_disk_cache=False)``) turns the cache off. Hits and misses are logged
at debug level on the logger ``xlapy.cpu``; :attr:`DiskCache.stats` counts them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ...config import DebugOptions
from .jit_engine import HostTarget

log = logging.getLogger("xlapy.cpu")

MAGIC = b"XLAPYCPU2\n"
SUFFIX = ".xcache"
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


def cache_key(hlo_text: str, host: HostTarget, options: DebugOptions) -> str:
    """The key of a module's entry (see the module docstring)."""
    flags = {k: v for k, v in dataclasses.asdict(options).items()
             if not (k.startswith("xla_dump") or k == "xla_enable_dumping")}
    h = hashlib.sha256()
    for part in (MAGIC.decode(), __version__, code_fingerprint(), host.llvmlite_version,
                 host.llvm_version, host.triple, host.cpu, host.features,
                 json.dumps(flags, sort_keys=True, default=str), hlo_text):
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


def default_directory() -> str:
    return os.environ.get("XLAPY_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "xlapy")


def _env_disabled() -> bool:
    return os.environ.get("XLAPY_DISABLE_CACHE", "").strip().lower() in ("1", "true", "yes")


class DiskCache:
    """Reads and writes cache entries in one directory (see the module docstring)."""

    def __init__(self, directory: str | None = None, enabled: bool | None = None) -> None:
        self.directory = Path(directory or default_directory())
        self.enabled = (not _env_disabled()) if enabled is None else enabled
        self.stats = CacheStats()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def load(self, key: str) -> CacheEntry | None:
        """The entry for ``key``, or None (missing, disabled or corrupt)."""
        if not self.enabled:
            return None
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.stats.misses += 1
            log.debug("cpu cache miss %s", key[:16])
            return None
        except OSError as e:
            log.warning("cannot read cpu cache file %s: %s", path, e)
            self.stats.misses += 1
            return None
        try:
            entry = decode(data, key)
        except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as e:
            self.stats.corrupt += 1
            self.stats.misses += 1
            log.warning("corrupt cpu cache file %s (%s); it is removed and the module "
                        "recompiled", path, e)
            try:
                path.unlink()
            except OSError:
                pass
            return None
        self.stats.hits += 1
        log.debug("cpu cache hit %s", key[:16])
        return entry

    def store(self, key: str, entry: CacheEntry) -> Path | None:
        """Write ``entry`` atomically; failures are logged, never raised."""
        if not self.enabled:
            return None
        path = self.path(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(encode(entry, key))
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            log.warning("cannot write cpu cache file %s: %s", path, e)
            return None
        self.stats.stores += 1
        return path


def encode(entry: CacheEntry, key: str) -> bytes:
    hlo = entry.optimized_hlo.encode()
    header = json.dumps({
        "key": key, "kernels": entry.kernels, "assignment_digest": entry.assignment_digest,
        "hlo": [len(hlo), hashlib.sha256(hlo).hexdigest()],
        "objects": [[len(o), hashlib.sha256(o).hexdigest()] for o in entry.objects],
    }).encode()
    return MAGIC + struct.pack("<Q", len(header)) + header + hlo + b"".join(entry.objects)


def decode(data: bytes, key: str) -> CacheEntry:
    """Parse and verify a cache file; ValueError when anything does not match."""
    if not data.startswith(MAGIC):
        raise ValueError("bad magic")
    pos = len(MAGIC)
    (hlen,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    header = json.loads(data[pos:pos + hlen].decode())
    pos += hlen
    if header["key"] != key:
        raise ValueError("key mismatch")
    payloads = []
    for size, digest in [header["hlo"]] + list(header["objects"]):
        part = data[pos:pos + int(size)]
        pos += int(size)
        if len(part) != size or hashlib.sha256(part).hexdigest() != digest:
            raise ValueError("checksum mismatch")
        payloads.append(bytes(part))
    if pos != len(data):
        raise ValueError("length mismatch")
    kernels = header["kernels"]
    if not isinstance(kernels, list):
        raise ValueError("bad kernel table")
    return CacheEntry(payloads[0].decode(), payloads[1:], kernels,
                      str(header["assignment_digest"]))


__all__ = ["CacheEntry", "CacheStats", "DiskCache", "cache_key", "code_fingerprint",
           "default_directory"]
