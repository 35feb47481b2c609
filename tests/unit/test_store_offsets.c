/* src/store/offsets: consumer and group offsets (storage.md 5). Store, get, delete and reopen;
 * the 16-byte record; torn, legacy and corrupt files; never_backwards; fdatasync only when
 * asked; a failed store changes nothing; offsets past the recovered end repaired at open. */
#include "testutil.h"

#include <errno.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/xxh3.h"
#include "tu_store.h"

/* Offsets the tests store stay below this: an offset past the partition's last message is
 * repaired at open (test_past_the_end_at_open). */
#define MESSAGES 2000u

static int setup(void **state)
{
    sl_log_set_level(SL_LOG_ERROR);
    tu_part_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    tu_part_init(t, NULL);
    tu_append(t, MESSAGES / 2, 8);
    tu_append(t, MESSAGES / 2, 8);
    assert_int_equal(sl_partition_flush(t->p), 0);
    *state = t;
    return 0;
}

/* An empty partition: nothing on disk, nothing in memory. */
static int setup_empty(void **state)
{
    sl_log_set_level(SL_LOG_ERROR);
    tu_part_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    tu_part_init(t, NULL);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tu_part_t *t = *state;
    tu_part_fini(t);
    free(t);
    return 0;
}

/* The path of an offsets file, its directories made if they are not yet (a
 * partition makes them with its first stored offset). */
static void offset_path(const tu_part_t *t, const char *kind, const char *name, char out[PATH_MAX])
{
    int n = snprintf(out, PATH_MAX, "%s/offsets", t->dir);
    assert_true(n > 0 && n < PATH_MAX);
    assert_true(mkdir(out, 0755) == 0 || errno == EEXIST);
    n = snprintf(out, PATH_MAX, "%s/offsets/%s", t->dir, kind);
    assert_true(n > 0 && n < PATH_MAX);
    assert_true(mkdir(out, 0755) == 0 || errno == EEXIST);
    n = snprintf(out, PATH_MAX, "%s/offsets/%s/%s", t->dir, kind, name);
    assert_true(n > 0 && n < PATH_MAX);
}

static uint64_t get(tu_part_t *t, sl_offsets_kind_t kind, uint32_t id)
{
    uint64_t offset = 0;
    assert_int_equal(sl_offsets_get(t->p, kind, id, &offset), 0);
    return offset;
}

static void expect_missing(tu_part_t *t, sl_offsets_kind_t kind, uint32_t id)
{
    uint64_t offset;
    assert_int_equal(sl_offsets_get(t->p, kind, id, &offset), -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
}

static void test_record_codec(void **state)
{
    (void)state;
    uint8_t raw[SL_OFFSETS_RECORD_SIZE];
    sl_offsets_record_encode(raw, 0x0102030405060708ull);
    assert_int_equal(sl_load_u64(raw), 0x0102030405060708ull);
    assert_true(sl_load_u64(raw + 8) == sl_xxh3_64(raw, 8));
    uint64_t offset = 0;
    assert_int_equal(sl_offsets_record_decode(sl_span(raw, 16), &offset), SL_OFFSETS_RECORD_OK);
    assert_int_equal(offset, 0x0102030405060708ull);
    offset = 0;
    assert_int_equal(sl_offsets_record_decode(sl_span(raw, 8), &offset), SL_OFFSETS_RECORD_LEGACY);
    assert_int_equal(offset, 0x0102030405060708ull);
    for (size_t len = 0; len < 8; len++)
        assert_int_equal(sl_offsets_record_decode(sl_span(raw, len), &offset),
                         SL_OFFSETS_RECORD_TORN);
    for (size_t len = 9; len < 16; len++)
        assert_int_equal(sl_offsets_record_decode(sl_span(raw, len), &offset),
                         SL_OFFSETS_RECORD_CORRUPT);
    raw[3] ^= 1;
    assert_int_equal(sl_offsets_record_decode(sl_span(raw, 16), &offset),
                     SL_OFFSETS_RECORD_CORRUPT);
}

static void test_store_get_delete_reopen(void **state)
{
    tu_part_t *t = *state;
    expect_missing(t, SL_OFFSETS_CONSUMER, 7);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 7, 42, false, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 7, 99, true, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, UINT32_MAX, 1, false, false), 0);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 7), 42);
    assert_int_equal(get(t, SL_OFFSETS_GROUP, 7), 99);
    assert_int_equal(sl_offsets_count(t->p), 3);
    char path[PATH_MAX];
    offset_path(t, "consumers", "7", path);
    size_t len;
    uint8_t *bytes = tu_read_file(path, &len);
    uint8_t want[16];
    sl_offsets_record_encode(want, 42);
    assert_bytes_equal(bytes, len, want, sizeof(want));
    free(bytes);
    offset_path(t, "groups", "7", path);
    assert_int_equal(tu_file_size(path), 16);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 7, 3, false, false), 0);
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 7), 3);
    assert_int_equal(get(t, SL_OFFSETS_GROUP, 7), 99);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, UINT32_MAX), 1);
    /* listed in (kind, id) order */
    sl_offsets_kind_t kind;
    uint32_t id;
    uint64_t offset;
    assert_true(sl_offsets_at(t->p, 0, &kind, &id, &offset));
    assert_true(kind == SL_OFFSETS_CONSUMER && id == 7 && offset == 3);
    assert_true(sl_offsets_at(t->p, 1, &kind, &id, &offset));
    assert_true(kind == SL_OFFSETS_CONSUMER && id == UINT32_MAX && offset == 1);
    assert_true(sl_offsets_at(t->p, 2, &kind, &id, &offset));
    assert_true(kind == SL_OFFSETS_GROUP && id == 7 && offset == 99);
    assert_false(sl_offsets_at(t->p, 3, &kind, &id, &offset));
    /* delete */
    assert_int_equal(sl_offsets_delete(t->p, SL_OFFSETS_GROUP, 7), 0);
    assert_false(tu_exists(path));
    expect_missing(t, SL_OFFSETS_GROUP, 7);
    assert_int_equal(sl_offsets_delete(t->p, SL_OFFSETS_GROUP, 7),
                     -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
    assert_int_equal(sl_offsets_delete(t->p, SL_OFFSETS_GROUP, 8),
                     -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 7), 3);
    tu_reopen(t);
    expect_missing(t, SL_OFFSETS_GROUP, 7);
    assert_int_equal(sl_offsets_count(t->p), 2);
    /* bad kinds */
    assert_int_equal(sl_offsets_store(t->p, (sl_offsets_kind_t)3, 1, 1, false, false),
                     -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_offsets_delete(t->p, (sl_offsets_kind_t)0, 1), -SL_ERR_INVALID_COMMAND);
}

static void test_never_backwards(void **state)
{
    tu_part_t *t = *state;
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 10, false, true), 0);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 1), 10);
    /* an auto-commit below the stored value writes nothing */
    sl_io_fault_t plan = {.calls = SL_IO_MASK_ALL};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 5, false, true), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 10, false, true), 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(plan.seen, 0);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 1), 10);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 11, false, true), 0);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 1), 11);
    /* an explicit store may go back */
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 5, false, false), 0);
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 1), 5);
}

static void test_torn_legacy_corrupt_files(void **state)
{
    tu_part_t *t = *state;
    tu_close(t);
    char path[PATH_MAX];
    uint8_t raw[16];
    sl_offsets_record_encode(raw, 1234);
    offset_path(t, "consumers", "1", path);
    tu_write_file(path, raw, 5); /* torn */
    offset_path(t, "consumers", "2", path);
    tu_write_file(path, raw, 8); /* legacy */
    offset_path(t, "groups", "3", path);
    raw[15] ^= 1;
    tu_write_file(path, raw, 16); /* corrupt */
    offset_path(t, "groups", "4", path);
    tu_write_file(path, raw, 0); /* empty */
    offset_path(t, "groups", "007", path);
    tu_write_file(path, raw, 8); /* not a name the store writes */
    offset_path(t, "consumers", "x", path);
    tu_write_file(path, raw, 8);
    tu_open(t);
    expect_missing(t, SL_OFFSETS_CONSUMER, 1);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 2), 1234);
    expect_missing(t, SL_OFFSETS_GROUP, 3);
    expect_missing(t, SL_OFFSETS_GROUP, 4);
    expect_missing(t, SL_OFFSETS_GROUP, 7);
    assert_int_equal(sl_offsets_count(t->p), 1);
    /* a corrupt file is overwritten by the next store; a legacy one gets its checksum */
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 3, 77, false, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 2, 1235, false, true), 0);
    offset_path(t, "consumers", "2", path);
    assert_int_equal(tu_file_size(path), 16);
    /* a longer junk file is cut to the record */
    offset_path(t, "consumers", "9", path);
    uint8_t junk[40];
    memset(junk, 0x5A, sizeof(junk));
    tu_write_file(path, junk, sizeof(junk));
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 9, 1, false, false), 0);
    assert_int_equal(tu_file_size(path), 16);
    /* deleting an id whose file is torn removes the file and reports not found */
    offset_path(t, "consumers", "1", path);
    assert_int_equal(sl_offsets_delete(t->p, SL_OFFSETS_CONSUMER, 1),
                     -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
    assert_false(tu_exists(path));
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_GROUP, 3), 77);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 2), 1235);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 9), 1);
}

static void count_call(void *ctx, const sl_io_op_t *op)
{
    int *counts = ctx;
    counts[op->call]++;
}

static void test_fsync_follows_the_flag(void **state)
{
    tu_part_t *t = *state;
    int counts[SL_IO_CALL_COUNT] = {0};
    sl_io_fault_t plan = {.calls = SL_IO_MASK_ALL, .trace = count_call, .trace_ctx = counts};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 1, false, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 2, false, false), 0);
    assert_int_equal(counts[SL_IO_FDATASYNC] + counts[SL_IO_FSYNC_DIR], 0);
    assert_int_equal(counts[SL_IO_PWRITE], 2);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 5, 1, true, false), 0);
    assert_int_equal(counts[SL_IO_FDATASYNC], 1);
    /* The first durable write makes the partition's tree durable (8
     * directories, once), and a new file needs its name synced too. */
    assert_int_equal(counts[SL_IO_FSYNC_DIR], 8 + 1);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 5, 2, true, false), 0);
    assert_int_equal(counts[SL_IO_FDATASYNC], 2);
    assert_int_equal(counts[SL_IO_FSYNC_DIR], 9);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 6, 2, true, false), 0);
    assert_int_equal(counts[SL_IO_FSYNC_DIR], 10); /* only the new name now */
    sl_io_fault_arm(NULL);
}

static void test_failed_store_changes_nothing(void **state)
{
    tu_part_t *t = *state;
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 10, false, false), 0);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES, .error = ENOSPC};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 11, false, false),
                     -SL_ERR_CANNOT_WRITE_TO_FILE);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 6, 11, false, false),
                     -SL_ERR_CANNOT_WRITE_TO_FILE);
    sl_io_fault_arm(NULL);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 5), 10);
    expect_missing(t, SL_OFFSETS_CONSUMER, 6);
    sl_io_fault_t sync = {.calls = SL_IO_BIT(SL_IO_FDATASYNC), .error = EIO};
    sl_io_fault_arm(&sync);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 12, true, false),
                     -SL_ERR_CANNOT_SYNC_FILE);
    sl_io_fault_arm(NULL);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 5), 10);
    sl_io_fault_t open_plan = {.calls = SL_IO_BIT(SL_IO_OPEN), .error = EMFILE};
    sl_io_fault_arm(&open_plan);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 13, false, false),
                     -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE);
    sl_io_fault_t unlink_plan = {.calls = SL_IO_BIT(SL_IO_UNLINK), .error = EIO};
    sl_io_fault_arm(&unlink_plan);
    assert_int_equal(sl_offsets_delete(t->p, SL_OFFSETS_CONSUMER, 5),
                     -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE);
    sl_io_fault_arm(NULL);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 5), 10);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 5, 14, false, false), 0);
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 5), 14);
}

static void test_many_consumers(void **state)
{
    tu_part_t *t = *state;
    for (uint32_t i = 0; i < 300; i++) {
        uint32_t id = (i * 7919u) % 100003u; /* scattered ids, inserted out of order */
        assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, id, i, false, false), 0);
    }
    tu_reopen(t);
    assert_int_equal(sl_offsets_count(t->p), 300);
    for (uint32_t i = 0; i < 300; i++)
        assert_int_equal(get(t, SL_OFFSETS_CONSUMER, (i * 7919u) % 100003u), i);
}

/* Offsets stored past the end of what a partition recovers (the messages they covered were
 * only in memory, and closing without a flush drops them as a kill does) are set to the last
 * message, or dropped when none is left, in memory and in their files; offsets within the
 * partition stay as they are. */
static void test_past_the_end_at_open(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 20, 8); /* MESSAGES .. MESSAGES + 19, in memory only */
    uint64_t last = MESSAGES - 1;
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, last - 1, false, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 2, last, false, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 3, last + 1, false, true), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 3, last + 19, true, false), 0);
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 1), last - 1);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 2), last);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 3), last);
    assert_int_equal(get(t, SL_OFFSETS_GROUP, 3), last);
    /* The repair is in the files, not only in memory. */
    char path[PATH_MAX];
    uint8_t want[SL_OFFSETS_RECORD_SIZE];
    sl_offsets_record_encode(want, last);
    for (int k = 0; k < 2; k++) {
        offset_path(t, k ? "groups" : "consumers", "3", path);
        size_t len;
        uint8_t *bytes = tu_read_file(path, &len);
        assert_bytes_equal(bytes, len, want, sizeof(want));
        free(bytes);
    }
    /* New messages take the lost offsets; the consumers continue after `last`. */
    t->next_id = MESSAGES;
    tu_append(t, 30, 8);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 3), last);
    assert_int_equal(get(t, SL_OFFSETS_GROUP, 3), last);
}

static void test_past_the_end_of_nothing(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 5, 8); /* in memory only */
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 4, 0, false, true), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 4, 4, true, false), 0);
    tu_reopen(t);
    expect_missing(t, SL_OFFSETS_CONSUMER, 4);
    expect_missing(t, SL_OFFSETS_GROUP, 4);
    assert_int_equal(sl_offsets_count(t->p), 0);
    char path[PATH_MAX];
    offset_path(t, "consumers", "4", path);
    assert_false(tu_exists(path));
    offset_path(t, "groups", "4", path);
    assert_false(tu_exists(path));
    /* Messages at those offsets now and a reopen do not bring them back. */
    t->next_id = 0;
    tu_append(t, 10, 8);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_reopen(t);
    expect_missing(t, SL_OFFSETS_CONSUMER, 4);
    expect_missing(t, SL_OFFSETS_GROUP, 4);
}

/* The repair cannot be written: the partition opens anyway, serving the repaired value (the
 * old one comes back at the next open, which repairs it again if it is still past the end). */
static void test_past_the_end_repair_fails(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 5, 8);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 8, MESSAGES + 2, false, false), 0);
    tu_close(t);
    sl_io_fault_t plan = {.calls = SL_IO_MASK_WRITES, .error = EIO};
    sl_io_fault_arm(&plan);
    tu_open(t);
    sl_io_fault_arm(NULL);
    assert_true(plan.seen > 0);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 8), MESSAGES - 1);
    tu_reopen(t);
    assert_int_equal(get(t, SL_OFFSETS_CONSUMER, 8), MESSAGES - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_codec),
        cmocka_unit_test_setup_teardown(test_store_get_delete_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_never_backwards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_legacy_corrupt_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_follows_the_flag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_store_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_consumers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_past_the_end_at_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_past_the_end_of_nothing, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_past_the_end_repair_fails, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
