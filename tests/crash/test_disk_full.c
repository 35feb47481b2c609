/* A real full disk under the real sluiced: its data directory is a 16 MiB tmpfs that the test
 * mounts in a mount namespace of its own (so the mount goes away with the test, whatever
 * happens). Producers on an enforce_fsync topic and a buffered one send until the disk refuses
 * them; every refusal is one of the protocol's disk error codes and the server stays up. On the
 * full disk an operator can still log in and out, read everything, and delete a stream through
 * the API (the metadata journal keeps a preallocated reserve for operations that free space),
 * while an ordinary metadata operation is refused with 58 (TransientNotAccepted). Once the
 * delete has freed space, sends succeed again, and every acknowledged message is read back byte
 * for byte after a restart. A second round fills the disk again, SIGKILLs sluiced, restarts it
 * on the still-full disk, purges a topic that holds nothing (its purge.gen cannot be written,
 * yet the purge succeeds and the topic takes writes once there is room) and frees space with
 * PurgeTopic.
 *
 * Needs root (CAP_SYS_ADMIN) for unshare and mount: without them it exits 77 (skipped). */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

/* The disk: small enough to fill in seconds, large enough for the metadata journal's reserve
 * (1 MiB) and a few segments. SLUICE_DISK_FULL_SIZE (tmpfs sizes: "128m") picks another for a
 * longer run; up to about 128m fits SENDS_MAX. */
#define DISK_SIZE_DEFAULT "16m"
/* Messages per send: about 5 KiB per batch. */
#define BATCH 16u
/* Sends per topic before the disk must have refused one: 16 MiB is ~1750 batches per topic. */
#define SENDS_MAX    20000u
#define MESSAGES_MAX (SENDS_MAX * BATCH)
/* Ordinary operations on the full disk before one must be refused: the journal preallocates
 * 256 KiB beyond its reserve, and a rename entry is about 300 bytes. */
#define RENAMES_MAX 3000u

static th_server_t srv;
static char mount_dir[300];
/* A checkpoint after every metadata operation, so each one on the full disk meets one too. */
static const char *config = "[metadata]\ncheckpoint_interval = 1\n";

typedef struct acked {
    const char *stream;
    const char *topic;
    uint64_t tag;
    uint64_t *numbers; /* numbers[o]: the message acknowledged at offset o */
    uint64_t stored;
    uint64_t next_number;
    uint32_t refusals;
    int last_error;
} acked_t;

static acked_t fsync_topic = {.stream = "keep", .topic = "fsync", .tag = 0xF5};
static acked_t buffered_topic = {.stream = "keep", .topic = "buffered", .tag = 0xB0};
/* Holds nothing when it is purged on the full disk, so the purge frees no block. */
static acked_t empty_topic = {.stream = "keep", .topic = "empty", .tag = 0xE0};
static uint64_t *read_back;

/* The codes a send may get when the disk refuses it (messages.md 5: the store's errors). */
static bool disk_error(int rc)
{
    return rc == -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT ||
           rc == -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT || rc == -SL_ERR_CANNOT_SYNC_FILE ||
           rc == -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE ||
           rc == -SL_ERR_CANNOT_CREATE_SEGMENT_INDEX_FILE;
}

/* One send; acknowledged messages are remembered, a refusal must be a disk error. Returns
 * whether it was acknowledged. */
static bool send_one(sl_client_t *c, acked_t *a)
{
    sl_send_result_t r;
    int rc = cu_send(c, sl_id_name(a->stream), sl_id_name(a->topic), 0, a->tag, a->next_number,
                     BATCH, &r);
    if (rc == 0) {
        assert_true(r.confirmed);
        assert_int_equal(r.base_offset, a->stored);
        assert_true(a->stored + BATCH <= MESSAGES_MAX);
        for (uint32_t i = 0; i < BATCH; i++)
            a->numbers[a->stored + i] = a->next_number + i;
        a->stored += BATCH;
    } else {
        if (!disk_error(rc))
            fail_msg("send to %s on a full disk: %d (%s), not a disk error", a->topic, rc,
                     sl_strerror(rc));
        a->refusals++;
        a->last_error = rc;
    }
    a->next_number += BATCH; /* a refused batch's numbers are spent: a stray copy would show */
    assert_true(th_alive(&srv));
    return rc == 0;
}

/* After space was freed: sends until one is taken (bounded); false if none was. */
static bool send_when_back(sl_client_t *c, acked_t *a)
{
    for (int i = 0; i < 400; i++) {
        if (send_one(c, a))
            return true;
        struct timespec ts = {0, 25 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Sends to both topics until each has been refused at least twice. */
static void fill(sl_client_t *c)
{
    fsync_topic.refusals = buffered_topic.refusals = 0;
    for (uint32_t i = 0; i < SENDS_MAX; i++) {
        if (fsync_topic.refusals < 2)
            send_one(c, &fsync_topic);
        if (buffered_topic.refusals < 2)
            send_one(c, &buffered_topic);
        if (fsync_topic.refusals >= 2 && buffered_topic.refusals >= 2)
            return;
    }
    fail_msg("the disk never filled: %" PRIu64 " and %" PRIu64 " messages acknowledged",
             fsync_topic.stored, buffered_topic.stored);
}

/* Every acknowledged message is there, in order, byte for byte, and nothing else. */
static void check_acked(sl_client_t *c, const acked_t *a)
{
    uint64_t n = cu_read_all(c, sl_id_name(a->stream), sl_id_name(a->topic), 0, a->tag, read_back,
                             MESSAGES_MAX);
    if (n != a->stored)
        fail_msg("%s: %" PRIu64 " messages stored, %" PRIu64 " acknowledged", a->topic, n,
                 a->stored);
    for (uint64_t o = 0; o < n; o++)
        if (read_back[o] != a->numbers[o])
            fail_msg("%s offset %" PRIu64 ": message %" PRIu64 ", acknowledged %" PRIu64, a->topic,
                     o, read_back[o], a->numbers[o]);
}

/* After a SIGKILL a buffered topic keeps what reached its segments: a prefix of what was
 * acknowledged (the rest was acknowledged from memory, which is what enforce_fsync off means). */
static void check_prefix(sl_client_t *c, acked_t *a)
{
    uint64_t n = cu_read_all(c, sl_id_name(a->stream), sl_id_name(a->topic), 0, a->tag, read_back,
                             MESSAGES_MAX);
    assert_true(n <= a->stored);
    for (uint64_t o = 0; o < n; o++)
        if (read_back[o] != a->numbers[o])
            fail_msg("%s offset %" PRIu64 ": message %" PRIu64 ", acknowledged %" PRIu64, a->topic,
                     o, read_back[o], a->numbers[o]);
    a->stored = n;
}

static sl_client_t *connect_raw(void)
{
    sl_client_options_t o = {.request_timeout_ms = 20000};
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, &o, &c), 0);
    return c;
}

/* The operator's way in on a full disk: a login and a logout, each a journaled operation. */
static void login_logout_works(void)
{
    sl_client_t *c = connect_raw();
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    assert_int_equal(sl_client_logout(c), 0);
    sl_client_close(c);
}

static void restart(int sig)
{
    int status = th_stop(&srv, sig);
    if (sig == SIGKILL)
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else
        assert_int_equal(status, 0);
    th_options_t o = {.data_dir = srv.data_dir};
    assert_true(th_start(&srv, &o));
}

static void create_topics(sl_client_t *c)
{
    assert_int_equal(sl_client_create_stream(c, "names-a", NULL), 0); /* renamed on the full disk */
    assert_int_equal(sl_client_create_stream(c, "keep", NULL), 0);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name("keep"), "fsync", 1, &opt, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("keep"), "buffered", 1, NULL, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("keep"), "empty", 1, &opt, NULL), 0);
}

/* About 4 MiB in a stream that the operator deletes later to make room. */
static void fill_spare(sl_client_t *c)
{
    assert_int_equal(sl_client_create_stream(c, "spare", NULL), 0);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name("spare"), "old", 1, &opt, NULL), 0);
    static uint64_t spare_numbers[MESSAGES_MAX];
    acked_t spare = {.stream = "spare", .topic = "old", .tag = 0x5A, .numbers = spare_numbers};
    for (int i = 0; i < 800; i++)
        assert_true(send_one(c, &spare));
}

static void test_full_disk_delete_stream(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    fill_spare(c);
    create_topics(c);
    fill(c);
    fprintf(stderr, "disk full after %" PRIu64 " + %" PRIu64 " messages (last refusals %d, %d)\n",
            fsync_topic.stored, buffered_topic.stored, fsync_topic.last_error,
            buffered_topic.last_error);
    /* Reads need no space; nothing refused is served. */
    check_acked(c, &fsync_topic);
    check_acked(c, &buffered_topic);
    login_logout_works();
    /* Ordinary operations use what the journal preallocated beyond its reserve, then are
     * refused (58: nothing applied); the reserve is left to the operator. */
    uint32_t renames = 0;
    int rc = 0;
    while (rc == 0 && renames < RENAMES_MAX) {
        rc = sl_client_update_stream(c, sl_id_name(renames % 2 ? "names-b" : "names-a"),
                                     renames % 2 ? "names-a" : "names-b");
        renames += rc == 0;
    }
    fprintf(stderr, "%u renames committed on the full disk before a refusal\n", renames);
    assert_int_equal(rc, -SL_ERR_TRANSIENT_NOT_ACCEPTED);
    assert_true(renames > 0);
    assert_int_equal(sl_client_create_stream(c, "nope", NULL), -SL_ERR_TRANSIENT_NOT_ACCEPTED);
    /* Logins and logouts may use half of the reserve. */
    login_logout_works();
    /* A consumer offset needs a new file: refused with the store's code, the server stays up. */
    rc = sl_client_store_consumer_offset(c, sl_consumer_single(sl_id_num(7)), sl_id_name("keep"),
                                         sl_id_name("fsync"), 0, 3, 0);
    assert_true(rc != 0);
    assert_true(th_alive(&srv));
    /* The operator frees space through the API. The reply comes once the stream is moved
     * into the trash; its blocks come back when the worker has removed its files, shortly
     * after (docs/architecture.md, "No request stalls the loop"): the first send is retried
     * until then (bounded). */
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("spare")), 0);
    /* The blocks come back file by file as the worker removes them: each topic's first send
     * is retried until there is room for it (one topic's success does not mean the other's
     * flush fits yet). */
    assert_true(send_when_back(c, &fsync_topic));
    assert_true(send_when_back(c, &buffered_topic));
    /* Space is back: sends, offsets and ordinary operations succeed again. */
    for (int i = 0; i < 4; i++) {
        assert_true(send_one(c, &fsync_topic));
        assert_true(send_one(c, &buffered_topic));
    }
    assert_int_equal(sl_client_store_consumer_offset(c, sl_consumer_single(sl_id_num(7)),
                                                     sl_id_name("keep"), sl_id_name("fsync"), 0, 3,
                                                     0),
                     0);
    assert_int_equal(sl_client_create_stream(c, "nope", NULL), 0);
    check_acked(c, &fsync_topic);
    check_acked(c, &buffered_topic);
    sl_client_close(c);
    /* The checkpoints of the operations on the full disk failed without failing them... */
    assert_non_null(strstr(th_log(&srv), "; retrying after the next commit"));
    /* A clean stop flushes the buffered topic; everything acknowledged survives. */
    restart(SIGTERM);
    /* ...and were retried once space was back: the last one covers every operation. */
    assert_non_null(strstr(th_log(&srv), ", 0 entries replayed,"));
    c = cu_connect(&srv);
    check_acked(c, &fsync_topic);
    check_acked(c, &buffered_topic);
    sl_client_close(c);
}

static void test_full_disk_kill_boot_purge(void **state)
{
    (void)state;
    sl_client_t *c = cu_connect(&srv);
    fill(c);
    sl_client_close(c);
    uint64_t buffered_acked = buffered_topic.stored;
    /* Killed on a full disk, restarted on the still-full disk. */
    restart(SIGKILL);
    c = cu_connect(&srv);
    check_acked(c, &fsync_topic);
    check_prefix(c, &buffered_topic);
    fprintf(stderr,
            "disk full again after %" PRIu64 " + %" PRIu64 " messages; after the SIGKILL the "
            "buffered topic kept %" PRIu64 " (the rest was acknowledged from memory)\n",
            fsync_topic.stored, buffered_acked, buffered_topic.stored);
    login_logout_works();
    /* A purge that frees nothing cannot write its purge.gen: it still succeeds, the topic
     * serves (empty), and refuses writes until the record is in. */
    assert_int_equal(sl_client_purge_topic(c, sl_id_name("keep"), sl_id_name("empty")), 0);
    check_acked(c, &empty_topic);
    assert_false(send_one(c, &empty_topic));
    assert_int_equal(empty_topic.last_error, -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    /* Purging the buffered topic frees its segments. */
    assert_int_equal(sl_client_purge_topic(c, sl_id_name("keep"), sl_id_name("buffered")), 0);
    buffered_topic.stored = 0;
    for (int i = 0; i < 4; i++) {
        assert_true(send_one(c, &fsync_topic));
        assert_true(send_one(c, &buffered_topic));
        assert_true(send_one(c, &empty_topic));
    }
    check_acked(c, &fsync_topic);
    check_acked(c, &buffered_topic);
    check_acked(c, &empty_topic);
    sl_client_close(c);
    restart(SIGTERM);
    c = cu_connect(&srv);
    check_acked(c, &fsync_topic);
    check_acked(c, &buffered_topic);
    check_acked(c, &empty_topic);
    sl_client_close(c);
}

/* A private mount namespace and a tmpfs in it; false (with the reason printed) when this
 * process may not mount. */
static bool mount_disk(const char *dir)
{
    const char *size = getenv("SLUICE_DISK_FULL_SIZE");
    char options[64];
    snprintf(options, sizeof(options), "size=%s", size && size[0] ? size : DISK_SIZE_DEFAULT);
    if (unshare(CLONE_NEWNS) != 0) {
        fprintf(stderr, "test_disk_full: unshare(CLONE_NEWNS): %s: skipped\n", strerror(errno));
        return false;
    }
    /* Mounts made here must not propagate to the namespace we came from. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        fprintf(stderr, "test_disk_full: making / private: %s: skipped\n", strerror(errno));
        return false;
    }
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) {
        fprintf(stderr, "test_disk_full: mount -t tmpfs -o %s %s: %s: skipped\n", options, dir,
                strerror(errno));
        return false;
    }
    return true;
}

static int setup(void **state)
{
    (void)state;
    static uint64_t fsync_numbers[MESSAGES_MAX], buffered_numbers[MESSAGES_MAX];
    static uint64_t empty_numbers[MESSAGES_MAX], numbers[MESSAGES_MAX];
    fsync_topic.numbers = fsync_numbers;
    buffered_topic.numbers = buffered_numbers;
    empty_topic.numbers = empty_numbers;
    read_back = numbers;
    /* The harness's directory (config, log) stays on the ordinary disk, so the log can be
     * written and read while the data disk is full; only <dir>/data is the tmpfs. */
    const char *tmp = getenv("TMPDIR");
    snprintf(srv.data_dir, sizeof(srv.data_dir), "%s/sluice-full-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(srv.data_dir))
        return -1;
    snprintf(mount_dir, sizeof(mount_dir), "%s/data", srv.data_dir);
    if (mkdir(mount_dir, 0755) != 0)
        return -1;
    if (!mount_disk(mount_dir)) {
        th_cleanup(&srv);
        exit(77);
    }
    th_options_t o = {.data_dir = srv.data_dir, .extra_config = config};
    if (!th_start(&srv, &o)) {
        umount(mount_dir);
        th_cleanup(&srv);
        exit(77);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cu_stop_clean(&srv);
    if (umount(mount_dir) != 0)
        fprintf(stderr, "test_disk_full: umount %s: %s\n", mount_dir, strerror(errno));
    th_cleanup(&srv);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk_delete_stream),
        cmocka_unit_test(test_full_disk_kill_boot_purge),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
