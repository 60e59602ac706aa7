/*
 * Persistent pthread pool (see thread-pool.h).
 *
 * A job is published by bumping `gen`; workers notice it by spinning briefly on `gen` or, once asleep,
 * by a broadcast on `work_cv` (sent only when someone sleeps, so back-to-back jobs cost no system call).
 * Items are claimed with an atomic counter, so a worker the OS runs late simply takes fewer of them.
 * The caller waits for the workers the same way: a short spin on `busy`, then `done_cv`.
 *
 * Both spins are capped at SPIN_NS: long enough to bridge the gap between consecutive products of a
 * layer, short enough that idle workers do not steal a shared core from a neighbouring process.
 */
#include "thread-pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define SPIN_NS 20000

static struct {
  pthread_mutex_t lock;
  pthread_cond_t work_cv, done_cv;
  pthread_t workers[OT_POOL_MAX_THREADS];
  int threads; /* including the caller */

  /* The current job; written by the caller before `gen` is bumped, read-only while it runs. */
  ot_pool_fn fn;
  void *ctx;
  int64_t items;
  atomic_int_fast64_t next; /* next unclaimed item */
  atomic_int busy;          /* workers that have not finished the current job */
  atomic_uint gen;          /* bumped once per job (and once to make workers quit) */

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

static void run_items(int thread) {
  for (int64_t i; (i = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed)) < pool.items;) pool.fn(pool.ctx, i, thread);
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
    if (atomic_fetch_sub_explicit(&pool.busy, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&pool.lock);
      if (pool.caller_waiting) pthread_cond_signal(&pool.done_cv);
      pthread_mutex_unlock(&pool.lock);
    }
  }
}

void ot_pool_run(ot_pool_fn fn, void *ctx, int64_t items) {
  if (pool.threads == 1 || items <= 1) {
    for (int64_t i = 0; i < items; i++) fn(ctx, i, 0);
    return;
  }
  pool.fn = fn;
  pool.ctx = ctx;
  pool.items = items;
  atomic_store_explicit(&pool.next, 0, memory_order_relaxed);
  atomic_store_explicit(&pool.busy, pool.threads - 1, memory_order_relaxed);
  pthread_mutex_lock(&pool.lock);
  atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
  if (pool.sleepers) pthread_cond_broadcast(&pool.work_cv);
  pthread_mutex_unlock(&pool.lock);

  run_items(0);

  for (int64_t deadline = now_ns() + SPIN_NS; atomic_load_explicit(&pool.busy, memory_order_acquire) && now_ns() < deadline;) cpu_relax();
  if (atomic_load_explicit(&pool.busy, memory_order_acquire)) {
    pthread_mutex_lock(&pool.lock);
    pool.caller_waiting = 1;
    while (atomic_load(&pool.busy)) pthread_cond_wait(&pool.done_cv, &pool.lock);
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
