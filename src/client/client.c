/* The client object and its session: connect, close, the request/reply
 * exchange every call goes through, login, logout, ping, and raw access.
 *
 * One request is in flight at a time; a call builds its body in c->tx after
 * 256 reserved header bytes, sl_client_call numbers and sends it, reads one
 * frame into c->rx and interprets it. Results of a call live in c->arena
 * and c->rx until the next call begins. */
#include "client/client_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/clock.h"
#include "wire/command.h"

/* --- lifecycle ------------------------------------------------------------------ */

static void copy_text(char *dst, size_t cap, const char *src, const char *fallback)
{
    const char *s = src && src[0] ? src : fallback;
    size_t n = strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* A random non-zero 128-bit id from getrandom (lifecycle.md 3: every login
 * uses a fresh one). 0 or -SL_ERR_ERROR when the kernel gives no bytes. */
int sl_client_random(void *out, size_t n)
{
    uint8_t *p = out;
    size_t done = 0;
    while (done < n) {
        ssize_t got = getrandom(p + done, n - done, 0);
        if (got <= 0)
            return -SL_ERR_ERROR;
        done += (size_t)got;
    }
    return 0;
}

static int mint_client_id(sl_u128_t *out)
{
    uint8_t bytes[16];
    for (int attempt = 0; attempt < 4; attempt++) {
        if (sl_client_random(bytes, sizeof(bytes)) != 0)
            return -SL_ERR_ERROR;
        *out = sl_load_u128(bytes);
        if (!sl_u128_is_zero(*out))
            return 0;
    }
    return -SL_ERR_ERROR;
}

static void apply_options(sl_client_t *c, const sl_client_options_t *o)
{
    sl_client_options_t none = {0};
    if (o == NULL)
        o = &none;
    c->connect_timeout_ms =
        o->connect_timeout_ms ? o->connect_timeout_ms : SL_CLIENT_CONNECT_TIMEOUT_MS_DEFAULT;
    c->request_timeout_ms =
        o->request_timeout_ms ? o->request_timeout_ms : SL_CLIENT_REQUEST_TIMEOUT_MS_DEFAULT;
    c->frame_max = o->frame_max ? o->frame_max : SL_FRAME_MAX_DEFAULT;
    if (c->frame_max < SL_CLIENT_FRAME_MIN)
        c->frame_max = SL_CLIENT_FRAME_MIN;
    copy_text(c->sdk_name, sizeof(c->sdk_name), o->sdk_name, SL_CLIENT_SDK_NAME);
    copy_text(c->sdk_version, sizeof(c->sdk_version), o->sdk_version, SL_CLIENT_VERSION);
    sl_client_care_init(c, o);
}

static void init_buffers(sl_client_t *c)
{
    sl_buf_init(&c->tx, c->frame_max);
    sl_buf_init(&c->rx, (size_t)c->frame_max + SL_CLIENT_PAGE);
    sl_buf_init(&c->scratch, SL_USER_HEADERS_MAX);
    sl_buf_init(&c->pipe.held, c->frame_max);
    sl_arena_init(&c->arena, SL_CLIENT_ARENA_CHUNK, (size_t)c->frame_max * SL_CLIENT_ARENA_FACTOR);
}

int sl_client_adopt(int fd, const sl_client_options_t *options, sl_client_t **out)
{
    *out = NULL;
    sl_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return -SL_ERR_ERROR;
    }
    c->fd = fd;
    int rc = sl_client_link_init(c, options);
    if (rc != 0) {
        close(fd);
        free(c);
        return rc;
    }
    apply_options(c, options);
    init_buffers(c);
    sl_client_session_reset(&c->session);
    /* Pre-login pings need a non-zero id too; login replaces it. */
    if (mint_client_id(&c->session.client_id) != 0) {
        sl_client_close(c);
        return -SL_ERR_ERROR;
    }
    *out = c;
    return 0;
}

int sl_client_connect(const char *host, uint16_t port, const sl_client_options_t *options,
                      sl_client_t **out)
{
    sl_assert(out != NULL);
    *out = NULL;
    uint32_t timeout_ms = options && options->connect_timeout_ms
                              ? options->connect_timeout_ms
                              : SL_CLIENT_CONNECT_TIMEOUT_MS_DEFAULT;
    int fd;
    int rc = sl_client_tcp_connect(host, port, timeout_ms, &fd);
    if (rc == 0)
        rc = sl_client_adopt(fd, options, out);
    if (rc != 0)
        return rc;
    /* TLS handshake and WebSocket upgrade, when asked for. */
    rc = sl_client_link_open(*out, fd, host, port);
    if (rc != 0) {
        sl_client_close(*out);
        *out = NULL;
        return rc;
    }
    /* A reconnect dials the same address. */
    (*out)->care.host = strdup(host);
    (*out)->care.port = port;
    if ((*out)->care.host == NULL) {
        sl_client_close(*out);
        *out = NULL;
        return -SL_ERR_ERROR;
    }
    return 0;
}

void sl_client_close(sl_client_t *c)
{
    if (c == NULL)
        return;
    sl_client_link_close(c);
    sl_client_link_free(c);
    sl_buf_free(&c->tx);
    sl_buf_free(&c->rx);
    sl_buf_free(&c->scratch);
    sl_buf_free(&c->pipe.held);
    sl_arena_free(&c->arena);
    sl_client_care_free(c);
    free(c);
}

void sl_client_session_info(const sl_client_t *c, sl_session_info_t *out)
{
    *out = (sl_session_info_t){
        .connected = c->fd >= 0,
        .logged_in = c->session.session != 0,
        .client_id_lo = c->session.client_id.lo,
        .client_id_hi = c->session.client_id.hi,
        .session = c->session.session,
        .request = c->session.request,
        .user_id = c->session.user_id,
        .reconnects = c->care.reconnects,
        .relogins = c->care.relogins,
        .replays = c->care.replays,
        .leader_moves = c->care.leader_moves,
        .cluster_nodes = c->care.cluster_nodes,
    };
}

/* --- the exchange --------------------------------------------------------------- */

void sl_client_results_release(sl_client_t *c)
{
    /* Results of the previous call die here, as the header promises. */
    if (c->arena.used_bytes > SL_CLIENT_KEEP_BYTES) {
        sl_arena_free(&c->arena);
        sl_arena_init(&c->arena, SL_CLIENT_ARENA_CHUNK,
                      (size_t)c->frame_max * SL_CLIENT_ARENA_FACTOR);
    } else {
        sl_arena_reset(&c->arena);
    }
    if (c->rx.cap > SL_CLIENT_KEEP_BYTES) {
        sl_buf_free(&c->rx);
        sl_buf_init(&c->rx, (size_t)c->frame_max + SL_CLIENT_PAGE);
    }
    sl_buf_reset(&c->rx);
}

void sl_client_request_begin(sl_client_t *c)
{
    c->batch.open = false;
    if (c->tx.cap > SL_CLIENT_KEEP_BYTES) {
        sl_buf_free(&c->tx);
        sl_buf_init(&c->tx, c->frame_max);
    }
    sl_buf_reset(&c->tx);
    sl_put_zeros(&c->tx, SL_HEADER_SIZE);
}

void sl_client_call_begin(sl_client_t *c)
{
    sl_client_results_release(c);
    sl_client_request_begin(c);
}

void sl_client_reply_apply(sl_client_t *c, const sl_client_reply_t *r)
{
    if (r->outcome == SL_CLIENT_REPLY_EVICTED)
        sl_client_session_reset(&c->session);
    else if (r->outcome == SL_CLIENT_REPLY_BAD_FRAME)
        sl_client_disconnect(c);
}

int sl_client_exchange(sl_client_t *c, sl_span_t *frame, bool *sent)
{
    uint64_t deadline_us = sl_client_deadline(c->request_timeout_ms);
    int rc = sl_client_link_send(c, c->tx.data, c->tx.len, deadline_us);
    *sent = rc == 0;
    if (rc == 0) {
        c->care.last_send_us = sl_clock_monotonic_us();
        rc = sl_client_read_frame(c, deadline_us, frame);
    }
    if (rc != 0)
        sl_client_disconnect(c); /* the stream position is unknown now */
    return rc;
}

bool sl_client_needs_session(uint8_t operation)
{
    return operation != SL_OP_REGISTER && operation != SL_OP_NON_REPLICATED;
}

int sl_client_resend(sl_client_t *c, sl_client_reply_t *reply, bool *sent, bool *transport)
{
    *reply = (sl_client_reply_t){.outcome = SL_CLIENT_REPLY_BAD_FRAME};
    bool sent_all = false;
    if (sent != NULL)
        *sent = false;
    *transport = false;
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    sl_span_t frame;
    int rc = sl_client_exchange(c, &frame, &sent_all);
    if (sent != NULL)
        *sent = sent_all;
    if (rc != 0) {
        /* Out of memory and an impossible frame size are not the socket's
         * fault, although they close it too. */
        *transport = rc != -SL_ERR_ERROR && rc != -SL_ERR_INVALID_COMMAND;
        return rc;
    }
    rc = sl_client_reply_process(frame, c->frame_max, reply);
    sl_client_reply_apply(c, reply);
    return rc;
}

int sl_client_call_once(sl_client_t *c, uint8_t operation, uint32_t code, sl_client_reply_t *reply,
                        bool *sent, bool *transport)
{
    *reply = (sl_client_reply_t){.outcome = SL_CLIENT_REPLY_BAD_FRAME};
    if (sent != NULL)
        *sent = false;
    *transport = false;
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    /* Without a session the server drops these silently (framing.md 9);
     * answering locally beats waiting for the timeout. */
    if (sl_client_needs_session(operation) && c->session.session == 0)
        return -SL_ERR_UNAUTHENTICATED;
    int rc = sl_client_frame_finish(&c->tx, &c->session, operation, code, c->frame_max);
    if (rc != 0)
        return rc;
    return sl_client_resend(c, reply, sent, transport);
}

int sl_client_call(sl_client_t *c, uint8_t operation, uint32_t code, sl_client_reply_t *reply)
{
    /* The next reply on the stream belongs to a pipelined request. */
    if (sl_client_pipe_busy(c)) {
        *reply = (sl_client_reply_t){.outcome = SL_CLIENT_REPLY_BAD_FRAME};
        return -SL_ERR_INVALID_COMMAND;
    }
    if (sl_client_care_on(c) && !c->care.recovering)
        return sl_client_care_call(c, operation, code, reply);
    bool transport;
    return sl_client_call_once(c, operation, code, reply, NULL, &transport);
}

int sl_client_run(sl_client_t *c, int encode_rc, uint8_t operation, uint32_t code,
                  sl_span_t *payload)
{
    if (encode_rc != 0)
        return encode_rc;
    sl_client_reply_t r;
    int rc = sl_client_call(c, operation, code, &r);
    *payload = r.payload;
    return rc;
}

int sl_client_call_empty(sl_client_t *c, uint8_t operation, uint32_t code, sl_client_reply_t *reply)
{
    sl_client_call_begin(c);
    return sl_client_call(c, operation, code, reply);
}

/* --- ping, login, logout -------------------------------------------------------- */

int sl_client_ping(sl_client_t *c)
{
    sl_client_reply_t r;
    int rc = sl_client_call_empty(c, SL_OP_NON_REPLICATED, SL_CMD_PING, &r);
    if (rc != 0)
        return rc;
    sl_ping_reply_t reply;
    return sl_ping_reply_decode(r.payload, &c->arena, &reply);
}

/* Sends the Register already encoded in c->tx under a fresh client id and
 * binds the session from the reply. */
static int register_session(sl_client_t *c, sl_identity_t *out)
{
    sl_client_session_reset(&c->session);
    int rc = mint_client_id(&c->session.client_id);
    if (rc != 0)
        return rc;
    sl_client_reply_t r;
    rc = sl_client_call(c, SL_OP_REGISTER, 0, &r);
    if (rc != 0)
        return rc;
    sl_login_register_reply_t login;
    rc = sl_login_register_reply_decode(r.payload, &c->arena, &login);
    if (rc == 0 && login.session == 0)
        rc = -SL_ERR_INVALID_FORMAT; /* 0 means "no session" in every header */
    if (rc != 0)
        return rc;
    c->session.session = login.session;
    c->session.user_id = login.user_id;
    c->session.request = 1;
    if (out == NULL)
        return 0;
    /* Kept in the client rather than the arena: leader settlement makes more
     * calls before the login returns, and each would end arena results. A
     * Name is at most 255 bytes, so it always fits. */
    size_t n = login.server_version.len;
    sl_assert(n < sizeof(c->server_version));
    if (n > 0)
        memcpy(c->server_version, login.server_version.ptr, n);
    c->server_version[n] = '\0';
    *out = (sl_identity_t){
        .user_id = login.user_id,
        .session = login.session,
        .server_protocol_version = login.server_protocol_version,
        .server_version = c->server_version,
    };
    return 0;
}

/* The SDKs log out before logging in again on a connection (lifecycle.md
 * 3.3 step 5 would otherwise hand back the old session). */
static int leave_current_session(sl_client_t *c)
{
    if (c->session.session == 0)
        return 0;
    int rc = sl_client_logout(c);
    /* An eviction already ended the session; that is what we wanted. */
    return c->session.session == 0 ? 0 : rc;
}

static sl_client_version_t client_version(const sl_client_t *c)
{
    return (sl_client_version_t){
        .protocol_version = SL_PROTOCOL_VERSION,
        .sdk_name = sl_span_str(c->sdk_name),
        .sdk_version = sl_span_str(c->sdk_version),
    };
}

int sl_client_login_with(sl_client_t *c, const char *username, const char *password,
                         const char *token, sl_identity_t *out)
{
    sl_client_call_begin(c);
    int rc;
    if (token != NULL) {
        sl_login_register_with_pat_request_t req = {
            .version = client_version(c),
            .login = {.token = sl_span_str(token)},
        };
        rc = sl_login_register_with_pat_request_encode(&c->tx, &req);
    } else {
        sl_login_register_request_t req = {
            .version = client_version(c),
            .login = {.username = sl_span_str(username), .password = sl_span_str(password)},
        };
        rc = sl_login_register_request_encode(&c->tx, &req);
    }
    return rc != 0 ? rc : register_session(c, out);
}

/* A login the application asked for: the old session ends first, and the
 * credentials are remembered for re-logins once they worked. */
static int login_public(sl_client_t *c, const char *username, const char *password,
                        const char *token, sl_identity_t *out)
{
    /* With reconnects on, a closed connection is dialled again by the call. */
    if (c->fd < 0 && !sl_client_reconnect_on(c))
        return -SL_ERR_NOT_CONNECTED;
    sl_client_care_forget(c);
    int rc = leave_current_session(c);
    if (rc == 0)
        rc = sl_client_login_with(c, username, password, token, out);
    if (rc == 0)
        rc = sl_client_care_remember(c, username, password, token);
    if (rc == 0)
        rc = sl_client_settle(c, username, password, token, out);
    return rc;
}

int sl_client_login(sl_client_t *c, const char *username, const char *password, sl_identity_t *out)
{
    if (username == NULL || password == NULL)
        return -SL_ERR_INVALID_COMMAND;
    return login_public(c, username, password, NULL, out);
}

int sl_client_login_token(sl_client_t *c, const char *token, sl_identity_t *out)
{
    if (token == NULL)
        return -SL_ERR_INVALID_COMMAND;
    return login_public(c, NULL, NULL, token, out);
}

int sl_client_login_again(sl_client_t *c)
{
    const sl_client_care_t *k = &c->care;
    if (k->token == NULL && (k->username == NULL || k->password == NULL))
        return -SL_ERR_UNAUTHENTICATED;
    return sl_client_login_with(c, k->username, k->password, k->token, NULL);
}

int sl_client_logout(sl_client_t *c)
{
    /* An explicit logout means "stay logged out": no re-login after it. */
    sl_client_care_forget(c);
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    if (c->session.session == 0)
        return 0;
    sl_client_reply_t r;
    int rc = sl_client_call_empty(c, SL_OP_LOGOUT, 0, &r);
    if (rc != 0)
        return rc;
    sl_client_session_reset(&c->session);
    sl_logout_user_reply_t reply;
    return sl_logout_user_reply_decode(r.payload, &c->arena, &reply);
}

/* --- raw access ------------------------------------------------------------------ */

static void raw_from_reply(const sl_client_reply_t *r, int error, sl_raw_reply_t *out)
{
    *out = (sl_raw_reply_t){
        .evicted = r->outcome == SL_CLIENT_REPLY_EVICTED,
        .frame = r->frame.ptr,
        .frame_len = r->frame.len,
        .body = r->body.ptr,
        .body_len = r->body.len,
        .error = error,
    };
    if (out->evicted) {
        out->eviction_reason = r->eviction.reason;
        out->version_max = r->eviction.version_max;
        out->version_min = r->eviction.version_min;
        return;
    }
    out->operation = r->header.operation;
    out->status = r->header.status;
    out->request = r->header.request;
    out->op = r->header.op;
    out->commit = r->header.commit;
    out->timestamp = r->header.timestamp;
}

/* What the raw calls return: 0 for any frame that arrived well-formed. */
static int raw_result(sl_client_t *c, sl_span_t frame, sl_raw_reply_t *out)
{
    sl_client_reply_t r;
    int error = sl_client_reply_process(frame, c->frame_max, &r);
    sl_client_reply_apply(c, &r);
    if (r.outcome == SL_CLIENT_REPLY_BAD_FRAME)
        return error;
    raw_from_reply(&r, error, out);
    return 0;
}

int sl_client_request_raw(sl_client_t *c, uint8_t operation, uint32_t code, const void *body,
                          size_t body_len, sl_raw_reply_t *out)
{
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    if (sl_client_pipe_busy(c))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_put_bytes(&c->tx, body, body_len);
    int rc = sl_client_frame_finish(&c->tx, &c->session, operation, code, c->frame_max);
    if (rc != 0)
        return rc;
    sl_span_t frame;
    bool sent;
    rc = sl_client_exchange(c, &frame, &sent);
    return rc != 0 ? rc : raw_result(c, frame, out);
}

int sl_client_send_bytes(sl_client_t *c, const void *bytes, size_t len)
{
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    if (sl_client_pipe_busy(c))
        return -SL_ERR_INVALID_COMMAND;
    int rc = sl_client_link_send(c, bytes, len, sl_client_deadline(c->request_timeout_ms));
    if (rc != 0)
        sl_client_disconnect(c);
    return rc;
}

int sl_client_recv_frame(sl_client_t *c, sl_raw_reply_t *out)
{
    if (c->fd < 0)
        return -SL_ERR_NOT_CONNECTED;
    if (sl_client_pipe_busy(c))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t frame;
    int rc = sl_client_read_frame(c, sl_client_deadline(c->request_timeout_ms), &frame);
    if (rc != 0) {
        sl_client_disconnect(c);
        return rc;
    }
    return raw_result(c, frame, out);
}
