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

/* The blocks are computed LANES at a time, each state word an array over
 * the lanes, so that the compiler can keep four blocks in vector registers
 * (about twice the speed of one block at a time). */
enum { LANES = 4 };

typedef struct lanes {
    uint32_t v[LANES];
} lanes_t;

static inline void add_xor_rotate(lanes_t *a, const lanes_t *b, lanes_t *d, int n)
{
    for (int l = 0; l < LANES; l++) {
        a->v[l] += b->v[l];
        uint32_t x = d->v[l] ^ a->v[l];
        d->v[l] = (x << n) | (x >> (32 - n));
    }
}

static inline void quarter(lanes_t *x, int a, int b, int c, int d)
{
    add_xor_rotate(&x[a], &x[b], &x[d], 16);
    add_xor_rotate(&x[c], &x[d], &x[b], 12);
    add_xor_rotate(&x[a], &x[b], &x[d], 8);
    add_xor_rotate(&x[c], &x[d], &x[b], 7);
}

/* LANES consecutive 64-byte blocks for key, counters first..first+LANES-1
 * (nonce zero: every key serves one refill only). */
static void chacha20_blocks(const uint32_t key[8], uint64_t first, uint8_t out[64 * LANES])
{
    static const uint32_t sigma[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    lanes_t in[16], x[16];
    for (int l = 0; l < LANES; l++) {
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
        quarter(x, 0, 4, 8, 12);
        quarter(x, 1, 5, 9, 13);
        quarter(x, 2, 6, 10, 14);
        quarter(x, 3, 7, 11, 15);
        quarter(x, 0, 5, 10, 15);
        quarter(x, 1, 6, 11, 12);
        quarter(x, 2, 7, 8, 13);
        quarter(x, 3, 4, 9, 14);
    }
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < 16; i++)
            sl_store_u32(out + 64 * l + 4 * i, x[i].v[l] + in[i].v[l]);
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
