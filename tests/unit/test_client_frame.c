/* libsluice request framing (src/client/frame.c), without sockets: header
 * fields, request numbering and checksum stamping per operation class
 * (framing.md 3, 5.2), and the PING and LOGIN_REGISTER golden vectors. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "client/client_internal.h"

/* The vectors' client id: bytes 00 01 .. 0f on the wire. */
static const sl_u128_t vector_client = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

static sl_buf_t frame_with_body(const void *body, size_t len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_zeros(&b, SL_HEADER_SIZE);
    sl_put_bytes(&b, body, len);
    return b;
}

static void test_ping_matches_vector(void **state)
{
    (void)state;
    size_t len;
    uint8_t *want = tu_vector("a_ping_request.hex", &len);
    sl_client_session_t s = {.client_id = vector_client};
    sl_client_session_reset(&s); /* a fresh connection: counter 1, no session */
    sl_buf_t b = frame_with_body(NULL, 0);
    assert_int_equal(sl_client_frame_finish(&b, &s, SL_OP_NON_REPLICATED, 1, SL_FRAME_MAX_DEFAULT),
                     0);
    assert_bytes_equal(b.data, b.len, want, len);
    assert_int_equal(s.request, 1); /* NonReplicated does not advance */
    sl_buf_free(&b);
    free(want);
}

static void test_login_matches_vector(void **state)
{
    (void)state;
    size_t len;
    uint8_t *want = tu_vector("b_login_register_request.hex", &len);
    sl_buf_t b = frame_with_body(NULL, 0);
    sl_login_register_request_t req = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("c-sdk"), sl_span_str("0.1.0")},
        .login = {.username = sl_span_str("iggy"), .password = sl_span_str("iggy")},
    };
    assert_int_equal(sl_login_register_request_encode(&b, &req), 0);
    /* Register ignores the session and counter it is given. */
    sl_client_session_t s = {.client_id = vector_client, .session = 9, .request = 4};
    assert_int_equal(sl_client_frame_finish(&b, &s, SL_OP_REGISTER, 40, SL_FRAME_MAX_DEFAULT), 0);
    assert_bytes_equal(b.data, b.len, want, len);
    assert_int_equal(s.request, 4);
    sl_buf_free(&b);
    free(want);
}

/* Everything a client must send as zero (framing.md 1.1, 3). */
static void assert_all_reserved_zero(const uint8_t *hdr)
{
    assert_true(sl_all_zero(hdr, 48));       /* checksum, checksum_body, cluster */
    assert_true(sl_all_zero(hdr + 52, 8));   /* view, release */
    assert_true(sl_all_zero(hdr + 61, 67));  /* replica, reserved */
    assert_true(sl_all_zero(hdr + 177, 7));  /* padding */
    assert_true(sl_all_zero(hdr + 200, 56)); /* reserved */
    if (hdr[SL_REQ_OFF_OPERATION] != SL_OP_NON_REPLICATED)
        assert_int_equal(sl_load_u32(hdr + SL_REQ_OFF_CODE), 0);
}

/* Builds one frame for op from s and returns its decoded header. */
static sl_request_header_t build(sl_client_session_t *s, uint8_t op, uint32_t code,
                                 const char *body)
{
    sl_buf_t b = frame_with_body(body, strlen(body));
    assert_int_equal(sl_client_frame_finish(&b, s, op, code, SL_FRAME_MAX_DEFAULT), 0);
    sl_request_header_t h;
    /* The server's own validator must accept every frame the client builds. */
    assert_int_equal(sl_request_header_decode(b.data, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_OK);
    assert_int_equal(h.size, SL_HEADER_SIZE + strlen(body));
    assert_true(sl_u128_eq(h.client, s->client_id));
    assert_int_equal(h.timestamp, 0);
    assert_int_equal(h.user_id, 0);
    assert_all_reserved_zero(b.data);
    sl_buf_free(&b);
    return h;
}

static void assert_stamp(const sl_request_header_t *h, const char *body, bool stamped)
{
    sl_u128_t want = {stamped ? sl_xxh3_64(body, strlen(body)) : 0, 0};
    assert_true(sl_u128_eq(h->request_checksum, want));
}

static void test_numbering_by_operation_class(void **state)
{
    (void)state;
    sl_client_session_t s = {.client_id = {1, 2}, .session = 42, .request = 1};
    /* Metadata: next value, advanced, stamped, no code. */
    sl_request_header_t h = build(&s, SL_OP_CREATE_STREAM, 202, "abc");
    assert_int_equal(h.request, 1);
    assert_int_equal(h.session, 42);
    assert_int_equal(h.code, 0);
    assert_stamp(&h, "abc", true);
    /* NonReplicated: the current value, not advanced, code written, unstamped. */
    h = build(&s, SL_OP_NON_REPLICATED, 201, "xy");
    assert_int_equal(h.request, 2);
    assert_int_equal(h.session, 42);
    assert_int_equal(h.code, 201);
    assert_stamp(&h, "xy", false);
    h = build(&s, SL_OP_NON_REPLICATED, 1, "");
    assert_int_equal(h.request, 2);
    /* DeleteSegments advances and is stamped although it is not metadata. */
    h = build(&s, SL_OP_DELETE_SEGMENTS, 503, "segs");
    assert_int_equal(h.request, 2);
    assert_stamp(&h, "segs", true);
    /* Partition operations advance (framing.md 5.2) and are not stamped. */
    for (uint8_t op = SL_OP_SEND_MESSAGES; op <= SL_OP_DELETE_CONSUMER_OFFSET; op++) {
        uint64_t before = s.request;
        h = build(&s, op, 0, "p");
        assert_int_equal(h.request, before);
        assert_int_equal(s.request, before + 1);
        assert_stamp(&h, "p", false);
    }
    /* Logout advances and is stamped (empty body: XXH3 of nothing). */
    h = build(&s, SL_OP_LOGOUT, 39, "");
    assert_int_equal(h.request, 6);
    assert_int_equal(h.code, 0);
    assert_stamp(&h, "", true);
    assert_int_equal(s.request, 7);
    /* Register: request 0 and session 0 whatever the state, stamped. */
    h = build(&s, SL_OP_REGISTER, 40, "login");
    assert_int_equal(h.request, 0);
    assert_int_equal(h.session, 0);
    assert_int_equal(h.code, 0);
    assert_stamp(&h, "login", true);
    assert_int_equal(s.request, 7);
}

static void test_every_metadata_operation_advances_and_stamps(void **state)
{
    (void)state;
    sl_client_session_t s = {.client_id = {9, 0}, .session = 3, .request = 1};
    for (uint8_t op = SL_OP_CREATE_STREAM; op <= SL_OP_LEAVE_CONSUMER_GROUP; op++) {
        uint64_t before = s.request;
        sl_request_header_t h = build(&s, op, 0, "body");
        assert_int_equal(h.request, before);
        assert_int_equal(s.request, before + 1);
        assert_int_equal(h.operation, op);
        assert_stamp(&h, "body", true);
    }
}

static void test_operation_rules_table(void **state)
{
    (void)state;
    for (int op = 0; op < 256; op++) {
        bool stamped = op == 1 || op == 3 || (op >= 64 && op <= 127) || (op >= 128 && op <= 149);
        assert_int_equal(sl_client_op_stamped((uint8_t)op), stamped);
        assert_int_equal(sl_client_op_advances((uint8_t)op), op != 1 && op != 2);
    }
}

static void test_frame_limit_refuses_without_advancing(void **state)
{
    (void)state;
    sl_client_session_t s = {.client_id = {1, 0}, .session = 5, .request = 3};
    uint8_t body[100] = {0};
    sl_buf_t b = frame_with_body(body, sizeof(body));
    assert_int_equal(sl_client_frame_finish(&b, &s, SL_OP_CREATE_STREAM, 0, SL_HEADER_SIZE + 99),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(s.request, 3);
    assert_int_equal(sl_client_frame_finish(&b, &s, SL_OP_CREATE_STREAM, 0, SL_HEADER_SIZE + 100),
                     0);
    assert_int_equal(s.request, 4);
    sl_buf_free(&b);

    /* A buffer that failed while the body was written is refused too. */
    uint8_t mem[SL_HEADER_SIZE + 4];
    sl_buf_t fixed;
    sl_buf_init_fixed(&fixed, mem, sizeof(mem));
    sl_put_zeros(&fixed, SL_HEADER_SIZE);
    sl_put_u64(&fixed, 7);
    assert_int_equal(
        sl_client_frame_finish(&fixed, &s, SL_OP_CREATE_STREAM, 0, SL_FRAME_MAX_DEFAULT),
        -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(s.request, 4);
}

static void test_session_reset(void **state)
{
    (void)state;
    sl_client_session_t s = {.client_id = {5, 6}, .session = 8, .request = 40, .user_id = 3};
    sl_client_session_reset(&s);
    assert_int_equal(s.session, 0);
    assert_int_equal(s.request, 1);
    assert_int_equal(s.user_id, 0);
    assert_true(sl_u128_eq(s.client_id, (sl_u128_t){5, 6}));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_matches_vector),
        cmocka_unit_test(test_login_matches_vector),
        cmocka_unit_test(test_numbering_by_operation_class),
        cmocka_unit_test(test_every_metadata_operation_advances_and_stamps),
        cmocka_unit_test(test_operation_rules_table),
        cmocka_unit_test(test_frame_limit_refuses_without_advancing),
        cmocka_unit_test(test_session_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
