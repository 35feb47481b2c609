/* libsluice reply processing (src/client/frame.c) on crafted frames, no
 * sockets: the decode order of framing.md 7.2, eviction mapping (errors.md
 * 1.4), status, result framing keyed by the reply's own operation byte
 * (including the 64/65/68 rewrites), malformed result sections and size
 * errors. */
#include "test_client_fixtures.h"

static sl_span_t span_of(const sl_buf_t *b)
{
    return sl_buf_span(b);
}

static int process(const sl_buf_t *frame, sl_client_reply_t *r)
{
    return sl_client_reply_process(span_of(frame), SL_FRAME_MAX_DEFAULT, r);
}

/* --- evictions ------------------------------------------------------------------- */

static void test_eviction_reasons_map_like_the_sdks(void **state)
{
    (void)state;
    static const int want[16] = {
        [1] = SL_ERR_UNAUTHENTICATED,     [2] = SL_ERR_INVALID_COMMAND,
        [3] = SL_ERR_INVALID_COMMAND,     [4] = SL_ERR_INVALID_COMMAND,
        [5] = SL_ERR_INVALID_COMMAND,     [6] = SL_ERR_INVALID_COMMAND,
        [7] = SL_ERR_UNAUTHENTICATED,     [8] = SL_ERR_UNAUTHENTICATED,
        [9] = SL_ERR_INVALID_CREDENTIALS, [10] = SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN,
        [11] = SL_ERR_UNAUTHENTICATED,    [12] = SL_ERR_UNAUTHENTICATED,
        [13] = SL_ERR_STALE_CLIENT,       [14] = SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION,
        [15] = SL_ERR_INVALID_FORMAT,
    };
    for (uint8_t reason = 1; reason <= 15; reason++) {
        uint32_t window = reason == 14 ? SL_PROTOCOL_VERSION : 0;
        sl_buf_t f = tf_eviction(reason, window, window);
        sl_client_reply_t r;
        assert_int_equal(process(&f, &r), -want[reason]);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_EVICTED);
        assert_int_equal(r.eviction.reason, reason);
        sl_buf_free(&f);
    }
}

static void test_eviction_vector_and_bad_windows(void **state)
{
    (void)state;
    size_t len;
    uint8_t *bytes = tu_vector("f_eviction_incompatible_protocol.hex", &len);
    sl_client_reply_t r;
    assert_int_equal(sl_client_reply_process(sl_span(bytes, len), SL_FRAME_MAX_DEFAULT, &r),
                     -SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION);
    assert_int_equal(r.outcome, SL_CLIENT_REPLY_EVICTED);
    assert_int_equal(r.eviction.version_max, 0x2C00);
    assert_int_equal(r.eviction.version_min, 0x2C00);
    free(bytes);
    /* A zero or inverted window is reported as Unauthenticated. */
    sl_buf_t f = tf_eviction(14, 0, 0x2C00);
    assert_int_equal(process(&f, &r), -SL_ERR_UNAUTHENTICATED);
    sl_buf_free(&f);
    f = tf_eviction(14, 0x2C01, 0x2C00);
    assert_int_equal(process(&f, &r), -SL_ERR_UNAUTHENTICATED);
    sl_buf_free(&f);
}

static void test_malformed_evictions_break_the_frame(void **state)
{
    (void)state;
    sl_client_reply_t r;
    /* reason 0 and 16: not reasons at all */
    uint8_t reasons[] = {0, 16, 255};
    for (size_t i = 0; i < sizeof(reasons); i++) {
        sl_buf_t f = tf_eviction(9, 0, 0);
        f.data[SL_EVI_OFF_REASON] = reasons[i];
        assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_FRAME);
        sl_buf_free(&f);
    }
    /* a window with a reason other than 14, a zero client, reserved bytes */
    size_t pokes[] = {SL_EVI_OFF_VERSION_MAX, SL_EVI_OFF_CLIENT, 200, 100, SL_HDR_OFF_RELEASE};
    for (size_t i = 0; i < SL_ARRAY_LEN(pokes); i++) {
        sl_buf_t f = tf_eviction(9, 0, 0);
        if (pokes[i] == SL_EVI_OFF_CLIENT)
            memset(f.data + SL_EVI_OFF_CLIENT, 0, 16);
        else
            f.data[pokes[i]] = 1;
        assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_FRAME);
        sl_buf_free(&f);
    }
    /* An eviction never has a body. */
    sl_buf_t f = tf_eviction(1, 0, 0);
    sl_put_u32(&f, 0);
    sl_store_u32(f.data + SL_HDR_OFF_SIZE, SL_HEADER_SIZE + 4);
    assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
    uint32_t size;
    assert_int_equal(sl_client_frame_size(f.data, SL_FRAME_MAX_DEFAULT, &size),
                     -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&f);
}

/* --- status ------------------------------------------------------------------------ */

static void test_status_is_the_error(void **state)
{
    (void)state;
    sl_client_reply_t r;
    sl_buf_t f = tf_reply(SL_OP_NON_REPLICATED, SL_ERR_UNAUTHORIZED, NULL, 0);
    assert_int_equal(process(&f, &r), -SL_ERR_UNAUTHORIZED);
    assert_int_equal(r.outcome, SL_CLIENT_REPLY_STATUS);
    assert_int_equal(r.header.operation, SL_OP_NON_REPLICATED);
    assert_int_equal(r.header.request, 3);
    sl_buf_free(&f);
    /* A denial of a metadata op echoes the request's operation, unframed. */
    f = tf_reply(SL_OP_CREATE_TOPIC, SL_ERR_UNSUPPORTED_OPTION_KEY, NULL, 0);
    assert_int_equal(process(&f, &r), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    sl_buf_free(&f);
    /* Step 4 before step 5: the status wins over an undeclared operation. */
    f = tf_reply(99, SL_ERR_INVALID_COMMAND, NULL, 0);
    assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(r.outcome, SL_CLIENT_REPLY_STATUS);
    assert_int_equal(r.header.operation, 99);
    sl_buf_free(&f);
    /* A status never comes with a body. */
    f = tf_reply(SL_OP_NON_REPLICATED, 41, "x", 1);
    assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_FRAME);
    sl_buf_free(&f);
    /* A u32 beyond int range is no IggyError. */
    f = tf_reply(SL_OP_NON_REPLICATED, 0x80000000u, NULL, 0);
    assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&f);
}

/* --- framing by the reply's operation --------------------------------------------- */

static bool framed_reply_op(uint8_t op)
{
    return op == 1 || (op >= 64 && op <= 68) || (op >= 128 && op <= 149 && op != 138) ||
           op == 161 || op == 162;
}

static void test_reply_operation_decides_framing(void **state)
{
    (void)state;
    const uint8_t body[] = {0, 0, 0, 0, 'a', 'b'};
    int seen = 0;
    for (int op = 1; op < 256; op++) {
        if (!sl_op_declared((uint8_t)op))
            continue;
        seen++;
        sl_buf_t f = tf_reply((uint8_t)op, 0, body, sizeof(body));
        sl_client_reply_t r;
        assert_int_equal(process(&f, &r), 0);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_OK);
        assert_int_equal(r.framed, framed_reply_op((uint8_t)op));
        assert_int_equal(r.payload.len, r.framed ? 2 : sizeof(body));
        assert_int_equal(r.body.len, sizeof(body));
        sl_buf_free(&f);
    }
    assert_int_equal(seen, 3 + 5 + 22 + 3);
}

static void test_result_entries(void **state)
{
    (void)state;
    sl_client_reply_t r;
    uint8_t ops[] = {64, 65, 66, 67, 68, 128, 141, 149, 161, 162, 1};
    for (size_t i = 0; i < sizeof(ops); i++) {
        sl_buf_t f = tf_reply_result(ops[i], SL_ERR_TRANSIENT_NOT_ACCEPTED);
        assert_int_equal(process(&f, &r), -SL_ERR_TRANSIENT_NOT_ACCEPTED);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_RESULT);
        assert_int_equal(r.result, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        sl_buf_free(&f);
    }
    /* The same bytes after a plain operation are payload, not a result. */
    sl_buf_t f = tf_reply_result(SL_OP_DELETE_SEGMENTS, 58);
    assert_int_equal(process(&f, &r), 0);
    assert_int_equal(r.payload.len, 12);
    sl_buf_free(&f);
    /* commands.md 13.5, the complete frame. */
    size_t len;
    uint8_t *frame = tu_hex(HEX_REJECTION_FRAME, &len);
    assert_int_equal(sl_client_reply_process(sl_span(frame, len), SL_FRAME_MAX_DEFAULT, &r),
                     -SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    assert_int_equal(r.header.request, 7);
    assert_int_equal(r.header.op, 42);
    assert_true(
        sl_u128_eq(r.header.client, (sl_u128_t){0xfedcba9876543210ull, 0x0123456789abcdefull}));
    free(frame);
}

static void test_malformed_result_sections(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "",   /* no count at all */
        "00", /* 1..3 bytes */
        "00 00",
        "00 00 00",
        "01 00 00 00",                         /* count 1, no entry */
        "01 00 00 00 00 00 00 00 2a 00 00",    /* entry cut short */
        "02 00 00 00 00 00 00 00 2a 00 00 00", /* count 2, one entry */
        "01 00 00 00 00 00 00 00 00 00 00 00", /* a rejection of code 0 */
        "ff ff ff ff 00 00 00 00 2a 00 00 00", /* a count beyond the body */
    };
    uint8_t ops[] = {SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, SL_OP_TRUNCATE_PARTITION,
                     SL_OP_CREATE_STREAM, SL_OP_STORE_CONSUMER_OFFSET};
    for (size_t o = 0; o < sizeof(ops); o++) {
        for (size_t i = 0; i < SL_ARRAY_LEN(bodies); i++) {
            sl_buf_t f = tf_reply_hex(ops[o], bodies[i]);
            sl_client_reply_t r;
            assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
            assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_RESULT);
            sl_buf_free(&f);
        }
    }
}

static void test_register_replies(void **state)
{
    (void)state;
    sl_client_reply_t r;
    /* An empty login body is a terminal failure, not a success. */
    sl_buf_t f = tf_reply(SL_OP_REGISTER, 0, NULL, 0);
    assert_int_equal(process(&f, &r), -SL_ERR_EMPTY_RESPONSE);
    assert_int_equal(r.outcome, SL_CLIENT_REPLY_EMPTY_REGISTER);
    sl_buf_free(&f);
    f = tf_reply_hex(SL_OP_REGISTER, HEX_LOGIN_BODY);
    assert_int_equal(process(&f, &r), 0);
    assert_true(r.framed);
    sl_login_register_reply_t login;
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 1 << 16);
    assert_int_equal(sl_login_register_reply_decode(r.payload, &arena, &login), 0);
    sl_arena_free(&arena);
    assert_int_equal(login.session, 5);
    assert_span_str(login.server_version, "0.9.0-edge.5");
    sl_buf_free(&f);
    f = tf_reply_result(SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_COMMITTED);
    assert_int_equal(process(&f, &r), -SL_ERR_TRANSIENT_NOT_COMMITTED);
    sl_buf_free(&f);
    /* Logout replies are plain. */
    f = tf_reply(SL_OP_LOGOUT, 0, NULL, 0);
    assert_int_equal(process(&f, &r), 0);
    assert_false(r.framed);
    sl_buf_free(&f);
}

static void test_create_topic_reply_with_operation_64(void **state)
{
    (void)state;
    size_t len;
    uint8_t *details = tu_hex(HEX_GET_TOPIC, &len);
    details[PARTITION_SEGMENTS_OFF(0)] = 0; /* CreateTopic reports 0 segments */
    details[PARTITION_SEGMENTS_OFF(1)] = 0;
    sl_buf_t f = tf_reply_ok(SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, details, len);
    sl_client_reply_t r;
    assert_int_equal(process(&f, &r), 0);
    assert_true(r.framed);
    assert_int_equal(r.payload.len, len);
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    sl_create_topic_reply_t topic;
    assert_int_equal(sl_create_topic_reply_decode(r.payload, &arena, &topic), 0);
    assert_span_str(topic.topic.header.name, "events");
    assert_int_equal(topic.topic.header.partitions_count, 2);
    assert_int_equal(topic.topic.partitions[1].id, 1);
    assert_int_equal(topic.topic.partitions[1].segments_count, 0);
    sl_arena_free(&arena);
    sl_buf_free(&f);
    /* The same payload on a CreatePartitions rewrite (65) is framed too. */
    f = tf_reply_ok(SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, NULL, 0);
    assert_int_equal(process(&f, &r), 0);
    assert_int_equal(r.payload.len, 0);
    sl_buf_free(&f);
    free(details);
}

/* --- sizes and header bytes --------------------------------------------------------- */

static void test_size_and_command_errors(void **state)
{
    (void)state;
    sl_client_reply_t r;
    sl_buf_t f = tf_reply(SL_OP_NON_REPLICATED, 0, "abcd", 4);
    /* fewer than 256 bytes */
    for (size_t n = 0; n < SL_HEADER_SIZE; n += 51)
        assert_int_equal(sl_client_reply_process(sl_span(f.data, n), SL_FRAME_MAX_DEFAULT, &r),
                         -SL_ERR_EMPTY_RESPONSE);
    /* the size field disagrees with the bytes */
    assert_int_equal(sl_client_reply_process(sl_span(f.data, f.len - 1), SL_FRAME_MAX_DEFAULT, &r),
                     -SL_ERR_INVALID_COMMAND);
    /* above the frame limit */
    assert_int_equal(sl_client_reply_process(span_of(&f), f.len - 1, &r), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_FRAME);
    /* size field below a header */
    uint32_t size;
    sl_store_u32(f.data + SL_HDR_OFF_SIZE, 255);
    assert_int_equal(sl_client_frame_size(f.data, SL_FRAME_MAX_DEFAULT, &size),
                     -SL_ERR_INVALID_COMMAND);
    assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
    sl_store_u32(f.data + SL_HDR_OFF_SIZE, (uint32_t)f.len);
    assert_int_equal(sl_client_frame_size(f.data, SL_FRAME_MAX_DEFAULT, &size), 0);
    assert_int_equal(size, f.len);
    /* a command byte other than Reply and Eviction */
    uint8_t commands[] = {0, 5, 7, 12, 14, 29, 30, 255};
    for (size_t i = 0; i < sizeof(commands); i++) {
        f.data[SL_HDR_OFF_COMMAND] = commands[i];
        assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_FRAME);
    }
    sl_buf_free(&f);
}

static void test_undeclared_reply_operations(void **state)
{
    (void)state;
    uint8_t ops[] = {0, 4, 63, 69, 127, 150, 159, 163, 255};
    for (size_t i = 0; i < sizeof(ops); i++) {
        sl_buf_t f = tf_reply(ops[i], 0, NULL, 0);
        sl_client_reply_t r;
        assert_int_equal(process(&f, &r), -SL_ERR_INVALID_COMMAND);
        assert_int_equal(r.outcome, SL_CLIENT_REPLY_BAD_FRAME);
        sl_buf_free(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eviction_reasons_map_like_the_sdks),
        cmocka_unit_test(test_eviction_vector_and_bad_windows),
        cmocka_unit_test(test_malformed_evictions_break_the_frame),
        cmocka_unit_test(test_status_is_the_error),
        cmocka_unit_test(test_reply_operation_decides_framing),
        cmocka_unit_test(test_result_entries),
        cmocka_unit_test(test_malformed_result_sections),
        cmocka_unit_test(test_register_replies),
        cmocka_unit_test(test_create_topic_reply_with_operation_64),
        cmocka_unit_test(test_size_and_command_errors),
        cmocka_unit_test(test_undeclared_reply_operations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
