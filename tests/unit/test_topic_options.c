/* The topic option catalog: options.md 1 golden block, every check of
 * options.md 4.2 in order, the stored blocks of 4.4, the value forms of 4.3
 * and the DescribeOptions descriptors of 5. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "wire/cmd_topics.h"
#include "wire/topic_options.h"

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)

/* --- block builder ------------------------------------------------------------ */

typedef struct blk {
    uint8_t mem[8192];
    sl_buf_t b;
} blk_t;

static void blk_init(blk_t *k)
{
    sl_buf_init_fixed(&k->b, k->mem, sizeof(k->mem));
}
static sl_span_t blk_span(const blk_t *k)
{
    return sl_buf_span(&k->b);
}
static void put_raw(blk_t *k, const char *key, uint8_t kind, const void *v, size_t n)
{
    assert_true(sl_tlv_put_pair(&k->b, key, kind, sl_span(v, n)));
}
static void put_str(blk_t *k, const char *key, const char *v)
{
    put_raw(k, key, SL_KIND_STRING, v, strlen(v));
}
static void put_u64(blk_t *k, const char *key, uint64_t v)
{
    uint8_t x[8];
    sl_store_u64(x, v);
    put_raw(k, key, SL_KIND_UINT64, x, 8);
}
static void put_u32(blk_t *k, const char *key, uint32_t v)
{
    uint8_t x[4];
    sl_store_u32(x, v);
    put_raw(k, key, SL_KIND_UINT32, x, 4);
}
static void put_byte(blk_t *k, const char *key, uint8_t kind, uint8_t v)
{
    put_raw(k, key, kind, &v, 1);
}

static int resolve(const blk_t *k, uint32_t partitions, sl_topic_config_t *cfg)
{
    uint32_t pairs;
    assert_true(sl_options_validate(blk_span(k), &pairs));
    return sl_topic_options_resolve_create(blk_span(k), partitions, cfg);
}

static void assert_config_equal(const sl_topic_config_t *a, const sl_topic_config_t *b)
{
    assert_int_equal(a->compression_algorithm, b->compression_algorithm);
    assert_true(a->message_expiry == b->message_expiry);
    assert_true(a->max_topic_size == b->max_topic_size);
    assert_int_equal(a->segment_size, b->segment_size);
    assert_int_equal(a->enforce_fsync, b->enforce_fsync);
    assert_int_equal(a->messages_required_to_save, b->messages_required_to_save);
    assert_int_equal(a->size_of_messages_required_to_save, b->size_of_messages_required_to_save);
    assert_int_equal(a->preallocate_segments, b->preallocate_segments);
    assert_int_equal(a->explicit_keys, b->explicit_keys);
}

/* One entry, resolved alone with one partition. */
static int resolve_one_str(const char *key, const char *v)
{
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_str(&k, key, v);
    return resolve(&k, 1, &cfg);
}

/* --- options.md 1 golden block ------------------------------------------------- */

static const char golden_block_hex[] = "02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79"
                                       "6e 63 03 01 00 00 00 01 02 0c 00 00 00 73 65 67"
                                       "6d 65 6e 74 5f 73 69 7a 65 0c 08 00 00 00 00 00"
                                       "00 40 00 00 00 00";

static void test_golden_block_decoded_and_resolved(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex(golden_block_hex, &n);
    assert_int_equal(n, 54);
    sl_span_t block = sl_span(want, n);

    uint32_t pairs;
    assert_true(sl_options_validate(block, &pairs));
    assert_int_equal(pairs, 2);
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    assert_true(sl_tlv_next(&it, &e));
    assert_span_str(e.key.data, "enforce_fsync");
    assert_int_equal(e.value.kind, SL_KIND_BOOL);
    assert_true(sl_tlv_next(&it, &e));
    assert_span_str(e.key.data, "segment_size");
    assert_int_equal(sl_load_u64(e.value.data.ptr), GIB);
    assert_false(sl_tlv_next(&it, &e));

    sl_topic_config_t cfg;
    assert_int_equal(sl_topic_options_resolve_create(block, 1, &cfg), 0);
    assert_true(cfg.enforce_fsync);
    assert_int_equal(cfg.segment_size, GIB);
    assert_int_equal(cfg.explicit_keys, SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_ENFORCE_FSYNC) |
                                            SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE));
    assert_int_equal(cfg.compression_algorithm, SL_COMPRESSION_NONE);
    assert_true(cfg.message_expiry == UINT64_MAX);
    assert_true(cfg.max_topic_size == UINT64_MAX);
    assert_int_equal(cfg.messages_required_to_save, 1024);
    assert_int_equal(cfg.size_of_messages_required_to_save, MIB);
    assert_false(cfg.preallocate_segments);

    /* The client-side builder and the canonical explicit block both give
     * exactly the pinned bytes (enforce_fsync sorts before segment_size). */
    blk_t k;
    blk_init(&k);
    put_byte(&k, "enforce_fsync", SL_KIND_BOOL, 1);
    put_u64(&k, "segment_size", GIB);
    assert_bytes_equal(k.b.data, k.b.len, want, n);
    uint8_t mem[256];
    sl_buf_t out;
    sl_buf_init_fixed(&out, mem, sizeof(mem));
    assert_int_equal(sl_topic_options_encode(&out, &cfg, true), 0);
    assert_bytes_equal(out.data, out.len, want, n);
    free(want);
}

static void test_empty_block_resolves_to_defaults(void **state)
{
    (void)state;
    sl_topic_config_t cfg, def;
    sl_topic_config_default(&def);
    assert_int_equal(sl_topic_options_resolve_create(sl_span(NULL, 0), 0, &cfg), 0);
    assert_config_equal(&cfg, &def);
    assert_int_equal(cfg.explicit_keys, 0);
    assert_int_equal(cfg.segment_size, GIB);

    /* Explicit block empty, derived holds all 8 keys in byte order. */
    uint8_t mem[1024];
    sl_buf_t out;
    sl_buf_init_fixed(&out, mem, sizeof(mem));
    assert_int_equal(sl_topic_options_encode(&out, &cfg, true), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(sl_topic_options_encode(&out, &cfg, false), 0);
    uint32_t pairs;
    assert_true(sl_options_validate(sl_buf_span(&out), &pairs));
    assert_int_equal(pairs, 8);
    sl_tlv_iter_t it = sl_tlv_iter(sl_buf_span(&out));
    sl_tlv_entry_t e, prev = {0};
    for (int i = 0; i < 8; i++) {
        assert_true(sl_tlv_next(&it, &e));
        if (i > 0) {
            size_t m = prev.key.data.len < e.key.data.len ? prev.key.data.len : e.key.data.len;
            int c = memcmp(prev.key.data.ptr, e.key.data.ptr, m);
            assert_true(c < 0 || (c == 0 && prev.key.data.len < e.key.data.len));
        }
        /* Each value has its canonical kind and equals the catalog default. */
        sl_topic_key_t key;
        assert_true(sl_topic_key_find(e.key.data, &key));
        assert_int_equal(e.value.kind, sl_topic_option_catalog[key].kind);
        assert_span_equal(e.value.data, sl_topic_option_catalog[key].default_value);
        prev = e;
    }
}

/* --- options.md 4.2, one test per rule, in order ---------------------------------- */

static int create_body(const blk_t *k, uint32_t partitions)
{
    uint8_t mem[9000];
    sl_buf_t b;
    sl_buf_init_fixed(&b, mem, sizeof(mem));
    sl_put_u8(&b, 1);
    sl_put_u8(&b, 4);
    sl_put_u32(&b, 7);
    sl_put_u32(&b, partitions);
    assert_true(sl_name_encode(&b, sl_span_str("t")));
    sl_put_span(&b, blk_span(k));
    assert_true(sl_buf_ok(&b));
    sl_create_topic_request_t req;
    return sl_create_topic_request_decode(sl_buf_span(&b), &req);
}

static void test_rule1_block_structure_is_status_3(void **state)
{
    (void)state;
    blk_t k;
    /* Truncated value. */
    blk_init(&k);
    put_u64(&k, "segment_size", 128 * MIB);
    k.b.len -= 1;
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_COMMAND);
    /* Odd field count. */
    blk_init(&k);
    assert_true(sl_tlv_put(&k.b, SL_KIND_STRING, sl_span_str("segment_size")));
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_COMMAND);
    /* Duplicate keys, even both valid. */
    blk_init(&k);
    put_str(&k, "enforce_fsync", "true");
    put_str(&k, "enforce_fsync", "true");
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_COMMAND);
    /* Key not String, kind 0, empty value. */
    blk_init(&k);
    put_raw(&k, "x", SL_KIND_STRING, "v", 1);
    k.mem[0] = SL_KIND_RAW;
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_COMMAND);
    k.mem[0] = 0;
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_COMMAND);
    blk_init(&k);
    sl_put_u8(&k.b, SL_KIND_STRING);
    sl_put_u32(&k.b, 1);
    sl_put_u8(&k.b, 'x');
    sl_put_u8(&k.b, SL_KIND_STRING);
    sl_put_u32(&k.b, 0);
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_COMMAND);
    /* Structure wins over everything later, even an unknown key before it. */
    blk_init(&k);
    put_str(&k, "nope", "1");
    put_str(&k, "nope", "1");
    assert_int_equal(create_body(&k, 5000), -SL_ERR_INVALID_COMMAND);
}

static void test_rule2_unknown_key_is_4041(void **state)
{
    (void)state;
    assert_int_equal(resolve_one_str("partitions_count", "3"), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_int_equal(resolve_one_str("Segment_size", "1GiB"), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_int_equal(resolve_one_str("segment_size ", "1GiB"), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_int_equal(resolve_one_str("replication_factor", "1"), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    /* Whatever follows, and whatever the other values would say. */
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_str(&k, "enforce_fsync", "true");
    put_str(&k, "unknown", "x");
    assert_int_equal(resolve(&k, 5000, &cfg), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_int_equal(create_body(&k, 5000), -SL_ERR_UNSUPPORTED_OPTION_KEY);
}

static void test_rule2_bad_value_is_4042(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    const int bad = -SL_ERR_INVALID_OPTION_VALUE;
    struct {
        const char *key;
        uint8_t kind;
        const char *bytes;
        size_t n;
    } cases[] = {
        {"segment_size", SL_KIND_UINT32, "\x00\x00\x10\x00", 4}, /* kind not listed */
        {"segment_size", SL_KIND_UINT64, "\x00\x00\x10\x00", 4}, /* width */
        {"max_topic_size", SL_KIND_INT64, "\x00\x00\x10\x00\0\0\0\0", 8},
        {"message_expiry", SL_KIND_UINT64, "\x01\x02\x03", 3},
        {"message_expiry", SL_KIND_RAW, "10s", 3},
        {"messages_required_to_save", SL_KIND_UINT64, "\x01\0\0\0\0\0\0\0", 8},
        {"messages_required_to_save", SL_KIND_UINT32, "\0\0\0\0", 4},         /* 0 rejected */
        {"messages_required_to_save", SL_KIND_UINT32, "\x01\x00\x00\x01", 4}, /* 2^24+1 */
        {"size_of_messages_required_to_save", SL_KIND_UINT64, "\x01\0\0\x40\0\0\0\0", 8},
        {"enforce_fsync", SL_KIND_BOOL, "\x02", 1},
        {"enforce_fsync", SL_KIND_BOOL, "\x01\x00", 2},
        {"enforce_fsync", SL_KIND_UINT8, "\x01", 1},
        {"preallocate_segments", SL_KIND_STRING, "True", 4},
        {"compression_algorithm", SL_KIND_UINT8, "\x03", 1},
        {"compression_algorithm", SL_KIND_UINT8, "\x00", 1},
        {"compression_algorithm", SL_KIND_UINT8, "\x02\x00", 2},
        {"compression_algorithm", SL_KIND_UINT16, "\x02\x00", 2},
        {"compression_algorithm", SL_KIND_STRING, "zstd", 4},
        {"compression_algorithm", 99, "none", 4},        /* unknown kind code */
        {"segment_size", SL_KIND_STRING, "\xff\xfe", 2}, /* not UTF-8 */
        {"segment_size", SL_KIND_STRING, "12 parsecs", 10},
        {"message_expiry", SL_KIND_STRING, "137 years", 9}, /* > 2^32-1 s */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        blk_init(&k);
        put_raw(&k, cases[i].key, cases[i].kind, cases[i].bytes, cases[i].n);
        int rc = resolve(&k, 1, &cfg);
        if (rc != bad)
            fail_msg("case %zu (%s): got %d", i, cases[i].key, rc);
    }
    /* First failing entry in block order wins. */
    blk_init(&k);
    put_str(&k, "enforce_fsync", "yes");
    put_str(&k, "bogus", "1");
    assert_int_equal(resolve(&k, 1, &cfg), bad);
    blk_init(&k);
    put_str(&k, "bogus", "1");
    put_str(&k, "enforce_fsync", "yes");
    assert_int_equal(resolve(&k, 1, &cfg), -SL_ERR_UNSUPPORTED_OPTION_KEY);
}

static void test_rule3_segment_bounds_are_4042(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    const uint64_t bad_sizes[] = {1, MIB - 512, MIB + 1, MIB + 256, GIB + 512, UINT64_MAX};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_sizes); i++) {
        blk_init(&k);
        put_u64(&k, "segment_size", bad_sizes[i]);
        assert_int_equal(resolve(&k, 1, &cfg), -SL_ERR_INVALID_OPTION_VALUE);
    }
    const uint64_t good_sizes[] = {MIB, MIB + 512, 128 * MIB, GIB};
    for (size_t i = 0; i < SL_ARRAY_LEN(good_sizes); i++) {
        blk_init(&k);
        put_u64(&k, "segment_size", good_sizes[i]);
        assert_int_equal(resolve(&k, 1, &cfg), 0);
        assert_int_equal(cfg.segment_size, good_sizes[i]);
    }
    assert_int_equal(resolve_one_str("segment_size", "1000000"), -SL_ERR_INVALID_OPTION_VALUE);
    assert_int_equal(resolve_one_str("segment_size", "2 GiB"), -SL_ERR_INVALID_OPTION_VALUE);
    /* The bounds run after the per-entry pass: a later unknown key wins. */
    blk_init(&k);
    put_u64(&k, "segment_size", 5);
    put_str(&k, "bogus", "1");
    assert_int_equal(resolve(&k, 1, &cfg), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    /* ...and before the partitions cap. */
    blk_init(&k);
    put_u64(&k, "segment_size", 5);
    assert_int_equal(resolve(&k, 1001, &cfg), -SL_ERR_INVALID_OPTION_VALUE);
}

static void test_rule4_preallocation_cap_is_4042(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    /* Default segment (1 GiB): 64 partitions reach 64 GiB exactly. */
    blk_init(&k);
    put_byte(&k, "preallocate_segments", SL_KIND_BOOL, 1);
    assert_int_equal(resolve(&k, 64, &cfg), 0);
    assert_true(cfg.preallocate_segments);
    assert_int_equal(resolve(&k, 65, &cfg), -SL_ERR_INVALID_OPTION_VALUE);
    /* Checked before the partitions cap. */
    assert_int_equal(resolve(&k, 1001, &cfg), -SL_ERR_INVALID_OPTION_VALUE);
    /* With an explicit segment size, the effective one counts. */
    blk_init(&k);
    put_str(&k, "preallocate_segments", "true");
    put_str(&k, "segment_size", "128 MiB");
    assert_int_equal(resolve(&k, 512, &cfg), 0);
    assert_int_equal(resolve(&k, 513, &cfg), -SL_ERR_INVALID_OPTION_VALUE);
    /* Not preallocating: no cap. */
    blk_init(&k);
    put_str(&k, "preallocate_segments", "false");
    assert_int_equal(resolve(&k, 1000, &cfg), 0);
    assert_false(cfg.preallocate_segments);
}

static void test_rule5_partitions_over_1000_is_2015(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    assert_int_equal(resolve(&k, 1000, &cfg), 0);
    assert_int_equal(resolve(&k, 0, &cfg), 0);
    assert_int_equal(resolve(&k, 1001, &cfg), -SL_ERR_TOO_MANY_PARTITIONS);
    assert_int_equal(resolve(&k, UINT32_MAX, &cfg), -SL_ERR_TOO_MANY_PARTITIONS);
    /* Before the topic size floor. */
    put_u64(&k, "max_topic_size", 1);
    assert_int_equal(resolve(&k, 1001, &cfg), -SL_ERR_TOO_MANY_PARTITIONS);
    assert_int_equal(create_body(&k, 1001), -SL_ERR_TOO_MANY_PARTITIONS);
}

static void test_rule6_topic_size_below_segment_is_1019(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_u64(&k, "max_topic_size", GIB - 1);
    assert_int_equal(resolve(&k, 1, &cfg), -SL_ERR_INVALID_TOPIC_SIZE);
    assert_int_equal(create_body(&k, 1), -SL_ERR_INVALID_TOPIC_SIZE);
    blk_init(&k);
    put_u64(&k, "max_topic_size", GIB);
    assert_int_equal(resolve(&k, 1, &cfg), 0);
    assert_int_equal(cfg.max_topic_size, GIB);
    /* The effective segment size is the floor. */
    blk_init(&k);
    put_str(&k, "segment_size", "1MiB");
    put_str(&k, "max_topic_size", "1MB");
    assert_int_equal(resolve(&k, 1, &cfg), -SL_ERR_INVALID_TOPIC_SIZE);
    blk_init(&k);
    put_str(&k, "segment_size", "1MiB");
    put_str(&k, "max_topic_size", "2MiB");
    assert_int_equal(resolve(&k, 1, &cfg), 0);
    /* 0 (server default) and unlimited are exempt. */
    assert_int_equal(resolve_one_str("max_topic_size", "0"), 0);
    assert_int_equal(resolve_one_str("max_topic_size", "server_default"), 0);
    assert_int_equal(resolve_one_str("max_topic_size", "unlimited"), 0);
    assert_int_equal(resolve_one_str("max_topic_size", "1KB"), -SL_ERR_INVALID_TOPIC_SIZE);
}

/* --- options.md 4.4 ---------------------------------------------------------------- */

/* Finds key in a stored block. */
static bool block_value(sl_span_t block, const char *key, sl_tlv_field_t *out)
{
    return sl_options_find(block, key, out);
}

static void encode_blocks(const sl_topic_config_t *cfg, sl_buf_t *ex, sl_buf_t *de)
{
    assert_int_equal(sl_topic_options_encode(ex, cfg, true), 0);
    assert_int_equal(sl_topic_options_encode(de, cfg, false), 0);
}

static void test_create_stores_canonical_kinds(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_str(&k, "segment_size", "128MiB");
    put_str(&k, "compression_algorithm", "GZIP");
    put_str(&k, "enforce_fsync", "true");
    put_str(&k, "messages_required_to_save", "500");
    put_str(&k, "message_expiry", "7 days");
    put_str(&k, "max_topic_size", "unlimited");
    put_str(&k, "size_of_messages_required_to_save", "4KiB");
    put_str(&k, "preallocate_segments", "false");
    assert_int_equal(resolve(&k, 3, &cfg), 0);
    assert_int_equal(cfg.explicit_keys, SL_TOPIC_KEYS_ALL);

    uint8_t m1[1024], m2[1024];
    sl_buf_t ex, de;
    sl_buf_init_fixed(&ex, m1, sizeof(m1));
    sl_buf_init_fixed(&de, m2, sizeof(m2));
    encode_blocks(&cfg, &ex, &de);
    assert_int_equal(de.len, 0);
    sl_tlv_field_t v;
    assert_true(block_value(sl_buf_span(&ex), "segment_size", &v));
    assert_int_equal(v.kind, SL_KIND_UINT64);
    assert_int_equal(sl_load_u64(v.data.ptr), 134217728);
    assert_true(block_value(sl_buf_span(&ex), "compression_algorithm", &v));
    assert_int_equal(v.kind, SL_KIND_STRING);
    assert_span_str(v.data, "gzip");
    assert_true(block_value(sl_buf_span(&ex), "enforce_fsync", &v));
    assert_int_equal(v.kind, SL_KIND_BOOL);
    assert_int_equal(v.data.len, 1);
    assert_int_equal(v.data.ptr[0], 1);
    assert_true(block_value(sl_buf_span(&ex), "messages_required_to_save", &v));
    assert_int_equal(v.kind, SL_KIND_UINT32);
    assert_int_equal(sl_load_u32(v.data.ptr), 500);
    assert_true(block_value(sl_buf_span(&ex), "message_expiry", &v));
    assert_int_equal(v.kind, SL_KIND_UINT64);
    assert_int_equal(sl_load_u64(v.data.ptr), 7ull * 86400 * 1000000);
    assert_true(block_value(sl_buf_span(&ex), "max_topic_size", &v));
    assert_true(sl_load_u64(v.data.ptr) == UINT64_MAX);
    assert_true(block_value(sl_buf_span(&ex), "size_of_messages_required_to_save", &v));
    assert_int_equal(sl_load_u64(v.data.ptr), 4096);
    assert_true(block_value(sl_buf_span(&ex), "preallocate_segments", &v));
    assert_int_equal(v.data.ptr[0], 0);

    /* A Uint8 compression code is stored as its name. */
    blk_init(&k);
    put_byte(&k, "compression_algorithm", SL_KIND_UINT8, 2);
    assert_int_equal(resolve(&k, 1, &cfg), 0);
    assert_int_equal(cfg.compression_algorithm, SL_COMPRESSION_GZIP);
    sl_buf_reset(&ex);
    sl_buf_reset(&de);
    encode_blocks(&cfg, &ex, &de);
    assert_true(block_value(sl_buf_span(&ex), "compression_algorithm", &v));
    assert_int_equal(v.kind, SL_KIND_STRING);
    assert_span_str(v.data, "gzip");
}

static void test_create_drops_sentinel_zero(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_u64(&k, "message_expiry", 0);
    put_u64(&k, "max_topic_size", 0);
    put_str(&k, "segment_size", "unlimited"); /* a byte-size word for 0 */
    put_u64(&k, "size_of_messages_required_to_save", 0);
    put_str(&k, "enforce_fsync", "false"); /* not a sentinel: stays explicit */
    assert_int_equal(resolve(&k, 1, &cfg), 0);
    assert_int_equal(cfg.explicit_keys, SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_ENFORCE_FSYNC));
    assert_true(cfg.message_expiry == UINT64_MAX);
    assert_true(cfg.max_topic_size == UINT64_MAX);
    assert_int_equal(cfg.segment_size, GIB);
    assert_int_equal(cfg.size_of_messages_required_to_save, MIB);

    /* The server-default words of message_expiry behave the same. */
    assert_int_equal(resolve_one_str("message_expiry", "server_default"), 0);
    blk_init(&k);
    put_str(&k, "message_expiry", "Default");
    assert_int_equal(resolve(&k, 1, &cfg), 0);
    assert_int_equal(cfg.explicit_keys, 0);
    assert_true(cfg.message_expiry == UINT64_MAX);
}

static void test_create_blocks_cover_every_key_once(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_str(&k, "message_expiry", "1h 30m");
    put_u64(&k, "max_topic_size", 0);
    put_u32(&k, "messages_required_to_save", 7);
    assert_int_equal(resolve(&k, 2, &cfg), 0);
    uint8_t m1[1024], m2[1024];
    sl_buf_t ex, de;
    sl_buf_init_fixed(&ex, m1, sizeof(m1));
    sl_buf_init_fixed(&de, m2, sizeof(m2));
    encode_blocks(&cfg, &ex, &de);
    uint32_t pe, pd;
    assert_true(sl_options_validate(sl_buf_span(&ex), &pe));
    assert_true(sl_options_validate(sl_buf_span(&de), &pd));
    assert_int_equal(pe, 2);
    assert_int_equal(pd, 6);
    for (int key = 0; key < SL_TOPIC_KEY_COUNT; key++) {
        sl_tlv_field_t v;
        const char *name = sl_topic_key_name((sl_topic_key_t)key);
        bool in_ex = block_value(sl_buf_span(&ex), name, &v);
        bool in_de = block_value(sl_buf_span(&de), name, &v);
        assert_true(in_ex != in_de);
    }
    /* The fixed reply fields are the effective values. */
    assert_int_equal(cfg.message_expiry, 5400ull * 1000000);
    assert_int_equal(cfg.compression_algorithm, SL_COMPRESSION_NONE);
    assert_true(cfg.max_topic_size == UINT64_MAX);

    /* Reading the stored blocks back gives the same config. */
    sl_topic_config_t back;
    sl_topic_config_from_blocks(sl_buf_span(&ex), sl_buf_span(&de), &back);
    assert_config_equal(&back, &cfg);
}

static int update_parse(const blk_t *k, sl_topic_patch_t *patch)
{
    uint32_t pairs;
    assert_true(sl_options_validate(blk_span(k), &pairs));
    return sl_topic_patch_parse(blk_span(k), patch);
}

static void test_update_key_gate_is_4041(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_patch_t patch;
    static const char *const create_only[] = {
        "segment_size",
        "enforce_fsync",
        "messages_required_to_save",
        "size_of_messages_required_to_save",
        "preallocate_segments",
        "partitions_count",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(create_only); i++) {
        blk_init(&k);
        put_str(&k, create_only[i], "1");
        assert_int_equal(update_parse(&k, &patch), -SL_ERR_UNSUPPORTED_OPTION_KEY);
    }
    /* Every key is gated before any value parses (unlike create). */
    blk_init(&k);
    put_str(&k, "compression_algorithm", "lz4");
    put_str(&k, "segment_size", "1GiB");
    assert_int_equal(update_parse(&k, &patch), -SL_ERR_UNSUPPORTED_OPTION_KEY);
}

static void test_update_bad_value_is_4042(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_patch_t patch;
    blk_init(&k);
    put_str(&k, "message_expiry", "soon");
    assert_int_equal(update_parse(&k, &patch), -SL_ERR_INVALID_OPTION_VALUE);
    blk_init(&k);
    put_byte(&k, "compression_algorithm", SL_KIND_UINT8, 9);
    assert_int_equal(update_parse(&k, &patch), -SL_ERR_INVALID_OPTION_VALUE);
    blk_init(&k);
    put_u32(&k, "max_topic_size", 5);
    assert_int_equal(update_parse(&k, &patch), -SL_ERR_INVALID_OPTION_VALUE);
}

static void test_update_size_floor_is_1019(void **state)
{
    (void)state;
    blk_t k;
    sl_topic_patch_t patch;
    blk_init(&k);
    put_str(&k, "max_topic_size", "100MiB");
    assert_int_equal(update_parse(&k, &patch), 0);
    assert_int_equal(patch.max_topic_size, 100 * MIB);
    assert_int_equal(sl_topic_patch_check_size(&patch, 128 * MIB), -SL_ERR_INVALID_TOPIC_SIZE);
    assert_int_equal(sl_topic_patch_check_size(&patch, 100 * MIB), 0);
    assert_int_equal(sl_topic_patch_check_size(&patch, MIB), 0);
    /* Nothing stored: 1 GiB. */
    assert_int_equal(sl_topic_patch_check_size(&patch, 0), -SL_ERR_INVALID_TOPIC_SIZE);
    /* Exempt values, and patches without the key. */
    patch.max_topic_size = 0;
    assert_int_equal(sl_topic_patch_check_size(&patch, GIB), 0);
    patch.max_topic_size = UINT64_MAX;
    assert_int_equal(sl_topic_patch_check_size(&patch, GIB), 0);
    patch = (sl_topic_patch_t){.keys = SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MESSAGE_EXPIRY)};
    assert_int_equal(sl_topic_patch_check_size(&patch, GIB), 0);
}

/* A topic created with explicit segment_size (the rest derived) and an
 * update sending expiry as text, max size 0 (the sentinel) and a gzip code. */
typedef struct update_scenario {
    sl_topic_config_t cfg;
    uint8_t mem[2][1024];
    sl_buf_t explicit_block, derived_block;
    blk_t update;
    sl_topic_patch_t patch;
} update_scenario_t;

static void update_scenario(update_scenario_t *s)
{
    blk_t k;
    blk_init(&k);
    put_u64(&k, "segment_size", 128 * MIB);
    assert_int_equal(resolve(&k, 2, &s->cfg), 0);
    sl_buf_init_fixed(&s->explicit_block, s->mem[0], sizeof(s->mem[0]));
    sl_buf_init_fixed(&s->derived_block, s->mem[1], sizeof(s->mem[1]));
    encode_blocks(&s->cfg, &s->explicit_block, &s->derived_block);
    blk_init(&s->update);
    put_str(&s->update, "message_expiry", "10s");
    put_u64(&s->update, "max_topic_size", 0);
    put_byte(&s->update, "compression_algorithm", SL_KIND_UINT8, 2);
    assert_int_equal(update_parse(&s->update, &s->patch), 0);
}

static void test_update_patches_fixed_fields(void **state)
{
    (void)state;
    update_scenario_t s;
    update_scenario(&s);
    assert_int_equal(s.patch.keys, SL_TOPIC_KEYS_UPDATABLE);
    assert_int_equal(sl_topic_patch_check_size(&s.patch, s.cfg.segment_size), 0);
    sl_topic_patch_apply(&s.patch, &s.cfg);
    assert_int_equal(s.cfg.message_expiry, 10000000);
    assert_true(s.cfg.max_topic_size == UINT64_MAX); /* unchanged by the sentinel */
    assert_int_equal(s.cfg.compression_algorithm, SL_COMPRESSION_GZIP);
    assert_int_equal(s.cfg.segment_size, 128 * MIB); /* not sent: kept */
    assert_int_equal(s.cfg.explicit_keys,
                     SL_TOPIC_KEYS_UPDATABLE | SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE));
    /* A non-zero size replaces the field. */
    s.patch.max_topic_size = 5 * GIB;
    sl_topic_patch_apply(&s.patch, &s.cfg);
    assert_int_equal(s.cfg.max_topic_size, 5 * GIB);
}

static void test_update_stores_entries_verbatim(void **state)
{
    (void)state;
    update_scenario_t s;
    update_scenario(&s);
    uint8_t m3[1024], m4[1024];
    sl_buf_t ex, de;
    sl_buf_init_fixed(&ex, m3, sizeof(m3));
    sl_buf_init_fixed(&de, m4, sizeof(m4));
    assert_int_equal(sl_topic_options_patch_blocks(sl_buf_span(&s.explicit_block),
                                                   sl_buf_span(&s.derived_block),
                                                   blk_span(&s.update), &ex, &de),
                     0);
    uint32_t pe, pd;
    assert_true(sl_options_validate(sl_buf_span(&ex), &pe));
    assert_true(sl_options_validate(sl_buf_span(&de), &pd));
    assert_int_equal(pe, 4);
    assert_int_equal(pd, 4);
    /* The client's kinds and bytes, replacing the derived entries. */
    sl_tlv_field_t v;
    assert_true(block_value(sl_buf_span(&ex), "message_expiry", &v));
    assert_int_equal(v.kind, SL_KIND_STRING);
    assert_span_str(v.data, "10s");
    assert_true(block_value(sl_buf_span(&ex), "max_topic_size", &v));
    assert_int_equal(v.kind, SL_KIND_UINT64);
    assert_int_equal(sl_load_u64(v.data.ptr), 0);
    assert_true(block_value(sl_buf_span(&ex), "compression_algorithm", &v));
    assert_int_equal(v.kind, SL_KIND_UINT8);
    assert_true(block_value(sl_buf_span(&ex), "segment_size", &v));
    assert_false(block_value(sl_buf_span(&de), "message_expiry", &v));
    assert_true(block_value(sl_buf_span(&de), "enforce_fsync", &v));
    /* Sorted by key bytes. */
    sl_tlv_iter_t it = sl_tlv_iter(sl_buf_span(&ex));
    sl_tlv_entry_t e;
    const char *order[] = {"compression_algorithm", "max_topic_size", "message_expiry",
                           "segment_size"};
    for (int i = 0; i < 4; i++) {
        assert_true(sl_tlv_next(&it, &e));
        assert_span_str(e.key.data, order[i]);
    }
    /* Read back, the sentinel keeps the earlier value. */
    sl_topic_config_t back;
    sl_topic_config_from_blocks(sl_buf_span(&ex), sl_buf_span(&de), &back);
    sl_topic_patch_apply(&s.patch, &s.cfg);
    assert_config_equal(&back, &s.cfg);
}

static void test_update_blocks_refuse_oversized(void **state)
{
    (void)state;
    /* A topic stores at most one entry per catalog key in each block. */
    blk_t big;
    blk_init(&big);
    for (int i = 0; i < 9; i++) {
        char key[2] = {(char)('a' + i), 0};
        put_str(&big, key, "1");
    }
    uint8_t m1[1024], m2[1024];
    sl_buf_t ex, de;
    sl_buf_init_fixed(&ex, m1, sizeof(m1));
    sl_buf_init_fixed(&de, m2, sizeof(m2));
    sl_span_t none = sl_span(NULL, 0);
    assert_int_equal(sl_topic_options_patch_blocks(blk_span(&big), none, none, &ex, &de),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_topic_options_patch_blocks(none, blk_span(&big), none, &ex, &de),
                     -SL_ERR_INVALID_FORMAT);
    /* A buffer too small for the result. */
    sl_buf_t tiny;
    uint8_t tiny_mem[8];
    sl_buf_init_fixed(&tiny, tiny_mem, sizeof(tiny_mem));
    update_scenario_t s;
    update_scenario(&s);
    assert_int_equal(sl_topic_options_patch_blocks(sl_buf_span(&s.explicit_block),
                                                   sl_buf_span(&s.derived_block),
                                                   blk_span(&s.update), &tiny, &de),
                     -SL_ERR_COMMAND_LENGTH_ERROR);
    sl_buf_reset(&tiny);
    assert_int_equal(sl_topic_options_encode(&tiny, &s.cfg, false), -SL_ERR_COMMAND_LENGTH_ERROR);
    /* An unencodable compression code. */
    s.cfg.compression_algorithm = 7;
    assert_int_equal(sl_topic_options_encode(&ex, &s.cfg, false), -SL_ERR_INVALID_COMMAND);
}

/* --- options.md 4.3 string forms ----------------------------------------------------- */

static uint64_t byte_size(const char *s)
{
    uint64_t v = 12345;
    if (!sl_parse_byte_size(sl_span_str(s), &v))
        fail_msg("byte size '%s' did not parse", s);
    return v;
}

static void test_byte_size_strings(void **state)
{
    (void)state;
    assert_int_equal(byte_size("128 MiB"), 134217728);
    assert_int_equal(byte_size("128MiB"), 134217728);
    assert_int_equal(byte_size("1GB"), 1000000000);
    assert_int_equal(byte_size("1 GiB"), 1073741824);
    assert_int_equal(byte_size("0"), 0);
    assert_int_equal(byte_size("unlimited"), 0);
    assert_int_equal(byte_size("Unlimited"), 0);
    assert_int_equal(byte_size("none"), 0);
    assert_int_equal(byte_size("None"), 0);
    assert_int_equal(byte_size("1048576"), 1048576);
    assert_int_equal(byte_size("42B"), 42);
    assert_int_equal(byte_size(" 5 KB "), 5000);
    assert_int_equal(byte_size("3K"), 3000);
    assert_int_equal(byte_size("3k"), 3000);
    assert_int_equal(byte_size("3KiB"), 3072);
    assert_int_equal(byte_size("3Ki"), 3072);
    assert_int_equal(byte_size("1.5 KiB"), 1536);
    assert_int_equal(byte_size("1.5MB"), 1500000);
    assert_int_equal(byte_size("0.25 GiB"), 268435456);
    assert_int_equal(byte_size("2M"), 2000000);
    assert_int_equal(byte_size("2MiB"), 2097152);
    assert_int_equal(byte_size("2T"), 2000000000000ull);
    assert_int_equal(byte_size("2 TiB"), 2ull << 40);
    assert_int_equal(byte_size("1PB"), 1000000000000000ull);
    assert_int_equal(byte_size("1PiB"), 1ull << 50);
    assert_int_equal(byte_size("1EB"), 1000000000000000000ull);
    assert_int_equal(byte_size("15EiB"), 15ull << 60);
    /* Lower-case b and bit are bits. */
    assert_int_equal(byte_size("16b"), 2);
    assert_int_equal(byte_size("16bit"), 2);
    assert_int_equal(byte_size("16 bits"), 2);
    assert_int_equal(byte_size("1Kb"), 125);
    assert_int_equal(byte_size("1Kib"), 128);
    assert_int_equal(byte_size("8Mbit"), 1000000);
    /* Fractional bytes round up. */
    assert_int_equal(byte_size("1b"), 1);
    assert_int_equal(byte_size("0.5"), 1);
    assert_int_equal(byte_size("1.0000000000000000000001 KB"), 1001);

    assert_int_equal(byte_size("1e"), 1000000000000000000ull);
    assert_int_equal(byte_size("18446744073709551615"), UINT64_MAX);
}

static void test_byte_size_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        " ",
        "abc",
        "-1",
        "+1",
        "1 XB",
        "1.",
        ".5",
        "1..5",
        "1.5.5",
        "1 i",
        "1KiBB",
        "1 KB B",
        "16EiB",
        "18446744073709551616",
        "1 GiB extra",
        "1,5MB",
        "1e3",
        "0x10",
        "unlimited ",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint64_t v;
        if (sl_parse_byte_size(sl_span_str(bad[i]), &v))
            fail_msg("'%s' parsed as %llu", bad[i], (unsigned long long)v);
    }
}

static void test_max_topic_size_strings(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(sl_parse_max_topic_size(sl_span_str("unlimited"), &v));
    assert_true(v == UINT64_MAX);
    assert_true(sl_parse_max_topic_size(sl_span_str("0"), &v));
    assert_int_equal(v, 0);
    assert_true(sl_parse_max_topic_size(sl_span_str("server_default"), &v));
    assert_int_equal(v, 0);
    /* The other byte-size words mean 0 here too. */
    assert_true(sl_parse_max_topic_size(sl_span_str("Unlimited"), &v));
    assert_int_equal(v, 0);
    assert_true(sl_parse_max_topic_size(sl_span_str("10 GiB"), &v));
    assert_int_equal(v, 10 * GIB);
    assert_true(sl_parse_max_topic_size(sl_span_str("18446744073709551615"), &v));
    assert_true(v == UINT64_MAX);
    assert_false(sl_parse_max_topic_size(sl_span_str("infinite"), &v));

    /* Through the catalog: a String value gives the same numbers. */
    blk_t k;
    sl_topic_config_t cfg;
    blk_init(&k);
    put_str(&k, "max_topic_size", "unlimited");
    assert_int_equal(resolve(&k, 1, &cfg), 0);
    assert_true(cfg.max_topic_size == UINT64_MAX);
    assert_int_equal(cfg.explicit_keys, SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE));
}

static uint64_t expiry(const char *s)
{
    uint64_t v = 12345;
    if (!sl_parse_message_expiry(sl_span_str(s), &v))
        fail_msg("expiry '%s' did not parse", s);
    return v;
}

static void test_duration_strings(void **state)
{
    (void)state;
    const uint64_t s = 1000000;
    assert_int_equal(expiry("7 days"), 7 * 86400 * s);
    assert_int_equal(expiry("1h 30m"), 5400 * s);
    assert_int_equal(expiry("1h30m"), 5400 * s);
    assert_int_equal(expiry("10s"), 10 * s);
    assert_int_equal(expiry("  10s  "), 10 * s);
    assert_int_equal(expiry("1 0s"), 10 * s); /* spaces inside a number are skipped */
    assert_int_equal(expiry("2 weeks"), 14 * 86400 * s);
    assert_int_equal(expiry("1w"), 7 * 86400 * s);
    assert_int_equal(expiry("1M"), 2630016 * s);
    assert_int_equal(expiry("2 months"), 2 * 2630016 * s);
    assert_int_equal(expiry("1y"), 31557600 * s);
    assert_int_equal(expiry("1 year"), 31557600 * s);
    assert_int_equal(expiry("136 years"), 136ull * 31557600 * s);
    assert_int_equal(expiry("1d"), 86400 * s);
    assert_int_equal(expiry("1 day 1 hour 1 minute 1 second"), 90061 * s);
    assert_int_equal(expiry("5min"), 300 * s);
    assert_int_equal(expiry("5 minutes"), 300 * s);
    assert_int_equal(expiry("2hr"), 7200 * s);
    assert_int_equal(expiry("2 hours"), 7200 * s);
    assert_int_equal(expiry("3sec"), 3 * s);
    assert_int_equal(expiry("500ms"), 500000);
    assert_int_equal(expiry("500msec"), 500000);
    assert_int_equal(expiry("1500us"), 1500);
    assert_int_equal(expiry("1500usec"), 1500);
    assert_int_equal(expiry("1500ns"), 1);
    assert_int_equal(expiry("999nsec"), 0);
    assert_int_equal(expiry("1s 999999999ns"), 1999999);
    assert_int_equal(expiry("4294967295s"), 4294967295ull * s);
    /* Words. */
    static const char *const never[] = {"unlimited", "none", "None", "Unlimited", "never_expire"};
    for (size_t i = 0; i < SL_ARRAY_LEN(never); i++)
        assert_true(expiry(never[i]) == UINT64_MAX);
    static const char *const server_default[] = {"default", "server_default", "Default",
                                                 "Server_default"};
    for (size_t i = 0; i < SL_ARRAY_LEN(server_default); i++)
        assert_int_equal(expiry(server_default[i]), 0);

    static const char *const bad[] = {
        "",
        "  ",
        "10",
        "0",
        "s",
        "10 parsecs",
        "1h-30m",
        "1.5h",
        "137 years",
        "4294967296s",
        "h1",
        "1h,",
        "NEVER",
        "-5s",
        "18446744073709551616s",
        "99999999999999999999y",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint64_t v;
        if (sl_parse_message_expiry(sl_span_str(bad[i]), &v))
            fail_msg("'%s' parsed as %llu", bad[i], (unsigned long long)v);
    }
}

static uint64_t parsed(sl_topic_key_t key, uint8_t kind, const char *text)
{
    sl_tlv_field_t f = {kind, sl_span_str(text)};
    uint64_t v = 12345;
    int rc = sl_topic_option_parse(key, &f, &v);
    if (rc != 0)
        fail_msg("%s '%s' -> %d", sl_topic_key_name(key), text, rc);
    return v;
}

static int parse_rc(sl_topic_key_t key, uint8_t kind, const char *text)
{
    sl_tlv_field_t f = {kind, sl_span_str(text)};
    uint64_t v;
    return sl_topic_option_parse(key, &f, &v);
}

static void test_other_string_forms(void **state)
{
    (void)state;
    const uint8_t S = SL_KIND_STRING;
    const int bad = -SL_ERR_INVALID_OPTION_VALUE;
    /* messages_required_to_save: plain decimal u32 in range. */
    assert_int_equal(parsed(SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE, S, "500"), 500);
    assert_int_equal(parsed(SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE, S, "+7"), 7);
    assert_int_equal(parsed(SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE, S, "16777216"), 16777216);
    static const char *const bad_counts[] = {"",    "0",     "16777217", "4294967296", "-1",
                                             "1e3", "1 000", " 5",       "5 ",         "+"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_counts); i++)
        assert_int_equal(parse_rc(SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE, S, bad_counts[i]), bad);
    /* Booleans: exactly true / false. */
    assert_int_equal(parsed(SL_TOPIC_KEY_ENFORCE_FSYNC, S, "true"), 1);
    assert_int_equal(parsed(SL_TOPIC_KEY_ENFORCE_FSYNC, S, "false"), 0);
    assert_int_equal(parsed(SL_TOPIC_KEY_PREALLOCATE_SEGMENTS, S, "true"), 1);
    static const char *const bad_bools[] = {"True", "FALSE", "1", "0", "yes", "true ", ""};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_bools); i++)
        assert_int_equal(parse_rc(SL_TOPIC_KEY_ENFORCE_FSYNC, S, bad_bools[i]), bad);
    /* Compression: either name, any case. */
    assert_int_equal(parsed(SL_TOPIC_KEY_COMPRESSION_ALGORITHM, S, "none"), 1);
    assert_int_equal(parsed(SL_TOPIC_KEY_COMPRESSION_ALGORITHM, S, "NONE"), 1);
    assert_int_equal(parsed(SL_TOPIC_KEY_COMPRESSION_ALGORITHM, S, "Gzip"), 2);
    assert_int_equal(parsed(SL_TOPIC_KEY_COMPRESSION_ALGORITHM, S, "gZiP"), 2);
    assert_int_equal(parse_rc(SL_TOPIC_KEY_COMPRESSION_ALGORITHM, S, "gzip "), bad);
    assert_int_equal(parse_rc(SL_TOPIC_KEY_COMPRESSION_ALGORITHM, S, "1"), bad);
    /* Byte-size keys take byte sizes; the size_of cap is 1 GiB. */
    assert_int_equal(parsed(SL_TOPIC_KEY_SEGMENT_SIZE, S, "128 MiB"), 134217728);
    assert_int_equal(parsed(SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE, S, "1GiB"), GIB);
    assert_int_equal(parse_rc(SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE, S, "1.1GiB"), bad);
    assert_int_equal(parsed(SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE, S, "none"), 0);
    /* Expiry through the catalog. */
    assert_int_equal(parsed(SL_TOPIC_KEY_MESSAGE_EXPIRY, S, "7 days"), 604800000000ull);
    assert_true(parsed(SL_TOPIC_KEY_MESSAGE_EXPIRY, S, "never_expire") == UINT64_MAX);
}

/* --- DescribeOptions catalog (options.md 5) ----------------------------------------- */

static void test_describe_catalog(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        uint8_t kind;
        const char *default_hex;
        const char *must_mention[3];
    } want[] = {
        {"compression_algorithm", 2, "6e 6f 6e 65", {"none", "gzip", NULL}},
        {"message_expiry", 12, "ff ff ff ff ff ff ff ff", {"microseconds", "humantime", NULL}},
        {"max_topic_size", 12, "ff ff ff ff ff ff ff ff", {"bytes", "byte-size", "segment size"}},
        {"segment_size", 12, "00 00 00 40 00 00 00 00", {"512", "1048576", "1073741824"}},
        {"enforce_fsync", 3, "00", {"fsync", NULL, NULL}},
        {"messages_required_to_save", 11, "00 04 00 00", {"16777216", "journal", NULL}},
        {"size_of_messages_required_to_save",
         12,
         "00 00 10 00 00 00 00 00",
         {"1073741824", "whichever", NULL}},
        {"preallocate_segments",
         3,
         "00",
         {"disk", "segment_size * partitions_count", "68719476736"}},
    };
    const sl_topic_option_info_t *items;
    uint32_t count;
    assert_int_equal(sl_option_catalog(1, &items, &count), 0);
    assert_int_equal(count, 8);
    assert_ptr_equal(items, sl_topic_option_catalog);
    for (size_t i = 0; i < SL_ARRAY_LEN(want); i++) {
        assert_string_equal(items[i].key, want[i].key);
        assert_int_equal(items[i].kind, want[i].kind);
        size_t n;
        uint8_t *def = tu_hex(want[i].default_hex, &n);
        assert_bytes_equal(items[i].default_value.ptr, items[i].default_value.len, def, n);
        free(def);
        const char *d = items[i].description;
        assert_true(strlen(d) > 20);
        assert_true(sl_utf8_valid((const uint8_t *)d, strlen(d)));
        for (int m = 0; m < 3 && want[i].must_mention[m]; m++)
            if (strstr(d, want[i].must_mention[m]) == NULL)
                fail_msg("%s: description lacks '%s'", want[i].key, want[i].must_mention[m]);
        /* The default parses back to the built-in default value. */
        static const uint64_t defaults[SL_TOPIC_KEY_COUNT] = {
            SL_COMPRESSION_NONE, UINT64_MAX, UINT64_MAX, GIB, 0, 1024, MIB, 0};
        uint64_t v;
        sl_tlv_field_t f = {items[i].kind, items[i].default_value};
        assert_int_equal(sl_topic_option_parse((sl_topic_key_t)i, &f, &v), 0);
        assert_true(v == defaults[i]);
        sl_topic_key_t key;
        assert_true(sl_topic_key_find(sl_span_str(want[i].key), &key));
        assert_int_equal(key, i);
        assert_string_equal(sl_topic_key_name(key), want[i].key);
    }
    assert_int_equal(sl_option_catalog(2, &items, &count), 0);
    assert_int_equal(count, 0);
    assert_null(items);
    assert_int_equal(sl_option_catalog(3, &items, &count), 0);
    assert_int_equal(count, 0);
    assert_int_equal(sl_option_catalog(0, &items, &count), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_option_catalog(4, &items, &count), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_option_catalog(255, &items, &count), -SL_ERR_INVALID_COMMAND);
}

/* --- hostile values --------------------------------------------------------------------- */

static void test_every_kind_for_every_key(void **state)
{
    (void)state;
    /* Besides String, each key takes exactly one kind at its exact width
     * (options.md 4.1). A value of 1 is in range for every key; a String of
     * a 0x01 byte parses for none. */
    static const uint8_t numeric_kind[SL_TOPIC_KEY_COUNT] = {
        SL_KIND_UINT8, SL_KIND_UINT64, SL_KIND_UINT64, SL_KIND_UINT64,
        SL_KIND_BOOL,  SL_KIND_UINT32, SL_KIND_UINT64, SL_KIND_BOOL,
    };
    uint8_t one[16] = {1};
    for (int key = 0; key < SL_TOPIC_KEY_COUNT; key++) {
        for (unsigned kind = 1; kind <= 20; kind++) {
            for (size_t width = 1; width <= 16; width++) {
                sl_tlv_field_t f = {(uint8_t)kind, sl_span(one, width)};
                uint64_t v;
                int rc = sl_topic_option_parse((sl_topic_key_t)key, &f, &v);
                bool listed = kind == numeric_kind[key] && width == sl_kind_width((uint8_t)kind);
                if (rc != (listed ? 0 : -SL_ERR_INVALID_OPTION_VALUE))
                    fail_msg("key %d kind %u width %zu -> %d", key, kind, width, rc);
                if (listed)
                    assert_int_equal(v, 1);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_block_decoded_and_resolved),
        cmocka_unit_test(test_empty_block_resolves_to_defaults),
        cmocka_unit_test(test_rule1_block_structure_is_status_3),
        cmocka_unit_test(test_rule2_unknown_key_is_4041),
        cmocka_unit_test(test_rule2_bad_value_is_4042),
        cmocka_unit_test(test_rule3_segment_bounds_are_4042),
        cmocka_unit_test(test_rule4_preallocation_cap_is_4042),
        cmocka_unit_test(test_rule5_partitions_over_1000_is_2015),
        cmocka_unit_test(test_rule6_topic_size_below_segment_is_1019),
        cmocka_unit_test(test_create_stores_canonical_kinds),
        cmocka_unit_test(test_create_drops_sentinel_zero),
        cmocka_unit_test(test_create_blocks_cover_every_key_once),
        cmocka_unit_test(test_update_key_gate_is_4041),
        cmocka_unit_test(test_update_bad_value_is_4042),
        cmocka_unit_test(test_update_size_floor_is_1019),
        cmocka_unit_test(test_update_patches_fixed_fields),
        cmocka_unit_test(test_update_stores_entries_verbatim),
        cmocka_unit_test(test_update_blocks_refuse_oversized),
        cmocka_unit_test(test_byte_size_strings),
        cmocka_unit_test(test_byte_size_rejects),
        cmocka_unit_test(test_max_topic_size_strings),
        cmocka_unit_test(test_duration_strings),
        cmocka_unit_test(test_other_string_forms),
        cmocka_unit_test(test_describe_catalog),
        cmocka_unit_test(test_every_kind_for_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
