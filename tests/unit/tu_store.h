/* Helpers for the src/store tests: a partition in a temporary directory, batches built with the
 * wire builder inside malloc'd "request frames" (so the partition takes a frame and a record
 * offset, as the server will hand them over), and a checker that walks polled records and
 * verifies layout, both checksums, offsets, ids and payload bytes. Message ids equal the offset
 * the test expects the message to get, and payload bytes derive from the id. */
#ifndef SL_TU_STORE_H
#define SL_TU_STORE_H

#include <fcntl.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "store/offsets.h"
#include "store/partition.h"
#include "store/segment.h"
#include "tu_tmpdir.h"
#include "wire/batch.h"

/* Bytes in front of the record inside a test "frame" (a request header and metadata). */
#define TU_FRAME_PREFIX 77u
#define TU_PARTITION_ID 3u

typedef struct tu_part {
    char root[PATH_MAX];
    char dir[PATH_MAX];
    sl_partition_config_t cfg;
    sl_partition_t *p;
    uint64_t next_id; /* the offset the next appended message must get */
    uint64_t clock;   /* the timestamp of the last append */
} tu_part_t;

static inline uint8_t tu_payload_byte(uint64_t id, size_t i)
{
    return (uint8_t)(id * 31u + i * 7u + 1u);
}

/* A batch of count messages with ids first_id.., payload_len bytes each, inside a malloc'd
 * frame at TU_FRAME_PREFIX. Returns the frame; *len gets the record's length. */
static inline uint8_t *tu_batch_make(uint64_t first_id, uint32_t count, size_t payload_len,
                                     size_t *len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    memset(sl_buf_extend(&b, TU_FRAME_PREFIX), 0xEE, TU_FRAME_PREFIX);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &b);
    uint8_t *payload = malloc(payload_len ? payload_len : 1);
    assert_non_null(payload);
    for (uint32_t m = 0; m < count; m++) {
        uint64_t id = first_id + m;
        for (size_t i = 0; i < payload_len; i++)
            payload[i] = tu_payload_byte(id, i);
        assert_int_equal(sl_batch_add(&bb, (sl_u128_t){id, 0x5157}, 1000000 + id,
                                      sl_span(payload, payload_len), sl_span(NULL, 0)),
                         0);
    }
    free(payload);
    sl_span_t record;
    assert_int_equal(sl_batch_finish(&bb, &record), 0);
    assert_int_equal(sl_batch_validate(record, count), 0);
    *len = record.len;
    return b.data;
}

static inline void tu_config_small(sl_partition_config_t *cfg)
{
    *cfg = (sl_partition_config_t){
        .segment_size = SL_SEGMENT_SIZE_MIN,
        .messages_required_to_save = 1000000,
        .size_of_messages_required_to_save = SL_SIZE_TO_SAVE_MAX,
        .validate_checksum = true,
        .batch_max = 256u * 1024u,
    };
}

static inline void tu_open(tu_part_t *t)
{
    char err[512];
    int rc =
        sl_partition_open(t->dir, TU_PARTITION_ID, &t->cfg, 5000000000ull, &t->p, err, sizeof(err));
    if (rc != 0)
        fail_msg("sl_partition_open: %d: %s", rc, err);
}

static inline void tu_close(tu_part_t *t)
{
    sl_partition_close(t->p);
    t->p = NULL;
}

static inline void tu_reopen(tu_part_t *t)
{
    tu_close(t);
    tu_open(t);
}

/* Creates the temporary root and opens a partition under streams/1/topics/2/partitions/3. */
static inline void tu_part_init(tu_part_t *t, const sl_partition_config_t *cfg)
{
    memset(t, 0, sizeof(*t));
    assert_true(tu_tmpdir_make(t->root, "sluice-store"));
    int n = snprintf(t->dir, sizeof(t->dir), "%s/streams/1/topics/2/partitions/%u", t->root,
                     TU_PARTITION_ID);
    assert_true(n > 0 && n < (int)sizeof(t->dir));
    if (cfg)
        t->cfg = *cfg;
    else
        tu_config_small(&t->cfg);
    t->clock = 1000;
    tu_open(t);
}

static inline void tu_part_fini(tu_part_t *t)
{
    sl_io_fault_arm(NULL);
    tu_close(t);
    assert_int_equal(sl_partition_remove(t->dir), 0);
    tu_tmpdir_remove_depth(t->root, 8);
}

/* Appends a batch at timestamp. Returns the error; on success checks the base offset and
 * advances next_id; on failure frees the frame (the caller keeps it when an append fails). */
static inline int tu_try_append_at(tu_part_t *t, uint32_t count, size_t payload_len,
                                   uint64_t timestamp)
{
    size_t len;
    uint8_t *frame = tu_batch_make(t->next_id, count, payload_len, &len);
    uint64_t base = UINT64_MAX;
    int rc = sl_partition_append(t->p, frame, frame + TU_FRAME_PREFIX, len, timestamp, &base);
    if (rc != 0) {
        free(frame);
        return rc;
    }
    assert_int_equal(base, t->next_id);
    t->next_id += count;
    return 0;
}

/* Appends at the next tick of the test clock. */
static inline int tu_try_append(tu_part_t *t, uint32_t count, size_t payload_len)
{
    return tu_try_append_at(t, count, payload_len, t->clock += 10);
}

static inline void tu_append(tu_part_t *t, uint32_t count, size_t payload_len)
{
    assert_int_equal(tu_try_append(t, count, payload_len), 0);
}

/* Checks one polled record the way a strict client would (messages.md 4.2 plus 2.1 and 2.2)
 * and that its messages continue at *next with the test's ids and payloads. */
static inline void tu_check_record(sl_span_t record, uint64_t *next)
{
    assert_int_equal(sl_batch_check_layout(record), 0);
    assert_int_equal(sl_load_u64(record.ptr + SL_BATCH_OFF_PARTITION_ID), TU_PARTITION_ID);
    assert_true(sl_load_u64(record.ptr + SL_BATCH_OFF_CHECKSUM) == sl_batch_checksum(record));
    sl_frame_iter_t it = sl_frame_iter(record);
    sl_message_t m;
    uint32_t seen = 0;
    while (sl_frame_next(&it, &m)) {
        assert_true(m.checksum == sl_frame_checksum(m.frame));
        assert_int_equal(m.offset, *next);
        assert_int_equal(m.id.lo, m.offset);
        assert_int_equal(m.origin_timestamp, 1000000 + m.id.lo);
        for (size_t i = 0; i < m.payload.len; i++)
            if (m.payload.ptr[i] != tu_payload_byte(m.id.lo, i))
                fail_msg("payload byte %zu of message %llu differs", i,
                         (unsigned long long)m.id.lo);
        (*next)++;
        seen++;
    }
    assert_int_equal(seen, sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT));
}

/* Checks every record of a poll's output; returns the messages, which start at first. */
static inline uint32_t tu_check_run(sl_span_t run, uint64_t first)
{
    sl_record_iter_t it = sl_record_iter(run);
    sl_span_t record;
    uint64_t next = first;
    size_t covered = 0;
    while (sl_record_next(&it, &record)) {
        tu_check_record(record, &next);
        covered += record.len;
    }
    assert_int_equal(covered, run.len);
    return (uint32_t)(next - first);
}

/* Polls into out (reset first) and checks what came back. */
static inline uint32_t tu_poll(tu_part_t *t, sl_partition_poll_kind_t kind, uint64_t value,
                               uint32_t count, sl_buf_t *out, sl_partition_poll_result_t *res)
{
    sl_buf_reset(out);
    sl_partition_poll_t q = {kind, value, count};
    assert_int_equal(sl_partition_poll(t->p, &q, out, res), 0);
    assert_true(sl_buf_ok(out));
    uint32_t n = tu_check_run(sl_buf_span(out), res->messages ? res->first_offset : 0);
    assert_int_equal(n, res->messages);
    if (n)
        assert_int_equal(res->last_offset, res->first_offset + n - 1);
    return n;
}

/* Polls every message from offset 0 in polls of `step` and checks they are 0..next_id-1. */
static inline void tu_poll_all(tu_part_t *t, uint32_t step)
{
    sl_buf_t out;
    sl_buf_init(&out, 0);
    uint64_t at = 0;
    while (at < t->next_id) {
        sl_partition_poll_result_t res;
        uint32_t n = tu_poll(t, SL_PARTITION_POLL_OFFSET, at, step, &out, &res);
        assert_int_equal(res.read_error, 0);
        assert_true(n > 0);
        assert_int_equal(res.first_offset, at);
        at += n;
    }
    assert_int_equal(at, t->next_id);
    sl_buf_free(&out);
}

/* --- files ---------------------------------------------------------------------------------- */

static inline void tu_seg_path(const tu_part_t *t, uint64_t start, const char *ext,
                               char out[PATH_MAX])
{
    assert_true(sl_segment_path(out, t->dir, start, ext));
}

static inline uint64_t tu_file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static inline bool tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Reads a whole file into a malloc'd buffer. */
static inline uint8_t *tu_read_file(const char *path, size_t *len)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_io_read_file(path, &b, SIZE_MAX), 0);
    *len = b.len;
    if (!b.data)
        b.data = malloc(1);
    return b.data;
}

static inline void tu_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static inline void tu_truncate(const char *path, uint64_t len)
{
    assert_int_equal(truncate(path, (off_t)len), 0);
}

/* Overwrites bytes at off in a file. */
static inline void tu_patch(const char *path, uint64_t off, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, data, len, (off_t)off), (ssize_t)len);
    close(fd);
}

static inline void tu_flip(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, (off_t)off), 1);
    byte ^= 0x40;
    assert_int_equal(pwrite(fd, &byte, 1, (off_t)off), 1);
    close(fd);
}

#endif
