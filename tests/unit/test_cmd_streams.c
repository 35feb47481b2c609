/* Stream codecs: commands.md 13.1 (GetStreams), 13.4 (DeleteStream success),
 * 13.5 (CreateStream rejection frame), round trips of all six stems, and
 * hostile input for every decoder. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "wire/cmd_streams.h"
#include "wire/header.h"

static const uint64_t ts = 1700000000000000ull;

static const char get_streams_hex[] = "00 00 00 00 00 40 1e 18 24 0a 06 00 01 00 00 00 "
                                      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                      "06 6f 72 64 65 72 73 00 00 00 00";

static const char reject_frame_hex[] = "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "0c 01 00 00 00 00 00 00 00 00 00 00 08 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "10 32 54 76 98 ba dc fe ef cd ab 89 67 45 23 01 "
                                       "2a 00 00 00 00 00 00 00 2a 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00 "
                                       "80 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                       "01 00 00 00 00 00 00 00 f4 03 00 00";

/* --- fixtures ------------------------------------------------------------------ */

typedef struct fixture {
    sl_arena_t arena;
    sl_buf_t buf;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    /* A small arena: a hostile count must fail before it allocates. */
    sl_arena_init(&f->arena, 4096, 256 * 1024);
    sl_buf_init(&f->buf, 1 << 20);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    sl_arena_free(&f->arena);
    sl_buf_free(&f->buf);
    free(f);
    return 0;
}

static void assert_stream_header_equal(const sl_stream_header_t *a, const sl_stream_header_t *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->created_at, b->created_at);
    assert_int_equal(a->topics_count, b->topics_count);
    assert_int_equal(a->size_bytes, b->size_bytes);
    assert_int_equal(a->messages_count, b->messages_count);
    assert_span_equal(a->name, b->name);
    assert_span_equal(a->options, b->options);
}

static void assert_topic_header_equal(const sl_topic_header_t *a, const sl_topic_header_t *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->created_at, b->created_at);
    assert_int_equal(a->partitions_count, b->partitions_count);
    assert_true(a->message_expiry == b->message_expiry);
    assert_int_equal(a->compression_algorithm, b->compression_algorithm);
    assert_true(a->max_topic_size == b->max_topic_size);
    assert_int_equal(a->size_bytes, b->size_bytes);
    assert_int_equal(a->messages_count, b->messages_count);
    assert_span_equal(a->name, b->name);
    assert_span_equal(a->options, b->options);
    assert_span_equal(a->derived_options, b->derived_options);
}

static const sl_stream_header_t orders = {.id = 0,
                                          .created_at = 1700000000000000ull,
                                          .topics_count = 1,
                                          .name = {(const uint8_t *)"orders", 6}};

/* --- 13.1 ------------------------------------------------------------------------ */

static void test_get_streams_golden(void **state)
{
    fixture_t *f = *state;
    size_t n;
    uint8_t *want = tu_hex(get_streams_hex, &n);
    assert_int_equal(n, 43);
    sl_get_streams_reply_t in = {1, &orders}, got;
    assert_int_equal(sl_get_streams_reply_encode(&f->buf, &in), 0);
    assert_bytes_equal(f->buf.data, f->buf.len, want, n);
    assert_int_equal(sl_get_streams_reply_decode(sl_span(want, n), &f->arena, &got), 0);
    assert_int_equal(got.count, 1);
    assert_int_equal(got.items[0].id, 0);
    assert_int_equal(got.items[0].created_at, ts);
    assert_int_equal(got.items[0].topics_count, 1);
    assert_int_equal(got.items[0].size_bytes, 0);
    assert_int_equal(got.items[0].messages_count, 0);
    assert_span_str(got.items[0].name, "orders");
    assert_int_equal(got.items[0].options.len, 0);

    /* Empty payload: no streams. Any other prefix or a trailing byte: 4. */
    assert_int_equal(sl_get_streams_reply_decode(sl_span(want, 0), &f->arena, &got), 0);
    assert_int_equal(got.count, 0);
    assert_null(got.items);
    for (size_t len = 1; len < n; len++)
        assert_int_equal(sl_get_streams_reply_decode(sl_span(want, len), &f->arena, &got),
                         -SL_ERR_INVALID_FORMAT);
    uint8_t longer[64];
    memcpy(longer, want, n);
    longer[n] = 0;
    assert_int_equal(sl_get_streams_reply_decode(sl_span(longer, n + 1), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
    free(want);
}

static void test_get_streams_round_trip(void **state)
{
    fixture_t *f = *state;
    sl_stream_header_t items[3] = {orders, orders, orders};
    items[1].id = 1;
    items[1].name = sl_span_str("payments");
    items[1].size_bytes = 1 << 20;
    items[1].messages_count = 999;
    items[2].id = 7;
    items[2].name = sl_span_str("\xc3\xa9v\xc3\xa9nements"); /* UTF-8 */
    items[2].topics_count = 0;
    sl_get_streams_reply_t in = {3, items}, got;
    assert_int_equal(sl_get_streams_reply_encode(&f->buf, &in), 0);
    assert_int_equal(sl_get_streams_reply_decode(sl_buf_span(&f->buf), &f->arena, &got), 0);
    assert_int_equal(got.count, 3);
    for (int i = 0; i < 3; i++)
        assert_stream_header_equal(&got.items[i], &items[i]);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_get_streams_reply_encode(&again, &got), 0);
    assert_bytes_equal(again.data, again.len, f->buf.data, f->buf.len);
    sl_buf_free(&again);

    /* Encoders refuse an empty name and a count without items. */
    sl_buf_reset(&f->buf);
    items[1].name = sl_span(NULL, 0);
    assert_int_equal(sl_get_streams_reply_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
    sl_get_streams_reply_t no_items = {2, NULL};
    assert_int_equal(sl_get_streams_reply_encode(&f->buf, &no_items), -SL_ERR_INVALID_COMMAND);
}

static void test_stream_header_hostile(void **state)
{
    fixture_t *f = *state;
    size_t n;
    uint8_t *v = tu_hex(get_streams_hex, &n);
    struct {
        size_t at;
        uint8_t value;
    } mutations[] = {
        {32, 0},    /* name length 0 */
        {32, 7},    /* name runs into the options length */
        {32, 0xff}, /* name beyond the payload */
        {33, 0xff}, /* name not UTF-8 */
        {34, 0xc0}, /* overlong lead byte */
        {39, 1},    /* options length beyond the payload */
        {42, 0x80}, /* options length huge */
    };
    sl_get_streams_reply_t got;
    for (size_t i = 0; i < SL_ARRAY_LEN(mutations); i++) {
        uint8_t m[64];
        memcpy(m, v, n);
        m[mutations[i].at] = mutations[i].value;
        if (sl_get_streams_reply_decode(sl_span(m, n), &f->arena, &got) != -SL_ERR_INVALID_FORMAT)
            fail_msg("mutation %zu decoded", i);
    }
    /* A malformed options block inside an otherwise fine header. */
    uint8_t m[64];
    memcpy(m, v, 39);
    const uint8_t bad_block[] = {6, 0, 0, 0, 2, 1, 0, 0, 0, 'k'};
    memcpy(m + 39, bad_block, sizeof(bad_block));
    assert_int_equal(
        sl_get_streams_reply_decode(sl_span(m, 39 + sizeof(bad_block)), &f->arena, &got),
        -SL_ERR_INVALID_FORMAT);
    free(v);
}

/* --- StreamDetails (GetStream, CreateStream reply) ---------------------------------- */

typedef struct details_fixture {
    uint8_t block[64];
    sl_topic_header_t topics[2];
    sl_stream_details_t details;
} details_fixture_t;

static void build_details(details_fixture_t *d)
{
    sl_buf_t k;
    sl_buf_init_fixed(&k, d->block, sizeof(d->block));
    assert_true(sl_tlv_put_pair(&k, "enforce_fsync", SL_KIND_BOOL, sl_span("\x01", 1)));
    for (uint32_t i = 0; i < 2; i++)
        d->topics[i] = (sl_topic_header_t){
            .id = i,
            .created_at = ts + i,
            .partitions_count = 3 * i,
            .message_expiry = i ? 5000000 : UINT64_MAX,
            .compression_algorithm = (uint8_t)(1 + i),
            .max_topic_size = UINT64_MAX,
            .size_bytes = 100 * i,
            .messages_count = 10 * i,
            .name = sl_span_str(i ? "b" : "a-topic"),
            .options = sl_buf_span(&k),
            .derived_options = sl_span(NULL, 0),
        };
    d->details = (sl_stream_details_t){
        .header = {.id = 5,
                   .created_at = ts,
                   .topics_count = 2,
                   .size_bytes = 100,
                   .messages_count = 10,
                   .name = sl_span_str("orders")},
        .topics = d->topics,
    };
}

static void assert_details_equal(const sl_stream_details_t *a, const sl_stream_details_t *b)
{
    assert_stream_header_equal(&a->header, &b->header);
    for (uint32_t i = 0; i < a->header.topics_count; i++)
        assert_topic_header_equal(&a->topics[i], &b->topics[i]);
}

static void test_get_stream_reply(void **state)
{
    fixture_t *f = *state;
    details_fixture_t d;
    build_details(&d);
    sl_get_stream_reply_t in = {true, d.details}, got;
    assert_int_equal(sl_get_stream_reply_encode(&f->buf, &in), 0);
    sl_span_t p = sl_buf_span(&f->buf);
    assert_int_equal(sl_get_stream_reply_decode(p, &f->arena, &got), 0);
    assert_true(got.found);
    assert_details_equal(&got.stream, &d.details);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_get_stream_reply_encode(&again, &got), 0);
    assert_bytes_equal(again.data, again.len, p.ptr, p.len);
    sl_buf_free(&again);

    /* Empty: not found; other prefixes and trailing bytes: 4. */
    assert_int_equal(sl_get_stream_reply_decode(sl_span(p.ptr, 0), &f->arena, &got), 0);
    assert_false(got.found);
    for (size_t len = 1; len < p.len; len++)
        assert_int_equal(sl_get_stream_reply_decode(sl_span(p.ptr, len), &f->arena, &got),
                         -SL_ERR_INVALID_FORMAT);
    uint8_t *m = malloc(p.len + 1);
    memcpy(m, p.ptr, p.len);
    m[p.len] = 0;
    assert_int_equal(sl_get_stream_reply_decode(sl_span(m, p.len + 1), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
    /* topics_count disagreeing with the bytes, or far beyond them. */
    const uint32_t counts[] = {0, 1, 3, 0xffffffffu};
    for (size_t i = 0; i < SL_ARRAY_LEN(counts); i++) {
        memcpy(m, p.ptr, p.len);
        sl_store_u32(m + 12, counts[i]);
        assert_int_equal(sl_get_stream_reply_decode(sl_span(m, p.len), &f->arena, &got),
                         -SL_ERR_INVALID_FORMAT);
    }
    /* A bad compression code in a topic. */
    memcpy(m, p.ptr, p.len);
    size_t topic0 = SL_STREAM_HEADER_SIZE_MIN + 5;
    assert_int_equal(m[topic0 + 24], 1);
    m[topic0 + 24] = 9;
    assert_int_equal(sl_get_stream_reply_decode(sl_span(m, p.len), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
    free(m);

    /* Not found encodes to nothing. */
    sl_get_stream_reply_t missing = {.found = false};
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_get_stream_reply_encode(&f->buf, &missing), 0);
    assert_int_equal(f->buf.len, 0);
    in.stream.topics = NULL;
    assert_int_equal(sl_get_stream_reply_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
}

static void test_create_stream_reply(void **state)
{
    fixture_t *f = *state;
    sl_create_stream_reply_t in = {.stream = {.header = orders}}, got;
    in.stream.header.topics_count = 0;
    in.stream.header.id = 3;
    sl_result_put_ok(&f->buf);
    assert_int_equal(sl_create_stream_reply_encode(&f->buf, &in), 0);
    assert_int_equal(f->buf.len, 4 + 38 + 5);
    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_buf_span(&f->buf), &result, &payload), 0);
    assert_int_equal(result, 0);
    assert_int_equal(sl_create_stream_reply_decode(payload, &f->arena, &got), 0);
    assert_details_equal(&got.stream, &in.stream);
    /* The committed payload is never empty. */
    assert_int_equal(sl_create_stream_reply_decode(sl_span(NULL, 0), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
}

/* --- 13.5 and 13.4 ------------------------------------------------------------------- */

static void test_create_stream_rejection_frame(void **state)
{
    fixture_t *f = *state;
    size_t n;
    uint8_t *want = tu_hex(reject_frame_hex, &n);
    assert_int_equal(n, 268);
    sl_reply_header_t h = {
        .size = 268,
        .client = {0xfedcba9876543210ull, 0x0123456789abcdefull},
        .op = 42,
        .commit = 42,
        .request = 7,
        .operation = SL_OP_CREATE_STREAM,
        .status = 0,
    };
    uint8_t *frame = sl_buf_extend(&f->buf, SL_HEADER_SIZE);
    sl_reply_header_encode(frame, &h);
    sl_result_put_error(&f->buf, SL_ERR_STREAM_NAME_ALREADY_EXISTS);
    assert_bytes_equal(f->buf.data, f->buf.len, want, n);

    sl_reply_header_t got;
    assert_int_equal(sl_reply_header_decode(want, SL_FRAME_MAX_DEFAULT, &got), 0);
    assert_int_equal(got.operation, 128);
    assert_true(sl_op_result_framed(got.operation));
    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_span(want + 256, n - 256), &result, &payload), 0);
    assert_int_equal(result, 1012);
    assert_int_equal(payload.len, 0);
    free(want);
}

static void test_delete_stream_success(void **state)
{
    fixture_t *f = *state;
    /* size 260, operation 130, status 0, body `00 00 00 00`. */
    sl_reply_header_t h = {.size = 260, .client = {1, 0}, .operation = SL_OP_DELETE_STREAM};
    uint8_t *frame = sl_buf_extend(&f->buf, SL_HEADER_SIZE);
    sl_reply_header_encode(frame, &h);
    sl_result_put_ok(&f->buf);
    sl_delete_stream_reply_t empty = {0};
    assert_int_equal(sl_delete_stream_reply_encode(&f->buf, &empty), 0);
    assert_int_equal(f->buf.len, 260);
    assert_int_equal(sl_load_u32(f->buf.data + 48), 260);
    assert_int_equal(f->buf.data[208], 130);
    assert_int_equal(sl_load_u32(f->buf.data + 216), 0);
    const uint8_t body[4] = {0};
    assert_bytes_equal(f->buf.data + 256, 4, body, 4);

    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_span(f->buf.data + 256, 4), &result, &payload), 0);
    assert_int_equal(result, 0);
    assert_int_equal(sl_delete_stream_reply_decode(payload, &f->arena, &empty), 0);
    assert_int_equal(sl_delete_stream_reply_decode(sl_span(body, 1), &f->arena, &empty),
                     -SL_ERR_INVALID_FORMAT);
    /* The other payload-less replies behave the same. */
    assert_int_equal(sl_update_stream_reply_decode(payload, &f->arena, &empty), 0);
    assert_int_equal(sl_purge_stream_reply_decode(payload, &f->arena, &empty), 0);
    assert_int_equal(sl_update_stream_reply_decode(sl_span(body, 4), &f->arena, &empty),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_purge_stream_reply_decode(sl_span(body, 2), &f->arena, &empty),
                     -SL_ERR_INVALID_FORMAT);
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_update_stream_reply_encode(&f->buf, &empty), 0);
    assert_int_equal(sl_purge_stream_reply_encode(&f->buf, &empty), 0);
    assert_int_equal(f->buf.len, 0);
}

/* --- requests ------------------------------------------------------------------------ */

static void test_stream_ref_requests(void **state)
{
    fixture_t *f = *state;
    int (*enc[])(sl_buf_t *, const sl_stream_ref_t *) = {sl_get_stream_request_encode,
                                                         sl_delete_stream_request_encode,
                                                         sl_purge_stream_request_encode};
    int (*dec[])(sl_span_t, sl_stream_ref_t *) = {sl_get_stream_request_decode,
                                                  sl_delete_stream_request_decode,
                                                  sl_purge_stream_request_decode};
    const sl_ident_t ids[] = {sl_ident_number(0), sl_ident_number(0xfffff),
                              sl_ident_name("orders")};
    for (size_t s = 0; s < 3; s++) {
        for (size_t i = 0; i < SL_ARRAY_LEN(ids); i++) {
            sl_stream_ref_t in = {ids[i]}, out;
            sl_buf_reset(&f->buf);
            assert_int_equal(enc[s](&f->buf, &in), 0);
            sl_span_t body = sl_buf_span(&f->buf);
            assert_int_equal(dec[s](body, &out), 0);
            assert_true(sl_ident_eq(&out.stream_id, &in.stream_id));
            for (size_t len = 0; len < body.len; len++)
                assert_int_equal(dec[s](sl_span(body.ptr, len), &out), -SL_ERR_INVALID_COMMAND);
            /* Trailing bytes are ignored. */
            sl_put_u32(&f->buf, 0xdeadbeef);
            assert_int_equal(dec[s](sl_buf_span(&f->buf), &out), 0);
            assert_true(sl_ident_eq(&out.stream_id, &in.stream_id));
        }
        /* Bad kinds, lengths and UTF-8. */
        static const char *const bad[] = {"00 04 00 00 00 00",
                                          "03 04 00 00 00 00",
                                          "01 08 00 00 00 00 00 00 00 00",
                                          "01 00",
                                          "02 00",
                                          "02 02 c3 28",
                                          "02 01 80"};
        for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
            size_t n;
            uint8_t *b = tu_hex(bad[i], &n);
            sl_stream_ref_t out;
            assert_int_equal(dec[s](sl_span(b, n), &out), -SL_ERR_INVALID_COMMAND);
            free(b);
        }
        sl_stream_ref_t unencodable = {{.kind = 9}};
        assert_int_equal(enc[s](&f->buf, &unencodable), -SL_ERR_INVALID_COMMAND);
    }
}

static void test_get_streams_request(void **state)
{
    fixture_t *f = *state;
    sl_get_streams_request_t in = {0}, out;
    assert_int_equal(sl_get_streams_request_encode(&f->buf, &in), 0);
    assert_int_equal(f->buf.len, 0);
    assert_int_equal(sl_get_streams_request_decode(sl_span(NULL, 0), &out), 0);
    const uint8_t junk[3] = {1, 2, 3};
    assert_int_equal(sl_get_streams_request_decode(sl_span(junk, 3), &out), 0);
}

static void test_create_stream_request(void **state)
{
    fixture_t *f = *state;
    sl_create_stream_request_t in = {.name = sl_span_str("orders")}, out;
    assert_int_equal(sl_create_stream_request_encode(&f->buf, &in), 0);
    const uint8_t want[] = {6, 'o', 'r', 'd', 'e', 'r', 's'};
    assert_bytes_equal(f->buf.data, f->buf.len, want, sizeof(want));
    assert_int_equal(sl_create_stream_request_decode(sl_buf_span(&f->buf), &out), 0);
    assert_span_str(out.name, "orders");
    assert_int_equal(out.options.len, 0);
    for (size_t len = 0; len < sizeof(want); len++)
        assert_int_equal(sl_create_stream_request_decode(sl_span(want, len), &out),
                         -SL_ERR_INVALID_COMMAND);

    /* Any key, even one the topic catalog knows, is 4041; the encoder sends
     * it (the catalog is the server's to apply). */
    uint8_t block[64];
    sl_buf_t k;
    sl_buf_init_fixed(&k, block, sizeof(block));
    assert_true(sl_tlv_put_pair(&k, "segment_size", SL_KIND_STRING, sl_span_str("1GiB")));
    in.options = sl_buf_span(&k);
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_create_stream_request_encode(&f->buf, &in), 0);
    sl_span_t body = sl_buf_span(&f->buf);
    assert_int_equal(sl_create_stream_request_decode(body, &out), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_span_equal(out.options, in.options);
    /* Prefixes: the bare name decodes; a cut block is 3. */
    for (size_t len = 0; len < body.len; len++) {
        int rc = sl_create_stream_request_decode(sl_span(body.ptr, len), &out);
        assert_int_equal(rc, len == sizeof(want) ? 0 : -SL_ERR_INVALID_COMMAND);
    }
    /* Structure is checked before the catalog: a duplicate key is 3. */
    assert_true(sl_tlv_put_pair(&k, "segment_size", SL_KIND_STRING, sl_span_str("1GiB")));
    sl_buf_reset(&f->buf);
    assert_true(sl_name_encode(&f->buf, sl_span_str("x")));
    sl_put_span(&f->buf, sl_buf_span(&k));
    assert_int_equal(sl_create_stream_request_decode(sl_buf_span(&f->buf), &out),
                     -SL_ERR_INVALID_COMMAND);
    in.options = sl_buf_span(&k);
    assert_int_equal(sl_create_stream_request_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
    /* A key that is not UTF-8 breaks the block's structure: 3, not 4041. */
    const uint8_t bad_key[] = {1, 'x', 2, 1, 0, 0, 0, 0xfe, 2, 1, 0, 0, 0, 'v'};
    assert_int_equal(sl_create_stream_request_decode(sl_span(bad_key, sizeof(bad_key)), &out),
                     -SL_ERR_INVALID_COMMAND);
    /* Names: empty, not UTF-8, too long to encode. */
    const uint8_t empty_name[] = {0};
    assert_int_equal(sl_create_stream_request_decode(sl_span(empty_name, 1), &out),
                     -SL_ERR_INVALID_COMMAND);
    const uint8_t bad_utf8[] = {2, 0xed, 0xa0}; /* a surrogate's lead */
    assert_int_equal(sl_create_stream_request_decode(sl_span(bad_utf8, 3), &out),
                     -SL_ERR_INVALID_COMMAND);
    char long_name[257];
    memset(long_name, 'n', 256);
    long_name[256] = 0;
    sl_create_stream_request_t too_long = {.name = sl_span_str(long_name)};
    assert_int_equal(sl_create_stream_request_encode(&f->buf, &too_long), -SL_ERR_INVALID_COMMAND);
    too_long.name = sl_span(long_name, 255);
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_create_stream_request_encode(&f->buf, &too_long), 0);
    assert_int_equal(sl_create_stream_request_decode(sl_buf_span(&f->buf), &out), 0);
    assert_int_equal(out.name.len, 255);
}

static void test_update_stream_request(void **state)
{
    fixture_t *f = *state;
    sl_update_stream_request_t in = {.stream_id = sl_ident_name("orders"),
                                     .name = sl_span_str("orders-v2")},
                               out;
    assert_int_equal(sl_update_stream_request_encode(&f->buf, &in), 0);
    sl_span_t body = sl_buf_span(&f->buf);
    assert_int_equal(body.len, 8 + 10);
    assert_int_equal(sl_update_stream_request_decode(body, &out), 0);
    assert_true(sl_ident_eq(&out.stream_id, &in.stream_id));
    assert_span_str(out.name, "orders-v2");
    assert_int_equal(out.options.len, 0);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_update_stream_request_encode(&again, &out), 0);
    assert_bytes_equal(again.data, again.len, body.ptr, body.len);
    sl_buf_free(&again);
    for (size_t len = 0; len < body.len; len++)
        assert_int_equal(sl_update_stream_request_decode(sl_span(body.ptr, len), &out),
                         -SL_ERR_INVALID_COMMAND);
    /* Any key: 4041. A trailing byte is a broken block: 3. */
    uint8_t block[32];
    sl_buf_t k;
    sl_buf_init_fixed(&k, block, sizeof(block));
    assert_true(sl_tlv_put_pair(&k, "k", SL_KIND_STRING, sl_span_str("v")));
    in.options = sl_buf_span(&k);
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_update_stream_request_encode(&f->buf, &in), 0);
    assert_int_equal(sl_update_stream_request_decode(sl_buf_span(&f->buf), &out),
                     -SL_ERR_UNSUPPORTED_OPTION_KEY);
    sl_put_u8(&f->buf, 0);
    assert_int_equal(sl_update_stream_request_decode(sl_buf_span(&f->buf), &out),
                     -SL_ERR_INVALID_COMMAND);
    /* Bad identifier and name. */
    const uint8_t bad_id[] = {1, 3, 0, 0, 0, 1, 'a'};
    assert_int_equal(sl_update_stream_request_decode(sl_span(bad_id, sizeof(bad_id)), &out),
                     -SL_ERR_INVALID_COMMAND);
    const uint8_t bad_utf8[] = {1, 4, 0, 0, 0, 0, 1, 0x80};
    assert_int_equal(sl_update_stream_request_decode(sl_span(bad_utf8, sizeof(bad_utf8)), &out),
                     -SL_ERR_INVALID_COMMAND);
    const uint8_t bad_name[] = {1, 4, 0, 0, 0, 0, 0};
    assert_int_equal(sl_update_stream_request_decode(sl_span(bad_name, sizeof(bad_name)), &out),
                     -SL_ERR_INVALID_COMMAND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_streams_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_streams_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_header_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_stream_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_stream_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_stream_rejection_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_stream_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_ref_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_streams_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_stream_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_stream_request, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
