/* Iggy's HTTP API as pure codecs (shared/protocol/http.md): the route
 * table, path and query decoding, JSON request bodies turned into the typed
 * requests of src/wire (and from there into binary request bodies), binary
 * reply payloads turned into the reference's JSON, the error bodies and the
 * status map. No I/O, no threads, no globals: the server's HTTP door
 * (server/http.c) feeds bytes in and sends what comes out, so everything
 * here can be unit-tested and fuzzed like src/wire.
 *
 * Ownership. Spans in a matched request borrow the caller's path, query and
 * body buffers and live as long as they do. Responses own their body
 * (sl_rest_response_free). Nothing here keeps a pointer after returning. */
#ifndef SL_REST_REST_H
#define SL_REST_REST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/assert.h"
#include "base/bytes.h"
#include "wire/prim.h"

/* --- methods, routes ----------------------------------------------------------- */

typedef enum sl_rest_method {
    SL_REST_OTHER = 0,
    SL_REST_GET,
    SL_REST_POST,
    SL_REST_PUT,
    SL_REST_DELETE,
    SL_REST_OPTIONS,
    SL_REST_HEAD,
} sl_rest_method_t;

sl_rest_method_t sl_rest_method_parse(const char *text);

/* One value per (method, path pattern) of http.md 4. */
typedef enum sl_rest_route {
    SL_ROUTE_NONE = 0,
    SL_ROUTE_PING,
    SL_ROUTE_STATS,
    SL_ROUTE_CLUSTER_METADATA,
    SL_ROUTE_CLIENTS,
    SL_ROUTE_CLIENT,
    SL_ROUTE_OPTIONS,
    SL_ROUTE_SNAPSHOT,
    SL_ROUTE_METRICS,
    SL_ROUTE_LOGIN,
    SL_ROUTE_REFRESH_TOKEN,
    SL_ROUTE_PAT_LOGIN,
    SL_ROUTE_LOGOUT,
    SL_ROUTE_USERS,
    SL_ROUTE_USER,
    SL_ROUTE_USER_CREATE,
    SL_ROUTE_USER_UPDATE,
    SL_ROUTE_USER_DELETE,
    SL_ROUTE_USER_PASSWORD,
    SL_ROUTE_USER_PERMISSIONS,
    SL_ROUTE_PATS,
    SL_ROUTE_PAT_CREATE,
    SL_ROUTE_PAT_DELETE,
    SL_ROUTE_STREAMS,
    SL_ROUTE_STREAM,
    SL_ROUTE_STREAM_CREATE,
    SL_ROUTE_STREAM_UPDATE,
    SL_ROUTE_STREAM_DELETE,
    SL_ROUTE_STREAM_PURGE,
    SL_ROUTE_TOPICS,
    SL_ROUTE_TOPIC,
    SL_ROUTE_TOPIC_CREATE,
    SL_ROUTE_TOPIC_UPDATE,
    SL_ROUTE_TOPIC_DELETE,
    SL_ROUTE_TOPIC_PURGE,
    SL_ROUTE_PARTITIONS_CREATE,
    SL_ROUTE_PARTITIONS_DELETE,
    SL_ROUTE_SEGMENTS_DELETE,
    SL_ROUTE_GROUPS,
    SL_ROUTE_GROUP,
    SL_ROUTE_GROUP_CREATE,
    SL_ROUTE_GROUP_DELETE,
    SL_ROUTE_POLL,
    SL_ROUTE_SEND,
    SL_ROUTE_OFFSET_GET,
    SL_ROUTE_OFFSET_STORE,
    SL_ROUTE_OFFSET_DELETE,
    SL_ROUTE_COUNT,
} sl_rest_route_t;

/* The route's name for logs and metrics labels ("get_streams"). */
const char *sl_rest_route_name(sl_rest_route_t route);
/* True for routes that answer without a bearer (ping and the three logins). */
bool sl_rest_route_public(sl_rest_route_t route);

/* Path segments one route pattern may hold at most (/streams/{s}/topics/{t}/...). */
#define SL_REST_SEGMENTS_MAX 8u
/* Query parameters looked at per request; more are ignored. */
#define SL_REST_QUERY_MAX 16u

/* A query parameter as it arrived (percent-encoded); sl_rest_query_get
 * decodes the one asked for. */
typedef struct sl_rest_param {
    sl_span_t key;
    sl_span_t value;
} sl_rest_param_t;

typedef struct sl_rest_query {
    uint32_t count;
    sl_rest_param_t items[SL_REST_QUERY_MAX];
} sl_rest_query_t;

/* Splits "a=1&b=x%20y" into raw pairs (later pairs past the cap are
 * dropped). The text is borrowed. */
void sl_rest_query_parse(sl_span_t text, sl_rest_query_t *out);
/* Appends one raw pair (what an HTTP library hands over); false when full. */
bool sl_rest_query_add(sl_rest_query_t *q, sl_span_t key, sl_span_t value);

/* A path matched against the table. Path parameters are percent-decoded
 * copies in `storage` (no NUL inside; a segment with %00 does not match). */
typedef struct sl_rest_match {
    sl_rest_route_t route;
    uint32_t params_count;
    sl_span_t params[4]; /* decoded path parameters in path order */
    char storage[1024];
} sl_rest_match_t;

typedef enum sl_rest_match_result {
    SL_REST_MATCHED = 0,
    SL_REST_NOT_FOUND = 404,  /* no pattern fits the path */
    SL_REST_BAD_METHOD = 405, /* a pattern fits, not with this method */
} sl_rest_match_result_t;

/* Matches a raw (still percent-encoded) path without its query string.
 * metrics_path is http.metrics.endpoint, or NULL when metrics are off. A
 * static segment wins over a parameter at the same place ("/users/login"
 * over "/users/{user_id}"), as in the reference's router. */
sl_rest_match_result_t sl_rest_route_match(sl_rest_method_t method, sl_span_t path,
                                           const char *metrics_path, sl_rest_match_t *out);

/* --- errors --------------------------------------------------------------------- */

/* An answer other than success. With `plain` the body is `text` as
 * text/plain (the reference's framework rejections: 400, 415, 422); else the
 * four-field JSON body of http.md 3.1 with id, code and field. */
typedef struct sl_rest_error {
    uint16_t status;
    bool plain;
    uint32_t id;       /* IggyError number, or the status for 3.3 errors */
    const char *code;  /* NULL: the snake_case name of id */
    const char *field; /* NULL: JSON null */
    bool retry_after;  /* add Retry-After: 1 */
    char text[200];    /* plain body, or the reason */
} sl_rest_error_t;

/* The status and field of http.md 3.2 for an IggyError number (positive). */
void sl_rest_error_from_code(uint32_t code, sl_rest_error_t *out);
/* A framework rejection: plain text with the status (400, 415, 422). */
void sl_rest_error_plain(sl_rest_error_t *out, uint16_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The hand-built errors of http.md 3.3 ("not_found" 404 and the like). */
void sl_rest_error_custom(sl_rest_error_t *out, uint16_t status, uint32_t id, const char *code,
                          const char *reason);
/* "stream_id_not_found" for 1009 (the protocol name in snake_case) into
 * buf; "error" for an unknown number. */
void sl_rest_error_code_name(uint32_t code, char *buf, size_t len);

/* --- responses -------------------------------------------------------------------- */

typedef struct sl_rest_response {
    uint16_t status;
    const char *content_type; /* NULL: no body */
    sl_buf_t body;
    /* Optional extra headers (static strings). */
    const char *durability; /* Iggy-Durability */
    bool retry_after;       /* Retry-After: 1 */
    bool close;             /* Connection: close (413) */
    char disposition[96];   /* Content-Disposition, "" when none */
} sl_rest_response_t;

void sl_rest_response_init(sl_rest_response_t *r);
void sl_rest_response_free(sl_rest_response_t *r);
/* Status with an empty body. */
void sl_rest_response_empty(sl_rest_response_t *r, uint16_t status);
/* An error answered as http.md 3 describes. */
void sl_rest_response_error(sl_rest_response_t *r, const sl_rest_error_t *e);
/* text/plain body. */
void sl_rest_response_text(sl_rest_response_t *r, uint16_t status, sl_span_t text);

/* --- command routes: JSON -> binary request, binary reply -> JSON ------------------- */

/* What the server knows about a request besides its bytes. */
typedef struct sl_rest_request {
    const sl_rest_match_t *match;
    const sl_rest_query_t *query;
    sl_span_t body;     /* the JSON body (may be empty) */
    uint32_t caller_id; /* the authenticated user ("GET /users/me") */
    uint64_t now_us;    /* origin timestamp of messages sent */
    /* Fills n random bytes: ids of messages sent without one. */
    void (*random)(void *ctx, void *buf, size_t n);
    void *random_ctx;
} sl_rest_request_t;

/* One binary request standing for a command route. */
typedef struct sl_rest_call {
    uint8_t operation; /* request header operation (wire/header.h) */
    uint32_t code;     /* command code (with operation 2) */
    sl_buf_t *body;    /* the caller's buffer; the request body is appended */
    bool ack_none;     /* send: ?ack=none (202 instead of 201) */
} sl_rest_call_t;

/* True for the routes sl_rest_build serves (every route but ping, metrics
 * and the four auth routes, which the server answers itself). */
bool sl_rest_route_is_command(sl_rest_route_t route);
/* True for routes whose body is JSON (415 without application/json). */
bool sl_rest_route_has_json_body(sl_rest_route_t route);

/* Turns a matched command route into its binary request: path, query and
 * body checked as the reference does (400 / 422 plain, or a JSON error).
 * 0 or -1 with *err set. */
int sl_rest_build(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err) SL_WUR;

/* Renders a successful reply payload (after the result section, if any) as
 * the route's answer. arena holds decoded lists. A payload that does not
 * decode is a 500. */
void sl_rest_render(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                    sl_arena_t *arena, sl_rest_response_t *resp);

/* Renders a refusal the binary command gave (status or result code) as the
 * route's answer: the map of http.md 3.2 with the per-route exceptions
 * (a listing of topics of a missing stream is 200 [], a poll of a missing
 * stream is 404 not_found, ...). */
void sl_rest_render_refusal(const sl_rest_request_t *req, uint32_t code, sl_rest_response_t *resp);

/* --- auth route bodies ------------------------------------------------------------- */

typedef struct sl_rest_login {
    sl_span_t username; /* POST /users/login */
    sl_span_t password;
    sl_span_t token; /* POST /personal-access-tokens/login, /users/refresh-token */
} sl_rest_login_t;

/* Reads the body of one of the three auth routes. 0 or -1 with *err. The
 * spans borrow a copy in scratch, which must outlive them. */
int sl_rest_login_parse(sl_rest_route_t route, sl_span_t body, sl_buf_t *scratch,
                        sl_rest_login_t *out, sl_rest_error_t *err) SL_WUR;
/* IdentityInfo: {"user_id", "access_token": {"token", "expiry"}}. */
void sl_rest_identity(sl_rest_response_t *resp, uint32_t user_id, sl_span_t token,
                      uint64_t expiry_s);

#endif
