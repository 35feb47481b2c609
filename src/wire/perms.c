/* Permission set codec and rules (wire/perms.h). */
#include "wire/perms.h"

#include <string.h>

#define STREAM_FLAGS 6
#define TOPIC_FLAGS 4

static bool read_flag(sl_reader_t *r, bool *out)
{
    uint8_t v;
    bool ok = sl_read_u8(r, &v);
    *out = ok && v != 0;
    return ok;
}

/* One structural walk used by both parse (out == NULL) and unpack. The
 * grant counts are bounded by the input: every grant consumes bytes. */
static bool walk(sl_reader_t *r, sl_arena_t *arena, sl_permissions_t *out)
{
    sl_permissions_t p = {0};
    bool *g[] = {&p.manage_servers, &p.read_servers,   &p.manage_users, &p.read_users,
                 &p.manage_streams, &p.read_streams,   &p.manage_topics, &p.read_topics,
                 &p.poll_messages,  &p.send_messages};
    for (size_t i = 0; i < SL_ARRAY_LEN(g); i++)
        if (!read_flag(r, g[i]))
            return false;
    bool more;
    if (!read_flag(r, &more))
        return false;
    /* First pass: check the shape and count the stream grants. */
    sl_reader_t start = *r;
    uint32_t streams = 0;
    while (more) {
        uint32_t sid;
        bool f[STREAM_FLAGS], topics_more;
        if (!sl_read_u32(r, &sid))
            return false;
        for (int i = 0; i < STREAM_FLAGS; i++)
            if (!read_flag(r, &f[i]))
                return false;
        if (!read_flag(r, &topics_more))
            return false;
        while (topics_more) {
            uint32_t tid;
            bool tf[TOPIC_FLAGS];
            if (!sl_read_u32(r, &tid))
                return false;
            for (int i = 0; i < TOPIC_FLAGS; i++)
                if (!read_flag(r, &tf[i]))
                    return false;
            if (!read_flag(r, &topics_more))
                return false;
        }
        if (!read_flag(r, &more))
            return false;
        streams++;
    }
    if (!out)
        return true;

    /* Second pass: fill arrays now that the shape is known to be sound. */
    p.streams_count = streams;
    p.streams = streams ? SL_ARENA_NEW(arena, sl_stream_perms_t, streams) : NULL;
    if (streams && !p.streams)
        return false;
    sl_reader_t s = start;
    for (uint32_t i = 0; i < streams; i++) {
        sl_stream_perms_t *sp = &p.streams[i];
        bool topics_more;
        sl_read_u32(&s, &sp->stream_id);
        read_flag(&s, &sp->manage_stream);
        read_flag(&s, &sp->read_stream);
        read_flag(&s, &sp->manage_topics);
        read_flag(&s, &sp->read_topics);
        read_flag(&s, &sp->poll_messages);
        read_flag(&s, &sp->send_messages);
        read_flag(&s, &topics_more);
        /* Count this stream's topics on a copy, then read them. */
        sl_reader_t t = s;
        uint32_t topics = 0;
        for (bool m = topics_more; m; topics++) {
            sl_read_take(&t, 4 + TOPIC_FLAGS);
            read_flag(&t, &m);
        }
        sp->topics_count = topics;
        sp->topics = topics ? SL_ARENA_NEW(arena, sl_topic_perms_t, topics) : NULL;
        if (topics && !sp->topics)
            return false;
        for (uint32_t k = 0; k < topics; k++) {
            sl_topic_perms_t *tp = &sp->topics[k];
            bool m;
            sl_read_u32(&s, &tp->topic_id);
            read_flag(&s, &tp->manage_topic);
            read_flag(&s, &tp->read_topic);
            read_flag(&s, &tp->poll_messages);
            read_flag(&s, &tp->send_messages);
            read_flag(&s, &m);
        }
        bool next;
        read_flag(&s, &next);
    }
    sl_assert(sl_reader_ok(&s) && s.pos == r->pos);
    *out = p;
    return true;
}

bool sl_permissions_parse(sl_reader_t *r, sl_span_t *raw)
{
    size_t begin = r->pos;
    if (!walk(r, NULL, NULL))
        return false;
    *raw = sl_span(r->ptr + begin, r->pos - begin);
    return true;
}

bool sl_permissions_unpack(sl_span_t raw, sl_arena_t *arena, sl_permissions_t *out)
{
    sl_reader_t r = sl_reader(raw);
    return walk(&r, arena, out) && sl_reader_done(&r);
}

bool sl_permissions_encode(sl_buf_t *b, const sl_permissions_t *p)
{
    const bool g[] = {p->manage_servers, p->read_servers,   p->manage_users, p->read_users,
                      p->manage_streams, p->read_streams,   p->manage_topics, p->read_topics,
                      p->poll_messages,  p->send_messages};
    for (size_t i = 0; i < SL_ARRAY_LEN(g); i++)
        sl_put_u8(b, g[i] ? 1 : 0);
    sl_put_u8(b, p->streams_count ? 1 : 0);
    for (uint32_t i = 0; i < p->streams_count; i++) {
        const sl_stream_perms_t *s = &p->streams[i];
        sl_put_u32(b, s->stream_id);
        sl_put_u8(b, s->manage_stream);
        sl_put_u8(b, s->read_stream);
        sl_put_u8(b, s->manage_topics);
        sl_put_u8(b, s->read_topics);
        sl_put_u8(b, s->poll_messages);
        sl_put_u8(b, s->send_messages);
        sl_put_u8(b, s->topics_count ? 1 : 0);
        for (uint32_t k = 0; k < s->topics_count; k++) {
            const sl_topic_perms_t *t = &s->topics[k];
            sl_put_u32(b, t->topic_id);
            sl_put_u8(b, t->manage_topic);
            sl_put_u8(b, t->read_topic);
            sl_put_u8(b, t->poll_messages);
            sl_put_u8(b, t->send_messages);
            sl_put_u8(b, k + 1 < s->topics_count ? 1 : 0);
        }
        sl_put_u8(b, i + 1 < p->streams_count ? 1 : 0);
    }
    return sl_buf_ok(b);
}

sl_permissions_t sl_permissions_root(void)
{
    return (sl_permissions_t){true, true, true, true, true, true, true, true, true, true, 0, NULL};
}

static const sl_stream_perms_t *find_stream(const sl_permissions_t *p, uint32_t id)
{
    /* Last duplicate wins, as the reference's map does. */
    const sl_stream_perms_t *found = NULL;
    for (uint32_t i = 0; i < p->streams_count; i++)
        if (p->streams[i].stream_id == id)
            found = &p->streams[i];
    return found;
}

static const sl_topic_perms_t *find_topic(const sl_stream_perms_t *s, uint32_t id)
{
    const sl_topic_perms_t *found = NULL;
    for (uint32_t i = 0; s && i < s->topics_count; i++)
        if (s->topics[i].topic_id == id)
            found = &s->topics[i];
    return found;
}

bool sl_permissions_allow(const sl_permissions_t *p, sl_perm_rule_t rule, uint32_t stream_id,
                          uint32_t topic_id)
{
    const sl_stream_perms_t *s = find_stream(p, stream_id);
    const sl_topic_perms_t *t = find_topic(s, topic_id);
    static const sl_stream_perms_t none_s;
    static const sl_topic_perms_t none_t;
    if (!s)
        s = &none_s;
    if (!t)
        t = &none_t;
    switch (rule) {
    case SL_PERM_SERVER_INFO:
        return p->manage_servers || p->read_servers;
    case SL_PERM_READ_USERS:
        return p->manage_users || p->read_users;
    case SL_PERM_MANAGE_USERS:
        return p->manage_users;
    case SL_PERM_CREATE_STREAM:
        return p->manage_streams;
    case SL_PERM_GET_STREAMS:
        return p->manage_streams || p->read_streams;
    case SL_PERM_GET_STREAM:
        return p->manage_streams || p->read_streams || s->manage_stream || s->read_stream;
    case SL_PERM_MANAGE_STREAM:
        return p->manage_streams || s->manage_stream;
    case SL_PERM_GET_TOPICS:
        return p->read_streams || p->manage_streams || p->manage_topics || p->read_topics ||
               s->manage_stream || s->read_stream || s->manage_topics || s->read_topics;
    case SL_PERM_GET_TOPIC:
        return sl_permissions_allow(p, SL_PERM_GET_TOPICS, stream_id, topic_id) ||
               t->manage_topic || t->read_topic;
    case SL_PERM_CREATE_TOPIC:
        return p->manage_streams || p->manage_topics || s->manage_stream || s->manage_topics;
    case SL_PERM_MANAGE_TOPIC:
        return p->manage_streams || p->manage_topics || s->manage_stream || s->manage_topics ||
               t->manage_topic;
    case SL_PERM_POLL_MESSAGES:
        return p->poll_messages || p->read_topics || p->manage_topics || p->read_streams ||
               p->manage_streams || s->poll_messages || s->manage_stream || s->read_stream ||
               s->manage_topics || s->read_topics || t->manage_topic || t->read_topic ||
               t->poll_messages;
    case SL_PERM_SEND_MESSAGES:
        return p->send_messages || p->manage_streams || p->manage_topics || s->send_messages ||
               s->manage_stream || s->manage_topics || t->manage_topic || t->send_messages;
    }
    return false;
}
