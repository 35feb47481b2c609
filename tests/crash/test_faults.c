/* Disk faults inside the real sluiced, injected through src/base/io.h by the test-only control
 * file SLUICE_FAULT_FILE (src/server/test_faults.h): ENOSPC and EIO on each kind of file it
 * writes.
 *
 * Segments (.log, .index) on an enforce_fsync topic: a write failing with ENOSPC (whole, or
 * after a torn first write) or EIO, an index write failing either way, and fdatasync failing
 * with EIO each give the producer an error status promptly, the server stays up and keeps the
 * connection, and once the fault is cleared sends succeed at the very offset the failed batch
 * would have had; polls, and a SIGKILL restart, show exactly the acknowledged messages with
 * contiguous offsets. Without enforce_fsync, a flush that fails fails only the send that
 * tripped it: the batches acknowledged before it stay served from memory and reach the disk
 * with the next flush.
 *
 * Consumer offsets: a store that cannot be created, written or synced is refused with the
 * store's code and the previous offset stays, across a SIGKILL restart too.
 *
 * Metadata (journal.wal): an operation whose entry cannot be written or synced is refused with
 * 58 (TransientNotAccepted) and applies nothing, logins included; once the fault clears the
 * operations commit, and a restart holds exactly the committed ones. Snapshots (snapshot.bin):
 * a checkpoint that cannot write or sync its snapshot fails without failing the operation that
 * triggered it, leaves no partial file, and is done after a later commit. */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

#define MESSAGES_MAX 4096u
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static th_server_t srv;
static char fault_file[512];
static const char *stream = "faults";

/* Replaces the control file's text atomically (the server may read it on a tick at any
 * moment); "" clears the fault. */
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The acknowledged messages of one partition, in offset order. */
typedef struct acked {
    const char *topic;
    uint64_t tag;
    uint64_t numbers[MESSAGES_MAX];
    uint64_t stored;
    uint64_t next_number;
    uint64_t read[MESSAGES_MAX];
} acked_t;

static void send_acked(sl_client_t *c, acked_t *a, uint32_t count)
{
    cu_send_ok(c, sl_id_name(stream), sl_id_name(a->topic), 0, a->tag, a->next_number, count,
               a->stored);
    for (uint32_t i = 0; i < count; i++)
        a->numbers[a->stored + i] = a->next_number + i;
    a->stored += count;
    a->next_number += count;
}

/* A send that must fail with `error`, promptly, leaving the server up. Its message numbers
 * are spent, so a stray copy of them would show. */
static void send_refused(sl_client_t *c, acked_t *a, uint32_t count, int error)
{
    double t0 = now_s();
    sl_send_result_t r;
    int rc =
        cu_send(c, sl_id_name(stream), sl_id_name(a->topic), 0, a->tag, a->next_number, count, &r);
    if (rc != error)
        fail_msg("send under a fault returned %d (%s), expected %d (%s)", rc, sl_strerror(rc),
                 error, sl_strerror(error));
    assert_true(now_s() - t0 < 5.0);
    assert_true(th_alive(&srv));
    a->next_number += count;
}

static void check_acked(sl_client_t *c, acked_t *a)
{
    uint64_t n =
        cu_read_all(c, sl_id_name(stream), sl_id_name(a->topic), 0, a->tag, a->read, MESSAGES_MAX);
    assert_int_equal(n, a->stored);
    for (uint64_t o = 0; o < n; o++)
        if (a->read[o] != a->numbers[o])
            fail_msg("topic %s offset %" PRIu64 ": message %" PRIu64 ", acknowledged %" PRIu64,
                     a->topic, o, a->read[o], a->numbers[o]);
}

static void create_topic(sl_client_t *c, const char *name, const sl_topic_options_t *opt)
{
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), name, 1, opt, NULL), 0);
}

static void restart_after_kill(void)
{
    int status = th_stop(&srv, SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
}

/* One fault per round; each must be refused the same way twice in a row. */
static const struct {
    const char *fault;
    int error;
    bool reads_fail; /* the fault also fails the reads of polls: check only once cleared */
} rounds[] = {
    {"enospc pwritev .log", -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT, false},
    /* The first write moves 100 bytes, the rest of the batch meets a full disk. */
    {"enospc pwritev .log short=100", -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT, false},
    {"enospc pwrite .index", -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT, false},
    {"eio pwrite .index", -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT, false},
    {"eio fdatasync .log", -SL_ERR_CANNOT_SYNC_FILE, false},
    /* No ".index" fdatasync round: the index is synced at seal, not per
     * write (tests/unit/test_store_faults.c checks that such a fault fails
     * no append). */
    /* A torn write whose bytes cannot even be cut off (ftruncate fails too): the next write
     * must cut them first. */
    {"eio any .log short=100", -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT, true},
};

static void test_faults_enforce_fsync(void **state)
{
    (void)state;
    static acked_t a = {.topic = "fsync", .tag = 0xF5};
    sl_client_t *c = cu_connect(&srv);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    create_topic(c, a.topic, &opt);
    send_acked(c, &a, 10);
    for (size_t i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++) {
        set_fault(rounds[i].fault);
        send_refused(c, &a, 7, rounds[i].error);
        send_refused(c, &a, 1, rounds[i].error);
        if (!rounds[i].reads_fail)
            check_acked(c, &a); /* nothing of the refused batches is served */
        set_fault("");
        send_acked(c, &a, 5); /* at the offset the refused batches did not take */
        send_acked(c, &a, 20);
        check_acked(c, &a);
    }
    char want[128];
    snprintf(want, sizeof(want), "test faults: armed '%s'", rounds[0].fault);
    assert_non_null(strstr(th_log(&srv), want));
    /* A line that is not a plan arms nothing (and says so). */
    set_fault("enospc nosuchcall .log");
    send_acked(c, &a, 2);
    assert_non_null(strstr(th_log(&srv), "test faults: cannot parse 'enospc nosuchcall .log'"));
    set_fault("");
    /* Creating the stream's first topic clears a directory that does not exist: no alarm. */
    assert_null(strstr(th_log(&srv), "did not fsync"));
    sl_client_close(c);
    /* What was acknowledged was on disk, and nothing else was. */
    restart_after_kill();
    c = cu_connect(&srv);
    check_acked(c, &a);
    send_acked(c, &a, 3);
    check_acked(c, &a);
    sl_client_close(c);
}

static void test_faults_buffered(void **state)
{
    (void)state;
    static acked_t a = {.topic = "buffered", .tag = 0xB0};
    sl_client_t *c = cu_connect(&srv);
    create_topic(c, a.topic, NULL); /* flush gate: 1024 messages (or 1 MiB) */
    for (int i = 0; i < 19; i++)
        send_acked(c, &a, 50); /* 950 messages, all still in memory */
    set_fault("enospc pwritev .log");
    /* This batch trips the gate (1000 messages, and another 50 would pass 1024); the flush
     * fails, and only this batch is refused. */
    send_refused(c, &a, 50, -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    check_acked(c, &a);
    set_fault("");
    send_acked(c, &a, 50); /* trips the gate again: everything is written */
    check_acked(c, &a);
    sl_client_close(c);
    restart_after_kill(); /* the flush reached the files, so a kill loses nothing */
    c = cu_connect(&srv);
    check_acked(c, &a);
    sl_client_close(c);
}

static void store_offset(sl_client_t *c, const char *topic, uint32_t consumer, uint64_t offset,
                         int want)
{
    int rc = sl_client_store_consumer_offset(c, sl_consumer_single(sl_id_num(consumer)),
                                             sl_id_name(stream), sl_id_name(topic), 0, offset,
                                             SL_ACK_LEVEL_NONE);
    if (rc != want)
        fail_msg("store of offset %" PRIu64 " for consumer %u: %d (%s), expected %d", offset,
                 consumer, rc, sl_strerror(rc), want);
    assert_true(th_alive(&srv));
}

/* The offset stored for consumer; UINT64_MAX when none is. */
static uint64_t stored_offset(sl_client_t *c, const char *topic, uint32_t consumer)
{
    sl_consumer_offset_t off;
    assert_int_equal(sl_client_get_consumer_offset(c, sl_consumer_single(sl_id_num(consumer)),
                                                   sl_id_name(stream), sl_id_name(topic), 0, &off),
                     0);
    return off.found ? off.stored_offset : UINT64_MAX;
}

static void test_faults_offsets(void **state)
{
    (void)state;
    static acked_t a = {.topic = "offsets", .tag = 0x0F};
    static const struct {
        const char *fault;
        int error;
    } offset_rounds[] = {
        {"enospc pwrite offsets/", -SL_ERR_CANNOT_WRITE_TO_FILE},
        {"eio pwrite offsets/", -SL_ERR_CANNOT_WRITE_TO_FILE},
        {"eio fdatasync offsets/", -SL_ERR_CANNOT_SYNC_FILE},
        /* A new consumer's file cannot even be created (no inode, no block). */
        {"enospc open offsets/", -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE},
    };
    sl_client_t *c = cu_connect(&srv);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    create_topic(c, a.topic, &opt);
    send_acked(c, &a, 40);
    store_offset(c, a.topic, 1, 2, 0);
    for (uint32_t i = 0; i < ARRAY_LEN(offset_rounds); i++) {
        uint32_t consumer = i == 3 ? 2 : 1; /* the last round: a consumer without a file */
        uint64_t before = stored_offset(c, a.topic, consumer);
        set_fault(offset_rounds[i].fault);
        store_offset(c, a.topic, consumer, 10 + i, offset_rounds[i].error);
        assert_int_equal(stored_offset(c, a.topic, consumer), before);
        set_fault("");
        store_offset(c, a.topic, consumer, 20 + i, 0);
        assert_int_equal(stored_offset(c, a.topic, consumer), 20 + i);
    }
    sl_client_close(c);
    restart_after_kill();
    c = cu_connect(&srv);
    assert_int_equal(stored_offset(c, a.topic, 1), 22);
    assert_int_equal(stored_offset(c, a.topic, 2), 23);
    check_acked(c, &a);
    sl_client_close(c);
}

/* GetStream answers an empty payload for a stream that does not exist: out is NULL. */
static bool stream_exists(sl_client_t *c, const char *name)
{
    const sl_stream_t *st = NULL;
    int rc = sl_client_get_stream(c, sl_id_name(name), &st);
    if (rc != 0)
        fail_msg("GetStream %s: %d (%s)", name, rc, sl_strerror(rc));
    return st != NULL;
}

static void test_faults_journal(void **state)
{
    (void)state;
    static const char *const journal_rounds[] = {
        "enospc pwritev journal.wal",
        "eio pwritev journal.wal",
        "enospc pwritev journal.wal short=100",
        /* The cut of the failed entry cannot be synced either: redone before the next one. */
        "eio fdatasync journal.wal",
    };
    sl_client_t *c = cu_connect(&srv);
    char name[64];
    for (size_t i = 0; i < ARRAY_LEN(journal_rounds); i++) {
        set_fault(journal_rounds[i]);
        snprintf(name, sizeof(name), "j%zu-refused", i);
        assert_int_equal(sl_client_create_stream(c, name, NULL), -SL_ERR_TRANSIENT_NOT_ACCEPTED);
        assert_false(stream_exists(c, name));
        /* A login is a journaled operation too. */
        sl_client_options_t o = {.request_timeout_ms = 20000};
        sl_client_t *other = NULL;
        assert_int_equal(sl_client_connect("127.0.0.1", srv.port, &o, &other), 0);
        assert_int_equal(sl_client_login(other, "iggy", "iggy", NULL),
                         -SL_ERR_TRANSIENT_NOT_ACCEPTED);
        sl_client_close(other);
        assert_true(th_alive(&srv));
        set_fault("");
        snprintf(name, sizeof(name), "j%zu", i);
        assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
    }
    sl_client_close(c);
    restart_after_kill();
    c = cu_connect(&srv);
    for (size_t i = 0; i < ARRAY_LEN(journal_rounds); i++) {
        snprintf(name, sizeof(name), "j%zu", i);
        assert_true(stream_exists(c, name));
        snprintf(name, sizeof(name), "j%zu-refused", i);
        assert_false(stream_exists(c, name));
    }
    sl_client_close(c);
}

static void test_faults_snapshot(void **state)
{
    (void)state;
    static const char *const snapshot_rounds[] = {
        "enospc pwrite snapshot.bin",
        "enospc pwrite snapshot.bin short=10",
        "eio pwrite snapshot.bin",
        "eio fsync snapshot.bin",
    };
    char tmp_path[400];
    snprintf(tmp_path, sizeof(tmp_path), "%s/data/metadata/snapshot.bin.tmp", srv.data_dir);
    sl_client_t *c = cu_connect(&srv);
    char name[64];
    for (size_t i = 0; i < ARRAY_LEN(snapshot_rounds); i++) {
        set_fault(snapshot_rounds[i]);
        /* A checkpoint every 2 operations (setup): these meet at least one. */
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof(name), "s%zu-%d", i, k);
            assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
        }
        assert_int_equal(access(tmp_path, F_OK), -1); /* no partial snapshot keeps its blocks */
        set_fault("");
        snprintf(name, sizeof(name), "s%zu-after", i);
        assert_int_equal(sl_client_create_stream(c, name, NULL), 0);
    }
    assert_non_null(strstr(th_log(&srv), "retrying after the next commit"));
    sl_client_close(c);
    restart_after_kill();
    c = cu_connect(&srv);
    for (size_t i = 0; i < ARRAY_LEN(snapshot_rounds); i++) {
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof(name), "s%zu-%d", i, k);
            assert_true(stream_exists(c, name));
        }
        snprintf(name, sizeof(name), "s%zu-after", i);
        assert_true(stream_exists(c, name));
    }
    /* The last checkpoint succeeded: at most one operation is replayed past it. */
    const char *log = th_log(&srv);
    assert_true(strstr(log, ", 0 entries replayed,") ||
                strstr(log, ", 1 entries replayed,"));
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
    /* Frequent checkpoints, so that operations meet snapshot faults. */
    th_options_t o = {.extra_config = "[metadata]\ncheckpoint_interval = 2\n"};
    if (!th_start(&srv, &o)) {
        unlink(fault_file);
        exit(77);
    }
    sl_client_t *c = cu_connect(&srv);
    assert_int_equal(sl_client_create_stream(c, stream, NULL), 0);
    sl_client_close(c);
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
        cmocka_unit_test(test_faults_enforce_fsync), cmocka_unit_test(test_faults_buffered),
        cmocka_unit_test(test_faults_offsets),       cmocka_unit_test(test_faults_journal),
        cmocka_unit_test(test_faults_snapshot),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
