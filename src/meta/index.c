/* Containers of the metadata state (meta/index.h). */
#include "meta/index.h"

#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/xxh3.h"

/* --- memory ---------------------------------------------------------------- */

void *sl_meta_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    sl_assert(p != NULL);
    return p;
}

void *sl_meta_realloc(void *p, size_t n, size_t size)
{
    sl_assert(size == 0 || n <= SIZE_MAX / size);
    size_t bytes = n * size;
    void *q = realloc(p, bytes ? bytes : 1);
    sl_assert(q != NULL);
    return q;
}

sl_span_t sl_meta_span_dup(sl_span_t s)
{
    if (s.len == 0)
        return sl_span(NULL, 0);
    uint8_t *p = sl_meta_realloc(NULL, s.len, 1);
    memcpy(p, s.ptr, s.len);
    return sl_span(p, s.len);
}

void sl_meta_span_free(sl_span_t *s)
{
    /* Spans made by sl_meta_span_dup own their bytes. */
    free((void *)s->ptr);
    *s = sl_span(NULL, 0);
}

void sl_meta_span_set(sl_span_t *dst, sl_span_t src)
{
    sl_span_t copy = sl_meta_span_dup(src);
    sl_meta_span_free(dst);
    *dst = copy;
}

uint64_t sl_meta_hash(sl_span_t bytes)
{
    return sl_xxh3_64(bytes.ptr, bytes.len);
}

/* --- hash index -------------------------------------------------------------- */

static void map_place(sl_meta_map_t *map, uint64_t hash, uint32_t value)
{
    uint32_t mask = map->cap - 1;
    uint32_t pos = (uint32_t)hash & mask;
    while (map->values[pos] != SL_META_MAP_EMPTY)
        pos = (pos + 1) & mask;
    map->hashes[pos] = hash;
    map->values[pos] = value;
}

static void map_grow(sl_meta_map_t *map)
{
    sl_meta_map_t old = *map;
    uint32_t cap = old.cap ? old.cap * 2 : 8;
    sl_assert(cap > old.cap);
    map->cap = cap;
    map->hashes = sl_meta_realloc(NULL, cap, sizeof(uint64_t));
    map->values = sl_meta_realloc(NULL, cap, sizeof(uint32_t));
    memset(map->values, 0xff, (size_t)cap * sizeof(uint32_t));
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.values[i] != SL_META_MAP_EMPTY)
            map_place(map, old.hashes[i], old.values[i]);
    free(old.hashes);
    free(old.values);
}

sl_meta_map_iter_t sl_meta_map_lookup(const sl_meta_map_t *map, uint64_t hash)
{
    uint32_t pos = map->cap ? (uint32_t)hash & (map->cap - 1) : 0;
    return (sl_meta_map_iter_t){map, hash, pos, 0};
}

bool sl_meta_map_next(sl_meta_map_iter_t *it, uint32_t *value)
{
    const sl_meta_map_t *map = it->map;
    /* The load factor stays at or below 1/2, so a probe run always ends at
     * an empty slot well before it wraps around. */
    while (map->cap && it->probes < map->cap) {
        uint32_t pos = it->pos;
        it->pos = (it->pos + 1) & (map->cap - 1);
        it->probes++;
        if (map->values[pos] == SL_META_MAP_EMPTY)
            return false;
        if (map->hashes[pos] == it->hash) {
            *value = map->values[pos];
            return true;
        }
    }
    return false;
}

void sl_meta_map_insert(sl_meta_map_t *map, uint64_t hash, uint32_t value)
{
    sl_assert(value != SL_META_MAP_EMPTY);
    if ((uint64_t)(map->count + 1) * 2 > map->cap)
        map_grow(map);
    map_place(map, hash, value);
    map->count++;
}

void sl_meta_map_remove(sl_meta_map_t *map, uint64_t hash, uint32_t value)
{
    sl_assert(map->cap > 0);
    uint32_t mask = map->cap - 1;
    uint32_t pos = (uint32_t)hash & mask;
    while (!(map->values[pos] == value && map->hashes[pos] == hash)) {
        sl_assert(map->values[pos] != SL_META_MAP_EMPTY);
        pos = (pos + 1) & mask;
    }
    /* Backward-shift deletion: pull later members of the probe run into the
     * hole when their home slot allows it, so lookups never need tombstones. */
    uint32_t hole = pos;
    for (uint32_t next = (hole + 1) & mask; map->values[next] != SL_META_MAP_EMPTY;
         next = (next + 1) & mask) {
        uint32_t home = (uint32_t)map->hashes[next] & mask;
        bool movable = ((next - home) & mask) >= ((next - hole) & mask);
        if (movable) {
            map->hashes[hole] = map->hashes[next];
            map->values[hole] = map->values[next];
            hole = next;
        }
    }
    map->values[hole] = SL_META_MAP_EMPTY;
    map->count--;
}

void sl_meta_map_free(sl_meta_map_t *map)
{
    free(map->hashes);
    free(map->values);
    *map = (sl_meta_map_t){0};
}

/* --- sorted id vectors ---------------------------------------------------------- */

uint32_t sl_meta_vec_lower(const sl_meta_vec_t *v, uint32_t id)
{
    uint32_t lo = 0, hi = v->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sl_meta_vec_id(v, mid) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void *sl_meta_vec_find(const sl_meta_vec_t *v, uint32_t id)
{
    uint32_t i = sl_meta_vec_lower(v, id);
    return i < v->count && sl_meta_vec_id(v, i) == id ? v->items[i] : NULL;
}

uint32_t sl_meta_vec_lowest_free(const sl_meta_vec_t *v)
{
    /* Ids are unique and sorted, so id(i) >= i and id(i) - i never
     * decreases: the first index whose id exceeds it is the first gap. */
    uint32_t lo = 0, hi = v->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sl_meta_vec_id(v, mid) == mid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void vec_reserve(sl_meta_vec_t *v)
{
    if (v->count < v->cap)
        return;
    uint32_t cap = v->cap ? v->cap * 2 : 4;
    sl_assert(cap > v->cap);
    v->items = sl_meta_realloc(v->items, cap, sizeof(void *));
    v->cap = cap;
}

void sl_meta_vec_insert(sl_meta_vec_t *v, void *item)
{
    uint32_t id = *(const uint32_t *)item;
    uint32_t at = sl_meta_vec_lower(v, id);
    sl_assert(at == v->count || sl_meta_vec_id(v, at) != id);
    vec_reserve(v);
    memmove(&v->items[at + 1], &v->items[at], (size_t)(v->count - at) * sizeof(void *));
    v->items[at] = item;
    v->count++;
}

void sl_meta_vec_push(sl_meta_vec_t *v, void *item)
{
    sl_assert(v->count == 0 || sl_meta_vec_id(v, v->count - 1) < *(const uint32_t *)item);
    vec_reserve(v);
    v->items[v->count++] = item;
}

void *sl_meta_vec_remove(sl_meta_vec_t *v, uint32_t id)
{
    uint32_t at = sl_meta_vec_lower(v, id);
    if (at == v->count || sl_meta_vec_id(v, at) != id)
        return NULL;
    void *item = v->items[at];
    memmove(&v->items[at], &v->items[at + 1], (size_t)(v->count - at - 1) * sizeof(void *));
    v->count--;
    return item;
}

void sl_meta_vec_free(sl_meta_vec_t *v)
{
    free(v->items);
    *v = (sl_meta_vec_t){0};
}

/* --- id bitmap -------------------------------------------------------------------- */

static uint32_t words_for(uint32_t bits)
{
    return (uint32_t)(((uint64_t)bits + 63) / 64);
}

void sl_meta_bitmap_init(sl_meta_bitmap_t *b, uint32_t bits)
{
    uint32_t words = words_for(bits);
    b->bits = bits;
    b->words = sl_meta_calloc(words, sizeof(uint64_t));
    b->full = sl_meta_calloc(words_for(words), sizeof(uint64_t));
}

void sl_meta_bitmap_free(sl_meta_bitmap_t *b)
{
    free(b->words);
    free(b->full);
    *b = (sl_meta_bitmap_t){0};
}

bool sl_meta_bitmap_get(const sl_meta_bitmap_t *b, uint32_t id)
{
    return id < b->bits && (b->words[id / 64] >> (id % 64) & 1u);
}

void sl_meta_bitmap_set(sl_meta_bitmap_t *b, uint32_t id, bool used)
{
    sl_assert(id < b->bits);
    uint32_t w = id / 64;
    uint64_t bit = (uint64_t)1 << (id % 64);
    b->words[w] = used ? (b->words[w] | bit) : (b->words[w] & ~bit);
    uint64_t summary_bit = (uint64_t)1 << (w % 64);
    if (b->words[w] == UINT64_MAX)
        b->full[w / 64] |= summary_bit;
    else
        b->full[w / 64] &= ~summary_bit;
}

uint32_t sl_meta_bitmap_lowest_clear(const sl_meta_bitmap_t *b)
{
    uint32_t words = words_for(b->bits);
    for (uint32_t s = 0; s < words_for(words); s++) {
        if (b->full[s] == UINT64_MAX)
            continue;
        uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(~b->full[s]);
        if (w >= words)
            break;
        uint32_t id = w * 64 + (uint32_t)__builtin_ctzll(~b->words[w]);
        return id < b->bits ? id : b->bits;
    }
    return b->bits;
}

uint32_t sl_meta_bitmap_next_set(const sl_meta_bitmap_t *b, uint32_t from)
{
    if (from >= b->bits)
        return b->bits;
    uint32_t words = words_for(b->bits);
    uint32_t w = from / 64;
    uint64_t word = b->words[w] & (UINT64_MAX << (from % 64));
    while (word == 0) {
        if (++w >= words)
            return b->bits;
        word = b->words[w];
    }
    return w * 64 + (uint32_t)__builtin_ctzll(word);
}
