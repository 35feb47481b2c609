/* Random bytes for message ids: a ChaCha20 keystream (RFC 8439's block
 * function, 64-bit counter form) keyed from getrandom. The kernel's own
 * generic ChaCha cost about 0.1 ms per 1000 ids here; this one runs in user
 * space without system calls.
 *
 * Each refill computes a few blocks, replaces the key with the first 32
 * bytes of them ("fast key erasure": earlier output cannot be recomputed
 * from the state) and serves the rest. The key comes from the kernel again
 * after SL_CLIENT_RNG_RESEED_BYTES of output and in a forked child, which
 * would otherwise hand out its parent's ids. */
#include "client/client_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* Bumped in every forked child; a generator keyed under another value keys
 * itself again. */
static atomic_uint_fast64_t fork_generation;
static pthread_once_t fork_hook_once = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void)
{
    atomic_fetch_add(&fork_generation, 1);
}

static void install_fork_hook(void)
{
    /* Without the hook a fork could repeat ids; ids are still random, so a
     * failure here is not fatal, but it is not expected either. */
    (void)pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* The blocks are computed several at a time, each state word an array over
 * the lanes, so that the compiler keeps the blocks in vector registers:
 * four in SSE2's 128-bit registers (about twice the speed of one block at
 * a time), eight in AVX2's 256-bit ones (about twice again; eight lanes
 * without AVX2 spill registers). chacha20_blocks gives LANES blocks either
 * way, the same bytes. */
enum { LANES = 8, SSE_LANES = 4 };

typedef struct lanes {
    uint32_t v[LANES];
} lanes_t;

#define SL_INLINE static inline __attribute__((always_inline))

SL_INLINE void add_xor_rotate(lanes_t *a, const lanes_t *b, lanes_t *d, int n, const int lanes)
{
    for (int l = 0; l < lanes; l++) {
        a->v[l] += b->v[l];
        uint32_t x = d->v[l] ^ a->v[l];
        d->v[l] = (x << n) | (x >> (32 - n));
    }
}

SL_INLINE void quarter(lanes_t *x, int a, int b, int c, int d, const int lanes)
{
    add_xor_rotate(&x[a], &x[b], &x[d], 16, lanes);
    add_xor_rotate(&x[c], &x[d], &x[b], 12, lanes);
    add_xor_rotate(&x[a], &x[b], &x[d], 8, lanes);
    add_xor_rotate(&x[c], &x[d], &x[b], 7, lanes);
}

/* lanes consecutive 64-byte blocks for key, counters first..first+lanes-1
 * (nonce zero: every key serves one refill only); lanes is a constant of
 * each caller, which the loops are unrolled for. */
SL_INLINE void blocks(const uint32_t key[8], uint64_t first, uint8_t *out, const int lanes)
{
    static const uint32_t sigma[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    lanes_t in[16], x[16];
    for (int l = 0; l < lanes; l++) {
        uint64_t counter = first + (uint64_t)l;
        for (int i = 0; i < 4; i++)
            in[i].v[l] = sigma[i];
        for (int i = 0; i < 8; i++)
            in[4 + i].v[l] = key[i];
        in[12].v[l] = (uint32_t)counter;
        in[13].v[l] = (uint32_t)(counter >> 32);
        in[14].v[l] = 0;
        in[15].v[l] = 0;
    }
    memcpy(x, in, sizeof(x));
    for (int round = 0; round < 10; round++) {
        quarter(x, 0, 4, 8, 12, lanes);
        quarter(x, 1, 5, 9, 13, lanes);
        quarter(x, 2, 6, 10, 14, lanes);
        quarter(x, 3, 7, 11, 15, lanes);
        quarter(x, 0, 5, 10, 15, lanes);
        quarter(x, 1, 6, 11, 12, lanes);
        quarter(x, 2, 7, 8, 13, lanes);
        quarter(x, 3, 4, 9, 14, lanes);
    }
    for (int l = 0; l < lanes; l++)
        for (int i = 0; i < 16; i++)
            sl_store_u32(out + 64 * l + 4 * i, x[i].v[l] + in[i].v[l]);
}

static void blocks_sse(const uint32_t key[8], uint64_t first, uint8_t *out)
{
    blocks(key, first, out, SSE_LANES);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SL_CHACHA_AVX2 1
__attribute__((target("avx2"))) static void blocks_avx2(const uint32_t key[8], uint64_t first,
                                                        uint8_t *out)
{
    blocks(key, first, out, LANES);
}
#endif

/* LANES consecutive blocks from counter first. */
static void chacha20_blocks(const uint32_t key[8], uint64_t first, uint8_t out[64 * LANES])
{
#ifdef SL_CHACHA_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return blocks_avx2(key, first, out);
#endif
    for (int l = 0; l < LANES; l += SSE_LANES)
        blocks_sse(key, first + (uint64_t)l, out + 64 * l);
}

static int rng_seed(sl_client_rng_t *r)
{
    pthread_once(&fork_hook_once, install_fork_hook);
    uint8_t key[32];
    if (sl_client_random(key, sizeof(key)) != 0)
        return -SL_ERR_ERROR;
    for (int i = 0; i < 8; i++)
        r->key[i] = sl_load_u32(key + 4 * i);
    memset(key, 0, sizeof(key));
    r->generation = atomic_load(&fork_generation);
    r->reseed_left = SL_CLIENT_RNG_RESEED_BYTES;
    r->seeded = true;
    return 0;
}

static int rng_refill(sl_client_rng_t *r)
{
    if (!r->seeded || r->reseed_left < sizeof(r->pool) ||
        r->generation != atomic_load(&fork_generation)) {
        int rc = rng_seed(r);
        if (rc != 0)
            return rc;
    }
    for (uint64_t b = 0; b < sizeof(r->pool) / 64; b += LANES)
        chacha20_blocks(r->key, b, r->pool + 64 * b);
    for (int i = 0; i < 8; i++)
        r->key[i] = sl_load_u32(r->pool + 4 * i);
    memset(r->pool, 0, 32);
    r->left = sizeof(r->pool) - 32;
    r->reseed_left -= sizeof(r->pool);
    return 0;
}

int sl_client_rng_bytes(sl_client_rng_t *r, void *out, size_t n)
{
    uint8_t *p = out;
    r->draws++;
    while (n > 0) {
        /* A fork since the last refill makes the rest of the pool stale. */
        if (r->left == 0 || r->generation != atomic_load(&fork_generation)) {
            int rc = rng_refill(r);
            if (rc != 0)
                return rc;
        }
        size_t take = n < r->left ? n : r->left;
        uint8_t *from = r->pool + sizeof(r->pool) - r->left;
        memcpy(p, from, take);
        memset(from, 0, take); /* served once */
        r->left -= take;
        p += take;
        n -= take;
    }
    return 0;
}
