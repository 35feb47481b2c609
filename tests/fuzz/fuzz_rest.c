/* libFuzzer target: the HTTP API's codecs (src/rest). Byte 0 % 5 picks a
 * mode; the rest is its input:
 *   0 route  [method][path]: a match holds parameters inside the path's
 *            bytes, decoded, and a matched route has a name.
 *   1 build  [route][query length][query][JSON body]: a request the codecs
 *            accept becomes a binary body the server's own decoder reads
 *            without a structural error, and building it again gives the
 *            same bytes (message ids come from a fixed stream here).
 *   2 render [route][reply payload]: any payload renders without a crash;
 *            a 2xx JSON answer is one JSON value.
 *   3 jwt    [token]: verification of arbitrary text never passes, and a
 *            token built from the input's bytes as claims verifies and
 *            reads back the same claims.
 *   4 login  [route][JSON body]: the auth routes' bodies. */
#include <json-c/json.h>
#include <sluice/error.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rest/jwt.h"
#include "rest/rest.h"
#include "wire/command.h"
#include "wire/header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[32] = "fuzz-key-fuzz-key-fuzz-key-fuzz";
static const sl_jwt_params_t params = {
    .alg = SL_JWT_HS256,
    .key = {key, sizeof(key)},
    .issuer = "iggy.apache.org",
    .audience = "iggy.apache.org",
    .valid_issuers = "iggy.apache.org",
    .valid_audiences = "iggy.apache.org",
    .leeway_s = 5,
};

/* Fixed path parameters for the build and render modes. */
static void fake_match(sl_rest_route_t route, sl_rest_match_t *m)
{
    memset(m, 0, sizeof(*m));
    m->route = route;
    static const char *const values[] = {"1", "events", "2", "group"};
    m->params_count = 4;
    for (uint32_t i = 0; i < 4; i++)
        m->params[i] = sl_span_str(values[i]);
}

static void counter_random(void *ctx, void *buf, size_t n)
{
    uint8_t *c = ctx;
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)buf)[i] = (*c)++;
}

static sl_rest_route_t pick_route(uint8_t b)
{
    return (sl_rest_route_t)(1 + b % (SL_ROUTE_COUNT - 1));
}

static void mode_route(const uint8_t *p, size_t n)
{
    if (n < 1)
        return;
    static const sl_rest_method_t methods[] = {SL_REST_GET,    SL_REST_POST,    SL_REST_PUT,
                                               SL_REST_DELETE, SL_REST_OPTIONS, SL_REST_OTHER};
    sl_rest_match_t m;
    sl_rest_match_result_t r =
        sl_rest_route_match(methods[p[0] % 6], sl_span(p + 1, n - 1), "/metrics", &m);
    if (r != SL_REST_MATCHED)
        return;
    sl_assert(m.route > SL_ROUTE_NONE && m.route < SL_ROUTE_COUNT);
    sl_assert(strcmp(sl_rest_route_name(m.route), "none") != 0);
    size_t used = 0;
    for (uint32_t i = 0; i < m.params_count; i++) {
        sl_assert(m.params[i].ptr >= (const uint8_t *)m.storage);
        used += m.params[i].len;
    }
    sl_assert(used <= n && used <= sizeof(m.storage));
}

/* The server's decoder for the call's command. */
static const sl_command_t *command_of(const sl_rest_call_t *call)
{
    return call->operation == SL_OP_NON_REPLICATED ? sl_command_by_code(call->code)
                                                   : sl_command_by_operation(call->operation);
}

static int build_once(sl_rest_route_t route, const uint8_t *p, size_t n, sl_buf_t *out,
                      sl_rest_call_t *call)
{
    if (n < 1)
        return -1;
    size_t qlen = p[0] % n; /* at most n - 1 bytes after the length byte */
    sl_rest_match_t m;
    fake_match(route, &m);
    sl_rest_query_t q;
    sl_rest_query_parse(sl_span(p + 1, qlen), &q);
    uint8_t counter = 0;
    sl_rest_request_t req = {.match = &m,
                             .query = &q,
                             .body = sl_span(p + 1 + qlen, n - 1 - qlen),
                             .caller_id = 7,
                             .now_us = 1767225600000000ull,
                             .random = counter_random,
                             .random_ctx = &counter};
    *call = (sl_rest_call_t){.body = out};
    sl_rest_error_t err;
    int rc = sl_rest_build(&req, call, &err);
    if (rc != 0)
        sl_assert(err.status >= 400 && err.status < 600);
    return rc;
}

static void mode_build(const uint8_t *p, size_t n)
{
    if (n < 1 || !sl_rest_route_is_command(pick_route(p[0])))
        return;
    sl_rest_route_t route = pick_route(p[0]);
    sl_buf_t a, b;
    sl_buf_init(&a, 8u << 20);
    sl_buf_init(&b, 8u << 20);
    sl_rest_call_t ca, cb;
    if (build_once(route, p + 1, n - 1, &a, &ca) == 0) {
        sl_assert(build_once(route, p + 1, n - 1, &b, &cb) == 0);
        sl_assert(a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
        const sl_command_t *row = command_of(&ca);
        sl_assert(row != NULL);
        _Alignas(max_align_t) static uint8_t decoded[16384];
        sl_assert(row->request_size <= sizeof(decoded));
        int rc = row->request_decode(sl_buf_span(&a), decoded);
        /* The server may refuse a value (option keys, counts, names it
         * checks itself), never the structure the codecs wrote. */
        if (rc == -SL_ERR_INVALID_COMMAND && route != SL_ROUTE_TOPIC_CREATE &&
            route != SL_ROUTE_TOPIC_UPDATE && route != SL_ROUTE_STREAM_UPDATE &&
            route != SL_ROUTE_SEND) {
            fprintf(stderr, "%s: built body does not decode\n", sl_rest_route_name(route));
            sl_assert(false);
        }
    }
    sl_buf_free(&a);
    sl_buf_free(&b);
}

static void mode_render(const uint8_t *p, size_t n)
{
    if (n < 1 || !sl_rest_route_is_command(pick_route(p[0])))
        return;
    sl_rest_match_t m;
    fake_match(pick_route(p[0]), &m);
    sl_rest_request_t req = {.match = &m, .caller_id = 7, .now_us = 1767225600000000ull};
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_rest_call_t call = {.body = &body, .ack_none = p[0] & 0x80};
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 64u << 20);
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    sl_rest_render(&req, &call, sl_span(p + 1, n - 1), &arena, &resp);
    sl_assert(resp.status >= 200 && resp.status < 600);
    if (resp.status < 300 && resp.content_type &&
        strcmp(resp.content_type, "application/json") == 0) {
        /* The body is not NUL-terminated: parse a copy. */
        sl_buf_t copy;
        sl_buf_init(&copy, 0);
        sl_put_span(&copy, sl_buf_span(&resp.body));
        sl_put_u8(&copy, 0);
        json_object *o = json_tokener_parse((const char *)copy.data);
        sl_assert(o != NULL);
        json_object_put(o);
        sl_buf_free(&copy);
    }
    sl_rest_render_refusal(&req, p[0], &resp);
    sl_rest_response_free(&resp);
    sl_arena_free(&arena);
    sl_buf_free(&body);
}

static void mode_jwt(const uint8_t *p, size_t n)
{
    sl_jwt_claims_t c;
    /* A forged token never passes (the key is not in the input). */
    sl_assert(sl_jwt_verify(&params, sl_span(p, n), 1767225600u, &c) != 0);
    if (n < 21)
        return;
    sl_jwt_claims_t in = {0};
    memcpy(&in.user_id, p, 4);
    memcpy(&in.user_created_at, p + 4, 8);
    uint64_t now = 1767225600u;
    in.iat = now;
    in.exp = now + (p[12] | (uint64_t)p[13] << 8) + 1;
    in.nbf = now;
    sl_jwt_uuid7(now * 1000u, p + 11, in.jti);
    sl_buf_t t;
    sl_buf_init(&t, 0);
    sl_assert(sl_jwt_encode(&params, &in, &t) == 0);
    sl_assert(sl_jwt_verify(&params, sl_buf_span(&t), now, &c) == 0);
    sl_assert(c.user_id == in.user_id && c.user_created_at == in.user_created_at &&
              c.exp == in.exp && strcmp(c.jti, in.jti) == 0);
    sl_buf_free(&t);
}

static void mode_login(const uint8_t *p, size_t n)
{
    if (n < 1)
        return;
    static const sl_rest_route_t routes[] = {SL_ROUTE_LOGIN, SL_ROUTE_PAT_LOGIN,
                                             SL_ROUTE_REFRESH_TOKEN};
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    sl_rest_login_t in;
    sl_rest_error_t err;
    if (sl_rest_login_parse(routes[p[0] % 3], sl_span(p + 1, n - 1), &scratch, &in, &err) == 0)
        sl_assert(in.username.len + in.password.len + in.token.len <= n);
    sl_buf_free(&scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 5) {
    case 0:
        mode_route(p, n);
        break;
    case 1:
        mode_build(p, n);
        break;
    case 2:
        mode_render(p, n);
        break;
    case 3:
        mode_jwt(p, n);
        break;
    default:
        mode_login(p, n);
        break;
    }
    return 0;
}
