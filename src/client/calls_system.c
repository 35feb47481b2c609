/* System commands of the public API (commands.md 3): GetMe, GetClient,
 * GetClients, GetStats, GetClusterMetadata, DescribeOptions, GetSnapshot.
 * Each encodes with the wire codec, runs through sl_client_run and converts
 * the decoded reply into the public types in the client's arena. */
#include "client/client_internal.h"

#include "wire/command.h"

static sl_client_conv_t conv(sl_client_t *c)
{
    return (sl_client_conv_t){&c->arena, false};
}

int sl_client_get_me(sl_client_t *c, const sl_client_info_t **out)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_ME, &payload);
    sl_get_me_reply_t w;
    if (rc == 0)
        rc = sl_get_me_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_client_info_t *info = SL_CONV_NEW(&cv, sl_client_info_t, 1);
    if (info != NULL)
        sl_client_conv_client(&cv, &w.client.header, w.client.groups, info);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = info;
    return rc;
}

int sl_client_get_client(sl_client_t *c, uint32_t client_id, const sl_client_info_t **out)
{
    sl_client_call_begin(c);
    sl_get_client_request_t req = {.client_id = client_id};
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_client_request_encode(&c->tx, &req), SL_OP_NON_REPLICATED,
                           SL_CMD_GET_CLIENT, &payload);
    sl_get_client_reply_t w;
    if (rc == 0)
        rc = sl_get_client_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_client_info_t *info = w.found ? SL_CONV_NEW(&cv, sl_client_info_t, 1) : NULL;
    if (info != NULL)
        sl_client_conv_client(&cv, &w.client.header, w.client.groups, info);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = info;
    return rc;
}

int sl_client_get_clients(sl_client_t *c, const sl_client_info_t **items, uint32_t *count)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_CLIENTS, &payload);
    sl_get_clients_reply_t w;
    if (rc == 0)
        rc = sl_get_clients_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_client_info_t *list = SL_CONV_NEW(&cv, sl_client_info_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++)
        sl_client_conv_client(&cv, &w.items[i], NULL, &list[i]);
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

int sl_client_get_stats(sl_client_t *c, const sl_stats_t **out)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_STATS, &payload);
    sl_get_stats_reply_t w;
    if (rc == 0)
        rc = sl_get_stats_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_stats_t *stats = SL_CONV_NEW(&cv, sl_stats_t, 1);
    if (stats != NULL)
        sl_client_conv_stats(&cv, &w, stats);
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = stats;
    return rc;
}

int sl_client_get_cluster_metadata(sl_client_t *c, const sl_cluster_t **out)
{
    sl_client_call_begin(c);
    sl_span_t payload;
    int rc = sl_client_run(c, 0, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, &payload);
    sl_get_cluster_metadata_reply_t w;
    if (rc == 0)
        rc = sl_get_cluster_metadata_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_cluster_t *cluster = SL_CONV_NEW(&cv, sl_cluster_t, 1);
    sl_node_info_t *nodes = SL_CONV_NEW(&cv, sl_node_info_t, w.count);
    for (uint32_t i = 0; nodes != NULL && i < w.count; i++) {
        const sl_cluster_node_t *n = &w.items[i];
        nodes[i] = (sl_node_info_t){
            .name = sl_client_conv_str(&cv, n->name),
            .ip = sl_client_conv_str(&cv, n->ip),
            .tcp_port = n->tcp_port,
            .quic_port = n->quic_port,
            .http_port = n->http_port,
            .websocket_port = n->websocket_port,
            .role = n->role,
            .status = n->status,
        };
    }
    if (cluster != NULL)
        *cluster = (sl_cluster_t){sl_client_conv_str(&cv, w.name), w.count, nodes};
    rc = sl_client_conv_end(&cv);
    if (rc == 0)
        *out = cluster;
    return rc;
}

int sl_client_describe_options(sl_client_t *c, uint8_t scope, const sl_option_info_t **items,
                               uint32_t *count)
{
    sl_client_call_begin(c);
    sl_describe_options_request_t req = {.scope = scope};
    sl_span_t payload;
    int rc = sl_client_run(c, sl_describe_options_request_encode(&c->tx, &req),
                           SL_OP_NON_REPLICATED, SL_CMD_DESCRIBE_OPTIONS, &payload);
    sl_describe_options_reply_t w;
    if (rc == 0)
        rc = sl_describe_options_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    sl_client_conv_t cv = conv(c);
    sl_option_info_t *list = SL_CONV_NEW(&cv, sl_option_info_t, w.count);
    for (uint32_t i = 0; list != NULL && i < w.count; i++) {
        const sl_option_descriptor_t *d = &w.items[i];
        list[i] = (sl_option_info_t){
            .key = sl_client_conv_str(&cv, d->key),
            .kind = d->kind,
            .default_value = d->default_value.len ? d->default_value.ptr : NULL,
            .default_len = (uint32_t)d->default_value.len,
            .description = sl_client_conv_str(&cv, d->description),
        };
    }
    rc = sl_client_conv_end(&cv);
    if (rc == 0) {
        *items = list;
        *count = w.count;
    }
    return rc;
}

int sl_client_get_snapshot(sl_client_t *c, uint8_t compression, const uint8_t *types,
                           uint32_t types_count, const uint8_t **zip, size_t *zip_len)
{
    if (types_count == 0 || types_count > 255 || types == NULL)
        return -SL_ERR_INVALID_COMMAND;
    sl_client_call_begin(c);
    sl_get_snapshot_request_t req = {.compression = compression,
                                     .types = sl_span(types, types_count)};
    sl_span_t payload;
    int rc = sl_client_run(c, sl_get_snapshot_request_encode(&c->tx, &req), SL_OP_NON_REPLICATED,
                           SL_CMD_GET_SNAPSHOT, &payload);
    sl_get_snapshot_reply_t w;
    if (rc == 0)
        rc = sl_get_snapshot_reply_decode(payload, &c->arena, &w);
    if (rc != 0)
        return rc;
    /* The archive stays in the receive buffer: it can be tens of MiB. */
    *zip = w.archive.ptr;
    *zip_len = w.archive.len;
    return 0;
}
