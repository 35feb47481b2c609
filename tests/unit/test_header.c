/* Frame headers: golden vectors a, b, f and every bad-frame rule of
 * framing.md 3, 7 and 8. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "wire/header.h"

static const sl_u128_t common_client = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

static void test_ping_vector(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_vector("a_ping_request.hex", &n);
    assert_int_equal(n, 256);

    sl_request_header_t h;
    assert_int_equal(sl_request_header_decode(v, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_OK);
    assert_int_equal(h.size, 256);
    assert_true(sl_u128_eq(h.client, common_client));
    assert_int_equal(h.request, 1);
    assert_int_equal(h.operation, SL_OP_NON_REPLICATED);
    assert_int_equal(h.session, 0);
    assert_int_equal(h.code, 1);

    uint8_t out[256];
    sl_request_header_encode(out, &h);
    assert_bytes_equal(out, 256, v, n);
    free(v);
}

static void test_login_vector(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_vector("b_login_register_request.hex", &n);
    assert_int_equal(n, 286);
    sl_request_header_t h;
    assert_int_equal(sl_request_header_decode(v, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_OK);
    assert_int_equal(h.size, 286);
    assert_int_equal(h.operation, SL_OP_REGISTER);
    assert_int_equal(h.code, 0);
    sl_span_t body = sl_span(v + 256, n - 256);
    assert_true(sl_u128_eq(h.request_checksum, (sl_u128_t){0x9bdab50046817879ull, 0}));
    assert_true(sl_u128_eq(sl_request_checksum(body), h.request_checksum));
    assert_true(sl_request_checksum_ok(h.request_checksum, body));
    assert_true(sl_request_checksum_ok((sl_u128_t){0, 0}, body));
    /* A stamp that does not match the body is caught (status 4). */
    assert_false(sl_request_checksum_ok((sl_u128_t){h.request_checksum.lo ^ 1, 0}, body));
    assert_false(sl_request_checksum_ok((sl_u128_t){h.request_checksum.lo, 1}, body));

    h.request_checksum = sl_request_checksum(body);
    uint8_t out[256];
    sl_request_header_encode(out, &h);
    assert_bytes_equal(out, 256, v, 256);
    free(v);
}

static void test_eviction_vector(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_vector("f_eviction_incompatible_protocol.hex", &n);
    assert_int_equal(n, 256);
    sl_eviction_header_t e;
    assert_int_equal(sl_eviction_header_decode(v, &e), 0);
    assert_int_equal(e.reason, SL_EVICT_INCOMPATIBLE_PROTOCOL);
    assert_int_equal(e.version_max, SL_PROTOCOL_VERSION);
    assert_int_equal(e.version_min, SL_PROTOCOL_VERSION_MIN);
    assert_true(sl_u128_eq(e.client, common_client));
    assert_int_equal(sl_eviction_error(&e), SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION);

    uint8_t out[256];
    sl_eviction_header_encode(out, &e);
    assert_bytes_equal(out, 256, v, n);
    free(v);
}

static void make_request(uint8_t hdr[256], uint8_t op, uint64_t session, uint64_t request)
{
    sl_request_header_t h = {.size = 256,
                             .client = common_client,
                             .operation = op,
                             .session = session,
                             .request = request,
                             .code = 1};
    sl_request_header_encode(hdr, &h);
}

static void test_request_rules(void **state)
{
    (void)state;
    uint8_t hdr[256];
    sl_request_header_t h;

    make_request(hdr, SL_OP_NON_REPLICATED, 0, 0);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_OK);

    /* size below 256 and above the limit */
    sl_store_u32(hdr + 48, 255);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_BAD_SIZE);
    sl_store_u32(hdr + 48, 1024 + 1);
    assert_int_equal(sl_request_header_decode(hdr, 1024, &h), SL_HDR_BAD_SIZE);
    sl_store_u32(hdr + 48, 1024);
    assert_int_equal(sl_request_header_decode(hdr, 1024, &h), SL_HDR_OK);
    sl_store_u32(hdr + 48, 256);

    /* command byte: above 29 is no header; 0..29 but not 5 is ignored */
    hdr[60] = 30;
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_BAD_COMMAND);
    hdr[60] = 8;
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_NOT_REQUEST);
    hdr[60] = 5;

    /* every undeclared operation byte is refused, every declared one passes */
    for (int op = 0; op < 256; op++) {
        make_request(hdr, (uint8_t)op, op == 1 ? 0 : 1, op == 1 ? 0 : 1);
        sl_hdr_verdict_t v = sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h);
        bool declared = (op >= 1 && op <= 3) || (op >= 64 && op <= 68) ||
                        (op >= 128 && op <= 149) || (op >= 160 && op <= 162);
        assert_int_equal(v, declared ? SL_HDR_OK : SL_HDR_BAD_OPERATION);
    }

    /* client 0 */
    make_request(hdr, SL_OP_NON_REPLICATED, 0, 0);
    memset(hdr + 128, 0, 16);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_ZERO_CLIENT);

    /* Register needs session 0 and request 0 */
    make_request(hdr, SL_OP_REGISTER, 1, 0);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h),
                     SL_HDR_BAD_NUMBERING);
    make_request(hdr, SL_OP_REGISTER, 0, 1);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h),
                     SL_HDR_BAD_NUMBERING);
    /* other replicated operations need both non-zero */
    make_request(hdr, SL_OP_CREATE_STREAM, 0, 1);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h),
                     SL_HDR_BAD_NUMBERING);
    make_request(hdr, SL_OP_LOGOUT, 1, 0);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h),
                     SL_HDR_BAD_NUMBERING);
    make_request(hdr, SL_OP_SEND_MESSAGES, 3, 9);
    assert_int_equal(sl_request_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_OK);
    assert_int_equal(h.code, 0); /* the code is only carried with operation 2 */
}

static void test_reply_header(void **state)
{
    (void)state;
    /* commands.md 13.5: the result-framed rejection frame, header part. */
    sl_reply_header_t r = {.size = 268,
                           .client = {0xfedcba9876543210ull, 0x0123456789abcdefull},
                           .op = 42,
                           .commit = 42,
                           .request = 7,
                           .operation = SL_OP_CREATE_STREAM};
    uint8_t hdr[256];
    sl_reply_header_encode(hdr, &r);
    size_t n;
    uint8_t *want = tu_hex("0c 01 00 00 00 00 00 00 00 00 00 00 08 00 00 00", &n);
    assert_bytes_equal(hdr + 48, 16, want, n);
    free(want);
    want = tu_hex("10 32 54 76 98 ba dc fe ef cd ab 89 67 45 23 01"
                  "2a 00 00 00 00 00 00 00 2a 00 00 00 00 00 00 00"
                  "00 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00"
                  "80 00 00 00 00 00 00 00 00 00 00 00",
                  &n);
    assert_bytes_equal(hdr + 160, n, want, n);
    free(want);

    sl_reply_header_t d;
    assert_int_equal(sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &d), 0);
    assert_int_equal(d.size, 268);
    assert_int_equal(d.request, 7);
    assert_int_equal(d.operation, 128);
    assert_true(sl_u128_eq(d.client, r.client));

    /* undeclared reply operation, status with a body, wrong command byte */
    hdr[208] = 150;
    assert_int_equal(sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &d), -SL_ERR_INVALID_COMMAND);
    hdr[208] = 128;
    sl_store_u32(hdr + 216, 1012);
    assert_int_equal(sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &d), -SL_ERR_INVALID_COMMAND);
    sl_store_u32(hdr + 48, 256);
    assert_int_equal(sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &d), 0);
    assert_int_equal(d.status, 1012);
    hdr[60] = 13;
    assert_int_equal(sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &d), -SL_ERR_INVALID_COMMAND);
    hdr[60] = 8;
    sl_store_u32(hdr + 48, 100);
    assert_int_equal(sl_reply_header_decode(hdr, SL_FRAME_MAX_DEFAULT, &d), -SL_ERR_INVALID_COMMAND);
}

static void test_eviction_rules(void **state)
{
    (void)state;
    uint8_t hdr[256];
    sl_eviction_header_t e = {.client = common_client, .reason = SL_EVICT_NO_SESSION}, d;
    sl_eviction_header_encode(hdr, &e);
    assert_int_equal(sl_eviction_header_decode(hdr, &d), 0);
    assert_int_equal(sl_eviction_error(&d), SL_ERR_UNAUTHENTICATED);

    uint8_t bad[256];
    /* window bytes only with reason 14 */
    memcpy(bad, hdr, 256);
    sl_store_u32(bad + 144, SL_PROTOCOL_VERSION);
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);
    /* reserved bytes */
    memcpy(bad, hdr, 256);
    bad[200] = 1;
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);
    memcpy(bad, hdr, 256);
    bad[100] = 1;
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);
    /* reason 0 and above 15, client 0, size not 256 */
    memcpy(bad, hdr, 256);
    bad[255] = 0;
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);
    bad[255] = 16;
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);
    memcpy(bad, hdr, 256);
    memset(bad + 128, 0, 16);
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);
    memcpy(bad, hdr, 256);
    sl_store_u32(bad + 48, 257);
    assert_int_equal(sl_eviction_header_decode(bad, &d), -SL_ERR_INVALID_COMMAND);

    /* an inverted or zero window maps to Unauthenticated */
    e = (sl_eviction_header_t){.client = common_client,
                               .reason = SL_EVICT_INCOMPATIBLE_PROTOCOL,
                               .version_max = 0x2C00,
                               .version_min = 0x3000};
    assert_int_equal(sl_eviction_error(&e), SL_ERR_UNAUTHENTICATED);
    e.version_min = 0;
    assert_int_equal(sl_eviction_error(&e), SL_ERR_UNAUTHENTICATED);

    /* every reason maps as errors.md 1.4 says */
    static const int want[16] = {0, 40, 3, 3, 3, 3, 3, 40, 40, 42, 53, 40, 40, 30, 14003, 4};
    for (uint8_t reason = 1; reason <= 15; reason++) {
        e = (sl_eviction_header_t){.client = common_client,
                                   .reason = reason,
                                   .version_max = reason == 14 ? 0x2C00 : 0,
                                   .version_min = reason == 14 ? 0x2C00 : 0};
        assert_int_equal(sl_eviction_error(&e), want[reason]);
        assert_non_null(sl_evict_reason_name(reason));
    }
}

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(sl_version_pack(0, 11, 0), 0x2C00);
    assert_int_equal(sl_version_parse("0.11.0"), 0x2C00);
    assert_int_equal(sl_version_parse("0.11.0-edge.4"), 0x2C00);
    assert_int_equal(sl_version_parse("0.9.0+build"), sl_version_pack(0, 9, 0));
    assert_int_equal(sl_version_parse("1.2"), 0);
    assert_int_equal(sl_version_parse("1.2.3x"), 0);
    assert_int_equal(sl_version_parse("1024.0.0"), 0);
    uint32_t s = SL_PROTOCOL_VERSION, m = SL_PROTOCOL_VERSION_MIN;
    assert_true(sl_version_compatible(0x2C00, s, m));
    assert_true(sl_version_compatible(0x2FFF, s, m)); /* 0.11.1023 */
    assert_false(sl_version_compatible(0x3000, s, m)); /* 0.12.0 */
    assert_false(sl_version_compatible(0x2BFF, s, m)); /* 0.10.1023 */
    assert_false(sl_version_compatible(sl_version_pack(1, 0, 0), s, m));
}

static void test_operations(void **state)
{
    (void)state;
    assert_true(sl_op_result_framed(64));
    assert_true(sl_op_result_framed(68));
    assert_true(sl_op_result_framed(128));
    assert_false(sl_op_result_framed(138));
    assert_true(sl_op_result_framed(149));
    assert_false(sl_op_result_framed(160));
    assert_true(sl_op_result_framed(161));
    assert_true(sl_op_result_framed(162));
    assert_false(sl_op_result_framed(1));
    assert_false(sl_op_result_framed(2));
    assert_false(sl_op_result_framed(3));
    assert_false(sl_op_metadata(138));
    assert_false(sl_op_partition(138));
    assert_string_equal(sl_op_name(68), "TruncatePartition");
    assert_null(sl_op_name(4));
}

static void test_xxh3_dispatch(void **state)
{
    (void)state;
    /* The dispatched build and the streaming form agree with each other
     * over lengths that cross every internal block boundary. */
    uint8_t data[4096];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 131 + 7);
    for (size_t n = 0; n <= sizeof(data); n += (n < 300 ? 1 : 97)) {
        sl_xxh3_state_t st;
        sl_xxh3_reset(&st);
        size_t half = n / 3;
        sl_xxh3_update(&st, data, half);
        sl_xxh3_update(&st, data + half, n - half);
        assert_int_equal(sl_xxh3_digest(&st), sl_xxh3_64(data, n));
    }
    /* Known answer: XXH3-64 of the empty input with seed 0. */
    assert_int_equal(sl_xxh3_64("", 0), 0x2D06800538D394C2ull);
    assert_true(strcmp(sl_xxh3_impl(), "avx2") == 0 || strcmp(sl_xxh3_impl(), "sse2") == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_vector),     cmocka_unit_test(test_login_vector),
        cmocka_unit_test(test_eviction_vector), cmocka_unit_test(test_request_rules),
        cmocka_unit_test(test_reply_header),    cmocka_unit_test(test_eviction_rules),
        cmocka_unit_test(test_version),         cmocka_unit_test(test_operations),
        cmocka_unit_test(test_xxh3_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
