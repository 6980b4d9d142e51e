"""Data sets read from local files (nothing is downloaded): ``mnist``, ``cifar10`` and
scikit-learn's ``digits``."""
from __future__ import annotations

from . import cifar10, digits, mnist

__all__ = ["mnist", "cifar10", "digits"]
