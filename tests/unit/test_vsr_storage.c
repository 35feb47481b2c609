/* src/server/vsr_storage: the consensus core's files. Round trips through close and reopen,
 * a torn slot write that leaves its neighbours, the state record's ping-pong copies, the
 * artifact sets kept, a directory of another cluster or geometry refused, injected EIO and
 * ENOSPC, random bytes on disk that must never crash, and real sl_vsr_replica objects (one,
 * then three in one process) that commit, close, reopen from disk and recover. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "server/vsr_storage.h"
#include "tu_tmpdir.h"
#include "vsr/handshake.h"
#include "vsr/replica.h"
#include "wire/header.h"

#define SLOTS     64u
#define SLOT_SIZE 4096u

static char root[PATH_MAX];
static char dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    assert_true(tu_tmpdir_make(root, "vsr-storage"));
    assert_true(tu_path(dir, root, "replica"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_io_fault_arm(NULL);
    tu_tmpdir_remove(root);
    return 0;
}

static sl_vsr_storage_options_t options(void)
{
    return (sl_vsr_storage_options_t){.cluster = sl_vsr_cluster_id(sl_span_str("unit")),
                                      .group = SL_VSR_GROUP_METADATA,
                                      .slot_count = SLOTS,
                                      .slot_size = SLOT_SIZE,
                                      .artifact_max = 1u << 20};
}

static sl_vsr_storage_dir_t *open_ok(const sl_vsr_storage_options_t *o)
{
    sl_vsr_storage_dir_t *st = NULL;
    char err[512] = "";
    int rc = sl_vsr_storage_open(dir, o, &st, err, sizeof(err));
    if (rc != 0)
        fail_msg("open: %d %s", rc, err);
    return st;
}

/* The completions a poll delivered. */
typedef struct done_log {
    uint32_t n;
    uint32_t slot[SLOTS];
    bool ok[SLOTS];
} done_log_t;

static void note_done(void *ctx, uint32_t slot, bool ok)
{
    done_log_t *l = ctx;
    assert_true(l->n < SLOTS);
    l->slot[l->n] = slot;
    l->ok[l->n] = ok;
    l->n++;
}

/* A completion that submits the next write, as a replica may from write_done. */
typedef struct chain {
    sl_vsr_storage_t s;
    uint32_t calls;
} chain_t;

static void chain_done(void *ctx, uint32_t slot, bool ok)
{
    chain_t *c = ctx;
    assert_true(ok);
    c->calls++;
    uint8_t b[16] = {0};
    c->s.write_prepare(c->s.ctx, slot + 1, b, sizeof(b));
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 7u);
}

static bool file_exists_in(const char *in, const char *name)
{
    char path[PATH_MAX];
    assert_true(tu_path(path, in, name));
    return access(path, F_OK) == 0;
}

static bool file_exists(const char *name)
{
    return file_exists_in(dir, name);
}

/* Overwrites len bytes at off of dir/name. */
static void poke(const char *name, off_t off, const void *p, size_t len)
{
    char path[PATH_MAX];
    assert_true(tu_path(path, dir, name));
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, p, len, off), (ssize_t)len);
    close(fd);
}

static void flip(const char *name, off_t off)
{
    char path[PATH_MAX];
    assert_true(tu_path(path, dir, name));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b = 0;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static off_t slot_at(uint32_t slot)
{
    return (off_t)(SL_VSR_STORAGE_JOURNAL_HEADER + (uint64_t)slot * SLOT_SIZE);
}

/* --- the files alone ------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_info_t info;
    sl_vsr_storage_info(st, &info);
    assert_true(info.fresh);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    assert_int_equal(s.read_state(s.ctx).len, 0);
    assert_int_equal(s.read_prepare(s.ctx, 3).len, 0);

    uint8_t a[300], b[SLOT_SIZE - SL_VSR_STORAGE_SLOT_HEADER], c[1];
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2); /* fills its slot exactly */
    fill(c, sizeof(c), 3);
    s.write_prepare(s.ctx, 0, a, sizeof(a));
    s.write_prepare(s.ctx, 5, b, sizeof(b));
    s.write_prepare(s.ctx, SLOTS - 1, c, sizeof(c));
    /* Reads see a write as soon as it is submitted, before it is durable. */
    sl_span_t got = s.read_prepare(s.ctx, 5);
    assert_bytes_equal(got.ptr, got.len, b, sizeof(b));
    assert_int_equal(sl_vsr_storage_pending(st), 3);
    done_log_t log = {0};
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 3);
    assert_int_equal(log.n, 3);
    assert_int_equal(log.slot[0], 0);
    assert_int_equal(log.slot[1], 5);
    assert_int_equal(log.slot[2], SLOTS - 1);
    assert_true(log.ok[0] && log.ok[1] && log.ok[2]);
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.syncs, 1); /* one fdatasync for the three */
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 0);

    const char *record = "the state record";
    assert_int_equal(s.write_state(s.ctx, sl_span_str(record)), 0);
    assert_int_equal(s.write_artifacts(s.ctx, 16, sl_span_str("snap16"), sl_span_str("tab16")), 0);
    /* An empty artifact is a valid one (an empty client table). */
    assert_int_equal(s.write_artifacts(s.ctx, 32, sl_span_str("snap32"), sl_span(NULL, 0)), 0);
    sl_vsr_storage_close(st);

    st = open_ok(&o);
    sl_vsr_storage_info(st, &info);
    assert_false(info.fresh);
    assert_int_equal(info.state_sequence, 1);
    s = sl_vsr_storage_interface(st);
    got = s.read_prepare(s.ctx, 0);
    assert_bytes_equal(got.ptr, got.len, a, sizeof(a));
    got = s.read_prepare(s.ctx, 5);
    assert_bytes_equal(got.ptr, got.len, b, sizeof(b));
    got = s.read_prepare(s.ctx, SLOTS - 1);
    assert_bytes_equal(got.ptr, got.len, c, sizeof(c));
    for (uint32_t i = 1; i < 5; i++)
        assert_int_equal(s.read_prepare(s.ctx, i).len, 0);
    assert_span_str(s.read_state(s.ctx), record);
    assert_span_str(s.read_artifact(s.ctx, 16, SL_VSR_ARTIFACT_METADATA_SNAPSHOT), "snap16");
    assert_span_str(s.read_artifact(s.ctx, 16, SL_VSR_ARTIFACT_CLIENT_TABLE), "tab16");
    assert_span_str(s.read_artifact(s.ctx, 32, SL_VSR_ARTIFACT_METADATA_SNAPSHOT), "snap32");
    assert_int_equal(s.read_artifact(s.ctx, 32, SL_VSR_ARTIFACT_CLIENT_TABLE).len, 0);
    assert_int_equal(s.read_artifact(s.ctx, 48, SL_VSR_ARTIFACT_METADATA_SNAPSHOT).len, 0);
    assert_int_equal(s.read_artifact(s.ctx, 16, SL_VSR_ARTIFACT_SEGMENT_LOG).len, 0);
    /* A slot written again holds the new bytes only, even when shorter. */
    s.write_prepare(s.ctx, 5, c, sizeof(c));
    got = s.read_prepare(s.ctx, 5);
    assert_bytes_equal(got.ptr, got.len, c, sizeof(c));
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 1);
    sl_vsr_storage_close(st);
}

/* journal_nosync: a poll delivers the completions without an fdatasync; the setter turns the
 * group commit back on. The bytes are the same either way. */
static void test_journal_nosync(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    o.journal_nosync = true;
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    uint8_t a[100];
    fill(a, sizeof(a), 7);
    s.write_prepare(s.ctx, 1, a, sizeof(a));
    s.write_prepare(s.ctx, 2, a, sizeof(a));
    done_log_t log = {0};
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 2);
    assert_true(log.ok[0] && log.ok[1]);
    sl_vsr_storage_info_t info;
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.syncs, 0);
    sl_vsr_storage_set_nosync(st, false);
    s.write_prepare(s.ctx, 3, a, sizeof(a));
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 1);
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.syncs, 1);
    sl_vsr_storage_close(st);
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    for (uint32_t i = 1; i <= 3; i++) {
        sl_span_t got = s.read_prepare(s.ctx, i);
        assert_bytes_equal(got.ptr, got.len, a, sizeof(a));
    }
    sl_vsr_storage_close(st);
}

/* A write submitted from inside a completion waits for the next poll. */
static void test_write_from_completion(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    uint8_t c[1] = {3};
    done_log_t log = {0};
    chain_t chain = {.s = s};
    s.write_prepare(s.ctx, 10, c, sizeof(c));
    assert_int_equal(sl_vsr_storage_poll(st, &chain, chain_done), 1);
    assert_int_equal(chain.calls, 1);
    assert_int_equal(sl_vsr_storage_pending(st), 1);
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 1);
    assert_int_equal(sl_vsr_storage_pending(st), 0);
    assert_int_equal(s.read_prepare(s.ctx, 11).len, 16);
    sl_vsr_storage_close(st);
}

static void test_torn_slot_leaves_the_others(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    uint8_t old[3][600], fresh[600];
    for (uint32_t i = 0; i < 3; i++) {
        fill(old[i], sizeof(old[i]), (uint8_t)(10 + i));
        s.write_prepare(s.ctx, 1 + i, old[i], sizeof(old[i]));
    }
    done_log_t log = {0};
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 3);
    fill(fresh, sizeof(fresh), 99);
    /* The write of slot 2 stops after 20 bytes; what follows fails (a crash mid-write). */
    sl_io_fault_t tear = {
        .calls = SL_IO_MASK_WRITES, .path_contains = "journal.ring", .error = EIO, .short_len = 20};
    sl_io_fault_arm(&tear);
    s.write_prepare(s.ctx, 2, fresh, sizeof(fresh));
    assert_int_equal(tear.fired, 2);
    /* A never-written slot torn the same way. */
    sl_io_fault_arm(&tear);
    s.write_prepare(s.ctx, 9, fresh, sizeof(fresh));
    sl_io_fault_arm(NULL);
    assert_int_equal(tear.fired, 2);
    log.n = 0;
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 2);
    assert_false(log.ok[0]);
    assert_false(log.ok[1]);
    sl_vsr_storage_close(st);

    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    sl_span_t got = s.read_prepare(s.ctx, 1);
    assert_bytes_equal(got.ptr, got.len, old[0], sizeof(old[0]));
    got = s.read_prepare(s.ctx, 3);
    assert_bytes_equal(got.ptr, got.len, old[2], sizeof(old[2]));
    /* A slot is written with one vectored write, its 8-byte header then the
     * frame, and the tear fell between them: neither torn slot is empty or
     * reads as the fresh write. Slot 2 still holds the prepare it had, as if
     * the failed (never acknowledged) write had not happened; slot 9, never
     * written before, holds no prepare at all (the replica's seal rejects
     * it). */
    uint32_t torn[2] = {2, 9};
    for (int k = 0; k < 2; k++) {
        got = s.read_prepare(s.ctx, torn[k]);
        assert_true(got.len > 0);
        assert_true(got.len <= SLOT_SIZE - SL_VSR_STORAGE_SLOT_HEADER);
        assert_false(got.len == sizeof(fresh) && memcmp(got.ptr, fresh, got.len) == 0);
    }
    got = s.read_prepare(s.ctx, 2);
    assert_bytes_equal(got.ptr, got.len, old[1], sizeof(old[1]));
    got = s.read_prepare(s.ctx, 9);
    assert_false(got.len == sizeof(old[1]) && memcmp(got.ptr, old[1], got.len) == 0);
    sl_vsr_storage_close(st);
}

static void test_state_ping_pong(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    /* seq 1 -> state.a, 2 -> state.b, 3 -> state.a */
    assert_int_equal(s.write_state(s.ctx, sl_span_str("record one")), 0);
    assert_int_equal(s.write_state(s.ctx, sl_span_str("record two, longer")), 0);
    assert_int_equal(s.write_state(s.ctx, sl_span_str("three")), 0);
    sl_vsr_storage_info_t info;
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.state_sequence, 3);
    assert_int_equal(info.state_copy, 0);
    assert_span_str(s.read_state(s.ctx), "three");
    sl_vsr_storage_close(st);

    /* The newest copy damaged: the other one wins. */
    flip("state.a", 70);
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    assert_span_str(s.read_state(s.ctx), "record two, longer");
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.state_sequence, 2);
    assert_int_equal(info.state_copy, 1);
    /* The next write goes over the damaged copy, not over the good one. */
    assert_int_equal(s.write_state(s.ctx, sl_span_str("four")), 0);
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.state_copy, 0);
    /* A write torn by a crash (short, then failing) leaves the newest standing. */
    sl_io_fault_t tear = {
        .calls = SL_IO_MASK_WRITES, .path_contains = "state.", .error = EIO, .short_len = 30};
    sl_io_fault_arm(&tear);
    assert_true(s.write_state(s.ctx, sl_span_str("five, never durable")) < 0);
    sl_io_fault_arm(NULL);
    assert_span_str(s.read_state(s.ctx), "four");
    sl_vsr_storage_close(st);
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    assert_span_str(s.read_state(s.ctx), "four");
    sl_vsr_storage_close(st);

    /* Both damaged: no record (what a lost disk looks like). */
    flip("state.a", 66);
    flip("state.b", 66);
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    assert_int_equal(s.read_state(s.ctx).len, 0);
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.state_sequence, 0);
    sl_vsr_storage_close(st);
}

static void test_artifact_sets_kept(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    assert_int_equal(s.write_artifacts(s.ctx, 16, sl_span_str("s16"), sl_span_str("t16")), 0);
    assert_int_equal(s.write_artifacts(s.ctx, 32, sl_span_str("s32"), sl_span_str("t32")), 0);
    assert_int_equal(s.write_artifacts(s.ctx, 48, sl_span_str("s48"), sl_span_str("t48")), 0);
    assert_true(file_exists("snapshot.16") && file_exists("clients.16"));
    assert_int_equal(s.write_artifacts(s.ctx, 64, sl_span_str("s64"), sl_span_str("t64")), 0);
    /* The last three sets written stay; the oldest goes, both files. */
    assert_false(file_exists("snapshot.16") || file_exists("clients.16"));
    assert_true(file_exists("snapshot.32") && file_exists("snapshot.48") &&
                file_exists("snapshot.64"));
    assert_int_equal(s.read_artifact(s.ctx, 16, 0).len, 0);
    /* A checkpoint written again at its op replaces its set, and counts as the newest. */
    assert_int_equal(s.write_artifacts(s.ctx, 32, sl_span_str("S32"), sl_span_str("T32")), 0);
    assert_span_str(s.read_artifact(s.ctx, 32, 0), "S32");
    /* A failed write (full disk) leaves no .tmp and the sets as they were. */
    sl_io_fault_t full = {.calls = SL_IO_MASK_WRITES, .error = ENOSPC};
    sl_io_fault_arm(&full);
    assert_true(s.write_artifacts(s.ctx, 80, sl_span_str("s80"), sl_span_str("t80")) < 0);
    sl_io_fault_arm(NULL);
    assert_false(file_exists("snapshot.80.tmp") || file_exists("snapshot.80"));
    assert_span_str(s.read_artifact(s.ctx, 48, 1), "t48");
    /* Half a set (the snapshot in place, the table failing) is removed too: at the next open
     * it would look newer than the sets kept. */
    sl_io_fault_t table_full = {
        .calls = SL_IO_MASK_WRITES, .path_contains = "clients.80", .error = ENOSPC};
    sl_io_fault_arm(&table_full);
    assert_true(s.write_artifacts(s.ctx, 80, sl_span_str("s80"), sl_span_str("t80")) < 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(table_full.fired, 1);
    assert_false(file_exists("snapshot.80") || file_exists("clients.80.tmp"));
    sl_vsr_storage_close(st);

    /* The order survives a reopen: 48 is now the oldest (32 was rewritten after 64). */
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    assert_int_equal(s.write_artifacts(s.ctx, 80, sl_span_str("s80"), sl_span_str("t80")), 0);
    assert_false(file_exists("snapshot.48") || file_exists("clients.48"));
    assert_span_str(s.read_artifact(s.ctx, 32, 0), "S32");
    assert_span_str(s.read_artifact(s.ctx, 64, 1), "t64");
    assert_span_str(s.read_artifact(s.ctx, 80, 0), "s80");
    /* A damaged artifact header reads as absent, not as bytes of another checkpoint. */
    flip("clients.64", 41);
    sl_vsr_storage_close(st);
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    assert_int_equal(s.read_artifact(s.ctx, 64, 1).len, 0);
    assert_span_str(s.read_artifact(s.ctx, 64, 0), "s64");
    sl_vsr_storage_close(st);
}

static void expect_refused(const sl_vsr_storage_options_t *o, int code, const char *needle)
{
    sl_vsr_storage_dir_t *st = NULL;
    char err[512] = "";
    assert_int_equal(sl_vsr_storage_open(dir, o, &st, err, sizeof(err)), code);
    assert_null(st);
    if (strstr(err, needle) == NULL)
        fail_msg("message \"%s\" does not say \"%s\"", err, needle);
}

static void test_other_geometry_refused(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    assert_int_equal(s.write_state(s.ctx, sl_span_str("record")), 0);
    sl_vsr_storage_close(st);

    sl_vsr_storage_options_t other = o;
    other.cluster = sl_vsr_cluster_id(sl_span_str("another"));
    expect_refused(&other, -SL_ERR_STATE_FILE_CORRUPTED, "belongs to cluster");
    other = o;
    other.group = 7;
    expect_refused(&other, -SL_ERR_STATE_FILE_CORRUPTED, "group");
    other = o;
    other.slot_count = SLOTS * 2;
    expect_refused(&other, -SL_ERR_STATE_FILE_CORRUPTED, "journal slots");
    other = o;
    other.slot_size = SLOT_SIZE * 2;
    expect_refused(&other, -SL_ERR_STATE_FILE_CORRUPTED, "journal slots");
    /* The state copies say it too, should the journal be gone. */
    char path[PATH_MAX];
    assert_true(tu_path(path, dir, "journal.ring"));
    assert_int_equal(unlink(path), 0);
    other = o;
    other.cluster = sl_vsr_cluster_id(sl_span_str("another"));
    expect_refused(&other, -SL_ERR_STATE_FILE_CORRUPTED, "state.a");
    assert_false(file_exists("journal.ring")); /* a refused directory is left as it was */
    /* Nor is a state record without its journal: its log would read as never written. */
    expect_refused(&o, -SL_ERR_STATE_FILE_CORRUPTED, "journal.ring is missing");
    assert_false(file_exists("journal.ring"));
    /* A journal whose header is not one. */
    tu_tmpdir_remove(dir);
    st = open_ok(&o);
    sl_vsr_storage_close(st);
    poke("journal.ring", 3, "x", 1);
    expect_refused(&o, -SL_ERR_STATE_FILE_CORRUPTED, "does not verify");
    /* A cut journal. */
    tu_tmpdir_remove(dir);
    st = open_ok(&o);
    sl_vsr_storage_close(st);
    assert_int_equal(truncate(path, slot_at(SLOTS - 1)), 0);
    expect_refused(&o, -SL_ERR_STATE_FILE_CORRUPTED, "was cut");
    /* Options that cannot make a journal. */
    other = o;
    other.slot_size = 1000;
    expect_refused(&other, -SL_ERR_INVALID_CONFIGURATION, "multiple of 4096");
    assert_int_equal(sl_vsr_storage_slot_size(1000), 4096);
    assert_int_equal(sl_vsr_storage_slot_size(4096 - SL_VSR_STORAGE_SLOT_HEADER), 4096);
    assert_int_equal(sl_vsr_storage_slot_size(4096), 8192);
}

static void test_io_errors(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    uint8_t a[400];
    fill(a, sizeof(a), 5);
    done_log_t log = {0};

    /* A failed fdatasync fails every write it covered. */
    sl_io_fault_t sync_eio = {.calls = SL_IO_BIT(SL_IO_FDATASYNC),
                              .path_contains = "journal.ring",
                              .error = EIO,
                              .count = 1};
    s.write_prepare(s.ctx, 1, a, sizeof(a));
    s.write_prepare(s.ctx, 2, a, sizeof(a));
    sl_io_fault_arm(&sync_eio);
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 2);
    sl_io_fault_arm(NULL);
    assert_int_equal(sync_eio.fired, 1);
    assert_false(log.ok[0] || log.ok[1]);

    /* ENOSPC on the pwrite: that write fails, the next one (room again) succeeds. */
    sl_io_fault_t full = {
        .calls = SL_IO_MASK_WRITES, .path_contains = "journal.ring", .error = ENOSPC, .count = 1};
    sl_io_fault_arm(&full);
    s.write_prepare(s.ctx, 3, a, sizeof(a));
    s.write_prepare(s.ctx, 4, a, sizeof(a));
    sl_io_fault_arm(NULL);
    log.n = 0;
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 2);
    assert_false(log.ok[0]);
    assert_true(log.ok[1]);
    sl_vsr_storage_info_t info;
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.write_failures, 3);
    /* The same slots written again once the disk is back. */
    s.write_prepare(s.ctx, 1, a, sizeof(a));
    s.write_prepare(s.ctx, 3, a, sizeof(a));
    log.n = 0;
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 2);
    assert_true(log.ok[0] && log.ok[1]);

    /* The state record: ENOSPC on the write, EIO on its fdatasync. */
    assert_int_equal(s.write_state(s.ctx, sl_span_str("good")), 0);
    sl_io_fault_t state_full = {
        .calls = SL_IO_MASK_WRITES, .path_contains = "state.", .error = ENOSPC};
    sl_io_fault_arm(&state_full);
    assert_int_equal(s.write_state(s.ctx, sl_span_str("bad")), -SL_ERR_CANNOT_WRITE_TO_FILE);
    sl_io_fault_t state_eio = {
        .calls = SL_IO_BIT(SL_IO_FDATASYNC), .path_contains = "state.", .error = EIO};
    sl_io_fault_arm(&state_eio);
    assert_int_equal(s.write_state(s.ctx, sl_span_str("bad")), -SL_ERR_CANNOT_WRITE_TO_FILE);
    sl_io_fault_arm(NULL);
    assert_span_str(s.read_state(s.ctx), "good");
    /* A record too large for the format is an error, not a truncation. */
    uint8_t *big = calloc(1, SL_VSR_STORAGE_STATE_MAX + 1);
    assert_non_null(big);
    assert_true(s.write_state(s.ctx, sl_span(big, SL_VSR_STORAGE_STATE_MAX + 1)) < 0);
    free(big);
    /* The directory fsync of a checkpoint fails: not written. */
    sl_io_fault_t dir_eio = {.calls = SL_IO_BIT(SL_IO_FSYNC_DIR), .error = EIO};
    sl_io_fault_arm(&dir_eio);
    assert_true(s.write_artifacts(s.ctx, 16, sl_span_str("s"), sl_span_str("t")) < 0);
    sl_io_fault_arm(NULL);
    sl_vsr_storage_close(st);
}

static void test_read_and_create_errors(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    assert_int_equal(s.write_state(s.ctx, sl_span_str("good")), 0);
    sl_vsr_storage_close(st);
    /* A slot that cannot be read is faulty, never empty. */
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    sl_io_fault_t read_eio = {.calls = SL_IO_BIT(SL_IO_PREAD), .error = EIO};
    sl_io_fault_arm(&read_eio);
    assert_true(s.read_prepare(s.ctx, 10).len > 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(s.read_prepare(s.ctx, 10).len, 0);
    sl_vsr_storage_close(st);
    /* An unreadable state copy refuses the open: no record would mean a lost disk. */
    read_eio.path_contains = "state.a";
    sl_io_fault_arm(&read_eio);
    expect_refused(&o, -SL_ERR_CANNOT_READ_FILE, "cannot read");
    sl_io_fault_arm(NULL);
    /* Creation failing half-way leaves nothing a later open would take for a journal. */
    tu_tmpdir_remove(dir);
    sl_io_fault_t create_full = {.calls = SL_IO_BIT(SL_IO_FTRUNCATE), .error = ENOSPC};
    sl_io_fault_arm(&create_full);
    expect_refused(&o, -SL_ERR_CANNOT_WRITE_TO_FILE, "journal.ring");
    sl_io_fault_arm(NULL);
    assert_false(file_exists("journal.ring") || file_exists("journal.ring.tmp"));
    st = open_ok(&o);
    sl_vsr_storage_close(st);
}

/* With preallocate the ring's blocks are allocated at creation (a full disk cannot fail a
 * slot write later); without, the file is sparse. A full disk during creation is an error. */
static void test_preallocate(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    char path[PATH_MAX];
    assert_true(tu_path(path, dir, "journal.ring"));
    uint64_t size = SL_VSR_STORAGE_JOURNAL_HEADER + (uint64_t)SLOTS * SLOT_SIZE;
    sl_vsr_storage_close(open_ok(&o));
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, size);
    uint64_t sparse_blocks = (uint64_t)sb.st_blocks;
    tu_tmpdir_remove(dir);

    o.preallocate = true;
    sl_io_fault_t full = {.calls = SL_IO_BIT(SL_IO_FALLOCATE), .error = ENOSPC};
    sl_io_fault_arm(&full);
    expect_refused(&o, -SL_ERR_CANNOT_WRITE_TO_FILE, "No space left");
    sl_io_fault_arm(NULL);
    assert_false(file_exists("journal.ring") || file_exists("journal.ring.tmp"));
    sl_io_fault_t probe = {.calls = SL_IO_BIT(SL_IO_FALLOCATE)};
    sl_io_fault_arm(&probe);
    sl_vsr_storage_close(open_ok(&o));
    sl_io_fault_arm(NULL);
    assert_int_equal(probe.seen, 1);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, size);
    /* Where the filesystem preallocates, every block is there (tmpfs and ext4 do). */
    if ((uint64_t)sb.st_blocks * 512u < size)
        print_message("note: preallocation not supported here (%llu blocks)\n",
                      (unsigned long long)sb.st_blocks);
    else
        assert_true((uint64_t)sb.st_blocks > sparse_blocks);
}

/* A small PRNG for the garbage test (splitmix64). */
static uint64_t rng_next(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void write_random(const char *name, off_t off, size_t len, uint64_t *rng)
{
    uint8_t *p = malloc(len);
    assert_non_null(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)rng_next(rng);
    poke(name, off, p, len);
    free(p);
}

static void nop_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    (void)ctx, (void)replica, (void)frame, (void)size;
}
static void nop_reply(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size)
{
    (void)ctx, (void)client, (void)frame, (void)size;
}
static void nop_apply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    (void)ctx, (void)p, (void)body, (void)reply;
}
static void nop_snapshot(void *ctx, sl_buf_t *out)
{
    (void)ctx, (void)out;
}
static int nop_restore(void *ctx, sl_span_t s)
{
    (void)ctx;
    return s.len == 0 ? 0 : -1;
}
static void nop_reset(void *ctx)
{
    (void)ctx;
}

static void test_garbage_never_crashes(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        tu_tmpdir_remove(dir);
        uint64_t rng = seed;
        sl_vsr_storage_dir_t *st = open_ok(&o);
        sl_vsr_storage_t s = sl_vsr_storage_interface(st);
        assert_int_equal(s.write_state(s.ctx, sl_span_str("record")), 0);
        assert_int_equal(s.write_state(s.ctx, sl_span_str("record 2")), 0);
        assert_int_equal(s.write_artifacts(s.ctx, 16, sl_span_str("snap"), sl_span_str("t")), 0);
        sl_vsr_storage_close(st);
        /* Random bytes over every slot (some only over the slot header, some with a length
         * that looks right but runs past the slot), both state copies and an artifact. */
        for (uint32_t i = 0; i < SLOTS; i++) {
            uint64_t shape = rng_next(&rng) % 4;
            if (shape == 0) {
                write_random("journal.ring", slot_at(i), SLOT_SIZE, &rng);
            } else if (shape == 1) {
                write_random("journal.ring", slot_at(i), SL_VSR_STORAGE_SLOT_HEADER, &rng);
            } else if (shape == 2) {
                uint8_t head[8];
                uint32_t len = SLOT_SIZE + (uint32_t)(rng_next(&rng) % 100000);
                memcpy(head, &len, 4);
                len = ~len;
                memcpy(head + 4, &len, 4);
                poke("journal.ring", slot_at(i), head, sizeof(head));
            }
        }
        write_random("state.a", 0, 80 + rng_next(&rng) % 4000, &rng);
        write_random("state.b", (off_t)(rng_next(&rng) % 64), 200, &rng);
        write_random("snapshot.16", (off_t)(rng_next(&rng) % 80), 16, &rng);
        st = open_ok(&o);
        s = sl_vsr_storage_interface(st);
        assert_int_equal(s.read_state(s.ctx).len, 0);
        for (uint32_t i = 0; i < SLOTS; i++)
            assert_true(s.read_prepare(s.ctx, i).len <= SLOT_SIZE - SL_VSR_STORAGE_SLOT_HEADER);
        sl_span_t snap = s.read_artifact(s.ctx, 16, 0);
        assert_true(snap.len == 0 || snap.len == 4);
        /* A replica over it: no record, so it rejoins as a lost disk, and scans every slot. */
        sl_vsr_config_t c;
        sl_vsr_config_defaults(&c, 0, 3);
        c.cluster = o.cluster;
        c.journal_slots = SLOTS;
        c.pipeline_max = 4;
        c.checkpoint_interval = 16;
        sl_vsr_bus_t bus = {.send = nop_send, .reply = nop_reply};
        sl_vsr_machine_t m = {.ctx = NULL,
                              .apply = nop_apply,
                              .snapshot = nop_snapshot,
                              .restore = nop_restore,
                              .reset = nop_reset};
        sl_vsr_replica_t *r = NULL;
        assert_int_equal(sl_vsr_replica_open(&c, &s, &bus, &m, &r), 0);
        sl_vsr_info_t info;
        sl_vsr_replica_info(r, &info);
        assert_true(info.wiped);
        sl_vsr_replica_close(r);
        sl_vsr_storage_close(st);
    }
}

/* --- real replicas over the files ----------------------------------------------------- */

#define NODES_MAX 3
#define QUEUE_MAX 4096

typedef struct node {
    int id;
    char dir[PATH_MAX];
    sl_vsr_storage_dir_t *st;
    sl_vsr_replica_t *r;
    uint64_t last_op;
    uint64_t sum; /* the machine: the sum of the bodies' first bytes */
} node_t;

typedef struct msg {
    int to;          /* a replica, or -1 for a client */
    sl_u128_t owner; /* that client */
    uint32_t len;
    uint8_t *data;
} msg_t;

static node_t nodes[NODES_MAX];
static int node_count;
static msg_t queue[QUEUE_MAX];
static size_t q_head, q_tail;
static uint64_t now;
static sl_reply_header_t last_reply;
static uint8_t last_body[64];
static uint32_t last_body_len;
static int replies, other_replies;
static sl_u128_t client = {42, 7};
static uint64_t session;

static void push(int to, sl_u128_t owner, const uint8_t *data, uint32_t len)
{
    sl_assert(q_tail - q_head < QUEUE_MAX);
    msg_t *m = &queue[q_tail++ % QUEUE_MAX];
    m->to = to;
    m->owner = owner;
    m->len = len;
    m->data = malloc(len);
    sl_assert(m->data != NULL);
    memcpy(m->data, data, len);
}

static void bus_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    (void)ctx;
    push(replica, (sl_u128_t){0, 0}, frame, size);
}

static void bus_reply(void *ctx, sl_u128_t to, const uint8_t *frame, uint32_t size)
{
    (void)ctx;
    push(-1, to, frame, size);
}

static void apply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    node_t *n = ctx;
    assert_int_equal(p->op, n->last_op + 1);
    n->last_op = p->op;
    if (p->operation != SL_OP_REGISTER && body.len > 0)
        n->sum += body.ptr[0];
    sl_put_u32(reply, 0);
    sl_put_u64(reply, n->sum);
}

static void snapshot(void *ctx, sl_buf_t *out)
{
    node_t *n = ctx;
    sl_put_u64(out, n->last_op);
    sl_put_u64(out, n->sum);
}

static int restore(void *ctx, sl_span_t s)
{
    node_t *n = ctx;
    if (s.len != 16)
        return -1;
    n->last_op = sl_load_u64(s.ptr);
    n->sum = sl_load_u64(s.ptr + 8);
    return 0;
}

static void reset(void *ctx)
{
    node_t *n = ctx;
    n->last_op = 0;
    n->sum = 0;
}

static sl_vsr_config_t node_config(int id)
{
    sl_vsr_config_t c;
    sl_vsr_config_defaults(&c, (uint8_t)id, (uint8_t)node_count);
    c.cluster = sl_vsr_cluster_id(sl_span_str("unit"));
    c.pipeline_max = 4;
    c.journal_slots = SLOTS;
    c.checkpoint_interval = 16;
    c.clients_max = 8;
    c.reply_max = 64;
    c.commit_interval_ticks = 2;
    c.heartbeat_timeout_ticks = 20;
    c.view_change_timeout_ticks = 40;
    c.resend_ticks = 5;
    c.nonce_seed = 500 + (uint64_t)id;
    return c;
}

static void write_done(void *ctx, uint32_t slot, bool ok)
{
    sl_vsr_replica_write_done(ctx, slot, ok);
}

/* What the host does after every call into a replica: deliver its storage's completions
 * (which may queue more writes: drained too, boundedly). */
static void drain(node_t *n)
{
    for (int i = 0; i < 8 && sl_vsr_storage_pending(n->st) > 0; i++)
        sl_vsr_storage_poll(n->st, n->r, write_done);
}

static void node_open(int id, bool format)
{
    node_t *n = &nodes[id];
    n->id = id;
    n->last_op = n->sum = 0;
    sl_vsr_storage_options_t o = options();
    char err[512] = "";
    if (sl_vsr_storage_open(n->dir, &o, &n->st, err, sizeof(err)) != 0)
        fail_msg("open %s: %s", n->dir, err);
    sl_vsr_config_t c = node_config(id);
    sl_vsr_storage_t s = sl_vsr_storage_interface(n->st);
    if (format)
        assert_int_equal(sl_vsr_replica_format(&c, &s), 0);
    sl_vsr_bus_t bus = {.ctx = n, .send = bus_send, .reply = bus_reply};
    sl_vsr_machine_t m = {
        .ctx = n, .apply = apply, .snapshot = snapshot, .restore = restore, .reset = reset};
    assert_int_equal(sl_vsr_replica_open(&c, &s, &bus, &m, &n->r), 0);
    drain(n);
}

/* Closes a replica and its files as a process exit would: writes not yet polled are left to
 * the disk. */
static void node_close(int id)
{
    sl_vsr_replica_close(nodes[id].r);
    sl_vsr_storage_close(nodes[id].st);
    nodes[id].r = NULL;
    nodes[id].st = NULL;
}

/* A reply for the client the test speaks as is kept; one for another client (a restarted
 * primary answers the ops it applies late) is counted only. */
static void deliver_client(const msg_t *m)
{
    if (!sl_u128_eq(m->owner, client)) {
        other_replies++;
        return;
    }
    if (m->data[60] == SL_COMMAND_EVICTION)
        fail_msg("evicted");
    assert_int_equal(sl_reply_header_decode(m->data, 1u << 20, &last_reply), 0);
    last_body_len = m->len - SL_HEADER_SIZE;
    sl_assert(last_body_len <= sizeof(last_body));
    memcpy(last_body, m->data + SL_HEADER_SIZE, last_body_len);
    replies++;
}

/* One step: deliver what is queued, then tick every replica; storage drained after each. */
static void step(void)
{
    size_t end = q_tail;
    while (q_head < end) {
        msg_t m = queue[q_head++ % QUEUE_MAX];
        if (m.to < 0) {
            deliver_client(&m);
        } else if (nodes[m.to].r != NULL) {
            sl_vsr_replica_on_frame(nodes[m.to].r, m.data, m.len);
            drain(&nodes[m.to]);
        }
        free(m.data);
    }
    now++;
    for (int i = 0; i < node_count; i++) {
        if (nodes[i].r == NULL)
            continue; /* down */
        sl_vsr_replica_tick(nodes[i].r, now * 1000);
        drain(&nodes[i]);
    }
}

static int primary(void)
{
    for (int i = 0; i < node_count; i++) {
        sl_vsr_info_t info;
        if (nodes[i].r == NULL)
            continue;
        sl_vsr_replica_info(nodes[i].r, &info);
        if (info.primary && info.status == SL_VSR_STATUS_NORMAL)
            return i;
    }
    return -1;
}

/* Steps until a primary is elected (at most 400 steps). */
static int await_primary(void)
{
    for (int i = 0; i < 400 && primary() < 0; i++)
        step();
    int p = primary();
    assert_true(p >= 0);
    return p;
}

static void request(uint8_t operation, uint64_t number, uint8_t value)
{
    int p = await_primary();
    uint8_t body[1] = {value};
    sl_vsr_request_t req = {.client = client,
                            .session = operation == SL_OP_REGISTER ? 0 : session,
                            .request = number,
                            .request_checksum = sl_request_checksum(sl_span(body, 1)),
                            .operation = operation,
                            .user_id = 1,
                            .body = sl_span(body, 1)};
    int before = replies;
    sl_vsr_replica_request(nodes[p].r, &req);
    drain(&nodes[p]);
    for (int i = 0; i < 400 && replies == before; i++)
        step();
    assert_int_equal(replies, before + 1);
    if (operation == SL_OP_REGISTER)
        session = last_reply.op;
}

static uint64_t reply_sum(void)
{
    assert_int_equal(last_body_len, 12);
    assert_int_equal(sl_load_u32(last_body), 0);
    return sl_load_u64(last_body + 4);
}

static void cluster_start(int count)
{
    memset(nodes, 0, sizeof(nodes));
    node_count = count;
    q_head = q_tail = 0;
    now = 0;
    replies = 0;
    for (int i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof(name), "replica%d", i);
        assert_true(tu_path(nodes[i].dir, root, name));
        node_open(i, true);
    }
}

static void cluster_stop(void)
{
    for (int i = 0; i < node_count; i++)
        node_close(i);
    while (q_head < q_tail)
        free(queue[q_head++ % QUEUE_MAX].data);
}

/* Commits Register and requests 1..count (values 1..count) through the primary. */
static uint64_t commit_requests(uint8_t count)
{
    request(SL_OP_REGISTER, 0, 0);
    uint64_t sum = 0;
    for (uint8_t k = 1; k <= count; k++) {
        request(SL_OP_CREATE_STREAM, k, k);
        sum += k;
        assert_int_equal(reply_sum(), sum);
    }
    return sum;
}

/* Every node applied through op and holds sum. */
static void assert_all_at(uint64_t op, uint64_t sum)
{
    for (int i = 0; i < node_count; i++) {
        sl_vsr_info_t info;
        sl_vsr_replica_info(nodes[i].r, &info);
        if (info.commit_min != op || nodes[i].sum != sum)
            fail_msg("replica %d: commit %llu sum %llu, want %llu %llu", i,
                     (unsigned long long)info.commit_min, (unsigned long long)nodes[i].sum,
                     (unsigned long long)op, (unsigned long long)sum);
        assert_int_equal(nodes[i].last_op, op);
    }
}

/* One replica (a quorum of one): ops past a checkpoint, closed, reopened from the files. The
 * checkpoint comes back from its artifacts and state record, the ops after it from their
 * journal slots. The core leaves a lone replica's journaled tail uncommitted at open (it
 * skips the restarted primary's hand-over when replica_count is 1, and answers the tail's
 * own client 57 while its prepares are uncommitted), so a second client's Register, whose
 * commit commits the tail too, is what moves it here. */
static void test_one_replica_recovers_from_disk(void **state)
{
    (void)state;
    cluster_start(1);
    client = (sl_u128_t){42, 7};
    uint64_t sum = commit_requests(17); /* ops 1..18: a checkpoint at 16 */
    uint64_t session_first = session;
    assert_int_equal(last_reply.op, 18);
    assert_all_at(18, sum);
    sl_vsr_storage_info_t sinfo;
    sl_vsr_storage_info(nodes[0].st, &sinfo);
    assert_true(sinfo.prepare_writes >= 18);
    assert_int_equal(sinfo.write_failures, 0);
    assert_true(file_exists_in(nodes[0].dir, "snapshot.16"));
    node_close(0);

    node_open(0, false);
    sl_vsr_info_t info;
    sl_vsr_replica_info(nodes[0].r, &info);
    assert_int_equal(info.checkpoint_op, 16);
    assert_int_equal(info.commit_min, 16);
    assert_int_equal(info.op, 18);
    assert_int_equal(nodes[0].last_op, 16); /* the snapshot's state */
    assert_int_equal(nodes[0].sum, sum - 16 - 17);
    for (uint64_t op = 17; op <= 18; op++) {
        sl_vsr_entry_info_t e;
        sl_vsr_replica_entry(nodes[0].r, op, &e);
        assert_true(e.known && e.canonical && e.present);
        assert_int_equal(e.slot, 1); /* valid: the journal's bytes verify */
    }
    client = (sl_u128_t){43, 7};
    int others = other_replies;
    request(SL_OP_REGISTER, 0, 0);
    assert_int_equal(last_reply.op, 19);
    assert_int_equal(other_replies, others + 2); /* ops 17 and 18, answered once applied */
    assert_all_at(19, sum);
    /* The first client's last request, retried: its reply, rebuilt from the journal. */
    client = (sl_u128_t){42, 7};
    session = session_first;
    request(SL_OP_CREATE_STREAM, 17, 17);
    assert_int_equal(last_reply.op, 18);
    assert_int_equal(reply_sum(), sum);
    request(SL_OP_CREATE_STREAM, 18, 100);
    assert_int_equal(last_reply.op, 20);
    assert_int_equal(reply_sum(), sum + 100);
    assert_all_at(20, sum + 100);
    cluster_stop();
}

static void test_three_replicas_recover_from_disk(void **state)
{
    (void)state;
    cluster_start(3);
    client = (sl_u128_t){42, 7};
    uint64_t sum = commit_requests(25); /* ops 1..26 */
    for (int i = 0; i < 20; i++)
        step();
    assert_all_at(26, sum);
    for (int i = 0; i < 3; i++)
        node_close(i);
    while (q_head < q_tail)
        free(queue[q_head++ % QUEUE_MAX].data);

    for (int i = 0; i < 3; i++)
        node_open(i, false);
    await_primary();
    for (int i = 0; i < 60; i++)
        step();
    assert_all_at(26, sum);
    request(SL_OP_CREATE_STREAM, 26, 50);
    assert_int_equal(reply_sum(), sum + 50);
    for (int i = 0; i < 20; i++)
        step();
    assert_all_at(27, sum + 50);
    for (int i = 0; i < 3; i++) {
        sl_vsr_info_t info;
        sl_vsr_replica_info(nodes[i].r, &info);
        assert_int_equal(info.checkpoint_op, 16);
    }
    cluster_stop();
}

/* Disk faults under real replicas: a backup whose journal fdatasyncs fail (its writes
 * complete with ok = false, the slots are repaired once the disk is back), then a backup that
 * crashes in the middle of a slot write (a torn slot on its disk when it reopens). The
 * cluster commits throughout, and every replica ends with the same state. */
static void test_three_replicas_over_faulty_disks(void **state)
{
    (void)state;
    cluster_start(3);
    client = (sl_u128_t){42, 7};
    uint64_t sum = commit_requests(5); /* ops 1..6 */
    int p = await_primary();
    int b = (p + 1) % 3, c = (p + 2) % 3;
    char path_b[PATH_MAX], path_c[PATH_MAX];
    assert_true(tu_path(path_b, nodes[b].dir, "journal.ring"));
    assert_true(tu_path(path_c, nodes[c].dir, "journal.ring"));

    sl_io_fault_t sync_eio = {
        .calls = SL_IO_BIT(SL_IO_FDATASYNC), .path_contains = path_b, .error = EIO, .count = 3};
    sl_io_fault_arm(&sync_eio);
    for (uint8_t k = 6; k <= 10; k++) {
        request(SL_OP_CREATE_STREAM, k, k);
        sum += k;
        assert_int_equal(reply_sum(), sum);
    }
    sl_io_fault_arm(NULL);
    assert_int_equal(sync_eio.fired, 3);
    sl_vsr_storage_info_t sinfo;
    sl_vsr_storage_info(nodes[b].st, &sinfo);
    assert_true(sinfo.write_failures >= 3);
    for (int i = 0; i < 100; i++)
        step();
    assert_all_at(11, sum);

    /* c's next slot write stops after 100 bytes and c dies before it is polled. */
    sl_io_fault_t tear = {
        .calls = SL_IO_MASK_WRITES, .path_contains = path_c, .error = EIO, .short_len = 100};
    sl_io_fault_arm(&tear);
    request(SL_OP_CREATE_STREAM, 11, 11); /* commits on p and b */
    sum += 11;
    sl_io_fault_arm(NULL);
    assert_true(tear.fired >= 1);
    node_close(c);
    for (int i = 0; i < 5; i++)
        step();
    node_open(c, false);
    sl_vsr_entry_info_t e;
    sl_vsr_replica_entry(nodes[c].r, 12, &e);
    assert_int_equal(e.slot, 2); /* the torn slot is faulty, not empty */
    request(SL_OP_CREATE_STREAM, 12, 12);
    sum += 12;
    for (int i = 0; i < 300; i++)
        step();
    assert_all_at(13, sum);
    sl_vsr_replica_entry(nodes[c].r, 12, &e);
    assert_true(e.present);
    cluster_stop();
}

/* A ring this open created reads as never written without reading it (a new group's open
 * scans all 256 slots of 2 MiB); a slot written since, or a ring opened again, is read. */
static void test_new_ring_not_read(void **state)
{
    (void)state;
    sl_vsr_storage_options_t o = options();
    sl_vsr_storage_dir_t *st = open_ok(&o);
    sl_vsr_storage_t s = sl_vsr_storage_interface(st);
    for (uint32_t slot = 0; slot < SLOTS; slot++)
        assert_int_equal(s.read_prepare(s.ctx, slot).len, 0);
    sl_vsr_storage_info_t info;
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.slot_reads, 0);
    uint8_t a[100];
    fill(a, sizeof(a), 5);
    s.write_prepare(s.ctx, 4, a, sizeof(a));
    done_log_t log = {0};
    assert_int_equal(sl_vsr_storage_poll(st, &log, note_done), 1);
    sl_span_t got = s.read_prepare(s.ctx, 4);
    assert_bytes_equal(got.ptr, got.len, a, sizeof(a));
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.slot_reads, 1);
    sl_vsr_storage_close(st);
    st = open_ok(&o);
    s = sl_vsr_storage_interface(st);
    assert_int_equal(s.read_prepare(s.ctx, 3).len, 0);
    got = s.read_prepare(s.ctx, 4);
    assert_bytes_equal(got.ptr, got.len, a, sizeof(a));
    sl_vsr_storage_info(st, &info);
    assert_int_equal(info.slot_reads, 2);
    sl_vsr_storage_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_journal_nosync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_ring_not_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_from_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_slot_leaves_the_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_ping_pong, setup, teardown),
        cmocka_unit_test_setup_teardown(test_artifact_sets_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_geometry_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_and_create_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preallocate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_never_crashes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_replica_recovers_from_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_three_replicas_recover_from_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_three_replicas_over_faulty_disks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
