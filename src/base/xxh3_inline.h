/* XXH3-64 (seed 0) of up to 240 bytes compiled into the caller, for the loop
 * that verifies every frame of a batch (wire/batch.c walk_frames): the call
 * into xxh3.c and XXH3's length dispatch there cost about 17 of the 160
 * instructions of a 100-byte message's frame checksum (docs/benchmarks.md,
 * issue 14, shape 1). Longer inputs go to sl_xxh3_64 (its AVX2 build when the
 * CPU has it). Same results as sl_xxh3_64 for every length. */
#ifndef SL_BASE_XXH3_INLINE_H
#define SL_BASE_XXH3_INLINE_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/xxh3.h"

static inline uint64_t sl_xxh3_64_inline(const void *p, size_t n)
{
    if (n <= XXH3_MIDSIZE_MAX)
        return XXH3_64bits(p, n);
    return sl_xxh3_64(p, n);
}

#endif
