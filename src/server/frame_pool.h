/* The bounded pool of request-frame buffers: the loop takes a buffer for
 * every frame it assembles, the handler may pass it on by ownership (to a
 * partition's journal), and whoever holds it last gives it back here, so
 * large frames reuse warm memory instead of a fresh allocation each.
 *
 * Size classes go in quarter steps between powers of two (16, 20, 24, 28,
 * 32, 40 KiB ...) from class_min (the loop's provided-buffer size) up to
 * the largest frame, the top class clipped to exactly what the largest
 * frame needs, so a frame's buffer is at most a quarter larger than the
 * frame (a 1 MiB SendMessages frame takes 1.25 MiB). A frame smaller than
 * half the smallest class is allocated at its own size and freed when it
 * comes back: rounding it up would make every small send pin a whole class
 * in a partition's journal, and the allocator's caches serve small sizes
 * well. Class buffers of 16 KiB and more are mapped (mmap) and unmapped
 * directly, so one freed leaves the process's resident memory at once
 * whatever malloc's thresholds have become (malloc's under
 * AddressSanitizer, and when a mapping is refused).
 *
 * The bound: the buffers kept idle never add up to more than idle_max bytes
 * (counted at their class size); a buffer given back beyond that is freed.
 * Buffers in use are bounded by what holds them (connections x max_frame,
 * the partitions' journal bound), not by the pool.
 *
 * Threading: one owner thread (the loop's); nothing locks. */
#ifndef SL_SERVER_FRAME_POOL_H
#define SL_SERVER_FRAME_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"

/* Default of message_bus.frame_pool_idle_max: one largest frame's worth. */
#define SL_FRAME_POOL_IDLE_MAX_DEFAULT (64ull * 1024u * 1024u)
/* Bytes in front of every buffer (class and a guard word); frames start 16-byte aligned. */
#define SL_FRAME_POOL_PREFIX 16u

typedef struct sl_frame_pool sl_frame_pool_t;

typedef struct sl_frame_pool_stats {
    uint64_t hits;         /* gets served by an idle buffer */
    uint64_t misses;       /* gets of a class with nothing idle: a new allocation */
    uint64_t small;        /* gets under half the smallest class: allocated at their size */
    uint64_t dropped;      /* class buffers freed on their way back: idle_max was reached */
    uint64_t idle_bytes;   /* of the buffers kept idle, at class size; <= idle_max */
    uint64_t idle_max;     /* the cap */
    uint64_t out_bytes;    /* held by the buffers handed out (sl_frame_pool_held of each) */
    uint32_t idle_buffers; /* kept idle */
    uint32_t out_buffers;  /* handed out and not given back (small ones included) */
    uint32_t classes;      /* number of size classes */
} sl_frame_pool_stats_t;

/* A pool for frames of up to frame_max bytes. class_min is rounded up to a
 * power of two (at least 1 KiB); idle_max may be 0 (keep nothing). 0, or
 * -EINVAL (frame_max 0 or above 1 GiB) / -ENOMEM. */
SL_WUR int sl_frame_pool_create(uint32_t class_min, uint32_t frame_max, uint64_t idle_max,
                                sl_frame_pool_t **out);

/* Frees the idle buffers and the pool. Every buffer must have come back:
 * one still out would be given back to freed memory later (asserted). */
void sl_frame_pool_destroy(sl_frame_pool_t *pool);

/* A buffer for a frame of size bytes (1..frame_max), uninitialised. It is
 * the caller's until given back with sl_frame_pool_put (never free() it).
 * NULL when memory runs out even after the idle buffers were freed. */
uint8_t *sl_frame_pool_get(sl_frame_pool_t *pool, uint32_t size);

/* Gives a buffer of this pool back: kept idle while the cap allows, freed
 * otherwise. NULL is ignored. A pointer the pool did not hand out, or one
 * given back twice, stops the process (sl_assert). */
void sl_frame_pool_put(sl_frame_pool_t *pool, void *frame);

/* sl_frame_pool_put in the shape of sl_partition_release_fn, so partitions
 * give journaled frames back (ctx is the pool). */
void sl_frame_pool_release(void *ctx, void *frame);

/* The bytes of memory a buffer that is out holds, prefix included: its class
 * size, or what a small frame was allocated with. In the shape of
 * sl_partition_held_fn (ctx is the pool), so journals count what their
 * frames really hold against the journal bound. */
size_t sl_frame_pool_held(void *ctx, const void *frame);

/* Frees every idle buffer (memory pressure, or to measure). */
void sl_frame_pool_trim(sl_frame_pool_t *pool);

void sl_frame_pool_stats(const sl_frame_pool_t *pool, sl_frame_pool_stats_t *out);

/* Usable bytes of class i (i < stats.classes), the prefix left out: the
 * largest frame that class holds. For tests and logs. */
uint32_t sl_frame_pool_class_capacity(const sl_frame_pool_t *pool, uint32_t i);

#endif
