"""Locating the user's code: the innermost stack frame outside the xlapy package.

Used for HLO ``OpMetadata`` (``source_file``/``source_line``), for error messages
(``at examples/f.py:12: y = xnp.unique(x)``) and to trim xlapy's own frames from the
tracebacks of errors raised at the jit boundary, as TensorFlow and JAX do.
"""
from __future__ import annotations

import linecache
import os
import sys
import types
from dataclasses import dataclass

from ..errors import InvalidArgumentError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_internal_file(filename: str) -> bool:
    """True for files inside the xlapy package (and Python's frozen import machinery)."""
    return os.path.abspath(filename).startswith(_PACKAGE_DIR) or filename.startswith("<frozen")


@dataclass(frozen=True)
class SourceLocation:
    """A user source line: absolute file name, line number and function name."""

    file: str
    line: int
    function: str = ""

    @property
    def display_file(self) -> str:
        """The file relative to the working directory when it lies below it."""
        try:
            rel = os.path.relpath(self.file)
        except ValueError:
            return self.file
        return self.file if rel.startswith("..") else rel

    @property
    def text(self) -> str:
        return linecache.getline(self.file, self.line).strip()

    def describe(self) -> str:
        """``file:line: source text`` (the text omitted when unavailable)."""
        where = f"{self.display_file}:{self.line}"
        return f"{where}: {self.text}" if self.text else where


def user_location(skip: int = 1) -> SourceLocation | None:
    """The innermost frame outside xlapy, None when the whole stack is internal."""
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_internal_file(filename):
            path = filename if filename.startswith("<") else os.path.abspath(filename)
            return SourceLocation(path, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def located(message: str, hint: str = "") -> str:
    """``message`` with ``(at file:line: text)`` of the user frame and an optional hint."""
    loc = user_location(2)
    text = f"{message} (at {loc.describe()})" if loc is not None else message
    return f"{text}. Hint: {hint}" if hint else text


def raise_not_compilable(op: str, reason: str, hint: str) -> None:
    """Raise InvalidArgumentError for an op that cannot be compiled (must-compile semantics)."""
    loc = user_location(2)
    where = f" (at {loc.describe()})" if loc is not None else ""
    raise InvalidArgumentError(f"{op} {reason} and cannot be compiled{where}. Hint: {hint}")


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A copy of ``tb`` without the frames that belong to xlapy."""
    frames = []
    while tb is not None:
        if not is_internal_file(tb.tb_frame.f_code.co_filename):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for entry in reversed(frames):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


__all__ = ["SourceLocation", "user_location", "located", "raise_not_compilable",
           "filter_traceback", "is_internal_file"]
