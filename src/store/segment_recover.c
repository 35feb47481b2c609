/* Boot recovery of one segment (storage.md 4 steps 2-5, store/segment.h): its bounds from the
 * last index entry and a walk of the .log from there, or from a walk of the whole .log when the
 * index cannot be trusted; then, once the partition's chain checks, the repairs (torn tail cut,
 * index trimmed or rebuilt). */
#include "store/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sluice/error.h>
#include <stdio.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"
#include "wire/batch.h"

/* A rebuilt .index gets an entry for the first batch at or after every this many bytes, about
 * what one flush writes with the default size_of_messages_required_to_save. */
#define REBUILD_STRIDE (1024u * 1024u)

/* What recover_from_index decided when it could not settle the bounds itself. */
#define NEED_LOG_WALK 1

typedef struct recover_ctx {
    uint64_t start;
    uint64_t batch_max;
    bool every_batch; /* the index has an entry per batch (sl_partition_config_t) */
    sl_buf_t *buf;
    int log_fd;
    int index_fd;
    char log_path[PATH_MAX];
    sl_segment_recovery_t *rec;
    char *err;
    size_t err_len;
} recover_ctx_t;

/* The run of valid batches a walk found. */
typedef struct walk {
    uint64_t end;            /* end of the last valid batch (the start when none) */
    uint64_t next_offset;    /* base offset the next batch must have */
    uint64_t last_timestamp; /* base_timestamp of the last valid batch */
    uint64_t batches;
    bool mismatch;            /* stopped at a valid batch with another base offset */
    uint64_t mismatch_offset; /* that base offset */
} walk_t;

/* Walks whole, valid batches from pos, the first expected to have base offset `offset`. A
 * batch is valid when its layout and both checksums verify (sl_batch_validate); the first
 * record that is cut short or does not verify ends the walk: it is the torn tail. With rebuilt
 * non-NULL, index entries are collected every REBUILD_STRIDE bytes. 0 or -errno-like error. */
static int walk(recover_ctx_t *x, uint64_t pos, uint64_t offset, sl_buf_t *rebuilt, walk_t *w)
{
    *w = (walk_t){.end = pos, .next_offset = offset};
    sl_segment_cursor_t c;
    sl_segment_cursor_init(&c, x->log_fd, pos, x->rec->log_size, x->batch_max, x->buf);
    uint64_t entry_pos = pos;
    for (;;) { /* bounded: every record moves the cursor forward by at least 304 bytes */
        sl_span_t record;
        sl_segment_step_t step = sl_segment_next(&c, &record);
        if (step == SL_SEGMENT_IO) {
            snprintf(x->err, x->err_len, "partition segment %s: cannot read at byte %" PRIu64,
                     x->log_path, c.pos);
            return -SL_ERR_CANNOT_READ_FILE;
        }
        if (step != SL_SEGMENT_RECORD)
            return 0;
        uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
        uint64_t base = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_OFFSET);
        if (sl_batch_validate(record, count) != 0 || count > UINT64_MAX - base)
            return 0;
        if (base != w->next_offset) {
            w->mismatch = true;
            w->mismatch_offset = base;
            return 0;
        }
        uint64_t timestamp = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_TIMESTAMP);
        if (rebuilt &&
            (w->batches == 0 || x->every_batch || w->end - entry_pos >= REBUILD_STRIDE)) {
            sl_put_u64(rebuilt, base);
            sl_put_u64(rebuilt, timestamp);
            sl_put_u64(rebuilt, w->end);
            entry_pos = w->end;
        }
        w->end = c.pos;
        w->next_offset = base + count;
        w->last_timestamp = timestamp;
        w->batches++;
    }
}

static void take_walk(recover_ctx_t *x, const walk_t *w)
{
    x->rec->messages = w->next_offset - x->start;
    x->rec->size = w->end;
    x->rec->end_timestamp = w->batches ? w->last_timestamp : 0;
}

static int refuse_mismatch(recover_ctx_t *x, const walk_t *w)
{
    snprintf(x->err, x->err_len,
             "partition segment %s: the batch at byte %" PRIu64 " has base offset %" PRIu64
             " where offset %" PRIu64 " must follow; refusing the partition",
             x->log_path, w->end, w->mismatch_offset, w->next_offset);
    return -SL_ERR_STATE_FILE_CORRUPTED;
}

/* Settles the bounds from the index: walks from the last entry; an entry whose batch is torn
 * (a flush that did not survive a crash) is dropped and the walk starts from the one before.
 * Returns 0, NEED_LOG_WALK when the index is garbled, or a refusal. */
static int recover_from_index(recover_ctx_t *x, uint64_t n)
{
    sl_segment_recovery_t *rec = x->rec;
    sl_index_entry_t e;
    if (sl_segment_index_read(x->index_fd, n - 1, &e) < 0)
        return NEED_LOG_WALK;
    if (e.position > rec->log_size) {
        snprintf(x->err, x->err_len,
                 "partition segment %s: the last .index entry (offset %" PRIu64
                 ") points at byte %" PRIu64 ", past the end of the .log (%" PRIu64
                 " bytes); refusing the partition",
                 x->log_path, e.offset, e.position, rec->log_size);
        return -SL_ERR_CANNOT_READ_INDEX_POSITION;
    }
    for (uint64_t k = n; k-- > 0;) {
        if (sl_segment_index_read(x->index_fd, k, &e) < 0)
            return NEED_LOG_WALK;
        if (e.position > rec->log_size || e.offset < x->start)
            return NEED_LOG_WALK;
        walk_t w;
        int rc = walk(x, e.position, e.offset, NULL, &w);
        if (rc < 0)
            return rc;
        if (w.mismatch && w.batches == 0)
            return NEED_LOG_WALK; /* the entry names another batch than the one it points at */
        if (w.mismatch)
            return refuse_mismatch(x, &w);
        if (w.batches == 0)
            continue; /* torn at this entry */
        sl_index_entry_t next;
        if (k + 1 < n &&
            (sl_segment_index_read(x->index_fd, k + 1, &next) < 0 || next.position < w.end))
            return NEED_LOG_WALK; /* a dropped entry inside valid batches: garbled */
        if (x->every_batch && w.batches > 1)
            return NEED_LOG_WALK; /* entries lost in a crash: rebuilt as every replica has them */
        take_walk(x, &w);
        rec->index_keep = k + 1;
        return 0;
    }
    return NEED_LOG_WALK;
}

/* Settles the bounds by walking the whole .log and collects a new index on the way. */
static int recover_by_walk(recover_ctx_t *x)
{
    sl_segment_recovery_t *rec = x->rec;
    walk_t w;
    int rc = walk(x, 0, x->start, &rec->rebuilt, &w);
    if (rc < 0)
        return rc;
    if (w.mismatch)
        return refuse_mismatch(x, &w);
    if (!sl_buf_ok(&rec->rebuilt)) {
        snprintf(x->err, x->err_len, "partition segment %s: out of memory", x->log_path);
        return -SL_ERR_CANNOT_READ_FILE;
    }
    take_walk(x, &w);
    rec->index_rebuild = !(rec->index_found == 0 && rec->rebuilt.len == 0);
    return 0;
}

/* Opens the files read-only and learns their sizes. */
static int open_files(recover_ctx_t *x, const char *dir, uint64_t *index_size)
{
    char index_path[PATH_MAX];
    if (!sl_segment_path(x->log_path, dir, x->start, SL_SEGMENT_LOG_EXT) ||
        !sl_segment_path(index_path, dir, x->start, SL_SEGMENT_INDEX_EXT)) {
        snprintf(x->err, x->err_len, "partition directory path too long: %s", dir);
        return -SL_ERR_CANNOT_READ_FILE;
    }
    x->log_fd = sl_io_open(x->log_path, O_RDONLY, 0);
    int rc = x->log_fd < 0 ? x->log_fd : sl_io_size(x->log_fd, &x->rec->log_size);
    if (rc < 0) {
        snprintf(x->err, x->err_len, "partition segment %s: cannot open: %s", x->log_path,
                 strerror(-rc));
        return -SL_ERR_CANNOT_OPEN_PARTITION_LOG_FILE;
    }
    *index_size = 0;
    x->index_fd = sl_io_open(index_path, O_RDONLY, 0);
    rc = x->index_fd == -ENOENT ? 0 : x->index_fd;
    if (rc >= 0 && x->index_fd >= 0)
        rc = sl_io_size(x->index_fd, index_size);
    if (rc < 0) {
        snprintf(x->err, x->err_len, "partition segment %s: cannot open: %s", index_path,
                 strerror(-rc));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    return 0;
}

int sl_segment_recover(const char *dir, uint64_t start, uint64_t batch_max, bool every_batch,
                       sl_buf_t *buf, sl_segment_recovery_t *rec, char *err, size_t err_len)
{
    sl_buf_t rebuilt = rec->rebuilt;
    sl_buf_reset(&rebuilt);
    *rec = (sl_segment_recovery_t){.rebuilt = rebuilt};
    recover_ctx_t x = {start, batch_max, every_batch, buf, -1, -1, "", rec, err, err_len};
    uint64_t index_size;
    int rc = open_files(&x, dir, &index_size);
    if (rc == 0) {
        rec->index_found = index_size / SL_INDEX_ENTRY_SIZE;
        bool whole = index_size > 0 && index_size % SL_INDEX_ENTRY_SIZE == 0;
        rc = whole ? recover_from_index(&x, rec->index_found) : NEED_LOG_WALK;
        if (rc == NEED_LOG_WALK) {
            if (index_size > 0)
                sl_log_warn("partition segment %s: the .index (%" PRIu64
                            " bytes) is torn or does not match the .log; walking the .log",
                            x.log_path, index_size);
            rc = recover_by_walk(&x);
        }
    }
    if (x.log_fd >= 0)
        sl_io_close(x.log_fd);
    if (x.index_fd >= 0)
        sl_io_close(x.index_fd);
    return rc;
}

/* --- repairs ------------------------------------------------------------------------------ */

static int cut_log(const char *dir, uint64_t start, uint64_t size, uint64_t log_size)
{
    char path[PATH_MAX];
    if (!sl_segment_path(path, dir, start, SL_SEGMENT_LOG_EXT))
        return -ENAMETOOLONG;
    int fd = sl_io_open(path, O_WRONLY, 0);
    if (fd < 0)
        return fd;
    int rc = sl_io_ftruncate(fd, (off_t)size);
    if (rc == 0)
        rc = sl_io_fdatasync(fd);
    sl_io_close(fd);
    if (rc == 0)
        sl_log_warn("partition segment %s: cut a torn tail of %" PRIu64 " bytes at byte %" PRIu64,
                    path, log_size - size, size);
    return rc;
}

static int fix_index(const char *dir, uint64_t start, const sl_segment_recovery_t *rec)
{
    char path[PATH_MAX];
    if (!sl_segment_path(path, dir, start, SL_SEGMENT_INDEX_EXT))
        return -ENAMETOOLONG;
    int flags = rec->index_rebuild ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY;
    int fd = sl_io_open(path, flags, sl_io_file_mode());
    if (fd < 0)
        return fd;
    int rc;
    if (rec->index_rebuild)
        rc = sl_io_pwrite_all(fd, rec->rebuilt.data, rec->rebuilt.len, 0);
    else
        rc = sl_io_ftruncate(fd, (off_t)(rec->index_keep * SL_INDEX_ENTRY_SIZE));
    if (rc == 0)
        rc = sl_io_fdatasync(fd);
    sl_io_close(fd);
    return rc;
}

int sl_segment_repair(sl_segment_t *s, const char *dir, uint64_t start,
                      const sl_segment_recovery_t *rec)
{
    *s = (sl_segment_t){
        .dir = dir,
        .start_offset = start,
        .messages = rec->messages,
        .size = rec->size,
        .end_timestamp = rec->end_timestamp,
        .index_entries =
            rec->index_rebuild ? rec->rebuilt.len / SL_INDEX_ENTRY_SIZE : rec->index_keep,
        .log_fd = -1,
        .index_fd = -1,
    };
    int rc = 0;
    if (rec->log_size > rec->size)
        rc = cut_log(dir, start, rec->size, rec->log_size);
    if (rc == 0 && (rec->index_rebuild || rec->index_keep < rec->index_found))
        rc = fix_index(dir, start, rec);
    if (rc < 0) {
        sl_log_error("partition segment %020" PRIu64 " in %s: cannot repair: %s", start, dir,
                     strerror(-rc));
        return -SL_ERR_CANNOT_WRITE_TO_FILE;
    }
    return 0;
}
