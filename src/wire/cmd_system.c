/* System command codecs (wire/cmd_system.h): stats, snapshot, cluster
 * metadata, option descriptors and the client (connection) elements. */
#include "wire/cmd_system.h"

#include "wire/prim.h"
#include "wire/tlv.h"

/* Marks the reader failed when a decoded value breaks a rule; keeps the
 * sticky-failure style of the primitives. */
static bool require(sl_reader_t *r, bool cond)
{
    if (!cond)
        r->failed = true;
    return cond;
}

/* An array of n elements from the arena; NULL for n == 0 (and on failure). */
#define NEW_ITEMS(arena, type, n) ((n) ? SL_ARENA_NEW((arena), type, (n)) : NULL)

/* --- GetStats ----------------------------------------------------------------- */

static void read_stats_numeric(sl_reader_t *r, sl_get_stats_reply_t *s)
{
    sl_read_u32(r, &s->process_id);
    sl_read_f32(r, &s->cpu_usage);
    sl_read_f32(r, &s->total_cpu_usage);
    sl_read_u64(r, &s->memory_usage);
    sl_read_u64(r, &s->total_memory);
    sl_read_u64(r, &s->available_memory);
    sl_read_u64(r, &s->run_time_us);
    sl_read_u64(r, &s->start_time_us);
    sl_read_u64(r, &s->read_bytes);
    sl_read_u64(r, &s->written_bytes);
    sl_read_u64(r, &s->messages_size_bytes);
    sl_read_u32(r, &s->streams_count);
    sl_read_u32(r, &s->topics_count);
    sl_read_u32(r, &s->partitions_count);
    sl_read_u32(r, &s->segments_count);
    sl_read_u64(r, &s->messages_count);
    sl_read_u32(r, &s->clients_count);
    sl_read_u32(r, &s->consumer_groups_count);
}

static void read_cache_metric(sl_reader_t *r, sl_cache_metric_t *m)
{
    sl_read_u32(r, &m->stream_id);
    sl_read_u32(r, &m->topic_id);
    sl_read_u32(r, &m->partition_id);
    sl_read_u64(r, &m->hits);
    sl_read_u64(r, &m->misses);
    sl_read_f32(r, &m->hit_ratio);
}

int sl_get_stats_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_stats_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_get_stats_reply_t s = {0};
    read_stats_numeric(&r, &s);
    sl_assert_debug(r.failed || r.pos == SL_STATS_NUMERIC_SIZE);
    sl_str32_decode(&r, &s.hostname);
    sl_str32_decode(&r, &s.os_name);
    sl_str32_decode(&r, &s.os_version);
    sl_str32_decode(&r, &s.kernel_version);
    sl_str32_decode(&r, &s.server_version);
    sl_read_u32(&r, &s.server_semver);
    sl_read_u32(&r, &s.cache_metrics_count);
    if (!sl_reader_ok(&r) ||
        (uint64_t)s.cache_metrics_count * SL_CACHE_METRIC_SIZE > sl_reader_left(&r))
        return -SL_ERR_INVALID_FORMAT;
    sl_cache_metric_t *metrics = NEW_ITEMS(arena, sl_cache_metric_t, s.cache_metrics_count);
    if (s.cache_metrics_count && !metrics)
        return -SL_ERR_INVALID_FORMAT;
    for (uint32_t i = 0; i < s.cache_metrics_count; i++)
        read_cache_metric(&r, &metrics[i]);
    s.cache_metrics = metrics;
    sl_read_u32(&r, &s.threads_count);
    sl_read_u64(&r, &s.free_disk_space);
    sl_read_u64(&r, &s.total_disk_space);
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = s;
    return rc;
}

int sl_get_stats_reply_encode(sl_buf_t *b, const sl_get_stats_reply_t *s)
{
    sl_put_u32(b, s->process_id);
    sl_put_f32(b, s->cpu_usage);
    sl_put_f32(b, s->total_cpu_usage);
    sl_put_u64(b, s->memory_usage);
    sl_put_u64(b, s->total_memory);
    sl_put_u64(b, s->available_memory);
    sl_put_u64(b, s->run_time_us);
    sl_put_u64(b, s->start_time_us);
    sl_put_u64(b, s->read_bytes);
    sl_put_u64(b, s->written_bytes);
    sl_put_u64(b, s->messages_size_bytes);
    sl_put_u32(b, s->streams_count);
    sl_put_u32(b, s->topics_count);
    sl_put_u32(b, s->partitions_count);
    sl_put_u32(b, s->segments_count);
    sl_put_u64(b, s->messages_count);
    sl_put_u32(b, s->clients_count);
    sl_put_u32(b, s->consumer_groups_count);
    bool ok = sl_str32_encode(b, s->hostname) && sl_str32_encode(b, s->os_name) &&
              sl_str32_encode(b, s->os_version) && sl_str32_encode(b, s->kernel_version) &&
              sl_str32_encode(b, s->server_version);
    sl_put_u32(b, s->server_semver);
    sl_put_u32(b, s->cache_metrics_count);
    for (uint32_t i = 0; i < s->cache_metrics_count; i++) {
        const sl_cache_metric_t *m = &s->cache_metrics[i];
        sl_put_u32(b, m->stream_id);
        sl_put_u32(b, m->topic_id);
        sl_put_u32(b, m->partition_id);
        sl_put_u64(b, m->hits);
        sl_put_u64(b, m->misses);
        sl_put_f32(b, m->hit_ratio);
    }
    sl_put_u32(b, s->threads_count);
    sl_put_u64(b, s->free_disk_space);
    sl_put_u64(b, s->total_disk_space);
    return sl_encode_end(b, ok);
}

/* --- GetSnapshot -------------------------------------------------------------- */

static bool snapshot_compression_valid(uint8_t c)
{
    return c >= SL_SNAPSHOT_STORED && c <= SL_SNAPSHOT_XZ;
}

/* Every code known, and All only as the single entry. */
static bool snapshot_types_valid(sl_span_t types)
{
    for (size_t i = 0; i < types.len; i++) {
        uint8_t t = types.ptr[i];
        bool known = (t >= SL_SNAPSHOT_FILESYSTEM_OVERVIEW && t <= SL_SNAPSHOT_SERVER_CONFIG) ||
                     t == SL_SNAPSHOT_ALL;
        if (!known || (t == SL_SNAPSHOT_ALL && types.len > 1))
            return false;
    }
    return true;
}

int sl_get_snapshot_request_decode(sl_span_t body, sl_get_snapshot_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    uint8_t compression, count;
    sl_span_t types;
    if (!sl_read_u8(&r, &compression) || !sl_read_u8(&r, &count) ||
        !sl_read_span(&r, count, &types))
        return -SL_ERR_INVALID_COMMAND;
    if (!snapshot_compression_valid(compression) || !snapshot_types_valid(types))
        return -SL_ERR_INVALID_COMMAND;
    *out = (sl_get_snapshot_request_t){compression, types};
    return 0;
}

int sl_get_snapshot_request_encode(sl_buf_t *b, const sl_get_snapshot_request_t *in)
{
    if (!snapshot_compression_valid(in->compression) || in->types.len > UINT8_MAX ||
        !snapshot_types_valid(in->types))
        return sl_encode_end(b, false);
    sl_put_u8(b, in->compression);
    sl_put_u8(b, (uint8_t)in->types.len);
    sl_put_span(b, in->types);
    return sl_encode_end(b, true);
}

int sl_get_snapshot_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_snapshot_reply_t *out)
{
    (void)arena;
    out->archive = payload;
    return 0;
}

int sl_get_snapshot_reply_encode(sl_buf_t *b, const sl_get_snapshot_reply_t *in)
{
    sl_put_span(b, in->archive);
    return sl_encode_end(b, true);
}

/* --- GetClusterMetadata --------------------------------------------------------- */

/* Node element without its two strings' bytes. */
#define NODE_MIN_SIZE 18u

static bool node_decode(sl_reader_t *r, sl_cluster_node_t *n)
{
    sl_str32_decode(r, &n->name);
    sl_str32_decode(r, &n->ip);
    sl_read_u16(r, &n->tcp_port);
    sl_read_u16(r, &n->quic_port);
    sl_read_u16(r, &n->http_port);
    sl_read_u16(r, &n->websocket_port);
    sl_read_u8(r, &n->role);
    sl_read_u8(r, &n->status);
    return sl_reader_ok(r) && require(r, n->role <= SL_NODE_FOLLOWER) &&
           require(r, n->status <= SL_NODE_MAINTENANCE);
}

int sl_get_cluster_metadata_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                         sl_get_cluster_metadata_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_span_t name;
    uint32_t count;
    if (!sl_str32_decode(&r, &name) || !sl_read_u32(&r, &count) ||
        (uint64_t)count * NODE_MIN_SIZE > sl_reader_left(&r))
        return -SL_ERR_INVALID_FORMAT;
    sl_cluster_node_t *nodes = NEW_ITEMS(arena, sl_cluster_node_t, count);
    if (count && !nodes)
        return -SL_ERR_INVALID_FORMAT;
    for (uint32_t i = 0; i < count; i++)
        if (!node_decode(&r, &nodes[i]))
            return -SL_ERR_INVALID_FORMAT;
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = (sl_get_cluster_metadata_reply_t){name, count, nodes};
    return rc;
}

int sl_get_cluster_metadata_reply_encode(sl_buf_t *b, const sl_get_cluster_metadata_reply_t *in)
{
    bool ok = sl_str32_encode(b, in->name);
    sl_put_u32(b, in->count);
    for (uint32_t i = 0; ok && i < in->count; i++) {
        const sl_cluster_node_t *n = &in->items[i];
        ok = n->role <= SL_NODE_FOLLOWER && n->status <= SL_NODE_MAINTENANCE &&
             sl_str32_encode(b, n->name) && sl_str32_encode(b, n->ip);
        sl_put_u16(b, n->tcp_port);
        sl_put_u16(b, n->quic_port);
        sl_put_u16(b, n->http_port);
        sl_put_u16(b, n->websocket_port);
        sl_put_u8(b, n->role);
        sl_put_u8(b, n->status);
    }
    return sl_encode_end(b, ok);
}

/* --- DescribeOptions ------------------------------------------------------------ */

static bool option_scope_valid(uint8_t scope)
{
    return scope >= SL_OPTION_SCOPE_TOPIC && scope <= SL_OPTION_SCOPE_USER;
}

int sl_describe_options_request_decode(sl_span_t body, sl_describe_options_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    uint8_t scope;
    if (!sl_read_u8(&r, &scope) || !option_scope_valid(scope))
        return -SL_ERR_INVALID_COMMAND;
    out->scope = scope;
    return 0;
}

int sl_describe_options_request_encode(sl_buf_t *b, const sl_describe_options_request_t *in)
{
    if (!option_scope_valid(in->scope))
        return sl_encode_end(b, false);
    sl_put_u8(b, in->scope);
    return sl_encode_end(b, true);
}

/* key (1 + 1 byte at least), kind, default_len, description_len. */
#define DESCRIPTOR_MIN_SIZE 11u

static bool descriptor_decode(sl_reader_t *r, sl_option_descriptor_t *d)
{
    uint32_t default_len;
    sl_name_decode(r, &d->key);
    sl_read_u8(r, &d->kind);
    sl_read_u32(r, &default_len);
    sl_read_span(r, default_len, &d->default_value);
    sl_str32_decode(r, &d->description);
    /* A default of a fixed-width kind is empty or exactly that wide: the
     * same rule the encoder applies, so what decodes re-encodes. */
    uint32_t width = sl_kind_width(d->kind);
    bool default_ok = width == 0 || default_len == 0 || default_len == width;
    return sl_reader_ok(r) && require(r, d->kind != 0 && default_ok);
}

int sl_describe_options_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                     sl_describe_options_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    uint32_t count;
    if (!sl_read_u32(&r, &count) || (uint64_t)count * DESCRIPTOR_MIN_SIZE > sl_reader_left(&r))
        return -SL_ERR_INVALID_FORMAT;
    sl_option_descriptor_t *items = NEW_ITEMS(arena, sl_option_descriptor_t, count);
    if (count && !items)
        return -SL_ERR_INVALID_FORMAT;
    for (uint32_t i = 0; i < count; i++)
        if (!descriptor_decode(&r, &items[i]))
            return -SL_ERR_INVALID_FORMAT;
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = (sl_describe_options_reply_t){count, items};
    return rc;
}

static bool descriptor_encode(sl_buf_t *b, const sl_option_descriptor_t *d)
{
    uint32_t width = sl_kind_width(d->kind);
    if (d->kind == 0 || d->default_value.len > UINT32_MAX ||
        (width != 0 && d->default_value.len != 0 && d->default_value.len != width))
        return false;
    if (!sl_name_encode(b, d->key))
        return false;
    sl_put_u8(b, d->kind);
    sl_put_u32(b, (uint32_t)d->default_value.len);
    sl_put_span(b, d->default_value);
    return sl_str32_encode(b, d->description);
}

int sl_describe_options_reply_encode(sl_buf_t *b, const sl_describe_options_reply_t *in)
{
    bool ok = true;
    sl_put_u32(b, in->count);
    for (uint32_t i = 0; ok && i < in->count; i++)
        ok = descriptor_encode(b, &in->items[i]);
    return sl_encode_end(b, ok);
}

/* --- ClientHeader / ClientDetails -------------------------------------------------- */

static bool transport_valid(uint8_t t)
{
    return t >= SL_TRANSPORT_TCP && t <= SL_TRANSPORT_WEBSOCKET;
}

static bool client_header_decode(sl_reader_t *r, sl_client_header_t *h)
{
    sl_read_u32(r, &h->client_id);
    sl_read_u32(r, &h->user_id);
    sl_read_u8(r, &h->transport);
    sl_str32_decode(r, &h->address);
    sl_read_u32(r, &h->groups_count);
    return sl_reader_ok(r) && require(r, transport_valid(h->transport));
}

static bool client_header_encode(sl_buf_t *b, const sl_client_header_t *h)
{
    if (!transport_valid(h->transport))
        return false;
    sl_put_u32(b, h->client_id);
    sl_put_u32(b, h->user_id);
    sl_put_u8(b, h->transport);
    if (!sl_str32_encode(b, h->address))
        return false;
    sl_put_u32(b, h->groups_count);
    return sl_buf_ok(b);
}

/* ClientDetails filling the whole payload. */
static int client_details_decode(sl_span_t payload, sl_arena_t *arena, sl_client_details_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_client_details_t d = {0};
    if (!client_header_decode(&r, &d.header) ||
        (uint64_t)d.header.groups_count * SL_CLIENT_GROUP_SIZE > sl_reader_left(&r))
        return -SL_ERR_INVALID_FORMAT;
    uint32_t n = d.header.groups_count;
    sl_client_group_t *groups = NEW_ITEMS(arena, sl_client_group_t, n);
    if (n && !groups)
        return -SL_ERR_INVALID_FORMAT;
    for (uint32_t i = 0; i < n; i++) {
        sl_read_u32(&r, &groups[i].stream_id);
        sl_read_u32(&r, &groups[i].topic_id);
        sl_read_u32(&r, &groups[i].group_id);
    }
    d.groups = groups;
    int rc = sl_reply_decode_end(&r);
    if (rc == 0)
        *out = d;
    return rc;
}

static int client_details_encode(sl_buf_t *b, const sl_client_details_t *d)
{
    if (!client_header_encode(b, &d->header))
        return sl_encode_end(b, false);
    for (uint32_t i = 0; i < d->header.groups_count; i++) {
        sl_put_u32(b, d->groups[i].stream_id);
        sl_put_u32(b, d->groups[i].topic_id);
        sl_put_u32(b, d->groups[i].group_id);
    }
    return sl_encode_end(b, true);
}

/* --- GetMe / GetClient / GetClients -------------------------------------------------- */

int sl_get_me_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_me_reply_t *out)
{
    return client_details_decode(payload, arena, &out->client);
}

int sl_get_me_reply_encode(sl_buf_t *b, const sl_get_me_reply_t *in)
{
    return client_details_encode(b, &in->client);
}

int sl_get_client_request_decode(sl_span_t body, sl_get_client_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    uint32_t id;
    bool ok = sl_read_u32(&r, &id);
    *out = (sl_get_client_request_t){.client_id = id, .undecodable = !ok};
    return 0;
}

int sl_get_client_request_encode(sl_buf_t *b, const sl_get_client_request_t *in)
{
    sl_put_u32(b, in->client_id);
    return sl_encode_end(b, true);
}

int sl_get_client_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_client_reply_t *out)
{
    if (payload.len == 0) {
        *out = (sl_get_client_reply_t){.found = false};
        return 0;
    }
    int rc = client_details_decode(payload, arena, &out->client);
    out->found = rc == 0;
    return rc;
}

int sl_get_client_reply_encode(sl_buf_t *b, const sl_get_client_reply_t *in)
{
    if (!in->found)
        return sl_encode_end(b, true);
    return client_details_encode(b, &in->client);
}

int sl_get_clients_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_clients_reply_t *out)
{
    /* First pass validates and counts, so the array is exactly as large as
     * the elements present. */
    sl_reader_t r = sl_reader(payload);
    uint32_t count = 0;
    while (sl_reader_left(&r) > 0) {
        sl_client_header_t h;
        if (!client_header_decode(&r, &h))
            return -SL_ERR_INVALID_FORMAT;
        count++;
    }
    sl_client_header_t *items = NEW_ITEMS(arena, sl_client_header_t, count);
    if (count && !items)
        return -SL_ERR_INVALID_FORMAT;
    r = sl_reader(payload);
    for (uint32_t i = 0; i < count; i++)
        client_header_decode(&r, &items[i]);
    sl_assert(sl_reader_done(&r));
    *out = (sl_get_clients_reply_t){count, items};
    return 0;
}

int sl_get_clients_reply_encode(sl_buf_t *b, const sl_get_clients_reply_t *in)
{
    bool ok = true;
    for (uint32_t i = 0; ok && i < in->count; i++)
        ok = client_header_encode(b, &in->items[i]);
    return sl_encode_end(b, ok);
}
