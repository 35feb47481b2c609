/* BLAKE3 from the specification: a compression function of seven rounds over
 * a 16-word state, chunks of 1024 bytes hashed block by block, chunk
 * chaining values merged into a binary tree whose root is the output. */
#include "vsr/blake3.h"

#include <string.h>

#include "base/assert.h"
#include "base/bytes.h"

/* Domain flags (spec, table of flags). */
enum {
    CHUNK_START = 1u << 0,
    CHUNK_END = 1u << 1,
    PARENT = 1u << 2,
    ROOT = 1u << 3,
    KEYED_HASH = 1u << 4,
    DERIVE_KEY_CONTEXT = 1u << 5,
    DERIVE_KEY_MATERIAL = 1u << 6,
};

/* The initial value: the same constants as SHA-256's. */
static const uint32_t blake3_iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                                      0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};

/* The message word permutation applied between rounds. */
static const uint8_t msg_permutation[16] = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};

static inline uint32_t rotr32(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32u - n));
}

/* The quarter-round mixing function G. */
static inline void mix(uint32_t s[16], int a, int b, int c, int d, uint32_t mx, uint32_t my)
{
    s[a] = s[a] + s[b] + mx;
    s[d] = rotr32(s[d] ^ s[a], 16);
    s[c] = s[c] + s[d];
    s[b] = rotr32(s[b] ^ s[c], 12);
    s[a] = s[a] + s[b] + my;
    s[d] = rotr32(s[d] ^ s[a], 8);
    s[c] = s[c] + s[d];
    s[b] = rotr32(s[b] ^ s[c], 7);
}

static void round_fn(uint32_t s[16], const uint32_t m[16])
{
    /* columns */
    mix(s, 0, 4, 8, 12, m[0], m[1]);
    mix(s, 1, 5, 9, 13, m[2], m[3]);
    mix(s, 2, 6, 10, 14, m[4], m[5]);
    mix(s, 3, 7, 11, 15, m[6], m[7]);
    /* diagonals */
    mix(s, 0, 5, 10, 15, m[8], m[9]);
    mix(s, 1, 6, 11, 12, m[10], m[11]);
    mix(s, 2, 7, 8, 13, m[12], m[13]);
    mix(s, 3, 4, 9, 14, m[14], m[15]);
}

/* The compression function: 16 words out; the first 8 are the next
 * chaining value, all 16 are extended output. */
static void compress(const uint32_t cv[8], const uint8_t block[SL_BLAKE3_BLOCK_LEN],
                     uint32_t block_len, uint64_t counter, uint32_t flags, uint32_t out[16])
{
    uint32_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = sl_load_u32(block + 4 * i);
    uint32_t s[16] = {cv[0],
                      cv[1],
                      cv[2],
                      cv[3],
                      cv[4],
                      cv[5],
                      cv[6],
                      cv[7],
                      blake3_iv[0],
                      blake3_iv[1],
                      blake3_iv[2],
                      blake3_iv[3],
                      (uint32_t)counter,
                      (uint32_t)(counter >> 32),
                      block_len,
                      flags};
    for (int r = 0; r < 7; r++) {
        round_fn(s, m);
        if (r == 6)
            break;
        uint32_t p[16];
        for (int i = 0; i < 16; i++)
            p[i] = m[msg_permutation[i]];
        memcpy(m, p, sizeof(m));
    }
    for (int i = 0; i < 8; i++) {
        out[i] = s[i] ^ s[i + 8];
        out[i + 8] = s[i + 8] ^ cv[i];
    }
}

/* A node whose compression is still to be done: a chunk's last block or a
 * parent; as the root it yields output, otherwise a chaining value. */
typedef struct node {
    uint32_t cv[8];
    uint8_t block[SL_BLAKE3_BLOCK_LEN];
    uint32_t block_len;
    uint64_t counter;
    uint32_t flags;
} node_t;

static void node_cv(const node_t *n, uint32_t cv[8])
{
    uint32_t out[16];
    compress(n->cv, n->block, n->block_len, n->counter, n->flags, out);
    memcpy(cv, out, 8 * sizeof(uint32_t));
}

static void parent_node(const uint32_t left[8], const uint32_t right[8], const uint32_t key[8],
                        uint32_t flags, node_t *n)
{
    memcpy(n->cv, key, sizeof(n->cv));
    for (int i = 0; i < 8; i++) {
        sl_store_u32(n->block + 4 * i, left[i]);
        sl_store_u32(n->block + 32 + 4 * i, right[i]);
    }
    n->block_len = SL_BLAKE3_BLOCK_LEN;
    n->counter = 0;
    n->flags = flags | PARENT;
}

static size_t chunk_len(const sl_blake3_t *h)
{
    return (size_t)h->blocks_compressed * SL_BLAKE3_BLOCK_LEN + h->block_len;
}

static uint32_t chunk_start_flag(const sl_blake3_t *h)
{
    return h->blocks_compressed == 0 ? CHUNK_START : 0u;
}

static void chunk_node(const sl_blake3_t *h, node_t *n)
{
    memcpy(n->cv, h->chunk_cv, sizeof(n->cv));
    memcpy(n->block, h->block, sizeof(n->block));
    n->block_len = h->block_len;
    n->counter = h->chunk_counter;
    n->flags = h->flags | chunk_start_flag(h) | CHUNK_END;
}

static void chunk_reset(sl_blake3_t *h, uint64_t counter)
{
    memcpy(h->chunk_cv, h->key, sizeof(h->chunk_cv));
    h->chunk_counter = counter;
    memset(h->block, 0, sizeof(h->block));
    h->block_len = 0;
    h->blocks_compressed = 0;
}

/* Feeds at most the rest of the current chunk. A full block is compressed
 * only when more input follows it: the chunk's last block must wait for the
 * CHUNK_END flag. */
static void chunk_update(sl_blake3_t *h, const uint8_t *in, size_t len)
{
    while (len > 0) {
        if (h->block_len == SL_BLAKE3_BLOCK_LEN) {
            uint32_t out[16];
            compress(h->chunk_cv, h->block, SL_BLAKE3_BLOCK_LEN, h->chunk_counter,
                     h->flags | chunk_start_flag(h), out);
            memcpy(h->chunk_cv, out, sizeof(h->chunk_cv));
            h->blocks_compressed++;
            memset(h->block, 0, sizeof(h->block));
            h->block_len = 0;
        }
        size_t take = SL_BLAKE3_BLOCK_LEN - h->block_len;
        if (take > len)
            take = len;
        memcpy(h->block + h->block_len, in, take);
        h->block_len = (uint8_t)(h->block_len + take);
        in += take;
        len -= take;
    }
}

/* Pushes a finished chunk's chaining value, first merging every completed
 * subtree: after total_chunks chunks, the stack holds one entry per set bit
 * of total_chunks. */
static void push_chunk_cv(sl_blake3_t *h, uint32_t cv[8], uint64_t total_chunks)
{
    while ((total_chunks & 1) == 0) {
        sl_assert(h->stack_len > 0);
        node_t n;
        parent_node(h->stack[h->stack_len - 1], cv, h->key, h->flags, &n);
        node_cv(&n, cv);
        h->stack_len--;
        total_chunks >>= 1;
    }
    sl_assert(h->stack_len < SL_BLAKE3_STACK_MAX);
    memcpy(h->stack[h->stack_len++], cv, 8 * sizeof(uint32_t));
}

static void init_with(sl_blake3_t *h, const uint32_t key[8], uint32_t flags)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->key, key, sizeof(h->key));
    h->flags = flags;
    chunk_reset(h, 0);
}

void sl_blake3_init(sl_blake3_t *h)
{
    init_with(h, blake3_iv, 0);
}

void sl_blake3_init_keyed(sl_blake3_t *h, const uint8_t key[SL_BLAKE3_KEY_LEN])
{
    uint32_t words[8];
    for (int i = 0; i < 8; i++)
        words[i] = sl_load_u32(key + 4 * i);
    init_with(h, words, KEYED_HASH);
}

void sl_blake3_init_derive_key(sl_blake3_t *h, const void *context, size_t context_len)
{
    sl_blake3_t ctx;
    init_with(&ctx, blake3_iv, DERIVE_KEY_CONTEXT);
    sl_blake3_update(&ctx, context, context_len);
    uint8_t context_key[SL_BLAKE3_KEY_LEN];
    sl_blake3_finalize(&ctx, context_key, sizeof(context_key));
    uint32_t words[8];
    for (int i = 0; i < 8; i++)
        words[i] = sl_load_u32(context_key + 4 * i);
    init_with(h, words, DERIVE_KEY_MATERIAL);
}

void sl_blake3_update(sl_blake3_t *h, const void *input, size_t len)
{
    const uint8_t *in = input;
    while (len > 0) {
        if (chunk_len(h) == SL_BLAKE3_CHUNK_LEN) {
            /* More input follows a full chunk, so it is not the root. */
            node_t n;
            chunk_node(h, &n);
            uint32_t cv[8];
            node_cv(&n, cv);
            uint64_t total = h->chunk_counter + 1;
            push_chunk_cv(h, cv, total);
            chunk_reset(h, total);
        }
        size_t take = SL_BLAKE3_CHUNK_LEN - chunk_len(h);
        if (take > len)
            take = len;
        chunk_update(h, in, take);
        in += take;
        len -= take;
    }
}

void sl_blake3_finalize(const sl_blake3_t *h, uint8_t *out, size_t out_len)
{
    /* The current chunk, then each stacked subtree from the newest down,
     * folded into the root node. */
    node_t n;
    chunk_node(h, &n);
    for (size_t i = h->stack_len; i > 0; i--) {
        uint32_t right[8];
        node_cv(&n, right);
        parent_node(h->stack[i - 1], right, h->key, h->flags, &n);
    }
    /* Root output: one compression per 64 bytes, counter = block index. */
    for (uint64_t counter = 0; out_len > 0; counter++) {
        uint32_t words[16];
        compress(n.cv, n.block, n.block_len, counter, n.flags | ROOT, words);
        uint8_t bytes[64];
        for (int i = 0; i < 16; i++)
            sl_store_u32(bytes + 4 * i, words[i]);
        size_t take = out_len < sizeof(bytes) ? out_len : sizeof(bytes);
        memcpy(out, bytes, take);
        out += take;
        out_len -= take;
    }
}

void sl_blake3_hash(const void *input, size_t len, uint8_t out[SL_BLAKE3_OUT_LEN])
{
    sl_blake3_t h;
    sl_blake3_init(&h);
    sl_blake3_update(&h, input, len);
    sl_blake3_finalize(&h, out, SL_BLAKE3_OUT_LEN);
}

void sl_blake3_keyed_hash(const uint8_t key[SL_BLAKE3_KEY_LEN], const void *input, size_t len,
                          uint8_t out[SL_BLAKE3_OUT_LEN])
{
    sl_blake3_t h;
    sl_blake3_init_keyed(&h, key);
    sl_blake3_update(&h, input, len);
    sl_blake3_finalize(&h, out, SL_BLAKE3_OUT_LEN);
}

void sl_blake3_derive_key(const char *context, const void *material, size_t len,
                          uint8_t out[SL_BLAKE3_OUT_LEN])
{
    sl_blake3_t h;
    sl_blake3_init_derive_key(&h, context, strlen(context));
    sl_blake3_update(&h, material, len);
    sl_blake3_finalize(&h, out, SL_BLAKE3_OUT_LEN);
}
