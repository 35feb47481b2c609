/* The password-hash pool of sluiced: a few worker threads that run Argon2id
 * (sl_password_verify, sl_password_hash) so that a 70-100 ms login never
 * holds up the io_uring loop and the connections it serves.
 *
 * Threads and ownership. The loop thread submits a job and hands it over;
 * a worker reads only the job's inputs and writes only its outputs, then
 * queues it as done and writes 1 to the pool's eventfd. The loop thread,
 * woken by that eventfd, takes the done jobs back (sl_hash_pool_take_done)
 * and owns them again. Every other function is for the loop thread (the
 * thread that created the pool) only. The pool never looks at `owner`. */
#ifndef SL_SERVER_HASH_POOL_H
#define SL_SERVER_HASH_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "auth/secret.h"
#include "base/assert.h"

/* Worker threads a pool may have: each Argon2id run holds 19 MiB. */
#define SL_HASH_POOL_THREADS_MAX 4u
/* Passwords travel in u8-length fields (str8). */
#define SL_HASH_PASSWORD_MAX 255u

typedef struct sl_hash_job {
    /* Inputs, copies made at submission. */
    bool verify;  /* check password against phc */
    bool has_phc; /* false: verify against the dummy hash (same cost, false) */
    bool hash;    /* hash new_password into hash_out */
    uint8_t password_len;
    uint8_t new_password_len;
    char phc[SL_PASSWORD_HASH_MAX];
    uint8_t password[SL_HASH_PASSWORD_MAX];
    uint8_t new_password[SL_HASH_PASSWORD_MAX];
    /* Outputs; the password copies are wiped once they are used. */
    bool verified;
    int hash_rc; /* of sl_password_hash: 0 or -SL_ERR_ERROR */
    char hash_out[SL_PASSWORD_HASH_MAX];
    /* Loop thread only: whoever waits for the result (NULL: nobody). */
    void *owner;
    struct sl_hash_job *next;
} sl_hash_job_t;

typedef struct sl_hash_pool sl_hash_pool_t;

/* Starts threads (1..SL_HASH_POOL_THREADS_MAX) workers; at most queue_max
 * jobs (>= 1) may be submitted and not yet released. 0 or -errno. Limits
 * the process to one malloc arena (M_ARENA_MAX), so the memory Argon2id
 * takes in a worker is given back like the loop thread's. */
int sl_hash_pool_create(uint32_t threads, uint32_t queue_max, sl_hash_pool_t **out) SL_WUR;
/* Stops the workers (a job being computed is finished first), frees every
 * job still in the pool, closes the eventfd. NULL is allowed. */
void sl_hash_pool_destroy(sl_hash_pool_t *pool);
/* The eventfd that becomes readable (an 8-byte count) when jobs are done. */
int sl_hash_pool_event_fd(const sl_hash_pool_t *pool);

/* A zeroed job (malloc'd); NULL when out of memory. */
sl_hash_job_t *sl_hash_job_new(void);
/* Wipes the secrets in the job and frees it. NULL is allowed. */
void sl_hash_job_free(sl_hash_job_t *job);

/* Queues the job: 0, or -EAGAIN when queue_max jobs are in flight (the job
 * stays the caller's). */
int sl_hash_pool_submit(sl_hash_pool_t *pool, sl_hash_job_t *job) SL_WUR;
/* The jobs finished so far, oldest first, linked by next; NULL when none.
 * They are the caller's again but still count against queue_max until
 * sl_hash_pool_release. */
sl_hash_job_t *sl_hash_pool_take_done(sl_hash_pool_t *pool);
/* One job taken back is no longer in flight. */
void sl_hash_pool_release(sl_hash_pool_t *pool);
/* Jobs submitted and not yet released. */
uint32_t sl_hash_pool_in_flight(const sl_hash_pool_t *pool);

/* What a worker does with a job; exposed for tests. */
void sl_hash_job_run(sl_hash_job_t *job);

#endif
