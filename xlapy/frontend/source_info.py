"""Locating the user's code: the innermost stack frame that is the user's own.

User code is every file outside the xlapy package, outside installed third-party
packages (``site-packages`` / ``dist-packages``) and outside Python's standard library;
pseudo-files such as ``<string>``, ``<stdin>`` and ``<ipython-input-...>`` are user code
(only ``<frozen ...>`` import machinery is not). Used for HLO ``OpMetadata``
(``source_file``/``source_line``), for error messages (``at examples/f.py:12: y =
xnp.unique(x)``; an error raised inside NumPy on xlapy's behalf points at the user's line,
not at NumPy's) and to trim xlapy's own frames from the tracebacks of errors raised at the
jit boundary, as TensorFlow and JAX do.
"""
from __future__ import annotations

import linecache
import os
import sys
import sysconfig
import types
from dataclasses import dataclass

from ..errors import InvalidArgumentError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _library_dirs() -> tuple[str, ...]:
    """The standard library's and the installed packages' directories."""
    dirs: set[str] = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = paths.get(key)
        if p:
            dirs.add(os.path.abspath(p) + os.sep)
            dirs.add(os.path.realpath(p) + os.sep)
    for prefix in {sys.base_prefix, sys.base_exec_prefix}:
        ver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        dirs.add(os.path.join(os.path.realpath(prefix), "lib", ver) + os.sep)
    return tuple(sorted(dirs))


_LIBRARY_DIRS = _library_dirs()
_PACKAGE_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_USER_FILE: dict[str, bool] = {}


def is_internal_file(filename: str) -> bool:
    """True for files inside the xlapy package (and Python's frozen import machinery)."""
    return os.path.abspath(filename).startswith(_PACKAGE_DIR) or filename.startswith("<frozen")


def is_library_file(filename: str) -> bool:
    """True for installed third-party packages and the standard library (not xlapy)."""
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return any(part in path for part in _PACKAGE_PARTS) or path.startswith(_LIBRARY_DIRS)


def is_user_file(filename: str) -> bool:
    """True for the user's code: neither xlapy, nor a library, nor frozen machinery."""
    hit = _USER_FILE.get(filename)
    if hit is None:
        hit = not (is_internal_file(filename) or is_library_file(filename))
        _USER_FILE[filename] = hit
    return hit


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
    """The innermost user frame (see the module docstring), None when there is none."""
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(filename):
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
    """A copy of ``tb`` without xlapy's frames, and without the library frames (NumPy's,
    say) below the innermost user frame, which xlapy called on the user's behalf.

    Library frames between user frames (a user callback run by a library) stay.
    """
    entries = []
    while tb is not None:
        if not is_internal_file(tb.tb_frame.f_code.co_filename):
            entries.append(tb)
        tb = tb.tb_next
    while entries and not is_user_file(entries[-1].tb_frame.f_code.co_filename):
        entries.pop()
    out = None
    for entry in reversed(entries):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


__all__ = ["SourceLocation", "user_location", "located", "raise_not_compilable",
           "filter_traceback", "is_internal_file", "is_library_file", "is_user_file"]
