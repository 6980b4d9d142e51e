"""Wide random HLO programs for differential testing of the CPU backend.

``generate(seed, profile)`` builds a random, well-typed HLO module (XLA's text form,
parsed by ``xlapy.hlo.parse_module`` and checked with ``verify_module``) together with
inputs, and for every output of the module how exactly it must match the reference
interpreter. ``check_case(case)`` runs it on the interpreter (the oracle, unoptimized
module), the CPU backend (default thread pool, and a second backend instance that
splits every kernel into work units: ``parallel_cost=0``) and on the interpreter after
the CPU pass pipeline (``xlapy.optimize``), and returns the mismatches.

Coverage
--------
- types: f32, f64, f16, bf16, s8, s16, s32, s64, u8, u16, u32, u64, pred;
- elementwise: unary float ops (exact ones: negate, abs, sign, floor, ceil, round-*,
  sqrt, rsqrt, is-finite; transcendental ones: exp, expm1, log, log1p, tanh, logistic,
  sine, cosine, tan, erf, cbrt, atan2, power), integer/pred unary (not, popcnt,
  count-leading-zeros, negate, abs, sign), binary arithmetic/min/max/bitwise/shifts,
  mulhi, integer divide/remainder/shifts/power with planted edge operands (x/0,
  INT_MIN/-1, shift amounts >= the bit width, negative exponents), compare (all directions,
  TOTALORDER/SIGNED/UNSIGNED types), select, clamp, convert (every pair), bitcast-convert
  (same and different widths), reduce-precision;
- data movement: broadcast, reshape, transpose, slice (strided), concatenate, pad
  (negative and interior), reverse, iota, copy, dynamic-slice / dynamic-update-slice
  (start indices of several integer types, out of range on purpose), gather and scatter
  (random dimension numbers, batching dimensions, out-of-range indices,
  add/mul/max/min/overwrite combiners, variadic scatter), rng-bit-generator;
- reductions: reduce over random dims with add/mul/max/min/and/or/xor reducers
  (identity and non-identity init values where the result is still well defined),
  variadic argmax reduce, reduce-window (stride, padding, base and window dilation),
  select-and-scatter, sort (1-3 operands, stable and unstable, TOTALORDER keys);
- linalg: dot with random batch/contracting dimension numbers (float, integer, and
  mixed result types), small convolutions (random dim_labels, strides, padding,
  dilations, feature and batch groups);
- control flow: while loops (constant or data-dependent trip counts), scan-like loops
  that write row i of an accumulator with dynamic-update-slice and read row i-1 back,
  conditionals (pred and index selectors, out-of-range index, tuple operands), call, map;
- patterns that make the CPU pipeline fuse: softmax and layer norm over random
  dimensions, elementwise chains feeding reductions, transposes with consumers;
- sizes: mostly small shapes (including zero-sized dimensions now and then), and a
  "large" profile whose shapes reach the CPU backend's other code paths (vectorized row
  and column reductions of >= 4096 elements, tiled transposes of >= 64x64 operands,
  kernels split into units), kept to a few MB;
- signatures: random minor-to-major layouts on entry parameters (and leaves of tuple
  parameters), result layouts in ``entry_computation_layout``, 1-8 outputs (nested
  tuples, repeated leaves, parameters passed through), parameters donated to outputs
  with ``input_output_alias`` (may-alias and must-alias);
- inputs: NaN, +-Inf, -0.0, denormals, the largest finite values, integer min/max,
  -1 and 0 (for division), out-of-range indices.

Exactness model
---------------
Every value carries ``err``: 0 means the CPU backend must produce the interpreter's
bits (NaN payloads excepted, the sign of zero included); otherwise a bound on the
difference relative to the output's largest finite magnitude (reassociated float
reductions, dots and convolutions, the CPU's inline polynomial transcendentals, and
everything computed from those). Such values are kept away from ops where a rounding
difference would change the result discontinuously (compare, floor, convert to
integer, sort keys, bitcast-convert, division...), and ``mag`` (a bound on finite
magnitudes) keeps them away from overflow thresholds. NaN positions always have to
match, and infinities must be equal.

Besides the values, ``check_case`` requires that a CPU executable gives the same bits
on a second call (arena and kernel state are reused across calls) and that no side
writes into the argument arrays (modules may donate parameters through
``input_output_alias``).

Known mismatches are listed in ``KNOWN_ISSUES`` (``known_issues.py``, which says how to
add one; the set is empty at the moment); while one is listed the generator steers
around it (each has a strict-xfail reproducer in ``tests/test_cpu_differential_wide.py``).

Command line (bug hunting): ``python tests/hlo_gen_wide --seed N --count M
[--profile mixed|small|zero|medium|large|deep] [--minimize] [--out DIR] [--isolate]
[--strict] [--quiet] [--print]`` runs M modules from seed N and prints every mismatch with the
module's text. ``--minimize`` shrinks each one to a small module (saved as .hlo, with its
inputs as .npz and .pkl, under --out); ``--isolate`` runs the modules in child processes
so that a crash (an LLVM assertion, a segfault) is reported instead of ending the
sweep; ``--strict`` turns off the KNOWN_ISSUES workarounds. From ``tests/``,
``python -m hlo_gen_wide ...`` is the same.

Modules
-------
- ``types_and_values``: type tables, error bounds, HLO text, random and edge-value inputs;
- ``profiles``: module size profiles, op weights, large shapes;
- ``known_issues``: ``KNOWN_ISSUES``;
- ``computation``: ``V`` (a generated value) and ``Comp`` (a computation being generated);
- ``ops_elementwise``, ``ops_data_movement``, ``ops_gather_scatter``,
  ``ops_reductions_and_sort``, ``ops_dot_conv``, ``ops_control_flow``,
  ``ops_fusion_patterns``: the op generators, mixed into ``ModuleGen``;
- ``module``: ``ModuleGen``, ``Case``, ``OutSpec`` and ``generate``;
- ``compare``: the comparison rules (``compare_output``);
- ``runner``: the backends, ``check_case``, child processes, case files;
- ``minimizer``: ``minimize``;
- ``__main__``: the command line.
"""
from __future__ import annotations

from .compare import compare_output
from .known_issues import KNOWN_ISSUES
from .minimizer import minimize
from .module import Case, ModuleGen, OutSpec, generate
from .profiles import DEFAULT_WEIGHTS, LARGE_OPS, PROFILES, SUB_OPS, Profile, profile_for
from .runner import (SIDES, Mismatch, SecondCallDiffers, case_from_file, case_to_file,
                     check_case, cpu_backend, oracle, run_isolated, run_side, save_case)

__all__ = ["DEFAULT_WEIGHTS", "KNOWN_ISSUES", "LARGE_OPS", "PROFILES", "SIDES", "SUB_OPS", "Case",
           "Mismatch", "ModuleGen", "OutSpec", "Profile", "SecondCallDiffers", "case_from_file",
           "case_to_file", "check_case", "compare_output", "cpu_backend", "generate", "minimize",
           "oracle", "profile_for", "run_isolated", "run_side", "save_case"]
