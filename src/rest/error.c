/* The HTTP API's answers other than success (http.md 3): the four-field
 * JSON error body, the IggyError -> status map, the plain-text framework
 * rejections, and the response object the server sends. */
#include <ctype.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rest/internal.h"

void sl_rest_error_code_name(uint32_t code, char *buf, size_t len)
{
    const char *name = sl_err_name((int)code);
    if (!name || len == 0) {
        snprintf(buf, len, "error");
        return;
    }
    /* "StreamIdNotFound" -> "stream_id_not_found" */
    size_t o = 0;
    for (size_t i = 0; name[i] && o + 2 < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (isupper(c) && i > 0)
            buf[o++] = '_';
        buf[o++] = (char)tolower(c);
    }
    buf[o] = '\0';
}

static uint16_t status_of(uint32_t code)
{
    switch (code) {
    case SL_ERR_STREAM_ID_NOT_FOUND:
    case SL_ERR_TOPIC_ID_NOT_FOUND:
    case SL_ERR_PARTITION_NOT_FOUND:
    case SL_ERR_SEGMENT_NOT_FOUND:
    case SL_ERR_CLIENT_NOT_FOUND:
    case SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND:
    case SL_ERR_CONSUMER_GROUP_NAME_NOT_FOUND:
    case SL_ERR_CONSUMER_GROUP_MEMBER_NOT_FOUND:
    case SL_ERR_CONSUMER_OFFSET_NOT_FOUND:
    case SL_ERR_RESOURCE_NOT_FOUND:
        return 404;
    case SL_ERR_UNAUTHENTICATED:
    case SL_ERR_ACCESS_TOKEN_MISSING:
    case SL_ERR_INVALID_ACCESS_TOKEN:
    case SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN:
        return 401;
    case SL_ERR_UNAUTHORIZED:
        return 403;
    case SL_ERR_TRANSIENT_NOT_COMMITTED:
    case SL_ERR_TRANSIENT_NOT_ACCEPTED:
        return 503;
    default:
        return 400;
    }
}

static const char *field_of(uint32_t code)
{
    switch (code) {
    case SL_ERR_STREAM_ID_NOT_FOUND:
    case SL_ERR_INVALID_STREAM_ID:
        return "stream_id";
    case SL_ERR_TOPIC_ID_NOT_FOUND:
    case SL_ERR_INVALID_TOPIC_ID:
        return "topic_id";
    case SL_ERR_PARTITION_NOT_FOUND:
        return "partition_id";
    case SL_ERR_SEGMENT_NOT_FOUND:
        return "segment_id";
    case SL_ERR_CLIENT_NOT_FOUND:
        return "client_id";
    case SL_ERR_STREAM_NAME_ALREADY_EXISTS:
    case SL_ERR_INVALID_STREAM_NAME:
    case SL_ERR_TOPIC_NAME_ALREADY_EXISTS:
    case SL_ERR_INVALID_TOPIC_NAME:
    case SL_ERR_CONSUMER_GROUP_NAME_ALREADY_EXISTS:
    case SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS:
        return "name";
    case SL_ERR_INVALID_OFFSET:
        return "offset";
    case SL_ERR_INVALID_CONSUMER_GROUP_ID:
        return "consumer_group_id";
    case SL_ERR_USER_ALREADY_EXISTS:
        return "username";
    default:
        return NULL;
    }
}

void sl_rest_error_from_code(uint32_t code, sl_rest_error_t *out)
{
    *out = (sl_rest_error_t){
        .status = status_of(code),
        .id = code,
        .field = field_of(code),
    };
    out->retry_after = out->status == 503;
    const char *text = sl_strerror((int)code);
    snprintf(out->text, sizeof(out->text), "%s", text);
}

void sl_rest_error_plain(sl_rest_error_t *out, uint16_t status, const char *fmt, ...)
{
    *out = (sl_rest_error_t){.status = status, .plain = true, .id = status};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->text, sizeof(out->text), fmt, ap);
    va_end(ap);
}

void sl_rest_error_custom(sl_rest_error_t *out, uint16_t status, uint32_t id, const char *code,
                          const char *reason)
{
    *out = (sl_rest_error_t){.status = status, .id = id, .code = code};
    out->retry_after = status == 503 || status == 429;
    snprintf(out->text, sizeof(out->text), "%s", reason);
}

/* --- responses --------------------------------------------------------------------- */

void sl_rest_response_init(sl_rest_response_t *r)
{
    memset(r, 0, sizeof(*r));
    sl_buf_init(&r->body, 0);
    r->status = 500;
}

void sl_rest_response_free(sl_rest_response_t *r)
{
    sl_buf_free(&r->body);
}

void sl_rest_response_empty(sl_rest_response_t *r, uint16_t status)
{
    sl_buf_reset(&r->body);
    r->status = status;
    r->content_type = NULL;
}

void sl_rest_response_text(sl_rest_response_t *r, uint16_t status, sl_span_t text)
{
    sl_buf_reset(&r->body);
    sl_put_span(&r->body, text);
    r->status = status;
    r->content_type = "text/plain; charset=utf-8";
}

void sl_rest_response_error(sl_rest_response_t *r, const sl_rest_error_t *e)
{
    r->retry_after = e->retry_after;
    if (e->plain) {
        sl_rest_response_text(r, e->status, sl_span_str(e->text));
        return;
    }
    char name[96];
    if (!e->code)
        sl_rest_error_code_name(e->id, name, sizeof(name));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_uint64(e->id));
    json_object_object_add(o, "code", json_object_new_string(e->code ? e->code : name));
    json_object_object_add(o, "reason", json_object_new_string(e->text));
    json_object_object_add(o, "field", e->field ? json_object_new_string(e->field) : NULL);
    sl_rest_response_json(r, e->status, o);
}
