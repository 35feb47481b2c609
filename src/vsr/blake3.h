/* BLAKE3 (hash, keyed hash, key derivation, extendable output), written from
 * the BLAKE3 specification (draft-aumasson-blake3) and checked against the
 * official test vectors (tests/unit/test_vsr_blake3.c). Debian ships no BLAKE3
 * C library; the replica plane needs it for the cluster id and the handshake
 * MAC (shared/protocol/cluster.md 4). Portable C, one block at a time: the
 * inputs here are a few hundred bytes, so no SIMD.
 *
 * A hasher is a plain value (about 1.9 KiB: the chaining-value stack for
 * inputs up to 2^64 bytes); init, update any number of times, finalize any
 * number of times (finalize does not change the state). */
#ifndef SL_VSR_BLAKE3_H
#define SL_VSR_BLAKE3_H

#include <stddef.h>
#include <stdint.h>

#define SL_BLAKE3_KEY_LEN   32u
#define SL_BLAKE3_OUT_LEN   32u
#define SL_BLAKE3_BLOCK_LEN 64u
#define SL_BLAKE3_CHUNK_LEN 1024u
/* Chaining values a hasher can stack: one per level of a tree of 2^54
 * chunks, which covers every input a u64 length can name. */
#define SL_BLAKE3_STACK_MAX 54u

typedef struct sl_blake3 {
    uint32_t key[8]; /* IV, the key, or the derived context key */
    uint32_t flags;  /* the mode's flag (keyed hash, derive-key material) */
    /* the chunk being hashed */
    uint32_t chunk_cv[8];
    uint64_t chunk_counter;
    uint8_t block[SL_BLAKE3_BLOCK_LEN];
    uint8_t block_len;
    uint8_t blocks_compressed;
    /* chaining values of completed subtrees, oldest first */
    uint8_t stack_len;
    uint32_t stack[SL_BLAKE3_STACK_MAX][8];
} sl_blake3_t;

/* The default hash mode. */
void sl_blake3_init(sl_blake3_t *h);
/* Keyed hash (a MAC or PRF) under a 32-byte key. */
void sl_blake3_init_keyed(sl_blake3_t *h, const uint8_t key[SL_BLAKE3_KEY_LEN]);
/* Key derivation: context is a hard-coded, application-wide string (of any
 * length); the key material is fed with update. */
void sl_blake3_init_derive_key(sl_blake3_t *h, const void *context, size_t context_len);
void sl_blake3_update(sl_blake3_t *h, const void *input, size_t len);
/* Writes out_len bytes of output (any length: the first 32 are the hash). */
void sl_blake3_finalize(const sl_blake3_t *h, uint8_t *out, size_t out_len);

/* One-shot helpers: 32 bytes of output. */
void sl_blake3_hash(const void *input, size_t len, uint8_t out[SL_BLAKE3_OUT_LEN]);
void sl_blake3_keyed_hash(const uint8_t key[SL_BLAKE3_KEY_LEN], const void *input, size_t len,
                          uint8_t out[SL_BLAKE3_OUT_LEN]);
void sl_blake3_derive_key(const char *context, const void *material, size_t len,
                          uint8_t out[SL_BLAKE3_OUT_LEN]);

#endif
