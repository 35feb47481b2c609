/* src/store: boot recovery (storage.md 4) and read integrity (messages.md 4.3). Torn .log
 * tails at every byte, garbled tails, torn, garbled and missing indexes, an index pointing past
 * its log (refused), orphan and staging files swept, broken chains (refused), a recovered full
 * active segment, on-disk corruption caught by validate_checksum, and the same files whenever
 * the flushes came with an index entry per batch. */
#include "testutil.h"

#include "base/log.h"
#include "tu_store.h"

static int setup(void **state)
{
    sl_log_set_level(SL_LOG_ERROR); /* recovery warns on purpose here */
    tu_part_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    tu_part_init(t, NULL);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tu_part_t *t = *state;
    if (!t->p)
        tu_open(t);
    tu_part_fini(t);
    free(t);
    return 0;
}

static size_t batch_len(uint32_t count, size_t payload)
{
    return SL_BATCH_HEADER_SIZE + count * (SL_FRAME_HEADER_SIZE + payload);
}

/* Three batches, each in its own flush (one index entry each): offsets 0..4, 5..7, 8..11. */
static void three_flushes(tu_part_t *t)
{
    tu_append(t, 5, 40);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_append(t, 3, 40);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_append(t, 4, 30);
    assert_int_equal(sl_partition_flush(t->p), 0);
}

typedef struct saved {
    uint8_t *log;
    size_t log_len;
    uint8_t *index;
    size_t index_len;
    char log_path[PATH_MAX];
    char index_path[PATH_MAX];
} saved_t;

static void save_segment(tu_part_t *t, uint64_t start, saved_t *s)
{
    tu_seg_path(t, start, ".log", s->log_path);
    tu_seg_path(t, start, ".index", s->index_path);
    s->log = tu_read_file(s->log_path, &s->log_len);
    s->index = tu_read_file(s->index_path, &s->index_len);
}

static void saved_free(saved_t *s)
{
    free(s->log);
    free(s->index);
}

/* Restores the segment with its .log cut to log_len; opens, and checks that exactly `keep`
 * messages came back, the .log was cut to keep_bytes, and appending continues there. */
static void reopen_torn(tu_part_t *t, const saved_t *s, size_t log_len, uint64_t keep,
                        uint64_t keep_bytes)
{
    tu_write_file(s->log_path, s->log, log_len);
    tu_write_file(s->index_path, s->index, s->index_len);
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), keep);
    assert_int_equal(sl_partition_current_offset(t->p), keep - 1);
    assert_int_equal(tu_file_size(s->log_path), keep_bytes);
    t->next_id = keep;
    tu_poll_all(t, 100);
    tu_append(t, 2, 9); /* overwrites the torn bytes */
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(tu_file_size(s->log_path), keep_bytes + batch_len(2, 9));
    tu_poll_all(t, 100);
    tu_close(t);
}

static void test_torn_tail_every_byte(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    tu_close(t);
    saved_t s;
    save_segment(t, 0, &s);
    size_t last = batch_len(4, 30);
    assert_int_equal(s.log_len, batch_len(5, 40) + batch_len(3, 40) + last);
    assert_int_equal(s.index_len, 3 * SL_INDEX_ENTRY_SIZE);
    for (size_t k = 0; k < last; k++)
        reopen_torn(t, &s, s.log_len - last + k, 8, s.log_len - last);
    /* the whole log: nothing torn */
    reopen_torn(t, &s, s.log_len, 12, s.log_len);
    saved_free(&s);
}

/* The last flush wrote two batches: a tear in the second keeps the first. */
static void test_torn_tail_inside_a_flush(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 5, 40);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_append(t, 3, 40);
    tu_append(t, 4, 30);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_close(t);
    saved_t s;
    save_segment(t, 0, &s);
    assert_int_equal(s.index_len, 2 * SL_INDEX_ENTRY_SIZE);
    size_t last = batch_len(4, 30), second = batch_len(3, 40);
    for (size_t k = 0; k < last; k += 7)
        reopen_torn(t, &s, s.log_len - last + k, 8, s.log_len - last);
    /* a tear inside the second batch: its flush's entry points at a torn batch and goes */
    for (size_t k = 0; k < second; k += 11)
        reopen_torn(t, &s, s.log_len - last - second + k, 5, batch_len(5, 40));
    saved_free(&s);
}

static void test_garbled_tail(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    tu_close(t);
    saved_t s;
    save_segment(t, 0, &s);
    size_t last = batch_len(4, 30);
    /* a flipped payload byte in the last batch: it fails its checksums and is cut */
    s.log[s.log_len - 5] ^= 0x01;
    reopen_torn(t, &s, s.log_len, 8, s.log_len - last);
    s.log[s.log_len - 5] ^= 0x01;
    /* junk after the last batch */
    uint8_t *junk = malloc(s.log_len + 4096);
    assert_non_null(junk);
    memcpy(junk, s.log, s.log_len);
    memset(junk + s.log_len, 0xAB, 100);
    tu_write_file(s.index_path, s.index, s.index_len);
    tu_write_file(s.log_path, junk, s.log_len + 100);
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 12);
    assert_int_equal(tu_file_size(s.log_path), s.log_len);
    tu_close(t);
    /* zeros after the last batch (lost pages of a later write) */
    memset(junk + s.log_len, 0, 4096);
    tu_write_file(s.log_path, junk, s.log_len + 4096);
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 12);
    assert_int_equal(tu_file_size(s.log_path), s.log_len);
    t->next_id = 12;
    tu_poll_all(t, 5);
    free(junk);
    saved_free(&s);
}

/* After a repair the index is whole again and polls find every offset through it. */
static void expect_all_twelve(tu_part_t *t, const saved_t *s)
{
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 12);
    assert_int_equal(tu_file_size(s->log_path), s->log_len);
    /* rebuilt from a walk of the .log: one entry per MiB of it */
    assert_int_equal(tu_file_size(s->index_path), SL_INDEX_ENTRY_SIZE);
    t->next_id = 12;
    for (uint64_t at = 0; at < 12; at++) {
        sl_buf_t out;
        sl_buf_init(&out, 0);
        sl_partition_poll_result_t res;
        assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, at, 1, &out, &res), 1);
        assert_int_equal(res.first_offset, at);
        sl_buf_free(&out);
    }
    tu_close(t);
}

static void test_index_torn_garbled_missing(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    tu_close(t);
    saved_t s;
    save_segment(t, 0, &s);
    /* torn: not a whole number of entries */
    tu_truncate(s.index_path, s.index_len - 5);
    expect_all_twelve(t, &s);
    /* the last entry never written: a crash after the .log was synced and
     * before its index entry (the order of sl_segment_append) */
    tu_write_file(s.index_path, s.index, s.index_len);
    tu_truncate(s.index_path, s.index_len - SL_INDEX_ENTRY_SIZE);
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 12); /* walked from the entry before */
    assert_int_equal(tu_file_size(s.log_path), s.log_len);
    t->next_id = 12;
    tu_poll_all(t, 1);
    tu_append(t, 2, 10); /* and the segment takes appends after the walked end */
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_close(t);
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 14);
    tu_close(t);
    tu_write_file(s.log_path, s.log, s.log_len);
    /* the last entry names another offset than the batch it points at */
    uint8_t raw[8];
    sl_store_u64(raw, 9);
    tu_write_file(s.index_path, s.index, s.index_len);
    tu_patch(s.index_path, 2 * SL_INDEX_ENTRY_SIZE, raw, 8);
    expect_all_twelve(t, &s);
    /* the last entry points into the middle of a batch */
    tu_write_file(s.index_path, s.index, s.index_len);
    sl_store_u64(raw, sl_load_u64(s.index + 2 * SL_INDEX_ENTRY_SIZE + 16) + 8);
    tu_patch(s.index_path, 2 * SL_INDEX_ENTRY_SIZE + 16, raw, 8);
    expect_all_twelve(t, &s);
    /* missing, and empty */
    unlink(s.index_path);
    expect_all_twelve(t, &s);
    tu_truncate(s.index_path, 0);
    expect_all_twelve(t, &s);
    saved_free(&s);
    tu_open(t);
}

/* A garbled entry in the middle is not read at boot; a poll that lands on it walks the segment
 * from its start instead. */
static void test_index_garbled_middle_poll(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".index", path);
    uint8_t raw[8];
    sl_store_u64(raw, 3); /* entry 1 (offset 5) now points at byte 3 */
    tu_patch(path, SL_INDEX_ENTRY_SIZE + 16, raw, 8);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 6, 4, &out, &res), 4);
    assert_int_equal(res.first_offset, 6);
    assert_int_equal(res.read_error, 0);
    sl_buf_free(&out);
}

static void test_index_past_log_refused(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    tu_close(t);
    saved_t s;
    save_segment(t, 0, &s);
    uint8_t entry[SL_INDEX_ENTRY_SIZE];
    sl_store_u64(entry, 12);
    sl_store_u64(entry + 8, 99999);
    sl_store_u64(entry + 16, s.log_len + 1);
    tu_patch(s.index_path, s.index_len, entry, sizeof(entry));
    char err[512];
    sl_partition_t *p = NULL;
    int rc = sl_partition_open(t->dir, TU_PARTITION_ID, &t->cfg, 0, &p, err, sizeof(err));
    assert_int_equal(rc, -SL_ERR_CANNOT_READ_INDEX_POSITION);
    assert_true(sl_partition_refused(rc));
    assert_null(p);
    assert_non_null(strstr(err, "past the end"));
    /* the files are left as found */
    assert_int_equal(tu_file_size(s.log_path), s.log_len);
    assert_int_equal(tu_file_size(s.index_path), s.index_len + SL_INDEX_ENTRY_SIZE);
    /* an entry pointing exactly at the end is a flush whose batch never arrived: torn */
    sl_store_u64(entry + 16, s.log_len);
    tu_patch(s.index_path, s.index_len, entry, sizeof(entry));
    tu_open(t);
    assert_int_equal(sl_partition_messages(t->p), 12);
    assert_int_equal(tu_file_size(s.index_path), s.index_len);
    saved_free(&s);
}

static void test_sweep_orphans_and_staging(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    tu_close(t);
    char orphan[PATH_MAX], staging[PATH_MAX], staging2[PATH_MAX], other[PATH_MAX];
    tu_seg_path(t, 99999, ".index", orphan);
    tu_seg_path(t, 0, ".log.staging", staging);
    tu_seg_path(t, 12, ".index.staging", staging2);
    assert_true(tu_path(other, t->dir, "superblock.a"));
    tu_write_file(orphan, "x", 1);
    tu_write_file(staging, "yy", 2);
    tu_write_file(staging2, "zzz", 3);
    tu_write_file(other, "keep", 4);
    tu_open(t);
    assert_false(tu_exists(orphan));
    assert_false(tu_exists(staging));
    assert_false(tu_exists(staging2));
    assert_true(tu_exists(other));
    assert_int_equal(sl_partition_messages(t->p), 12);
}

static uint32_t fill_segments(tu_part_t *t, uint32_t batches)
{
    for (uint32_t i = 0; i < batches; i++)
        tu_append(t, 16, 4000);
    assert_int_equal(sl_partition_flush(t->p), 0);
    return sl_partition_segments(t->p);
}

static void expect_refused(tu_part_t *t, int code)
{
    char err[512];
    sl_partition_t *p = NULL;
    assert_int_equal(sl_partition_open(t->dir, TU_PARTITION_ID, &t->cfg, 0, &p, err, sizeof(err)),
                     code);
    assert_null(p);
}

static void rename_segment(tu_part_t *t, uint64_t from, uint64_t to)
{
    char a[PATH_MAX], b[PATH_MAX];
    tu_seg_path(t, from, ".log", a);
    tu_seg_path(t, to, ".log", b);
    assert_int_equal(rename(a, b), 0);
    tu_seg_path(t, from, ".index", a);
    tu_seg_path(t, to, ".index", b);
    assert_int_equal(rename(a, b), 0);
}

static void test_chain_refused(void **state)
{
    tu_part_t *t = *state;
    assert_true(fill_segments(t, 40) >= 3);
    sl_segment_info_t second;
    assert_true(sl_partition_segment_info(t->p, 1, &second));
    tu_close(t);
    /* a gap: the second segment starts 5 offsets late */
    rename_segment(t, second.start_offset, second.start_offset + 5);
    expect_refused(t, -SL_ERR_STATE_FILE_CORRUPTED);
    rename_segment(t, second.start_offset + 5, second.start_offset);
    /* a missing segment in the middle */
    char moved_log[PATH_MAX], moved_index[PATH_MAX], log[PATH_MAX], index[PATH_MAX];
    tu_seg_path(t, second.start_offset, ".log", log);
    tu_seg_path(t, second.start_offset, ".index", index);
    assert_true(tu_path(moved_log, t->root, "moved.log"));
    assert_true(tu_path(moved_index, t->root, "moved.index"));
    assert_int_equal(rename(log, moved_log), 0);
    assert_int_equal(rename(index, moved_index), 0);
    expect_refused(t, -SL_ERR_STATE_FILE_CORRUPTED);
    assert_int_equal(rename(moved_log, log), 0);
    assert_int_equal(rename(moved_index, index), 0);
    tu_open(t);
    tu_close(t);
    /* an empty segment that is not the last */
    tu_seg_path(t, 0, ".log", log);
    tu_seg_path(t, 0, ".index", index);
    size_t log_len, index_len;
    uint8_t *log_bytes = tu_read_file(log, &log_len);
    uint8_t *index_bytes = tu_read_file(index, &index_len);
    tu_truncate(log, 0);
    tu_truncate(index, 0);
    expect_refused(t, -SL_ERR_STATE_FILE_CORRUPTED);
    tu_write_file(log, log_bytes, log_len);
    tu_write_file(index, index_bytes, index_len);
    /* a valid batch that repeats offsets after the last one */
    tu_seg_path(t, second.start_offset, ".log", log);
    tu_patch(log, tu_file_size(log), log_bytes, batch_len(16, 4000));
    expect_refused(t, -SL_ERR_STATE_FILE_CORRUPTED);
    tu_truncate(log, second.size);
    tu_open(t);
    tu_poll_all(t, 1000);
    free(log_bytes);
    free(index_bytes);
}

static void test_multi_segment_reopen(void **state)
{
    tu_part_t *t = *state;
    uint32_t segments = fill_segments(t, 50);
    tu_append(t, 3, 100); /* journaled, flushed below into the active segment */
    assert_int_equal(sl_partition_flush(t->p), 0);
    sl_segment_info_t before[16];
    assert_true(segments < 16);
    for (uint32_t i = 0; i < segments; i++)
        assert_true(sl_partition_segment_info(t->p, i, &before[i]));
    tu_reopen(t);
    assert_int_equal(sl_partition_segments(t->p), segments);
    for (uint32_t i = 0; i < segments; i++) {
        sl_segment_info_t after;
        assert_true(sl_partition_segment_info(t->p, i, &after));
        assert_int_equal(after.start_offset, before[i].start_offset);
        assert_int_equal(after.messages, before[i].messages);
        assert_int_equal(after.size, before[i].size);
        assert_int_equal(after.end_timestamp, before[i].end_timestamp);
        assert_int_equal(after.sealed, before[i].sealed);
    }
    tu_poll_all(t, 333);
}

/* The bytes of every segment file of t, .log then .index per segment, with a 0xFF line between
 * files so that moving bytes across a boundary shows. */
static uint8_t *all_files(tu_part_t *t, size_t *len, bool index)
{
    sl_buf_t all;
    sl_buf_init(&all, 0);
    for (uint32_t i = 0; i < sl_partition_segments(t->p); i++) {
        sl_segment_info_t info;
        assert_true(sl_partition_segment_info(t->p, i, &info));
        char path[PATH_MAX];
        tu_seg_path(t, info.start_offset, index ? ".index" : ".log", path);
        size_t n;
        uint8_t *bytes = tu_read_file(path, &n);
        sl_put_bytes(&all, bytes, n);
        memset(sl_buf_extend(&all, 8), 0xFF, 8);
        free(bytes);
    }
    assert_true(sl_buf_ok(&all));
    *len = all.len;
    return all.data;
}

/* 40 batches of about 64 kB (3 segments of 1 MiB) into t, flushed after each append or only
 * at the end. */
static void fill_40(tu_part_t *t, bool flush_each)
{
    for (int b = 0; b < 40; b++) {
        tu_append(t, 16, 4000);
        if (flush_each)
            assert_int_equal(sl_partition_flush(t->p), 0);
    }
    assert_int_equal(sl_partition_flush(t->p), 0);
}

/* The same batches give the same files whenever the flushes came: the .log always (a segment
 * ends with the batch that takes it to segment_size), the .index with index_every_batch (a
 * cluster's replicas, server/cluster_partition.c), not without it (one entry per flush). */
static void test_every_batch_index_same_files(void **state)
{
    tu_part_t *t = *state;
    tu_part_t *u = calloc(1, sizeof(*u));
    tu_part_t *v = calloc(1, sizeof(*v));
    assert_non_null(u);
    assert_non_null(v);
    sl_partition_config_t cfg;
    tu_config_small(&cfg);
    cfg.index_every_batch = true;
    tu_close(t);
    t->cfg = cfg;
    tu_open(t);
    tu_part_init(u, &cfg);
    cfg.index_every_batch = false;
    tu_part_init(v, &cfg);
    fill_40(t, true);
    fill_40(u, false);
    fill_40(v, false);
    assert_int_equal(sl_partition_segments(t->p), 3);
    assert_int_equal(sl_partition_segments(u->p), 3);
    size_t tl, ul, vl;
    uint8_t *tb = all_files(t, &tl, false), *ub = all_files(u, &ul, false),
            *vb = all_files(v, &vl, false);
    assert_int_equal(tl, ul);
    assert_memory_equal(tb, ub, tl);
    assert_int_equal(tl, vl);
    assert_memory_equal(tb, vb, tl);
    free(tb);
    free(ub);
    free(vb);
    tb = all_files(t, &tl, true);
    ub = all_files(u, &ul, true);
    vb = all_files(v, &vl, true);
    assert_int_equal(tl, ul);
    assert_memory_equal(tb, ub, tl);
    assert_int_equal(tl, 40 * SL_INDEX_ENTRY_SIZE + 3 * 8);
    assert_true(vl < tl); /* one entry per flush: one per segment here */
    free(tb);
    free(ub);
    free(vb);
    /* A crash between a flush's .log write and its .index write: the entries of the last
     * batches are missing, and boot puts them back as every replica has them. */
    sl_segment_info_t last;
    assert_true(sl_partition_segment_info(u->p, 2, &last));
    char path[PATH_MAX];
    tu_seg_path(u, last.start_offset, ".index", path);
    ub = all_files(u, &ul, true);
    tu_close(u);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 2 * SL_INDEX_ENTRY_SIZE), 0);
    tu_open(u);
    uint8_t *again = all_files(u, &tl, true);
    assert_int_equal(tl, ul);
    assert_memory_equal(again, ub, ul);
    free(again);
    free(ub);
    tu_part_fini(u);
    tu_part_fini(v);
    free(u);
    free(v);
}

/* A crash between filling a segment and creating the next leaves a full active segment: it is
 * sealed before the next append goes anywhere. */
static void test_full_active_sealed_first(void **state)
{
    tu_part_t *t = *state;
    fill_segments(t, 17); /* exactly fills segment 0: the flush seals it */
    sl_segment_info_t first, active;
    assert_true(sl_partition_segment_info(t->p, 0, &first));
    assert_true(sl_partition_segment_info(t->p, 1, &active));
    assert_true(first.sealed);
    assert_int_equal(active.messages, 0);
    tu_close(t);
    char path[PATH_MAX];
    tu_seg_path(t, active.start_offset, ".log", path);
    unlink(path);
    tu_seg_path(t, active.start_offset, ".index", path);
    unlink(path);
    tu_open(t);
    assert_int_equal(sl_partition_segments(t->p), 1);
    tu_append(t, 1, 10);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(sl_partition_segments(t->p), 2);
    sl_segment_info_t now;
    assert_true(sl_partition_segment_info(t->p, 0, &now));
    assert_true(now.sealed);
    assert_int_equal(now.size, first.size);
    assert_true(sl_partition_segment_info(t->p, 1, &now));
    assert_int_equal(now.start_offset, active.start_offset);
    assert_int_equal(now.messages, 1);
}

static void test_validate_checksum_on_disk(void **state)
{
    tu_part_t *t = *state;
    three_flushes(t);
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".log", path);
    /* a payload byte of the second batch (offsets 5..7) changes on disk */
    tu_flip(path, batch_len(5, 40) + SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE + 3);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 100, &out, &res), 5);
    assert_int_equal(res.read_error, -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 6, 100, &out, &res), 0);
    assert_int_equal(res.read_error, -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 0, 100, &out, &res), 5);
    /* the third batch is reached through its own index entry */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 8, 100, &out, &res), 4);
    assert_int_equal(res.read_error, 0);
    /* without validation the layout is all that is checked: everything is served */
    sl_partition_config_t cfg = t->cfg;
    cfg.validate_checksum = false;
    sl_partition_reconfigure(t->p, &cfg);
    sl_buf_reset(&out);
    sl_partition_poll_t q = {SL_PARTITION_POLL_OFFSET, 0, 100};
    assert_int_equal(sl_partition_poll(t->p, &q, &out, &res), 0);
    assert_int_equal(res.messages, 12);
    assert_int_equal(res.read_error, 0);
    sl_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_torn_tail_every_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_inside_a_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbled_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_torn_garbled_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_garbled_middle_poll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_past_log_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_orphans_and_staging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_segment_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_active_sealed_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_batch_index_same_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_checksum_on_disk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
