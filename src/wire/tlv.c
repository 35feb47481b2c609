/* User-header and options TLV blocks (wire/tlv.h). */
#include "wire/tlv.h"

#include <stdlib.h>
#include <string.h>

#include "base/limits.h"

static const struct {
    uint32_t width;
    const char *name;
} kinds[] = {
    [SL_KIND_RAW] = {0, "raw"},          [SL_KIND_STRING] = {0, "string"},
    [SL_KIND_BOOL] = {1, "bool"},        [SL_KIND_INT8] = {1, "int8"},
    [SL_KIND_INT16] = {2, "int16"},      [SL_KIND_INT32] = {4, "int32"},
    [SL_KIND_INT64] = {8, "int64"},      [SL_KIND_INT128] = {16, "int128"},
    [SL_KIND_UINT8] = {1, "uint8"},      [SL_KIND_UINT16] = {2, "uint16"},
    [SL_KIND_UINT32] = {4, "uint32"},    [SL_KIND_UINT64] = {8, "uint64"},
    [SL_KIND_UINT128] = {16, "uint128"}, [SL_KIND_FLOAT32] = {4, "float32"},
    [SL_KIND_FLOAT64] = {8, "float64"},
};

uint32_t sl_kind_width(uint8_t kind)
{
    return kind < SL_ARRAY_LEN(kinds) ? kinds[kind].width : 0;
}

const char *sl_kind_name(uint8_t kind)
{
    return kind < SL_ARRAY_LEN(kinds) ? kinds[kind].name : NULL;
}

uint8_t sl_kind_parse(const char *name)
{
    for (uint8_t k = 1; k < SL_ARRAY_LEN(kinds); k++)
        if (strcmp(kinds[k].name, name) == 0)
            return k;
    return 0;
}

/* Reads one field under the shared structural rules. */
static bool read_field(sl_reader_t *r, sl_tlv_field_t *f)
{
    uint32_t len;
    if (!sl_read_u8(r, &f->kind) || !sl_read_u32(r, &len))
        return false;
    if (f->kind == 0 || len < SL_TLV_FIELD_LEN_MIN || len > SL_TLV_FIELD_LEN_MAX) {
        r->failed = true;
        return false;
    }
    return sl_read_span(r, len, &f->data);
}

/* Walks the block: fields tile it and pair up. At most max_pairs pairs. */
static bool walk_pairs(sl_span_t block, uint32_t max_pairs, uint32_t *pairs)
{
    sl_reader_t r = sl_reader(block);
    uint32_t n = 0;
    while (sl_reader_left(&r) > 0) {
        sl_tlv_field_t key, value;
        if (n == max_pairs || !read_field(&r, &key) || !read_field(&r, &value))
            return false;
        n++;
    }
    *pairs = n;
    return true;
}

bool sl_user_headers_validate(sl_span_t block, uint32_t *pairs)
{
    if (block.len > SL_USER_HEADERS_MAX)
        return false;
    /* Every field takes at least 6 bytes, so a pair at least 12. */
    return walk_pairs(block, UINT32_MAX, pairs);
}

static int compare_keys(const void *a, const void *b)
{
    const sl_span_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->ptr, y->ptr, n);
    if (c != 0)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

bool sl_options_validate(sl_span_t block, uint32_t *pairs)
{
    if (block.len > SL_OPTIONS_BYTES_MAX)
        return false;
    uint32_t n;
    if (!walk_pairs(block, SL_OPTIONS_ENTRIES_MAX, &n))
        return false;
    /* Keys: String kind, UTF-8, no duplicates (sorted copy, adjacent compare). */
    sl_span_t keys[SL_OPTIONS_ENTRIES_MAX];
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    uint32_t k = 0;
    while (sl_tlv_next(&it, &e)) {
        if (e.key.kind != SL_KIND_STRING || !sl_utf8_valid(e.key.data.ptr, e.key.data.len))
            return false;
        keys[k++] = e.key.data;
    }
    sl_assert(k == n);
    qsort(keys, k, sizeof(keys[0]), compare_keys);
    for (uint32_t i = 1; i < k; i++)
        if (sl_span_eq(keys[i - 1], keys[i]))
            return false;
    *pairs = n;
    return true;
}

bool sl_tlv_next(sl_tlv_iter_t *it, sl_tlv_entry_t *out)
{
    if (sl_reader_left(&it->r) == 0)
        return false;
    return read_field(&it->r, &out->key) && read_field(&it->r, &out->value);
}

bool sl_options_find(sl_span_t block, const char *key, sl_tlv_field_t *out)
{
    sl_span_t want = sl_span_str(key);
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    while (sl_tlv_next(&it, &e)) {
        if (e.key.kind == SL_KIND_STRING && sl_span_eq(e.key.data, want)) {
            *out = e.value;
            return true;
        }
    }
    return false;
}

bool sl_tlv_put(sl_buf_t *b, uint8_t kind, sl_span_t data)
{
    if (kind == 0 || data.len < SL_TLV_FIELD_LEN_MIN || data.len > SL_TLV_FIELD_LEN_MAX)
        return false;
    sl_put_u8(b, kind);
    sl_put_u32(b, (uint32_t)data.len);
    sl_put_span(b, data);
    return sl_buf_ok(b);
}

bool sl_tlv_put_pair(sl_buf_t *b, const char *key, uint8_t kind, sl_span_t value)
{
    return sl_tlv_put(b, SL_KIND_STRING, sl_span_str(key)) && sl_tlv_put(b, kind, value);
}

bool sl_poptions_decode(sl_reader_t *r, sl_span_t *block)
{
    uint32_t len, pairs;
    if (!sl_read_u32(r, &len) || !sl_read_span(r, len, block))
        return false;
    if (!sl_options_validate(*block, &pairs)) {
        r->failed = true;
        return false;
    }
    return true;
}

bool sl_poptions_encode(sl_buf_t *b, sl_span_t block)
{
    if (block.len > SL_OPTIONS_BYTES_MAX)
        return false;
    sl_put_u32(b, (uint32_t)block.len);
    sl_put_span(b, block);
    return sl_buf_ok(b);
}
