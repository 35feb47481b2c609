/* State transfer of a partition group's checkpoint (shared/protocol/cluster.md 9, docs/cluster.md
 * "State transfer"): the host side of the core's offer / serve / stage / install hooks for one
 * partition replica. Its artifacts: SEGMENT_LOG (kind 2), one per retained segment, the .log
 * verbatim, frontier = the segment's base offset; then CONSUMER_OFFSETS (kind 3), frontier = the
 * offer's commit_op:
 *
 *   [snapshot: the machine snapshot of the checkpoint, server/cluster_snapshot.h: next u64,
 *    count u32, count x (kind u8, id u32, offset u64), log_gen u64, the DeleteSegments record]
 *   [the serving partition's purge generation u64, which its segments are of]
 *
 * Serving: an offer seals every segment at its length on disk at that moment (segments are
 * append-only; the active one goes on growing and is served up to what was offered), hashes
 * them (a sealed segment's hash is kept for the next offer; the newest segment's hash state
 * too, so the next offer hashes only what was appended since) and is kept, with the one
 * before it, so a long transfer survives the server's next checkpoints. The hashing reads
 * every byte offered, so it runs on the worker pool: the first request for an offer lists
 * the segments at their lengths then, hands the reading and hashing to a worker and is
 * refused as transient (the requester asks again, cluster.md 9's unavailable_transient); a
 * request once the worker is done gets the offer, when its segments are all still there
 * and no purge came between; a second requester of the
 * same checkpoint gets the same offer, unchanged, while its segments are all still there. A segment
 * deleted since (retention) cannot be served: the requester starts over.
 *
 * Receiving: the artifacts are written to <partition>/replica/transfer/ (SL_PTRANSFER_STAGING),
 * each verified whole against the manifest, then installed through store/install.c's marker
 * (crash-safe: old set or new set, never a mix; see store/partition.h). A staged segment is
 * re-read and hashed on the worker pool once its last chunk is written, while the next ones
 * arrive; install answers SL_VSR_INSTALL_PENDING until the worker has verified them all, and
 * a refusal (the transfer starts over) when one did not verify. */
#ifndef SL_SERVER_CLUSTER_TRANSFER_H
#define SL_SERVER_CLUSTER_TRANSFER_H

#include "server/work_pool.h"
#include "store/partition.h"
#include "vsr/replica.h"

/* Relative to the partition directory. */
#define SL_PTRANSFER_STAGING "replica/transfer"

typedef struct sl_ptransfer sl_ptransfer_t;

/* NULL when out of memory. p and the strings must outlive it; so must pool, the worker pool
 * that hashes offered segments and verifies staged ones (server/work_pool.h; NULL: both are
 * done on the calling thread, a staged segment when its last chunk is staged). Freeing it
 * with a job on the pool is allowed: the job is let go when the pool hands it back. */
sl_ptransfer_t *sl_ptransfer_new(sl_partition_t *p, uint64_t group, uint64_t created_revision,
                                 bool enforce_fsync, sl_work_pool_t *pool);
void sl_ptransfer_free(sl_ptransfer_t *x);

/* The hooks (sl_vsr_storage_t), with the checkpoint's snapshot artifact for offer. */
int sl_ptransfer_offer(sl_ptransfer_t *x, uint64_t op, sl_span_t snapshot,
                       const sl_vsr_artifact_t **list, uint32_t *count);
sl_span_t sl_ptransfer_serve(sl_ptransfer_t *x, uint64_t op, uint32_t index, uint64_t offset,
                             uint32_t len);
int sl_ptransfer_stage(sl_ptransfer_t *x, uint64_t op, uint32_t index, const sl_vsr_artifact_t *a,
                       uint64_t offset, sl_span_t bytes);
int sl_ptransfer_install(sl_ptransfer_t *x, uint64_t op, const sl_vsr_artifact_t *list,
                         uint32_t count, sl_buf_t *snapshot);

/* At the group's open: an install the marker committed and a crash interrupted is finished
 * (its files were rolled by the partition's open, server/partitions.c; its consumer offsets
 * are applied here), and a transfer cut short is discarded. 0 or a negative error. */
int sl_ptransfer_boot(sl_ptransfer_t *x);

/* The files' roll at a partition's open, before the partition reads its directory. */
int sl_ptransfer_roll_at_open(const char *partition_dir, uint64_t created_revision);

/* A transfer is being received (staging begun, not installed). */
bool sl_ptransfer_receiving(const sl_ptransfer_t *x);

#endif
