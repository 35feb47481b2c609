/* XXH3-64 (seed 0) and XXH32 from libxxhash's header, compiled inline.
 *
 * On x86-64 an AVX2 build of XXH3 is chosen at run time when the CPU has
 * AVX2 (the choice is made once, on first use); otherwise the SSE2 build
 * runs. Both give identical results. */
#ifndef SL_BASE_XXH3_H
#define SL_BASE_XXH3_H

#include <stddef.h>
#include <stdint.h>

/* XXH3_64bits(p, n): the checksum of every protocol checksum field. */
uint64_t sl_xxh3_64(const void *p, size_t n);
/* XXH32(p, n, seed): MessagesKey partitioning and named consumers. */
uint32_t sl_xxh32(const void *p, size_t n, uint32_t seed);
/* "avx2" or "sse2": which XXH3 build runs here. */
const char *sl_xxh3_impl(void);

/* Streaming XXH3-64 for inputs assembled piecewise (the batch checksum).
 * Feeding the pieces gives the same value as one call over their
 * concatenation. The state is large (576 bytes) and must be 64-byte aligned;
 * keep it on the stack or embedded, never copy it while in use. */
typedef struct sl_xxh3_state {
    _Alignas(64) unsigned char opaque[640];
} sl_xxh3_state_t;

void sl_xxh3_reset(sl_xxh3_state_t *s);
void sl_xxh3_update(sl_xxh3_state_t *s, const void *p, size_t n);
uint64_t sl_xxh3_digest(const sl_xxh3_state_t *s);

#endif
