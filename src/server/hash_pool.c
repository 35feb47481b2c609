/* The password-hash pool (server/hash_pool.h): a mutex-guarded queue of
 * jobs to do, one of jobs done, worker threads between them, and an eventfd
 * that tells the io_uring loop when something is done. */
#include "server/hash_pool.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"

struct sl_hash_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sl_hash_job_t *todo_head, *todo_tail; /* guarded by mu */
    sl_hash_job_t *done_head, *done_tail; /* guarded by mu */
    bool stop;                            /* guarded by mu */
    int event_fd;
    uint32_t threads; /* started */
    pthread_t tid[SL_HASH_POOL_THREADS_MAX];
    /* Loop thread only. */
    uint32_t in_flight;
    uint32_t queue_max;
};

sl_hash_job_t *sl_hash_job_new(void)
{
    return calloc(1, sizeof(sl_hash_job_t));
}

static void job_wipe(sl_hash_job_t *job)
{
    explicit_bzero(job->password, sizeof(job->password));
    explicit_bzero(job->new_password, sizeof(job->new_password));
}

void sl_hash_job_free(sl_hash_job_t *job)
{
    if (!job)
        return;
    job_wipe(job);
    free(job);
}

void sl_hash_job_run(sl_hash_job_t *job)
{
    if (job->verify)
        job->verified = sl_password_verify(job->has_phc ? job->phc : NULL,
                                           sl_span(job->password, job->password_len));
    if (job->hash)
        job->hash_rc =
            sl_password_hash(sl_span(job->new_password, job->new_password_len), job->hash_out);
    job_wipe(job);
}

static void list_push(sl_hash_job_t **head, sl_hash_job_t **tail, sl_hash_job_t *job)
{
    job->next = NULL;
    if (*tail)
        (*tail)->next = job;
    else
        *head = job;
    *tail = job;
}

static void list_free(sl_hash_job_t *job)
{
    /* Each job is on one list once; the list ends. */
    while (job) {
        sl_hash_job_t *next = job->next;
        sl_hash_job_free(job);
        job = next;
    }
}

static void *worker_main(void *arg)
{
    sl_hash_pool_t *pool = arg;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->stop && !pool->todo_head)
            pthread_cond_wait(&pool->cv, &pool->mu);
        if (pool->stop)
            break;
        sl_hash_job_t *job = pool->todo_head;
        pool->todo_head = job->next;
        if (!pool->todo_head)
            pool->todo_tail = NULL;
        pthread_mutex_unlock(&pool->mu);

        sl_hash_job_run(job);

        pthread_mutex_lock(&pool->mu);
        list_push(&pool->done_head, &pool->done_tail, job);
        /* Under the lock, so destroy cannot close the fd meanwhile. An
         * eventfd only fails to add at a count near 2^64. */
        uint64_t one = 1;
        ssize_t n = write(pool->event_fd, &one, sizeof(one));
        (void)n;
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

/* Workers take no signals: the loop thread keeps receiving SIGINT/SIGTERM
 * exactly as before the pool existed. */
static int start_workers(sl_hash_pool_t *pool, uint32_t threads)
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

int sl_hash_pool_create(uint32_t threads, uint32_t queue_max, sl_hash_pool_t **out)
{
    *out = NULL;
    if (threads < 1 || threads > SL_HASH_POOL_THREADS_MAX || queue_max < 1)
        return -EINVAL;
    /* glibc gives a new thread its own malloc arena, and malloc_trim cannot
     * shrink the top of such an arena: Argon2id's 19 MiB would stay resident
     * after every login. With one arena the workers allocate from the main
     * one, which the trim after each hash (auth/secret.c) gives back. The
     * workers allocate once per job, so they hardly contend for it. */
    if (mallopt(M_ARENA_MAX, 1) != 1)
        sl_log_warn("mallopt(M_ARENA_MAX): memory after logins may stay resident");
    sl_hash_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return -ENOMEM;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    pool->queue_max = queue_max;
    pool->event_fd = eventfd(0, EFD_CLOEXEC);
    int err = pool->event_fd < 0 ? -errno : start_workers(pool, threads);
    if (err) {
        sl_hash_pool_destroy(pool);
        return err;
    }
    *out = pool;
    return 0;
}

void sl_hash_pool_destroy(sl_hash_pool_t *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    for (uint32_t i = 0; i < pool->threads; i++)
        pthread_join(pool->tid[i], NULL);
    list_free(pool->todo_head);
    list_free(pool->done_head);
    if (pool->event_fd >= 0)
        close(pool->event_fd);
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

int sl_hash_pool_event_fd(const sl_hash_pool_t *pool)
{
    return pool->event_fd;
}

int sl_hash_pool_submit(sl_hash_pool_t *pool, sl_hash_job_t *job)
{
    if (pool->in_flight >= pool->queue_max)
        return -EAGAIN;
    pool->in_flight++;
    pthread_mutex_lock(&pool->mu);
    list_push(&pool->todo_head, &pool->todo_tail, job);
    pthread_cond_signal(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    return 0;
}

sl_hash_job_t *sl_hash_pool_take_done(sl_hash_pool_t *pool)
{
    pthread_mutex_lock(&pool->mu);
    sl_hash_job_t *done = pool->done_head;
    pool->done_head = pool->done_tail = NULL;
    pthread_mutex_unlock(&pool->mu);
    return done;
}

void sl_hash_pool_release(sl_hash_pool_t *pool)
{
    sl_assert(pool->in_flight > 0);
    pool->in_flight--;
}

uint32_t sl_hash_pool_in_flight(const sl_hash_pool_t *pool)
{
    return pool->in_flight;
}
