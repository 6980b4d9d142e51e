"""``python -m xlapy coverage``: how much of JAX's public API xlapy has.

For each JAX namespace in :data:`NAMESPACES` (``jax.numpy`` with ``fft`` and ``linalg``,
``jax.random``, ``jax.nn`` with ``initializers``, ``jax.scipy``'s ``linalg``, ``special``,
``signal``, ``stats`` and ``stats.norm``, ``jax.lax`` and ``jax.ops``) every public name
(``dir()`` without a leading underscore) is one of

- *implemented*: the xlapy namespace of the same path has it (``xlapy.numpy.fft.fftn``);
- *excluded*: listed, with its reason, in :mod:`xlapy.tools.coverage_exclusions`, the one
  list of names xlapy does not provide on purpose;
- *missing*: neither.

The names are JAX's own when ``jax`` is importable; otherwise the stored list
``jax_api_names.json`` (written from JAX 0.10.2 with ``--write-names``). The report
prints, per namespace, the counts and the two ratios ``implemented / all`` and
``implemented / (all - excluded)``, then the missing names; ``--verbose`` lists the
excluded ones with their reasons and ``--json`` prints the whole report as JSON.
Exit status 0 (1 when ``--fail-under`` is given and a namespace's first ratio is below it).
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .coverage_exclusions import exclusion_reason

log = logging.getLogger("xlapy.coverage")

NAMES_FILE = Path(__file__).with_name("jax_api_names.json")

# (JAX namespace, xlapy namespace)
NAMESPACES: tuple[tuple[str, str], ...] = (
    ("jax.numpy", "xlapy.numpy"),
    ("jax.numpy.fft", "xlapy.numpy.fft"),
    ("jax.numpy.linalg", "xlapy.numpy.linalg"),
    ("jax.random", "xlapy.random"),
    ("jax.nn", "xlapy.nn"),
    ("jax.nn.initializers", "xlapy.nn.initializers"),
    ("jax.scipy.linalg", "xlapy.scipy.linalg"),
    ("jax.scipy.special", "xlapy.scipy.special"),
    ("jax.scipy.signal", "xlapy.scipy.signal"),
    ("jax.scipy.stats", "xlapy.scipy.stats"),
    ("jax.scipy.stats.norm", "xlapy.scipy.stats.norm"),
    ("jax.lax", "xlapy.lax"),
    ("jax.ops", "xlapy.ops"),
)


@dataclass
class NamespaceReport:
    """The coverage of one JAX namespace."""
    jax_name: str
    xlapy_name: str
    implemented: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.implemented) + len(self.missing) + len(self.excluded)

    @property
    def ratio(self) -> float:
        """Implemented over all of JAX's names."""
        return len(self.implemented) / self.total if self.total else 1.0

    @property
    def ratio_in_scope(self) -> float:
        """Implemented over JAX's names less the excluded ones."""
        scope = len(self.implemented) + len(self.missing)
        return len(self.implemented) / scope if scope else 1.0

    def as_dict(self) -> dict:
        return {"jax": self.jax_name, "xlapy": self.xlapy_name, "total": self.total,
                "implemented": len(self.implemented), "excluded": self.excluded,
                "missing": self.missing, "ratio": round(self.ratio, 4),
                "ratio_in_scope": round(self.ratio_in_scope, 4)}


def public_names(module: object) -> list[str]:
    """A module's public names, JAX's way: ``dir()`` without a leading underscore."""
    return sorted(n for n in dir(module) if not n.startswith("_"))


def jax_names(source: str = "auto") -> tuple[dict[str, list[str]], str]:
    """``({namespace: names}, where they came from)``. ``source``: ``"jax"`` (import
    it), ``"stored"`` (the stored list) or ``"auto"`` (JAX when importable)."""
    if source in ("auto", "jax"):
        try:
            import jax
        except ImportError:
            if source == "jax":
                raise
        else:
            out = {}
            for jax_ns, _ in NAMESPACES:
                out[jax_ns] = public_names(importlib.import_module(jax_ns))
            return out, f"jax {jax.__version__}"
    stored = json.loads(NAMES_FILE.read_text())
    return stored["namespaces"], f"stored list ({NAMES_FILE.name}, jax {stored['jax_version']})"


def _xlapy_module(name: str) -> object | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        parent, _, attr = name.rpartition(".")
        owner = _xlapy_module(parent) if parent.startswith("xlapy.") else None
        return getattr(owner, attr, None) if owner is not None else None


def coverage(names: dict[str, list[str]]) -> list[NamespaceReport]:
    """Classify every name of every namespace of :data:`NAMESPACES`."""
    reports = []
    for jax_ns, xlapy_ns in NAMESPACES:
        rep = NamespaceReport(jax_ns, xlapy_ns)
        mod = _xlapy_module(xlapy_ns)
        for name in names.get(jax_ns, []):
            reason = exclusion_reason(jax_ns, name)
            if mod is not None and hasattr(mod, name):
                rep.implemented.append(name)
            elif reason is not None:
                rep.excluded[name] = reason
            else:
                rep.missing.append(name)
        reports.append(rep)
    return reports


def format_report(reports: Sequence[NamespaceReport], source: str, verbose: bool) -> str:
    lines = [f"JAX API coverage (names from {source})", "",
             f"{'namespace':<24}{'total':>6}{'impl':>6}{'excl':>6}{'miss':>6}"
             f"{'impl/all':>10}{'impl/scope':>12}"]
    for r in reports:
        lines.append(f"{r.jax_name:<24}{r.total:>6}{len(r.implemented):>6}"
                     f"{len(r.excluded):>6}{len(r.missing):>6}{r.ratio:>10.1%}"
                     f"{r.ratio_in_scope:>12.1%}")
    for r in reports:
        if r.missing:
            lines += ["", f"missing from {r.xlapy_name} ({len(r.missing)}):",
                      "  " + " ".join(r.missing)]
        if verbose and r.excluded:
            lines += ["", f"excluded from {r.xlapy_name} ({len(r.excluded)}):"]
            lines += [f"  {n}: {why}" for n, why in r.excluded.items()]
    return "\n".join(lines)


def write_names(path: Path) -> None:
    """Store JAX's names (needs ``jax``) for machines without it."""
    import jax
    names, _ = jax_names("jax")
    path.write_text(json.dumps({"jax_version": jax.__version__, "namespaces": names},
                               indent=1, sort_keys=True) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xlapy coverage", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--names", choices=("auto", "jax", "stored"), default="auto",
                   help="where JAX's names come from (default: jax when importable)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--verbose", "-v", action="store_true", help="list excluded names too")
    p.add_argument("--fail-under", type=float, default=None,
                   help="exit 1 when a namespace's implemented/all ratio is below this")
    p.add_argument("--write-names", type=Path, default=None,
                   help="store jax's names in this file (needs jax) and exit")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.write_names is not None:
        write_names(args.write_names)
        return 0
    names, source = jax_names(args.names)
    reports = coverage(names)
    if args.json:
        sys.stdout.write(json.dumps({"source": source, "namespaces": [
            r.as_dict() for r in reports]}, indent=1) + "\n")
    else:
        sys.stdout.write(format_report(reports, source, args.verbose) + "\n")
    if args.fail_under is not None:
        low = [r.jax_name for r in reports if r.ratio < args.fail_under]
        if low:
            log.error("below %.0f%%: %s", 100 * args.fail_under, ", ".join(low))
            return 1
    return 0
