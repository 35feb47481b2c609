/* The partition registry (server/partitions.h). */
#include "server/partitions.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/io.h"
#include "base/log.h"
#include "server/cluster_transfer.h"

void sl_partitions_init(sl_partitions_t *ps, const char *data_dir, uint64_t batch_max)
{
    memset(ps, 0, sizeof(*ps));
    snprintf(ps->data_dir, sizeof(ps->data_dir), "%s", data_dir);
    snprintf(ps->trash_dir, sizeof(ps->trash_dir), "%s/" SL_PARTITIONS_TRASH, data_dir);
    ps->trash_epoch = sl_clock_realtime_us();
    ps->batch_max = batch_max;
    ps->validate_checksum = true;
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

/* --- the trash ----------------------------------------------------------------------
 * A stream, topic or partition tree is deleted by one rename into <data>/trash (what the
 * reply waits for, with the fsyncs of the two directories), and its files are removed later,
 * off the loop thread (ps->discard). A tree that cannot be renamed stays where it was, as a
 * delete that failed part way always left it: boot sweeps stream and partition leftovers,
 * and a new topic or partition clears its directory before it is created. */

static void trash_sync_parent(sl_partitions_t *ps)
{
    if (ps->trash_parent[0] == '\0')
        return;
    if (sl_io_fsync_dir(ps->trash_parent) < 0)
        sl_log_warn("%s: a directory moved to the trash, but this did not fsync",
                    ps->trash_parent);
    ps->trash_parent[0] = '\0';
}

/* Makes the renames since the last call durable: the directories they left and the trash. */
static void trash_sync(sl_partitions_t *ps)
{
    if (ps->trash_pending == 0)
        return;
    trash_sync_parent(ps);
    if (sl_io_fsync_dir(ps->trash_dir) < 0)
        sl_log_warn("%s: did not fsync after trees were moved in", ps->trash_dir);
    ps->trash_pending = 0;
}

static void discard(sl_partitions_t *ps, const char *path)
{
    if (ps->discard) {
        ps->discard(ps->discard_ctx, path);
        return;
    }
    if (sl_store_remove_tree(path) < 0)
        sl_log_warn("%s: part of it is left in the trash until the next boot", path);
}

/* Moves dir into the trash (a missing dir is nothing to do). false when it is still there. */
static bool remove_dir(sl_partitions_t *ps, const char *dir)
{
    ps->stats.trash_checks++;
    struct stat st;
    if (lstat(dir, &st) != 0 && errno == ENOENT)
        return true;
    if (!ps->trash_made) {
        /* Once per process; its name durable before anything moved into it is. */
        int mk = sl_io_mkdir(ps->trash_dir, sl_io_dir_mode());
        if (mk < 0 && mk != -EEXIST) {
            sl_log_warn("%s: cannot create it (%s); %s left on disk", ps->trash_dir,
                        strerror(-mk), dir);
            return false;
        }
        if (mk == 0 && sl_io_fsync_dir(ps->data_dir) < 0)
            sl_log_warn("%s: created, but the data directory did not fsync", ps->trash_dir);
        ps->trash_made = true;
    }
    char to[sizeof(ps->trash_dir) + 64];
    snprintf(to, sizeof(to), "%s/%" PRIu64 "-%" PRIu64, ps->trash_dir, ps->trash_epoch,
             ps->trash_seq++);
    int rc = sl_io_rename(dir, to);
    if (rc < 0) {
        sl_log_warn("%s: cannot move it to the trash (%s); left on disk", dir, strerror(-rc));
        return false;
    }
    ps->stats.trashed++;
    /* Renames from one parent (the partitions of a topic) share one fsync. */
    size_t cut = strrchr(dir, '/') ? (size_t)(strrchr(dir, '/') - dir) : 0;
    if (strlen(ps->trash_parent) != cut || strncmp(ps->trash_parent, dir, cut) != 0) {
        trash_sync_parent(ps);
        snprintf(ps->trash_parent, sizeof(ps->trash_parent), "%.*s", (int)cut, dir);
    }
    ps->trash_pending++;
    discard(ps, to);
    return true;
}

void sl_partitions_sweep_trash(sl_partitions_t *ps)
{
    DIR *d = opendir(ps->trash_dir);
    if (!d)
        return;
    struct dirent *e;
    uint32_t n = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[sizeof(ps->trash_dir) + 300];
        snprintf(path, sizeof(path), "%s/%s", ps->trash_dir, e->d_name);
        discard(ps, path);
        n++;
    }
    closedir(d);
    if (n > 0)
        sl_log_info("%s: %u trees left by deletes before this boot are being removed",
                    ps->trash_dir, n);
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
    cfg->validate_checksum = ps->validate_checksum;
    cfg->created_revision = mt->created_at;
    cfg->index_every_batch = ps->replicated;
    /* On a cluster an enforce_fsync topic's batch is durable once its
     * partition group's ring is fdatasynced on a quorum, before the commit
     * (docs/cluster.md); each checkpoint syncs the segments before the ring
     * may reuse the slots of the ops it covers. A segment fdatasync per
     * append would only lengthen the commit path. */
    if (ps->replicated)
        cfg->enforce_fsync = false;
    cfg->bound = &ps->journal_bound;
    cfg->read_buf = &ps->read_buf;
    cfg->creator = ps->replicated ? NULL : ps->creator;
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
 * messages. Returns whether it held messages when it was purged (worth a log line). */
static bool settle_purge(sl_topic_rt_t *rt, const sl_meta_topic_t *mt, uint32_t id)
{
    sl_partition_t *p = rt->partitions[id];
    if (!p || sl_partition_purge_generation(p) >= mt->purge_generation)
        return false;
    uint64_t had = sl_partition_purge_generation(p);
    uint64_t messages = sl_partition_messages(p);
    int rc = sl_partition_purge_to(p, mt->purge_generation);
    if (rc == 0) {
        if (messages > 0)
            sl_log_info("partition %u of topic %u in stream %u: purged to generation %" PRIu64
                        " (had %" PRIu64 ")",
                        id, rt->topic_id, rt->stream_id, mt->purge_generation, had);
        return messages > 0;
    }
    sl_log_error("partition %u of topic %u in stream %u: purge to generation %" PRIu64
                 " failed (%d); closed until a restart purges it",
                 id, rt->topic_id, rt->stream_id, mt->purge_generation, rc);
    sl_partition_close(p);
    rt->partitions[id] = NULL;
    return false;
}

/* Opens a partition and settles its purge generation before it serves; a new partition
 * (CreatePartitions, a new topic: fresh, its directory cleared) is created without touching
 * the disk (sl_partition_create) and owes the topic's current generation that way. */
static void open_partition(sl_partitions_t *ps, sl_topic_rt_t *rt, const sl_meta_topic_t *mt,
                           uint32_t id, bool fresh)
{
    char dir[4400], err[512] = {0};
    partition_dir(ps, rt->stream_id, rt->topic_id, id, dir, sizeof(dir));
    sl_partition_config_t cfg;
    partition_config(ps, mt, &cfg);
    ps->stats.opened++;
    /* A cluster state transfer committed and cut short by a crash is rolled forward before
     * the partition reads its directory (server/cluster_transfer.h). */
    if (!fresh && sl_ptransfer_roll_at_open(dir, mt->created_at) != 0)
        sl_log_error("partition %u of topic %u in stream %u: an interrupted state transfer "
                     "could not be rolled forward",
                     id, rt->topic_id, rt->stream_id);
    int rc = fresh ? sl_partition_create(dir, id, &cfg, &rt->partitions[id])
                   : sl_partition_open(dir, id, &cfg, sl_clock_realtime_us(), &rt->partitions[id],
                                       err, sizeof(err));
    if (rc != 0) {
        rt->partitions[id] = NULL;
        sl_log_error("partition %u of topic %u in stream %u %s: %s", id, rt->topic_id,
                     rt->stream_id, sl_partition_refused(rc) ? "refused" : "not opened", err);
        return;
    }
    /* In cluster mode a partition with data is purged by its group, in its log's order; a
     * new one is empty and made on every node at the same metadata op. */
    if (fresh || !ps->purge_by_groups)
        settle_purge(rt, mt, id);
}

/* Closes partition id, flushing it first when its data stays (flush), and
 * moves its directory to the trash (remove). A partition about to be
 * deleted is not flushed: its journal is given back, not written. */
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
        remove_dir(ps, dir);
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
    remove_dir(w->ps, dir);
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
 * its directory is moved out first, and then it is created without a look
 * at the disk. */
static void sync_topic(sl_partitions_t *ps, sl_topic_rt_t *rt, const sl_meta_topic_t *mt,
                       bool fresh, bool boot)
{
    ps->stats.topics_visited++;
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
    if (boot && !ps->keep_unknown)
        sweep_partitions(ps, rt, want);
    for (uint32_t id = had; id < want; id++) {
        bool cleared = false;
        if (!boot) {
            char dir[4400];
            partition_dir(ps, rt->stream_id, rt->topic_id, id, dir, sizeof(dir));
            /* A new topic's directory was cleared whole (sync_stream). */
            cleared = fresh || remove_dir(ps, dir);
        }
        open_partition(ps, rt, mt, id, cleared);
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
        remove_dir(ps, dir);
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

/* The registry's topics of one stream are one run, starting where (stream_id, 0) would go. */
static uint32_t stream_run(const sl_partitions_t *ps, uint32_t stream_id)
{
    bool found;
    return find_slot(ps, stream_id, 0, &found);
}

/* Drops the runtime topics of stream_id that meta no longer has. When the stream itself is
 * gone (or is another incarnation), its whole directory goes to the trash in one rename, not
 * topic by topic. */
static void drop_gone(sl_partitions_t *ps, const sl_meta_t *meta, uint32_t stream_id)
{
    const sl_meta_stream_t *ms = sl_meta_stream_by_id(meta, stream_id);
    bool stream_gone = false;
    for (uint32_t i = stream_run(ps, stream_id);
         i < ps->count && ps->topics[i]->stream_id == stream_id;) {
        ps->stats.topics_visited++;
        bool stream_alive;
        if (still_in_meta(meta, ps->topics[i], &stream_alive)) {
            i++;
            continue;
        }
        stream_gone |= !stream_alive;
        drop_topic(ps, i, stream_alive);
    }
    if (stream_gone || !ms) {
        char dir[4400];
        stream_dir(ps, stream_id, dir, sizeof(dir));
        remove_dir(ps, dir);
    }
}

/* Brings the registry's topics of one stream to meta: drops what meta lost, adds and
 * resizes the rest. Costs the stream's topics, whatever the number of streams. */
static void sync_stream(sl_partitions_t *ps, const sl_meta_t *meta, uint32_t stream_id, bool boot)
{
    drop_gone(ps, meta, stream_id);
    const sl_meta_stream_t *ms = sl_meta_stream_by_id(meta, stream_id);
    for (uint32_t i = 0; ms && i < ms->topics.count; i++) {
        const sl_meta_topic_t *mt = sl_meta_topic_at(ms, i);
        bool found;
        uint32_t slot = find_slot(ps, ms->id, mt->id, &found);
        if (found) {
            sync_topic(ps, ps->topics[slot], mt, false, boot);
            continue;
        }
        /* A new topic starts empty, whatever a failed delete left. */
        bool cleared = false;
        if (!boot) {
            char dir[4400];
            topic_dir(ps, ms->id, mt->id, dir, sizeof(dir));
            cleared = remove_dir(ps, dir);
        }
        sl_topic_rt_t *rt = add_topic(ps, ms, mt, slot);
        if (!rt) {
            sl_log_error("out of memory for topic %u of stream %u", mt->id, ms->id);
            continue;
        }
        sync_topic(ps, rt, mt, cleared, boot);
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
    remove_dir(w->ps, dir);
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
    /* Streams the registry has that meta lost, newest first so each run stays in place. */
    for (uint32_t i = ps->count; i-- > 0;) {
        uint32_t stream_id = ps->topics[i]->stream_id;
        if (!sl_meta_stream_by_id(meta, stream_id)) {
            drop_gone(ps, meta, stream_id);
            i = ps->count < i ? ps->count : i;
        }
    }
    if (boot && !ps->keep_unknown)
        sweep_streams(ps, meta);
    for (const sl_meta_stream_t *ms = sl_meta_stream_next(meta, NULL); ms;
         ms = sl_meta_stream_next(meta, ms))
        sync_stream(ps, meta, ms->id, boot);
    trash_sync(ps);
    if (ps->closed != closed)
        give_back_heap(ps);
}

void sl_partitions_sync_stream(sl_partitions_t *ps, const sl_meta_t *meta, uint32_t stream_id)
{
    uint64_t closed = ps->closed;
    sync_stream(ps, meta, stream_id, false);
    trash_sync(ps);
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
    uint32_t partitions = 0, with_messages = 0;
    if (ps->purge_by_groups)
        return;
    for (uint32_t i = stream_run(ps, stream_id);
         ms && i < ps->count && ps->topics[i]->stream_id == stream_id; i++) {
        sl_topic_rt_t *rt = ps->topics[i];
        ps->stats.topics_visited++;
        if (topic_id != UINT32_MAX && rt->topic_id != topic_id)
            continue;
        sl_ident_t tid = sl_ident_number(rt->topic_id);
        const sl_meta_topic_t *mt = sl_meta_topic_find(ms, &tid);
        if (!mt || mt->created_at != rt->created_at)
            continue;
        rt->balanced_next = 0;
        for (uint32_t id = 0; id < rt->partitions_count; id++, partitions++)
            with_messages += settle_purge(rt, mt, id);
    }
    sl_log_debug("purge of stream %u: %u partitions, %u held messages", stream_id, partitions,
                 with_messages);
}

void sl_partitions_retention(sl_partitions_t *ps, uint64_t now_us)
{
    if (ps->replicated)
        return; /* the partition groups' primaries decide (server/cluster_partition.c) */
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
