/* Messages against the real sluiced through libsluice: send with every
 * partitioning, poll back byte for byte with every strategy, contiguous
 * offsets, consumer offsets, the admission errors, two group members on two
 * connections reading every message exactly once, restart durability,
 * purge, and deletes removing their directory trees. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "harness.h"

static th_server_t srv;

static sl_client_t *connect_root(void)
{
    sl_client_t *c = NULL;
    assert_int_equal(th_client_connect(srv.port, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    return c;
}

static int start(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    return 0;
}

static int stop(void **state)
{
    (void)state;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

/* Sends n messages "<tag>-<i>" in one batch to a partition; returns the base offset. */
static uint64_t send_numbered(sl_client_t *c, const char *stream, const char *topic,
                              sl_send_partitioning_t part, const char *tag, uint32_t first,
                              uint32_t n)
{
    char (*payloads)[64] = calloc(n, 64);
    sl_send_message_t *msgs = calloc(n, sizeof(*msgs));
    assert_non_null(payloads);
    assert_non_null(msgs);
    for (uint32_t i = 0; i < n; i++) {
        int len = snprintf(payloads[i], 64, "%s-%u", tag, first + i);
        msgs[i] = (sl_send_message_t){.id = {first + i + 1, 0}, .payload = payloads[i],
                                      .payload_len = (size_t)len};
    }
    sl_send_result_t r;
    assert_int_equal(sl_client_send_messages(c, sl_id_name(stream), sl_id_name(topic), part, msgs,
                                             n, &r),
                     0);
    assert_true(r.confirmed);
    free(payloads);
    free(msgs);
    return r.base_offset;
}

static void test_send_poll_round_trip(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    assert_int_equal(sl_client_create_stream(c, "m", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("m"), "t", 3, NULL, NULL), 0);

    /* Payloads and typed headers round-trip byte for byte. */
    sl_header_t h[2] = {{sl_hv_str("k"), sl_hv_str("v")}, {sl_hv_str("n"), sl_hv_u64(42)}};
    uint8_t blob[1000];
    for (size_t i = 0; i < sizeof(blob); i++)
        blob[i] = (uint8_t)(i * 7);
    sl_send_message_t m = {.id = {77, 0}, .payload = blob, .payload_len = sizeof(blob),
                           .headers = h, .headers_count = 2};
    sl_send_result_t r;
    assert_int_equal(sl_client_send_messages(c, sl_id_name("m"), sl_id_name("t"),
                                             sl_partitioning_partition(1), &m, 1, &r),
                     0);
    assert_true(r.confirmed);
    assert_int_equal(r.partition_id, 1);
    assert_int_equal(r.base_offset, 0);
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("m"),
                                             sl_id_name("t"), 1, sl_poll_offset(0), 10, false,
                                             &out),
                     0);
    assert_int_equal(out.count, 1);
    assert_int_equal(out.messages[0].offset, 0);
    assert_int_equal(out.messages[0].id.lo, 77);
    assert_int_equal(out.messages[0].payload_len, sizeof(blob));
    assert_memory_equal(out.messages[0].payload, blob, sizeof(blob));
    sl_header_iter_t it;
    assert_int_equal(sl_polled_message_headers(&out.messages[0], &it), 0);

    /* Contiguous offsets over many batches; slices inside a batch. */
    uint64_t next = 0;
    for (uint32_t b = 0; b < 20; b++) {
        uint64_t base = send_numbered(c, "m", "t", sl_partitioning_partition(0), "p0", b * 10, 10);
        assert_int_equal(base, next);
        next += 10;
    }
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("m"),
                                             sl_id_name("t"), 0, sl_poll_offset(15), 7, false,
                                             &out),
                     0);
    assert_int_equal(out.count, 7);
    for (uint32_t i = 0; i < 7; i++) {
        char want[64];
        snprintf(want, sizeof(want), "p0-%u", 15 + i);
        assert_int_equal(out.messages[i].offset, 15 + i);
        assert_int_equal(out.messages[i].payload_len, strlen(want));
        assert_memory_equal(out.messages[i].payload, want, strlen(want));
    }
    assert_int_equal(out.current_offset, 199);
    /* First, Last, beyond the end. */
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("m"),
                                             sl_id_name("t"), 0, sl_poll_first(), 3, false, &out),
                     0);
    assert_int_equal(out.messages[0].offset, 0);
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("m"),
                                             sl_id_name("t"), 0, sl_poll_last(), 3, false, &out),
                     0);
    assert_int_equal(out.count, 3);
    assert_int_equal(out.messages[0].offset, 197);
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("m"),
                                             sl_id_name("t"), 0, sl_poll_offset(500), 3, false,
                                             &out),
                     0);
    assert_int_equal(out.count, 0);

    /* Balanced goes round the partitions; a key always to the same one. */
    sl_send_result_t r1, r2;
    sl_send_message_t one = {.payload = "x", .payload_len = 1};
    assert_int_equal(sl_client_send_messages(c, sl_id_name("m"), sl_id_name("t"),
                                             sl_partitioning_balanced(), &one, 1, &r1),
                     0);
    assert_int_equal(sl_client_send_messages(c, sl_id_name("m"), sl_id_name("t"),
                                             sl_partitioning_balanced(), &one, 1, &r2),
                     0);
    assert_int_equal((r1.partition_id + 1) % 3, r2.partition_id);
    assert_int_equal(sl_client_send_messages(c, sl_id_name("m"), sl_id_name("t"),
                                             sl_partitioning_messages_key("key", 3), &one, 1, &r1),
                     0);
    assert_int_equal(sl_client_send_messages(c, sl_id_name("m"), sl_id_name("t"),
                                             sl_partitioning_messages_key("key", 3), &one, 1, &r2),
                     0);
    assert_int_equal(r1.partition_id, r2.partition_id);

    /* Errors: missing stream / partition -> 20; poll of a missing partition -> 3007. */
    assert_int_equal(sl_client_send_messages(c, sl_id_name("nope"), sl_id_name("t"),
                                             sl_partitioning_balanced(), &one, 1, &r1),
                     -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(sl_client_send_messages(c, sl_id_name("m"), sl_id_name("t"),
                                             sl_partitioning_partition(9), &one, 1, &r1),
                     -SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("m"),
                                             sl_id_name("t"), 9, sl_poll_offset(0), 3, false,
                                             &out),
                     -SL_ERR_PARTITION_NOT_FOUND);
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                             sl_id_name("nope"), sl_id_name("t"), 0,
                                             sl_poll_offset(0), 3, false, &out),
                     -SL_ERR_STREAM_ID_NOT_FOUND);
    sl_client_close(c);
}

static void test_consumer_offsets(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    assert_int_equal(sl_client_create_stream(c, "o", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("o"), "t", 1, NULL, NULL), 0);
    sl_consumer_ref_t me = sl_consumer_single(sl_id_name("reader"));
    sl_consumer_offset_t off;
    /* Nothing stored; storing on an empty partition is 4100. */
    assert_int_equal(sl_client_get_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0, &off),
                     0);
    assert_false(off.found);
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0, 0,
                                                     SL_ACK_LEVEL_QUORUM),
                     -SL_ERR_INVALID_OFFSET);
    send_numbered(c, "o", "t", sl_partitioning_partition(0), "o", 0, 10);
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0, 4,
                                                     SL_ACK_LEVEL_QUORUM),
                     0);
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0,
                                                     10, SL_ACK_LEVEL_QUORUM),
                     -SL_ERR_INVALID_OFFSET);
    assert_int_equal(sl_client_get_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0, &off),
                     0);
    assert_true(off.found);
    assert_int_equal(off.stored_offset, 4);
    assert_int_equal(off.current_offset, 9);
    /* Next continues after the stored offset; auto-commit moves it. */
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, me, sl_id_name("o"), sl_id_name("t"), 0,
                                             sl_poll_next(), 3, true, &out),
                     0);
    assert_int_equal(out.count, 3);
    assert_int_equal(out.messages[0].offset, 5);
    assert_int_equal(sl_client_get_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0, &off),
                     0);
    assert_int_equal(off.stored_offset, 7);
    assert_int_equal(sl_client_delete_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0,
                                                      SL_ACK_LEVEL_QUORUM),
                     0);
    assert_int_equal(sl_client_delete_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"), 0,
                                                      SL_ACK_LEVEL_QUORUM),
                     -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
    /* The partition is required for writes. */
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("o"), sl_id_name("t"),
                                                     SL_PARTITION_NONE, 1, SL_ACK_LEVEL_QUORUM),
                     -SL_ERR_RESOURCE_NOT_FOUND);
    sl_client_close(c);
}

/* Two members on two connections share a group: together they read every
 * message exactly once. */
static void test_group_exactly_once(void **state)
{
    (void)state;
    sl_client_t *a = connect_root(), *b = connect_root();
    assert_int_equal(sl_client_create_stream(a, "g", NULL), 0);
    assert_int_equal(sl_client_create_topic(a, sl_id_name("g"), "t", 4, NULL, NULL), 0);
    assert_int_equal(sl_client_create_consumer_group(a, sl_id_name("g"), sl_id_name("t"), "w", NULL),
                     0);
    for (uint32_t p = 0; p < 4; p++)
        send_numbered(a, "g", "t", sl_partitioning_partition(p), "g", p * 25, 25);
    assert_int_equal(sl_client_join_consumer_group(a, sl_id_name("g"), sl_id_name("t"),
                                                   sl_id_name("w")),
                     0);
    assert_int_equal(sl_client_join_consumer_group(b, sl_id_name("g"), sl_id_name("t"),
                                                   sl_id_name("w")),
                     0);
    uint8_t seen[100] = {0};
    sl_client_t *members[2] = {a, b};
    uint32_t owned_total = 0;
    for (int k = 0; k < 2; k++) {
        const sl_assignment_t *as = NULL;
        assert_int_equal(sl_client_sync_consumer_group(members[k], sl_id_name("g"), sl_id_name("t"),
                                                       sl_id_name("w"), &as),
                         0);
        assert_non_null(as);
        uint32_t n = as->partitions_count;
        uint32_t parts[8];
        assert_true(n <= 8);
        memcpy(parts, as->partitions, n * sizeof(uint32_t));
        owned_total += n;
        for (uint32_t i = 0; i < n; i++) {
            for (int round = 0; round < 10; round++) {
                sl_polled_messages_t out;
                assert_int_equal(sl_client_poll_messages(
                                     members[k], sl_consumer_in_group(sl_id_name("w")),
                                     sl_id_name("g"), sl_id_name("t"), parts[i], sl_poll_next(),
                                     10, true, &out),
                                 0);
                assert_false(out.resync_required);
                if (out.count == 0)
                    break;
                for (uint32_t j = 0; j < out.count; j++) {
                    char text[32] = {0};
                    unsigned num;
                    assert_true(out.messages[j].payload_len < sizeof(text));
                    memcpy(text, out.messages[j].payload, out.messages[j].payload_len);
                    assert_int_equal(sscanf(text, "g-%u", &num), 1);
                    assert_true(num < 100);
                    seen[num]++;
                }
            }
        }
    }
    assert_int_equal(owned_total, 4);
    for (int i = 0; i < 100; i++)
        assert_int_equal(seen[i], 1);
    sl_client_close(a);
    sl_client_close(b);
}

static void test_restart_keeps_messages(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    sl_topic_options_t opt = {0};
    assert_int_equal(sl_client_create_stream(c, "d", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("d"), "t", 1, &opt, NULL), 0);
    send_numbered(c, "d", "t", sl_partitioning_partition(0), "d", 0, 50);
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
    c = connect_root();
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("d"),
                                             sl_id_name("t"), 0, sl_poll_offset(0), 100, false,
                                             &out),
                     0);
    assert_int_equal(out.count, 50);
    assert_int_equal(out.messages[49].offset, 49);
    /* Offsets continue after a restart. */
    assert_int_equal(send_numbered(c, "d", "t", sl_partitioning_partition(0), "d", 50, 5), 50);
    /* Purge: messages gone, metadata kept, offsets restart at 0. */
    assert_int_equal(sl_client_purge_topic(c, sl_id_name("d"), sl_id_name("t")), 0);
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("d"),
                                             sl_id_name("t"), 0, sl_poll_offset(0), 100, false,
                                             &out),
                     0);
    assert_int_equal(out.count, 0);
    assert_int_equal(send_numbered(c, "d", "t", sl_partitioning_partition(0), "d", 0, 1), 0);
    sl_client_close(c);
}

/* DeleteSegments removes the oldest sealed segments, never the active one. */
static void test_delete_segments(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 1024 * 1024};
    assert_int_equal(sl_client_create_stream(c, "seg", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("seg"), "t", 1, &opt, NULL), 0);
    static uint8_t payload[64 * 1024];
    memset(payload, 'x', sizeof(payload));
    sl_send_message_t m = {.payload = payload, .payload_len = sizeof(payload)};
    for (int i = 0; i < 40; i++) { /* 2.5 MiB: at least two sealed segments */
        sl_send_result_t r;
        assert_int_equal(sl_client_send_messages(c, sl_id_name("seg"), sl_id_name("t"),
                                                 sl_partitioning_partition(0), &m, 1, &r),
                         0);
    }
    const sl_topic_t *t;
    assert_int_equal(sl_client_get_topic(c, sl_id_name("seg"), sl_id_name("t"), &t), 0);
    uint32_t before = t->partitions[0].segments_count;
    assert_true(before >= 3);
    assert_int_equal(sl_client_delete_segments(c, sl_id_name("seg"), sl_id_name("t"), 0, 1), 0);
    assert_int_equal(sl_client_get_topic(c, sl_id_name("seg"), sl_id_name("t"), &t), 0);
    assert_int_equal(t->partitions[0].segments_count, before - 1);
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                             sl_id_name("seg"), sl_id_name("t"), 0, sl_poll_first(),
                                             1, false, &out),
                     0);
    assert_int_equal(out.count, 1);
    assert_true(out.messages[0].offset > 0); /* the oldest messages are gone */
    /* Asking for more than exist keeps the active segment. */
    assert_int_equal(sl_client_delete_segments(c, sl_id_name("seg"), sl_id_name("t"), 0, 100), 0);
    assert_int_equal(sl_client_get_topic(c, sl_id_name("seg"), sl_id_name("t"), &t), 0);
    assert_int_equal(t->partitions[0].segments_count, 1);
    assert_int_equal(t->partitions[0].current_offset, 39);
    sl_client_close(c);
}

/* A topic deleted and created again under the same id starts empty: no
 * messages and no consumer offsets of the old one. */
static void test_recreated_topic_starts_empty(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    sl_consumer_ref_t me = sl_consumer_single(sl_id_num(7));
    assert_int_equal(sl_client_create_stream(c, "re", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("re"), "t", 1, NULL, NULL), 0);
    send_numbered(c, "re", "t", sl_partitioning_partition(0), "re", 0, 5);
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("re"), sl_id_name("t"), 0,
                                                     3, SL_ACK_LEVEL_QUORUM),
                     0);
    assert_int_equal(sl_client_delete_topic(c, sl_id_name("re"), sl_id_name("t")), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("re"), "t", 1, NULL, NULL), 0);
    sl_consumer_offset_t off;
    assert_int_equal(sl_client_get_consumer_offset(c, me, sl_id_name("re"), sl_id_name("t"), 0,
                                                   &off),
                     0);
    assert_false(off.found);
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, me, sl_id_name("re"), sl_id_name("t"), 0,
                                             sl_poll_offset(0), 10, false, &out),
                     0);
    assert_int_equal(out.count, 0);
    assert_null(strstr(th_log(&srv), "cannot delete"));
    sl_client_close(c);
}

static bool data_exists(const char *rel)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/data/%s", srv.data_dir, rel);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Deleting partitions, a topic and a stream deletes their whole directory trees, consumer
 * offset files four levels below a topic included; a stream directory the metadata does not
 * know is swept at boot. */
static void test_deletes_remove_directories(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    sl_consumer_ref_t me = sl_consumer_single(sl_id_num(4));
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(c, "dirs", &st), 0);
    char stream[64], topic0[96], topic1[96], part1[128], offset[160];
    snprintf(stream, sizeof(stream), "streams/%u", st->id);
    snprintf(topic0, sizeof(topic0), "%s/topics/0", stream);
    snprintf(topic1, sizeof(topic1), "%s/topics/1", stream);
    snprintf(part1, sizeof(part1), "%s/partitions/1", topic0);
    snprintf(offset, sizeof(offset), "%s/partitions/0/offsets/consumers/4", topic1);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("dirs"), "a", 2, NULL, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("dirs"), "b", 1, NULL, NULL), 0);
    send_numbered(c, "dirs", "a", sl_partitioning_partition(1), "a", 0, 3);
    send_numbered(c, "dirs", "b", sl_partitioning_partition(0), "b", 0, 3);
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("dirs"), sl_id_name("b"), 0,
                                                     1, SL_ACK_LEVEL_QUORUM),
                     0);
    /* A partition's directory comes with its first write to disk (the sends above stay in
     * the journal): a stored offset makes it. */
    assert_int_equal(sl_client_store_consumer_offset(c, me, sl_id_name("dirs"), sl_id_name("a"), 1,
                                                     1, SL_ACK_LEVEL_QUORUM),
                     0);
    assert_true(data_exists(part1) && data_exists(offset));

    assert_int_equal(sl_client_delete_partitions(c, sl_id_name("dirs"), sl_id_name("a"), 1), 0);
    assert_false(data_exists(part1));
    assert_true(data_exists(topic0));
    assert_int_equal(sl_client_delete_topic(c, sl_id_name("dirs"), sl_id_name("b")), 0);
    assert_false(data_exists(topic1));
    assert_true(data_exists(topic0));
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("dirs")), 0);
    assert_false(data_exists(stream));
    assert_null(strstr(th_log(&srv), "cannot delete"));
    sl_client_close(c);

    /* A stream tree left behind by a delete a crash interrupted goes at boot. */
    char stray[4400];
    snprintf(stray, sizeof(stray), "%s/data/streams/4242/topics/0/partitions/0/offsets/groups",
             srv.data_dir);
    for (char *slash = strstr(stray, "/streams/") + 1; (slash = strchr(slash + 1, '/'));) {
        *slash = '\0';
        mkdir(stray, 0755);
        *slash = '/';
    }
    assert_int_equal(mkdir(stray, 0755), 0);
    assert_true(data_exists("streams/4242/topics/0/partitions/0/offsets/groups"));
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
    assert_false(data_exists("streams/4242"));
    assert_true(data_exists("streams"));
}

/* A poll asking for everything gets at most SL_POLL_REPLY_SLICE (2 MiB) of records, so one
 * poll never holds the loop for a whole 61 MB copy (issue 10); polling on from the next offset
 * gets the rest, and a record larger than the slice is served whole. */
static void test_poll_reply_slice(void **state)
{
    (void)state;
    sl_client_t *c = connect_root();
    assert_int_equal(sl_client_create_stream(c, "slice", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("slice"), "t", 1, NULL, NULL), 0);
    static uint8_t payload[1000];
    static sl_send_message_t batch[3000];
    for (int i = 0; i < 3000; i++)
        batch[i] = (sl_send_message_t){.payload = payload, .payload_len = sizeof(payload)};
    for (int i = 0; i < 5; i++) /* five records of 1000 messages, about 1 MB each */
        assert_int_equal(sl_client_send_messages(c, sl_id_name("slice"), sl_id_name("t"),
                                                 sl_partitioning_partition(0), batch, 1000, NULL),
                         0);
    assert_int_equal(sl_client_send_messages(c, sl_id_name("slice"), sl_id_name("t"),
                                             sl_partitioning_partition(0), batch, 3000, NULL),
                     0); /* one record of 3 MB */
    sl_consumer_ref_t me = sl_consumer_single(sl_id_num(1));
    uint64_t next = 0;
    uint32_t polls = 0, total = 0;
    while (total < 8000 && polls < 20) {
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(c, me, sl_id_name("slice"), sl_id_name("t"), 0,
                                                 sl_poll_offset(next), UINT32_MAX, false, &out),
                         0);
        assert_true(out.count > 0);
        /* At most two 1 MB records fit in a slice; the 3 MB record comes alone. */
        assert_true(out.count <= 2000 || (out.count == 3000 && next == 5000));
        assert_int_equal(out.messages[0].offset, next);
        next += out.count;
        total += out.count;
        polls++;
    }
    assert_int_equal(total, 8000);
    assert_true(polls >= 4);
    sl_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_poll_round_trip),
        cmocka_unit_test(test_consumer_offsets),
        cmocka_unit_test(test_group_exactly_once),
        cmocka_unit_test(test_restart_keeps_messages),
        cmocka_unit_test(test_delete_segments),
        cmocka_unit_test(test_recreated_topic_starts_empty),
        cmocka_unit_test(test_deletes_remove_directories),
        cmocka_unit_test(test_poll_reply_slice),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
