/* The purge generation of a partition (storage.md 5): purge.gen in the partition directory,
 * 16 bytes [generation u64][created_revision u64], naming the last purge applied to this
 * incarnation of the partition. Written atomically and data-synced; read once at open. */
#ifndef SL_STORE_PURGE_GEN_H
#define SL_STORE_PURGE_GEN_H

#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"

#define SL_PURGE_GEN_FILE "purge.gen"
#define SL_PURGE_GEN_TMP  "purge.gen.tmp"
#define SL_PURGE_GEN_SIZE 16u

void sl_purge_gen_encode(uint8_t out[SL_PURGE_GEN_SIZE], uint64_t generation,
                         uint64_t created_revision);
/* The generation the bytes record for created_revision: 0 when they are not exactly 16 bytes
 * (a torn or missing file) or name another incarnation (an older topic with the same id). */
uint64_t sl_purge_gen_decode(sl_span_t bytes, uint64_t created_revision);

/* Reads <dir>/purge.gen. A missing file reads as 0. 0 or -SL_ERR_CANNOT_READ_FILE (an I/O
 * error: guessing 0 could purge messages acknowledged after the purge). */
SL_WUR int sl_purge_gen_read(const char *dir, uint64_t created_revision, uint64_t *generation);

/* Replaces <dir>/purge.gen: purge.gen.tmp written and fsynced, renamed over it, the directory
 * fsynced, so a crash leaves the old record or the new one. 0 or -SL_ERR_CANNOT_WRITE_TO_FILE /
 * -SL_ERR_CANNOT_SYNC_FILE (the directory). */
SL_WUR int sl_purge_gen_write(const char *dir, uint64_t generation, uint64_t created_revision);

#endif
