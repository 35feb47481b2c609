/* XXH3 with a run-time choice between the default (SSE2) and AVX2 builds. */
#define SL_XXH3_SUFFIX generic
#include "base/xxh3_impl.h"

#include <stdatomic.h>

#ifdef SL_HAVE_XXH3_AVX2
uint64_t sl_xxh3_64_avx2(const void *p, size_t n);
void sl_xxh3_reset_avx2(sl_xxh3_state_t *s);
void sl_xxh3_update_avx2(sl_xxh3_state_t *s, const void *p, size_t n);
uint64_t sl_xxh3_digest_avx2(const sl_xxh3_state_t *s);
#endif

typedef struct {
    const char *name;
    uint64_t (*oneshot)(const void *p, size_t n);
    void (*update)(sl_xxh3_state_t *s, const void *p, size_t n);
    uint64_t (*digest)(const sl_xxh3_state_t *s);
} xxh3_impl_t;

static const xxh3_impl_t impl_generic = {"sse2", sl_xxh3_64_generic, sl_xxh3_update_generic,
                                         sl_xxh3_digest_generic};
#ifdef SL_HAVE_XXH3_AVX2
static const xxh3_impl_t impl_avx2 = {"avx2", sl_xxh3_64_avx2, sl_xxh3_update_avx2,
                                      sl_xxh3_digest_avx2};
#endif

static _Atomic(const xxh3_impl_t *) chosen;

static const xxh3_impl_t *impl(void)
{
    const xxh3_impl_t *i = atomic_load_explicit(&chosen, memory_order_acquire);
    if (__builtin_expect(i != NULL, 1))
        return i;
    i = &impl_generic;
#ifdef SL_HAVE_XXH3_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        i = &impl_avx2;
#endif
    atomic_store_explicit(&chosen, i, memory_order_release);
    return i;
}

uint64_t sl_xxh3_64(const void *p, size_t n)
{
    /* Up to 240 bytes XXH3 runs its scalar short paths, the same code in
     * both builds: no dispatch (a 100-byte message's frame checksum spent
     * about a tenth of its instructions getting there). */
    if (n <= XXH3_MIDSIZE_MAX)
        return XXH3_64bits(p, n);
    return impl()->oneshot(p, n);
}

uint32_t sl_xxh32(const void *p, size_t n, uint32_t seed)
{
    return XXH32(p, n, seed);
}

const char *sl_xxh3_impl(void)
{
    return impl()->name;
}

void sl_xxh3_reset(sl_xxh3_state_t *s)
{
    /* Reset is the same code in both builds (it only sets up the state). */
    sl_xxh3_reset_generic(s);
}

void sl_xxh3_update(sl_xxh3_state_t *s, const void *p, size_t n)
{
    impl()->update(s, p, n);
}

uint64_t sl_xxh3_digest(const sl_xxh3_state_t *s)
{
    return impl()->digest(s);
}
