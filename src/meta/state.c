/* The state machine's core (meta/state.h): life cycle, the apply dispatcher,
 * Register and Logout, the client table with its reply ring and preflight,
 * the root bootstrap, and the cross-cutting reads. Entity operations live
 * in streams.c, groups.c and users.c; the snapshot in snapshot_codec.c. */
#include <stdlib.h>
#include <string.h>

#include "meta/state_internal.h"
#include "wire/header.h"

/* --- life cycle -------------------------------------------------------------------- */

int sl_meta_create(uint32_t clients_max, sl_span_t server_version, sl_meta_t **out)
{
    *out = NULL;
    if (clients_max < SL_CLIENTS_TABLE_MIN || clients_max > SL_CLIENTS_TABLE_MAX ||
        server_version.len < SL_NAME_LEN_MIN || server_version.len > SL_NAME_LEN_MAX ||
        !sl_utf8_valid(server_version.ptr, server_version.len))
        return -SL_ERR_INVALID_CONFIGURATION;
    sl_meta_t *m = sl_meta_calloc(1, sizeof(*m));
    m->clients_max = clients_max;
    m->server_version = sl_meta_span_dup(server_version);
    m->streams_max = SL_STREAMS_MAX;
    m->topics_max = SL_TOPICS_PER_STREAM_MAX;
    m->partition_ids_max = SL_PARTITION_IDS_MAX;
    sl_meta_bitmap_init(&m->stream_ids, SL_STREAMS_MAX);
    sl_arena_init(&m->scratch, 64 * 1024, 0);
    sl_buf_init(&m->out, 0);
    *out = m;
    return 0;
}

static void client_free(sl_meta_client_t *cl)
{
    for (uint32_t i = 0; i < SL_REPLY_RING_CAPACITY; i++)
        sl_meta_span_free(&cl->ring[i].body);
    free(cl);
}

void sl_meta_destroy(sl_meta_t *m)
{
    if (!m)
        return;
    sl_meta_streams_free(m);
    sl_meta_users_free(m);
    for (uint32_t i = 0; i < m->clients_count; i++)
        client_free(m->clients[i]);
    free(m->clients);
    sl_meta_map_free(&m->client_index);
    sl_meta_bitmap_free(&m->stream_ids);
    sl_meta_span_free(&m->server_version);
    sl_arena_free(&m->scratch);
    sl_buf_free(&m->out);
    free(m);
}

uint64_t sl_meta_last_op(const sl_meta_t *m)
{
    return m->last_op;
}

void sl_meta_set_limits(sl_meta_t *m, uint32_t streams_max, uint32_t topics_max,
                        uint32_t partition_ids_max)
{
    m->streams_max = streams_max < SL_STREAMS_MAX ? streams_max : SL_STREAMS_MAX;
    m->topics_max = topics_max < SL_TOPICS_PER_STREAM_MAX ? topics_max : SL_TOPICS_PER_STREAM_MAX;
    m->partition_ids_max =
        partition_ids_max < SL_PARTITION_IDS_MAX ? partition_ids_max : SL_PARTITION_IDS_MAX;
}

/* --- client table --------------------------------------------------------------------- */

static uint32_t client_index_of(const sl_meta_t *m, sl_u128_t client)
{
    sl_meta_map_iter_t it = sl_meta_map_lookup(&m->client_index, sl_meta_hash_u128(client));
    uint32_t at;
    while (sl_meta_map_next(&it, &at))
        if (sl_u128_eq(m->clients[at]->client, client))
            return at;
    return SL_META_MAP_EMPTY;
}

sl_meta_client_t *sl_meta_client_get(sl_meta_t *m, sl_u128_t client)
{
    uint32_t at = client_index_of(m, client);
    return at == SL_META_MAP_EMPTY ? NULL : m->clients[at];
}

const sl_meta_client_t *sl_meta_client_find(const sl_meta_t *m, sl_u128_t client)
{
    uint32_t at = client_index_of(m, client);
    return at == SL_META_MAP_EMPTY ? NULL : m->clients[at];
}

uint32_t sl_meta_clients_count(const sl_meta_t *m)
{
    return m->clients_count;
}

const sl_meta_client_t *sl_meta_client_at(const sl_meta_t *m, uint32_t i)
{
    sl_assert(i < m->clients_count);
    return m->clients[i];
}

sl_meta_client_t *sl_meta_client_add(sl_meta_t *m, sl_u128_t client)
{
    sl_assert(m->clients_count < m->clients_max);
    sl_assert(client_index_of(m, client) == SL_META_MAP_EMPTY);
    if (!m->clients)
        m->clients = sl_meta_calloc(m->clients_max, sizeof(*m->clients));
    sl_meta_client_t *cl = sl_meta_calloc(1, sizeof(*cl));
    cl->client = client;
    m->clients[m->clients_count] = cl;
    sl_meta_map_insert(&m->client_index, sl_meta_hash_u128(client), m->clients_count);
    m->clients_count++;
    return cl;
}

void sl_meta_client_remove(sl_meta_t *m, sl_meta_client_t *cl)
{
    uint32_t at = client_index_of(m, cl->client);
    sl_assert(at != SL_META_MAP_EMPTY && m->clients[at] == cl);
    sl_meta_map_remove(&m->client_index, sl_meta_hash_u128(cl->client), at);
    uint32_t last = m->clients_count - 1;
    if (at != last) {
        /* Keep the array dense: the last entry takes the hole. */
        sl_meta_client_t *moved = m->clients[last];
        uint64_t hash = sl_meta_hash_u128(moved->client);
        sl_meta_map_remove(&m->client_index, hash, last);
        sl_meta_map_insert(&m->client_index, hash, at);
        m->clients[at] = moved;
    }
    m->clients[last] = NULL;
    m->clients_count--;
    client_free(cl);
}

void sl_meta_client_push_reply(sl_meta_client_t *cl, const sl_meta_reply_t *r)
{
    sl_meta_reply_t *slot = &cl->ring[cl->ring_next];
    sl_meta_span_free(&slot->body);
    *slot = *r;
    slot->body = sl_meta_span_dup(r->body);
    cl->ring_next = (cl->ring_next + 1) % SL_REPLY_RING_CAPACITY;
    if (cl->ring_count < SL_REPLY_RING_CAPACITY)
        cl->ring_count++;
}

const sl_meta_reply_t *sl_meta_client_latest(const sl_meta_client_t *c)
{
    if (c->ring_count == 0)
        return NULL;
    uint32_t cap = SL_REPLY_RING_CAPACITY;
    return &c->ring[(c->ring_next + cap - 1) % cap];
}

/* The entry whose latest commit is oldest gives up its slot; ops are unique,
 * so the choice is deterministic. Its memberships go with it: the client can
 * only come back with a new Register, and its next request is told so. */
static void client_evict_oldest(sl_meta_t *m)
{
    sl_assert(m->clients_count > 0);
    sl_meta_client_t *oldest = m->clients[0];
    for (uint32_t i = 1; i < m->clients_count; i++)
        if (m->clients[i]->last_commit_op < oldest->last_commit_op)
            oldest = m->clients[i];
    if (oldest->memberships > 0)
        sl_meta_groups_drop_client(m, oldest);
    sl_meta_client_remove(m, oldest);
}

static bool stamps_conflict(sl_u128_t a, sl_u128_t b)
{
    return !sl_u128_is_zero(a) && !sl_u128_is_zero(b) && !sl_u128_eq(a, b);
}

sl_meta_preflight_t sl_meta_preflight(const sl_meta_t *m, sl_u128_t client, uint64_t session,
                                      uint64_t request, sl_u128_t request_checksum,
                                      const sl_meta_reply_t **cached)
{
    *cached = NULL;
    const sl_meta_client_t *cl = sl_meta_client_find(m, client);
    if (!cl)
        return SL_META_PREFLIGHT_NO_SESSION;
    if (session < cl->epoch)
        return SL_META_PREFLIGHT_SESSION_TOO_LOW;
    if (session > cl->epoch)
        return SL_META_PREFLIGHT_DROP;
    if (request > cl->watermark)
        return SL_META_PREFLIGHT_NEW;
    if (request == cl->watermark && stamps_conflict(request_checksum, cl->watermark_checksum))
        return SL_META_PREFLIGHT_DROP;
    for (uint32_t i = 0; i < cl->ring_count; i++) {
        const sl_meta_reply_t *r = &cl->ring[i];
        if (r->request != request)
            continue;
        if (stamps_conflict(request_checksum, r->request_checksum))
            return SL_META_PREFLIGHT_DROP;
        if (r->token_created)
            return SL_META_PREFLIGHT_PAT_REPLAY;
        *cached = r;
        return SL_META_PREFLIGHT_CACHED;
    }
    return SL_META_PREFLIGHT_ALREADY_APPLIED;
}

const char *sl_meta_preflight_name(sl_meta_preflight_t p)
{
    switch (p) {
    case SL_META_PREFLIGHT_NEW:
        return "new";
    case SL_META_PREFLIGHT_NO_SESSION:
        return "no_session";
    case SL_META_PREFLIGHT_SESSION_TOO_LOW:
        return "session_too_low";
    case SL_META_PREFLIGHT_DROP:
        return "drop";
    case SL_META_PREFLIGHT_CACHED:
        return "cached";
    case SL_META_PREFLIGHT_ALREADY_APPLIED:
        return "already_applied";
    case SL_META_PREFLIGHT_PAT_REPLAY:
        return "pat_replay";
    }
    return "?";
}

bool sl_meta_register_allowed(const sl_meta_t *m, sl_u128_t client, uint32_t user_id)
{
    const sl_meta_client_t *cl = sl_meta_client_find(m, client);
    return !cl || cl->user_id == user_id;
}

/* --- Register and Logout ---------------------------------------------------------------- */

static int apply_register(sl_meta_ctx_t *c)
{
    sl_meta_t *m = c->m;
    const sl_meta_entry_t *e = c->e;
    sl_meta_admit_register_t body;
    if (sl_u128_is_zero(e->client) || sl_meta_admit_register_decode(e->body, &body) != 0)
        return -SL_ERR_INVALID_COMMAND;
    sl_meta_client_t *cl = sl_meta_client_get(m, e->client);
    /* The server refuses this before journaling (Eviction 12); if two
     * Registers raced into the log, the later one is committed as refused. */
    if (cl && cl->user_id != body.user_id)
        return SL_ERR_UNAUTHENTICATED;
    if (!cl) {
        if (m->clients_count == m->clients_max)
            client_evict_oldest(m);
        cl = sl_meta_client_add(m, e->client);
    }
    /* A rebind keeps the watermark and the ring: dedup history survives. */
    cl->epoch = e->op;
    cl->user_id = body.user_id;
    cl->last_commit_op = e->op;
    sl_login_register_reply_t reply = {
        .user_id = body.user_id,
        .session = e->op,
        .server_protocol_version = SL_PROTOCOL_VERSION,
        .server_version = m->server_version,
    };
    sl_result_put_ok(c->out);
    int rc = sl_login_register_reply_encode(c->out, &reply);
    sl_assert(rc == 0);
    return 0;
}

static int apply_logout(sl_meta_ctx_t *c)
{
    sl_meta_client_t *cl = sl_meta_client_get(c->m, c->e->client);
    if (cl) {
        if (cl->memberships > 0)
            sl_meta_groups_drop_client(c->m, cl);
        sl_meta_client_remove(c->m, cl);
    }
    return 0; /* Logout replies are not framed: the body stays empty. */
}

/* --- apply ------------------------------------------------------------------------------ */

static sl_meta_handler_t handler_for(uint8_t operation)
{
    switch (operation) {
    case SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
        return sl_meta_apply_create_topic;
    case SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
        return sl_meta_apply_create_partitions;
    case SL_OP_TRUNCATE_PARTITION:
        return sl_meta_apply_truncate_partition;
    case SL_OP_CREATE_STREAM:
        return sl_meta_apply_create_stream;
    case SL_OP_UPDATE_STREAM:
        return sl_meta_apply_update_stream;
    case SL_OP_DELETE_STREAM:
        return sl_meta_apply_delete_stream;
    case SL_OP_PURGE_STREAM:
        return sl_meta_apply_purge_stream;
    case SL_OP_UPDATE_TOPIC:
        return sl_meta_apply_update_topic;
    case SL_OP_DELETE_TOPIC:
        return sl_meta_apply_delete_topic;
    case SL_OP_PURGE_TOPIC:
        return sl_meta_apply_purge_topic;
    case SL_OP_DELETE_PARTITIONS:
        return sl_meta_apply_delete_partitions;
    case SL_OP_CREATE_CONSUMER_GROUP:
        return sl_meta_apply_create_group;
    case SL_OP_DELETE_CONSUMER_GROUP:
        return sl_meta_apply_delete_group;
    case SL_OP_CREATE_USER:
        return sl_meta_apply_create_user;
    case SL_OP_UPDATE_USER:
        return sl_meta_apply_update_user;
    case SL_OP_DELETE_USER:
        return sl_meta_apply_delete_user;
    case SL_OP_CHANGE_PASSWORD:
        return sl_meta_apply_change_password;
    case SL_OP_UPDATE_PERMISSIONS:
        return sl_meta_apply_update_permissions;
    case SL_OP_CREATE_PERSONAL_ACCESS_TOKEN:
        return sl_meta_apply_create_pat;
    case SL_OP_DELETE_PERSONAL_ACCESS_TOKEN:
        return sl_meta_apply_delete_pat;
    case SL_OP_JOIN_CONSUMER_GROUP:
        return sl_meta_apply_join_group;
    case SL_OP_LEAVE_CONSUMER_GROUP:
        return sl_meta_apply_leave_group;
    case SL_OP_REGISTER:
        return apply_register;
    case SL_OP_LOGOUT:
        return apply_logout;
    default:
        return NULL;
    }
}

/* Every op except Register and Logout lands in its client's ring (when the
 * client still has an entry) and advances the watermark. */
static void record_reply(sl_meta_ctx_t *c)
{
    const sl_meta_entry_t *e = c->e;
    if (e->operation == SL_OP_REGISTER || e->operation == SL_OP_LOGOUT ||
        sl_u128_is_zero(e->client))
        return;
    sl_meta_client_t *cl = sl_meta_client_get(c->m, e->client);
    if (!cl)
        return;
    sl_meta_reply_t r = {
        .request = e->request,
        .request_checksum = e->request_checksum,
        .op = e->op,
        .timestamp = e->timestamp,
        .operation = e->operation,
        .token_created = c->token_created,
        .body = sl_buf_span(c->out),
    };
    sl_meta_client_push_reply(cl, &r);
    if (e->request >= cl->watermark) {
        cl->watermark = e->request;
        cl->watermark_checksum = e->request_checksum;
    }
    cl->last_commit_op = e->op;
}

int sl_meta_apply(sl_meta_t *m, const sl_meta_entry_t *e, sl_buf_t *reply)
{
    sl_meta_handler_t handler = handler_for(e->operation);
    if (e->op <= m->last_op || !handler)
        return -SL_ERR_INVALID_COMMAND;
    sl_arena_reset(&m->scratch);
    sl_buf_reset(&m->out);
    sl_meta_ctx_t c = {.m = m, .e = e, .out = &m->out};
    int rc = handler(&c);
    if (rc < 0) {
        sl_assert(m->out.len == 0);
        return rc;
    }
    if (rc > 0) {
        sl_assert(m->out.len == 0);
        sl_result_put_error(&m->out, (uint32_t)rc);
    }
    sl_assert(sl_buf_ok(&m->out));
    m->last_op = e->op;
    record_reply(&c);
    sl_put_span(reply, sl_buf_span(&m->out));
    return 0;
}

/* --- root bootstrap ------------------------------------------------------------------- */

int sl_meta_root_entry(sl_buf_t *body, sl_span_t username, sl_span_t phc_hash, uint64_t op,
                       uint64_t timestamp, sl_meta_entry_t *e)
{
    uint8_t perms_bytes[16];
    sl_buf_t perms;
    sl_buf_init_fixed(&perms, perms_bytes, sizeof(perms_bytes));
    sl_permissions_t root = sl_permissions_root();
    bool encoded = sl_permissions_encode(&perms, &root);
    sl_assert(encoded);
    sl_create_user_request_t req = {
        .username = username,
        .status = SL_USER_ACTIVE,
        .has_permissions = true,
        .permissions = sl_buf_span(&perms),
    };
    size_t start = body->len;
    int rc = sl_meta_admit_create_user_encode(body, &req, phc_hash);
    if (rc != 0)
        return rc;
    *e = (sl_meta_entry_t){
        .op = op,
        .timestamp = timestamp,
        .operation = SL_OP_CREATE_USER,
        .body = sl_span(body->data + start, body->len - start),
    };
    return 0;
}

int sl_meta_bootstrap_root(sl_meta_t *m, sl_span_t username, sl_span_t phc_hash, uint64_t timestamp)
{
    if (m->users.count > 0)
        return -SL_ERR_USER_ALREADY_EXISTS;
    sl_buf_t body, reply;
    sl_buf_init(&body, 0);
    sl_buf_init(&reply, 0);
    sl_meta_entry_t e;
    int rc = sl_meta_root_entry(&body, username, phc_hash, m->last_op + 1, timestamp, &e);
    if (rc == 0)
        rc = sl_meta_apply(m, &e, &reply);
    if (rc == 0) {
        uint32_t result;
        sl_span_t payload;
        if (sl_result_split(sl_buf_span(&reply), &result, &payload) != 0)
            result = SL_ERR_INVALID_COMMAND;
        rc = -(int)result;
    }
    sl_buf_free(&body);
    sl_buf_free(&reply);
    return rc;
}

/* --- reads ------------------------------------------------------------------------------ */

bool sl_meta_allowed(const sl_meta_t *m, uint32_t user_id, sl_perm_rule_t rule, uint32_t stream_id,
                     uint32_t topic_id)
{
    if (user_id == 0)
        return true;
    const sl_meta_user_t *u = sl_meta_user_by_id(m, user_id);
    return u && u->has_permissions && sl_permissions_allow(&u->perms, rule, stream_id, topic_id);
}

bool sl_meta_allow(const sl_meta_t *m, uint32_t user_id, sl_perm_rule_t rule, uint32_t stream_id,
                   uint32_t topic_id)
{
    return sl_meta_allowed(m, user_id, rule, stream_id, topic_id);
}

const sl_permissions_t *sl_meta_user_permissions(const sl_meta_t *m, uint32_t user_id)
{
    const sl_meta_user_t *u = sl_meta_user_by_id(m, user_id);
    return u && u->has_permissions ? &u->perms : NULL;
}

void sl_meta_counts(const sl_meta_t *m, sl_meta_counts_t *out)
{
    *out = (sl_meta_counts_t){
        .streams = m->streams_count,
        .topics = m->topics_total,
        .partitions = m->partitions_total,
        .groups = m->groups_total,
        .users = m->users.count,
        .clients = m->clients_count,
    };
}
