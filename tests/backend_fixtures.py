"""A fixture shared by test modules: import ``interpreter_backend`` into a test module to
run its eager ops on the reference interpreter (no native compiles: fast sweeps)."""
from __future__ import annotations

import pytest

from xlapy.frontend.core import default_backend, set_default_backend


@pytest.fixture(autouse=True, scope="module")
def interpreter_backend():
    old = default_backend()
    set_default_backend("interpreter")
    yield
    set_default_backend(old)
