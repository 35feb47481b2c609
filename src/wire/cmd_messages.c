/* Codecs of the message and consumer-offset commands (wire/cmd_messages.h). */
#include "wire/cmd_messages.h"

/* --- shared target: [consumer][stream][topic][partition] ---------------------- */

static bool target_decode(sl_reader_t *r, sl_consumer_t *consumer, sl_ident_t *stream,
                          sl_ident_t *topic, sl_opt_partition_t *partition)
{
    return sl_consumer_decode(r, consumer) && sl_ident_decode(r, stream) &&
           sl_ident_decode(r, topic) && sl_opt_partition_decode(r, partition);
}

static bool target_encode(sl_buf_t *b, const sl_consumer_t *consumer, const sl_ident_t *stream,
                          const sl_ident_t *topic, sl_opt_partition_t partition)
{
    return sl_consumer_encode(b, consumer) && sl_ident_encode(b, stream) &&
           sl_ident_encode(b, topic) && sl_opt_partition_encode(b, partition);
}

/* --- 100 PollMessages ------------------------------------------------------------ */

int sl_poll_messages_request_decode(sl_span_t body, sl_poll_messages_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    uint8_t auto_commit = 0;
    *out = (sl_poll_messages_request_t){0};
    if (target_decode(&r, &out->consumer, &out->stream_id, &out->topic_id, &out->partition) &&
        sl_strategy_decode(&r, &out->strategy) && sl_read_u32(&r, &out->count))
        sl_read_u8(&r, &auto_commit);
    out->auto_commit = auto_commit != 0;
    return sl_request_decode_end(&r);
}

int sl_poll_messages_request_encode(sl_buf_t *b, const sl_poll_messages_request_t *in)
{
    bool ok = target_encode(b, &in->consumer, &in->stream_id, &in->topic_id, in->partition) &&
              sl_strategy_encode(b, in->strategy);
    if (ok) {
        sl_put_u32(b, in->count);
        sl_put_u8(b, in->auto_commit ? 1 : 0);
    }
    return sl_encode_end(b, ok);
}

int sl_poll_messages_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                  sl_poll_messages_reply_t *out)
{
    (void)arena;
    sl_reader_t r = sl_reader(payload);
    *out = (sl_poll_messages_reply_t){0};
    if (!sl_read_u32(&r, &out->partition_id) || !sl_read_u64(&r, &out->current_offset) ||
        !sl_read_u32(&r, &out->messages_count))
        return -SL_ERR_INVALID_FORMAT;
    out->records = sl_read_rest(&r);
    /* Records are walked here with the exact rules, so that callers can
     * then iterate without failing part way. */
    sl_span_t rest = out->records;
    uint64_t total = 0;
    while (rest.len > 0) {
        if (rest.len < SL_BATCH_HEADER_SIZE)
            return -SL_ERR_INVALID_FORMAT;
        uint64_t length = sl_load_u64(rest.ptr + SL_BATCH_OFF_LENGTH);
        if (length < SL_BATCH_HEADER_SIZE || length > rest.len)
            return -SL_ERR_INVALID_FORMAT;
        sl_span_t record = sl_span(rest.ptr, (size_t)length);
        if (sl_batch_check_layout(record) != 0)
            return -SL_ERR_INVALID_FORMAT;
        total += sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
        rest = sl_span(rest.ptr + length, rest.len - (size_t)length);
    }
    return total == out->messages_count ? 0 : -SL_ERR_INVALID_FORMAT;
}

int sl_poll_messages_reply_encode(sl_buf_t *b, const sl_poll_messages_reply_t *in)
{
    sl_put_u32(b, in->partition_id);
    sl_put_u64(b, in->current_offset);
    sl_put_u32(b, in->messages_count);
    sl_put_span(b, in->records);
    return sl_encode_end(b, true);
}

size_t sl_poll_messages_reply_begin(sl_buf_t *b, uint32_t partition_id, uint64_t current_offset)
{
    sl_put_u32(b, partition_id);
    sl_put_u64(b, current_offset);
    size_t at = b->len;
    sl_put_u32(b, 0);
    return at;
}

/* --- 101 SendMessages ------------------------------------------------------------- */

int sl_send_messages_metadata_decode(sl_span_t body, sl_send_messages_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    uint32_t metadata_length;
    sl_span_t metadata;
    *out = (sl_send_messages_request_t){0};
    /* 1: the length and the section it announces are present. */
    if (!sl_read_u32(&r, &metadata_length) || !sl_read_span(&r, metadata_length, &metadata))
        return -SL_ERR_INVALID_COMMAND;
    /* 2: the section decodes and is consumed exactly. */
    sl_reader_t m = sl_reader(metadata);
    if (!sl_ident_decode(&m, &out->stream_id) || !sl_ident_decode(&m, &out->topic_id) ||
        !sl_partitioning_decode(&m, &out->partitioning) || !sl_read_u32(&m, &out->messages_count) ||
        !sl_reader_done(&m))
        return -SL_ERR_INVALID_COMMAND;
    out->batch = sl_read_rest(&r);
    return 0;
}

int sl_send_messages_request_decode(sl_span_t body, sl_send_messages_request_t *out)
{
    int rc = sl_send_messages_metadata_decode(body, out);
    if (rc == 0)
        rc = sl_batch_validate(out->batch, out->messages_count);
    return rc;
}

int sl_send_messages_metadata_encode(sl_buf_t *b, const sl_send_messages_request_t *in)
{
    size_t at = b->len;
    sl_put_u32(b, 0);
    size_t start = b->len;
    bool ok = sl_ident_encode(b, &in->stream_id) && sl_ident_encode(b, &in->topic_id) &&
              sl_partitioning_encode(b, &in->partitioning);
    sl_put_u32(b, in->messages_count);
    sl_buf_patch_u32(b, at, (uint32_t)(b->len - start));
    return sl_encode_end(b, ok);
}

int sl_send_messages_request_encode(sl_buf_t *b, const sl_send_messages_request_t *in)
{
    bool ok = in->batch.len >= SL_BATCH_HEADER_SIZE &&
              sl_load_u32(in->batch.ptr + SL_BATCH_OFF_COUNT) == in->messages_count;
    if (!ok)
        return sl_encode_end(b, false);
    int rc = sl_send_messages_metadata_encode(b, in);
    if (rc != 0)
        return rc;
    sl_put_span(b, in->batch);
    return sl_encode_end(b, true);
}

int sl_send_messages_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                  sl_send_messages_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    *out = (sl_send_messages_reply_t){0};
    if (payload.len == 0)
        return 0;
    uint32_t count;
    if (!sl_read_u32(&r, &count) ||
        sl_reader_left(&r) != (uint64_t)count * SL_SEND_CONFIRMATION_SIZE)
        return -SL_ERR_INVALID_FORMAT;
    if (count == 0)
        return 0;
    sl_send_confirmation_t *items = SL_ARENA_NEW(arena, sl_send_confirmation_t, count);
    if (!items)
        return -SL_ERR_INVALID_FORMAT;
    for (uint32_t i = 0; i < count; i++) {
        sl_read_u32(&r, &items[i].stream_id);
        sl_read_u32(&r, &items[i].topic_id);
        sl_read_u32(&r, &items[i].partition_id);
        sl_read_u64(&r, &items[i].base_offset);
    }
    out->count = count;
    out->items = items;
    return sl_reply_decode_end(&r);
}

int sl_send_messages_reply_encode(sl_buf_t *b, const sl_send_messages_reply_t *in)
{
    sl_put_u32(b, in->count);
    for (uint32_t i = 0; i < in->count; i++) {
        sl_put_u32(b, in->items[i].stream_id);
        sl_put_u32(b, in->items[i].topic_id);
        sl_put_u32(b, in->items[i].partition_id);
        sl_put_u64(b, in->items[i].base_offset);
    }
    return sl_encode_end(b, true);
}

/* --- 102 FlushUnsavedBuffer --------------------------------------------------------- */

int sl_flush_unsaved_buffer_request_decode(sl_span_t body, sl_flush_unsaved_buffer_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    uint8_t fsync = 0;
    *out = (sl_flush_unsaved_buffer_request_t){0};
    if (sl_ident_decode(&r, &out->stream_id) && sl_ident_decode(&r, &out->topic_id) &&
        sl_read_u32(&r, &out->partition_id))
        sl_read_u8(&r, &fsync);
    out->fsync = fsync != 0;
    return sl_request_decode_end(&r);
}

int sl_flush_unsaved_buffer_request_encode(sl_buf_t *b, const sl_flush_unsaved_buffer_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream_id) && sl_ident_encode(b, &in->topic_id);
    sl_put_u32(b, in->partition_id);
    sl_put_u8(b, in->fsync ? 1 : 0);
    return sl_encode_end(b, ok);
}

/* --- 120 GetConsumerOffset ------------------------------------------------------------ */

int sl_get_consumer_offset_request_decode(sl_span_t body, sl_get_consumer_offset_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_get_consumer_offset_request_t){0};
    target_decode(&r, &out->consumer, &out->stream_id, &out->topic_id, &out->partition);
    return sl_request_decode_end(&r);
}

int sl_get_consumer_offset_request_encode(sl_buf_t *b, const sl_get_consumer_offset_request_t *in)
{
    bool ok = target_encode(b, &in->consumer, &in->stream_id, &in->topic_id, in->partition);
    return sl_encode_end(b, ok);
}

int sl_get_consumer_offset_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                        sl_get_consumer_offset_reply_t *out)
{
    (void)arena;
    sl_reader_t r = sl_reader(payload);
    *out = (sl_get_consumer_offset_reply_t){0};
    if (payload.len == 0)
        return 0;
    sl_read_u32(&r, &out->partition_id);
    sl_read_u64(&r, &out->current_offset);
    sl_read_u64(&r, &out->stored_offset);
    out->found = sl_reader_done(&r);
    return sl_reply_decode_end(&r);
}

int sl_get_consumer_offset_reply_encode(sl_buf_t *b, const sl_get_consumer_offset_reply_t *in)
{
    if (in->found) {
        sl_put_u32(b, in->partition_id);
        sl_put_u64(b, in->current_offset);
        sl_put_u64(b, in->stored_offset);
    }
    return sl_encode_end(b, true);
}

/* --- 121 StoreConsumerOffset / 122 DeleteConsumerOffset ---------------------------------- */

int sl_store_consumer_offset_request_decode(sl_span_t body, sl_store_consumer_offset_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_store_consumer_offset_request_t){0};
    if (target_decode(&r, &out->consumer, &out->stream_id, &out->topic_id, &out->partition) &&
        sl_read_u64(&r, &out->offset))
        sl_ack_decode(&r, &out->ack);
    return sl_request_decode_end(&r);
}

int sl_store_consumer_offset_request_encode(sl_buf_t *b,
                                            const sl_store_consumer_offset_request_t *in)
{
    bool ok = in->ack <= SL_ACK_QUORUM &&
              target_encode(b, &in->consumer, &in->stream_id, &in->topic_id, in->partition);
    if (ok) {
        sl_put_u64(b, in->offset);
        sl_put_u8(b, in->ack);
    }
    return sl_encode_end(b, ok);
}

int sl_delete_consumer_offset_request_decode(sl_span_t body,
                                             sl_delete_consumer_offset_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_delete_consumer_offset_request_t){0};
    if (target_decode(&r, &out->consumer, &out->stream_id, &out->topic_id, &out->partition))
        sl_ack_decode(&r, &out->ack);
    return sl_request_decode_end(&r);
}

int sl_delete_consumer_offset_request_encode(sl_buf_t *b,
                                             const sl_delete_consumer_offset_request_t *in)
{
    bool ok = in->ack <= SL_ACK_QUORUM &&
              target_encode(b, &in->consumer, &in->stream_id, &in->topic_id, in->partition);
    if (ok)
        sl_put_u8(b, in->ack);
    return sl_encode_end(b, ok);
}
