/* Message and consumer-offset codecs (wire/cmd_messages.h): vectors c, c2
 * and e, the commands.md 13.6 confirmation, round trips of all six
 * commands and hostile bodies for every decoder. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cmd_messages.h"
#include "wire/header.h"

static const uint8_t headers_kv[12] = {0x02, 0x01, 0, 0, 0, 'k', 0x02, 0x01, 0, 0, 0, 'v'};

/* --- helpers ---------------------------------------------------------------- */

/* An exact-size heap copy, so ASan flags any read past n. */
static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    assert_non_null(q);
    if (n)
        memcpy(q, p, n);
    return q;
}

/* Every proper prefix of a request body is refused with status 3. */
#define ASSERT_REQUEST_PREFIXES_FAIL(stem, bytes, n)                                               \
    do {                                                                                           \
        for (size_t cut_ = 0; cut_ < (n); cut_++) {                                                \
            uint8_t *p_ = dup_bytes((bytes), cut_);                                                \
            sl_##stem##_request_t o_;                                                              \
            assert_int_equal(sl_##stem##_request_decode(sl_span(p_, cut_), &o_),                   \
                             -SL_ERR_INVALID_COMMAND);                                             \
            free(p_);                                                                              \
        }                                                                                          \
    } while (0)

/* Every proper prefix of a reply payload from `from` bytes on is refused. */
#define ASSERT_REPLY_PREFIXES_FAIL(stem, bytes, n, from)                                           \
    do {                                                                                           \
        for (size_t cut_ = (from); cut_ < (n); cut_++) {                                           \
            uint8_t *p_ = dup_bytes((bytes), cut_);                                                \
            sl_arena_t a_;                                                                         \
            sl_arena_init(&a_, 4096, 1 << 20);                                                     \
            sl_##stem##_reply_t o_;                                                                \
            assert_int_equal(sl_##stem##_reply_decode(sl_span(p_, cut_), &a_, &o_),                \
                             -SL_ERR_INVALID_FORMAT);                                              \
            sl_arena_free(&a_);                                                                    \
            free(p_);                                                                              \
        }                                                                                          \
    } while (0)

/* Decodes hex as a request body of `stem` and checks the result code. */
#define ASSERT_REQUEST_HEX(stem, hex, rc)                                                          \
    do {                                                                                           \
        size_t n_;                                                                                 \
        uint8_t *h_ = tu_hex((hex), &n_);                                                          \
        uint8_t *p_ = dup_bytes(h_, n_);                                                           \
        sl_##stem##_request_t o_;                                                                  \
        assert_int_equal(sl_##stem##_request_decode(sl_span(p_, n_), &o_), (rc));                  \
        free(p_);                                                                                  \
        free(h_);                                                                                  \
    } while (0)

static sl_span_t build_vector_c_batch(sl_buf_t *buf)
{
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, buf);
    uint64_t ts = 1700000000000000ull;
    assert_int_equal(sl_batch_add(&bb, (sl_u128_t){1, 0}, ts, sl_span_str("hello"),
                                  sl_span(headers_kv, sizeof(headers_kv))),
                     0);
    assert_int_equal(
        sl_batch_add(&bb, (sl_u128_t){2, 0}, ts, sl_span_str("world"), sl_span(NULL, 0)), 0);
    sl_span_t record;
    assert_int_equal(sl_batch_finish(&bb, &record), 0);
    return record;
}

static sl_send_messages_request_t vector_c_fields(void)
{
    return (sl_send_messages_request_t){
        .stream_id = sl_ident_name("s"),
        .topic_id = sl_ident_name("t"),
        .partitioning = {.kind = SL_PARTITIONING_PARTITION_ID, .partition_id = 1},
        .messages_count = 2,
    };
}

/* --- 101 SendMessages ---------------------------------------------------------------- */

static void test_send_vector_c_decode(void **state)
{
    (void)state;
    size_t n;
    uint8_t *c = tu_vector("c_send_messages_body.hex", &n);
    sl_send_messages_request_t r;
    assert_int_equal(sl_send_messages_request_decode(sl_span(c, n), &r), 0);
    sl_ident_t s = sl_ident_name("s"), t = sl_ident_name("t");
    assert_true(sl_ident_eq(&r.stream_id, &s));
    assert_true(sl_ident_eq(&r.topic_id, &t));
    assert_int_equal(r.partitioning.kind, SL_PARTITIONING_PARTITION_ID);
    assert_int_equal(r.partitioning.partition_id, 1);
    assert_int_equal(r.messages_count, 2);
    assert_true(r.batch.ptr == c + 20);
    assert_int_equal(r.batch.len, 374);
    free(c);
}

static void test_send_vector_c_encode(void **state)
{
    (void)state;
    size_t n;
    uint8_t *c = tu_vector("c_send_messages_body.hex", &n);
    sl_buf_t batch, body;
    sl_buf_init(&batch, 0);
    sl_buf_init(&body, 0);
    /* From an already-built batch. */
    sl_send_messages_request_t in = vector_c_fields();
    in.batch = build_vector_c_batch(&batch);
    assert_int_equal(sl_send_messages_request_encode(&body, &in), 0);
    assert_bytes_equal(body.data, body.len, c, n);
    /* Metadata first, then the batch built in place in the same buffer. */
    sl_buf_reset(&body);
    in.batch = sl_span(NULL, 0);
    assert_int_equal(sl_send_messages_metadata_encode(&body, &in), 0);
    sl_span_t record = build_vector_c_batch(&body);
    assert_true(record.ptr == body.data + 20);
    assert_bytes_equal(body.data, body.len, c, n);
    /* Decode, re-encode: same bytes. */
    sl_send_messages_request_t back;
    assert_int_equal(sl_send_messages_request_decode(sl_buf_span(&body), &back), 0);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_send_messages_request_encode(&again, &back), 0);
    assert_bytes_equal(again.data, again.len, c, n);
    sl_buf_free(&again);
    sl_buf_free(&batch);
    sl_buf_free(&body);
    free(c);
}

static void test_send_vector_c2_frame(void **state)
{
    (void)state;
    size_t n;
    uint8_t *c2 = tu_vector("c2_send_messages_request.hex", &n);
    assert_int_equal(n, 650);
    sl_request_header_t h;
    assert_int_equal(sl_request_header_decode(c2, SL_FRAME_MAX_DEFAULT, &h), SL_HDR_OK);
    assert_int_equal(h.size, 650);
    assert_int_equal(h.operation, SL_OP_SEND_MESSAGES);
    assert_int_equal(h.session, 1);
    assert_int_equal(h.request, 1);
    assert_int_equal(h.code, 0);
    sl_send_messages_request_t r;
    assert_int_equal(sl_send_messages_request_decode(sl_span(c2 + 256, h.size - 256), &r), 0);
    assert_int_equal(r.messages_count, 2);

    sl_buf_t frame, batch;
    sl_buf_init(&frame, 0);
    sl_buf_init(&batch, 0);
    assert_non_null(sl_buf_extend(&frame, SL_HEADER_SIZE));
    sl_send_messages_request_t in = vector_c_fields();
    in.batch = build_vector_c_batch(&batch);
    assert_int_equal(sl_send_messages_request_encode(&frame, &in), 0);
    sl_request_header_t out = {
        .size = (uint32_t)frame.len,
        .client = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull},
        .request = 1,
        .operation = SL_OP_SEND_MESSAGES,
        .session = 1,
    };
    sl_request_header_encode(frame.data, &out);
    assert_bytes_equal(frame.data, frame.len, c2, n);
    sl_buf_free(&frame);
    sl_buf_free(&batch);
    free(c2);
}

/* Checks 1 and 2: hand-made metadata sections in front of vector c's batch. */
static void expect_metadata(const char *metadata_hex, int want)
{
    size_t cn, mn;
    uint8_t *c = tu_vector("c_send_messages_body.hex", &cn);
    uint8_t *meta = tu_hex(metadata_hex, &mn);
    uint8_t *body = malloc(mn + cn - 20);
    memcpy(body, meta, mn);
    memcpy(body + mn, c + 20, cn - 20);
    sl_send_messages_request_t r;
    assert_int_equal(sl_send_messages_metadata_decode(sl_span(body, mn + cn - 20), &r), want);
    assert_int_equal(sl_send_messages_request_decode(sl_span(body, mn + cn - 20), &r), want);
    free(body);
    free(meta);
    free(c);
}

static void test_send_metadata_checks(void **state)
{
    (void)state;
    const int cmd = -SL_ERR_INVALID_COMMAND;
    /* The vector's own section, then other valid shapes. */
    expect_metadata("10 00 00 00 02 01 73 02 01 74 02 04 01 00 00 00 02 00 00 00", 0);
    expect_metadata("10 00 00 00 01 04 01 00 00 00 01 04 02 00 00 00 01 00 02 00 00 00", cmd);
    expect_metadata("12 00 00 00 01 04 01 00 00 00 01 04 02 00 00 00 01 00 02 00 00 00", 0);
    /* MessagesKey: raw bytes, not UTF-8. */
    expect_metadata("0f 00 00 00 02 01 73 02 01 74 03 03 ff fe 00 02 00 00 00", 0);
    /* metadata_length longer / shorter than its fields. */
    expect_metadata("11 00 00 00 02 01 73 02 01 74 02 04 01 00 00 00 02 00 00 00 00", cmd);
    expect_metadata("0f 00 00 00 02 01 73 02 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("ff ff ff ff 02 01 73 02 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    /* Identifiers: kind, numeric length, zero length, invalid UTF-8, each field. */
    expect_metadata("10 00 00 00 03 01 73 02 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("10 00 00 00 02 01 73 00 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("12 00 00 00 01 03 01 00 00 01 04 02 00 00 00 01 00 02 00 00 00 00", cmd);
    expect_metadata("0f 00 00 00 02 00 02 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("0f 00 00 00 02 01 73 02 00 02 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("10 00 00 00 02 01 ff 02 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("10 00 00 00 02 01 73 02 01 c0 02 04 01 00 00 00 02 00 00 00", cmd);
    /* A name length past the section. */
    expect_metadata("10 00 00 00 02 ff 73 02 01 74 02 04 01 00 00 00 02 00 00 00", cmd);
    /* Partitioning: kind 0 and 4, wrong lengths for each kind, empty key. */
    expect_metadata("10 00 00 00 02 01 73 02 01 74 00 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("10 00 00 00 02 01 73 02 01 74 04 04 01 00 00 00 02 00 00 00", cmd);
    expect_metadata("0d 00 00 00 02 01 73 02 01 74 01 01 00 02 00 00 00", cmd);
    expect_metadata("0f 00 00 00 02 01 73 02 01 74 02 03 01 00 00 02 00 00 00", cmd);
    expect_metadata("0c 00 00 00 02 01 73 02 01 74 03 00 02 00 00 00", cmd);
    /* Body too short for the length field or the section. */
    for (size_t cut = 0; cut < 4; cut++) {
        uint8_t b[4] = {0x10, 0, 0, 0};
        uint8_t *p = dup_bytes(b, cut);
        sl_send_messages_request_t r;
        assert_int_equal(sl_send_messages_metadata_decode(sl_span(p, cut), &r), cmd);
        free(p);
    }
}

static void test_send_batch_checks(void **state)
{
    (void)state;
    size_t n;
    uint8_t *c = tu_vector("c_send_messages_body.hex", &n);
    uint8_t *body = malloc(n + 1);
    sl_send_messages_request_t r;
    /* The batch errors come through unchanged: 4027, 4039, and 3 for 12, 13. */
    memcpy(body, c, n);
    body[20 + 256 + 20] ^= 1;
    assert_int_equal(sl_send_messages_request_decode(sl_span(body, n), &r),
                     -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    assert_int_equal(sl_send_messages_metadata_decode(sl_span(body, n), &r), 0);
    memcpy(body, c, n);
    body[20 + 40] ^= 1;
    assert_int_equal(sl_send_messages_request_decode(sl_span(body, n), &r),
                     -SL_ERR_INVALID_BATCH_CHECKSUM);
    memcpy(body, c, n);
    body[16] = 3;
    assert_int_equal(sl_send_messages_request_decode(sl_span(body, n), &r),
                     -SL_ERR_INVALID_COMMAND);
    memcpy(body, c, n);
    body[n] = 0;
    assert_int_equal(sl_send_messages_request_decode(sl_span(body, n + 1), &r),
                     -SL_ERR_INVALID_COMMAND);
    /* Every prefix of the body. */
    ASSERT_REQUEST_PREFIXES_FAIL(send_messages, c, n);
    free(body);
    free(c);
}

static void test_send_encode_errors(void **state)
{
    (void)state;
    sl_buf_t batch, out;
    sl_buf_init(&batch, 0);
    sl_buf_init(&out, 0);
    sl_send_messages_request_t in = vector_c_fields();
    in.batch = build_vector_c_batch(&batch);
    in.messages_count = 3;
    assert_int_equal(sl_send_messages_request_encode(&out, &in), -SL_ERR_INVALID_COMMAND);
    in.messages_count = 2;
    in.batch.len = 255;
    assert_int_equal(sl_send_messages_request_encode(&out, &in), -SL_ERR_INVALID_COMMAND);
    in.batch.len = 374;
    in.stream_id = sl_ident_name("");
    assert_int_equal(sl_send_messages_request_encode(&out, &in), -SL_ERR_INVALID_COMMAND);
    in.stream_id = sl_ident_number(1);
    in.partitioning = (sl_partitioning_t){.kind = SL_PARTITIONING_MESSAGES_KEY};
    assert_int_equal(sl_send_messages_request_encode(&out, &in), -SL_ERR_INVALID_COMMAND);
    in.partitioning = (sl_partitioning_t){.kind = 9};
    assert_int_equal(sl_send_messages_request_encode(&out, &in), -SL_ERR_INVALID_COMMAND);
    in.partitioning = (sl_partitioning_t){.kind = SL_PARTITIONING_BALANCED};
    uint8_t small[64];
    sl_buf_t fixed;
    sl_buf_init_fixed(&fixed, small, sizeof(small));
    assert_int_equal(sl_send_messages_request_encode(&fixed, &in), -SL_ERR_COMMAND_LENGTH_ERROR);
    /* Round trip of a numeric / Balanced request. */
    sl_buf_reset(&out);
    assert_int_equal(sl_send_messages_request_encode(&out, &in), 0);
    sl_send_messages_request_t back;
    assert_int_equal(sl_send_messages_request_decode(sl_buf_span(&out), &back), 0);
    assert_true(sl_ident_eq(&back.stream_id, &in.stream_id));
    assert_true(sl_ident_eq(&back.topic_id, &in.topic_id));
    assert_int_equal(back.partitioning.kind, SL_PARTITIONING_BALANCED);
    assert_int_equal(back.messages_count, 2);
    assert_span_equal(back.batch, in.batch);
    sl_buf_free(&batch);
    sl_buf_free(&out);
}

static void test_send_reply(void **state)
{
    (void)state;
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    size_t n;
    /* commands.md 13.6: stream 0, topic 0, partition 1, base offset 1000. */
    uint8_t *golden = tu_hex("01 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 e8 03 00 00 "
                             "00 00 00 00",
                             &n);
    sl_send_messages_reply_t r;
    assert_int_equal(sl_send_messages_reply_decode(sl_span(golden, n), &arena, &r), 0);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.items[0].stream_id, 0);
    assert_int_equal(r.items[0].topic_id, 0);
    assert_int_equal(r.items[0].partition_id, 1);
    assert_int_equal(r.items[0].base_offset, 1000);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_send_messages_reply_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, golden, n);
    ASSERT_REPLY_PREFIXES_FAIL(send_messages, golden, n, 1);

    /* Empty payload and an explicit zero count: no confirmations. */
    assert_int_equal(sl_send_messages_reply_decode(sl_span(NULL, 0), &arena, &r), 0);
    assert_int_equal(r.count, 0);
    assert_null(r.items);
    static const uint8_t zero[4] = {0};
    assert_int_equal(sl_send_messages_reply_decode(sl_span(zero, 4), &arena, &r), 0);
    assert_int_equal(r.count, 0);
    /* Trailing bytes, and a count the bytes cannot hold (no allocation). */
    uint8_t *longer = malloc(n + 1);
    memcpy(longer, golden, n);
    longer[n] = 0;
    assert_int_equal(sl_send_messages_reply_decode(sl_span(longer, n + 1), &arena, &r),
                     -SL_ERR_INVALID_FORMAT);
    static const uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
    sl_arena_t tiny;
    sl_arena_init(&tiny, 64, 64);
    assert_int_equal(sl_send_messages_reply_decode(sl_span(huge, 8), &tiny, &r),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(tiny.used_bytes, 0);
    sl_arena_free(&tiny);

    /* Round trip of three confirmations. */
    sl_send_confirmation_t items[3] = {
        {1, 2, 3, 4}, {UINT32_MAX, 0, 7, UINT64_MAX}, {5, 6, 0, 1ull << 40}};
    sl_send_messages_reply_t in = {3, items};
    sl_buf_reset(&out);
    assert_int_equal(sl_send_messages_reply_encode(&out, &in), 0);
    assert_int_equal(out.len, 4 + 3 * 20);
    assert_int_equal(sl_send_messages_reply_decode(sl_buf_span(&out), &arena, &r), 0);
    assert_int_equal(r.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r.items[i].stream_id, items[i].stream_id);
        assert_int_equal(r.items[i].topic_id, items[i].topic_id);
        assert_int_equal(r.items[i].partition_id, items[i].partition_id);
        assert_int_equal(r.items[i].base_offset, items[i].base_offset);
    }
    sl_buf_free(&out);
    free(longer);
    free(golden);
    sl_arena_free(&arena);
}

/* --- 100 PollMessages -------------------------------------------------------------- */

/* Consumer 1 (numeric 1), stream 1, topic "t", partition 0 present, offset 5,
 * count 10, auto_commit. */
#define POLL_HEX                                                                                   \
    "01 01 04 01 00 00 00  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "                           \
    "01 05 00 00 00 00 00 00 00  0a 00 00 00  01"

static void test_poll_request(void **state)
{
    (void)state;
    size_t n;
    uint8_t *golden = tu_hex(POLL_HEX, &n);
    sl_poll_messages_request_t r;
    assert_int_equal(sl_poll_messages_request_decode(sl_span(golden, n), &r), 0);
    assert_int_equal(r.consumer.kind, SL_CONSUMER_SINGLE);
    assert_int_equal(r.consumer.id.number, 1);
    assert_int_equal(r.stream_id.number, 1);
    assert_span_str(r.topic_id.name, "t");
    assert_true(r.partition.present);
    assert_int_equal(r.partition.id, 0);
    assert_int_equal(r.strategy.kind, SL_STRATEGY_OFFSET);
    assert_int_equal(r.strategy.value, 5);
    assert_int_equal(r.count, 10);
    assert_true(r.auto_commit);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_poll_messages_request_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, golden, n);
    ASSERT_REQUEST_PREFIXES_FAIL(poll_messages, golden, n);

    /* A group consumer by name, timestamp strategy, no auto-commit. */
    sl_poll_messages_request_t in = {
        .consumer = {SL_CONSUMER_GROUP, sl_ident_name("workers")},
        .stream_id = sl_ident_name("orders"),
        .topic_id = sl_ident_number(4095),
        .partition = {true, 999999},
        .strategy = {SL_STRATEGY_TIMESTAMP, 1700000000000000ull},
        .count = UINT32_MAX,
    };
    sl_buf_reset(&out);
    assert_int_equal(sl_poll_messages_request_encode(&out, &in), 0);
    sl_poll_messages_request_t back;
    assert_int_equal(sl_poll_messages_request_decode(sl_buf_span(&out), &back), 0);
    assert_int_equal(back.consumer.kind, SL_CONSUMER_GROUP);
    assert_true(sl_ident_eq(&back.consumer.id, &in.consumer.id));
    assert_true(sl_ident_eq(&back.stream_id, &in.stream_id));
    assert_true(sl_ident_eq(&back.topic_id, &in.topic_id));
    assert_true(back.partition.present && back.partition.id == 999999);
    assert_int_equal(back.strategy.kind, SL_STRATEGY_TIMESTAMP);
    assert_int_equal(back.strategy.value, 1700000000000000ull);
    assert_int_equal(back.count, UINT32_MAX);
    assert_false(back.auto_commit);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_poll_messages_request_encode(&again, &back), 0);
    assert_span_equal(sl_buf_span(&again), sl_buf_span(&out));
    /* Bad values are not encoded. */
    in.strategy.kind = 6;
    assert_int_equal(sl_poll_messages_request_encode(&again, &in), -SL_ERR_INVALID_COMMAND);
    in.strategy.kind = SL_STRATEGY_FIRST;
    in.consumer.kind = 3;
    sl_buf_reset(&again);
    assert_int_equal(sl_poll_messages_request_encode(&again, &in), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&again);
    sl_buf_free(&out);
    free(golden);
}

static void test_poll_request_hostile(void **state)
{
    (void)state;
    const int cmd = -SL_ERR_INVALID_COMMAND;
    /* Trailing bytes are ignored; any non-zero auto_commit is true; a flag
     * other than 1 means no partition. */
    ASSERT_REQUEST_HEX(poll_messages, POLL_HEX " ff ff", 0);
    size_t n;
    uint8_t *b = tu_hex("01 01 04 01 00 00 00  01 04 01 00 00 00  02 01 74  02 07 00 00 00 "
                        "03 00 00 00 00 00 00 00 00  0a 00 00 00  05",
                        &n);
    sl_poll_messages_request_t r;
    assert_int_equal(sl_poll_messages_request_decode(sl_span(b, n), &r), 0);
    assert_true(r.auto_commit);
    assert_false(r.partition.present);
    assert_int_equal(r.partition.id, 0);
    free(b);
    /* Consumer kind, identifier kinds, strategy kinds. */
    ASSERT_REQUEST_HEX(poll_messages,
                       "03 01 04 01 00 00 00  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 03 04 01 00 00 00  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 01 04 01 00 00 00  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "
                       "00 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 01 04 01 00 00 00  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "
                       "06 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    /* Invalid UTF-8 and zero-length names in each string field. */
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 02 01 ff  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 02 00  01 04 01 00 00 00  02 01 74  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 01 04 01 00 00 00  02 02 c3 28  02 01 74  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 01 04 01 00 00 00  02 00  02 01 74  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 01 04 01 00 00 00  01 04 01 00 00 00  02 03 ed a0 80  "
                       "01 00 00 00 00 01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    ASSERT_REQUEST_HEX(poll_messages,
                       "01 01 04 01 00 00 00  01 04 01 00 00 00  02 00  01 00 00 00 00 "
                       "01 05 00 00 00 00 00 00 00  0a 00 00 00  01",
                       cmd);
    /* A name length past the end of the body. */
    ASSERT_REQUEST_HEX(poll_messages, "01 02 ff 61 62", cmd);
}

static void test_poll_reply_vector_e(void **state)
{
    (void)state;
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    size_t ne, nd;
    uint8_t *e = tu_vector("e_poll_reply_body_sliced.hex", &ne);
    uint8_t *d = tu_vector("d_stored_batch.hex", &nd);
    sl_poll_messages_reply_t r;
    assert_int_equal(sl_poll_messages_reply_decode(sl_span(e, ne), &arena, &r), 0);
    assert_int_equal(r.partition_id, 1);
    assert_int_equal(r.current_offset, 11);
    assert_int_equal(r.messages_count, 1);
    assert_true(r.records.ptr == e + 16 && r.records.len == 309);
    sl_record_iter_t records = sl_record_iter(r.records);
    sl_span_t rec;
    assert_true(sl_record_next(&records, &rec));
    sl_frame_iter_t frames = sl_frame_iter(rec);
    sl_message_t m;
    assert_true(sl_frame_next(&frames, &m));
    assert_int_equal(m.offset, 11);
    assert_int_equal(m.timestamp, 1700000000000123ull);
    assert_int_equal(m.origin_timestamp, 1700000000000000ull);
    assert_true(sl_u128_eq(m.id, (sl_u128_t){2, 0}));
    assert_span_str(m.payload, "world");
    assert_false(sl_frame_next(&frames, &m));
    assert_false(sl_record_next(&records, &rec));

    /* Encoding the decoded fields gives the same bytes. */
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_poll_messages_reply_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, e, ne);
    /* So does serving the poll from the stored batch d. */
    sl_buf_reset(&out);
    size_t at = sl_poll_messages_reply_begin(&out, 1, 11);
    uint32_t taken;
    assert_int_equal(sl_batch_slice_offset(&out, sl_span(d, nd), 11, 1, &taken), 0);
    sl_buf_patch_u32(&out, at, taken);
    assert_bytes_equal(out.data, out.len, e, ne);
    sl_buf_free(&out);
    free(d);
    free(e);
    sl_arena_free(&arena);
}

static int poll_reply_rc(const uint8_t *p, size_t n)
{
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    uint8_t *copy = dup_bytes(p, n);
    sl_poll_messages_reply_t r;
    int rc = sl_poll_messages_reply_decode(sl_span(copy, n), &arena, &r);
    free(copy);
    sl_arena_free(&arena);
    return rc;
}

static void test_poll_reply_hostile(void **state)
{
    (void)state;
    const int fmt = -SL_ERR_INVALID_FORMAT;
    size_t ne, nd;
    uint8_t *e = tu_vector("e_poll_reply_body_sliced.hex", &ne);
    uint8_t *d = tu_vector("d_stored_batch.hex", &nd);
    ASSERT_REPLY_PREFIXES_FAIL(poll_messages, e, ne, 0);
    uint8_t *b = malloc(ne + nd + 16);

    /* The empty result, the re-sync sentinel; a count with no records. */
    memset(b, 0, 16);
    assert_int_equal(poll_reply_rc(b, 16), 0);
    sl_store_u32(b, SL_POLL_RESYNC_PARTITION);
    assert_int_equal(poll_reply_rc(b, 16), 0);
    sl_store_u32(b + 12, 1);
    assert_int_equal(poll_reply_rc(b, 16), fmt);
    /* messages_count off by one either way, or huge. */
    memcpy(b, e, ne);
    sl_store_u32(b + 12, 2);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    sl_store_u32(b + 12, 0);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    sl_store_u32(b + 12, UINT32_MAX);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    /* batch_length below 256, past the end, and bytes after the last record. */
    memcpy(b, e, ne);
    sl_store_u64(b + 16 + SL_BATCH_OFF_LENGTH, 255);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    sl_store_u64(b + 16 + SL_BATCH_OFF_LENGTH, 310);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    sl_store_u64(b + 16 + SL_BATCH_OFF_LENGTH, UINT64_MAX);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    memcpy(b, e, ne);
    memset(b + ne, 0, 10);
    assert_int_equal(poll_reply_rc(b, ne + 10), fmt);
    /* Frames that do not tile the record, a frame reserved field set. */
    memcpy(b, e, ne);
    sl_store_u32(b + 16 + SL_BATCH_OFF_COUNT, 2);
    sl_store_u32(b + 12, 2);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    memcpy(b, e, ne);
    sl_store_u32(b + 16 + 256 + SL_FRAME_OFF_PAYLOAD_LENGTH, 6);
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    memcpy(b, e, ne);
    b[16 + 256 + SL_FRAME_OFF_RESERVED + 3] = 1;
    assert_int_equal(poll_reply_rc(b, ne), fmt);
    /* Checksums are passed through as served, not verified. */
    memcpy(b, e, ne);
    b[16 + 256 + 50] ^= 1;
    assert_int_equal(poll_reply_rc(b, ne), 0);
    /* Two records, the whole stored batch then the slice: 3 messages. */
    memcpy(b, e, ne);
    memcpy(b + ne, d, nd);
    sl_store_u32(b + 12, 3);
    assert_int_equal(poll_reply_rc(b, ne + nd), 0);
    sl_store_u32(b + 12, 2);
    assert_int_equal(poll_reply_rc(b, ne + nd), fmt);
    free(b);
    free(d);
    free(e);
}

/* --- 102 FlushUnsavedBuffer ---------------------------------------------------------------- */

static void test_flush_unsaved_buffer(void **state)
{
    (void)state;
    size_t n;
    uint8_t *golden = tu_hex("02 01 73 01 04 02 00 00 00 07 00 00 00 01", &n);
    sl_flush_unsaved_buffer_request_t r;
    assert_int_equal(sl_flush_unsaved_buffer_request_decode(sl_span(golden, n), &r), 0);
    assert_span_str(r.stream_id.name, "s");
    assert_int_equal(r.topic_id.number, 2);
    assert_int_equal(r.partition_id, 7);
    assert_true(r.fsync);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_flush_unsaved_buffer_request_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, golden, n);
    ASSERT_REQUEST_PREFIXES_FAIL(flush_unsaved_buffer, golden, n);
    ASSERT_REQUEST_HEX(flush_unsaved_buffer, "02 01 73 01 04 02 00 00 00 07 00 00 00 00 ee", 0);
    ASSERT_REQUEST_HEX(flush_unsaved_buffer, "02 01 73 01 04 02 00 00 00 07 00 00 00 02", 0);
    ASSERT_REQUEST_HEX(flush_unsaved_buffer, "05 01 73 01 04 02 00 00 00 07 00 00 00 01",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(flush_unsaved_buffer, "02 01 80 01 04 02 00 00 00 07 00 00 00 01",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(flush_unsaved_buffer, "02 00 01 04 02 00 00 00 07 00 00 00 01",
                       -SL_ERR_INVALID_COMMAND);
    r.fsync = false;
    r.topic_id = sl_ident_name("t");
    sl_buf_reset(&out);
    assert_int_equal(sl_flush_unsaved_buffer_request_encode(&out, &r), 0);
    sl_flush_unsaved_buffer_request_t back;
    assert_int_equal(sl_flush_unsaved_buffer_request_decode(sl_buf_span(&out), &back), 0);
    assert_true(sl_ident_eq(&back.topic_id, &r.topic_id));
    assert_false(back.fsync);
    r.stream_id.kind = 0;
    assert_int_equal(sl_flush_unsaved_buffer_request_encode(&out, &r), -SL_ERR_INVALID_COMMAND);
    /* The reply is empty. */
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 4096);
    sl_flush_unsaved_buffer_reply_t reply;
    assert_int_equal(sl_flush_unsaved_buffer_reply_decode(sl_span(NULL, 0), &arena, &reply), 0);
    assert_int_equal(sl_flush_unsaved_buffer_reply_decode(sl_span(golden, 1), &arena, &reply),
                     -SL_ERR_INVALID_FORMAT);
    sl_buf_reset(&out);
    assert_int_equal(sl_flush_unsaved_buffer_reply_encode(&out, &reply), 0);
    assert_int_equal(out.len, 0);
    sl_arena_free(&arena);
    sl_buf_free(&out);
    free(golden);
}

/* --- 120 GetConsumerOffset ------------------------------------------------------------------ */

#define TARGET_HEX "02 01 04 09 00 00 00  02 01 73  01 04 03 00 00 00  01 02 00 00 00"

static void test_get_consumer_offset(void **state)
{
    (void)state;
    size_t n;
    uint8_t *golden = tu_hex(TARGET_HEX, &n);
    sl_get_consumer_offset_request_t r;
    assert_int_equal(sl_get_consumer_offset_request_decode(sl_span(golden, n), &r), 0);
    assert_int_equal(r.consumer.kind, SL_CONSUMER_GROUP);
    assert_int_equal(r.consumer.id.number, 9);
    assert_span_str(r.stream_id.name, "s");
    assert_int_equal(r.topic_id.number, 3);
    assert_true(r.partition.present && r.partition.id == 2);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_get_consumer_offset_request_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, golden, n);
    ASSERT_REQUEST_PREFIXES_FAIL(get_consumer_offset, golden, n);
    ASSERT_REQUEST_HEX(get_consumer_offset, TARGET_HEX " 01 02 03", 0);
    ASSERT_REQUEST_HEX(get_consumer_offset,
                       "00 01 04 09 00 00 00  02 01 73  01 04 03 00 00 00  01 02 00 00 00",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(get_consumer_offset,
                       "01 02 02 c3 28  02 01 73  01 04 03 00 00 00  01 02 00 00 00",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(get_consumer_offset, "01 02 01 61  02 01 73  02 00  01 02 00 00 00",
                       -SL_ERR_INVALID_COMMAND);

    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 4096);
    sl_get_consumer_offset_reply_t reply = {true, 2, 100, 42}, back;
    sl_buf_reset(&out);
    assert_int_equal(sl_get_consumer_offset_reply_encode(&out, &reply), 0);
    size_t gn;
    uint8_t *reply_golden =
        tu_hex("02 00 00 00 64 00 00 00 00 00 00 00 2a 00 00 00 00 00 00 00", &gn);
    assert_bytes_equal(out.data, out.len, reply_golden, gn);
    assert_int_equal(sl_get_consumer_offset_reply_decode(sl_buf_span(&out), &arena, &back), 0);
    assert_true(back.found);
    assert_int_equal(back.partition_id, 2);
    assert_int_equal(back.current_offset, 100);
    assert_int_equal(back.stored_offset, 42);
    ASSERT_REPLY_PREFIXES_FAIL(get_consumer_offset, reply_golden, gn, 1);
    uint8_t longer[21] = {0};
    assert_int_equal(sl_get_consumer_offset_reply_decode(sl_span(longer, 21), &arena, &back),
                     -SL_ERR_INVALID_FORMAT);
    /* Nothing stored: an empty payload both ways. */
    assert_int_equal(sl_get_consumer_offset_reply_decode(sl_span(NULL, 0), &arena, &back), 0);
    assert_false(back.found);
    reply.found = false;
    sl_buf_reset(&out);
    assert_int_equal(sl_get_consumer_offset_reply_encode(&out, &reply), 0);
    assert_int_equal(out.len, 0);
    sl_arena_free(&arena);
    sl_buf_free(&out);
    free(reply_golden);
    free(golden);
}

/* --- 121 StoreConsumerOffset / 122 DeleteConsumerOffset --------------------------------------- */

static void test_store_consumer_offset(void **state)
{
    (void)state;
    size_t n;
    uint8_t *golden = tu_hex(TARGET_HEX " 0a 00 00 00 00 00 00 00 01", &n);
    sl_store_consumer_offset_request_t r;
    assert_int_equal(sl_store_consumer_offset_request_decode(sl_span(golden, n), &r), 0);
    assert_int_equal(r.consumer.id.number, 9);
    assert_true(r.partition.present && r.partition.id == 2);
    assert_int_equal(r.offset, 10);
    assert_int_equal(r.ack, SL_ACK_QUORUM);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_store_consumer_offset_request_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, golden, n);
    /* The ack byte is mandatory: every prefix fails, the full body with
     * extra bytes passes; acks other than 0 and 1 are undecodable. */
    ASSERT_REQUEST_PREFIXES_FAIL(store_consumer_offset, golden, n);
    ASSERT_REQUEST_HEX(store_consumer_offset, TARGET_HEX " 0a 00 00 00 00 00 00 00 00 99", 0);
    ASSERT_REQUEST_HEX(store_consumer_offset, TARGET_HEX " 0a 00 00 00 00 00 00 00 02",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(store_consumer_offset, TARGET_HEX " 0a 00 00 00 00 00 00 00 ff",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(store_consumer_offset,
                       "01 02 00  02 01 73  01 04 03 00 00 00  01 02 00 00 00 "
                       "0a 00 00 00 00 00 00 00 01",
                       -SL_ERR_INVALID_COMMAND);
    /* An absent partition decodes (the server answers 20). */
    ASSERT_REQUEST_HEX(store_consumer_offset,
                       "01 01 04 09 00 00 00  02 01 73  01 04 03 00 00 00  00 00 00 00 00 "
                       "0a 00 00 00 00 00 00 00 00",
                       0);
    sl_store_consumer_offset_request_t in = {
        .consumer = {SL_CONSUMER_SINGLE, sl_ident_name("reader")},
        .stream_id = sl_ident_number(0),
        .topic_id = sl_ident_name("t"),
        .partition = {true, 5},
        .offset = UINT64_MAX,
        .ack = SL_ACK_NONE,
    };
    sl_store_consumer_offset_request_t back;
    sl_buf_reset(&out);
    assert_int_equal(sl_store_consumer_offset_request_encode(&out, &in), 0);
    assert_int_equal(sl_store_consumer_offset_request_decode(sl_buf_span(&out), &back), 0);
    assert_true(sl_ident_eq(&back.consumer.id, &in.consumer.id));
    assert_true(sl_ident_eq(&back.stream_id, &in.stream_id));
    assert_true(sl_ident_eq(&back.topic_id, &in.topic_id));
    assert_int_equal(back.partition.id, 5);
    assert_int_equal(back.offset, UINT64_MAX);
    assert_int_equal(back.ack, SL_ACK_NONE);
    in.ack = 2;
    assert_int_equal(sl_store_consumer_offset_request_encode(&out, &in), -SL_ERR_INVALID_COMMAND);
    /* Success payload is empty; anything else is refused. */
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 4096);
    sl_store_consumer_offset_reply_t reply;
    assert_int_equal(sl_store_consumer_offset_reply_decode(sl_span(NULL, 0), &arena, &reply), 0);
    assert_int_equal(sl_store_consumer_offset_reply_decode(sl_span(golden, 4), &arena, &reply),
                     -SL_ERR_INVALID_FORMAT);
    sl_arena_free(&arena);
    sl_buf_free(&out);
    free(golden);
}

static void test_delete_consumer_offset(void **state)
{
    (void)state;
    size_t n;
    uint8_t *golden = tu_hex(TARGET_HEX " 00", &n);
    sl_delete_consumer_offset_request_t r;
    assert_int_equal(sl_delete_consumer_offset_request_decode(sl_span(golden, n), &r), 0);
    assert_int_equal(r.consumer.kind, SL_CONSUMER_GROUP);
    assert_int_equal(r.topic_id.number, 3);
    assert_int_equal(r.ack, SL_ACK_NONE);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    assert_int_equal(sl_delete_consumer_offset_request_encode(&out, &r), 0);
    assert_bytes_equal(out.data, out.len, golden, n);
    ASSERT_REQUEST_PREFIXES_FAIL(delete_consumer_offset, golden, n);
    ASSERT_REQUEST_HEX(delete_consumer_offset, TARGET_HEX " 01 77", 0);
    ASSERT_REQUEST_HEX(delete_consumer_offset, TARGET_HEX " 02", -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(delete_consumer_offset,
                       "02 01 04 09 00 00 00  02 01 73  01 05 03 00 00 00 00  01 02 00 00 00 00",
                       -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_HEX(delete_consumer_offset,
                       "02 01 04 09 00 00 00  02 01 fe  01 04 03 00 00 00  01 02 00 00 00 00",
                       -SL_ERR_INVALID_COMMAND);
    sl_delete_consumer_offset_request_t in = {
        .consumer = {SL_CONSUMER_SINGLE, sl_ident_number(77)},
        .stream_id = sl_ident_name("orders"),
        .topic_id = sl_ident_name("events"),
        .partition = {true, 0},
        .ack = SL_ACK_QUORUM,
    };
    sl_delete_consumer_offset_request_t back;
    sl_buf_reset(&out);
    assert_int_equal(sl_delete_consumer_offset_request_encode(&out, &in), 0);
    assert_int_equal(sl_delete_consumer_offset_request_decode(sl_buf_span(&out), &back), 0);
    assert_int_equal(back.consumer.id.number, 77);
    assert_true(sl_ident_eq(&back.stream_id, &in.stream_id));
    assert_true(sl_ident_eq(&back.topic_id, &in.topic_id));
    assert_true(back.partition.present);
    assert_int_equal(back.ack, SL_ACK_QUORUM);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_delete_consumer_offset_request_encode(&again, &back), 0);
    assert_span_equal(sl_buf_span(&again), sl_buf_span(&out));
    in.ack = 7;
    assert_int_equal(sl_delete_consumer_offset_request_encode(&again, &in),
                     -SL_ERR_INVALID_COMMAND);
    sl_arena_t arena;
    sl_arena_init(&arena, 1024, 4096);
    sl_delete_consumer_offset_reply_t reply;
    assert_int_equal(sl_delete_consumer_offset_reply_decode(sl_span(NULL, 0), &arena, &reply), 0);
    assert_int_equal(sl_delete_consumer_offset_reply_decode(sl_span(golden, 1), &arena, &reply),
                     -SL_ERR_INVALID_FORMAT);
    sl_arena_free(&arena);
    sl_buf_free(&again);
    sl_buf_free(&out);
    free(golden);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_vector_c_decode),
        cmocka_unit_test(test_send_vector_c_encode),
        cmocka_unit_test(test_send_vector_c2_frame),
        cmocka_unit_test(test_send_metadata_checks),
        cmocka_unit_test(test_send_batch_checks),
        cmocka_unit_test(test_send_encode_errors),
        cmocka_unit_test(test_send_reply),
        cmocka_unit_test(test_poll_request),
        cmocka_unit_test(test_poll_request_hostile),
        cmocka_unit_test(test_poll_reply_vector_e),
        cmocka_unit_test(test_poll_reply_hostile),
        cmocka_unit_test(test_flush_unsaved_buffer),
        cmocka_unit_test(test_get_consumer_offset),
        cmocka_unit_test(test_store_consumer_offset),
        cmocka_unit_test(test_delete_consumer_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
