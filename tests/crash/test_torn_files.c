/* Boot recovery of damaged segment files (storage.md 4) against the real sluiced. With the
 * server stopped the test tears the tail of active .log files (mid batch header, mid frame
 * header, mid payload), garbles their last bytes, truncates, garbles and deletes .index files,
 * tears the active segment of a topic with 1 MiB segments and garbles a sealed segment's
 * index, and points an .index entry past the end of its .log. After booting: exactly the whole
 * batches before the damage are served and new sends continue at the next offset; damaged
 * indexes lose nothing (the .log is walked and the index rebuilt); the partition whose index
 * points past its log is refused, named in the log, answers polls and sends with errors and
 * keeps its files, while the other partitions of the same topic work. A second boot finds
 * nothing left to repair. */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

/* Batches sent to each partition of the small topics. */
#define BATCHES 12u

/* The damage done to one partition's files while the server is stopped. */
typedef enum damage {
    TAIL_MID_HEADER,  /* .log cut inside the last batch's 256-byte header */
    TAIL_MID_FRAME,   /* .log cut inside the last batch's first frame header */
    TAIL_MID_PAYLOAD, /* .log cut inside the last batch's last payload */
    TAIL_GARBLED,     /* the .log's last 8 bytes flipped: the last batch fails its checksum */
    TAIL_FIRST_BATCH, /* .log cut inside its first batch and .index cut to the entry for that
                       * batch (the others would point past the end): nothing is left */
    INDEX_TORN,       /* .index cut inside its last entry */
    INDEX_GARBLED,    /* the offset and timestamp of every .index entry flipped */
    INDEX_EMPTY,      /* .index truncated to 0 bytes */
    INDEX_DELETED,    /* .index removed */
    INDEX_SHORT,      /* the last two whole .index entries dropped (their write was lost) */
    INDEX_PAST_END,   /* the last .index entry points past the end of the .log */
} damage_t;

typedef struct partition_case {
    const char *topic;
    uint32_t partition;
    damage_t damage;
    uint64_t expect; /* messages served after the boot */
} partition_case_t;

/* Topics "tail" and "index" have 5 and 6 partitions; one damage each. */
#define TAIL_PARTITIONS  5u
#define INDEX_PARTITIONS 6u
static partition_case_t cases[] = {
    {"tail", 0, TAIL_MID_HEADER, 0},  {"tail", 1, TAIL_MID_FRAME, 0},
    {"tail", 2, TAIL_MID_PAYLOAD, 0}, {"tail", 3, TAIL_GARBLED, 0},
    {"tail", 4, TAIL_FIRST_BATCH, 0}, {"index", 0, INDEX_TORN, 0},
    {"index", 1, INDEX_GARBLED, 0},   {"index", 2, INDEX_EMPTY, 0},
    {"index", 3, INDEX_DELETED, 0},   {"index", 4, INDEX_SHORT, 0},
    {"index", 5, INDEX_PAST_END, 0},
};
#define CASES (sizeof(cases) / sizeof(cases[0]))

static th_server_t srv;
static uint32_t stream_id;
static const char *stream = "torn";

static uint64_t tag_of(const char *topic, uint32_t partition)
{
    return ((uint64_t)(unsigned char)topic[0] << 32) | (partition + 1u);
}

static uint32_t batch_count(uint32_t partition, uint32_t i)
{
    return 1 + (i * 17u + partition * 5u) % 50u;
}

static uint32_t create_topic(sl_client_t *c, const char *name, uint32_t partitions,
                             const sl_topic_options_t *opt)
{
    const sl_topic_t *t = NULL;
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), name, partitions, opt, &t), 0);
    assert_non_null(t);
    return t->id;
}

/* Sends BATCHES numbered batches to a partition; message n sits at offset n. */
static uint64_t fill_partition(sl_client_t *c, const char *topic, uint32_t partition)
{
    uint64_t next = 0;
    for (uint32_t i = 0; i < BATCHES; i++) {
        uint32_t count = batch_count(partition, i);
        cu_send_ok(c, sl_id_name(stream), sl_id_name(topic), partition, tag_of(topic, partition),
                   next, count, next);
        next += count;
    }
    return next;
}

/* The active (last) segment's file of a partition. */
static void active_file(uint32_t topic_id, uint32_t partition, const char *ext, char *out,
                        size_t cap)
{
    char dir[1024];
    uint64_t starts[64];
    cu_partition_dir(&srv, stream_id, topic_id, partition, dir, sizeof(dir));
    size_t n = cu_segments(dir, starts, 64);
    assert_true(n >= 1);
    cu_segment_path(dir, starts[n - 1], ext, out, cap);
}

/* Damages one partition's active segment; returns the messages that must survive. */
static uint64_t damage(uint32_t topic_id, const partition_case_t *pc, uint64_t total)
{
    char log_path[1200], index_path[1200];
    active_file(topic_id, pc->partition, ".log", log_path, sizeof(log_path));
    active_file(topic_id, pc->partition, ".index", index_path, sizeof(index_path));
    cu_batch_t b[BATCHES + 1];
    size_t n = cu_log_batches(log_path, b, BATCHES + 1);
    assert_int_equal(n, BATCHES);
    const cu_batch_t *last = &b[n - 1];
    assert_int_equal(last->position + last->length, cu_file_size(log_path));
    uint64_t index_size = cu_file_size(index_path);
    assert_true(index_size >= 24 && index_size % 24 == 0);
    switch (pc->damage) {
    case TAIL_MID_HEADER:
        cu_truncate(log_path, last->position + 100);
        return last->base_offset;
    case TAIL_MID_FRAME:
        cu_truncate(log_path, last->position + 256 + 30);
        return last->base_offset;
    case TAIL_MID_PAYLOAD:
        cu_truncate(log_path, last->position + last->length - 5);
        return last->base_offset;
    case TAIL_GARBLED:
        cu_garble(log_path, last->position + last->length - 8, 8);
        return last->base_offset;
    case TAIL_FIRST_BATCH:
        cu_truncate(log_path, 100);
        cu_truncate(index_path, 24);
        return 0;
    case INDEX_TORN:
        cu_truncate(index_path, index_size - 7);
        return total;
    case INDEX_GARBLED:
        for (uint64_t at = 0; at < index_size; at += 24)
            cu_garble(index_path, at, 16);
        return total;
    case INDEX_EMPTY:
        cu_truncate(index_path, 0);
        return total;
    case INDEX_DELETED:
        assert_int_equal(unlink(index_path), 0);
        return total;
    case INDEX_SHORT:
        cu_truncate(index_path, index_size - 48);
        return total;
    case INDEX_PAST_END: {
        uint64_t past = cu_file_size(log_path) + 4096;
        cu_write_at(index_path, index_size - 8, &past, 8);
        return 0;
    }
    }
    return 0;
}

/* Everything before the damage is served, message n at offset n, and the next send gets the
 * next offset. */
static void check_served(sl_client_t *c, const char *topic, uint32_t partition, uint64_t expect,
                         bool send_more)
{
    uint64_t tag = tag_of(topic, partition);
    uint64_t *numbers = calloc(expect + 64, sizeof(uint64_t));
    assert_non_null(numbers);
    uint64_t n =
        cu_read_all(c, sl_id_name(stream), sl_id_name(topic), partition, tag, numbers, expect + 64);
    if (n != expect)
        fail_msg("topic %s partition %u serves %" PRIu64 " messages, expected %" PRIu64, topic,
                 partition, n, expect);
    for (uint64_t o = 0; o < n; o++)
        assert_int_equal(numbers[o], o);
    /* A lookup in the middle (through the rebuilt or trimmed index) finds its message. */
    if (n > 2) {
        sl_polled_messages_t out;
        assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                                 sl_id_name(stream), sl_id_name(topic), partition,
                                                 sl_poll_offset(n / 2), 1, false, &out),
                         0);
        assert_int_equal(out.count, 1);
        assert_int_equal(out.messages[0].offset, n / 2);
    }
    if (send_more)
        cu_send_ok(c, sl_id_name(stream), sl_id_name(topic), partition, tag, n, 4, n);
    free(numbers);
}

static void check_refused(sl_client_t *c, const char *topic, uint32_t topic_id, uint32_t partition)
{
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)),
                                             sl_id_name(stream), sl_id_name(topic), partition,
                                             sl_poll_offset(0), 10, false, &out),
                     -SL_ERR_PARTITION_NOT_FOUND);
    sl_send_result_t r;
    assert_int_equal(cu_send(c, sl_id_name(stream), sl_id_name(topic), partition, 1, 0, 1, &r),
                     -SL_ERR_RESOURCE_NOT_FOUND);
    char want[160];
    snprintf(want, sizeof(want), "partition %u of topic %u in stream %u refused", partition,
             topic_id, stream_id);
    if (!strstr(th_log(&srv), want))
        fail_msg("the log does not say '%s':\n%s", want, th_log(&srv));
}

static void restart(void)
{
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
}

/* --- topics with 1 MiB segments ---------------------------------------------------------- */

typedef struct big_topic {
    const char *name;
    uint64_t fill;   /* at least this many messages */
    bool empty_tail; /* cut the active segment inside its first batch (else its last) */
    uint32_t id;
    uint64_t expect;
} big_topic_t;

static void fill_big(sl_client_t *c, big_topic_t *big)
{
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 1024 * 1024};
    big->id = create_topic(c, big->name, 1, &opt);
    uint64_t next = 0;
    for (uint32_t i = 0; next < big->fill; i++) {
        uint32_t count = batch_count(7, i);
        cu_send_ok(c, sl_id_name(stream), sl_id_name(big->name), 0, tag_of(big->name, 0), next,
                   count, next);
        next += count;
    }
}

/* Tears the active segment (not the first one) and garbles the index of the segment before
 * it, a sealed one, whose .log is then walked instead. */
static void damage_big(big_topic_t *big)
{
    char dir[1024], log_path[1200], index_path[1200];
    uint64_t starts[64];
    cu_partition_dir(&srv, stream_id, big->id, 0, dir, sizeof(dir));
    size_t n = cu_segments(dir, starts, 64);
    if (n < 2)
        fail_msg("topic %s has %zu segments; the test needs several", big->name, n);
    cu_segment_path(dir, starts[n - 1], ".log", log_path, sizeof(log_path));
    cu_batch_t b[512];
    size_t batches = cu_log_batches(log_path, b, 512);
    assert_true(batches >= 2);
    const cu_batch_t *cut = big->empty_tail ? &b[0] : &b[batches - 1];
    assert_int_equal(b[batches - 1].position + b[batches - 1].length, cu_file_size(log_path));
    assert_int_equal(b[0].base_offset, starts[n - 1]);
    cu_truncate(log_path, cut->position + 256 + 20);
    big->expect = cut->base_offset;
    if (big->empty_tail) {
        /* Later entries would point past the cut, which refuses the partition. */
        cu_segment_path(dir, starts[n - 1], ".index", index_path, sizeof(index_path));
        cu_truncate(index_path, 24);
    }
    cu_segment_path(dir, starts[n - 2], ".index", index_path, sizeof(index_path));
    uint64_t index_size = cu_file_size(index_path);
    assert_true(index_size >= 24);
    for (uint64_t at = 0; at < index_size; at += 24)
        cu_garble(index_path, at, 16);
}

/* --- the test ------------------------------------------------------------------------------ */

static void test_torn_and_garbled_files(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        exit(77);
    sl_client_t *c = cu_connect(&srv);
    const sl_stream_t *s = NULL;
    assert_int_equal(sl_client_create_stream(c, stream, &s), 0);
    assert_non_null(s);
    stream_id = s->id;
    /* One flush per batch, so every batch has its own index entry. */
    sl_topic_options_t every_batch = {.set = SL_TOPIC_OPT_MESSAGES_REQUIRED_TO_SAVE,
                                      .messages_required_to_save = 1};
    uint32_t tail_id = create_topic(c, "tail", TAIL_PARTITIONS, &every_batch);
    uint32_t index_id = create_topic(c, "index", INDEX_PARTITIONS, &every_batch);
    uint64_t totals[CASES];
    for (size_t i = 0; i < CASES; i++)
        totals[i] = fill_partition(c, cases[i].topic, cases[i].partition);
    /* About 3.5 MiB: four segments, the active one cut in its last batch; and 1.2 MiB: two
     * segments, the active one cut in its first batch, so it comes back empty. */
    big_topic_t bigs[] = {{.name = "big", .fill = 17000},
                          {.name = "big2", .fill = 6000, .empty_tail = true}};
    for (size_t i = 0; i < 2; i++)
        fill_big(c, &bigs[i]);
    sl_client_close(c);
    cu_stop_clean(&srv);

    for (size_t i = 0; i < CASES; i++) {
        uint32_t topic_id = cases[i].topic[0] == 't' ? tail_id : index_id;
        cases[i].expect = damage(topic_id, &cases[i], totals[i]);
    }
    for (size_t i = 0; i < 2; i++)
        damage_big(&bigs[i]);
    /* What the refused partition's files look like: boot must leave them as they are. */
    char refused_index[1200];
    active_file(index_id, INDEX_PARTITIONS - 1, ".index", refused_index, sizeof(refused_index));
    size_t refused_len;
    uint8_t *refused_bytes = cu_read_file(refused_index, &refused_len);

    for (int boot = 0; boot < 2; boot++) {
        restart();
        c = cu_connect(&srv);
        for (size_t i = 0; i < CASES; i++) {
            if (cases[i].damage == INDEX_PAST_END)
                check_refused(c, "index", index_id, cases[i].partition);
            else
                check_served(c, cases[i].topic, cases[i].partition, cases[i].expect, true);
            /* The second boot reads what the first one appended. */
            if (cases[i].damage != INDEX_PAST_END)
                cases[i].expect += 4;
        }
        for (size_t i = 0; i < 2; i++) {
            check_served(c, bigs[i].name, 0, bigs[i].expect, true);
            bigs[i].expect += 4;
        }
        const char *log = th_log(&srv);
        if (boot == 0) {
            assert_non_null(strstr(log, "cut a torn tail"));
            assert_non_null(strstr(log, "walking the .log"));
        } else {
            /* The repairs of the first boot were made durable: nothing left to repair. */
            assert_null(strstr(log, "cut a torn tail"));
            assert_null(strstr(log, "walking the .log"));
        }
        sl_client_close(c);
        cu_stop_clean(&srv);
    }
    size_t after_len;
    uint8_t *after = cu_read_file(refused_index, &after_len);
    assert_int_equal(after_len, refused_len);
    assert_memory_equal(after, refused_bytes, refused_len);
    free(after);
    free(refused_bytes);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torn_and_garbled_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
