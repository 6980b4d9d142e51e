"""The jit cache: each jitted function's compiled signatures, bounded (LRU).

A :class:`JitCache` maps a call's key to its compiled entry, like a dict, with two
bounds from :func:`xlapy.config.cache_settings`: at most ``jit_per_function`` entries
per jitted function (``XLAPY_JIT_CACHE_PER_FUNCTION``) and ``jit_global`` over every
live jitted function of the process (``XLAPY_JIT_CACHE_GLOBAL``). Inserting past a
bound evicts the least recently used entry (of this function, or of any function for
the global bound); the evicted entry's executable dies with it once nothing else holds
it, which releases its native code (``backends/cpu/jit_engine.py``).

Recency is a global counter: every lookup through :meth:`JitCache.get` and every call
that finds its entry on jit's fast path (``entry.used = next(CLOCK)``) stamps the
entry, so eviction picks the smallest stamp. An evicted key is remembered (a bounded
number of them) so that its next compile says why it happened
(:meth:`JitCache.eviction_reason`).
"""
from __future__ import annotations

import collections
import itertools
import threading
import weakref
from typing import Any, Callable

from ..config import cache_settings

CLOCK = itertools.count(1)          # recency stamps (``entry.used``)
REMEMBERED_PER_FUNCTION = 256       # evicted keys remembered per function
_CACHES: "weakref.WeakSet[JitCache]" = weakref.WeakSet()
_LOCK = threading.RLock()


class JitCache:
    """One jitted function's entries (objects with a ``used`` attribute), LRU-bounded.

    ``on_evict(key, entry)``, a method of the owner (held weakly: the owner holds the
    cache), is called outside the cache's lock for every entry evicted by a bound, so
    the owner can drop other references to it (jit's fast-path tables).
    """

    def __init__(self, on_evict: Callable[[Any, Any], None]) -> None:
        self._entries: dict[Any, Any] = {}
        self._evicted: collections.OrderedDict[Any, str] = collections.OrderedDict()
        self.evictions = 0
        self._on_evict = weakref.WeakMethod(on_evict)              # type: ignore[arg-type]
        with _LOCK:
            _CACHES.add(self)

    # ----- dict-like
    def get(self, key: Any) -> Any:
        """The entry for ``key`` (stamped as used now), or None."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.used = next(CLOCK)
        return entry

    def __contains__(self, key: Any) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> list[Any]:
        return list(self._entries.values())

    def __setitem__(self, key: Any, entry: Any) -> None:
        """Insert ``entry`` (stamped as used now), then evict past the bounds."""
        entry.used = next(CLOCK)
        settings = cache_settings()
        evicted: list[tuple[JitCache, Any, Any]] = []
        with _LOCK:
            self._entries[key] = entry
            self._evicted.pop(key, None)
            while len(self._entries) > settings.jit_per_function:
                evicted.append(self._evict_oldest(
                    f"per-function limit XLAPY_JIT_CACHE_PER_FUNCTION="
                    f"{settings.jit_per_function}"))
            total = sum(len(c._entries) for c in _CACHES)
            while total > settings.jit_global:
                victim = min((c for c in _CACHES if c._entries), key=JitCache._oldest_stamp)
                evicted.append(victim._evict_oldest(
                    f"global limit XLAPY_JIT_CACHE_GLOBAL={settings.jit_global}"))
                total -= 1
        for cache, k, e in evicted:
            callback = cache._on_evict()
            if callback is not None:
                callback(k, e)

    def clear(self) -> None:
        """Forget every entry (and which keys were evicted)."""
        with _LOCK:
            self._entries.clear()
            self._evicted.clear()

    # ----- eviction
    def eviction_reason(self, key: Any) -> str | None:
        """Why ``key``'s entry is gone, if a bound evicted it (the limit's name)."""
        return self._evicted.get(key)

    def _oldest_stamp(self) -> int:
        return min(e.used for e in self._entries.values())

    def _evict_oldest(self, reason: str) -> tuple["JitCache", Any, Any]:
        key = min(self._entries, key=lambda k: self._entries[k].used)
        entry = self._entries.pop(key)
        self.evictions += 1
        self._evicted[key] = reason
        while len(self._evicted) > REMEMBERED_PER_FUNCTION:
            self._evicted.popitem(last=False)
        return self, key, entry


def total_entries() -> int:
    """Entries held by every live jitted function's cache."""
    with _LOCK:
        return sum(len(c) for c in _CACHES)


__all__ = ["CLOCK", "JitCache", "total_entries"]
