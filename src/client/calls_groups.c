/* Consumer-group commands of the public API (commands.md 11): get, list,
 * create, delete, join, leave and sync. */
#include "client/client_internal.h"

#include "wire/command.h"

static sl_client_conv_t conv(sl_client_t *c)
{
    return (sl_client_conv_t){&c->arena, false};
}

static bool target(sl_id_t stream, sl_id_t topic, sl_id_t group, sl_group_target_t *out)
{
    return sl_client_ident(stream, &out->stream) && sl_client_ident(topic, &out->topic) &&
           sl_client_ident(group, &out->group);
}

int sl_client_get_consumer_group(sl_client_t *c, sl_id_t stream, sl_id_t topic, sl_id_t group,
                                 const sl_consumer_group_t **out)
{
    sl_get_consumer_group_request_t req;
    if (!target(stream, topic, group, &req))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_consumer_group_request_encode(&c->tx, &req),
                           SL_OP_NON_REPLICATED, SL_CMD_GET_CONSUMER_GROUP, &payload);
    sl_get_consumer_group_reply_t w;
    if (rc == 0)
        rc = sl_get_consumer_group_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_consumer_group_t *g = w.found ? SL_CONV_NEW(&cv, sl_consumer_group_t, 1) : NULL;
    if (g != NULL)
        sl_client_conv_group(&cv, &w.group.header, w.group.members, g);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = g;
    return rc;
}

int sl_client_get_consumer_groups(sl_client_t *c, sl_id_t stream, sl_id_t topic,
                                  const sl_consumer_group_t **items, uint32_t *count)
{
    sl_get_consumer_groups_request_t req;
    if (!sl_client_ident(stream, &req.stream) || !sl_client_ident(topic, &req.topic))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_consumer_groups_request_encode(&c->tx, &req),
                           SL_OP_NON_REPLICATED, SL_CMD_GET_CONSUMER_GROUPS, &payload);
    sl_get_consumer_groups_reply_t w;
    if (rc == 0)
        rc = sl_get_consumer_groups_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_consumer_group_t *list = SL_CONV_NEW(&cv, sl_consumer_group_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++)
        sl_client_conv_group(&cv, &w.items[i], NULL, &list[i]);
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

int sl_client_create_consumer_group(sl_client_t *c, sl_id_t stream, sl_id_t topic, const char *name,
                                    const sl_consumer_group_t **out)
{
    sl_create_consumer_group_request_t req = {.name = sl_span_str(name)};
    if (!sl_client_ident(stream, &req.stream) || !sl_client_ident(topic, &req.topic))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_create_consumer_group_request_encode(&c->tx, &req),
                           SL_OP_CREATE_CONSUMER_GROUP, SL_CMD_CREATE_CONSUMER_GROUP, &payload);
    sl_create_consumer_group_reply_t w;
    if (rc == 0)
        rc = sl_create_consumer_group_reply_decode(payload, &c->arena, &w);
    if (rc != 0 || out == NULL)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_consumer_group_t *g = SL_CONV_NEW(&cv, sl_consumer_group_t, 1);
    if (g != NULL)
        sl_client_conv_group(&cv, &w.header, w.members, g);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = g;
    return rc;
}

/* Delete, join and leave share a body and an empty success payload. */
typedef int (*group_encode_t)(sl_buf_t *b, const sl_group_target_t *in);

static int group_write(sl_client_t *c, sl_id_t stream, sl_id_t topic, sl_id_t group,
                       uint8_t operation, uint32_t code, group_encode_t encode)
{
    sl_group_target_t req;
    if (!target(stream, topic, group, &req))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, encode(&c->tx, &req), operation, code, &payload);
    /* All three succeed with an empty payload after the result section. */
    sl_delete_consumer_group_reply_t w;
    return rc != 0 ? rc : sl_delete_consumer_group_reply_decode(payload, &c->arena, &w);
}

int sl_client_delete_consumer_group(sl_client_t *c, sl_id_t stream, sl_id_t topic, sl_id_t group)
{
    return group_write(c, stream, topic, group, SL_OP_DELETE_CONSUMER_GROUP,
                       SL_CMD_DELETE_CONSUMER_GROUP, sl_delete_consumer_group_request_encode);
}

int sl_client_join_consumer_group(sl_client_t *c, sl_id_t stream, sl_id_t topic, sl_id_t group)
{
    return group_write(c, stream, topic, group, SL_OP_JOIN_CONSUMER_GROUP,
                       SL_CMD_JOIN_CONSUMER_GROUP, sl_join_consumer_group_request_encode);
}

int sl_client_leave_consumer_group(sl_client_t *c, sl_id_t stream, sl_id_t topic, sl_id_t group)
{
    return group_write(c, stream, topic, group, SL_OP_LEAVE_CONSUMER_GROUP,
                       SL_CMD_LEAVE_CONSUMER_GROUP, sl_leave_consumer_group_request_encode);
}

int sl_client_sync_consumer_group(sl_client_t *c, sl_id_t stream, sl_id_t topic, sl_id_t group,
                                  const sl_assignment_t **out)
{
    sl_sync_consumer_group_request_t req;
    if (!target(stream, topic, group, &req))
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, sl_sync_consumer_group_request_encode(&c->tx, &req),
                           SL_OP_NON_REPLICATED, SL_CMD_SYNC_CONSUMER_GROUP, &payload);
    sl_sync_consumer_group_reply_t w;
    if (rc == 0)
        rc = sl_sync_consumer_group_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_assignment_t *a = w.found ? SL_CONV_NEW(&cv, sl_assignment_t, 1) : NULL;
    /* The partition array is already in the client's arena. */
    if (a != NULL)
        *a = (sl_assignment_t){w.generation, w.partitions_count, w.partitions};
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = a;
    return rc;
}
