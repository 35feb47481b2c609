/* The machine snapshot of a partition group's checkpoint (cluster_partition.c writes it,
 * cluster_transfer.c carries it to a replica that catches up): its layout, its decoder, and
 * the DeleteSegments record it holds (docs/cluster.md, "Segments and retention").
 *
 *   [next u64][count u32] count x [kind u8][id u32][offset u64]       version 0
 *   [log_gen u64]                                                      since version 1
 *   [deletes: version u8 (1)][entries u8 (<= SL_CLUSTER_DELETES_SEEN)]
 *   entries x [client u128][request_checksum u128][request u64]
 *             [below u64][generation u64][op u64]                      since version 2
 *
 * Versions 0 and 1 are told apart by the length (a snapshot of an older server, read at its
 * open or received from an older peer: it has no DeleteSegments record); version 2 carries
 * its record's own version. The record is the latest DeleteSegments of each of the last
 * SL_CLUSTER_DELETES_SEEN clients as the replica had applied them at the checkpoint, so a
 * replay of one after a restart deletes nothing more even when the log no longer holds it. */
#ifndef SL_SERVER_CLUSTER_SNAPSHOT_H
#define SL_SERVER_CLUSTER_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

/* Clients per partition whose latest DeleteSegments a replica remembers, so a
 * replay of it deletes nothing more (docs/cluster.md, "Segments and
 * retention"): an operator's tool or two at a time, with room to spare. */
#define SL_CLUSTER_DELETES_SEEN 8u
/* The record's version, and the bytes of one entry and of the largest record. */
#define SL_PSNAPSHOT_DELETES_VERSION 1u
#define SL_PSNAPSHOT_DELETE_SIZE     64u
#define SL_PSNAPSHOT_DELETES_MAX     (2u + SL_CLUSTER_DELETES_SEEN * SL_PSNAPSHOT_DELETE_SIZE)
/* One consumer offset of the snapshot: kind, id, offset. */
#define SL_PSNAPSHOT_OFFSET_SIZE 13u

/* A client's DeleteSegments as every replica applied it. */
typedef struct sl_delete_seen {
    sl_u128_t client; /* 0: a free entry */
    sl_u128_t request_checksum;
    uint64_t request;
    uint64_t below, generation;
    uint64_t op; /* where it was applied: the oldest entry is replaced */
} sl_delete_seen_t;

/* A decoded snapshot. offsets borrows the snapshot's bytes and is valid while they are. */
typedef struct sl_psnapshot {
    uint64_t next;
    uint32_t offsets_count;
    const uint8_t *offsets; /* offsets_count x SL_PSNAPSHOT_OFFSET_SIZE */
    bool has_log_gen;       /* version 1 and later */
    uint64_t log_gen;
    bool has_deletes; /* version 2 and later; without, deletes are all free */
    sl_delete_seen_t deletes[SL_CLUSTER_DELETES_SEEN];
} sl_psnapshot_t;

/* Appends the DeleteSegments record of the used entries of seen (client not 0). */
void sl_psnapshot_put_deletes(sl_buf_t *out, const sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN]);

/* Decodes a record that is exactly bytes into seen (the entries it holds first, the rest
 * free). 0, or -SL_ERR_STATE_FILE_CORRUPTED with the reason in err: a length that does not
 * match, an unknown version, more entries than SL_CLUSTER_DELETES_SEEN, an entry without a
 * client or an op, a client twice. */
SL_WUR int sl_psnapshot_deletes_decode(sl_span_t bytes,
                                       sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN], char *err,
                                       size_t err_len);

/* Decodes a whole snapshot (every length checked against the bytes). 0, or
 * -SL_ERR_STATE_FILE_CORRUPTED with the reason in err. */
SL_WUR int sl_psnapshot_decode(sl_span_t snap, sl_psnapshot_t *out, char *err, size_t err_len);

#endif
