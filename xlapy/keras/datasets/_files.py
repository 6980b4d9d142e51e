"""Where Keras keeps data sets, and the error raised when a file is missing.

Files live in ``$KERAS_HOME/datasets`` (``~/.keras/datasets`` by default), as in Keras.
Nothing is downloaded: this library runs on machines without network access.
"""
from __future__ import annotations

import os

from ...errors import InvalidArgumentError


def datasets_dir() -> str:
    """``$KERAS_HOME/datasets``, else ``~/.keras/datasets``."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "datasets")


def resolve(path: str | os.PathLike | None, default_name: str) -> str:
    """``path`` itself when it exists or is absolute; a directory gets ``default_name``
    appended; otherwise the name is looked up in :func:`datasets_dir`."""
    if path is None:
        return os.path.join(datasets_dir(), default_name)
    path = os.fspath(path)
    if os.path.isdir(path):
        return os.path.join(path, default_name)
    if os.path.isabs(path) or os.path.exists(path):
        return path
    return os.path.join(datasets_dir(), path)


def missing(what: str, expected: str, url: str, extra: str = "") -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{what} was not found: expected {expected}. xlapy does not download data sets; "
        f"fetch {url} on a machine with network access and copy it there{extra}, or pass "
        "load_data(path=...).")


__all__ = ["datasets_dir", "resolve", "missing"]
