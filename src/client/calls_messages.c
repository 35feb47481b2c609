/* Message calls of the public API (commands.md 6, 7): the batch builder that
 * sends (SendMessages), polls with checksum verification (PollMessages),
 * consumer offsets, FlushUnsavedBuffer, and the typed user-header codec.
 *
 * A batch is built in place: the metadata section and then each frame go
 * straight into c->tx behind the reserved request header, so a payload is
 * copied exactly once, into the request. Polled messages borrow c->rx. */
#include "client/client_internal.h"

#include <string.h>

#include "base/clock.h"
#include "wire/command.h"
#include "wire/tlv.h"

/* --- user headers: typed values to TLV fields (encodings.md 8, 9) ------------------ */

static bool fits_signed(int64_t v, uint32_t width)
{
    if (width >= 8)
        return true;
    int64_t bound = (int64_t)1 << (width * 8 - 1);
    return v >= -bound && v < bound;
}

static bool fits_unsigned(uint64_t v, uint32_t width)
{
    return width >= 8 || v < ((uint64_t)1 << (width * 8));
}

/* The little-endian form of a fixed-width value in out (16 bytes of room);
 * false when the number does not fit its kind. */
static bool fixed_encode(const sl_header_value_t *v, uint32_t width, uint8_t out[16])
{
    uint32_t bits32;
    uint64_t bits64;
    switch (v->kind) {
    case SL_KIND_BOOL:
        out[0] = v->b ? 1 : 0;
        return true;
    case SL_KIND_INT8:
    case SL_KIND_INT16:
    case SL_KIND_INT32:
    case SL_KIND_INT64:
        /* Little-endian: the low `width` bytes of the 64-bit form. */
        sl_store_u64(out, (uint64_t)v->i);
        return fits_signed(v->i, width);
    case SL_KIND_UINT8:
    case SL_KIND_UINT16:
    case SL_KIND_UINT32:
    case SL_KIND_UINT64:
        sl_store_u64(out, v->u);
        return fits_unsigned(v->u, width);
    case SL_KIND_INT128:
    case SL_KIND_UINT128:
        sl_store_u64(out, v->x128.lo);
        sl_store_u64(out + 8, v->x128.hi);
        return true;
    case SL_KIND_FLOAT32:
        memcpy(&bits32, &v->f32, sizeof(bits32));
        sl_store_u32(out, bits32);
        return true;
    case SL_KIND_FLOAT64:
        memcpy(&bits64, &v->f64, sizeof(bits64));
        sl_store_u64(out, bits64);
        return true;
    default:
        return false;
    }
}

/* Appends one typed field to b; bad_content is the code for a String that is
 * not UTF-8 or a number out of range (the key's or the value's). */
static int field_encode(sl_buf_t *b, const sl_header_value_t *v, int bad_content)
{
    if (v->kind == 0 || v->kind > SL_HEADER_KIND_KNOWN_MAX)
        return -SL_ERR_INVALID_HEADER_KIND;
    uint32_t width = sl_kind_width(v->kind);
    uint8_t fixed[16];
    sl_span_t data;
    if (width == 0) {
        if (v->len < SL_TLV_FIELD_LEN_MIN || v->len > SL_TLV_FIELD_LEN_MAX || v->bytes == NULL)
            return -SL_ERR_INVALID_KEY_VALUE_LENGTH;
        data = sl_span(v->bytes, v->len);
        if (v->kind == SL_KIND_STRING && !sl_utf8_valid(data.ptr, data.len))
            return bad_content;
    } else {
        if (!fixed_encode(v, width, fixed))
            return bad_content;
        data = sl_span(fixed, width);
    }
    /* 5 bytes of kind and length precede the data. */
    if (b->len + 5 + data.len > SL_USER_HEADERS_MAX)
        return -SL_ERR_TOO_BIG_USER_HEADERS;
    return sl_tlv_put(b, v->kind, data) ? 0 : -SL_ERR_ERROR;
}

int sl_client_headers_encode(sl_buf_t *b, const sl_header_t *headers, uint32_t count)
{
    sl_buf_reset(b);
    if (count > 0 && headers == NULL)
        return -SL_ERR_INVALID_COMMAND;
    for (uint32_t i = 0; i < count; i++) {
        int rc = field_encode(b, &headers[i].key, -SL_ERR_INVALID_HEADER_KEY);
        if (rc == 0)
            rc = field_encode(b, &headers[i].value, -SL_ERR_INVALID_HEADER_VALUE);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The user-headers block of a message: the raw block as given (validated),
 * or the typed entries encoded into c->scratch. */
static int message_headers(sl_client_t *c, const sl_send_message_t *m, sl_span_t *out)
{
    *out = sl_span(NULL, 0);
    if (m->headers_count > 0 && m->headers_raw_len > 0)
        return -SL_ERR_INVALID_COMMAND;
    if (m->headers_raw_len > 0) {
        if (m->headers_raw == NULL)
            return -SL_ERR_INVALID_COMMAND;
        if (m->headers_raw_len > SL_USER_HEADERS_MAX)
            return -SL_ERR_TOO_BIG_USER_HEADERS;
        sl_span_t raw = sl_span(m->headers_raw, m->headers_raw_len);
        uint32_t pairs;
        if (!sl_user_headers_validate(raw, &pairs))
            return -SL_ERR_INVALID_COMMAND;
        *out = raw;
        return 0;
    }
    if (m->headers_count == 0)
        return 0;
    int rc = sl_client_headers_encode(&c->scratch, m->headers, m->headers_count);
    if (rc == 0)
        *out = sl_buf_span(&c->scratch);
    return rc;
}

/* Bytes a typed value takes in a block (what field_encode writes when the
 * value is valid). */
static size_t field_size(const sl_header_value_t *v)
{
    uint32_t width = sl_kind_width(v->kind);
    size_t data = width ? width : (v->len > SL_TLV_FIELD_LEN_MAX ? SL_TLV_FIELD_LEN_MAX : v->len);
    return 5 + data;
}

/* Request bytes a message adds to a batch; a message the add will refuse
 * for its sizes counts as its frame header only, so that a bogus length
 * does not make a huge reservation. */
static size_t message_size(const sl_send_message_t *m)
{
    if (m->payload_len > SL_PAYLOAD_MAX || m->headers_raw_len > SL_USER_HEADERS_MAX)
        return SL_FRAME_HEADER_SIZE;
    size_t n = SL_FRAME_HEADER_SIZE + m->payload_len + m->headers_raw_len;
    for (uint32_t i = 0; m->headers != NULL && i < m->headers_count; i++)
        n += field_size(&m->headers[i].key) + field_size(&m->headers[i].value);
    return n;
}

/* --- user headers: TLV fields to typed values --------------------------------------- */

static void field_decode(const sl_tlv_field_t *f, sl_header_value_t *out)
{
    *out = (sl_header_value_t){.kind = f->kind, .bytes = f->data.ptr, .len = (uint32_t)f->data.len};
    const uint8_t *p = f->data.ptr;
    uint32_t bits32;
    uint64_t bits64;
    switch (f->kind) {
    case SL_KIND_BOOL:
        out->b = p[0] != 0;
        break;
    case SL_KIND_INT8:
        out->i = (int8_t)p[0];
        break;
    case SL_KIND_INT16:
        out->i = (int16_t)sl_load_u16(p);
        break;
    case SL_KIND_INT32:
        out->i = (int32_t)sl_load_u32(p);
        break;
    case SL_KIND_INT64:
        out->i = (int64_t)sl_load_u64(p);
        break;
    case SL_KIND_UINT8:
        out->u = p[0];
        break;
    case SL_KIND_UINT16:
        out->u = sl_load_u16(p);
        break;
    case SL_KIND_UINT32:
        out->u = sl_load_u32(p);
        break;
    case SL_KIND_UINT64:
        out->u = sl_load_u64(p);
        break;
    case SL_KIND_INT128:
    case SL_KIND_UINT128:
        out->x128 = (sl_msg_id_t){sl_load_u64(p), sl_load_u64(p + 8)};
        break;
    case SL_KIND_FLOAT32:
        bits32 = sl_load_u32(p);
        memcpy(&out->f32, &bits32, sizeof(bits32));
        break;
    case SL_KIND_FLOAT64:
        bits64 = sl_load_u64(p);
        memcpy(&out->f64, &bits64, sizeof(bits64));
        break;
    default:
        break; /* Raw, String, and kinds above 15: bytes only */
    }
}

static bool width_ok(const sl_tlv_field_t *f)
{
    uint32_t width = sl_kind_width(f->kind);
    return width == 0 || f->data.len == width;
}

int sl_header_iter_init(sl_header_iter_t *it, const void *block, size_t len)
{
    *it = (sl_header_iter_t){NULL, 0};
    if (len == 0)
        return 0;
    if (block == NULL)
        return -SL_ERR_INVALID_FORMAT;
    sl_span_t s = sl_span(block, len);
    uint32_t pairs;
    if (!sl_user_headers_validate(s, &pairs))
        return -SL_ERR_INVALID_FORMAT;
    /* Widths are checked up front, so that sl_header_next cannot fail. */
    sl_tlv_iter_t ti = sl_tlv_iter(s);
    sl_tlv_entry_t e;
    while (sl_tlv_next(&ti, &e))
        if (!width_ok(&e.key) || !width_ok(&e.value))
            return -SL_ERR_INVALID_FORMAT;
    *it = (sl_header_iter_t){block, len};
    return 0;
}

bool sl_header_next(sl_header_iter_t *it, sl_header_t *out)
{
    if (it->left == 0)
        return false;
    sl_tlv_iter_t ti = sl_tlv_iter(sl_span(it->pos, it->left));
    sl_tlv_entry_t e;
    if (!sl_tlv_next(&ti, &e)) {
        it->left = 0;
        return false;
    }
    field_decode(&e.key, &out->key);
    field_decode(&e.value, &out->value);
    it->pos += ti.r.pos;
    it->left -= ti.r.pos;
    return true;
}

/* --- sending ---------------------------------------------------------------------- */

/* A random UUIDv4 as a 128-bit number (version nibble 4 in bits 76..79,
 * variant 0b10 in bits 62..63) from 16 bytes of the client's keystream. */
static sl_u128_t uuid_from(const uint8_t bytes[16])
{
    sl_u128_t id = sl_load_u128(bytes);
    id.hi = (id.hi & ~0xF000ull) | 0x4000ull;
    id.lo = (id.lo & ~(3ull << 62)) | (2ull << 62);
    return id;
}

/* Keystream bytes for the ids of up to IDS_AT_ONCE messages of a send call,
 * drawn with one call (one id per call cost about 75 instructions of
 * bookkeeping each, a quarter of the id's price). */
enum { IDS_AT_ONCE = 64 };

typedef struct id_stock {
    uint8_t bytes[16 * IDS_AT_ONCE];
    uint32_t left, next;
} id_stock_t;

static bool needs_id(const sl_send_message_t *m)
{
    return m != NULL && m->id.lo == 0 && m->id.hi == 0;
}

/* The next fresh id for messages[i] (which needs one), drawing for it and
 * the next messages that need one when the stock is empty. */
static int take_id(sl_client_t *c, id_stock_t *s, const sl_send_message_t *messages, uint32_t i,
                   uint32_t count, const uint8_t **out)
{
    if (s->left == 0) {
        uint32_t n = 0;
        for (uint32_t k = i; k < count && n < IDS_AT_ONCE; k++)
            n += needs_id(&messages[k]);
        if (sl_client_rng_bytes(&c->rng, s->bytes, 16 * (size_t)n) != 0)
            return -SL_ERR_ERROR;
        s->left = n;
        s->next = 0;
    }
    *out = s->bytes + 16 * s->next++;
    s->left--;
    return 0;
}

static bool wire_partitioning(sl_send_partitioning_t in, sl_partitioning_t *out)
{
    *out = (sl_partitioning_t){.kind = in.kind};
    switch (in.kind) {
    case SL_SEND_BALANCED:
        return true;
    case SL_SEND_PARTITION_ID:
        out->partition_id = in.partition_id;
        return true;
    case SL_SEND_MESSAGES_KEY:
        /* The encoder refuses lengths outside 1..255. */
        out->key = sl_span(in.key, in.key_len);
        return in.key != NULL || in.key_len == 0;
    default:
        return false;
    }
}

int sl_client_send_begin(sl_client_t *c, sl_id_t stream, sl_id_t topic,
                         sl_send_partitioning_t partitioning)
{
    c->batch.open = false; /* a new begin drops the batch before it, always */
    sl_send_messages_request_t req = {0};
    if (!sl_client_ident(stream, &req.stream_id) || !sl_client_ident(topic, &req.topic_id) ||
        !wire_partitioning(partitioning, &req.partitioning))
        return -SL_ERR_INVALID_COMMAND;
    /* With reconnects on, commit dials again; the batch can be built now. */
    if (c->fd < 0 && !sl_client_reconnect_on(c))
        return -SL_ERR_NOT_CONNECTED;
    sl_client_request_begin(c); /* results of the previous call stay alive */
    /* messages_count is the section's last field; commit patches it. */
    int rc = sl_send_messages_metadata_encode(&c->tx, &req);
    if (rc != 0)
        return rc;
    c->batch.count_at = c->tx.len - 4;
    sl_batch_begin(&c->batch.bb, &c->tx);
    if (c->batch.bb.error != 0)
        return -SL_ERR_ERROR;
    c->batch.open = true;
    return 0;
}

int sl_client_send_reserve(sl_client_t *c, size_t bytes)
{
    if (!c->batch.open)
        return -SL_ERR_INVALID_COMMAND;
    if (bytes > c->frame_max - c->tx.len)
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    return sl_buf_reserve(&c->tx, bytes) ? 0 : -SL_ERR_ERROR;
}

/* What sl_batch_add would refuse, checked first so that a refusal leaves
 * the builder usable (its errors are sticky). */
static int add_precheck(const sl_client_t *c, const sl_send_message_t *m, uint64_t ts,
                        size_t headers_len)
{
    const sl_batch_builder_t *bb = &c->batch.bb;
    if (bb->count == UINT32_MAX)
        return -SL_ERR_TOO_MANY_MESSAGES;
    uint64_t lo = ts < bb->timestamp_min ? ts : bb->timestamp_min;
    uint64_t hi = ts > bb->timestamp_max ? ts : bb->timestamp_max;
    if (hi - lo > UINT32_MAX)
        return -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA;
    size_t frame = SL_FRAME_HEADER_SIZE + m->payload_len + headers_len;
    if (c->tx.len > c->frame_max || frame > c->frame_max - c->tx.len)
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    return 0;
}

/* sl_client_send_add with the time that stands for "now" (0: read the
 * clock when a message needs it) and, for a message without an id, 16
 * keystream bytes for it (NULL: drawn here). */
static int add_message(sl_client_t *c, const sl_send_message_t *m, uint64_t now_us,
                       const uint8_t *fresh_id)
{
    if (!c->batch.open || m == NULL || (m->payload == NULL && m->payload_len > 0))
        return -SL_ERR_INVALID_COMMAND;
    if (c->batch.bb.error != 0)
        return c->batch.bb.error;
    if (m->payload_len > SL_PAYLOAD_MAX)
        return -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD;
    sl_span_t headers;
    int rc = message_headers(c, m, &headers);
    if (rc != 0)
        return rc;
    uint64_t ts = m->origin_timestamp_us ? m->origin_timestamp_us
                  : now_us != 0          ? now_us
                                         : sl_clock_realtime_us();
    rc = add_precheck(c, m, ts, headers.len);
    if (rc != 0)
        return rc;
    sl_u128_t id = {m->id.lo, m->id.hi};
    if (sl_u128_is_zero(id)) {
        uint8_t bytes[16];
        if (fresh_id == NULL && sl_client_rng_bytes(&c->rng, bytes, sizeof(bytes)) != 0)
            return -SL_ERR_ERROR;
        id = uuid_from(fresh_id ? fresh_id : bytes);
    }
    rc = sl_batch_add(&c->batch.bb, id, ts, sl_span(m->payload, m->payload_len), headers);
    /* Everything else was checked above: only the allocation can fail. */
    if (rc == -SL_ERR_COMMAND_LENGTH_ERROR)
        rc = c->batch.bb.error = -SL_ERR_ERROR;
    return rc;
}

int sl_client_send_add(sl_client_t *c, const sl_send_message_t *m)
{
    return add_message(c, m, 0, NULL);
}

void sl_client_send_pending(const sl_client_t *c, uint32_t *count, size_t *bytes)
{
    *count = c->batch.open ? c->batch.bb.count : 0;
    *bytes = c->batch.open ? c->tx.len : 0;
}

void sl_client_send_abandon(sl_client_t *c)
{
    c->batch.open = false;
}

/* Closes the open batch and completes its record in tx: counts,
 * timestamps, checksums. *count gets its messages. */
static int batch_seal(sl_client_t *c, uint32_t *count)
{
    if (!c->batch.open)
        return -SL_ERR_INVALID_COMMAND;
    c->batch.open = false;
    sl_span_t record;
    int rc = sl_batch_finish(&c->batch.bb, &record);
    if (rc != 0)
        return rc;
    *count = c->batch.bb.count;
    sl_buf_patch_u32(&c->tx, c->batch.count_at, *count);
    return 0;
}

/* The public result of a SendMessages reply payload. */
static int send_result(sl_client_t *c, sl_span_t payload, uint32_t count, sl_send_result_t *out)
{
    sl_send_messages_reply_t w;
    int rc = sl_send_messages_reply_decode(payload, &c->arena, &w);
    if (rc != 0 || out == NULL)
        return rc;
    *out = (sl_send_result_t){.confirmed = w.count > 0, .messages_count = count};
    if (w.count > 0) {
        /* The reference confirms one batch with one entry; a server sending
         * more is read by its first. */
        out->stream_id = w.items[0].stream_id;
        out->topic_id = w.items[0].topic_id;
        out->partition_id = w.items[0].partition_id;
        out->base_offset = w.items[0].base_offset;
    }
    return 0;
}

int sl_client_send_commit(sl_client_t *c, sl_send_result_t *out)
{
    uint32_t count = 0;
    int rc = batch_seal(c, &count);
    if (rc != 0)
        return rc;
    sl_client_results_release(c);
    sl_span_t payload;
    rc = sl_client_run(c, 0, SL_OP_SEND_MESSAGES, SL_CMD_SEND_MESSAGES, &payload);
    return rc != 0 ? rc : send_result(c, payload, count, out);
}

/* begin and an add per message into tx, with the request space reserved
 * up front; on an add error the batch is abandoned. */
static int batch_build(sl_client_t *c, sl_id_t stream, sl_id_t topic,
                       sl_send_partitioning_t partitioning, const sl_send_message_t *messages,
                       uint32_t count)
{
    if (count == 0)
        return -SL_ERR_INVALID_MESSAGES_COUNT;
    if (messages == NULL)
        return -SL_ERR_INVALID_COMMAND;
    int rc = sl_client_send_begin(c, stream, topic, partitioning);
    if (rc != 0)
        return rc;
    size_t total = 0;
    for (uint32_t i = 0; i < count && total <= c->frame_max; i++)
        total += message_size(&messages[i]);
    /* One allocation up front, so no add moves the buffer. A batch over
     * the limit is left to the adds, which report the exact refusal. */
    rc = sl_client_send_reserve(c, total);
    if (rc == -SL_ERR_COMMAND_LENGTH_ERROR)
        rc = 0;
    /* The messages of one call are created together: those without an
     * origin timestamp share one reading of the clock (a reading per
     * message cost ~70 us per 1000 here). */
    uint64_t now_us = sl_clock_realtime_us();
    id_stock_t ids = {.left = 0};
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        const uint8_t *fresh = NULL;
        if (needs_id(&messages[i]))
            rc = take_id(c, &ids, messages, i, count, &fresh);
        if (rc == 0)
            rc = add_message(c, &messages[i], now_us, fresh);
    }
    if (rc != 0)
        sl_client_send_abandon(c);
    return rc;
}

int sl_client_send_messages(sl_client_t *c, sl_id_t stream, sl_id_t topic,
                            sl_send_partitioning_t partitioning, const sl_send_message_t *messages,
                            uint32_t count, sl_send_result_t *out)
{
    int rc = batch_build(c, stream, topic, partitioning, messages, count);
    return rc != 0 ? rc : sl_client_send_commit(c, out);
}

/* --- pipelined sends (client.h, "pipelined sends and polls") ----------------------------- */

int sl_client_send_submit(sl_client_t *c, uint64_t *ticket)
{
    *ticket = 0;
    uint32_t count = 0;
    int rc = batch_seal(c, &count);
    if (rc != 0)
        return rc;
    /* The previous call's results stay: the request is built apart. */
    return sl_client_pipe_submit(c, SL_OP_SEND_MESSAGES, SL_CMD_SEND_MESSAGES, count, true, ticket);
}

int sl_client_send_messages_submit(sl_client_t *c, sl_id_t stream, sl_id_t topic,
                                   sl_send_partitioning_t partitioning,
                                   const sl_send_message_t *messages, uint32_t count,
                                   uint64_t *ticket)
{
    *ticket = 0;
    int rc = batch_build(c, stream, topic, partitioning, messages, count);
    return rc != 0 ? rc : sl_client_send_submit(c, ticket);
}

int sl_client_send_collect(sl_client_t *c, uint64_t *ticket, sl_send_result_t *out)
{
    sl_client_flight_t f;
    sl_client_reply_t r;
    int rc = sl_client_pipe_collect(c, SL_OP_SEND_MESSAGES, &f, &r);
    *ticket = f.ticket;
    return rc != 0 ? rc : send_result(c, r.payload, f.messages, out);
}

/* --- polling ------------------------------------------------------------------------ */

static bool wire_consumer(sl_consumer_ref_t in, sl_consumer_t *out)
{
    if (in.kind != SL_CONSUMER_KIND_SINGLE && in.kind != SL_CONSUMER_KIND_GROUP)
        return false;
    out->kind = in.kind;
    return sl_client_ident(in.id, &out->id);
}

static bool wire_target(sl_consumer_ref_t consumer, sl_id_t stream, sl_id_t topic, sl_consumer_t *c,
                        sl_ident_t *s, sl_ident_t *t)
{
    return wire_consumer(consumer, c) && sl_client_ident(stream, s) && sl_client_ident(topic, t);
}

static sl_opt_partition_t opt_partition(uint32_t partition)
{
    if (partition == SL_PARTITION_NONE)
        return (sl_opt_partition_t){.present = false};
    return (sl_opt_partition_t){.present = true, .id = partition};
}

static void polled_from(const sl_message_t *m, sl_polled_message_t *out)
{
    *out = (sl_polled_message_t){
        .offset = m->offset,
        .timestamp_us = m->timestamp,
        .origin_timestamp_us = m->origin_timestamp,
        .id = {m->id.lo, m->id.hi},
        .checksum = m->checksum,
        .payload = m->payload.ptr,
        .payload_len = m->payload.len,
        .headers = m->user_headers.ptr,
        .headers_len = m->user_headers.len,
    };
}

/* Verifies every record and lists its messages in the arena. */
static int polled_convert(sl_client_t *c, const sl_poll_messages_reply_t *w,
                          const sl_polled_message_t **out)
{
    sl_polled_message_t *list = NULL;
    if (w->messages_count > 0) {
        /* Bounded: the decoder matched the count against frames present. */
        list = SL_ARENA_NEW(&c->arena, sl_polled_message_t, w->messages_count);
        if (list == NULL)
            return -SL_ERR_ERROR;
    }
    uint32_t n = 0;
    sl_record_iter_t records = sl_record_iter(w->records);
    sl_span_t record;
    while (sl_record_next(&records, &record)) {
        /* A stricter client than the SDKs (messages.md 4.2): every frame
         * checksum (2.1), then the batch checksum (2.2), of a record whose
         * layout the reply decoder checked. */
        int rc = sl_batch_verify(record);
        if (rc != 0)
            return rc;
        sl_frame_iter_t it = sl_frame_iter(record);
        sl_message_t m;
        while (n < w->messages_count && sl_frame_next(&it, &m))
            polled_from(&m, &list[n++]);
    }
    if (n != w->messages_count)
        return -SL_ERR_INVALID_FORMAT;
    *out = list;
    return 0;
}

/* Encodes a PollMessages request into tx. Arguments are checked first;
 * then a lockstep call (call set) begins, ending the previous results, or
 * a submit begins only the request. */
static int poll_encode(sl_client_t *c, bool call, sl_consumer_ref_t consumer, sl_id_t stream,
                       sl_id_t topic, uint32_t partition, sl_poll_strategy_t strategy,
                       uint32_t count, bool auto_commit)
{
    sl_poll_messages_request_t req = {
        .partition = opt_partition(partition),
        .strategy = {.kind = strategy.kind, .value = strategy.value},
        .count = count,
        .auto_commit = auto_commit,
    };
    if (!wire_target(consumer, stream, topic, &req.consumer, &req.stream_id, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    if (call)
        sl_client_call_begin(c);
    else
        sl_client_request_begin(c);
    return sl_poll_messages_request_encode(&c->tx, &req);
}

/* The public result of a decoded PollMessages reply: every record
 * verified, the messages listed in the arena. */
int sl_client_poll_result(sl_client_t *c, const sl_poll_messages_reply_t *w,
                          sl_polled_messages_t *out)
{
    sl_polled_messages_t res = {.partition_id = w->partition_id,
                                .current_offset = w->current_offset};
    if (w->partition_id == SL_POLL_RESYNC_PARTITION) {
        /* The sentinel comes with the empty result only. */
        if (w->messages_count != 0 || w->records.len != 0)
            return -SL_ERR_INVALID_FORMAT;
        res.resync_required = true;
    } else {
        int rc = polled_convert(c, w, &res.messages);
        if (rc != 0)
            return rc;
        res.count = w->messages_count;
    }
    *out = res;
    return 0;
}

int sl_client_poll_messages(sl_client_t *c, sl_consumer_ref_t consumer, sl_id_t stream,
                            sl_id_t topic, uint32_t partition, sl_poll_strategy_t strategy,
                            uint32_t count, bool auto_commit, sl_polled_messages_t *out)
{
    int rc = poll_encode(c, true, consumer, stream, topic, partition, strategy, count, auto_commit);
    sl_span_t payload;
    rc = sl_client_run(c, rc, SL_OP_NON_REPLICATED, SL_CMD_POLL_MESSAGES, &payload);
    sl_poll_messages_reply_t w;
    if (rc == 0)
        rc = sl_poll_messages_reply_decode(payload, &c->arena, &w);
    return rc != 0 ? rc : sl_client_poll_result(c, &w, out);
}

/* --- pipelined polls ------------------------------------------------------------------ */

int sl_client_poll_submit_care(sl_client_t *c, bool care, sl_consumer_ref_t consumer,
                               sl_id_t stream, sl_id_t topic, uint32_t partition,
                               sl_poll_strategy_t strategy, uint32_t count, bool auto_commit,
                               uint64_t *ticket)
{
    *ticket = 0;
    /* Only the request is begun: the previous call's results stay. */
    int rc =
        poll_encode(c, false, consumer, stream, topic, partition, strategy, count, auto_commit);
    if (rc != 0)
        return rc;
    return sl_client_pipe_submit(c, SL_OP_NON_REPLICATED, SL_CMD_POLL_MESSAGES, 0, care, ticket);
}

int sl_client_poll_submit(sl_client_t *c, sl_consumer_ref_t consumer, sl_id_t stream, sl_id_t topic,
                          uint32_t partition, sl_poll_strategy_t strategy, uint32_t count,
                          bool auto_commit, uint64_t *ticket)
{
    return sl_client_poll_submit_care(c, true, consumer, stream, topic, partition, strategy, count,
                                      auto_commit, ticket);
}

/* A poll request body ends with the strategy (kind u8, value u64), the
 * count (u32) and the auto-commit flag (u8), encodings.md 6. */
enum { POLL_TAIL_STRATEGY = 1 + 8 + 4 + 1 };

bool sl_client_poll_next_offset(const sl_poll_messages_reply_t *w, uint64_t *next)
{
    if (w->messages_count == 0 || w->partition_id == SL_POLL_RESYNC_PARTITION)
        return false;
    sl_record_iter_t records = sl_record_iter(w->records);
    sl_span_t record;
    sl_message_t first;
    if (!sl_record_next(&records, &record))
        return false;
    sl_frame_iter_t it = sl_frame_iter(record);
    if (!sl_frame_next(&it, &first))
        return false;
    *next = first.offset + w->messages_count;
    return true;
}

/* Submits the poll of flight again from the offset after the reply w's
 * messages, when it was a poll by offset that returned any; *chained gets
 * the ticket (0: none submitted). */
static void poll_chain(sl_client_t *c, const sl_client_flight_t *flight,
                       const sl_poll_messages_reply_t *w, uint64_t *chained)
{
    *chained = 0;
    uint64_t next;
    if (flight->body_len < POLL_TAIL_STRATEGY ||
        flight->body[flight->body_len - POLL_TAIL_STRATEGY] != SL_STRATEGY_OFFSET ||
        !sl_client_poll_next_offset(w, &next))
        return;
    sl_client_request_begin(c);
    uint8_t *body = sl_buf_extend(&c->tx, flight->body_len);
    if (body == NULL)
        return;
    memcpy(body, flight->body, flight->body_len);
    sl_store_u64(body + flight->body_len - POLL_TAIL_STRATEGY + 1, next);
    /* No connection care here: a recovery would reuse the buffers that
     * hold the reply being returned. */
    if (sl_client_pipe_submit(c, SL_OP_NON_REPLICATED, SL_CMD_POLL_MESSAGES, 0, false, chained) !=
        0)
        *chained = 0;
}

int sl_client_poll_receive(sl_client_t *c, uint64_t *ticket, sl_client_flight_t *flight,
                           sl_poll_messages_reply_t *w)
{
    sl_client_reply_t r;
    int rc = sl_client_pipe_collect(c, SL_OP_NON_REPLICATED, flight, &r);
    *ticket = flight->ticket;
    if (rc == 0)
        rc = sl_poll_messages_reply_decode(r.payload, &c->arena, w);
    return rc;
}

int sl_client_poll_collect(sl_client_t *c, bool chain, uint64_t *ticket, uint64_t *chained,
                           sl_polled_messages_t *out)
{
    if (chained != NULL)
        *chained = 0;
    *ticket = 0;
    if (chain && chained == NULL)
        return -SL_ERR_INVALID_COMMAND;
    sl_client_flight_t f;
    sl_poll_messages_reply_t w;
    int rc = sl_client_poll_receive(c, ticket, &f, &w);
    if (rc != 0)
        return rc;
    if (chain)
        poll_chain(c, &f, &w, chained);
    return sl_client_poll_result(c, &w, out);
}

/* --- consumer offsets --------------------------------------------------------------- */

int sl_client_get_consumer_offset(sl_client_t *c, sl_consumer_ref_t consumer, sl_id_t stream,
                                  sl_id_t topic, uint32_t partition, sl_consumer_offset_t *out)
{
    sl_get_consumer_offset_request_t req = {.partition = opt_partition(partition)};
    if (!wire_target(consumer, stream, topic, &req.consumer, &req.stream_id, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_consumer_offset_request_encode(&c->tx, &req),
                           SL_OP_NON_REPLICATED, SL_CMD_GET_CONSUMER_OFFSET, &payload);
    sl_get_consumer_offset_reply_t w;
    if (rc == 0)
        rc = sl_get_consumer_offset_reply_decode(payload, &c->arena, &w);
    if (rc == 0)
        *out = (sl_consumer_offset_t){
            .found = w.found,
            .partition_id = w.partition_id,
            .current_offset = w.current_offset,
            .stored_offset = w.stored_offset,
        };
    return rc;
}

int sl_client_store_consumer_offset(sl_client_t *c, sl_consumer_ref_t consumer, sl_id_t stream,
                                    sl_id_t topic, uint32_t partition, uint64_t offset, uint8_t ack)
{
    sl_store_consumer_offset_request_t req = {
        .partition = opt_partition(partition), .offset = offset, .ack = ack};
    if (ack > SL_ACK_QUORUM ||
        !wire_target(consumer, stream, topic, &req.consumer, &req.stream_id, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_store_consumer_offset_request_encode(&c->tx, &req),
                           SL_OP_STORE_CONSUMER_OFFSET, SL_CMD_STORE_CONSUMER_OFFSET, &payload);
    sl_store_consumer_offset_reply_t w;
    return rc != 0 ? rc : sl_store_consumer_offset_reply_decode(payload, &c->arena, &w);
}

int sl_client_delete_consumer_offset(sl_client_t *c, sl_consumer_ref_t consumer, sl_id_t stream,
                                     sl_id_t topic, uint32_t partition, uint8_t ack)
{
    sl_delete_consumer_offset_request_t req = {.partition = opt_partition(partition), .ack = ack};
    if (ack > SL_ACK_QUORUM ||
        !wire_target(consumer, stream, topic, &req.consumer, &req.stream_id, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_consumer_offset_request_encode(&c->tx, &req),
                           SL_OP_DELETE_CONSUMER_OFFSET, SL_CMD_DELETE_CONSUMER_OFFSET, &payload);
    sl_delete_consumer_offset_reply_t w;
    return rc != 0 ? rc : sl_delete_consumer_offset_reply_decode(payload, &c->arena, &w);
}

/* --- flush ------------------------------------------------------------------------- */

int sl_client_flush_unsaved_buffer(sl_client_t *c, sl_id_t stream, sl_id_t topic,
                                   uint32_t partition_id, bool fsync)
{
    sl_flush_unsaved_buffer_request_t req = {.partition_id = partition_id, .fsync = fsync};
    if (!sl_client_ident(stream, &req.stream_id) || !sl_client_ident(topic, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_flush_unsaved_buffer_request_encode(&c->tx, &req),
                           SL_OP_NON_REPLICATED, SL_CMD_FLUSH_UNSAVED_BUFFER, &payload);
    sl_flush_unsaved_buffer_reply_t w;
    return rc != 0 ? rc : sl_flush_unsaved_buffer_reply_decode(payload, &c->arena, &w);
}
