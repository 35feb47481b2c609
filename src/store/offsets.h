/* Consumer offsets of a partition (storage.md 5): one file per consumer in offsets/consumers/
 * and per consumer group in offsets/groups/, named by the numeric id, each holding a 16-byte
 * record [offset u64][XXH3-64 of bytes 0..8]. Loaded at sl_partition_open, kept in memory
 * (gets read no file), written on every store. At open an offset past the partition's last
 * recovered message (the messages it covered were lost in a crash) is set to that message, or
 * dropped when the partition is empty, and the repair is synced to its file. */
#ifndef SL_STORE_OFFSETS_H
#define SL_STORE_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "store/partition.h"

/* Whose offset: the Consumer kinds of encodings.md 3. */
typedef enum sl_offsets_kind {
    SL_OFFSETS_CONSUMER = 1,
    SL_OFFSETS_GROUP = 2,
} sl_offsets_kind_t;

#define SL_OFFSETS_DIR         "offsets"
#define SL_OFFSETS_CONSUMERS   "consumers"
#define SL_OFFSETS_GROUPS      "groups"
#define SL_OFFSETS_RECORD_SIZE 16u
#define SL_OFFSETS_LEGACY_SIZE 8u

/* Stores offset for (kind, id): the file is rewritten (and fdatasynced when fsync), then the
 * value in memory changes. With never_backwards (poll auto-commit) the stored value becomes
 * max(stored, offset) and nothing is written when that is the stored value. The caller checks
 * the offset against the partition (4100 InvalidOffset) before. 0, -SL_ERR_INVALID_COMMAND (bad
 * kind), -SL_ERR_CANNOT_OPEN_CONSUMER_OFFSETS_FILE, -SL_ERR_CANNOT_WRITE_TO_FILE,
 * -SL_ERR_CANNOT_SYNC_FILE; after an error the stored value is unchanged in memory. */
SL_WUR int sl_offsets_store(sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id, uint64_t offset,
                            bool fsync, bool never_backwards);

/* The stored offset, or -SL_ERR_CONSUMER_OFFSET_NOT_FOUND. */
SL_WUR int sl_offsets_get(const sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id,
                          uint64_t *offset);

/* Deletes the stored offset and its file. -SL_ERR_CONSUMER_OFFSET_NOT_FOUND when none is
 * stored, -SL_ERR_CANNOT_DELETE_CONSUMER_OFFSET_FILE when the file stays. */
SL_WUR int sl_offsets_delete(sl_partition_t *p, sl_offsets_kind_t kind, uint32_t id);

/* Stored offsets of both kinds. */
uint32_t sl_offsets_count(const sl_partition_t *p);
/* The i-th stored offset (i < sl_offsets_count), in (kind, id) order: a cluster checkpoint
 * lists them. false when i is out of range. */
bool sl_offsets_at(const sl_partition_t *p, uint32_t i, sl_offsets_kind_t *kind, uint32_t *id,
                   uint64_t *offset);

/* --- the record --------------------------------------------------------------------------- */

typedef enum sl_offsets_record {
    SL_OFFSETS_RECORD_OK,      /* 16 bytes, checksum verified */
    SL_OFFSETS_RECORD_LEGACY,  /* exactly 8 bytes: an unchecksummed value, accepted */
    SL_OFFSETS_RECORD_TORN,    /* fewer than 8 bytes: ignored */
    SL_OFFSETS_RECORD_CORRUPT, /* checksum mismatch or another length: discarded */
} sl_offsets_record_t;

void sl_offsets_record_encode(uint8_t out[SL_OFFSETS_RECORD_SIZE], uint64_t offset);
/* Classifies a file's bytes; *offset is set for OK and LEGACY. */
sl_offsets_record_t sl_offsets_record_decode(sl_span_t bytes, uint64_t *offset);

#endif
