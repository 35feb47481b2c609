/* The frame-buffer pool (server/frame_pool.h): per-class lists of idle
 * buffers linked through their own prefix, so keeping a buffer costs no
 * memory besides the buffer, a byte count that enforces the idle cap, and
 * class buffers mapped and unmapped directly so that memory given back
 * leaves the process at once. */
#include "server/frame_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/log.h"

/* Classes per doubling: 4 gives quarter steps (1, 1.25, 1.5, 1.75 x a
 * power of two), so a frame wastes at most a fifth of its buffer instead of
 * half: a 1 MiB SendMessages frame takes 1.25 MiB, not 2 MiB. */
#define CLASS_STEPS 4u
#define STEP_SHIFT  2u /* log2(CLASS_STEPS) */
/* From 1 KiB up to 1 GiB: 20 doublings of CLASS_STEPS each, the top. */
#define CLASSES_MAX   96u
#define CLASS_MIN_LOW 1024u
#define FRAME_MAX_TOP (1u << 30)
#define CLASS_SMALL   UINT16_MAX
/* Class buffers of at least this size are mapped directly (see map_min). */
#define MAP_MIN (16u * 1024u)
/* Guard words: a buffer in use and one on an idle list. */
#define MAGIC_OUT  0x534c4650u
#define MAGIC_IDLE 0x534c4649u

_Static_assert(CLASS_STEPS == 1u << STEP_SHIFT, "steps and their shift agree");

/* What sits in front of every frame. next is only meaningful while idle,
 * bytes only for a small frame (never idle). */
typedef struct prefix {
    uint32_t magic;
    uint16_t cls;
    uint16_t mapped; /* 1: mmap'd (munmap it), 0: malloc'd (free it) */
    union {
        struct prefix *next;
        uint64_t bytes;
    };
} prefix_t;

_Static_assert(sizeof(prefix_t) <= SL_FRAME_POOL_PREFIX, "the prefix must fit its reserved bytes");
_Static_assert(SL_FRAME_POOL_PREFIX % 16 == 0, "frames must start 16-byte aligned");

struct sl_frame_pool {
    uint32_t frame_max;
    uint32_t class_min_shift;
    uint64_t small_max; /* allocations up to this size are not pooled */
    uint64_t map_min;   /* class buffers from this size on are mmap'd */
    uint64_t class_bytes[CLASSES_MAX];
    prefix_t *idle[CLASSES_MAX];
    sl_frame_pool_stats_t stats;
};

static uint32_t ceil_log2(uint64_t n)
{
    return n <= 1 ? 0 : 64u - (uint32_t)__builtin_clzll(n - 1);
}

static uint32_t floor_log2(uint64_t n)
{
    return 63u - (uint32_t)__builtin_clzll(n);
}

/* Bytes of step i above 2^shift: 2^(shift + i / steps) x (1 + (i % steps) / steps). */
static uint64_t step_bytes(uint32_t shift, uint32_t i)
{
    uint64_t unit = 1ull << (shift + i / CLASS_STEPS);
    return unit + (unit >> STEP_SHIFT) * (i % CLASS_STEPS);
}

/* Mapping a buffer directly rather than taking it from malloc is what
 * gives memory back: glibc raises its mmap threshold each time a mapped
 * chunk is freed (Argon2id's 19 MiB block at the first login raises it to
 * 19 MiB), after which megabyte frames come from the heap, and a freed heap
 * chunk below a live one stays resident until something calls malloc_trim.
 * With 1000 partitions each holding a frame that was about 1 GB, resident
 * long after the stream was deleted. Under AddressSanitizer the buffers
 * stay malloc's, so overruns are still caught. */
static uint64_t map_min(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return UINT64_MAX;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return UINT64_MAX;
#else
    return MAP_MIN;
#endif
#else
    return MAP_MIN;
#endif
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
    pool->map_min = map_min();
    /* CLASS_STEPS per doubling from 2^shift, the last class clipped to the largest frame. */
    uint32_t n = 0;
    for (uint32_t i = 0; n < CLASSES_MAX; i++) {
        uint64_t bytes = step_bytes(shift, i);
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

/* Gives a buffer's memory back to the system (or to malloc). */
static void release_bytes(prefix_t *p, uint64_t bytes)
{
    p->magic = 0;
    if (!p->mapped) {
        free(p);
        return;
    }
    /* munmap fails only when splitting a mapping would pass the process's
     * mapping limit; like glibc then, leave it mapped rather than stop. */
    if (munmap(p, bytes) != 0)
        sl_log_warn("frame pool: munmap of %llu bytes failed; they stay mapped",
                    (unsigned long long)bytes);
}

void sl_frame_pool_trim(sl_frame_pool_t *pool)
{
    for (uint32_t c = 0; c < pool->stats.classes; c++) {
        while (pool->idle[c]) {
            prefix_t *p = pool->idle[c];
            sl_assert(p->magic == MAGIC_IDLE && p->cls == c);
            pool->idle[c] = p->next;
            release_bytes(p, pool->class_bytes[c]);
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
    uint32_t shift = pool->class_min_shift, c = 0;
    if (need > (1ull << shift)) {
        /* 2^k < need <= 2^(k+1): the step of 2^(k - STEP_SHIFT) bytes that reaches need. */
        uint32_t k = floor_log2(need - 1);
        uint64_t unit = 1ull << k, step = unit >> STEP_SHIFT;
        uint64_t q = (need - unit + step - 1) / step; /* 1..CLASS_STEPS */
        c = (k - shift) * CLASS_STEPS + (uint32_t)q;
    }
    /* Only the clipped top class can be asked for more than its step covers. */
    uint32_t last = pool->stats.classes - 1;
    sl_assert(last < CLASSES_MAX);
    c = c < last ? c : last;
    sl_assert(pool->class_bytes[c] >= need);
    sl_assert(c == 0 || pool->class_bytes[c - 1] < need);
    return c;
}

static prefix_t *alloc_try(uint64_t bytes, bool map)
{
    if (map) {
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            ((prefix_t *)m)->mapped = 1;
            return m;
        }
        /* Past the process's mapping limit: the heap still serves. */
    }
    prefix_t *p = malloc(bytes);
    if (p)
        p->mapped = 0;
    return p;
}

/* An allocation, retried once after the idle buffers went back to the system. */
static prefix_t *alloc_bytes(sl_frame_pool_t *pool, uint64_t bytes, bool map)
{
    prefix_t *p = alloc_try(bytes, map);
    if (!p && pool->stats.idle_buffers > 0) {
        sl_frame_pool_trim(pool);
        p = alloc_try(bytes, map);
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
        p = alloc_bytes(pool, need, false);
        pool->stats.small += p != NULL;
    } else {
        c = class_of(pool, need);
        p = take_idle(pool, c);
        if (p) {
            pool->stats.hits++;
        } else {
            uint64_t bytes = pool->class_bytes[c];
            p = alloc_bytes(pool, bytes, bytes >= pool->map_min);
            pool->stats.misses += p != NULL;
        }
    }
    if (!p)
        return NULL;
    p->magic = MAGIC_OUT;
    p->cls = (uint16_t)c;
    p->bytes = c == CLASS_SMALL ? need : pool->class_bytes[c];
    pool->stats.out_buffers++;
    pool->stats.out_bytes += p->bytes;
    return (uint8_t *)p + SL_FRAME_POOL_PREFIX;
}

/* The prefix of a buffer that is out, checked. */
static prefix_t *prefix_of(const sl_frame_pool_t *pool, const void *frame)
{
    prefix_t *p = (prefix_t *)(void *)((uint8_t *)(uintptr_t)frame - SL_FRAME_POOL_PREFIX);
    sl_assert(p->magic == MAGIC_OUT);
    sl_assert(p->cls == CLASS_SMALL || p->cls < pool->stats.classes);
    return p;
}

void sl_frame_pool_put(sl_frame_pool_t *pool, void *frame)
{
    if (!frame)
        return;
    prefix_t *p = prefix_of(pool, frame);
    sl_assert(pool->stats.out_buffers > 0 && pool->stats.out_bytes >= p->bytes);
    pool->stats.out_buffers--;
    pool->stats.out_bytes -= p->bytes;
    uint32_t c = p->cls;
    if (c != CLASS_SMALL) {
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
    release_bytes(p, p->bytes);
}

void sl_frame_pool_release(void *ctx, void *frame)
{
    sl_frame_pool_put(ctx, frame);
}

size_t sl_frame_pool_held(void *ctx, const void *frame)
{
    return (size_t)prefix_of(ctx, frame)->bytes;
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
