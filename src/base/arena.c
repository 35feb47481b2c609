/* Chunked bump allocation (base/arena.h). */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sl_arena_chunk {
    sl_arena_chunk_t *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

void sl_arena_init(sl_arena_t *a, size_t chunk_size, size_t max_bytes)
{
    *a = (sl_arena_t){.chunk_size = chunk_size ? chunk_size : 4096,
                      .max_bytes = max_bytes ? max_bytes : SIZE_MAX};
}

void *sl_arena_alloc(sl_arena_t *a, size_t size, size_t align)
{
    if (align == 0 || (align & (align - 1)) != 0 || align > 16)
        return NULL;
    sl_arena_chunk_t *c = a->head;
    if (c) {
        size_t at = (c->used + align - 1) & ~(align - 1);
        if (at <= c->size && size <= c->size - at) {
            c->used = at + size;
            memset(c->data + at, 0, size);
            return c->data + at;
        }
    }
    size_t want = size > a->chunk_size ? size : a->chunk_size;
    if (want > SIZE_MAX - sizeof(*c) || want > a->max_bytes - a->used_bytes ||
        a->used_bytes > a->max_bytes)
        return NULL;
    c = malloc(sizeof(*c) + want);
    if (!c)
        return NULL;
    c->next = a->head;
    c->size = want;
    c->used = size;
    a->head = c;
    a->used_bytes += want;
    memset(c->data, 0, size);
    return c->data;
}

char *sl_arena_strndup(sl_arena_t *a, const void *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *d = sl_arena_alloc(a, n + 1, 1);
    if (d && n)
        memcpy(d, s, n);
    return d;
}

void sl_arena_reset(sl_arena_t *a)
{
    sl_arena_chunk_t *c = a->head;
    if (!c)
        return;
    /* Keep the oldest chunk (the list tail) and free the rest. */
    sl_arena_chunk_t *keep = c;
    while (keep->next)
        keep = keep->next;
    while (c != keep) {
        sl_arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    keep->used = 0;
    a->head = keep;
    a->used_bytes = keep->size;
}

void sl_arena_free(sl_arena_t *a)
{
    sl_arena_chunk_t *c = a->head;
    while (c) {
        sl_arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used_bytes = 0;
}
