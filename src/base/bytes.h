/* Byte spans, a bounds-checked little-endian reader and a growable writer.
 *
 * Every decoder in Sluice reads through sl_reader_t: each read checks the
 * length it needs against the bytes left, and running out of bytes is a
 * failure, never a zero. A failed read marks the reader failed, so a run of
 * reads can be checked once at the end (sl_reader_ok).
 *
 * sl_buf_t is the writer: it grows up to a stated maximum. Failure (allocation
 * or the maximum) is sticky too: later writes do nothing and sl_buf_ok() is
 * false. A fixed buffer (sl_buf_init_fixed) never allocates.
 */
#ifndef SL_BASE_BYTES_H
#define SL_BASE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/assert.h"

/* A borrowed run of bytes; the owner of the memory decides its lifetime. */
typedef struct sl_span {
    const uint8_t *ptr;
    size_t len;
} sl_span_t;

/* 128-bit values on the wire: low 64 bits first. */
typedef struct sl_u128 {
    uint64_t lo;
    uint64_t hi;
} sl_u128_t;

static inline sl_span_t sl_span(const void *ptr, size_t len)
{
    return (sl_span_t){(const uint8_t *)ptr, len};
}

static inline sl_span_t sl_span_str(const char *s)
{
    return sl_span(s, s ? strlen(s) : 0);
}

static inline bool sl_span_eq(sl_span_t a, sl_span_t b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static inline bool sl_u128_eq(sl_u128_t a, sl_u128_t b)
{
    return a.lo == b.lo && a.hi == b.hi;
}

static inline bool sl_u128_is_zero(sl_u128_t a)
{
    return (a.lo | a.hi) == 0;
}

/* The value of one hexadecimal digit (0-9, a-f, A-F), or -1. */
static inline int sl_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* --- little-endian loads and stores at unaligned addresses ------------- */

static inline uint16_t sl_load_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t sl_load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}
static inline uint64_t sl_load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
static inline sl_u128_t sl_load_u128(const uint8_t *p)
{
    return (sl_u128_t){sl_load_u64(p), sl_load_u64(p + 8)};
}
static inline void sl_store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void sl_store_u32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
}
static inline void sl_store_u64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}
static inline void sl_store_u128(uint8_t *p, sl_u128_t v)
{
    sl_store_u64(p, v.lo);
    sl_store_u64(p + 8, v.hi);
}

/* Compares n bytes in time independent of where they differ (secrets). */
bool sl_ct_equal(const void *a, const void *b, size_t n);

/* True when all n bytes at p are zero. */
bool sl_all_zero(const uint8_t *p, size_t n);

/* True when the n bytes at p are valid UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF). */
bool sl_utf8_valid(const uint8_t *p, size_t n);

/* --- reader ------------------------------------------------------------ */

typedef struct sl_reader {
    const uint8_t *ptr;
    size_t len;
    size_t pos;
    bool failed;
} sl_reader_t;

static inline sl_reader_t sl_reader(sl_span_t s)
{
    /* An empty span may carry a NULL pointer; point at a real byte so that
     * taking zero bytes never does arithmetic on NULL. */
    static const uint8_t none[1];
    return (sl_reader_t){s.ptr ? s.ptr : none, s.ptr ? s.len : 0, 0, false};
}

static inline size_t sl_reader_left(const sl_reader_t *r)
{
    return r->len - r->pos;
}

static inline bool sl_reader_ok(const sl_reader_t *r)
{
    return !r->failed;
}

/* True when the reader has not failed and consumed every byte. */
static inline bool sl_reader_done(const sl_reader_t *r)
{
    return !r->failed && r->pos == r->len;
}

/* Marks the reader failed (a rule of the format was broken). */
static inline void sl_reader_fail(sl_reader_t *r)
{
    r->failed = true;
}

/* Claims n bytes; NULL (and the reader failed) when fewer are left. */
static inline const uint8_t *sl_read_take(sl_reader_t *r, size_t n)
{
    if (r->failed || n > r->len - r->pos) {
        r->failed = true;
        return NULL;
    }
    const uint8_t *p = r->ptr + r->pos;
    r->pos += n;
    return p;
}

static inline bool sl_read_u8(sl_reader_t *r, uint8_t *out)
{
    const uint8_t *p = sl_read_take(r, 1);
    *out = p ? p[0] : 0;
    return p != NULL;
}
static inline bool sl_read_u16(sl_reader_t *r, uint16_t *out)
{
    const uint8_t *p = sl_read_take(r, 2);
    *out = p ? sl_load_u16(p) : 0;
    return p != NULL;
}
static inline bool sl_read_u32(sl_reader_t *r, uint32_t *out)
{
    const uint8_t *p = sl_read_take(r, 4);
    *out = p ? sl_load_u32(p) : 0;
    return p != NULL;
}
static inline bool sl_read_u64(sl_reader_t *r, uint64_t *out)
{
    const uint8_t *p = sl_read_take(r, 8);
    *out = p ? sl_load_u64(p) : 0;
    return p != NULL;
}
static inline bool sl_read_u128(sl_reader_t *r, sl_u128_t *out)
{
    const uint8_t *p = sl_read_take(r, 16);
    *out = p ? sl_load_u128(p) : (sl_u128_t){0, 0};
    return p != NULL;
}
static inline bool sl_read_f32(sl_reader_t *r, float *out)
{
    uint32_t bits;
    bool ok = sl_read_u32(r, &bits);
    memcpy(out, &bits, 4);
    return ok;
}
/* Borrows n bytes as a span of the reader's memory. */
static inline bool sl_read_span(sl_reader_t *r, size_t n, sl_span_t *out)
{
    const uint8_t *p = sl_read_take(r, n);
    *out = p ? sl_span(p, n) : sl_span(NULL, 0);
    return p != NULL;
}
/* The rest of the input, borrowed; the reader ends up consumed. */
static inline sl_span_t sl_read_rest(sl_reader_t *r)
{
    sl_span_t s = sl_span(NULL, 0);
    if (!r->failed) {
        s = sl_span(r->ptr + r->pos, r->len - r->pos);
        r->pos = r->len;
    }
    return s;
}

/* --- writer ------------------------------------------------------------ */

typedef struct sl_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    size_t max;   /* hard upper bound on len */
    bool fixed;   /* memory not owned: never grown nor freed */
    bool failed;  /* a write did not fit or an allocation failed */
} sl_buf_t;

/* A growable buffer that never holds more than max bytes (0: SIZE_MAX). */
void sl_buf_init(sl_buf_t *b, size_t max);
/* A buffer over caller memory of cap bytes; it never allocates. */
void sl_buf_init_fixed(sl_buf_t *b, void *mem, size_t cap);
void sl_buf_free(sl_buf_t *b);
/* Empties the buffer and clears the failure; keeps the memory. */
void sl_buf_reset(sl_buf_t *b);
/* Makes room for n more bytes without writing them. */
bool sl_buf_reserve(sl_buf_t *b, size_t n);
/* Appends n bytes and returns where they go (uninitialised), or NULL. */
uint8_t *sl_buf_extend(sl_buf_t *b, size_t n);

static inline bool sl_buf_ok(const sl_buf_t *b)
{
    return !b->failed;
}

static inline sl_span_t sl_buf_span(const sl_buf_t *b)
{
    return sl_span(b->data, b->len);
}

static inline void sl_put_u8(sl_buf_t *b, uint8_t v)
{
    uint8_t *p = sl_buf_extend(b, 1);
    if (p)
        p[0] = v;
}
static inline void sl_put_u16(sl_buf_t *b, uint16_t v)
{
    uint8_t *p = sl_buf_extend(b, 2);
    if (p)
        sl_store_u16(p, v);
}
static inline void sl_put_u32(sl_buf_t *b, uint32_t v)
{
    uint8_t *p = sl_buf_extend(b, 4);
    if (p)
        sl_store_u32(p, v);
}
static inline void sl_put_u64(sl_buf_t *b, uint64_t v)
{
    uint8_t *p = sl_buf_extend(b, 8);
    if (p)
        sl_store_u64(p, v);
}
static inline void sl_put_u128(sl_buf_t *b, sl_u128_t v)
{
    uint8_t *p = sl_buf_extend(b, 16);
    if (p)
        sl_store_u128(p, v);
}
static inline void sl_put_f32(sl_buf_t *b, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    sl_put_u32(b, bits);
}
static inline void sl_put_bytes(sl_buf_t *b, const void *src, size_t n)
{
    uint8_t *p = sl_buf_extend(b, n);
    if (p && n)
        memcpy(p, src, n);
}
static inline void sl_put_span(sl_buf_t *b, sl_span_t s)
{
    sl_put_bytes(b, s.ptr, s.len);
}
static inline void sl_put_zeros(sl_buf_t *b, size_t n)
{
    uint8_t *p = sl_buf_extend(b, n);
    if (p && n)
        memset(p, 0, n);
}
/* Overwrites a u32 written earlier at offset at (a length placeholder). */
static inline void sl_buf_patch_u32(sl_buf_t *b, size_t at, uint32_t v)
{
    if (!b->failed) {
        sl_assert(at + 4 <= b->len);
        sl_store_u32(b->data + at, v);
    }
}

#endif
