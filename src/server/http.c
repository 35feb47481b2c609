/* The HTTP door (http.h): libmicrohttpd with one thread per connection,
 * request bodies bounded by http.max_request_size, CORS, the bearer check,
 * the auth routes, /metrics, and every command route through src/rest and
 * an internal connection to the loop. */
#include "server/http.h"

#include <errno.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/io.h"
#include "base/log.h"
#include "rest/rest.h"
#include "server/internal.h"
#include "server/server.h"

/* Stack of each connection thread: JSON trees and buffers are on the heap. */
#define SL_HTTP_THREAD_STACK (512u * 1024u)

struct sl_http {
    struct MHD_Daemon *daemon;
    const sl_config_t *cfg; /* the server's, immutable while serving */
    sl_http_links_t links;
    sl_http_auth_t auth;
    _Atomic uint64_t requests; /* http_requests_total */
    bool links_open;
    bool auth_open;
};

/* One HTTP request: its body as it arrives. */
typedef struct http_request {
    sl_buf_t body;
    bool too_big;
    uint64_t dropped; /* bytes past the limit, read and dropped */
} http_request_t;

/* Who a bearer is. */
typedef struct caller {
    uint32_t user_id;
    uint64_t created_at;
    bool jwt;
    sl_jwt_claims_t claims;
} caller_t;

/* --- responses ----------------------------------------------------------------------------- */

static bool header_eq(const char *value, const char *want)
{
    return value && strcasecmp(value, want) == 0;
}

/* The origin to allow for this request, or NULL (http.md 11). */
static const char *cors_origin(const sl_http_t *h, struct MHD_Connection *c)
{
    const char *list = h->cfg->http.cors.allowed_origins;
    while (*list == ' ')
        list++;
    if (list[0] == '*')
        return "*";
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    return origin && sl_jwt_list_has(list, sl_span_str(origin)) ? origin : NULL;
}

static void add_cors(const sl_http_t *h, struct MHD_Connection *c, struct MHD_Response *r)
{
    if (!h->cfg->http.cors.enabled)
        return;
    const char *origin = cors_origin(h, c);
    if (!origin)
        return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    if (strcmp(origin, "*") != 0)
        MHD_add_response_header(r, "Vary", "origin");
    if (h->cfg->http.cors.exposed_headers[0])
        MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                h->cfg->http.cors.exposed_headers);
    if (h->cfg->http.cors.allow_credentials)
        MHD_add_response_header(r, "Access-Control-Allow-Credentials", "true");
}

static enum MHD_Result send_response(sl_http_t *h, struct MHD_Connection *c,
                                     const sl_rest_response_t *resp, bool view)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(resp->body.len, resp->body.data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (resp->content_type)
        MHD_add_response_header(r, "Content-Type", resp->content_type);
    if (resp->retry_after)
        MHD_add_response_header(r, "Retry-After", "1");
    if (resp->durability)
        MHD_add_response_header(r, "Iggy-Durability", resp->durability);
    if (resp->disposition[0])
        MHD_add_response_header(r, "Content-Disposition", resp->disposition);
    if (resp->close)
        MHD_add_response_header(r, "Connection", "close");
    /* One node, no view changes: the metadata view is always 0. */
    if (view && resp->status < 400)
        MHD_add_response_header(r, "iggy-view", "0");
    add_cors(h, c, r);
    enum MHD_Result rc = MHD_queue_response(c, resp->status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_error(sl_http_t *h, struct MHD_Connection *c, const sl_rest_error_t *e)
{
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    sl_rest_response_error(&resp, e);
    enum MHD_Result rc = send_response(h, c, &resp, false);
    sl_rest_response_free(&resp);
    return rc;
}

static enum MHD_Result send_code(sl_http_t *h, struct MHD_Connection *c, uint32_t code)
{
    sl_rest_error_t e;
    sl_rest_error_from_code(code, &e);
    return send_error(h, c, &e);
}

static enum MHD_Result send_empty(sl_http_t *h, struct MHD_Connection *c, uint16_t status)
{
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    sl_rest_response_empty(&resp, status);
    enum MHD_Result rc = send_response(h, c, &resp, true);
    sl_rest_response_free(&resp);
    return rc;
}

/* 503 error 9: the loop could not be reached (stopping, or every internal
 * connection busy for too long). */
static enum MHD_Result send_unavailable(sl_http_t *h, struct MHD_Connection *c)
{
    sl_rest_error_t e;
    sl_rest_error_custom(&e, 503, SL_ERR_CANNOT_ESTABLISH_CONNECTION, NULL,
                         "the server cannot serve this request now");
    return send_error(h, c, &e);
}

static enum MHD_Result send_too_large(sl_http_t *h, struct MHD_Connection *c)
{
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    sl_rest_response_text(&resp, 413,
                          sl_span_str("Failed to buffer the request body: length "
                                      "limit exceeded"));
    resp.close = true;
    enum MHD_Result rc = send_response(h, c, &resp, false);
    sl_rest_response_free(&resp);
    return rc;
}

/* A CORS preflight: answered before any route or bearer (http.md 11). */
static enum MHD_Result send_preflight(sl_http_t *h, struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    add_cors(h, c, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", h->cfg->http.cors.allowed_methods);
    MHD_add_response_header(r, "Access-Control-Allow-Headers", h->cfg->http.cors.allowed_headers);
    if (h->cfg->http.cors.allow_private_network &&
        header_eq(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                              "Access-Control-Request-Private-Network"),
                  "true"))
        MHD_add_response_header(r, "Access-Control-Allow-Private-Network", "true");
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* --- authentication ------------------------------------------------------------------------------
 */

static void random_fill(void *ctx, void *buf, size_t n)
{
    (void)ctx;
    if (sl_random_bytes(buf, n) != 0)
        memset(buf, 0, n); /* id 0 stays 0: the batch still carries it */
}

/* A raw personal access token, resolved by the loop (RESOLVE_PAT): 0, or the
 * refusal's code (53, 47), or -1 when the loop could not be asked. */
static int resolve_pat(sl_http_t *h, sl_span_t token, caller_t *out)
{
    sl_http_link_t *l = sl_http_links_acquire(&h->links, false, 0, 0);
    if (!l)
        return -1;
    sl_http_answer_t a;
    int rc =
        sl_http_link_call(&h->links, l, SL_OP_NON_REPLICATED, SL_INTERNAL_RESOLVE_PAT, token, &a);
    if (rc == 0 && a.code == 0 && a.payload.len == SL_INTERNAL_IDENTITY_SIZE) {
        out->user_id = sl_load_u32(a.payload.ptr);
        out->created_at = sl_load_u64(a.payload.ptr + 4);
    } else if (rc == 0) {
        rc = a.code ? (int)a.code : SL_ERR_INVALID_FORMAT;
    }
    sl_http_links_release(&h->links, l);
    return rc < 0 ? -1 : rc;
}

/* The bearer (http.md 2.1): a JWT of ours, else a raw personal access
 * token. Answers and returns false when it is neither. */
static bool authenticate(sl_http_t *h, struct MHD_Connection *c, caller_t *out,
                         enum MHD_Result *answer)
{
    *out = (caller_t){0};
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7) != 0) {
        *answer = send_code(h, c, SL_ERR_ACCESS_TOKEN_MISSING);
        return false;
    }
    sl_span_t credential = sl_span_str(auth + 7);
    if (sl_http_auth_verify(&h->auth, credential, &out->claims) == 0) {
        out->jwt = true;
        out->user_id = out->claims.user_id;
        out->created_at = out->claims.user_created_at;
        return true;
    }
    /* A personal access token is base64 text: a dot means a JWT that failed. */
    if (credential.len > 0 && credential.len <= 255 &&
        !memchr(credential.ptr, '.', credential.len)) {
        int rc = resolve_pat(h, credential, out);
        if (rc == 0)
            return true;
        if (rc < 0) {
            *answer = send_unavailable(h, c);
            return false;
        }
    }
    *answer = send_code(h, c, SL_ERR_UNAUTHENTICATED);
    return false;
}

static enum MHD_Result send_identity(sl_http_t *h, struct MHD_Connection *c, uint32_t user_id,
                                     uint64_t created_at)
{
    sl_buf_t token;
    sl_buf_init(&token, 0);
    uint64_t expiry = 0;
    if (sl_http_auth_issue(&h->auth, user_id, created_at, &token, &expiry) != 0) {
        sl_buf_free(&token);
        return send_code(h, c, SL_ERR_ERROR);
    }
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    sl_rest_identity(&resp, user_id, sl_buf_span(&token), expiry);
    enum MHD_Result rc = send_response(h, c, &resp, true);
    sl_rest_response_free(&resp);
    sl_buf_free(&token);
    return rc;
}

/* POST /users/login (http.md 2.2): the loop checks the password (a
 * LoginRegister on an internal connection), then a token is issued. */
static enum MHD_Result login_password(sl_http_t *h, struct MHD_Connection *c,
                                      const sl_rest_login_t *in)
{
    if (in->username.len < SL_USERNAME_LEN_MIN || in->username.len > SL_USERNAME_LEN_MAX ||
        in->password.len < SL_PASSWORD_LEN_MIN || in->password.len > SL_PASSWORD_LEN_MAX)
        return send_code(h, c, SL_ERR_INVALID_CREDENTIALS);
    sl_http_link_t *l = sl_http_links_acquire(&h->links, false, 0, 0);
    if (!l)
        return send_unavailable(h, c);
    uint32_t user_id = 0;
    uint64_t created_at = 0;
    int rc = sl_http_link_login(&h->links, l, in->username, in->password, &user_id, &created_at);
    sl_http_links_release(&h->links, l);
    if (rc < 0)
        return send_unavailable(h, c);
    if (rc == SL_ERR_TRANSIENT_NOT_ACCEPTED || rc == SL_ERR_TRANSIENT_NOT_COMMITTED)
        return send_code(h, c, (uint32_t)rc);
    /* Unknown user, wrong password or an inactive user alike: 400 err 42. */
    if (rc != 0)
        return send_code(h, c, SL_ERR_INVALID_CREDENTIALS);
    return send_identity(h, c, user_id, created_at);
}

static enum MHD_Result auth_route(sl_http_t *h, struct MHD_Connection *c, sl_rest_route_t route,
                                  sl_span_t body)
{
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    sl_rest_login_t in;
    sl_rest_error_t err;
    enum MHD_Result answer;
    caller_t who = {0};
    if (sl_rest_login_parse(route, body, &scratch, &in, &err) != 0) {
        answer = send_error(h, c, &err);
    } else if (route == SL_ROUTE_LOGIN) {
        answer = login_password(h, c, &in);
    } else if (route == SL_ROUTE_PAT_LOGIN) {
        int rc = in.token.len > 0 && in.token.len <= 255 ? resolve_pat(h, in.token, &who)
                                                         : SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN;
        answer = rc < 0    ? send_unavailable(h, c)
                 : rc != 0 ? send_code(h, c, (uint32_t)rc)
                           : send_identity(h, c, who.user_id, who.created_at);
    } else {
        /* Refresh (http.md 2.4): the body's token verified like a bearer. */
        answer = sl_http_auth_verify(&h->auth, in.token, &who.claims) == 0
                     ? send_identity(h, c, who.claims.user_id, who.claims.user_created_at)
                     : send_code(h, c, SL_ERR_UNAUTHENTICATED);
    }
    sl_buf_free(&scratch);
    return answer;
}

/* DELETE /users/logout: 204; a JWT stays refused until it would expire. */
static enum MHD_Result logout(sl_http_t *h, struct MHD_Connection *c, const caller_t *who)
{
    if (who->jwt && sl_http_auth_revoke(&h->auth, &who->claims) != 0)
        return send_unavailable(h, c);
    return send_empty(h, c, 204);
}

/* --- metrics ---------------------------------------------------------------------------------- */

static enum MHD_Result metrics(sl_http_t *h, struct MHD_Connection *c)
{
    sl_http_link_t *l = sl_http_links_acquire(&h->links, false, 0, 0);
    if (!l)
        return send_unavailable(h, c);
    sl_http_answer_t a;
    int rc = sl_http_link_call(&h->links, l, SL_OP_NON_REPLICATED, SL_INTERNAL_METRICS,
                               sl_span(NULL, 0), &a);
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    if (rc == 0 && a.code == 0) {
        sl_rest_response_text(&resp, 200, a.payload);
        char tail[256];
        int n = snprintf(tail, sizeof(tail),
                         "# HELP http_requests total count of http_requests.\n"
                         "# TYPE http_requests counter\nhttp_requests_total %llu\n# EOF\n",
                         (unsigned long long)atomic_load(&h->requests));
        sl_put_bytes(&resp.body, tail, (size_t)n);
    }
    sl_http_links_release(&h->links, l);
    enum MHD_Result answer =
        rc == 0 && a.code == 0 ? send_response(h, c, &resp, true) : send_unavailable(h, c);
    sl_rest_response_free(&resp);
    return answer;
}

/* --- command routes -------------------------------------------------------------------------- */

/* The exchange with a link bound to the caller; a session that ended
 * meanwhile (its user was changed) is bound again once. */
static int call_as(sl_http_t *h, sl_http_link_t *l, const caller_t *who, const sl_rest_call_t *call,
                   sl_http_answer_t *a)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = sl_http_link_bind(&h->links, l, who->user_id, who->created_at);
        if (rc != 0)
            return rc;
        rc = sl_http_link_call(&h->links, l, call->operation, call->code, sl_buf_span(call->body),
                               a);
        if (rc != 0)
            return rc;
        bool session_gone =
            a->evicted == SL_EVICT_NO_SESSION || (a->code == SL_ERR_UNAUTHENTICATED && !a->evicted);
        if (!session_gone)
            return 0;
        l->bound = false;
    }
    return SL_ERR_UNAUTHENTICATED;
}

static enum MHD_Result command(sl_http_t *h, struct MHD_Connection *c, const sl_rest_request_t *req,
                               const caller_t *who)
{
    sl_buf_t body;
    sl_buf_init(&body, h->cfg->message_bus.max_message_size);
    sl_rest_call_t call = {.body = &body};
    sl_rest_error_t err;
    enum MHD_Result answer;
    sl_http_link_t *l = NULL;
    if (sl_rest_build(req, &call, &err) != 0) {
        answer = send_error(h, c, &err);
    } else if (!(l = sl_http_links_acquire(&h->links, true, who->user_id, who->created_at))) {
        answer = send_unavailable(h, c);
    } else {
        sl_http_answer_t a;
        int rc = call_as(h, l, who, &call, &a);
        sl_rest_response_t resp;
        sl_rest_response_init(&resp);
        sl_arena_t arena;
        sl_arena_init(&arena, 16 * 1024, h->cfg->message_bus.max_message_size);
        if (rc == 0 && a.code == 0)
            sl_rest_render(req, &call, a.payload, &arena, &resp);
        else if (rc >= 0)
            sl_rest_render_refusal(req, rc ? (uint32_t)rc : a.code, &resp);
        sl_http_links_release(&h->links, l);
        answer = rc < 0 ? send_unavailable(h, c) : send_response(h, c, &resp, true);
        sl_arena_free(&arena);
        sl_rest_response_free(&resp);
    }
    sl_buf_free(&body);
    return answer;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    sl_rest_query_add(cls, sl_span_str(key), value ? sl_span_str(value) : sl_span(NULL, 0));
    return MHD_YES;
}

static bool json_content(struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (!t)
        return false;
    size_t n = strcspn(t, ";");
    while (n > 0 && t[n - 1] == ' ')
        n--;
    if (n == 16 && strncasecmp(t, "application/json", 16) == 0)
        return true;
    /* application/<anything>+json */
    return n > 17 && strncasecmp(t, "application/", 12) == 0 &&
           strncasecmp(t + n - 5, "+json", 5) == 0;
}

/* --- dispatch --------------------------------------------------------------------------------- */

static enum MHD_Result route_request(sl_http_t *h, struct MHD_Connection *c, const char *url,
                                     const char *method, http_request_t *r)
{
    sl_rest_method_t m = sl_rest_method_parse(method);
    if (m == SL_REST_OPTIONS && h->cfg->http.cors.enabled &&
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Method"))
        return send_preflight(h, c);
    sl_rest_match_t match;
    const char *metrics_path = h->cfg->http.metrics.enabled ? h->cfg->http.metrics.endpoint : NULL;
    sl_rest_match_result_t mr = sl_rest_route_match(m, sl_span_str(url), metrics_path, &match);
    if (mr != SL_REST_MATCHED)
        return send_empty(h, c, (uint16_t)mr);
    if (match.route == SL_ROUTE_PING) {
        sl_rest_response_t resp;
        sl_rest_response_init(&resp);
        sl_rest_response_text(&resp, 200, sl_span_str("pong"));
        enum MHD_Result rc = send_response(h, c, &resp, false);
        sl_rest_response_free(&resp);
        return rc;
    }
    bool json = sl_rest_route_has_json_body(match.route);
    enum MHD_Result answer;
    caller_t who;
    if (!sl_rest_route_public(match.route) && !authenticate(h, c, &who, &answer))
        return answer;
    if (json && !json_content(c)) {
        sl_rest_error_t e;
        sl_rest_error_plain(&e, 415, "Expected request with `Content-Type: application/json`");
        return send_error(h, c, &e);
    }
    sl_span_t body = sl_buf_span(&r->body);
    if (sl_rest_route_public(match.route))
        return auth_route(h, c, match.route, body);
    if (match.route == SL_ROUTE_LOGOUT)
        return logout(h, c, &who);
    if (match.route == SL_ROUTE_METRICS)
        return metrics(h, c);
    sl_rest_query_t query = {0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &query);
    sl_rest_request_t req = {
        .match = &match,
        .query = &query,
        .body = body,
        .caller_id = who.user_id,
        .now_us = sl_clock_realtime_us(),
        .random = random_fill,
    };
    return command(h, c, &req, &who);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx)
{
    (void)version;
    sl_http_t *h = cls;
    http_request_t *r = *ctx;
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        sl_buf_init(&r->body, h->cfg->http.max_request_size);
        *ctx = r;
        atomic_fetch_add(&h->requests, 1);
        /* A declared length over the limit is refused before any of the body
         * is read, and the connection closes after the answer. */
        const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (len && strtoull(len, NULL, 10) > h->cfg->http.max_request_size)
            return send_too_large(h, c);
        return MHD_YES;
    }
    if (*upload_size) {
        if (r->body.len + *upload_size > h->cfg->http.max_request_size)
            r->too_big = true;
        /* A body without a declared length that goes past the limit is read
         * and dropped up to four times the limit, then answered 413; past
         * that the connection is cut. */
        if (!r->too_big)
            sl_put_bytes(&r->body, upload, *upload_size);
        else if ((r->dropped += *upload_size) > 4 * h->cfg->http.max_request_size)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->too_big || !sl_buf_ok(&r->body))
        return send_too_large(h, c);
    return route_request(h, c, url, method, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    http_request_t *r = *ctx;
    if (!r)
        return;
    sl_buf_free(&r->body);
    free(r);
    *ctx = NULL;
}

/* Paths and query values reach src/rest percent-encoded: it decodes each
 * segment after splitting, so an encoded '/' stays inside its segment. */
static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls, (void)c;
    return strlen(s);
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    sl_log_debug("http: %s", line);
}

/* --- life cycle --------------------------------------------------------------------------- */

int sl_http_bind(const sl_config_t *cfg, int *fd, uint16_t *port, char *err, size_t err_len)
{
    const sl_config_address_t *a = &cfg->http.address;
    int rc = sl_loop_listen(a->host, a->port, SOMAXCONN, fd);
    if (rc != 0) {
        snprintf(err, err_len, "cannot listen on %s (http.address): %s", a->text, strerror(-rc));
        return -SL_ERR_CANNOT_BIND_TO_SOCKET;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    *port = a->port;
    if (getsockname(*fd, (struct sockaddr *)&ss, &len) == 0)
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

/* The largest certificate chain or key file read (a chain of a few
 * certificates is a few KiB). */
#define SL_HTTP_PEM_MAX (1u << 20)

int sl_http_tls_load(const sl_config_t *cfg, sl_http_tls_t *t, char *err, size_t err_len)
{
    sl_buf_init(&t->cert, SL_HTTP_PEM_MAX + 1);
    sl_buf_init(&t->key, SL_HTTP_PEM_MAX + 1);
    /* OpenSSL reads the pair first: the same checks and messages as
     * [tcp.tls] (http.md 9: no self-signed option, the files must load). */
    sl_tls_settings_t s = {"http.tls", false, cfg->http.tls.cert_file, cfg->http.tls.key_file};
    sl_tls_ctx_t *ctx = NULL;
    sl_tls_source_t source;
    if (sl_tls_ctx_create(&s, &ctx, &source, err, err_len) != 0)
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_tls_ctx_free(ctx);
    int rc = sl_io_read_file(cfg->http.tls.cert_file, &t->cert, SL_HTTP_PEM_MAX);
    const char *path = cfg->http.tls.cert_file;
    if (rc == 0) {
        rc = sl_io_read_file(cfg->http.tls.key_file, &t->key, SL_HTTP_PEM_MAX);
        path = cfg->http.tls.key_file;
    }
    if (rc == 0) {
        sl_put_u8(&t->cert, 0); /* libmicrohttpd takes C strings */
        sl_put_u8(&t->key, 0);
    }
    if (rc != 0 || !sl_buf_ok(&t->cert) || !sl_buf_ok(&t->key)) {
        snprintf(err, err_len, "http.tls: cannot read %s: %s", path, strerror(rc ? -rc : ENOMEM));
        sl_http_tls_free(t);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    return 0;
}

void sl_http_tls_free(sl_http_tls_t *t)
{
    if (t->key.data)
        OPENSSL_cleanse(t->key.data, t->key.cap);
    sl_buf_free(&t->key);
    sl_buf_free(&t->cert);
}

static struct MHD_Daemon *daemon_start(sl_http_t *h, int listen_fd, const sl_http_tls_t *tls)
{
    /* The connection threads take no signal: the main thread handles them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    /* HTTPS: GnuTLS inside libmicrohttpd, TLS 1.2 and 1.3 as the reference
     * (tls.md 1). With TLS off the options are skipped: MHD_OPTION_END
     * first ends the list there. */
    struct MHD_OptionItem https[] = {
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls ? (void *)tls->cert.data : NULL},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, tls ? (void *)tls->key.data : NULL},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(
        flags | (tls ? MHD_USE_TLS : 0), 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET,
        listen_fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->cfg->http.max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(h->cfg->http.idle_timeout_us / 1000000u),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, h,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)SL_HTTP_THREAD_STACK, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, h, MHD_OPTION_ARRAY, https, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return d;
}

int sl_http_start(struct sl_server *srv, int listen_fd, const sl_http_tls_t *tls, sl_http_t **out,
                  char *err, size_t err_len)
{
    *out = NULL;
    sl_http_t *h = calloc(1, sizeof(*h));
    if (!h) {
        close(listen_fd);
        return -ENOMEM;
    }
    h->cfg = &srv->cfg;
    *out = h;
    int rc = sl_http_auth_open(&h->auth, &srv->cfg, err, err_len);
    h->auth_open = true;
    if (rc != 0) {
        close(listen_fd);
        return rc;
    }
    rc = sl_http_links_open(&h->links, srv, srv->cfg.http.sessions);
    h->links_open = true;
    if (rc != 0) {
        close(listen_fd);
        snprintf(err, err_len, "http: cannot open internal connections: %s", strerror(-rc));
        return rc;
    }
    h->daemon = daemon_start(h, listen_fd, tls);
    if (!h->daemon) {
        close(listen_fd);
        snprintf(err, err_len, "http: cannot start serving on %s", srv->cfg.http.address.text);
        return -EIO;
    }
    return 0;
}

void sl_http_stop(sl_http_t *h)
{
    if (!h)
        return;
    if (h->daemon) {
        /* Threads waiting for the (stopped) loop see their link close. */
        int fd = (int)MHD_quiesce_daemon(h->daemon);
        MHD_stop_daemon(h->daemon);
        if (fd >= 0)
            close(fd);
    }
    if (h->links_open)
        sl_http_links_close(&h->links);
    if (h->auth_open)
        sl_http_auth_close(&h->auth);
    free(h);
}

void sl_http_tick(sl_http_t *h, struct sl_server *srv)
{
    if (h && h->links_open)
        sl_http_links_heal(&h->links, srv);
}
