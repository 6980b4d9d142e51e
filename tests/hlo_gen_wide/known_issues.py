"""Known mismatches the generator steers around (none at the moment).

When a differential run finds a bug that cannot be fixed right away:

1. add a minimal strict-xfail reproducer for it to ``tests/test_cpu_differential_wide.py``;
2. add a short name for it to ``KNOWN_ISSUES`` below;
3. guard the generator code that would hit it, e.g. in an ``op_*`` method::

       from .known_issues import KNOWN_ISSUES
       ...
       if t == "bf16" and "cpu-bf16-some-bug" in KNOWN_ISSUES:
           raise Unsupported

   so that the random tests stay green while it is open.

The command line's ``--strict`` clears the set (the workarounds go off and the
generator finds the bugs again). When a bug is fixed, its xfail comes off, and its
entry and the branches guarded by it are deleted.
"""
from __future__ import annotations

KNOWN_ISSUES: set[str] = set()
