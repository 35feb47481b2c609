/* libFuzzer target: the TLV blocks (wire/tlv.h). The first byte picks the
 * decoder (user headers, options, or u32-prefixed options); the rest of the
 * input is the block. Whatever validates must walk, look up and re-encode
 * consistently. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "wire/tlv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MODE_USER_HEADERS, MODE_OPTIONS, MODE_POPTIONS, MODE_COUNT };

/* Walks a validated block: the iterator yields exactly `pairs` pairs that
 * tile the block, each field within the shared bounds, and re-encoding the
 * fields with sl_tlv_put reproduces the block byte for byte. */
static void check_walk(sl_span_t block, uint32_t pairs, bool options)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    uint32_t n = 0;
    while (sl_tlv_next(&it, &e)) {
        const sl_tlv_field_t *f[2] = {&e.key, &e.value};
        for (int i = 0; i < 2; i++) {
            sl_assert(f[i]->kind != 0);
            sl_assert(f[i]->data.len >= SL_TLV_FIELD_LEN_MIN);
            sl_assert(f[i]->data.len <= SL_TLV_FIELD_LEN_MAX);
            sl_assert(sl_tlv_put(&b, f[i]->kind, f[i]->data));
        }
        if (options) {
            sl_assert(e.key.kind == SL_KIND_STRING);
            sl_assert(sl_utf8_valid(e.key.data.ptr, e.key.data.len));
        }
        n++;
    }
    sl_assert(sl_reader_done(&it.r));
    sl_assert(n == pairs);
    sl_assert(sl_span_eq(sl_buf_span(&b), block));
    sl_buf_free(&b);
}

/* In a validated options block every key is unique, so sl_options_find
 * returns each pair's own value. Keys become C strings for the lookup: keys
 * holding a NUL byte cannot be named that way and are skipped. */
static void check_find(sl_span_t block)
{
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    while (sl_tlv_next(&it, &e)) {
        char key[SL_TLV_FIELD_LEN_MAX + 1];
        if (memchr(e.key.data.ptr, 0, e.key.data.len))
            continue;
        memcpy(key, e.key.data.ptr, e.key.data.len);
        key[e.key.data.len] = '\0';
        sl_tlv_field_t found;
        sl_assert(sl_options_find(block, key, &found));
        sl_assert(found.kind == e.value.kind);
        sl_assert(found.data.ptr == e.value.data.ptr && found.data.len == e.value.data.len);
    }
}

static void check_user_headers(sl_span_t block)
{
    uint32_t pairs = UINT32_MAX;
    if (!sl_user_headers_validate(block, &pairs))
        return;
    sl_assert(block.len <= SL_USER_HEADERS_MAX);
    /* Each field takes at least 6 bytes. */
    sl_assert((uint64_t)pairs * 12 <= block.len);
    check_walk(block, pairs, false);
}

static void check_options(sl_span_t block)
{
    uint32_t pairs = UINT32_MAX;
    if (!sl_options_validate(block, &pairs))
        return;
    sl_assert(block.len <= SL_OPTIONS_BYTES_MAX && pairs <= SL_OPTIONS_ENTRIES_MAX);
    /* The options rules include the user-header rules. */
    uint32_t as_headers = UINT32_MAX;
    sl_assert(sl_user_headers_validate(block, &as_headers) && as_headers == pairs);
    check_walk(block, pairs, true);
    check_find(block);
}

/* A run of u32-prefixed blocks; each one that decodes is a valid options
 * block borrowed from the input, and encodes back to the same bytes. */
static void check_poptions(sl_span_t in)
{
    sl_reader_t r = sl_reader(in);
    while (sl_reader_left(&r) > 0) {
        size_t start = r.pos;
        sl_span_t block;
        if (!sl_poptions_decode(&r, &block)) {
            sl_assert(!sl_reader_ok(&r));
            return;
        }
        sl_assert(block.ptr == in.ptr + start + 4 && r.pos == start + 4 + block.len);
        uint32_t pairs;
        sl_assert(sl_options_validate(block, &pairs));
        sl_buf_t b;
        sl_buf_init(&b, 0);
        sl_assert(sl_poptions_encode(&b, block));
        sl_assert(sl_span_eq(sl_buf_span(&b), sl_span(in.ptr + start, r.pos - start)));
        sl_buf_free(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    sl_span_t rest = sl_span(data + 1, size - 1);
    switch (data[0] % MODE_COUNT) {
    case MODE_USER_HEADERS:
        check_user_headers(rest);
        break;
    case MODE_OPTIONS:
        check_options(rest);
        break;
    default:
        check_poptions(rest);
        break;
    }
    return 0;
}
