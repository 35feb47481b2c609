/* The partitions this shard owns, kept in step with the metadata: every
 * partition of every topic in meta is open here, under
 * <data>/streams/<stream>/topics/<topic>/partitions/<partition>/.
 *
 * After every committed metadata operation the server calls
 * sl_partitions_sync, which opens what meta has and the registry lacks,
 * closes and deletes what meta no longer has (topics are told apart by
 * created_at, so a reused id never inherits old data) and reconfigures
 * the rest. At boot the same call also sweeps stream directories that meta
 * does not know (a delete interrupted by a crash). Every partition it opens
 * is brought to its topic's purge generation before it serves (purged again
 * when its purge.gen is lower: a purge committed but not applied before a
 * crash). Internal to src/server; runs on the loop thread. */
#ifndef SL_SERVER_PARTITIONS_H
#define SL_SERVER_PARTITIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "meta/state.h"
#include "server/frame_pool.h"
#include "store/partition.h"

typedef struct sl_topic_rt {
    uint32_t stream_id;
    uint32_t topic_id;
    uint64_t stream_created_at;
    uint64_t created_at;
    uint32_t partitions_count;
    sl_partition_t **partitions; /* by partition id; NULL where refused at boot */
    uint64_t balanced_next;      /* round-robin counter of Balanced sends */
    bool enforce_fsync;
} sl_topic_rt_t;

/* The trash under the data directory: deleted trees wait there for their removal. */
#define SL_PARTITIONS_TRASH "trash"

/* What the registry did, for tests: the work of a request in units that do not depend on
 * the clock. */
typedef struct sl_partitions_counters {
    uint64_t topics_visited; /* runtime topics looked at by syncs and purges */
    uint64_t opened;         /* partitions opened or created */
    uint64_t trash_checks;   /* directories looked for to move to the trash */
    uint64_t trashed;        /* directories moved to the trash */
} sl_partitions_counters_t;

typedef struct sl_partitions {
    char data_dir[4096];
    char trash_dir[4200];
    char trash_parent[4400]; /* the directory a rename left, not yet fsynced */
    uint64_t trash_epoch;    /* names in the trash: <epoch>-<seq>, unique across boots */
    uint64_t trash_seq;
    uint32_t trash_pending; /* renames into the trash not yet fsynced */
    bool trash_made;
    /* Where a tree moved to the trash is deleted: the server hands the path to a worker
     * thread, which touches nothing else. NULL: deleted on the calling thread. */
    void (*discard)(void *ctx, const char *path);
    void *discard_ctx;
    sl_partitions_counters_t stats;
    uint64_t batch_max;
    /* system.partition.validate_checksum: polls re-verify every record they read from disk
     * (on after sl_partitions_init; the server sets it from its settings). */
    bool validate_checksum;
    /* Where partitions give appended frames back once on disk (the
     * partitions' release hook); NULL: free(). Set before the first sync. */
    sl_frame_pool_t *frame_pool;
    /* The bound on memory held by every partition's unflushed journal
     * (system.partition.journal_memory_max); sl_journal_bound_init before
     * the first sync, or max stays 0: no bound. */
    sl_journal_bound_t journal_bound;
    /* Creates partitions' first segments off the loop (server/segment_create.h); NULL: on
     * the loop. Not used when replicated. Set before the first sync; outlives the partitions. */
    const sl_partition_creator_t *creator;
    /* The read scratch every partition's polls share (one poll at a time). */
    sl_buf_t read_buf;
    uint64_t closed;        /* partitions closed so far (a sync that closes some trims) */
    /* Cluster mode while the metadata group replays what it may have applied before a
     * restart (server/cluster.c): meta is behind the disk, so a boot sync opens what it
     * knows and sweeps nothing it does not know yet. */
    bool keep_unknown;
    /* Cluster mode: a committed purge and an open leave the partitions' purge generation to
     * the partition groups (server/cluster_partition.c), which purge in their logs' order. */
    bool purge_by_groups;
    /* Cluster mode: each partition is a replica of its group's log, so its files must be
     * the same on every node (an index entry per batch, sl_partition_config_t), and
     * retention is decided by the group's primary and applied through the log
     * (sl_cluster_pgroups_retention), never here. Set before the first sync. */
    bool replicated;
    sl_topic_rt_t **topics; /* sorted by (stream_id, topic_id) */
    uint32_t count;
    uint32_t cap;
} sl_partitions_t;

void sl_partitions_init(sl_partitions_t *ps, const char *data_dir, uint64_t batch_max);
/* Opens, closes and deletes to match meta, over every stream (boot, or when the operation's
 * stream is not known). Errors are logged per partition (a refused partition stays NULL and
 * answers as missing data). A deleted tree is moved to the trash, the renames made durable
 * before this returns, and removed by ps->discard. */
void sl_partitions_sync(sl_partitions_t *ps, const sl_meta_t *meta, bool boot);
/* The same for one stream only, after an operation that changed nothing else: it costs the
 * stream's topics, not every topic of the server. */
void sl_partitions_sync_stream(sl_partitions_t *ps, const sl_meta_t *meta, uint32_t stream_id);
/* At boot, before the first sync: hands every tree left in the trash to ps->discard. */
void sl_partitions_sweep_trash(sl_partitions_t *ps);
/* Flushes every partition (shutdown) and closes them. */
void sl_partitions_close(sl_partitions_t *ps);

sl_topic_rt_t *sl_partitions_topic(sl_partitions_t *ps, uint32_t stream_id, uint32_t topic_id);
/* NULL when the topic or the partition does not exist, or was refused. */
sl_partition_t *sl_partitions_get(sl_partitions_t *ps, uint32_t stream_id, uint32_t topic_id,
                                  uint32_t partition_id);

/* Statistics of a topic / stream / everything, for the Get* replies. */
typedef struct sl_partitions_stats {
    uint64_t messages;
    uint64_t size_bytes;
    uint32_t segments;
} sl_partitions_stats_t;
void sl_partitions_topic_stats(sl_partitions_t *ps, uint32_t stream_id, uint32_t topic_id,
                               sl_partitions_stats_t *out);
void sl_partitions_stream_stats(sl_partitions_t *ps, uint32_t stream_id,
                                sl_partitions_stats_t *out);
void sl_partitions_all_stats(sl_partitions_t *ps, sl_partitions_stats_t *out);

/* After a committed purge (not in cluster mode: purge_by_groups): purges every partition of a stream or of one topic (UINT32_MAX:
 * all) to its topic's purge generation in meta and records it in purge.gen. A partition that
 * cannot be purged is closed (answers as missing) until a restart purges it. */
void sl_partitions_purge(sl_partitions_t *ps, const sl_meta_t *meta, uint32_t stream_id,
                         uint32_t topic_id);
/* Runs retention on every partition (the cleaner timer); nothing in cluster mode
 * (replicated). */
void sl_partitions_retention(sl_partitions_t *ps, uint64_t now_us);

#endif
