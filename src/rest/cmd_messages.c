/* Messages and consumer offsets over HTTP (http.md 8, 6.6): a JSON send
 * body becomes a SendMessages request with a batch built by
 * wire/batch.h's builder, and a poll reply's batch records become
 * PolledMessages JSON. */
#include <sluice/error.h>
#include <stdio.h>
#include <string.h>

#include "rest/internal.h"
#include "wire/batch.h"
#include "wire/cmd_messages.h"
#include "wire/header.h"
#include "wire/tlv.h"

/* The reference's bound on one payload (http.md 8.1). */
#define SEND_PAYLOAD_MAX 64000000u

/* --- shared ------------------------------------------------------------------------------- */

static bool stream_topic(const sl_rest_request_t *req, sl_ident_t *stream, sl_ident_t *topic,
                         sl_rest_error_t *err)
{
    return sl_rest_path_ident(req, 0, stream, err) && sl_rest_path_ident(req, 1, topic, err);
}

/* ?consumer_id= (id or name, default 1): always a plain consumer. */
static bool query_consumer(const sl_rest_request_t *req, sl_consumer_t *out, sl_rest_error_t *err)
{
    /* The name borrows this buffer; the caller encodes it right away. */
    static _Thread_local char text[256];
    size_t len = 0;
    err->status = 0;
    out->kind = SL_CONSUMER_SINGLE;
    out->id = sl_ident_number(1);
    if (!req->query || !sl_rest_query_get(req->query, "consumer_id", text, sizeof(text), &len, err))
        return err->status == 0;
    return sl_rest_ident(sl_span(text, len), &out->id, err);
}

static int render_offset(const sl_rest_request_t *req, const sl_rest_call_t *call,
                         sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_consumer_offset_reply_t r;
    if (sl_get_consumer_offset_reply_decode(payload, arena, &r) != 0)
        return -1;
    if (!r.found) {
        sl_rest_not_found(resp);
        return 0;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "partition_id", sl_rest_json_uint(r.partition_id));
    json_object_object_add(o, "current_offset", sl_rest_json_uint(r.current_offset));
    json_object_object_add(o, "stored_offset", sl_rest_json_uint(r.stored_offset));
    sl_rest_response_json(resp, 200, o);
    return 0;
}

/* --- poll ------------------------------------------------------------------------------------ */

static bool strategy_kind(const sl_rest_request_t *req, uint8_t *out, sl_rest_error_t *err)
{
    static const struct {
        const char *name;
        uint8_t kind;
    } kinds[] = {
        {"offset", SL_STRATEGY_OFFSET},       {"o", SL_STRATEGY_OFFSET},
        {"timestamp", SL_STRATEGY_TIMESTAMP}, {"t", SL_STRATEGY_TIMESTAMP},
        {"first", SL_STRATEGY_FIRST},         {"f", SL_STRATEGY_FIRST},
        {"last", SL_STRATEGY_LAST},           {"l", SL_STRATEGY_LAST},
        {"next", SL_STRATEGY_NEXT},           {"n", SL_STRATEGY_NEXT},
    };
    char text[16];
    size_t len = 0;
    err->status = 0;
    *out = SL_STRATEGY_OFFSET;
    if (!req->query || !sl_rest_query_get(req->query, "kind", text, sizeof(text), &len, err))
        return err->status == 0;
    for (size_t i = 0; i < SL_ARRAY_LEN(kinds); i++)
        if (len == strlen(kinds[i].name) && memcmp(text, kinds[i].name, len) == 0) {
            *out = kinds[i].kind;
            return true;
        }
    sl_rest_error_plain(err, 400, "Failed to deserialize query string: kind: unknown variant");
    return false;
}

static int build_poll(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_poll_messages_request_t q = {
        .partition = {.present = true, .id = 0},
        .count = 10,
    };
    bool present;
    if (!stream_topic(req, &q.stream_id, &q.topic_id, err) ||
        !query_consumer(req, &q.consumer, err) ||
        !sl_rest_query_u32(req, "partition_id", &q.partition.id, &present, err) ||
        !strategy_kind(req, &q.strategy.kind, err) ||
        !sl_rest_query_u64(req, "value", &q.strategy.value, &present, err) ||
        !sl_rest_query_u32(req, "count", &q.count, &present, err) ||
        !sl_rest_query_bool(req, "auto_commit", &q.auto_commit, &present, err))
        return -1;
    return sl_poll_messages_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static json_object *header_field_json(const sl_tlv_field_t *f, sl_buf_t *scratch)
{
    const char *kind = sl_kind_name(f->kind);
    sl_buf_reset(scratch);
    sl_base64_encode(scratch, f->data, false);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string(kind ? kind : "raw"));
    json_object_object_add(o, "value", sl_rest_json_string(sl_buf_span(scratch)));
    return o;
}

/* [] when empty; entries when the bytes are a header TLV; else base64. */
static json_object *user_headers_json(sl_span_t block, sl_buf_t *scratch)
{
    uint32_t pairs = 0;
    if (block.len > 0 && !sl_user_headers_validate(block, &pairs)) {
        sl_buf_reset(scratch);
        sl_base64_encode(scratch, block, false);
        return sl_rest_json_string(sl_buf_span(scratch));
    }
    json_object *list = json_object_new_array();
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    for (uint32_t i = 0; i < pairs && sl_tlv_next(&it, &e); i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "key", header_field_json(&e.key, scratch));
        json_object_object_add(o, "value", header_field_json(&e.value, scratch));
        json_object_array_add(list, o);
    }
    return list;
}

static json_object *message_json(const sl_message_t *m, sl_buf_t *scratch)
{
    json_object *h = json_object_new_object();
    json_object_object_add(h, "checksum", sl_rest_json_uint(m->checksum));
    json_object_object_add(h, "id", sl_rest_json_u128(m->id));
    json_object_object_add(h, "offset", sl_rest_json_uint(m->offset));
    json_object_object_add(h, "timestamp", sl_rest_json_uint(m->timestamp));
    json_object_object_add(h, "origin_timestamp", sl_rest_json_uint(m->origin_timestamp));
    json_object_object_add(h, "user_headers_length", sl_rest_json_uint(m->user_headers.len));
    json_object_object_add(h, "payload_length", sl_rest_json_uint(m->payload.len));
    json_object_object_add(h, "reserved", sl_rest_json_uint(0));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "header", h);
    sl_buf_reset(scratch);
    sl_base64_encode(scratch, m->payload, false);
    json_object_object_add(o, "payload", sl_rest_json_string(sl_buf_span(scratch)));
    json_object_object_add(o, "user_headers", user_headers_json(m->user_headers, scratch));
    return o;
}

static int render_poll(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                       sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_poll_messages_reply_t r;
    if (sl_poll_messages_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    json_object *list = json_object_new_array();
    uint32_t count = 0;
    sl_record_iter_t records = sl_record_iter(r.records);
    sl_span_t record;
    /* Bounded by the payload: every record and frame consumes bytes. */
    while (sl_record_next(&records, &record)) {
        sl_frame_iter_t frames = sl_frame_iter(record);
        sl_message_t m;
        while (sl_frame_next(&frames, &m)) {
            json_object_array_add(list, message_json(&m, &scratch));
            count++;
        }
    }
    sl_buf_free(&scratch);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "partition_id", sl_rest_json_uint(r.partition_id));
    json_object_object_add(o, "current_offset", sl_rest_json_uint(r.current_offset));
    json_object_object_add(o, "count", sl_rest_json_uint(count));
    json_object_object_add(o, "messages", list);
    sl_rest_response_json(resp, 200, o);
    return 0;
}

/* --- send --------------------------------------------------------------------------------- */

static bool unprocessable(sl_rest_error_t *err, const char *what)
{
    sl_rest_error_plain(err, 422, "Failed to deserialize the JSON body into the target type: %s",
                        what);
    return false;
}

/* Base64 text of a JSON string field into out; false (422) otherwise. */
static bool b64_field(json_object *o, const char *key, sl_buf_t *out, sl_rest_error_t *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return unprocessable(err, key);
    sl_span_t text = sl_span(json_object_get_string(v), (size_t)json_object_get_string_len(v));
    if (!sl_base64_decode(out, text, false))
        return unprocessable(err, key);
    return true;
}

static bool partitioning_read(json_object *body, sl_partitioning_t *p, sl_buf_t *key,
                              sl_rest_error_t *err)
{
    json_object *o = NULL;
    sl_span_t kind;
    p->kind = SL_PARTITIONING_BALANCED;
    if (!json_object_object_get_ex(body, "partitioning", &o) || !o)
        return true;
    if (!json_object_is_type(o, json_type_object) ||
        !sl_rest_json_str(o, "kind", true, &kind, NULL, err))
        return err->status ? false : unprocessable(err, "partitioning");
    if (kind.len == 8 && memcmp(kind.ptr, "balanced", 8) == 0)
        return true;
    bool by_id = kind.len == 12 && memcmp(kind.ptr, "partition_id", 12) == 0;
    bool by_key = kind.len == 12 && memcmp(kind.ptr, "messages_key", 12) == 0;
    if (!by_id && !by_key)
        return unprocessable(err, "partitioning.kind: unknown variant");
    if (!b64_field(o, "value", key, err))
        return false;
    if (key->len == 0 || key->len > 255 || (by_id && key->len != 4)) {
        sl_rest_error_from_code(SL_ERR_INVALID_KEY_VALUE_LENGTH, err);
        return false;
    }
    p->kind = by_id ? SL_PARTITIONING_PARTITION_ID : SL_PARTITIONING_MESSAGES_KEY;
    if (by_id)
        p->partition_id = sl_load_u32(key->data);
    else
        p->key = sl_buf_span(key);
    return true;
}

static bool hex_u128(const char *s, sl_u128_t *out)
{
    uint64_t hi = 0, lo = 0;
    int digits = 0;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        if (c == '-')
            continue;
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0 || digits == 32)
            return false;
        hi = (hi << 4) | (lo >> 60);
        lo = (lo << 4) | (uint64_t)v;
        digits++;
    }
    *out = (sl_u128_t){lo, hi};
    return digits == 32;
}

static bool dec_u128(const char *s, sl_u128_t *out)
{
    unsigned __int128 v = 0;
    size_t n = strlen(s);
    if (n == 0 || n > 39)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned __int128 next = v * 10 + (unsigned)(s[i] - '0');
        if (next / 10 != v)
            return false;
        v = next;
    }
    *out = (sl_u128_t){(uint64_t)v, (uint64_t)(v >> 64)};
    return true;
}

/* "id": a u64 number, a decimal u128 string or a UUID; absent or 0: random. */
static bool message_id(const sl_rest_request_t *req, json_object *m, sl_u128_t *out,
                       sl_rest_error_t *err)
{
    json_object *v = NULL;
    *out = (sl_u128_t){0, 0};
    if (json_object_object_get_ex(m, "id", &v) && v) {
        uint64_t n;
        if (sl_rest_json_as_u64(v, &n))
            *out = (sl_u128_t){n, 0};
        else if (!json_object_is_type(v, json_type_string) ||
                 !(dec_u128(json_object_get_string(v), out) ||
                   hex_u128(json_object_get_string(v), out)))
            return unprocessable(err, "messages.id");
    }
    if (sl_u128_is_zero(*out) && req->random) {
        uint8_t b[16];
        req->random(req->random_ctx, b, sizeof(b));
        b[6] = (uint8_t)(0x40 | (b[6] & 0x0F)); /* a UUIDv4 as the reference makes */
        b[8] = (uint8_t)(0x80 | (b[8] & 0x3F));
        *out = sl_load_u128(b);
    }
    return true;
}

/* One user-header field {"kind": name, "value": base64} as TLV. */
static bool header_field(json_object *f, sl_buf_t *block, sl_buf_t *tmp, sl_rest_error_t *err)
{
    sl_span_t kind;
    if (!f || !json_object_is_type(f, json_type_object) ||
        !sl_rest_json_str(f, "kind", true, &kind, NULL, err))
        return unprocessable(err, "messages.user_headers");
    char name[16];
    snprintf(name, sizeof(name), "%.*s", (int)(kind.len < 15 ? kind.len : 15),
             (const char *)kind.ptr);
    uint8_t code = kind.len < 15 ? sl_kind_parse(name) : 0;
    sl_buf_reset(tmp);
    if (code == 0 || !b64_field(f, "value", tmp, err) || !sl_tlv_put(block, code, sl_buf_span(tmp)))
        return unprocessable(err, "messages.user_headers");
    return true;
}

/* "user_headers": null, an array of entries, or base64 of a raw block. */
static bool user_headers_read(json_object *m, sl_buf_t *block, sl_rest_error_t *err)
{
    json_object *h = NULL;
    sl_buf_reset(block);
    if (!json_object_object_get_ex(m, "user_headers", &h) || !h)
        return true;
    if (json_object_is_type(h, json_type_string))
        return b64_field(m, "user_headers", block, err);
    if (!json_object_is_type(h, json_type_array))
        return unprocessable(err, "messages.user_headers");
    sl_buf_t tmp;
    sl_buf_init(&tmp, 0);
    bool ok = true;
    size_t n = json_object_array_length(h);
    for (size_t i = 0; ok && i < n; i++) {
        json_object *e = json_object_array_get_idx(h, i), *k = NULL, *v = NULL;
        ok = json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, "key", &k) &&
             json_object_object_get_ex(e, "value", &v) && header_field(k, block, &tmp, err) &&
             header_field(v, block, &tmp, err) && block->len <= SL_USER_HEADERS_MAX;
    }
    sl_buf_free(&tmp);
    return ok ? true : (err->status ? false : unprocessable(err, "messages.user_headers"));
}

static bool message_add(const sl_rest_request_t *req, json_object *m, sl_batch_builder_t *bb,
                        sl_buf_t *payload, sl_buf_t *headers, sl_rest_error_t *err)
{
    sl_u128_t id;
    sl_buf_reset(payload);
    if (!json_object_is_type(m, json_type_object))
        return unprocessable(err, "messages");
    if (!message_id(req, m, &id, err) || !b64_field(m, "payload", payload, err) ||
        !user_headers_read(m, headers, err))
        return false;
    if (payload->len == 0 || payload->len > SEND_PAYLOAD_MAX)
        return unprocessable(err, "messages.payload");
    int rc = sl_batch_add(bb, id, req->now_us, sl_buf_span(payload), sl_buf_span(headers));
    if (rc != 0) {
        sl_rest_error_from_code((uint32_t)-rc, err);
        return false;
    }
    return true;
}

/* Only "partitioning" and "messages" may stand at the top (http.md 1). */
static bool send_keys_ok(json_object *o, sl_rest_error_t *err)
{
    json_object_object_foreach(o, key, value)
    {
        (void)value;
        if (strcmp(key, "partitioning") != 0 && strcmp(key, "messages") != 0)
            return unprocessable(err, "unknown field");
    }
    return true;
}

static bool send_messages(const sl_rest_request_t *req, json_object *list, sl_buf_t *out,
                          sl_rest_error_t *err)
{
    sl_buf_t payload, headers;
    sl_buf_init(&payload, 0);
    sl_buf_init(&headers, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, out);
    bool ok = true;
    size_t n = json_object_array_length(list);
    for (size_t i = 0; ok && i < n; i++)
        ok = message_add(req, json_object_array_get_idx(list, i), &bb, &payload, &headers, err);
    sl_span_t record;
    int rc = sl_batch_finish(&bb, &record);
    if (ok && rc != 0) {
        sl_rest_error_from_code((uint32_t)-rc, err);
        ok = false;
    }
    sl_buf_free(&payload);
    sl_buf_free(&headers);
    return ok;
}

static bool ack_query(const sl_rest_request_t *req, bool *none, sl_rest_error_t *err)
{
    char text[16];
    size_t len = 0;
    err->status = 0;
    *none = false;
    if (!req->query || !sl_rest_query_get(req->query, "ack", text, sizeof(text), &len, err))
        return err->status == 0;
    if (len == 4 && memcmp(text, "none", 4) == 0)
        *none = true;
    else if (!(len == 10 && memcmp(text, "replicated", 10) == 0)) {
        sl_rest_error_plain(err, 400, "Failed to deserialize query string: ack: unknown variant");
        return false;
    }
    return true;
}

static int build_send(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_send_messages_request_t q = {0};
    sl_buf_t key;
    sl_buf_init(&key, 0);
    json_object *o = NULL, *list = NULL;
    bool ok = stream_topic(req, &q.stream_id, &q.topic_id, err) &&
              ack_query(req, &call->ack_none, err) && (o = sl_rest_body_object(req, err)) &&
              send_keys_ok(o, err) && partitioning_read(o, &q.partitioning, &key, err);
    if (ok && (!json_object_object_get_ex(o, "messages", &list) ||
               !json_object_is_type(list, json_type_array)))
        ok = unprocessable(err, "missing field `messages`");
    if (ok && json_object_array_length(list) == 0) {
        sl_rest_error_from_code(SL_ERR_INVALID_MESSAGES_COUNT, err);
        ok = false;
    }
    if (ok) {
        q.messages_count = (uint32_t)json_object_array_length(list);
        ok = sl_send_messages_metadata_encode(call->body, &q) == 0 &&
             send_messages(req, list, call->body, err);
    }
    sl_buf_free(&key);
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_send(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                       sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req;
    if (call->ack_none) {
        sl_rest_response_empty(resp, 202);
        resp->durability = "none";
        return 0;
    }
    sl_send_messages_reply_t r;
    if (sl_send_messages_reply_decode(payload, arena, &r) != 0)
        return -1;
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++) {
        json_object *c = json_object_new_object();
        json_object_object_add(c, "stream_id", sl_rest_json_uint(r.items[i].stream_id));
        json_object_object_add(c, "topic_id", sl_rest_json_uint(r.items[i].topic_id));
        json_object_object_add(c, "partition_id", sl_rest_json_uint(r.items[i].partition_id));
        json_object_object_add(c, "base_offset", sl_rest_json_uint(r.items[i].base_offset));
        json_object_array_add(list, c);
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "confirmations", list);
    sl_rest_response_json(resp, 201, o);
    resp->durability = "replicated-memory";
    return 0;
}

/* --- consumer offsets ----------------------------------------------------------------------- */

static int build_offset_get(const sl_rest_request_t *req, sl_rest_call_t *call,
                            sl_rest_error_t *err)
{
    sl_get_consumer_offset_request_t q = {.partition = {.present = true, .id = 0}};
    bool present;
    if (!stream_topic(req, &q.stream_id, &q.topic_id, err) ||
        !query_consumer(req, &q.consumer, err) ||
        !sl_rest_query_u32(req, "partition_id", &q.partition.id, &present, err))
        return -1;
    return sl_get_consumer_offset_request_encode(call->body, &q) == 0 ? 0 : -1;
}

/* "consumer_id": a number, or a string (an id or a name). */
static bool body_consumer(json_object *o, sl_consumer_t *out, sl_rest_error_t *err)
{
    json_object *v = NULL;
    uint64_t n;
    out->kind = SL_CONSUMER_SINGLE;
    if (!json_object_object_get_ex(o, "consumer_id", &v) || !v)
        return unprocessable(err, "missing field `consumer_id`");
    if (sl_rest_json_as_u64(v, &n) && n <= UINT32_MAX) {
        out->id = sl_ident_number((uint32_t)n);
        return true;
    }
    if (!json_object_is_type(v, json_type_string))
        return unprocessable(err, "consumer_id");
    return sl_rest_ident(sl_span(json_object_get_string(v), (size_t)json_object_get_string_len(v)),
                         &out->id, err);
}

static int build_offset_store(const sl_rest_request_t *req, sl_rest_call_t *call,
                              sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_store_consumer_offset_request_t q = {.ack = SL_ACK_QUORUM};
    bool ok =
        o && stream_topic(req, &q.stream_id, &q.topic_id, err) &&
        body_consumer(o, &q.consumer, err) &&
        sl_rest_json_u32(o, "partition_id", false, &q.partition.id, &q.partition.present, err) &&
        sl_rest_json_u64(o, "offset", true, &q.offset, NULL, err);
    if (ok)
        ok = sl_store_consumer_offset_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int build_offset_delete(const sl_rest_request_t *req, sl_rest_call_t *call,
                               sl_rest_error_t *err)
{
    sl_delete_consumer_offset_request_t q = {.ack = SL_ACK_QUORUM};
    q.consumer.kind = SL_CONSUMER_SINGLE;
    if (!stream_topic(req, &q.stream_id, &q.topic_id, err) ||
        !sl_rest_path_ident(req, 2, &q.consumer.id, err) ||
        !sl_rest_query_u32(req, "partition_id", &q.partition.id, &q.partition.present, err))
        return -1;
    return sl_delete_consumer_offset_request_encode(call->body, &q) == 0 ? 0 : -1;
}

/* clang-format off */
const sl_rest_handler_t sl_rest_message_handlers[] = {
    {SL_ROUTE_POLL,          SL_OP_NON_REPLICATED, 100, false, build_poll, render_poll},
    {SL_ROUTE_SEND,          SL_OP_SEND_MESSAGES, 0, true, build_send, render_send},
    {SL_ROUTE_OFFSET_GET,    SL_OP_NON_REPLICATED, 120, false, build_offset_get, render_offset},
    {SL_ROUTE_OFFSET_STORE,  SL_OP_STORE_CONSUMER_OFFSET, 0, true, build_offset_store, sl_rest_render_no_content},
    {SL_ROUTE_OFFSET_DELETE, SL_OP_DELETE_CONSUMER_OFFSET, 0, false, build_offset_delete, sl_rest_render_no_content},
};
/* clang-format on */
const size_t sl_rest_message_handlers_count = SL_ARRAY_LEN(sl_rest_message_handlers);
