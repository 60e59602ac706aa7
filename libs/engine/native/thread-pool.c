/*
 * Persistent pthread pool (see thread-pool.h).
 *
 * A job is published in one of two slots (by the parity of its number) and made claimable by storing
 * `claim` = (job number << 32) | next item. Anyone — the caller or a worker — takes an item by a
 * compare-and-swap on `claim` that also checks the job number, so an item is never taken from a job that
 * has moved on, and the caller waits only until every item has been *completed* (`done`), not for the
 * workers to notice the job: a worker the OS has descheduled (a busy neighbouring process) costs the
 * caller nothing unless it holds an item, and then only that item. The slot a worker reads is the one
 * its claim names; the caller rewrites a slot only two jobs later, after every item of the job in it has
 * been claimed and completed, so a successful claim always matches the fields read before it.
 *
 * Workers learn of a job by spinning briefly on `gen` or, once asleep, by a broadcast on `work_cv` (sent
 * only when someone sleeps, so back-to-back jobs cost no system call). The caller waits the same way: a
 * short spin on `done`, then `done_cv`. Both spins are capped at SPIN_NS: long enough to bridge the gap
 * between consecutive products of a layer, short enough that idle workers do not steal a shared core
 * from a neighbouring process.
 */
#include "thread-pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define SPIN_NS 20000

typedef struct {
  _Atomic(ot_pool_fn) fn;
  _Atomic(void *) ctx;
  atomic_int_fast64_t items;
} slot_t;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t work_cv, done_cv;
  pthread_t workers[OT_POOL_MAX_THREADS];
  int threads; /* including the caller */

  slot_t slot[2];
  atomic_uint_fast64_t claim; /* job number << 32 | next unclaimed item */
  atomic_int_fast64_t done;   /* items of the current job completed */
  atomic_uint gen;            /* the latest job number (bumped once more to make workers quit) */
  uint32_t job;               /* the caller's job counter */

  unsigned start_gen; /* `gen` when the current workers were created */
  atomic_int quit;    /* set (before a bump of `gen`) to make workers exit */
  int sleepers;       /* workers waiting on work_cv; under lock */
  int caller_waiting; /* caller waiting on done_cv; under lock */
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .work_cv = PTHREAD_COND_INITIALIZER, .done_cv = PTHREAD_COND_INITIALIZER, .threads = 1};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Claims and runs items of whatever job is current until none is left. */
static void run_items(int thread) {
  for (;;) {
    uint_fast64_t v = atomic_load_explicit(&pool.claim, memory_order_acquire);
    const slot_t *s = &pool.slot[(v >> 32) & 1];
    const ot_pool_fn fn = atomic_load_explicit(&s->fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&s->ctx, memory_order_relaxed);
    const int64_t items = atomic_load_explicit(&s->items, memory_order_relaxed), item = (int64_t)(v & 0xffffffffu);
    if (item >= items) return;
    if (!atomic_compare_exchange_weak_explicit(&pool.claim, &v, v + 1, memory_order_acq_rel, memory_order_relaxed)) continue;
    fn(ctx, item, thread);
    if (atomic_fetch_add_explicit(&pool.done, 1, memory_order_acq_rel) + 1 == items) {
      pthread_mutex_lock(&pool.lock);
      if (pool.caller_waiting) pthread_cond_signal(&pool.done_cv);
      pthread_mutex_unlock(&pool.lock);
    }
  }
}

static void *worker(void *arg) {
  int thread = (int)(intptr_t)arg;
  unsigned seen = pool.start_gen; /* not `gen`: a job may be published before this thread first runs */
  for (;;) {
    unsigned g = atomic_load_explicit(&pool.gen, memory_order_acquire);
    for (int64_t deadline = now_ns() + SPIN_NS; g == seen && now_ns() < deadline;) {
      cpu_relax();
      g = atomic_load_explicit(&pool.gen, memory_order_acquire);
    }
    if (g == seen) {
      pthread_mutex_lock(&pool.lock);
      while ((g = atomic_load(&pool.gen)) == seen) {
        pool.sleepers++;
        pthread_cond_wait(&pool.work_cv, &pool.lock);
        pool.sleepers--;
      }
      pthread_mutex_unlock(&pool.lock);
    }
    seen = g;
    if (atomic_load_explicit(&pool.quit, memory_order_relaxed)) return NULL;
    run_items(thread);
  }
}

void ot_pool_run(ot_pool_fn fn, void *ctx, int64_t items) {
  if (pool.threads == 1 || items <= 1) {
    for (int64_t i = 0; i < items; i++) fn(ctx, i, 0);
    return;
  }
  const uint32_t job = ++pool.job;
  slot_t *s = &pool.slot[job & 1];
  atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&s->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&s->items, items, memory_order_relaxed);
  atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
  atomic_store_explicit(&pool.claim, (uint_fast64_t)job << 32, memory_order_release);
  pthread_mutex_lock(&pool.lock);
  atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
  if (pool.sleepers) pthread_cond_broadcast(&pool.work_cv);
  pthread_mutex_unlock(&pool.lock);

  run_items(0);

  for (int64_t deadline = now_ns() + SPIN_NS; atomic_load_explicit(&pool.done, memory_order_acquire) < items && now_ns() < deadline;) cpu_relax();
  if (atomic_load_explicit(&pool.done, memory_order_acquire) < items) {
    pthread_mutex_lock(&pool.lock);
    pool.caller_waiting = 1;
    while (atomic_load(&pool.done) < items) pthread_cond_wait(&pool.done_cv, &pool.lock);
    pool.caller_waiting = 0;
    pthread_mutex_unlock(&pool.lock);
  }
}

static void stop_workers(void) {
  pthread_mutex_lock(&pool.lock);
  atomic_store(&pool.quit, 1);
  atomic_fetch_add(&pool.gen, 1);
  pthread_cond_broadcast(&pool.work_cv);
  pthread_mutex_unlock(&pool.lock);
  for (int t = 1; t < pool.threads; t++) pthread_join(pool.workers[t], NULL);
  atomic_store(&pool.quit, 0);
  pool.threads = 1;
}

void ot_pool_set_threads(int threads) {
  if (threads < 1) threads = 1;
  if (threads > OT_POOL_MAX_THREADS) threads = OT_POOL_MAX_THREADS;
  if (threads == pool.threads) return;
  stop_workers();
  pool.start_gen = atomic_load(&pool.gen);
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&pool.workers[t], NULL, worker, (void *)(intptr_t)t) != 0) break; /* keep the ones we got */
    pool.threads = t + 1;
  }
}

int ot_pool_threads(void) { return pool.threads; }
