"""Parallel loops: each body outlined into a function that Tessel's own thread pool runs.

An OpenMP region ends at a barrier that waits for every member of the team, including a
worker the OS has not scheduled yet, even when the others have done all the iterations: on a
busy machine every parallel kernel then costs a wake-up of each worker, and a model of a
hundred kernels runs several times slower than on one thread. Here the calling thread claims
chunks of the loop itself, as do the workers that are awake, and it waits only for the chunks
a worker actually claimed (onnxruntime's pool does the same). A worker that wakes late finds
the work done and goes back to waiting.

The loop's body becomes a static function taking the locals and parameters it reads as its own
parameters (with the same types, so `restrict` pointers stay `restrict`), called through a
closure struct by `tessel_parallel_for(body, closure, begin, end)`. Its checked divisions
record their status in a local that is handed back to the caller's status at the end.

The pool belongs to the library (a static of its first translation unit), starts its workers at the
first parallel loop and lets a worker that has waited a second without work end. The team size
is the one OpenMP reports for the calling thread (`omp_get_max_threads`, which
`tessel.runtime.set_threads` and OMP_NUM_THREADS set), so it is shared by every library a
process loads. A call from a second thread while the pool runs a loop runs its loop on the
calling thread alone; a child after fork starts workers of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessel.codegen.c_expr import STATUS
from tessel.support.errors import InternalError

# Chunks per thread a loop is cut into: enough that the others take over a descheduled
# worker's share, few enough that each chunk stays long (contiguous rows, one claim each).
CHUNKS_PER_THREAD = 4

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What the body's identifiers are read from: comments and string literals removed.
_NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.DOTALL)


@dataclass(frozen=True)
class OutlinedLoop:
    """A parallel loop's body as C functions, and what the caller passes them."""

    definitions: str  # the body function, its closure struct and the trampoline
    trampoline: str  # the function tessel_parallel_for calls
    closure_type: str  # `struct ...`
    captured: tuple[str, ...]  # the caller's locals and parameters, in closure order
    status: bool  # True: the closure ends with a pointer to the caller's division status


def used_names(body: str) -> set[str]:
    """The identifiers the C text `body` uses (comments and string literals aside)."""
    return set(_IDENTIFIER.findall(_NOT_CODE.sub(" ", body)))


def outline(
    trampoline: str,
    body_name: str,
    body_lines: list[str],
    declared: dict[str, str],
    bound: set[str],
) -> OutlinedLoop:
    """Outline the loop `body_lines` (C lines using `tessel_begin` and `tessel_end` as its
    bounds) into the function `body_name`, called by `trampoline` (whose closure struct is
    named after it); `declared` holds the declarators of the caller's locals and parameters in
    scope, `bound` every name the caller had bound."""
    text = "\n".join(body_lines)
    used = used_names(text)
    captured = tuple(name for name in declared if name in used)
    undeclared = sorted((used & bound) - set(declared))
    if undeclared:  # a declaration site that does not record its type
        raise InternalError(
            f"a parallel loop reads {', '.join(undeclared)}, whose C types codegen did not "
            "record (NameScope.declare)"
        )
    status = STATUS in used
    params = [declared[name].format(name) for name in captured]
    params += ["int64_t tessel_begin", "int64_t tessel_end"]
    if status:
        params.append("int32_t* tessel_status_out")
    struct = f"struct {trampoline}_closure"
    lines = [f"static __attribute__((noinline)) void {body_name}({', '.join(params)}) {{"]
    if status:
        lines.append(f"  int32_t {STATUS} = 0;")
    lines.extend(body_lines)
    if status:
        lines.append(f"  if ({STATUS} != 0) tessel_fail_division(tessel_status_out, {STATUS});")
    lines.append("}")
    fields = [f"  {declared[name].format(name)};" for name in captured]
    if status:
        fields.append("  int32_t* tessel_status_out;")
    lines.append(f"{struct} {{")
    lines.extend(fields or ["  char tessel_unused;"])  # C has no empty struct
    lines.append("};")
    arguments = [f"c->{name}" for name in captured] + ["tessel_begin", "tessel_end"]
    if status:
        arguments.append("c->tessel_status_out")
    lines.append(
        f"static void {trampoline}(void* closure, int64_t tessel_begin, int64_t tessel_end) {{"
    )
    lines.append(f"  {struct}* c = ({struct}*)closure;")
    if not captured and not status:
        lines.append("  (void)c;")
    lines.append(f"  {body_name}({', '.join(arguments)});")
    lines.append("}")
    return OutlinedLoop("\n".join(lines) + "\n", trampoline, struct, captured, status)


def call_lines(loop: OutlinedLoop, closure: str, start: str, end: str) -> list[str]:
    """The caller's C lines running `loop` over [start, end) on the pool."""
    values = list(loop.captured) + ([f"&{STATUS}"] if loop.status else [])
    initializer = ", ".join(values) or "0"
    return [
        "{",
        f"  {loop.closure_type} {closure} = {{{initializer}}};",
        f"  tessel_parallel_for({loop.trampoline}, &{closure}, (int64_t)({start}), "
        f"(int64_t)({end}));",
        "}",
    ]


def needs_parallel_runtime(code: str) -> bool:
    """True if generated C text runs a loop on the pool."""
    return "tessel_parallel_for(" in code


# What a translation unit that runs loops on the pool but does not hold it declares
# (c_units.py); the pool's unit has it too, before the definition.
PARALLEL_DECLARATION = r"""
typedef void (*tessel_parallel_body_t)(void* closure, int64_t begin, int64_t end);
TESSEL_INTERNAL void tessel_parallel_for(tessel_parallel_body_t body, void* closure,
                                         int64_t begin, int64_t end);
"""

PARALLEL_RUNTIME = (
    PARALLEL_DECLARATION
    + r"""
/* The thread pool of parallel loops (tessel/codegen/c_parallel.py). One job at a time: the
   claim word holds the job's generation (high 32 bits), the helpers that joined it (8 bits)
   and the next chunk to claim (low 24 bits; all ones once the job is closed). A worker reads
   the job's fields, then joins and claims with compare-and-swap on that word: a swap that
   succeeds proves the generation is still current and not closed, so what it read is this
   job's (the caller closes a job before writing the next one's fields). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

#define TESSEL_POOL_CHUNK_BITS 24
#define TESSEL_POOL_CHUNK_MASK ((UINT64_C(1) << TESSEL_POOL_CHUNK_BITS) - 1)
#define TESSEL_POOL_CLOSED TESSEL_POOL_CHUNK_MASK
#define TESSEL_POOL_JOINED (UINT64_C(1) << TESSEL_POOL_CHUNK_BITS)
#define TESSEL_POOL_MAX_HELPERS 255
#define TESSEL_POOL_SPINS 20000 /* pauses a worker waits for the next job before sleeping */
#define TESSEL_POOL_WAIT_SPINS 2000 /* pauses the caller waits for a worker before yielding */
#define TESSEL_POOL_IDLE_SECONDS 1

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_once_t once;
  _Atomic uint64_t claim;
  _Atomic int64_t pending; /* chunks of the current job claimed or not, not yet finished */
  _Atomic(tessel_parallel_body_t) body;
  _Atomic(void*) closure;
  _Atomic int64_t begin, end, chunk_size, chunks, helpers;
  _Atomic int32_t sleepers, workers;
  atomic_flag busy;
} tessel_pool = {
  .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
  .once = PTHREAD_ONCE_INIT, .claim = TESSEL_POOL_CLOSED, .busy = ATOMIC_FLAG_INIT,
};

static inline void tessel_pool_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Claim and run chunks of the job of generation `generation` until none is left. */
static void tessel_pool_run(uint64_t generation, tessel_parallel_body_t body, void* closure,
                            int64_t begin, int64_t end, int64_t size, int64_t chunks) {
  uint64_t claim = atomic_load(&tessel_pool.claim);
  for (;;) {
    if ((claim >> 32) != generation || (int64_t)(claim & TESSEL_POOL_CHUNK_MASK) >= chunks)
      return;
    if (!atomic_compare_exchange_weak(&tessel_pool.claim, &claim, claim + 1)) continue;
    int64_t first = begin + (int64_t)(claim & TESSEL_POOL_CHUNK_MASK) * size;
    body(closure, first, first + size < end ? first + size : end);
    atomic_fetch_sub_explicit(&tessel_pool.pending, 1, memory_order_release);
    claim = atomic_load(&tessel_pool.claim);
  }
}

/* A worker's turn at the job it saw published as `claim`: join it if it still has chunks and
   room for one more helper, then claim chunks. */
static void tessel_pool_help(uint64_t claim) {
  uint64_t generation = claim >> 32;
  tessel_parallel_body_t body = atomic_load_explicit(&tessel_pool.body, memory_order_relaxed);
  void* closure = atomic_load_explicit(&tessel_pool.closure, memory_order_relaxed);
  int64_t begin = atomic_load_explicit(&tessel_pool.begin, memory_order_relaxed);
  int64_t end = atomic_load_explicit(&tessel_pool.end, memory_order_relaxed);
  int64_t size = atomic_load_explicit(&tessel_pool.chunk_size, memory_order_relaxed);
  int64_t chunks = atomic_load_explicit(&tessel_pool.chunks, memory_order_relaxed);
  int64_t helpers = atomic_load_explicit(&tessel_pool.helpers, memory_order_relaxed);
  for (;;) {
    if ((claim >> 32) != generation || (int64_t)(claim & TESSEL_POOL_CHUNK_MASK) >= chunks ||
        (int64_t)((claim >> TESSEL_POOL_CHUNK_BITS) & 0xff) >= helpers)
      return;
    if (atomic_compare_exchange_weak(&tessel_pool.claim, &claim, claim + TESSEL_POOL_JOINED))
      break;
  }
  tessel_pool_run(generation, body, closure, begin, end, size, chunks);
}

/* A worker's cached workspace blocks (c_prelude.py) go with it. */
static void tessel_pool_release_workspace_cache(void) {
  for (int slot = 0; slot < TESSEL_WORKSPACE_CACHE_SLOTS; ++slot) {
    void* cached = tessel_workspace_cache[slot];
    tessel_workspace_cache[slot] = NULL;
    if (cached != NULL) free((char*)cached - tessel_header_of(cached)->alignment);
  }
}

static void* tessel_pool_worker(void* argument) {
  uint64_t seen = (uint64_t)(uintptr_t)argument; /* the generation before its first job */
  for (;;) {
    uint64_t claim = atomic_load(&tessel_pool.claim);
    for (int spin = 0; (claim >> 32) == seen && spin < TESSEL_POOL_SPINS; ++spin) {
      tessel_pool_pause();
      claim = atomic_load(&tessel_pool.claim);
    }
    if ((claim >> 32) == seen) { /* no job for a while: sleep, and end after a second more */
      struct timespec deadline;
      timespec_get(&deadline, TIME_UTC);
      deadline.tv_sec += TESSEL_POOL_IDLE_SECONDS;
      pthread_mutex_lock(&tessel_pool.lock);
      atomic_fetch_add(&tessel_pool.sleepers, 1);
      int timed_out = 0;
      while ((claim = atomic_load(&tessel_pool.claim)) >> 32 == seen && !timed_out)
        timed_out = pthread_cond_timedwait(&tessel_pool.wake, &tessel_pool.lock, &deadline) != 0;
      atomic_fetch_sub(&tessel_pool.sleepers, 1);
      if ((claim >> 32) == seen) {
        atomic_fetch_sub(&tessel_pool.workers, 1);
        pthread_mutex_unlock(&tessel_pool.lock);
        tessel_pool_release_workspace_cache();
        return NULL;
      }
      pthread_mutex_unlock(&tessel_pool.lock);
    }
    seen = claim >> 32;
    tessel_pool_help(claim);
  }
}

/* In a child after fork: no worker exists there, and the lock may have been held. */
static void tessel_pool_after_fork(void) {
  pthread_mutex_init(&tessel_pool.lock, NULL);
  pthread_cond_init(&tessel_pool.wake, NULL);
  atomic_store(&tessel_pool.workers, 0);
  atomic_store(&tessel_pool.sleepers, 0);
  atomic_store(&tessel_pool.claim, (atomic_load(&tessel_pool.claim) & ~TESSEL_POOL_CHUNK_MASK) |
                                       TESSEL_POOL_CLOSED);
  atomic_flag_clear(&tessel_pool.busy);
}

static void tessel_pool_register_fork(void) {
  pthread_atfork(NULL, NULL, tessel_pool_after_fork);
}

/* Start workers until there are `count` (a worker that cannot be started is not needed: the
   caller runs every chunk nobody else claims). */
static void tessel_pool_start_workers(int32_t count, uint64_t generation) {
  pthread_once(&tessel_pool.once, tessel_pool_register_fork);
  pthread_mutex_lock(&tessel_pool.lock);
  while (atomic_load(&tessel_pool.workers) < count) {
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    int failed = pthread_create(&thread, &attributes, tessel_pool_worker,
                                (void*)(uintptr_t)generation);
    pthread_attr_destroy(&attributes);
    if (failed) break;
    atomic_fetch_add(&tessel_pool.workers, 1);
  }
  pthread_mutex_unlock(&tessel_pool.lock);
}

static int32_t tessel_pool_team(void) {
#if defined(_OPENMP)
  return (int32_t)omp_get_max_threads();
#else
  return 1;
#endif
}

/* Run body(closure, b, e) over [begin, end) in chunks, on the calling thread and the workers
   that are free to help; returns when every chunk has run. */
TESSEL_INTERNAL void tessel_parallel_for(tessel_parallel_body_t body, void* closure,
                                         int64_t begin, int64_t end) {
  int64_t count = end - begin;
  if (count <= 0) return;
  int64_t team = tessel_pool_team();
  if (team > count) team = count;
  if (team > TESSEL_POOL_MAX_HELPERS + 1) team = TESSEL_POOL_MAX_HELPERS + 1;
  if (team <= 1 || atomic_flag_test_and_set(&tessel_pool.busy)) {
    body(closure, begin, end);
    return;
  }
  uint64_t previous = atomic_load(&tessel_pool.claim) >> 32;
  if (atomic_load_explicit(&tessel_pool.workers, memory_order_relaxed) < team - 1)
    tessel_pool_start_workers((int32_t)(team - 1), previous);
  int64_t chunks = team * @CHUNKS_PER_THREAD@;
  if (chunks > count) chunks = count;
  int64_t size = (count + chunks - 1) / chunks;
  chunks = (count + size - 1) / size;
  atomic_store_explicit(&tessel_pool.body, body, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.closure, closure, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.begin, begin, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.end, end, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.chunk_size, size, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.chunks, chunks, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.helpers, team - 1, memory_order_relaxed);
  atomic_store_explicit(&tessel_pool.pending, chunks, memory_order_relaxed);
  uint64_t generation = (previous + 1) & 0xffffffffu;
  atomic_store(&tessel_pool.claim, generation << 32); /* publish: chunk 0, nobody joined */
  if (atomic_load(&tessel_pool.sleepers) > 0) {
    pthread_mutex_lock(&tessel_pool.lock);
    pthread_cond_broadcast(&tessel_pool.wake);
    pthread_mutex_unlock(&tessel_pool.lock);
  }
  tessel_pool_run(generation, body, closure, begin, end, size, chunks);
  /* Only chunks a worker claimed are left: wait for those, yielding the core to it if it
     was descheduled. */
  for (int spin = 0; atomic_load_explicit(&tessel_pool.pending, memory_order_acquire) > 0;
       ++spin) {
    if (spin < TESSEL_POOL_WAIT_SPINS) tessel_pool_pause(); else sched_yield();
  }
  atomic_store(&tessel_pool.claim, (generation << 32) | TESSEL_POOL_CLOSED);
  atomic_flag_clear(&tessel_pool.busy);
}
""".replace("@CHUNKS_PER_THREAD@", str(CHUNKS_PER_THREAD))
)


__all__ = [
    "CHUNKS_PER_THREAD",
    "PARALLEL_RUNTIME",
    "PARALLEL_DECLARATION",
    "OutlinedLoop",
    "call_lines",
    "needs_parallel_runtime",
    "outline",
    "used_names",
]
