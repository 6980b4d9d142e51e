"""Per-thread state for the front end (layer 0: nothing else in xlapy is imported).

Tracing state -- the trace stack, the active autodiff tapes, Keras's batch mask and call
depth, TF's distribution context -- belongs to the thread that created it: a thread
tracing a ``jit`` function must not see another thread's trace, and an eager op run
by one thread must never be recorded into another thread's module. Each such
variable is a :class:`PerThreadList`: it behaves like the module-level list it
replaced (``append``, ``pop``, ``remove``, ``clear``, indexing, slice assignment,
``in``, iteration, truth value), but every thread sees its own contents, which start
as a copy of ``initial``.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator


class PerThreadList(threading.local):
    """A list whose contents are private to each thread (see the module docstring).

    ``items`` is the calling thread's list itself, for hot paths that want to skip the
    method call (``stack.items[-1] if stack.items else None``)."""

    def __init__(self, initial: Iterable[Any] = ()) -> None:
        self.items: list[Any] = list(initial)

    def append(self, x: Any) -> None:
        self.items.append(x)

    @contextmanager
    def pushed(self, x: Any) -> Iterator[Any]:
        """``x`` is the last item of this thread's list within the block (a stack)."""
        self.items.append(x)
        try:
            yield x
        finally:
            self.items.pop()

    def pop(self, index: int = -1) -> Any:
        return self.items.pop(index)

    def remove(self, x: Any) -> None:
        self.items.remove(x)

    def clear(self) -> None:
        self.items.clear()

    def __getitem__(self, index: Any) -> Any:
        return self.items[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self.items[index] = value

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __contains__(self, x: Any) -> bool:
        return x in self.items

    def __repr__(self) -> str:
        return f"PerThreadList({self.items!r})"


__all__ = ["PerThreadList"]
