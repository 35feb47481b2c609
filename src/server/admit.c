/* Admission of replicated operations: login (Register), logout and the
 * metadata operations. Everything non-deterministic happens here (hashing,
 * token generation, the timestamp), before the entry is journaled, so that
 * sl_meta_apply stays a pure function of the journal (DESIGN.md). A login's
 * password check runs on the hash pool; the login resumes after it. */
#include <sluice/error.h>
#include <string.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/server.h"
#include "wire/codec.h"
#include "wire/command.h"
#include "wire/cmd_users.h"

int sl_server_commit(sl_server_t *srv, sl_meta_entry_t *e, sl_buf_t *reply)
{
    if (!srv->store)
        return -SL_ERR_TRANSIENT_NOT_ACCEPTED; /* cluster mode: only the group commits */
    uint64_t now = sl_clock_realtime_us();
    e->op = sl_meta_store_last_op(srv->store) + 1;
    e->timestamp = now > srv->last_timestamp ? now : srv->last_timestamp + 1;
    size_t mark = reply->len;
    sl_otel_journal_begin(srv->otel);
    int rc = sl_meta_store_commit(srv->store, e, reply);
    sl_otel_journal_end(srv->otel);
    if (rc != 0) {
        reply->len = mark;
        sl_log_error("metadata commit of op %llu (operation %u) failed: %s",
                     (unsigned long long)e->op, e->operation, sl_strerror(rc));
        return rc;
    }
    srv->last_timestamp = e->timestamp;
    return 0;
}

/* --- login (lifecycle.md 3.3) ------------------------------------------------ */

typedef enum {
    LOGIN_OK,
    LOGIN_REJECTED,   /* parsed, refused: credentials */
    LOGIN_UNPARSABLE, /* not this shape */
} login_verdict_t;

/* The password shape up to the hash check: OK means "verify it". */
static login_verdict_t login_password_parse(sl_span_t rest, sl_login_password_t *p)
{
    if (!sl_login_password_decode(rest, p))
        return LOGIN_UNPARSABLE;
    if (p->username.len < SL_USERNAME_LEN_MIN || p->username.len > SL_USERNAME_LEN_MAX ||
        p->password.len < SL_PASSWORD_LEN_MIN || p->password.len > SL_PASSWORD_LEN_MAX)
        return LOGIN_REJECTED;
    return LOGIN_OK;
}

static const sl_meta_user_t *login_user(const sl_server_t *srv, const sl_login_password_t *p)
{
    sl_ident_t name = {.kind = SL_IDENT_STRING, .name = p->username};
    return sl_meta_user_find(srv->meta, &name);
}

/* Token verdicts map to evictions 10 (unknown, expired, user gone) and 11
 * (user inactive). */
static login_verdict_t login_token(sl_server_t *srv, sl_span_t rest, uint32_t *user_id,
                                   uint8_t *reason)
{
    sl_login_token_t t;
    if (!sl_login_token_decode(rest, &t))
        return LOGIN_UNPARSABLE;
    char digest[SL_TOKEN_DIGEST_LEN];
    sl_token_digest(t.token, digest);
    const sl_meta_user_t *u = NULL;
    const sl_meta_token_t *tok =
        sl_meta_token_by_digest(srv->meta, sl_span(digest, SL_TOKEN_DIGEST_LEN - 1), &u);
    uint64_t now = sl_clock_realtime_us();
    *reason = SL_EVICT_INVALID_TOKEN;
    if (!tok || !u || (tok->expiry_at != 0 && tok->expiry_at <= now))
        return LOGIN_REJECTED;
    if (u->status != SL_USER_ACTIVE) {
        *reason = SL_EVICT_USER_INACTIVE;
        return LOGIN_REJECTED;
    }
    *user_id = u->id;
    return LOGIN_OK;
}

static void copy_text(char *dst, size_t cap, sl_span_t src)
{
    size_t n = src.len < cap - 1 ? src.len : cap - 1;
    memcpy(dst, src.ptr, n);
    dst[n] = '\0';
}

/* A rebind fences the previous holder of the client id: on this shard it is
 * unbound at once (lifecycle.md 6). */
static void unbind_others(sl_server_t *srv, const sl_session_t *keep)
{
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        sl_session_t *o = srv->sessions[i];
        if (o != keep && o->bound && sl_u128_eq(o->client, keep->client)) {
            o->bound = false;
            sl_session_sync_login(o); /* its next header meets the pre-login limit */
        }
    }
}

/* The session of a committed Register (epoch: its op); user_id and the
 * client's version are set. */
static void bind_session(sl_session_t *s, sl_u128_t client, uint64_t epoch)
{
    s->bound = true;
    s->client = client;
    s->epoch = epoch;
    const sl_meta_user_t *u = sl_meta_user_by_id(s->server->meta, s->user_id);
    s->user_created_at = u ? u->created_at : 0;
    unbind_others(s->server, s);
    sl_log_info("connection %u (%s): user %u logged in, session %llu (%s %s)", s->id,
                sl_conn_peer(s->conn), s->user_id, (unsigned long long)s->epoch, s->sdk_name,
                s->sdk_version);
}

static void login_reply(sl_session_t *s, const sl_request_header_t *req, uint64_t op)
{
    sl_reply_header_t h = {
        .request_checksum = req->request_checksum,
        .client = req->client,
        .op = s->epoch,
        .commit = op > s->epoch ? op : s->epoch,
        .timestamp = req->timestamp,
        .request = 0,
        .operation = SL_OP_REGISTER,
        .size = (uint32_t)(SL_HEADER_SIZE + s->reply_body.len),
    };
    sl_reply_header_encode(s->reply_header, &h);
    sl_reply_account(s, h.size, false);
    struct iovec iov[2] = {{s->reply_header, SL_HEADER_SIZE},
                           {s->reply_body.data, s->reply_body.len}};
    if (sl_conn_reply(s->conn, iov, 2) != 0)
        sl_log_warn("connection %u: login reply not sent", s->id);
}

/* Step 5: a bound connection gets its existing session again. */
static void login_again(sl_session_t *s, const sl_request_header_t *req)
{
    sl_buf_reset(&s->reply_body);
    sl_result_put_ok(&s->reply_body);
    sl_login_register_reply_t r = {
        .user_id = s->user_id,
        .session = s->epoch,
        .server_protocol_version = SL_PROTOCOL_VERSION,
        .server_version = sl_span_str(SL_SERVER_VERSION),
    };
    if (sl_login_register_reply_encode(&s->reply_body, &r) != 0) {
        sl_reply_evict(s, req->client, SL_EVICT_SESSION_ERROR, false);
        return;
    }
    login_reply(s, req, sl_meta_last_op(s->server->meta));
}

static void commit_register(sl_session_t *s, const sl_request_header_t *req,
                            const sl_client_version_t *version, uint32_t user_id)
{
    sl_server_t *srv = s->server;
    if (!sl_meta_register_allowed(srv->meta, req->client, user_id)) {
        sl_reply_evict(s, req->client, SL_EVICT_SESSION_ERROR, false);
        return;
    }
    sl_buf_reset(&srv->admitted);
    sl_meta_admit_register_t a = {.user_id = user_id, .version = *version};
    if (sl_meta_admit_register_encode(&srv->admitted, &a) != 0) {
        sl_reply_evict(s, req->client, SL_EVICT_MALFORMED_LOGIN, false);
        return;
    }
    s->protocol_version = version->protocol_version;
    copy_text(s->sdk_name, sizeof(s->sdk_name), version->sdk_name);
    copy_text(s->sdk_version, sizeof(s->sdk_version), version->sdk_version);
    if (srv->cluster) {
        /* The group commits it (on the primary) and answers; the session is
         * bound when the committed reply comes back (sl_admit_register_done). */
        s->vsr_user_id = user_id;
        sl_cluster_submit(srv->cluster, s, req, SL_CLUSTER_WAIT_REGISTER, SL_OP_REGISTER, user_id,
                          sl_buf_span(&srv->admitted));
        return;
    }
    sl_meta_entry_t e = {
        .client = req->client,
        .request = 0,
        .user_id = user_id,
        .operation = SL_OP_REGISTER,
        .request_checksum = req->request_checksum,
        .body = sl_buf_span(&srv->admitted),
    };
    sl_buf_reset(&s->reply_body);
    if (sl_server_commit(srv, &e, &s->reply_body) != 0) {
        sl_reply_result(s, req, SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    s->user_id = user_id;
    bind_session(s, req->client, e.op);
    login_reply(s, req, e.op);
}

void sl_admit_register_done(sl_session_t *s, sl_u128_t client, uint64_t epoch)
{
    s->user_id = s->vsr_user_id;
    bind_session(s, client, epoch);
}

void sl_admit_register_forwarded(sl_session_t *s, uint64_t epoch)
{
    s->user_id = s->vsr_user_id;
    bind_session(s, s->vsr_req.client, epoch);
    /* This node may not have applied the Register yet: the reply names the
     * session the primary committed, as a login again would. */
    login_again(s, &s->vsr_req);
}

/* Steps 4 to 6 once the password shape has its verdict pw. */
static void login_continue(sl_session_t *s, const sl_request_header_t *req,
                           const sl_client_version_t *version, sl_span_t rest, login_verdict_t pw,
                           uint32_t user_id)
{
    if (pw != LOGIN_OK) {
        uint8_t reason = SL_EVICT_INVALID_CREDENTIALS;
        login_verdict_t tk = login_token(s->server, rest, &user_id, &reason);
        if (tk == LOGIN_UNPARSABLE) {
            sl_reply_evict(s, req->client,
                           pw == LOGIN_REJECTED ? SL_EVICT_INVALID_CREDENTIALS
                                                : SL_EVICT_MALFORMED_LOGIN,
                           false);
            return;
        }
        if (tk == LOGIN_REJECTED) {
            sl_reply_evict(s, req->client, reason, false);
            return;
        }
    }
    if (s->bound) {
        login_again(s, req);
        return;
    }
    commit_register(s, req, version, user_id);
}

/* The password check goes to the hash pool; unknown users are checked
 * against the dummy hash, so the cost is the same (lifecycle.md 3.3). A
 * full queue is the transient refusal of step 6: result 58, re-issue. */
static void login_submit(sl_session_t *s, const sl_request_header_t *req, sl_span_t body,
                         const sl_login_password_t *p)
{
    const sl_meta_user_t *u = login_user(s->server, p);
    if (sl_hashing_submit(s, req, body, sl_hashing_verify_job(u, p->password)) != 0)
        sl_reply_result(s, req, SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_ACCEPTED);
}

/* Steps 1 and 2; false when answered. */
static bool login_version(sl_session_t *s, const sl_request_header_t *req, sl_span_t body,
                          sl_client_version_t *version, sl_span_t *rest)
{
    if (!sl_login_version_decode(body, version, rest)) {
        sl_reply_evict(s, req->client, SL_EVICT_MALFORMED_LOGIN, false);
        return false;
    }
    if (!sl_version_compatible(version->protocol_version, SL_PROTOCOL_VERSION,
                               SL_PROTOCOL_VERSION_MIN)) {
        sl_reply_evict(s, req->client, SL_EVICT_INCOMPATIBLE_PROTOCOL, false);
        return false;
    }
    return true;
}

void sl_admit_register(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_client_version_t version;
    sl_span_t rest;
    if (!login_version(s, req, body, &version, &rest))
        return;
    if (s->server->cluster && !sl_cluster_ready(s->server->cluster)) {
        /* A cluster that has not committed its first operation has no
         * users yet: the credentials cannot be judged, try again. */
        sl_reply_result(s, req, SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    sl_login_password_t p;
    login_verdict_t pw = login_password_parse(rest, &p);
    if (pw == LOGIN_OK) {
        login_submit(s, req, body, &p);
        return;
    }
    login_continue(s, req, &version, rest, pw, 0);
}

void sl_admit_register_resume(sl_session_t *s, const sl_hash_job_t *job)
{
    const sl_request_header_t *req = &s->hash_req;
    sl_client_version_t version;
    sl_span_t rest;
    sl_login_password_t p;
    /* The same bytes passed these steps before the job was submitted. */
    bool parsed = sl_login_version_decode(s->hash_body, &version, &rest) &&
                  login_password_parse(rest, &p) == LOGIN_OK;
    sl_assert(parsed);
    const sl_meta_user_t *u = login_user(s->server, &p);
    if (!sl_hashing_same_hash(job, u)) {
        /* The user's password changed (or the user came or went) while the
         * old hash was checked: check against what is stored now. */
        login_submit(s, req, s->hash_body, &p);
        return;
    }
    bool ok = job->verified && u && u->status == SL_USER_ACTIVE;
    login_continue(s, req, &version, rest, ok ? LOGIN_OK : LOGIN_REJECTED, ok ? u->id : 0);
}

void sl_admit_register_internal(sl_session_t *s, const sl_request_header_t *req, uint32_t user_id,
                                uint64_t created_at)
{
    sl_assert(s->internal);
    const sl_meta_user_t *u = sl_meta_user_by_id(s->server->meta, user_id);
    if (s->bound || !u || u->status != SL_USER_ACTIVE ||
        (created_at != 0 && u->created_at != created_at)) {
        sl_reply_status(s, req, SL_ERR_UNAUTHENTICATED);
        return;
    }
    sl_client_version_t version = {
        .protocol_version = SL_PROTOCOL_VERSION,
        .sdk_name = sl_span_str("sluice-http"),
        .sdk_version = sl_span_str(SL_SERVER_VERSION),
    };
    commit_register(s, req, &version, user_id);
}

/* --- logout (lifecycle.md 7) --------------------------------------------------- */

static bool still_holds_entry(const sl_session_t *s)
{
    const sl_meta_client_t *c = sl_meta_client_find(s->server->meta, s->client);
    return c && c->epoch == s->epoch;
}

static int commit_logout(sl_session_t *s, uint64_t request, sl_u128_t checksum)
{
    sl_meta_entry_t e = {
        .client = s->client,
        .request = request,
        .user_id = s->user_id,
        .operation = SL_OP_LOGOUT,
        .request_checksum = checksum,
        .body = sl_span(NULL, 0),
    };
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    int rc = sl_server_commit(s->server, &e, &scratch);
    sl_buf_free(&scratch);
    return rc;
}

void sl_admit_logout(sl_session_t *s, const sl_request_header_t *req)
{
    /* Cluster mode: the group's client table judges the session (this
     * node may not have applied its Register yet). */
    if (s->server->cluster && s->bound) {
        sl_cluster_submit(s->server->cluster, s, req, SL_CLUSTER_WAIT_LOGOUT, SL_OP_LOGOUT,
                          s->user_id, sl_span(NULL, 0));
        return;
    }
    if (s->bound && still_holds_entry(s) &&
        commit_logout(s, req->request, req->request_checksum) != 0) {
        sl_reply_status(s, req, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    if (s->bound)
        sl_log_info("connection %u: user %u logged out", s->id, s->user_id);
    s->bound = false;
    sl_buf_reset(&s->reply_body);
    sl_reply_body(s, req, SL_OP_LOGOUT);
}

void sl_admit_disconnect(sl_session_t *s)
{
    if (!s->bound)
        return;
    if (s->server->cluster) {
        /* Nobody waits for the answer (a backup forwards it). */
        sl_cluster_submit_disconnect(s->server->cluster, s->client, s->epoch, s->user_id);
        s->bound = false;
        return;
    }
    if (!still_holds_entry(s))
        return;
    /* The synthetic request number of a transport disconnect. */
    if (commit_logout(s, UINT64_MAX, (sl_u128_t){0, 0}) != 0)
        sl_log_warn("connection %u: logout on disconnect not committed", s->id);
    s->bound = false;
}

bool sl_admit_user_current(sl_session_t *s)
{
    if (!s->bound)
        return true;
    const sl_meta_user_t *u = sl_meta_user_by_id(s->server->meta, s->user_id);
    bool same_user = u && u->created_at == s->user_created_at;
    if (same_user && u->status == SL_USER_ACTIVE)
        return true;
    /* The user was deleted (and its id maybe given to a new user), or set
     * inactive: the session ends as if the connection had closed, so it can
     * act neither as nobody, nor as the id's next owner, nor as a user who
     * may no longer log in. */
    sl_log_info("connection %u: user %u was %s; its session %llu ends", s->id, s->user_id,
                same_user ? "deactivated" : "deleted", (unsigned long long)s->epoch);
    sl_admit_disconnect(s);
    s->bound = false;
    return false;
}
