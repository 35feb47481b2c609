/* Stream, topic, partition and segment commands of the public API
 * (commands.md 8-10). CreateTopic's committed reply arrives as operation 64
 * and DeleteSegments' as 68 (or 138 when the server found the body
 * undecodable); the reply processing keys the framing off that byte. */
#include "client/client_internal.h"

#include "wire/command.h"

static sl_client_conv_t conv(sl_client_t *c)
{
    return (sl_client_conv_t){&c->arena, false};
}

/* --- streams ------------------------------------------------------------------- */

int sl_client_get_stream(sl_client_t *c, sl_id_t stream, const sl_stream_t **out)
{
    sl_get_stream_request_t req;
    if (!sl_client_ident(stream, &req.stream_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_stream_request_encode(&c->tx, &req), SL_OP_NON_REPLICATED,
                           SL_CMD_GET_STREAM, &payload);
    sl_get_stream_reply_t w;
    if (rc == 0)
        rc = sl_get_stream_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_stream_t *s = w.found ? SL_CONV_NEW(&cv, sl_stream_t, 1) : NULL;
    if (s != NULL)
        sl_client_conv_stream(&cv, &w.stream.header, w.stream.topics, s);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = s;
    return rc;
}

int sl_client_get_streams(sl_client_t *c, const sl_stream_t **items, uint32_t *count)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_STREAMS, &payload);
    sl_get_streams_reply_t w;
    if (rc == 0)
        rc = sl_get_streams_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_stream_t *list = SL_CONV_NEW(&cv, sl_stream_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++)
        sl_client_conv_stream(&cv, &w.items[i], NULL, &list[i]);
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

int sl_client_create_stream(sl_client_t *c, const char *name, const sl_stream_t **out)
{
    sl_client_call_begin(c);
    sl_create_stream_request_t req = {.name = sl_span_str(name)};
    sl_span_t payload;
    int rc = sl_client_run(c, sl_create_stream_request_encode(&c->tx, &req), SL_OP_CREATE_STREAM,
                           SL_CMD_CREATE_STREAM, &payload);
    sl_create_stream_reply_t w;
    if (rc == 0)
        rc = sl_create_stream_reply_decode(payload, &c->arena, &w);
    if (rc != 0 || out == NULL)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_stream_t *s = SL_CONV_NEW(&cv, sl_stream_t, 1);
    /* A new stream has no topics; the list stays NULL as in get_streams. */
    if (s != NULL)
        sl_client_conv_stream(&cv, &w.stream.header, NULL, s);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = s;
    return rc;
}

int sl_client_update_stream(sl_client_t *c, sl_id_t stream, const char *name)
{
    sl_update_stream_request_t req = {.name = sl_span_str(name)};
    if (!sl_client_ident(stream, &req.stream_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_update_stream_request_encode(&c->tx, &req), SL_OP_UPDATE_STREAM,
                           SL_CMD_UPDATE_STREAM, &payload);
    sl_update_stream_reply_t w;
    return rc != 0 ? rc : sl_update_stream_reply_decode(payload, &c->arena, &w);
}

int sl_client_delete_stream(sl_client_t *c, sl_id_t stream)
{
    sl_delete_stream_request_t req;
    if (!sl_client_ident(stream, &req.stream_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_stream_request_encode(&c->tx, &req), SL_OP_DELETE_STREAM,
                           SL_CMD_DELETE_STREAM, &payload);
    sl_delete_stream_reply_t w;
    return rc != 0 ? rc : sl_delete_stream_reply_decode(payload, &c->arena, &w);
}

int sl_client_purge_stream(sl_client_t *c, sl_id_t stream)
{
    sl_purge_stream_request_t req;
    if (!sl_client_ident(stream, &req.stream_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_purge_stream_request_encode(&c->tx, &req), SL_OP_PURGE_STREAM,
                           SL_CMD_PURGE_STREAM, &payload);
    sl_purge_stream_reply_t w;
    return rc != 0 ? rc : sl_purge_stream_reply_decode(payload, &c->arena, &w);
}

/* --- topics ------------------------------------------------------------------- */

static bool topic_ref(sl_id_t stream, sl_id_t topic, sl_topic_ref_t *out)
{
    return sl_client_ident(stream, &out->stream_id) && sl_client_ident(topic, &out->topic_id);
}

int sl_client_get_topic(sl_client_t *c, sl_id_t stream, sl_id_t topic, const sl_topic_t **out)
{
    sl_get_topic_request_t req;
    if (!topic_ref(stream, topic, &req))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_topic_request_encode(&c->tx, &req), SL_OP_NON_REPLICATED,
                           SL_CMD_GET_TOPIC, &payload);
    sl_get_topic_reply_t w;
    if (rc == 0)
        rc = sl_get_topic_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_topic_t *t = w.found ? SL_CONV_NEW(&cv, sl_topic_t, 1) : NULL;
    if (t != NULL)
        sl_client_conv_topic(&cv, &w.topic.header, w.topic.partitions, t);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = t;
    return rc;
}

int sl_client_get_topics(sl_client_t *c, sl_id_t stream, const sl_topic_t **items, uint32_t *count)
{
    sl_get_topics_request_t req;
    if (!sl_client_ident(stream, &req.stream_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_topics_request_encode(&c->tx, &req), SL_OP_NON_REPLICATED,
                           SL_CMD_GET_TOPICS, &payload);
    sl_get_topics_reply_t w;
    if (rc == 0)
        rc = sl_get_topics_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_topic_t *list = SL_CONV_NEW(&cv, sl_topic_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++)
        sl_client_conv_topic(&cv, &w.items[i], NULL, &list[i]);
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

/* Encodes options into a buffer the caller frees. */
static int encode_options(sl_client_t *c, const sl_topic_options_t *options, sl_buf_t *block)
{
    sl_buf_init(block, c->frame_max);
    return sl_client_topic_options_encode(block, options);
}

int sl_client_create_topic(sl_client_t *c, sl_id_t stream, const char *name,
                           uint32_t partitions_count, const sl_topic_options_t *options,
                           const sl_topic_t **out)
{
    sl_create_topic_request_t req = {.partitions_count = partitions_count,
                                     .name = sl_span_str(name)};
    if (!sl_client_ident(stream, &req.stream_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_buf_t block;
    int rc = encode_options(c, options, &block);
    req.options = sl_buf_span(&block);
    if (rc == 0)
        rc = sl_create_topic_request_encode(&c->tx, &req);
    sl_buf_free(&block);
    sl_span_t payload;
    rc = sl_client_run(c, rc, SL_OP_CREATE_TOPIC, SL_CMD_CREATE_TOPIC, &payload);
    sl_create_topic_reply_t w;
    if (rc == 0)
        rc = sl_create_topic_reply_decode(payload, &c->arena, &w);
    if (rc != 0 || out == NULL)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_topic_t *t = SL_CONV_NEW(&cv, sl_topic_t, 1);
    if (t != NULL)
        sl_client_conv_topic(&cv, &w.topic.header, w.topic.partitions, t);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = t;
    return rc;
}

int sl_client_update_topic(sl_client_t *c, sl_id_t stream, sl_id_t topic, const char *name,
                           const sl_topic_options_t *options)
{
    sl_update_topic_request_t req = {.name = sl_span_str(name)};
    if (!sl_client_ident(stream, &req.stream_id) || !sl_client_ident(topic, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_buf_t block;
    int rc = encode_options(c, options, &block);
    req.options = sl_buf_span(&block);
    if (rc == 0)
        rc = sl_update_topic_request_encode(&c->tx, &req);
    sl_buf_free(&block);
    sl_span_t payload;
    rc = sl_client_run(c, rc, SL_OP_UPDATE_TOPIC, SL_CMD_UPDATE_TOPIC, &payload);
    sl_update_topic_reply_t w;
    return rc != 0 ? rc : sl_update_topic_reply_decode(payload, &c->arena, &w);
}

int sl_client_delete_topic(sl_client_t *c, sl_id_t stream, sl_id_t topic)
{
    sl_delete_topic_request_t req;
    if (!topic_ref(stream, topic, &req))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_topic_request_encode(&c->tx, &req), SL_OP_DELETE_TOPIC,
                           SL_CMD_DELETE_TOPIC, &payload);
    sl_delete_topic_reply_t w;
    return rc != 0 ? rc : sl_delete_topic_reply_decode(payload, &c->arena, &w);
}

int sl_client_purge_topic(sl_client_t *c, sl_id_t stream, sl_id_t topic)
{
    sl_purge_topic_request_t req;
    if (!topic_ref(stream, topic, &req))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_purge_topic_request_encode(&c->tx, &req), SL_OP_PURGE_TOPIC,
                           SL_CMD_PURGE_TOPIC, &payload);
    sl_purge_topic_reply_t w;
    return rc != 0 ? rc : sl_purge_topic_reply_decode(payload, &c->arena, &w);
}

/* --- partitions and segments ----------------------------------------------------- */

int sl_client_create_partitions(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t count)
{
    sl_create_partitions_request_t req = {.partitions_count = count};
    if (!sl_client_ident(stream, &req.stream_id) || !sl_client_ident(topic, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_create_partitions_request_encode(&c->tx, &req),
                           SL_OP_CREATE_PARTITIONS, SL_CMD_CREATE_PARTITIONS, &payload);
    sl_create_partitions_reply_t w;
    return rc != 0 ? rc : sl_create_partitions_reply_decode(payload, &c->arena, &w);
}

int sl_client_delete_partitions(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t count)
{
    sl_delete_partitions_request_t req = {.partitions_count = count};
    if (!sl_client_ident(stream, &req.stream_id) || !sl_client_ident(topic, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_partitions_request_encode(&c->tx, &req),
                           SL_OP_DELETE_PARTITIONS, SL_CMD_DELETE_PARTITIONS, &payload);
    sl_delete_partitions_reply_t w;
    return rc != 0 ? rc : sl_delete_partitions_reply_decode(payload, &c->arena, &w);
}

int sl_client_delete_segments(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition_id,
                              uint32_t segments_count)
{
    sl_delete_segments_request_t req = {.partition_id = partition_id,
                                        .segments_count = segments_count};
    if (!sl_client_ident(stream, &req.stream_id) || !sl_client_ident(topic, &req.topic_id))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_delete_segments_request_encode(&c->tx, &req),
                           SL_OP_DELETE_SEGMENTS, SL_CMD_DELETE_SEGMENTS, &payload);
    sl_delete_segments_reply_t w;
    return rc != 0 ? rc : sl_delete_segments_reply_decode(payload, &c->arena, &w);
}
