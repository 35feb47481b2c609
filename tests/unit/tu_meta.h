/* Deterministic metadata entries for the meta log tests: entry `op` of `variant` always has
 * the same fields and body, and different variants of one op differ in their body. */
#ifndef SL_TU_META_H
#define SL_TU_META_H

#include <stdint.h>
#include <string.h>

#include "meta/entry.h"

typedef struct tu_entry {
    sl_meta_entry_t e;
    uint8_t body[128];
} tu_entry_t;

static inline size_t tu_entry_body_len(uint64_t op, uint8_t variant)
{
    return (size_t)((op * 13 + variant * 5) % 97);
}

static inline void tu_entry_make(tu_entry_t *t, uint64_t op, uint8_t variant)
{
    size_t len = tu_entry_body_len(op, variant);
    for (size_t i = 0; i < len; i++)
        t->body[i] = (uint8_t)(op * 31 + i * 7 + variant * 101 + 1);
    t->e = (sl_meta_entry_t){
        .op = op,
        .timestamp = 1000000 + op * 10,
        .client = {op * 0x9E3779B97F4A7C15ull, op ^ 0xFFull},
        .request = op + 100,
        .user_id = (uint32_t)(op % 7),
        .operation = (uint8_t)(128 + op % 22),
        .request_checksum = sl_meta_checksum(sl_span(t->body, len)),
        .body = sl_span(t->body, len),
    };
}

/* Asserts every field of got equals want (body by content). */
#define tu_assert_entry_equal(got, want)                                                           \
    do {                                                                                           \
        assert_int_equal((got)->op, (want)->op);                                                   \
        assert_int_equal((got)->timestamp, (want)->timestamp);                                     \
        assert_true(sl_u128_eq((got)->client, (want)->client));                                    \
        assert_int_equal((got)->request, (want)->request);                                         \
        assert_int_equal((got)->user_id, (want)->user_id);                                         \
        assert_int_equal((got)->operation, (want)->operation);                                     \
        assert_true(sl_u128_eq((got)->request_checksum, (want)->request_checksum));                \
        assert_span_equal((got)->body, (want)->body);                                              \
    } while (0)

#endif
