/* Shared body primitives (wire/prim.h). */
#include "wire/prim.h"

#include "base/limits.h"
#include "base/xxh3.h"

static bool read_utf8(sl_reader_t *r, size_t n, sl_span_t *out)
{
    if (!sl_read_span(r, n, out))
        return false;
    if (!sl_utf8_valid(out->ptr, out->len)) {
        r->failed = true;
        return false;
    }
    return true;
}

bool sl_name_decode(sl_reader_t *r, sl_span_t *out)
{
    uint8_t len;
    if (!sl_read_u8(r, &len))
        return false;
    if (len < SL_NAME_LEN_MIN) {
        r->failed = true;
        return false;
    }
    return read_utf8(r, len, out);
}

bool sl_name_encode(sl_buf_t *b, sl_span_t name)
{
    if (name.len < SL_NAME_LEN_MIN || name.len > SL_NAME_LEN_MAX)
        return false;
    sl_put_u8(b, (uint8_t)name.len);
    sl_put_span(b, name);
    return sl_buf_ok(b);
}

bool sl_str8_decode(sl_reader_t *r, sl_span_t *out)
{
    uint8_t len;
    if (!sl_read_u8(r, &len))
        return false;
    return read_utf8(r, len, out);
}

bool sl_str8_encode(sl_buf_t *b, sl_span_t s)
{
    if (s.len > 255)
        return false;
    sl_put_u8(b, (uint8_t)s.len);
    sl_put_span(b, s);
    return sl_buf_ok(b);
}

bool sl_str32_decode(sl_reader_t *r, sl_span_t *out)
{
    uint32_t len;
    if (!sl_read_u32(r, &len))
        return false;
    return read_utf8(r, len, out);
}

bool sl_str32_encode(sl_buf_t *b, sl_span_t s)
{
    if (s.len > UINT32_MAX)
        return false;
    sl_put_u32(b, (uint32_t)s.len);
    sl_put_span(b, s);
    return sl_buf_ok(b);
}

bool sl_ident_eq(const sl_ident_t *a, const sl_ident_t *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == SL_IDENT_NUMERIC)
        return a->number == b->number;
    return sl_span_eq(a->name, b->name);
}

bool sl_ident_decode(sl_reader_t *r, sl_ident_t *out)
{
    uint8_t kind, len;
    *out = (sl_ident_t){0};
    if (!sl_read_u8(r, &kind) || !sl_read_u8(r, &len))
        return false;
    out->kind = kind;
    if (kind == SL_IDENT_NUMERIC && len == 4)
        return sl_read_u32(r, &out->number);
    if (kind == SL_IDENT_STRING && len >= SL_NAME_LEN_MIN)
        return read_utf8(r, len, &out->name);
    r->failed = true;
    return false;
}

bool sl_ident_encode(sl_buf_t *b, const sl_ident_t *id)
{
    if (id->kind == SL_IDENT_NUMERIC) {
        sl_put_u8(b, SL_IDENT_NUMERIC);
        sl_put_u8(b, 4);
        sl_put_u32(b, id->number);
        return sl_buf_ok(b);
    }
    if (id->kind != SL_IDENT_STRING)
        return false;
    sl_put_u8(b, SL_IDENT_STRING);
    return sl_name_encode(b, id->name);
}

bool sl_consumer_decode(sl_reader_t *r, sl_consumer_t *out)
{
    *out = (sl_consumer_t){0};
    if (!sl_read_u8(r, &out->kind))
        return false;
    if (out->kind != SL_CONSUMER_SINGLE && out->kind != SL_CONSUMER_GROUP) {
        r->failed = true;
        return false;
    }
    return sl_ident_decode(r, &out->id);
}

bool sl_consumer_encode(sl_buf_t *b, const sl_consumer_t *c)
{
    if (c->kind != SL_CONSUMER_SINGLE && c->kind != SL_CONSUMER_GROUP)
        return false;
    sl_put_u8(b, c->kind);
    return sl_ident_encode(b, &c->id);
}

bool sl_opt_partition_decode(sl_reader_t *r, sl_opt_partition_t *out)
{
    uint8_t flag;
    uint32_t id;
    bool ok = sl_read_u8(r, &flag) && sl_read_u32(r, &id);
    *out = (sl_opt_partition_t){.present = ok && flag == 1, .id = ok && flag == 1 ? id : 0};
    return ok;
}

bool sl_opt_partition_encode(sl_buf_t *b, sl_opt_partition_t p)
{
    sl_put_u8(b, p.present ? 1 : 0);
    sl_put_u32(b, p.present ? p.id : 0);
    return sl_buf_ok(b);
}

bool sl_partitioning_decode(sl_reader_t *r, sl_partitioning_t *out)
{
    uint8_t kind, len;
    *out = (sl_partitioning_t){0};
    if (!sl_read_u8(r, &kind) || !sl_read_u8(r, &len))
        return false;
    out->kind = kind;
    switch (kind) {
    case SL_PARTITIONING_BALANCED:
        if (len == 0)
            return true;
        break;
    case SL_PARTITIONING_PARTITION_ID:
        if (len == 4)
            return sl_read_u32(r, &out->partition_id);
        break;
    case SL_PARTITIONING_MESSAGES_KEY:
        if (len >= 1)
            return sl_read_span(r, len, &out->key);
        break;
    default:
        break;
    }
    r->failed = true;
    return false;
}

bool sl_partitioning_encode(sl_buf_t *b, const sl_partitioning_t *p)
{
    switch (p->kind) {
    case SL_PARTITIONING_BALANCED:
        sl_put_u8(b, SL_PARTITIONING_BALANCED);
        sl_put_u8(b, 0);
        break;
    case SL_PARTITIONING_PARTITION_ID:
        sl_put_u8(b, SL_PARTITIONING_PARTITION_ID);
        sl_put_u8(b, 4);
        sl_put_u32(b, p->partition_id);
        break;
    case SL_PARTITIONING_MESSAGES_KEY:
        if (p->key.len < 1 || p->key.len > SL_PARTITION_KEY_MAX)
            return false;
        sl_put_u8(b, SL_PARTITIONING_MESSAGES_KEY);
        sl_put_u8(b, (uint8_t)p->key.len);
        sl_put_span(b, p->key);
        break;
    default:
        return false;
    }
    return sl_buf_ok(b);
}

uint32_t sl_partitioning_key_index(sl_span_t key, uint32_t partitions_count)
{
    sl_assert(partitions_count > 0);
    return sl_xxh32(key.ptr, key.len, 0) % partitions_count;
}

bool sl_strategy_decode(sl_reader_t *r, sl_strategy_t *out)
{
    *out = (sl_strategy_t){0};
    if (!sl_read_u8(r, &out->kind) || !sl_read_u64(r, &out->value))
        return false;
    if (out->kind < SL_STRATEGY_OFFSET || out->kind > SL_STRATEGY_NEXT) {
        r->failed = true;
        return false;
    }
    return true;
}

bool sl_strategy_encode(sl_buf_t *b, sl_strategy_t s)
{
    if (s.kind < SL_STRATEGY_OFFSET || s.kind > SL_STRATEGY_NEXT)
        return false;
    sl_put_u8(b, s.kind);
    sl_put_u64(b, s.value);
    return sl_buf_ok(b);
}

bool sl_ack_decode(sl_reader_t *r, uint8_t *out)
{
    if (!sl_read_u8(r, out))
        return false;
    if (*out > SL_ACK_QUORUM) {
        r->failed = true;
        return false;
    }
    return true;
}

uint32_t sl_consumer_key(const sl_ident_t *id)
{
    if (id->kind == SL_IDENT_NUMERIC)
        return id->number;
    return sl_xxh32(id->name.ptr, id->name.len, 0);
}
