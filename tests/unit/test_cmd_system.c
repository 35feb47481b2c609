/* System command codecs (wire/cmd_system.h): the GetMe golden reply of
 * commands.md 13.3, round trips of every request and reply, and hostile
 * input for every decoder. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cmd_system.h"

/* --- helpers ------------------------------------------------------------------ */

static sl_arena_t arena;

static int setup(void **state)
{
    (void)state;
    sl_arena_init(&arena, 4096, 1u << 20);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_arena_free(&arena);
    return 0;
}

/* An exactly-sized heap copy, so ASan sees any read past the end. */
static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    assert_non_null(c);
    if (n)
        memcpy(c, p, n);
    return c;
}

/* Every proper prefix of a request body gives `code`. */
#define ASSERT_REQUEST_PREFIXES(fn, type, bytes, n, code)                                          \
    for (size_t cut_ = 0; cut_ < (n); cut_++) {                                                    \
        uint8_t *c_ = dup_bytes((bytes), cut_);                                                    \
        type o_;                                                                                   \
        assert_int_equal(fn(sl_span(c_, cut_), &o_), (code));                                      \
        free(c_);                                                                                  \
    }

/* Decodes a reply from an exactly-sized copy (freed by the caller). */
#define DECODE_REPLY(fn, bytes, n, out, copy)                                                      \
    fn(sl_span((copy) = dup_bytes((bytes), (n)), (n)), &arena, (out))

/* Every proper prefix of a reply payload (and the payload plus one byte)
 * gives -SL_ERR_INVALID_FORMAT. */
#define ASSERT_REPLY_PREFIXES(fn, type, bytes, n)                                                  \
    do {                                                                                           \
        for (size_t cut_ = 0; cut_ < (n); cut_++) {                                                \
            uint8_t *c_;                                                                           \
            type o_;                                                                               \
            assert_int_equal(DECODE_REPLY(fn, (bytes), cut_, &o_, c_), -SL_ERR_INVALID_FORMAT);    \
            free(c_);                                                                              \
        }                                                                                          \
        uint8_t *l_ = malloc((n) + 1);                                                             \
        memcpy(l_, (bytes), (n));                                                                  \
        l_[(n)] = 0;                                                                               \
        type o2_;                                                                                  \
        assert_int_equal(fn(sl_span(l_, (n) + 1), &arena, &o2_), -SL_ERR_INVALID_FORMAT);          \
        free(l_);                                                                                  \
    } while (0)

/* A copy of bytes with byte `at` replaced. */
static uint8_t *patched(const uint8_t *bytes, size_t n, size_t at, uint8_t v)
{
    uint8_t *c = dup_bytes(bytes, n);
    assert_true(at < n);
    c[at] = v;
    return c;
}

static sl_span_t S(const char *s)
{
    return sl_span_str(s);
}

static bool float_bits_eq(float a, float b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

/* --- Ping and the other empty requests ---------------------------------------------- */

static void test_ping(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_ping_request_t q = {0};
    assert_int_equal(sl_ping_request_encode(&b, &q), 0);
    assert_int_equal(b.len, 0);
    /* Any body is ignored. */
    const uint8_t junk[] = {0xff, 0x00, 0x13};
    assert_int_equal(sl_ping_request_decode(sl_span(junk, 3), &q), 0);
    assert_int_equal(sl_get_stats_request_decode(sl_span(junk, 3), &q), 0);
    assert_int_equal(sl_get_cluster_metadata_request_decode(sl_span(junk, 3), &q), 0);
    assert_int_equal(sl_get_me_request_decode(sl_span(junk, 3), &q), 0);
    assert_int_equal(sl_get_clients_request_decode(sl_span(junk, 3), &q), 0);

    sl_ping_reply_t r = {0};
    assert_int_equal(sl_ping_reply_encode(&b, &r), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(sl_ping_reply_decode(sl_span(NULL, 0), &arena, &r), 0);
    assert_int_equal(sl_ping_reply_decode(sl_span(junk, 1), &arena, &r), -SL_ERR_INVALID_FORMAT);
    sl_buf_free(&b);
}

/* --- GetStats ------------------------------------------------------------------------- */

static const sl_cache_metric_t stats_metrics[2] = {
    {1, 2, 3, 1000, 10, 0.99f},
    {4, 5, 6, 7, 8, 0.5f},
};

static sl_get_stats_reply_t sample_stats(void)
{
    return (sl_get_stats_reply_t){
        .process_id = 4242,
        .cpu_usage = 12.5f,
        .total_cpu_usage = 50.25f,
        .memory_usage = 1u << 20,
        .total_memory = 16ull << 30,
        .available_memory = 8ull << 30,
        .run_time_us = 3600000000ull,
        .start_time_us = 1700000000000000ull,
        .read_bytes = 11,
        .written_bytes = 22,
        .messages_size_bytes = 33,
        .streams_count = 2,
        .topics_count = 3,
        .partitions_count = 4,
        .segments_count = 5,
        .messages_count = 66,
        .clients_count = 7,
        .consumer_groups_count = 8,
        .hostname = S("box"),
        .os_name = S("Linux"),
        .os_version = S("12"),
        .kernel_version = S("6.1.0"),
        .server_version = S("0.9.0-edge.5"),
        .server_semver = 9000,
        .cache_metrics_count = 2,
        .cache_metrics = stats_metrics,
        .threads_count = 9,
        .free_disk_space = 100,
        .total_disk_space = 200,
    };
}

static void assert_stats_equal(const sl_get_stats_reply_t *a, const sl_get_stats_reply_t *b)
{
    assert_int_equal(a->process_id, b->process_id);
    assert_true(float_bits_eq(a->cpu_usage, b->cpu_usage));
    assert_true(float_bits_eq(a->total_cpu_usage, b->total_cpu_usage));
    assert_int_equal(a->memory_usage, b->memory_usage);
    assert_int_equal(a->total_memory, b->total_memory);
    assert_int_equal(a->available_memory, b->available_memory);
    assert_int_equal(a->run_time_us, b->run_time_us);
    assert_int_equal(a->start_time_us, b->start_time_us);
    assert_int_equal(a->read_bytes, b->read_bytes);
    assert_int_equal(a->written_bytes, b->written_bytes);
    assert_int_equal(a->messages_size_bytes, b->messages_size_bytes);
    assert_int_equal(a->streams_count, b->streams_count);
    assert_int_equal(a->topics_count, b->topics_count);
    assert_int_equal(a->partitions_count, b->partitions_count);
    assert_int_equal(a->segments_count, b->segments_count);
    assert_int_equal(a->messages_count, b->messages_count);
    assert_int_equal(a->clients_count, b->clients_count);
    assert_int_equal(a->consumer_groups_count, b->consumer_groups_count);
    assert_span_equal(a->hostname, b->hostname);
    assert_span_equal(a->os_name, b->os_name);
    assert_span_equal(a->os_version, b->os_version);
    assert_span_equal(a->kernel_version, b->kernel_version);
    assert_span_equal(a->server_version, b->server_version);
    assert_int_equal(a->server_semver, b->server_semver);
    assert_int_equal(a->cache_metrics_count, b->cache_metrics_count);
    for (uint32_t i = 0; i < a->cache_metrics_count; i++) {
        const sl_cache_metric_t *x = &a->cache_metrics[i], *y = &b->cache_metrics[i];
        assert_int_equal(x->stream_id, y->stream_id);
        assert_int_equal(x->topic_id, y->topic_id);
        assert_int_equal(x->partition_id, y->partition_id);
        assert_int_equal(x->hits, y->hits);
        assert_int_equal(x->misses, y->misses);
        assert_true(float_bits_eq(x->hit_ratio, y->hit_ratio));
    }
    assert_int_equal(a->threads_count, b->threads_count);
    assert_int_equal(a->free_disk_space, b->free_disk_space);
    assert_int_equal(a->total_disk_space, b->total_disk_space);
}

static void test_get_stats_layout(void **state)
{
    (void)state;
    sl_get_stats_reply_t s = sample_stats();
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_stats_reply_encode(&b, &s), 0);
    /* 108 numeric bytes, 5 Str32, semver, metrics count, 2 x 32, threads, 2 x u64. */
    size_t strings = 5 * 4 + 3 + 5 + 2 + 5 + 12;
    assert_int_equal(b.len, SL_STATS_NUMERIC_SIZE + strings + 4 + 4 + 64 + 4 + 16);
    const uint8_t *p = b.data;
    assert_int_equal(sl_load_u32(p + 0), 4242);
    assert_int_equal(sl_load_u64(p + 12), 1u << 20);
    assert_int_equal(sl_load_u64(p + 44), 1700000000000000ull);
    assert_int_equal(sl_load_u32(p + 76), 2);
    assert_int_equal(sl_load_u64(p + 92), 66);
    assert_int_equal(sl_load_u32(p + 100), 7);
    assert_int_equal(sl_load_u32(p + 104), 8);
    assert_int_equal(sl_load_u32(p + 108), 3); /* hostname length: a u32 */
    assert_memory_equal(p + 112, "box", 3);
    size_t semver_at = SL_STATS_NUMERIC_SIZE + strings;
    assert_int_equal(sl_load_u32(p + semver_at), 9000);
    assert_int_equal(sl_load_u32(p + semver_at + 4), 2);
    /* The first metric entry: ids, hits, misses, ratio. */
    assert_int_equal(sl_load_u32(p + semver_at + 8), 1);
    assert_int_equal(sl_load_u64(p + semver_at + 20), 1000);
    assert_int_equal(sl_load_u64(p + semver_at + 28), 10);
    size_t tail = semver_at + 8 + 64;
    assert_int_equal(sl_load_u32(p + tail), 9);
    assert_int_equal(sl_load_u64(p + tail + 4), 100);
    assert_int_equal(sl_load_u64(p + tail + 12), 200);
    sl_buf_free(&b);
}

static void test_get_stats_round_trip(void **state)
{
    (void)state;
    sl_get_stats_reply_t s = sample_stats();
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_get_stats_reply_encode(&b, &s), 0);
    uint8_t *c;
    sl_get_stats_reply_t d;
    assert_int_equal(DECODE_REPLY(sl_get_stats_reply_decode, b.data, b.len, &d, c), 0);
    assert_stats_equal(&s, &d);
    assert_int_equal(sl_get_stats_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    free(c);

    /* No metrics and empty strings: the smallest reply. */
    sl_get_stats_reply_t z = {0};
    sl_buf_reset(&b);
    assert_int_equal(sl_get_stats_reply_encode(&b, &z), 0);
    assert_int_equal(b.len, SL_STATS_NUMERIC_SIZE + 20 + 8 + 4 + 16);
    assert_int_equal(DECODE_REPLY(sl_get_stats_reply_decode, b.data, b.len, &d, c), 0);
    assert_stats_equal(&z, &d);
    assert_null(d.cache_metrics);
    free(c);
    sl_buf_free(&b);
    sl_buf_free(&b2);
}

static void test_get_stats_hostile(void **state)
{
    (void)state;
    sl_get_stats_reply_t s = sample_stats();
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_stats_reply_encode(&b, &s), 0);
    ASSERT_REPLY_PREFIXES(sl_get_stats_reply_decode, sl_get_stats_reply_t, b.data, b.len);

    /* Invalid UTF-8 in each of the five strings (first byte of each text). */
    size_t at = SL_STATS_NUMERIC_SIZE;
    const size_t lens[5] = {3, 5, 2, 5, 12};
    for (int i = 0; i < 5; i++) {
        uint8_t *c = patched(b.data, b.len, at + 4, 0xff);
        sl_get_stats_reply_t d;
        assert_int_equal(sl_get_stats_reply_decode(sl_span(c, b.len), &arena, &d),
                         -SL_ERR_INVALID_FORMAT);
        free(c);
        at += 4 + lens[i];
    }
    /* A string length beyond the payload. */
    uint8_t *c = patched(b.data, b.len, SL_STATS_NUMERIC_SIZE + 3, 0x7f);
    sl_get_stats_reply_t d;
    assert_int_equal(sl_get_stats_reply_decode(sl_span(c, b.len), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    free(c);
    /* A metrics count larger than the bytes: refused before any allocation. */
    size_t count_at = at + 4;
    c = dup_bytes(b.data, b.len);
    sl_store_u32(c + count_at, 0xffffffffu);
    size_t used = arena.used_bytes;
    assert_int_equal(sl_get_stats_reply_decode(sl_span(c, b.len), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(arena.used_bytes, used);
    /* One metric fewer than present: the tail no longer lines up. */
    sl_store_u32(c + count_at, 1);
    assert_int_equal(sl_get_stats_reply_decode(sl_span(c, b.len), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    free(c);
    /* A buffer too small for the reply is reported as a length error. */
    uint8_t small[16];
    sl_buf_t f;
    sl_buf_init_fixed(&f, small, sizeof(small));
    assert_int_equal(sl_get_stats_reply_encode(&f, &s), -SL_ERR_COMMAND_LENGTH_ERROR);
    sl_buf_free(&b);
}

/* --- GetSnapshot ------------------------------------------------------------------------- */

static void test_get_snapshot_request(void **state)
{
    (void)state;
    const uint8_t types[] = {SL_SNAPSHOT_FILESYSTEM_OVERVIEW, SL_SNAPSHOT_SERVER_LOGS,
                             SL_SNAPSHOT_SERVER_CONFIG};
    sl_get_snapshot_request_t q = {SL_SNAPSHOT_DEFLATED, sl_span(types, sizeof(types))};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_snapshot_request_encode(&b, &q), 0);
    const uint8_t want[] = {2, 3, 1, 5, 6};
    assert_bytes_equal(b.data, b.len, want, sizeof(want));
    sl_get_snapshot_request_t d;
    assert_int_equal(sl_get_snapshot_request_decode(sl_buf_span(&b), &d), 0);
    assert_int_equal(d.compression, SL_SNAPSHOT_DEFLATED);
    assert_span_equal(d.types, q.types);
    ASSERT_REQUEST_PREFIXES(sl_get_snapshot_request_decode, sl_get_snapshot_request_t, want,
                            sizeof(want), -SL_ERR_INVALID_COMMAND);

    /* Trailing bytes are ignored; All alone and an empty list decode. */
    const uint8_t trailing[] = {6, 1, 100, 0xee, 0xff};
    assert_int_equal(sl_get_snapshot_request_decode(sl_span(trailing, 5), &d), 0);
    assert_int_equal(d.compression, SL_SNAPSHOT_XZ);
    assert_int_equal(d.types.len, 1);
    assert_int_equal(d.types.ptr[0], SL_SNAPSHOT_ALL);
    const uint8_t none[] = {1, 0};
    assert_int_equal(sl_get_snapshot_request_decode(sl_span(none, 2), &d), 0);
    assert_int_equal(d.types.len, 0);
    sl_buf_free(&b);
}

static void test_get_snapshot_request_hostile(void **state)
{
    (void)state;
    static const uint8_t bad[][5] = {
        {0, 1, 1},      {7, 1, 1},        {255, 1, 1},    /* compression */
        {1, 1, 0},      {1, 1, 7},        {1, 1, 99},     /* type codes */
        {1, 1, 101},    {1, 2, 1, 8},     {1, 2, 100, 1}, /* All with another */
        {1, 2, 1, 100}, {1, 2, 100, 100}, {1, 3, 1, 2},   /* count beyond body */
    };
    static const size_t lens[] = {3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint8_t *c = dup_bytes(bad[i], lens[i]);
        sl_get_snapshot_request_t d;
        assert_int_equal(sl_get_snapshot_request_decode(sl_span(c, lens[i]), &d),
                         -SL_ERR_INVALID_COMMAND);
        free(c);
    }
    /* The encoder refuses what the decoder refuses. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    const uint8_t all_and_one[] = {100, 1};
    sl_get_snapshot_request_t q = {1, sl_span(all_and_one, 2)};
    assert_int_equal(sl_get_snapshot_request_encode(&b, &q), -SL_ERR_INVALID_COMMAND);
    q = (sl_get_snapshot_request_t){0, sl_span(all_and_one, 1)};
    assert_int_equal(sl_get_snapshot_request_encode(&b, &q), -SL_ERR_INVALID_COMMAND);
    uint8_t many[256];
    memset(many, 1, sizeof(many));
    q = (sl_get_snapshot_request_t){1, sl_span(many, 256)};
    assert_int_equal(sl_get_snapshot_request_encode(&b, &q), -SL_ERR_INVALID_COMMAND);
    q = (sl_get_snapshot_request_t){1, sl_span(many, 255)};
    assert_int_equal(sl_get_snapshot_request_encode(&b, &q), 0);
    assert_int_equal(b.len, 257);
    sl_buf_free(&b);
}

static void test_get_snapshot_reply(void **state)
{
    (void)state;
    const uint8_t zip[] = {'P', 'K', 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    sl_get_snapshot_reply_t r = {sl_span(zip, sizeof(zip))};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_snapshot_reply_encode(&b, &r), 0);
    assert_bytes_equal(b.data, b.len, zip, sizeof(zip));
    sl_get_snapshot_reply_t d;
    assert_int_equal(sl_get_snapshot_reply_decode(sl_buf_span(&b), &arena, &d), 0);
    assert_span_equal(d.archive, r.archive);
    assert_ptr_equal(d.archive.ptr, b.data); /* borrowed, not copied */
    sl_buf_free(&b);
}

/* --- GetClusterMetadata ------------------------------------------------------------------- */

/* The single-node reply with the reference defaults (defaults.md 6). */
static const char single_node_hex[] = "0b 00 00 00 73 69 6e 67 6c 65 2d 6e 6f 64 65" /* name */
                                      "01 00 00 00"                                  /* 1 node */
                                      "09 00 00 00 69 67 67 79 2d 6e 6f 64 65"       /* iggy-node */
                                      "09 00 00 00 31 32 37 2e 30 2e 30 2e 31"       /* 127.0.0.1 */
                                      "9a 1f 90 1f b8 0b 9c 1f"                      /* ports */
                                      "00 00"; /* role, status */

static void test_get_cluster_metadata_reply(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex(single_node_hex, &n);
    sl_cluster_node_t node = {S("iggy-node"), S("127.0.0.1"), 8090,           8080,
                              3000,           8092,           SL_NODE_LEADER, SL_NODE_HEALTHY};
    sl_get_cluster_metadata_reply_t r = {S("single-node"), 1, &node};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&b, &r), 0);
    assert_bytes_equal(b.data, b.len, want, n);

    uint8_t *c;
    sl_get_cluster_metadata_reply_t d;
    assert_int_equal(DECODE_REPLY(sl_get_cluster_metadata_reply_decode, want, n, &d, c), 0);
    assert_span_str(d.name, "single-node");
    assert_int_equal(d.count, 1);
    assert_span_str(d.items[0].name, "iggy-node");
    assert_span_str(d.items[0].ip, "127.0.0.1");
    assert_int_equal(d.items[0].tcp_port, 8090);
    assert_int_equal(d.items[0].quic_port, 8080);
    assert_int_equal(d.items[0].http_port, 3000);
    assert_int_equal(d.items[0].websocket_port, 8092);
    assert_int_equal(d.items[0].role, SL_NODE_LEADER);
    assert_int_equal(d.items[0].status, SL_NODE_HEALTHY);
    free(c);

    /* Two nodes, a follower in maintenance; round trip. */
    sl_cluster_node_t two[2] = {node, {S("n2"), S("::1"), 1, 2, 3, 4, 1, 4}};
    r = (sl_get_cluster_metadata_reply_t){S("c"), 2, two};
    sl_buf_reset(&b);
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&b, &r), 0);
    assert_int_equal(DECODE_REPLY(sl_get_cluster_metadata_reply_decode, b.data, b.len, &d, c), 0);
    assert_int_equal(d.count, 2);
    for (int i = 0; i < 2; i++) {
        assert_span_equal(d.items[i].name, two[i].name);
        assert_span_equal(d.items[i].ip, two[i].ip);
        assert_int_equal(d.items[i].tcp_port, two[i].tcp_port);
        assert_int_equal(d.items[i].quic_port, two[i].quic_port);
        assert_int_equal(d.items[i].http_port, two[i].http_port);
        assert_int_equal(d.items[i].websocket_port, two[i].websocket_port);
        assert_int_equal(d.items[i].role, two[i].role);
        assert_int_equal(d.items[i].status, two[i].status);
    }
    sl_buf_t b2;
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    free(c);
    sl_buf_free(&b2);
    sl_buf_free(&b);
    free(want);
}

static void test_get_cluster_metadata_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_hex(single_node_hex, &n);
    ASSERT_REPLY_PREFIXES(sl_get_cluster_metadata_reply_decode, sl_get_cluster_metadata_reply_t, v,
                          n);
    struct {
        size_t at;
        uint8_t value;
    } bad[] = {
        {n - 2, 2},    /* role 2 */
        {n - 2, 0xff}, /* role 255 */
        {n - 1, 5},    /* status 5 (Unknown) is not a wire value */
        {n - 1, 0xff}, /* status 255 */
        {4, 0xc3},     /* bad UTF-8 in the cluster name */
        {23, 0xff},    /* ... in the node name */
        {36, 0x80},    /* ... in the ip */
        {15, 2},       /* node count beyond the bytes */
        {0, 0xff},     /* name length beyond the payload */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint8_t *c = patched(v, n, bad[i].at, bad[i].value);
        sl_get_cluster_metadata_reply_t d;
        assert_int_equal(sl_get_cluster_metadata_reply_decode(sl_span(c, n), &arena, &d),
                         -SL_ERR_INVALID_FORMAT);
        free(c);
    }
    /* A huge count is refused before any allocation. */
    uint8_t *c = dup_bytes(v, n);
    sl_store_u32(c + 15, 0xffffffffu);
    size_t used = arena.used_bytes;
    sl_get_cluster_metadata_reply_t d;
    assert_int_equal(sl_get_cluster_metadata_reply_decode(sl_span(c, n), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(arena.used_bytes, used);
    free(c);

    /* The encoder refuses roles and statuses a client would refuse. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_cluster_node_t node = {S("a"), S("b"), 0, 0, 0, 0, 2, 0};
    sl_get_cluster_metadata_reply_t r = {S("c"), 1, &node};
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&b, &r), -SL_ERR_INVALID_COMMAND);
    node.role = 1;
    node.status = 5;
    sl_buf_reset(&b);
    assert_int_equal(sl_get_cluster_metadata_reply_encode(&b, &r), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&b);
    free(v);
}

/* --- DescribeOptions ----------------------------------------------------------------------- */

static void test_describe_options_request(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    for (uint8_t scope = 1; scope <= 3; scope++) {
        sl_describe_options_request_t q = {scope}, d;
        sl_buf_reset(&b);
        assert_int_equal(sl_describe_options_request_encode(&b, &q), 0);
        assert_bytes_equal(b.data, b.len, &scope, 1);
        assert_int_equal(sl_describe_options_request_decode(sl_buf_span(&b), &d), 0);
        assert_int_equal(d.scope, scope);
    }
    const uint8_t trailing[] = {2, 9, 9};
    sl_describe_options_request_t d;
    assert_int_equal(sl_describe_options_request_decode(sl_span(trailing, 3), &d), 0);
    assert_int_equal(d.scope, SL_OPTION_SCOPE_STREAM);

    const uint8_t bad[] = {0, 4, 255};
    for (size_t i = 0; i < sizeof(bad); i++) {
        uint8_t *c = dup_bytes(&bad[i], 1);
        assert_int_equal(sl_describe_options_request_decode(sl_span(c, 1), &d),
                         -SL_ERR_INVALID_COMMAND);
        free(c);
        sl_describe_options_request_t q = {bad[i]};
        assert_int_equal(sl_describe_options_request_encode(&b, &q), -SL_ERR_INVALID_COMMAND);
    }
    ASSERT_REQUEST_PREFIXES(sl_describe_options_request_decode, sl_describe_options_request_t,
                            trailing, 1, -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&b);
}

static const uint8_t expiry_default[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static const sl_option_descriptor_t sample_descriptors[2] = {
    {{(const uint8_t *)"compression_algorithm", 21},
     2,
     {(const uint8_t *)"none", 4},
     {(const uint8_t *)"none or gzip", 12}},
    {{(const uint8_t *)"message_expiry", 14},
     12,
     {expiry_default, 8},
     {(const uint8_t *)"\xc2\xb5s", 3}},
};

static void test_describe_options_reply(void **state)
{
    (void)state;
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    /* Stream and user scopes: an empty catalog. */
    sl_describe_options_reply_t empty = {0, NULL}, d;
    assert_int_equal(sl_describe_options_reply_encode(&b, &empty), 0);
    const uint8_t zero[4] = {0};
    assert_bytes_equal(b.data, b.len, zero, 4);
    assert_int_equal(sl_describe_options_reply_decode(sl_buf_span(&b), &arena, &d), 0);
    assert_int_equal(d.count, 0);

    sl_describe_options_reply_t r = {2, sample_descriptors};
    sl_buf_reset(&b);
    assert_int_equal(sl_describe_options_reply_encode(&b, &r), 0);
    size_t n;
    uint8_t *want = tu_hex("02 00 00 00"
                           "15 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 6c 67 6f 72 69 74 68 6d"
                           "02 04 00 00 00 6e 6f 6e 65"
                           "0c 00 00 00 6e 6f 6e 65 20 6f 72 20 67 7a 69 70"
                           "0e 6d 65 73 73 61 67 65 5f 65 78 70 69 72 79"
                           "0c 08 00 00 00 ff ff ff ff ff ff ff ff"
                           "03 00 00 00 c2 b5 73",
                           &n);
    assert_bytes_equal(b.data, b.len, want, n);
    uint8_t *c;
    assert_int_equal(DECODE_REPLY(sl_describe_options_reply_decode, want, n, &d, c), 0);
    assert_int_equal(d.count, 2);
    for (int i = 0; i < 2; i++) {
        assert_span_equal(d.items[i].key, sample_descriptors[i].key);
        assert_int_equal(d.items[i].kind, sample_descriptors[i].kind);
        assert_span_equal(d.items[i].default_value, sample_descriptors[i].default_value);
        assert_span_equal(d.items[i].description, sample_descriptors[i].description);
    }
    assert_int_equal(sl_describe_options_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, want, n);
    free(c);

    /* A descriptor without a default has default_len 0. */
    sl_option_descriptor_t nodef = {S("k"), 3, sl_span(NULL, 0), S("")};
    r = (sl_describe_options_reply_t){1, &nodef};
    sl_buf_reset(&b);
    assert_int_equal(sl_describe_options_reply_encode(&b, &r), 0);
    assert_int_equal(b.len, 4 + 2 + 1 + 4 + 4);
    assert_int_equal(DECODE_REPLY(sl_describe_options_reply_decode, b.data, b.len, &d, c), 0);
    assert_int_equal(d.items[0].default_value.len, 0);
    free(c);
    free(want);
    sl_buf_free(&b);
    sl_buf_free(&b2);
}

static void test_describe_options_hostile(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_describe_options_reply_t r = {2, sample_descriptors}, d;
    assert_int_equal(sl_describe_options_reply_encode(&b, &r), 0);
    ASSERT_REPLY_PREFIXES(sl_describe_options_reply_decode, sl_describe_options_reply_t, b.data,
                          b.len);
    /* Offsets in the first descriptor: key len 4, key 5.., kind 26, default_len 27,
     * description_len 35, description 39..51; second key len at 51. */
    struct {
        size_t at;
        uint8_t value;
    } bad[] = {
        {4, 0},     /* zero-length key */
        {5, 0xff},  /* bad UTF-8 in the key */
        {26, 0},    /* kind 0 */
        {27, 0xff}, /* default length beyond the payload */
        {35, 0xff}, /* description length beyond the payload */
        {39, 0xc0}, /* bad UTF-8 in the description */
        {51, 0},    /* zero-length key in the second descriptor */
        {0, 3},     /* count beyond the bytes */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint8_t *c = patched(b.data, b.len, bad[i].at, bad[i].value);
        assert_int_equal(sl_describe_options_reply_decode(sl_span(c, b.len), &arena, &d),
                         -SL_ERR_INVALID_FORMAT);
        free(c);
    }
    uint8_t *c = dup_bytes(b.data, b.len);
    sl_store_u32(c, 0xffffffffu);
    size_t used = arena.used_bytes;
    assert_int_equal(sl_describe_options_reply_decode(sl_span(c, b.len), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(arena.used_bytes, used);
    free(c);

    /* Encoder: empty key, kind 0, a default of the wrong width. */
    sl_option_descriptor_t x[3] = {
        {S(""), 2, S("a"), S("")},
        {S("k"), 0, S("a"), S("")},
        {S("k"), 12, S("abc"), S("")},
    };
    for (int i = 0; i < 3; i++) {
        r = (sl_describe_options_reply_t){1, &x[i]};
        sl_buf_reset(&b);
        assert_int_equal(sl_describe_options_reply_encode(&b, &r), -SL_ERR_INVALID_COMMAND);
    }
    /* Decoder: the same wrong-width default (Uint64 with 1 byte) is refused,
     * so whatever decodes can be encoded again (found by fuzz_reply). */
    size_t n;
    uint8_t *w = tu_hex("01000000 01 40 0c 01000000 dd 00000000", &n);
    assert_int_equal(sl_describe_options_reply_decode(sl_span(w, n), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    w[6] = 2; /* String: any default length */
    assert_int_equal(sl_describe_options_reply_decode(sl_span(w, n), &arena, &d), 0);
    free(w);
    sl_buf_free(&b);
}

/* --- ClientDetails: GetMe, GetClient, GetClients ------------------------------------------- */

static const char get_me_hex[] = "01 00 00 00 00 00 00 00 01 0f 00 00 00 31 32 37"
                                 "2e 30 2e 30 2e 31 3a 35 31 32 33 34 01 00 00 00"
                                 "00 00 00 00 00 00 00 00 00 00 00 00";

static void assert_get_me_fields(const sl_client_details_t *c)
{
    assert_int_equal(c->header.client_id, 1);
    assert_int_equal(c->header.user_id, 0);
    assert_int_equal(c->header.transport, SL_TRANSPORT_TCP);
    assert_span_str(c->header.address, "127.0.0.1:51234");
    assert_int_equal(c->header.groups_count, 1);
    assert_int_equal(c->groups[0].stream_id, 0);
    assert_int_equal(c->groups[0].topic_id, 0);
    assert_int_equal(c->groups[0].group_id, 0);
}

static void test_get_me_golden(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex(get_me_hex, &n);
    assert_int_equal(n, 44);
    sl_client_group_t group = {0, 0, 0};
    sl_get_me_reply_t r = {{{1, 0, SL_TRANSPORT_TCP, S("127.0.0.1:51234"), 1}, &group}};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_me_reply_encode(&b, &r), 0);
    assert_bytes_equal(b.data, b.len, want, n);

    uint8_t *c;
    sl_get_me_reply_t d;
    assert_int_equal(DECODE_REPLY(sl_get_me_reply_decode, want, n, &d, c), 0);
    assert_get_me_fields(&d.client);
    free(c);

    /* GetClient answers the same element. */
    sl_get_client_reply_t g;
    assert_int_equal(DECODE_REPLY(sl_get_client_reply_decode, want, n, &g, c), 0);
    assert_true(g.found);
    assert_get_me_fields(&g.client);
    sl_buf_reset(&b);
    assert_int_equal(sl_get_client_reply_encode(&b, &g), 0);
    assert_bytes_equal(b.data, b.len, want, n);
    free(c);
    sl_buf_free(&b);
    free(want);
}

static void test_get_me_round_trip(void **state)
{
    (void)state;
    sl_client_group_t groups[3] = {{1, 2, 3}, {4, 5, 6}, {0xffffffffu, 7, 8}};
    sl_get_me_reply_t r = {{{77, 5, SL_TRANSPORT_WEBSOCKET, S("[::1]:9"), 3}, groups}};
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_get_me_reply_encode(&b, &r), 0);
    assert_int_equal(b.len, SL_CLIENT_HEADER_MIN_SIZE + 7 + 3 * SL_CLIENT_GROUP_SIZE);
    uint8_t *c;
    sl_get_me_reply_t d;
    assert_int_equal(DECODE_REPLY(sl_get_me_reply_decode, b.data, b.len, &d, c), 0);
    assert_int_equal(d.client.header.client_id, 77);
    assert_int_equal(d.client.header.user_id, 5);
    assert_int_equal(d.client.header.transport, SL_TRANSPORT_WEBSOCKET);
    assert_span_str(d.client.header.address, "[::1]:9");
    assert_int_equal(d.client.header.groups_count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.client.groups[i].stream_id, groups[i].stream_id);
        assert_int_equal(d.client.groups[i].topic_id, groups[i].topic_id);
        assert_int_equal(d.client.groups[i].group_id, groups[i].group_id);
    }
    assert_int_equal(sl_get_me_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    free(c);
    sl_buf_free(&b);
    sl_buf_free(&b2);
}

static void test_client_details_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_hex(get_me_hex, &n);
    ASSERT_REPLY_PREFIXES(sl_get_me_reply_decode, sl_get_me_reply_t, v, n);
    /* GetClient: empty means not found; any other prefix is malformed. */
    for (size_t cut = 1; cut < n; cut++) {
        uint8_t *c = dup_bytes(v, cut);
        sl_get_client_reply_t g;
        assert_int_equal(sl_get_client_reply_decode(sl_span(c, cut), &arena, &g),
                         -SL_ERR_INVALID_FORMAT);
        assert_false(g.found);
        free(c);
    }
    struct {
        size_t at;
        uint8_t value;
    } bad[] = {
        {8, 0},     /* transport 0 */
        {8, 5},     /* transport 5 */
        {13, 0xff}, /* bad UTF-8 in the address */
        {9, 0x10},  /* address length beyond the payload */
        {28, 2},    /* groups count beyond the bytes */
        {28, 0},    /* fewer groups than present: trailing bytes */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint8_t *c = patched(v, n, bad[i].at, bad[i].value);
        sl_get_me_reply_t d;
        assert_int_equal(sl_get_me_reply_decode(sl_span(c, n), &arena, &d), -SL_ERR_INVALID_FORMAT);
        free(c);
    }
    uint8_t *c = dup_bytes(v, n);
    sl_store_u32(c + 28, 0xffffffffu);
    size_t used = arena.used_bytes;
    sl_get_me_reply_t d;
    assert_int_equal(sl_get_me_reply_decode(sl_span(c, n), &arena, &d), -SL_ERR_INVALID_FORMAT);
    assert_int_equal(arena.used_bytes, used);
    free(c);
    /* GetMe always has a body. */
    assert_int_equal(sl_get_me_reply_decode(sl_span(NULL, 0), &arena, &d), -SL_ERR_INVALID_FORMAT);
    /* The encoder refuses a transport outside 1..4. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_get_me_reply_t r = {{{1, 0, 0, S("x"), 0}, NULL}};
    assert_int_equal(sl_get_me_reply_encode(&b, &r), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&b);
    free(v);
}

static void test_get_client(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_get_client_request_t q = {.client_id = 0x01020304}, d;
    assert_int_equal(sl_get_client_request_encode(&b, &q), 0);
    const uint8_t want[] = {4, 3, 2, 1};
    assert_bytes_equal(b.data, b.len, want, 4);
    assert_int_equal(sl_get_client_request_decode(sl_buf_span(&b), &d), 0);
    assert_int_equal(d.client_id, 0x01020304);
    assert_false(d.undecodable);
    /* Trailing bytes ignored. */
    const uint8_t longer[] = {9, 0, 0, 0, 1};
    assert_int_equal(sl_get_client_request_decode(sl_span(longer, 5), &d), 0);
    assert_int_equal(d.client_id, 9);
    assert_false(d.undecodable);
    /* A short body is "not found", never status 3. */
    ASSERT_REQUEST_PREFIXES(sl_get_client_request_decode, sl_get_client_request_t, want, 4, 0);
    for (size_t cut = 0; cut < 4; cut++) {
        uint8_t *c = dup_bytes(want, cut);
        assert_int_equal(sl_get_client_request_decode(sl_span(c, cut), &d), 0);
        assert_true(d.undecodable);
        free(c);
    }

    /* Reply: not found is an empty body both ways. */
    sl_get_client_reply_t r = {.found = false}, g;
    sl_buf_reset(&b);
    assert_int_equal(sl_get_client_reply_encode(&b, &r), 0);
    assert_int_equal(b.len, 0);
    g.found = true;
    assert_int_equal(sl_get_client_reply_decode(sl_span(NULL, 0), &arena, &g), 0);
    assert_false(g.found);
    sl_buf_free(&b);
}

static void test_get_clients(void **state)
{
    (void)state;
    sl_client_header_t items[3] = {
        {1, 0, SL_TRANSPORT_TCP, S("127.0.0.1:5000"), 2},
        {2, SL_CLIENT_NO_USER, SL_TRANSPORT_QUIC, S("10.0.0.2:6000"), 0},
        {3, 9, SL_TRANSPORT_WEBSOCKET, S(""), 1},
    };
    sl_get_clients_reply_t r = {3, items}, d;
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_get_clients_reply_encode(&b, &r), 0);
    /* No count prefix and no group entries: 17 + address bytes each. */
    assert_int_equal(b.len, 3 * SL_CLIENT_HEADER_MIN_SIZE + 14 + 13);
    assert_int_equal(sl_load_u32(b.data + 13 + 14), 2); /* first groups_count */
    assert_int_equal(sl_load_u32(b.data + 31), 2);      /* second client_id */
    uint8_t *c;
    assert_int_equal(DECODE_REPLY(sl_get_clients_reply_decode, b.data, b.len, &d, c), 0);
    assert_int_equal(d.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.items[i].client_id, items[i].client_id);
        assert_int_equal(d.items[i].user_id, items[i].user_id);
        assert_int_equal(d.items[i].transport, items[i].transport);
        assert_span_equal(d.items[i].address, items[i].address);
        assert_int_equal(d.items[i].groups_count, items[i].groups_count);
    }
    assert_int_equal(sl_get_clients_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    free(c);

    /* Empty payload: no clients. */
    assert_int_equal(sl_get_clients_reply_decode(sl_span(NULL, 0), &arena, &d), 0);
    assert_int_equal(d.count, 0);
    assert_null(d.items);

    /* Truncation: only the element boundaries decode, to fewer elements. */
    const size_t bounds[] = {0, 17 + 14, 2 * 17 + 14 + 13};
    for (size_t cut = 0; cut < b.len; cut++) {
        int want = -SL_ERR_INVALID_FORMAT;
        uint32_t want_count = 0;
        for (uint32_t k = 0; k < 3; k++)
            if (cut == bounds[k]) {
                want = 0;
                want_count = k;
            }
        uint8_t *t = dup_bytes(b.data, cut);
        assert_int_equal(sl_get_clients_reply_decode(sl_span(t, cut), &arena, &d), want);
        if (want == 0)
            assert_int_equal(d.count, want_count);
        free(t);
    }
    /* A bad transport or bad UTF-8 in any element. */
    uint8_t *t = patched(b.data, b.len, 31 + 8, 7);
    assert_int_equal(sl_get_clients_reply_decode(sl_span(t, b.len), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    free(t);
    t = patched(b.data, b.len, 31 + 13, 0xfe);
    assert_int_equal(sl_get_clients_reply_decode(sl_span(t, b.len), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    free(t);
    sl_buf_free(&b);
    sl_buf_free(&b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping),
        cmocka_unit_test(test_get_stats_layout),
        cmocka_unit_test(test_get_stats_round_trip),
        cmocka_unit_test(test_get_stats_hostile),
        cmocka_unit_test(test_get_snapshot_request),
        cmocka_unit_test(test_get_snapshot_request_hostile),
        cmocka_unit_test(test_get_snapshot_reply),
        cmocka_unit_test(test_get_cluster_metadata_reply),
        cmocka_unit_test(test_get_cluster_metadata_hostile),
        cmocka_unit_test(test_describe_options_request),
        cmocka_unit_test(test_describe_options_reply),
        cmocka_unit_test(test_describe_options_hostile),
        cmocka_unit_test(test_get_me_golden),
        cmocka_unit_test(test_get_me_round_trip),
        cmocka_unit_test(test_client_details_hostile),
        cmocka_unit_test(test_get_client),
        cmocka_unit_test(test_get_clients),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
