/* src/rest without a server: route matching, the byte-size strings of
 * http.md 1.3, base64, JSON reading (UTF-8, u64 extremes, rejections),
 * JWT encode/verify and tampering, the error body, and a request built and
 * rendered through the wire codecs. */
#include <json-c/json.h>
#include <setjmp.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "base/base64.h"
#include "rest/internal.h"
#include "rest/jwt.h"
#include "rest/rest.h"
#include "wire/cmd_streams.h"
#include "wire/header.h"

static sl_rest_match_result_t match(sl_rest_method_t m, const char *path, sl_rest_match_t *out)
{
    return sl_rest_route_match(m, sl_span_str(path), "/metrics", out);
}

static void test_routes(void **state)
{
    (void)state;
    sl_rest_match_t m;
    assert_int_equal(match(SL_REST_GET, "/streams/1/topics/orders", &m), SL_REST_MATCHED);
    assert_int_equal(m.route, SL_ROUTE_TOPIC);
    assert_int_equal(m.params_count, 2);
    assert_memory_equal(m.params[1].ptr, "orders", 6);
    /* A static segment wins over a parameter (axum's router). */
    assert_int_equal(match(SL_REST_POST, "/users/login", &m), SL_REST_MATCHED);
    assert_int_equal(m.route, SL_ROUTE_LOGIN);
    assert_int_equal(match(SL_REST_GET, "/users/login", &m), SL_REST_BAD_METHOD);
    assert_int_equal(match(SL_REST_GET, "/users/alice", &m), SL_REST_MATCHED);
    assert_int_equal(m.route, SL_ROUTE_USER);
    /* Exact: no trailing slash, no empty segment, no unknown path. */
    assert_int_equal(match(SL_REST_GET, "/streams/", &m), SL_REST_NOT_FOUND);
    assert_int_equal(match(SL_REST_GET, "/streams//topics", &m), SL_REST_NOT_FOUND);
    assert_int_equal(match(SL_REST_GET, "/", &m), SL_REST_NOT_FOUND);
    assert_int_equal(match(SL_REST_PUT, "/streams", &m), SL_REST_BAD_METHOD);
    assert_int_equal(match(SL_REST_GET, "/metrics", &m), SL_REST_MATCHED);
    assert_int_equal(m.route, SL_ROUTE_METRICS);
    /* Percent-decoding happens per segment: an encoded / stays in its name. */
    assert_int_equal(match(SL_REST_GET, "/streams/a%2Fb", &m), SL_REST_MATCHED);
    assert_int_equal(m.params[0].len, 3);
    assert_memory_equal(m.params[0].ptr, "a/b", 3);
    /* HEAD is served like GET. */
    assert_int_equal(match(SL_REST_HEAD, "/stats", &m), SL_REST_MATCHED);
    assert_int_equal(m.route, SL_ROUTE_STATS);
}

static void test_byte_sizes(void **state)
{
    (void)state;
    /* The examples of http.md 1.3. */
    static const struct {
        uint64_t v;
        const char *text;
    } cases[] = {
        {0, "0 B"},           {500, "500 B"},          {1000, "1 KB"},        {1024, "1 KiB"},
        {69092, "69.092 KB"}, {3211776, "3136.5 KiB"}, {1073741824, "1 GiB"}, {1500000, "1.5 MB"},
        {1001, "1.001 KB"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[64];
        sl_rest_format_bytes(cases[i].v, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].text);
    }
}

static void test_base64(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_base64_encode(&b, sl_span_str("hello"), false);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "aGVsbG8=", 8);
    sl_buf_reset(&b);
    sl_base64_encode(&b, sl_span_str("hello"), true);
    assert_memory_equal(b.data, "aGVsbG8", 7);
    sl_buf_reset(&b);
    assert_true(sl_base64_decode(&b, sl_span_str("AQAAAA=="), false));
    assert_int_equal(b.len, 4);
    assert_int_equal(sl_load_u32(b.data), 1);
    sl_buf_reset(&b);
    assert_false(sl_base64_decode(&b, sl_span_str("AQAAAA="), false)); /* padding */
    assert_false(sl_base64_decode(&b, sl_span_str("a!=="), false));
    assert_false(sl_base64_decode(&b, sl_span_str("AR=="), false)); /* bits left over */
    sl_buf_free(&b);
}

static void test_json_reading(void **state)
{
    (void)state;
    sl_rest_error_t err;
    json_object *o = sl_rest_json_object(
        sl_span_str("{\"a\":18446744073709551615,\"b\":-1,\"c\":1e3,\"s\":\"x\"}"), &err);
    assert_non_null(o);
    uint64_t v;
    assert_true(sl_rest_json_u64(o, "a", true, &v, NULL, &err));
    assert_true(v == UINT64_MAX);
    assert_false(sl_rest_json_u64(o, "b", true, &v, NULL, &err));
    assert_int_equal(err.status, 422);
    assert_false(sl_rest_json_u64(o, "c", true, &v, NULL, &err));
    assert_false(sl_rest_json_u64(o, "missing", true, &v, NULL, &err));
    assert_non_null(strstr(err.text, "missing field `missing`"));
    json_object_put(o);
    /* Syntax and trailing bytes: 400; not an object: 422; bad UTF-8: 400. */
    assert_null(sl_rest_json_object(sl_span_str("{\"a\":"), &err));
    assert_int_equal(err.status, 400);
    assert_null(sl_rest_json_object(sl_span_str("{} x"), &err));
    assert_int_equal(err.status, 400);
    assert_null(sl_rest_json_object(sl_span_str("[1]"), &err));
    assert_int_equal(err.status, 422);
    assert_null(sl_rest_json_object(sl_span_str("{\"a\":\"\xff\"}"), &err));
    assert_int_equal(err.status, 400);
    /* Writing: NaN is null, text that is not UTF-8 is made so. */
    json_object *f = sl_rest_json_f32(0.0f / 0.0f);
    assert_null(f);
    json_object *t = sl_rest_json_string(sl_span("a\xff", 2));
    assert_string_equal(json_object_get_string(t), "a\xEF\xBF\xBD");
    json_object_put(t);
    t = sl_rest_json_u128((sl_u128_t){UINT64_MAX, UINT64_MAX});
    assert_string_equal(json_object_to_json_string(t), "340282366920938463463374607431768211455");
    json_object_put(t);
}

static const uint8_t key[] = "0123456789abcdef0123456789abcdef";

static sl_jwt_params_t params(void)
{
    return (sl_jwt_params_t){.alg = SL_JWT_HS256,
                             .key = {key, 32},
                             .issuer = "iggy.apache.org",
                             .audience = "iggy.apache.org",
                             .valid_issuers = "iggy.apache.org",
                             .valid_audiences = "x, iggy.apache.org",
                             .leeway_s = 5};
}

static void test_jwt(void **state)
{
    (void)state;
    sl_jwt_params_t p = params();
    sl_jwt_claims_t c = {
        .user_id = 42, .user_created_at = 7, .iat = 1000, .exp = 2000, .nbf = 1000};
    uint8_t rnd[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    sl_jwt_uuid7(1000000, rnd, c.jti);
    assert_int_equal(strlen(c.jti), 36);
    assert_int_equal(c.jti[14], '7');
    sl_buf_t t;
    sl_buf_init(&t, 0);
    assert_int_equal(sl_jwt_encode(&p, &c, &t), 0);
    sl_jwt_claims_t out;
    assert_int_equal(sl_jwt_verify(&p, sl_buf_span(&t), 1500, &out), 0);
    assert_int_equal(out.user_id, 42);
    assert_int_equal(out.user_created_at, 7);
    assert_string_equal(out.jti, c.jti);
    /* Expiry with leeway, not-before, another key, another algorithm. */
    assert_int_equal(sl_jwt_verify(&p, sl_buf_span(&t), 2005, &out), 0);
    assert_int_not_equal(sl_jwt_verify(&p, sl_buf_span(&t), 2006, &out), 0);
    assert_int_not_equal(sl_jwt_verify(&p, sl_buf_span(&t), 990, &out), 0);
    sl_jwt_params_t other = p;
    other.key = sl_span("another key, same length......!!", 32);
    assert_int_not_equal(sl_jwt_verify(&other, sl_buf_span(&t), 1500, &out), 0);
    other = p;
    other.alg = SL_JWT_HS512;
    assert_int_not_equal(sl_jwt_verify(&other, sl_buf_span(&t), 1500, &out), 0);
    other = p;
    other.valid_issuers = "someone.else";
    assert_int_not_equal(sl_jwt_verify(&other, sl_buf_span(&t), 1500, &out), 0);
    /* One flipped payload byte breaks the signature. */
    char *dot = memchr(t.data, '.', t.len);
    dot[3] = dot[3] == 'A' ? 'B' : 'A';
    assert_int_not_equal(sl_jwt_verify(&p, sl_buf_span(&t), 1500, &out), 0);
    /* An unsigned token ("alg":"none") never passes. */
    assert_int_not_equal(
        sl_jwt_verify(&p, sl_span_str("eyJhbGciOiJub25lIn0.eyJzdWIiOiIwIn0."), 1500, &out), 0);
    sl_buf_free(&t);
}

static void test_error_body(void **state)
{
    (void)state;
    sl_rest_error_t e;
    sl_rest_error_from_code(SL_ERR_STREAM_ID_NOT_FOUND, &e);
    assert_int_equal(e.status, 404);
    sl_rest_response_t r;
    sl_rest_response_init(&r);
    sl_rest_response_error(&r, &e);
    sl_put_u8(&r.body, 0);
    json_object *o = json_tokener_parse((const char *)r.body.data);
    assert_non_null(o);
    json_object *v;
    assert_true(json_object_object_get_ex(o, "code", &v));
    assert_string_equal(json_object_get_string(v), "stream_id_not_found");
    assert_true(json_object_object_get_ex(o, "field", &v));
    assert_string_equal(json_object_get_string(v), "stream_id");
    json_object_put(o);
    sl_rest_error_from_code(SL_ERR_TRANSIENT_NOT_ACCEPTED, &e);
    assert_int_equal(e.status, 503);
    assert_true(e.retry_after);
    sl_rest_error_from_code(SL_ERR_UNAUTHORIZED, &e);
    assert_int_equal(e.status, 403);
    sl_rest_error_from_code(SL_ERR_INVALID_CREDENTIALS, &e);
    assert_int_equal(e.status, 400);
    sl_rest_response_free(&r);
}

/* POST /streams -> CreateStream's body; its reply -> StreamDetails JSON. */
static void test_build_and_render(void **state)
{
    (void)state;
    sl_rest_match_t m;
    assert_int_equal(match(SL_REST_POST, "/streams", &m), SL_REST_MATCHED);
    sl_rest_request_t req = {.match = &m, .body = sl_span_str("{\"name\":\"orders\",\"x\":1}")};
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_rest_call_t call = {.body = &body};
    sl_rest_error_t err;
    assert_int_equal(sl_rest_build(&req, &call, &err), 0);
    assert_int_equal(call.operation, SL_OP_CREATE_STREAM);
    sl_create_stream_request_t q;
    assert_int_equal(sl_create_stream_request_decode(sl_buf_span(&body), &q), 0);
    assert_int_equal(q.name.len, 6);

    sl_buf_t reply;
    sl_buf_init(&reply, 0);
    sl_create_stream_reply_t r = {.stream = {.header = {.id = 3,
                                                        .created_at = 1767225600000000ull,
                                                        .size_bytes = 69092,
                                                        .name = sl_span_str("orders")}}};
    assert_int_equal(sl_create_stream_reply_encode(&reply, &r), 0);
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1u << 20);
    sl_rest_response_t resp;
    sl_rest_response_init(&resp);
    sl_rest_render(&req, &call, sl_buf_span(&reply), &arena, &resp);
    assert_int_equal(resp.status, 200);
    sl_put_u8(&resp.body, 0);
    assert_string_equal((const char *)resp.body.data,
                        "{\"id\":3,\"created_at\":1767225600000000,\"name\":\"orders\",\"size\":"
                        "\"69.092 KB\",\"messages_count\":0,\"topics_count\":0,\"topics\":[],"
                        "\"options\":{}}");
    /* A name too long for the protocol: the command's own error. */
    char big[400];
    memset(big, 0, sizeof(big));
    strcpy(big, "{\"name\":\"");
    memset(big + 9, 'n', 300);
    strcat(big, "\"}");
    req.body = sl_span_str(big);
    sl_buf_reset(&body);
    assert_int_equal(sl_rest_build(&req, &call, &err), -1);
    assert_int_equal(err.id, SL_ERR_INVALID_STREAM_NAME);
    sl_rest_response_free(&resp);
    sl_arena_free(&arena);
    sl_buf_free(&reply);
    sl_buf_free(&body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_byte_sizes),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_json_reading),
        cmocka_unit_test(test_jwt),
        cmocka_unit_test(test_error_body),
        cmocka_unit_test(test_build_and_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
