/* Operation 2 commands (commands.md): reads of the metadata, the session
 * and the process. Each handler decodes, resolves the target, checks the
 * permission (permissions.md 2.4: not-found before permission), encodes the
 * payload into the session's reply body and replies. */
#include <sluice/error.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/reads.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_system.h"
#include "wire/cmd_topics.h"
#include "wire/cmd_users.h"
#include "wire/command.h"
#include "wire/topic_options.h"

/* --- streams and topics ---------------------------------------------------- */

static void put_topic_header(sl_read_t *c, const sl_meta_topic_t *t)
{
    sl_topic_header_t h;
    sl_meta_topic_header(t, &h);
    sl_partitions_stats_t st;
    sl_partitions_topic_stats(&c->s->server->partitions, t->stream_id, t->id, &st);
    h.size_bytes = st.size_bytes;
    h.messages_count = st.messages;
    sl_topic_header_encode(c->out, &h);
}

static void put_stream_header(sl_read_t *c, const sl_meta_stream_t *st)
{
    sl_stream_header_t h;
    sl_meta_stream_header(st, &h);
    sl_partitions_stats_t stats;
    sl_partitions_stream_stats(&c->s->server->partitions, st->id, &stats);
    h.size_bytes = stats.size_bytes;
    h.messages_count = stats.messages;
    sl_stream_header_encode(c->out, &h);
}

static void get_stream(sl_read_t *c)
{
    sl_get_stream_request_t q;
    int rc = sl_get_stream_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_meta_stream_t *st = sl_meta_stream_find(c->meta, &q.stream_id);
    if (!st)
        return sl_read_ok(c); /* empty body: not found */
    if (!sl_read_allowed(c, SL_PERM_GET_STREAM, st->id, 0))
        return;
    put_stream_header(c, st);
    for (uint32_t i = 0; i < st->topics.count; i++)
        put_topic_header(c, sl_meta_topic_at(st, i));
    sl_read_ok(c);
}

static void get_streams(sl_read_t *c)
{
    if (!sl_read_allowed(c, SL_PERM_GET_STREAMS, 0, 0))
        return;
    for (const sl_meta_stream_t *st = sl_meta_stream_next(c->meta, NULL); st;
         st = sl_meta_stream_next(c->meta, st))
        put_stream_header(c, st);
    sl_read_ok(c);
}

static void get_topic(sl_read_t *c)
{
    sl_get_topic_request_t q;
    int rc = sl_get_topic_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_meta_stream_t *st = sl_meta_stream_find(c->meta, &q.stream_id);
    const sl_meta_topic_t *t = st ? sl_meta_topic_find(st, &q.topic_id) : NULL;
    if (!t)
        return sl_read_ok(c);
    if (!sl_read_allowed(c, SL_PERM_GET_TOPIC, st->id, t->id))
        return;
    put_topic_header(c, t);
    for (uint32_t p = 0; p < t->partitions_count; p++) {
        sl_partition_info_t info;
        sl_meta_partition_info(t, p, &info);
        info.segments_count = 1; /* Get* report at least one (commands.md 2.3) */
        sl_partition_t *part = sl_partitions_get(&c->s->server->partitions, st->id, t->id, p);
        if (part) {
            info.segments_count = sl_partition_segments(part);
            info.current_offset = sl_partition_current_offset(part);
            info.size_bytes = sl_partition_size(part);
            info.messages_count = sl_partition_messages(part);
        }
        sl_partition_info_encode(c->out, &info);
    }
    sl_read_ok(c);
}

static void get_topics(sl_read_t *c)
{
    sl_get_topics_request_t q;
    int rc = sl_get_topics_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_meta_stream_t *st = sl_meta_stream_find(c->meta, &q.stream_id);
    if (!st) {
        sl_put_u32(c->out, 0); /* a missing stream is an empty list */
        return sl_read_ok(c);
    }
    if (!sl_read_allowed(c, SL_PERM_GET_TOPICS, st->id, 0))
        return;
    sl_put_u32(c->out, st->topics.count);
    for (uint32_t i = 0; i < st->topics.count; i++)
        put_topic_header(c, sl_meta_topic_at(st, i));
    sl_read_ok(c);
}

/* --- consumer groups ------------------------------------------------------- */

/* Resolves stream and topic for the group reads: status 1009 / 2010. */
static const sl_meta_topic_t *group_topic(sl_read_t *c, const sl_ident_t *stream,
                                          const sl_ident_t *topic, bool statuses)
{
    const sl_meta_stream_t *st = sl_meta_stream_find(c->meta, stream);
    if (!st) {
        if (statuses)
            sl_read_status(c, SL_ERR_STREAM_ID_NOT_FOUND);
        return NULL;
    }
    const sl_meta_topic_t *t = sl_meta_topic_find(st, topic);
    if (!t && statuses)
        sl_read_status(c, SL_ERR_TOPIC_ID_NOT_FOUND);
    return t;
}

static void get_group(sl_read_t *c)
{
    sl_get_consumer_group_request_t q;
    int rc = sl_get_consumer_group_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_meta_topic_t *t = group_topic(c, &q.stream, &q.topic, true);
    if (!t)
        return;
    if (!sl_read_allowed(c, SL_PERM_GET_TOPIC, t->stream_id, t->id))
        return;
    const sl_meta_group_t *g = sl_meta_group_find(t, &q.group);
    if (!g)
        return sl_read_ok(c);
    sl_group_details_t d;
    if (!sl_meta_group_details(t, g, &c->s->arena, &d))
        return sl_read_status(c, SL_ERR_ERROR);
    sl_group_details_encode(c->out, &d);
    sl_read_ok(c);
}

static void get_groups(sl_read_t *c)
{
    sl_get_consumer_groups_request_t q;
    int rc = sl_get_consumer_groups_request_decode(c->body, &q);
    if (rc != 0)
        return sl_read_status(c, rc);
    const sl_meta_topic_t *t = group_topic(c, &q.stream, &q.topic, true);
    if (!t)
        return;
    if (!sl_read_allowed(c, SL_PERM_GET_TOPIC, t->stream_id, t->id))
        return;
    for (uint32_t i = 0; i < t->groups.count; i++) {
        const sl_meta_group_t *g = sl_meta_group_at(t, i);
        sl_put_u32(c->out, g->id);
        sl_put_u32(c->out, t->partitions_count);
        sl_put_u32(c->out, g->members_count);
        sl_put_u8(c->out, (uint8_t)g->name.len);
        sl_put_span(c->out, g->name);
    }
    sl_read_ok(c);
}

static void sync_group(sl_read_t *c)
{
    sl_sync_consumer_group_request_t q;
    /* An undecodable body, a missing target or a non-member: empty body. */
    if (sl_sync_consumer_group_request_decode(c->body, &q) != 0)
        return sl_read_ok(c);
    const sl_meta_topic_t *t = group_topic(c, &q.stream, &q.topic, false);
    const sl_meta_group_t *g = t ? sl_meta_group_find(t, &q.group) : NULL;
    const sl_meta_member_t *m = g ? sl_meta_member_find(g, c->s->client) : NULL;
    if (!m)
        return sl_read_ok(c);
    sl_sync_consumer_group_reply_t r = {
        .found = true,
        .generation = g->generation,
        .partitions_count = m->partitions_count,
        .partitions = m->partitions,
    };
    if (sl_sync_consumer_group_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

/* --- dispatch -------------------------------------------------------------- */

static void reads_dispatch(sl_read_t *c)
{
    switch (c->req->code) {
    case SL_CMD_GET_STREAM:
        return get_stream(c);
    case SL_CMD_GET_STREAMS:
        return get_streams(c);
    case SL_CMD_GET_TOPIC:
        return get_topic(c);
    case SL_CMD_GET_TOPICS:
        return get_topics(c);
    case SL_CMD_GET_CONSUMER_GROUP:
        return get_group(c);
    case SL_CMD_GET_CONSUMER_GROUPS:
        return get_groups(c);
    case SL_CMD_SYNC_CONSUMER_GROUP:
        return sync_group(c);
    case SL_CMD_GET_USER:
    case SL_CMD_GET_USERS:
    case SL_CMD_GET_PERSONAL_ACCESS_TOKENS:
        return sl_reads_users(c);
    case SL_CMD_POLL_MESSAGES:
    case SL_CMD_GET_CONSUMER_OFFSET:
        return sl_messages_read(c);
    default:
        return sl_reads_system(c);
    }
}

void sl_reads_handle(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_read_t c = {s, req, body, s->server->meta, &s->reply_body};
    reads_dispatch(&c);
    /* Whatever the reply holds counts against the reply budget until it is
     * written (reply_budget.c). */
    sl_reply_budget_account(s);
}
