/* wire/codec: the result section of framed replies (framing.md 7.1), the
 * encode/decode end helpers and the SL_EMPTY_* macros. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "wire/codec.h"

/* A command with no body either way, built by the macros under test. */
SL_EMPTY_REQUEST(nothing)
SL_EMPTY_REPLY(nothing)

/* Splits hex; the body sits in its own allocation so ASan sees overreads. */
static int split_hex(const char *hex, uint32_t *result, sl_span_t *payload, uint8_t **body)
{
    size_t n;
    uint8_t *p = tu_hex(hex, &n);
    *body = p;
    return sl_result_split(sl_span(p, n), result, payload);
}

static void test_result_success(void **state)
{
    (void)state;
    uint32_t result = 99;
    sl_span_t payload;
    uint8_t *body;
    assert_int_equal(split_hex("00 00 00 00 aa bb cc", &result, &payload, &body), 0);
    assert_int_equal(result, 0);
    assert_int_equal(payload.len, 3);
    assert_ptr_equal(payload.ptr, body + 4);
    free(body);

    /* Success with an empty payload (DeleteStream, 13.4). */
    assert_int_equal(split_hex("00 00 00 00", &result, &payload, &body), 0);
    assert_int_equal(result, 0);
    assert_int_equal(payload.len, 0);
    free(body);

    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_result_put_ok(&b);
    assert_bytes_equal(b.data, b.len, "\0\0\0\0", 4);
    sl_buf_free(&b);
}

static void test_result_rejection(void **state)
{
    (void)state;
    /* commands.md 13.5: count 1, index 0, result 1012. */
    const char *rejection = "01 00 00 00 00 00 00 00 f4 03 00 00";
    uint32_t result = 0;
    sl_span_t payload = sl_span("x", 1);
    uint8_t *body;
    assert_int_equal(split_hex(rejection, &result, &payload, &body), 0);
    assert_int_equal(result, 1012);
    assert_int_equal(payload.len, 0);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_result_put_error(&b, 1012);
    assert_bytes_equal(b.data, b.len, body, 12);
    sl_buf_free(&b);

    /* Every truncation of the rejection is malformed, never a success. */
    for (size_t len = 0; len < 12; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        assert_non_null(cut);
        memcpy(cut, body, len);
        result = 77;
        assert_int_equal(sl_result_split(sl_span(cut, len), &result, &payload),
                         -SL_ERR_INVALID_COMMAND);
        assert_int_equal(result, 0);
        assert_int_equal(payload.len, 0);
        free(cut);
    }
    free(body);

    /* A transient refusal reads the same way. */
    assert_int_equal(split_hex("01 00 00 00 00 00 00 00 3a 00 00 00", &result, &payload, &body), 0);
    assert_int_equal(result, SL_ERR_TRANSIENT_NOT_ACCEPTED);
    free(body);
}

static void test_result_malformed(void **state)
{
    (void)state;
    uint32_t result;
    sl_span_t payload;
    uint8_t *body;
    static const char *const bad[] = {
        "",
        "00",
        "00 00",
        "00 00 00",                            /* body < 4 bytes */
        "02 00 00 00 00 00 00 00 f4 03 00 00", /* count 2, one entry */
        "03 00 00 00 00 00 00 00 f4 03 00 00 00 00 00 00 01 00 00 00",
        "ff ff ff ff 00 00 00 00 f4 03 00 00", /* huge count */
        "00 00 00 20",                         /* count 2^29: 8 x count wraps a u32 */
        "01 00 00 00 00 00 00 00 00 00 00 00", /* count 1 with a zero result */
        "01 00 00 00 00 00 00 00 00 00 00 00 aa",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        if (split_hex(bad[i], &result, &payload, &body) != -SL_ERR_INVALID_COMMAND)
            fail_msg("result section '%s' accepted", bad[i]);
        assert_int_equal(result, 0);
        free(body);
    }
}

static void test_result_several_entries(void **state)
{
    (void)state;
    uint32_t result;
    sl_span_t payload;
    uint8_t *body;
    /* count 2: both entries present; the first one decides. */
    assert_int_equal(split_hex("02 00 00 00 00 00 00 00 e8 03 00 00 01 00 00 00 09 00 00 00",
                               &result, &payload, &body),
                     0);
    assert_int_equal(result, 1000);
    assert_int_equal(payload.len, 0);
    free(body);
    /* Bytes after the entries of a rejection are not a payload. */
    assert_int_equal(
        split_hex("01 00 00 00 00 00 00 00 f4 03 00 00 ee ee", &result, &payload, &body), 0);
    assert_int_equal(result, 1012);
    assert_int_equal(payload.len, 0);
    free(body);
}

static void test_end_helpers(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_encode_end(&b, true), 0);
    assert_int_equal(sl_encode_end(&b, false), -SL_ERR_INVALID_COMMAND);
    uint8_t mem[2];
    sl_buf_t fixed;
    sl_buf_init_fixed(&fixed, mem, sizeof(mem));
    sl_put_u32(&fixed, 1);
    /* A failed buffer is a length error, whatever the value. */
    assert_int_equal(sl_encode_end(&fixed, true), -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(sl_encode_end(&fixed, false), -SL_ERR_COMMAND_LENGTH_ERROR);

    const uint8_t bytes[6] = {1, 2, 3, 4, 5, 6};
    uint32_t v;
    sl_reader_t r = sl_reader(sl_span(bytes, 6));
    assert_true(sl_read_u32(&r, &v));
    /* Requests accept a prefix; replies must be consumed exactly. */
    assert_int_equal(sl_request_decode_end(&r), 0);
    assert_int_equal(sl_reply_decode_end(&r), -SL_ERR_INVALID_FORMAT);
    assert_true(sl_read_u16(&r, &(uint16_t){0}));
    assert_int_equal(sl_reply_decode_end(&r), 0);
    assert_false(sl_read_u8(&r, &(uint8_t){0}));
    assert_int_equal(sl_request_decode_end(&r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_reply_decode_end(&r), -SL_ERR_INVALID_FORMAT);
    sl_buf_free(&b);
}

static void test_empty_macros(void **state)
{
    (void)state;
    /* Empty requests ignore any bytes. */
    const uint8_t junk[5] = {9, 9, 9, 9, 9};
    sl_nothing_request_t req = {.unused = 42};
    assert_int_equal(sl_nothing_request_decode(sl_span(junk, 5), &req), 0);
    assert_int_equal(req.unused, 0);
    assert_int_equal(sl_nothing_request_decode(sl_span(NULL, 0), &req), 0);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_nothing_request_encode(&b, &req), 0);
    assert_int_equal(b.len, 0);

    /* Empty replies must be empty. */
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_nothing_reply_t rep = {.unused = 42};
    assert_int_equal(sl_nothing_reply_decode(sl_span(NULL, 0), &arena, &rep), 0);
    assert_int_equal(rep.unused, 0);
    assert_int_equal(sl_nothing_reply_decode(sl_span(junk, 1), &arena, &rep),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_nothing_reply_decode(sl_span(junk, 5), &arena, &rep),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_nothing_reply_encode(&b, &rep), 0);
    assert_int_equal(b.len, 0);
    assert_null(arena.head); /* nothing allocated */

    /* The encoders still report a buffer that failed earlier. */
    uint8_t mem[1];
    sl_buf_t fixed;
    sl_buf_init_fixed(&fixed, mem, sizeof(mem));
    sl_put_u16(&fixed, 1);
    assert_int_equal(sl_nothing_request_encode(&fixed, &req), -SL_ERR_COMMAND_LENGTH_ERROR);
    assert_int_equal(sl_nothing_reply_encode(&fixed, &rep), -SL_ERR_COMMAND_LENGTH_ERROR);
    sl_arena_free(&arena);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_success),   cmocka_unit_test(test_result_rejection),
        cmocka_unit_test(test_result_malformed), cmocka_unit_test(test_result_several_entries),
        cmocka_unit_test(test_end_helpers),      cmocka_unit_test(test_empty_macros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
