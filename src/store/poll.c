/* Polls of a partition (store/partition.h, messages.md 4): the segments first (index lookup,
 * then a walk of the .log), then the in-memory journal; every stored record with selected
 * frames is appended whole or sliced by wire/batch.h, never re-encoded. A large record served
 * whole from a .log is read straight into the reply, so its bytes are copied once on the way
 * from the page cache to the reply buffer, not twice. */
#include <inttypes.h>
#include <sluice/error.h>

#include "base/io.h"
#include "base/log.h"
#include "store/partition_internal.h"
#include "wire/batch.h"

typedef struct poll_ctx {
    sl_partition_t *p;
    const sl_partition_poll_t *q;
    sl_buf_t *out;
    sl_partition_poll_result_t *res;
    uint64_t start; /* offset polls: the first offset wanted */
    uint32_t remaining;
    bool stop;
} poll_ctx_t;

static bool by_timestamp(const poll_ctx_t *c)
{
    return c->q->kind == SL_PARTITION_POLL_TIMESTAMP;
}

static void stop_with(poll_ctx_t *c, int error)
{
    c->stop = true;
    c->res->read_error = error;
}

/* True when some frame of the record is selected (messages.md 4.1); reads the header only. */
static bool wanted(const poll_ctx_t *c, sl_span_t record)
{
    if (by_timestamp(c))
        return sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_TIMESTAMP) >= c->q->value;
    uint64_t base = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_OFFSET);
    return base + sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT) > c->start;
}

/* Counts taken messages from offset first as appended to the reply. */
static void served(poll_ctx_t *c, uint64_t first, uint32_t taken)
{
    if (c->res->messages == 0)
        c->res->first_offset = first;
    c->res->last_offset = first + taken - 1;
    c->res->messages += taken;
    c->remaining -= taken;
    if (c->remaining == 0)
        c->stop = true;
}

static void verification_failed(poll_ctx_t *c, sl_span_t record, int rc)
{
    sl_log_error("partition %s: the stored batch at offset %" PRIu64
                 " fails verification (%d); the poll stops before it",
                 c->p->dir, sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_OFFSET), rc);
    stop_with(c, rc);
}

/* Appends the selected frames of one stored record; verify re-checks a record read from disk
 * first (only records that are served: those skipped on the way are not hashed). */
static void serve(poll_ctx_t *c, sl_span_t record, bool verify)
{
    if (!wanted(c, record))
        return;
    if (verify) {
        int rc = sl_batch_validate(record, sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT));
        if (rc < 0) {
            verification_failed(c, record, rc);
            return;
        }
    }
    /* A sliced record is never longer than the stored one. */
    if (!sl_buf_ok(c->out) || record.len > c->out->max - c->out->len) {
        c->res->out_full = true;
        c->stop = true;
        return;
    }
    uint32_t taken = 0;
    int rc = by_timestamp(c)
                 ? sl_batch_slice_timestamp(c->out, record, c->q->value, c->remaining, &taken)
                 : sl_batch_slice_offset(c->out, record, c->start, c->remaining, &taken);
    if (rc < 0) {
        stop_with(c, rc);
        return;
    }
    if (taken == 0)
        return;
    uint64_t base = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_OFFSET);
    served(c, !by_timestamp(c) && c->start > base ? c->start : base, taken);
}

/* The record whose header the cursor just peeked, when every one of its frames is selected
 * and its bytes are not in the cursor's chunk yet: read once, straight into the reply, then
 * checked there exactly as serve() checks a record (verified with validate_checksum, else its
 * layout) and taken out again when that fails. The cursor path would read it into its own
 * buffer and serve() would copy it a second time. False when the record does not qualify or
 * could not be read whole: the caller then takes the cursor path, which reports what is wrong. */
static bool serve_direct(poll_ctx_t *c, sl_segment_cursor_t *cursor, sl_span_t header)
{
    uint64_t length = sl_load_u64(header.ptr + SL_BATCH_OFF_LENGTH);
    uint64_t base = sl_load_u64(header.ptr + SL_BATCH_OFF_BASE_OFFSET);
    uint32_t count = sl_load_u32(header.ptr + SL_BATCH_OFF_COUNT);
    bool whole = (by_timestamp(c) || base >= c->start) && count > 0 && count <= c->remaining;
    bool buffered = cursor->pos + length <= cursor->buf_pos + cursor->buf->len;
    sl_buf_t *out = c->out;
    if (!whole || buffered || !sl_buf_ok(out) || length > out->max - out->len)
        return false; /* serve() slices it, or finds out that it does not fit */
    size_t mark = out->len;
    uint8_t *dst = sl_buf_extend(out, (size_t)length);
    if (!dst) {
        c->res->out_full = true; /* sticky on out: nothing more can be appended */
        c->stop = true;
        return true;
    }
    ssize_t got = sl_io_pread_all(cursor->fd, dst, (size_t)length, (off_t)cursor->pos);
    sl_span_t record = sl_span(dst, (size_t)length);
    if (got != (ssize_t)length || sl_load_u64(dst + SL_BATCH_OFF_LENGTH) != length) {
        out->len = mark;
        return false;
    }
    int rc = c->p->cfg.validate_checksum ? sl_batch_validate(record, count)
                                         : sl_batch_check_layout(record);
    if (rc < 0) {
        out->len = mark;
        if (c->p->cfg.validate_checksum)
            verification_failed(c, record, rc);
        else
            stop_with(c, rc);
        return true;
    }
    sl_segment_skip(cursor, header);
    served(c, base, count);
    return true;
}

/* Walks segment s from pos, where a batch with base offset `expected` must start, serving
 * records. False when that position holds no such batch and nothing was read from it (a
 * garbled index entry): the caller walks again from byte 0. */
static bool walk_segment(poll_ctx_t *c, const sl_segment_t *s, int fd, uint64_t pos,
                         uint64_t expected)
{
    sl_partition_t *p = c->p;
    sl_segment_cursor_t cursor;
    sl_buf_t *buf = p->cfg.read_buf ? p->cfg.read_buf : &p->read_buf;
    sl_segment_cursor_init(&cursor, fd, pos, s->size, p->cfg.batch_max, buf);
    bool first = true;
    while (!c->stop) { /* bounded: each record moves the cursor forward */
        sl_span_t header, record;
        uint64_t at = cursor.pos;
        sl_segment_step_t step = sl_segment_peek(&cursor, &header);
        if (step == SL_SEGMENT_END)
            return true;
        if (step == SL_SEGMENT_RECORD &&
            sl_load_u64(header.ptr + SL_BATCH_OFF_BASE_OFFSET) == expected) {
            first = false;
            expected += sl_load_u32(header.ptr + SL_BATCH_OFF_COUNT);
            if (!wanted(c, header)) {
                sl_segment_skip(&cursor, header); /* its frames are never read */
                continue;
            }
            if (serve_direct(c, &cursor, header))
                continue;
            step = sl_segment_next(&cursor, &record);
            if (step == SL_SEGMENT_RECORD) {
                serve(c, record, p->cfg.validate_checksum);
                continue;
            }
        }
        if (first && pos > 0 && step != SL_SEGMENT_IO)
            return false;
        sl_log_error("partition %s: segment %020" PRIu64 ": %s at byte %" PRIu64 " (offset %" PRIu64
                     " expected); the poll stops there",
                     p->dir, s->start_offset,
                     step == SL_SEGMENT_IO ? "read error" : "no valid batch", at, expected);
        stop_with(c, step == SL_SEGMENT_IO ? -SL_ERR_CANNOT_READ_FILE : -SL_ERR_INVALID_FORMAT);
    }
    return true;
}

static void read_segment(poll_ctx_t *c, const sl_segment_t *s)
{
    sl_segment_reader_t r;
    if (sl_segment_reader_open(s, c->p->dir, &r) < 0) {
        stop_with(c, -SL_ERR_CANNOT_READ_FILE);
        return;
    }
    bool by_ts = by_timestamp(c);
    uint64_t pos, expected;
    if (sl_segment_lookup(s, r.index_fd, by_ts, by_ts ? c->q->value : c->start, &pos, &expected) <
        0) {
        pos = 0; /* an unreadable index only costs a longer walk */
        expected = s->start_offset;
    }
    if (!walk_segment(c, s, r.log_fd, pos, expected)) {
        sl_log_warn("partition %s: segment %020" PRIu64 ": the index entry for byte %" PRIu64
                    " does not match the .log; walking from its start",
                    c->p->dir, s->start_offset, pos);
        walk_segment(c, s, r.log_fd, 0, s->start_offset);
    }
    sl_segment_reader_close(&r);
}

static void poll_disk(poll_ctx_t *c)
{
    sl_partition_t *p = c->p;
    size_t i = 0;
    if (by_timestamp(c)) {
        /* Timestamps never fall from one segment to the next. */
        while (i < p->segment_count && p->segments[i].end_timestamp < c->q->value)
            i++;
    } else {
        uint64_t disk_end = p->journal_count ? p->journal[0].base_offset : p->next_offset;
        if (c->start >= disk_end)
            return;
        size_t lo = 0, hi = p->segment_count; /* last segment starting at or below start */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->segments[mid].start_offset <= c->start)
                lo = mid + 1;
            else
                hi = mid;
        }
        i = lo ? lo - 1 : 0;
    }
    for (; i < p->segment_count && !c->stop; i++)
        if (p->segments[i].messages > 0)
            read_segment(c, &p->segments[i]);
}

static void poll_journal(poll_ctx_t *c)
{
    const sl_partition_t *p = c->p;
    size_t lo = 0, hi = p->journal_count;
    bool by_ts = by_timestamp(c);
    while (lo < hi) { /* by timestamp: first entry at or after; by offset: past the last <= */
        size_t mid = lo + (hi - lo) / 2;
        const journal_entry_t *e = &p->journal[mid];
        if (by_ts ? e->timestamp < c->q->value : e->base_offset <= c->start)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = by_ts || lo == 0 ? lo : lo - 1;
    for (; i < p->journal_count && !c->stop; i++)
        serve(c, sl_span(p->journal[i].record, p->journal[i].len), false);
}

int sl_partition_poll(sl_partition_t *p, const sl_partition_poll_t *q, sl_buf_t *out,
                      sl_partition_poll_result_t *res)
{
    *res = (sl_partition_poll_result_t){
        .current_offset = sl_partition_current_offset(p),
        .empty = sl_partition_empty(p),
    };
    if (q->kind != SL_PARTITION_POLL_OFFSET && q->kind != SL_PARTITION_POLL_TIMESTAMP)
        return -SL_ERR_INVALID_COMMAND;
    if (q->count == 0 || p->next_offset == 0)
        return 0;
    poll_ctx_t c = {p, q, out, res, 0, q->count, false};
    if (q->kind == SL_PARTITION_POLL_OFFSET) {
        if (q->value >= p->next_offset)
            return 0;
        uint64_t first = sl_partition_first_offset(p);
        c.start = q->value > first ? q->value : first;
    }
    poll_disk(&c);
    if (!c.stop)
        poll_journal(&c);
    sl_partition_trim_read_buf(p);
    return 0;
}
