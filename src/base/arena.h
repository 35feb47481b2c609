/* A bump allocator: many small allocations, freed all at once.
 *
 * Memory handed out stays valid until sl_arena_reset or sl_arena_free. The
 * arena grows in chunks (at least chunk_size bytes each) up to max_bytes in
 * total; past that, allocation returns NULL. */
#ifndef SL_BASE_ARENA_H
#define SL_BASE_ARENA_H

#include <stddef.h>

typedef struct sl_arena_chunk sl_arena_chunk_t;

typedef struct sl_arena {
    sl_arena_chunk_t *head;
    size_t chunk_size;
    size_t max_bytes;
    size_t used_bytes; /* bytes of chunk memory held */
} sl_arena_t;

void sl_arena_init(sl_arena_t *a, size_t chunk_size, size_t max_bytes);
/* Zeroed memory of size bytes aligned to align (a power of two), or NULL. */
void *sl_arena_alloc(sl_arena_t *a, size_t size, size_t align);
/* A NUL-terminated copy of n bytes, or NULL. */
char *sl_arena_strndup(sl_arena_t *a, const void *s, size_t n);
/* Forgets every allocation; keeps the first chunk for reuse. */
void sl_arena_reset(sl_arena_t *a);
void sl_arena_free(sl_arena_t *a);

#define SL_ARENA_NEW(a, type, n) ((type *)sl_arena_alloc((a), sizeof(type) * (n), _Alignof(type)))

#endif
