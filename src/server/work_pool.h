/* A pool of worker threads for blocking work that must not hold the io_uring loop: removing
 * deleted trees from the trash, building a GetSnapshot archive. It knows no commands; a job
 * says what it runs on a worker and what the loop thread does with it afterwards.
 *
 * Threads and ownership. The loop thread submits a job and hands it over; a worker calls
 * job->run(job), which may touch only what the job carries (copies, paths, its own output
 * buffers: never the server's state, never a partition), queues the job as done and writes
 * the pool's eventfd. The loop thread, woken by that eventfd (a completion source of the
 * loop), calls sl_work_pool_drain, which calls job->done(job, true) for each finished job,
 * oldest first: the job is the loop thread's again and done must free it. Jobs still queued
 * when the pool is destroyed get done(job, false) from sl_work_pool_destroy, not run. Every
 * function but those run on the workers is for the loop thread. */
#ifndef SL_SERVER_WORK_POOL_H
#define SL_SERVER_WORK_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"

#define SL_WORK_POOL_THREADS_MAX 4u

typedef struct sl_work sl_work_t;
struct sl_work {
    void (*run)(sl_work_t *job);             /* on a worker */
    void (*done)(sl_work_t *job, bool ran); /* on the loop thread; frees the job */
    sl_work_t *next;                         /* the pool's */
};

typedef struct sl_work_pool sl_work_pool_t;

/* Starts threads (1..SL_WORK_POOL_THREADS_MAX) workers. 0 or -errno. */
SL_WUR int sl_work_pool_create(uint32_t threads, sl_work_pool_t **out);
/* Stops the workers (a job being run is finished first; its done is called), calls done(job,
 * false) for every job not run, closes the eventfd. NULL is allowed. */
void sl_work_pool_destroy(sl_work_pool_t *pool);
/* The eventfd that becomes readable when jobs are done. */
int sl_work_pool_event_fd(const sl_work_pool_t *pool);
/* Queues the job (never refused: callers bound what they submit). */
void sl_work_pool_submit(sl_work_pool_t *pool, sl_work_t *job);
/* Calls done(job, true) for every job finished so far. */
void sl_work_pool_drain(sl_work_pool_t *pool);
/* Jobs submitted whose done has not been called yet. */
uint32_t sl_work_pool_pending(const sl_work_pool_t *pool);
/* Test hook: while held, workers take no new job (a job in progress finishes). */
void sl_work_pool_hold(sl_work_pool_t *pool, bool hold);

#endif
