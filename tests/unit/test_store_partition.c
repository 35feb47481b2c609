/* src/store: the partition's write and read paths. Round trips byte for byte from the journal,
 * from disk and after a reopen; offsets across many appends and rotations; polls by offset
 * (inside batches: sliced records), by timestamp, First/Last, count limits and past the end;
 * large records read from disk straight into the output; group commit, zero-copy ownership, segment
 * deletion, retention and purge; removal of whole directory trees. */
#include "testutil.h"

#include "tu_store.h"

static int setup(void **state)
{
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

/* Appends a batch, keeping a copy of the record as the partition must store it. */
static void append_keep(tu_part_t *t, uint32_t count, size_t payload_len, sl_buf_t *expected)
{
    size_t len;
    uint8_t *frame = tu_batch_make(t->next_id, count, payload_len, &len);
    size_t at = expected->len;
    sl_put_bytes(expected, frame + TU_FRAME_PREFIX, len);
    uint64_t timestamp = t->clock += 10, base;
    assert_int_equal(
        sl_partition_append(t->p, frame, frame + TU_FRAME_PREFIX, len, timestamp, &base), 0);
    assert_int_equal(base, t->next_id);
    sl_batch_stamp(expected->data + at, len, TU_PARTITION_ID, base, timestamp);
    t->next_id += count;
}

static void poll_equals(tu_part_t *t, const sl_buf_t *expected)
{
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 1000, &out, &res), t->next_id);
    assert_bytes_equal(out.data, out.len, expected->data, expected->len);
    assert_int_equal(res.current_offset, t->next_id - 1);
    assert_false(res.empty);
    assert_int_equal(res.read_error, 0);
    sl_buf_free(&out);
}

static void test_round_trip_byte_for_byte(void **state)
{
    tu_part_t *t = *state;
    sl_buf_t expected;
    sl_buf_init(&expected, 0);
    append_keep(t, 3, 100, &expected);
    append_keep(t, 1, 0, &expected);
    append_keep(t, 5, 333, &expected);
    assert_int_equal(sl_partition_journal_messages(t->p), 9);
    poll_equals(t, &expected); /* from the journal */
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(sl_partition_journal_messages(t->p), 0);
    assert_int_equal(sl_partition_messages(t->p), 9);
    assert_int_equal(sl_partition_size(t->p), expected.len);
    poll_equals(t, &expected); /* from disk */
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".log", path);
    size_t len;
    uint8_t *log = tu_read_file(path, &len);
    assert_bytes_equal(log, len, expected.data, expected.len); /* the .log is the records */
    free(log);
    tu_seg_path(t, 0, ".index", path);
    assert_int_equal(tu_file_size(path), SL_INDEX_ENTRY_SIZE); /* one flush, one entry */
    tu_reopen(t);
    poll_equals(t, &expected);
    assert_int_equal(sl_partition_current_offset(t->p), 8);
    sl_buf_free(&expected);
}

/* The flush gate counts whole batches: a batch is written with its own append when one more
 * like it would take the journal past a threshold, bytes or messages; one that leaves room for
 * another like it stays in memory. */
static void test_gate_counts_whole_batches(void **state)
{
    tu_part_t *t = *state;
    t->cfg.size_of_messages_required_to_save = 10000;
    t->cfg.messages_required_to_save = 100;
    tu_reopen(t);
    const uint64_t record = SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE + 4000; /* 4304 */
    tu_append(t, 1, 4000); /* 4304 + 4304 <= 10000: room for another */
    assert_int_equal(sl_partition_journal_bytes(t->p), record);
    tu_append(t, 1, 4000); /* 8608 + 4304 > 10000: written now, not at the next append */
    assert_int_equal(sl_partition_journal_bytes(t->p), 0);
    assert_int_equal(sl_partition_size(t->p), 2 * record);
    tu_append(t, 1, 6000); /* alone more than half the gate: written at once */
    assert_int_equal(sl_partition_journal_bytes(t->p), 0);
    for (int i = 0; i < 2; i++) {
        tu_append(t, 30, 1); /* 30 + 30, then 60 + 30 messages: within 100 */
        assert_int_equal(sl_partition_journal_messages(t->p), 30u * (i + 1));
    }
    tu_append(t, 30, 1); /* 90 + 30 > 100 */
    assert_int_equal(sl_partition_journal_messages(t->p), 0);
    tu_reopen(t);
    tu_poll_all(t, 7);
}

static void test_offsets_across_rotations(void **state)
{
    tu_part_t *t = *state;
    t->cfg.messages_required_to_save = 40; /* a flush every few batches */
    tu_reopen(t);
    const uint32_t batches = 100, per_batch = 16;
    const size_t payload = 4000; /* about 64 KiB per batch */
    for (uint32_t i = 0; i < batches; i++)
        tu_append(t, per_batch, payload);
    assert_int_equal(sl_partition_flush(t->p), 0);
    uint32_t segments = sl_partition_segments(t->p);
    assert_true(segments >= 6);
    uint64_t batch_len = SL_BATCH_HEADER_SIZE + per_batch * (SL_FRAME_HEADER_SIZE + payload);
    uint64_t next = 0;
    for (uint32_t i = 0; i < segments; i++) {
        sl_segment_info_t info;
        assert_true(sl_partition_segment_info(t->p, i, &info));
        assert_int_equal(info.start_offset, next);
        assert_int_equal(info.sealed, i + 1 < segments);
        if (info.sealed) {
            assert_true(info.size >= t->cfg.segment_size);
            assert_true(info.size < t->cfg.segment_size + batch_len);
        }
        next += info.messages;
    }
    assert_int_equal(next, batches * per_batch);
    assert_int_equal(sl_partition_messages(t->p), next);
    tu_poll_all(t, 37);
    tu_poll_all(t, 1000);
    tu_reopen(t);
    assert_int_equal(sl_partition_segments(t->p), segments);
    assert_int_equal(sl_partition_current_offset(t->p), next - 1);
    tu_poll_all(t, 53);
    tu_append(t, 2, 10); /* continues after the reopen */
    tu_poll_all(t, 500);
}

/* Polls inside batches: sliced records keep valid checksums and unrenumbered frames. */
static void check_slices(tu_part_t *t)
{
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 3, 4, &out, &res), 4);
    assert_int_equal(res.first_offset, 3);
    assert_int_equal(out.len, SL_BATCH_HEADER_SIZE + 4 * (SL_FRAME_HEADER_SIZE + 20));
    assert_int_equal(sl_load_u64(out.data + SL_BATCH_OFF_BASE_OFFSET), 0);
    assert_int_equal(sl_load_u32(out.data + SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_OFFSET_DELTA), 3);
    /* 7..16: the tail of batch 0 and the head of batch 1, two sliced records */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 7, 10, &out, &res), 10);
    sl_record_iter_t it = sl_record_iter(sl_buf_span(&out));
    sl_span_t record;
    uint32_t records = 0;
    while (sl_record_next(&it, &record))
        records++;
    assert_int_equal(records, 2);
    /* a whole batch is the stored record (offset 10 count 10) */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 10, 10, &out, &res), 10);
    assert_int_equal(out.len, SL_BATCH_HEADER_SIZE + 10 * (SL_FRAME_HEADER_SIZE + 20));
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 19, 10, &out, &res), 1);
    sl_buf_free(&out);
}

static void test_poll_inside_batches(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 10, 20);
    tu_append(t, 10, 20);
    check_slices(t);
    assert_int_equal(sl_partition_flush(t->p), 0);
    check_slices(t);
    tu_reopen(t);
    check_slices(t);
}

static void check_timestamps(tu_part_t *t)
{
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 0, 100, &out, &res), 9);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 150, 100, &out, &res), 6);
    assert_int_equal(res.first_offset, 3);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 200, 100, &out, &res), 6);
    assert_int_equal(res.first_offset, 3);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 201, 100, &out, &res), 3);
    assert_int_equal(res.first_offset, 6);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 301, 100, &out, &res), 0);
    assert_int_equal(out.len, 0);
    /* a count limit serves the first frames of the first matching batch */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 150, 2, &out, &res), 2);
    assert_int_equal(res.first_offset, 3);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 150, 4, &out, &res), 4);
    assert_int_equal(res.last_offset, 6);
    sl_buf_free(&out);
}

static void test_poll_by_timestamp(void **state)
{
    tu_part_t *t = *state;
    assert_int_equal(tu_try_append_at(t, 3, 8, 100), 0);
    assert_int_equal(tu_try_append_at(t, 3, 8, 200), 0);
    assert_int_equal(tu_try_append_at(t, 3, 8, 300), 0);
    check_timestamps(t);
    assert_int_equal(sl_partition_flush(t->p), 0);
    check_timestamps(t);
    tu_reopen(t);
    check_timestamps(t);
    /* a clock going back never stamps an older time */
    assert_int_equal(tu_try_append_at(t, 1, 8, 50), 0);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 300, 100, &out, &res), 4);
    assert_int_equal(sl_load_u64(out.data + out.len - SL_BATCH_HEADER_SIZE -
                                 (SL_FRAME_HEADER_SIZE + 8) + SL_BATCH_OFF_BASE_TIMESTAMP),
                     300);
    sl_buf_free(&out);
}

static void test_first_last_and_limits(void **state)
{
    tu_part_t *t = *state;
    for (int i = 0; i < 4; i++)
        tu_append(t, 5, 16);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_append(t, 5, 16); /* 20..24 in the journal */
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    /* First: offset 0 */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 7, &out, &res), 7);
    assert_int_equal(res.first_offset, 0);
    /* Last with count 3: current - (count - 1) */
    uint64_t current = sl_partition_current_offset(t->p);
    assert_int_equal(current, 24);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, current - 2, 3, &out, &res), 3);
    assert_int_equal(res.first_offset, 22);
    assert_int_equal(res.last_offset, 24);
    /* across disk and journal */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 17, 6, &out, &res), 6);
    assert_int_equal(res.last_offset, 22);
    /* count 0, and more than there is */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 0, &out, &res), 0);
    assert_int_equal(res.current_offset, 24);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 1000, &out, &res), 25);
    /* past the end */
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 25, 10, &out, &res), 0);
    assert_int_equal(res.current_offset, 24);
    assert_false(res.empty);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, UINT64_MAX, 10, &out, &res), 0);
    /* an unknown kind */
    sl_partition_poll_t q = {(sl_partition_poll_kind_t)9, 0, 1};
    assert_int_equal(sl_partition_poll(t->p, &q, &out, &res), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&out);
}

static void test_empty_partition(void **state)
{
    tu_part_t *t = *state;
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 10, &out, &res), 0);
    assert_true(res.empty);
    assert_int_equal(res.current_offset, 0);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_TIMESTAMP, 0, 10, &out, &res), 0);
    assert_true(sl_partition_empty(t->p));
    assert_int_equal(sl_partition_segments(t->p), 1);
    assert_int_equal(sl_partition_messages(t->p), 0);
    assert_int_equal(sl_partition_size(t->p), 0);
    /* No file yet: the first segment comes with the first flush, so a new
     * topic's many partitions are opened without creating files. */
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".log", path);
    assert_false(tu_exists(path));
    tu_append(t, 1, 1);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_true(tu_exists(path));
    assert_int_equal(sl_partition_segments(t->p), 1);
    assert_false(sl_partition_empty(t->p));
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 10, &out, &res), 1);
    assert_int_equal(res.current_offset, 0);
    assert_false(res.empty);
    sl_buf_free(&out);
}

/* The same polls give the same bytes whether served from the journal or from disk. */
static void test_journal_and_disk_identical(void **state)
{
    tu_part_t *t = *state;
    for (uint32_t i = 0; i < 12; i++)
        tu_append(t, 1 + i % 5, 10 + 17 * i);
    const uint64_t starts[] = {0, 1, 2, 5, 9, 13, 20, 27, 29};
    const uint32_t counts[] = {1, 2, 3, 7, 100};
    sl_buf_t before[SL_ARRAY_LEN(starts)][SL_ARRAY_LEN(counts)];
    sl_partition_poll_result_t res;
    for (size_t i = 0; i < SL_ARRAY_LEN(starts); i++)
        for (size_t j = 0; j < SL_ARRAY_LEN(counts); j++) {
            sl_buf_init(&before[i][j], 0);
            tu_poll(t, SL_PARTITION_POLL_OFFSET, starts[i], counts[j], &before[i][j], &res);
        }
    assert_int_equal(sl_partition_flush(t->p), 0);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    for (size_t i = 0; i < SL_ARRAY_LEN(starts); i++)
        for (size_t j = 0; j < SL_ARRAY_LEN(counts); j++) {
            tu_poll(t, SL_PARTITION_POLL_OFFSET, starts[i], counts[j], &out, &res);
            assert_bytes_equal(out.data, out.len, before[i][j].data, before[i][j].len);
            sl_buf_free(&before[i][j]);
        }
    sl_buf_free(&out);
}

/* A poll never appends a record that does not fit in out. */
static void test_poll_out_limit(void **state)
{
    tu_part_t *t = *state;
    tu_append(t, 2, 100);
    tu_append(t, 2, 100);
    size_t record = SL_BATCH_HEADER_SIZE + 2 * (SL_FRAME_HEADER_SIZE + 100);
    sl_buf_t out;
    sl_buf_init(&out, record + 10);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 10, &out, &res), 2);
    assert_true(res.out_full);
    assert_int_equal(out.len, record);
    sl_buf_free(&out);
}

typedef struct read_bytes {
    uint64_t total;
} read_bytes_t;

static void sum_reads(void *ctx, const sl_io_op_t *op)
{
    ((read_bytes_t *)ctx)->total += op->len;
}

/* A poll that starts late in a long flush reads the headers of the batches before its start,
 * not their frames. */
static void test_poll_skips_frames_before_start(void **state)
{
    tu_part_t *t = *state;
    t->cfg.segment_size = 16u * 1024u * 1024u;
    t->cfg.batch_max = 2u * 1024u * 1024u;
    tu_reopen(t);
    for (int i = 0; i < 6; i++)
        tu_append(t, 4, 250000); /* about 1 MB per batch, all in one flush */
    assert_int_equal(sl_partition_flush(t->p), 0);
    read_bytes_t bytes = {0};
    sl_io_fault_t plan = {.calls = SL_IO_BIT(SL_IO_PREAD),
                          .path_contains = ".log",
                          .trace = sum_reads,
                          .trace_ctx = &bytes};
    sl_io_fault_arm(&plan);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 21, 1, &out, &res), 1);
    sl_io_fault_arm(NULL);
    assert_int_equal(res.first_offset, 21);
    assert_true(bytes.total < 3u * 1000u * 1000u); /* not the 6 MB of the segment */
    sl_buf_free(&out);
}

/* --- large records served from disk (read straight into the reply) --------------------------- */

enum { BIG_COUNT = 4, BIG_PAYLOAD = 250000, BIG_BATCHES = 5 };

/* A partition of BIG_BATCHES records of about 1 MB each: larger than the 256 KiB chunk the
 * segment cursor reads, so whole ones are read from the .log straight into the output. */
static void big_partition(tu_part_t *t)
{
    t->cfg.segment_size = 16u * 1024u * 1024u;
    t->cfg.batch_max = 2u * 1024u * 1024u;
    tu_reopen(t);
    for (int i = 0; i < BIG_BATCHES; i++)
        assert_int_equal(tu_try_append_at(t, BIG_COUNT, BIG_PAYLOAD, 100u * (uint64_t)(i + 1)), 0);
}

static const struct {
    sl_partition_poll_kind_t kind;
    uint64_t value;
    uint32_t count;
} big_polls[] = {
    {SL_PARTITION_POLL_OFFSET, 0, 100}, /* every record whole */
    {SL_PARTITION_POLL_OFFSET, 0, 4},   /* exactly one */
    {SL_PARTITION_POLL_OFFSET, 0, 6},   /* one whole, then a slice of the next */
    {SL_PARTITION_POLL_OFFSET, 2, 100}, /* a slice, then whole ones */
    {SL_PARTITION_POLL_OFFSET, 4, 8},   /* two whole, from an index entry */
    {SL_PARTITION_POLL_OFFSET, 19, 1},  /* the last message */
    {SL_PARTITION_POLL_TIMESTAMP, 0, 100},
    {SL_PARTITION_POLL_TIMESTAMP, 300, 3}, /* the first frames of a matching batch */
    {SL_PARTITION_POLL_TIMESTAMP, 201, 100},
};

/* Disk polls of large records give the bytes the journal gave, with and without verification. */
static void test_poll_large_records_from_disk(void **state)
{
    tu_part_t *t = *state;
    big_partition(t);
    sl_buf_t before[SL_ARRAY_LEN(big_polls)], out;
    sl_partition_poll_result_t res;
    for (size_t i = 0; i < SL_ARRAY_LEN(big_polls); i++) {
        sl_buf_init(&before[i], 0);
        tu_poll(t, big_polls[i].kind, big_polls[i].value, big_polls[i].count, &before[i], &res);
        assert_true(res.messages > 0);
    }
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(sl_partition_journal_messages(t->p), 0);
    sl_buf_init(&out, 0);
    for (int validate = 1; validate >= 0; validate--) {
        sl_partition_config_t cfg = t->cfg;
        cfg.validate_checksum = validate;
        sl_partition_reconfigure(t->p, &cfg);
        for (size_t i = 0; i < SL_ARRAY_LEN(big_polls); i++) {
            tu_poll(t, big_polls[i].kind, big_polls[i].value, big_polls[i].count, &out, &res);
            assert_int_equal(res.read_error, 0);
            assert_false(res.out_full);
            assert_bytes_equal(out.data, out.len, before[i].data, before[i].len);
        }
    }
    /* out already holding bytes: the record goes after them */
    sl_buf_reset(&out);
    sl_put_bytes(&out, (const uint8_t *)"prefix", 6);
    sl_partition_poll_t q = {SL_PARTITION_POLL_OFFSET, 0, 100};
    assert_int_equal(sl_partition_poll(t->p, &q, &out, &res), 0);
    assert_int_equal(res.messages, BIG_COUNT * BIG_BATCHES);
    assert_bytes_equal(out.data, 6, "prefix", 6);
    assert_bytes_equal(out.data + 6, out.len - 6, before[0].data, before[0].len);
    for (size_t i = 0; i < SL_ARRAY_LEN(big_polls); i++)
        sl_buf_free(&before[i]);
    sl_buf_free(&out);
}

/* The cursor's peek reads only the 256-byte header where its buffer does not hold it, so a
 * record larger than the chunk (read whole by the poll, or skipped) has no byte read twice:
 * the buffer stays empty across peeks and skips, and sl_segment_next then reads the record
 * once, from its first byte. */
static void test_peek_reads_header_only(void **state)
{
    tu_part_t *t = *state;
    big_partition(t);
    assert_int_equal(sl_partition_flush(t->p), 0);
    size_t record = SL_BATCH_HEADER_SIZE + BIG_COUNT * (SL_FRAME_HEADER_SIZE + BIG_PAYLOAD);
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".log", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    sl_buf_t buf;
    sl_buf_init(&buf, 0);
    sl_segment_cursor_t c;
    sl_segment_cursor_init(&c, fd, 0, (uint64_t)BIG_BATCHES * record, 2u * 1024u * 1024u, &buf);
    sl_span_t header, rec;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sl_segment_peek(&c, &header), SL_SEGMENT_RECORD);
        assert_int_equal(sl_load_u64(header.ptr + SL_BATCH_OFF_BASE_OFFSET),
                         (uint64_t)i * BIG_COUNT);
        assert_int_equal(buf.len, 0); /* no chunk read for a header */
        sl_segment_skip(&c, header);
    }
    assert_int_equal(sl_segment_next(&c, &rec), SL_SEGMENT_RECORD);
    assert_int_equal(rec.len, record);
    assert_int_equal(sl_load_u64(rec.ptr + SL_BATCH_OFF_BASE_OFFSET), 2u * BIG_COUNT);
    assert_int_equal(buf.len, record); /* the record alone: larger than a chunk */
    assert_int_equal(sl_batch_validate(rec, BIG_COUNT), 0);
    /* A header past the end of the file is a torn tail, not a read past it. */
    sl_segment_cursor_init(&c, fd, (uint64_t)BIG_BATCHES * record - 100,
                           (uint64_t)BIG_BATCHES * record + 1000, 2u * 1024u * 1024u, &buf);
    sl_buf_reset(&buf);
    assert_int_equal(sl_segment_peek(&c, &header), SL_SEGMENT_TORN);
    close(fd);
    sl_buf_free(&buf);
}

/* A large record that fails its checks on disk is taken out of the output again. */
static void test_poll_large_record_damaged(void **state)
{
    tu_part_t *t = *state;
    big_partition(t);
    assert_int_equal(sl_partition_flush(t->p), 0);
    size_t record = SL_BATCH_HEADER_SIZE + BIG_COUNT * (SL_FRAME_HEADER_SIZE + BIG_PAYLOAD);
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".log", path);
    /* a payload byte of the third batch (offsets 8..11) */
    tu_flip(path, 2 * record + SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE + 1000);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 100, &out, &res), 8);
    assert_int_equal(res.read_error, -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    assert_int_equal(out.len, 2 * record);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 8, 4, &out, &res), 0);
    assert_int_equal(res.read_error, -SL_ERR_INVALID_MESSAGE_CHECKSUM);
    assert_int_equal(out.len, 0);
    /* without verification only the layout counts: a payload byte passes, a frame's reserved
     * field does not */
    sl_partition_config_t cfg = t->cfg;
    cfg.validate_checksum = false;
    sl_partition_reconfigure(t->p, &cfg);
    sl_buf_reset(&out);
    sl_partition_poll_t q = {SL_PARTITION_POLL_OFFSET, 0, 100};
    assert_int_equal(sl_partition_poll(t->p, &q, &out, &res), 0);
    assert_int_equal(res.messages, BIG_COUNT * BIG_BATCHES);
    tu_flip(path, 3 * record + SL_BATCH_HEADER_SIZE + SL_FRAME_OFF_RESERVED);
    sl_buf_reset(&out);
    assert_int_equal(sl_partition_poll(t->p, &q, &out, &res), 0);
    assert_int_equal(res.messages, 12);
    assert_int_equal(res.read_error, -SL_ERR_INVALID_FORMAT);
    assert_int_equal(out.len, 3 * record);
    sl_buf_free(&out);
}

/* A large record that does not fit in out is not appended, and the poll says why. */
static void test_poll_large_record_out_limit(void **state)
{
    tu_part_t *t = *state;
    big_partition(t);
    assert_int_equal(sl_partition_flush(t->p), 0);
    size_t record = SL_BATCH_HEADER_SIZE + BIG_COUNT * (SL_FRAME_HEADER_SIZE + BIG_PAYLOAD);
    sl_buf_t out;
    sl_buf_init(&out, 2 * record - 1);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 100, &out, &res), BIG_COUNT);
    assert_true(res.out_full);
    assert_int_equal(out.len, record);
    sl_buf_free(&out);
}

/* --- ownership and group commit ------------------------------------------------------------- */

typedef struct release_log {
    void *owners[16];
    size_t count;
} release_log_t;

static void note_release(void *ctx, void *owner)
{
    release_log_t *log = ctx;
    assert_true(log->count < SL_ARRAY_LEN(log->owners));
    log->owners[log->count++] = owner;
    free(owner);
}

static void test_zero_copy_ownership(void **state)
{
    tu_part_t *t = *state;
    release_log_t log = {0};
    t->cfg.release = note_release;
    t->cfg.release_ctx = &log;
    tu_reopen(t);
    size_t len;
    uint8_t *frame = tu_batch_make(0, 4, 50, &len);
    uint64_t base;
    assert_int_equal(sl_partition_append(t->p, frame, frame + TU_FRAME_PREFIX, len, 777, &base), 0);
    /* stamped in place, in the caller's frame, and still held by the journal */
    assert_int_equal(sl_load_u64(frame + TU_FRAME_PREFIX + SL_BATCH_OFF_PARTITION_ID),
                     TU_PARTITION_ID);
    assert_int_equal(sl_load_u64(frame + TU_FRAME_PREFIX + SL_BATCH_OFF_BASE_TIMESTAMP), 777);
    assert_int_equal(log.count, 0);
    t->next_id = 4;
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 10, &out, &res), 4);
    assert_bytes_equal(out.data, out.len, frame + TU_FRAME_PREFIX, len);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(log.count, 1);
    assert_ptr_equal(log.owners[0], frame);
    sl_buf_free(&out);
}

static void count_syncs(void *ctx, const sl_io_op_t *op)
{
    (void)op;
    (*(int *)ctx)++;
}

/* The calls of one append in order, as letters: S = fdatasync of the
 * .log, s = of the .index, W = write to the .log, w = to the .index. */
typedef struct op_trace {
    char seq[64];
    size_t n;
} op_trace_t;

static void trace_ops(void *ctx, const sl_io_op_t *op)
{
    op_trace_t *t = ctx;
    bool index = op->path != NULL && strstr(op->path, ".index") != NULL;
    bool log = op->path != NULL && strstr(op->path, ".log") != NULL;
    char c = 0;
    if (op->call == SL_IO_FDATASYNC && (index || log))
        c = index ? 's' : 'S';
    else if ((SL_IO_BIT(op->call) & SL_IO_MASK_WRITES) && (index || log))
        c = index ? 'w' : 'W';
    if (c != 0 && t->n + 1 < sizeof(t->seq))
        t->seq[t->n++] = c;
}

static void test_group_commit(void **state)
{
    tu_part_t *t = *state;
    t->cfg.enforce_fsync = true;
    tu_reopen(t);
    sl_partition_batch_t batches[5];
    size_t len;
    for (uint32_t i = 0; i < 5; i++) {
        uint8_t *frame = tu_batch_make(i * 2, 2, 30, &len);
        batches[i] = (sl_partition_batch_t){.owner = frame, .record = frame + TU_FRAME_PREFIX, .len = len};
    }
    int syncs = 0;
    sl_io_fault_t plan = {.calls = SL_IO_MASK_SYNCS, .trace = count_syncs, .trace_ctx = &syncs};
    sl_io_fault_arm(&plan);
    uint64_t bases[5];
    size_t accepted;
    assert_int_equal(sl_partition_append_many(t->p, batches, 5, 100, bases, &accepted), 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(accepted, 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(bases[i], i * 2);
    /* One fdatasync, of the .log, for all five, after the partition's tree
     * was made durable (the first time only: the partition directory and its
     * 6 ancestors' parents; no offsets directories yet). */
    assert_int_equal(syncs, 7 + 1);
    for (uint32_t i = 0; i < 2; i++) {
        uint8_t *frame = tu_batch_make(10 + i * 2, 2, 30, &len);
        batches[i] = (sl_partition_batch_t){.owner = frame, .record = frame + TU_FRAME_PREFIX, .len = len};
    }
    syncs = 0;
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_partition_append_many(t->p, batches, 2, 100, bases, &accepted), 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(syncs, 1); /* the tree is durable now: only the .log */
    t->next_id = 14;
    char path[PATH_MAX];
    tu_seg_path(t, 0, ".index", path);
    assert_int_equal(tu_file_size(path), 2 * SL_INDEX_ENTRY_SIZE);
    tu_reopen(t);
    tu_poll_all(t, 3);
}

/* enforce_fsync: the .log is synced before the index entry is written (so
 * the entry never reaches the disk ahead of its bytes) and the .index only
 * when its segment is sealed: W S w per append, then s at the rotation. */
static void test_fsync_order(void **state)
{
    tu_part_t *t = *state;
    t->cfg.enforce_fsync = true;
    t->cfg.segment_size = 1000;
    tu_reopen(t);
    op_trace_t trace = {0};
    sl_io_fault_t plan = {.calls = SL_IO_MASK_ALL, .trace = trace_ops, .trace_ctx = &trace};
    sl_io_fault_arm(&plan);
    tu_append(t, 2, 100);
    assert_string_equal(trace.seq, "WSw");
    int appends = 1;
    while (sl_partition_segments(t->p) < 2 && appends < 10) {
        tu_append(t, 2, 100);
        appends++;
    }
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_partition_segments(t->p), 2); /* the first one was sealed */
    char expected[64] = "";
    for (int i = 0; i < appends; i++)
        strcat(expected, "WSw");
    strcat(expected, "s");
    assert_string_equal(trace.seq, expected);
    tu_reopen(t);
    tu_poll_all(t, 3);
}

/* sl_partition_sync on a topic without enforce_fsync: the journal is written, the segment
 * sealed since (opened for it) and the active one are fdatasynced (.log and .index); a second
 * sync leaves the sealed one alone. */
static void test_sync_without_enforce_fsync(void **state)
{
    tu_part_t *t = *state;
    t->cfg.segment_size = 1000;
    t->cfg.messages_required_to_save = 1000000;
    t->cfg.size_of_messages_required_to_save = 1u << 30;
    tu_reopen(t);
    tu_append(t, 2, 100);
    assert_int_equal(sl_partition_flush(t->p), 0);
    for (int i = 0; i < 10 && sl_partition_segments(t->p) < 2; i++) {
        tu_append(t, 2, 400);
        assert_int_equal(sl_partition_flush(t->p), 0);
    }
    assert_int_equal(sl_partition_segments(t->p), 2);
    tu_append(t, 1, 10); /* journaled only */
    assert_int_equal(sl_partition_journal_messages(t->p), 1);
    assert_int_equal(sl_partition_next_offset(t->p), t->next_id);
    op_trace_t trace = {0};
    sl_io_fault_t plan = {.calls = SL_IO_MASK_ALL, .trace = trace_ops, .trace_ctx = &trace};
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_partition_sync(t->p), 0);
    sl_io_fault_arm(NULL);
    assert_int_equal(sl_partition_journal_messages(t->p), 0);
    assert_string_equal(trace.seq, "WwSsSs"); /* the flush, the sealed one, the active one */
    memset(&trace, 0, sizeof(trace));
    sl_io_fault_arm(&plan);
    assert_int_equal(sl_partition_sync(t->p), 0);
    sl_io_fault_arm(NULL);
    assert_string_equal(trace.seq, "Ss");
    assert_string_equal(sl_partition_dir(t->p), t->dir);
    tu_reopen(t);
    tu_poll_all(t, 3);
}

static void test_batch_too_large(void **state)
{
    tu_part_t *t = *state;
    size_t len;
    uint8_t *frame = tu_batch_make(0, 1, t->cfg.batch_max, &len);
    uint64_t base;
    assert_int_equal(sl_partition_append(t->p, frame, frame + TU_FRAME_PREFIX, len, 1, &base),
                     -SL_ERR_INVALID_MESSAGES_SIZE);
    free(frame); /* still the caller's */
    assert_true(sl_partition_empty(t->p));
    tu_append(t, 1, 10);
}

static void test_config_from_topic(void **state)
{
    (void)state;
    sl_topic_config_t topic;
    sl_topic_config_default(&topic);
    topic.max_topic_size = 10u * 1024u * 1024u;
    topic.enforce_fsync = true;
    sl_partition_config_t cfg;
    sl_partition_config_from_topic(&topic, 4, &cfg);
    assert_int_equal(cfg.max_size_share, 10u * 1024u * 1024u / 4);
    assert_int_equal(cfg.segment_size, topic.segment_size);
    assert_true(cfg.enforce_fsync);
    assert_true(cfg.validate_checksum);
    assert_int_equal(cfg.message_expiry, SL_TOPIC_EXPIRY_NEVER);
    topic.max_topic_size = SL_TOPIC_SIZE_UNLIMITED;
    sl_partition_config_from_topic(&topic, 4, &cfg);
    assert_int_equal(cfg.max_size_share, UINT64_MAX);
}

/* --- deletion ------------------------------------------------------------------------------- */

/* Fills several 1 MiB segments with 64 KiB batches; returns the segment count. */
static uint32_t fill_segments(tu_part_t *t, uint32_t batches)
{
    for (uint32_t i = 0; i < batches; i++)
        tu_append(t, 16, 4000);
    assert_int_equal(sl_partition_flush(t->p), 0);
    return sl_partition_segments(t->p);
}

static void test_delete_segments(void **state)
{
    tu_part_t *t = *state;
    uint32_t segments = fill_segments(t, 70);
    assert_true(segments >= 4);
    sl_segment_info_t third;
    assert_true(sl_partition_segment_info(t->p, 2, &third));
    uint32_t deleted;
    assert_int_equal(sl_partition_delete_segments(t->p, 2, &deleted), 0);
    assert_int_equal(deleted, 2);
    assert_int_equal(sl_partition_segments(t->p), segments - 2);
    assert_int_equal(sl_partition_first_offset(t->p), third.start_offset);
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_partition_poll_result_t res;
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 5, &out, &res), 5);
    assert_int_equal(res.first_offset, third.start_offset);
    /* never the active segment */
    assert_int_equal(sl_partition_delete_segments(t->p, 1000, &deleted), 0);
    assert_int_equal(deleted, segments - 3);
    assert_int_equal(sl_partition_segments(t->p), 1);
    assert_int_equal(sl_partition_delete_segments(t->p, 1, &deleted), 0);
    assert_int_equal(deleted, 0);
    sl_segment_info_t active;
    assert_true(sl_partition_segment_info(t->p, 0, &active));
    assert_false(active.sealed);
    tu_reopen(t);
    assert_int_equal(sl_partition_first_offset(t->p), active.start_offset);
    assert_int_equal(sl_partition_current_offset(t->p), t->next_id - 1);
    assert_int_equal(tu_poll(t, SL_PARTITION_POLL_OFFSET, 0, 1000000, &out, &res),
                     t->next_id - active.start_offset);
    sl_buf_free(&out);
}

static void test_retention_expiry(void **state)
{
    tu_part_t *t = *state;
    uint32_t segments = fill_segments(t, 70);
    uint32_t deleted;
    /* never expire */
    assert_int_equal(sl_partition_retention(t->p, UINT64_MAX, &deleted), 0);
    assert_int_equal(deleted, 0);
    sl_segment_info_t second;
    assert_true(sl_partition_segment_info(t->p, 1, &second));
    sl_partition_config_t cfg = t->cfg;
    cfg.message_expiry = 1000;
    sl_partition_reconfigure(t->p, &cfg);
    /* at exactly expiry after the second segment's newest message, only the first is older */
    assert_int_equal(sl_partition_retention(t->p, second.end_timestamp + 1000, &deleted), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(sl_partition_retention(t->p, UINT64_MAX, &deleted), 0);
    assert_int_equal(deleted, segments - 2);
    assert_int_equal(sl_partition_segments(t->p), 1);
}

/* A segment whose newest timestamp is unknown (0) never expires, and only a prefix of the
 * chain is deleted, so it keeps the newer ones too. */
static void test_retention_expiry_unknown_timestamp(void **state)
{
    tu_part_t *t = *state;
    for (uint32_t i = 0; i < 20; i++)
        assert_int_equal(tu_try_append_at(t, 16, 4000, 0), 0);
    for (uint32_t i = 0; i < 20; i++)
        assert_int_equal(tu_try_append_at(t, 16, 4000, 5000), 0);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_true(sl_partition_segments(t->p) >= 3);
    sl_segment_info_t first, second;
    assert_true(sl_partition_segment_info(t->p, 0, &first));
    assert_true(sl_partition_segment_info(t->p, 1, &second));
    assert_true(first.sealed && second.sealed);
    assert_int_equal(first.end_timestamp, 0);
    assert_int_equal(second.end_timestamp, 5000);
    sl_partition_config_t cfg = t->cfg;
    cfg.message_expiry = 1;
    sl_partition_reconfigure(t->p, &cfg);
    uint32_t deleted;
    assert_int_equal(sl_partition_retention(t->p, 1000000, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(sl_partition_delete_segments(t->p, 1, &deleted), 0);
    assert_int_equal(sl_partition_retention(t->p, 1000000, &deleted), 0);
    assert_int_equal(deleted, 1);
}

static void test_retention_size(void **state)
{
    tu_part_t *t = *state;
    uint32_t segments = fill_segments(t, 90);
    assert_true(segments >= 5);
    sl_partition_config_t cfg = t->cfg;
    cfg.max_size_share = UINT64_MAX;
    sl_partition_reconfigure(t->p, &cfg);
    uint32_t deleted;
    assert_int_equal(sl_partition_retention(t->p, 0, &deleted), 0);
    assert_int_equal(deleted, 0);
    /* a share below one sealed segment is floored: the newest sealed segment stays */
    cfg.max_size_share = 1;
    sl_partition_reconfigure(t->p, &cfg);
    assert_int_equal(sl_partition_retention(t->p, 0, &deleted), 0);
    assert_int_equal(deleted, segments - 2);
    assert_int_equal(sl_partition_segments(t->p), 2);
    sl_segment_info_t info;
    assert_true(sl_partition_segment_info(t->p, 0, &info));
    assert_true(info.sealed);
    assert_int_equal(sl_partition_retention(t->p, 0, &deleted), 0);
    assert_int_equal(deleted, 0);
}

/* Preallocated segments keep their size at what was written, so recovery sees no zeros. */
static void test_preallocate(void **state)
{
    tu_part_t *t = *state;
    t->cfg.preallocate_segments = true;
    tu_reopen(t);
    uint32_t segments = fill_segments(t, 17);
    assert_int_equal(segments, 2);
    sl_segment_info_t active;
    assert_true(sl_partition_segment_info(t->p, 1, &active));
    char path[PATH_MAX];
    tu_seg_path(t, active.start_offset, ".log", path);
    assert_int_equal(tu_file_size(path), 0);
    tu_append(t, 3, 100);
    assert_int_equal(sl_partition_flush(t->p), 0);
    assert_int_equal(tu_file_size(path), SL_BATCH_HEADER_SIZE + 3 * (SL_FRAME_HEADER_SIZE + 100));
    tu_reopen(t);
    assert_int_equal(sl_partition_messages(t->p), t->next_id);
    tu_poll_all(t, 100);
}

static void test_purge(void **state)
{
    tu_part_t *t = *state;
    fill_segments(t, 40);
    tu_append(t, 3, 10); /* journaled */
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 7, 5, false, false), 0);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_GROUP, 1, 9, false, false), 0);
    assert_int_equal(sl_partition_purge(t->p), 0);
    assert_true(sl_partition_empty(t->p));
    assert_int_equal(sl_partition_messages(t->p), 0);
    assert_int_equal(sl_partition_segments(t->p), 1);
    assert_int_equal(sl_partition_current_offset(t->p), 0);
    assert_int_equal(sl_offsets_count(t->p), 0);
    uint64_t offset;
    assert_int_equal(sl_offsets_get(t->p, SL_OFFSETS_CONSUMER, 7, &offset),
                     -SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
    t->next_id = 0;
    tu_append(t, 2, 10);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_reopen(t);
    assert_int_equal(sl_offsets_count(t->p), 0);
    assert_int_equal(sl_partition_segments(t->p), 1);
    tu_poll_all(t, 10);
}

static void make_dir(const char *root, const char *rel)
{
    char path[PATH_MAX];
    assert_true(tu_path(path, root, rel));
    assert_int_equal(mkdir(path, 0755), 0);
}

static void make_file(const char *root, const char *rel)
{
    char path[PATH_MAX];
    assert_true(tu_path(path, root, rel));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("x", f);
    assert_int_equal(fclose(f), 0);
}

/* sl_store_remove_tree deletes a whole stream tree (six directory levels, as the server lays
 * it out), does not follow links, and refuses a tree deeper than its bound without crashing;
 * sl_partition_remove is the same for a partition. */
static void test_remove_tree(void **state)
{
    tu_part_t *t = *state;
    char stream[PATH_MAX], outside[PATH_MAX], link_path[PATH_MAX];
    assert_true(tu_path(stream, t->root, "streams/1"));
    assert_true(tu_path(outside, t->root, "outside"));
    make_dir(t->root, "outside");
    make_file(outside, "keep");
    make_dir(stream, "topics/2/partitions/4");
    make_dir(stream, "topics/2/partitions/4/offsets");
    make_dir(stream, "topics/2/partitions/4/offsets/groups");
    make_file(stream, "topics/2/partitions/4/offsets/groups/7");
    assert_true(tu_path(link_path, stream, "topics/2/partitions/4/offsets/to-outside"));
    assert_int_equal(symlink(outside, link_path), 0);
    tu_append(t, 4, 50);
    assert_int_equal(sl_offsets_store(t->p, SL_OFFSETS_CONSUMER, 3, 1, false, false), 0);
    assert_int_equal(sl_partition_flush(t->p), 0);
    tu_close(t);

    assert_int_equal(sl_store_remove_tree(stream), 0);
    assert_false(tu_exists(stream));
    char kept[PATH_MAX];
    assert_true(tu_path(kept, outside, "keep"));
    assert_true(tu_exists(kept));                      /* the link went, not what it pointed at */
    assert_int_equal(sl_store_remove_tree(stream), 0); /* already gone */

    /* Deeper than the bound: refused, and the test cleans up. */
    char deep[PATH_MAX] = "deep";
    make_dir(t->root, deep);
    for (int i = 0; i <= SL_STORE_TREE_DEPTH_MAX; i++) {
        strcat(deep, "/d");
        make_dir(t->root, deep);
    }
    char top[PATH_MAX];
    assert_true(tu_path(top, t->root, "deep"));
    assert_int_equal(sl_store_remove_tree(top), -SL_ERR_CANNOT_DELETE_FILE);
    assert_true(tu_exists(top));
    tu_tmpdir_remove_depth(top, SL_STORE_TREE_DEPTH_MAX + 2);
    tu_open(t); /* for the teardown */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_byte_for_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gate_counts_whole_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offsets_across_rotations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_inside_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_by_timestamp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_last_and_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal_and_disk_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_out_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_skips_frames_before_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peek_reads_header_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_large_records_from_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_large_record_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_large_record_out_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_copy_ownership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_too_large, setup, teardown),
        cmocka_unit_test(test_config_from_topic),
        cmocka_unit_test_setup_teardown(test_delete_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_expiry_unknown_timestamp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preallocate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_without_enforce_fsync, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
