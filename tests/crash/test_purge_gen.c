/* A purge is committed to the metadata journal before the partitions are purged; purge.gen
 * closes the window between the two (storage.md 5). The real sluiced is made to fail the
 * partition side of a committed purge (SLUICE_FAULT_FILE: the .log unlink, or the purge.gen
 * rename) and is then SIGKILLed, which is what a crash right after the journal commit leaves
 * on disk; after the restart the purged messages must be gone, offsets start at 0 again, and
 * messages sent after a purge that was recorded, or to partitions created after it, survive
 * further restarts. A purge done whose record could not be written (a full disk) leaves the
 * partition serving, empty, and refusing writes until the record is in. */
#include <inttypes.h>
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
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

#define CAP 256u

static th_server_t srv;
static char fault_file[512];

static void set_fault(const char *line)
{
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.new", fault_file);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", line);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, fault_file), 0);
}

static void restart_after_kill(void)
{
    int status = th_stop(&srv, SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
}

static uint64_t count_of(sl_client_t *c, const char *stream, const char *topic, uint32_t partition,
                         uint64_t tag)
{
    static uint64_t numbers[CAP];
    return cu_read_all(c, sl_id_name(stream), sl_id_name(topic), partition, tag, numbers, CAP);
}

/* The generation purge.gen records for the topic's incarnation (its created_at); 0 when the
 * file is missing or not for this incarnation. */
static uint64_t recorded(sl_client_t *c, uint32_t stream_id, const char *stream, const char *topic,
                         uint32_t partition)
{
    const sl_topic_t *t;
    assert_int_equal(sl_client_get_topic(c, sl_id_name(stream), sl_id_name(topic), &t), 0);
    char dir[4096], path[4200];
    cu_partition_dir(&srv, stream_id, t->id, partition, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/purge.gen", dir);
    if (access(path, F_OK) != 0)
        return 0;
    size_t len;
    uint8_t *bytes = cu_read_file(path, &len);
    assert_int_equal(len, 16);
    uint64_t generation = 0, revision = 0;
    for (int i = 7; i >= 0; i--) {
        generation = generation << 8 | bytes[i];
        revision = revision << 8 | bytes[8 + i];
    }
    free(bytes);
    assert_int_equal(revision, t->created_at_us);
    return generation;
}

/* The partition does not serve the purged messages while its purge is owed. */
static void not_served(sl_client_t *c, const char *stream, const char *topic, uint32_t partition)
{
    sl_polled_messages_t out;
    int rc =
        sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name(stream),
                                sl_id_name(topic), partition, sl_poll_offset(0), 100, false, &out);
    assert_true(rc != 0 || out.count == 0);
}

static void test_purge_topic_interrupted(void **state)
{
    (void)state;
    const char *s = "pg-topic", *t = "events";
    sl_client_t *c = cu_connect(&srv);
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(c, s, &st), 0);
    uint32_t sid = st->id;
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name(s), t, 2, &opt, NULL), 0);
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 0, 0xA1, 0, 10, 0);
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 1, 0xA1, 100, 7, 0);
    assert_int_equal(sl_client_store_consumer_offset(c, sl_consumer_single(sl_id_num(5)),
                                                     sl_id_name(s), sl_id_name(t), 0, 4,
                                                     SL_ACK_LEVEL_NONE),
                     0);
    sl_consumer_offset_t off;
    assert_int_equal(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_num(5)),
                                                   sl_id_name(s), sl_id_name(t), 0, &off),
                     0);
    assert_true(off.found && off.stored_offset == 4);
    assert_int_equal(recorded(c, sid, s, t, 0), 0);

    /* Committed, but no segment can be deleted: the files stay as they were. */
    set_fault("eio unlink .log");
    assert_int_equal(sl_client_purge_topic(c, sl_id_name(s), sl_id_name(t)), 0);
    assert_non_null(strstr(th_log(&srv), "closed until a restart purges it"));
    not_served(c, s, t, 0);
    not_served(c, s, t, 1);
    sl_client_close(c);
    set_fault("");
    restart_after_kill();

    c = cu_connect(&srv);
    assert_int_equal(count_of(c, s, t, 0, 0xA1), 0);
    assert_int_equal(count_of(c, s, t, 1, 0xA1), 0);
    assert_non_null(strstr(th_log(&srv), "purged to generation 1 (had 0)"));
    assert_int_equal(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_num(5)),
                                                   sl_id_name(s), sl_id_name(t), 0, &off),
                     0);
    assert_false(off.found); /* stored consumer offsets are purged too */
    /* The record is owed, not written: it goes in before each partition's next write. */
    assert_int_equal(recorded(c, sid, s, t, 0), 0);
    assert_int_equal(recorded(c, sid, s, t, 1), 0);
    /* Offsets restart at 0 (commands.md PurgeTopic). */
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 0, 0xB2, 0, 5, 0);
    assert_int_equal(recorded(c, sid, s, t, 0), 1);
    /* A partition created after the purge starts at the topic's generation, recorded with
     * its first write (before it, it has no directory at all). */
    assert_int_equal(sl_client_create_partitions(c, sl_id_name(s), sl_id_name(t), 1), 0);
    assert_int_equal(recorded(c, sid, s, t, 2), 0);
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 2, 0xB2, 50, 3, 0);
    assert_int_equal(recorded(c, sid, s, t, 2), 1);
    sl_client_close(c);

    /* Recorded purges are not done again: what was sent after them survives (partition 1,
     * still owing its record, is purged again at each boot, which costs nothing: it is
     * empty, and it is not logged). */
    restart_after_kill();
    c = cu_connect(&srv);
    assert_null(strstr(th_log(&srv), "purged to generation"));
    assert_int_equal(count_of(c, s, t, 0, 0xB2), 5);
    assert_int_equal(count_of(c, s, t, 2, 0xB2), 3);
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 0, 0xB2, 5, 2, 5);
    sl_client_close(c);
}

static void test_purge_stream_unrecorded(void **state)
{
    (void)state;
    const char *s = "pg-stream";
    sl_client_t *c = cu_connect(&srv);
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(c, s, &st), 0);
    uint32_t sid = st->id;
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name(s), "a", 1, &opt, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name(s), "b", 1, &opt, NULL), 0);
    assert_int_equal(sl_client_purge_topic(c, sl_id_name(s), sl_id_name("b")), 0);
    assert_int_equal(recorded(c, sid, s, "b", 0), 0); /* an empty partition: nothing written */
    cu_send_ok(c, sl_id_name(s), sl_id_name("a"), 0, 0xC3, 0, 8, 0);
    cu_send_ok(c, sl_id_name(s), sl_id_name("b"), 0, 0xC3, 0, 6, 0);
    assert_int_equal(recorded(c, sid, s, "b", 0), 1);

    /* The partitions are purged but purge.gen cannot be replaced: on disk the purge is still
     * owed. They serve, empty, and take no write before the record is in. */
    set_fault("eio rename purge.gen");
    assert_int_equal(sl_client_purge_stream(c, sl_id_name(s)), 0);
    assert_int_equal(count_of(c, s, "a", 0, 0xC3), 0);
    assert_int_equal(count_of(c, s, "b", 0, 0xC3), 0);
    sl_send_result_t r;
    assert_int_equal(cu_send(c, sl_id_name(s), sl_id_name("a"), 0, 0xC3, 50, 2, &r),
                     -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    assert_int_equal(recorded(c, sid, s, "a", 0), 0);
    sl_client_close(c);
    set_fault("");
    restart_after_kill();

    c = cu_connect(&srv);
    assert_int_equal(count_of(c, s, "a", 0, 0xC3), 0);
    assert_int_equal(count_of(c, s, "b", 0, 0xC3), 0);
    /* Purged again at boot; the records are still owed (nothing was written since). */
    assert_int_equal(recorded(c, sid, s, "a", 0), 0);
    assert_int_equal(recorded(c, sid, s, "b", 0), 1);
    /* Owed without a restart: the next write puts the record in first. */
    set_fault("eio rename purge.gen");
    assert_int_equal(sl_client_purge_topic(c, sl_id_name(s), sl_id_name("a")), 0);
    assert_int_equal(recorded(c, sid, s, "a", 0), 0);
    set_fault("");
    cu_send_ok(c, sl_id_name(s), sl_id_name("a"), 0, 0xD4, 0, 4, 0);
    assert_int_equal(recorded(c, sid, s, "a", 0), 2);
    sl_client_close(c);
    cu_stop_clean(&srv);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
    c = cu_connect(&srv);
    assert_int_equal(count_of(c, s, "a", 0, 0xD4), 4);
    sl_client_close(c);
}

/* A DeletePartitions whose directory removal fails leaves the old files;
 * a later CreatePartitions must not serve them, and a restart sweeps them. */
static void test_deleted_partition_leftovers(void **state)
{
    (void)state;
    const char *s = "pg-parts", *t = "events";
    sl_client_t *c = cu_connect(&srv);
    const sl_stream_t *st;
    assert_int_equal(sl_client_create_stream(c, s, &st), 0);
    uint32_t sid = st->id;
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    const sl_topic_t *tp;
    assert_int_equal(sl_client_create_topic(c, sl_id_name(s), t, 2, &opt, &tp), 0);
    uint32_t tid = tp->id;
    char dir[4096];
    cu_partition_dir(&srv, sid, tid, 1, dir, sizeof(dir));

    /* At run time: the leftover is cleared when the id comes back. */
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 1, 0xE5, 0, 6, 0);
    /* A delete is one rename into the trash: make that fail. */
    set_fault("eio rename trash");
    assert_int_equal(sl_client_delete_partitions(c, sl_id_name(s), sl_id_name(t), 1), 0);
    set_fault("");
    assert_int_equal(access(dir, F_OK), 0); /* the failed delete left it */
    assert_int_equal(sl_client_create_partitions(c, sl_id_name(s), sl_id_name(t), 1), 0);
    assert_int_equal(count_of(c, s, t, 1, 0xE5), 0);
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 1, 0xF6, 0, 3, 0);

    /* Across a restart: the boot sweeps it. */
    set_fault("eio rename trash");
    assert_int_equal(sl_client_delete_partitions(c, sl_id_name(s), sl_id_name(t), 1), 0);
    set_fault("");
    assert_int_equal(access(dir, F_OK), 0);
    sl_client_close(c);
    restart_after_kill();
    assert_int_equal(access(dir, F_OK), -1);
    assert_non_null(strstr(th_log(&srv), "the topic has 1 partitions"));
    c = cu_connect(&srv);
    assert_int_equal(sl_client_create_partitions(c, sl_id_name(s), sl_id_name(t), 1), 0);
    assert_int_equal(count_of(c, s, t, 1, 0xF6), 0);
    cu_send_ok(c, sl_id_name(s), sl_id_name(t), 1, 0xF6, 0, 2, 0);
    sl_client_close(c);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(fault_file, sizeof(fault_file), "%s/sluice-faults-XXXXXX", tmp ? tmp : "/tmp");
    int fd = mkstemp(fault_file);
    if (fd < 0)
        return -1;
    close(fd);
    /* Inherited by sluiced; this test process is the only one that sets it. */
    setenv("SLUICE_FAULT_FILE", fault_file, 1);
    if (!th_start(&srv, NULL)) {
        unlink(fault_file);
        exit(77);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cu_stop_clean(&srv);
    th_cleanup(&srv);
    unlink(fault_file);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_purge_topic_interrupted),
        cmocka_unit_test(test_purge_stream_unrecorded),
        cmocka_unit_test(test_deleted_partition_leftovers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
