/* The durable storage of one replica of one consensus group: src/vsr/replica.h's
 * sl_vsr_storage_t over files in a directory the caller names (sluiced uses
 * <data_dir>/metadata/replica/ for the metadata group; partition groups will use their own).
 *
 * The directory holds (docs/architecture.md, "The consensus core's files"):
 *   journal.ring      a 4 KiB header, then slot_count slots of slot_size bytes; op X of the
 *                     group lives in slot X % slot_count. A slot write is one pwrite inside its
 *                     own slot, so a torn write can only tear that slot. Sparse unless the
 *                     options ask for its blocks up front.
 *   state.a, state.b  the replica's state record in two ping-pong copies, each with a sequence
 *                     number and a checksum: the newest copy that verifies wins, and a write
 *                     torn by a crash leaves the other.
 *   snapshot.<op>, clients.<op>
 *                     the artifacts of the checkpoint at op (written to .tmp, fsynced, renamed,
 *                     directory fsynced). The sets of the last three write_artifacts calls are
 *                     kept, older ones removed: the set a durable state record names is always
 *                     among them, even when the record naming the newest set failed to write.
 * The journal header and both state copies carry the geometry (cluster, group, slot size,
 * slot count): a directory formatted for another cluster, group or geometry is refused at
 * open with a message naming the file and the difference.
 *
 * Journal writes. write_prepare copies the bytes into their slot with one pwrite (the page
 * cache then holds them, which is what read_prepare returns) and queues the completion; it
 * never calls back into the replica. The host drains the queue with sl_vsr_storage_poll after
 * each call into the replica: one fdatasync covers every write queued since the last poll (a
 * group commit; none under options.journal_nosync), then each completion is delivered (ok = false when its pwrite or the
 * fdatasync failed; the replica then treats the slot as faulty and repairs it). The state
 * record and the artifacts are written synchronously, as the interface requires.
 *
 * Reads. Every span returned is borrowed and valid until the next call into this storage
 * (each kind of read keeps its own buffer). Nothing read from disk is trusted: lengths are
 * checked against the slot size and the file sizes; a slot whose length field is not one a
 * write leaves comes back as the slot's whole bytes (the replica's seal rejects it), an
 * all-zero slot as an empty span.
 *
 * Single-threaded: the thread that drives the replica calls everything here. */
#ifndef SL_SERVER_VSR_STORAGE_H
#define SL_SERVER_VSR_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "vsr/replica.h"

/* Bytes of the journal file before slot 0 (one page, so slots stay page-aligned). */
#define SL_VSR_STORAGE_JOURNAL_HEADER 4096u
/* Bytes at the start of each slot before the replica's bytes: their length, twice. */
#define SL_VSR_STORAGE_SLOT_HEADER 8u
/* The largest state record accepted: the replica's record is about 33 KiB (128 suffix
 * headers of 256 bytes plus its fields); the margin leaves room for new fields. */
#define SL_VSR_STORAGE_STATE_MAX (1u << 20)

typedef struct sl_vsr_storage_options {
    sl_u128_t cluster;     /* cfg.cluster */
    uint64_t group;        /* cfg.group */
    uint32_t slot_count;   /* cfg.journal_slots */
    uint32_t slot_size;    /* a multiple of 4096 holding SL_VSR_STORAGE_SLOT_HEADER plus the
                              largest prepare the group journals (sl_vsr_storage_slot_size) */
    uint64_t artifact_max; /* the largest artifact read back (cfg.state_max) */
    /* Allocate the whole ring's blocks when the journal is created, so no slot write can
     * meet a full disk (where the filesystem cannot, the ring stays sparse). Off: the file
     * is sparse and a slot's blocks are allocated on its first write. */
    bool preallocate;
    /* Journal writes complete once written (the page cache: they survive a kill -9, not a
     * power loss) instead of after an fdatasync: partition groups of topics without
     * enforce_fsync (docs/cluster.md). Off (the metadata group): every poll fdatasyncs. The
     * state record and the artifacts are synced either way. */
    bool journal_nosync;
} sl_vsr_storage_options_t;

/* The slot size for a group whose prepares are at most prepare_max bytes (a prepare frame plus
 * the replica's 8-byte journal seal): rounded up to 4 KiB with the slot header. 0 when it does
 * not fit in 32 bits. */
uint32_t sl_vsr_storage_slot_size(uint64_t prepare_max);

typedef struct sl_vsr_storage_dir sl_vsr_storage_dir_t;

/* What open found and what happened since, for logs and tests. */
typedef struct sl_vsr_storage_info {
    bool fresh;              /* open created the journal: nothing was there */
    uint64_t state_sequence; /* of the newest state copy that verifies (0: none) */
    uint8_t state_copy;      /* 0 = state.a, 1 = state.b: where the newest is */
    uint64_t prepare_writes; /* journal writes submitted */
    uint64_t syncs;          /* fdatasyncs of the journal (one per poll with writes) */
    uint64_t write_failures; /* journal writes completed with ok = false */
    uint64_t state_failures; /* state records or artifact sets that could not be written */
    uint64_t slot_reads;     /* read_prepare calls that read the file */
} sl_vsr_storage_info_t;

/* Opens the storage in dir, creating dir (its parent must exist) and the journal and state
 * files when absent (each creation is made durable with a directory fsync). 0, or negative
 * with a message naming the file in err: -SL_ERR_INVALID_CONFIGURATION for bad options,
 * -SL_ERR_STATE_FILE_CORRUPTED for a journal header that does not verify or a file formatted
 * for another cluster, group or geometry, -SL_ERR_CANNOT_READ_FILE, _CANNOT_WRITE_TO_FILE or
 * _CANNOT_SYNC_FILE on I/O errors. */
SL_WUR int sl_vsr_storage_open(const char *dir, const sl_vsr_storage_options_t *options,
                               sl_vsr_storage_dir_t **out, char *err, size_t err_len);
/* Closes the files. Completions not yet polled are dropped, as a crash would: their writes
 * were handed to the kernel and may or may not be durable. A replica reopened over a storage
 * that stays open must wait until sl_vsr_storage_pending is 0 (a slot takes one write in
 * flight at a time, and the new replica knows nothing of the old one's). */
void sl_vsr_storage_close(sl_vsr_storage_dir_t *st);

/* The interface to hand to sl_vsr_replica_format and sl_vsr_replica_open. */
sl_vsr_storage_t sl_vsr_storage_interface(sl_vsr_storage_dir_t *st);

/* Makes every journal write queued since the last poll durable (one fdatasync) and calls
 * done(ctx, slot, ok) for each, in the order they were submitted; the host's done calls
 * sl_vsr_replica_write_done. Writes the replica submits from inside done are queued for the
 * next poll. Returns the number of completions delivered. */
uint32_t sl_vsr_storage_poll(sl_vsr_storage_dir_t *st, void *ctx,
                             void (*done)(void *ctx, uint32_t slot, bool ok));
/* Changes options.journal_nosync from the next poll on (a topic's enforce_fsync changed). */
void sl_vsr_storage_set_nosync(sl_vsr_storage_dir_t *st, bool nosync);
/* Completions queued and not yet delivered. */
uint32_t sl_vsr_storage_pending(const sl_vsr_storage_dir_t *st);

void sl_vsr_storage_info(const sl_vsr_storage_dir_t *st, sl_vsr_storage_info_t *out);

#endif
