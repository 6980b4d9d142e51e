"""The pieces that keep the passes linear agree with the straightforward computations they
replace: deferred list edits with eager ones, the incrementally kept post order with
``post_order()``, bit-set reachability with graph search, the heap simulator's indexed
best fit and the heap-based list scheduler with their former O(n^2) forms."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.hlo import parse_module
from xlapy.hlo.ir import HloComputation, HloInstruction, HloModule
from xlapy.passes import heap_simulator as heap
from xlapy.passes.computation_edits import DeferredEdits, remove_instructions
from xlapy.passes.liveness import _own_bytes, list_schedule
from xlapy.passes.post_order_index import PostOrderIndex
from xlapy.passes.reachability import ContractedReachability, reachability


def random_module(seed: int, n: int = 40, control: bool = False) -> HloModule:
    """An entry computation of ``n`` f32[4] adds/negates over two parameters, wired at
    random (operands always earlier), with a tuple root of the last few values."""
    rng = np.random.default_rng(seed)
    lines = ["p0 = f32[4] parameter(0)", "p1 = f32[4] parameter(1)"]
    names = ["p0", "p1"]
    for k in range(n):
        a, b = (names[int(rng.integers(len(names)))] for _ in range(2))
        name = f"v{k}"
        extra = ""
        if control and k > 3 and rng.random() < 0.15:
            extra = f", control-predecessors={{v{int(rng.integers(k - 2))}}}"
        if rng.random() < 0.3:
            lines.append(f"{name} = f32[4] negate({a}){extra}")
        else:
            lines.append(f"{name} = f32[4] add({a}, {b}){extra}")
        names.append(name)
    outs = names[-3:]
    lines.append(f"ROOT out = (f32[4], f32[4], f32[4]) tuple({', '.join(outs)})")
    return parse_module("HloModule r\nENTRY main {\n  " + "\n  ".join(lines) + "\n}\n")


def names(comp: HloComputation) -> list[str]:
    return [i.name for i in comp.instructions]


def control_names(comp: HloComputation) -> dict[str, list[str]]:
    return {i.name: [c.name for c in i.control_predecessors] for i in comp.instructions}


def edit_script(comp: HloComputation, edits: DeferredEdits, seed: int) -> None:
    """Random replacements (by fresh negates placed before or after an anchor) and
    removals of dead values, the same for the same seed and module. (Candidates come from
    the script's own list: a pass using DeferredEdits must not walk the computation's
    list before the flush.)"""
    rng = np.random.default_rng(seed)
    module = comp.parent
    pool = [i for i in comp.instructions if i.opcode != "parameter" and i is not comp.root]
    for _ in range(25):
        live = [i for i in pool if i.parent is comp]
        if not live:
            break
        old = live[int(rng.integers(len(live)))]
        new = HloInstruction("negate", old.shape, [old.operands[0]],
                             name=module.unique_name("fresh"))
        anchor = live[int(rng.integers(len(live)))]
        if rng.random() < 0.5:
            edits.insert_before(new, anchor)
        else:
            edits.insert_after(new, anchor)
        pool.append(new)
        edits.move_control_edges(old, new)
        edits.replace(old, new)
        dead = [i for i in live if i.parent is comp and not i.users and i is not old]
        if dead and rng.random() < 0.3:
            edits.remove(dead[0])


@pytest.mark.parametrize("seed", range(12))
def test_deferred_edits_leave_what_eager_edits_leave(seed):
    results = []
    for reference in (False, True):
        m = random_module(seed, control=seed % 2 == 1)
        with DeferredEdits(m.entry, eager=reference) as edits:
            assert edits.eager == reference
            edit_script(m.entry, edits, seed)
        results.append((names(m.entry), control_names(m.entry), m.to_text()))
    assert results[0] == results[1]
    removed_some = len(results[0][0]) < len(names(random_module(seed).entry)) + 25
    assert removed_some


def test_deferred_removal_refuses_a_used_instruction_or_the_root():
    m = random_module(1)
    with DeferredEdits(m.entry) as edits:
        with pytest.raises(ValueError, match="still used"):
            edits.remove(m.entry.parameters[0])
        with pytest.raises(ValueError, match="root"):
            edits.remove(m.entry.root)


def test_remove_instructions_removes_a_dead_cone_in_one_sweep():
    m = random_module(3, control=True)
    comp = m.entry
    keep = {id(i) for i in comp.root.operands} | {id(comp.root)}
    # everything no output depends on is dead
    live: set[int] = set()
    work = [comp.root]
    while work:
        i = work.pop()
        if id(i) not in live:
            live.add(id(i))
            work.extend(i.operands + i.control_predecessors)
    dead = [i for i in comp.instructions if id(i) not in live and i.opcode != "parameter"]
    assert dead
    before = [i.name for i in comp.instructions if id(i) not in {id(d) for d in dead}]
    remove_instructions(comp, dead)
    assert names(comp) == before
    assert all(d.parent is None and not d.operands for d in dead)
    for i in comp.instructions:
        assert all(u.parent is comp for u in i.users)
    assert keep <= {id(i) for i in comp.instructions}
    with pytest.raises(ValueError, match="still used"):
        remove_instructions(comp, [comp.parameters[0]])


# ------------------------------------------------------------------------- post order
def contract_both_ways(seed: int) -> None:
    """Replace a random connected group by a 'fusion' (here: a tuple of its outside
    operands) with get-tuple-elements for its outputs; the index must match
    ``post_order()`` of the list the eager way leaves, or say it cannot."""
    m = random_module(seed, n=30)
    comp = m.entry
    order = PostOrderIndex(comp.post_order())
    rng = np.random.default_rng(seed)
    seed_instr = comp.instructions[2 + int(rng.integers(10))]
    group = [seed_instr] + [u for u in seed_instr.users if u.opcode != "tuple"][:2]
    ids = {id(g) for g in group}
    operands = list({id(o): o for g in group for o in g.operands if id(o) not in ids}.values())
    outputs = [g for g in group if any(id(u) not in ids for u in g.users)]
    shape = comp.root.shape.__class__.tuple([o.shape for o in operands])
    fusion = comp.add_instruction(HloInstruction("tuple", shape, operands, name="fusion"))
    gtes = []
    for k, out in enumerate(outputs):
        g = comp.add_instruction(HloInstruction(
            "get-tuple-element", out.shape, [fusion], {"index": min(k, len(operands) - 1)},
            name=f"gte{k}"))
        gtes.append(g)
        for u in [u for u in out.users if id(u) not in ids]:
            u.replace_operands(out, g)
    eager_list = [i for i in order.nodes if id(i) not in ids] + [fusion, *gtes]
    for g in reversed(group):
        g.detach()
        g.parent = None
    if order.contract(group, fusion, gtes):
        comp.instructions = eager_list
        assert order.nodes == comp.post_order()
        assert order.keys == sorted(order.keys) and len(set(order.keys)) == len(order.keys)
        assert [order.label[id(i)] for i in order.nodes] == order.keys
    else:
        first = min((u for n in [fusion, *gtes] for u in n.users
                     if u is not fusion and u not in gtes), key=lambda u: order.label[id(u)])
        assert any(order.label[id(o)] > order.label[id(first)] for o in fusion.operands)


@pytest.mark.parametrize("seed", range(30))
def test_post_order_index_matches_post_order_after_a_contraction(seed):
    contract_both_ways(seed)


def test_post_order_index_renumbers_when_a_gap_is_used_up():
    m = random_module(5, n=6)
    order = PostOrderIndex(m.entry.post_order())
    anchor = order.nodes[3]
    added = []
    for k in range(80):                       # halving the same gap 80 times
        new = HloInstruction("negate", anchor.shape, [order.nodes[0]], name=f"n{k}")
        order.insert_before(new, anchor)
        added.append(new)
    assert order.nodes[3:3 + 80] == added
    assert order.keys == sorted(order.keys) and len(set(order.keys)) == len(order.keys)
    assert [n.name for n in order.after(order.label[id(added[-1])])][0] == anchor.name


# ------------------------------------------------------------------------- reachability
def search(a: HloInstruction, b: HloInstruction) -> bool:
    seen, work = set(), [a]
    while work:
        n = work.pop()
        if n is b:
            return True
        if id(n) not in seen:
            seen.add(id(n))
            work.extend(n.users)
    return False


@pytest.mark.parametrize("seed", range(6))
def test_bitset_reachability_agrees_with_search(seed):
    comp = random_module(seed).entry
    post = comp.post_order()
    fast = reachability(post)
    slow = reachability(post, reference=True)
    for a in post:
        for b in post:
            assert fast(a, b) == search(a, b) == slow(a, b)


@pytest.mark.parametrize("seed", range(6))
def test_contracted_reachability_agrees_with_search_after_contractions(seed):
    m = random_module(seed, n=30)
    comp = m.entry
    reach = ContractedReachability(comp.post_order())
    rng = np.random.default_rng(seed)
    for step in range(3):
        alive = [i for i in comp.post_order() if i.opcode == "add" and i.parent is comp
                 and id(i) in reach._position]
        if len(alive) < 2:
            break
        a = alive[int(rng.integers(len(alive)))]
        # a and one of its users whose other operand does not depend on a (a group the
        # pass could fuse: contracting it makes no cycle)
        group = [a] + [u for u in a.users if u.opcode == "add" and id(u) in reach._position
                       and not any(o is not a and search(a, o) for o in u.operands)][:1]
        ids = {id(g) for g in group}
        operands = list({id(o): o for g in group for o in g.operands
                         if id(o) not in ids}.values())
        fusion = comp.add_instruction(HloInstruction(
            "tuple", comp.root.shape.__class__.tuple([o.shape for o in operands]), operands,
            name=f"fusion{step}"))
        for g in group:
            for u in [u for u in g.users if id(u) not in ids]:
                u.replace_operands(g, fusion)
        for g in reversed(group):
            g.detach()
            g.parent = None
        comp.instructions = [i for i in comp.instructions if i.parent is comp]
        reach.contract(group, [fusion])
    nodes = [i for i in comp.instructions if i.parent is comp]
    for a in nodes:
        if id(a) not in reach._position:
            continue
        bits = reach.descendants(a)
        for b in nodes:
            assert reach.reaches(bits, b) == search(a, b), (a.name, b.name)


# ------------------------------------------------------------------------- heap and schedule
def best_fit_by_scanning(intervals, order: str, alignment: int = 16) -> heap.HeapResult:
    """The former best fit: every placed range checked for every interval."""
    key = ((lambda iv: (-iv.size, -(iv.end - iv.start), iv.start)) if order == "spatial"
           else (lambda iv: (-(iv.end - iv.start), -iv.size, iv.start)))
    placed, res = [], heap.HeapResult(algorithm=f"best-fit-{order}")
    for iv in sorted(intervals, key=key):
        busy = sorted((off, off + o.size) for o, off in placed
                      if o.start <= iv.end and iv.start <= o.end and o.size)
        best_off, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            gap = lo - cursor
            if gap >= iv.size and (best_gap is None or gap < best_gap):
                best_off, best_gap = cursor, gap
            cursor = max(cursor, heap.align(hi, alignment))
        best_off = cursor if best_off is None else best_off
        res.offsets[iv.key] = best_off
        placed.append((iv, best_off))
    res.heap_size = max((off + iv.size for iv, off in placed), default=0)
    return res


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("order", ["spatial", "temporal"])
def test_best_fit_places_as_the_scan_did(seed, order):
    rng = np.random.default_rng(seed)
    n = 300 if seed % 2 else 40          # odd seeds: many overlaps (the vectorized path)
    span = 60 if seed % 2 else 400
    intervals = []
    for k in range(n):
        start = int(rng.integers(span))
        size = int(rng.choice([0, 1, 7, 16, 100, 1000, int(rng.integers(5000))]))
        intervals.append(heap.BufferInterval(k, size, start, start + int(rng.integers(span))))
    got = heap.best_fit(intervals, order)
    want = best_fit_by_scanning(intervals, order)
    assert got.offsets == want.offsets and got.heap_size == want.heap_size
    assert heap.min_memory(intervals) <= got.heap_size


def list_schedule_by_scanning(comp: HloComputation) -> list[HloInstruction]:
    """The former list scheduler: every ready op's gain recomputed at every step."""
    order = comp.post_order()
    position = {id(i): k for k, i in enumerate(order)}
    deps = {id(i): {id(o) for o in i.operands + i.control_predecessors} for i in order}
    succ = {id(i): [] for i in order}
    for i in order:
        for d in {id(o): o for o in i.operands + i.control_predecessors}.values():
            succ[id(d)].append(i)
    remaining = {id(i): len({id(u) for u in i.users}) for i in order}
    scheduled, out = set(), []
    ready = [i for i in order if not deps[id(i)]]
    while ready:
        def gain(instr):
            freed = sum(_own_bytes(o) for o in {id(o): o for o in instr.operands}.values()
                        if remaining[id(o)] == 1 and not o.is_root)
            return (freed - _own_bytes(instr), -position[id(instr)])
        best = max(ready, key=gain)
        ready.remove(best)
        out.append(best)
        scheduled.add(id(best))
        for o in {id(o): o for o in best.operands}.values():
            remaining[id(o)] -= 1
        for s in succ[id(best)]:
            if id(s) not in scheduled and deps[id(s)] <= scheduled and \
                    all(r is not s for r in ready):
                ready.append(s)
    return out


def sized_module(seed: int, n: int = 60) -> HloModule:
    """Values of different sizes (so gains differ): broadcasts, slices and adds."""
    rng = np.random.default_rng(seed)
    lines = ["p0 = f32[64] parameter(0)", "s0 = f32[16] slice(p0), slice={[0:16]}"]
    values = {"p0": 64, "s0": 16}
    for k in range(n):
        kind = rng.random()
        pick = lambda size: [v for v, s in values.items() if s == size]      # noqa: E731
        if kind < 0.3:
            src = rng.choice(pick(16))
            lines.append(f"b{k} = f32[4,16] broadcast({src}), dimensions={{1}}")
            lines.append(f"r{k} = f32[64] reshape(b{k})")
            values[f"r{k}"] = 64
        elif kind < 0.5:
            src = rng.choice(pick(64))
            lines.append(f"c{k} = f32[16] slice({src}), slice={{[16:32]}}")
            values[f"c{k}"] = 16
        else:
            size = 64 if rng.random() < 0.5 else 16
            a, b = rng.choice(pick(size)), rng.choice(pick(size))
            lines.append(f"a{k} = f32[{size}] add({a}, {b})")
            values[f"a{k}"] = size
    last16, last64 = [v for v, s in values.items() if s == 16][-1], \
        [v for v, s in values.items() if s == 64][-1]
    lines.append(f"ROOT out = (f32[16], f32[64]) tuple({last16}, {last64})")
    return parse_module("HloModule s\nENTRY main {\n  " + "\n  ".join(lines) + "\n}\n")


@pytest.mark.parametrize("seed", range(8))
def test_list_schedule_is_the_scanning_schedule(seed):
    comp = sized_module(seed).entry
    got, want = list_schedule(comp), list_schedule_by_scanning(comp)
    assert [i.name for i in got] == [i.name for i in want]
    assert len(got) == len(comp.instructions)

