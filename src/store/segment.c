/* Segment files (store/segment.h): naming, creation, the appending write with its index entry,
 * index lookups, the record cursor, and the recovery of one segment's bounds at boot. */
#define _GNU_SOURCE /* fallocate and FALLOC_FL_KEEP_SIZE */
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

/* Bytes a cursor reads from a .log per pread: enough for many small batches per system call,
 * small enough that a poll for a few messages does not read megabytes. */
#define CURSOR_CHUNK (256u * 1024u)

bool sl_segment_path(char out[PATH_MAX], const char *dir, uint64_t start, const char *ext)
{
    int n = snprintf(out, PATH_MAX, "%s/%020" PRIu64 "%s", dir, start, ext);
    return n > 0 && n < PATH_MAX;
}

bool sl_segment_parse_name(const char *name, const char *ext, uint64_t *start)
{
    if (strlen(name) != 20 + strlen(ext) || strcmp(name + 20, ext) != 0)
        return false;
    uint64_t value = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        unsigned digit = (unsigned)(name[i] - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    *start = value;
    return true;
}

void sl_segment_index_encode(uint8_t raw[SL_INDEX_ENTRY_SIZE], const sl_index_entry_t *e)
{
    sl_store_u64(raw, e->offset);
    sl_store_u64(raw + 8, e->timestamp);
    sl_store_u64(raw + 16, e->position);
}

int sl_segment_index_read(int fd, uint64_t k, sl_index_entry_t *e)
{
    uint8_t raw[SL_INDEX_ENTRY_SIZE];
    ssize_t got = sl_io_pread_all(fd, raw, sizeof(raw), (off_t)(k * SL_INDEX_ENTRY_SIZE));
    if (got != (ssize_t)sizeof(raw))
        return got < 0 ? (int)got : -EIO;
    *e = (sl_index_entry_t){sl_load_u64(raw), sl_load_u64(raw + 8), sl_load_u64(raw + 16)};
    return 0;
}

/* --- files ---------------------------------------------------------------------------------- */

/* Reserves the segment's bytes up front so a full disk shows at rotation rather than in the
 * middle of a flush. Best effort: not every file system supports it, and nothing depends on
 * it. KEEP_SIZE leaves the file size alone, so recovery never sees the reserved zeros. */
static void preallocate_log(int fd, uint64_t bytes, const char *path)
{
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)bytes) != 0)
        sl_log_debug("segment %s: cannot preallocate %" PRIu64 " bytes: %s", path, bytes,
                     strerror(errno));
}

int sl_segment_create(sl_segment_t *s, const char *dir, uint64_t start, uint64_t preallocate)
{
    *s = (sl_segment_t){.dir = dir, .start_offset = start, .log_fd = -1, .index_fd = -1};
    char log_path[PATH_MAX], index_path[PATH_MAX];
    if (!sl_segment_path(log_path, dir, start, SL_SEGMENT_LOG_EXT) ||
        !sl_segment_path(index_path, dir, start, SL_SEGMENT_INDEX_EXT))
        return -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE;
    int fd = sl_io_open(log_path, O_RDWR | O_CREAT | O_TRUNC, sl_io_file_mode());
    if (fd < 0) {
        sl_log_error("segment %s: cannot create: %s", log_path, strerror(-fd));
        return -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE;
    }
    int index_fd = sl_io_open(index_path, O_RDWR | O_CREAT | O_TRUNC, sl_io_file_mode());
    if (index_fd < 0) {
        sl_log_error("segment %s: cannot create: %s", index_path, strerror(-index_fd));
        sl_io_close(fd);
        sl_io_unlink(log_path);
        return -SL_ERR_CANNOT_CREATE_SEGMENT_INDEX_FILE;
    }
    if (preallocate)
        preallocate_log(fd, preallocate, log_path);
    s->log_fd = fd;
    s->index_fd = index_fd;
    return 0;
}

void sl_segment_adopt(sl_segment_t *s, const char *dir, uint64_t start, int log_fd, int index_fd,
                      uint64_t preallocate)
{
    *s = (sl_segment_t){.dir = dir, .start_offset = start, .log_fd = log_fd, .index_fd = index_fd};
    if (preallocate)
        preallocate_log(log_fd, preallocate, dir);
}

int sl_segment_open_active(sl_segment_t *s, const char *dir)
{
    char log_path[PATH_MAX], index_path[PATH_MAX];
    if (!sl_segment_path(log_path, dir, s->start_offset, SL_SEGMENT_LOG_EXT) ||
        !sl_segment_path(index_path, dir, s->start_offset, SL_SEGMENT_INDEX_EXT))
        return -SL_ERR_CANNOT_OPEN_PARTITION_LOG_FILE;
    int fd = sl_io_open(log_path, O_RDWR, 0);
    if (fd < 0) {
        sl_log_error("segment %s: cannot open: %s", log_path, strerror(-fd));
        return -SL_ERR_CANNOT_OPEN_PARTITION_LOG_FILE;
    }
    int index_fd = sl_io_open(index_path, O_RDWR | O_CREAT, sl_io_file_mode());
    if (index_fd < 0) {
        sl_log_error("segment %s: cannot open: %s", index_path, strerror(-index_fd));
        sl_io_close(fd);
        return -SL_ERR_CANNOT_OPEN_PARTITION_LOG_FILE;
    }
    s->log_fd = fd;
    s->index_fd = index_fd;
    return 0;
}

void sl_segment_close(sl_segment_t *s)
{
    if (s->log_fd >= 0)
        sl_io_close(s->log_fd);
    if (s->index_fd >= 0)
        sl_io_close(s->index_fd);
    s->log_fd = s->index_fd = -1;
}

int sl_segment_unlink(const char *dir, uint64_t start)
{
    char path[PATH_MAX];
    int rc = 0;
    const char *exts[2] = {SL_SEGMENT_LOG_EXT, SL_SEGMENT_INDEX_EXT};
    for (int i = 0; i < 2; i++) {
        if (!sl_segment_path(path, dir, start, exts[i]))
            return -SL_ERR_CANNOT_DELETE_FILE;
        int err = sl_io_unlink(path);
        if (err < 0 && err != -ENOENT) {
            sl_log_error("segment %s: cannot delete: %s", path, strerror(-err));
            rc = -SL_ERR_CANNOT_DELETE_FILE;
            if (i == 0)
                return rc; /* keep the .index of a .log that is still there */
        }
    }
    return rc;
}

/* --- append --------------------------------------------------------------------------------- */

/* Writes every iovec at off, at most SL_SEGMENT_IOV_MAX per call, continuing after short
 * writes; the iovecs are advanced in place. 0 or -errno. */
static int write_iov(int fd, struct iovec *iov, size_t iovcnt, uint64_t off)
{
    size_t first = 0;
    while (first < iovcnt) {
        if (iov[first].iov_len == 0) {
            first++;
            continue;
        }
        size_t n = iovcnt - first < SL_SEGMENT_IOV_MAX ? iovcnt - first : SL_SEGMENT_IOV_MAX;
        ssize_t rc = sl_io_pwritev(fd, iov + first, (int)n, (off_t)off);
        if (rc < 0)
            return (int)rc;
        if (rc == 0)
            return -EIO; /* no progress: never spin */
        off += (uint64_t)rc;
        size_t done = (size_t)rc;
        while (done > 0) {
            size_t take = done < iov[first].iov_len ? done : iov[first].iov_len;
            iov[first].iov_base = (uint8_t *)iov[first].iov_base + take;
            iov[first].iov_len -= take;
            done -= take;
            if (iov[first].iov_len == 0)
                first++;
        }
    }
    return 0;
}

/* Cuts both files back to what is counted, so no reader and no recovery sees a failed write. */
static int cut_tail(sl_segment_t *s)
{
    int rc = sl_io_ftruncate(s->log_fd, (off_t)s->size);
    if (rc == 0)
        rc = sl_io_ftruncate(s->index_fd, (off_t)(s->index_entries * SL_INDEX_ENTRY_SIZE));
    s->tail_dirty = rc < 0;
    return rc;
}

int sl_segment_append(sl_segment_t *s, sl_segment_chunk_t *chunk, bool sync)
{
    sl_assert(!s->sealed && s->log_fd >= 0 && s->index_fd >= 0);
    sl_assert(chunk->bytes > 0 && chunk->messages > 0);
    if (s->tail_dirty && cut_tail(s) < 0) {
        sl_log_error("partition %s: segment %020" PRIu64 ": cannot cut the bytes of a failed write",
                     s->dir, s->start_offset);
        return -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT;
    }
    const char *what = "write the .log";
    int err = -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT;
    int rc = write_iov(s->log_fd, chunk->iov, chunk->iovcnt, s->size);
    /* One fdatasync per acknowledged write, of the .log only, and before
     * the index entry is written: the entry can then never reach the disk
     * ahead of the bytes it points at (storage.md 4 step 5 would refuse the
     * partition), and an entry lost in a crash costs nothing but a longer
     * walk at boot (step 2 walks the .log from the last entry to its end).
     * The index is synced when the segment is sealed and at close. */
    if (rc == 0 && sync) {
        what = "fdatasync the .log";
        err = -SL_ERR_CANNOT_SYNC_FILE;
        rc = sl_io_fdatasync(s->log_fd);
    }
    if (rc == 0) {
        uint8_t raw[SL_INDEX_ENTRY_SIZE];
        sl_index_entry_t entry = {chunk->first_offset, chunk->first_timestamp, s->size};
        sl_segment_index_encode(raw, &entry);
        const uint8_t *entries = chunk->index_raw ? chunk->index_raw : raw;
        size_t count = chunk->index_raw ? chunk->index_count : 1;
        what = "write the .index";
        err = -SL_ERR_CANNOT_SAVE_INDEX_TO_SEGMENT;
        rc = sl_io_pwrite_all(s->index_fd, entries, count * SL_INDEX_ENTRY_SIZE,
                              (off_t)(s->index_entries * SL_INDEX_ENTRY_SIZE));
    }
    if (rc < 0) {
        sl_log_error("partition %s: segment %020" PRIu64 ": cannot %s for offsets %" PRIu64
                     "..%" PRIu64 " at byte %" PRIu64 ": %s",
                     s->dir, s->start_offset, what, chunk->first_offset,
                     chunk->first_offset + chunk->messages - 1, s->size, strerror(-rc));
        cut_tail(s);
        return err;
    }
    s->size += chunk->bytes;
    s->index_entries += chunk->index_raw ? chunk->index_count : 1;
    s->messages += chunk->messages;
    s->end_timestamp = chunk->last_timestamp;
    return 0;
}

/* --- reading -------------------------------------------------------------------------------- */

int sl_segment_reader_open(const sl_segment_t *s, const char *dir, sl_segment_reader_t *r)
{
    if (s->log_fd >= 0) {
        *r = (sl_segment_reader_t){s->log_fd, s->index_fd, false};
        return 0;
    }
    *r = (sl_segment_reader_t){-1, -1, true};
    char path[PATH_MAX];
    if (!sl_segment_path(path, dir, s->start_offset, SL_SEGMENT_LOG_EXT))
        return -SL_ERR_CANNOT_READ_FILE;
    int fd = sl_io_open(path, O_RDONLY, 0);
    if (fd < 0) {
        sl_log_error("segment %s: cannot open for reading: %s", path, strerror(-fd));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    r->log_fd = fd;
    if (sl_segment_path(path, dir, s->start_offset, SL_SEGMENT_INDEX_EXT)) {
        int index_fd = sl_io_open(path, O_RDONLY, 0);
        r->index_fd = index_fd < 0 ? -1 : index_fd;
    }
    return 0;
}

void sl_segment_reader_close(sl_segment_reader_t *r)
{
    if (r->owned) {
        if (r->log_fd >= 0)
            sl_io_close(r->log_fd);
        if (r->index_fd >= 0)
            sl_io_close(r->index_fd);
    }
    r->log_fd = r->index_fd = -1;
}

int sl_segment_lookup(const sl_segment_t *s, int index_fd, bool by_timestamp, uint64_t target,
                      uint64_t *position, uint64_t *offset)
{
    *position = 0;
    *offset = s->start_offset;
    if (index_fd < 0)
        return 0;
    /* Entries qualify (key <= target, or timestamp < target) in a prefix of the index, since
     * offsets rise and timestamps never fall; find the last one of that prefix. */
    uint64_t lo = 0, hi = s->index_entries;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        sl_index_entry_t e = {0};
        int rc = sl_segment_index_read(index_fd, mid, &e);
        if (rc < 0) {
            sl_log_error("partition %s: segment %020" PRIu64 ": cannot read index entry %" PRIu64
                         ": %s",
                         s->dir, s->start_offset, mid, strerror(-rc));
            return -SL_ERR_CANNOT_READ_FILE;
        }
        bool qualifies = by_timestamp ? e.timestamp < target : e.offset <= target;
        if (qualifies) {
            *position = e.position;
            *offset = e.offset;
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return 0;
}

void sl_segment_cursor_init(sl_segment_cursor_t *c, int fd, uint64_t pos, uint64_t end,
                            uint64_t batch_max, sl_buf_t *buf)
{
    sl_buf_reset(buf);
    *c = (sl_segment_cursor_t){
        .fd = fd, .pos = pos, .end = end, .batch_max = batch_max, .buf = buf, .buf_pos = pos};
}

/* Makes file bytes [pos, pos + n) available: from the chunk already read, else by reading a
 * new chunk starting at pos. SL_SEGMENT_RECORD with *out set; SL_SEGMENT_TORN when the file
 * ends first, SL_SEGMENT_IO when the read fails (errno's value changes nothing for callers, and
 * a step constant, unlike an -errno narrowed from ssize_t, is provably not the success value:
 * gcc -O3 warned that *out might be read unset). */
static sl_segment_step_t cursor_fill(sl_segment_cursor_t *c, uint64_t n, const uint8_t **out)
{
    sl_buf_t *b = c->buf;
    if (c->pos >= c->buf_pos && c->pos - c->buf_pos + n <= b->len) {
        *out = b->data + (c->pos - c->buf_pos);
        return SL_SEGMENT_RECORD;
    }
    uint64_t want = n > CURSOR_CHUNK ? n : CURSOR_CHUNK;
    if (want > c->end - c->pos)
        want = c->end - c->pos;
    sl_buf_reset(b);
    uint8_t *p = sl_buf_extend(b, (size_t)want);
    if (!p)
        return SL_SEGMENT_IO;
    ssize_t got = sl_io_pread_all(c->fd, p, (size_t)want, (off_t)c->pos);
    b->len = got < 0 ? 0 : (size_t)got;
    c->buf_pos = c->pos;
    if (got < 0)
        return SL_SEGMENT_IO;
    if ((uint64_t)got < n)
        return SL_SEGMENT_TORN; /* the file is shorter than the segment says */
    *out = p;
    return SL_SEGMENT_RECORD;
}

sl_segment_step_t sl_segment_peek(sl_segment_cursor_t *c, sl_span_t *header)
{
    if (c->pos >= c->end)
        return SL_SEGMENT_END;
    uint64_t left = c->end - c->pos;
    if (left < SL_BATCH_HEADER_SIZE)
        return SL_SEGMENT_TORN;
    const uint8_t *p = c->head;
    bool buffered =
        c->pos >= c->buf_pos && c->pos - c->buf_pos + SL_BATCH_HEADER_SIZE <= c->buf->len;
    if (buffered) {
        p = c->buf->data + (c->pos - c->buf_pos);
    } else {
        /* The header first, not a chunk: a record of a chunk or more is then read whole by
         * the caller (a poll's direct read) or skipped, and a chunk read here would have had
         * its first 256 KiB read twice (1.25 MB per 1 MB record polled) or for nothing. */
        ssize_t got = sl_io_pread_all(c->fd, c->head, SL_BATCH_HEADER_SIZE, (off_t)c->pos);
        if (got < 0)
            return SL_SEGMENT_IO;
        if (got < (ssize_t)SL_BATCH_HEADER_SIZE)
            return SL_SEGMENT_TORN; /* the file is shorter than the segment says */
    }
    uint64_t length = sl_load_u64(p + SL_BATCH_OFF_LENGTH);
    if (length < SL_SEGMENT_RECORD_MIN || length > c->batch_max || length > left)
        return SL_SEGMENT_TORN;
    if (!buffered && length < CURSOR_CHUNK) {
        /* A smaller record: the chunk from here, so it and the records after it are read
         * together, as before (one 256-byte read more per chunk). */
        sl_segment_step_t filled = cursor_fill(c, length, &p);
        if (filled != SL_SEGMENT_RECORD)
            return filled;
    }
    *header = sl_span(p, SL_BATCH_HEADER_SIZE);
    return SL_SEGMENT_RECORD;
}

void sl_segment_skip(sl_segment_cursor_t *c, sl_span_t header)
{
    c->pos += sl_load_u64(header.ptr + SL_BATCH_OFF_LENGTH);
}

sl_segment_step_t sl_segment_next(sl_segment_cursor_t *c, sl_span_t *record)
{
    sl_span_t header;
    sl_segment_step_t step = sl_segment_peek(c, &header);
    if (step != SL_SEGMENT_RECORD)
        return step;
    uint64_t length = sl_load_u64(header.ptr + SL_BATCH_OFF_LENGTH);
    const uint8_t *p;
    sl_segment_step_t filled = cursor_fill(c, length, &p);
    if (filled != SL_SEGMENT_RECORD)
        return filled;
    *record = sl_span(p, (size_t)length);
    c->pos += length;
    return SL_SEGMENT_RECORD;
}
