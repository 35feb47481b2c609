/* The plaintext tail of at-rest encryption (docs/security.md, "The plaintext
 * tail"): the request frames of the most recent SendMessages batches, kept
 * after their records were sealed, so that a poll of the tail (the common
 * consumer) copies the plaintext frames out instead of opening each blob.
 * Disk holds ciphertext only; this is memory, bounded by
 * system.encryption.tail_cache_max and emptied by every restart.
 *
 * An entry is found by the sealed blob's nonce (each nonce is sealed once
 * per context, and one batch's frames get consecutive ones) and is served
 * only when the sealed frame in the poll reply still carries, byte for byte,
 * the frame header, frame checksum, nonce and tag it had when it was sealed:
 * a frame rewritten on disk since (another nonce, another tag, other header
 * fields) misses and goes through the open, which fails closed. What a hit
 * serves is exactly what the producer sent, which is what a successful open
 * of those sealed bytes gives.
 *
 * Ownership: the cache owns the frame buffers it was given until it evicts
 * them (oldest batch first, when the bytes held would pass the bound) or is
 * destroyed; both give them back to the frame pool. Spans it returns borrow
 * those buffers and are valid until the next sl_tail_cache_add or
 * sl_tail_cache_destroy.
 *
 * Threading: one owner thread (the loop's), like the frame pool. */
#ifndef SL_SERVER_TAIL_CACHE_H
#define SL_SERVER_TAIL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/aead.h"
#include "base/assert.h"
#include "base/bytes.h"
#include "server/frame_pool.h"

typedef struct sl_tail_cache sl_tail_cache_t;

/* What sealing a frame left for the cache: where the plaintext frame sits in
 * its record, and the sealed frame's checksum and tag (its nonce and header
 * are read from the sealed record). */
typedef struct sl_sealed_note {
    uint32_t plain_at;        /* offset of the plaintext frame in the plaintext record */
    uint32_t sealed_at;       /* offset of the sealed frame in the sealed record */
    uint64_t sealed_checksum; /* the sealed frame's checksum field */
} sl_sealed_note_t;

typedef struct sl_tail_cache_stats {
    uint64_t hits;    /* frames served from the cache */
    uint64_t misses;  /* frames of polls that were opened (not cached, or no longer equal) */
    uint64_t added;   /* batches kept */
    uint64_t skipped; /* batches not kept: larger than the bound, or nonces not consecutive */
    uint64_t evicted; /* batches given back to make room */
    uint64_t held;    /* bytes held now (frame buffers, their notes, the ring) */
    uint64_t peak;    /* the most bytes held at any time */
    uint64_t max;     /* the bound */
    uint32_t batches; /* kept now */
} sl_tail_cache_stats_t;

/* A cache of at most max bytes whose frames go back to pool. max 0: no
 * cache, *out NULL (destroy, find and stats accept NULL). 0 or
 * -SL_ERR_ERROR (out of memory). */
SL_WUR int sl_tail_cache_create(uint64_t max, sl_frame_pool_t *pool, sl_tail_cache_t **out);
/* Gives every frame back to the pool and frees the cache. */
void sl_tail_cache_destroy(sl_tail_cache_t *c);

/* Keeps a sealed batch's plaintext: owner is the request frame (from the
 * pool) holding the plaintext record plain, sealed the record
 * sl_encryption_seal_record made from it with notes (count of them). The
 * cache takes owner in every case: kept, or given back at once when the batch
 * does not qualify (see stats.skipped) or memory runs out. Evicts the oldest
 * batches until the new one fits. Call before the sealed record is appended
 * (stamping changes only its batch header, which the cache does not use). */
void sl_tail_cache_add(sl_tail_cache_t *c, void *owner, const uint8_t *plain, const uint8_t *sealed,
                       const sl_sealed_note_t *notes, uint32_t count);

/* The plaintext frame (header and body, as the producer sent it) for the
 * sealed frame at sealed_frame (sealed_len bytes: header and blob, already
 * checked to lie inside the reply), or an empty span when the cache does not
 * hold it unchanged. Counts a hit or a miss. */
sl_span_t sl_tail_cache_find(sl_tail_cache_t *c, const uint8_t *sealed_frame, size_t sealed_len);

void sl_tail_cache_stats(const sl_tail_cache_t *c, sl_tail_cache_stats_t *out);

#endif
