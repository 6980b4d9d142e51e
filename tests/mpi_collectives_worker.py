"""One process of the multi-process collective tests, launched by
``tests/test_collectives_mpi.py`` as ``mpiexec -n 2 python mpi_collectives_worker.py MODE``.

MODE ``collectives``: every collective on both backends against the NumPy model; ``mixed``:
the same with 2 devices per process (``XLA_FLAGS=--xla_force_host_platform_device_count=2``:
4 devices, threads within a process, MPI between); ``fail``:
rank 1 raises before its first collective; ``hang``: rank 1 never arrives (``hang-cpu``,
``hang-permute``: at the CPU backend's all-reduce / collective-permute); ``disagree``: the
ranks run programs whose all-reduce operands differ in shape; ``disagree-size`` and
``disagree-dtype``: the same on the CPU backend (its all-reduce thunk), 4 MiB against 16 bytes,
and f32 against s32 of the same size; ``disagree-op``: an all-reduce against an all-gather;
``disagree-dtype-large`` and ``hang-large``: f32 against s32 and a rank that never arrives
at a 4 MiB CPU all-reduce (its result pooled, its data call started with the agreement);
``killed``: rank 1 is killed (SIGKILL) while rank 0 waits in that all-reduce."""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time

import numpy as np

import collective_model as cm
import xlapy
import xlapy.distributed
from xlapy.client import get_backend
from xlapy.hlo import parse_module
from xlapy.backends.communicator import Participant, participating

ADDI = """addi {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
"""

MAX = """max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
"""

BODY = """  ar = f32[8] all-reduce(p), replica_groups={}, to_apply=add
  mx = f32[8] all-reduce(p), replica_groups={}, to_apply=max
  ag = f32[16] all-gather(p), replica_groups={{1,0}}, dimensions={0}
  rs = f32[4] reduce-scatter(p), replica_groups={{1,0}}, dimensions={0}, to_apply=add
  aa = f32[8] all-to-all(p), replica_groups={{0,1}}, dimensions={0}
  cp = f32[8] collective-permute(p), source_target_pairs={{0,1}}
  id = u32[] replica-id()
  ROOT t = (f32[8], f32[8], f32[16], f32[4], f32[8], f32[8], u32[]) tuple(ar, mx, ag, rs, aa, cp, id)"""


def check_collectives(rank: int) -> None:
    text = cm.module(", replica_count=2", BODY).replace("ENTRY", MAX + "\nENTRY")
    xs = [cm.device_input(d) for d in range(2)]
    pairs = [(0, 1)]
    for backend in ("interpreter", "cpu"):
        (out,) = xlapy.run_hlo(text, [[xs[rank]]], backend=backend)
        ar, mx, ag, rs, aa, cp, rid = out
        np.testing.assert_array_equal(ar, cm.all_reduce(xs, [[0, 1]], rank))
        np.testing.assert_array_equal(mx, np.maximum(xs[0], xs[1]))
        np.testing.assert_array_equal(ag, cm.all_gather(xs, [[1, 0]], rank))
        np.testing.assert_array_equal(rs, cm.reduce_scatter(xs, [[1, 0]], rank))
        np.testing.assert_array_equal(aa, cm.all_to_all(xs, [[0, 1]], rank))
        np.testing.assert_array_equal(cp, cm.permute(xs, pairs, rank))
        assert int(rid) == rank
    check_native_all_reduce(rank)
    check_two_member_all_reduces(rank, 1001)         # swapped whole
    check_two_member_all_reduces(rank, None)         # halves exchanged
    check_tuple_all_to_all(rank)
    check_no_staging_copies(rank)
    check_interrupted_call_ends_the_communicator(rank)
    print(f"OK {rank}", flush=True)


def check_native_all_reduce(rank: int) -> None:
    """The CPU backend's collective thunks with MPI writing the result buffers: large
    (pooled) and small outputs, repeated calls, a tuple, an s32 sum, an f32 max (no native
    MPI op: the portable path), an all-gather in group order {1,0}; and the communicator's
    in-place all-reduce."""
    from xlapy.backends.communicator import CollectiveCall, signature_of
    from xlapy.client.devices import PROCESS
    n = 100_000
    text = cm.module(", replica_count=2", f"""  i = s32[{n}] convert(p)
  t = (f32[{n}], f32[8]) all-reduce(p, q), replica_groups={{}}, to_apply=add
  s = s32[{n}] all-reduce(i), replica_groups={{}}, to_apply=addi
  m = f32[8] all-reduce(q), replica_groups={{}}, to_apply=max
  g = f32[{2 * n}] all-gather(p), replica_groups={{{{1,0}}}}, dimensions={{0}}
  t0 = f32[{n}] get-tuple-element(t), index=0
  t1 = f32[8] get-tuple-element(t), index=1
  ROOT r = (f32[{n}], f32[8], s32[{n}], f32[8], f32[{2 * n}]) tuple(t0, t1, s, m, g)""",
                     f"p = f32[{n}] parameter(0)\n  q = f32[8] parameter(1)")
    text = text.replace("ENTRY", MAX + ADDI + "\nENTRY")
    xs = [np.arange(n, dtype=np.float32) * (d + 1) for d in range(2)]
    qs = [cm.device_input(d) for d in range(2)]
    for _ in range(3):
        (out,) = xlapy.run_hlo(text, [[xs[rank], qs[rank]]], backend="cpu")
        np.testing.assert_array_equal(out[0], xs[0] + xs[1])
        np.testing.assert_array_equal(out[1], qs[0] + qs[1])
        np.testing.assert_array_equal(out[2], xs[0].astype(np.int32) + xs[1].astype(np.int32))
        np.testing.assert_array_equal(out[3], np.maximum(qs[0], qs[1]))
        np.testing.assert_array_equal(out[4], np.concatenate([xs[1], xs[0]]))
    buf = np.full(1000, rank + 1.0)
    call = CollectiveCall("in-place test", (0, 1), rank, 0, signature_of("in-place", [buf]))
    PROCESS.communicator.all_reduce_into(call, [buf], [buf], None, "sum")
    np.testing.assert_array_equal(buf, np.full(1000, 3.0))


MINI = """mini {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] minimum(a, b)
}

muli {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] multiply(a, b)
}
"""


def check_two_member_all_reduces(rank: int, n: int | None) -> None:
    """The CPU backend's all-reduces of two members run over ``Isend``/``Irecv`` (no
    ``Iallreduce``): of ``n`` elements, whole arrays swapped (one round); of more than
    ``SWAP_MAX_BYTES`` (``n`` None), halves exchanged (two rounds; an odd length: unequal
    halves). One in its dying operand's buffer (the received data lands in the scratch
    buffer), s32 min and (wrapping) product, a tuple with a small member, repeated calls;
    answers against NumPy and the interpreter."""
    from xlapy.backends.communicator_mpi import SWAP_MAX_BYTES
    from xlapy.client.devices import PROCESS
    rounds = 1 if n is not None else 2
    n = n if n is not None else SWAP_MAX_BYTES // 4 + 1
    body = f"""  i = s32[{n}] convert(p)
  s = f32[{n}] all-reduce(p), replica_groups={{}}, to_apply=add
  a = f32[{n}] multiply(p, p)
  ai = f32[{n}] all-reduce(a), replica_groups={{}}, to_apply=add
  m = f32[{n}] negate(ai)
  mn = s32[{n}] all-reduce(i), replica_groups={{}}, to_apply=mini
  pr = s32[{n}] all-reduce(i), replica_groups={{}}, to_apply=muli
  t = (f32[{n}], f32[8]) all-reduce(p, q), replica_groups={{}}, to_apply=add
  t0 = f32[{n}] get-tuple-element(t), index=0
  t1 = f32[8] get-tuple-element(t), index=1
  ROOT r = (f32[{n}], f32[{n}], s32[{n}], s32[{n}], f32[{n}], f32[8]) tuple(s, m, mn, pr, t0, t1)"""
    text = cm.module(", replica_count=2", body,
                     f"p = f32[{n}] parameter(0)\n  q = f32[8] parameter(1)")
    text = text.replace("ENTRY", MINI + "\nENTRY")
    rng = np.random.default_rng(7)
    xs = [rng.integers(-50_000, 50_000, n).astype(np.float32) for _ in range(2)]
    qs = [cm.device_input(d) for d in range(2)]
    ints = [v.astype(np.int32) for v in xs]
    want = [xs[0] + xs[1], -(xs[0] * xs[0] + xs[1] * xs[1]), np.minimum(*ints),
            ints[0] * ints[1], xs[0] + xs[1], qs[0] + qs[1]]
    with _recording(PROCESS.communicator) as log:
        for _ in range(3):
            log.clear()
            (out,) = xlapy.run_hlo(text, [[xs[rank], qs[rank]]], backend="cpu")
            for got, expected in zip(out, want):
                np.testing.assert_array_equal(got, expected)
            # 6 arrays (5 all-reduces, one a tuple of 2), a send and a receive per round
            assert [e[0] for e in log] == ["Irecv", "Isend"] * 6 * rounds, log
    (ref,) = xlapy.run_hlo(text, [[xs[rank], qs[rank]]], backend="interpreter")
    for got, expected in zip(out, ref):
        np.testing.assert_array_equal(got, expected)


class _Recorder:
    """An mpi4py communicator whose data calls record the buffers MPI gets (their data
    addresses, or ``IN_PLACE``) before running."""

    def __init__(self, comm, log: list) -> None:
        self.comm, self.log = comm, log

    def __getattr__(self, name):
        attr = getattr(self.comm, name)
        if name not in ("Iallreduce", "Iallgather", "Ireduce_scatter_block", "Ialltoall",
                        "Isend", "Irecv"):
            return attr

        def call(*args, **kwargs):
            self.log.append((name,) + tuple(_address(a) for a in args[:2]))
            return attr(*args, **kwargs)
        return call


def check_tuple_all_to_all(rank: int) -> None:
    """A tuple-form all-to-all on the CPU backend: operand j sent to position j straight
    from the argument, result j received into the returned array (``Isend``/``Irecv``),
    this position's own pair copied; answers the interpreter's."""
    from xlapy.client.devices import PROCESS
    text = cm.module(", replica_count=2", """  q = f32[8] negate(p)
  ROOT t = (f32[8], f32[8]) all-to-all(p, q), replica_groups={{1,0}}""")
    xs = [cm.device_input(d) for d in range(2)]
    (ref,) = xlapy.run_hlo(text, [[xs[rank]]], backend="interpreter")
    comm = PROCESS.communicator
    exe = get_backend("cpu").compile(parse_module(text))
    with _recording(comm) as log:
        for _ in range(2):
            log.clear()
            with participating(Participant(rank, 0, 2, 1, comm)):
                out = exe.execute([xs[rank]])
            for got, expected in zip(out, ref):
                np.testing.assert_array_equal(got, expected)
            # group {1,0}: rank r is position 1 - r, its peer position r: it receives
            # result r (the peer's operand 1 - r) and sends its operand r (rank 0: its
            # argument p itself; rank 1: its -p)
            assert [e[0] for e in log] == ["Irecv", "Isend"], log
            assert log[0][1] == out[rank].ctypes.data, log
            assert rank == 1 or log[1][1] == xs[0].ctypes.data, log
    np.testing.assert_array_equal(out[rank], [-xs[1], xs[0]][rank])


@contextlib.contextmanager
def _recording(comm):
    """Within the block, ``comm``'s data calls are recorded in the list it yields
    (:class:`_Recorder`)."""
    log: list = []
    original = comm._comm

    def recording(call):
        data, agree = original(call)
        return _Recorder(data, log), agree
    comm._comm = recording
    try:
        yield log
    finally:
        comm._comm = original


def _address(buf) -> object:
    from mpi4py import MPI
    if buf is MPI.IN_PLACE:
        return "IN_PLACE"
    if isinstance(buf, list):                       # [array, datatype]
        buf = buf[0]
    return buf.ctypes.data if isinstance(buf, np.ndarray) else None


def check_no_staging_copies(rank: int) -> None:
    """The CPU backend's collectives hand MPI the executable's own buffers: the caller's
    argument is what MPI sends, the returned result arrays are what MPI wrote (no staging
    array on either side, no copy after; the all-reduces, of two members, as the swap of
    whole arrays: the peer's received into the result, or into the communicator's scratch
    buffer when the result is the dying operand's buffer); bf16 moves as bytes; a max reduce-scatter (no native MPI op) takes
    the portable path. Answers against NumPy."""
    import ml_dtypes
    from xlapy.client.devices import PROCESS
    n = 4096
    body = f"""  h = bf16[{n}] convert(p)
  ar = f32[{n}] all-reduce(p), replica_groups={{}}, to_apply=add
  a = f32[{n}] add(p, p)
  ai = f32[{n}] all-reduce(a), replica_groups={{}}, to_apply=add
  m = f32[{n}] multiply(ai, ai)
  ag = f32[{2 * n}] all-gather(p), replica_groups={{}}, dimensions={{0}}
  rs = f32[{n // 2}] reduce-scatter(p), replica_groups={{{{1,0}}}}, dimensions={{0}}, to_apply=add
  aa = f32[{n}] all-to-all(p), replica_groups={{}}, dimensions={{0}}
  cp = f32[{n}] collective-permute(p), source_target_pairs={{{{0,1}},{{1,0}}}}
  hb = bf16[{n}] all-to-all(h), replica_groups={{{{1,0}}}}, dimensions={{0}}
  mx = f32[{n // 2}] reduce-scatter(p), replica_groups={{}}, dimensions={{0}}, to_apply=max
  ROOT t = (f32[{n}], f32[{n}], f32[{2 * n}], f32[{n // 2}], f32[{n}], f32[{n}], bf16[{n}], f32[{n // 2}]) tuple(ar, m, ag, rs, aa, cp, hb, mx)"""
    text = cm.module(", replica_count=2", body, f"p = f32[{n}] parameter(0)")
    text = text.replace("ENTRY", MAX + "\nENTRY")
    comm = PROCESS.communicator
    with _recording(comm) as log:
        exe = get_backend("cpu").compile(parse_module(text))
        xs = [np.arange(n, dtype=np.float32) * (d + 1) - d for d in range(2)]
        x = xs[rank]
        for _ in range(2):
            log.clear()
            with participating(Participant(rank, 0, 2, 1, comm)):
                out = exe.execute([x])
            ar, m, ag, rs, aa, cp, hb, mx = out
            addr = [o.ctypes.data for o in out]
            xa = x.ctypes.data
            other = 1 - rank
            calls = [e[:2] for e in log]
            assert ("Irecv", addr[0]) in calls and ("Isend", xa) in calls, log
            assert ("Irecv", comm._scratch.ctypes.data) in calls, log
            assert ("Iallgather", xa, addr[2]) in log, log
            assert ("Ireduce_scatter_block", xa, addr[3]) in log, log
            assert ("Ialltoall", xa, addr[4]) in log, log
            assert ("Irecv", addr[5]) in [e[:2] for e in log], log
            assert ("Isend", xa) in [e[:2] for e in log], log
            # 11 data calls: the f32 collectives (2 for each all-reduce and the permute) and
            # the bf16 all-to-all; the max reduce-scatter's portable path gathers through
            # exchange()
            assert len(log) == 11, log
            np.testing.assert_array_equal(ar, xs[0] + xs[1])
            np.testing.assert_array_equal(m, (2 * xs[0] + 2 * xs[1]) ** 2)
            np.testing.assert_array_equal(ag, np.concatenate(xs))
            np.testing.assert_array_equal(rs, (xs[0] + xs[1])[(1 - rank) * n // 2:][:n // 2])
            np.testing.assert_array_equal(aa, np.concatenate([xs[0][rank * n // 2:][:n // 2],
                                                              xs[1][rank * n // 2:][:n // 2]]))
            np.testing.assert_array_equal(cp, xs[other])
            hs = [v.astype(ml_dtypes.bfloat16) for v in xs]
            k = 1 - rank                                # the position in group {1,0}
            np.testing.assert_array_equal(hb, np.concatenate([hs[1][k * n // 2:][:n // 2],
                                                              hs[0][k * n // 2:][:n // 2]]))
            np.testing.assert_array_equal(mx, np.maximum(xs[0], xs[1])[rank * n // 2:]
                                          [:n // 2])


def check_interrupted_call_ends_the_communicator(rank: int) -> None:
    """A prepared call interrupted while it waits (here a KeyboardInterrupt from the poll)
    leaves its requests on buffers the next call would reuse: every later call fails
    instead, naming the interruption."""
    from mpi4py import MPI

    import xlapy.backends.communicator_mpi as mpi_module
    import xlapy.backends.mpi_calls as calls_module
    from xlapy.backends.communicator import CollectiveCall, signature_of
    from xlapy.errors import CollectiveError
    comm = mpi_module.MpiCommunicator(MPI.COMM_WORLD.Dup(), timeout=30)
    x, out = np.full(8, rank + 1.0, np.float32), np.empty(8, np.float32)
    call = CollectiveCall("all-reduce %t", (0, 1), rank, 0, signature_of("t", [x]))
    run = comm.bind_all_reduce(call, [x], [out], None, "sum", [False])
    run(0, [x], [out])
    np.testing.assert_array_equal(out, np.full(8, 3.0))

    def interrupted(*args):
        raise KeyboardInterrupt
    real, calls_module._spin = calls_module._spin, interrupted
    try:
        run(1, [x], [out])
        raise AssertionError("the interruption did not reach the caller")
    except KeyboardInterrupt:
        pass
    finally:
        calls_module._spin = real
    try:
        run(2, [x], [out])
        raise AssertionError("a call after an interrupted one ran")
    except CollectiveError as e:
        assert "all-reduce %t" in str(e) and "interrupted" in str(e), e


MIXED = """  ar = f32[8] all-reduce(p), replica_groups={{3,1},{0,2}}, to_apply=add
  ag = f32[16] all-gather(p), replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}
  rs = f32[4] reduce-scatter(p), replica_groups={{1,0},{3,2}}, dimensions={0}, to_apply=add
  aa = f32[8] all-to-all(p), replica_groups=[1,4]<=[4], dimensions={0}
  cp = f32[8] collective-permute(p), source_target_pairs={{0,1},{1,2},{2,0}}
  id = u32[] replica-id()
  ROOT t = (f32[8], f32[16], f32[4], f32[8], f32[8], u32[]) tuple(ar, ag, rs, aa, cp, id)"""


def check_mixed(rank: int) -> None:
    text = cm.module(", replica_count=4", MIXED)
    mine = [d.id for d in xlapy.local_devices()]
    assert mine == [2 * rank, 2 * rank + 1] and xlapy.device_count() == 4
    xs = [cm.device_input(d) for d in range(4)]
    for backend in ("interpreter", "cpu"):
        outs = xlapy.run_hlo(text, [[xs[d]] for d in mine], backend=backend)
        assert len(outs) == len(mine)
        for d, (ar, ag, rs, aa, cp, rid) in zip(mine, outs):
            np.testing.assert_array_equal(ar, cm.all_reduce(xs, [[3, 1], [0, 2]], d))
            np.testing.assert_array_equal(ag, cm.all_gather(xs, [[0, 2], [1, 3]], d))
            np.testing.assert_array_equal(rs, cm.reduce_scatter(xs, [[1, 0], [3, 2]], d))
            np.testing.assert_array_equal(aa, cm.all_to_all(xs, [[0, 1, 2, 3]], d))
            np.testing.assert_array_equal(cp, cm.permute(xs, [(0, 1), (1, 2), (2, 0)], d))
            assert int(rid) == d
    print(f"OK {rank}", flush=True)


def all_reduce(n: int, backend: str = "interpreter", dtype: str = "f32") -> None:
    text = cm.module(", replica_count=2", f"  ROOT a = {dtype}[{n}] all-reduce(p), "
                     f"replica_groups={{}}, to_apply={'add' if dtype == 'f32' else 'addi'}",
                     f"p = {dtype}[{n}] parameter(0)")
    text = text.replace("ENTRY", ADDI + "\nENTRY")
    x = np.ones(n, np.float32 if dtype == "f32" else np.int32)
    xlapy.run_hlo(text, [[x]], backend=backend)


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    mode = sys.argv[1]
    xlapy.distributed.initialize(timeout=float(sys.argv[2]) if len(sys.argv) > 2 else None)
    rank = xlapy.process_index()
    assert xlapy.process_count() == 2
    if mode == "mixed":
        check_mixed(rank)
        return
    assert [d.id for d in xlapy.local_devices()] == [rank] and xlapy.device_count() == 2
    if mode == "collectives":
        check_collectives(rank)
    elif mode == "fail":
        if rank == 1:
            raise RuntimeError("rank 1 fails before the all-reduce")
        all_reduce(8)
    elif mode == "hang":
        if rank == 1:
            time.sleep(600)
        all_reduce(8)
    elif mode in ("hang-cpu", "hang-permute"):    # the CPU backend's prepared calls
        if rank == 1:
            time.sleep(600)
        if mode == "hang-cpu":
            all_reduce(8, "cpu")
        else:
            text = cm.module(", replica_count=2", "  ROOT a = f32[8] collective-permute(p), "
                             "source_target_pairs={{1,0}}")
            xlapy.run_hlo(text, [[np.ones(8, np.float32)]], backend="cpu")
    elif mode == "disagree":
        all_reduce(8 if rank == 0 else 4)
    elif mode == "disagree-size":           # the data calls start with the agreement
        all_reduce(1 << 20 if rank == 0 else 4, "cpu")
    elif mode == "disagree-dtype":          # the same bytes: only the agreement tells
        all_reduce(8, "cpu", "f32" if rank == 0 else "s32")
    elif mode == "disagree-dtype-large":
        all_reduce(1 << 20, "cpu", "f32" if rank == 0 else "s32")
    elif mode == "hang-large":
        if rank == 1:
            time.sleep(600)
        all_reduce(1 << 20, "cpu")
    elif mode == "killed":
        all_reduce(8, "cpu")                # both ranks are here: rank 0 goes on at once
        if rank == 1:
            print("rank 1 is killed", flush=True)
            time.sleep(2)                   # rank 0 is waiting in the all-reduce by now
            os.kill(os.getpid(), signal.SIGKILL)
        all_reduce(1 << 20, "cpu")
    elif mode == "disagree-op":             # MPI's Iallreduce against its Iallgather
        if rank == 0:
            all_reduce(8, "cpu")
        else:
            text = cm.module(", replica_count=2", "  ROOT a = f32[16] all-gather(p), "
                             "replica_groups={}, dimensions={0}")
            xlapy.run_hlo(text, [[np.ones(8, np.float32)]], backend="cpu")


if __name__ == "__main__":
    main()
