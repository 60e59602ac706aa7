/*
 * A small persistent pthread pool for ot_gemm: a parallel-for over numbered work items.
 *
 * The calling thread is thread 0 and takes items too; workers 1..threads-1 wait between jobs. An idle
 * worker spins for at most a few tens of microseconds (so back-to-back products start fast) and then
 * sleeps on a condition variable, so an idle pool costs a neighbouring process nothing.
 *
 * Not reentrant: one thread drives the pool at a time (ot_pool_run and ot_pool_set_threads must not
 * overlap), and an item function must not call ot_pool_run.
 */
#ifndef OT_THREAD_POOL_H
#define OT_THREAD_POOL_H

#include <stdint.h>

/* Runs fn(ctx, item, thread) once for every item in [0, items); thread is in [0, ot_pool_threads()) and no
 * two items run on the same thread at once, so it can index per-thread scratch (items < 2^31). Items are handed out one
 * at a time in increasing order. Returns when all are done. */
typedef void (*ot_pool_fn)(void *ctx, int64_t item, int thread);
void ot_pool_run(ot_pool_fn fn, void *ctx, int64_t items);

/* Sets the thread count (clamped to [1, OT_POOL_MAX_THREADS]), starting or joining workers. With 1,
 * ot_pool_run is a plain loop on the calling thread, without any synchronisation. Starts at 1. */
#define OT_POOL_MAX_THREADS 256
void ot_pool_set_threads(int threads);
int ot_pool_threads(void);

#endif
