/* The two TLV blocks: message user headers (encodings.md 9) and the options
 * block (encodings.md 10, options.md 1-2). Both are runs of fields
 * [kind u8][length u32][data], paired key, value, key, value.
 *
 * Validation never allocates. Once a block validates, sl_tlv_next walks it
 * without further checks failing. */
#ifndef SL_WIRE_TLV_H
#define SL_WIRE_TLV_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bytes.h"

/* Header kinds (encodings.md 8), shared by user headers and option values. */
typedef enum sl_kind {
    SL_KIND_RAW = 1,
    SL_KIND_STRING = 2,
    SL_KIND_BOOL = 3,
    SL_KIND_INT8 = 4,
    SL_KIND_INT16 = 5,
    SL_KIND_INT32 = 6,
    SL_KIND_INT64 = 7,
    SL_KIND_INT128 = 8,
    SL_KIND_UINT8 = 9,
    SL_KIND_UINT16 = 10,
    SL_KIND_UINT32 = 11,
    SL_KIND_UINT64 = 12,
    SL_KIND_UINT128 = 13,
    SL_KIND_FLOAT32 = 14,
    SL_KIND_FLOAT64 = 15,
} sl_kind_t;

/* Fixed byte width of a kind's value, or 0 for variable (Raw, String) and
 * for codes above 15. */
uint32_t sl_kind_width(uint8_t kind);
/* "string", "uint64", ...; NULL for 0 and unknown codes. */
const char *sl_kind_name(uint8_t kind);
/* The code for a kind name as sl_kind_name spells it; 0 when unknown. */
uint8_t sl_kind_parse(const char *name);

typedef struct sl_tlv_field {
    uint8_t kind;
    sl_span_t data;
} sl_tlv_field_t;

typedef struct sl_tlv_entry {
    sl_tlv_field_t key;
    sl_tlv_field_t value;
} sl_tlv_entry_t;

/* User headers block: kinds non-zero, lengths 1..255, fields tile the block,
 * an even number of fields, at most SL_USER_HEADERS_MAX bytes.
 * Returns false when any rule is broken; *pairs gets the pair count. */
bool sl_user_headers_validate(sl_span_t block, uint32_t *pairs);

/* Options block: the user-header rules plus at most 1024 pairs and 100000
 * bytes, every key String (2) and valid UTF-8, no duplicate keys. */
bool sl_options_validate(sl_span_t block, uint32_t *pairs);

/* Walks a block that validated. */
typedef struct sl_tlv_iter {
    sl_reader_t r;
} sl_tlv_iter_t;

static inline sl_tlv_iter_t sl_tlv_iter(sl_span_t block)
{
    return (sl_tlv_iter_t){sl_reader(block)};
}
/* The next pair, or false at the end. */
bool sl_tlv_next(sl_tlv_iter_t *it, sl_tlv_entry_t *out);
/* The value of key (String kind) in a validated options block. */
bool sl_options_find(sl_span_t block, const char *key, sl_tlv_field_t *out);

/* Appends one field; false when the data is 0 or more than 255 bytes. */
bool sl_tlv_put(sl_buf_t *b, uint8_t kind, sl_span_t data);
/* Appends a String key and a value field. */
bool sl_tlv_put_pair(sl_buf_t *b, const char *key, uint8_t kind, sl_span_t value);

/* In replies an options block carries a u32 length prefix (options.md 2). */
bool sl_poptions_decode(sl_reader_t *r, sl_span_t *block);
bool sl_poptions_encode(sl_buf_t *b, sl_span_t block);

#endif
