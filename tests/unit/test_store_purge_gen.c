/* src/store: purge.gen (storage.md 5). The 16-byte record and what reads as 0 (missing, torn,
 * longer, another incarnation); the atomic write and its faults (the old record survives); an
 * unreadable file refusing the partition; and sl_partition_purge_to: purge first, record
 * second, so a failure of either leaves a generation lower than the one asked for. */
#include <errno.h>

#include "testutil.h"

#include "store/purge_gen.h"
#include "tu_store.h"

#define REVISION 1700000000000123ull

static int setup(void **state)
{
    tu_part_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    sl_partition_config_t cfg;
    tu_config_small(&cfg);
    cfg.created_revision = REVISION;
    tu_part_init(t, &cfg);
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

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint64_t read_gen(const tu_part_t *t, uint64_t revision)
{
    uint64_t generation = UINT64_MAX;
    assert_int_equal(sl_purge_gen_read(t->dir, revision, &generation), 0);
    return generation;
}

static void test_record_codec(void **state)
{
    (void)state;
    uint8_t record[SL_PURGE_GEN_SIZE + 1];
    sl_purge_gen_encode(record, 0x0102030405060708ull, REVISION);
    /* [generation u64 LE][created_revision u64 LE] */
    assert_int_equal(record[0], 0x08);
    assert_int_equal(record[7], 0x01);
    assert_int_equal(sl_load_u64(record + 8), REVISION);
    assert_int_equal(sl_purge_gen_decode(sl_span(record, 16), REVISION), 0x0102030405060708ull);
    /* Another incarnation of the topic (a reused id): 0. */
    assert_int_equal(sl_purge_gen_decode(sl_span(record, 16), REVISION + 1), 0);
    /* Torn at every length, or longer than a record: 0. */
    for (size_t n = 0; n < 16; n++)
        assert_int_equal(sl_purge_gen_decode(sl_span(record, n), REVISION), 0);
    record[16] = 0;
    assert_int_equal(sl_purge_gen_decode(sl_span(record, 17), REVISION), 0);
}

static void test_file(void **state)
{
    tu_part_t *t = *state;
    char path[PATH_MAX], tmp[PATH_MAX];
    assert_true(tu_path(path, t->dir, SL_PURGE_GEN_FILE));
    assert_true(tu_path(tmp, t->dir, SL_PURGE_GEN_TMP));
    assert_false(tu_exists(path));
    assert_int_equal(read_gen(t, REVISION), 0); /* missing */
    assert_int_equal(sl_purge_gen_write(t->dir, 4, REVISION), 0);
    assert_int_equal(tu_file_size(path), SL_PURGE_GEN_SIZE);
    assert_false(tu_exists(tmp));
    assert_int_equal(read_gen(t, REVISION), 4);
    assert_int_equal(read_gen(t, REVISION - 1), 0);
    assert_int_equal(sl_purge_gen_write(t->dir, 9, REVISION), 0);
    assert_int_equal(read_gen(t, REVISION), 9);

    uint8_t record[SL_PURGE_GEN_SIZE];
    sl_purge_gen_encode(record, 9, REVISION);
    write_bytes(path, record, 11); /* torn */
    assert_int_equal(read_gen(t, REVISION), 0);
    uint8_t big[200] = {0};
    memcpy(big, record, sizeof(record));
    write_bytes(path, big, sizeof(big)); /* not a record */
    assert_int_equal(read_gen(t, REVISION), 0);

    /* A failed write leaves the old record and no scratch file. */
    assert_int_equal(sl_purge_gen_write(t->dir, 2, REVISION), 0);
    sl_io_fault_t plan = {
        .calls = SL_IO_BIT(SL_IO_RENAME), .path_contains = SL_PURGE_GEN_FILE, .error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_purge_gen_write(t->dir, 3, REVISION), -SL_ERR_CANNOT_WRITE_TO_FILE);
    plan = (sl_io_fault_t){.calls = SL_IO_MASK_WRITES,
                           .path_contains = SL_PURGE_GEN_TMP,
                           .error = ENOSPC,
                           .short_len = 5};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_purge_gen_write(t->dir, 3, REVISION), -SL_ERR_CANNOT_WRITE_TO_FILE);
    assert_true(plan.fired > 0);
    plan = (sl_io_fault_t){.calls = SL_IO_BIT(SL_IO_FSYNC_DIR), .error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_purge_gen_write(t->dir, 3, REVISION), -SL_ERR_CANNOT_SYNC_FILE);
    sl_io_fault_arm(NULL);
    assert_false(tu_exists(tmp));
    assert_int_equal(read_gen(t, REVISION), 3); /* renamed, only its durability is in doubt */

    /* A read that fails is an error, not a 0 that could purge acknowledged messages. */
    plan = (sl_io_fault_t){
        .calls = SL_IO_BIT(SL_IO_PREAD), .path_contains = SL_PURGE_GEN_FILE, .error = EIO};
    sl_io_fault_arm(&plan);
    uint64_t generation;
    assert_int_equal(sl_purge_gen_read(t->dir, REVISION, &generation), -SL_ERR_CANNOT_READ_FILE);
    tu_close(t);
    sl_partition_t *p = NULL;
    char err[512];
    assert_int_equal(sl_partition_open(t->dir, TU_PARTITION_ID, &t->cfg, 0, &p, err, sizeof(err)),
                     -SL_ERR_CANNOT_READ_FILE);
    assert_null(p);
    assert_non_null(strstr(err, SL_PURGE_GEN_FILE));
    sl_io_fault_arm(NULL);
    tu_open(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 3);
}

static void test_purge_to(void **state)
{
    tu_part_t *t = *state;
    assert_int_equal(sl_partition_purge_generation(t->p), 0);
    tu_append(t, 5, 100);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 2, true, false), 0);
    assert_int_equal(sl_partition_purge_to(t->p, 2), 0);
    assert_true(sl_partition_empty(t->p));
    assert_int_equal(sl_offsets_count(t->p), 0);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    t->next_id = 0;
    tu_append(t, 3, 100); /* offsets restart at 0 */
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_reopen(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    assert_int_equal(sl_partition_messages(t->p), 3);
    /* The same directory seen as another incarnation: generation 0. */
    tu_close(t);
    t->cfg.created_revision = REVISION + 1;
    tu_open(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 0);
    tu_close(t);
    t->cfg.created_revision = REVISION;
    tu_open(t);

    /* The purge fails (the oldest .log cannot go): no record, the data stays. */
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_UNLINK), .path_contains = ".log", .error = EIO};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_partition_purge_to(t->p, 3), -SL_ERR_CANNOT_DELETE_FILE);
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    assert_int_equal(sl_partition_messages(t->p), 3);
    tu_reopen(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);

    /* The purge works and its record is owed, not written: a crash before the partition's next
     * write finds the old generation on disk and an empty partition, so the boot's second purge
     * loses nothing. An empty partition's purge writes no file at all. */
    assert_int_equal(sl_partition_purge_to(t->p, 3), 0);
    assert_true(sl_partition_empty(t->p));
    char seg[PATH_MAX];
    tu_seg_path(t, 0, ".log", seg);
    assert_false(tu_exists(seg)); /* the new segment 0 comes with the next flush */
    tu_close(t); /* a crash: nothing written since */
    tu_open(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 2);
    assert_true(sl_partition_empty(t->p));
    assert_int_equal(sl_partition_purge_to(t->p, 3), 0);
    assert_int_equal(read_gen(t, REVISION), 2);
    /* The next write records the purge first: after it, a boot must not purge again. */
    t->next_id = 0;
    tu_append(t, 2, 100);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(read_gen(t, REVISION), 3);
    tu_reopen(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 3);
    assert_int_equal(sl_partition_messages(t->p), 2);
}

/* A partition created new (sl_partition_create) touches the disk only at its first write. */
static void test_create_lazy(void **state)
{
    tu_part_t *t = *state;
    tu_close(t);
    assert_int_equal(sl_store_remove_tree(t->dir), 0);
    assert_int_equal(sl_partition_create(t->dir, TU_PARTITION_ID, &t->cfg, &t->p), 0);
    assert_false(tu_exists(t->dir));
    assert_int_equal(sl_partition_purge_to(t->p, 4), 0); /* owed, still nothing on disk */
    assert_false(tu_exists(t->dir));
    tu_append(t, 3, 100);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_true(tu_exists(t->dir));
    assert_int_equal(read_gen(t, REVISION), 4);
    tu_reopen(t);
    assert_int_equal(sl_partition_purge_generation(t->p), 4);
    assert_int_equal(sl_partition_messages(t->p), 3);
    /* A consumer offset alone makes the directory too. */
    tu_close(t);
    assert_int_equal(sl_store_remove_tree(t->dir), 0);
    assert_int_equal(sl_partition_create(t->dir, TU_PARTITION_ID, &t->cfg, &t->p), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 1, 0, true, false), 0);
    assert_true(tu_exists(t->dir));
    assert_int_equal(sl_offsets_count(t->p), 1);
    /* Reopened, the partition is still empty: an offset past its end is
     * dropped (offsets.c, fit_to_end), the directory stays. */
    tu_reopen(t);
    assert_true(tu_exists(t->dir));
    assert_int_equal(sl_offsets_count(t->p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_codec),
        cmocka_unit_test_setup_teardown(test_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_to, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_lazy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
