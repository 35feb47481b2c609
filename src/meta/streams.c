/* Streams, topics and partitions in the metadata state (commands.md 8-10):
 * their apply handlers (128-137 except 132/136, plus 64, 65 and 68), lookup
 * by Identifier, iteration and the wire views the GET handlers use. */
#include <stdlib.h>
#include <string.h>

#include "meta/state_internal.h"

/* --- lookup ------------------------------------------------------------------------ */

static sl_meta_stream_t *stream_by_name(const sl_meta_t *m, sl_span_t name)
{
    sl_meta_map_iter_t it = sl_meta_map_lookup(&m->stream_names, sl_meta_hash(name));
    uint32_t id;
    while (sl_meta_map_next(&it, &id))
        if (sl_span_eq(m->streams[id]->name, name))
            return m->streams[id];
    return NULL;
}

static sl_meta_topic_t *topic_by_name(const sl_meta_stream_t *s, sl_span_t name)
{
    sl_meta_map_iter_t it = sl_meta_map_lookup(&s->topic_names, sl_meta_hash(name));
    uint32_t id;
    while (sl_meta_map_next(&it, &id)) {
        sl_meta_topic_t *t = sl_meta_vec_find(&s->topics, id);
        if (t && sl_span_eq(t->name, name))
            return t;
    }
    return NULL;
}

sl_meta_stream_t *sl_meta_stream_get(sl_meta_t *m, const sl_ident_t *id)
{
    if (id->kind == SL_IDENT_STRING)
        return stream_by_name(m, id->name);
    return id->number < m->streams_cap ? m->streams[id->number] : NULL;
}

sl_meta_topic_t *sl_meta_topic_get(sl_meta_stream_t *s, const sl_ident_t *id)
{
    if (id->kind == SL_IDENT_STRING)
        return topic_by_name(s, id->name);
    return sl_meta_vec_find(&s->topics, id->number);
}

const sl_meta_stream_t *sl_meta_stream_find(const sl_meta_t *m, const sl_ident_t *id)
{
    return sl_meta_stream_get((sl_meta_t *)m, id);
}

const sl_meta_topic_t *sl_meta_topic_find(const sl_meta_stream_t *s, const sl_ident_t *id)
{
    return sl_meta_topic_get((sl_meta_stream_t *)s, id);
}

const sl_meta_stream_t *sl_meta_stream_by_id(const sl_meta_t *m, uint32_t id)
{
    return id < m->streams_cap ? m->streams[id] : NULL;
}

const sl_meta_stream_t *sl_meta_stream_next(const sl_meta_t *m, const sl_meta_stream_t *prev)
{
    uint32_t from = prev ? prev->id + 1 : 0;
    uint32_t id = sl_meta_bitmap_next_set(&m->stream_ids, from);
    return id < m->streams_cap ? m->streams[id] : NULL;
}

/* --- life cycle of streams and topics --------------------------------------------------- */

sl_meta_stream_t *sl_meta_stream_new(uint32_t id, uint64_t created_at, sl_span_t name)
{
    sl_meta_stream_t *s = sl_meta_calloc(1, sizeof(*s));
    s->id = id;
    s->created_at = created_at;
    s->name = sl_meta_span_dup(name);
    return s;
}

sl_meta_topic_t *sl_meta_topic_new(uint32_t stream_id, uint32_t id, uint64_t created_at,
                                   sl_span_t name)
{
    sl_meta_topic_t *t = sl_meta_calloc(1, sizeof(*t));
    t->id = id;
    t->stream_id = stream_id;
    t->created_at = created_at;
    t->name = sl_meta_span_dup(name);
    sl_topic_config_default(&t->config);
    return t;
}

void sl_meta_stream_link(sl_meta_t *m, sl_meta_stream_t *s)
{
    sl_assert(s->id < m->streams_max && !sl_meta_bitmap_get(&m->stream_ids, s->id));
    if (s->id >= m->streams_cap) {
        uint32_t cap = m->streams_cap ? m->streams_cap : 16;
        while (cap <= s->id)
            cap *= 2;
        m->streams = sl_meta_realloc(m->streams, cap, sizeof(*m->streams));
        memset(&m->streams[m->streams_cap], 0, (size_t)(cap - m->streams_cap) * sizeof(void *));
        m->streams_cap = cap;
    }
    m->streams[s->id] = s;
    sl_meta_bitmap_set(&m->stream_ids, s->id, true);
    sl_meta_map_insert(&m->stream_names, sl_meta_hash(s->name), s->id);
    m->streams_count++;
}

void sl_meta_topic_link(sl_meta_t *m, sl_meta_stream_t *s, sl_meta_topic_t *t)
{
    sl_assert(t->stream_id == s->id);
    sl_meta_vec_insert(&s->topics, t);
    sl_meta_map_insert(&s->topic_names, sl_meta_hash(t->name), t->id);
    m->topics_total++;
    m->partitions_total += t->partitions_count;
    m->groups_total += t->groups.count;
}

void sl_meta_topic_set_partitions(sl_meta_t *m, sl_meta_topic_t *t, uint32_t count,
                                  uint64_t created_at)
{
    if (count > t->partitions_cap) {
        uint32_t cap = t->partitions_cap ? t->partitions_cap : 4;
        while (cap < count)
            cap = cap > UINT32_MAX / 2 ? count : cap * 2;
        t->partition_created_at = sl_meta_realloc(t->partition_created_at, cap, sizeof(uint64_t));
        t->partitions_cap = cap;
    }
    for (uint32_t p = t->partitions_count; p < count; p++)
        t->partition_created_at[p] = created_at;
    m->partitions_total = m->partitions_total - t->partitions_count + count;
    t->partitions_count = count;
}

static void topic_free(sl_meta_t *m, sl_meta_topic_t *t)
{
    for (uint32_t i = 0; i < t->groups.count; i++)
        sl_meta_group_free(m, t->groups.items[i]);
    sl_meta_vec_free(&t->groups);
    sl_meta_map_free(&t->group_names);
    sl_meta_span_free(&t->name);
    sl_meta_span_free(&t->options);
    sl_meta_span_free(&t->derived_options);
    free(t->partition_created_at);
    free(t);
}

/* Unlinks t from s and the totals, then frees it. */
static void topic_remove(sl_meta_t *m, sl_meta_stream_t *s, sl_meta_topic_t *t)
{
    sl_meta_map_remove(&s->topic_names, sl_meta_hash(t->name), t->id);
    void *removed = sl_meta_vec_remove(&s->topics, t->id);
    sl_assert(removed == t);
    m->topics_total--;
    m->partitions_total -= t->partitions_count;
    m->groups_total -= t->groups.count;
    topic_free(m, t);
}

static void stream_free(sl_meta_t *m, sl_meta_stream_t *s)
{
    for (uint32_t i = 0; i < s->topics.count; i++)
        topic_free(m, s->topics.items[i]);
    sl_meta_vec_free(&s->topics);
    sl_meta_map_free(&s->topic_names);
    sl_meta_span_free(&s->name);
    sl_meta_span_free(&s->options);
    free(s);
}

static void stream_remove(sl_meta_t *m, sl_meta_stream_t *s)
{
    while (s->topics.count > 0)
        topic_remove(m, s, s->topics.items[s->topics.count - 1]);
    sl_meta_map_remove(&m->stream_names, sl_meta_hash(s->name), s->id);
    sl_meta_bitmap_set(&m->stream_ids, s->id, false);
    m->streams[s->id] = NULL;
    m->streams_count--;
    stream_free(m, s);
}

void sl_meta_streams_free(sl_meta_t *m)
{
    for (uint32_t id = 0; id < m->streams_cap; id++)
        if (m->streams[id])
            stream_free(m, m->streams[id]);
    free(m->streams);
    m->streams = NULL;
    m->streams_cap = 0;
    sl_meta_map_free(&m->stream_names);
}

/* --- wire views ------------------------------------------------------------------------- */

void sl_meta_stream_header(const sl_meta_stream_t *s, sl_stream_header_t *out)
{
    *out = (sl_stream_header_t){
        .id = s->id,
        .created_at = s->created_at,
        .topics_count = s->topics.count,
        .name = s->name,
        .options = s->options,
    };
}

void sl_meta_topic_header(const sl_meta_topic_t *t, sl_topic_header_t *out)
{
    *out = (sl_topic_header_t){
        .id = t->id,
        .created_at = t->created_at,
        .partitions_count = t->partitions_count,
        .message_expiry = t->config.message_expiry,
        .compression_algorithm = t->config.compression_algorithm,
        .max_topic_size = t->config.max_topic_size,
        .name = t->name,
        .options = t->options,
        .derived_options = t->derived_options,
    };
}

void sl_meta_partition_info(const sl_meta_topic_t *t, uint32_t partition_id,
                            sl_partition_info_t *out)
{
    sl_assert(partition_id < t->partitions_count);
    *out = (sl_partition_info_t){
        .id = partition_id,
        .created_at = t->partition_created_at[partition_id],
    };
}

/* --- 128 CreateStream / 129 UpdateStream / 130 DeleteStream / 131 PurgeStream --------------- */

int sl_meta_apply_create_stream(sl_meta_ctx_t *c)
{
    sl_meta_t *m = c->m;
    sl_create_stream_request_t q;
    int rc = sl_meta_decode_rc(sl_create_stream_request_decode(c->e->body, &q));
    if (rc != 0)
        return rc;
    if (!sl_meta_allowed(m, c->e->user_id, SL_PERM_CREATE_STREAM, 0, 0))
        return SL_ERR_UNAUTHORIZED;
    if (stream_by_name(m, q.name))
        return SL_ERR_STREAM_NAME_ALREADY_EXISTS;
    uint32_t id = sl_meta_bitmap_lowest_clear(&m->stream_ids);
    if (id >= m->streams_max)
        return SL_ERR_TOO_MANY_STREAMS;
    sl_meta_stream_t *s = sl_meta_stream_new(id, c->e->timestamp, q.name);
    s->options = sl_meta_span_dup(q.options);
    sl_meta_stream_link(m, s);

    sl_create_stream_reply_t reply = {0};
    sl_meta_stream_header(s, &reply.stream.header);
    sl_result_put_ok(c->out);
    rc = sl_create_stream_reply_encode(c->out, &reply);
    sl_assert(rc == 0);
    return 0;
}

/* Resolves the stream (1009), then checks rule on it (41). */
static int resolve_stream(sl_meta_ctx_t *c, const sl_ident_t *id, sl_perm_rule_t rule,
                          sl_meta_stream_t **out)
{
    *out = sl_meta_stream_get(c->m, id);
    if (!*out)
        return SL_ERR_STREAM_ID_NOT_FOUND;
    if (!sl_meta_allowed(c->m, c->e->user_id, rule, (*out)->id, 0))
        return SL_ERR_UNAUTHORIZED;
    return 0;
}

int sl_meta_apply_update_stream(sl_meta_ctx_t *c)
{
    sl_update_stream_request_t q;
    sl_meta_stream_t *s;
    int rc = sl_meta_decode_rc(sl_update_stream_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_stream(c, &q.stream_id, SL_PERM_MANAGE_STREAM, &s);
    if (rc != 0)
        return rc;
    const sl_meta_stream_t *same = stream_by_name(c->m, q.name);
    if (same && same != s)
        return SL_ERR_STREAM_NAME_ALREADY_EXISTS;
    sl_meta_map_remove(&c->m->stream_names, sl_meta_hash(s->name), s->id);
    sl_meta_span_set(&s->name, q.name);
    sl_meta_map_insert(&c->m->stream_names, sl_meta_hash(s->name), s->id);
    /* The stream catalog accepts no option keys, so there is nothing to patch. */
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_delete_stream(sl_meta_ctx_t *c)
{
    sl_delete_stream_request_t q;
    sl_meta_stream_t *s;
    int rc = sl_meta_decode_rc(sl_delete_stream_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_stream(c, &q.stream_id, SL_PERM_MANAGE_STREAM, &s);
    if (rc != 0)
        return rc;
    stream_remove(c->m, s);
    sl_result_put_ok(c->out);
    return 0;
}

/* Purging resets partition data, which the store owns; the metadata (topics,
 * partitions, groups and members) stays as it is, except for each topic's
 * purge generation, which tells the server which partitions still owe the
 * purge after a crash. */
int sl_meta_apply_purge_stream(sl_meta_ctx_t *c)
{
    sl_purge_stream_request_t q;
    sl_meta_stream_t *s;
    int rc = sl_meta_decode_rc(sl_purge_stream_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_stream(c, &q.stream_id, SL_PERM_MANAGE_STREAM, &s);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < s->topics.count; i++)
        ((sl_meta_topic_t *)s->topics.items[i])->purge_generation++;
    sl_result_put_ok(c->out);
    return 0;
}

/* --- topics -------------------------------------------------------------------------------- */

/* Resolves stream (1009) and topic (2010), then checks rule on them (41). */
static int resolve_topic(sl_meta_ctx_t *c, const sl_ident_t *stream_id, const sl_ident_t *topic_id,
                         sl_perm_rule_t rule, sl_meta_stream_t **s_out, sl_meta_topic_t **t_out)
{
    sl_meta_stream_t *s = sl_meta_stream_get(c->m, stream_id);
    if (!s)
        return SL_ERR_STREAM_ID_NOT_FOUND;
    sl_meta_topic_t *t = sl_meta_topic_get(s, topic_id);
    if (!t)
        return SL_ERR_TOPIC_ID_NOT_FOUND;
    if (!sl_meta_allowed(c->m, c->e->user_id, rule, s->id, t->id))
        return SL_ERR_UNAUTHORIZED;
    *s_out = s;
    *t_out = t;
    return 0;
}

/* Appends the stored block of one side of cfg as an owned span. */
static sl_span_t config_block(const sl_topic_config_t *cfg, bool explicit_side)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    int rc = sl_topic_options_encode(&b, cfg, explicit_side);
    sl_assert(rc == 0);
    sl_span_t owned = sl_meta_span_dup(sl_buf_span(&b));
    sl_buf_free(&b);
    return owned;
}

static void put_topic_details(sl_meta_ctx_t *c, const sl_meta_topic_t *t)
{
    sl_create_topic_reply_t reply = {0};
    sl_meta_topic_header(t, &reply.topic.header);
    sl_partition_info_t *parts = NULL;
    if (t->partitions_count > 0) {
        parts = SL_ARENA_NEW(&c->m->scratch, sl_partition_info_t, t->partitions_count);
        sl_assert(parts != NULL);
        for (uint32_t p = 0; p < t->partitions_count; p++)
            sl_meta_partition_info(t, p, &parts[p]);
    }
    reply.topic.partitions = parts;
    sl_result_put_ok(c->out);
    int rc = sl_create_topic_reply_encode(c->out, &reply);
    sl_assert(rc == 0);
}

int sl_meta_apply_create_topic(sl_meta_ctx_t *c)
{
    sl_meta_t *m = c->m;
    sl_create_topic_request_t q;
    int rc = sl_meta_decode_rc(sl_create_topic_request_decode(c->e->body, &q));
    if (rc != 0)
        return rc;
    sl_meta_stream_t *s = sl_meta_stream_get(m, &q.stream_id);
    if (!s)
        return SL_ERR_STREAM_ID_NOT_FOUND;
    if (!sl_meta_allowed(m, c->e->user_id, SL_PERM_CREATE_TOPIC, s->id, 0))
        return SL_ERR_UNAUTHORIZED;
    if (topic_by_name(s, q.name))
        return SL_ERR_TOPIC_NAME_ALREADY_EXISTS;
    uint32_t id = sl_meta_vec_lowest_free(&s->topics);
    if (id >= m->topics_max)
        return SL_ERR_TOO_MANY_TOPICS;
    if (q.partitions_count > m->partition_ids_max)
        return SL_ERR_PARTITION_ID_SPACE_EXHAUSTED;

    sl_meta_topic_t *t = sl_meta_topic_new(s->id, id, c->e->timestamp, q.name);
    t->config = q.config;
    t->options = config_block(&t->config, true);
    t->derived_options = config_block(&t->config, false);
    sl_meta_topic_link(m, s, t);
    sl_meta_topic_set_partitions(m, t, q.partitions_count, c->e->timestamp);
    put_topic_details(c, t);
    return 0;
}

int sl_meta_apply_update_topic(sl_meta_ctx_t *c)
{
    sl_update_topic_request_t q;
    sl_meta_stream_t *s;
    sl_meta_topic_t *t;
    int rc = sl_meta_decode_rc(sl_update_topic_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_topic(c, &q.stream_id, &q.topic_id, SL_PERM_MANAGE_TOPIC, &s, &t);
    if (rc == 0)
        rc = sl_meta_decode_rc(sl_update_topic_check_size(&q, t->config.segment_size));
    if (rc != 0)
        return rc;
    const sl_meta_topic_t *same = topic_by_name(s, q.name);
    if (same && same != t)
        return SL_ERR_TOPIC_NAME_ALREADY_EXISTS;
    sl_buf_t explicit_block, derived_block;
    sl_buf_init(&explicit_block, 0);
    sl_buf_init(&derived_block, 0);
    rc = sl_topic_options_patch_blocks(t->options, t->derived_options, q.options, &explicit_block,
                                       &derived_block);
    if (rc == 0) {
        sl_meta_map_remove(&s->topic_names, sl_meta_hash(t->name), t->id);
        sl_meta_span_set(&t->name, q.name);
        sl_meta_map_insert(&s->topic_names, sl_meta_hash(t->name), t->id);
        sl_topic_patch_apply(&q.patch, &t->config);
        sl_meta_span_set(&t->options, sl_buf_span(&explicit_block));
        sl_meta_span_set(&t->derived_options, sl_buf_span(&derived_block));
        sl_result_put_ok(c->out);
    }
    sl_buf_free(&explicit_block);
    sl_buf_free(&derived_block);
    /* The stored blocks always fit the patch rules; a failure here means the
     * update block itself was beyond them, which admission refuses. */
    return rc == 0 ? 0 : SL_ERR_INVALID_OPTION_VALUE;
}

int sl_meta_apply_delete_topic(sl_meta_ctx_t *c)
{
    sl_delete_topic_request_t q;
    sl_meta_stream_t *s;
    sl_meta_topic_t *t;
    int rc = sl_meta_decode_rc(sl_delete_topic_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_topic(c, &q.stream_id, &q.topic_id, SL_PERM_MANAGE_TOPIC, &s, &t);
    if (rc != 0)
        return rc;
    topic_remove(c->m, s, t);
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_purge_topic(sl_meta_ctx_t *c)
{
    sl_purge_topic_request_t q;
    sl_meta_stream_t *s;
    sl_meta_topic_t *t;
    int rc = sl_meta_decode_rc(sl_purge_topic_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_topic(c, &q.stream_id, &q.topic_id, SL_PERM_MANAGE_TOPIC, &s, &t);
    if (rc != 0)
        return rc;
    t->purge_generation++;
    sl_result_put_ok(c->out);
    return 0;
}

/* --- partitions ---------------------------------------------------------------------------- */

int sl_meta_apply_create_partitions(sl_meta_ctx_t *c)
{
    sl_create_partitions_request_t q;
    sl_meta_stream_t *s;
    sl_meta_topic_t *t;
    int rc = sl_meta_decode_rc(sl_create_partitions_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_topic(c, &q.stream_id, &q.topic_id, SL_PERM_MANAGE_TOPIC, &s, &t);
    if (rc != 0)
        return rc;
    /* Ids stay dense (0..n-1), so the new ones continue at the count. */
    if ((uint64_t)t->partitions_count + q.partitions_count > c->m->partition_ids_max)
        return SL_ERR_PARTITION_ID_SPACE_EXHAUSTED;
    sl_meta_topic_set_partitions(c->m, t, t->partitions_count + q.partitions_count,
                                 c->e->timestamp);
    sl_meta_topic_rebalance(t);
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_delete_partitions(sl_meta_ctx_t *c)
{
    sl_delete_partitions_request_t q;
    sl_meta_stream_t *s;
    sl_meta_topic_t *t;
    int rc = sl_meta_decode_rc(sl_delete_partitions_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_topic(c, &q.stream_id, &q.topic_id, SL_PERM_MANAGE_TOPIC, &s, &t);
    if (rc != 0)
        return rc;
    if (q.partitions_count > t->partitions_count)
        return SL_ERR_INVALID_PARTITIONS_COUNT;
    sl_meta_topic_set_partitions(c->m, t, t->partitions_count - q.partitions_count, 0);
    sl_meta_topic_rebalance(t);
    sl_result_put_ok(c->out);
    return 0;
}

/* 68 TruncatePartition carries the DeleteSegments body. What it deletes is
 * the store's business (issue 4); meta checks the target and permission. */
int sl_meta_apply_truncate_partition(sl_meta_ctx_t *c)
{
    sl_delete_segments_request_t q;
    int rc = sl_meta_decode_rc(sl_delete_segments_request_decode(c->e->body, &q));
    if (rc != 0)
        return rc;
    sl_meta_stream_t *s = sl_meta_stream_get(c->m, &q.stream_id);
    if (!s)
        return SL_ERR_STREAM_ID_NOT_FOUND;
    sl_meta_topic_t *t = sl_meta_topic_get(s, &q.topic_id);
    if (!t)
        return SL_ERR_TOPIC_ID_NOT_FOUND;
    if (q.partition_id >= t->partitions_count)
        return SL_ERR_PARTITION_NOT_FOUND;
    if (!sl_meta_allowed(c->m, c->e->user_id, SL_PERM_MANAGE_TOPIC, s->id, t->id))
        return SL_ERR_UNAUTHORIZED;
    sl_result_put_ok(c->out);
    return 0;
}
