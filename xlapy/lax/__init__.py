"""``xlapy.lax``: XLA-level operations and structured control flow (see ``xlapy.frontend.lax``)."""
from __future__ import annotations

from ..frontend.lax import *  # noqa: F401,F403
from ..frontend.lax import __all__  # noqa: F401
