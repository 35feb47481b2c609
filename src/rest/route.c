/* The route table of http.md 4, path matching with percent-decoded
 * parameters, and raw query-string splitting. */
#include <string.h>
#include <strings.h>

#include "rest/internal.h"

/* A pattern is a list of segments; "*" is a parameter. Each pattern names
 * the route per method; 0 means the method is not served there (405). */
typedef struct pattern {
    const char *segs[7];
    sl_rest_route_t get, post, put, del;
} pattern_t;

/* clang-format off */
static const pattern_t patterns[] = {
    {{"ping"},                                   SL_ROUTE_PING, 0, 0, 0},
    {{"stats"},                                  SL_ROUTE_STATS, 0, 0, 0},
    {{"cluster", "metadata"},                    SL_ROUTE_CLUSTER_METADATA, 0, 0, 0},
    {{"clients"},                                SL_ROUTE_CLIENTS, 0, 0, 0},
    {{"clients", "*"},                           SL_ROUTE_CLIENT, 0, 0, 0},
    {{"options", "*"},                           SL_ROUTE_OPTIONS, 0, 0, 0},
    {{"snapshot"},                               0, SL_ROUTE_SNAPSHOT, 0, 0},
    {{"users", "login"},                         0, SL_ROUTE_LOGIN, 0, 0},
    {{"users", "refresh-token"},                 0, SL_ROUTE_REFRESH_TOKEN, 0, 0},
    {{"users", "logout"},                        0, 0, 0, SL_ROUTE_LOGOUT},
    {{"personal-access-tokens", "login"},        0, SL_ROUTE_PAT_LOGIN, 0, 0},
    {{"users"},                                  SL_ROUTE_USERS, SL_ROUTE_USER_CREATE, 0, 0},
    {{"users", "*"},                             SL_ROUTE_USER, 0, SL_ROUTE_USER_UPDATE, SL_ROUTE_USER_DELETE},
    {{"users", "*", "password"},                 0, 0, SL_ROUTE_USER_PASSWORD, 0},
    {{"users", "*", "permissions"},              0, 0, SL_ROUTE_USER_PERMISSIONS, 0},
    {{"personal-access-tokens"},                 SL_ROUTE_PATS, SL_ROUTE_PAT_CREATE, 0, 0},
    {{"personal-access-tokens", "*"},            0, 0, 0, SL_ROUTE_PAT_DELETE},
    {{"streams"},                                SL_ROUTE_STREAMS, SL_ROUTE_STREAM_CREATE, 0, 0},
    {{"streams", "*"},                           SL_ROUTE_STREAM, 0, SL_ROUTE_STREAM_UPDATE, SL_ROUTE_STREAM_DELETE},
    {{"streams", "*", "purge"},                  0, 0, 0, SL_ROUTE_STREAM_PURGE},
    {{"streams", "*", "topics"},                 SL_ROUTE_TOPICS, SL_ROUTE_TOPIC_CREATE, 0, 0},
    {{"streams", "*", "topics", "*"},            SL_ROUTE_TOPIC, 0, SL_ROUTE_TOPIC_UPDATE, SL_ROUTE_TOPIC_DELETE},
    {{"streams", "*", "topics", "*", "purge"},   0, 0, 0, SL_ROUTE_TOPIC_PURGE},
    {{"streams", "*", "topics", "*", "partitions"}, 0, SL_ROUTE_PARTITIONS_CREATE, 0, SL_ROUTE_PARTITIONS_DELETE},
    {{"streams", "*", "topics", "*", "partitions", "*"}, 0, 0, 0, SL_ROUTE_SEGMENTS_DELETE},
    {{"streams", "*", "topics", "*", "consumer-groups"}, SL_ROUTE_GROUPS, SL_ROUTE_GROUP_CREATE, 0, 0},
    {{"streams", "*", "topics", "*", "consumer-groups", "*"}, SL_ROUTE_GROUP, 0, 0, SL_ROUTE_GROUP_DELETE},
    {{"streams", "*", "topics", "*", "messages"}, SL_ROUTE_POLL, SL_ROUTE_SEND, 0, 0},
    {{"streams", "*", "topics", "*", "consumer-offsets"}, SL_ROUTE_OFFSET_GET, 0, SL_ROUTE_OFFSET_STORE, 0},
    {{"streams", "*", "topics", "*", "consumer-offsets", "*"}, 0, 0, 0, SL_ROUTE_OFFSET_DELETE},
};
/* clang-format on */

static const char *const route_names[SL_ROUTE_COUNT] = {
    [SL_ROUTE_NONE] = "none",
    [SL_ROUTE_PING] = "ping",
    [SL_ROUTE_STATS] = "get_stats",
    [SL_ROUTE_CLUSTER_METADATA] = "get_cluster_metadata",
    [SL_ROUTE_CLIENTS] = "get_clients",
    [SL_ROUTE_CLIENT] = "get_client",
    [SL_ROUTE_OPTIONS] = "describe_options",
    [SL_ROUTE_SNAPSHOT] = "snapshot",
    [SL_ROUTE_METRICS] = "metrics",
    [SL_ROUTE_LOGIN] = "login_user",
    [SL_ROUTE_REFRESH_TOKEN] = "refresh_token",
    [SL_ROUTE_PAT_LOGIN] = "login_with_personal_access_token",
    [SL_ROUTE_LOGOUT] = "logout_user",
    [SL_ROUTE_USERS] = "get_users",
    [SL_ROUTE_USER] = "get_user",
    [SL_ROUTE_USER_CREATE] = "create_user",
    [SL_ROUTE_USER_UPDATE] = "update_user",
    [SL_ROUTE_USER_DELETE] = "delete_user",
    [SL_ROUTE_USER_PASSWORD] = "change_password",
    [SL_ROUTE_USER_PERMISSIONS] = "update_permissions",
    [SL_ROUTE_PATS] = "get_personal_access_tokens",
    [SL_ROUTE_PAT_CREATE] = "create_personal_access_token",
    [SL_ROUTE_PAT_DELETE] = "delete_personal_access_token",
    [SL_ROUTE_STREAMS] = "get_streams",
    [SL_ROUTE_STREAM] = "get_stream",
    [SL_ROUTE_STREAM_CREATE] = "create_stream",
    [SL_ROUTE_STREAM_UPDATE] = "update_stream",
    [SL_ROUTE_STREAM_DELETE] = "delete_stream",
    [SL_ROUTE_STREAM_PURGE] = "purge_stream",
    [SL_ROUTE_TOPICS] = "get_topics",
    [SL_ROUTE_TOPIC] = "get_topic",
    [SL_ROUTE_TOPIC_CREATE] = "create_topic",
    [SL_ROUTE_TOPIC_UPDATE] = "update_topic",
    [SL_ROUTE_TOPIC_DELETE] = "delete_topic",
    [SL_ROUTE_TOPIC_PURGE] = "purge_topic",
    [SL_ROUTE_PARTITIONS_CREATE] = "create_partitions",
    [SL_ROUTE_PARTITIONS_DELETE] = "delete_partitions",
    [SL_ROUTE_SEGMENTS_DELETE] = "delete_segments",
    [SL_ROUTE_GROUPS] = "get_consumer_groups",
    [SL_ROUTE_GROUP] = "get_consumer_group",
    [SL_ROUTE_GROUP_CREATE] = "create_consumer_group",
    [SL_ROUTE_GROUP_DELETE] = "delete_consumer_group",
    [SL_ROUTE_POLL] = "poll_messages",
    [SL_ROUTE_SEND] = "send_messages",
    [SL_ROUTE_OFFSET_GET] = "get_consumer_offset",
    [SL_ROUTE_OFFSET_STORE] = "store_consumer_offset",
    [SL_ROUTE_OFFSET_DELETE] = "delete_consumer_offset",
};

const char *sl_rest_route_name(sl_rest_route_t route)
{
    return route < SL_ROUTE_COUNT && route_names[route] ? route_names[route] : "none";
}

bool sl_rest_route_public(sl_rest_route_t route)
{
    return route == SL_ROUTE_PING || route == SL_ROUTE_LOGIN || route == SL_ROUTE_PAT_LOGIN ||
           route == SL_ROUTE_REFRESH_TOKEN;
}

sl_rest_method_t sl_rest_method_parse(const char *text)
{
    static const struct {
        const char *name;
        sl_rest_method_t method;
    } methods[] = {{"GET", SL_REST_GET},         {"POST", SL_REST_POST},
                   {"PUT", SL_REST_PUT},         {"DELETE", SL_REST_DELETE},
                   {"OPTIONS", SL_REST_OPTIONS}, {"HEAD", SL_REST_HEAD}};
    for (size_t i = 0; text && i < SL_ARRAY_LEN(methods); i++)
        if (strcmp(text, methods[i].name) == 0)
            return methods[i].method;
    return SL_REST_OTHER;
}

/* --- path segments -------------------------------------------------------------- */

typedef struct segments {
    uint32_t count;
    sl_span_t items[SL_REST_SEGMENTS_MAX];
} segments_t;

/* "/a/b" into ["a", "b"]; false when it does not start with '/' or has
 * more segments than any pattern. Empty segments stay (they match nothing). */
static bool split_path(sl_span_t path, segments_t *out)
{
    out->count = 0;
    if (path.len == 0 || path.ptr[0] != '/')
        return false;
    size_t start = 1;
    for (size_t i = 1; i <= path.len; i++) {
        if (i < path.len && path.ptr[i] != '/')
            continue;
        if (out->count == SL_REST_SEGMENTS_MAX)
            return false;
        out->items[out->count++] = sl_span(path.ptr + start, i - start);
        start = i + 1;
    }
    return true;
}

static bool segment_is(sl_span_t seg, const char *text)
{
    size_t n = strlen(text);
    return seg.len == n && memcmp(seg.ptr, text, n) == 0;
}

static uint32_t pattern_len(const pattern_t *p)
{
    uint32_t n = 0;
    while (n < SL_ARRAY_LEN(p->segs) && p->segs[n])
        n++;
    return n;
}

/* A bitmask of the parameter positions, or -1 when the pattern does not fit.
 * Fewer parameters at earlier positions = more specific. */
static int pattern_fit(const pattern_t *p, const segments_t *s)
{
    if (pattern_len(p) != s->count)
        return -1;
    int params = 0;
    for (uint32_t i = 0; i < s->count; i++) {
        if (strcmp(p->segs[i], "*") == 0) {
            if (s->items[i].len == 0)
                return -1;
            params |= 1 << (SL_REST_SEGMENTS_MAX - 1 - i);
        } else if (!segment_is(s->items[i], p->segs[i])) {
            return -1;
        }
    }
    return params;
}

/* Percent-decodes src into dst (at most cap bytes); plus_space turns '+'
 * into ' ' (query strings). An escape that is not two hex digits stays as
 * it is. Returns the length, or -1 when it does not fit. */
static long percent_decode(sl_span_t src, bool plus_space, char *dst, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < src.len; i++) {
        uint8_t c = src.ptr[i];
        if (c == '%' && src.len - i >= 3 && sl_hex_digit(src.ptr[i + 1]) >= 0 &&
            sl_hex_digit(src.ptr[i + 2]) >= 0) {
            c = (uint8_t)(sl_hex_digit(src.ptr[i + 1]) * 16 + sl_hex_digit(src.ptr[i + 2]));
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (n == cap)
            return -1;
        dst[n++] = (char)c;
    }
    return (long)n;
}

static bool take_params(const pattern_t *p, const segments_t *s, sl_rest_match_t *out)
{
    size_t used = 0;
    out->params_count = 0;
    for (uint32_t i = 0; i < s->count; i++) {
        if (strcmp(p->segs[i], "*") != 0)
            continue;
        char *dst = out->storage + used;
        long n = percent_decode(s->items[i], false, dst, sizeof(out->storage) - used);
        if (n < 0 || out->params_count == SL_ARRAY_LEN(out->params))
            return false;
        out->params[out->params_count++] = sl_span(dst, (size_t)n);
        used += (size_t)n;
    }
    return true;
}

static sl_rest_route_t pattern_route(const pattern_t *p, sl_rest_method_t method)
{
    switch (method) {
    case SL_REST_GET:
    case SL_REST_HEAD:
        return p->get;
    case SL_REST_POST:
        return p->post;
    case SL_REST_PUT:
        return p->put;
    case SL_REST_DELETE:
        return p->del;
    default:
        return SL_ROUTE_NONE;
    }
}

sl_rest_match_result_t sl_rest_route_match(sl_rest_method_t method, sl_span_t path,
                                           const char *metrics_path, sl_rest_match_t *out)
{
    memset(out, 0, offsetof(sl_rest_match_t, storage));
    if (metrics_path && segment_is(path, metrics_path)) {
        if (method != SL_REST_GET && method != SL_REST_HEAD)
            return SL_REST_BAD_METHOD;
        out->route = SL_ROUTE_METRICS;
        return SL_REST_MATCHED;
    }
    segments_t s;
    if (!split_path(path, &s))
        return SL_REST_NOT_FOUND;
    const pattern_t *best = NULL;
    int best_params = 0;
    for (size_t i = 0; i < SL_ARRAY_LEN(patterns); i++) {
        int params = pattern_fit(&patterns[i], &s);
        if (params >= 0 && (!best || params < best_params)) {
            best = &patterns[i];
            best_params = params;
        }
    }
    if (!best)
        return SL_REST_NOT_FOUND;
    out->route = pattern_route(best, method);
    if (out->route == SL_ROUTE_NONE)
        return SL_REST_BAD_METHOD;
    if (!take_params(best, &s, out))
        return SL_REST_NOT_FOUND;
    return SL_REST_MATCHED;
}

/* --- query strings ----------------------------------------------------------------- */

bool sl_rest_query_add(sl_rest_query_t *q, sl_span_t key, sl_span_t value)
{
    if (q->count == SL_REST_QUERY_MAX)
        return false;
    q->items[q->count++] = (sl_rest_param_t){key, value};
    return true;
}

void sl_rest_query_parse(sl_span_t text, sl_rest_query_t *out)
{
    out->count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= text.len; i++) {
        if (i < text.len && text.ptr[i] != '&')
            continue;
        sl_span_t pair = sl_span(text.ptr + start, i - start);
        start = i + 1;
        if (pair.len == 0)
            continue;
        const uint8_t *eq = memchr(pair.ptr, '=', pair.len);
        size_t klen = eq ? (size_t)(eq - pair.ptr) : pair.len;
        sl_span_t value = eq ? sl_span(eq + 1, pair.len - klen - 1) : sl_span(NULL, 0);
        if (!sl_rest_query_add(out, sl_span(pair.ptr, klen), value))
            return;
    }
}

long sl_rest_percent_decode(sl_span_t src, bool plus_space, char *dst, size_t cap)
{
    return percent_decode(src, plus_space, dst, cap);
}
