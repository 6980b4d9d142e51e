"""The CPU backend's disk cache: optimized HLO text and object code per compiled module.

An entry is keyed by :func:`cache_key`: sha256 of the canonical HLO text of the module
given to ``compile`` (``canonical.py``: no metadata or debug tables, instructions and
computations renamed in a deterministic order, everything semantic kept -- so another
process that numbered its instructions differently, or an edit of an unrelated line of
the user's file, still hits), the xlapy version, a fingerprint of the compiler's own source
(passes, IR and this backend: a code change can never reuse stale code), llvmlite and
LLVM versions, the target triple, host CPU name and features, and every debug option
that is not about dumping. An entry holds the optimized HLO text (so a second process
skips the passes), the object code of its kernels, the kernel table (name, instruction,
units, cost) and a digest of the buffer assignment.

File format (one file ``<key>.xcache`` per entry)::

    b"XLAPYCPU3\\n" | u64 header length | sha256 of the header (32 bytes) | header JSON
                    | HLO text | object files

The header records the key, the kernel table, the assignment digest, the payload lengths
and their sha256; its own sha256 precedes it, so every byte of the file is checked (a
flipped bit in a kernel's ``units`` would otherwise run it over the wrong range). Every
header field is also checked for its type and range (:func:`decode`). A file that does
not parse, does not match its key, fails a checksum or a check is *corrupt*; so is an
entry the backend fails to load for any reason. A corrupt entry is logged, removed and
the module recompiled. Writes are atomic (temporary file + ``os.replace``).

Location: ``XLAPY_CACHE_DIR`` or ``~/.cache/xlapy``; ``XLAPY_DISABLE_CACHE=1`` (or
``CpuBackend(use_disk_cache=False)``) turns the cache off. Hits and misses are logged
at debug level on the logger ``xlapy.cpu``; :attr:`DiskCache.stats` counts them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ...config import DebugOptions, env_cache_dir, env_cache_disabled
from .jit_engine import HostTarget

log = logging.getLogger("xlapy.cpu")

MAGIC = b"XLAPYCPU3\n"
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
    """The key of a module's entry from its canonical text (``canonical.canonical_text``;
    see the module docstring)."""
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
    return env_cache_dir() or os.path.join(
        os.path.expanduser("~"), ".cache", "xlapy")


def _env_disabled() -> bool:
    return env_cache_disabled()


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
        except Exception as e:              # noqa: BLE001 - whatever is wrong: corrupt
            self.stats.misses += 1
            self._remove(path, f"{type(e).__name__}: {e}")
            return None
        self.stats.hits += 1
        log.debug("cpu cache hit %s", key[:16])
        return entry

    def discard(self, key: str, reason: str) -> None:
        """The entry :meth:`load` returned for ``key`` cannot be used (the backend failed
        to load it): count it as corrupt and a miss instead of a hit, and remove it."""
        self.stats.hits = max(0, self.stats.hits - 1)
        self.stats.misses += 1
        self._remove(self.path(key), reason)

    def _remove(self, path: Path, reason: str) -> None:
        self.stats.corrupt += 1
        log.warning("corrupt cpu cache file %s (%s); it is removed and the module "
                    "recompiled", path, reason)
        try:
            path.unlink()
        except OSError:
            pass

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
    return (MAGIC + struct.pack("<Q", len(header)) + hashlib.sha256(header).digest() + header
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


def decode(data: bytes, key: str) -> CacheEntry:
    """Parse and verify a cache file; ValueError when anything does not match: the magic,
    the header's checksum, its fields' types and ranges, the key, the payloads' lengths
    and checksums, the total length."""
    if not data.startswith(MAGIC):
        raise ValueError("bad magic")
    pos = len(MAGIC)
    if len(data) < pos + 8 + 32:
        raise ValueError("truncated header")
    (hlen,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    digest, pos = data[pos:pos + 32], pos + 32
    raw = data[pos:pos + hlen]
    if len(raw) != hlen or hashlib.sha256(raw).digest() != digest:
        raise ValueError("header checksum mismatch")
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
    if len({k["name"] for k in kernels}) != len(kernels) or bool(kernels) != bool(objects):
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
           "default_directory"]
