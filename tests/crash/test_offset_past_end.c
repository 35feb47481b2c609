/* A stored consumer offset must not outlive the messages it covers. On a topic without
 * enforce_fsync a send is acknowledged from memory and a SIGKILL loses it by design
 * (storage.md 3), but the consumer offset stored for it (by a poll's auto-commit or by
 * StoreConsumerOffset) is a file of its own that survives the kill. After the restart it
 * pointed past the partition's end; the new messages take the lost offsets again, so a poll
 * "next" (stored offset + 1) skipped them. Now the partition, at open, sets such an offset to
 * its last message, or drops it when nothing is left, and writes that down, so a later restart
 * cannot bring the old value back over new messages.
 *
 * Each case: messages that reach the disk (a clean stop flushes them), messages only in memory,
 * an offset stored past the first group, SIGKILL, restart; then the stored offset, new sends,
 * and polls "next" must deliver the new messages from their first offset. Deterministic: the
 * default flush gate (1024 messages, 1 MiB) keeps the few messages sent here in memory. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

#define TAG 0x5eedu
/* Members of the killed process are released 1.2 x heartbeat.interval after the restart. */
#define CONFIG "[heartbeat]\ninterval = \"1 s\"\n"

static const char *stream = "offsets";
static const char *topic = "buffered";
static const char *group = "readers";

static th_server_t srv;

static void start(const char *data_dir)
{
    th_options_t o = {.data_dir = data_dir, .extra_config = CONFIG};
    if (!th_start(&srv, &o)) {
        fprintf(stderr, "io_uring unavailable: skipped\n");
        exit(77);
    }
}

static void kill9(void)
{
    int status = th_stop(&srv, SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static sl_client_t *setup(void)
{
    start(NULL);
    sl_client_t *c = cu_connect(&srv);
    assert_int_equal(sl_client_create_stream(c, stream, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), topic, 1, NULL, NULL), 0);
    assert_int_equal(
        sl_client_create_consumer_group(c, sl_id_name(stream), sl_id_name(topic), group, NULL), 0);
    return c;
}

static void send_ok(sl_client_t *c, uint64_t first, uint32_t count, uint64_t offset)
{
    cu_send_ok(c, sl_id_name(stream), sl_id_name(topic), 0, TAG, first, count, offset);
}

/* A clean stop and a restart: whatever was acknowledged is on disk now. */
static sl_client_t *restart_clean(sl_client_t *c)
{
    sl_client_close(c);
    cu_stop_clean(&srv);
    start(srv.data_dir);
    return cu_connect(&srv);
}

static sl_client_t *restart_killed(sl_client_t *c)
{
    kill9();
    sl_client_close(c);
    start(srv.data_dir);
    return cu_connect(&srv);
}

/* The stored offset of consumer, or -1 when none is stored. */
static int64_t stored_offset(sl_client_t *c, sl_consumer_ref_t consumer)
{
    sl_consumer_offset_t o;
    assert_int_equal(
        sl_client_get_consumer_offset(c, consumer, sl_id_name(stream), sl_id_name(topic), 0, &o),
        0);
    return o.found ? (int64_t)o.stored_offset : -1;
}

/* Polls "next" with auto-commit: the messages must be first .. first + count - 1 (numbers
 * equal to offsets in these tests). */
static void poll_next_expect(sl_client_t *c, sl_consumer_ref_t consumer, uint64_t first,
                             uint32_t count)
{
    sl_polled_messages_t out;
    assert_int_equal(sl_client_poll_messages(c, consumer, sl_id_name(stream), sl_id_name(topic), 0,
                                             sl_poll_next(), 100, true, &out),
                     0);
    if (out.count != count || (count > 0 && out.messages[0].offset != first))
        fail_msg("poll next: %u messages from offset %" PRIu64 ", expected %u from %" PRIu64
                 " (partition's current offset %" PRIu64 ")",
                 out.count, out.count ? out.messages[0].offset : 0, count, first,
                 out.current_offset);
    for (uint32_t i = 0; i < out.count; i++) {
        uint64_t n;
        assert_true(cu_message_number(&out.messages[i], TAG, &n));
        assert_int_equal(out.messages[i].offset, first + i);
        assert_int_equal(n, first + i);
    }
}

/* Waits until the group members of the killed process are released (1.2 s here), then joins
 * the group with a fresh connection, which gets the partition. */
static sl_client_t *join_group(void)
{
    sl_client_t *m = cu_connect(&srv);
    for (int tries = 0; tries < 300; tries++) { /* a liveness bound of 30 s, not a timing */
        const sl_consumer_group_t *g = NULL;
        assert_int_equal(sl_client_get_consumer_group(m, sl_id_name(stream), sl_id_name(topic),
                                                      sl_id_name(group), &g),
                         0);
        if (g->members_count == 0)
            break;
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(
        sl_client_join_consumer_group(m, sl_id_name(stream), sl_id_name(topic), sl_id_name(group)),
        0);
    const sl_assignment_t *a = NULL;
    assert_int_equal(sl_client_sync_consumer_group(m, sl_id_name(stream), sl_id_name(topic),
                                                   sl_id_name(group), &a),
                     0);
    assert_true(a && a->partitions_count == 1 && a->partitions[0] == 0);
    return m;
}

/* Everything lost: the auto-committed offset of a single consumer points into an empty
 * partition; it is dropped, for good (new messages past it and a clean restart do not bring it
 * back), so "next" starts at 0 again. */
static void test_auto_commit_all_lost(void **state)
{
    (void)state;
    sl_consumer_ref_t me = sl_consumer_single(sl_id_num(1));
    sl_client_t *c = setup();
    send_ok(c, 0, 5, 0);
    poll_next_expect(c, me, 0, 5);
    assert_int_equal(stored_offset(c, me), 4);
    c = restart_killed(c);

    /* The five messages were only in memory. */
    assert_int_equal(cu_read_all(c, sl_id_name(stream), sl_id_name(topic), 0, TAG, NULL, 0), 0);
    assert_int_equal(stored_offset(c, me), -1);
    send_ok(c, 0, 8, 0);
    c = restart_clean(c);
    assert_int_equal(stored_offset(c, me), -1);
    poll_next_expect(c, me, 0, 8);
    poll_next_expect(c, me, 0, 0);
    sl_client_close(c);
    cu_stop_clean(&srv);
    th_cleanup(&srv);
}

/* Part lost: the offset is set to the last recovered message, and that is written down: after
 * the restart nobody polls, new messages fill the lost offsets and more, a clean restart
 * follows, and "next" still starts at the first new message. */
static void test_auto_commit_part_lost(void **state)
{
    (void)state;
    sl_consumer_ref_t me = sl_consumer_single(sl_id_num(7));
    sl_client_t *c = setup();
    send_ok(c, 0, 3, 0);
    c = restart_clean(c); /* offsets 0..2 on disk */
    send_ok(c, 3, 5, 3);  /* 3..7 in memory */
    poll_next_expect(c, me, 0, 8);
    assert_int_equal(stored_offset(c, me), 7);
    c = restart_killed(c);

    assert_int_equal(cu_read_all(c, sl_id_name(stream), sl_id_name(topic), 0, TAG, NULL, 0), 3);
    assert_int_equal(stored_offset(c, me), 2);
    send_ok(c, 3, 10, 3);
    c = restart_clean(c);
    assert_int_equal(stored_offset(c, me), 2);
    poll_next_expect(c, me, 3, 10);
    sl_client_close(c);
    cu_stop_clean(&srv);
    th_cleanup(&srv);
}

/* A consumer group's offset stored with StoreConsumerOffset (the check against the current
 * offset passes: the messages are in memory) gets the same treatment. */
static void test_group_store_part_lost(void **state)
{
    (void)state;
    sl_consumer_ref_t readers = sl_consumer_in_group(sl_id_name(group));
    sl_client_t *c = setup();
    send_ok(c, 0, 4, 0);
    c = restart_clean(c); /* offsets 0..3 on disk */
    send_ok(c, 4, 4, 4);  /* 4..7 in memory */
    sl_client_t *m = join_group();
    assert_int_equal(sl_client_store_consumer_offset(m, readers, sl_id_name(stream),
                                                     sl_id_name(topic), 0, 6, SL_ACK_LEVEL_NONE),
                     0);
    assert_int_equal(stored_offset(c, readers), 6);
    sl_client_close(m);
    c = restart_killed(c);

    assert_int_equal(cu_read_all(c, sl_id_name(stream), sl_id_name(topic), 0, TAG, NULL, 0), 4);
    assert_int_equal(stored_offset(c, readers), 3);
    send_ok(c, 4, 3, 4);
    m = join_group();
    poll_next_expect(m, readers, 4, 3);
    assert_int_equal(stored_offset(c, readers), 6);
    sl_client_close(m);
    sl_client_close(c);
    cu_stop_clean(&srv);
    /* The repair was logged, with the values. */
    assert_non_null(strstr(th_log(&srv), "past the partition's end"));
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_commit_all_lost),
        cmocka_unit_test(test_auto_commit_part_lost),
        cmocka_unit_test(test_group_store_part_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
