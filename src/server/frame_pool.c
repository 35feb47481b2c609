/* The frame-buffer pool (server/frame_pool.h): per-class lists of idle
 * buffers linked through their own prefix, so keeping a buffer costs no
 * memory besides the buffer, and a byte count that enforces the idle cap. */
#include "server/frame_pool.h"

#include <errno.h>
#include <stdlib.h>

/* Classes from 1 KiB up to 1 GiB need 21; the array is sized with room. */
#define CLASSES_MAX   32u
#define CLASS_MIN_LOW 1024u
#define FRAME_MAX_TOP (1u << 30)
#define CLASS_SMALL   UINT32_MAX
/* Guard words: a buffer in use and one on an idle list. */
#define MAGIC_OUT  0x534c4650u
#define MAGIC_IDLE 0x534c4649u

/* What sits in front of every frame. next is only meaningful while idle. */
typedef struct prefix {
    uint32_t magic;
    uint32_t cls;
    struct prefix *next;
} prefix_t;

_Static_assert(sizeof(prefix_t) <= SL_FRAME_POOL_PREFIX, "the prefix must fit its reserved bytes");
_Static_assert(SL_FRAME_POOL_PREFIX % 16 == 0, "frames must start 16-byte aligned");

struct sl_frame_pool {
    uint32_t frame_max;
    uint32_t class_min_shift;
    uint64_t small_max; /* allocations up to this size are not pooled */
    uint64_t class_bytes[CLASSES_MAX];
    prefix_t *idle[CLASSES_MAX];
    sl_frame_pool_stats_t stats;
};

static uint32_t ceil_log2(uint64_t n)
{
    return n <= 1 ? 0 : 64u - (uint32_t)__builtin_clzll(n - 1);
}

int sl_frame_pool_create(uint32_t class_min, uint32_t frame_max, uint64_t idle_max,
                         sl_frame_pool_t **out)
{
    if (frame_max == 0 || frame_max > FRAME_MAX_TOP)
        return -EINVAL;
    sl_frame_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return -ENOMEM;
    uint64_t top = (uint64_t)frame_max + SL_FRAME_POOL_PREFIX;
    uint32_t shift = ceil_log2(class_min < CLASS_MIN_LOW ? CLASS_MIN_LOW : class_min);
    pool->frame_max = frame_max;
    pool->class_min_shift = shift;
    pool->small_max = (1ull << shift) / 2;
    /* Doubling from 2^shift, the last class clipped to the largest frame. */
    uint32_t n = 0;
    for (uint64_t bytes = 1ull << shift; n < CLASSES_MAX; bytes *= 2) {
        pool->class_bytes[n++] = bytes < top ? bytes : top;
        if (bytes >= top)
            break;
    }
    sl_assert(pool->class_bytes[n - 1] == top);
    pool->stats.classes = n;
    pool->stats.idle_max = idle_max;
    *out = pool;
    return 0;
}

void sl_frame_pool_trim(sl_frame_pool_t *pool)
{
    for (uint32_t c = 0; c < pool->stats.classes; c++) {
        while (pool->idle[c]) {
            prefix_t *p = pool->idle[c];
            sl_assert(p->magic == MAGIC_IDLE && p->cls == c);
            pool->idle[c] = p->next;
            p->magic = 0;
            free(p);
        }
    }
    pool->stats.idle_bytes = 0;
    pool->stats.idle_buffers = 0;
}

void sl_frame_pool_destroy(sl_frame_pool_t *pool)
{
    if (!pool)
        return;
    sl_assert(pool->stats.out_buffers == 0);
    sl_frame_pool_trim(pool);
    free(pool);
}

/* The class that holds need bytes (prefix included), need > small_max. */
static uint32_t class_of(const sl_frame_pool_t *pool, uint64_t need)
{
    uint32_t shift = ceil_log2(need);
    uint32_t c = shift > pool->class_min_shift ? shift - pool->class_min_shift : 0;
    /* Only the clipped top class can be asked for more than its power of two covers. */
    if (c >= pool->stats.classes)
        c = pool->stats.classes - 1;
    sl_assert(pool->class_bytes[c] >= need);
    return c;
}

/* An allocation, retried once after the idle buffers went back to the system. */
static prefix_t *alloc_bytes(sl_frame_pool_t *pool, uint64_t bytes)
{
    prefix_t *p = malloc(bytes);
    if (!p && pool->stats.idle_buffers > 0) {
        sl_frame_pool_trim(pool);
        p = malloc(bytes);
    }
    return p;
}

static prefix_t *take_idle(sl_frame_pool_t *pool, uint32_t c)
{
    prefix_t *p = pool->idle[c];
    if (!p)
        return NULL;
    sl_assert(p->magic == MAGIC_IDLE && p->cls == c);
    pool->idle[c] = p->next;
    pool->stats.idle_bytes -= pool->class_bytes[c];
    pool->stats.idle_buffers--;
    return p;
}

uint8_t *sl_frame_pool_get(sl_frame_pool_t *pool, uint32_t size)
{
    sl_assert(size > 0 && size <= pool->frame_max);
    uint64_t need = (uint64_t)size + SL_FRAME_POOL_PREFIX;
    uint32_t c = CLASS_SMALL;
    prefix_t *p = NULL;
    if (need <= pool->small_max) {
        p = alloc_bytes(pool, need);
        pool->stats.small += p != NULL;
    } else {
        c = class_of(pool, need);
        p = take_idle(pool, c);
        if (p) {
            pool->stats.hits++;
        } else {
            p = alloc_bytes(pool, pool->class_bytes[c]);
            pool->stats.misses += p != NULL;
        }
    }
    if (!p)
        return NULL;
    *p = (prefix_t){.magic = MAGIC_OUT, .cls = c, .next = NULL};
    pool->stats.out_buffers++;
    return (uint8_t *)p + SL_FRAME_POOL_PREFIX;
}

void sl_frame_pool_put(sl_frame_pool_t *pool, void *frame)
{
    if (!frame)
        return;
    prefix_t *p = (prefix_t *)(void *)((uint8_t *)frame - SL_FRAME_POOL_PREFIX);
    sl_assert(p->magic == MAGIC_OUT);
    sl_assert(pool->stats.out_buffers > 0);
    pool->stats.out_buffers--;
    uint32_t c = p->cls;
    if (c != CLASS_SMALL) {
        sl_assert(c < pool->stats.classes);
        uint64_t bytes = pool->class_bytes[c];
        if (pool->stats.idle_bytes + bytes <= pool->stats.idle_max) {
            p->magic = MAGIC_IDLE;
            p->next = pool->idle[c];
            pool->idle[c] = p;
            pool->stats.idle_bytes += bytes;
            pool->stats.idle_buffers++;
            return;
        }
        pool->stats.dropped++;
    }
    p->magic = 0;
    free(p);
}

void sl_frame_pool_release(void *ctx, void *frame)
{
    sl_frame_pool_put(ctx, frame);
}

void sl_frame_pool_stats(const sl_frame_pool_t *pool, sl_frame_pool_stats_t *out)
{
    *out = pool->stats;
}

uint32_t sl_frame_pool_class_capacity(const sl_frame_pool_t *pool, uint32_t i)
{
    sl_assert(i < pool->stats.classes);
    return (uint32_t)(pool->class_bytes[i] - SL_FRAME_POOL_PREFIX);
}
