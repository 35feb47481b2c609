/* The plaintext tail of at-rest encryption (server/tail_cache.h): a FIFO of
 * recent batches in sealing order, found by the sealed blobs' nonces. */
#include "server/tail_cache.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"

/* A nonce is NONCE_FIXED bytes fixed per sealing context, then the 8-byte
 * invocation field OpenSSL counts up by one per seal (auth/aead.c). */
#define NONCE_FIXED 4u

typedef struct tail_frame {
    uint64_t sealed_checksum;
    uint8_t tag[SL_AEAD_TAG_SIZE];
    uint32_t plain_at;
    uint32_t plain_len; /* header and body */
} tail_frame_t;

typedef struct tail_batch {
    void *owner;          /* the request frame, the pool's buffer */
    const uint8_t *plain; /* the plaintext record inside it */
    uint8_t fixed[NONCE_FIXED];
    uint64_t first; /* invocation field of the first frame's nonce */
    uint32_t count;
    uint64_t held;
    tail_frame_t *frames;
} tail_batch_t;

struct sl_tail_cache {
    uint64_t max, held;
    sl_frame_pool_t *pool;
    tail_batch_t *ring; /* oldest at head, n of cap */
    uint32_t cap, head, n;
    uint32_t hint; /* ring position (from head) of the last batch found */
    sl_tail_cache_stats_t stats;
};

static uint64_t load_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static tail_batch_t *at(sl_tail_cache_t *c, uint32_t i)
{
    return &c->ring[(c->head + i) % c->cap];
}

int sl_tail_cache_create(uint64_t max, sl_frame_pool_t *pool, sl_tail_cache_t **out)
{
    *out = NULL;
    if (max == 0)
        return 0;
    sl_tail_cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -SL_ERR_ERROR;
    c->max = max;
    c->pool = pool;
    *out = c;
    return 0;
}

static void evict_oldest(sl_tail_cache_t *c)
{
    sl_assert(c->n > 0);
    tail_batch_t *b = at(c, 0);
    sl_frame_pool_put(c->pool, b->owner);
    free(b->frames);
    sl_assert(c->held >= b->held);
    c->held -= b->held;
    memset(b, 0, sizeof(*b));
    c->head = (c->head + 1) % c->cap;
    c->n--;
    c->hint = 0;
    c->stats.evicted++;
}

void sl_tail_cache_destroy(sl_tail_cache_t *c)
{
    if (!c)
        return;
    while (c->n > 0)
        evict_oldest(c);
    free(c->ring);
    free(c);
}

/* One more ring slot; false when memory runs out. The ring's own bytes count
 * against the bound too. */
static bool ring_room(sl_tail_cache_t *c)
{
    if (c->n < c->cap)
        return true;
    uint32_t cap = c->cap ? 2 * c->cap : 16;
    tail_batch_t *ring = malloc(cap * sizeof(*ring));
    if (!ring)
        return false;
    for (uint32_t i = 0; i < c->n; i++)
        ring[i] = *at(c, i);
    free(c->ring);
    c->held += (uint64_t)(cap - c->cap) * sizeof(*ring);
    c->ring = ring;
    c->cap = cap;
    c->head = 0;
    return true;
}

/* Fills b's frames from the notes; false when the nonces are not
 * consecutive (the lookup relies on it). */
static bool note_frames(tail_batch_t *b, const uint8_t *plain, const uint8_t *sealed,
                        const sl_sealed_note_t *notes)
{
    for (uint32_t i = 0; i < b->count; i++) {
        const uint8_t *s = sealed + notes[i].sealed_at;
        const uint8_t *p = plain + notes[i].plain_at;
        const uint8_t *nonce = s + SL_FRAME_HEADER_SIZE;
        if (memcmp(nonce, b->fixed, NONCE_FIXED) != 0 ||
            load_be64(nonce + NONCE_FIXED) != b->first + i)
            return false;
        uint32_t body = sl_load_u32(p + SL_FRAME_OFF_PAYLOAD_LENGTH) +
                        sl_load_u32(p + SL_FRAME_OFF_HEADERS_LENGTH);
        tail_frame_t *f = &b->frames[i];
        f->sealed_checksum = notes[i].sealed_checksum;
        memcpy(f->tag, s + SL_FRAME_HEADER_SIZE + SL_AEAD_NONCE_SIZE + body, SL_AEAD_TAG_SIZE);
        f->plain_at = notes[i].plain_at;
        f->plain_len = SL_FRAME_HEADER_SIZE + body;
    }
    return true;
}

void sl_tail_cache_add(sl_tail_cache_t *c, void *owner, const uint8_t *plain, const uint8_t *sealed,
                       const sl_sealed_note_t *notes, uint32_t count)
{
    sl_assert(c != NULL);
    uint64_t held = sl_frame_pool_held(c->pool, owner) + (uint64_t)count * sizeof(tail_frame_t);
    tail_batch_t b = {.owner = owner, .plain = plain, .count = count, .held = held};
    b.frames = count > 0 && held <= c->max ? malloc(count * sizeof(tail_frame_t)) : NULL;
    if (b.frames) {
        const uint8_t *nonce = sealed + notes[0].sealed_at + SL_FRAME_HEADER_SIZE;
        memcpy(b.fixed, nonce, NONCE_FIXED);
        b.first = load_be64(nonce + NONCE_FIXED);
    }
    if (!b.frames || !note_frames(&b, plain, sealed, notes)) {
        free(b.frames);
        sl_frame_pool_put(c->pool, owner);
        c->stats.skipped++;
        return;
    }
    while (c->n > 0 && c->held + held > c->max)
        evict_oldest(c);
    if (!ring_room(c)) {
        free(b.frames);
        sl_frame_pool_put(c->pool, owner);
        c->stats.skipped++;
        return;
    }
    *at(c, c->n++) = b;
    c->held += held;
    c->stats.added++;
    /* The ring may have grown past the bound by its own bytes: keep within. */
    while (c->n > 1 && c->held > c->max)
        evict_oldest(c);
    if (c->held > c->stats.peak)
        c->stats.peak = c->held;
}

/* The batch whose nonces include (fixed, counter), or NULL. Batches are in
 * sealing order, so their first counters, taken from the oldest one's
 * (modulo 2^64: the field may wrap), increase along the ring. */
static tail_batch_t *find_batch(sl_tail_cache_t *c, const uint8_t *fixed, uint64_t counter)
{
    if (c->n == 0)
        return NULL;
    tail_batch_t *h = c->hint < c->n ? at(c, c->hint) : NULL;
    if (h && counter - h->first < h->count && memcmp(h->fixed, fixed, NONCE_FIXED) == 0)
        return h;
    uint64_t origin = at(c, 0)->first, want = counter - origin;
    /* Past the newest batch's last nonce (older than the oldest batch wraps
     * to here too): the common miss, a poll of the backlog, ends at once. */
    const tail_batch_t *newest = at(c, c->n - 1);
    if (want >= newest->first - origin + newest->count)
        return NULL;
    uint32_t lo = 0, hi = c->n; /* the last batch whose first - origin <= want is in [lo, hi) */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (at(c, mid)->first - origin <= want)
            lo = mid;
        else
            hi = mid;
    }
    tail_batch_t *b = at(c, lo);
    if (counter - b->first >= b->count || memcmp(b->fixed, fixed, NONCE_FIXED) != 0)
        return NULL;
    c->hint = lo;
    return b;
}

/* True when the sealed frame is the one f was noted from: the same header
 * (but for the checksum and the payload length the seal grew), the same
 * frame checksum and the same tag. */
static bool unchanged(const tail_frame_t *f, const uint8_t *plain, const uint8_t *s, size_t len)
{
    if (len != (size_t)f->plain_len + SL_AEAD_OVERHEAD ||
        sl_load_u64(s + SL_FRAME_OFF_CHECKSUM) != f->sealed_checksum ||
        memcmp(s + SL_FRAME_OFF_ID, plain + SL_FRAME_OFF_ID,
               SL_FRAME_OFF_PAYLOAD_LENGTH - SL_FRAME_OFF_ID) != 0 ||
        sl_load_u32(s + SL_FRAME_OFF_PAYLOAD_LENGTH) !=
            sl_load_u32(plain + SL_FRAME_OFF_PAYLOAD_LENGTH) + SL_AEAD_OVERHEAD ||
        memcmp(s + SL_FRAME_OFF_RESERVED, plain + SL_FRAME_OFF_RESERVED,
               SL_FRAME_HEADER_SIZE - SL_FRAME_OFF_RESERVED) != 0)
        return false;
    return memcmp(s + len - SL_AEAD_TAG_SIZE, f->tag, SL_AEAD_TAG_SIZE) == 0;
}

sl_span_t sl_tail_cache_find(sl_tail_cache_t *c, const uint8_t *sealed_frame, size_t sealed_len)
{
    if (!c)
        return (sl_span_t){NULL, 0};
    if (sealed_len >= SL_FRAME_HEADER_SIZE + SL_AEAD_OVERHEAD) {
        const uint8_t *nonce = sealed_frame + SL_FRAME_HEADER_SIZE;
        uint64_t counter = load_be64(nonce + NONCE_FIXED);
        tail_batch_t *b = find_batch(c, nonce, counter);
        if (b) {
            const tail_frame_t *f = &b->frames[counter - b->first];
            const uint8_t *plain = b->plain + f->plain_at;
            if (unchanged(f, plain, sealed_frame, sealed_len)) {
                c->stats.hits++;
                return (sl_span_t){plain, f->plain_len};
            }
        }
    }
    c->stats.misses++;
    return (sl_span_t){NULL, 0};
}

void sl_tail_cache_stats(const sl_tail_cache_t *c, sl_tail_cache_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    *out = c->stats;
    out->held = c->held;
    out->max = c->max;
    out->batches = c->n;
}
