/* System routes over HTTP (http.md 5): stats, cluster metadata, clients,
 * option catalogs and the diagnostic snapshot. */
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rest/internal.h"
#include "wire/cmd_system.h"
#include "wire/header.h"
#include "wire/tlv.h"

static int build_empty(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    (void)req, (void)call, (void)err;
    return 0;
}

/* --- stats ------------------------------------------------------------------------------ */

static json_object *cache_metrics_json(const sl_get_stats_reply_t *r)
{
    json_object *o = json_object_new_object();
    for (uint32_t i = 0; i < r->cache_metrics_count; i++) {
        const sl_cache_metric_t *m = &r->cache_metrics[i];
        char key[48];
        snprintf(key, sizeof(key), "%u-%u-%u", m->stream_id, m->topic_id, m->partition_id);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "hits", sl_rest_json_uint(m->hits));
        json_object_object_add(e, "misses", sl_rest_json_uint(m->misses));
        json_object_object_add(e, "hit_ratio", sl_rest_json_f32(m->hit_ratio));
        json_object_object_add(o, key, e);
    }
    return o;
}

static void stats_counts(json_object *o, const sl_get_stats_reply_t *r)
{
    json_object_object_add(o, "streams_count", sl_rest_json_uint(r->streams_count));
    json_object_object_add(o, "topics_count", sl_rest_json_uint(r->topics_count));
    json_object_object_add(o, "partitions_count", sl_rest_json_uint(r->partitions_count));
    json_object_object_add(o, "segments_count", sl_rest_json_uint(r->segments_count));
    json_object_object_add(o, "messages_count", sl_rest_json_uint(r->messages_count));
    json_object_object_add(o, "clients_count", sl_rest_json_uint(r->clients_count));
    json_object_object_add(o, "consumer_groups_count", sl_rest_json_uint(r->consumer_groups_count));
}

static int render_stats(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                        sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_stats_reply_t r;
    if (sl_get_stats_reply_decode(payload, arena, &r) != 0)
        return -1;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "process_id", sl_rest_json_uint(r.process_id));
    json_object_object_add(o, "cpu_usage", sl_rest_json_f32(r.cpu_usage));
    json_object_object_add(o, "total_cpu_usage", sl_rest_json_f32(r.total_cpu_usage));
    json_object_object_add(o, "memory_usage", sl_rest_json_bytes(r.memory_usage));
    json_object_object_add(o, "total_memory", sl_rest_json_bytes(r.total_memory));
    json_object_object_add(o, "available_memory", sl_rest_json_bytes(r.available_memory));
    json_object_object_add(o, "run_time", sl_rest_json_uint(r.run_time_us));
    json_object_object_add(o, "start_time", sl_rest_json_uint(r.start_time_us));
    json_object_object_add(o, "read_bytes", sl_rest_json_bytes(r.read_bytes));
    json_object_object_add(o, "written_bytes", sl_rest_json_bytes(r.written_bytes));
    json_object_object_add(o, "messages_size_bytes", sl_rest_json_bytes(r.messages_size_bytes));
    stats_counts(o, &r);
    json_object_object_add(o, "hostname", sl_rest_json_string(r.hostname));
    json_object_object_add(o, "os_name", sl_rest_json_string(r.os_name));
    json_object_object_add(o, "os_version", sl_rest_json_string(r.os_version));
    json_object_object_add(o, "kernel_version", sl_rest_json_string(r.kernel_version));
    json_object_object_add(o, "iggy_server_version", sl_rest_json_string(r.server_version));
    json_object_object_add(o, "iggy_server_semver",
                           r.server_semver ? sl_rest_json_uint(r.server_semver) : NULL);
    json_object_object_add(o, "cache_metrics", cache_metrics_json(&r));
    json_object_object_add(o, "threads_count", sl_rest_json_uint(r.threads_count));
    json_object_object_add(o, "free_disk_space", sl_rest_json_bytes(r.free_disk_space));
    json_object_object_add(o, "total_disk_space", sl_rest_json_bytes(r.total_disk_space));
    sl_rest_response_json(resp, 200, o);
    return 0;
}

/* --- cluster metadata ---------------------------------------------------------------------- */

static const char *status_name(uint8_t status)
{
    static const char *const names[] = {"healthy", "starting", "stopping", "unreachable",
                                        "maintenance"};
    return status < SL_ARRAY_LEN(names) ? names[status] : "unknown";
}

static int render_cluster(const sl_rest_request_t *req, const sl_rest_call_t *call,
                          sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_cluster_metadata_reply_t r;
    if (sl_get_cluster_metadata_reply_decode(payload, arena, &r) != 0)
        return -1;
    json_object *nodes = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++) {
        const sl_cluster_node_t *n = &r.items[i];
        json_object *ep = json_object_new_object();
        json_object_object_add(ep, "tcp", sl_rest_json_uint(n->tcp_port));
        json_object_object_add(ep, "quic", sl_rest_json_uint(n->quic_port));
        json_object_object_add(ep, "http", sl_rest_json_uint(n->http_port));
        json_object_object_add(ep, "websocket", sl_rest_json_uint(n->websocket_port));
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", sl_rest_json_string(n->name));
        json_object_object_add(o, "ip", sl_rest_json_string(n->ip));
        json_object_object_add(o, "endpoints", ep);
        json_object_object_add(
            o, "role", json_object_new_string(n->role == SL_NODE_LEADER ? "leader" : "follower"));
        json_object_object_add(o, "status", json_object_new_string(status_name(n->status)));
        json_object_array_add(nodes, o);
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", sl_rest_json_string(r.name));
    json_object_object_add(o, "nodes", nodes);
    sl_rest_response_json(resp, 200, o);
    return 0;
}

/* --- clients ------------------------------------------------------------------------------- */

static const char *transport_name(uint8_t t)
{
    switch (t) {
    case SL_TRANSPORT_TCP:
        return "TCP";
    case SL_TRANSPORT_QUIC:
        return "QUIC";
    case SL_TRANSPORT_HTTP:
        return "HTTP";
    case SL_TRANSPORT_WEBSOCKET:
        return "WebSocket";
    default:
        return "Unknown";
    }
}

static json_object *client_json(const sl_client_header_t *h)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "client_id", sl_rest_json_uint(h->client_id));
    json_object_object_add(o, "user_id",
                           h->user_id == SL_CLIENT_NO_USER ? NULL : sl_rest_json_uint(h->user_id));
    json_object_object_add(o, "address", sl_rest_json_string(h->address));
    json_object_object_add(o, "transport", json_object_new_string(transport_name(h->transport)));
    json_object_object_add(o, "consumer_groups_count", sl_rest_json_uint(h->groups_count));
    return o;
}

static int client_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_client_header_t *)a)->client_id;
    uint32_t y = ((const sl_client_header_t *)b)->client_id;
    return (x > y) - (x < y);
}

static int render_clients(const sl_rest_request_t *req, const sl_rest_call_t *call,
                          sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_clients_reply_t r;
    if (sl_get_clients_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_client_header_t *items = (sl_client_header_t *)r.items;
    if (r.count)
        qsort(items, r.count, sizeof(*items), client_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++)
        json_object_array_add(list, client_json(&items[i]));
    sl_rest_response_json(resp, 200, list);
    return 0;
}

static int build_client(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_get_client_request_t q = {0};
    if (!sl_rest_path_u32(req, 0, &q.client_id, err))
        return -1;
    return sl_get_client_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int group_ref_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_client_group_t *)a)->group_id;
    uint32_t y = ((const sl_client_group_t *)b)->group_id;
    return (x > y) - (x < y);
}

static int render_client(const sl_rest_request_t *req, const sl_rest_call_t *call,
                         sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_client_reply_t r;
    if (sl_get_client_reply_decode(payload, arena, &r) != 0)
        return -1;
    if (!r.found) {
        sl_rest_not_found(resp);
        return 0;
    }
    json_object *o = client_json(&r.client.header);
    sl_client_group_t *groups = (sl_client_group_t *)r.client.groups;
    uint32_t n = r.client.header.groups_count;
    if (n)
        qsort(groups, n, sizeof(*groups), group_ref_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < n; i++) {
        json_object *g = json_object_new_object();
        json_object_object_add(g, "stream_id", sl_rest_json_uint(groups[i].stream_id));
        json_object_object_add(g, "topic_id", sl_rest_json_uint(groups[i].topic_id));
        json_object_object_add(g, "group_id", sl_rest_json_uint(groups[i].group_id));
        json_object_array_add(list, g);
    }
    json_object_object_add(o, "consumer_groups", list);
    sl_rest_response_json(resp, 200, o);
    return 0;
}

/* --- option catalogs --------------------------------------------------------------------- */

static int build_options(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    static const char *const scopes[] = {NULL, "topic", "stream", "user"};
    sl_span_t s = req->match->params[0];
    for (uint8_t i = 1; i < SL_ARRAY_LEN(scopes); i++) {
        if (s.len == strlen(scopes[i]) && memcmp(s.ptr, scopes[i], s.len) == 0) {
            sl_describe_options_request_t q = {i};
            return sl_describe_options_request_encode(call->body, &q) == 0 ? 0 : -1;
        }
    }
    sl_rest_error_from_code(SL_ERR_INVALID_COMMAND, err);
    return -1;
}

static int render_options(const sl_rest_request_t *req, const sl_rest_call_t *call,
                          sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_describe_options_reply_t r;
    if (sl_describe_options_reply_decode(payload, arena, &r) != 0)
        return -1;
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++) {
        const sl_option_descriptor_t *d = &r.items[i];
        const char *kind = sl_kind_name(d->kind);
        json_object *bytes = json_object_new_array();
        for (size_t k = 0; k < d->default_value.len; k++)
            json_object_array_add(bytes, sl_rest_json_uint(d->default_value.ptr[k]));
        json_object *o = json_object_new_object();
        json_object_object_add(o, "key", sl_rest_json_string(d->key));
        json_object_object_add(o, "kind", json_object_new_string(kind ? kind : "raw"));
        json_object_object_add(o, "default_value", bytes);
        json_object_object_add(o, "description", sl_rest_json_string(d->description));
        json_object_array_add(list, o);
    }
    sl_rest_response_json(resp, 200, list);
    return 0;
}

/* --- snapshot ------------------------------------------------------------------------------- */

static const char *const compressions[] = {NULL,   "Stored", "Deflated", "Bzip2",
                                           "Zstd", "Lzma",   "Xz"};
static const struct {
    const char *name;
    uint8_t code;
} snapshot_types[] = {
    {"FilesystemOverview", SL_SNAPSHOT_FILESYSTEM_OVERVIEW},
    {"ProcessList", SL_SNAPSHOT_PROCESS_LIST},
    {"ResourceUsage", SL_SNAPSHOT_RESOURCE_USAGE},
    {"Test", SL_SNAPSHOT_TEST},
    {"ServerLogs", SL_SNAPSHOT_SERVER_LOGS},
    {"ServerConfig", SL_SNAPSHOT_SERVER_CONFIG},
    {"All", SL_SNAPSHOT_ALL},
};

static bool enum_error(const char *field, sl_rest_error_t *err)
{
    sl_rest_error_plain(err, 422,
                        "Failed to deserialize the JSON body into the target type: %s: unknown "
                        "variant",
                        field);
    return false;
}

static bool snapshot_compression(json_object *o, uint8_t *out, sl_rest_error_t *err)
{
    sl_span_t s;
    if (!sl_rest_json_str(o, "compression", true, &s, NULL, err))
        return false;
    for (uint8_t i = 1; i < SL_ARRAY_LEN(compressions); i++)
        if (s.len == strlen(compressions[i]) && memcmp(s.ptr, compressions[i], s.len) == 0) {
            *out = i;
            return true;
        }
    return enum_error("compression", err);
}

static bool snapshot_type_list(json_object *o, uint8_t *codes, size_t *n, sl_rest_error_t *err)
{
    json_object *list = NULL;
    if (!json_object_object_get_ex(o, "snapshot_types", &list) ||
        !json_object_is_type(list, json_type_array))
        return enum_error("snapshot_types", err);
    size_t len = json_object_array_length(list);
    if (len > 255)
        return enum_error("snapshot_types", err);
    for (size_t i = 0; i < len; i++) {
        json_object *v = json_object_array_get_idx(list, i);
        const char *name =
            json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
        size_t k = 0;
        while (k < SL_ARRAY_LEN(snapshot_types) && strcmp(name, snapshot_types[k].name) != 0)
            k++;
        if (k == SL_ARRAY_LEN(snapshot_types))
            return enum_error("snapshot_types", err);
        codes[i] = snapshot_types[k].code;
    }
    *n = len;
    return true;
}

static int build_snapshot(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    uint8_t codes[255];
    size_t n = 0;
    sl_get_snapshot_request_t q = {0};
    bool ok =
        o && snapshot_compression(o, &q.compression, err) && snapshot_type_list(o, codes, &n, err);
    q.types = sl_span(codes, n);
    if (ok)
        ok = sl_get_snapshot_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_snapshot(const sl_rest_request_t *req, const sl_rest_call_t *call,
                           sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call, (void)arena;
    sl_rest_response_text(resp, 200, payload);
    resp->content_type = "application/zip";
    /* The name carries the time of the request: UTC here (the reference
     * uses the server's local time; reading the time zone is I/O). */
    time_t t = (time_t)(req->now_us / 1000000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(resp->disposition, sizeof(resp->disposition),
             "attachment; filename=\"iggy_snapshot_%04d%02d%02d_%02d%02d%02d.zip\"",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return 0;
}

/* clang-format off */
const sl_rest_handler_t sl_rest_system_handlers[] = {
    {SL_ROUTE_STATS,            SL_OP_NON_REPLICATED, 10, false, build_empty, render_stats},
    {SL_ROUTE_CLUSTER_METADATA, SL_OP_NON_REPLICATED, 12, false, build_empty, render_cluster},
    {SL_ROUTE_CLIENTS,          SL_OP_NON_REPLICATED, 22, false, build_empty, render_clients},
    {SL_ROUTE_CLIENT,           SL_OP_NON_REPLICATED, 21, false, build_client, render_client},
    {SL_ROUTE_OPTIONS,          SL_OP_NON_REPLICATED, 13, false, build_options, render_options},
    {SL_ROUTE_SNAPSHOT,         SL_OP_NON_REPLICATED, 11, true, build_snapshot, render_snapshot},
};
/* clang-format on */
const size_t sl_rest_system_handlers_count = SL_ARRAY_LEN(sl_rest_system_handlers);
