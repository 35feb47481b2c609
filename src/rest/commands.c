/* The command routes: which binary command stands for each, the shared
 * path/query/body helpers, and the per-route exceptions to the error map. */
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rest/internal.h"
#include "wire/command.h"
#include "wire/tlv.h"

static const sl_rest_handler_t *handler_of(sl_rest_route_t route)
{
    const struct {
        const sl_rest_handler_t *items;
        size_t count;
    } families[] = {
        {sl_rest_system_handlers, sl_rest_system_handlers_count},
        {sl_rest_stream_handlers, sl_rest_stream_handlers_count},
        {sl_rest_user_handlers, sl_rest_user_handlers_count},
        {sl_rest_message_handlers, sl_rest_message_handlers_count},
    };
    for (size_t f = 0; f < SL_ARRAY_LEN(families); f++)
        for (size_t i = 0; i < families[f].count; i++)
            if (families[f].items[i].route == route)
                return &families[f].items[i];
    return NULL;
}

bool sl_rest_route_is_command(sl_rest_route_t route)
{
    return handler_of(route) != NULL;
}

bool sl_rest_route_has_json_body(sl_rest_route_t route)
{
    if (route == SL_ROUTE_LOGIN || route == SL_ROUTE_PAT_LOGIN || route == SL_ROUTE_REFRESH_TOKEN)
        return true;
    const sl_rest_handler_t *h = handler_of(route);
    return h && h->json_body;
}

int sl_rest_build(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    const sl_rest_handler_t *h = handler_of(req->match->route);
    if (!h) {
        sl_rest_error_custom(err, 404, 404, "not_found", "Resource not found");
        return -1;
    }
    call->operation = h->operation;
    call->code = h->code;
    call->ack_none = false;
    err->status = 0;
    if (h->build(req, call, err) != 0) {
        /* A value the wire encoder refused that no check above caught. */
        if (err->status == 0)
            sl_rest_error_from_code(SL_ERR_INVALID_COMMAND, err);
        return -1;
    }
    if (!sl_buf_ok(call->body)) {
        sl_rest_error_from_code(SL_ERR_INVALID_COMMAND, err);
        return -1;
    }
    return 0;
}

void sl_rest_render(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                    sl_arena_t *arena, sl_rest_response_t *resp)
{
    const sl_rest_handler_t *h = handler_of(req->match->route);
    if (h && h->render(req, call, payload, arena, resp) == 0)
        return;
    sl_rest_error_t e;
    sl_rest_error_custom(&e, 500, SL_ERR_INVALID_FORMAT, "invalid_format",
                         "the server's reply did not decode");
    sl_rest_response_error(resp, &e);
}

void sl_rest_not_found(sl_rest_response_t *resp)
{
    sl_rest_error_t e;
    sl_rest_error_custom(&e, 404, 404, "not_found", "Resource not found");
    sl_rest_response_error(resp, &e);
}

void sl_rest_render_refusal(const sl_rest_request_t *req, uint32_t code, sl_rest_response_t *resp)
{
    bool missing_parent = code == SL_ERR_STREAM_ID_NOT_FOUND || code == SL_ERR_TOPIC_ID_NOT_FOUND;
    switch (req->match->route) {
    case SL_ROUTE_TOPICS:
        /* http.md 6.5: a listing of topics of a missing stream is []. */
        if (code == SL_ERR_STREAM_ID_NOT_FOUND) {
            sl_rest_response_json(resp, 200, json_object_new_array());
            return;
        }
        break;
    case SL_ROUTE_POLL:
    case SL_ROUTE_OFFSET_GET:
        /* http.md 8.2, 6.6: a read of an unknown stream or topic. */
        if (missing_parent) {
            sl_rest_not_found(resp);
            return;
        }
        break;
    case SL_ROUTE_SEND:
    case SL_ROUTE_OFFSET_STORE:
        /* http.md 8.1, 6.6: unknown stream, topic or partition: err 20. */
        if (missing_parent || code == SL_ERR_PARTITION_NOT_FOUND)
            code = SL_ERR_RESOURCE_NOT_FOUND;
        break;
    default:
        break;
    }
    sl_rest_error_t e;
    sl_rest_error_from_code(code, &e);
    sl_rest_response_error(resp, &e);
}

/* --- helpers -------------------------------------------------------------------------- */

bool sl_rest_path_ident(const sl_rest_request_t *req, uint32_t i, sl_ident_t *out,
                        sl_rest_error_t *err)
{
    sl_assert(i < req->match->params_count);
    return sl_rest_ident(req->match->params[i], out, err);
}

bool sl_rest_path_u32(const sl_rest_request_t *req, uint32_t i, uint32_t *out, sl_rest_error_t *err)
{
    sl_assert(i < req->match->params_count);
    if (sl_rest_parse_u32(req->match->params[i], out))
        return true;
    sl_rest_error_plain(err, 400, "Invalid URL: Cannot parse `%.*s` to a `u32`",
                        (int)(req->match->params[i].len > 64 ? 64 : req->match->params[i].len),
                        (const char *)req->match->params[i].ptr);
    return false;
}

json_object *sl_rest_body_object(const sl_rest_request_t *req, sl_rest_error_t *err)
{
    return sl_rest_json_object(req->body, err);
}

static bool query_text(const sl_rest_request_t *req, const char *key, char *buf, size_t cap,
                       size_t *len, bool *present, sl_rest_error_t *err)
{
    *present = false;
    err->status = 0;
    if (!req->query)
        return true;
    *present = sl_rest_query_get(req->query, key, buf, cap, len, err);
    return err->status == 0;
}

bool sl_rest_query_u64(const sl_rest_request_t *req, const char *key, uint64_t *out, bool *present,
                       sl_rest_error_t *err)
{
    char text[64];
    size_t len;
    if (!query_text(req, key, text, sizeof(text), &len, present, err))
        return false;
    if (!*present || sl_rest_parse_u64(sl_span(text, len), out))
        return true;
    sl_rest_error_plain(err, 400, "Failed to deserialize query string: %s: invalid digit", key);
    return false;
}

bool sl_rest_query_u32(const sl_rest_request_t *req, const char *key, uint32_t *out, bool *present,
                       sl_rest_error_t *err)
{
    uint64_t v = 0;
    if (!sl_rest_query_u64(req, key, &v, present, err))
        return false;
    if (!*present)
        return true;
    if (v <= UINT32_MAX) {
        *out = (uint32_t)v;
        return true;
    }
    sl_rest_error_plain(err, 400, "Failed to deserialize query string: %s: number too large", key);
    return false;
}

bool sl_rest_query_bool(const sl_rest_request_t *req, const char *key, bool *out, bool *present,
                        sl_rest_error_t *err)
{
    char text[16];
    size_t len;
    if (!query_text(req, key, text, sizeof(text), &len, present, err))
        return false;
    if (!*present)
        return true;
    if (len == 4 && memcmp(text, "true", 4) == 0)
        *out = true;
    else if (len == 5 && memcmp(text, "false", 5) == 0)
        *out = false;
    else {
        sl_rest_error_plain(err, 400,
                            "Failed to deserialize query string: %s: provided string was not "
                            "`true` or `false`",
                            key);
        return false;
    }
    return true;
}

int sl_rest_render_no_content(const sl_rest_request_t *req, const sl_rest_call_t *call,
                              sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call, (void)payload, (void)arena;
    sl_rest_response_empty(resp, 204);
    return 0;
}

int sl_rest_render_ok_empty(const sl_rest_request_t *req, const sl_rest_call_t *call,
                            sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call, (void)payload, (void)arena;
    sl_rest_response_empty(resp, 200);
    return 0;
}

/* --- option blocks -------------------------------------------------------------------- */

/* The text of one option value (http.md 1.2): numbers in decimal, booleans
 * true/false, strings verbatim. */
static void option_text(const sl_tlv_field_t *v, char *buf, size_t len)
{
    const uint8_t *d = v->data.ptr;
    uint32_t w = sl_kind_width(v->kind);
    if (v->kind == SL_KIND_STRING || v->kind == SL_KIND_RAW || w != v->data.len) {
        snprintf(buf, len, "%.*s", (int)v->data.len, (const char *)d);
        return;
    }
    uint64_t u = 0;
    for (uint32_t i = 0; i < w && i < 8; i++)
        u |= (uint64_t)d[i] << (8 * i);
    switch (v->kind) {
    case SL_KIND_BOOL:
        snprintf(buf, len, "%s", d[0] ? "true" : "false");
        return;
    case SL_KIND_INT8:
        snprintf(buf, len, "%d", (int8_t)u);
        return;
    case SL_KIND_INT16:
        snprintf(buf, len, "%d", (int16_t)u);
        return;
    case SL_KIND_INT32:
        snprintf(buf, len, "%d", (int32_t)u);
        return;
    case SL_KIND_INT64:
        snprintf(buf, len, "%lld", (long long)(int64_t)u);
        return;
    default:
        snprintf(buf, len, "%llu", (unsigned long long)u);
        return;
    }
}

typedef struct option_item {
    sl_tlv_entry_t entry;
    bool explicit_side;
} option_item_t;

static int option_cmp(const void *a, const void *b)
{
    const sl_span_t *x = &((const option_item_t *)a)->entry.key.data;
    const sl_span_t *y = &((const option_item_t *)b)->entry.key.data;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->ptr, y->ptr, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static uint32_t options_collect(sl_span_t block, bool explicit_side, option_item_t *items,
                                uint32_t n, uint32_t cap)
{
    sl_tlv_iter_t it = sl_tlv_iter(block);
    while (n < cap && sl_tlv_next(&it, &items[n].entry))
        items[n++].explicit_side = explicit_side;
    return n;
}

json_object *sl_rest_options_object(sl_span_t explicit_block, sl_span_t derived_block)
{
    option_item_t items[64];
    uint32_t n = options_collect(explicit_block, true, items, 0, SL_ARRAY_LEN(items));
    n = options_collect(derived_block, false, items, n, SL_ARRAY_LEN(items));
    qsort(items, n, sizeof(items[0]), option_cmp);
    json_object *obj = json_object_new_object();
    for (uint32_t i = 0; i < n; i++) {
        char key[256], value[300];
        const sl_span_t *k = &items[i].entry.key.data;
        snprintf(key, sizeof(key), "%.*s", (int)k->len, (const char *)k->ptr);
        option_text(&items[i].entry.value, value, sizeof(value));
        json_object *o = json_object_new_object();
        json_object_object_add(o, "value", json_object_new_string(value));
        json_object_object_add(o, "explicit", json_object_new_boolean(items[i].explicit_side));
        json_object_object_add(obj, key, o);
    }
    return obj;
}
