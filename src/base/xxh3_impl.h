/* Shared body of the two XXH3 builds (xxh3.c: default vectors, xxh3_avx2.c:
 * AVX2). Each includes this with SL_XXH3_SUFFIX set; everything of xxhash is
 * static inline in the including translation unit. */
#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base/xxh3.h"

#define SL_XXH3_CAT2(a, b) a##b
#define SL_XXH3_CAT(a, b) SL_XXH3_CAT2(a, b)
#define SL_XXH3_FN(name) SL_XXH3_CAT(name, SL_XXH3_SUFFIX)

/* Run before each function below returns. The AVX2 build defines it as
 * vzeroupper: GCC leaves the upper halves of the ymm registers dirty where
 * the hash ends in a call (XXH3_mergeAccs), and with dirty upper halves the
 * SSE code that runs next, and the entry of intel-ipsec-mb's AVX-512
 * cipher, stall on every call (docs/benchmarks.md, "The vector state XXH3
 * left behind"). */
#ifndef SL_XXH3_LEAVE
#define SL_XXH3_LEAVE() ((void)0)
#endif

_Static_assert(sizeof(XXH3_state_t) <= sizeof(sl_xxh3_state_t), "xxh3 state fits");
_Static_assert(_Alignof(XXH3_state_t) <= 64, "xxh3 state alignment");

uint64_t SL_XXH3_FN(sl_xxh3_64_)(const void *p, size_t n);
void SL_XXH3_FN(sl_xxh3_reset_)(sl_xxh3_state_t *s);
void SL_XXH3_FN(sl_xxh3_update_)(sl_xxh3_state_t *s, const void *p, size_t n);
uint64_t SL_XXH3_FN(sl_xxh3_digest_)(const sl_xxh3_state_t *s);

uint64_t SL_XXH3_FN(sl_xxh3_64_)(const void *p, size_t n)
{
    uint64_t h = XXH3_64bits(p, n);
    SL_XXH3_LEAVE();
    return h;
}

void SL_XXH3_FN(sl_xxh3_reset_)(sl_xxh3_state_t *s)
{
    XXH3_64bits_reset((XXH3_state_t *)(void *)s->opaque);
    SL_XXH3_LEAVE();
}

void SL_XXH3_FN(sl_xxh3_update_)(sl_xxh3_state_t *s, const void *p, size_t n)
{
    XXH3_64bits_update((XXH3_state_t *)(void *)s->opaque, p, n);
    SL_XXH3_LEAVE();
}

uint64_t SL_XXH3_FN(sl_xxh3_digest_)(const sl_xxh3_state_t *s)
{
    uint64_t h = XXH3_64bits_digest((const XXH3_state_t *)(const void *)s->opaque);
    SL_XXH3_LEAVE();
    return h;
}
