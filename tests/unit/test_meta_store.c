/* src/meta/store: commit, checkpoint and recovery of the durable metadata log, driven with a
 * tiny test state machine (an op list and a hash chain over every applied entry), under
 * injected I/O faults: append failures, a crash at every I/O call of a checkpoint, transient
 * failures, and the refusals of mismatched or corrupt checkpoint files. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "meta/checkpoint.h"
#include "meta/journal.h"
#include "meta/store.h"
#include "tu_meta.h"
#include "tu_tmpdir.h"
#include "wire/header.h"

/* --- the test state machine -------------------------------------------------------------- */

#define TM_OPS_MAX 256

/* Remembers every applied op in order and a hash chain over each applied entry's fields and
 * body, so two machines are equal only if they applied exactly the same entries. */
typedef struct test_machine {
    uint64_t count;
    uint64_t hash;
    uint64_t ops[TM_OPS_MAX];
} test_machine_t;

static int tm_apply(void *ctx, const sl_meta_entry_t *e, sl_buf_t *reply)
{
    test_machine_t *m = ctx;
    uint64_t expect = m->count ? m->ops[m->count - 1] + 1 : 1;
    if (e->op != expect || m->count == TM_OPS_MAX)
        return -SL_ERR_INVALID_COMMAND;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_put_u64(&b, m->hash);
    sl_put_u64(&b, e->op);
    sl_put_u64(&b, e->timestamp);
    sl_put_u128(&b, e->client);
    sl_put_u64(&b, e->request);
    sl_put_u32(&b, e->user_id);
    sl_put_u8(&b, e->operation);
    sl_put_u128(&b, e->request_checksum);
    sl_put_span(&b, e->body);
    assert_true(sl_buf_ok(&b));
    m->hash = sl_xxh3_64(b.data, b.len);
    sl_buf_free(&b);
    m->ops[m->count++] = e->op;
    sl_put_u64(reply, e->op);
    sl_put_u64(reply, m->hash);
    return 0;
}

static int tm_encode(void *ctx, sl_buf_t *out)
{
    test_machine_t *m = ctx;
    sl_put_u64(out, m->count);
    sl_put_u64(out, m->hash);
    for (uint64_t i = 0; i < m->count; i++)
        sl_put_u64(out, m->ops[i]);
    return 0;
}

static int tm_decode(void *ctx, sl_span_t bytes)
{
    test_machine_t *m = ctx;
    sl_reader_t r = sl_reader(bytes);
    uint64_t count = 0, hash = 0;
    sl_read_u64(&r, &count);
    sl_read_u64(&r, &hash);
    if (!sl_reader_ok(&r) || count > TM_OPS_MAX || sl_reader_left(&r) != count * 8)
        return -SL_ERR_INVALID_FORMAT;
    m->count = count;
    m->hash = hash;
    for (uint64_t i = 0; i < count; i++)
        sl_read_u64(&r, &m->ops[i]);
    return 0;
}

static sl_meta_machine_t tm_machine(test_machine_t *m)
{
    memset(m, 0, sizeof(*m));
    return (sl_meta_machine_t){.ctx = m, .apply = tm_apply, .encode = tm_encode, .decode = tm_decode};
}

/* Asserts m applied exactly ops 1..n of variant 0. */
static void assert_machine_holds(const test_machine_t *m, uint64_t n)
{
    test_machine_t want;
    memset(&want, 0, sizeof(want));
    sl_buf_t reply;
    sl_buf_init(&reply, 0);
    for (uint64_t op = 1; op <= n; op++) {
        tu_entry_t t;
        tu_entry_make(&t, op, 0);
        assert_int_equal(tm_apply(&want, &t.e, &reply), 0);
    }
    sl_buf_free(&reply);
    assert_int_equal(m->count, n);
    for (uint64_t i = 0; i < n; i++)
        assert_int_equal(m->ops[i], i + 1);
    assert_int_equal(m->hash, want.hash);
}

/* --- fixture and helpers -------------------------------------------------------------- */

typedef struct fixture {
    char root[PATH_MAX]; /* the temporary directory, removed at teardown */
    char dir[PATH_MAX];  /* the data directory: root or a directory inside it */
    char meta[PATH_MAX]; /* <dir>/metadata */
    test_machine_t machine;
    int quiet_fd;
} fixture_t;

static void set_dir(fixture_t *f, const char *dir)
{
    snprintf(f->dir, sizeof(f->dir), "%s", dir);
    assert_true(tu_path(f->meta, f->dir, SL_META_DIR));
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    char dir[PATH_MAX];
    assert_true(tu_tmpdir_make(dir, "sluice-metastore"));
    snprintf(f->root, sizeof(f->root), "%s", dir);
    set_dir(f, dir);
    f->quiet_fd = -1;
    *state = f;
    return 0;
}

/* Sends the log to /dev/null while fault loops run (they log every failure on purpose);
 * always restored before asserting, so cmocka's messages still show. */
static void quiet(fixture_t *f, bool on)
{
    fflush(stderr);
    if (on && f->quiet_fd < 0) {
        f->quiet_fd = dup(2);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        close(null);
    } else if (!on && f->quiet_fd >= 0) {
        dup2(f->quiet_fd, 2);
        close(f->quiet_fd);
        f->quiet_fd = -1;
    }
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    sl_io_fault_arm(NULL);
    quiet(f, false);
    tu_tmpdir_remove(f->root); /* also when a failed test left f->dir inside it */
    free(f);
    return 0;
}

static char *meta_path(const fixture_t *f, const char *name)
{
    static char path[PATH_MAX];
    assert_true(tu_path(path, f->meta, name));
    return path;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static uint8_t *read_all(const char *path, size_t *len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_io_read_file(path, &b, SIZE_MAX), 0);
    *len = b.len;
    uint8_t *copy = malloc(b.len ? b.len : 1);
    assert_non_null(copy);
    if (b.len)
        memcpy(copy, b.data, b.len);
    sl_buf_free(&b);
    return copy;
}

static void write_all(const char *path, const void *p, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static sl_meta_store_t *store_open(fixture_t *f, uint32_t interval)
{
    sl_meta_machine_t m = tm_machine(&f->machine);
    sl_meta_store_t *s = NULL;
    char err[1024] = "";
    int rc = sl_meta_store_open(&s, f->dir, &m, interval, err, sizeof(err));
    if (rc != 0)
        print_error("store open: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(s);
    return s;
}

/* Opens expecting a refusal; returns the message (static). */
static const char *store_refuses(fixture_t *f, int want_rc)
{
    static char err[1024];
    err[0] = '\0';
    sl_meta_machine_t m = tm_machine(&f->machine);
    sl_meta_store_t *s = NULL;
    assert_int_equal(sl_meta_store_open(&s, f->dir, &m, 4, err, sizeof(err)), want_rc);
    assert_null(s);
    assert_true(strlen(err) > 0);
    return err;
}

/* Commits op (variant); on success checks the reply is the machine's [op][hash]. */
static int commit(sl_meta_store_t *s, test_machine_t *m, uint64_t op, uint8_t variant)
{
    tu_entry_t t;
    tu_entry_make(&t, op, variant);
    sl_buf_t reply;
    sl_buf_init(&reply, 0);
    int rc = sl_meta_store_commit(s, &t.e, &reply);
    if (rc == 0) {
        assert_int_equal(reply.len, 16);
        assert_int_equal(sl_load_u64(reply.data), op);
        assert_int_equal(sl_load_u64(reply.data + 8), m->hash);
    } else {
        assert_int_equal(reply.len, 0); /* nothing applied, nothing answered */
    }
    sl_buf_free(&reply);
    return rc;
}

static void commit_range(sl_meta_store_t *s, test_machine_t *m, uint64_t from, uint64_t to)
{
    for (uint64_t op = from; op <= to; op++)
        assert_int_equal(commit(s, m, op, 0), 0);
}

/* Reopens and asserts the recovered state is exactly ops 1..n, with n's timestamp. */
static sl_meta_store_t *reopen_holds(fixture_t *f, uint32_t interval, uint64_t n)
{
    sl_meta_store_t *s = store_open(f, interval);
    assert_int_equal(sl_meta_store_last_op(s), n);
    assert_int_equal(sl_meta_store_last_timestamp(s), n ? 1000000 + n * 10 : 0);
    assert_machine_holds(&f->machine, n);
    return s;
}

/* --- basic life cycle ------------------------------------------------------------------ */

static void test_store_fresh_commit_reopen_replay(void **state)
{
    fixture_t *f = *state;
    assert_false(exists(f->meta));
    sl_meta_store_t *s = store_open(f, 0);
    assert_true(exists(f->meta));
    const sl_meta_store_info_t *info = sl_meta_store_info(s);
    assert_true(info->fresh);
    assert_int_equal(info->checkpoint_op, 0);
    assert_int_equal(sl_meta_store_last_op(s), 0);
    assert_int_equal(sl_meta_store_last_timestamp(s), 0);
    /* Reopened before anything was committed: still nothing there. */
    sl_meta_store_close(s);
    s = reopen_holds(f, 0, 0);
    assert_true(sl_meta_store_info(s)->fresh);
    commit_range(s, &f->machine, 1, 10);
    assert_int_equal(sl_meta_store_last_op(s), 10);
    sl_meta_store_close(s);

    /* Ten journaled ops and no checkpoint yet: recovered, not fresh. */
    s = reopen_holds(f, 0, 10);
    info = sl_meta_store_info(s);
    assert_false(info->fresh);
    assert_int_equal(info->replayed, 10);
    assert_int_equal(info->torn_bytes, 0);
    commit_range(s, &f->machine, 11, 12);
    sl_meta_store_close(s);
    sl_meta_store_close(reopen_holds(f, 0, 12));
    assert_false(exists(meta_path(f, SL_META_SNAPSHOT_FILE)));
    assert_false(exists(meta_path(f, SL_META_SUPERBLOCK_A_FILE)));
}

static void test_store_needs_an_existing_data_dir(void **state)
{
    fixture_t *f = *state;
    char missing[PATH_MAX];
    assert_true(tu_path(missing, f->dir, "nope"));
    fixture_t other = *f;
    set_dir(&other, missing);
    const char *err = store_refuses(&other, -SL_ERR_CANNOT_CREATE_STATE_DIRECTORY);
    assert_non_null(strstr(err, "nope/metadata"));
}

static void test_store_checkpoint_then_tail(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 5);
    commit_range(s, &f->machine, 1, 4);
    assert_int_equal(sl_meta_store_info(s)->checkpoints, 0);
    commit_range(s, &f->machine, 5, 5);
    assert_int_equal(sl_meta_store_info(s)->checkpoints, 1);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 5);
    commit_range(s, &f->machine, 6, 13);
    assert_int_equal(sl_meta_store_info(s)->checkpoints, 2);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 10);
    assert_int_equal(sl_meta_store_info(s)->superblock_sequence, 2);
    sl_meta_store_close(s);

    /* Both slots written once (ping-pong), no temp files left, the journal holds 11..13. */
    assert_true(exists(meta_path(f, SL_META_SUPERBLOCK_A_FILE)));
    assert_true(exists(meta_path(f, SL_META_SUPERBLOCK_B_FILE)));
    assert_true(exists(meta_path(f, SL_META_SNAPSHOT_FILE)));
    assert_false(exists(meta_path(f, SL_META_SNAPSHOT_TMP_FILE)));
    assert_false(exists(meta_path(f, SL_META_JOURNAL_TMP_FILE)));
    assert_false(exists(meta_path(f, "superblock.a.tmp")));
    size_t len;
    free(read_all(meta_path(f, SL_META_JOURNAL_FILE), &len));
    size_t want = 0;
    for (uint64_t op = 11; op <= 13; op++)
        want += SL_META_HEADER_SIZE + tu_entry_body_len(op, 0);
    assert_int_equal(len, want);

    s = reopen_holds(f, 5, 13);
    const sl_meta_store_info_t *info = sl_meta_store_info(s);
    assert_false(info->fresh);
    assert_int_equal(info->checkpoint_op, 10);
    assert_int_equal(info->replayed, 3);
    assert_int_equal(info->superblock_sequence, 2);
    commit_range(s, &f->machine, 14, 15);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 15);
    sl_meta_store_close(s);
    sl_meta_store_close(reopen_holds(f, 5, 15));
}

static void test_store_empty_journal_after_checkpoint_keeps_the_timestamp(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 4);
    commit_range(s, &f->machine, 1, 8);
    sl_meta_store_close(s);
    size_t len;
    free(read_all(meta_path(f, SL_META_JOURNAL_FILE), &len));
    assert_int_equal(len, 0);
    s = reopen_holds(f, 4, 8); /* last timestamp comes from the snapshot */
    assert_int_equal(sl_meta_store_info(s)->replayed, 0);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 8);
    commit_range(s, &f->machine, 9, 9);
    sl_meta_store_close(s);
    sl_meta_store_close(reopen_holds(f, 4, 9));
}

static void test_store_explicit_checkpoint(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 0);
    assert_int_equal(sl_meta_store_checkpoint(s), 0); /* nothing committed: nothing to do */
    assert_int_equal(sl_meta_store_info(s)->checkpoints, 0);
    commit_range(s, &f->machine, 1, 3);
    assert_int_equal(sl_meta_store_checkpoint(s), 0);
    assert_int_equal(sl_meta_store_checkpoint(s), 0); /* already current */
    assert_int_equal(sl_meta_store_info(s)->checkpoints, 1);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 3);
    commit_range(s, &f->machine, 4, 20); /* interval 0: no automatic checkpoint */
    assert_int_equal(sl_meta_store_info(s)->checkpoints, 1);
    sl_meta_store_close(s);
    s = reopen_holds(f, 0, 20);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 3);
    assert_int_equal(sl_meta_store_info(s)->replayed, 17);
    sl_meta_store_close(s);
}

/* --- refusals ------------------------------------------------------------------------ */

static void test_store_corrupt_superblock_refuses_to_boot(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 3);
    commit_range(s, &f->machine, 1, 7); /* checkpoints at 3 (a) and 6 (b) */
    sl_meta_store_close(s);
    const char *names[2] = {SL_META_SUPERBLOCK_B_FILE, SL_META_SUPERBLOCK_A_FILE};
    for (size_t i = 0; i < 2; i++) { /* the newest, then the older one */
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s", meta_path(f, names[i]));
        size_t len;
        uint8_t *bytes = read_all(path, &len);
        bytes[50] ^= 0x20;
        write_all(path, bytes, len);
        const char *err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
        assert_non_null(strstr(err, names[i]));
        assert_non_null(strstr(err, "checksum mismatch"));
        bytes[50] ^= 0x20;
        write_all(path, bytes, len);
        free(bytes);
    }
    sl_meta_store_close(reopen_holds(f, 3, 7));
}

static void test_store_snapshot_not_matching_superblock_refuses_to_boot(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 3);
    commit_range(s, &f->machine, 1, 3);
    size_t old_len, len;
    uint8_t *old = read_all(meta_path(f, SL_META_SNAPSHOT_FILE), &old_len);
    commit_range(s, &f->machine, 4, 7);
    sl_meta_store_close(s);
    char snap[PATH_MAX];
    snprintf(snap, sizeof(snap), "%s", meta_path(f, SL_META_SNAPSHOT_FILE));
    uint8_t *good = read_all(snap, &len);

    /* An older but intact snapshot.bin. */
    write_all(snap, old, old_len);
    const char *err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(err, "superblock.b"));
    assert_non_null(strstr(err, "checkpoint op 6"));
    assert_non_null(strstr(err, "snapshot.bin has checksum"));
    assert_non_null(strstr(err, "refusing to boot"));
    /* A damaged one. */
    good[10] ^= 1;
    write_all(snap, good, len);
    err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(err, "snapshot.bin cannot be used"));
    assert_non_null(strstr(err, "checksum mismatch"));
    good[10] ^= 1;
    /* A missing one. */
    unlink(snap);
    err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(err, "snapshot.bin is missing"));
    /* A stray temp file that is not the named checkpoint does not stand in for it. */
    write_all(meta_path(f, SL_META_SNAPSHOT_TMP_FILE), old, old_len);
    err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(err, "snapshot.bin is missing"));
    unlink(meta_path(f, SL_META_SNAPSHOT_TMP_FILE));
    /* Put back, it boots. */
    write_all(snap, good, len);
    sl_meta_store_close(reopen_holds(f, 3, 7));
    free(good);
    free(old);
}

static void test_store_snapshot_without_superblock_refuses_to_boot(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 3);
    commit_range(s, &f->machine, 1, 4);
    sl_meta_store_close(s);
    unlink(meta_path(f, SL_META_SUPERBLOCK_A_FILE));
    const char *err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(err, "snapshot.bin exists but neither superblock does"));
}

static void test_store_missing_journal_next_to_a_superblock_refuses_to_boot(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 3);
    commit_range(s, &f->machine, 1, 5);
    sl_meta_store_close(s);
    unlink(meta_path(f, SL_META_JOURNAL_FILE));
    const char *err = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(err, "journal.wal is missing"));
}

static void test_store_superblock_of_another_replica_refuses_to_boot(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 3);
    commit_range(s, &f->machine, 1, 3);
    sl_meta_store_close(s);
    sl_meta_superblock_t sb;
    char err[512];
    assert_int_equal(sl_meta_superblock_load(f->meta, &sb, err, sizeof(err)), 0);
    sl_meta_vsr_state_t v = sb.vsr;
    v.replica_count = 3;
    bool renamed;
    assert_int_equal(sl_meta_superblock_store(f->meta, &sb, &v, &renamed), 0);
    const char *msg = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(msg, "replica 0 of 3"));
}

static void test_store_ops_missing_between_snapshot_and_journal_refuses(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 3);
    commit_range(s, &f->machine, 1, 3); /* checkpoint 3, journal empty */
    sl_meta_store_close(s);
    /* A journal that starts at op 6. */
    char side[PATH_MAX];
    assert_true(tu_path(side, f->dir, "side"));
    assert_int_equal(mkdir(side, 0755), 0);
    sl_meta_journal_t *j;
    sl_meta_journal_info_t info;
    char err[512];
    assert_int_equal(sl_meta_journal_open(&j, side, &info, err, sizeof(err)), 0);
    for (uint64_t op = 6; op <= 7; op++) {
        tu_entry_t t;
        tu_entry_make(&t, op, 0);
        assert_int_equal(sl_meta_journal_append(j, &t.e, SL_META_RESERVE_KEEP), 0);
    }
    sl_meta_journal_close(j);
    char path[PATH_MAX];
    assert_true(tu_path(path, side, SL_META_JOURNAL_FILE));
    size_t len;
    uint8_t *bytes = read_all(path, &len);
    write_all(meta_path(f, SL_META_JOURNAL_FILE), bytes, len);
    free(bytes);
    const char *msg = store_refuses(f, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_non_null(strstr(msg, "ops 4..5 are missing"));
}

/* --- append faults -------------------------------------------------------------------- */

static void test_store_append_fault_applies_nothing_and_leaves_no_trace(void **state)
{
    fixture_t *f = *state;
    struct {
        sl_io_fault_t plan;
        int want;
        int failures; /* commits that fail before the fault clears */
    } cases[] = {
        {{.calls = SL_IO_MASK_WRITES, .error = ENOSPC}, -SL_ERR_CANNOT_WRITE_TO_FILE, 3},
        {{.calls = SL_IO_MASK_WRITES, .error = EIO}, -SL_ERR_CANNOT_WRITE_TO_FILE, 1},
        {{.calls = SL_IO_MASK_WRITES, .short_len = 100, .error = ENOSPC},
         -SL_ERR_CANNOT_WRITE_TO_FILE,
         2},
        {{.calls = SL_IO_BIT(SL_IO_FDATASYNC),
          .path_contains = "journal.wal",
          .count = 1,
          .error = EIO},
         -SL_ERR_CANNOT_SYNC_FILE,
         1},
        /* The failed append's bytes cannot be cut either: cut before the next append. */
        {{.calls = SL_IO_MASK_WRITES | SL_IO_BIT(SL_IO_FTRUNCATE),
          .short_len = 30,
          .error = ENOSPC},
         -SL_ERR_CANNOT_WRITE_TO_FILE,
         2},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        char dir[PATH_MAX], name[32];
        snprintf(name, sizeof(name), "case-%zu", i);
        fixture_t *g = f;
        char saved[PATH_MAX];
        snprintf(saved, sizeof(saved), "%s", f->dir);
        assert_true(tu_path(dir, saved, name));
        assert_int_equal(mkdir(dir, 0755), 0);
        set_dir(g, dir);
        sl_meta_store_t *s = store_open(g, 0);
        commit_range(s, &g->machine, 1, 3);
        sl_io_fault_arm(&cases[i].plan);
        quiet(g, true);
        int rcs[3];
        for (int k = 0; k < cases[i].failures; k++)
            rcs[k] = commit(s, &g->machine, 4, (uint8_t)(1 + k)); /* other bodies each time */
        quiet(g, false);
        sl_io_fault_arm(NULL);
        for (int k = 0; k < cases[i].failures; k++)
            assert_int_equal(rcs[k], cases[i].want);
        assert_int_equal(sl_meta_store_last_op(s), 3);
        assert_machine_holds(&g->machine, 3);
        /* The fault is gone: the same op commits, with the body the server sends now. */
        commit_range(s, &g->machine, 4, 5);
        sl_meta_store_close(s);
        s = reopen_holds(g, 0, 5); /* the hash chain proves no failed body was kept */
        assert_int_equal(sl_meta_store_info(s)->torn_bytes, 0);
        sl_meta_store_close(s);
        set_dir(g, saved);
    }
}

/* --- a full disk ------------------------------------------------------------------------- */

/* Bytes of the journal file's allocated blocks (st_blocks counts 512-byte units). */
static uint64_t journal_blocks_bytes(fixture_t *f)
{
    struct stat st;
    assert_int_equal(stat(meta_path(f, SL_META_JOURNAL_FILE), &st), 0);
    return (uint64_t)st.st_blocks * 512u;
}

/* Commits op as `operation` with a 32 KiB body (so the reserve is crossed in a few commits). */
static int commit_big(sl_meta_store_t *s, uint64_t op, uint8_t operation)
{
    static uint8_t body[32 * 1024];
    memset(body, (int)(op & 0xFF), sizeof(body));
    sl_meta_entry_t e = {
        .op = op,
        .timestamp = 1000000 + op * 10,
        .client = {op, 1},
        .request = op,
        .operation = operation,
        .body = sl_span(body, sizeof(body)),
    };
    sl_buf_t reply;
    sl_buf_init(&reply, 0);
    int rc = sl_meta_store_commit(s, &e, &reply);
    sl_buf_free(&reply);
    return rc;
}

/* Commits entries of `operation` until one is refused (at most max); returns how many went in.
 * A refusal applies nothing and leaves the journal file as it was. */
static uint64_t commit_until_refused(fixture_t *f, sl_meta_store_t *s, uint8_t operation,
                                     uint64_t max)
{
    uint64_t done = 0;
    for (; done < max; done++) {
        uint64_t op = sl_meta_store_last_op(s) + 1;
        size_t before;
        free(read_all(meta_path(f, SL_META_JOURNAL_FILE), &before));
        int rc = commit_big(s, op, operation);
        if (rc == 0)
            continue;
        assert_int_equal(rc, -SL_ERR_CANNOT_WRITE_TO_FILE);
        assert_int_equal(sl_meta_store_last_op(s), op - 1);
        size_t after;
        free(read_all(meta_path(f, SL_META_JOURNAL_FILE), &after));
        assert_int_equal(after, before);
        break;
    }
    return done;
}

static void test_store_reserve_classes(void **state)
{
    (void)state;
    assert_int_equal(sl_meta_reserve_for(SL_OP_DELETE_STREAM), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_DELETE_TOPIC), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_DELETE_PARTITIONS), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_DELETE_SEGMENTS), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_TRUNCATE_PARTITION), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_PURGE_STREAM), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_PURGE_TOPIC), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_DELETE_CONSUMER_GROUP), SL_META_RESERVE_ALL);
    assert_int_equal(sl_meta_reserve_for(SL_OP_REGISTER), SL_META_RESERVE_HALF);
    assert_int_equal(sl_meta_reserve_for(SL_OP_LOGOUT), SL_META_RESERVE_HALF);
    assert_int_equal(sl_meta_reserve_for(SL_OP_CREATE_STREAM), SL_META_RESERVE_KEEP);
    assert_int_equal(sl_meta_reserve_for(SL_OP_CREATE_TOPIC), SL_META_RESERVE_KEEP);
    assert_int_equal(sl_meta_reserve_for(SL_OP_CREATE_USER), SL_META_RESERVE_KEEP);
    assert_int_equal(sl_meta_reserve_for(SL_OP_JOIN_CONSUMER_GROUP), SL_META_RESERVE_KEEP);
}

/* The disk cannot give the journal more blocks (fallocate fails with ENOSPC): ordinary
 * operations use what was preallocated beyond the reserve and are then refused; logins take
 * half the reserve, operations that free space the rest and then keep trying; once the disk
 * has room again ordinary operations go on. Nothing refused is kept. */
static void test_store_full_disk_reserve(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 0);
    commit_range(s, &f->machine, 1, 3);
    /* Preallocated past the entries, the file's size unchanged. */
    size_t size;
    free(read_all(meta_path(f, SL_META_JOURNAL_FILE), &size));
    assert_true(journal_blocks_bytes(f) >= size + SL_META_JOURNAL_RESERVE);
    sl_io_fault_t full = {.calls = SL_IO_BIT(SL_IO_FALLOCATE), .error = ENOSPC};
    sl_io_fault_arm(&full);
    quiet(f, true);
    uint64_t entry = SL_META_HEADER_SIZE + 32 * 1024;
    uint64_t ordinary = commit_until_refused(f, s, SL_OP_CREATE_STREAM, 64);
    uint64_t logins = commit_until_refused(f, s, SL_OP_REGISTER, 64);
    /* Operations that free space use the rest of the reserve, then keep going where the write
     * finds room (this disk has plenty). */
    uint64_t deletes = commit_until_refused(f, s, SL_OP_DELETE_STREAM, 40);
    uint64_t after = commit_until_refused(f, s, SL_OP_CREATE_TOPIC, 64);
    quiet(f, false);
    sl_io_fault_arm(NULL);
    assert_true(full.fired > 0);
    /* Up to the step beyond the reserve, then half the reserve, then all of it. */
    assert_int_equal(ordinary, (SL_META_JOURNAL_RESERVE_STEP - size) / entry);
    assert_int_equal(ordinary + logins,
                     (SL_META_JOURNAL_RESERVE_STEP + SL_META_JOURNAL_RESERVE / 2 - size) / entry);
    assert_int_equal(deletes, 40);
    assert_int_equal(after, 0);
    uint64_t last = sl_meta_store_last_op(s);
    assert_int_equal(last, 3 + ordinary + logins + deletes);
    /* Room again: the reserve is preallocated anew and ordinary operations commit. */
    assert_int_equal(commit_big(s, last + 1, SL_OP_CREATE_TOPIC), 0);
    sl_meta_store_close(s);
    free(read_all(meta_path(f, SL_META_JOURNAL_FILE), &size));
    assert_true(journal_blocks_bytes(f) >= size + SL_META_JOURNAL_RESERVE);
    sl_meta_machine_t m = tm_machine(&f->machine);
    char err[512];
    assert_int_equal(sl_meta_store_open(&s, f->dir, &m, 0, err, sizeof(err)), 0);
    assert_int_equal(sl_meta_store_last_op(s), last + 1);
    assert_int_equal(sl_meta_store_info(s)->torn_bytes, 0);
    sl_meta_store_close(s);
}

/* A checkpoint on a full disk fails without failing its commit, leaves no partial snapshot
 * taking space, and is done by a later commit once there is room. */
static void test_store_checkpoint_on_a_full_disk(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 1);
    commit_range(s, &f->machine, 1, 2);
    sl_io_fault_t full = {.calls = SL_IO_MASK_WRITES,
                          .path_contains = SL_META_SNAPSHOT_TMP_FILE,
                          .short_len = 10,
                          .error = ENOSPC};
    sl_io_fault_arm(&full);
    quiet(f, true);
    assert_int_equal(commit(s, &f->machine, 3, 0), 0);
    assert_int_equal(commit(s, &f->machine, 4, 0), 0);
    quiet(f, false);
    sl_io_fault_arm(NULL);
    assert_true(full.fired >= 2);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_failures, 2);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 2);
    assert_false(exists(meta_path(f, SL_META_SNAPSHOT_TMP_FILE)));
    /* The snapshot fits, the superblock after it does not: the snapshot goes too. */
    sl_io_fault_t sb_full = {
        .calls = SL_IO_MASK_WRITES, .path_contains = "superblock", .error = ENOSPC};
    sl_io_fault_arm(&sb_full);
    quiet(f, true);
    assert_int_equal(commit(s, &f->machine, 5, 0), 0);
    quiet(f, false);
    sl_io_fault_arm(NULL);
    assert_true(sb_full.fired >= 1);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 2);
    assert_false(exists(meta_path(f, SL_META_SNAPSHOT_TMP_FILE)));
    commit_range(s, &f->machine, 6, 6);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 6);
    sl_meta_store_close(s);
    s = reopen_holds(f, 1, 6);
    assert_int_equal(sl_meta_store_info(s)->replayed, 0);
    sl_meta_store_close(s);
}

/* A checkpoint whose journal rewrite met a full disk, then a crash: the boot, on the still-full
 * disk, cannot drop the checkpointed ops from the journal either. It boots all the same (replay
 * skips them) and the rewrite is done after a later commit. */
static void test_store_boots_when_the_journal_cannot_be_rewritten(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 4);
    commit_range(s, &f->machine, 1, 3);
    sl_io_fault_t full = {
        .calls = SL_IO_BIT(SL_IO_OPEN), .path_contains = SL_META_JOURNAL_TMP_FILE, .error = ENOSPC};
    sl_io_fault_arm(&full);
    quiet(f, true);
    assert_int_equal(commit(s, &f->machine, 4, 0), 0); /* snapshot and superblock, no rewrite */
    sl_meta_store_close(s);                            /* "crash" */
    s = reopen_holds(f, 4, 4);
    quiet(f, false);
    sl_io_fault_arm(NULL);
    assert_true(full.fired >= 2);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 4);
    assert_int_equal(sl_meta_store_info(s)->replayed, 0);
    commit_range(s, &f->machine, 5, 5); /* a checkpoint at 5, then the rewrite */
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 5);
    sl_meta_store_close(s);
    sl_meta_journal_t *j;
    sl_meta_journal_info_t info;
    char err[512];
    assert_int_equal(sl_meta_journal_open(&j, f->meta, &info, err, sizeof(err)), 0);
    assert_int_equal(info.entries, 0); /* everything checkpointed is dropped */
    sl_meta_journal_close(j);
    sl_meta_store_close(reopen_holds(f, 4, 5));
}

/* --- checkpoints interrupted ------------------------------------------------------------ */

static void test_store_roll_forward_of_an_interrupted_snapshot_rename(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 4);
    commit_range(s, &f->machine, 1, 7); /* checkpoint at 4 */
    sl_io_fault_t plan = {
        .calls = SL_IO_BIT(SL_IO_RENAME), .path_contains = "snapshot.bin.tmp", .error = EIO};
    sl_io_fault_arm(&plan);
    quiet(f, true);
    int rc = commit(s, &f->machine, 8, 0); /* committed; its checkpoint stops before rename */
    quiet(f, false);
    sl_io_fault_arm(NULL);
    assert_int_equal(rc, 0);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_failures, 1);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 4);
    sl_meta_store_close(s); /* "crash" */
    assert_true(exists(meta_path(f, SL_META_SNAPSHOT_TMP_FILE)));

    s = reopen_holds(f, 4, 8);
    const sl_meta_store_info_t *info = sl_meta_store_info(s);
    assert_true(info->rolled_forward);
    assert_int_equal(info->checkpoint_op, 8);
    assert_int_equal(info->replayed, 0);
    assert_false(exists(meta_path(f, SL_META_SNAPSHOT_TMP_FILE)));
    sl_meta_store_close(s);
}

static void test_store_interrupted_checkpoint_resumes_on_the_next_commit(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 4);
    commit_range(s, &f->machine, 1, 3);
    uint32_t steps[] = {SL_IO_BIT(SL_IO_RENAME), SL_IO_BIT(SL_IO_FSYNC_DIR)};
    for (size_t i = 0; i < SL_ARRAY_LEN(steps); i++) {
        /* Fail the snapshot's rename (or the fsync after it) once. */
        sl_io_fault_t plan = {.calls = steps[i],
                              .path_contains = i == 0 ? "snapshot" : NULL,
                              .after = i == 0 ? 0 : 1,
                              .count = 1,
                              .error = EIO};
        sl_io_fault_arm(&plan);
        quiet(f, true);
        assert_int_equal(commit(s, &f->machine, 4 + i * 4, 0), 0);
        quiet(f, false);
        sl_io_fault_arm(NULL);
        assert_int_equal(plan.fired, 1);
        assert_int_equal(sl_meta_store_info(s)->checkpoint_op, i * 4);
        /* The next commit finishes that checkpoint, not a new one. */
        commit_range(s, &f->machine, 5 + i * 4, 5 + i * 4);
        assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 4 + i * 4);
        assert_int_equal(sl_meta_store_info(s)->checkpoints, i + 1);
        commit_range(s, &f->machine, 6 + i * 4, 7 + i * 4);
    }
    sl_meta_store_close(s);
    s = reopen_holds(f, 4, 11);
    assert_int_equal(sl_meta_store_info(s)->checkpoint_op, 8);
    sl_meta_store_close(s);
}

typedef struct trace_log {
    sl_io_call_t calls[64];
    char names[64][32];
    char targets[64][32];
    size_t n;
} trace_log_t;

static void base_name(char out[32], const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    snprintf(out, 32, "%s", slash ? slash + 1 : path ? path : "");
}

static void record(void *ctx, const sl_io_op_t *op)
{
    trace_log_t *t = ctx;
    if (t->n < SL_ARRAY_LEN(t->calls)) {
        base_name(t->names[t->n], op->path);
        base_name(t->targets[t->n], op->path2);
        t->calls[t->n++] = op->call;
    }
}

/* Index of the first call >= from of kind call on name (NULL: any); fails when none. */
static size_t find_call(const trace_log_t *t, size_t from, sl_io_call_t call, const char *name)
{
    for (size_t i = from; i < t->n; i++)
        if (t->calls[i] == call && (!name || strcmp(t->names[i], name) == 0))
            return i;
    fail_msg("no %s on %s after call %zu", sl_io_call_name(call), name ? name : "any", from);
    return 0;
}

static void test_store_checkpoint_io_order(void **state)
{
    fixture_t *f = *state;
    sl_meta_store_t *s = store_open(f, 4);
    commit_range(s, &f->machine, 1, 7);
    trace_log_t log = {0};
    sl_io_fault_t plan = {.trace = record, .trace_ctx = &log};
    sl_io_fault_arm(&plan);
    assert_int_equal(commit(s, &f->machine, 8, 0), 0);
    sl_io_fault_arm(NULL);
    sl_meta_store_close(s);
    /* Journal first, durable before anything else. */
    assert_int_equal(log.calls[0], SL_IO_PWRITEV);
    assert_string_equal(log.names[0], "journal.wal");
    assert_int_equal(log.calls[1], SL_IO_FDATASYNC);
    /* snapshot.bin.tmp durable -> superblock.b (second checkpoint) renamed and dir synced ->
     * snapshot renamed and dir synced -> journal rewritten, renamed, dir synced. */
    size_t snap_sync = find_call(&log, 2, SL_IO_FSYNC, "snapshot.bin.tmp");
    size_t sb_sync = find_call(&log, snap_sync, SL_IO_FSYNC, "superblock.b.tmp");
    size_t sb_rename = find_call(&log, sb_sync, SL_IO_RENAME, "superblock.b.tmp");
    assert_string_equal(log.targets[sb_rename], "superblock.b");
    size_t sb_dir = find_call(&log, sb_rename, SL_IO_FSYNC_DIR, NULL);
    size_t snap_rename = find_call(&log, sb_dir, SL_IO_RENAME, "snapshot.bin.tmp");
    assert_string_equal(log.targets[snap_rename], "snapshot.bin");
    size_t snap_dir = find_call(&log, snap_rename, SL_IO_FSYNC_DIR, NULL);
    size_t wal_sync = find_call(&log, snap_dir, SL_IO_FSYNC, "journal.wal.tmp");
    size_t wal_rename = find_call(&log, wal_sync, SL_IO_RENAME, "journal.wal.tmp");
    assert_string_equal(log.targets[wal_rename], "journal.wal");
    size_t wal_dir = find_call(&log, wal_rename, SL_IO_FSYNC_DIR, NULL);
    assert_int_equal(wal_dir, log.n - 1);
}

/* Commits 1..before, then commit before+1 (which checkpoints) with plan armed; "crashes"
 * (closes without further I/O), then checks that a reopen holds exactly the committed ops and
 * that the store goes on working across another checkpoint. Returns the commit's result. */
static int crash_run(fixture_t *f, uint64_t before, sl_io_fault_t *plan, trace_log_t *log)
{
    sl_meta_store_t *s = store_open(f, 4);
    commit_range(s, &f->machine, 1, before);
    *log = (trace_log_t){0};
    plan->trace = record;
    plan->trace_ctx = log;
    sl_io_fault_arm(plan);
    quiet(f, true);
    int rc = commit(s, &f->machine, before + 1, 0);
    sl_meta_store_close(s);
    quiet(f, false);
    sl_io_fault_arm(NULL);
    uint64_t at = plan->after;
    assert_true(at < log->n);
    /* A failed fdatasync leaves the entry's fate open, as a real crash there would; the
     * simulated crash keeps the written bytes, so the entry survives. Any other failure of
     * the commit means the op is absent. */
    bool journal_sync =
        log->calls[at] == SL_IO_FDATASYNC && strcmp(log->names[at], SL_META_JOURNAL_FILE) == 0;
    uint64_t want = rc == 0 || journal_sync ? before + 1 : before;
    s = reopen_holds(f, 4, want);
    if (plan->short_len && log->calls[at] == SL_IO_PWRITEV)
        assert_int_equal(sl_meta_store_info(s)->torn_bytes, plan->short_len);
    commit_range(s, &f->machine, want + 1, before + 6);
    sl_meta_store_close(s);
    sl_meta_store_close(reopen_holds(f, 4, before + 6));
    assert_false(exists(meta_path(f, SL_META_SNAPSHOT_TMP_FILE)));
    assert_false(exists(meta_path(f, SL_META_JOURNAL_TMP_FILE)));
    return rc;
}

/* Points f at a new directory root/name. */
static void use_subdir(fixture_t *f, const char *root, const char *name)
{
    char dir[PATH_MAX];
    assert_true(tu_path(dir, root, name));
    assert_int_equal(mkdir(dir, 0755), 0);
    set_dir(f, dir);
}

/* Runs crash_run with the fault at every I/O call of the checkpointing commit in turn. */
static void crash_at_every_call(fixture_t *f, uint64_t before, size_t short_len, int error)
{
    char root[PATH_MAX];
    snprintf(root, sizeof(root), "%s", f->dir);
    /* A run without faults counts the calls: journal append (2), snapshot.bin.tmp (3),
     * superblock (5), snapshot rename (2), journal rewrite (5: nothing left to copy; open,
     * fsync, rename, the new file's reserve, directory fsync). */
    use_subdir(f, root, "probe");
    sl_io_fault_t probe = {0};
    trace_log_t log;
    assert_int_equal(crash_run(f, before, &probe, &log), 0);
    size_t calls = log.n;
    assert_int_equal(calls, 17);
    size_t failed = 0;
    for (size_t i = 0; i < calls; i++) {
        char name[32];
        snprintf(name, sizeof(name), "crash-%zu", i);
        use_subdir(f, root, name);
        sl_io_fault_t plan = {.after = i, .short_len = short_len, .error = error};
        if (crash_run(f, before, &plan, &log) != 0)
            failed++;
        assert_true(plan.fired >= 1);
        tu_tmpdir_remove(f->dir);
    }
    set_dir(f, root);
    /* Only the journal's two calls fail the commit itself; checkpoint faults never do. */
    assert_int_equal(failed, 2);
}

static void test_store_crash_at_every_io_call_of_the_first_checkpoint(void **state)
{
    crash_at_every_call(*state, 3, 0, EIO);
}

static void test_store_crash_at_every_io_call_of_a_later_checkpoint(void **state)
{
    crash_at_every_call(*state, 7, 0, EIO);
}

static void test_store_torn_write_crash_at_every_io_call(void **state)
{
    crash_at_every_call(*state, 7, 7, ENOSPC);
}

/* One failed call at each position of a checkpointing commit, then the store keeps going in
 * the same process: retries finish the checkpoint and nothing committed is lost. */
static void test_store_transient_fault_at_every_io_call(void **state)
{
    fixture_t *f = *state;
    char root[PATH_MAX];
    snprintf(root, sizeof(root), "%s", f->dir);
    size_t positions = 0;
    for (size_t i = 0; i < 64; i++) {
        char name[32];
        snprintf(name, sizeof(name), "transient-%zu", i);
        use_subdir(f, root, name);
        sl_meta_store_t *s = store_open(f, 4);
        commit_range(s, &f->machine, 1, 7);
        sl_io_fault_t plan = {.after = i, .count = 1, .error = EIO};
        sl_io_fault_arm(&plan);
        quiet(f, true);
        int rc = commit(s, &f->machine, 8, 0);
        int rc_again = rc == 0 ? 0 : commit(s, &f->machine, 8, 0);
        quiet(f, false);
        sl_io_fault_arm(NULL);
        assert_int_equal(rc_again, 0);
        commit_range(s, &f->machine, 9, 14);
        assert_true(sl_meta_store_info(s)->checkpoint_op >= 12); /* caught up by now */
        sl_meta_store_close(s);
        sl_meta_store_close(reopen_holds(f, 4, 14));
        tu_tmpdir_remove(f->dir);
        if (plan.fired == 0)
            break; /* past the last call: every position was covered */
        positions++;
    }
    assert_true(positions >= 16 && positions < 64);
    set_dir(f, root);
}

int main(void)
{
    sl_log_set_level(SL_LOG_WARN);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_store_fresh_commit_reopen_replay),
        T(test_store_needs_an_existing_data_dir),
        T(test_store_checkpoint_then_tail),
        T(test_store_empty_journal_after_checkpoint_keeps_the_timestamp),
        T(test_store_explicit_checkpoint),
        T(test_store_corrupt_superblock_refuses_to_boot),
        T(test_store_snapshot_not_matching_superblock_refuses_to_boot),
        T(test_store_snapshot_without_superblock_refuses_to_boot),
        T(test_store_missing_journal_next_to_a_superblock_refuses_to_boot),
        T(test_store_superblock_of_another_replica_refuses_to_boot),
        T(test_store_ops_missing_between_snapshot_and_journal_refuses),
        T(test_store_append_fault_applies_nothing_and_leaves_no_trace),
        T(test_store_roll_forward_of_an_interrupted_snapshot_rename),
        T(test_store_interrupted_checkpoint_resumes_on_the_next_commit),
        T(test_store_checkpoint_io_order),
        T(test_store_crash_at_every_io_call_of_the_first_checkpoint),
        T(test_store_crash_at_every_io_call_of_a_later_checkpoint),
        T(test_store_torn_write_crash_at_every_io_call),
        T(test_store_transient_fault_at_every_io_call),
        T(test_store_reserve_classes),
        T(test_store_full_disk_reserve),
        T(test_store_checkpoint_on_a_full_disk),
        T(test_store_boots_when_the_journal_cannot_be_rewritten),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
