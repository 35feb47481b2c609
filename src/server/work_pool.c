/* The worker pool (server/work_pool.h): a mutex-guarded queue of jobs to run, one of jobs
 * done, worker threads between them, and an eventfd that tells the io_uring loop. */
#include "server/work_pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct sl_work_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sl_work_t *todo_head, *todo_tail; /* guarded by mu */
    sl_work_t *done_head, *done_tail; /* guarded by mu */
    bool stop;                        /* guarded by mu */
    bool hold;                        /* guarded by mu */
    int event_fd;
    uint32_t threads;
    pthread_t tid[SL_WORK_POOL_THREADS_MAX];
    uint32_t pending; /* loop thread only */
};

static void list_push(sl_work_t **head, sl_work_t **tail, sl_work_t *job)
{
    job->next = NULL;
    if (*tail)
        (*tail)->next = job;
    else
        *head = job;
    *tail = job;
}

static void *worker_main(void *arg)
{
    sl_work_pool_t *pool = arg;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->stop && (pool->hold || !pool->todo_head))
            pthread_cond_wait(&pool->cv, &pool->mu);
        if (pool->stop)
            break;
        sl_work_t *job = pool->todo_head;
        pool->todo_head = job->next;
        if (!pool->todo_head)
            pool->todo_tail = NULL;
        pthread_mutex_unlock(&pool->mu);

        job->run(job);

        pthread_mutex_lock(&pool->mu);
        list_push(&pool->done_head, &pool->done_tail, job);
        /* Under the lock, so destroy cannot close the fd meanwhile. */
        uint64_t one = 1;
        ssize_t n = write(pool->event_fd, &one, sizeof(one));
        (void)n;
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

/* Workers take no signals: the loop thread keeps SIGINT and SIGTERM. */
static int start_workers(sl_work_pool_t *pool, uint32_t threads)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    for (uint32_t i = 0; i < threads && !err; i++) {
        err = pthread_create(&pool->tid[i], NULL, worker_main, pool);
        if (!err)
            pool->threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -err;
}

int sl_work_pool_create(uint32_t threads, sl_work_pool_t **out)
{
    *out = NULL;
    if (threads < 1 || threads > SL_WORK_POOL_THREADS_MAX)
        return -EINVAL;
    sl_work_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return -ENOMEM;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    pool->event_fd = eventfd(0, EFD_CLOEXEC);
    int err = pool->event_fd < 0 ? -errno : start_workers(pool, threads);
    if (err) {
        sl_work_pool_destroy(pool);
        return err;
    }
    *out = pool;
    return 0;
}

static void call_done(sl_work_pool_t *pool, sl_work_t *job, bool ran)
{
    /* Each job is on one list once; the list ends. */
    while (job) {
        sl_work_t *next = job->next;
        pool->pending--;
        job->done(job, ran);
        job = next;
    }
}

void sl_work_pool_destroy(sl_work_pool_t *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    for (uint32_t i = 0; i < pool->threads; i++)
        pthread_join(pool->tid[i], NULL);
    call_done(pool, pool->done_head, true);
    call_done(pool, pool->todo_head, false);
    if (pool->event_fd >= 0)
        close(pool->event_fd);
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

int sl_work_pool_event_fd(const sl_work_pool_t *pool)
{
    return pool->event_fd;
}

void sl_work_pool_submit(sl_work_pool_t *pool, sl_work_t *job)
{
    sl_assert(job->run && job->done);
    pool->pending++;
    pthread_mutex_lock(&pool->mu);
    list_push(&pool->todo_head, &pool->todo_tail, job);
    pthread_cond_signal(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
}

void sl_work_pool_drain(sl_work_pool_t *pool)
{
    pthread_mutex_lock(&pool->mu);
    sl_work_t *done = pool->done_head;
    pool->done_head = pool->done_tail = NULL;
    pthread_mutex_unlock(&pool->mu);
    call_done(pool, done, true);
}

uint32_t sl_work_pool_pending(const sl_work_pool_t *pool)
{
    return pool->pending;
}

void sl_work_pool_hold(sl_work_pool_t *pool, bool hold)
{
    pthread_mutex_lock(&pool->mu);
    pool->hold = hold;
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
}
