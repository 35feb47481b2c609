/* Requests waiting for Argon2id: admission hands the hashing to the pool
 * (server/hash_pool.h) and the loop thread picks the request up again when
 * the pool's eventfd fires. Only the hashing leaves the loop thread; the
 * checks, the journal commit and apply run there, in the resumed request. */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "server/server.h"

int sl_hashing_submit(sl_session_t *s, const sl_request_header_t *req, sl_span_t body,
                      sl_hash_job_t *job)
{
    sl_assert(s->hash_job == NULL); /* lockstep: one request per connection */
    if (!job)
        return -ENOMEM;
    job->owner = s;
    int rc = sl_hash_pool_submit(s->server->hash_pool, job);
    if (rc != 0) {
        sl_hash_job_free(job);
        sl_log_warn("connection %u: password hashing queue full", s->id);
        return rc;
    }
    s->hash_job = job;
    s->hash_req = *req;
    s->hash_body = body;
    return 0;
}

sl_hash_job_t *sl_hashing_verify_job(const sl_meta_user_t *u, sl_span_t password)
{
    sl_hash_job_t *job = sl_hash_job_new();
    if (!job)
        return NULL;
    sl_assert(password.len <= SL_HASH_PASSWORD_MAX);
    job->verify = true;
    memcpy(job->password, password.ptr, password.len);
    job->password_len = (uint8_t)password.len;
    /* A hash that does not fit is checked like a missing one: the dummy. */
    if (u && u->password_hash.len < sizeof(job->phc)) {
        memcpy(job->phc, u->password_hash.ptr, u->password_hash.len);
        job->has_phc = true;
    }
    return job;
}

bool sl_hashing_same_hash(const sl_hash_job_t *job, const sl_meta_user_t *u)
{
    bool has = u && u->password_hash.len < sizeof(job->phc);
    if (has != job->has_phc)
        return false;
    return !has || (strlen(job->phc) == u->password_hash.len &&
                    memcmp(job->phc, u->password_hash.ptr, u->password_hash.len) == 0);
}

/* One finished job. Its session may be gone (owner NULL), or closing:
 * then the request is completed without a reply. */
static void resume(sl_server_t *srv, sl_hash_job_t *job)
{
    sl_session_t *s = job->owner;
    if (!s)
        return;
    sl_assert(s->hash_job == job);
    s->hash_job = NULL;
    if (sl_conn_closing(s->conn))
        return;
    /* Jobs come back on the eventfd completion, before the turn delivers
     * frames; sends are staged only between delivery and the turn's end
     * (on_turn_end commits them), so none can be pending here. */
    sl_assert(srv->staged_count == 0);
    if (s->hash_req.operation == SL_OP_REGISTER)
        sl_admit_register_resume(s, job);
    else
        sl_admit_metadata_resume(s, job);
}

void sl_hashing_on_event(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_hash_job_t *job = sl_hash_pool_take_done(srv->hash_pool);
    /* Each job comes back once; the pool bounds how many are out. */
    while (job) {
        sl_hash_job_t *next = job->next;
        /* Released first, so a resumed request may submit again. */
        sl_hash_pool_release(srv->hash_pool);
        resume(srv, job);
        sl_hash_job_free(job);
        job = next;
    }
}

void sl_hashing_cancel(sl_session_t *s)
{
    if (!s->hash_job)
        return;
    s->hash_job->owner = NULL;
    s->hash_job = NULL;
}
