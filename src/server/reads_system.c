/* System reads (commands.md 3): ping, stats, snapshot, cluster metadata,
 * option catalogs, and the connection views GetMe / GetClient(s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/diag.h"
#include "server/reads.h"
#include "wire/cmd_system.h"
#include "wire/command.h"
#include "wire/topic_options.h"

static void get_stats(sl_read_t *c)
{
    if (!sl_read_allowed(c, SL_PERM_SERVER_INFO, 0, 0))
        return;
    sl_server_t *srv = c->s->server;
    sl_get_stats_reply_t r = {0};
    sl_sysinfo_fill(&srv->sysinfo, &r);
    sl_meta_counts_t n;
    sl_meta_counts(c->meta, &n);
    r.streams_count = n.streams;
    r.topics_count = n.topics;
    r.partitions_count = n.partitions;
    sl_partitions_stats_t st;
    sl_partitions_all_stats(&srv->partitions, &st);
    r.segments_count = st.segments; /* each partition counts at least one */
    r.messages_count = st.messages;
    r.messages_size_bytes = st.size_bytes;
    r.consumer_groups_count = n.groups;
    r.clients_count = srv->sessions_count - srv->internal_count;
    if (sl_get_stats_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

static void get_snapshot(sl_read_t *c)
{
    if (!sl_read_allowed(c, SL_PERM_SERVER_INFO, 0, 0))
        return;
    sl_get_snapshot_request_t q;
    int rc = sl_get_snapshot_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    sl_server_t *srv = c->s->server;
    /* The ServerConfig entry: the effective settings, secrets hidden. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return sl_read_status(c, SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED);
    sl_config_print(f, &srv->cfg);
    fclose(f);
    /* Built on the worker pool: it walks the data directory and /proc and compresses, which
     * took the loop thread for as long; the reply goes out when it comes back. */
    rc = sl_background_snapshot(c->s, c->req, q.compression, q.types, sl_span(text, len));
    free(text);
    if (rc != 0)
        return sl_read_status(c, rc);
}

/* defaults.md 6: one node, the TCP listener's IP and the ports served (the
 * HTTP and WebSocket ports bound, 0 for a door that is off or that Sluice
 * does not serve). */
/* Cluster mode: every roster node, Leader for the primary of the view this
 * node knows (none while a view change runs here), healthy when it is this
 * node or its replica link is up. Each node's client port is its roster
 * entry's, the other doors' ports as the roster gives them. */
static void get_cluster_metadata_cluster(sl_read_t *c)
{
    const sl_config_t *cfg = &c->s->server->cfg;
    sl_cluster_node_view_t views[SL_CLUSTER_NODES_MAX];
    uint32_t n = sl_cluster_nodes(c->s->server->cluster, views, SL_CLUSTER_NODES_MAX);
    sl_cluster_node_t nodes[SL_CLUSTER_NODES_MAX];
    for (uint32_t i = 0; i < n; i++) {
        const sl_config_cluster_node_t *node = &cfg->cluster.nodes[views[i].index];
        nodes[i] = (sl_cluster_node_t){
            .name = sl_span_str(node->name),
            .ip = sl_span_str(node->ip),
            .tcp_port = (uint16_t)node->ports.tcp,
            .quic_port = (uint16_t)node->ports.quic,
            .http_port = (uint16_t)node->ports.http,
            .websocket_port = (uint16_t)node->ports.websocket,
            .role = views[i].leader ? SL_NODE_LEADER : SL_NODE_FOLLOWER,
            .status = views[i].reachable ? SL_NODE_HEALTHY : SL_NODE_UNREACHABLE,
        };
    }
    sl_get_cluster_metadata_reply_t r = {sl_span_str(cfg->cluster.name), n, nodes};
    if (sl_get_cluster_metadata_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

static void get_cluster_metadata(sl_read_t *c)
{
    if (c->s->server->cluster)
        return get_cluster_metadata_cluster(c);
    const sl_config_t *cfg = &c->s->server->cfg;
    sl_cluster_node_t node = {
        .name = sl_span_str("iggy-node"),
        .ip = sl_span_str(cfg->tcp.address.host),
        .tcp_port = sl_loop_port(c->s->server->loop),
        .quic_port = cfg->quic.enabled ? cfg->quic.address.port : 0,
        .http_port = c->s->server->http ? c->s->server->http_port : 0,
        .websocket_port = c->s->server->ws_listen_fd >= 0 ? c->s->server->ws_port : 0,
        .role = SL_NODE_LEADER,
        .status = SL_NODE_HEALTHY,
    };
    sl_get_cluster_metadata_reply_t r = {sl_span_str("single-node"), 1, &node};
    if (sl_get_cluster_metadata_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

static void describe_options(sl_read_t *c)
{
    sl_describe_options_request_t q;
    int rc = sl_describe_options_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_topic_option_info_t *info;
    uint32_t n;
    rc = sl_option_catalog(q.scope, &info, &n);
    if (rc != 0)
        return sl_read_status(c, rc);
    sl_option_descriptor_t items[SL_TOPIC_KEY_COUNT];
    for (uint32_t i = 0; i < n && i < SL_TOPIC_KEY_COUNT; i++)
        items[i] = (sl_option_descriptor_t){sl_span_str(info[i].key), info[i].kind,
                                            info[i].default_value,
                                            sl_span_str(info[i].description)};
    sl_describe_options_reply_t r = {n, n ? items : NULL};
    if (sl_describe_options_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

/* ClientHeader (+ group entries) of one session. */
static bool client_view(sl_read_t *c, const sl_session_t *o, bool groups, sl_client_details_t *d)
{
    *d = (sl_client_details_t){
        .header = {.client_id = o->id,
                   .user_id = o->bound ? o->user_id : SL_CLIENT_NO_USER,
                   /* defaults.md 1: TCP and TCP-TLS list as 1, WS and WSS as 4. */
                   .transport = sl_conn_transport_code(o->conn) ? sl_conn_transport_code(o->conn)
                                                                : SL_TRANSPORT_TCP,
                   .address = sl_span_str(sl_conn_peer(o->conn))},
    };
    if (!o->bound)
        return true;
    uint32_t n = sl_meta_client_groups(c->meta, o->client, NULL, 0);
    d->header.groups_count = n;
    if (!groups || n == 0)
        return true;
    sl_meta_group_ref_t *refs = SL_ARENA_NEW(&c->s->arena, sl_meta_group_ref_t, n);
    sl_client_group_t *g = SL_ARENA_NEW(&c->s->arena, sl_client_group_t, n);
    if (!refs || !g || sl_meta_client_groups(c->meta, o->client, refs, n) != n)
        return false;
    for (uint32_t i = 0; i < n; i++)
        g[i] = (sl_client_group_t){refs[i].stream_id, refs[i].topic_id, refs[i].group_id};
    d->groups = g;
    return true;
}

static void get_me(sl_read_t *c)
{
    sl_get_me_reply_t r;
    if (!client_view(c, c->s, true, &r.client) || sl_get_me_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

static void get_client(sl_read_t *c)
{
    if (!sl_read_allowed(c, SL_PERM_SERVER_INFO, 0, 0))
        return;
    sl_get_client_request_t q;
    if (sl_get_client_request_decode(c->body, &q) != 0 || q.undecodable)
        return sl_read_ok(c); /* as for an unknown connection: empty */
    sl_server_t *srv = c->s->server;
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        if (srv->sessions[i]->id != q.client_id || srv->sessions[i]->internal)
            continue;
        sl_get_client_reply_t r = {.found = true};
        if (!client_view(c, srv->sessions[i], true, &r.client) ||
            sl_get_client_reply_encode(c->out, &r) != 0)
            return sl_read_status(c, SL_ERR_ERROR);
        break;
    }
    sl_read_ok(c);
}

static void get_clients(sl_read_t *c)
{
    if (!sl_read_allowed(c, SL_PERM_SERVER_INFO, 0, 0))
        return;
    sl_server_t *srv = c->s->server;
    sl_client_header_t *items =
        srv->sessions_count ? SL_ARENA_NEW(&c->s->arena, sl_client_header_t, srv->sessions_count)
                            : NULL;
    if (srv->sessions_count && !items)
        return sl_read_status(c, SL_ERR_ERROR);
    /* The HTTP door's internal sessions are not clients (http.h). */
    uint32_t n = 0;
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        if (srv->sessions[i]->internal)
            continue;
        sl_client_details_t d;
        client_view(c, srv->sessions[i], false, &d);
        items[n++] = d.header;
    }
    sl_get_clients_reply_t r = {n, items};
    if (sl_get_clients_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

void sl_reads_system(sl_read_t *c)
{
    switch (c->req->code) {
    case SL_CMD_PING:
        return sl_read_ok(c);
    case SL_CMD_GET_STATS:
        return get_stats(c);
    case SL_CMD_GET_SNAPSHOT:
        return get_snapshot(c);
    case SL_CMD_GET_CLUSTER_METADATA:
        return get_cluster_metadata(c);
    case SL_CMD_DESCRIBE_OPTIONS:
        return describe_options(c);
    case SL_CMD_GET_ME:
        return get_me(c);
    case SL_CMD_GET_CLIENT:
        return get_client(c);
    case SL_CMD_GET_CLIENTS:
        return get_clients(c);
    default:
        return sl_read_status(c, SL_ERR_INVALID_COMMAND);
    }
}
