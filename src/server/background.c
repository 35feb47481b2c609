/* Work that leaves the loop thread for the worker pool (server/work_pool.h): removing trees
 * moved to the trash, and building GetSnapshot archives. A job carries copies of what it
 * needs (a path; the snapshot's settings and config text) and nothing that points into the
 * server; a request waiting for one stays in lockstep with its frame delivered and is
 * answered when the job comes back, like a login waiting for the hash pool. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "server/diag.h"
#include "server/server.h"

/* --- the trash ---------------------------------------------------------------------- */

typedef struct discard_job {
    sl_work_t work;
    char path[];
} discard_job_t;

static void discard_run(sl_work_t *w)
{
    discard_job_t *job = (discard_job_t *)w;
    if (sl_store_remove_tree(job->path) < 0)
        sl_log_warn("%s: part of it is left in the trash until the next boot", job->path);
}

static void discard_done(sl_work_t *w, bool ran)
{
    (void)ran; /* not run (shutdown): the next boot sweeps it */
    free(w);
}

void sl_background_discard(void *ctx, const char *path)
{
    sl_server_t *srv = ctx;
    size_t len = strlen(path);
    discard_job_t *job = malloc(sizeof(*job) + len + 1);
    if (!job) {
        sl_log_warn("%s: out of memory; left in the trash until the next boot", path);
        return;
    }
    job->work = (sl_work_t){.run = discard_run, .done = discard_done};
    memcpy(job->path, path, len + 1);
    sl_work_pool_submit(srv->work_pool, &job->work);
}

/* --- GetSnapshot -------------------------------------------------------------------- */

struct sl_snapshot_job {
    sl_work_t work;
    sl_session_t *owner; /* loop thread only; NULL once the connection closed */
    sl_server_t *server; /* loop thread only */
    sl_request_header_t req;
    /* Inputs, copies. */
    char data_dir[4096];
    char *config_text;
    size_t config_len;
    uint64_t frame_limit;
    uint8_t compression;
    uint8_t types[256];
    uint8_t types_count;
    /* Outputs. */
    int rc;
    sl_buf_t zip;
};

static void snapshot_run(sl_work_t *w)
{
    sl_snapshot_job_t *job = (sl_snapshot_job_t *)w;
    sl_diag_input_t in = {
        .data_dir = job->data_dir,
        .config_text = sl_span(job->config_text, job->config_len),
        .frame_limit = job->frame_limit,
    };
    job->rc = sl_diag_snapshot(&in, job->compression, job->types, job->types_count, &job->zip);
}

static void snapshot_free(sl_snapshot_job_t *job)
{
    free(job->config_text);
    sl_buf_free(&job->zip);
    free(job);
}

static void snapshot_done(sl_work_t *w, bool ran)
{
    sl_snapshot_job_t *job = (sl_snapshot_job_t *)w;
    sl_session_t *s = job->owner;
    if (s) {
        sl_assert(s->snapshot_job == job);
        s->snapshot_job = NULL;
    }
    if (!s || sl_conn_closing(s->conn)) {
        snapshot_free(job);
        return;
    }
    if (!ran || job->rc != 0) {
        sl_reply_status(s, &job->req,
                        (uint32_t)(ran ? -job->rc : SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED));
        snapshot_free(job);
        return;
    }
    /* The archive becomes the reply buffer (no copy on the loop), counted as a reply
     * that was built (reply_budget.c). */
    sl_buf_t old = s->reply_body;
    s->reply_body = job->zip;
    s->reply_body.max = old.max;
    job->zip = old;
    sl_reply_budget_account(s);
    sl_reply_body(s, &job->req, SL_OP_NON_REPLICATED);
    snapshot_free(job);
}

int sl_background_snapshot(sl_session_t *s, const sl_request_header_t *req, uint8_t compression,
                           sl_span_t types, sl_span_t config_text)
{
    sl_assert(s->snapshot_job == NULL); /* lockstep: one request per connection */
    sl_server_t *srv = s->server;
    sl_snapshot_job_t *job = calloc(1, sizeof(*job));
    if (!job || types.len > sizeof(job->types)) {
        free(job);
        return -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED;
    }
    job->config_text = malloc(config_text.len ? config_text.len : 1);
    if (!job->config_text) {
        free(job);
        return -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED;
    }
    memcpy(job->config_text, config_text.ptr, config_text.len);
    job->config_len = config_text.len;
    job->work = (sl_work_t){.run = snapshot_run, .done = snapshot_done};
    job->owner = s;
    job->server = srv;
    job->req = *req;
    snprintf(job->data_dir, sizeof(job->data_dir), "%s", srv->cfg.system.path);
    job->frame_limit = srv->frame_max;
    job->compression = compression;
    memcpy(job->types, types.ptr, types.len);
    job->types_count = (uint8_t)types.len;
    /* The archive starts empty and may grow to the frame limit, like a reply body. */
    sl_buf_init(&job->zip, s->reply_body.max);
    s->snapshot_job = job;
    sl_work_pool_submit(srv->work_pool, &job->work);
    return 0;
}

void sl_background_cancel(sl_session_t *s)
{
    if (!s->snapshot_job)
        return;
    s->snapshot_job->owner = NULL;
    s->snapshot_job = NULL;
}

void sl_background_on_event(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_work_pool_drain(srv->work_pool);
}
