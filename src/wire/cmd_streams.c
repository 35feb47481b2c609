/* Stream command codecs (wire/cmd_streams.h). */
#include "wire/cmd_streams.h"

#include "wire/tlv.h"

/* --- elements ------------------------------------------------------------------ */

bool sl_stream_header_decode(sl_reader_t *r, sl_stream_header_t *out)
{
    *out = (sl_stream_header_t){0};
    return sl_read_u32(r, &out->id) && sl_read_u64(r, &out->created_at) &&
           sl_read_u32(r, &out->topics_count) && sl_read_u64(r, &out->size_bytes) &&
           sl_read_u64(r, &out->messages_count) && sl_name_decode(r, &out->name) &&
           sl_poptions_decode(r, &out->options);
}

bool sl_stream_header_encode(sl_buf_t *b, const sl_stream_header_t *h)
{
    uint32_t pairs;
    if (!sl_options_validate(h->options, &pairs))
        return false;
    sl_put_u32(b, h->id);
    sl_put_u64(b, h->created_at);
    sl_put_u32(b, h->topics_count);
    sl_put_u64(b, h->size_bytes);
    sl_put_u64(b, h->messages_count);
    return sl_name_encode(b, h->name) && sl_poptions_encode(b, h->options);
}

bool sl_stream_details_decode(sl_reader_t *r, sl_arena_t *arena, sl_stream_details_t *out)
{
    *out = (sl_stream_details_t){0};
    if (!sl_stream_header_decode(r, &out->header))
        return false;
    uint32_t n = out->header.topics_count;
    /* Bound the count by the bytes present before allocating. */
    if ((uint64_t)n * SL_TOPIC_HEADER_SIZE_MIN > sl_reader_left(r)) {
        r->failed = true;
        return false;
    }
    sl_topic_header_t *topics = NULL;
    if (n > 0 && (topics = SL_ARENA_NEW(arena, sl_topic_header_t, n)) == NULL) {
        r->failed = true;
        return false;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!sl_topic_header_decode(r, &topics[i]))
            return false;
    out->topics = topics;
    if (sl_reader_left(r) != 0)
        r->failed = true;
    return sl_reader_ok(r);
}

bool sl_stream_details_encode(sl_buf_t *b, const sl_stream_details_t *d)
{
    uint32_t n = d->header.topics_count;
    if (n > 0 && d->topics == NULL)
        return false;
    bool ok = sl_stream_header_encode(b, &d->header);
    for (uint32_t i = 0; i < n && ok; i++)
        ok = sl_topic_header_encode(b, &d->topics[i]);
    return ok;
}

/* --- shared request shapes --------------------------------------------------------- */

static int stream_ref_decode(sl_span_t body, sl_stream_ref_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_ident_decode(&r, &out->stream_id);
    return sl_request_decode_end(&r);
}

static int stream_ref_encode(sl_buf_t *b, const sl_stream_ref_t *in)
{
    return sl_encode_end(b, sl_ident_encode(b, &in->stream_id));
}

int sl_get_stream_request_decode(sl_span_t body, sl_get_stream_request_t *out)
{
    return stream_ref_decode(body, out);
}
int sl_get_stream_request_encode(sl_buf_t *b, const sl_get_stream_request_t *in)
{
    return stream_ref_encode(b, in);
}
int sl_delete_stream_request_decode(sl_span_t body, sl_delete_stream_request_t *out)
{
    return stream_ref_decode(body, out);
}
int sl_delete_stream_request_encode(sl_buf_t *b, const sl_delete_stream_request_t *in)
{
    return stream_ref_encode(b, in);
}
int sl_purge_stream_request_decode(sl_span_t body, sl_purge_stream_request_t *out)
{
    return stream_ref_decode(body, out);
}
int sl_purge_stream_request_encode(sl_buf_t *b, const sl_purge_stream_request_t *in)
{
    return stream_ref_encode(b, in);
}

/* The options block that ends a stream request: structure first (3), then
 * the catalog, which has no stream keys, so any entry is 4041. */
static int stream_options_check(sl_span_t block)
{
    uint32_t pairs;
    if (!sl_options_validate(block, &pairs))
        return -SL_ERR_INVALID_COMMAND;
    return pairs == 0 ? 0 : -SL_ERR_UNSUPPORTED_OPTION_KEY;
}

/* Encoders send any well-formed block: refusing keys is the server's call. */
static bool stream_options_encodable(sl_span_t block)
{
    uint32_t pairs;
    return sl_options_validate(block, &pairs);
}

/* --- 200 GetStream ------------------------------------------------------------------ */

int sl_get_stream_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_stream_reply_t *out)
{
    *out = (sl_get_stream_reply_t){0};
    if (payload.len == 0)
        return 0;
    sl_reader_t r = sl_reader(payload);
    out->found = sl_stream_details_decode(&r, arena, &out->stream);
    return sl_reply_decode_end(&r);
}

int sl_get_stream_reply_encode(sl_buf_t *b, const sl_get_stream_reply_t *in)
{
    return sl_encode_end(b, !in->found || sl_stream_details_encode(b, &in->stream));
}

/* --- 201 GetStreams ----------------------------------------------------------------- */

int sl_get_streams_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_streams_reply_t *out)
{
    *out = (sl_get_streams_reply_t){0};
    /* No count on the wire: a first pass counts (and validates) the headers,
     * so the array is sized by what the bytes really hold. */
    sl_reader_t r = sl_reader(payload);
    sl_stream_header_t scratch;
    uint32_t n = 0;
    while (sl_reader_left(&r) > 0) {
        if (!sl_stream_header_decode(&r, &scratch))
            return -SL_ERR_INVALID_FORMAT;
        n++;
    }
    if (n == 0)
        return 0;
    sl_stream_header_t *items = SL_ARENA_NEW(arena, sl_stream_header_t, n);
    if (items == NULL)
        return -SL_ERR_INVALID_FORMAT;
    r = sl_reader(payload);
    for (uint32_t i = 0; i < n; i++) {
        bool ok = sl_stream_header_decode(&r, &items[i]);
        sl_assert(ok); /* the first pass read the same bytes */
    }
    *out = (sl_get_streams_reply_t){n, items};
    return sl_reply_decode_end(&r);
}

int sl_get_streams_reply_encode(sl_buf_t *b, const sl_get_streams_reply_t *in)
{
    bool ok = in->count == 0 || in->items != NULL;
    for (uint32_t i = 0; i < in->count && ok; i++)
        ok = sl_stream_header_encode(b, &in->items[i]);
    return sl_encode_end(b, ok);
}

/* --- 202 CreateStream --------------------------------------------------------------- */

int sl_create_stream_request_decode(sl_span_t body, sl_create_stream_request_t *out)
{
    *out = (sl_create_stream_request_t){0};
    sl_reader_t r = sl_reader(body);
    if (!sl_name_decode(&r, &out->name))
        return -SL_ERR_INVALID_COMMAND;
    out->options = sl_read_rest(&r);
    return stream_options_check(out->options);
}

int sl_create_stream_request_encode(sl_buf_t *b, const sl_create_stream_request_t *in)
{
    bool ok = stream_options_encodable(in->options) && sl_name_encode(b, in->name);
    if (ok)
        sl_put_span(b, in->options);
    return sl_encode_end(b, ok);
}

int sl_create_stream_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                  sl_create_stream_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_stream_details_decode(&r, arena, &out->stream);
    return sl_reply_decode_end(&r);
}

int sl_create_stream_reply_encode(sl_buf_t *b, const sl_create_stream_reply_t *in)
{
    return sl_encode_end(b, sl_stream_details_encode(b, &in->stream));
}

/* --- 204 UpdateStream --------------------------------------------------------------- */

int sl_update_stream_request_decode(sl_span_t body, sl_update_stream_request_t *out)
{
    *out = (sl_update_stream_request_t){0};
    sl_reader_t r = sl_reader(body);
    if (!sl_ident_decode(&r, &out->stream_id) || !sl_name_decode(&r, &out->name))
        return -SL_ERR_INVALID_COMMAND;
    out->options = sl_read_rest(&r);
    return stream_options_check(out->options);
}

int sl_update_stream_request_encode(sl_buf_t *b, const sl_update_stream_request_t *in)
{
    bool ok = stream_options_encodable(in->options) && sl_ident_encode(b, &in->stream_id) &&
              sl_name_encode(b, in->name);
    if (ok)
        sl_put_span(b, in->options);
    return sl_encode_end(b, ok);
}
