/* Topic, partition and segment command codecs (wire/cmd_topics.h). */
#include "wire/cmd_topics.h"

#include "base/limits.h"
#include "wire/tlv.h"

/* --- elements ------------------------------------------------------------------ */

static bool valid_compression(uint8_t code)
{
    return code == SL_COMPRESSION_NONE || code == SL_COMPRESSION_GZIP;
}

bool sl_topic_header_decode(sl_reader_t *r, sl_topic_header_t *out)
{
    *out = (sl_topic_header_t){0};
    bool ok = sl_read_u32(r, &out->id) && sl_read_u64(r, &out->created_at) &&
              sl_read_u32(r, &out->partitions_count) && sl_read_u64(r, &out->message_expiry) &&
              sl_read_u8(r, &out->compression_algorithm) && sl_read_u64(r, &out->max_topic_size) &&
              sl_read_u64(r, &out->size_bytes) && sl_read_u64(r, &out->messages_count) &&
              sl_name_decode(r, &out->name) && sl_poptions_decode(r, &out->options) &&
              sl_poptions_decode(r, &out->derived_options);
    if (ok && !valid_compression(out->compression_algorithm)) {
        r->failed = true;
        ok = false;
    }
    return ok;
}

/* A block a reply may carry: the structural rules of options.md 1. */
static bool block_ok(sl_span_t block)
{
    uint32_t pairs;
    return sl_options_validate(block, &pairs);
}

bool sl_topic_header_encode(sl_buf_t *b, const sl_topic_header_t *h)
{
    if (!valid_compression(h->compression_algorithm) || !block_ok(h->options) ||
        !block_ok(h->derived_options))
        return false;
    sl_put_u32(b, h->id);
    sl_put_u64(b, h->created_at);
    sl_put_u32(b, h->partitions_count);
    sl_put_u64(b, h->message_expiry);
    sl_put_u8(b, h->compression_algorithm);
    sl_put_u64(b, h->max_topic_size);
    sl_put_u64(b, h->size_bytes);
    sl_put_u64(b, h->messages_count);
    return sl_name_encode(b, h->name) && sl_poptions_encode(b, h->options) &&
           sl_poptions_encode(b, h->derived_options);
}

bool sl_partition_info_decode(sl_reader_t *r, sl_partition_info_t *out)
{
    *out = (sl_partition_info_t){0};
    return sl_read_u32(r, &out->id) && sl_read_u64(r, &out->created_at) &&
           sl_read_u32(r, &out->segments_count) && sl_read_u64(r, &out->current_offset) &&
           sl_read_u64(r, &out->size_bytes) && sl_read_u64(r, &out->messages_count);
}

bool sl_partition_info_encode(sl_buf_t *b, const sl_partition_info_t *p)
{
    sl_put_u32(b, p->id);
    sl_put_u64(b, p->created_at);
    sl_put_u32(b, p->segments_count);
    sl_put_u64(b, p->current_offset);
    sl_put_u64(b, p->size_bytes);
    sl_put_u64(b, p->messages_count);
    return sl_buf_ok(b);
}

bool sl_topic_details_decode(sl_reader_t *r, sl_arena_t *arena, sl_topic_details_t *out)
{
    *out = (sl_topic_details_t){0};
    if (!sl_topic_header_decode(r, &out->header))
        return false;
    uint32_t n = out->header.partitions_count;
    /* The count must match the bytes exactly before anything is allocated. */
    if ((uint64_t)n * SL_PARTITION_INFO_SIZE != sl_reader_left(r)) {
        r->failed = true;
        return false;
    }
    if (n == 0)
        return true;
    sl_partition_info_t *parts = SL_ARENA_NEW(arena, sl_partition_info_t, n);
    if (parts == NULL) {
        r->failed = true;
        return false;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!sl_partition_info_decode(r, &parts[i]))
            return false;
    out->partitions = parts;
    return true;
}

bool sl_topic_details_encode(sl_buf_t *b, const sl_topic_details_t *d)
{
    uint32_t n = d->header.partitions_count;
    if (n > 0 && d->partitions == NULL)
        return false;
    bool ok = sl_topic_header_encode(b, &d->header);
    for (uint32_t i = 0; i < n && ok; i++)
        ok = sl_partition_info_encode(b, &d->partitions[i]);
    return ok;
}

/* --- shared request shapes --------------------------------------------------------- */

static int topic_ref_decode(sl_span_t body, sl_topic_ref_t *out)
{
    /* A failed read fails the reader, so one check at the end covers both. */
    sl_reader_t r = sl_reader(body);
    sl_ident_decode(&r, &out->stream_id);
    sl_ident_decode(&r, &out->topic_id);
    return sl_request_decode_end(&r);
}

static int topic_ref_encode(sl_buf_t *b, const sl_topic_ref_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream_id) && sl_ident_encode(b, &in->topic_id);
    return sl_encode_end(b, ok);
}

int sl_get_topic_request_decode(sl_span_t body, sl_get_topic_request_t *out)
{
    return topic_ref_decode(body, out);
}
int sl_get_topic_request_encode(sl_buf_t *b, const sl_get_topic_request_t *in)
{
    return topic_ref_encode(b, in);
}
int sl_delete_topic_request_decode(sl_span_t body, sl_delete_topic_request_t *out)
{
    return topic_ref_decode(body, out);
}
int sl_delete_topic_request_encode(sl_buf_t *b, const sl_delete_topic_request_t *in)
{
    return topic_ref_encode(b, in);
}
int sl_purge_topic_request_decode(sl_span_t body, sl_purge_topic_request_t *out)
{
    return topic_ref_decode(body, out);
}
int sl_purge_topic_request_encode(sl_buf_t *b, const sl_purge_topic_request_t *in)
{
    return topic_ref_encode(b, in);
}

/* --- 300 GetTopic ------------------------------------------------------------------- */

int sl_get_topic_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_topic_reply_t *out)
{
    *out = (sl_get_topic_reply_t){0};
    if (payload.len == 0)
        return 0;
    sl_reader_t r = sl_reader(payload);
    out->found = sl_topic_details_decode(&r, arena, &out->topic);
    return sl_reply_decode_end(&r);
}

int sl_get_topic_reply_encode(sl_buf_t *b, const sl_get_topic_reply_t *in)
{
    bool ok = !in->found || sl_topic_details_encode(b, &in->topic);
    return sl_encode_end(b, ok);
}

/* --- 301 GetTopics ------------------------------------------------------------------ */

int sl_get_topics_request_decode(sl_span_t body, sl_get_topics_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_ident_decode(&r, &out->stream_id);
    return sl_request_decode_end(&r);
}

int sl_get_topics_request_encode(sl_buf_t *b, const sl_get_topics_request_t *in)
{
    return sl_encode_end(b, sl_ident_encode(b, &in->stream_id));
}

int sl_get_topics_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_topics_reply_t *out)
{
    *out = (sl_get_topics_reply_t){0};
    sl_reader_t r = sl_reader(payload);
    uint32_t n;
    if (!sl_read_u32(&r, &n) || (uint64_t)n * SL_TOPIC_HEADER_SIZE_MIN > sl_reader_left(&r))
        return -SL_ERR_INVALID_FORMAT;
    sl_topic_header_t *items = NULL;
    if (n > 0 && (items = SL_ARENA_NEW(arena, sl_topic_header_t, n)) == NULL)
        return -SL_ERR_INVALID_FORMAT;
    for (uint32_t i = 0; i < n; i++)
        if (!sl_topic_header_decode(&r, &items[i]))
            return -SL_ERR_INVALID_FORMAT;
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = (sl_get_topics_reply_t){n, items};
    return rc;
}

int sl_get_topics_reply_encode(sl_buf_t *b, const sl_get_topics_reply_t *in)
{
    bool ok = in->count == 0 || in->items != NULL;
    if (ok)
        sl_put_u32(b, in->count);
    for (uint32_t i = 0; i < in->count && ok; i++)
        ok = sl_topic_header_encode(b, &in->items[i]);
    return sl_encode_end(b, ok);
}

/* --- 302 CreateTopic ---------------------------------------------------------------- */

int sl_create_topic_request_decode(sl_span_t body, sl_create_topic_request_t *out)
{
    *out = (sl_create_topic_request_t){0};
    sl_reader_t r = sl_reader(body);
    uint32_t pairs;
    if (!sl_ident_decode(&r, &out->stream_id) || !sl_read_u32(&r, &out->partitions_count) ||
        !sl_name_decode(&r, &out->name))
        return -SL_ERR_INVALID_COMMAND;
    out->options = sl_read_rest(&r);
    if (!sl_options_validate(out->options, &pairs))
        return -SL_ERR_INVALID_COMMAND;
    return sl_topic_options_resolve_create(out->options, out->partitions_count, &out->config);
}

int sl_create_topic_request_encode(sl_buf_t *b, const sl_create_topic_request_t *in)
{
    bool ok = block_ok(in->options) && sl_ident_encode(b, &in->stream_id);
    if (ok) {
        sl_put_u32(b, in->partitions_count);
        ok = sl_name_encode(b, in->name);
    }
    if (ok)
        sl_put_span(b, in->options);
    return sl_encode_end(b, ok);
}

int sl_create_topic_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_create_topic_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_topic_details_decode(&r, arena, &out->topic);
    return sl_reply_decode_end(&r);
}

int sl_create_topic_reply_encode(sl_buf_t *b, const sl_create_topic_reply_t *in)
{
    return sl_encode_end(b, sl_topic_details_encode(b, &in->topic));
}

/* --- 304 UpdateTopic ---------------------------------------------------------------- */

int sl_update_topic_request_decode(sl_span_t body, sl_update_topic_request_t *out)
{
    *out = (sl_update_topic_request_t){0};
    sl_reader_t r = sl_reader(body);
    uint32_t pairs;
    if (!sl_ident_decode(&r, &out->stream_id) || !sl_ident_decode(&r, &out->topic_id) ||
        !sl_name_decode(&r, &out->name))
        return -SL_ERR_INVALID_COMMAND;
    out->options = sl_read_rest(&r);
    if (!sl_options_validate(out->options, &pairs))
        return -SL_ERR_INVALID_COMMAND;
    return sl_topic_patch_parse(out->options, &out->patch);
}

int sl_update_topic_request_encode(sl_buf_t *b, const sl_update_topic_request_t *in)
{
    bool ok = block_ok(in->options) && sl_ident_encode(b, &in->stream_id) &&
              sl_ident_encode(b, &in->topic_id) && sl_name_encode(b, in->name);
    if (ok)
        sl_put_span(b, in->options);
    return sl_encode_end(b, ok);
}

int sl_update_topic_check_size(const sl_update_topic_request_t *req, uint64_t stored_segment_size)
{
    return sl_topic_patch_check_size(&req->patch, stored_segment_size);
}

/* --- 402 CreatePartitions / 403 DeletePartitions ------------------------------------ */

static int partitions_change_decode(sl_span_t body, sl_partitions_change_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_partitions_change_t){0};
    bool ok = sl_ident_decode(&r, &out->stream_id) && sl_ident_decode(&r, &out->topic_id) &&
              sl_read_u32(&r, &out->partitions_count);
    if (!ok)
        return -SL_ERR_INVALID_COMMAND;
    if (out->partitions_count == 0 || out->partitions_count > SL_PARTITIONS_PER_REQUEST_MAX)
        return -SL_ERR_TOO_MANY_PARTITIONS;
    return 0;
}

static int partitions_change_encode(sl_buf_t *b, const sl_partitions_change_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream_id) && sl_ident_encode(b, &in->topic_id);
    if (ok)
        sl_put_u32(b, in->partitions_count);
    return sl_encode_end(b, ok);
}

int sl_create_partitions_request_decode(sl_span_t body, sl_create_partitions_request_t *out)
{
    return partitions_change_decode(body, out);
}
int sl_create_partitions_request_encode(sl_buf_t *b, const sl_create_partitions_request_t *in)
{
    return partitions_change_encode(b, in);
}
int sl_delete_partitions_request_decode(sl_span_t body, sl_delete_partitions_request_t *out)
{
    return partitions_change_decode(body, out);
}
int sl_delete_partitions_request_encode(sl_buf_t *b, const sl_delete_partitions_request_t *in)
{
    return partitions_change_encode(b, in);
}

/* --- 503 DeleteSegments ------------------------------------------------------------- */

int sl_delete_segments_request_decode(sl_span_t body, sl_delete_segments_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_delete_segments_request_t){0};
    sl_ident_decode(&r, &out->stream_id);
    sl_ident_decode(&r, &out->topic_id);
    sl_read_u32(&r, &out->partition_id);
    sl_read_u32(&r, &out->segments_count);
    return sl_request_decode_end(&r);
}

int sl_delete_segments_request_encode(sl_buf_t *b, const sl_delete_segments_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream_id) && sl_ident_encode(b, &in->topic_id);
    if (ok) {
        sl_put_u32(b, in->partition_id);
        sl_put_u32(b, in->segments_count);
    }
    return sl_encode_end(b, ok);
}
