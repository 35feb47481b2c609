/* Module test of libsluice's message calls over a socketpair (the test
 * writes the server's frames; no sluiced is involved): the batch builder's
 * request bytes against vector c, polls decoded from vector e, checksum
 * verification, the re-sync sentinel, consumer offsets, hostile replies,
 * request numbering of partition operations and large batches. */
#include "test_client_fixtures.h"

#include <pthread.h>

#include "base/clock.h"
#include "wire/command.h"

static const uint64_t ts0 = 1700000000000000ull;

static int setup(void **state)
{
    tf_conn_t *t = malloc(sizeof(*t));
    *t = tf_open(NULL);
    tf_login(t);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tf_conn_t *t = *state;
    tf_close(t);
    free(t);
    return 0;
}

/* --- helpers ----------------------------------------------------------------------- */

static sl_buf_t confirmation_reply(uint32_t partition_id, uint64_t base_offset)
{
    sl_send_confirmation_t item = {
        .stream_id = 3, .topic_id = 4, .partition_id = partition_id, .base_offset = base_offset};
    sl_send_messages_reply_t r = {.count = 1, .items = &item};
    sl_buf_t p;
    sl_buf_init(&p, 0);
    assert_int_equal(sl_send_messages_reply_encode(&p, &r), 0);
    sl_buf_t frame = tf_reply(SL_OP_SEND_MESSAGES, 0, p.data, p.len);
    sl_buf_free(&p);
    return frame;
}

/* Takes the next request and checks the numbering of its operation class. */
static tf_request_t expect(tf_conn_t *t, uint8_t operation, uint32_t code, uint64_t request)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, operation);
    assert_int_equal(q.header.code, operation == SL_OP_NON_REPLICATED ? code : 0);
    assert_int_equal(q.header.request, request);
    assert_int_equal(q.header.session, 5);
    /* Neither reads nor partition operations are stamped (commands.md 1.5). */
    assert_true(sl_u128_is_zero(q.header.request_checksum));
    return q;
}

static uint64_t counter(tf_conn_t *t)
{
    sl_session_info_t info;
    sl_client_session_info(t->client, &info);
    return info.request;
}

/* The two messages of vector c through the public API. */
static void add_vector_c_messages(sl_client_t *c)
{
    sl_header_t kv = {sl_hv_str("k"), sl_hv_str("v")};
    sl_send_message_t m1 = {.id = {1, 0},
                            .origin_timestamp_us = ts0,
                            .payload = "hello",
                            .payload_len = 5,
                            .headers = &kv,
                            .headers_count = 1};
    sl_send_message_t m2 = {
        .id = {2, 0}, .origin_timestamp_us = ts0, .payload = "world", .payload_len = 5};
    assert_int_equal(sl_client_send_add(c, &m1), 0);
    assert_int_equal(sl_client_send_add(c, &m2), 0);
}

static void assert_vector_c_body(const tf_request_t *q)
{
    size_t len;
    uint8_t *want = tu_vector("c_send_messages_body.hex", &len);
    assert_bytes_equal(q->body, q->body_len, want, len);
    free(want);
}

/* A poll reply payload: the 16-byte prefix and the records. */
static sl_buf_t poll_payload(uint32_t partition, uint64_t current, uint32_t count, const void *rec,
                             size_t rec_len)
{
    sl_buf_t p;
    sl_buf_init(&p, 0);
    sl_put_u32(&p, partition);
    sl_put_u64(&p, current);
    sl_put_u32(&p, count);
    sl_put_bytes(&p, rec, rec_len);
    return p;
}

static void queue_poll_body(tf_conn_t *t, const void *body, size_t len)
{
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, 0, body, len));
}

static int poll_once(tf_conn_t *t, sl_polled_messages_t *out)
{
    int rc = sl_client_poll_messages(t->client, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                     sl_id_name("t"), 1, sl_poll_offset(11), 1, false, out);
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.code, SL_CMD_POLL_MESSAGES);
    tf_request_free(&q);
    return rc;
}

/* The body of SendMessages request q, decoded with every admission check
 * of messages.md 3.2 (so the checksums the builder wrote are right). */
static sl_send_messages_request_t decode_send(const tf_request_t *q)
{
    sl_send_messages_request_t req;
    assert_int_equal(sl_send_messages_request_decode(tf_body(q), &req), 0);
    return req;
}

/* --- sending: request bytes -------------------------------------------------------- */

static void test_send_vector_c(void **state)
{
    tf_conn_t *t = *state;
    uint64_t before = counter(t);
    tf_queue(t, confirmation_reply(1, 10));
    assert_int_equal(sl_client_send_begin(t->client, sl_id_name("s"), sl_id_name("t"),
                                          sl_partitioning_partition(1)),
                     0);
    add_vector_c_messages(t->client);
    uint32_t pending;
    size_t bytes;
    sl_client_send_pending(t->client, &pending, &bytes);
    assert_int_equal(pending, 2);
    assert_int_equal(bytes, SL_HEADER_SIZE + 394);
    sl_send_result_t res;
    assert_int_equal(sl_client_send_commit(t->client, &res), 0);
    assert_true(res.confirmed);
    assert_int_equal(res.stream_id, 3);
    assert_int_equal(res.topic_id, 4);
    assert_int_equal(res.partition_id, 1);
    assert_int_equal(res.base_offset, 10);
    assert_int_equal(res.messages_count, 2);
    /* Operation 160 takes the current number and advances the counter. */
    tf_request_t q = expect(t, SL_OP_SEND_MESSAGES, 0, before);
    assert_int_equal(counter(t), before + 1);
    assert_vector_c_body(&q);
    tf_request_free(&q);
    sl_client_send_pending(t->client, &pending, &bytes);
    assert_int_equal(pending, 0);
    assert_int_equal(bytes, 0);
}

static void test_send_one_shot_and_raw_headers(void **state)
{
    tf_conn_t *t = *state;
    /* The same messages, the headers given as an encoded block. */
    static const uint8_t block[] = {2, 1, 0, 0, 0, 'k', 2, 1, 0, 0, 0, 'v'};
    sl_send_message_t msgs[2] = {
        {.id = {1, 0},
         .origin_timestamp_us = ts0,
         .payload = "hello",
         .payload_len = 5,
         .headers_raw = block,
         .headers_raw_len = sizeof(block)},
        {.id = {2, 0}, .origin_timestamp_us = ts0, .payload = "world", .payload_len = 5},
    };
    tf_queue(t, confirmation_reply(1, 12));
    sl_send_result_t res;
    assert_int_equal(sl_client_send_messages(t->client, sl_id_name("s"), sl_id_name("t"),
                                             sl_partitioning_partition(1), msgs, 2, &res),
                     0);
    assert_int_equal(res.base_offset, 12);
    tf_request_t q = tf_take(t);
    assert_vector_c_body(&q);
    tf_request_free(&q);
    /* out may be NULL. */
    tf_queue(t, confirmation_reply(1, 14));
    assert_int_equal(sl_client_send_messages(t->client, sl_id_name("s"), sl_id_name("t"),
                                             sl_partitioning_partition(1), msgs, 2, NULL),
                     0);
    q = tf_take(t);
    assert_vector_c_body(&q);
    tf_request_free(&q);
}

static void test_send_partitionings(void **state)
{
    tf_conn_t *t = *state;
    sl_send_message_t m = {
        .id = {9, 0}, .origin_timestamp_us = ts0, .payload = "x", .payload_len = 1};
    static const uint8_t key[] = {0xff, 0x00, 0x7f};
    sl_send_partitioning_t kinds[] = {sl_partitioning_balanced(),
                                      sl_partitioning_messages_key(key, sizeof(key))};
    for (size_t i = 0; i < SL_ARRAY_LEN(kinds); i++) {
        tf_queue(t, confirmation_reply(0, 0));
        assert_int_equal(
            sl_client_send_messages(t->client, sl_id_num(7), sl_id_num(8), kinds[i], &m, 1, NULL),
            0);
        tf_request_t q = tf_take(t);
        sl_send_messages_request_t req = decode_send(&q);
        assert_int_equal(req.stream_id.number, 7);
        assert_int_equal(req.topic_id.number, 8);
        assert_int_equal(req.partitioning.kind, kinds[i].kind);
        if (kinds[i].kind == SL_SEND_MESSAGES_KEY)
            assert_bytes_equal(req.partitioning.key.ptr, req.partitioning.key.len, key, 3);
        assert_int_equal(req.messages_count, 1);
        tf_request_free(&q);
    }
    /* Partitionings that cannot be encoded: nothing is sent. */
    uint8_t long_key[256] = {0};
    sl_send_partitioning_t bad[] = {
        sl_partitioning_messages_key(long_key, 256),
        sl_partitioning_messages_key(long_key, 0),
        sl_partitioning_messages_key(NULL, 4),
        {.kind = 9},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        assert_int_equal(sl_client_send_begin(t->client, sl_id_num(1), sl_id_num(1), bad[i]),
                         -SL_ERR_INVALID_COMMAND);
    assert_int_equal(
        sl_client_send_begin(t->client, sl_id_name(""), sl_id_num(1), sl_partitioning_balanced()),
        -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(t));
}

static void test_send_defaults_id_and_timestamp(void **state)
{
    tf_conn_t *t = *state;
    sl_send_message_t m = {.payload = "p", .payload_len = 1};
    tf_queue(t, confirmation_reply(0, 0));
    assert_int_equal(
        sl_client_send_begin(t->client, sl_id_num(1), sl_id_num(1), sl_partitioning_balanced()), 0);
    uint64_t before = sl_clock_realtime_us();
    assert_int_equal(sl_client_send_add(t->client, &m), 0);
    assert_int_equal(sl_client_send_add(t->client, &m), 0);
    uint64_t after = sl_clock_realtime_us();
    assert_int_equal(sl_client_send_commit(t->client, NULL), 0);
    tf_request_t q = tf_take(t);
    sl_send_messages_request_t req = decode_send(&q);
    sl_frame_iter_t it = sl_frame_iter(req.batch);
    sl_message_t msg[2];
    assert_true(sl_frame_next(&it, &msg[0]));
    assert_true(sl_frame_next(&it, &msg[1]));
    assert_false(sl_frame_next(&it, &msg[1]));
    for (int i = 0; i < 2; i++) {
        /* A UUIDv4 read as a 128-bit number: version 4, variant 0b10. */
        assert_int_equal((msg[i].id.hi >> 12) & 0xF, 4);
        assert_int_equal(msg[i].id.lo >> 62, 2);
        assert_in_range(msg[i].origin_timestamp, before, after);
        assert_int_equal(msg[i].offset, (uint64_t)i); /* offset_delta = index */
    }
    assert_false(sl_u128_eq(msg[0].id, msg[1].id));
    tf_request_free(&q);
}

/* --- sending: refusals ------------------------------------------------------------- */

static void begin_numeric(tf_conn_t *t)
{
    assert_int_equal(
        sl_client_send_begin(t->client, sl_id_num(1), sl_id_num(1), sl_partitioning_balanced()), 0);
}

static int add_with_header(tf_conn_t *t, sl_header_value_t key, sl_header_value_t value)
{
    sl_header_t h = {key, value};
    sl_send_message_t m = {.origin_timestamp_us = ts0, .headers = &h, .headers_count = 1};
    return sl_client_send_add(t->client, &m);
}

static void test_send_header_refusals(void **state)
{
    tf_conn_t *t = *state;
    begin_numeric(t);
    sl_header_value_t k = sl_hv_str("k");
    char long_text[300];
    memset(long_text, 'a', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    static const char bad_utf8[] = "\xc3\x28";
    assert_int_equal(add_with_header(t, (sl_header_value_t){.kind = 0}, k),
                     -SL_ERR_INVALID_HEADER_KIND);
    assert_int_equal(add_with_header(t, k, sl_hv_raw("x", 1)), 0);
    assert_int_equal(add_with_header(t, k, (sl_header_value_t){.kind = 16, .bytes = "x", .len = 1}),
                     -SL_ERR_INVALID_HEADER_KIND);
    assert_int_equal(add_with_header(t, sl_hv_str(""), k), -SL_ERR_INVALID_KEY_VALUE_LENGTH);
    assert_int_equal(add_with_header(t, k, sl_hv_str(long_text)), -SL_ERR_INVALID_KEY_VALUE_LENGTH);
    assert_int_equal(add_with_header(t, k, sl_hv_raw(NULL, 3)), -SL_ERR_INVALID_KEY_VALUE_LENGTH);
    assert_int_equal(add_with_header(t, sl_hv_str(bad_utf8), k), -SL_ERR_INVALID_HEADER_KEY);
    assert_int_equal(add_with_header(t, k, sl_hv_str(bad_utf8)), -SL_ERR_INVALID_HEADER_VALUE);
    assert_int_equal(add_with_header(t, k, sl_hv_raw(bad_utf8, 2)), 0); /* Raw: any bytes */
    sl_header_value_t u8 = {.kind = SL_HEADER_KIND_UINT8, .u = 256};
    assert_int_equal(add_with_header(t, k, u8), -SL_ERR_INVALID_HEADER_VALUE);
    u8.u = 255;
    assert_int_equal(add_with_header(t, k, u8), 0);
    sl_header_value_t i8 = {.kind = SL_HEADER_KIND_INT8, .i = -129};
    assert_int_equal(add_with_header(t, k, i8), -SL_ERR_INVALID_HEADER_VALUE);
    i8.i = -128;
    assert_int_equal(add_with_header(t, k, i8), 0);
    sl_header_value_t i32 = {.kind = SL_HEADER_KIND_INT32, .i = INT64_C(2147483648)};
    assert_int_equal(add_with_header(t, i32, k), -SL_ERR_INVALID_HEADER_KEY);

    /* Too many headers: 100 000 bytes at most. */
    enum { MANY = 400 };
    sl_header_t *many = calloc(MANY, sizeof(*many));
    assert_non_null(many);
    for (int i = 0; i < MANY; i++)
        many[i] = (sl_header_t){sl_hv_str("key"), sl_hv_raw(long_text, 255)};
    sl_send_message_t m = {.origin_timestamp_us = ts0, .headers = many, .headers_count = MANY};
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_TOO_BIG_USER_HEADERS);
    free(many);

    /* Typed and raw at once, malformed raw blocks. */
    static const uint8_t block[] = {2, 1, 0, 0, 0, 'k', 2, 1, 0, 0, 0, 'v'};
    sl_header_t h = {k, k};
    m = (sl_send_message_t){.origin_timestamp_us = ts0,
                            .headers = &h,
                            .headers_count = 1,
                            .headers_raw = block,
                            .headers_raw_len = sizeof(block)};
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_INVALID_COMMAND);
    m = (sl_send_message_t){
        .origin_timestamp_us = ts0, .headers_raw = block, .headers_raw_len = sizeof(block) - 6};
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_INVALID_COMMAND);
    m.headers_raw = NULL;
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_INVALID_COMMAND);

    /* The refusals left the batch intact: the four accepted messages go. */
    tf_queue(t, confirmation_reply(0, 0));
    assert_int_equal(sl_client_send_commit(t->client, NULL), 0);
    tf_request_t q = tf_take(t);
    sl_send_messages_request_t req = decode_send(&q);
    assert_int_equal(req.messages_count, 4);
    tf_request_free(&q);
}

static void test_send_message_refusals(void **state)
{
    tf_conn_t *t = *state;
    sl_send_message_t m = {.origin_timestamp_us = ts0, .payload = "abc", .payload_len = 3};
    /* No batch open. */
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_send_commit(t->client, NULL), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_send_reserve(t->client, 10), -SL_ERR_INVALID_COMMAND);
    /* An empty batch is not sent. */
    begin_numeric(t);
    assert_int_equal(sl_client_send_commit(t->client, NULL), -SL_ERR_INVALID_MESSAGES_COUNT);
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), &m, 0, NULL),
                     -SL_ERR_INVALID_MESSAGES_COUNT);
    assert_true(tf_nothing_sent(t));

    begin_numeric(t);
    assert_int_equal(sl_client_send_add(t->client, NULL), -SL_ERR_INVALID_COMMAND);
    sl_send_message_t bad = {.payload = NULL, .payload_len = 3};
    assert_int_equal(sl_client_send_add(t->client, &bad), -SL_ERR_INVALID_COMMAND);
    /* The length is refused before the (absent) bytes would be read. */
    bad = (sl_send_message_t){.payload = "x", .payload_len = SL_PAYLOAD_MAX + 1};
    assert_int_equal(sl_client_send_add(t->client, &bad), -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD);
    assert_int_equal(sl_client_send_add(t->client, &m), 0);
    /* Origin timestamps of one batch span at most 2^32-1 us. */
    m.origin_timestamp_us = ts0 + UINT32_MAX + 1ull;
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA);
    m.origin_timestamp_us = ts0 + UINT32_MAX;
    assert_int_equal(sl_client_send_add(t->client, &m), 0);
    m.origin_timestamp_us = ts0 - 1;
    assert_int_equal(sl_client_send_add(t->client, &m), -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA);

    /* Any other call abandons the open batch. */
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(sl_client_ping(t->client), 0);
    tf_request_t q = tf_take(t);
    tf_request_free(&q);
    assert_int_equal(sl_client_send_commit(t->client, NULL), -SL_ERR_INVALID_COMMAND);
    begin_numeric(t);
    assert_int_equal(sl_client_send_add(t->client, &m), 0);
    sl_client_send_abandon(t->client);
    assert_int_equal(sl_client_send_commit(t->client, NULL), -SL_ERR_INVALID_COMMAND);
    /* An error in the middle of a one-shot send sends nothing. */
    sl_send_message_t two[2] = {m, bad};
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), two, 2, NULL),
                     -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD);
    assert_true(tf_nothing_sent(t));
}

static void test_send_frame_limit(void **state)
{
    (void)state;
    sl_client_options_t o = {.frame_max = 4096};
    tf_conn_t t = tf_open(&o);
    tf_login(&t);
    static uint8_t payload[3000];
    begin_numeric(&t);
    assert_int_equal(sl_client_send_reserve(t.client, 4096), -SL_ERR_COMMAND_LENGTH_ERROR);
    sl_send_message_t m = {.origin_timestamp_us = ts0, .payload = payload, .payload_len = 3000};
    assert_int_equal(sl_client_send_add(t.client, &m), 0);
    m.payload_len = 1000; /* 256 + 20 + 256 + 3048 + 1048 > 4096 */
    assert_int_equal(sl_client_send_add(t.client, &m), -SL_ERR_COMMAND_LENGTH_ERROR);
    m.payload_len = 100;
    assert_int_equal(sl_client_send_add(t.client, &m), 0);
    tf_queue(&t, confirmation_reply(0, 0));
    assert_int_equal(sl_client_send_commit(t.client, NULL), 0);
    tf_request_t q = tf_take(&t);
    sl_send_messages_request_t req = decode_send(&q);
    assert_int_equal(req.messages_count, 2);
    tf_request_free(&q);
    tf_close(&t);
}

static void test_send_needs_session(void **state)
{
    (void)state;
    tf_conn_t t = tf_open(NULL);
    sl_send_message_t m = {.origin_timestamp_us = ts0, .payload = "a", .payload_len = 1};
    assert_int_equal(sl_client_send_messages(t.client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     -SL_ERR_UNAUTHENTICATED);
    assert_true(tf_nothing_sent(&t));
    tf_close(&t);
}

static void test_send_replies(void **state)
{
    tf_conn_t *t = *state;
    sl_send_message_t m = {
        .id = {1, 0}, .origin_timestamp_us = ts0, .payload = "a", .payload_len = 1};
    /* Empty body (legacy servers) and count 0: no confirmation. */
    uint8_t zero[8] = {0};
    struct {
        const void *body;
        size_t len;
        int rc;
        bool confirmed;
    } cases[] = {
        {NULL, 0, 0, false},
        {zero, 4, 0, false},
        {zero, 3, -SL_ERR_INVALID_FORMAT, false},
        {zero, 5, -SL_ERR_INVALID_FORMAT, false}, /* trailing byte */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        tf_queue(t, tf_reply(SL_OP_SEND_MESSAGES, 0, cases[i].body, cases[i].len));
        sl_send_result_t res = {.confirmed = true};
        assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                                 sl_partitioning_balanced(), &m, 1, &res),
                         cases[i].rc);
        if (cases[i].rc == 0) {
            assert_false(res.confirmed);
            assert_int_equal(res.messages_count, 1);
        }
        tf_request_t q = tf_take(t);
        tf_request_free(&q);
    }
    /* A confirmation followed by a stray byte. */
    sl_buf_t r = confirmation_reply(1, 1);
    sl_put_u8(&r, 0);
    sl_store_u32(r.data + SL_HDR_OFF_SIZE, (uint32_t)r.len);
    tf_queue(t, r);
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     -SL_ERR_INVALID_FORMAT);
    tf_request_t q = tf_take(t);
    tf_request_free(&q);
    /* Server verdicts as statuses. */
    uint32_t statuses[] = {SL_ERR_RESOURCE_NOT_FOUND, SL_ERR_UNAUTHORIZED,
                           SL_ERR_INVALID_BATCH_CHECKSUM, SL_ERR_TRANSIENT_NOT_ACCEPTED};
    for (size_t i = 0; i < SL_ARRAY_LEN(statuses); i++) {
        tf_queue(t, tf_reply(SL_OP_SEND_MESSAGES, statuses[i], NULL, 0));
        assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                                 sl_partitioning_balanced(), &m, 1, NULL),
                         -(int)statuses[i]);
        q = tf_take(t);
        tf_request_free(&q);
    }
}

/* --- polling --------------------------------------------------------------------- */

static void test_poll_vector_e(void **state)
{
    tf_conn_t *t = *state;
    uint64_t before = counter(t);
    size_t len;
    uint8_t *body = tu_vector("e_poll_reply_body_sliced.hex", &len);
    queue_poll_body(t, body, len);
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(t->client, sl_consumer_single(sl_id_num(1)),
                                             sl_id_name("s"), sl_id_name("t"), 1,
                                             sl_poll_offset(11), 1, true, &out),
                     0);
    assert_int_equal(out.partition_id, 1);
    assert_int_equal(out.current_offset, 11);
    assert_false(out.resync_required);
    assert_int_equal(out.count, 1);
    const sl_polled_message_t *m = &out.messages[0];
    assert_int_equal(m->offset, 11);
    assert_int_equal(m->timestamp_us, 1700000000000123ull);
    assert_int_equal(m->origin_timestamp_us, ts0);
    assert_int_equal(m->id.lo, 2);
    assert_int_equal(m->id.hi, 0);
    assert_int_equal(m->checksum, 0x1494866d7573b3beull);
    assert_bytes_equal(m->payload, m->payload_len, "world", 5);
    assert_int_equal(m->headers_len, 0);
    /* The payload is not copied: it points into the received frame. */
    const sl_client_t *c = t->client;
    assert_true(m->payload > c->rx.data && m->payload + m->payload_len <= c->rx.data + c->rx.len);
    sl_header_iter_t it;
    assert_int_equal(sl_polled_message_headers(m, &it), 0);
    sl_header_t h;
    assert_false(sl_header_next(&it, &h));

    /* The request: a read, numbered with the current counter, not advanced. */
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, SL_CMD_POLL_MESSAGES, before);
    assert_int_equal(counter(t), before);
    sl_poll_messages_request_t req;
    assert_int_equal(sl_poll_messages_request_decode(tf_body(&q), &req), 0);
    assert_int_equal(req.consumer.kind, SL_CONSUMER_SINGLE);
    assert_int_equal(req.consumer.id.number, 1);
    assert_span_str(req.stream_id.name, "s");
    assert_span_str(req.topic_id.name, "t");
    assert_true(req.partition.present);
    assert_int_equal(req.partition.id, 1);
    assert_int_equal(req.strategy.kind, SL_STRATEGY_OFFSET);
    assert_int_equal(req.strategy.value, 11);
    assert_int_equal(req.count, 1);
    assert_true(req.auto_commit);
    tf_request_free(&q);
    free(body);
}

static void test_poll_request_forms(void **state)
{
    tf_conn_t *t = *state;
    sl_poll_strategy_t strategies[] = {sl_poll_timestamp(ts0), sl_poll_first(), sl_poll_last(),
                                       sl_poll_next()};
    uint8_t empty[16] = {0};
    for (size_t i = 0; i < SL_ARRAY_LEN(strategies); i++) {
        queue_poll_body(t, empty, sizeof(empty));
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(t->client, sl_consumer_in_group(sl_id_name("g")),
                                                 sl_id_num(2), sl_id_num(3), SL_PARTITION_NONE,
                                                 strategies[i], 10, false, &out),
                         0);
        assert_int_equal(out.count, 0);
        assert_null(out.messages);
        tf_request_t q = tf_take(t);
        sl_poll_messages_request_t req;
        assert_int_equal(sl_poll_messages_request_decode(tf_body(&q), &req), 0);
        assert_int_equal(req.consumer.kind, SL_CONSUMER_GROUP);
        assert_span_str(req.consumer.id.name, "g");
        assert_false(req.partition.present);
        assert_int_equal(req.strategy.kind, strategies[i].kind);
        assert_int_equal(req.strategy.value, strategies[i].value);
        assert_false(req.auto_commit);
        tf_request_free(&q);
    }
    /* Arguments that cannot be encoded: nothing is sent. */
    sl_polled_messages_t out;
    sl_consumer_ref_t bad_consumer = {.kind = 3, .id = sl_id_num(1)};
    assert_int_equal(sl_client_poll_messages(t->client, bad_consumer, sl_id_num(1), sl_id_num(1), 0,
                                             sl_poll_first(), 1, false, &out),
                     -SL_ERR_INVALID_COMMAND);
    sl_poll_strategy_t bad_strategy = {.kind = 6};
    assert_int_equal(sl_client_poll_messages(t->client, sl_consumer_single(sl_id_num(1)),
                                             sl_id_num(1), sl_id_num(1), 0, bad_strategy, 1, false,
                                             &out),
                     -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(t));
}

static void test_poll_checksum_mismatch(void **state)
{
    tf_conn_t *t = *state;
    size_t len;
    uint8_t *body = tu_vector("e_poll_reply_body_sliced.hex", &len);
    /* Offsets in the body: prefix 16, batch header 256, frame header 48. */
    const size_t rec = 16, frame = rec + SL_BATCH_HEADER_SIZE, payload = frame + 48;
    struct {
        size_t at;
        int rc;
    } cases[] = {
        {payload + 2, -SL_ERR_INVALID_MESSAGE_CHECKSUM},                 /* a payload byte */
        {frame + SL_FRAME_OFF_ID + 3, -SL_ERR_INVALID_MESSAGE_CHECKSUM}, /* the id */
        {frame + SL_FRAME_OFF_CHECKSUM, -SL_ERR_INVALID_MESSAGE_CHECKSUM},
        {rec + SL_BATCH_OFF_CHECKSUM + 7, -SL_ERR_INVALID_BATCH_CHECKSUM},
        {rec + SL_BATCH_OFF_BASE_TIMESTAMP, -SL_ERR_INVALID_BATCH_CHECKSUM},
        {rec + SL_BATCH_OFF_PARTITION_ID, -SL_ERR_INVALID_BATCH_CHECKSUM},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        body[cases[i].at] ^= 0x20;
        queue_poll_body(t, body, len);
        sl_polled_messages_t out = {.count = 77};
        assert_int_equal(poll_once(t, &out), cases[i].rc);
        assert_int_equal(out.count, 77); /* not written on failure */
        body[cases[i].at] ^= 0x20;
    }
    /* The connection is still usable, and the repaired body decodes. */
    queue_poll_body(t, body, len);
    sl_polled_messages_t out;
    assert_int_equal(poll_once(t, &out), 0);
    assert_int_equal(out.count, 1);
    free(body);
}

static void test_poll_resync_sentinel(void **state)
{
    tf_conn_t *t = *state;
    sl_buf_t p = poll_payload(SL_POLL_RESYNC_PARTITION, 0, 0, NULL, 0);
    queue_poll_body(t, p.data, p.len);
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(t->client, sl_consumer_in_group(sl_id_num(0)),
                                             sl_id_num(1), sl_id_num(1), 2, sl_poll_next(), 10,
                                             true, &out),
                     0);
    assert_true(out.resync_required);
    assert_int_equal(out.partition_id, UINT32_MAX);
    assert_int_equal(out.count, 0);
    assert_null(out.messages);
    tf_request_t q = tf_take(t);
    tf_request_free(&q);
    sl_buf_free(&p);
    /* An ordinary empty result is not a re-sync. */
    p = poll_payload(2, 40, 0, NULL, 0);
    queue_poll_body(t, p.data, p.len);
    assert_int_equal(poll_once(t, &out), 0);
    assert_false(out.resync_required);
    assert_int_equal(out.partition_id, 2);
    assert_int_equal(out.current_offset, 40);
    sl_buf_free(&p);
    /* The sentinel never comes with messages. */
    size_t len;
    uint8_t *body = tu_vector("e_poll_reply_body_sliced.hex", &len);
    sl_store_u32(body, SL_POLL_RESYNC_PARTITION);
    queue_poll_body(t, body, len);
    assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
    free(body);
}

static void test_poll_hostile_replies(void **state)
{
    tf_conn_t *t = *state;
    size_t len;
    uint8_t *body = tu_vector("e_poll_reply_body_sliced.hex", &len);
    sl_polled_messages_t out;
    /* Truncated at every length: the prefix, the record header, the frame. */
    for (size_t cut = 0; cut < len; cut++) {
        queue_poll_body(t, body, cut);
        assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
    }
    const size_t rec = 16;
    /* Counts that do not add up: the prefix's, the record's. */
    uint32_t prefix_counts[] = {0, 2, UINT32_MAX};
    for (size_t i = 0; i < SL_ARRAY_LEN(prefix_counts); i++) {
        sl_store_u32(body + 12, prefix_counts[i]);
        queue_poll_body(t, body, len);
        assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
    }
    sl_store_u32(body + 12, 1);
    sl_store_u32(body + rec + SL_BATCH_OFF_COUNT, 2);
    queue_poll_body(t, body, len);
    assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
    sl_store_u32(body + rec + SL_BATCH_OFF_COUNT, 1);
    /* batch_length beyond the body, below 256, or short of the frames. */
    uint64_t lengths[] = {len - rec + 1, 255, len - rec - 1, 0};
    for (size_t i = 0; i < SL_ARRAY_LEN(lengths); i++) {
        sl_store_u64(body + rec + SL_BATCH_OFF_LENGTH, lengths[i]);
        queue_poll_body(t, body, len);
        assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
    }
    sl_store_u64(body + rec + SL_BATCH_OFF_LENGTH, len - rec);
    /* A frame's reserved field set. */
    body[rec + SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_RESERVED] = 1;
    queue_poll_body(t, body, len);
    assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
    body[rec + SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_RESERVED] = 0;
    /* Trailing bytes after the last record. */
    size_t trailing[] = {1, 255, 256, 300};
    for (size_t i = 0; i < SL_ARRAY_LEN(trailing); i++) {
        uint8_t *longer = calloc(1, len + trailing[i]);
        memcpy(longer, body, len);
        queue_poll_body(t, longer, len + trailing[i]);
        assert_int_equal(poll_once(t, &out), -SL_ERR_INVALID_FORMAT);
        free(longer);
    }
    /* Still usable: the intact body. */
    queue_poll_body(t, body, len);
    assert_int_equal(poll_once(t, &out), 0);
    assert_int_equal(out.messages[0].offset, 11);
    free(body);
}

static void test_poll_two_records(void **state)
{
    tf_conn_t *t = *state;
    size_t len, stored_len;
    uint8_t *body = tu_vector("e_poll_reply_body_sliced.hex", &len);
    uint8_t *stored = tu_vector("d_stored_batch.hex", &stored_len);
    sl_buf_t p = poll_payload(1, 11, 3, stored, stored_len);
    sl_put_bytes(&p, body + 16, len - 16);
    queue_poll_body(t, p.data, p.len);
    sl_polled_messages_t out;
    assert_int_equal(poll_once(t, &out), 0);
    assert_int_equal(out.count, 3);
    uint64_t offsets[] = {10, 11, 11};
    const char *payloads[] = {"hello", "world", "world"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out.messages[i].offset, offsets[i]);
        assert_bytes_equal(out.messages[i].payload, out.messages[i].payload_len, payloads[i], 5);
        assert_int_equal(out.messages[i].timestamp_us, 1700000000000123ull);
    }
    /* Message 10 carries the k = v header of vector c. */
    assert_int_equal(out.messages[0].headers_len, 12);
    sl_header_iter_t it;
    assert_int_equal(sl_polled_message_headers(&out.messages[0], &it), 0);
    sl_header_t h;
    assert_true(sl_header_next(&it, &h));
    assert_int_equal(h.key.kind, SL_HEADER_KIND_STRING);
    assert_bytes_equal(h.key.bytes, h.key.len, "k", 1);
    assert_int_equal(h.value.kind, SL_HEADER_KIND_STRING);
    assert_bytes_equal(h.value.bytes, h.value.len, "v", 1);
    assert_false(sl_header_next(&it, &h));
    sl_buf_free(&p);
    free(stored);
    free(body);
}

/* --- typed headers, there and back ------------------------------------------------- */

static void test_headers_round_trip(void **state)
{
    tf_conn_t *t = *state;
    static const uint8_t raw_key[] = {0x00, 0xff};
    sl_header_t hs[] = {
        {sl_hv_str("s"), sl_hv_str("hello")},
        {sl_hv_str("b"), sl_hv_bool(true)},
        {sl_hv_str("i8"), {.kind = SL_HEADER_KIND_INT8, .i = -5}},
        {sl_hv_str("u16"), {.kind = SL_HEADER_KIND_UINT16, .u = 65535}},
        {sl_hv_str("i32"), {.kind = SL_HEADER_KIND_INT32, .i = INT32_MIN}},
        {sl_hv_str("i64"), sl_hv_i64(INT64_MIN)},
        {sl_hv_str("u64"), sl_hv_u64(UINT64_MAX)},
        {sl_hv_str("i128"), {.kind = SL_HEADER_KIND_INT128, .x128 = {1, UINT64_MAX}}},
        {sl_hv_str("f32"), {.kind = SL_HEADER_KIND_FLOAT32, .f32 = 1.5f}},
        {sl_hv_str("f64"), sl_hv_f64(-2.25)},
        {sl_hv_raw(raw_key, 2), sl_hv_raw("abc", 3)},
        {{.kind = SL_HEADER_KIND_INT32, .i = 7}, sl_hv_str("x")},
    };
    sl_send_message_t m = {.id = {5, 0},
                           .origin_timestamp_us = ts0,
                           .payload = "p",
                           .payload_len = 1,
                           .headers = hs,
                           .headers_count = SL_ARRAY_LEN(hs)};
    tf_queue(t, confirmation_reply(0, 0));
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     0);
    tf_request_t q = tf_take(t);
    sl_send_messages_request_t req = decode_send(&q);
    /* The server's side: stamp the batch, serve it to a poll. */
    uint8_t *rec = malloc(req.batch.len);
    memcpy(rec, req.batch.ptr, req.batch.len);
    sl_batch_stamp(rec, req.batch.len, 0, 100, ts0 + 9);
    sl_buf_t p = poll_payload(0, 100, 1, rec, req.batch.len);
    queue_poll_body(t, p.data, p.len);
    tf_request_free(&q);
    sl_polled_messages_t out;
    assert_int_equal(poll_once(t, &out), 0);
    assert_int_equal(out.count, 1);
    assert_int_equal(out.messages[0].offset, 100);
    assert_int_equal(out.messages[0].id.lo, 5);

    sl_header_iter_t it;
    assert_int_equal(sl_polled_message_headers(&out.messages[0], &it), 0);
    sl_header_t h[SL_ARRAY_LEN(hs)];
    for (size_t i = 0; i < SL_ARRAY_LEN(hs); i++) {
        assert_true(sl_header_next(&it, &h[i]));
        assert_int_equal(h[i].key.kind, hs[i].key.kind);
        assert_int_equal(h[i].value.kind, hs[i].value.kind);
    }
    assert_false(sl_header_next(&it, &h[0]));
    assert_bytes_equal(h[0].value.bytes, h[0].value.len, "hello", 5);
    assert_true(h[1].value.b);
    assert_int_equal(h[2].value.i, -5);
    assert_bytes_equal(h[2].value.bytes, h[2].value.len, "\xfb", 1);
    assert_int_equal(h[3].value.u, 65535);
    assert_int_equal(h[4].value.i, INT32_MIN);
    assert_true(h[5].value.i == INT64_MIN);
    assert_true(h[6].value.u == UINT64_MAX);
    assert_int_equal(h[7].value.x128.lo, 1);
    assert_true(h[7].value.x128.hi == UINT64_MAX);
    assert_true(h[8].value.f32 == 1.5f);
    assert_true(h[9].value.f64 == -2.25);
    assert_bytes_equal(h[10].key.bytes, h[10].key.len, raw_key, 2);
    assert_bytes_equal(h[10].value.bytes, h[10].value.len, "abc", 3);
    assert_int_equal(h[11].key.i, 7);
    assert_bytes_equal(h[11].key.bytes, h[11].key.len, "\x07\x00\x00\x00", 4);
    sl_buf_free(&p);
    free(rec);
}

static void test_header_iter_refusals(void **state)
{
    (void)state;
    sl_header_iter_t it;
    sl_header_t h;
    assert_int_equal(sl_header_iter_init(&it, NULL, 0), 0);
    assert_false(sl_header_next(&it, &h));
    static const uint8_t good[] = {2, 1, 0, 0, 0, 'k', 12, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(sl_header_iter_init(&it, good, sizeof(good)), 0);
    assert_true(sl_header_next(&it, &h));
    assert_int_equal(h.value.u, 0x0807060504030201ull);
    assert_false(sl_header_next(&it, &h));
    /* Every truncation is malformed. */
    for (size_t cut = 1; cut < sizeof(good); cut++) {
        assert_int_equal(sl_header_iter_init(&it, good, cut), -SL_ERR_INVALID_FORMAT);
        assert_false(sl_header_next(&it, &h));
    }
    /* A Uint64 of 7 bytes, a kind 0, a lone key, an empty value. */
    static const uint8_t narrow[] = {2, 1, 0, 0, 0, 'k', 12, 7, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7};
    static const uint8_t kind0[] = {0, 1, 0, 0, 0, 'k', 2, 1, 0, 0, 0, 'v'};
    static const uint8_t lone[] = {2, 1, 0, 0, 0, 'k'};
    static const uint8_t empty_value[] = {2, 1, 0, 0, 0, 'k', 2, 0, 0, 0, 0};
    assert_int_equal(sl_header_iter_init(&it, narrow, sizeof(narrow)), -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_header_iter_init(&it, kind0, sizeof(kind0)), -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_header_iter_init(&it, lone, sizeof(lone)), -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_header_iter_init(&it, empty_value, sizeof(empty_value)),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_header_iter_init(&it, NULL, 3), -SL_ERR_INVALID_FORMAT);
    /* Unknown kinds above 15 come through as bytes. */
    static const uint8_t future[] = {2, 1, 0, 0, 0, 'k', 40, 2, 0, 0, 0, 9, 9};
    assert_int_equal(sl_header_iter_init(&it, future, sizeof(future)), 0);
    assert_true(sl_header_next(&it, &h));
    assert_int_equal(h.value.kind, 40);
    assert_int_equal(h.value.len, 2);
}

static void test_forward_polled_message(void **state)
{
    tf_conn_t *t = *state;
    size_t len;
    uint8_t *stored = tu_vector("d_stored_batch.hex", &len);
    sl_buf_t p = poll_payload(1, 11, 2, stored, len);
    queue_poll_body(t, p.data, p.len);
    sl_polled_messages_t in;
    assert_int_equal(poll_once(t, &in), 0);
    /* Results survive begin and the adds: forward both without copying. */
    assert_int_equal(sl_client_send_begin(t->client, sl_id_name("s"), sl_id_name("t"),
                                          sl_partitioning_partition(1)),
                     0);
    for (uint32_t i = 0; i < in.count; i++) {
        const sl_polled_message_t *m = &in.messages[i];
        sl_send_message_t out = {
            .id = m->id,
            .origin_timestamp_us = m->origin_timestamp_us,
            .payload = m->payload,
            .payload_len = m->payload_len,
            .headers_raw = m->headers,
            .headers_raw_len = m->headers_len,
        };
        assert_int_equal(sl_client_send_add(t->client, &out), 0);
    }
    tf_queue(t, confirmation_reply(1, 12));
    assert_int_equal(sl_client_send_commit(t->client, NULL), 0);
    tf_request_t q = tf_take(t);
    /* The same ids, timestamps, payloads and headers: vector c again. */
    assert_vector_c_body(&q);
    tf_request_free(&q);
    sl_buf_free(&p);
    free(stored);
}

/* --- consumer offsets and flush ------------------------------------------------------ */

static void test_get_consumer_offset(void **state)
{
    tf_conn_t *t = *state;
    uint64_t before = counter(t);
    sl_get_consumer_offset_reply_t r = {
        .found = true, .partition_id = 2, .current_offset = 50, .stored_offset = 41};
    sl_buf_t p;
    sl_buf_init(&p, 0);
    assert_int_equal(sl_get_consumer_offset_reply_encode(&p, &r), 0);
    assert_int_equal(p.len, 20);
    queue_poll_body(t, p.data, p.len);
    sl_consumer_offset_t out;
    assert_int_equal(sl_client_get_consumer_offset(t->client, sl_consumer_single(sl_id_name("c1")),
                                                   sl_id_num(1), sl_id_name("t"), 2, &out),
                     0);
    assert_true(out.found);
    assert_int_equal(out.partition_id, 2);
    assert_int_equal(out.current_offset, 50);
    assert_int_equal(out.stored_offset, 41);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, SL_CMD_GET_CONSUMER_OFFSET, before);
    sl_get_consumer_offset_request_t req;
    assert_int_equal(sl_get_consumer_offset_request_decode(tf_body(&q), &req), 0);
    assert_int_equal(req.consumer.kind, SL_CONSUMER_SINGLE);
    assert_span_str(req.consumer.id.name, "c1");
    assert_int_equal(req.stream_id.number, 1);
    assert_span_str(req.topic_id.name, "t");
    assert_true(req.partition.present);
    assert_int_equal(req.partition.id, 2);
    tf_request_free(&q);
    /* Not found: an empty body. */
    queue_poll_body(t, NULL, 0);
    out.found = true;
    assert_int_equal(sl_client_get_consumer_offset(t->client, sl_consumer_in_group(sl_id_num(3)),
                                                   sl_id_num(1), sl_id_num(1), SL_PARTITION_NONE,
                                                   &out),
                     0);
    assert_false(out.found);
    q = tf_take(t);
    assert_int_equal(sl_get_consumer_offset_request_decode(tf_body(&q), &req), 0);
    assert_int_equal(req.consumer.kind, SL_CONSUMER_GROUP);
    assert_false(req.partition.present);
    tf_request_free(&q);
    /* Hostile: short, long; and a status. */
    size_t lens[] = {19, 21, 1};
    sl_put_u8(&p, 0);
    for (size_t i = 0; i < SL_ARRAY_LEN(lens); i++) {
        queue_poll_body(t, p.data, lens[i]);
        assert_int_equal(sl_client_get_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                       sl_id_num(1), sl_id_num(1), 0, &out),
                         -SL_ERR_INVALID_FORMAT);
        q = tf_take(t);
        tf_request_free(&q);
    }
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_PARTITION_NOT_FOUND, NULL, 0));
    assert_int_equal(sl_client_get_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                   sl_id_num(1), sl_id_num(1), 9, &out),
                     -SL_ERR_PARTITION_NOT_FOUND);
    q = tf_take(t);
    tf_request_free(&q);
    sl_buf_free(&p);
}

static void test_store_and_delete_consumer_offset(void **state)
{
    tf_conn_t *t = *state;
    uint64_t n = counter(t);
    tf_queue(t, tf_reply_ok(SL_OP_STORE_CONSUMER_OFFSET, NULL, 0));
    assert_int_equal(
        sl_client_store_consumer_offset(t->client, sl_consumer_in_group(sl_id_name("g")),
                                        sl_id_num(1), sl_id_num(2), 3, 42, SL_ACK_LEVEL_QUORUM),
        0);
    tf_request_t q = expect(t, SL_OP_STORE_CONSUMER_OFFSET, 0, n);
    assert_int_equal(counter(t), n + 1);
    sl_store_consumer_offset_request_t sreq;
    assert_int_equal(sl_store_consumer_offset_request_decode(tf_body(&q), &sreq), 0);
    assert_int_equal(sreq.consumer.kind, SL_CONSUMER_GROUP);
    assert_span_str(sreq.consumer.id.name, "g");
    assert_int_equal(sreq.partition.id, 3);
    assert_true(sreq.partition.present);
    assert_int_equal(sreq.offset, 42);
    assert_int_equal(sreq.ack, 1);
    tf_request_free(&q);

    tf_queue(t, tf_reply_ok(SL_OP_DELETE_CONSUMER_OFFSET, NULL, 0));
    assert_int_equal(sl_client_delete_consumer_offset(t->client, sl_consumer_single(sl_id_num(8)),
                                                      sl_id_num(1), sl_id_num(2), 0,
                                                      SL_ACK_LEVEL_NONE),
                     0);
    q = expect(t, SL_OP_DELETE_CONSUMER_OFFSET, 0, n + 1);
    assert_int_equal(counter(t), n + 2);
    sl_delete_consumer_offset_request_t dreq;
    assert_int_equal(sl_delete_consumer_offset_request_decode(tf_body(&q), &dreq), 0);
    assert_int_equal(dreq.consumer.id.number, 8);
    assert_true(dreq.partition.present);
    assert_int_equal(dreq.partition.id, 0);
    assert_int_equal(dreq.ack, 0);
    tf_request_free(&q);
}

static void test_consumer_offset_writes_refused(void **state)
{
    tf_conn_t *t = *state;
    /* Verdicts: statuses and committed results. */
    tf_queue(t, tf_reply(SL_OP_STORE_CONSUMER_OFFSET, SL_ERR_INVALID_OFFSET, NULL, 0));
    assert_int_equal(sl_client_store_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_num(1), sl_id_num(1), 0, 1000, 1),
                     -SL_ERR_INVALID_OFFSET);
    tf_request_t q = tf_take(t);
    tf_request_free(&q);
    tf_queue(t, tf_reply_result(SL_OP_DELETE_CONSUMER_OFFSET, SL_ERR_CONSUMER_OFFSET_NOT_FOUND));
    assert_int_equal(sl_client_delete_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                      sl_id_num(1), sl_id_num(1), 0, 1),
                     -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
    q = tf_take(t);
    tf_request_free(&q);
    /* A success payload must be empty. */
    tf_queue(t, tf_reply_ok(SL_OP_STORE_CONSUMER_OFFSET, "x", 1));
    assert_int_equal(sl_client_store_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_num(1), sl_id_num(1), 0, 1, 1),
                     -SL_ERR_INVALID_FORMAT);
    q = tf_take(t);
    tf_request_free(&q);
    /* Absent partition: sent as absent (the server answers 20). */
    tf_queue(t, tf_reply(SL_OP_STORE_CONSUMER_OFFSET, SL_ERR_RESOURCE_NOT_FOUND, NULL, 0));
    assert_int_equal(sl_client_store_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_num(1), sl_id_num(1), SL_PARTITION_NONE,
                                                     1, 1),
                     -SL_ERR_RESOURCE_NOT_FOUND);
    q = tf_take(t);
    sl_store_consumer_offset_request_t sreq;
    assert_int_equal(sl_store_consumer_offset_request_decode(tf_body(&q), &sreq), 0);
    assert_false(sreq.partition.present);
    tf_request_free(&q);
    /* Bad ack levels and consumers are refused locally. */
    assert_int_equal(sl_client_store_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_num(1), sl_id_num(1), 0, 1, 2),
                     -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_client_delete_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                      sl_id_num(1), sl_id_num(1), 0, 2),
                     -SL_ERR_INVALID_COMMAND);
    sl_consumer_ref_t bad = {.kind = 0, .id = sl_id_num(1)};
    assert_int_equal(
        sl_client_delete_consumer_offset(t->client, bad, sl_id_num(1), sl_id_num(1), 0, 1),
        -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(t));
}

static void test_flush_unsaved_buffer(void **state)
{
    tf_conn_t *t = *state;
    uint64_t n = counter(t);
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, SL_ERR_FEATURE_UNAVAILABLE, NULL, 0));
    assert_int_equal(
        sl_client_flush_unsaved_buffer(t->client, sl_id_name("s"), sl_id_num(2), 3, true),
        -SL_ERR_FEATURE_UNAVAILABLE);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, SL_CMD_FLUSH_UNSAVED_BUFFER, n);
    sl_flush_unsaved_buffer_request_t req;
    assert_int_equal(sl_flush_unsaved_buffer_request_decode(tf_body(&q), &req), 0);
    assert_span_str(req.stream_id.name, "s");
    assert_int_equal(req.topic_id.number, 2);
    assert_int_equal(req.partition_id, 3);
    assert_true(req.fsync);
    tf_request_free(&q);
    /* A server that implements it answers an empty success. */
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, 0, NULL, 0));
    assert_int_equal(
        sl_client_flush_unsaved_buffer(t->client, sl_id_num(1), sl_id_num(2), 0, false), 0);
    q = tf_take(t);
    tf_request_free(&q);
    assert_int_equal(counter(t), n);
}

/* --- numbering across the message calls ------------------------------------------------ */

static void test_partition_ops_share_the_counter(void **state)
{
    tf_conn_t *t = *state;
    uint64_t n = counter(t);
    sl_send_message_t m = {
        .id = {1, 0}, .origin_timestamp_us = ts0, .payload = "a", .payload_len = 1};
    /* send (advances), poll (reads), store (advances), metadata op, send. */
    tf_queue(t, confirmation_reply(0, 0));
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     0);
    uint8_t empty[16] = {0};
    queue_poll_body(t, empty, sizeof(empty));
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(t->client, sl_consumer_single(sl_id_num(1)),
                                             sl_id_num(1), sl_id_num(1), 0, sl_poll_first(), 1,
                                             false, &out),
                     0);
    tf_queue(t, tf_reply_ok(SL_OP_STORE_CONSUMER_OFFSET, NULL, 0));
    assert_int_equal(sl_client_store_consumer_offset(t->client, sl_consumer_single(sl_id_num(1)),
                                                     sl_id_num(1), sl_id_num(1), 0, 0, 1),
                     0);
    tf_queue(t, tf_reply_ok(SL_OP_DELETE_STREAM, NULL, 0));
    assert_int_equal(sl_client_delete_stream(t->client, sl_id_num(4)), 0);
    tf_queue(t, confirmation_reply(0, 1));
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), &m, 1, NULL),
                     0);
    uint8_t ops[] = {SL_OP_SEND_MESSAGES, SL_OP_NON_REPLICATED, SL_OP_STORE_CONSUMER_OFFSET,
                     SL_OP_DELETE_STREAM, SL_OP_SEND_MESSAGES};
    uint64_t numbers[] = {n, n + 1, n + 1, n + 2, n + 3};
    for (size_t i = 0; i < SL_ARRAY_LEN(ops); i++) {
        tf_request_t q = tf_take(t);
        assert_int_equal(q.header.operation, ops[i]);
        assert_int_equal(q.header.request, numbers[i]);
        /* Only the metadata operation carries a request checksum. */
        assert_int_equal(sl_u128_is_zero(q.header.request_checksum), ops[i] != SL_OP_DELETE_STREAM);
        tf_request_free(&q);
    }
    assert_int_equal(counter(t), n + 4);
}

/* --- large batches ------------------------------------------------------------------ */

enum { BIG_N = 1000, BIG_SIZE = 1000 };

typedef struct serve_job {
    tf_conn_t *t;
    sl_buf_t reply;
    tf_request_t request;
} serve_job_t;

/* The server end for requests larger than the socket buffer: reads the
 * whole request while the client is still writing it, then answers. */
static void *serve_one(void *arg)
{
    serve_job_t *j = arg;
    j->request = tf_take(j->t);
    send(j->t->server, j->reply.data, j->reply.len, MSG_NOSIGNAL);
    sl_buf_free(&j->reply);
    return NULL;
}

static uint8_t *big_payloads(void)
{
    uint8_t *p = malloc((size_t)BIG_N * BIG_SIZE);
    assert_non_null(p);
    for (size_t i = 0; i < (size_t)BIG_N * BIG_SIZE; i++)
        p[i] = (uint8_t)(i * 7u + i / BIG_SIZE);
    return p;
}

static sl_send_message_t big_message(const uint8_t *payloads, uint32_t i)
{
    return (sl_send_message_t){.id = {i + 1u, 0},
                               .origin_timestamp_us = ts0 + i,
                               .payload = payloads + (size_t)i * BIG_SIZE,
                               .payload_len = BIG_SIZE};
}

/* Commits (or one-shot sends) on the calling thread while a helper thread
 * plays the server; returns the request. */
static tf_request_t commit_big(tf_conn_t *t, const uint8_t *payloads, bool one_shot)
{
    serve_job_t job = {.t = t, .reply = confirmation_reply(2, 5000)};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, serve_one, &job), 0);
    sl_send_result_t res = {0};
    int rc;
    if (one_shot) {
        sl_send_message_t *msgs = malloc(BIG_N * sizeof(*msgs));
        assert_non_null(msgs);
        for (uint32_t i = 0; i < BIG_N; i++)
            msgs[i] = big_message(payloads, i);
        rc = sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(2),
                                     sl_partitioning_balanced(), msgs, BIG_N, &res);
        free(msgs);
    } else {
        rc = sl_client_send_commit(t->client, &res);
    }
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(rc, 0);
    assert_int_equal(res.base_offset, 5000);
    assert_int_equal(res.messages_count, BIG_N);
    return job.request;
}

static void assert_big_request(const tf_request_t *q, const uint8_t *payloads)
{
    assert_int_equal(q->header.operation, SL_OP_SEND_MESSAGES);
    sl_send_messages_request_t req = decode_send(q);
    assert_int_equal(req.messages_count, BIG_N);
    sl_frame_iter_t it = sl_frame_iter(req.batch);
    sl_message_t m;
    for (uint32_t i = 0; i < BIG_N; i++) {
        assert_true(sl_frame_next(&it, &m));
        assert_int_equal(m.id.lo, i + 1);
        assert_int_equal(m.origin_timestamp, ts0 + i);
        assert_bytes_equal(m.payload.ptr, m.payload.len, payloads + (size_t)i * BIG_SIZE, BIG_SIZE);
    }
    assert_false(sl_frame_next(&it, &m));
}

static void test_large_batch_reserved(void **state)
{
    tf_conn_t *t = *state;
    uint8_t *payloads = big_payloads();
    assert_int_equal(
        sl_client_send_begin(t->client, sl_id_num(1), sl_id_num(2), sl_partitioning_balanced()), 0);
    assert_int_equal(sl_client_send_reserve(t->client, (size_t)BIG_N * (48 + BIG_SIZE)), 0);
    const sl_client_t *c = t->client;
    const uint8_t *data = c->tx.data;
    size_t cap = c->tx.cap;
    for (uint32_t i = 0; i < BIG_N; i++) {
        sl_send_message_t m = big_message(payloads, i);
        assert_int_equal(sl_client_send_add(t->client, &m), 0);
        /* The buffer never moved: each payload byte was written once, by
         * the add's memcpy into its final place. */
        assert_ptr_equal(c->tx.data, data);
        assert_int_equal(c->tx.cap, cap);
    }
    uint32_t count;
    size_t bytes;
    sl_client_send_pending(t->client, &count, &bytes);
    assert_int_equal(count, BIG_N);
    assert_true(bytes <= cap);
    tf_request_t q = commit_big(t, payloads, false);
    assert_big_request(&q, payloads);
    tf_request_t first = q;

    /* The one-shot call reserves up front the same way and sends the same
     * bytes (same ids, timestamps and payloads). */
    q = commit_big(t, payloads, true);
    assert_bytes_equal(q.body, q.body_len, first.body, first.body_len);
    tf_request_free(&q);
    tf_request_free(&first);
    free(payloads);
}

static void test_large_batch_growth(void **state)
{
    tf_conn_t *t = *state;
    uint8_t *payloads = big_payloads();
    assert_int_equal(
        sl_client_send_begin(t->client, sl_id_num(1), sl_id_num(2), sl_partitioning_balanced()), 0);
    /* Without a reservation the buffer only grows geometrically: at most
     * log2(1 MB / start) moves, so each byte is moved less than once on
     * average, and the final capacity is the first doubling that fits. */
    const sl_client_t *c = t->client;
    size_t cap = c->tx.cap, start_cap = cap;
    int growths = 0;
    for (uint32_t i = 0; i < BIG_N; i++) {
        sl_send_message_t m = big_message(payloads, i);
        assert_int_equal(sl_client_send_add(t->client, &m), 0);
        if (c->tx.cap != cap) {
            assert_true(c->tx.cap > cap && c->tx.cap % cap == 0);
            cap = c->tx.cap;
            growths++;
        }
    }
    int doublings = 0;
    for (size_t k = start_cap; k < c->tx.len; k *= 2)
        doublings++;
    assert_int_equal(c->tx.cap, start_cap << doublings);
    assert_in_range(growths, 1, doublings);
    tf_request_t q = commit_big(t, payloads, false);
    assert_big_request(&q, payloads);
    tf_request_free(&q);
    free(payloads);
}

/* The one-shot call reads the clock once: messages without an origin
 * timestamp share it. */
static void test_send_one_shot_shares_now(void **state)
{
    tf_conn_t *t = *state;
    sl_send_message_t m[3] = {{.payload = "a", .payload_len = 1},
                              {.payload = "b", .payload_len = 1, .origin_timestamp_us = ts0},
                              {.payload = "c", .payload_len = 1}};
    /* ts0 is long past, so "now" lies far from it; keep the span a u32. */
    m[1].origin_timestamp_us = sl_clock_realtime_us() - 1000000u;
    tf_queue(t, confirmation_reply(0, 0));
    uint64_t before = sl_clock_realtime_us();
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), m, 3, NULL),
                     0);
    uint64_t after = sl_clock_realtime_us();
    tf_request_t q = tf_take(t);
    sl_send_messages_request_t req = decode_send(&q);
    sl_frame_iter_t it = sl_frame_iter(req.batch);
    sl_message_t msg[3];
    for (int i = 0; i < 3; i++)
        assert_true(sl_frame_next(&it, &msg[i]));
    assert_in_range(msg[0].origin_timestamp, before, after);
    assert_int_equal(msg[2].origin_timestamp, msg[0].origin_timestamp);
    assert_int_equal(msg[1].origin_timestamp, m[1].origin_timestamp_us);
    assert_false(sl_u128_eq(msg[0].id, msg[2].id));
    tf_request_free(&q);
}

/* sl_client_send_messages draws the ids of many messages at once: ids given by the caller
 * are kept, every other message gets its own UUIDv4 made of the next 16 bytes of the
 * client's keystream, in message order with none skipped, drawn with one call per 64
 * messages that need an id (a call each cost about 75 instructions of bookkeeping). */
static void test_send_many_fresh_ids(void **state)
{
    tf_conn_t *t = *state;
    enum { N = 200 };
    sl_send_message_t m[N];
    uint32_t fresh = 0;
    for (uint32_t i = 0; i < N; i++) {
        m[i] = (sl_send_message_t){.payload = "x", .payload_len = 1, .origin_timestamp_us = ts0};
        if (i % 3 == 1)
            m[i].id = (sl_msg_id_t){.lo = 1000 + i, .hi = 7};
        else
            fresh++;
    }
    /* The keystream as it stands: a copy draws what the client will (once keyed; an
     * unkeyed copy would draw a key of its own). */
    uint8_t first;
    assert_int_equal(sl_client_rng_bytes(&t->client->rng, &first, 1), 0);
    sl_client_rng_t ref = t->client->rng;
    tf_queue(t, confirmation_reply(0, 0));
    assert_int_equal(sl_client_send_messages(t->client, sl_id_num(1), sl_id_num(1),
                                             sl_partitioning_balanced(), m, N, NULL),
                     0);
    assert_int_equal(fresh, 133);
    assert_int_equal(t->client->rng.draws - ref.draws, (fresh + 63) / 64);
    tf_request_t q = tf_take(t);
    sl_send_messages_request_t req = decode_send(&q);
    sl_frame_iter_t it = sl_frame_iter(req.batch);
    sl_message_t msg[N];
    for (uint32_t i = 0; i < N; i++)
        assert_true(sl_frame_next(&it, &msg[i]));
    assert_false(sl_frame_next(&it, &msg[0]));
    for (uint32_t i = 0; i < N; i++) {
        if (i % 3 == 1) {
            assert_true(sl_u128_eq(msg[i].id, (sl_u128_t){1000 + i, 7}));
            continue;
        }
        uint8_t bytes[16];
        assert_int_equal(sl_client_rng_bytes(&ref, bytes, sizeof(bytes)), 0);
        sl_u128_t want = sl_load_u128(bytes);
        want.hi = (want.hi & ~0xF000ull) | 0x4000ull;
        want.lo = (want.lo & ~(3ull << 62)) | (2ull << 62);
        assert_true(sl_u128_eq(msg[i].id, want));
        assert_int_equal((msg[i].id.hi >> 12) & 0xF, 4);
        assert_int_equal(msg[i].id.lo >> 62, 2);
        for (uint32_t k = 0; k < i; k++)
            assert_false(sl_u128_eq(msg[i].id, msg[k].id));
    }
    /* Nothing drawn beyond the ids used: the next id is the keystream's next bytes. */
    assert_int_equal(t->client->rng.left, ref.left);
    assert_int_equal(t->client->rng.reseed_left, ref.reseed_left);
    tf_request_free(&q);
}

/* A stamped record of n messages of BIG_SIZE bytes from offset 0. */
static void big_record(sl_buf_t *out, const uint8_t *payloads, uint32_t n)
{
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, out);
    for (uint32_t i = 0; i < n; i++) {
        sl_send_message_t m = big_message(payloads, i);
        assert_int_equal(sl_batch_add(&bb, (sl_u128_t){m.id.lo, m.id.hi}, m.origin_timestamp_us,
                                      sl_span(m.payload, m.payload_len), sl_span(NULL, 0)),
                         0);
    }
    sl_span_t rec;
    assert_int_equal(sl_batch_finish(&bb, &rec), 0);
    sl_batch_stamp((uint8_t *)rec.ptr, rec.len, 1, 0, ts0);
}

/* A large reply body lands mid-page (SL_CLIENT_BODY_PAGE_OFFSET, see
 * client_internal.h), every message verified, and the 1 MB receive buffer
 * survives into the next call instead of being allocated again. */
static void test_large_poll_placed_and_kept(void **state)
{
    tf_conn_t *t = *state;
    uint8_t *payloads = big_payloads();
    sl_buf_t p = poll_payload(1, BIG_N - 1, BIG_N, "", 0);
    big_record(&p, payloads, BIG_N);
    serve_job_t job = {.t = t, .reply = tf_reply(SL_OP_NON_REPLICATED, 0, p.data, p.len)};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, serve_one, &job), 0);
    sl_polled_messages_t out;
    int rc = sl_client_poll_messages(t->client, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                     sl_id_name("t"), 1, sl_poll_offset(0), BIG_N, false, &out);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(rc, 0);
    assert_int_equal(out.count, BIG_N);
    for (uint32_t i = 0; i < BIG_N; i += 99)
        assert_bytes_equal(out.messages[i].payload, out.messages[i].payload_len,
                           payloads + (size_t)i * BIG_SIZE, BIG_SIZE);
    /* The body: 16-byte prefix, 256-byte batch header, 48-byte frame header,
     * then the first payload. */
    uintptr_t body = (uintptr_t)out.messages[0].payload - 16 - 256 - 48;
    assert_int_equal(body % SL_CLIENT_PAGE, SL_CLIENT_BODY_PAGE_OFFSET);
    size_t cap = t->client->rx.cap;
    assert_true(cap > (size_t)1 << 20);
    sl_client_results_release(t->client);
    assert_int_equal(t->client->rx.cap, cap);
    tf_request_free(&job.request);
    sl_buf_free(&p);
    free(payloads);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_send_vector_c),
        T(test_send_one_shot_and_raw_headers),
        T(test_send_partitionings),
        T(test_send_defaults_id_and_timestamp),
        T(test_send_one_shot_shares_now),
        T(test_send_many_fresh_ids),
        T(test_send_header_refusals),
        T(test_send_message_refusals),
        cmocka_unit_test(test_send_frame_limit),
        cmocka_unit_test(test_send_needs_session),
        T(test_send_replies),
        T(test_poll_vector_e),
        T(test_large_poll_placed_and_kept),
        T(test_poll_request_forms),
        T(test_poll_checksum_mismatch),
        T(test_poll_resync_sentinel),
        T(test_poll_hostile_replies),
        T(test_poll_two_records),
        T(test_headers_round_trip),
        cmocka_unit_test(test_header_iter_refusals),
        T(test_forward_polled_message),
        T(test_get_consumer_offset),
        T(test_store_and_delete_consumer_offset),
        T(test_consumer_offset_writes_refused),
        T(test_flush_unsaved_buffer),
        T(test_partition_ops_share_the_counter),
        T(test_large_batch_reserved),
        T(test_large_batch_growth),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
