/* Topic, partition and segment codecs: commands.md 13.2 (GetTopic and the
 * CreateTopic reply, built through the option catalog), round trips of all
 * nine stems, and hostile input for every decoder. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "wire/cmd_topics.h"
#include "wire/header.h"

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)
static const uint64_t ts = 1700000000000000ull;

static const char get_topic_hex[] = "00 00 00 00 00 40 1e 18 24 0a 06 00 02 00 00 00 "
                                    "ff ff ff ff ff ff ff ff 01 ff ff ff ff ff ff ff "
                                    "ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                    "00 06 65 76 65 6e 74 73 1e 00 00 00 02 0c 00 00 "
                                    "00 73 65 67 6d 65 6e 74 5f 73 69 7a 65 0c 08 00 "
                                    "00 00 00 00 00 08 00 00 00 00 f4 00 00 00 02 15 "
                                    "00 00 00 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 "
                                    "6c 67 6f 72 69 74 68 6d 02 04 00 00 00 6e 6f 6e "
                                    "65 02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 "
                                    "79 6e 63 03 01 00 00 00 00 02 0e 00 00 00 6d 61 "
                                    "78 5f 74 6f 70 69 63 5f 73 69 7a 65 0c 08 00 00 "
                                    "00 ff ff ff ff ff ff ff ff 02 0e 00 00 00 6d 65 "
                                    "73 73 61 67 65 5f 65 78 70 69 72 79 0c 08 00 00 "
                                    "00 ff ff ff ff ff ff ff ff 02 19 00 00 00 6d 65 "
                                    "73 73 61 67 65 73 5f 72 65 71 75 69 72 65 64 5f "
                                    "74 6f 5f 73 61 76 65 0b 04 00 00 00 00 04 00 00 "
                                    "02 14 00 00 00 70 72 65 61 6c 6c 6f 63 61 74 65 "
                                    "5f 73 65 67 6d 65 6e 74 73 03 01 00 00 00 00 02 "
                                    "21 00 00 00 73 69 7a 65 5f 6f 66 5f 6d 65 73 73 "
                                    "61 67 65 73 5f 72 65 71 75 69 72 65 64 5f 74 6f "
                                    "5f 73 61 76 65 0c 08 00 00 00 00 00 10 00 00 00 "
                                    "00 00 00 00 00 00 00 40 1e 18 24 0a 06 00 01 00 "
                                    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                    "00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 40 "
                                    "1e 18 24 0a 06 00 01 00 00 00 00 00 00 00 00 00 "
                                    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
                                    "00 00 ";

/* Offsets inside the 13.2 body. */
enum {
    OFF_COMPRESSION = 24,
    OFF_NAME_LEN = 49,
    OFF_NAME = 50,
    OFF_EXPLICIT_LEN = 56,
    OFF_EXPLICIT = 60,
    OFF_DERIVED_LEN = 90,
    OFF_PARTITIONS = 338,
};

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

static void assert_ident_equal(const sl_ident_t *a, const sl_ident_t *b)
{
    assert_true(sl_ident_eq(a, b));
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

static void assert_details_equal(const sl_topic_details_t *a, const sl_topic_details_t *b)
{
    assert_topic_header_equal(&a->header, &b->header);
    for (uint32_t i = 0; i < a->header.partitions_count; i++) {
        const sl_partition_info_t *x = &a->partitions[i], *y = &b->partitions[i];
        assert_int_equal(x->id, y->id);
        assert_int_equal(x->created_at, y->created_at);
        assert_int_equal(x->segments_count, y->segments_count);
        assert_int_equal(x->current_offset, y->current_offset);
        assert_int_equal(x->size_bytes, y->size_bytes);
        assert_int_equal(x->messages_count, y->messages_count);
    }
}

/* The CreateTopic body of 13.2: stream 0, 2 partitions, "events",
 * segment_size = 128 MiB as Uint64. */
static void put_create_topic_body(sl_buf_t *b)
{
    sl_create_topic_request_t req = {
        .stream_id = sl_ident_number(0),
        .partitions_count = 2,
        .name = sl_span_str("events"),
    };
    uint8_t block[64], v[8];
    sl_buf_t k;
    sl_buf_init_fixed(&k, block, sizeof(block));
    sl_store_u64(v, 128 * MIB);
    assert_true(sl_tlv_put_pair(&k, "segment_size", SL_KIND_UINT64, sl_span(v, 8)));
    req.options = sl_buf_span(&k);
    assert_int_equal(sl_create_topic_request_encode(b, &req), 0);
}

/* Holds the blocks and partitions the 13.2 topic points into. */
typedef struct topic_13_2 {
    uint8_t explicit_mem[512];
    uint8_t derived_mem[512];
    sl_partition_info_t parts[2];
    sl_topic_details_t details;
} topic_13_2_t;

/* Builds the topic as a server would: decode the CreateTopic request, then
 * encode the stored blocks from the resolved config. */
static void build_topic_13_2(topic_13_2_t *t, uint32_t segments_count)
{
    sl_buf_t body, ex, de;
    uint8_t body_mem[128];
    sl_buf_init_fixed(&body, body_mem, sizeof(body_mem));
    put_create_topic_body(&body);
    sl_create_topic_request_t req;
    assert_int_equal(sl_create_topic_request_decode(sl_buf_span(&body), &req), 0);
    sl_buf_init_fixed(&ex, t->explicit_mem, sizeof(t->explicit_mem));
    sl_buf_init_fixed(&de, t->derived_mem, sizeof(t->derived_mem));
    assert_int_equal(sl_topic_options_encode(&ex, &req.config, true), 0);
    assert_int_equal(sl_topic_options_encode(&de, &req.config, false), 0);
    for (uint32_t i = 0; i < 2; i++)
        t->parts[i] =
            (sl_partition_info_t){.id = i, .created_at = ts, .segments_count = segments_count};
    t->details = (sl_topic_details_t){
        .header =
            {
                .id = 0,
                .created_at = ts,
                .partitions_count = req.partitions_count,
                .message_expiry = req.config.message_expiry,
                .compression_algorithm = req.config.compression_algorithm,
                .max_topic_size = req.config.max_topic_size,
                .name = sl_span_str("events"),
                .options = sl_buf_span(&ex),
                .derived_options = sl_buf_span(&de),
            },
        .partitions = t->parts,
    };
}

/* --- 13.2 --------------------------------------------------------------------------- */

static void test_get_topic_golden(void **state)
{
    fixture_t *f = *state;
    size_t n;
    uint8_t *want = tu_hex(get_topic_hex, &n);
    assert_int_equal(n, 418);
    topic_13_2_t t;
    build_topic_13_2(&t, 1);
    sl_get_topic_reply_t rep = {.found = true, .topic = t.details};
    assert_int_equal(sl_get_topic_reply_encode(&f->buf, &rep), 0);
    assert_bytes_equal(f->buf.data, f->buf.len, want, n);

    sl_get_topic_reply_t got;
    assert_int_equal(sl_get_topic_reply_decode(sl_span(want, n), &f->arena, &got), 0);
    assert_true(got.found);
    const sl_topic_header_t *h = &got.topic.header;
    assert_int_equal(h->id, 0);
    assert_int_equal(h->created_at, ts);
    assert_int_equal(h->partitions_count, 2);
    assert_true(h->message_expiry == UINT64_MAX);
    assert_int_equal(h->compression_algorithm, SL_COMPRESSION_NONE);
    assert_true(h->max_topic_size == UINT64_MAX);
    assert_span_str(h->name, "events");
    assert_int_equal(h->options.len, 30);
    assert_int_equal(h->derived_options.len, 244);
    assert_int_equal(got.topic.partitions[1].id, 1);
    assert_int_equal(got.topic.partitions[1].segments_count, 1);
    assert_details_equal(&got.topic, &t.details);

    /* The stored blocks read back into the same config. */
    sl_topic_config_t cfg;
    sl_topic_config_from_blocks(h->options, h->derived_options, &cfg);
    assert_int_equal(cfg.segment_size, 128 * MIB);
    assert_int_equal(cfg.explicit_keys, SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE));
    free(want);
}

static void test_create_topic_reply_golden(void **state)
{
    fixture_t *f = *state;
    size_t n;
    uint8_t *golden = tu_hex(get_topic_hex, &n);
    /* `00 00 00 00` + the 13.2 bytes with segments_count 0 in both partitions. */
    uint8_t *want = malloc(n + 4);
    memset(want, 0, 4);
    memcpy(want + 4, golden, n);
    for (int p = 0; p < 2; p++) {
        size_t at = 4 + OFF_PARTITIONS + 40 * (size_t)p + 12;
        assert_int_equal(want[at], 1);
        want[at] = 0;
    }
    topic_13_2_t t;
    build_topic_13_2(&t, 0);
    sl_create_topic_reply_t rep = {t.details};
    sl_result_put_ok(&f->buf);
    assert_int_equal(sl_create_topic_reply_encode(&f->buf, &rep), 0);
    assert_bytes_equal(f->buf.data, f->buf.len, want, n + 4);
    /* The committed reply is result-framed under operation 64. */
    assert_true(sl_op_result_framed(SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS));

    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_span(want, n + 4), &result, &payload), 0);
    assert_int_equal(result, 0);
    sl_create_topic_reply_t got;
    assert_int_equal(sl_create_topic_reply_decode(payload, &f->arena, &got), 0);
    assert_details_equal(&got.topic, &t.details);
    assert_int_equal(got.topic.partitions[0].segments_count, 0);
    free(want);
    free(golden);
}

static void test_create_topic_request_resolves_config(void **state)
{
    fixture_t *f = *state;
    put_create_topic_body(&f->buf);
    sl_create_topic_request_t req;
    assert_int_equal(sl_create_topic_request_decode(sl_buf_span(&f->buf), &req), 0);
    assert_ident_equal(&req.stream_id, &(sl_ident_t){.kind = 1, .number = 0});
    assert_int_equal(req.partitions_count, 2);
    assert_span_str(req.name, "events");
    assert_int_equal(req.options.len, 30);
    assert_int_equal(req.config.segment_size, 128 * MIB);
    assert_int_equal(req.config.messages_required_to_save, 1024);
    assert_true(req.config.message_expiry == UINT64_MAX);
}

/* --- 13.5: a pre-commit denial carries the code in the header status ----------- */

static void test_create_topic_unknown_key_denial(void **state)
{
    fixture_t *f = *state;
    sl_create_topic_request_t req = {
        .stream_id = sl_ident_name("s"), .partitions_count = 1, .name = sl_span_str("t")};
    uint8_t block[64];
    sl_buf_t k;
    sl_buf_init_fixed(&k, block, sizeof(block));
    assert_true(sl_tlv_put_pair(&k, "colour", SL_KIND_STRING, sl_span_str("red")));
    req.options = sl_buf_span(&k);
    assert_int_equal(sl_create_topic_request_encode(&f->buf, &req), 0);
    sl_create_topic_request_t got;
    int rc = sl_create_topic_request_decode(sl_buf_span(&f->buf), &got);
    assert_int_equal(rc, -SL_ERR_UNSUPPORTED_OPTION_KEY);

    uint8_t hdr[SL_HEADER_SIZE];
    sl_reply_header_t h = {.size = 256, .operation = SL_OP_CREATE_TOPIC, .status = (uint32_t)-rc};
    sl_reply_header_encode(hdr, &h);
    const uint8_t status[4] = {0xc9, 0x0f, 0x00, 0x00};
    assert_bytes_equal(hdr + 216, 4, status, 4);
    assert_int_equal(hdr[208], 132);
}

/* --- request round trips ------------------------------------------------------------- */

static void test_topic_ref_requests_round_trip(void **state)
{
    fixture_t *f = *state;
    sl_topic_ref_t in = {sl_ident_number(3), sl_ident_name("events")};
    int (*enc[])(sl_buf_t *, const sl_topic_ref_t *) = {
        sl_get_topic_request_encode, sl_delete_topic_request_encode, sl_purge_topic_request_encode};
    int (*dec[])(sl_span_t, sl_topic_ref_t *) = {
        sl_get_topic_request_decode, sl_delete_topic_request_decode, sl_purge_topic_request_decode};
    const char *want_hex = "01 04 03 00 00 00 02 06 65 76 65 6e 74 73";
    size_t wn;
    uint8_t *want = tu_hex(want_hex, &wn);
    for (size_t s = 0; s < 3; s++) {
        sl_buf_reset(&f->buf);
        assert_int_equal(enc[s](&f->buf, &in), 0);
        assert_bytes_equal(f->buf.data, f->buf.len, want, wn);
        sl_topic_ref_t out;
        assert_int_equal(dec[s](sl_buf_span(&f->buf), &out), 0);
        assert_ident_equal(&out.stream_id, &in.stream_id);
        assert_ident_equal(&out.topic_id, &in.topic_id);
        /* Every strict prefix is undecodable; trailing bytes are ignored. */
        for (size_t len = 0; len < wn; len++)
            assert_int_equal(dec[s](sl_span(want, len), &out), -SL_ERR_INVALID_COMMAND);
        uint8_t longer[32];
        memcpy(longer, want, wn);
        memset(longer + wn, 0xee, 4);
        assert_int_equal(dec[s](sl_span(longer, wn + 4), &out), 0);
        assert_ident_equal(&out.topic_id, &in.topic_id);
    }
    /* The Node SDK's DeleteTopic: two identifiers and a u32 partitions_count. */
    const char *node = "01 04 00 00 00 00 01 04 05 00 00 00 00 00 00 00";
    size_t nn;
    uint8_t *nb = tu_hex(node, &nn);
    sl_delete_topic_request_t del;
    assert_int_equal(sl_delete_topic_request_decode(sl_span(nb, nn), &del), 0);
    assert_int_equal(del.topic_id.number, 5);
    free(nb);
    free(want);
    /* An identifier that cannot be encoded. */
    sl_topic_ref_t bad = {sl_ident_number(1), {.kind = 3}};
    assert_int_equal(sl_get_topic_request_encode(&f->buf, &bad), -SL_ERR_INVALID_COMMAND);
    bad.topic_id = sl_ident_name("");
    assert_int_equal(sl_get_topic_request_encode(&f->buf, &bad), -SL_ERR_INVALID_COMMAND);
}

static void test_get_topics_request_round_trip(void **state)
{
    fixture_t *f = *state;
    sl_get_topics_request_t in = {sl_ident_name("orders")}, out;
    assert_int_equal(sl_get_topics_request_encode(&f->buf, &in), 0);
    assert_int_equal(f->buf.len, 8);
    assert_int_equal(sl_get_topics_request_decode(sl_buf_span(&f->buf), &out), 0);
    assert_ident_equal(&out.stream_id, &in.stream_id);
    for (size_t len = 0; len < f->buf.len; len++)
        assert_int_equal(sl_get_topics_request_decode(sl_span(f->buf.data, len), &out),
                         -SL_ERR_INVALID_COMMAND);
}

static void test_create_topic_request_round_trip(void **state)
{
    fixture_t *f = *state;
    uint8_t block[128];
    sl_buf_t k;
    sl_buf_init_fixed(&k, block, sizeof(block));
    assert_true(sl_tlv_put_pair(&k, "compression_algorithm", SL_KIND_STRING, sl_span_str("gzip")));
    assert_true(sl_tlv_put_pair(&k, "message_expiry", SL_KIND_STRING, sl_span_str("1h")));
    sl_create_topic_request_t in = {
        .stream_id = sl_ident_name("s1"),
        .partitions_count = 3,
        .name = sl_span_str("events"),
        .options = sl_buf_span(&k),
    };
    assert_int_equal(sl_create_topic_request_encode(&f->buf, &in), 0);
    sl_span_t body = sl_buf_span(&f->buf);
    sl_create_topic_request_t out;
    assert_int_equal(sl_create_topic_request_decode(body, &out), 0);
    assert_ident_equal(&out.stream_id, &in.stream_id);
    assert_int_equal(out.partitions_count, 3);
    assert_span_equal(out.name, in.name);
    assert_span_equal(out.options, in.options);
    assert_int_equal(out.config.compression_algorithm, SL_COMPRESSION_GZIP);
    assert_int_equal(out.config.message_expiry, 3600ull * 1000000);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_create_topic_request_encode(&again, &out), 0);
    assert_bytes_equal(again.data, again.len, body.ptr, body.len);
    sl_buf_free(&again);

    /* Prefixes: only the end of the fixed part and entry boundaries form a
     * body; each of those resolves fine (both entries are valid). */
    size_t fixed = 4 + 4 + 7;
    size_t first_entry = 5 + 21 + 5 + 4;
    for (size_t len = 0; len < body.len; len++) {
        int want = (len == fixed || len == fixed + first_entry) ? 0 : -SL_ERR_INVALID_COMMAND;
        assert_int_equal(sl_create_topic_request_decode(sl_span(body.ptr, len), &out), want);
    }
    /* Trailing bytes are part of the block and break it. */
    uint8_t longer[256];
    memcpy(longer, body.ptr, body.len);
    longer[body.len] = 0x02;
    assert_int_equal(sl_create_topic_request_decode(sl_span(longer, body.len + 1), &out),
                     -SL_ERR_INVALID_COMMAND);
    /* Encoders refuse a malformed block and a bad name. */
    in.options = sl_span(longer, 3);
    assert_int_equal(sl_create_topic_request_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
    in.options = sl_span(NULL, 0);
    in.name = sl_span(NULL, 0);
    assert_int_equal(sl_create_topic_request_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
}

static void test_create_topic_request_hostile(void **state)
{
    (void)state;
    sl_create_topic_request_t out;
    struct {
        const char *hex;
        int want;
    } cases[] = {
        {"01 04 00 00 00 00 02 00 00 00 00", -SL_ERR_INVALID_COMMAND},        /* name len 0 */
        {"01 04 00 00 00 00 02 00 00 00 02 c3 28", -SL_ERR_INVALID_COMMAND},  /* bad UTF-8 */
        {"01 04 00 00 00 00 02 00 00 00 05 61", -SL_ERR_INVALID_COMMAND},     /* name too long */
        {"03 04 00 00 00 00 02 00 00 00 01 61", -SL_ERR_INVALID_COMMAND},     /* ident kind 3 */
        {"01 02 00 00 02 00 00 00 01 61", -SL_ERR_INVALID_COMMAND},           /* numeric len 2 */
        {"02 00 02 00 00 00 01 61", -SL_ERR_INVALID_COMMAND},                 /* string len 0 */
        {"02 01 ff 02 00 00 00 01 61", -SL_ERR_INVALID_COMMAND},              /* ident UTF-8 */
        {"01 04 00 00 00 00 e9 03 00 00 01 61", -SL_ERR_TOO_MANY_PARTITIONS}, /* 1001 */
        {"01 04 00 00 00 00 00 00 00 00 01 61", 0},                           /* 0 partitions */
        /* Block: key not UTF-8; key kind Raw; value kind 0. */
        {"01 04 00 00 00 00 01 00 00 00 01 61 02 01 00 00 00 ff 02 01 00 00 00 61",
         -SL_ERR_INVALID_COMMAND},
        {"01 04 00 00 00 00 01 00 00 00 01 61 01 01 00 00 00 61 02 01 00 00 00 61",
         -SL_ERR_INVALID_COMMAND},
        {"01 04 00 00 00 00 01 00 00 00 01 61 02 01 00 00 00 61 00 01 00 00 00 61",
         -SL_ERR_INVALID_COMMAND},
        /* The same block with valid parts: an unknown key. */
        {"01 04 00 00 00 00 01 00 00 00 01 61 02 01 00 00 00 61 02 01 00 00 00 61",
         -SL_ERR_UNSUPPORTED_OPTION_KEY},
        /* Block: key length beyond the body. */
        {"01 04 00 00 00 00 01 00 00 00 01 61 02 ff ff ff ff 61", -SL_ERR_INVALID_COMMAND},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        size_t n;
        uint8_t *b = tu_hex(cases[i].hex, &n);
        int rc = sl_create_topic_request_decode(sl_span(b, n), &out);
        if (rc != cases[i].want)
            fail_msg("case %zu: got %d want %d", i, rc, cases[i].want);
        free(b);
    }
}

static void test_update_topic_request(void **state)
{
    fixture_t *f = *state;
    uint8_t block[64];
    sl_buf_t k;
    sl_buf_init_fixed(&k, block, sizeof(block));
    assert_true(sl_tlv_put_pair(&k, "max_topic_size", SL_KIND_STRING, sl_span_str("100MiB")));
    sl_update_topic_request_t in = {
        .stream_id = sl_ident_number(1),
        .topic_id = sl_ident_name("events"),
        .name = sl_span_str("renamed"),
        .options = sl_buf_span(&k),
    };
    assert_int_equal(sl_update_topic_request_encode(&f->buf, &in), 0);
    sl_span_t body = sl_buf_span(&f->buf);
    sl_update_topic_request_t out;
    assert_int_equal(sl_update_topic_request_decode(body, &out), 0);
    assert_ident_equal(&out.stream_id, &in.stream_id);
    assert_ident_equal(&out.topic_id, &in.topic_id);
    assert_span_equal(out.name, in.name);
    assert_span_equal(out.options, in.options);
    assert_int_equal(out.patch.keys, SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE));
    assert_int_equal(out.patch.max_topic_size, 100 * MIB);
    assert_int_equal(sl_update_topic_check_size(&out, 128 * MIB), -SL_ERR_INVALID_TOPIC_SIZE);
    assert_int_equal(sl_update_topic_check_size(&out, 64 * MIB), 0);
    assert_int_equal(sl_update_topic_check_size(&out, 0), -SL_ERR_INVALID_TOPIC_SIZE);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_update_topic_request_encode(&again, &out), 0);
    assert_bytes_equal(again.data, again.len, body.ptr, body.len);
    sl_buf_free(&again);

    size_t fixed = 6 + 8 + 8;
    for (size_t len = 0; len < body.len; len++) {
        int want = len == fixed ? 0 : -SL_ERR_INVALID_COMMAND;
        assert_int_equal(sl_update_topic_request_decode(sl_span(body.ptr, len), &out), want);
    }
    /* Names: empty, not UTF-8; the topic identifier not UTF-8. */
    const char *bad_bodies[] = {
        "01 04 01 00 00 00 01 04 02 00 00 00 00",
        "01 04 01 00 00 00 01 04 02 00 00 00 02 e2 82",
        "01 04 01 00 00 00 02 02 c0 af 01 61",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_bodies); i++) {
        size_t n;
        uint8_t *b = tu_hex(bad_bodies[i], &n);
        assert_int_equal(sl_update_topic_request_decode(sl_span(b, n), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(b);
    }
    /* A create-only key: 4041; a bad value: 4042. */
    sl_buf_reset(&k);
    assert_true(sl_tlv_put_pair(&k, "segment_size", SL_KIND_STRING, sl_span_str("1GiB")));
    in.options = sl_buf_span(&k);
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_update_topic_request_encode(&f->buf, &in), 0);
    assert_int_equal(sl_update_topic_request_decode(sl_buf_span(&f->buf), &out),
                     -SL_ERR_UNSUPPORTED_OPTION_KEY);
    sl_buf_reset(&k);
    assert_true(sl_tlv_put_pair(&k, "message_expiry", SL_KIND_STRING, sl_span_str("later")));
    in.options = sl_buf_span(&k);
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_update_topic_request_encode(&f->buf, &in), 0);
    assert_int_equal(sl_update_topic_request_decode(sl_buf_span(&f->buf), &out),
                     -SL_ERR_INVALID_OPTION_VALUE);
}

static void test_partitions_change_requests(void **state)
{
    fixture_t *f = *state;
    int (*enc[])(sl_buf_t *, const sl_partitions_change_t *) = {
        sl_create_partitions_request_encode, sl_delete_partitions_request_encode};
    int (*dec[])(sl_span_t, sl_partitions_change_t *) = {sl_create_partitions_request_decode,
                                                         sl_delete_partitions_request_decode};
    for (size_t s = 0; s < 2; s++) {
        sl_partitions_change_t in = {sl_ident_name("s"), sl_ident_number(9), 10}, out;
        sl_buf_reset(&f->buf);
        assert_int_equal(enc[s](&f->buf, &in), 0);
        assert_int_equal(f->buf.len, 3 + 6 + 4);
        assert_int_equal(dec[s](sl_buf_span(&f->buf), &out), 0);
        assert_ident_equal(&out.stream_id, &in.stream_id);
        assert_ident_equal(&out.topic_id, &in.topic_id);
        assert_int_equal(out.partitions_count, 10);
        /* Undecodable first (3), then the count (2015). */
        for (size_t len = 0; len < f->buf.len; len++)
            assert_int_equal(dec[s](sl_span(f->buf.data, len), &out), -SL_ERR_INVALID_COMMAND);
        const uint32_t counts[] = {0, 1, 1000, 1001, UINT32_MAX};
        const int want[] = {-SL_ERR_TOO_MANY_PARTITIONS, 0, 0, -SL_ERR_TOO_MANY_PARTITIONS,
                            -SL_ERR_TOO_MANY_PARTITIONS};
        for (size_t i = 0; i < SL_ARRAY_LEN(counts); i++) {
            in.partitions_count = counts[i];
            sl_buf_reset(&f->buf);
            assert_int_equal(enc[s](&f->buf, &in), 0);
            sl_put_u8(&f->buf, 0x7f); /* trailing bytes are ignored */
            assert_int_equal(dec[s](sl_buf_span(&f->buf), &out), want[i]);
        }
    }
}

static void test_delete_segments_request(void **state)
{
    fixture_t *f = *state;
    sl_delete_segments_request_t in = {sl_ident_number(1), sl_ident_number(2), 3, 5}, out;
    assert_int_equal(sl_delete_segments_request_encode(&f->buf, &in), 0);
    const char *want_hex = "01 04 01 00 00 00 01 04 02 00 00 00 03 00 00 00 05 00 00 00";
    size_t wn;
    uint8_t *want = tu_hex(want_hex, &wn);
    assert_bytes_equal(f->buf.data, f->buf.len, want, wn);
    assert_int_equal(sl_delete_segments_request_decode(sl_span(want, wn), &out), 0);
    assert_ident_equal(&out.stream_id, &in.stream_id);
    assert_ident_equal(&out.topic_id, &in.topic_id);
    assert_int_equal(out.partition_id, 3);
    assert_int_equal(out.segments_count, 5);
    for (size_t len = 0; len < wn; len++)
        assert_int_equal(sl_delete_segments_request_decode(sl_span(want, len), &out),
                         -SL_ERR_INVALID_COMMAND);
    free(want);
}

/* --- reply round trips and hostile replies ---------------------------------------------- */

static void test_get_topic_reply_hostile(void **state)
{
    fixture_t *f = *state;
    size_t n;
    uint8_t *v = tu_hex(get_topic_hex, &n);
    sl_get_topic_reply_t got;
    /* Empty: not found. Any other prefix, or a trailing byte: 4. */
    assert_int_equal(sl_get_topic_reply_decode(sl_span(v, 0), &f->arena, &got), 0);
    assert_false(got.found);
    for (size_t len = 1; len < n; len++)
        assert_int_equal(sl_get_topic_reply_decode(sl_span(v, len), &f->arena, &got),
                         -SL_ERR_INVALID_FORMAT);
    uint8_t *longer = malloc(n + 1);
    memcpy(longer, v, n);
    longer[n] = 0;
    assert_int_equal(sl_get_topic_reply_decode(sl_span(longer, n + 1), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
    free(longer);

    struct {
        size_t at;
        uint8_t value;
    } mutations[] = {
        {12, 0xff},
        {13, 0xff},
        {14, 0xff},
        {15, 0xff}, /* partitions_count huge */
        {12, 3},    /* count exceeds the bytes */
        {12, 1},    /* count below the bytes */
        {OFF_COMPRESSION, 0},
        {OFF_COMPRESSION, 3},
        {OFF_NAME_LEN, 0},
        {OFF_NAME, 0xc3},
        {OFF_NAME, 0xff},
        {OFF_EXPLICIT_LEN + 3, 0x80},
        {OFF_EXPLICIT_LEN, 0x1f},
        {OFF_EXPLICIT, 0},
        {OFF_EXPLICIT, SL_KIND_RAW},
        {OFF_DERIVED_LEN + 2, 1},
        {OFF_DERIVED_LEN + 4, 0},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(mutations); i++) {
        uint8_t *m = malloc(n);
        memcpy(m, v, n);
        /* Apply this mutation and the earlier ones at the same spot (the
         * four partitions_count bytes build up to 0xffffffff). */
        for (size_t j = 0; j <= i; j++)
            if (j == i || (i < 4 && j < i))
                m[mutations[j].at] = mutations[j].value;
        int rc = sl_get_topic_reply_decode(sl_span(m, n), &f->arena, &got);
        if (rc != -SL_ERR_INVALID_FORMAT)
            fail_msg("mutation %zu: got %d", i, rc);
        free(m);
    }
    free(v);
}

static void test_get_topics_reply(void **state)
{
    fixture_t *f = *state;
    topic_13_2_t t;
    build_topic_13_2(&t, 1);
    sl_topic_header_t items[2] = {t.details.header, t.details.header};
    items[1].id = 1;
    items[1].name = sl_span_str("clicks");
    items[1].compression_algorithm = SL_COMPRESSION_GZIP;
    items[1].options = sl_span(NULL, 0);
    items[1].size_bytes = 77;
    items[1].messages_count = 3;
    sl_get_topics_reply_t in = {2, items}, got;
    assert_int_equal(sl_get_topics_reply_encode(&f->buf, &in), 0);
    sl_span_t p = sl_buf_span(&f->buf);
    assert_int_equal(sl_load_u32(p.ptr), 2);
    assert_int_equal(sl_get_topics_reply_decode(p, &f->arena, &got), 0);
    assert_int_equal(got.count, 2);
    for (int i = 0; i < 2; i++)
        assert_topic_header_equal(&got.items[i], &items[i]);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_get_topics_reply_encode(&again, &got), 0);
    assert_bytes_equal(again.data, again.len, p.ptr, p.len);
    sl_buf_free(&again);

    /* Every prefix fails: the count is mandatory. */
    for (size_t len = 0; len < p.len; len++)
        assert_int_equal(sl_get_topics_reply_decode(sl_span(p.ptr, len), &f->arena, &got),
                         -SL_ERR_INVALID_FORMAT);
    /* An empty list is `00 00 00 00`. */
    sl_get_topics_reply_t none = {0, NULL};
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_get_topics_reply_encode(&f->buf, &none), 0);
    assert_int_equal(f->buf.len, 4);
    assert_int_equal(sl_get_topics_reply_decode(sl_buf_span(&f->buf), &f->arena, &got), 0);
    assert_int_equal(got.count, 0);
    /* A count the bytes cannot hold. */
    const uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    assert_int_equal(sl_get_topics_reply_decode(sl_span(huge, 8), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
    const uint8_t one_short[4] = {1, 0, 0, 0};
    assert_int_equal(sl_get_topics_reply_decode(sl_span(one_short, 4), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
    /* Encoders refuse bad headers. */
    items[1].compression_algorithm = 0;
    assert_int_equal(sl_get_topics_reply_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
    items[1].compression_algorithm = 1;
    items[1].name = sl_span(NULL, 0);
    assert_int_equal(sl_get_topics_reply_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
}

static void test_get_topic_reply_round_trip(void **state)
{
    fixture_t *f = *state;
    sl_partition_info_t parts[3];
    for (uint32_t i = 0; i < 3; i++)
        parts[i] = (sl_partition_info_t){i + 10, ts + i, 2 + i, 1000 * i, 4096 * i, 7 * i};
    sl_topic_details_t d = {
        .header = {.id = 4,
                   .created_at = ts,
                   .partitions_count = 3,
                   .message_expiry = 5000000,
                   .compression_algorithm = SL_COMPRESSION_GZIP,
                   .max_topic_size = 10 * GIB,
                   .size_bytes = 12288,
                   .messages_count = 21,
                   .name = sl_span_str("metrics")},
        .partitions = parts,
    };
    sl_get_topic_reply_t in = {true, d}, got;
    assert_int_equal(sl_get_topic_reply_encode(&f->buf, &in), 0);
    assert_int_equal(f->buf.len, SL_TOPIC_HEADER_SIZE_MIN + 6 + 3 * SL_PARTITION_INFO_SIZE);
    assert_int_equal(sl_get_topic_reply_decode(sl_buf_span(&f->buf), &f->arena, &got), 0);
    assert_true(got.found);
    assert_details_equal(&got.topic, &d);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_get_topic_reply_encode(&again, &got), 0);
    assert_bytes_equal(again.data, again.len, f->buf.data, f->buf.len);
    sl_buf_free(&again);

    /* Not found encodes to nothing. */
    sl_get_topic_reply_t missing = {.found = false};
    sl_buf_reset(&f->buf);
    assert_int_equal(sl_get_topic_reply_encode(&f->buf, &missing), 0);
    assert_int_equal(f->buf.len, 0);
    /* A count without partitions cannot be encoded. */
    in.topic.partitions = NULL;
    assert_int_equal(sl_get_topic_reply_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
    /* Nor a malformed stored block. */
    in.topic.partitions = parts;
    in.topic.header.derived_options = sl_span("\x02\x01", 2);
    assert_int_equal(sl_get_topic_reply_encode(&f->buf, &in), -SL_ERR_INVALID_COMMAND);
}

static void test_create_topic_reply_exact(void **state)
{
    fixture_t *f = *state;
    sl_create_topic_reply_t got;
    /* The committed payload is never empty. */
    assert_int_equal(sl_create_topic_reply_decode(sl_span(NULL, 0), &f->arena, &got),
                     -SL_ERR_INVALID_FORMAT);
}

static void test_empty_replies(void **state)
{
    fixture_t *f = *state;
    const uint8_t one = 0;
    sl_empty_t e = {0};
    int (*dec[])(sl_span_t, sl_arena_t *, sl_empty_t *) = {
        sl_delete_topic_reply_decode,      sl_update_topic_reply_decode,
        sl_purge_topic_reply_decode,       sl_create_partitions_reply_decode,
        sl_delete_partitions_reply_decode, sl_delete_segments_reply_decode,
    };
    int (*enc[])(sl_buf_t *, const sl_empty_t *) = {
        sl_delete_topic_reply_encode,      sl_update_topic_reply_encode,
        sl_purge_topic_reply_encode,       sl_create_partitions_reply_encode,
        sl_delete_partitions_reply_encode, sl_delete_segments_reply_encode,
    };
    /* Framed success: `00 00 00 00` leaves an empty payload. */
    const uint8_t framed[4] = {0};
    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_span(framed, 4), &result, &payload), 0);
    for (size_t i = 0; i < SL_ARRAY_LEN(dec); i++) {
        sl_buf_reset(&f->buf);
        assert_int_equal(enc[i](&f->buf, &e), 0);
        assert_int_equal(f->buf.len, 0);
        assert_int_equal(dec[i](payload, &f->arena, &e), 0);
        assert_int_equal(dec[i](sl_span(&one, 1), &f->arena, &e), -SL_ERR_INVALID_FORMAT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_topic_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_reply_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_request_resolves_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_unknown_key_denial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_ref_requests_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_topics_request_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_request_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_request_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_topic_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partitions_change_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_segments_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_topic_reply_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_topics_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_topic_reply_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_reply_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_replies, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
