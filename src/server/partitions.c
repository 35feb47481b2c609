/* The partition registry (server/partitions.h). */
#include "server/partitions.h"

#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"

void sl_partitions_init(sl_partitions_t *ps, const char *data_dir, uint64_t batch_max)
{
    memset(ps, 0, sizeof(*ps));
    snprintf(ps->data_dir, sizeof(ps->data_dir), "%s", data_dir);
    ps->batch_max = batch_max;
    sl_journal_bound_init(&ps->journal_bound, 0);
    sl_buf_init(&ps->read_buf, 0);
}

static void stream_dir(const sl_partitions_t *ps, uint32_t s, char *out, size_t n)
{
    snprintf(out, n, "%s/streams/%u", ps->data_dir, s);
}

static void topic_dir(const sl_partitions_t *ps, uint32_t s, uint32_t t, char *out, size_t n)
{
    snprintf(out, n, "%s/streams/%u/topics/%u", ps->data_dir, s, t);
}

static void partition_dir(const sl_partitions_t *ps, uint32_t s, uint32_t t, uint32_t p, char *out,
                          size_t n)
{
    snprintf(out, n, "%s/streams/%u/topics/%u/partitions/%u", ps->data_dir, s, t, p);
}

/* Deletes a whole stream, topic or partition tree, durably (store/partition.h). What a failure
 * leaves behind is swept at the next boot (streams) or cleared before reuse (topics). */
static void remove_dir(const char *dir)
{
    if (sl_store_remove_tree(dir) < 0)
        sl_log_warn("%s: part of it is left on disk", dir);
}

/* --- lookup ---------------------------------------------------------------------- */

static int compare_key(uint32_t s1, uint32_t t1, uint32_t s2, uint32_t t2)
{
    if (s1 != s2)
        return s1 < s2 ? -1 : 1;
    if (t1 != t2)
        return t1 < t2 ? -1 : 1;
    return 0;
}

/* Index of (s, t), or where it would go. */
static uint32_t find_slot(const sl_partitions_t *ps, uint32_t s, uint32_t t, bool *found)
{
    uint32_t lo = 0, hi = ps->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = compare_key(ps->topics[mid]->stream_id, ps->topics[mid]->topic_id, s, t);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

sl_topic_rt_t *sl_partitions_topic(sl_partitions_t *ps, uint32_t stream_id, uint32_t topic_id)
{
    bool found;
    uint32_t i = find_slot(ps, stream_id, topic_id, &found);
    return found ? ps->topics[i] : NULL;
}

sl_partition_t *sl_partitions_get(sl_partitions_t *ps, uint32_t stream_id, uint32_t topic_id,
                                  uint32_t partition_id)
{
    sl_topic_rt_t *t = sl_partitions_topic(ps, stream_id, topic_id);
    if (!t || partition_id >= t->partitions_count)
        return NULL;
    return t->partitions[partition_id];
}

/* --- opening and closing ------------------------------------------------------------ */

static void partition_config(sl_partitions_t *ps, const sl_meta_topic_t *mt,
                             sl_partition_config_t *cfg)
{
    sl_partition_config_from_topic(&mt->config, mt->partitions_count, cfg);
    cfg->batch_max = ps->batch_max;
    cfg->created_revision = mt->created_at;
    cfg->bound = &ps->journal_bound;
    cfg->read_buf = &ps->read_buf;
    if (ps->frame_pool) {
        cfg->release = sl_frame_pool_release;
        cfg->held = sl_frame_pool_held;
        cfg->release_ctx = ps->frame_pool;
    }
}

/* Brings a partition to its topic's purge generation: purged (again) when its purge.gen is
 * lower, because a crash, or a failure, came between a committed purge and its record. A
 * partition that cannot be purged is closed and answers as missing until a restart purges
 * it: serving it would let sends land in data a later boot must purge, losing acknowledged
 * messages. */
static void settle_purge(sl_topic_rt_t *rt, const sl_meta_topic_t *mt, uint32_t id)
{
    sl_partition_t *p = rt->partitions[id];
    if (!p || sl_partition_purge_generation(p) >= mt->purge_generation)
        return;
    uint64_t had = sl_partition_purge_generation(p);
    int rc = sl_partition_purge_to(p, mt->purge_generation);
    if (rc == 0) {
        sl_log_info("partition %u of topic %u in stream %u: purged to generation %" PRIu64
                    " (had %" PRIu64 ")",
                    id, rt->topic_id, rt->stream_id, mt->purge_generation, had);
        return;
    }
    sl_log_error("partition %u of topic %u in stream %u: purge to generation %" PRIu64
                 " failed (%d); closed until a restart purges it",
                 id, rt->topic_id, rt->stream_id, mt->purge_generation, rc);
    sl_partition_close(p);
    rt->partitions[id] = NULL;
}

/* Opens a partition and settles its purge generation before it serves; a new partition
 * (CreatePartitions, a new topic) records the topic's current one that way. */
static void open_partition(sl_partitions_t *ps, sl_topic_rt_t *rt, const sl_meta_topic_t *mt,
                           uint32_t id)
{
    char dir[4400], err[512] = {0};
    partition_dir(ps, rt->stream_id, rt->topic_id, id, dir, sizeof(dir));
    sl_partition_config_t cfg;
    partition_config(ps, mt, &cfg);
    int rc = sl_partition_open(dir, id, &cfg, sl_clock_realtime_us(), &rt->partitions[id], err,
                               sizeof(err));
    if (rc != 0) {
        rt->partitions[id] = NULL;
        sl_log_error("partition %u of topic %u in stream %u %s: %s", id, rt->topic_id,
                     rt->stream_id, sl_partition_refused(rc) ? "refused" : "not opened", err);
        return;
    }
    settle_purge(rt, mt, id);
}

/* Closes partition id, flushing it first when its data stays (flush), and
 * removes its directory (remove). A partition about to be deleted is not
 * flushed: its journal is given back, not written. */
static void close_partition(sl_partitions_t *ps, sl_topic_rt_t *rt, uint32_t id, bool flush,
                            bool remove)
{
    sl_partition_t *p = rt->partitions[id];
    if (p) {
        if (flush && sl_partition_flush(p) != 0)
            sl_log_error("partition %u of topic %u: final flush failed", id, rt->topic_id);
        sl_partition_close(p);
        rt->partitions[id] = NULL;
        ps->closed++;
    }
    if (remove) {
        char dir[4400];
        partition_dir(ps, rt->stream_id, rt->topic_id, id, dir, sizeof(dir));
        remove_dir(dir);
    }
}

static bool resize(sl_topic_rt_t *rt, uint32_t count)
{
    if (count > rt->partitions_count) {
        sl_partition_t **grown = realloc(rt->partitions, sizeof(*grown) * count);
        if (!grown)
            return false;
        memset(grown + rt->partitions_count, 0, sizeof(*grown) * (count - rt->partitions_count));
        rt->partitions = grown;
    }
    return true;
}

/* Calls fn for every entry of dir named by a decimal id (the layout's
 * stream, topic and partition directories). */
static void for_each_id(const char *dir, void (*fn)(void *ctx, uint32_t id), void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        unsigned long id = strtoul(e->d_name, &end, 10);
        if (e->d_name[0] != '.' && *end == '\0' && id <= UINT32_MAX)
            fn(ctx, (uint32_t)id);
    }
    closedir(d);
}

typedef struct sweep {
    sl_partitions_t *ps;
    const sl_topic_rt_t *rt;
    uint32_t count;
    const sl_meta_t *meta;
} sweep_t;

static void sweep_partition(void *ctx, uint32_t id)
{
    const sweep_t *w = ctx;
    if (id < w->count)
        return;
    char dir[4400];
    partition_dir(w->ps, w->rt->stream_id, w->rt->topic_id, id, dir, sizeof(dir));
    sl_log_warn("removing %s: the topic has %u partitions", dir, w->count);
    remove_dir(dir);
}

/* At boot: partition directories at or past the topic's count are leftovers
 * of a DeletePartitions whose removal failed or was cut by a crash; left in
 * place, a later CreatePartitions would find their old data. */
static void sweep_partitions(sl_partitions_t *ps, const sl_topic_rt_t *rt, uint32_t count)
{
    char root[4400];
    snprintf(root, sizeof(root), "%s/streams/%u/topics/%u/partitions", ps->data_dir, rt->stream_id,
             rt->topic_id);
    sweep_t w = {.ps = ps, .rt = rt, .count = count};
    for_each_id(root, sweep_partition, &w);
}

/* Brings one runtime topic to the meta topic's partitions and options. A
 * partition added after boot starts empty: whatever a failed delete left in
 * its directory is removed first. */
static void sync_topic(sl_partitions_t *ps, sl_topic_rt_t *rt, const sl_meta_topic_t *mt,
                       bool fresh, bool boot)
{
    uint32_t want = mt->partitions_count;
    for (uint32_t id = want; id < rt->partitions_count; id++)
        close_partition(ps, rt, id, false, true);
    if (!resize(rt, want)) {
        sl_log_error("out of memory for the partitions of topic %u", rt->topic_id);
        return;
    }
    uint32_t had = fresh ? 0 : (rt->partitions_count < want ? rt->partitions_count : want);
    rt->partitions_count = want;
    rt->enforce_fsync = mt->config.enforce_fsync;
    sl_partition_config_t cfg;
    partition_config(ps, mt, &cfg);
    for (uint32_t id = 0; id < had; id++)
        if (rt->partitions[id])
            sl_partition_reconfigure(rt->partitions[id], &cfg);
    if (boot)
        sweep_partitions(ps, rt, want);
    for (uint32_t id = had; id < want; id++) {
        if (!boot && !fresh) {
            char dir[4400];
            partition_dir(ps, rt->stream_id, rt->topic_id, id, dir, sizeof(dir));
            remove_dir(dir);
        }
        open_partition(ps, rt, mt, id);
    }
}

static void drop_topic(sl_partitions_t *ps, uint32_t index, bool remove)
{
    sl_topic_rt_t *rt = ps->topics[index];
    for (uint32_t id = 0; id < rt->partitions_count; id++)
        close_partition(ps, rt, id, !remove, false);
    if (remove) {
        char dir[4400];
        topic_dir(ps, rt->stream_id, rt->topic_id, dir, sizeof(dir));
        remove_dir(dir);
    }
    free(rt->partitions);
    free(rt);
    memmove(ps->topics + index, ps->topics + index + 1,
            sizeof(*ps->topics) * (ps->count - index - 1));
    ps->count--;
}

static sl_topic_rt_t *add_topic(sl_partitions_t *ps, const sl_meta_stream_t *ms,
                                const sl_meta_topic_t *mt, uint32_t slot)
{
    if (ps->count == ps->cap) {
        uint32_t cap = ps->cap ? ps->cap * 2 : 16;
        sl_topic_rt_t **grown = realloc(ps->topics, sizeof(*grown) * cap);
        if (!grown)
            return NULL;
        ps->topics = grown;
        ps->cap = cap;
    }
    sl_topic_rt_t *rt = calloc(1, sizeof(*rt));
    if (!rt)
        return NULL;
    rt->stream_id = ms->id;
    rt->topic_id = mt->id;
    rt->stream_created_at = ms->created_at;
    rt->created_at = mt->created_at;
    memmove(ps->topics + slot + 1, ps->topics + slot, sizeof(*ps->topics) * (ps->count - slot));
    ps->topics[slot] = rt;
    ps->count++;
    return rt;
}

/* --- sync ---------------------------------------------------------------------------- */

/* Whether meta still has this runtime topic (same ids, same creations). */
static bool still_in_meta(const sl_meta_t *meta, const sl_topic_rt_t *rt, bool *stream_alive)
{
    const sl_meta_stream_t *ms = sl_meta_stream_by_id(meta, rt->stream_id);
    *stream_alive = ms && ms->created_at == rt->stream_created_at;
    if (!*stream_alive)
        return false;
    sl_ident_t tid = sl_ident_number(rt->topic_id);
    const sl_meta_topic_t *mt = sl_meta_topic_find(ms, &tid);
    return mt && mt->created_at == rt->created_at;
}

/* After partitions went away: hands the heap's free pages back to the
 * system. Their journals' frames were unmapped already (frame_pool.h), but
 * what the partitions themselves held (index arrays, the journal arrays,
 * offsets) came from the heap, whose top glibc trims only past a threshold
 * it raised itself after the first Argon2id block was freed (38 MiB), and
 * never below a live chunk. The polls' read scratch goes too (a poll grows
 * it again). Deletes are rare: the walk over the heap is cheap next to the
 * directory removals that come with them. */
static void give_back_heap(sl_partitions_t *ps)
{
    sl_buf_free(&ps->read_buf);
    malloc_trim(0);
}

static void drop_gone(sl_partitions_t *ps, const sl_meta_t *meta)
{
    for (uint32_t i = ps->count; i-- > 0;) {
        sl_topic_rt_t *rt = ps->topics[i];
        bool stream_alive;
        if (still_in_meta(meta, rt, &stream_alive))
            continue;
        uint32_t stream_id = rt->stream_id;
        drop_topic(ps, i, true);
        if (!stream_alive) {
            char dir[4400];
            stream_dir(ps, stream_id, dir, sizeof(dir));
            remove_dir(dir);
        }
    }
}

static void sweep_stream(void *ctx, uint32_t id)
{
    const sweep_t *w = ctx;
    if (sl_meta_stream_by_id(w->meta, id))
        return;
    char dir[4400];
    stream_dir(w->ps, id, dir, sizeof(dir));
    sl_log_warn("removing %s: no such stream in the metadata", dir);
    remove_dir(dir);
}

/* At boot: stream directories meta does not know are leftovers of a delete
 * that a crash interrupted. */
static void sweep_streams(sl_partitions_t *ps, const sl_meta_t *meta)
{
    char root[4200];
    snprintf(root, sizeof(root), "%s/streams", ps->data_dir);
    sweep_t w = {.ps = ps, .meta = meta};
    for_each_id(root, sweep_stream, &w);
}

void sl_partitions_sync(sl_partitions_t *ps, const sl_meta_t *meta, bool boot)
{
    uint64_t closed = ps->closed;
    drop_gone(ps, meta);
    if (boot)
        sweep_streams(ps, meta);
    for (const sl_meta_stream_t *ms = sl_meta_stream_next(meta, NULL); ms;
         ms = sl_meta_stream_next(meta, ms)) {
        for (uint32_t i = 0; i < ms->topics.count; i++) {
            const sl_meta_topic_t *mt = sl_meta_topic_at(ms, i);
            bool found;
            uint32_t slot = find_slot(ps, ms->id, mt->id, &found);
            if (found) {
                sync_topic(ps, ps->topics[slot], mt, false, boot);
                continue;
            }
            if (!boot) {
                /* A new topic starts empty, whatever a failed delete left. */
                char dir[4400];
                topic_dir(ps, ms->id, mt->id, dir, sizeof(dir));
                remove_dir(dir);
            }
            sl_topic_rt_t *rt = add_topic(ps, ms, mt, slot);
            if (!rt) {
                sl_log_error("out of memory for topic %u of stream %u", mt->id, ms->id);
                continue;
            }
            sync_topic(ps, rt, mt, true, boot);
        }
    }
    if (ps->closed != closed)
        give_back_heap(ps);
}

void sl_partitions_close(sl_partitions_t *ps)
{
    while (ps->count > 0)
        drop_topic(ps, ps->count - 1, false);
    free(ps->topics);
    ps->topics = NULL;
    ps->cap = 0;
    /* Every journal went with its partition. */
    sl_assert(ps->journal_bound.partitions == 0 && ps->journal_bound.held == 0);
    sl_buf_free(&ps->read_buf);
}

/* --- statistics and maintenance --------------------------------------------------------- */

static void add_topic_stats(const sl_topic_rt_t *rt, sl_partitions_stats_t *out)
{
    for (uint32_t id = 0; id < rt->partitions_count; id++) {
        sl_partition_t *p = rt->partitions[id];
        out->segments += p ? sl_partition_segments(p) : 1;
        if (!p)
            continue;
        out->messages += sl_partition_messages(p);
        out->size_bytes += sl_partition_size(p);
    }
}

void sl_partitions_topic_stats(sl_partitions_t *ps, uint32_t stream_id, uint32_t topic_id,
                               sl_partitions_stats_t *out)
{
    *out = (sl_partitions_stats_t){0};
    sl_topic_rt_t *rt = sl_partitions_topic(ps, stream_id, topic_id);
    if (rt)
        add_topic_stats(rt, out);
}

void sl_partitions_stream_stats(sl_partitions_t *ps, uint32_t stream_id, sl_partitions_stats_t *out)
{
    *out = (sl_partitions_stats_t){0};
    /* The registry is sorted by (stream, topic): the stream's topics are one
     * run starting where (stream_id, 0) would go, so GetStreams costs the
     * number of topics, not streams x topics. */
    bool found;
    for (uint32_t i = find_slot(ps, stream_id, 0, &found);
         i < ps->count && ps->topics[i]->stream_id == stream_id; i++)
        add_topic_stats(ps->topics[i], out);
}

void sl_partitions_all_stats(sl_partitions_t *ps, sl_partitions_stats_t *out)
{
    *out = (sl_partitions_stats_t){0};
    for (uint32_t i = 0; i < ps->count; i++)
        add_topic_stats(ps->topics[i], out);
}

void sl_partitions_purge(sl_partitions_t *ps, const sl_meta_t *meta, uint32_t stream_id,
                         uint32_t topic_id)
{
    const sl_meta_stream_t *ms = sl_meta_stream_by_id(meta, stream_id);
    for (uint32_t i = 0; ms && i < ps->count; i++) {
        sl_topic_rt_t *rt = ps->topics[i];
        if (rt->stream_id != stream_id || (topic_id != UINT32_MAX && rt->topic_id != topic_id))
            continue;
        sl_ident_t tid = sl_ident_number(rt->topic_id);
        const sl_meta_topic_t *mt = sl_meta_topic_find(ms, &tid);
        if (!mt || mt->created_at != rt->created_at)
            continue;
        rt->balanced_next = 0;
        for (uint32_t id = 0; id < rt->partitions_count; id++)
            settle_purge(rt, mt, id);
    }
}

void sl_partitions_retention(sl_partitions_t *ps, uint64_t now_us)
{
    for (uint32_t i = 0; i < ps->count; i++) {
        sl_topic_rt_t *rt = ps->topics[i];
        for (uint32_t id = 0; id < rt->partitions_count; id++) {
            uint32_t deleted = 0;
            if (rt->partitions[id] &&
                sl_partition_retention(rt->partitions[id], now_us, &deleted) == 0 && deleted)
                sl_log_info("retention: deleted %u segments of partition %u, topic %u, stream %u",
                            deleted, id, rt->topic_id, rt->stream_id);
        }
    }
}
