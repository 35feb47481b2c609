/* Partitions' first segments created off the loop (server/segment_create.h) with the real
 * sluiced, slowed by the test-only line "delay creates <ms>" (server/test_faults.h): every
 * creation then waits that long on its ring before the directory and files are made, so the
 * partitions' batches wait in memory while the test reads, deletes, purges, stops or kills.
 * Checked: sends to many partitions round-robin are answered and read back while their files
 * are in flight, and are all in the files after a restart, one segment per partition; a
 * DeleteTopic and a PurgeTopic issued while creations are in flight leave no segment of the
 * old data (the same ids recreated hold only the new messages); a kill -9 with creations in
 * flight leaves partitions that open and take sends from offset 0, with no segment but the
 * active one; an enforce_fsync topic still creates its files before the send is answered, so
 * a kill -9 right after the answer loses nothing. No wall-clock assertion. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>

#include "crash_util.h"
#include "harness.h"

#define PARTITIONS 120u
#define PER_BATCH  3u
#define CAP        64u

static th_server_t srv;
static char fault_file[512];

static void apply(sl_client_t *c, const char *line)
{
    cu_set_fault(fault_file, line);
    assert_int_equal(sl_client_ping(c), 0);
}

static uint32_t make_topic(sl_client_t *c, const char *stream, const char *topic,
                           uint32_t partitions, bool fsync)
{
    const sl_stream_t *s = NULL;
    if (sl_client_create_stream(c, stream, &s) != 0)
        assert_int_equal(sl_client_get_stream(c, sl_id_name(stream), &s), 0);
    /* The flush gate trips at every batch: each send's flush is the one that waits. */
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC |
                                     SL_TOPIC_OPT_MESSAGES_REQUIRED_TO_SAVE,
                              .enforce_fsync = fsync,
                              .messages_required_to_save = PER_BATCH};
    const sl_topic_t *t = NULL;
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), topic, partitions, &opt, &t), 0);
    return t->id;
}

static uint32_t stream_id_of(sl_client_t *c, const char *stream)
{
    const sl_stream_t *s = NULL;
    assert_int_equal(sl_client_get_stream(c, sl_id_name(stream), &s), 0);
    return s->id;
}

/* rounds batches of PER_BATCH to every partition, round-robin, numbered per partition from
 * 0; each answered at the next offset. */
static void send_round_robin(sl_client_t *c, const char *stream, const char *topic,
                             uint32_t partitions, uint32_t rounds, uint64_t tag)
{
    for (uint32_t r = 0; r < rounds; r++)
        for (uint32_t p = 0; p < partitions; p++)
            cu_send_ok(c, sl_id_name(stream), sl_id_name(topic), p, tag, r * PER_BATCH, PER_BATCH,
                       r * PER_BATCH);
}

static void read_back(sl_client_t *c, const char *stream, const char *topic, uint32_t partitions,
                      uint64_t tag, uint64_t expect)
{
    uint64_t numbers[CAP];
    for (uint32_t p = 0; p < partitions; p++) {
        uint64_t n = cu_read_all(c, sl_id_name(stream), sl_id_name(topic), p, tag, numbers, CAP);
        if (n != expect)
            fail_msg("partition %u holds %llu messages, expected %llu", p, (unsigned long long)n,
                     (unsigned long long)expect);
        for (uint64_t o = 0; o < n; o++)
            assert_int_equal(numbers[o], o);
    }
}

/* Every partition directory holds exactly one segment, at 0, whose .log holds `batches`
 * whole batches (0: the segment may be missing or empty, nothing else). */
static void check_files(uint32_t stream_id, uint32_t topic_id, uint32_t partitions, size_t batches)
{
    for (uint32_t p = 0; p < partitions; p++) {
        char dir[4096], path[4200];
        cu_partition_dir(&srv, stream_id, topic_id, p, dir, sizeof(dir));
        uint64_t starts[8];
        size_t n = cu_segments(dir, starts, 8);
        if (batches == 0) {
            assert_true(n <= 1);
            if (n == 1) {
                assert_int_equal(starts[0], 0);
                cu_segment_path(dir, 0, ".log", path, sizeof(path));
                assert_int_equal(cu_file_size(path), 0);
            }
            continue;
        }
        if (n != 1)
            fail_msg("partition %u: %zu segments", p, n);
        assert_int_equal(starts[0], 0);
        cu_segment_path(dir, 0, ".log", path, sizeof(path));
        cu_batch_t b[16];
        size_t got = cu_log_batches(path, b, 16);
        if (got != batches)
            fail_msg("partition %u: %zu batches in its .log, expected %zu", p, got, batches);
        for (size_t i = 0; i < got; i++)
            assert_int_equal(b[i].base_offset, i * PER_BATCH);
    }
}

/* The stopped server's log line: creations done off the loop (-1 when it has none). */
static unsigned long long created_off_loop(void);

/* Stops (SIGTERM or SIGKILL) and starts again on the same data; returns the first segments
 * the stopped process created off the loop (SIGTERM only). */
static unsigned long long restart(int sig)
{
    srv.keep_data = true;
    unsigned long long off_loop = 0;
    if (sig == SIGTERM) {
        cu_stop_clean(&srv);
        off_loop = created_off_loop();
    } else {
        int status = th_stop(&srv, SIGKILL);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
    return off_loop;
}

static unsigned long long created_off_loop(void)
{
    const char *at = strstr(th_log(&srv), "first segments: ");
    if (!at)
        fail_msg("no count of first segments in the log:\n%s", th_log(&srv));

    return strtoull(at + strlen("first segments: "), NULL, 10);
}

/* Waits (bounded, no timing asserted) until every partition's .log holds `batches` batches:
 * the creations completed and the journals were flushed into the new files. */
static void wait_files(uint32_t stream_id, uint32_t topic_id, uint32_t partitions, size_t batches)
{
    for (int tries = 0; tries < 600; tries++) {
        uint32_t ready = 0;
        for (uint32_t p = 0; p < partitions; p++) {
            char dir[4096], path[4200];
            cu_partition_dir(&srv, stream_id, topic_id, p, dir, sizeof(dir));
            cu_segment_path(dir, 0, ".log", path, sizeof(path));
            cu_batch_t b[16];
            if (access(path, F_OK) == 0 && cu_log_batches(path, b, 16) == batches)
                ready++;
        }
        if (ready == partitions)
            return;
        usleep(50 * 1000);
    }
    fail_msg("the partitions' first segments never got their %zu batches", batches);
}

static void test_round_robin_read_while_creating_then_restart(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    uint32_t topic_id = make_topic(c, "rr", "t", PARTITIONS, false);
    uint32_t sid = stream_id_of(c, "rr");
    apply(c, "delay creates 400");
    send_round_robin(c, "rr", "t", PARTITIONS, 1, 11);
    /* Served from memory while the files are being created. */
    read_back(c, "rr", "t", PARTITIONS, 11, PER_BATCH);
    /* Each creation's completion flushes what waited for it, without another send: then a
     * kill -9 (the page cache survives it) loses nothing. */
    wait_files(sid, topic_id, PARTITIONS, 1);
    sl_client_close(c);
    restart(SIGKILL);
    check_files(sid, topic_id, PARTITIONS, 1);
    c = cu_connect(&srv);
    read_back(c, "rr", "t", PARTITIONS, 11, PER_BATCH);
    /* Again on a second topic, stopped cleanly: the log says how many were created off the
     * loop. */
    uint32_t t2 = make_topic(c, "rr", "t2", PARTITIONS, false);
    apply(c, "delay creates 400");
    /* The second round's send to a partition whose creation is still in flight waits for
     * it (one gate's worth waits in memory at most). */
    send_round_robin(c, "rr", "t2", PARTITIONS, 2, 12);
    read_back(c, "rr", "t2", PARTITIONS, 12, 2 * PER_BATCH);
    apply(c, "");
    sl_client_close(c);
    /* At most SL_SEGMENT_CREATE_MAX (64) are in flight; past that a partition creates its
     * own on the loop, so at least 64 of the 120 were created off it. */
    assert_true(restart(SIGTERM) >= 64);
    check_files(sid, t2, PARTITIONS, 2);
    c = cu_connect(&srv);
    read_back(c, "rr", "t", PARTITIONS, 11, PER_BATCH);
    read_back(c, "rr", "t2", PARTITIONS, 12, 2 * PER_BATCH);
    sl_client_close(c);
}

static void test_delete_and_purge_while_creating(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    make_topic(c, "del", "t", 40, false);
    make_topic(c, "del", "p", 40, false);
    apply(c, "delay creates 500");
    send_round_robin(c, "del", "t", 40, 1, 21);
    const sl_topic_t *old = NULL;
    assert_int_equal(sl_client_get_topic(c, sl_id_name("del"), sl_id_name("t"), &old), 0);
    uint32_t old_id = old->id;
    assert_int_equal(sl_client_delete_topic(c, sl_id_name("del"), sl_id_name("t")), 0);
    /* The delete waited for the creations in flight, so the rename into the trash took their
     * files along: past the delay, nothing of the topic is back on disk (a creation left
     * running would make its directories again, an orphan tree). */
    usleep(1200 * 1000);
    char dir[4096];
    cu_partition_dir(&srv, stream_id_of(c, "del"), old_id, 0, dir, sizeof(dir));
    *strstr(dir, "/partitions/") = '\0';
    if (access(dir, F_OK) == 0)
        fail_msg("%s is back on disk after its topic was deleted", dir);
    send_round_robin(c, "del", "p", 40, 1, 22);
    assert_int_equal(sl_client_purge_topic(c, sl_id_name("del"), sl_id_name("p")), 0);
    /* The same names again, the deleted topic's id reused: only the new messages. */
    uint32_t t_id = make_topic(c, "del", "t", 40, false);
    send_round_robin(c, "del", "t", 40, 2, 23);
    send_round_robin(c, "del", "p", 40, 1, 24);
    apply(c, "");
    read_back(c, "del", "t", 40, 23, 2 * PER_BATCH);
    read_back(c, "del", "p", 40, 24, PER_BATCH);
    const sl_topic_t *pt = NULL;
    assert_int_equal(sl_client_get_topic(c, sl_id_name("del"), sl_id_name("p"), &pt), 0);
    uint32_t p_id = pt->id;
    uint32_t sid = stream_id_of(c, "del");
    sl_client_close(c);
    assert_true(restart(SIGTERM) >= 40);
    check_files(sid, t_id, 40, 2);
    check_files(sid, p_id, 40, 1);
    c = cu_connect(&srv);
    read_back(c, "del", "t", 40, 23, 2 * PER_BATCH);
    read_back(c, "del", "p", 40, 24, PER_BATCH);
    sl_client_close(c);
}

static void test_kill9_while_creating(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    uint32_t t_id = make_topic(c, "k9", "t", 40, false);
    uint32_t f_id = make_topic(c, "k9", "f", 8, true);
    apply(c, "delay creates 2000");
    send_round_robin(c, "k9", "t", 40, 1, 31);
    /* enforce_fsync: answered once the files exist and the batch is synced. */
    send_round_robin(c, "k9", "f", 8, 1, 32);
    uint32_t sid = stream_id_of(c, "k9");
    sl_client_close(c);
    restart(SIGKILL);
    /* Acknowledged from memory and killed before the files: gone, by design; what is left on
     * disk is at most an empty segment 0 per partition. */
    check_files(sid, t_id, 40, 0);
    check_files(sid, f_id, 8, 1);
    c = cu_connect(&srv);
    apply(c, "");
    read_back(c, "k9", "f", 8, 32, PER_BATCH);
    read_back(c, "k9", "t", 40, 31, 0);
    send_round_robin(c, "k9", "t", 40, 1, 31);
    read_back(c, "k9", "t", 40, 31, PER_BATCH);
    sl_client_close(c);
    restart(SIGTERM);
    check_files(sid, t_id, 40, 1);
}

static int setup(void **state)
{
    (void)state;
    return cu_start_with_faults(&srv, NULL, fault_file, sizeof(fault_file)) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cu_stop_with_faults(&srv, fault_file);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_robin_read_while_creating_then_restart, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delete_and_purge_while_creating, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_while_creating, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
