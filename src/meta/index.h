/* Small containers the metadata state is built from: a hash index over
 * names and client ids, sorted id vectors with lowest-free-id search, and a
 * bitmap of used ids for the large stream id space. All memory comes from
 * malloc and is owned by the container; allocation failure is fatal
 * (sl_assert), because a half-applied metadata operation would break the
 * state machine's determinism. */
#ifndef SL_META_INDEX_H
#define SL_META_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytes.h"

/* --- memory ---------------------------------------------------------------- */

/* Zeroed memory for n items of size bytes; never NULL (asserts). */
void *sl_meta_calloc(size_t n, size_t size);
/* Resizes p to n items of size bytes (new bytes uninitialised); never NULL
 * for n > 0. */
void *sl_meta_realloc(void *p, size_t n, size_t size);
/* An owned copy of s (ptr NULL when empty), freed with sl_meta_span_free. */
sl_span_t sl_meta_span_dup(sl_span_t s);
void sl_meta_span_free(sl_span_t *s);
/* Replaces *dst with an owned copy of src. */
void sl_meta_span_set(sl_span_t *dst, sl_span_t src);

/* The hash every name index uses. */
uint64_t sl_meta_hash(sl_span_t bytes);

/* --- hash index -------------------------------------------------------------- */

/* Open addressing with linear probing from a 64-bit hash to a u32 value.
 * Keys live in the entities; the caller walks the candidates that share a
 * hash and compares keys itself. */
typedef struct sl_meta_map {
    uint64_t *hashes;
    uint32_t *values; /* SL_META_MAP_EMPTY marks a free slot */
    uint32_t cap;     /* a power of two, or 0 */
    uint32_t count;
} sl_meta_map_t;

#define SL_META_MAP_EMPTY UINT32_MAX

typedef struct sl_meta_map_iter {
    const sl_meta_map_t *map;
    uint64_t hash;
    uint32_t pos;
    uint32_t probes;
} sl_meta_map_iter_t;

/* Walks the values stored under hash: sl_meta_map_next gives each in turn. */
sl_meta_map_iter_t sl_meta_map_lookup(const sl_meta_map_t *map, uint64_t hash);
bool sl_meta_map_next(sl_meta_map_iter_t *it, uint32_t *value);
/* Adds (hash, value); value must not be SL_META_MAP_EMPTY. */
void sl_meta_map_insert(sl_meta_map_t *map, uint64_t hash, uint32_t value);
/* Removes the pair (hash, value), which must be present. */
void sl_meta_map_remove(sl_meta_map_t *map, uint64_t hash, uint32_t value);
void sl_meta_map_free(sl_meta_map_t *map);

/* --- sorted id vectors ---------------------------------------------------------- */

/* Pointers to structs whose first member is `uint32_t id`, kept sorted by
 * id with no duplicates. Lookups are binary searches; because ids are
 * unique and sorted, the lowest free id is a binary search too. */
typedef struct sl_meta_vec {
    void **items;
    uint32_t count;
    uint32_t cap;
} sl_meta_vec_t;

static inline uint32_t sl_meta_vec_id(const sl_meta_vec_t *v, uint32_t i)
{
    return *(const uint32_t *)v->items[i];
}
/* Index of the first item with id >= id (count when none). */
uint32_t sl_meta_vec_lower(const sl_meta_vec_t *v, uint32_t id);
void *sl_meta_vec_find(const sl_meta_vec_t *v, uint32_t id);
/* The smallest id no item has. */
uint32_t sl_meta_vec_lowest_free(const sl_meta_vec_t *v);
/* Inserts item (its id must be new) at its sorted place. */
void sl_meta_vec_insert(sl_meta_vec_t *v, void *item);
/* Appends item, whose id must be above every id present (decode, creation
 * in id order). */
void sl_meta_vec_push(sl_meta_vec_t *v, void *item);
/* Removes and returns the item with id, or NULL. */
void *sl_meta_vec_remove(sl_meta_vec_t *v, uint32_t id);
void sl_meta_vec_free(sl_meta_vec_t *v);

/* --- id bitmap -------------------------------------------------------------------- */

/* Used ids of a fixed space of `bits` ids (up to 2^20 streams). A summary
 * word per 64 words marks the full ones, so the lowest free id and the next
 * used id are found without scanning the whole space. */
typedef struct sl_meta_bitmap {
    uint64_t *words;
    uint64_t *full; /* bit w set: words[w] is all ones */
    uint32_t bits;
} sl_meta_bitmap_t;

void sl_meta_bitmap_init(sl_meta_bitmap_t *b, uint32_t bits);
void sl_meta_bitmap_free(sl_meta_bitmap_t *b);
bool sl_meta_bitmap_get(const sl_meta_bitmap_t *b, uint32_t id);
void sl_meta_bitmap_set(sl_meta_bitmap_t *b, uint32_t id, bool used);
/* The lowest clear id, or bits when every id is used. */
uint32_t sl_meta_bitmap_lowest_clear(const sl_meta_bitmap_t *b);
/* The lowest set id >= from, or bits when there is none. */
uint32_t sl_meta_bitmap_next_set(const sl_meta_bitmap_t *b, uint32_t from);

#endif
