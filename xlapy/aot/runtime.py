"""The small runtime inside an ahead-of-time object: one-time setup and the thread pool.

Given as LLVM IR text (:func:`runtime_ir`), linked into the object next to the generated
entry function; every symbol is internal and prefixed with the object's name.

- ``P_init()``: runs once per process (an atomic state word; a concurrent first call
  waits): with BLAS it sets OpenBLAS to one thread (the pool is the only parallelism,
  as in the JIT, ``blas_lib.py``), and with ``threads > 1`` it starts ``threads - 1``
  detached worker threads (``pthread_create``; if one cannot be started, the pool runs
  with those that were). With one thread there is no pool and no pthread call.
- ``P_parallel(kernel, kind, table, units, scratch, stride, chunk)``: runs a kernel over
  ``[0, units)`` on the calling thread and the workers. Work is handed out in chunks of
  ``chunk`` units from an atomic counter; ``kind`` 1 kernels take a fourth argument, the
  thread's scratch slice ``scratch + worker * stride``. One job at a time (a dispatch
  mutex): concurrent ``NAME_run`` calls share the pool and take turns per kernel. A worker
  that wakes for a new job (a generation counter, a "work" condition variable) counts
  itself active under the mutex until its chunks are done; the caller waits (a "done"
  condition variable) only for active workers -- one the scheduler has not woken yet
  costs nothing, it joins whatever job is current when it gets the mutex -- and a new job
  waits for stragglers of the last one before it replaces the job's globals. Workers,
  started before any job, follow the generation from 0.

Like any pthread pool, it does not survive ``fork``: a child forked after the first call
has no workers and must not call a threaded object. The pthread objects are zero-filled
globals initialised with ``pthread_*_init`` and sized
generously (128 bytes) for any libc. Linking needs ``-lpthread`` on older glibc.
"""
from __future__ import annotations

_SYNC_BYTES = 128

_ONCE = r"""
@P_state = internal global i32 0
declare i32 @sched_yield()
BLAS_DECL

define internal void @P_init() {
entry:
  %s = load atomic i32, ptr @P_state acquire, align 4
  %ready = icmp eq i32 %s, 2
  br i1 %ready, label %exit, label %claim
claim:
  %pair = cmpxchg ptr @P_state, i32 0, i32 1 seq_cst seq_cst
  %won = extractvalue { i32, i1 } %pair, 1
  br i1 %won, label %start, label %wait
start:
  call void @P_start()
  store atomic i32 2, ptr @P_state release, align 4
  br label %exit
wait:
  %y = call i32 @sched_yield()
  %s2 = load atomic i32, ptr @P_state acquire, align 4
  %ready2 = icmp eq i32 %s2, 2
  br i1 %ready2, label %exit, label %wait
exit:
  ret void
}
"""

_SERIAL_START = r"""
define internal void @P_start() {
entry:
  BLAS_CALL
  ret void
}
"""

_POOL = r"""
@P_workers = internal global i32 0
@P_mutex = internal global [SYNC x i8] zeroinitializer, align 64
@P_dispatch = internal global [SYNC x i8] zeroinitializer, align 64
@P_work = internal global [SYNC x i8] zeroinitializer, align 64
@P_done = internal global [SYNC x i8] zeroinitializer, align 64
@P_gen = internal global i64 0
@P_active = internal global i32 0
@P_next = internal global i64 0, align 64
@P_job_fn = internal global ptr null
@P_job_kind = internal global i32 0
@P_job_table = internal global ptr null
@P_job_units = internal global i64 0
@P_job_chunk = internal global i64 1
@P_job_scratch = internal global ptr null
@P_job_stride = internal global i64 0

declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)

define internal void @P_call(ptr %fn, i32 %kind, ptr %table, i64 %lo, i64 %hi, ptr %scratch) {
entry:
  %plain = icmp eq i32 %kind, 0
  br i1 %plain, label %three, label %four
three:
  call void %fn(ptr %table, i64 %lo, i64 %hi)
  ret void
four:
  call void %fn(ptr %table, i64 %lo, i64 %hi, ptr %scratch)
  ret void
}

define internal void @P_chunks(i64 %worker) {
entry:
  %fn = load ptr, ptr @P_job_fn
  %kind = load i32, ptr @P_job_kind
  %table = load ptr, ptr @P_job_table
  %units = load i64, ptr @P_job_units
  %chunk = load i64, ptr @P_job_chunk
  %sbase = load ptr, ptr @P_job_scratch
  %stride = load i64, ptr @P_job_stride
  %soff = mul i64 %worker, %stride
  %scratch = getelementptr i8, ptr %sbase, i64 %soff
  br label %loop
loop:
  %c = atomicrmw add ptr @P_next, i64 1 seq_cst
  %lo = mul i64 %c, %chunk
  %done = icmp uge i64 %lo, %units
  br i1 %done, label %exit, label %work
work:
  %hi0 = add i64 %lo, %chunk
  %over = icmp ugt i64 %hi0, %units
  %hi = select i1 %over, i64 %units, i64 %hi0
  call void @P_call(ptr %fn, i32 %kind, ptr %table, i64 %lo, i64 %hi, ptr %scratch)
  br label %loop
exit:
  ret void
}

define internal ptr @P_worker(ptr %arg) {
entry:
  %id = ptrtoint ptr %arg to i64
  %l0 = call i32 @pthread_mutex_lock(ptr @P_mutex)
  br label %wait
wait:
  %seen = phi i64 [ 0, %entry ], [ %seen, %sleep ], [ %g, %finish ]
  %g = load i64, ptr @P_gen
  %same = icmp eq i64 %g, %seen
  br i1 %same, label %sleep, label %run
sleep:
  %w = call i32 @pthread_cond_wait(ptr @P_work, ptr @P_mutex)
  br label %wait
run:
  %a0 = load i32, ptr @P_active
  %a1 = add i32 %a0, 1
  store i32 %a1, ptr @P_active
  %u = call i32 @pthread_mutex_unlock(ptr @P_mutex)
  call void @P_chunks(i64 %id)
  %l = call i32 @pthread_mutex_lock(ptr @P_mutex)
  %p = load i32, ptr @P_active
  %p1 = sub i32 %p, 1
  store i32 %p1, ptr @P_active
  %last = icmp eq i32 %p1, 0
  br i1 %last, label %signal, label %finish
signal:
  %s = call i32 @pthread_cond_broadcast(ptr @P_done)
  br label %finish
finish:
  br label %wait
}

define internal void @P_start() {
entry:
  BLAS_CALL
  %a = call i32 @pthread_mutex_init(ptr @P_mutex, ptr null)
  %b = call i32 @pthread_mutex_init(ptr @P_dispatch, ptr null)
  %c = call i32 @pthread_cond_init(ptr @P_work, ptr null)
  %d = call i32 @pthread_cond_init(ptr @P_done, ptr null)
  %tid = alloca i64
  br label %loop
loop:
  %k = phi i64 [ 1, %entry ], [ %k1, %created ]
  %more = icmp slt i64 %k, THREADS
  br i1 %more, label %create, label %exit
create:
  %arg = inttoptr i64 %k to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @P_worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %created, label %exit
created:
  %t = load i64, ptr %tid
  %dr = call i32 @pthread_detach(i64 %t)
  %k1 = add i64 %k, 1
  br label %loop
exit:
  %n = phi i64 [ %k, %loop ], [ %k, %create ]
  %n1 = sub i64 %n, 1
  %n32 = trunc i64 %n1 to i32
  store i32 %n32, ptr @P_workers
  ret void
}

define internal void @P_parallel(ptr %fn, i32 %kind, ptr %table, i64 %units, ptr %scratch,
                                 i64 %stride, i64 %chunk) {
entry:
  %nw = load i32, ptr @P_workers
  %alone = icmp eq i32 %nw, 0
  br i1 %alone, label %direct, label %share
direct:
  call void @P_call(ptr %fn, i32 %kind, ptr %table, i64 0, i64 %units, ptr %scratch)
  ret void
share:
  %d = call i32 @pthread_mutex_lock(ptr @P_dispatch)
  %l = call i32 @pthread_mutex_lock(ptr @P_mutex)
  br label %drain
drain:
  %busy0 = load i32, ptr @P_active
  %straggler = icmp ne i32 %busy0, 0
  br i1 %straggler, label %drain.wait, label %post
drain.wait:
  %w0 = call i32 @pthread_cond_wait(ptr @P_done, ptr @P_mutex)
  br label %drain
post:
  store ptr %fn, ptr @P_job_fn
  store i32 %kind, ptr @P_job_kind
  store ptr %table, ptr @P_job_table
  store i64 %units, ptr @P_job_units
  store i64 %chunk, ptr @P_job_chunk
  store ptr %scratch, ptr @P_job_scratch
  store i64 %stride, ptr @P_job_stride
  store atomic i64 0, ptr @P_next seq_cst, align 8
  %g = load i64, ptr @P_gen
  %g1 = add i64 %g, 1
  store i64 %g1, ptr @P_gen
  %bc = call i32 @pthread_cond_broadcast(ptr @P_work)
  %u = call i32 @pthread_mutex_unlock(ptr @P_mutex)
  call void @P_chunks(i64 0)
  %l2 = call i32 @pthread_mutex_lock(ptr @P_mutex)
  br label %check
check:
  %p = load i32, ptr @P_active
  %busy = icmp ne i32 %p, 0
  br i1 %busy, label %sleep, label %out
sleep:
  %w = call i32 @pthread_cond_wait(ptr @P_done, ptr @P_mutex)
  br label %check
out:
  %u2 = call i32 @pthread_mutex_unlock(ptr @P_mutex)
  %u3 = call i32 @pthread_mutex_unlock(ptr @P_dispatch)
  ret void
}
"""


def runtime_ir(prefix: str, threads: int, blas_threads_symbol: str | None) -> str:
    """The runtime's LLVM IR for the object ``prefix`` (module docstring);
    ``blas_threads_symbol``: OpenBLAS's ``set_num_threads`` to call once (None: no BLAS)."""
    blas_decl = blas_call = ""
    if blas_threads_symbol:
        blas_decl = f"declare void @{blas_threads_symbol}(i32)"
        blas_call = f"call void @{blas_threads_symbol}(i32 1)"
    text = _ONCE + (_POOL if threads > 1 else _SERIAL_START)
    return (text.replace("BLAS_DECL", blas_decl).replace("BLAS_CALL", blas_call)
            .replace("THREADS", str(int(threads))).replace("SYNC", str(_SYNC_BYTES))
            .replace("@P_", f"@{prefix}_rt_"))


#: The runtime's entry points as the generated code calls them.
RUNTIME_FUNCTIONS = ("init", "parallel")

__all__ = ["runtime_ir", "RUNTIME_FUNCTIONS"]
