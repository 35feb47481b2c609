/* Streams, topics, partitions, segments and consumer groups over HTTP
 * (http.md 6.3-6.5): JSON bodies into the binary requests of
 * wire/cmd_streams.h, cmd_topics.h and cmd_groups.h, replies back into the
 * reference's JSON shapes. */
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rest/internal.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_topics.h"
#include "wire/header.h"
#include "wire/tlv.h"

/* --- shared pieces ------------------------------------------------------------------- */

static bool stream_topic(const sl_rest_request_t *req, sl_ident_t *stream, sl_ident_t *topic,
                         sl_rest_error_t *err)
{
    return sl_rest_path_ident(req, 0, stream, err) &&
           (!topic || sl_rest_path_ident(req, 1, topic, err));
}

/* A name of 1..255 bytes, else the route's error code. */
static bool name_ok(sl_span_t name, uint32_t code, sl_rest_error_t *err)
{
    if (name.len >= 1 && name.len <= 255)
        return true;
    sl_rest_error_from_code(code, err);
    return false;
}

/* {"key": "value"} into an options block (String keys and values); a value
 * that is not a string is a 422. Keys in skip (a bit per index of fixed)
 * are left out. */
static bool options_map(json_object *o, sl_buf_t *block, sl_rest_error_t *err)
{
    json_object *map = NULL;
    if (!json_object_object_get_ex(o, "options", &map) || !map)
        return true;
    if (!json_object_is_type(map, json_type_object)) {
        sl_rest_error_plain(err, 422,
                            "Failed to deserialize the JSON body into the target type: "
                            "options: invalid type, expected a map");
        return false;
    }
    json_object_object_foreach(map, key, value)
    {
        if (!json_object_is_type(value, json_type_string)) {
            sl_rest_error_plain(err, 422,
                                "Failed to deserialize the JSON body into the target type: "
                                "options.%s: invalid type, expected a string",
                                key);
            return false;
        }
        size_t klen = strlen(key);
        if (klen == 0 || klen > 255 || json_object_get_string_len(value) == 0 ||
            json_object_get_string_len(value) > 255) {
            sl_rest_error_from_code(SL_ERR_INVALID_OPTION_VALUE, err);
            return false;
        }
        sl_tlv_put_pair(
            block, key, SL_KIND_STRING,
            sl_span(json_object_get_string(value), (size_t)json_object_get_string_len(value)));
    }
    return true;
}

static bool map_has(json_object *o, const char *key)
{
    json_object *map = NULL, *v = NULL;
    return json_object_object_get_ex(o, "options", &map) && map &&
           json_object_is_type(map, json_type_object) && json_object_object_get_ex(map, key, &v);
}

static void put_u64_option(sl_buf_t *block, const char *key, uint64_t v)
{
    uint8_t le[8];
    sl_store_u64(le, v);
    sl_tlv_put_pair(block, key, SL_KIND_UINT64, sl_span(le, 8));
}

/* "none" / "gzip", case-insensitive (http.md 1.2); else 422. */
static bool compression_parse(sl_span_t text, uint8_t *out, sl_rest_error_t *err)
{
    if (text.len == 4 && strncasecmp((const char *)text.ptr, "none", 4) == 0)
        *out = SL_COMPRESSION_NONE;
    else if (text.len == 4 && strncasecmp((const char *)text.ptr, "gzip", 4) == 0)
        *out = SL_COMPRESSION_GZIP;
    else {
        sl_rest_error_plain(err, 422,
                            "Failed to deserialize the JSON body into the target type: "
                            "compression_algorithm: unknown variant");
        return false;
    }
    return true;
}

static const char *compression_name(uint8_t code)
{
    return code == SL_COMPRESSION_GZIP ? "gzip" : "none";
}

/* --- JSON shapes --------------------------------------------------------------------- */

static json_object *partition_json(const sl_partition_info_t *p)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", sl_rest_json_uint(p->id));
    json_object_object_add(o, "created_at", sl_rest_json_uint(p->created_at));
    json_object_object_add(o, "segments_count", sl_rest_json_uint(p->segments_count));
    json_object_object_add(o, "current_offset", sl_rest_json_uint(p->current_offset));
    json_object_object_add(o, "size", sl_rest_json_bytes(p->size_bytes));
    json_object_object_add(o, "messages_count", sl_rest_json_uint(p->messages_count));
    return o;
}

static int partition_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_partition_info_t *)a)->id, y = ((const sl_partition_info_t *)b)->id;
    return (x > y) - (x < y);
}

/* Topic, or TopicDetails when partitions is not NULL (http.md 6.4). */
static json_object *topic_json(const sl_topic_header_t *h, sl_partition_info_t *partitions)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", sl_rest_json_uint(h->id));
    json_object_object_add(o, "created_at", sl_rest_json_uint(h->created_at));
    json_object_object_add(o, "name", sl_rest_json_string(h->name));
    json_object_object_add(o, "size", sl_rest_json_bytes(h->size_bytes));
    /* A stored 0 (server default) reads as never (http.md 1.2). */
    uint64_t expiry = h->message_expiry == 0 ? UINT64_MAX : h->message_expiry;
    json_object_object_add(o, "message_expiry", sl_rest_json_uint(expiry));
    json_object_object_add(o, "compression_algorithm",
                           json_object_new_string(compression_name(h->compression_algorithm)));
    json_object_object_add(o, "max_topic_size", sl_rest_json_uint(h->max_topic_size));
    json_object_object_add(o, "messages_count", sl_rest_json_uint(h->messages_count));
    json_object_object_add(o, "partitions_count", sl_rest_json_uint(h->partitions_count));
    if (partitions) {
        qsort(partitions, h->partitions_count, sizeof(*partitions), partition_cmp);
        json_object *list = json_object_new_array();
        for (uint32_t i = 0; i < h->partitions_count; i++)
            json_object_array_add(list, partition_json(&partitions[i]));
        json_object_object_add(o, "partitions", list);
    }
    json_object_object_add(o, "options", sl_rest_options_object(h->options, h->derived_options));
    return o;
}

static int topic_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_topic_header_t *)a)->id, y = ((const sl_topic_header_t *)b)->id;
    return (x > y) - (x < y);
}

static json_object *topics_json(sl_topic_header_t *items, uint32_t count)
{
    if (count)
        qsort(items, count, sizeof(*items), topic_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < count; i++)
        json_object_array_add(list, topic_json(&items[i], NULL));
    return list;
}

/* Stream, or StreamDetails with topics (http.md 6.3). */
static json_object *stream_json(const sl_stream_header_t *h, sl_topic_header_t *topics,
                                bool details)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", sl_rest_json_uint(h->id));
    json_object_object_add(o, "created_at", sl_rest_json_uint(h->created_at));
    json_object_object_add(o, "name", sl_rest_json_string(h->name));
    json_object_object_add(o, "size", sl_rest_json_bytes(h->size_bytes));
    json_object_object_add(o, "messages_count", sl_rest_json_uint(h->messages_count));
    json_object_object_add(o, "topics_count", sl_rest_json_uint(h->topics_count));
    if (details)
        json_object_object_add(o, "topics", topics_json(topics, h->topics_count));
    json_object_object_add(o, "options", sl_rest_options_object(h->options, sl_span(NULL, 0)));
    return o;
}

static int stream_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_stream_header_t *)a)->id, y = ((const sl_stream_header_t *)b)->id;
    return (x > y) - (x < y);
}

/* --- streams ---------------------------------------------------------------------------- */

static int build_empty(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    (void)req, (void)call, (void)err;
    return 0;
}

static int render_streams(const sl_rest_request_t *req, const sl_rest_call_t *call,
                          sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_streams_reply_t r;
    if (sl_get_streams_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_stream_header_t *items = (sl_stream_header_t *)r.items;
    if (r.count)
        qsort(items, r.count, sizeof(*items), stream_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++)
        json_object_array_add(list, stream_json(&items[i], NULL, false));
    sl_rest_response_json(resp, 200, list);
    return 0;
}

static int build_stream_ref(const sl_rest_request_t *req, sl_rest_call_t *call,
                            sl_rest_error_t *err)
{
    sl_stream_ref_t q;
    if (!stream_topic(req, &q.stream_id, NULL, err))
        return -1;
    return sl_get_stream_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int render_stream_details(sl_span_t payload, bool found_required, sl_arena_t *arena,
                                 sl_rest_response_t *resp, uint16_t status)
{
    sl_get_stream_reply_t r;
    if (found_required) {
        if (sl_get_stream_reply_decode(payload, arena, &r) != 0)
            return -1;
        if (!r.found) {
            sl_rest_not_found(resp);
            return 0;
        }
    } else {
        sl_create_stream_reply_t c;
        if (sl_create_stream_reply_decode(payload, arena, &c) != 0)
            return -1;
        r.stream = c.stream;
    }
    sl_rest_response_json(
        resp, status, stream_json(&r.stream.header, (sl_topic_header_t *)r.stream.topics, true));
    return 0;
}

static int render_stream(const sl_rest_request_t *req, const sl_rest_call_t *call,
                         sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    return render_stream_details(payload, true, arena, resp, 200);
}

static int build_stream_create(const sl_rest_request_t *req, sl_rest_call_t *call,
                               sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_create_stream_request_t q = {0};
    bool ok = o && sl_rest_json_str(o, "name", true, &q.name, NULL, err) &&
              name_ok(q.name, SL_ERR_INVALID_STREAM_NAME, err);
    if (ok)
        ok = sl_create_stream_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_stream_create(const sl_rest_request_t *req, const sl_rest_call_t *call,
                                sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    return render_stream_details(payload, false, arena, resp, 200);
}

static int build_stream_update(const sl_rest_request_t *req, sl_rest_call_t *call,
                               sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_update_stream_request_t q = {0};
    sl_buf_t block;
    sl_buf_init(&block, 0);
    bool ok = o && stream_topic(req, &q.stream_id, NULL, err) &&
              sl_rest_json_str(o, "name", true, &q.name, NULL, err) &&
              name_ok(q.name, SL_ERR_INVALID_STREAM_NAME, err) && options_map(o, &block, err);
    q.options = sl_buf_span(&block);
    if (ok)
        ok = sl_update_stream_request_encode(call->body, &q) == 0;
    sl_buf_free(&block);
    json_object_put(o);
    return ok ? 0 : -1;
}

/* --- topics --------------------------------------------------------------------------- */

static int build_topics(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_get_topics_request_t q;
    if (!stream_topic(req, &q.stream_id, NULL, err))
        return -1;
    return sl_get_topics_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int render_topics(const sl_rest_request_t *req, const sl_rest_call_t *call,
                         sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_topics_reply_t r;
    if (sl_get_topics_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_rest_response_json(resp, 200, topics_json((sl_topic_header_t *)r.items, r.count));
    return 0;
}

static int build_topic_ref(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_topic_ref_t q;
    if (!stream_topic(req, &q.stream_id, &q.topic_id, err))
        return -1;
    return sl_get_topic_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int render_topic(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                        sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_topic_reply_t r;
    if (sl_get_topic_reply_decode(payload, arena, &r) != 0)
        return -1;
    if (!r.found) {
        sl_rest_not_found(resp);
        return 0;
    }
    sl_rest_response_json(resp, 200,
                          topic_json(&r.topic.header, (sl_partition_info_t *)r.topic.partitions));
    return 0;
}

/* The options block of CreateTopic: the map, then the three fixed fields
 * that are not defaults (http.md 6.4), unless the map names them. */
static bool topic_create_options(json_object *o, uint8_t compression, uint64_t expiry,
                                 uint64_t size, sl_buf_t *block, sl_rest_error_t *err)
{
    if (!options_map(o, block, err))
        return false;
    if (compression != SL_COMPRESSION_NONE && !map_has(o, "compression_algorithm"))
        sl_tlv_put_pair(block, "compression_algorithm", SL_KIND_STRING, sl_span_str("gzip"));
    if (expiry != 0 && !map_has(o, "message_expiry"))
        put_u64_option(block, "message_expiry", expiry);
    if (size != 0 && !map_has(o, "max_topic_size"))
        put_u64_option(block, "max_topic_size", size);
    return true;
}

static int build_topic_create(const sl_rest_request_t *req, sl_rest_call_t *call,
                              sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_create_topic_request_t q = {0};
    sl_span_t compression = {0};
    uint8_t code = SL_COMPRESSION_NONE;
    uint64_t expiry = 0, size = 0;
    sl_buf_t block;
    sl_buf_init(&block, 0);
    bool ok = o && stream_topic(req, &q.stream_id, NULL, err) &&
              sl_rest_json_str(o, "name", true, &q.name, NULL, err) &&
              sl_rest_json_u32(o, "partitions_count", true, &q.partitions_count, NULL, err) &&
              sl_rest_json_str(o, "compression_algorithm", true, &compression, NULL, err) &&
              sl_rest_json_u64(o, "message_expiry", true, &expiry, NULL, err) &&
              sl_rest_json_u64(o, "max_topic_size", true, &size, NULL, err) &&
              compression_parse(compression, &code, err) &&
              name_ok(q.name, SL_ERR_INVALID_TOPIC_NAME, err) &&
              topic_create_options(o, code, expiry, size, &block, err);
    q.options = sl_buf_span(&block);
    if (ok)
        ok = sl_create_topic_request_encode(call->body, &q) == 0;
    sl_buf_free(&block);
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_topic_create(const sl_rest_request_t *req, const sl_rest_call_t *call,
                               sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_create_topic_reply_t r;
    if (sl_create_topic_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_rest_response_json(resp, 200,
                          topic_json(&r.topic.header, (sl_partition_info_t *)r.topic.partitions));
    return 0;
}

/* UpdateTopic's optional fixed fields become options (http.md 6.4). */
static bool topic_update_options(json_object *o, sl_buf_t *block, sl_rest_error_t *err)
{
    sl_span_t compression;
    bool has_compression = false, has_expiry = false, has_size = false;
    uint64_t expiry = 0, size = 0;
    uint8_t code = SL_COMPRESSION_NONE;
    if (!sl_rest_json_str(o, "compression_algorithm", false, &compression, &has_compression, err) ||
        !sl_rest_json_u64(o, "message_expiry", false, &expiry, &has_expiry, err) ||
        !sl_rest_json_u64(o, "max_topic_size", false, &size, &has_size, err) ||
        (has_compression && !compression_parse(compression, &code, err)) ||
        !options_map(o, block, err))
        return false;
    if (has_compression && !map_has(o, "compression_algorithm"))
        sl_tlv_put_pair(block, "compression_algorithm", SL_KIND_STRING,
                        sl_span_str(compression_name(code)));
    if (has_expiry && !map_has(o, "message_expiry"))
        put_u64_option(block, "message_expiry", expiry);
    if (has_size && !map_has(o, "max_topic_size"))
        put_u64_option(block, "max_topic_size", size);
    return true;
}

static int build_topic_update(const sl_rest_request_t *req, sl_rest_call_t *call,
                              sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_update_topic_request_t q = {0};
    sl_buf_t block;
    sl_buf_init(&block, 0);
    bool ok = o && stream_topic(req, &q.stream_id, &q.topic_id, err) &&
              sl_rest_json_str(o, "name", true, &q.name, NULL, err) &&
              topic_update_options(o, &block, err) &&
              name_ok(q.name, SL_ERR_INVALID_TOPIC_NAME, err);
    q.options = sl_buf_span(&block);
    if (ok)
        ok = sl_update_topic_request_encode(call->body, &q) == 0;
    sl_buf_free(&block);
    json_object_put(o);
    return ok ? 0 : -1;
}

/* --- partitions and segments ------------------------------------------------------------ */

static int build_partitions_create(const sl_rest_request_t *req, sl_rest_call_t *call,
                                   sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_partitions_change_t q = {0};
    bool ok = o && stream_topic(req, &q.stream_id, &q.topic_id, err) &&
              sl_rest_json_u32(o, "partitions_count", true, &q.partitions_count, NULL, err);
    if (ok)
        ok = sl_create_partitions_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static bool query_required_u32(const sl_rest_request_t *req, const char *key, uint32_t *out,
                               sl_rest_error_t *err)
{
    bool present = false;
    if (!sl_rest_query_u32(req, key, out, &present, err))
        return false;
    if (present)
        return true;
    sl_rest_error_plain(err, 400, "Failed to deserialize query string: missing field `%s`", key);
    return false;
}

static int build_partitions_delete(const sl_rest_request_t *req, sl_rest_call_t *call,
                                   sl_rest_error_t *err)
{
    sl_partitions_change_t q = {0};
    if (!stream_topic(req, &q.stream_id, &q.topic_id, err) ||
        !query_required_u32(req, "partitions_count", &q.partitions_count, err))
        return -1;
    return sl_delete_partitions_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int build_segments_delete(const sl_rest_request_t *req, sl_rest_call_t *call,
                                 sl_rest_error_t *err)
{
    sl_delete_segments_request_t q = {0};
    if (!stream_topic(req, &q.stream_id, &q.topic_id, err) ||
        !sl_rest_path_u32(req, 2, &q.partition_id, err) ||
        !query_required_u32(req, "segments_count", &q.segments_count, err))
        return -1;
    return sl_delete_segments_request_encode(call->body, &q) == 0 ? 0 : -1;
}

/* --- consumer groups -------------------------------------------------------------------- */

static json_object *group_json(const sl_group_header_t *h, const sl_group_member_t *members,
                               bool details)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", sl_rest_json_uint(h->id));
    json_object_object_add(o, "name", sl_rest_json_string(h->name));
    json_object_object_add(o, "partitions_count", sl_rest_json_uint(h->partitions_count));
    json_object_object_add(o, "members_count", sl_rest_json_uint(h->members_count));
    if (!details)
        return o;
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < h->members_count; i++) {
        json_object *m = json_object_new_object();
        json_object_object_add(m, "id", sl_rest_json_uint(members[i].id));
        json_object_object_add(m, "partitions_count",
                               sl_rest_json_uint(members[i].partitions_count));
        json_object *parts = json_object_new_array();
        for (uint32_t k = 0; k < members[i].partitions_count; k++)
            json_object_array_add(parts, sl_rest_json_uint(members[i].partitions[k]));
        json_object_object_add(m, "partitions", parts);
        json_object_array_add(list, m);
    }
    json_object_object_add(o, "members", list);
    return o;
}

static int group_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sl_group_header_t *)a)->id, y = ((const sl_group_header_t *)b)->id;
    return (x > y) - (x < y);
}

static int render_groups(const sl_rest_request_t *req, const sl_rest_call_t *call,
                         sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_consumer_groups_reply_t r;
    if (sl_get_consumer_groups_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_group_header_t *items = (sl_group_header_t *)r.items;
    if (r.count)
        qsort(items, r.count, sizeof(*items), group_cmp);
    json_object *list = json_object_new_array();
    for (uint32_t i = 0; i < r.count; i++)
        json_object_array_add(list, group_json(&items[i], NULL, false));
    sl_rest_response_json(resp, 200, list);
    return 0;
}

static int build_group_target(const sl_rest_request_t *req, sl_rest_call_t *call,
                              sl_rest_error_t *err)
{
    sl_group_target_t q;
    if (!stream_topic(req, &q.stream, &q.topic, err) || !sl_rest_path_ident(req, 2, &q.group, err))
        return -1;
    return sl_get_consumer_group_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int render_group(const sl_rest_request_t *req, const sl_rest_call_t *call, sl_span_t payload,
                        sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_get_consumer_group_reply_t r;
    if (sl_get_consumer_group_reply_decode(payload, arena, &r) != 0)
        return -1;
    if (!r.found) {
        sl_rest_not_found(resp);
        return 0;
    }
    sl_rest_response_json(resp, 200, group_json(&r.group.header, r.group.members, true));
    return 0;
}

static int build_groups(const sl_rest_request_t *req, sl_rest_call_t *call, sl_rest_error_t *err)
{
    sl_get_consumer_groups_request_t q;
    if (!stream_topic(req, &q.stream, &q.topic, err))
        return -1;
    return sl_get_consumer_groups_request_encode(call->body, &q) == 0 ? 0 : -1;
}

static int build_group_create(const sl_rest_request_t *req, sl_rest_call_t *call,
                              sl_rest_error_t *err)
{
    json_object *o = sl_rest_body_object(req, err);
    sl_create_consumer_group_request_t q = {0};
    bool ok = o && stream_topic(req, &q.stream, &q.topic, err) &&
              sl_rest_json_str(o, "name", true, &q.name, NULL, err) &&
              name_ok(q.name, SL_ERR_INVALID_CONSUMER_GROUP_NAME, err);
    if (ok)
        ok = sl_create_consumer_group_request_encode(call->body, &q) == 0;
    json_object_put(o);
    return ok ? 0 : -1;
}

static int render_group_create(const sl_rest_request_t *req, const sl_rest_call_t *call,
                               sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp)
{
    (void)req, (void)call;
    sl_create_consumer_group_reply_t r;
    if (sl_create_consumer_group_reply_decode(payload, arena, &r) != 0)
        return -1;
    sl_rest_response_json(resp, 200, group_json(&r.header, r.members, true));
    return 0;
}

/* clang-format off */
const sl_rest_handler_t sl_rest_stream_handlers[] = {
    {SL_ROUTE_STREAMS,        SL_OP_NON_REPLICATED, 201, false, build_empty, render_streams},
    {SL_ROUTE_STREAM,         SL_OP_NON_REPLICATED, 200, false, build_stream_ref, render_stream},
    {SL_ROUTE_STREAM_CREATE,  SL_OP_CREATE_STREAM, 0, true, build_stream_create, render_stream_create},
    {SL_ROUTE_STREAM_UPDATE,  SL_OP_UPDATE_STREAM, 0, true, build_stream_update, sl_rest_render_no_content},
    {SL_ROUTE_STREAM_DELETE,  SL_OP_DELETE_STREAM, 0, false, build_stream_ref, sl_rest_render_no_content},
    {SL_ROUTE_STREAM_PURGE,   SL_OP_PURGE_STREAM, 0, false, build_stream_ref, sl_rest_render_no_content},
    {SL_ROUTE_TOPICS,         SL_OP_NON_REPLICATED, 301, false, build_topics, render_topics},
    {SL_ROUTE_TOPIC,          SL_OP_NON_REPLICATED, 300, false, build_topic_ref, render_topic},
    {SL_ROUTE_TOPIC_CREATE,   SL_OP_CREATE_TOPIC, 0, true, build_topic_create, render_topic_create},
    {SL_ROUTE_TOPIC_UPDATE,   SL_OP_UPDATE_TOPIC, 0, true, build_topic_update, sl_rest_render_no_content},
    {SL_ROUTE_TOPIC_DELETE,   SL_OP_DELETE_TOPIC, 0, false, build_topic_ref, sl_rest_render_no_content},
    {SL_ROUTE_TOPIC_PURGE,    SL_OP_PURGE_TOPIC, 0, false, build_topic_ref, sl_rest_render_no_content},
    {SL_ROUTE_PARTITIONS_CREATE, SL_OP_CREATE_PARTITIONS, 0, true, build_partitions_create, sl_rest_render_ok_empty},
    {SL_ROUTE_PARTITIONS_DELETE, SL_OP_DELETE_PARTITIONS, 0, false, build_partitions_delete, sl_rest_render_no_content},
    {SL_ROUTE_SEGMENTS_DELETE, SL_OP_DELETE_SEGMENTS, 0, false, build_segments_delete, sl_rest_render_no_content},
    {SL_ROUTE_GROUPS,         SL_OP_NON_REPLICATED, 601, false, build_groups, render_groups},
    {SL_ROUTE_GROUP,          SL_OP_NON_REPLICATED, 600, false, build_group_target, render_group},
    {SL_ROUTE_GROUP_CREATE,   SL_OP_CREATE_CONSUMER_GROUP, 0, true, build_group_create, render_group_create},
    {SL_ROUTE_GROUP_DELETE,   SL_OP_DELETE_CONSUMER_GROUP, 0, false, build_group_target, sl_rest_render_no_content},
};
/* clang-format on */
const size_t sl_rest_stream_handlers_count = SL_ARRAY_LEN(sl_rest_stream_handlers);
