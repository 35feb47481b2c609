/* Admission of metadata operations (128..149, DeleteSegments): decode and
 * validate the body with the reference's status codes, check the session
 * against the client table, turn secrets into hashes, then journal, apply
 * and reply (framing.md 6.1, commands.md 12). CreateUser and ChangePassword
 * hash on the hash pool and resume here: decoded and checked again, since
 * the client table may have moved meanwhile. */
#include <sluice/error.h>
#include <string.h>

#include "auth/secret.h"
#include "base/log.h"
#include "server/server.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_topics.h"
#include "wire/cmd_users.h"
#include "wire/codec.h"
#include "wire/command.h"

/* Room for any decoded request of the table. */
typedef union any_request {
    sl_create_user_request_t create_user;
    sl_change_password_request_t change_password;
    sl_create_personal_access_token_request_t create_token;
    sl_update_topic_request_t update_topic;
    sl_create_partitions_request_t create_partitions;
    max_align_t align;
    uint8_t bytes[1024];
} any_request_t;

/* The operation a committed entry carries (framing.md 4 rewrites). */
static uint8_t committed_operation(const sl_command_t *cmd)
{
    return cmd->reply_operation;
}

/* UpdateTopic's size check needs the stored segment size (options.md 4.2). */
static int check_update_topic(sl_server_t *srv, const sl_update_topic_request_t *q)
{
    const sl_meta_stream_t *st = sl_meta_stream_find(srv->meta, &q->stream_id);
    const sl_meta_topic_t *t = st ? sl_meta_topic_find(st, &q->topic_id) : NULL;
    if (!t)
        return 0; /* apply answers 1009 / 2010 */
    return sl_update_topic_check_size(q, t->config.segment_size);
}

/* CreateTopic refuses a preallocating topic whose segment_size x partitions exceeds
 * SL_PREALLOCATE_TOTAL_MAX (4042, before the commit); CreatePartitions could take a topic
 * past the same cap one request at a time. Checked here, before the commit, the way
 * CreateTopic's is (in the request decode): journal replay never sees the check, so old
 * journals replay as they were written. */
static int check_create_partitions(sl_server_t *srv, const sl_create_partitions_request_t *q)
{
    const sl_meta_stream_t *st = sl_meta_stream_find(srv->meta, &q->stream_id);
    const sl_meta_topic_t *t = st ? sl_meta_topic_find(st, &q->topic_id) : NULL;
    if (!t)
        return 0; /* apply answers 1009 / 2010 */
    if (!sl_topic_preallocation_fits(&t->config,
                                     (uint64_t)t->partitions_count + q->partitions_count))
        return -SL_ERR_INVALID_OPTION_VALUE;
    return 0;
}

static int check_token_cap(sl_session_t *s)
{
    const sl_meta_user_t *u = sl_meta_user_by_id(s->server->meta, s->user_id);
    if (u && u->tokens_count >= s->server->cfg.personal_access_token.max_tokens_per_user)
        return -SL_ERR_PERSONAL_ACCESS_TOKENS_LIMIT_REACHED;
    return 0;
}

/* Login refuses passwords outside 3..100 bytes (eviction 9), so a user
 * given one could never log in. The reference stores any 0..255 bytes;
 * Sluice refuses them where they are set, before anything is hashed or
 * committed: status 44 (docs/compatibility.md). */
static int check_new_password(uint8_t operation, const any_request_t *q)
{
    sl_span_t password =
        operation == SL_OP_CREATE_USER ? q->create_user.password : q->change_password.new_password;
    if (password.len >= SL_PASSWORD_LEN_MIN && password.len <= SL_PASSWORD_LEN_MAX)
        return 0;
    return -SL_ERR_INVALID_PASSWORD;
}

/* CreateUser and ChangePassword need Argon2id: the hash pool's job. */
static bool needs_hashing(uint8_t operation)
{
    return operation == SL_OP_CREATE_USER || operation == SL_OP_CHANGE_PASSWORD;
}

/* Builds the admitted body in srv->admitted. For CreatePersonalAccessToken
 * the raw token goes to token_out (returned only in the reply). job holds
 * the hashes of the operations that need them. */
static int admit_body(sl_session_t *s, uint8_t operation, const any_request_t *q, sl_span_t body,
                      const sl_hash_job_t *job, char token_out[SL_TOKEN_TEXT_MAX])
{
    sl_server_t *srv = s->server;
    sl_buf_t *b = &srv->admitted;
    switch (operation) {
    case SL_OP_CREATE_USER:
        if (job->hash_rc != 0)
            return -SL_ERR_ERROR;
        return sl_meta_admit_create_user_encode(b, &q->create_user, sl_span_str(job->hash_out));
    case SL_OP_CHANGE_PASSWORD: {
        if (job->hash_rc != 0)
            return -SL_ERR_ERROR;
        sl_meta_admit_change_password_t a = {
            .user_id = q->change_password.user_id,
            .verified = job->verified,
            .new_hash = sl_span_str(job->hash_out),
        };
        return sl_meta_admit_change_password_encode(b, &a);
    }
    case SL_OP_CREATE_PERSONAL_ACCESS_TOKEN: {
        char digest[SL_TOKEN_DIGEST_LEN];
        if (sl_token_generate(token_out) != 0)
            return -SL_ERR_ERROR;
        sl_token_digest(sl_span_str(token_out), digest);
        sl_meta_admit_create_pat_t a = {.name = q->create_token.name,
                                        .expiry_us = q->create_token.expiry_us,
                                        .digest = sl_span(digest, SL_TOKEN_DIGEST_LEN - 1)};
        return sl_meta_admit_create_pat_encode(b, &a);
    }
    default:
        sl_put_span(b, body);
        return sl_buf_ok(b) ? 0 : -SL_ERR_ERROR;
    }
}

/* The pre-consensus checks on this connection: decode, then the few checks
 * that need state but no commit. 0 or the status to answer. */
static int pre_check(sl_session_t *s, const sl_command_t *cmd, sl_span_t body, any_request_t *q)
{
    sl_assert(cmd->request_size <= sizeof(*q));
    int rc = cmd->request_decode(body, q);
    if (rc != 0)
        return rc;
    if (cmd->operation == SL_OP_UPDATE_TOPIC)
        return check_update_topic(s->server, &q->update_topic);
    if (cmd->operation == SL_OP_CREATE_PARTITIONS)
        return check_create_partitions(s->server, &q->create_partitions);
    if (cmd->operation == SL_OP_CREATE_PERSONAL_ACCESS_TOKEN)
        return check_token_cap(s);
    if (needs_hashing(cmd->operation))
        return check_new_password(cmd->operation, q);
    return 0;
}

/* framing.md 6.1: what the client table says about this request. True when
 * the caller goes on to journal it. */
static bool preflight(sl_session_t *s, const sl_request_header_t *req, uint8_t reply_operation)
{
    const sl_meta_reply_t *cached = NULL;
    sl_meta_preflight_t p = sl_meta_preflight(s->server->meta, s->client, s->epoch, req->request,
                                              req->request_checksum, &cached);
    switch (p) {
    case SL_META_PREFLIGHT_NEW:
        return true;
    case SL_META_PREFLIGHT_NO_SESSION:
        s->bound = false;
        sl_reply_evict(s, req->client, SL_EVICT_NO_SESSION, false);
        return false;
    case SL_META_PREFLIGHT_SESSION_TOO_LOW:
        s->bound = false;
        sl_reply_evict(s, req->client, SL_EVICT_SESSION_TOO_LOW, false);
        return false;
    case SL_META_PREFLIGHT_DROP:
        sl_reply_drop(s);
        return false;
    case SL_META_PREFLIGHT_CACHED:
        /* The cached bytes may be replaced by the next apply: copy them. */
        sl_buf_reset(&s->reply_body);
        sl_put_span(&s->reply_body, cached->body);
        sl_reply_committed(s, req, cached->operation, cached->op, cached->timestamp,
                           sl_buf_span(&s->reply_body));
        return false;
    case SL_META_PREFLIGHT_ALREADY_APPLIED:
        sl_reply_result(s, req, reply_operation, SL_ERR_REQUEST_ALREADY_APPLIED);
        return false;
    case SL_META_PREFLIGHT_PAT_REPLAY:
        sl_reply_result(s, req, reply_operation, SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS);
        return false;
    }
    sl_reply_drop(s);
    return false;
}

/* A successful CreatePersonalAccessToken reply carries the raw token, which
 * never entered the state machine. */
static void append_token(sl_buf_t *reply, size_t start, const char *token)
{
    sl_span_t body = sl_span(reply->data + start, reply->len - start);
    uint32_t result;
    sl_span_t payload;
    if (sl_result_split(body, &result, &payload) == 0 && result == 0) {
        sl_create_personal_access_token_reply_t r = {.token = sl_span_str(token)};
        if (sl_create_personal_access_token_reply_encode(reply, &r) != 0)
            sl_log_error("token reply did not encode");
    }
}

/* The job for a CreateUser or ChangePassword; NULL when out of memory. A
 * ChangePassword checks the current password against the stored hash (the
 * dummy when the user is missing: apply answers 20 then). */
static sl_hash_job_t *hash_job(const sl_server_t *srv, uint8_t operation, const any_request_t *q)
{
    sl_span_t password;
    sl_hash_job_t *job;
    if (operation == SL_OP_CHANGE_PASSWORD) {
        const sl_change_password_request_t *c = &q->change_password;
        job = sl_hashing_verify_job(sl_meta_user_find(srv->meta, &c->user_id), c->current_password);
        password = c->new_password;
    } else {
        job = sl_hash_job_new();
        password = q->create_user.password;
    }
    if (!job)
        return NULL;
    sl_assert(password.len <= SL_HASH_PASSWORD_MAX);
    job->hash = true;
    memcpy(job->new_password, password.ptr, password.len);
    job->new_password_len = (uint8_t)password.len;
    return job;
}

/* A full queue is refused like a failed admission: result 58, nothing
 * applied, the client may re-issue. */
static void hash_submit(sl_session_t *s, const sl_request_header_t *req, sl_span_t body,
                        const sl_command_t *cmd, const any_request_t *q)
{
    if (sl_hashing_submit(s, req, body, hash_job(s->server, cmd->operation, q)) != 0)
        sl_reply_result(s, req, committed_operation(cmd), SL_ERR_TRANSIENT_NOT_ACCEPTED);
}

/* Decode, the pre-consensus checks and the client table; false when the
 * request is answered. */
static bool admit_gate(sl_session_t *s, const sl_request_header_t *req, const sl_command_t *cmd,
                       sl_span_t body, any_request_t *q)
{
    memset(q, 0, sizeof(*q));
    int rc = pre_check(s, cmd, body, q);
    if (rc != 0) {
        /* Debug only: a client can send these as fast as it likes. */
        sl_log_debug("connection %u: %s by user %u refused before commit: %s", s->id, cmd->name,
                     s->user_id, sl_strerror(rc));
        sl_reply_status(s, req, (uint32_t)-rc);
        return false;
    }
    /* Cluster mode: the group's client table answers it on the primary
     * (vsr/client_table.h); this node's copy of meta's may lag. */
    if (s->server->cluster)
        return true;
    return preflight(s, req, committed_operation(cmd));
}

/* A committed refusal (41, 43, 48, ...) at debug level: what an operator
 * needs to see why a client's change did not happen, and quiet otherwise,
 * since clients may send refused requests as fast as they like. */
static void log_refusal(const sl_session_t *s, const sl_command_t *cmd, sl_span_t reply)
{
    uint32_t result;
    sl_span_t payload;
    if (sl_result_split(reply, &result, &payload) == 0 && result != 0)
        sl_log_debug("connection %u: %s by user %u refused: %s", s->id, cmd->name, s->user_id,
                     sl_strerror((int)result));
}

/* Journal, apply, reply. */
static void admit_commit(sl_session_t *s, const sl_request_header_t *req, const sl_command_t *cmd,
                         const any_request_t *q, sl_span_t body, const sl_hash_job_t *job)
{
    sl_server_t *srv = s->server;
    uint8_t operation = committed_operation(cmd);
    char token[SL_TOKEN_TEXT_MAX] = {0};
    sl_buf_reset(&srv->admitted);
    int rc = admit_body(s, cmd->operation, q, body, job, token);
    if (rc != 0) {
        sl_log_error("admission of %s failed: %s", cmd->name, sl_strerror(rc));
        sl_reply_result(s, req, operation, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    if (srv->cluster) {
        memcpy(s->vsr_token, token, sizeof(s->vsr_token));
        memset(token, 0, sizeof(token));
        sl_cluster_submit(srv->cluster, s, req, SL_CLUSTER_WAIT_META, operation, s->user_id,
                          sl_buf_span(&srv->admitted));
        return;
    }
    sl_meta_entry_t e = {
        .client = s->client,
        .request = req->request,
        .user_id = s->user_id,
        .operation = operation,
        .request_checksum = req->request_checksum,
        .body = sl_buf_span(&srv->admitted),
    };
    sl_buf_reset(&s->reply_body);
    /* Before the commit: a DeleteStream by name cannot be resolved after it. */
    uint32_t stream_id = sl_server_commit_stream(srv, &e);
    if (sl_server_commit(srv, &e, &s->reply_body) != 0) {
        sl_reply_result(s, req, operation, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    sl_server_after_commit(srv, &e, stream_id, sl_buf_span(&s->reply_body));
    log_refusal(s, cmd, sl_buf_span(&s->reply_body));
    if (cmd->operation == SL_OP_CREATE_PERSONAL_ACCESS_TOKEN)
        append_token(&s->reply_body, 0, token);
    sl_reply_committed(s, req, operation, e.op, e.timestamp, sl_buf_span(&s->reply_body));
    memset(token, 0, sizeof(token));
}

void sl_admit_metadata(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    const sl_command_t *cmd = sl_command_by_operation(req->operation);
    if (!cmd || (cmd->plane != SL_PLANE_METADATA && cmd->plane != SL_PLANE_SEGMENTS)) {
        sl_reply_evict(s, req->client, SL_EVICT_INVALID_REQUEST_OPERATION, false);
        return;
    }
    any_request_t q;
    if (!admit_gate(s, req, cmd, body, &q))
        return;
    if (s->server->cluster && cmd->operation == SL_OP_DELETE_SEGMENTS) {
        /* Through the partition's group, not the metadata group's. */
        sl_cluster_delete_segments(s->server->cluster, s, req, body);
        return;
    }
    if (needs_hashing(cmd->operation)) {
        hash_submit(s, req, body, cmd, &q);
        return;
    }
    admit_commit(s, req, cmd, &q, body, NULL);
}

void sl_admit_metadata_resume(sl_session_t *s, const sl_hash_job_t *job)
{
    const sl_request_header_t *req = &s->hash_req;
    const sl_command_t *cmd = sl_command_by_operation(req->operation);
    sl_assert(cmd && needs_hashing(cmd->operation));
    /* What dispatch.c checks before admission may no longer hold: another
     * connection's login with this client id unbinds this one. */
    if (!s->bound) {
        sl_reply_evict(s, req->client, SL_EVICT_NO_SESSION, false);
        return;
    }
    any_request_t q;
    if (!admit_gate(s, req, cmd, s->hash_body, &q))
        return;
    if (cmd->operation == SL_OP_CHANGE_PASSWORD &&
        !sl_hashing_same_hash(job,
                              sl_meta_user_find(s->server->meta, &q.change_password.user_id))) {
        /* The password changed while the old hash was checked. */
        hash_submit(s, req, s->hash_body, cmd, &q);
        return;
    }
    admit_commit(s, req, cmd, &q, s->hash_body, job);
}

/* --- effects on the partitions ---------------------------------------------------- */

static void delete_segments(sl_server_t *srv, sl_span_t body)
{
    if (srv->partitions.replicated)
        return; /* a cluster deletes through the partition groups' logs only */
    sl_delete_segments_request_t q;
    if (sl_delete_segments_request_decode(body, &q) != 0)
        return;
    const sl_meta_stream_t *st = sl_meta_stream_find(srv->meta, &q.stream_id);
    const sl_meta_topic_t *t = st ? sl_meta_topic_find(st, &q.topic_id) : NULL;
    sl_partition_t *p =
        t ? sl_partitions_get(&srv->partitions, st->id, t->id, q.partition_id) : NULL;
    uint32_t deleted = 0;
    if (p && sl_partition_delete_segments(p, q.segments_count, &deleted) != 0)
        sl_log_error("DeleteSegments on partition %u of topic %u failed", q.partition_id, t->id);
    else if (p)
        sl_log_info("deleted %u sealed segments of partition %u, topic %u, stream %u", deleted,
                    q.partition_id, t->id, st->id);
}

static void purge(sl_server_t *srv, uint8_t operation, sl_span_t body)
{
    const sl_meta_stream_t *st;
    const sl_meta_topic_t *t = NULL;
    if (operation == SL_OP_PURGE_STREAM) {
        sl_purge_stream_request_t q;
        if (sl_purge_stream_request_decode(body, &q) != 0 ||
            !(st = sl_meta_stream_find(srv->meta, &q.stream_id)))
            return;
    } else {
        sl_purge_topic_request_t q;
        if (sl_purge_topic_request_decode(body, &q) != 0 ||
            !(st = sl_meta_stream_find(srv->meta, &q.stream_id)) ||
            !(t = sl_meta_topic_find(st, &q.topic_id)))
            return;
    }
    sl_partitions_purge(&srv->partitions, srv->meta, st->id, t ? t->id : UINT32_MAX);
}

uint32_t sl_server_commit_stream(const sl_server_t *srv, const sl_meta_entry_t *e)
{
    switch (e->operation) {
    case SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
    case SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
    case SL_OP_DELETE_PARTITIONS:
    case SL_OP_DELETE_TOPIC:
    case SL_OP_DELETE_STREAM:
    case SL_OP_UPDATE_TOPIC:
        break;
    default:
        return UINT32_MAX;
    }
    /* Each of them names its stream first in the body. */
    sl_reader_t r = sl_reader(e->body);
    sl_ident_t id;
    if (!sl_ident_decode(&r, &id))
        return UINT32_MAX;
    const sl_meta_stream_t *st = sl_meta_stream_find(srv->meta, &id);
    return st ? st->id : UINT32_MAX;
}

void sl_server_after_commit(sl_server_t *srv, const sl_meta_entry_t *e, uint32_t stream_id,
                            sl_span_t reply)
{
    uint32_t result;
    sl_span_t payload;
    if (sl_result_split(reply, &result, &payload) != 0 || result != 0)
        return;
    switch (e->operation) {
    case SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
    case SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
    case SL_OP_DELETE_PARTITIONS:
    case SL_OP_DELETE_TOPIC:
    case SL_OP_DELETE_STREAM:
    case SL_OP_UPDATE_TOPIC:
        /* Only that stream changed: the sync costs its topics, not the server's. */
        if (stream_id != UINT32_MAX)
            sl_partitions_sync_stream(&srv->partitions, srv->meta, stream_id);
        else
            sl_partitions_sync(&srv->partitions, srv->meta, false);
        return;
    case SL_OP_PURGE_STREAM:
    case SL_OP_PURGE_TOPIC:
        purge(srv, e->operation, e->body);
        return;
    case SL_OP_TRUNCATE_PARTITION:
        delete_segments(srv, e->body);
        return;
    default:
        return;
    }
}
