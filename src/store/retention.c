/* Deleting data from a partition (store/partition.h, storage.md 8): DeleteSegments, the
 * retention pass (message expiry and the size share) and purge (with its purge.gen record). Only
 * the oldest sealed segments are ever deleted one by one, so the chain stays contiguous on disk at
 * every step. */
#include <errno.h>
#include <inttypes.h>
#include <sluice/error.h>
#include <string.h>

#include "base/io.h"
#include "base/log.h"
#include "store/partition_internal.h"
#include "store/purge_gen.h"

static size_t sealed_count(const sl_partition_t *p)
{
    return p->segment_count > 0 ? p->segment_count - 1 : 0;
}

int sl_partition_delete_oldest(sl_partition_t *p)
{
    sl_assert(sealed_count(p) > 0 && p->segments[0].sealed);
    const sl_segment_t *s = &p->segments[0];
    int rc = sl_segment_unlink(p->dir, s->start_offset);
    if (rc < 0)
        return rc;
    sl_log_info("partition %s: deleted segment %020" PRIu64 " (offsets %" PRIu64 "..%" PRIu64
                ", %" PRIu64 " bytes)",
                p->dir, s->start_offset, s->start_offset, s->start_offset + s->messages - 1,
                s->size);
    memmove(p->segments, p->segments + 1, (p->segment_count - 1) * sizeof(*p->segments));
    p->segment_count--;
    return 0;
}

/* The deletes are made durable together; a crash before that brings back whole oldest
 * segments, which the next pass deletes again. */
static void sync_deletes(const sl_partition_t *p, uint32_t deleted)
{
    if (deleted > 0 && sl_io_fsync_dir(p->dir) < 0)
        sl_log_warn("partition %s: cannot fsync the directory after deleting segments", p->dir);
}

int sl_partition_delete_segments(sl_partition_t *p, uint32_t count, uint32_t *deleted)
{
    *deleted = 0;
    int rc = 0;
    while (rc == 0 && *deleted < count && sealed_count(p) > 0) {
        rc = sl_partition_delete_oldest(p);
        if (rc == 0)
            (*deleted)++;
    }
    sync_deletes(p, *deleted);
    return rc;
}

static bool expired(const sl_segment_t *s, uint64_t now_us, uint64_t expiry)
{
    return s->end_timestamp != 0 && now_us > s->end_timestamp && now_us - s->end_timestamp > expiry;
}

uint32_t sl_partition_retention_plan(const sl_partition_t *p, uint64_t now_us, uint64_t *keep_from)
{
    size_t sealed = sealed_count(p), n = 0;
    uint64_t expiry = p->cfg.message_expiry;
    while (expiry != UINT64_MAX && n < sealed && expired(&p->segments[n], now_us, expiry))
        n++;
    /* The floor is the largest a sealed segment can be, so the newest one always stays. */
    uint64_t share = p->cfg.max_size_share;
    uint64_t floor = p->cfg.segment_size + p->cfg.batch_max;
    if (share < floor)
        share = floor;
    uint64_t sealed_bytes = 0;
    for (size_t i = n; i < sealed; i++)
        sealed_bytes += p->segments[i].size;
    while (p->cfg.max_size_share != UINT64_MAX && n < sealed && sealed_bytes > share)
        sealed_bytes -= p->segments[n++].size;
    *keep_from = n < p->segment_count ? p->segments[n].start_offset : p->next_offset;
    return (uint32_t)n;
}

uint64_t sl_partition_sealed_end(const sl_partition_t *p, uint32_t count)
{
    size_t sealed = sealed_count(p);
    size_t n = count < sealed ? count : sealed;
    return n < p->segment_count ? p->segments[n].start_offset : p->next_offset;
}

int sl_partition_delete_before(sl_partition_t *p, uint64_t offset, uint32_t *deleted)
{
    *deleted = 0;
    int rc = 0;
    while (rc == 0 && sealed_count(p) > 0 &&
           p->segments[0].start_offset + p->segments[0].messages <= offset) {
        rc = sl_partition_delete_oldest(p);
        if (rc == 0)
            (*deleted)++;
    }
    sync_deletes(p, *deleted);
    return rc;
}

int sl_partition_retention(sl_partition_t *p, uint64_t now_us, uint32_t *deleted)
{
    uint64_t keep_from;
    uint32_t count = sl_partition_retention_plan(p, now_us, &keep_from);
    return sl_partition_delete_segments(p, count, deleted);
}

int sl_partition_purge(sl_partition_t *p)
{
    /* A creation in flight completes first (its segment is then purged like any other), so
     * no segment 0 is created behind the purge. */
    sl_partition_wait_created(p);
    /* Oldest first, like retention: a failure (or a crash) part way leaves a contiguous newer
     * suffix, and the partition stays usable with it. */
    int rc = 0;
    size_t i = 0;
    for (; i < p->segment_count; i++) {
        sl_segment_close(&p->segments[i]);
        rc = sl_segment_unlink(p->dir, p->segments[i].start_offset);
        if (rc < 0)
            break;
    }
    if (rc < 0) {
        memmove(p->segments, p->segments + i, (p->segment_count - i) * sizeof(*p->segments));
        p->segment_count -= i;
        sl_segment_t *active = &p->segments[p->segment_count - 1];
        if (active->log_fd < 0 && sl_segment_open_active(active, p->dir) < 0)
            sl_log_error("partition %s: purge failed and the active segment cannot reopen", p->dir);
        return rc;
    }
    for (i = 0; i < p->journal_count; i++) {
        sl_journal_held_sub(p, p->journal[i].held);
        sl_partition_release(p, &p->journal[i]);
    }
    p->journal_count = 0;
    p->journal_bytes = p->journal_messages = 0;
    sl_journal_bound_update(p);
    p->segment_count = 0;
    p->next_offset = 0;
    p->last_timestamp = 0;
    /* The new segment 0 comes with the next flush (flush_journal creates it), so purging an
     * empty partition creates no file. */
    return sl_offsets_purge(p);
}

int sl_partition_purge_record(sl_partition_t *p)
{
    if (!p->purge_record_owed)
        return 0;
    int rc = sl_partition_tree_durable(p); /* purge.gen is always synced, so its path too */
    if (rc == 0)
        rc = sl_purge_gen_write(p->dir, p->purge_generation, p->cfg.created_revision);
    if (rc == 0)
        p->purge_record_owed = false;
    return rc;
}

int sl_partition_purge_to(sl_partition_t *p, uint64_t generation)
{
    int rc = sl_partition_purge(p);
    if (rc < 0)
        return rc;
    /* The record is owed, not written: it goes in before the partition's next byte, message or
     * consumer offset (sl_partition_purge_record). Until then the partition holds nothing the
     * purge must remove, so a boot that finds the old record purges again and loses nothing;
     * and an idle partition pays no file, fsync or directory fsync for a purge (a topic of
     * 10000 empty partitions paid 10000 of each, on the loop thread). The segment unlinks
     * above become durable with the record's directory fsync, in the same directory. */
    p->purge_generation = generation;
    p->purge_record_owed = true;
    return 0;
}
