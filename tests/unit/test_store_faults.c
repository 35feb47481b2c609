/* src/store: injected I/O faults (base/io.h) on the write and read paths. A failed append is
 * not acknowledged, leaves no bytes behind, hands its offsets out again, and later appends work
 * once the fault is gone; a reopen shows exactly the acknowledged batches. */
#include "testutil.h"

#include <errno.h>

#include "base/log.h"
#include "tu_store.h"

static int setup(void **state)
{
    sl_log_set_level(SL_LOG_ERROR); /* the warnings of failed flushes are expected here */
    tu_part_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    sl_partition_config_t cfg;
    tu_config_small(&cfg);
    cfg.enforce_fsync = true;
    tu_part_init(t, &cfg);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tu_part_t *t = *state;
    sl_io_fault_arm(NULL);
    if (!t->p)
        tu_open(t);
    tu_part_fini(t);
    free(t);
    return 0;
}

static uint64_t log_size(const tu_part_t *t, uint64_t start)
{
    char path[PATH_MAX];
    tu_seg_path(t, start, ".log", path);
    return tu_file_size(path);
}

static uint64_t index_size(const tu_part_t *t, uint64_t start)
{
    char path[PATH_MAX];
    tu_seg_path(t, start, ".index", path);
    return tu_file_size(path);
}

/* The partition holds exactly next_id messages, on disk, and so does a reopen of it. */
static void expect_acknowledged(tu_part_t *t)
{
    assert_int_equal(sl_partition_messages(t->p), t->next_id);
    assert_int_equal(sl_partition_current_offset(t->p), t->next_id - 1);
    tu_poll_all(t, 7);
    tu_reopen(t);
    assert_int_equal(sl_partition_messages(t->p), t->next_id);
    tu_poll_all(t, 7);
}

/* Runs a failing append under plan and checks it left nothing: same offsets, same file sizes;
 * then the same append succeeds once the plan is gone. */
static void fail_then_recover(tu_part_t *t, sl_io_fault_t *plan, int error)
{
    uint64_t log_before = log_size(t, 0), index_before = index_size(t, 0);
    uint64_t next = t->next_id;
    sl_io_fault_arm(plan);
    assert_int_equal(tu_try_append(t, 4, 50), error);
    assert_true(plan->fired >= 1);
    sl_io_fault_arm(NULL);
    assert_int_equal(t->next_id, next);
    assert_int_equal(sl_partition_current_offset(t->p), next - 1);
    assert_int_equal(sl_partition_journal_messages(t->p), 0);
    assert_int_equal(log_size(t, 0), log_before);
    assert_int_equal(index_size(t, 0), index_before);
    tu_append(t, 4, 50); /* gets the same offsets */
    assert_int_equal(log_size(t, 0), log_before + SL_BATCH_HEADER_SIZE + 4 * (48 + 50));
    expect_acknowledged(t);
}

static void test_enospc_on_writev(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 3, 50);
    tu_append(t, 2, 50);
    sl_io_fault_t plan = {
        .calls = SL_IO_BIT(SL_IO_PWRITEV), .path_contains = ".log", .error = ENOSPC};
    fail_then_recover(t, &plan, -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    /* a full disk stays full: every append fails until it is not */
    sl_io_fault_arm(&plan);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tu_try_append(t, 1, 5), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    sl_io_fault_arm(NULL);
    tu_append(t, 1, 5);
    expect_acknowledged(t);
}

static void test_torn_write_then_enospc(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 3, 50);
    sl_io_fault_t plan = {
        .calls = SL_IO_MASK_WRITES, .path_contains = ".log", .error = ENOSPC, .short_len = 100};
    fail_then_recover(t, &plan, -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
}

static void test_eio_on_fdatasync(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 2, 10);
    sl_io_fault_t plan = {
        .calls = SL_IO_BIT(SL_IO_FDATASYNC), .path_contains = ".log", .error = EIO, .count = 1};
    fail_then_recover(t, &plan, -SL_ERR_CANNOT_SYNC_FILE);
    /* The .index is not synced per write (it is synced at seal), so a sync
     * failure on it cannot fail an append. */
    sl_io_fault_t index_plan = {
        .calls = SL_IO_BIT(SL_IO_FDATASYNC), .path_contains = ".index", .error = EIO};
    sl_io_fault_arm(&index_plan);
    tu_append(t, 3, 20);
    sl_io_fault_arm(NULL);
    assert_int_equal(index_plan.fired, 0);
    expect_acknowledged(t);
}

static void test_index_write_fails(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 2, 10);
    sl_io_fault_t plan = {
        .calls = SL_IO_MASK_WRITES, .path_contains = ".index", .error = EIO, .count = 1};
    fail_then_recover(t, &plan, -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT);
}

/* The write tears and cutting it off fails too: no byte is written until the cut succeeds. */
static void test_cut_fails_too(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 2, 10);
    uint64_t before = log_size(t, 0);
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_PWRITEV) | SL_IO_BIT(SL_IO_FTRUNCATE),
                          .path_contains = "/00000000000000000000.",
                          .error = EIO,
                          .short_len = 100};
    sl_io_fault_arm(&plan);
    assert_int_equal(tu_try_append(t, 4, 50), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    assert_int_equal(log_size(t, 0), before + 100); /* the torn bytes stay for now */
    assert_int_equal(tu_try_append(t, 4, 50), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    assert_int_equal(log_size(t, 0), before + 100);
    sl_io_fault_arm(NULL);
    tu_append(t, 4, 50);
    assert_int_equal(log_size(t, 0), before + SL_BATCH_HEADER_SIZE + 4 * (48 + 50));
    expect_acknowledged(t);
}

/* Without enforce_fsync, batches under the flush thresholds are acknowledged from memory; a
 * failed flush fails only the append that tripped the gate and keeps the others journaled. */
static void test_flush_failure_keeps_journal(void **state)
{
    tu_part_t *t = *state;
    t->cfg.enforce_fsync = false;
    t->cfg.messages_required_to_save = 6;
    tu_reopen(t);
    tu_append(t, 2, 10);
    tu_append(t, 2, 10); /* 4 + another 2 would not pass 6: stays journaled */
    assert_int_equal(sl_partition_journal_messages(t->p), 4);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES, .path_contains = ".log", .error = ENOSPC};
    sl_io_fault_arm(&plan);
    assert_int_equal(tu_try_append(t, 2, 10), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    assert_int_equal(tu_try_append(t, 2, 10), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_partition_journal_messages(t->p), 4);
    assert_int_equal(sl_partition_current_offset(t->p), 3);
    assert_int_equal(log_size(t, 0), 0);
    tu_poll_all(t, 2); /* still served from memory */
    tu_append(t, 2, 10);
    assert_int_equal(sl_partition_journal_messages(t->p), 0);
    expect_acknowledged(t);
}

static void test_rotation_failure(void **state)
{
    tu_part_t *t = *state;
    for (int i = 0; i < 16; i++)
        tu_append(t, 16, 4000);
    /* the 17th batch fills segment 0; creating segment 272 fails */
    sl_io_fault_t plan = {
        .calls = SL_IO_BIT(SL_IO_OPEN), .path_contains = "00000000000000000272.", .error = EIO};
    sl_io_fault_arm(&plan);
    tu_append(t, 16, 4000); /* on disk: the rotation is only retried later */
    assert_int_equal(sl_partition_segments(t->p), 1);
    assert_int_equal(tu_try_append(t, 1, 10), -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE);
    sl_io_fault_arm(NULL);
    tu_append(t, 1, 10);
    assert_int_equal(sl_partition_segments(t->p), 2);
    sl_segment_info_t info;
    assert_true(sl_partition_segment_info(t->p, 1, &info));
    assert_int_equal(info.start_offset, 272);
    assert_int_equal(info.messages, 1);
    expect_acknowledged(t);
}

static void test_read_faults(void **state)
{
    tu_part_t *t = *state;
    t->cfg.enforce_fsync = false;
    tu_reopen(t);
    for (int i = 0; i < 8; i++)
        tu_append(t, 16, 4000);
    assert_int_equal(sl_partition_flush(t->p), 0);
    /* the first batch's header and the first 256 KiB chunk of the .log read, the next
     * header's read fails: 4 batches are served */
    sl_io_fault_t plan = {
        .calls = SL_IO_BIT(SL_IO_PREAD), .path_contains = ".log", .error = EIO, .after = 2};
    sl_io_fault_arm(&plan);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 1000, &out, &res), 64);
    assert_int_equal(res.read_error, -SL_ERR_CANNOT_READ_FILE);
    sl_buf_free(&out);
    /* recovery that cannot read fails the open, and works again afterwards */
    tu_close(t);
    plan.after = 0;
    sl_io_fault_arm(&plan);
    char err[512];
    sl_partition_t *p = NULL;
    int rc = sl_partition_open(t->dir, TU_PARTITION_ID, &t->cfg, 0, &p, err, sizeof(err));
    assert_int_equal(rc, -SL_ERR_CANNOT_READ_FILE);
    assert_false(sl_partition_refused(rc));
    assert_null(p);
    sl_io_fault_arm(NULL);
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 128);
}

static void test_directory_faults(void **state)
{
    tu_part_t *t = *state;
    char dir[PATH_MAX];
    assert_true(tu_path(dir, t->root, "streams/9/topics/0/partitions/0"));
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_MKDIR), .error = EACCES};
    sl_io_fault_arm(&plan);
    char err[512];
    sl_partition_t *p = NULL;
    assert_int_equal(sl_partition_open(dir, 0, &t->cfg, 0, &p, err, sizeof(err)),
                     -SL_ERR_CANNOT_CREATE_PARTITION_DIRECTORY);
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_partition_open(dir, 0, &t->cfg, 0, &p, err, sizeof(err)), 0);
    sl_partition_close(p);
    assert_int_equal(sl_partition_remove(dir), 0);
    assert_false(tu_exists(dir));
    assert_int_equal(sl_partition_remove(dir), 0); /* already gone */
}

/* A partition's first segment creates its directory with one mkdir once its topic has another
 * partition directory (leaf first); the first partition of a topic creates the missing parents
 * too, and unusual spellings of the path ("//", a trailing "/") still come out whole. */
static void test_first_segment_mkdirs(void **state)
{
    tu_part_t *t = *state;
    char home[PATH_MAX];
    memcpy(home, t->dir, sizeof(home));
    tu_close(t);
    static const char *const names[] = {"streams/9/topics/0/partitions/0",
                                        "streams/9/topics/0/partitions/1",
                                        "streams/9//topics/1/partitions/0/"};
    uint64_t mkdirs[3];
    for (int i = 0; i < 3; i++) {
        assert_true(tu_path(t->dir, t->root, names[i]));
        assert_false(tu_exists(t->dir));
        assert_int_equal(sl_partition_create(t->dir, TU_PARTITION_ID, &t->cfg, &t->p), 0);
        sl_io_fault_t count = {.calls = SL_IO_BIT(SL_IO_MKDIR)};
        sl_io_fault_arm(&count);
        t->next_id = 0;
        tu_append(t, 2, 40);
        assert_int_equal(sl_partition_flush(t->p), 0);
        sl_io_fault_arm(NULL);
        mkdirs[i] = count.seen;
        tu_reopen(t);
        assert_int_equal(sl_partition_messages(t->p), 2);
        tu_close(t);
        assert_int_equal(sl_partition_remove(t->dir), 0);
    }
    /* Up from partitions/0 until streams/9 is made (streams/ is there), then back down: 5 + 4. */
    assert_int_equal(mkdirs[0], 9);
    assert_int_equal(mkdirs[1], 1); /* was one per component of the whole path */
    assert_int_equal(mkdirs[2], 7); /* up until topics/1 is made, then partitions, 0 and 0/ */
    memcpy(t->dir, home, sizeof(home));
    tu_open(t);
}

/* A purge on a full disk of a partition that had nothing to free: purge.gen cannot be written.
 * The purge still counts, the partition serves (empty), and the record is owed: every write
 * (messages, consumer offsets) fails until it can be written first, so no byte lands that a
 * boot would purge; once there is room the next write records it and goes on. */
static void test_purge_record_owed_on_a_full_disk(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 3, 40);
    assert_int_equal(sl_partition_purge_to(t->p, 1), 0);
    t->next_id = 0;
    tu_append(t, 1, 40); /* records generation 1 first: room enough */
    assert_int_equal(sl_partition_flush(t->p), 0);
    t->next_id = 0;
    /* Every new block is refused from here on: a full disk. */
    sl_io_fault_t full = {.calls = SL_IO_MASK_WRITES, .error = ENOSPC};
    sl_io_fault_arm(&full);
    assert_int_equal(sl_partition_purge_to(t->p, 2), 0);
    assert_true(sl_partition_empty(t->p));
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    assert_int_equal(tu_try_append(t, 2, 40), -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
    assert_true(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 0, true, false) < 0);
    /* Only the record's own files were tried: no message byte before it. */
    assert_int_equal(log_size(t, 0), 0);
    sl_io_fault_arm(NULL);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/purge.gen", t->dir);
    assert_int_equal(tu_file_size(path), 16);
    tu_append(t, 2, 40); /* writes the record first */
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 1, true, false), 0);
    tu_reopen(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    assert_int_equal(sl_partition_messages(t->p), 2);
    tu_poll_all(t, 7);
    /* A crash while the record is owed: the boot sees generation 2 < 3 and purges again,
     * which loses nothing, since nothing was written. */
    sl_io_fault_arm(&full);
    assert_int_equal(sl_partition_purge_to(t->p, 3), 0);
    sl_io_fault_arm(NULL);
    tu_reopen(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    assert_true(sl_partition_empty(t->p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_enospc_on_writev, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_write_then_enospc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eio_on_fdatasync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_write_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_fails_too, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_failure_keeps_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_segment_mkdirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_record_owed_on_a_full_disk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
