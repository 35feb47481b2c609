/* The checkpoint files of the metadata plane: the snapshot (snapshot.bin, state bytes plus a
 * checksummed trailer, storage.md 7.2) and the ping-pong superblock pair (superblock.a/.b,
 * storage.md 6) whose VSR payload names the snapshot by op and checksum.
 * These functions only read and write files; the order of a checkpoint is the store's. */
#ifndef SL_META_CHECKPOINT_H
#define SL_META_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

#define SL_META_SNAPSHOT_FILE     "snapshot.bin"
#define SL_META_SNAPSHOT_TMP_FILE "snapshot.bin.tmp"
#define SL_META_SUPERBLOCK_A_FILE "superblock.a"
#define SL_META_SUPERBLOCK_B_FILE "superblock.b"

/* --- snapshot.bin ---------------------------------------------------------------------- */

/* Trailer after the state bytes: magic u32, then XXH3-64 of the state bytes as a u128. */
#define SL_META_SNAPSHOT_MAGIC        0x49534E50u
#define SL_META_SNAPSHOT_TRAILER_SIZE 20u
/* Largest snapshot file read back: the metadata of a full server stays far below. */
#define SL_META_SNAPSHOT_MAX (1024u * 1024u * 1024u)

/* Writes state + trailer to <dir>/snapshot.bin.tmp and fsyncs it; *checksum = the trailer's.
 * 0 or -SL_ERR_CANNOT_WRITE_TO_FILE (the partial file removed). */
SL_WUR int sl_meta_snapshot_write_tmp(const char *dir, sl_span_t state, sl_u128_t *checksum);
/* Renames snapshot.bin.tmp over snapshot.bin, then fsyncs dir. *renamed says whether the
 * rename happened (a failed directory fsync leaves it done but maybe not durable).
 * 0, -SL_ERR_CANNOT_OVERWRITE_FILE or -SL_ERR_CANNOT_SYNC_FILE. */
SL_WUR int sl_meta_snapshot_install(const char *dir, bool *renamed);
/* Reads a snapshot file, checks its trailer and hands out the state bytes (in out, reset first)
 * and their checksum. -SL_ERR_STATE_FILE_NOT_FOUND when absent, -SL_ERR_STATE_FILE_CORRUPTED
 * (message in err) when shorter than a trailer, without the magic or with a wrong checksum,
 * -SL_ERR_CANNOT_READ_FILE on I/O errors. */
SL_WUR int sl_meta_snapshot_read(const char *path, sl_buf_t *out, sl_u128_t *checksum, char *err,
                                 size_t err_len);

/* --- superblock.a / superblock.b ---------------------------------------------------------- */

#define SL_META_SUPERBLOCK_MAGIC   0x53424C4Bu
#define SL_META_SUPERBLOCK_VERSION 1u
/* Bytes before the payload and the checksum after it (storage.md 6). */
#define SL_META_SUPERBLOCK_HEAD_SIZE   28u
#define SL_META_SUPERBLOCK_OVERHEAD    36u
#define SL_META_SUPERBLOCK_PAYLOAD_MAX 4096u
/* The VSR payload: current and older (no offset_frontier) form. */
#define SL_META_VSR_STATE_SIZE     66u
#define SL_META_VSR_STATE_SIZE_OLD 58u
#define SL_META_SUPERBLOCK_SIZE    (SL_META_SUPERBLOCK_OVERHEAD + SL_META_VSR_STATE_SIZE)

typedef struct sl_meta_vsr_state {
    sl_u128_t cluster;
    uint8_t replica_id;
    uint8_t replica_count;
    uint32_t view;
    uint32_t log_view; /* <= view */
    uint64_t commit_max;
    uint64_t checkpoint_op;        /* op of the paired snapshot */
    sl_u128_t checkpoint_checksum; /* checksum of the paired snapshot's state bytes */
    uint64_t offset_frontier;      /* partitions only; metadata: 0 */
} sl_meta_vsr_state_t;

void sl_meta_vsr_state_encode(uint8_t out[SL_META_VSR_STATE_SIZE], const sl_meta_vsr_state_t *v);
/* Decodes a 66- or 58-byte payload (offset_frontier read as 0); refuses other lengths and
 * log_view > view. 0 or -SL_ERR_STATE_FILE_CORRUPTED. */
SL_WUR int sl_meta_vsr_state_decode(sl_span_t payload, sl_meta_vsr_state_t *out);

/* One superblock file: writes SL_META_SUPERBLOCK_SIZE bytes. */
void sl_meta_superblock_encode(uint8_t out[SL_META_SUPERBLOCK_SIZE], uint64_t sequence,
                               const sl_meta_vsr_state_t *v);
/* Verifies a whole file (magic, version, payload length <= 4096, size exactly 36 + N, checksum)
 * and decodes its VSR payload. 0 or -SL_ERR_STATE_FILE_CORRUPTED with the reason in *why. */
SL_WUR int sl_meta_superblock_decode(sl_span_t file, uint64_t *sequence, sl_meta_vsr_state_t *out,
                                     const char **why);

/* The pair as read at boot and kept in memory for the next write. */
typedef struct sl_meta_superblock {
    bool found;        /* false: neither slot holds a record (a fresh directory) */
    int slot;          /* 0 = superblock.a, 1 = superblock.b: the newest record; -1 none */
    uint64_t sequence; /* of the newest record; 0 when none */
    sl_meta_vsr_state_t vsr;
} sl_meta_superblock_t;

/* Reads both slots of dir by the rules of storage.md 6: both valid -> higher sequence; one valid
 * and the other absent or empty -> that one; both absent (or empty) -> fresh (found false);
 * any slot whose bytes fail verification, or two records with one sequence -> refuse with
 * -SL_ERR_STATE_FILE_CORRUPTED and a message naming the file in err. I/O errors give
 * -SL_ERR_CANNOT_READ_FILE. */
SL_WUR int sl_meta_superblock_load(const char *dir, sl_meta_superblock_t *out, char *err,
                                   size_t err_len);

/* Writes vsr as the next record (sequence + 1) into the slot not holding the newest one:
 * <slot>.tmp, fsync, rename over the slot, fsync dir. Once the rename is done *sb describes the
 * new record and *renamed is true, even when the directory fsync then fails.
 * 0, -SL_ERR_CANNOT_WRITE_TO_FILE, -SL_ERR_CANNOT_OVERWRITE_FILE or -SL_ERR_CANNOT_SYNC_FILE. */
SL_WUR int sl_meta_superblock_store(const char *dir, sl_meta_superblock_t *sb,
                                    const sl_meta_vsr_state_t *vsr, bool *renamed);

#endif
