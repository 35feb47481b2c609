/* Consumer groups in the metadata state (commands.md 11): create, delete,
 * join and leave, membership by client id, and the deterministic partition
 * assignment. Members are kept sorted by member id; partition ids of a topic
 * are dense, so assignments are plain id lists. */
#include <stdlib.h>
#include <string.h>

#include "meta/state_internal.h"

/* --- lookup ------------------------------------------------------------------------ */

static sl_meta_group_t *group_by_name(const sl_meta_topic_t *t, sl_span_t name)
{
    sl_meta_map_iter_t it = sl_meta_map_lookup(&t->group_names, sl_meta_hash(name));
    uint32_t id;
    while (sl_meta_map_next(&it, &id)) {
        sl_meta_group_t *g = sl_meta_vec_find(&t->groups, id);
        if (g && sl_span_eq(g->name, name))
            return g;
    }
    return NULL;
}

static sl_meta_group_t *group_get(const sl_meta_topic_t *t, const sl_ident_t *id)
{
    if (id->kind == SL_IDENT_STRING)
        return group_by_name(t, id->name);
    return sl_meta_vec_find(&t->groups, id->number);
}

const sl_meta_group_t *sl_meta_group_find(const sl_meta_topic_t *t, const sl_ident_t *id)
{
    return group_get(t, id);
}

static int member_index(const sl_meta_group_t *g, sl_u128_t client)
{
    for (uint32_t i = 0; i < g->members_count; i++)
        if (sl_u128_eq(g->members[i].client, client))
            return (int)i;
    return -1;
}

const sl_meta_member_t *sl_meta_member_find(const sl_meta_group_t *g, sl_u128_t client)
{
    int i = member_index(g, client);
    return i < 0 ? NULL : &g->members[i];
}

bool sl_meta_member_owns(const sl_meta_member_t *mb, uint32_t partition_id)
{
    for (uint32_t i = 0; i < mb->partitions_count; i++)
        if (mb->partitions[i] == partition_id)
            return true;
    return false;
}

/* --- life cycle -------------------------------------------------------------------- */

sl_meta_group_t *sl_meta_group_new(uint32_t id, sl_span_t name)
{
    sl_meta_group_t *g = sl_meta_calloc(1, sizeof(*g));
    g->id = id;
    g->name = sl_meta_span_dup(name);
    return g;
}

void sl_meta_group_link(sl_meta_t *m, sl_meta_topic_t *t, sl_meta_group_t *g)
{
    sl_assert(g->id < t->next_group_id);
    sl_meta_vec_insert(&t->groups, g);
    sl_meta_map_insert(&t->group_names, sl_meta_hash(g->name), g->id);
    m->groups_total++;
}

static void member_release(sl_meta_t *m, sl_meta_member_t *mb)
{
    sl_meta_client_t *cl = sl_meta_client_get(m, mb->client);
    /* Members always have a table entry (join needs one; Logout and eviction
     * drop memberships first), except while a state is torn down. */
    if (cl) {
        sl_assert(cl->memberships > 0);
        cl->memberships--;
    }
    free(mb->partitions);
}

void sl_meta_group_free(sl_meta_t *m, sl_meta_group_t *g)
{
    for (uint32_t i = 0; i < g->members_count; i++)
        member_release(m, &g->members[i]);
    free(g->members);
    sl_meta_span_free(&g->name);
    free(g);
}

static void group_remove(sl_meta_t *m, sl_meta_topic_t *t, sl_meta_group_t *g)
{
    sl_meta_map_remove(&t->group_names, sl_meta_hash(g->name), g->id);
    void *removed = sl_meta_vec_remove(&t->groups, g->id);
    sl_assert(removed == g);
    m->groups_total--;
    sl_meta_group_free(m, g);
}

sl_meta_member_t *sl_meta_group_add_member(sl_meta_group_t *g, uint32_t id, sl_u128_t client)
{
    /* Keep members sorted by id: find the slot, shift the tail. */
    uint32_t at = 0;
    while (at < g->members_count && g->members[at].id < id)
        at++;
    sl_assert(at == g->members_count || g->members[at].id != id);
    if (g->members_count == g->members_cap) {
        g->members_cap = g->members_cap ? g->members_cap * 2 : 4;
        g->members = sl_meta_realloc(g->members, g->members_cap, sizeof(*g->members));
    }
    memmove(&g->members[at + 1], &g->members[at],
            (size_t)(g->members_count - at) * sizeof(*g->members));
    g->members[at] = (sl_meta_member_t){.id = id, .client = client};
    g->members_count++;
    return &g->members[at];
}

static void member_remove_at(sl_meta_t *m, sl_meta_group_t *g, uint32_t at)
{
    member_release(m, &g->members[at]);
    memmove(&g->members[at], &g->members[at + 1],
            (size_t)(g->members_count - at - 1) * sizeof(*g->members));
    g->members_count--;
}

void sl_meta_member_push(sl_meta_member_t *mb, uint32_t partition_id)
{
    if (mb->partitions_count == mb->partitions_cap) {
        mb->partitions_cap = mb->partitions_cap ? mb->partitions_cap * 2 : 4;
        mb->partitions = sl_meta_realloc(mb->partitions, mb->partitions_cap, sizeof(uint32_t));
    }
    mb->partitions[mb->partitions_count++] = partition_id;
}

/* --- assignment ---------------------------------------------------------------------- */

/* Leave, member removal, partition change: clear every list, then deal the
 * partitions in id order round-robin over the members in member-id order. */
static void rebalance_full(sl_meta_group_t *g, uint32_t partitions)
{
    g->generation++;
    for (uint32_t i = 0; i < g->members_count; i++)
        g->members[i].partitions_count = 0;
    if (g->members_count == 0)
        return;
    for (uint32_t p = 0; p < partitions; p++)
        sl_meta_member_push(&g->members[p % g->members_count], p);
}

/* Indices of the members that own nothing, in member-id order. */
static uint32_t collect_idle(const sl_meta_group_t *g, uint32_t *idle)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->members_count; i++)
        if (g->members[i].partitions_count == 0)
            idle[n++] = i;
    return n;
}

/* Join: members keep what they own where they can. Unowned partitions go
 * round-robin to the members owning nothing; then members above their fair
 * share (n / members, one more for the first n % members in member-id
 * order) hand their excess, last-listed first, round-robin to the members
 * that are still idle. */
static void rebalance_join(sl_meta_group_t *g, uint32_t partitions)
{
    g->generation++;
    uint32_t members = g->members_count;
    if (partitions == 0 || members == 0)
        return;
    uint8_t *owned = sl_meta_calloc(partitions, 1);
    uint32_t *idle = sl_meta_calloc(members, sizeof(uint32_t));
    for (uint32_t i = 0; i < members; i++)
        for (uint32_t k = 0; k < g->members[i].partitions_count; k++)
            owned[g->members[i].partitions[k]] = 1;

    uint32_t idle_count = collect_idle(g, idle), turn = 0;
    for (uint32_t p = 0; p < partitions && idle_count > 0; p++)
        if (!owned[p])
            sl_meta_member_push(&g->members[idle[turn++ % idle_count]], p);

    idle_count = collect_idle(g, idle);
    turn = 0;
    uint32_t cursor = 0; /* walks idle[] (ascending) alongside i */
    for (uint32_t i = 0; i < members && idle_count > 0; i++) {
        while (cursor < idle_count && idle[cursor] < i)
            cursor++;
        if (cursor < idle_count && idle[cursor] == i)
            continue; /* a receiver never donates */
        uint32_t share = partitions / members + (i < partitions % members ? 1 : 0);
        sl_meta_member_t *donor = &g->members[i];
        while (donor->partitions_count > share) {
            uint32_t p = donor->partitions[--donor->partitions_count];
            sl_meta_member_push(&g->members[idle[turn++ % idle_count]], p);
        }
    }
    free(owned);
    free(idle);
}

void sl_meta_topic_rebalance(sl_meta_topic_t *t)
{
    for (uint32_t i = 0; i < t->groups.count; i++)
        rebalance_full(t->groups.items[i], t->partitions_count);
}

/* Calls visit for every group of m in (stream, topic, group) id order until
 * it returns false. */
static void for_each_group(sl_meta_t *m,
                           bool (*visit)(void *ctx, sl_meta_topic_t *t, sl_meta_group_t *g),
                           void *ctx)
{
    for (const sl_meta_stream_t *s = sl_meta_stream_next(m, NULL); s;
         s = sl_meta_stream_next(m, s)) {
        for (uint32_t i = 0; i < s->topics.count; i++) {
            sl_meta_topic_t *t = s->topics.items[i];
            for (uint32_t k = 0; k < t->groups.count; k++)
                if (!visit(ctx, t, t->groups.items[k]))
                    return;
        }
    }
}

typedef struct drop_ctx {
    sl_meta_t *m;
    sl_meta_client_t *cl;
} drop_ctx_t;

static bool drop_visit(void *ctx, sl_meta_topic_t *t, sl_meta_group_t *g)
{
    drop_ctx_t *d = ctx;
    int at = member_index(g, d->cl->client);
    if (at >= 0) {
        member_remove_at(d->m, g, (uint32_t)at);
        rebalance_full(g, t->partitions_count);
    }
    return d->cl->memberships > 0;
}

void sl_meta_groups_drop_client(sl_meta_t *m, sl_meta_client_t *cl)
{
    /* A walk over every group; only clients that joined one pay for it. */
    drop_ctx_t d = {m, cl};
    if (cl->memberships > 0)
        for_each_group(m, drop_visit, &d);
    sl_assert(cl->memberships == 0);
}

typedef struct refs_ctx {
    sl_u128_t client;
    sl_meta_group_ref_t *out;
    uint32_t max;
    uint32_t found;
    uint32_t expected;
} refs_ctx_t;

static bool refs_visit(void *ctx, sl_meta_topic_t *t, sl_meta_group_t *g)
{
    refs_ctx_t *r = ctx;
    if (member_index(g, r->client) >= 0) {
        if (r->found < r->max)
            r->out[r->found] = (sl_meta_group_ref_t){t->stream_id, t->id, g->id};
        r->found++;
    }
    return r->found < r->expected;
}

uint32_t sl_meta_client_groups(const sl_meta_t *m, sl_u128_t client, sl_meta_group_ref_t *out,
                               uint32_t max)
{
    const sl_meta_client_t *cl = sl_meta_client_find(m, client);
    if (!cl || cl->memberships == 0)
        return 0;
    refs_ctx_t r = {client, out, max, 0, cl->memberships};
    for_each_group((sl_meta_t *)m, refs_visit, &r);
    return r.found;
}

bool sl_meta_group_details(const sl_meta_topic_t *t, const sl_meta_group_t *g, sl_arena_t *arena,
                           sl_group_details_t *out)
{
    sl_group_member_t *members = NULL;
    if (g->members_count > 0) {
        members = SL_ARENA_NEW(arena, sl_group_member_t, g->members_count);
        if (!members)
            return false;
    }
    for (uint32_t i = 0; i < g->members_count; i++)
        members[i] = (sl_group_member_t){g->members[i].id, g->members[i].partitions_count,
                                         g->members[i].partitions};
    *out = (sl_group_details_t){
        .header = {g->id, t->partitions_count, g->members_count, g->name},
        .members = members,
    };
    return true;
}

/* --- 139 / 140 / 148 / 149 ----------------------------------------------------------------- */

/* Stream (1009), topic (2010), then get_topic on them (41). */
static int resolve_topic(sl_meta_ctx_t *c, const sl_ident_t *stream_id, const sl_ident_t *topic_id,
                         sl_meta_topic_t **out)
{
    sl_meta_stream_t *s = sl_meta_stream_get(c->m, stream_id);
    if (!s)
        return SL_ERR_STREAM_ID_NOT_FOUND;
    sl_meta_topic_t *t = sl_meta_topic_get(s, topic_id);
    if (!t)
        return SL_ERR_TOPIC_ID_NOT_FOUND;
    if (!sl_meta_allowed(c->m, c->e->user_id, SL_PERM_GET_TOPIC, s->id, t->id))
        return SL_ERR_UNAUTHORIZED;
    *out = t;
    return 0;
}

int sl_meta_apply_create_group(sl_meta_ctx_t *c)
{
    sl_create_consumer_group_request_t q;
    sl_meta_topic_t *t;
    int rc = sl_meta_decode_rc(sl_create_consumer_group_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_topic(c, &q.stream, &q.topic, &t);
    if (rc != 0)
        return rc;
    if (group_by_name(t, q.name))
        return SL_ERR_CONSUMER_GROUP_NAME_ALREADY_EXISTS;
    if (t->next_group_id == UINT32_MAX)
        return SL_ERR_INVALID_CONSUMER_GROUP_ID; /* 2^32 - 1 groups created in one topic */
    sl_meta_group_t *g = sl_meta_group_new(t->next_group_id++, q.name);
    sl_meta_group_link(c->m, t, g);

    sl_group_details_t details;
    bool ok = sl_meta_group_details(t, g, &c->m->scratch, &details);
    sl_assert(ok);
    sl_result_put_ok(c->out);
    rc = sl_create_consumer_group_reply_encode(c->out, &details);
    sl_assert(rc == 0);
    return 0;
}

/* Target resolution of 140, 148 and 149: topic and permission, then the
 * group (5000), so an unauthorized caller learns nothing about groups. */
static int resolve_group(sl_meta_ctx_t *c, const sl_group_target_t *q, sl_meta_topic_t **t,
                         sl_meta_group_t **g)
{
    int rc = resolve_topic(c, &q->stream, &q->topic, t);
    if (rc != 0)
        return rc;
    *g = group_get(*t, &q->group);
    return *g ? 0 : SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND;
}

int sl_meta_apply_delete_group(sl_meta_ctx_t *c)
{
    sl_group_target_t q;
    sl_meta_topic_t *t;
    sl_meta_group_t *g;
    int rc = sl_meta_decode_rc(sl_delete_consumer_group_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_group(c, &q, &t, &g);
    if (rc != 0)
        return rc;
    group_remove(c->m, t, g);
    sl_result_put_ok(c->out);
    return 0;
}

static uint32_t lowest_free_member_id(const sl_meta_group_t *g)
{
    uint32_t id = 0;
    for (uint32_t i = 0; i < g->members_count && g->members[i].id == id; i++)
        id++;
    return id;
}

int sl_meta_apply_join_group(sl_meta_ctx_t *c)
{
    sl_group_target_t q;
    sl_meta_topic_t *t;
    sl_meta_group_t *g;
    int rc = sl_meta_decode_rc(sl_join_consumer_group_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_group(c, &q, &t, &g);
    if (rc != 0)
        return rc;
    sl_meta_client_t *cl = sl_meta_client_get(c->m, c->e->client);
    /* Joining twice is a no-op. A client whose table entry was evicted
     * between admission and apply is not added: its next request is told
     * NoSession, and it must log in (and join) again. */
    if (cl && member_index(g, cl->client) < 0) {
        sl_meta_group_add_member(g, lowest_free_member_id(g), cl->client);
        cl->memberships++;
        rebalance_join(g, t->partitions_count);
    }
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_leave_group(sl_meta_ctx_t *c)
{
    sl_group_target_t q;
    sl_meta_topic_t *t;
    sl_meta_group_t *g;
    int rc = sl_meta_decode_rc(sl_leave_consumer_group_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_group(c, &q, &t, &g);
    if (rc != 0)
        return rc;
    int at = member_index(g, c->e->client);
    if (at < 0)
        return SL_ERR_CONSUMER_GROUP_MEMBER_NOT_FOUND;
    member_remove_at(c->m, g, (uint32_t)at);
    rebalance_full(g, t->partitions_count);
    sl_result_put_ok(c->out);
    return 0;
}
