/* The out-of-line parts of base/bytes.h: buffer growth, zero and UTF-8 scans. */
#include "base/bytes.h"

#include <stdlib.h>

void sl_buf_init(sl_buf_t *b, size_t max)
{
    *b = (sl_buf_t){.max = max ? max : SIZE_MAX};
}

void sl_buf_init_fixed(sl_buf_t *b, void *mem, size_t cap)
{
    *b = (sl_buf_t){.data = mem, .cap = cap, .max = cap, .fixed = true};
}

void sl_buf_free(sl_buf_t *b)
{
    if (!b->fixed)
        free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void sl_buf_reset(sl_buf_t *b)
{
    b->len = 0;
    b->failed = false;
}

bool sl_buf_reserve(sl_buf_t *b, size_t n)
{
    if (b->failed)
        return false;
    if (n > b->max - b->len) {
        b->failed = true;
        return false;
    }
    size_t need = b->len + n;
    if (need <= b->cap)
        return true;
    if (b->fixed) {
        b->failed = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max)
        cap = b->max;
    uint8_t *data = realloc(b->data, cap);
    if (!data) {
        b->failed = true;
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

uint8_t *sl_buf_extend(sl_buf_t *b, size_t n)
{
    /* A buffer that has not allocated yet can still take zero bytes; NULL + 0
     * is undefined in C, so those get a pointer to no bytes instead. */
    static uint8_t no_bytes[1];
    if (!sl_buf_reserve(b, n))
        return NULL;
    uint8_t *p = b->data ? b->data + b->len : no_bytes;
    b->len += n;
    return p;
}

bool sl_all_zero(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        if (sl_load_u64(p + i) != 0)
            return false;
    for (; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

bool sl_utf8_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII runs are the common case: skip them eight bytes at a time. */
        if (i + 8 <= n && (sl_load_u64(p + i) & 0x8080808080808080ull) == 0) {
            i += 8;
            continue;
        }
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (need > n - i - 1)
            return false;
        for (size_t k = 1; k <= need; k++) {
            uint8_t cc = p[i + k];
            if ((cc & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += need + 1;
    }
    return true;
}

bool sl_ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}
