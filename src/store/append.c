/* The write path of a partition (store/partition.h, storage.md 3): stamping into the in-memory
 * journal, the flush gate, flushes split at segment boundaries with rotation, and the rollback
 * of an append whose flush failed. Message bytes are never copied: the journal points into the
 * caller's buffers and the flush hands those same buffers to a vectored write. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <malloc.h>
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"
#include "store/partition_internal.h"
#include "wire/batch.h"

static uint64_t preallocate_bytes(const sl_partition_t *p)
{
    return p->cfg.preallocate_segments ? p->cfg.segment_size : 0;
}

static sl_segment_t *active_segment(sl_partition_t *p)
{
    sl_assert(p->segment_count > 0);
    return &p->segments[p->segment_count - 1];
}

static bool journal_reserve(sl_partition_t *p, size_t n)
{
    if (p->journal_count + n <= p->journal_cap)
        return true;
    size_t cap = p->journal_cap ? p->journal_cap : 64;
    while (cap < p->journal_count + n)
        cap *= 2;
    journal_entry_t *journal = realloc(p->journal, cap * sizeof(*journal));
    if (!journal)
        return false;
    p->journal = journal;
    struct iovec *iov = realloc(p->iov, cap * sizeof(*iov));
    if (!iov)
        return false;
    p->iov = iov;
    if (p->cfg.index_every_batch) {
        uint8_t *raw = realloc(p->index_raw, cap * SL_INDEX_ENTRY_SIZE);
        if (!raw)
            return false;
        p->index_raw = raw;
    }
    p->journal_cap = cap;
    return true;
}

int sl_partition_ensure_active(sl_partition_t *p)
{
    if (p->segment_count > 0) {
        sl_segment_t *active = active_segment(p);
        return active->log_fd >= 0 ? 0 : sl_segment_open_active(active, p->dir);
    }
    if (!sl_partition_segments_reserve(p, 1) || sl_partition_make_dir(p) < 0)
        return -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE;
    uint64_t start = p->journal_count ? p->journal[0].base_offset : p->next_offset;
    sl_segment_t s;
    int rc = sl_segment_create(&s, p->dir, start, preallocate_bytes(p));
    if (rc < 0)
        return rc;
    /* The first segment's name is made durable with the rest of the tree,
     * before the first write that must be durable (write_chunk). */
    p->segments[p->segment_count++] = s;
    return 0;
}

/* Seals the active segment and starts the next one at the offset after its last message. */
static int rotate(sl_partition_t *p)
{
    if (!sl_partition_segments_reserve(p, 1))
        return -SL_ERR_CANNOT_CREATE_SEGMENT_LOG_FILE;
    sl_segment_t *active = active_segment(p);
    uint64_t start = active->start_offset + active->messages;
    sl_segment_t next;
    int rc = sl_segment_create(&next, p->dir, start, preallocate_bytes(p));
    if (rc < 0)
        return rc;
    if (p->cfg.enforce_fsync && (rc = sl_io_fsync_dir(p->dir)) < 0) {
        sl_log_error("partition %s: cannot fsync the directory after creating segment %020" PRIu64
                     ": %s",
                     p->dir, start, strerror(-rc));
        sl_segment_close(&next);
        if (sl_segment_unlink(p->dir, start) < 0)
            sl_log_warn("partition %s: segment %020" PRIu64 " left behind", p->dir, start);
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    /* The sealed segment's index is made durable once, here, rather than
     * per write (sl_segment_append); a failure only costs a longer walk at
     * boot, so it is logged, not returned. */
    if (p->cfg.enforce_fsync && (rc = sl_io_fdatasync(active->index_fd)) < 0)
        sl_log_warn("partition %s: segment %020" PRIu64 ": the .index did not fsync at seal: %s",
                    p->dir, active->start_offset, strerror(-rc));
    active->sealed = true;
    sl_segment_close(active);
    p->segments[p->segment_count++] = next;
    sl_log_debug("partition %s: sealed segment %020" PRIu64 ", started %020" PRIu64, p->dir,
                 active->start_offset, start);
    return 0;
}

static bool active_full(const sl_partition_t *p)
{
    return p->segment_count > 0 && p->segments[p->segment_count - 1].size >= p->cfg.segment_size;
}

/* The journal entries [from, end) that go into the active segment: up to and including the
 * batch that brings it to segment_size (a soft limit: a segment ends past it by less than one
 * batch). */
static size_t chunk_end(const sl_partition_t *p, size_t from, uint64_t segment_bytes)
{
    size_t i = from;
    while (i < p->journal_count) {
        segment_bytes += p->journal[i++].len;
        if (segment_bytes >= p->cfg.segment_size)
            break;
    }
    return i;
}

static int write_chunk(sl_partition_t *p, size_t from, size_t to)
{
    sl_segment_chunk_t c = {
        .iov = p->iov,
        .iovcnt = to - from,
        .first_offset = p->journal[from].base_offset,
        .first_timestamp = p->journal[from].timestamp,
        .last_timestamp = p->journal[to - 1].timestamp,
    };
    uint64_t position = active_segment(p)->size;
    for (size_t i = from; i < to; i++) {
        const journal_entry_t *e = &p->journal[i];
        p->iov[i - from] = (struct iovec){e->record, e->len};
        if (p->cfg.index_every_batch) {
            sl_index_entry_t entry = {e->base_offset, e->timestamp, position + c.bytes};
            sl_segment_index_encode(p->index_raw + (i - from) * SL_INDEX_ENTRY_SIZE, &entry);
        }
        c.bytes += e->len;
        c.messages += e->count;
    }
    if (p->cfg.index_every_batch) {
        c.index_raw = p->index_raw;
        c.index_count = to - from;
    }
    /* A purge's record before any byte that it must not purge at the next boot. */
    if (sl_partition_purge_record(p) < 0)
        return -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT;
    /* Acknowledged as durable: the names that lead to the bytes must be too. */
    if (p->cfg.enforce_fsync) {
        int rc = sl_partition_tree_durable(p);
        if (rc < 0)
            return rc;
    }
    return sl_segment_append(active_segment(p), &c, p->cfg.enforce_fsync);
}

/* Releases the first n entries, which are on disk now. */
static void drop_flushed(sl_partition_t *p, size_t n)
{
    /* A partition that was never appended to has no journal array: p->journal is NULL, and
     * even a zero-length memmove from NULL + 0 is undefined. */
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        p->journal_bytes -= p->journal[i].len;
        p->journal_messages -= p->journal[i].count;
        sl_journal_held_sub(p, p->journal[i].held);
        sl_partition_release(p, &p->journal[i]);
    }
    memmove(p->journal, p->journal + n, (p->journal_count - n) * sizeof(*p->journal));
    p->journal_count -= n;
    sl_journal_bound_update(p);
}

void sl_partition_wait_created(sl_partition_t *p)
{
    if (!p->creating)
        return;
    p->cfg.creator->wait(p->cfg.creator->ctx);
    sl_assert(!p->creating);
}

bool sl_partition_creating(const sl_partition_t *p)
{
    return p->creating;
}

/* Hands the creation of the first segment to cfg.creator (store/partition.h); true when it
 * took it, and the flush is then deferred to sl_partition_created. */
static bool begin_create(sl_partition_t *p)
{
    const sl_partition_creator_t *c = p->cfg.creator;
    if (!c || p->segment_count > 0 || p->journal_count == 0 || p->cfg.enforce_fsync ||
        p->cfg.index_every_batch || !sl_partition_segments_reserve(p, 1))
        return false;
    uint64_t start = p->journal[0].base_offset;
    uint64_t seq = p->creating_seq + 1;
    if (!c->begin(c->ctx, p, seq, p->dir, start, !p->dir_made))
        return false;
    p->creating = true;
    p->creating_seq = seq;
    p->creating_start = start;
    return true;
}

static int flush_journal(sl_partition_t *p, size_t *flushed, bool may_defer);

void sl_partition_created(sl_partition_t *p, uint64_t seq, int dir_rc, int log_fd, int index_fd)
{
    sl_assert(p->creating && seq == p->creating_seq && p->segment_count == 0);
    p->creating = false;
    if (dir_rc == 0 || dir_rc == -EEXIST)
        p->dir_made = true;
    if (log_fd >= 0 && index_fd >= 0) {
        /* The journal starts where the creation began: a purge would have waited for it
         * (sl_partition_purge), and a rollback only takes back batches after journal[0]
         * unless it empties the journal, which leaves next_offset at the start. */
        sl_assert(p->journal_count == 0 || p->journal[0].base_offset == p->creating_start);
        sl_assert(p->journal_count > 0 || p->next_offset == p->creating_start);
        p->dir_made = true;
        sl_segment_adopt(&p->segments[0], p->dir, p->creating_start, log_fd, index_fd,
                         preallocate_bytes(p));
        p->segment_count = 1;
    } else {
        /* Created with O_EXCL, so a file that did open is this creation's own. */
        static const char *const exts[2] = {SL_SEGMENT_LOG_EXT, SL_SEGMENT_INDEX_EXT};
        int fds[2] = {log_fd, index_fd};
        for (int i = 0; i < 2; i++) {
            char path[PATH_MAX];
            if (fds[i] < 0)
                continue;
            sl_io_close(fds[i]);
            if (sl_segment_path(path, p->dir, p->creating_start, exts[i]))
                (void)sl_io_unlink(path);
        }
        sl_log_debug("partition %s: the first segment was not created off the loop (%s / %s /"
                     " %s); creating it here",
                     p->dir, strerror(dir_rc < 0 ? -dir_rc : 0), strerror(log_fd < 0 ? -log_fd : 0),
                     strerror(index_fd < 0 ? -index_fd : 0));
    }
    size_t flushed;
    int rc = flush_journal(p, &flushed, false);
    if (rc < 0)
        sl_log_error("partition %s: flush after its first segment was created failed: %s; the"
                     " batches stay journaled",
                     p->dir, sl_strerror(rc));
}

/* Writes the journal out, chunk by chunk (one per segment touched). *flushed gets how many
 * entries reached the disk (and were released) before an error stopped it. may_defer: a
 * flush the gate tripped, which may hand the first segment's creation to cfg.creator and
 * leave the journal in memory until it completes. Only the append that began the creation is
 * deferred: any flush that comes while it is in flight (the gate tripping again, the bound,
 * a stop) waits for it, so what waits in memory is at most one gate's worth of batches per
 * partition, and the files exist once a second flush of the partition has returned. */
static int flush_journal(sl_partition_t *p, size_t *flushed, bool may_defer)
{
    *flushed = 0;
    sl_partition_wait_created(p); /* installs the segment and flushes */
    if (may_defer && begin_create(p))
        return 0;
    size_t done = 0;
    int rc = 0;
    while (rc == 0 && done < p->journal_count) { /* each turn writes >= 1 entry or fails */
        rc = sl_partition_ensure_active(p);
        if (rc == 0 && active_full(p))
            rc = rotate(p);
        if (rc == 0) {
            size_t end = chunk_end(p, done, active_segment(p)->size);
            rc = write_chunk(p, done, end);
            if (rc == 0)
                done = end;
        }
    }
    drop_flushed(p, done);
    *flushed = done;
    /* Sealing right after the flush that filled the segment lets retention see it; when the
     * rotation fails the data is safe anyway and the next flush rotates first. */
    if (rc == 0 && active_full(p)) {
        int err = rotate(p);
        if (err < 0)
            sl_log_warn("partition %s: rotation failed (%d); retried at the next flush", p->dir,
                        err);
    }
    return rc;
}

int sl_partition_flush(sl_partition_t *p)
{
    size_t flushed;
    return flush_journal(p, &flushed, false);
}

/* fdatasync of one sealed segment's files, opened for it (a sealed segment keeps no fd). */
static int sync_sealed(const sl_partition_t *p, uint64_t start)
{
    static const char *const exts[2] = {SL_SEGMENT_LOG_EXT, SL_SEGMENT_INDEX_EXT};
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        if (!sl_segment_path(path, p->dir, start, exts[i]))
            return -SL_ERR_CANNOT_SYNC_FILE;
        int fd = sl_io_open(path, O_RDONLY | O_CLOEXEC, 0);
        if (fd == -ENOENT && i == 1)
            continue; /* no index: boot rebuilds it from the .log */
        int rc = fd < 0 ? fd : sl_io_fdatasync(fd);
        if (fd >= 0)
            sl_io_close(fd);
        if (rc < 0) {
            sl_log_error("partition %s: cannot fdatasync %s: %s", p->dir, path, strerror(-rc));
            return -SL_ERR_CANNOT_SYNC_FILE;
        }
    }
    return 0;
}

int sl_partition_sync(sl_partition_t *p)
{
    int rc = sl_partition_flush(p);
    if (rc != 0 || p->segment_count == 0)
        return rc;
    if ((rc = sl_partition_tree_durable(p)) < 0)
        return rc;
    for (size_t i = 0; i + 1 < p->segment_count; i++) {
        if (p->segments[i].start_offset >= p->unsynced_from &&
            (rc = sync_sealed(p, p->segments[i].start_offset)) < 0)
            return rc;
    }
    sl_segment_t *active = active_segment(p);
    if (active->log_fd >= 0 && ((rc = sl_io_fdatasync(active->log_fd)) < 0 ||
                                (rc = sl_io_fdatasync(active->index_fd)) < 0)) {
        sl_log_error("partition %s: cannot fdatasync the active segment: %s", p->dir,
                     strerror(-rc));
        return -SL_ERR_CANNOT_SYNC_FILE;
    }
    p->unsynced_from = active->start_offset;
    return 0;
}

/* Storage.md 3 step 3, plus enforce_fsync: an append is acknowledged only once on disk. One
 * departure (docs/architecture.md, "The flush gate counts whole batches"): the gate also trips
 * when one more batch like the last would take the journal past a threshold, so a batch
 * close to the gate's size is written with its own append, while it is still in the CPU's
 * cache, rather than held in memory until the next one (a 1 MB batch under the default 1 MiB
 * gate waited for the next, and the flush then read a batch that had left the cache). */
static bool gate_tripped(const sl_partition_t *p)
{
    if (p->cfg.enforce_fsync || p->journal_messages >= p->cfg.messages_required_to_save ||
        p->journal_bytes >= p->cfg.size_of_messages_required_to_save)
        return true;
    sl_assert(p->journal_count > 0);
    const journal_entry_t *last = &p->journal[p->journal_count - 1];
    if (p->journal_bytes + last->len > p->cfg.size_of_messages_required_to_save ||
        p->journal_messages + last->count > p->cfg.messages_required_to_save)
        return true;
    uint64_t position = p->segment_count ? p->segments[p->segment_count - 1].size : 0;
    return position + p->journal_bytes >= p->cfg.segment_size;
}

/* The memory a batch's owner holds (sl_partition_config_t.held). */
static size_t owner_held(const sl_partition_t *p, const sl_partition_batch_t *b)
{
    if (p->cfg.held)
        return p->cfg.held(p->cfg.release_ctx, b->owner);
    return p->cfg.release ? b->len : malloc_usable_size(b->owner);
}

/* Stamps a batch (messages.md 3.3) and journals it. */
static uint64_t journal_push(sl_partition_t *p, const sl_partition_batch_t *b, uint64_t timestamp)
{
    uint32_t count = sl_load_u32(b->record + SL_BATCH_OFF_COUNT);
    /* What sl_batch_validate guaranteed: the caller's side of the boundary. */
    sl_assert(b->len >= SL_SEGMENT_RECORD_MIN && count >= 1);
    sl_assert(sl_load_u64(b->record + SL_BATCH_OFF_LENGTH) == b->len);
    sl_assert(count <= UINT64_MAX - p->next_offset);
    uint64_t base = p->next_offset;
    /* No second sl_batch_validate after the stamp: stamping writes only header fields, the
     * caller verified every frame just before, and hashing the batch again doubled the
     * server's hashing in the default (RelWithDebInfo) build, where debug assertions stay on
     * (docs/benchmarks.md, "Issue 14"). */
    if (b->sums)
        sl_batch_stamp_kept(b->record, b->len, p->id, base, timestamp, b->sums, b->sums_len);
    else
        sl_batch_stamp(b->record, b->len, p->id, base, timestamp);
    size_t held = owner_held(p, b);
    sl_assert(held >= b->len);
    p->journal[p->journal_count++] =
        (journal_entry_t){b->owner, b->record, b->len, held, base, timestamp, count};
    p->next_offset = base + count;
    p->journal_bytes += b->len;
    p->journal_messages += count;
    sl_journal_held_add(p, held);
    sl_journal_bound_update(p);
    return base;
}

/* Takes the last n entries back out of the journal, unreleased: their appends failed, so
 * their offsets are handed out again and their buffers stay the caller's. */
static void rollback(sl_partition_t *p, size_t n)
{
    sl_assert(n <= p->journal_count);
    for (size_t i = 0; i < n; i++) {
        const journal_entry_t *e = &p->journal[--p->journal_count];
        p->journal_bytes -= e->len;
        p->journal_messages -= e->count;
        sl_journal_held_sub(p, e->held);
        p->next_offset = e->base_offset;
    }
    sl_journal_bound_update(p);
}

/* Failed early flushes one append tolerates before it gives up: on a full disk every journal
 * fails alike, and trying them all would cost a failed write per partition per send. */
#define BOUND_FAILURES_MAX 4u

/* Flushes the oldest journals of cfg.bound (this partition's among them) until they hold at
 * most its max. 0 when they do, else the error of the last failed flush: what failed stays
 * journaled (it was acknowledged) and the caller must take back what it just added. */
static int bound_settle(sl_partition_t *p)
{
    sl_journal_bound_t *b = p->cfg.bound;
    if (!b || b->max == 0)
        return 0;
    /* Journals waiting for their first segment are flushed by its creation: finish those in
     * flight first, so none is skipped here (and the list is not changed under the walk). */
    if (b->held > b->max && p->cfg.creator)
        p->cfg.creator->wait(p->cfg.creator->ctx);
    int rc = 0;
    unsigned failures = 0;
    sl_partition_t *q = b->oldest;
    /* Each turn flushes or skips one listed partition, so it ends within b->partitions turns. */
    while (b->held > b->max && q && failures < BOUND_FAILURES_MAX) {
        sl_partition_t *newer = q->bound_newer; /* a flush changes q's place, nobody else's */
        size_t flushed;
        b->early_flushes++;
        int err = flush_journal(q, &flushed, false);
        if (err < 0) {
            sl_log_error("partition %s: early flush for the journal bound failed: %s", q->dir,
                         sl_strerror(err));
            rc = err;
            failures++;
        }
        q = newer;
    }
    if (b->held <= b->max)
        return 0;
    sl_assert(rc < 0); /* the list only runs out once everything is flushed */
    b->refused++;
    return rc;
}

int sl_partition_append_many(sl_partition_t *p, const sl_partition_batch_t *batches, size_t n,
                             uint64_t timestamp_us, uint64_t *base_offsets, size_t *accepted)
{
    *accepted = 0;
    for (size_t i = 0; i < n; i++)
        if (batches[i].len > p->cfg.batch_max)
            return -SL_ERR_INVALID_MESSAGES_SIZE;
    if (n == 0)
        return 0;
    if (!journal_reserve(p, n))
        return -SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT;
    /* Timestamps never go back (index lookups by timestamp rely on it), even when the clock
     * does: a batch gets at least the newest stored timestamp. */
    uint64_t previous = p->last_timestamp;
    uint64_t timestamp = timestamp_us > previous ? timestamp_us : previous;
    size_t first = p->journal_count;
    for (size_t i = 0; i < n; i++)
        base_offsets[i] = journal_push(p, &batches[i], timestamp);
    p->last_timestamp = timestamp;
    int rc = 0;
    if (gate_tripped(p)) {
        size_t flushed;
        rc = flush_journal(p, &flushed, true);
    }
    if (rc == 0)
        rc = bound_settle(p);
    /* Flushes take entries from the front, so the batches of this call that are still
     * journaled are the last ones; those already on disk are acknowledged whatever failed. */
    size_t pending = p->journal_count < n ? p->journal_count : n;
    sl_assert(p->journal_count <= first + n);
    if (rc == 0 || pending == 0) {
        *accepted = n;
        return 0;
    }
    rollback(p, pending);
    if (pending == n)
        p->last_timestamp = previous;
    *accepted = n - pending;
    return rc;
}

int sl_partition_append(sl_partition_t *p, void *owner, uint8_t *record, size_t len,
                        uint64_t timestamp_us, uint64_t *base_offset_out)
{
    sl_partition_batch_t batch = {owner, record, len, NULL, 0};
    uint64_t base;
    size_t accepted;
    int rc = sl_partition_append_many(p, &batch, 1, timestamp_us, &base, &accepted);
    if (rc == 0)
        *base_offset_out = base;
    return rc;
}
