/* Partition groups (docs/architecture.md, "Partition groups in sluiced"):
 * one consensus replica per partition, on the loop thread beside the
 * metadata group's, over the same core (src/vsr), sessionless.
 *
 * The machine of a group is the partition of src/store itself. Its log
 * holds three kinds of prepare body, told apart by their length (a batch
 * record is at least 256 bytes, the other two are shorter):
 *   SendMessages          the batch record, stamped by the primary's prepare
 *                         hook (messages.md 3.3) and re-derived by each
 *                         backup's accept hook;
 *   StoreConsumerOffset   [kind u8][id u32][offset u64][flags u8][next u64]
 *   DeleteConsumerOffset  [kind u8][id u32][next u64]
 *   PurgeTopic            [generation u64][next u64]
 *   DeleteSegments        [below u64][generation u64][next u64]
 * where `next` is the partition's next offset after the prepare: a prepare
 * hook whose previous op is still in the pipeline reads the next offset
 * from that op's body (the head) whatever its kind.
 *
 * A purge (PurgeTopic / PurgeStream, docs/cluster.md "Purges") commits in
 * the metadata group, which bumps the topic's purge generation and touches
 * no partition; the partition group's primary then submits a purge op with
 * that generation (client 0, an internal op) and every replica purges the
 * partition where that op sits in the log. Its `next` is 0 when it purges
 * (the stamping restarts there), the head's when the generation was
 * already purged (a resubmission: nothing changes).
 *
 * A deletion of segments (DeleteSegments on the primary, or the retention
 * its cleaner decides: docs/cluster.md "Segments and retention") names the
 * offset below which every sealed segment goes, and the purge generation
 * that offset belongs to: every replica deletes the same segments where the
 * op sits in the log (their boundaries are a function of the log), a replay
 * deletes nothing more, and an op overtaken by a purge deletes nothing. A
 * client's DeleteSegments sent again (the same client id and request number)
 * is submitted with the offset its first time resolved, which every replica
 * remembered when it applied it (delete_seen), not counted again.
 *
 * Apply appends the stamped record with sl_partition_append, skipping one
 * whose offsets the segments already hold (a replay after a restart); the
 * reply body is result-framed ([0] then the SendMessages reply, or an error
 * code), which the session's side unwraps. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/cluster_internal.h"
#include "server/cluster_snapshot.h"
#include "server/cluster_transfer.h"
#include "store/offsets.h"
#include "store/purge_gen.h"
#include "wire/batch.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_topics.h"
#include "wire/codec.h"

#define OFFSET_STORE_BODY  23u
#define OFFSET_DELETE_BODY 14u
#define PURGE_BODY         16u
#define DELETE_BODY        24u
#define STORE_NEVER_BACK   1u

struct sl_pgroup {
    sl_cluster_t *c;
    uint64_t group;
    uint32_t stream_id, topic_id, partition_id;
    uint64_t topic_created_at; /* the incarnation it serves (a recreated topic reopens) */
    sl_partition_t *partition;
    sl_vsr_storage_dir_t *store;
    sl_ptransfer_t *xfer; /* state transfer of segments and offsets (cluster_transfer.h) */
    sl_vsr_replica_t *replica;
    sl_vsr_config_t vcfg;
    bool enforce_fsync;
    bool seen; /* marked by the sync that walks the partitions */
    bool booting;
    /* The partition's next offset as of the last op applied (the replicated
     * log's view, which the segments may be ahead of during a replay). */
    uint64_t applied_next;
    uint64_t take_over_tick; /* ticks at the last take-over (0: none) */
    /* The purge generation as of the last op applied (the log's view, in the
     * snapshot): while the partition's own is higher, a replay is going over
     * ops from before a purge the segments already hold, which are skipped. */
    uint64_t log_gen;
    uint64_t prepared_gen; /* the highest purge this replica's prepare hook stamped */
    uint64_t purge_tick;   /* ticks at the last purge submitted (0: none) */
    /* The latest DeleteSegments of each of the last few clients, recorded at
     * apply (so on every replica, a new primary too), kept in the checkpoint's
     * snapshot and brought up to date by the replay of the ops after it. */
    sl_delete_seen_t deletes[SL_CLUSTER_DELETES_SEEN];
};

/* --- prepare bodies --------------------------------------------------------------------- */

static bool is_record(sl_span_t body)
{
    return body.len >= SL_BATCH_HEADER_SIZE;
}

/* The partition's next offset after the op whose body this is. */
static uint64_t next_after(sl_span_t body)
{
    if (is_record(body)) {
        sl_batch_header_t h;
        sl_batch_header_read(body.ptr, &h);
        return h.base_offset + h.message_count;
    }
    if (body.len == OFFSET_STORE_BODY)
        return sl_load_u64(body.ptr + 15);
    if (body.len == OFFSET_DELETE_BODY)
        return sl_load_u64(body.ptr + 6);
    if (body.len == PURGE_BODY)
        return sl_load_u64(body.ptr + 8);
    if (body.len == DELETE_BODY)
        return sl_load_u64(body.ptr + 16);
    return 0;
}

static uint64_t head_next(const sl_pgroup_t *pg, sl_span_t head)
{
    return head.ptr == NULL ? pg->applied_next : next_after(head);
}

/* --- the machine ------------------------------------------------------------------------- */

static void put_result(sl_buf_t *reply, uint32_t code)
{
    if (code == 0)
        sl_result_put_ok(reply);
    else
        sl_result_put_error(reply, code);
}

static void apply_send(sl_pgroup_t *pg, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    sl_server_t *srv = pg->c->srv;
    sl_batch_header_t h;
    sl_batch_header_read(body.ptr, &h);
    uint64_t next = sl_partition_next_offset(pg->partition);
    pg->applied_next = h.base_offset + h.message_count;
    if (h.base_offset + h.message_count > next) {
        if (h.base_offset != next) {
            /* Every replica stamps from the same log: only a partition changed
             * outside the group (a purge, segments lost) gets here. */
            sl_log_error("cluster: partition group %" PRIx64 " op %" PRIu64
                         ": the record starts at offset %" PRIu64
                         " but the partition's next offset is %" PRIu64 ": not appended",
                         pg->group, p->op, h.base_offset, next);
            return put_result(reply, SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
        }
        uint8_t *owned = sl_frame_pool_get(srv->frame_pool, (uint32_t)body.len);
        if (!owned) {
            sl_log_error("cluster: partition group %" PRIx64 ": out of memory", pg->group);
            return put_result(reply, SL_ERR_CANNOT_SAVE_MESSAGES_TO_SEGMENT);
        }
        memcpy(owned, body.ptr, body.len);
        uint64_t base = 0;
        int rc = sl_partition_append(pg->partition, owned, owned, body.len, p->timestamp, &base);
        if (rc != 0) {
            sl_frame_pool_put(srv->frame_pool, owned);
            sl_log_error("cluster: partition group %" PRIx64 " op %" PRIu64 ": append failed: %s",
                         pg->group, p->op, sl_strerror(rc));
            return put_result(reply, (uint32_t)-rc);
        }
        sl_assert(base == h.base_offset);
    }
    sl_send_confirmation_t conf = {pg->stream_id, pg->topic_id, pg->partition_id, h.base_offset};
    sl_send_messages_reply_t r = {1, &conf};
    sl_result_put_ok(reply);
    if (sl_send_messages_reply_encode(reply, &r) != 0)
        sl_log_error("cluster: a SendMessages reply did not encode");
}

static void apply_offset(sl_pgroup_t *pg, sl_span_t body, sl_buf_t *reply)
{
    sl_offsets_kind_t kind = (sl_offsets_kind_t)body.ptr[0];
    uint32_t id = sl_load_u32(body.ptr + 1);
    int rc;
    pg->applied_next = next_after(body);
    if (body.len == OFFSET_STORE_BODY) {
        uint64_t offset = sl_load_u64(body.ptr + 5);
        bool never_back = (body.ptr[13] & STORE_NEVER_BACK) != 0;
        rc = sl_offsets_store(pg->partition, kind, id, offset, pg->enforce_fsync, never_back);
    } else {
        rc = sl_offsets_delete(pg->partition, kind, id);
    }
    put_result(reply, rc == 0 ? 0 : (uint32_t)-rc);
}

/* The purge op: the partition purged to the generation unless it already is
 * (a replay after a restart, a resubmission). */
static void apply_purge(sl_pgroup_t *pg, const sl_vsr_prepare_t *p, sl_span_t body,
                        sl_buf_t *reply)
{
    uint64_t gen = sl_load_u64(body.ptr);
    pg->applied_next = next_after(body);
    if (gen > pg->log_gen)
        pg->log_gen = gen;
    if (sl_partition_purge_generation(pg->partition) >= gen)
        return put_result(reply, 0);
    int rc = sl_partition_purge_to(pg->partition, gen);
    if (rc != 0) {
        /* The segments hold what the log says was purged: sends stamped from
         * 0 will not append here (logged there) until a restart replays this. */
        sl_log_error("cluster: partition group %" PRIx64 " op %" PRIu64
                     ": purge to generation %" PRIu64 " failed: %s",
                     pg->group, p->op, gen, sl_strerror(rc));
        return put_result(reply, (uint32_t)-rc);
    }
    sl_log_info("cluster: partition %u/%u/%u purged to generation %" PRIu64 " at op %" PRIu64,
                pg->stream_id, pg->topic_id, pg->partition_id, gen, p->op);
    put_result(reply, 0);
}

/* Remembers a client's DeleteSegments as applied (delete_seen). */
static void delete_remember(sl_pgroup_t *pg, const sl_vsr_prepare_t *p, uint64_t below,
                            uint64_t gen)
{
    if (sl_u128_is_zero(p->client))
        return; /* the retention's op: nobody replays it */
    sl_delete_seen_t *slot = &pg->deletes[0];
    for (uint32_t i = 0; i < SL_CLUSTER_DELETES_SEEN; i++) {
        sl_delete_seen_t *d = &pg->deletes[i];
        if (sl_u128_eq(d->client, p->client)) {
            slot = d;
            break;
        }
        if (d->op < slot->op)
            slot = d; /* a free entry's op is 0 */
    }
    *slot = (sl_delete_seen_t){.client = p->client,
                               .request_checksum = p->request_checksum,
                               .request = p->request,
                               .below = below,
                               .generation = gen,
                               .op = p->op};
}

/* The deletion op: every sealed segment below the offset it names goes, on
 * every replica, unless a purge came first (the offset is of the partition
 * before it). The journal is flushed first: a replica that has not written
 * the batches the primary had sealed would still hold that segment active. */
static void apply_delete(sl_pgroup_t *pg, const sl_vsr_prepare_t *p, sl_span_t body,
                         sl_buf_t *reply)
{
    uint64_t below = sl_load_u64(body.ptr), gen = sl_load_u64(body.ptr + 8);
    pg->applied_next = next_after(body);
    delete_remember(pg, p, below, gen);
    if (gen != pg->log_gen)
        return put_result(reply, 0);
    uint32_t deleted = 0;
    int rc = sl_partition_flush(pg->partition);
    if (rc == 0)
        rc = sl_partition_delete_before(pg->partition, below, &deleted);
    if (rc != 0) {
        /* What is left is deleted by the next deletion op, or a replay of this one. */
        sl_log_error("cluster: partition group %" PRIx64 " op %" PRIu64
                     ": deleting the segments below offset %" PRIu64 " failed: %s",
                     pg->group, p->op, below, sl_strerror(rc));
        return put_result(reply, (uint32_t)-rc);
    }
    if (deleted > 0)
        sl_log_info("cluster: partition %u/%u/%u: %u segments below offset %" PRIu64
                    " deleted at op %" PRIu64,
                    pg->stream_id, pg->topic_id, pg->partition_id, deleted, below, p->op);
    put_result(reply, 0);
}

static void machine_apply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    sl_pgroup_t *pg = ctx;
    if (p->operation == SL_OP_PURGE_TOPIC && body.len == PURGE_BODY)
        return apply_purge(pg, p, body, reply);
    if (sl_partition_purge_generation(pg->partition) > pg->log_gen) {
        /* A replay of an op from before a purge the segments already hold. */
        pg->applied_next = next_after(body);
        return put_result(reply, SL_ERR_ERROR);
    }
    if (p->operation == SL_OP_SEND_MESSAGES && is_record(body))
        return apply_send(pg, p, body, reply);
    if (p->operation == SL_OP_DELETE_SEGMENTS && body.len == DELETE_BODY)
        return apply_delete(pg, p, body, reply);
    if ((p->operation == SL_OP_STORE_CONSUMER_OFFSET && body.len == OFFSET_STORE_BODY) ||
        (p->operation == SL_OP_DELETE_CONSUMER_OFFSET && body.len == OFFSET_DELETE_BODY))
        return apply_offset(pg, body, reply);
    /* The prepare hook builds nothing else. */
    sl_log_error("cluster: partition group %" PRIx64 " op %" PRIu64
                 ": operation %u with a body of %zu bytes does not apply",
                 pg->group, p->op, p->operation, body.len);
    put_result(reply, SL_ERR_ERROR);
}

/* The snapshot (cluster_snapshot.h): the next offset, the consumer offsets, the purge
 * generation of the log and the DeleteSegments record. The segments are the rest of the
 * state (a checkpoint syncs them first). */
static void machine_snapshot(void *ctx, sl_buf_t *out)
{
    sl_pgroup_t *pg = ctx;
    uint32_t n = sl_offsets_count(pg->partition);
    sl_put_u64(out, pg->applied_next);
    sl_put_u32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        sl_offsets_kind_t kind;
        uint32_t id;
        uint64_t offset;
        if (!sl_offsets_at(pg->partition, i, &kind, &id, &offset))
            break;
        sl_put_u8(out, (uint8_t)kind);
        sl_put_u32(out, id);
        sl_put_u64(out, offset);
    }
    sl_put_u64(out, pg->log_gen);
    sl_psnapshot_put_deletes(out, pg->deletes);
}

static int machine_restore(void *ctx, sl_span_t snap)
{
    sl_pgroup_t *pg = ctx;
    sl_psnapshot_t s;
    char err[160];
    if (sl_psnapshot_decode(snap, &s, err, sizeof(err)) != 0) {
        /* Checksummed where it is stored and sent: a snapshot that passed those and does not
         * decode is of a format this server does not read. The core then takes its
         * checkpoint from a peer. */
        sl_log_error("cluster: partition group %" PRIx64 " (stream %u, topic %u, partition %u): "
                     "the checkpoint's snapshot does not decode (%s): not restored",
                     pg->group, pg->stream_id, pg->topic_id, pg->partition_id, err);
        return -1;
    }
    uint64_t have = sl_partition_next_offset(pg->partition);
    uint64_t snap_gen = s.has_log_gen ? s.log_gen : pg->log_gen;
    /* Segments purged after the checkpoint (a state transfer brings them
     * so, with their generation) restart below its offsets: the replay skips
     * up to the purge op, which they already reflect. */
    bool purged_since = sl_partition_purge_generation(pg->partition) > snap_gen;
    if (have < s.next && !purged_since) {
        /* The core then asks a peer for its checkpoint: segments and offsets
         * (cluster.md 9, cluster_transfer.c). */
        sl_log_warn("cluster: partition group %" PRIx64 " (stream %u, topic %u, partition %u): "
                    "the checkpoint names offsets up to %" PRIu64
                    " but the segments end at %" PRIu64
                    ": this replica gets its segments by state transfer",
                    pg->group, pg->stream_id, pg->topic_id, pg->partition_id, s.next, have);
        return -1;
    }
    pg->applied_next = s.next;
    pg->log_gen = snap_gen;
    /* A snapshot of an older version has no record: it is rebuilt from the ops replayed. */
    memcpy(pg->deletes, s.deletes, sizeof(pg->deletes));
    /* At open the offsets on disk are those of the newest op applied, at or after the
     * checkpoint: they stay (the replay brings the log's ops again, idempotently). From a
     * peer (a state transfer) the snapshot's are the state. */
    for (uint32_t i = 0; i < s.offsets_count && !pg->booting; i++) {
        const uint8_t *e = s.offsets + (size_t)i * SL_PSNAPSHOT_OFFSET_SIZE;
        if (sl_offsets_store(pg->partition, (sl_offsets_kind_t)e[0], sl_load_u32(e + 1),
                             sl_load_u64(e + 5), pg->enforce_fsync, false) != 0)
            sl_log_warn("cluster: partition group %" PRIx64 ": an offset did not restore",
                        pg->group);
    }
    return 0;
}

static void machine_reset(void *ctx)
{
    /* The segments are the state and are never emptied here: the log's ops
     * are applied again over them, and those they already hold are skipped. */
    sl_pgroup_t *pg = ctx;
    pg->applied_next = 0;
    memset(pg->deletes, 0, sizeof(pg->deletes));
}

/* Primary: the body journaled for op p->op (messages.md 3.3). */
static uint32_t machine_prepare(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head,
                                sl_span_t body, sl_buf_t *out)
{
    sl_pgroup_t *pg = ctx;
    uint64_t next = head_next(pg, head);
    if (p->operation == SL_OP_SEND_MESSAGES) {
        if (!is_record(body))
            return SL_ERR_INVALID_COMMAND;
        uint8_t *rec = sl_buf_extend(out, body.len);
        if (!rec)
            return SL_ERR_TRANSIENT_NOT_ACCEPTED;
        memcpy(rec, body.ptr, body.len);
        sl_batch_stamp(rec, body.len, pg->partition_id, next, p->timestamp);
        return 0;
    }
    if (p->operation == SL_OP_PURGE_TOPIC) {
        if (body.len != PURGE_BODY)
            return SL_ERR_INVALID_COMMAND;
        uint64_t gen = sl_load_u64(body.ptr);
        bool purges = gen > pg->log_gen && gen > pg->prepared_gen;
        if (purges)
            pg->prepared_gen = gen;
        sl_put_u64(out, gen);
        sl_put_u64(out, purges ? 0 : next);
        return 0;
    }
    if (p->operation == SL_OP_DELETE_SEGMENTS) {
        if (body.len != DELETE_BODY)
            return SL_ERR_INVALID_COMMAND;
        sl_put_bytes(out, body.ptr, 16); /* below and generation, as admitted */
        sl_put_u64(out, next);
        return 0;
    }
    uint32_t want = p->operation == SL_OP_STORE_CONSUMER_OFFSET ? OFFSET_STORE_BODY
                                                                : OFFSET_DELETE_BODY;
    if ((p->operation != SL_OP_STORE_CONSUMER_OFFSET &&
         p->operation != SL_OP_DELETE_CONSUMER_OFFSET) ||
        body.len != want)
        return SL_ERR_INVALID_COMMAND;
    sl_put_bytes(out, body.ptr, body.len - 8);
    sl_put_u64(out, next);
    return 0;
}

/* Backup: the stamp re-derived from this replica's own position. */
static bool machine_accept(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body)
{
    sl_pgroup_t *pg = ctx;
    uint64_t next = head_next(pg, head);
    if (p->operation == SL_OP_SEND_MESSAGES) {
        if (!is_record(body))
            return false;
        sl_batch_header_t h;
        sl_batch_header_read(body.ptr, &h);
        bool ok = h.partition_id == pg->partition_id && h.base_offset == next &&
                  h.base_timestamp == p->timestamp &&
                  sl_batch_validate(body, h.message_count) == 0;
        if (!ok)
            sl_log_warn("cluster: partition group %" PRIx64 " op %" PRIu64
                        ": refused a prepare stamped partition %" PRIu64 " offset %" PRIu64
                        " time %" PRIu64 " (expected %u, %" PRIu64 ", %" PRIu64 ")",
                        pg->group, p->op, h.partition_id, h.base_offset, h.base_timestamp,
                        pg->partition_id, next, p->timestamp);
        return ok;
    }
    if (p->operation == SL_OP_STORE_CONSUMER_OFFSET)
        return body.len == OFFSET_STORE_BODY && next_after(body) == next;
    if (p->operation == SL_OP_DELETE_CONSUMER_OFFSET)
        return body.len == OFFSET_DELETE_BODY && next_after(body) == next;
    if (p->operation == SL_OP_PURGE_TOPIC)
        return body.len == PURGE_BODY && (next_after(body) == 0 || next_after(body) == next);
    if (p->operation == SL_OP_DELETE_SEGMENTS)
        return body.len == DELETE_BODY && next_after(body) == next;
    return false;
}

/* --- the storage: the metadata group's, with the checkpoint's sync --------------------------- */

static sl_vsr_storage_t inner_storage(sl_pgroup_t *pg)
{
    return sl_vsr_storage_interface(pg->store);
}

static void st_write_prepare(void *ctx, uint32_t slot, const uint8_t *frame, uint32_t size)
{
    sl_vsr_storage_t s = inner_storage(ctx);
    s.write_prepare(s.ctx, slot, frame, size);
}

static sl_span_t st_read_prepare(void *ctx, uint32_t slot)
{
    sl_vsr_storage_t s = inner_storage(ctx);
    return s.read_prepare(s.ctx, slot);
}

static int st_write_state(void *ctx, sl_span_t record)
{
    sl_vsr_storage_t s = inner_storage(ctx);
    return s.write_state(s.ctx, record);
}

static sl_span_t st_read_state(void *ctx)
{
    sl_vsr_storage_t s = inner_storage(ctx);
    return s.read_state(s.ctx);
}

/* A checkpoint names the partition's next offset: the segments must hold
 * it durably before the artifacts (and then the state record) say so. */
static int st_write_artifacts(void *ctx, uint64_t op, sl_span_t snapshot, sl_span_t table)
{
    sl_pgroup_t *pg = ctx;
    int rc = sl_partition_sync(pg->partition);
    if (rc != 0) {
        sl_log_error("cluster: partition group %" PRIx64 ": checkpoint at op %" PRIu64
                     " put off: the partition did not sync: %s",
                     pg->group, op, sl_strerror(rc));
        return rc;
    }
    sl_vsr_storage_t s = inner_storage(pg);
    return s.write_artifacts(s.ctx, op, snapshot, table);
}

static sl_span_t st_read_artifact(void *ctx, uint64_t op, uint8_t kind)
{
    sl_vsr_storage_t s = inner_storage(ctx);
    return s.read_artifact(s.ctx, op, kind);
}

/* State transfer: the segments and offsets (cluster_transfer.c), offered
 * with the checkpoint's snapshot as this replica stored it. */
static int st_offer(void *ctx, uint64_t op, const sl_vsr_artifact_t **list, uint32_t *count)
{
    sl_pgroup_t *pg = ctx;
    sl_span_t snap = st_read_artifact(pg, op, SL_VSR_ARTIFACT_METADATA_SNAPSHOT);
    if (snap.len == 0)
        return -SL_ERR_CANNOT_READ_FILE;
    return sl_ptransfer_offer(pg->xfer, op, snap, list, count);
}

static sl_span_t st_serve(void *ctx, uint64_t op, uint32_t index, uint64_t offset, uint32_t len)
{
    sl_pgroup_t *pg = ctx;
    return sl_ptransfer_serve(pg->xfer, op, index, offset, len);
}

static int st_stage(void *ctx, uint64_t op, uint32_t index, const sl_vsr_artifact_t *a,
                    uint64_t offset, sl_span_t bytes)
{
    sl_pgroup_t *pg = ctx;
    return sl_ptransfer_stage(pg->xfer, op, index, a, offset, bytes);
}

static int st_install(void *ctx, uint64_t op, const sl_vsr_artifact_t *list, uint32_t count,
                      sl_buf_t *snapshot)
{
    sl_pgroup_t *pg = ctx;
    return sl_ptransfer_install(pg->xfer, op, list, count, snapshot);
}

/* --- the bus ------------------------------------------------------------------------------------- */

static void bus_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    sl_pgroup_t *pg = ctx;
    sl_replica_plane_send(pg->c->plane, replica, frame, size);
}

static void bus_trace(void *ctx, const char *line)
{
    sl_pgroup_t *pg = ctx;
    /* Each log call site has its own rate limit (base/log.h): a state
     * transfer's steps (asking, offers, installed) have one apart from the
     * repair lines, which a replica catching up writes by the dozen and
     * which would otherwise hide them. */
    if (strncmp(line, "state transfer", 14) == 0)
        sl_log_info("cluster: partition %u/%u/%u: %s", pg->stream_id, pg->topic_id,
                    pg->partition_id, line);
    else
        sl_log_info("cluster: partition %u/%u/%u: %s", pg->stream_id, pg->topic_id,
                    pg->partition_id, line);
}

/* The core's answer to a session's partition request: a result-framed
 * body (the core's 57/58 too), unwrapped into what the protocol sends. */
static void bus_reply(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size)
{
    sl_pgroup_t *pg = ctx;
    sl_server_t *srv = pg->c->srv;
    if (size < SL_HEADER_SIZE || frame[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION)
        return;
    sl_session_t *s = sl_cluster_waiting_session(pg->c, client, frame);
    if (!s || s->vsr_wait != SL_CLUSTER_WAIT_PARTITION)
        return; /* an unwaited submission (NoAck, auto-commit), or a connection gone */
    s->vsr_wait = SL_CLUSTER_WAIT_NONE;
    sl_reply_header_t h;
    uint32_t result = SL_ERR_TRANSIENT_NOT_ACCEPTED;
    sl_span_t payload = sl_span(NULL, 0);
    if (sl_reply_header_decode(frame, srv->frame_max, &h) == 0 && h.size == size &&
        sl_result_split(sl_span(frame + SL_HEADER_SIZE, size - SL_HEADER_SIZE), &result,
                        &payload) != 0)
        result = SL_ERR_ERROR;
    if (s->vsr_req.operation == SL_OP_DELETE_SEGMENTS) {
        /* Result-framed under TruncatePartition's operation, as committed (commands.md 10). */
        sl_buf_reset(&s->reply_body);
        put_result(&s->reply_body, result);
        return sl_reply_body(s, &s->vsr_req, SL_OP_TRUNCATE_PARTITION);
    }
    if (result != 0)
        return sl_reply_status(s, &s->vsr_req, result);
    sl_buf_reset(&s->reply_body);
    if (s->vsr_req.operation == SL_OP_SEND_MESSAGES)
        sl_put_span(&s->reply_body, payload);
    else
        sl_result_put_ok(&s->reply_body);
    if (!sl_buf_ok(&s->reply_body))
        return sl_reply_status(s, &s->vsr_req, SL_ERR_ERROR);
    sl_reply_body(s, &s->vsr_req, s->vsr_req.operation);
}

/* The group of a partition (cluster.md 5); false when an id is beyond the
 * packing (such a partition has no group: its writes get 58). Stream 0,
 * topic 0, partition 0 is group 0, which sl_vsr_group_partition also
 * returns for out-of-range ids: the ranges are checked here. */
static bool group_of(uint32_t stream, uint32_t topic, uint32_t partition, uint64_t *group)
{
    if (stream >= SL_VSR_STREAMS_MAX || topic >= SL_VSR_TOPICS_MAX ||
        partition >= SL_VSR_PARTITIONS_MAX)
        return false;
    *group = sl_vsr_group_partition(stream, topic, partition);
    return true;
}

/* --- the registry ----------------------------------------------------------------------------- */

static sl_pgroup_t **find_slot(sl_cluster_t *c, uint64_t group, uint32_t *at)
{
    uint32_t lo = 0, hi = c->pgroups_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->pgroups[mid]->group < group)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo < c->pgroups_count && c->pgroups[lo]->group == group ? &c->pgroups[lo] : NULL;
}

sl_pgroup_t *sl_cluster_pgroup(sl_cluster_t *c, uint64_t group)
{
    uint32_t at;
    sl_pgroup_t **slot = find_slot(c, group, &at);
    return slot ? *slot : NULL;
}

static void pgroup_complete(sl_pgroup_t *pg);

static void write_done(void *ctx, uint32_t slot, bool ok)
{
    sl_pgroup_t *pg = ctx;
    sl_vsr_replica_write_done(pg->replica, slot, ok);
}

static void pgroup_complete(sl_pgroup_t *pg)
{
    for (int i = 0; i < 8 && sl_vsr_storage_poll(pg->store, pg, write_done) > 0; i++)
        continue;
}

static void pgroup_free(sl_pgroup_t *pg)
{
    if (pg->replica)
        sl_vsr_replica_close(pg->replica);
    if (pg->store)
        sl_vsr_storage_close(pg->store);
    sl_ptransfer_free(pg->xfer);
    free(pg);
}

/* The partition geometry (cluster_internal.h): a sessionless group with the
 * metadata group's timing. */
static void pgroup_config(const sl_cluster_t *c, sl_pgroup_t *pg)
{
    pg->vcfg = c->vcfg;
    pg->vcfg.group = pg->group;
    pg->vcfg.sessionless = true;
    pg->vcfg.pipeline_max = SL_CLUSTER_PARTITION_PIPELINE;
    pg->vcfg.journal_slots = SL_CLUSTER_PARTITION_SLOTS;
    pg->vcfg.checkpoint_interval = SL_CLUSTER_PARTITION_CHECKPOINT;
    pg->vcfg.clients_max = 1;
    pg->vcfg.reply_max = 64;
    pg->vcfg.repair_chunk_max = SL_CLUSTER_PARTITION_REPAIR_CHUNK;
    pg->vcfg.state_max = 1u << 20;
    pg->vcfg.nonce_seed = c->vcfg.nonce_seed ^ pg->group;
    /* Journal writes flush only on an enforce_fsync topic (pgroup_storage):
     * without, the last backup's copy goes after its own write. */
    pg->vcfg.late_relay = !pg->enforce_fsync;
}

static int pgroup_storage(sl_pgroup_t *pg, char *dir, size_t dir_len)
{
    int rc = sl_partition_ensure_dir(pg->partition);
    if (rc != 0)
        return rc;
    int n = snprintf(dir, dir_len, "%s/replica", sl_partition_dir(pg->partition));
    if (n < 0 || (size_t)n >= dir_len)
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_vsr_storage_options_t o = {
        .cluster = pg->vcfg.cluster,
        .group = pg->group,
        .slot_count = pg->vcfg.journal_slots,
        .slot_size = sl_vsr_storage_slot_size(SL_CLUSTER_PARTITION_PREPARE_MAX),
        .artifact_max = pg->vcfg.state_max,
        .journal_nosync = !pg->enforce_fsync,
    };
    char err[512];
    rc = sl_vsr_storage_open(dir, &o, &pg->store, err, sizeof(err));
    if (rc != 0)
        sl_log_error("cluster: %s", err);
    return rc;
}

/* The purge generation the group's log starts at, in <dir>/purge.gen: a replay
 * from the log's start (no checkpoint yet) must know whether the partition was
 * purged since, to skip the ops from before (machine_apply). Written when the
 * group is formatted; a group formatted by a version without purges in cluster
 * mode has none, and its partition's generation has not moved since. */
static int log_base(sl_pgroup_t *pg, const char *dir, bool formatted)
{
    pg->log_gen = sl_partition_purge_generation(pg->partition);
    if (formatted)
        return sl_purge_gen_write(dir, pg->log_gen, pg->topic_created_at);
    char path[PATH_MAX + 16];
    struct stat st;
    int n = snprintf(path, sizeof(path), "%s/%s", dir, SL_PURGE_GEN_FILE);
    if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &st) != 0)
        return 0;
    /* The checkpoint's snapshot, when there is one, says where the log is (restore). */
    return sl_purge_gen_read(dir, pg->topic_created_at, &pg->log_gen);
}

/* Opens the group of one partition over <partition dir>/replica/. A
 * directory with no state record is formatted when the partition is new to
 * this node (format), else opened as a lost disk. */
static sl_pgroup_t *pgroup_open(sl_cluster_t *c, const sl_topic_rt_t *rt, uint32_t partition_id,
                                uint64_t group, bool format)
{
    sl_pgroup_t *pg = calloc(1, sizeof(*pg));
    if (!pg)
        return NULL;
    *pg = (sl_pgroup_t){.c = c,
                        .group = group,
                        .stream_id = rt->stream_id,
                        .topic_id = rt->topic_id,
                        .partition_id = partition_id,
                        .topic_created_at = rt->created_at,
                        .partition = rt->partitions[partition_id],
                        .enforce_fsync = rt->enforce_fsync};
    pgroup_config(c, pg);
    char dir[PATH_MAX];
    if (pgroup_storage(pg, dir, sizeof(dir)) != 0) {
        pgroup_free(pg);
        return NULL;
    }
    sl_vsr_storage_t storage = {.ctx = pg,
                                .write_prepare = st_write_prepare,
                                .read_prepare = st_read_prepare,
                                .write_state = st_write_state,
                                .read_state = st_read_state,
                                .write_artifacts = st_write_artifacts,
                                .read_artifact = st_read_artifact,
                                .offer = st_offer,
                                .serve = st_serve,
                                .stage = st_stage,
                                .install = st_install};
    /* An install committed before a crash gets its offsets; a transfer cut
     * short before its commit leaves only a staging directory, dropped. */
    pg->xfer = sl_ptransfer_new(pg->partition, group, rt->created_at, rt->enforce_fsync,
                                c->srv->work_pool);
    if (!pg->xfer || sl_ptransfer_boot(pg->xfer) != 0) {
        sl_log_error("cluster: cannot finish or discard a state transfer in %s", dir);
        pgroup_free(pg);
        return NULL;
    }
    bool has_state = storage.read_state(pg).len != 0;
    if ((!has_state && format && sl_vsr_replica_format(&pg->vcfg, &storage) != 0) ||
        log_base(pg, dir, !has_state && format) != 0) {
        sl_log_error("cluster: cannot format %s", dir);
        pgroup_free(pg);
        return NULL;
    }
    if (!has_state && !format)
        sl_log_warn("cluster: no consensus state in %s: the partition's replica starts as a "
                    "lost disk",
                    dir);
    sl_vsr_bus_t bus = {.ctx = pg, .send = bus_send, .reply = bus_reply, .trace = bus_trace};
    sl_vsr_machine_t machine = {.ctx = pg,
                                .apply = machine_apply,
                                .snapshot = machine_snapshot,
                                .restore = machine_restore,
                                .reset = machine_reset,
                                .prepare = machine_prepare,
                                .accept = machine_accept};
    pg->booting = true;
    int rc = sl_vsr_replica_open(&pg->vcfg, &storage, &bus, &machine, &pg->replica);
    pg->booting = false;
    if (rc != 0) {
        sl_log_error("cluster: cannot open the replica in %s", dir);
        pgroup_free(pg);
        return NULL;
    }
    pgroup_complete(pg);
    return pg;
}

static bool pgroups_reserve(sl_cluster_t *c)
{
    if (c->pgroups_count < c->pgroups_cap)
        return true;
    uint32_t cap = c->pgroups_cap ? 2 * c->pgroups_cap : 16;
    sl_pgroup_t **a = realloc(c->pgroups, cap * sizeof(*a));
    if (!a)
        return false;
    c->pgroups = a;
    c->pgroups_cap = cap;
    return true;
}

static void pgroup_remove_at(sl_cluster_t *c, uint32_t at)
{
    pgroup_free(c->pgroups[at]);
    memmove(&c->pgroups[at], &c->pgroups[at + 1],
            (c->pgroups_count - at - 1) * sizeof(*c->pgroups));
    c->pgroups_count--;
}

/* One partition of the registry: its group exists, serves this incarnation
 * and this partition object, and follows the topic's enforce_fsync. */
static void sync_one(sl_cluster_t *c, const sl_topic_rt_t *rt, uint32_t i, bool format)
{
    sl_partition_t *p = rt->partitions[i];
    uint64_t group;
    if (!p || !group_of(rt->stream_id, rt->topic_id, i, &group))
        return;
    uint32_t at;
    sl_pgroup_t **slot = find_slot(c, group, &at);
    if (slot && (*slot)->partition == p && (*slot)->topic_created_at == rt->created_at) {
        (*slot)->seen = true;
        if ((*slot)->enforce_fsync != rt->enforce_fsync) {
            (*slot)->enforce_fsync = rt->enforce_fsync;
            sl_vsr_storage_set_nosync((*slot)->store, !rt->enforce_fsync);
            if ((*slot)->replica)
                sl_vsr_replica_set_late_relay((*slot)->replica, !rt->enforce_fsync);
        }
        return;
    }
    if (slot) {
        pgroup_remove_at(c, at); /* another incarnation, or the partition reopened */
        find_slot(c, group, &at);
    }
    if (!pgroups_reserve(c))
        return;
    sl_pgroup_t *pg = pgroup_open(c, rt, i, group, format);
    if (!pg)
        return;
    pg->seen = true;
    memmove(&c->pgroups[at + 1], &c->pgroups[at], (c->pgroups_count - at) * sizeof(*c->pgroups));
    c->pgroups[at] = pg;
    c->pgroups_count++;
}

void sl_cluster_pgroups_sync(sl_cluster_t *c, bool boot)
{
    sl_partitions_t *ps = &c->srv->partitions;
    for (uint32_t i = 0; i < c->pgroups_count; i++)
        c->pgroups[i]->seen = false;
    for (uint32_t t = 0; t < ps->count; t++) {
        const sl_topic_rt_t *rt = ps->topics[t];
        for (uint32_t i = 0; i < rt->partitions_count; i++)
            sync_one(c, rt, i, !boot);
    }
    for (uint32_t i = c->pgroups_count; i > 0; i--) {
        if (!c->pgroups[i - 1]->seen)
            pgroup_remove_at(c, i - 1);
    }
}

void sl_cluster_pgroups_close(sl_cluster_t *c)
{
    for (uint32_t i = 0; i < c->pgroups_count; i++)
        pgroup_free(c->pgroups[i]);
    free(c->pgroups);
    c->pgroups = NULL;
    c->pgroups_count = c->pgroups_cap = 0;
}

/* --- inputs ------------------------------------------------------------------------------------- */

void sl_cluster_pgroup_frame(sl_cluster_t *c, uint64_t group, const uint8_t *frame, uint32_t len)
{
    sl_pgroup_t *pg = sl_cluster_pgroup(c, group);
    if (!pg) {
        /* A partition this node has not applied yet, or one it deleted. */
        c->pframes_unknown++;
        return;
    }
    sl_vsr_replica_on_frame(pg->replica, frame, len);
    pgroup_complete(pg);
}

/* The metadata primary brings every partition group's primary to itself,
 * at most once per heartbeat timeout per group (a view change takes that
 * long to give up), so clients settled on it find the partitions there. */
static void purge_due(sl_cluster_t *c, sl_pgroup_t *pg);

static void take_over_due(sl_cluster_t *c, sl_pgroup_t *pg, const sl_vsr_info_t *info)
{
    if (info->primary_index == c->vcfg.replica || info->wiped || info->syncing ||
        (pg->take_over_tick != 0 &&
         c->ticks - pg->take_over_tick < c->vcfg.heartbeat_timeout_ticks))
        return;
    pg->take_over_tick = c->ticks;
    sl_vsr_replica_take_over(pg->replica);
}

void sl_cluster_pgroups_tick(sl_cluster_t *c, bool metadata_primary)
{
    uint64_t now = sl_clock_realtime_us();
    for (uint32_t i = 0; i < c->pgroups_count; i++) {
        sl_pgroup_t *pg = c->pgroups[i];
        sl_vsr_replica_tick(pg->replica, now);
        if (metadata_primary) {
            sl_vsr_info_t info;
            sl_vsr_replica_info(pg->replica, &info);
            take_over_due(c, pg, &info);
        }
        purge_due(c, pg);
        pgroup_complete(pg);
    }
}

/* --- purges ---------------------------------------------------------------------------------- */

/* On this group's primary: a purge committed in the metadata group and not
 * yet in this group's log is submitted, at most once per heartbeat timeout
 * (a new primary finishes what an old one did not). */
static void purge_due(sl_cluster_t *c, sl_pgroup_t *pg)
{
    const sl_meta_stream_t *ms = sl_meta_stream_by_id(c->srv->meta, pg->stream_id);
    sl_ident_t tid = sl_ident_number(pg->topic_id);
    const sl_meta_topic_t *mt = ms ? sl_meta_topic_find(ms, &tid) : NULL;
    if (!mt || mt->created_at != pg->topic_created_at || mt->purge_generation <= pg->log_gen ||
        (pg->purge_tick != 0 && c->ticks - pg->purge_tick < c->vcfg.heartbeat_timeout_ticks))
        return;
    sl_vsr_info_t info;
    sl_vsr_replica_info(pg->replica, &info);
    if (!info.primary || info.syncing)
        return;
    pg->purge_tick = c->ticks;
    uint8_t body[PURGE_BODY];
    sl_store_u64(body, mt->purge_generation);
    sl_store_u64(body + 8, 0);
    sl_vsr_request_t r = {.operation = SL_OP_PURGE_TOPIC, .body = sl_span(body, sizeof(body))};
    sl_vsr_replica_request(pg->replica, &r);
    pgroup_complete(pg);
}

void sl_cluster_pgroups_purge_due(sl_cluster_t *c)
{
    for (uint32_t i = 0; i < c->pgroups_count; i++)
        purge_due(c, c->pgroups[i]);
}

/* --- submissions ----------------------------------------------------------------------------------- */

/* The group of a partition, or NULL (with the session answered). */
static sl_pgroup_t *group_for(sl_cluster_t *c, sl_session_t *s, const sl_request_header_t *req,
                              uint32_t stream_id, uint32_t topic_id, uint32_t partition_id)
{
    uint64_t group;
    sl_pgroup_t *pg = group_of(stream_id, topic_id, partition_id, &group)
                          ? sl_cluster_pgroup(c, group)
                          : NULL;
    if (!pg)
        sl_reply_status(s, req, SL_ERR_TRANSIENT_NOT_ACCEPTED);
    return pg;
}

static void submit(sl_pgroup_t *pg, sl_session_t *s, const sl_request_header_t *req, sl_span_t body,
                   bool wait)
{
    sl_vsr_request_t r = {.client = req->client,
                          .request = req->request,
                          .request_checksum = req->request_checksum,
                          .operation = req->operation,
                          .user_id = s->user_id,
                          .timestamp = req->timestamp,
                          .body = body};
    if (wait) {
        sl_assert(s->vsr_wait == SL_CLUSTER_WAIT_NONE);
        s->vsr_req = *req;
        s->vsr_nonce = (sl_u128_t){0, 0};
        s->vsr_wait = SL_CLUSTER_WAIT_PARTITION;
    } else {
        /* Nobody waits: a client id of its own for each such request (the
         * group keeps no client table, so ids cost nothing), so it neither
         * takes the session's one request in flight, nor meets the previous
         * one still in flight (57, dropped), nor finds a session to answer. */
        r.request = ++s->vsr_async_request;
        r.client.hi ^= UINT64_C(1) << 63;
        r.client.lo ^= r.request;
    }
    /* The answer may come from inside this call (a refusal). */
    sl_vsr_replica_request(pg->replica, &r);
    pgroup_complete(pg);
}

void sl_cluster_send_messages(sl_cluster_t *c, sl_session_t *s, const sl_request_header_t *req,
                              uint32_t stream_id, uint32_t topic_id, uint32_t partition_id,
                              sl_span_t record)
{
    if (record.len > SL_CLUSTER_SEND_RECORD_MAX) {
        sl_log_warn("connection %u: a SendMessages batch of %zu bytes refused: a cluster takes "
                    "at most %u per batch (docs/cluster.md)",
                    s->id, record.len, SL_CLUSTER_SEND_RECORD_MAX);
        return sl_reply_status(s, req, SL_ERR_INVALID_MESSAGES_SIZE);
    }
    sl_pgroup_t *pg = group_for(c, s, req, stream_id, topic_id, partition_id);
    if (pg)
        submit(pg, s, req, record, true);
}

void sl_cluster_store_offset(sl_cluster_t *c, sl_session_t *s, const sl_request_header_t *req,
                             const sl_cluster_offset_op_t *op)
{
    bool answers = op->wait || op->answer_now; /* else a poll's auto-commit: no reply */
    uint64_t group;
    sl_pgroup_t *pg = group_of(op->stream_id, op->topic_id, op->partition_id, &group)
                          ? sl_cluster_pgroup(c, group)
                          : NULL;
    if (!pg) {
        if (answers)
            sl_reply_status(s, req, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    uint8_t body[OFFSET_STORE_BODY];
    size_t len = op->remove ? OFFSET_DELETE_BODY : OFFSET_STORE_BODY;
    memset(body, 0, sizeof(body));
    body[0] = (uint8_t)op->kind;
    sl_store_u32(body + 1, op->id);
    if (!op->remove) {
        sl_store_u64(body + 5, op->offset);
        body[13] = op->never_backwards ? STORE_NEVER_BACK : 0;
    }
    if (op->answer_now) {
        /* NoAck: answered at once, which is only true on the primary (a
         * backup's core would refuse it with 58 to nobody). */
        sl_vsr_info_t info;
        sl_vsr_replica_info(pg->replica, &info);
        if (!info.primary)
            return sl_reply_status(s, req, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        sl_buf_reset(&s->reply_body);
        sl_result_put_ok(&s->reply_body);
        sl_reply_body(s, req, req->operation);
    }
    submit(pg, s, req, sl_span(body, len), op->wait);
}

bool sl_cluster_partition_current(sl_cluster_t *c, uint32_t stream_id, uint32_t topic_id,
                                  uint32_t partition_id)
{
    uint64_t group;
    sl_pgroup_t *pg = group_of(stream_id, topic_id, partition_id, &group)
                          ? sl_cluster_pgroup(c, group)
                          : NULL;
    if (!pg)
        return false;
    sl_vsr_info_t info;
    sl_vsr_replica_info(pg->replica, &info);
    /* Out of its group (a lost disk, a checkpoint it must fetch, a transfer
     * under way) or a full checkpoint behind what it knows is committed:
     * its segments are not the partition's. */
    return !info.wiped && !info.syncing && info.status != SL_VSR_STATUS_RECOVERING &&
           !sl_ptransfer_receiving(pg->xfer) &&
           info.commit_max - info.commit_min <= SL_CLUSTER_PARTITION_CHECKPOINT;
}

uint64_t sl_cluster_pframes_unknown(const sl_cluster_t *c)
{
    return c->pframes_unknown;
}

/* --- segment deletion and retention --------------------------------------------------------- */

/* The deletion op's request body: the primary's decision, made over what it
 * has applied (its sealed segments are sealed in every replica's log). */
static void delete_body(const sl_pgroup_t *pg, uint64_t below, uint8_t body[DELETE_BODY])
{
    sl_store_u64(body, below);
    sl_store_u64(body + 8, pg->log_gen);
    sl_store_u64(body + 16, 0); /* the prepare hook writes the next offset */
}

static bool leads(const sl_pgroup_t *pg)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(pg->replica, &info);
    return info.primary && !info.syncing;
}

/* What this replica applied of the client's latest DeleteSegments when req is that request
 * again (the same number, and the same stamp where both carry one) or an older one; NULL for a
 * new request. */
static const sl_delete_seen_t *delete_seen(const sl_pgroup_t *pg, const sl_request_header_t *req)
{
    for (uint32_t i = 0; i < SL_CLUSTER_DELETES_SEEN; i++) {
        const sl_delete_seen_t *d = &pg->deletes[i];
        if (sl_u128_is_zero(d->client) || !sl_u128_eq(d->client, req->client))
            continue;
        bool stamps_differ = !sl_u128_is_zero(d->request_checksum) &&
                             !sl_u128_is_zero(req->request_checksum) &&
                             !sl_u128_eq(d->request_checksum, req->request_checksum);
        if (d->request > req->request || (d->request == req->request && !stamps_differ))
            return d;
        return NULL;
    }
    return NULL;
}

static void delete_answer(sl_session_t *s, const sl_request_header_t *req, uint32_t result)
{
    sl_buf_reset(&s->reply_body);
    put_result(&s->reply_body, result);
    sl_reply_body(s, req, SL_OP_TRUNCATE_PARTITION);
}

void sl_cluster_delete_segments(sl_cluster_t *c, sl_session_t *s, const sl_request_header_t *req,
                                sl_span_t body)
{
    sl_delete_segments_request_t q;
    if (sl_delete_segments_request_decode(body, &q) != 0) {
        /* As the reference: status 0, an empty body, operation 138 (commands.md 10). */
        sl_buf_reset(&s->reply_body);
        return sl_reply_body(s, req, SL_OP_DELETE_SEGMENTS);
    }
    const sl_meta_t *meta = c->srv->meta;
    const sl_meta_stream_t *ms = sl_meta_stream_find(meta, &q.stream_id);
    const sl_meta_topic_t *mt = ms ? sl_meta_topic_find(ms, &q.topic_id) : NULL;
    if (!ms || !mt)
        return delete_answer(s, req, ms ? SL_ERR_TOPIC_ID_NOT_FOUND : SL_ERR_STREAM_ID_NOT_FOUND);
    if (q.partition_id >= mt->partitions_count)
        return delete_answer(s, req, SL_ERR_PARTITION_NOT_FOUND);
    if (!sl_meta_allow(meta, s->user_id, SL_PERM_MANAGE_TOPIC, ms->id, mt->id))
        return delete_answer(s, req, SL_ERR_UNAUTHORIZED);
    uint64_t group;
    sl_pgroup_t *pg =
        group_of(ms->id, mt->id, q.partition_id, &group) ? sl_cluster_pgroup(c, group) : NULL;
    /* Only the partition's primary decides (a backup's segments may lag its log). */
    if (!pg || pg->topic_created_at != mt->created_at || !leads(pg))
        return delete_answer(s, req, SL_ERR_TRANSIENT_NOT_ACCEPTED);
    uint8_t op[DELETE_BODY];
    const sl_delete_seen_t *seen = delete_seen(pg, req);
    if (seen && seen->request > req->request)
        return delete_answer(s, req, SL_ERR_REQUEST_ALREADY_APPLIED);
    if (seen) {
        /* A replay: the offset the first resolved, whatever was sealed since. */
        sl_store_u64(op, seen->below);
        sl_store_u64(op + 8, seen->generation);
        sl_store_u64(op + 16, 0);
    } else {
        delete_body(pg, sl_partition_sealed_end(pg->partition, q.segments_count), op);
    }
    submit(pg, s, req, sl_span(op, sizeof(op)), true);
}

/* On each group this node leads: what the retention pass would delete goes
 * into the log as a deletion op (client 0), which every replica applies. */
void sl_cluster_pgroups_retention(sl_cluster_t *c, uint64_t now_us)
{
    for (uint32_t i = 0; i < c->pgroups_count; i++) {
        sl_pgroup_t *pg = c->pgroups[i];
        uint64_t below;
        if (!leads(pg) || sl_partition_retention_plan(pg->partition, now_us, &below) == 0)
            continue;
        sl_log_info("cluster: retention of partition %u/%u/%u: the segments below offset %" PRIu64
                    " go through the group's log",
                    pg->stream_id, pg->topic_id, pg->partition_id, below);
        uint8_t body[DELETE_BODY];
        delete_body(pg, below, body);
        sl_vsr_request_t r = {.operation = SL_OP_DELETE_SEGMENTS,
                              .body = sl_span(body, sizeof(body))};
        sl_vsr_replica_request(pg->replica, &r);
        pgroup_complete(pg);
    }
}
