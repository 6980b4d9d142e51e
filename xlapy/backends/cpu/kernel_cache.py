"""The disk cache's entries for the backend's own generated routines (the convolution
kernels, the packed GEMMs): each one's object code under a key made like a module's.

A routine compiled once is loaded from ``XLAPY_CACHE_DIR``'s subdirectory for its kind in
every later process (``cache.py``'s format, trust checks and size bound), instead of being
compiled again the first time the process needs it. The key covers the routine's own
description (its symbol and whatever its emitter was given), the compiler's source, LLVM
and the host (:func:`~.cache.cache_key`), so a changed emitter or another CPU never reuses
stale code. ``XLAPY_DISABLE_CACHE=1`` turns these entries off with the rest of the cache.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any


def entry(subdir: str, description: str) -> tuple[Any, str]:
    """The disk cache of one kind of routine (``subdir`` of the cache directory) and the
    key of the routine that ``description`` names there."""
    from ...config import DebugOptions
    from .cache import DiskCache, cache_key, default_directory
    from .jit_engine import engine
    disk = DiskCache(os.path.join(default_directory(), subdir))
    return disk, cache_key(description, engine().host, DebugOptions())


def load(disk: Any, key: str, name: str) -> bytes | None:
    """The object code of routine ``name`` stored under ``key``, or None."""
    found = disk.load(key)
    if found is not None and len(found.objects) == 1 and found.kernels[0]["name"] == name:
        return found.objects[0]
    return None


def store(disk: Any, key: str, name: str, obj: bytes, kind: str, what: str,
          digest: str | None = None) -> None:
    """Keep the object code ``obj`` of routine ``name`` under ``key`` (``kind`` and
    ``what`` describe it in the entry's kernel table; ``digest``, a sha256 in hex, fills
    the field that holds a module's buffer-assignment digest: by default that of
    ``what``)."""
    from .cache import CacheEntry
    record = {"name": name, "computation": kind, "instruction": what, "units": 1, "cost": 0}
    digest = digest or hashlib.sha256(what.encode()).hexdigest()
    disk.store(key, CacheEntry("", [obj], [record], digest))


__all__ = ["entry", "load", "store"]
