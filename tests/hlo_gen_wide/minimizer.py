"""Minimizing a mismatching case to a small module.

``minimize`` keeps the one mismatching output, removes dead code, and cuts instructions
one by one into new parameters holding the oracle's values while the mismatch stays.
It runs the sides through ``runner`` (``runner.run_side``, ``runner.run_isolated``), so
a test can replace ``runner.run_side`` with a fake backend.
"""
from __future__ import annotations

import re
from typing import Callable

from . import runner
from .compare import compare_output
from .module import Case, OutSpec


_NAME_RE = re.compile(r"\b([vp]\d+)\b")


def _split(text: str):
    head, rest = text.split("\nENTRY main {\n", 1)
    body = rest.rsplit("\n}", 1)[0]
    return head, body.split("\n")


def _parse_line(line: str):
    """(name, shape text, rhs) of an entry line."""
    s = line.strip()
    if s.startswith("ROOT "):
        s = s[5:]
    name, rest = s.split(" = ", 1)
    depth, i = 0, 0
    while i < len(rest):                       # the shape may contain spaces in tuples
        ch = rest[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            break
        i += 1
    return name, rest[:i], rest[i + 1:]


def _refs(rhs: str) -> list[str]:
    return _NAME_RE.findall(rhs)


def _assemble(head: str, lines: list[str]) -> str:
    return head + "\nENTRY main {\n" + "\n".join(lines) + "\n}\n"


def _prune(head: str, lines: list[str], inputs: list) -> tuple[str, list]:
    """Drop dead entry instructions, unused parameters and unreferenced computations."""
    parsed = [_parse_line(ln) for ln in lines]
    root = next(i for i, ln in enumerate(lines) if ln.strip().startswith("ROOT "))
    live = {parsed[root][0]}
    for name, shp, rhs in reversed(parsed):
        if name in live:
            live.update(_refs(rhs))
    new_lines, new_inputs, pnum = [], [], 0
    for ln, (name, shp, rhs) in zip(lines, parsed):
        if name not in live:
            continue
        m = re.match(r"parameter\((\d+)\)$", rhs)
        if m:
            new_inputs.append(inputs[int(m.group(1))])
            ln = ln.replace(f"parameter({m.group(1)})", f"parameter({pnum})")
            pnum += 1
        new_lines.append(ln)
    # computations: keep those referenced (transitively) from the entry
    comps = re.split(r"\n(?=[A-Za-z_][\w.]* \{\n)", head)
    header, blocks = comps[0], comps[1:]
    names = {b.split(" ", 1)[0]: b for b in blocks}
    text_refs = "\n".join(new_lines)
    keep: set[str] = set()
    todo = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text_refs)]
    while todo:
        n = todo.pop()
        if n in keep:
            continue
        keep.add(n)
        todo += [m for m in names if m not in keep and re.search(rf"\b{re.escape(m)}\b", names[n])]
    new_head = "\n".join([header] + [b for b in blocks if b.split(" ", 1)[0] in keep])
    return _assemble(new_head, new_lines), new_inputs


def minimize(case: Case, side: str, output: int, max_steps: int = 400,
             log: Callable[[str], None] | None = None, crash: bool = False) -> Case:
    """A smaller case whose output still mismatches on ``side`` (the root is reduced to
    that one output, dead code removed, and instructions cut one by one into new
    parameters holding the oracle's values). ``output`` -1: the run raises; ``crash``:
    the process dies (each try runs in a subprocess)."""
    from xlapy.hlo import parse_module
    spec = case.outputs[output] if output >= 0 else OutSpec("f32", 0.0)

    def fails(text: str, inputs: list) -> bool:
        try:
            module = parse_module(text)
            want = runner.oracle(module, inputs)
        except Exception:  # noqa: BLE001
            return False
        if crash:
            return runner.run_isolated(Case(case.seed, case.profile, text, inputs,
                                            [spec] * len(want)), (side,))[0] == "crash"
        try:
            got = runner.run_side(side, module, inputs)
        except Exception:  # noqa: BLE001
            return output < 0
        if output < 0:
            return False
        return compare_output(got[0], want[0], spec) is not None

    head, lines = _split(case.text)
    inputs = list(case.inputs)
    first, rest = head.split("\n", 1)
    if "," in first:                          # layouts/aliasing pin the signature: drop them
        head = first.split(",", 1)[0] + "\n" + rest
    if output >= 0 and not crash:
        root_i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("ROOT "))
        name, shp, rhs = _parse_line(lines[root_i])
        if rhs.startswith("tuple("):
            by_name = {_parse_line(ln)[0]: _parse_line(ln) for ln in lines}

            def flat(elems):                   # nested tuples flatten depth first
                out = []
                for e in elems:
                    _, eshp, erhs = by_name[e]
                    if eshp.startswith("(") and erhs.startswith("tuple("):
                        out += flat([x.strip() for x in erhs[len("tuple("):-1].split(",")])
                    else:
                        out.append(e)
                return out
            elems = flat([e.strip() for e in rhs[len("tuple("):-1].split(",")])
            target = elems[output]
            lines = lines[:root_i] + lines[root_i + 1:]
            j = next(i for i, ln in enumerate(lines) if _parse_line(ln)[0] == target)
            tname, tshp, trhs = _parse_line(lines[j])
            if trhs.startswith("parameter("):
                lines.append(f"  ROOT vcopy = {tshp.split('{')[0]} copy({target})")
            else:
                lines[j] = "  ROOT " + lines[j].strip()
                lines = lines[: j + 1]
    text, inputs = _prune(head, lines, inputs)
    if crash:                                   # keep one root element that still crashes
        root_i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("ROOT "))
        name, shp, rhs = _parse_line(lines[root_i])
        if rhs.startswith("tuple("):
            for target in [e.strip() for e in rhs[len("tuple("):-1].split(",")]:
                j = next(i for i, ln in enumerate(lines) if _parse_line(ln)[0] == target)
                if _parse_line(lines[j])[2].startswith("parameter("):
                    continue
                trial = [ln for i, ln in enumerate(lines[: j + 1])]
                trial[j] = "  ROOT " + trial[j].strip()
                ttext, tin = _prune(head, trial, list(case.inputs))
                if fails(ttext, tin):
                    text, inputs = ttext, tin
                    if log:
                        log(f"  root reduced to {target}")
                    break
    if not fails(text, inputs):
        if log:
            log("  (the mismatch needs the whole module: not minimized)")
        return case
    steps = 0
    changed = True
    while changed and steps < max_steps:
        changed = False
        head, lines = _split(text)
        parsed = [_parse_line(ln) for ln in lines]
        for k in range(len(lines) - 1, -1, -1):
            name, shp, rhs = parsed[k]
            if lines[k].strip().startswith("ROOT ") or rhs.startswith("parameter(") or \
                    shp.startswith("(") or rhs.startswith("constant("):
                continue
            steps += 1
            # value of `name` from the oracle
            probe = [ln.replace("ROOT ", "") for ln in lines[: k + 1]]
            probe[-1] = "  ROOT " + probe[-1].strip()
            try:
                ptext, pin = _prune(head, probe, inputs)
                value = runner.oracle(parse_module(ptext), pin)[0]
            except Exception:  # noqa: BLE001
                continue
            n_params = sum(1 for p in parsed if p[2].startswith("parameter("))
            cut = list(lines)
            prefix = "  ROOT " if lines[k].strip().startswith("ROOT ") else "  "
            cut[k] = f"{prefix}{name} = {shp} parameter({n_params})"
            ctext, cin = _prune(head, cut, inputs + [value])
            if fails(ctext, cin):
                text, inputs = ctext, cin
                changed = True
                if log:
                    log(f"  cut {name} ({rhs.split('(')[0]}): {len(ctext.splitlines())} lines")
                break
    return Case(case.seed, case.profile, text, inputs, [spec], case.features)
