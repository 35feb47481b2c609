/* src/store: a partition's first segment created by cfg.creator (sl_partition_creator_t), here
 * a fake one that records what it was asked and creates the files only when the test says.
 * While a creation is in flight the batches of the append that began it wait in the journal
 * (acknowledged and readable) and nothing is written; the completion installs the files and
 * flushes; the next flush of the partition waits for the creation (no second one starts); a refused
 * creation, an enforce_fsync topic and a creation that fails make the partition create its files
 * itself; a purge, a close and the journal bound wait for the creation in flight first. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/partition_internal.h"
#include "tu_store.h"

typedef struct fake_creator {
    sl_partition_creator_t hook;
    bool refuse;
    bool fail; /* complete without the files (EACCES) */
    uint32_t begun;
    uint32_t waits;
    sl_partition_t *p; /* the creation in flight, NULL when none */
    uint64_t seq, start;
    bool make_dir;
    char dir[PATH_MAX];
} fake_creator_t;

static bool fake_begin(void *ctx, sl_partition_t *p, uint64_t seq, const char *dir, uint64_t start,
                       bool make_dir)
{
    fake_creator_t *c = ctx;
    assert_null(c->p); /* one partition in these tests: never two creations at once */
    if (c->refuse)
        return false;
    c->begun++;
    c->p = p;
    c->seq = seq;
    c->start = start;
    c->make_dir = make_dir;
    snprintf(c->dir, sizeof(c->dir), "%s", dir);
    return true;
}

/* Does the creation in flight, as the server's ring would, and hands it back. */
static void fake_complete(fake_creator_t *c)
{
    assert_non_null(c->p);
    sl_partition_t *p = c->p;
    c->p = NULL;
    if (c->fail) {
        sl_partition_created(p, c->seq, 0, -EACCES, -EACCES);
        return;
    }
    int dir_rc = 0;
    if (c->make_dir)
        dir_rc = mkdir(c->dir, 0700) == 0 ? 0 : -errno;
    char log[PATH_MAX + 32], index[PATH_MAX + 32];
    snprintf(log, sizeof(log), "%s/%020llu.log", c->dir, (unsigned long long)c->start);
    snprintf(index, sizeof(index), "%s/%020llu.index", c->dir, (unsigned long long)c->start);
    int log_fd = open(log, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int index_fd = open(index, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    sl_partition_created(p, c->seq, dir_rc, log_fd < 0 ? -errno : log_fd,
                         index_fd < 0 ? -errno : index_fd);
}

static void fake_wait(void *ctx)
{
    fake_creator_t *c = ctx;
    if (c->p) {
        c->waits++;
        fake_complete(c);
    }
}

typedef struct fixture {
    fake_creator_t creator;
    sl_journal_bound_t bound;
    tu_part_t t;
} fixture_t;

/* A partition whose gate trips at every batch, with the fake creator, purged so it has no
 * segment (a purged partition creates its segment 0 at the next flush, as a new one does). */
static fixture_t *fixture_open(bool fsync, uint64_t bound_max)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->creator.hook = (sl_partition_creator_t){fake_begin, fake_wait, &f->creator};
    sl_journal_bound_init(&f->bound, bound_max);
    sl_partition_config_t cfg;
    tu_config_small(&cfg);
    cfg.messages_required_to_save = 1;
    cfg.enforce_fsync = fsync;
    cfg.creator = &f->creator.hook;
    cfg.bound = &f->bound;
    tu_part_init(&f->t, &cfg);
    assert_int_equal(sl_partition_purge(f->t.p), 0);
    assert_int_equal(f->creator.waits, 0);
    f->t.next_id = 0;
    return f;
}

static void fixture_close(fixture_t *f)
{
    tu_part_fini(&f->t);
    assert_null(f->creator.p);
    free(f);
}

static bool segment0_exists(const fixture_t *f)
{
    char path[PATH_MAX];
    tu_seg_path(&f->t, 0, ".log", path);
    return tu_exists(path);
}

static void test_batches_wait_for_the_files(void **state)
{
    (void)state;
    fixture_t *f = fixture_open(false, 0);
    tu_append(&f->t, 3, 50);
    assert_int_equal(f->creator.begun, 1);
    assert_true(sl_partition_creating(f->t.p));
    assert_int_equal(f->creator.start, 0);
    assert_false(segment0_exists(f));
    assert_int_equal(sl_partition_journal_messages(f->t.p), 3);
    tu_poll_all(&f->t, 2); /* served from memory */
    fake_complete(&f->creator);
    assert_false(sl_partition_creating(f->t.p));
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0); /* flushed by the completion */
    char path[PATH_MAX];
    tu_seg_path(&f->t, 0, ".log", path);
    assert_int_equal(tu_file_size(path), sl_partition_size(f->t.p));
    tu_append(&f->t, 2, 50); /* written at once now */
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0);
    assert_int_equal(f->creator.begun, 1);
    assert_int_equal(f->creator.waits, 0);
    fixture_close(f);

    /* The gate trips again while the creation is in flight: that append waits for it (one
     * gate's worth waits in memory at most) and is written; no second creation. */
    f = fixture_open(false, 0);
    tu_append(&f->t, 3, 50);
    assert_true(sl_partition_creating(f->t.p));
    tu_append(&f->t, 4, 50);
    assert_int_equal(f->creator.waits, 1);
    assert_int_equal(f->creator.begun, 1);
    assert_false(sl_partition_creating(f->t.p));
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0);
    tu_seg_path(&f->t, 0, ".log", path);
    assert_int_equal(tu_file_size(path), sl_partition_size(f->t.p));
    tu_reopen(&f->t);
    tu_poll_all(&f->t, 3);
    fixture_close(f);
}

static void test_refused_failed_and_fsync_create_here(void **state)
{
    (void)state;
    fixture_t *f = fixture_open(false, 0);
    f->creator.refuse = true;
    tu_append(&f->t, 3, 50);
    assert_int_equal(f->creator.begun, 0);
    assert_true(segment0_exists(f));
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0);
    fixture_close(f);

    f = fixture_open(false, 0);
    f->creator.fail = true;
    tu_append(&f->t, 3, 50);
    assert_false(segment0_exists(f));
    fake_complete(&f->creator); /* no files: the partition makes them itself and flushes */
    assert_true(segment0_exists(f));
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0);
    tu_reopen(&f->t);
    tu_poll_all(&f->t, 3);
    fixture_close(f);

    f = fixture_open(true, 0); /* enforce_fsync: the append waits for the files, made here */
    tu_append(&f->t, 3, 50);
    assert_int_equal(f->creator.begun, 0);
    assert_true(segment0_exists(f));
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0);
    fixture_close(f);
}

static void test_purge_close_and_bound_wait(void **state)
{
    (void)state;
    fixture_t *f = fixture_open(false, 0);
    tu_append(&f->t, 3, 50);
    assert_int_equal(sl_partition_purge(f->t.p), 0); /* completes the creation, then purges */
    assert_int_equal(f->creator.waits, 1);
    assert_false(segment0_exists(f));
    f->t.next_id = 0;
    tu_append(&f->t, 2, 50);
    assert_int_equal(f->creator.begun, 2);
    tu_close(&f->t); /* waits too: no creation outlives its partition */
    assert_int_equal(f->creator.waits, 2);
    assert_null(f->creator.p);
    tu_open(&f->t);
    tu_poll_all(&f->t, 1);
    fixture_close(f);

    /* The bound holds one batch: the second append must flush, and the journal that waits
     * for its files is flushed by completing its creation first. */
    size_t len;
    uint8_t *probe = tu_batch_make(0, 3, 50, &len);
    uint64_t one = malloc_usable_size(probe);
    free(probe);
    f = fixture_open(false, one + one / 2);
    tu_append(&f->t, 3, 50);
    assert_int_equal(f->creator.waits, 0);
    tu_append(&f->t, 3, 50);
    assert_int_equal(f->creator.waits, 1);
    assert_true(f->bound.held <= f->bound.max);
    assert_int_equal(sl_partition_journal_messages(f->t.p), 0);
    fixture_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_wait_for_the_files),
        cmocka_unit_test(test_refused_failed_and_fsync_create_here),
        cmocka_unit_test(test_purge_close_and_bound_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
