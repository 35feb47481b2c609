/* The Prepare header of a journaled metadata entry: encode, verify, decode (meta/entry.h).
 * Fields are read and written by offset in little-endian; the header seal covers bytes 16..256
 * (META.md), so it also covers checksum_body. */
#include "meta/entry.h"

#include <sluice/error.h>

#include "base/xxh3.h"

sl_u128_t sl_meta_checksum(sl_span_t bytes)
{
    return (sl_u128_t){sl_xxh3_64(bytes.ptr, bytes.len), 0};
}

static sl_u128_t header_seal(const uint8_t *h)
{
    return sl_meta_checksum(
        sl_span(h + SL_META_AT_CHECKSUM_BODY, SL_META_HEADER_SIZE - SL_META_AT_CHECKSUM_BODY));
}

sl_u128_t sl_meta_header_encode(uint8_t out[SL_META_HEADER_SIZE], const sl_meta_entry_t *e,
                                sl_u128_t parent)
{
    sl_assert(e->op >= 1);
    sl_assert(e->body.len <= SL_META_ENTRY_SIZE_MAX - SL_META_HEADER_SIZE);
    memset(out, 0, SL_META_HEADER_SIZE);
    sl_store_u128(out + SL_META_AT_CHECKSUM_BODY, sl_meta_checksum(e->body));
    sl_store_u32(out + SL_META_AT_SIZE, (uint32_t)(SL_META_HEADER_SIZE + e->body.len));
    out[SL_META_AT_COMMAND] = SL_META_PREPARE_COMMAND;
    sl_store_u128(out + SL_META_AT_CLIENT, e->client);
    sl_store_u128(out + SL_META_AT_PARENT, parent);
    sl_store_u128(out + SL_META_AT_REQUEST_CHECKSUM, e->request_checksum);
    sl_store_u64(out + SL_META_AT_OP, e->op);
    /* A single node applies each entry before building the next: all before it committed. */
    sl_store_u64(out + SL_META_AT_COMMIT, e->op - 1);
    sl_store_u64(out + SL_META_AT_TIMESTAMP, e->timestamp);
    sl_store_u64(out + SL_META_AT_REQUEST, e->request);
    out[SL_META_AT_OPERATION] = e->operation;
    sl_store_u64(out + SL_META_AT_GROUP, SL_META_GROUP);
    sl_store_u32(out + SL_META_AT_USER_ID, e->user_id);
    sl_u128_t seal = header_seal(out);
    sl_store_u128(out + SL_META_AT_CHECKSUM, seal);
    return seal;
}

/* Zero regions of a metadata Prepare: common-prefix reserved, operation padding, tail. */
static bool reserved_zero(const uint8_t *h)
{
    return sl_all_zero(h + 62, 128 - 62) &&
           sl_all_zero(h + SL_META_AT_OPERATION + 1, SL_META_AT_GROUP - SL_META_AT_OPERATION - 1) &&
           sl_all_zero(h + SL_META_AT_USER_ID + 4, SL_META_HEADER_SIZE - SL_META_AT_USER_ID - 4);
}

int sl_meta_header_decode(const uint8_t in[SL_META_HEADER_SIZE], sl_meta_header_t *out)
{
    memset(out, 0, sizeof(*out));
    out->checksum = sl_load_u128(in + SL_META_AT_CHECKSUM);
    if (!sl_u128_eq(out->checksum, header_seal(in)))
        return -SL_ERR_INVALID_STATE_ENTRY_CHECKSUM;
    out->checksum_body = sl_load_u128(in + SL_META_AT_CHECKSUM_BODY);
    out->size = sl_load_u32(in + SL_META_AT_SIZE);
    out->parent = sl_load_u128(in + SL_META_AT_PARENT);
    out->commit = sl_load_u64(in + SL_META_AT_COMMIT);
    sl_meta_entry_t *e = &out->entry;
    e->client = sl_load_u128(in + SL_META_AT_CLIENT);
    e->request_checksum = sl_load_u128(in + SL_META_AT_REQUEST_CHECKSUM);
    e->op = sl_load_u64(in + SL_META_AT_OP);
    e->timestamp = sl_load_u64(in + SL_META_AT_TIMESTAMP);
    e->request = sl_load_u64(in + SL_META_AT_REQUEST);
    e->operation = in[SL_META_AT_OPERATION];
    e->user_id = sl_load_u32(in + SL_META_AT_USER_ID);
    bool fields_ok = in[SL_META_AT_COMMAND] == SL_META_PREPARE_COMMAND &&
                     sl_load_u32(in + SL_META_AT_RELEASE) == 0 &&
                     out->size >= SL_META_HEADER_SIZE && out->size <= SL_META_ENTRY_SIZE_MAX &&
                     sl_load_u64(in + SL_META_AT_GROUP) == SL_META_GROUP && e->op >= 1 &&
                     e->op < UINT64_MAX && out->commit < e->op && reserved_zero(in);
    if (!fields_ok)
        return -SL_ERR_STATE_FILE_CORRUPTED;
    e->body = sl_span(NULL, out->size - SL_META_HEADER_SIZE);
    return 0;
}

bool sl_meta_body_verify(const sl_meta_header_t *h, sl_span_t body)
{
    return body.len == h->size - SL_META_HEADER_SIZE &&
           sl_u128_eq(sl_meta_checksum(body), h->checksum_body);
}
