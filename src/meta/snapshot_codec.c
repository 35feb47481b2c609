/* The metadata snapshot image (meta/state.h sl_meta_encode/sl_meta_decode).
 *
 * Layout (little-endian, version 2; version 1 images, which lack the topic's
 * purge_generation, still decode with it 0):
 *   magic u32 "SLMS" | version u16 | reserved u16 = 0 | last_op u64
 *   users:   count u32, each [id u32][created_at u64][status u8][username Name]
 *            [password_hash str8][has_permissions u8][len u32 + set, if has]
 *            [tokens u32] x [name Name][expiry_at u64][digest 64 bytes]
 *   clients: count u32, ascending by id, each [client u128][epoch u64][user_id u32]
 *            [watermark u64][watermark_checksum u128][last_commit_op u64]
 *            [has_reply u8][reply, if has: request u64, checksum u128, op u64,
 *            timestamp u64, operation u8, token_created u8, body len u32 + bytes]
 *   streams: count u32, each [id u32][created_at u64][name Name][options u32 + block]
 *            [topics u32] x topic
 *   topic:   [id u32][created_at u64][purge_generation u64 (v2 on)][name Name]
 *            [config: compression u8, expiry u64, max_size u64, segment_size u64,
 *            fsync u8, messages u32, size u64, preallocate u8, explicit_keys u32]
 *            [explicit u32 + block][derived u32 + block][partitions u32]
 *            [created_at u64 x partitions][next_group_id u32][groups u32] x group
 *   group:   [id u32][name Name][generation u64][members u32] x
 *            [member id u32][client u128][count u32][partition u32 x count]
 *   trailer: XXH3-64 of every byte before it.
 * Entities appear in ascending id order, so equal states encode equally.
 * Clients come before streams so that group members can be checked against
 * the table. */
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "meta/state_internal.h"

#define SNAPSHOT_MAGIC   0x534D4C53u /* "SLMS" */
#define SNAPSHOT_VERSION 2u
/* The oldest version still read: 1 had no purge generation. */
#define SNAPSHOT_VERSION_MIN 1u
#define SNAPSHOT_HEADER      16u
#define SNAPSHOT_TRAILER     8u

/* Smallest encodings (of the oldest version), used to bound counts by the bytes present. */
#define USER_SIZE_MIN   (4u + 8u + 1u + 2u + 1u + 1u + 4u)
#define TOKEN_SIZE_MIN  (2u + 8u + SL_META_TOKEN_DIGEST_LEN)
#define CLIENT_SIZE_MIN (16u + 8u + 4u + 8u + 16u + 8u + 1u)
#define STREAM_SIZE_MIN (4u + 8u + 2u + 4u + 4u)
#define TOPIC_SIZE_MIN  (4u + 8u + 2u + 43u + 4u + 4u + 4u + 4u + 4u)
#define GROUP_SIZE_MIN  (4u + 2u + 8u + 4u)
#define MEMBER_SIZE_MIN (4u + 16u + 4u)

/* --- encode ------------------------------------------------------------------------ */

static void put_block(sl_buf_t *b, sl_span_t block)
{
    sl_put_u32(b, (uint32_t)block.len);
    sl_put_span(b, block);
}

static bool encode_users(const sl_meta_t *m, sl_buf_t *b)
{
    bool ok = true;
    sl_put_u32(b, m->users.count);
    for (uint32_t i = 0; i < m->users.count && ok; i++) {
        const sl_meta_user_t *u = m->users.items[i];
        sl_put_u32(b, u->id);
        sl_put_u64(b, u->created_at);
        sl_put_u8(b, u->status);
        ok = sl_name_encode(b, u->username) && sl_str8_encode(b, u->password_hash);
        sl_put_u8(b, u->has_permissions ? 1 : 0);
        if (u->has_permissions)
            put_block(b, u->permissions);
        sl_put_u32(b, u->tokens_count);
        for (uint32_t k = 0; k < u->tokens_count && ok; k++) {
            ok = sl_name_encode(b, u->tokens[k].name);
            sl_put_u64(b, u->tokens[k].expiry_at);
            sl_put_bytes(b, u->tokens[k].digest, SL_META_TOKEN_DIGEST_LEN);
        }
    }
    return ok;
}

static int client_cmp(const void *a, const void *b)
{
    const sl_meta_client_t *x = *(const sl_meta_client_t *const *)a;
    const sl_meta_client_t *y = *(const sl_meta_client_t *const *)b;
    if (x->client.hi != y->client.hi)
        return x->client.hi < y->client.hi ? -1 : 1;
    return x->client.lo < y->client.lo ? -1 : (x->client.lo > y->client.lo ? 1 : 0);
}

static void encode_client(const sl_meta_client_t *cl, sl_buf_t *b)
{
    sl_put_u128(b, cl->client);
    sl_put_u64(b, cl->epoch);
    sl_put_u32(b, cl->user_id);
    sl_put_u64(b, cl->watermark);
    sl_put_u128(b, cl->watermark_checksum);
    sl_put_u64(b, cl->last_commit_op);
    const sl_meta_reply_t *r = sl_meta_client_latest(cl);
    sl_put_u8(b, r ? 1 : 0);
    if (!r)
        return;
    sl_put_u64(b, r->request);
    sl_put_u128(b, r->request_checksum);
    sl_put_u64(b, r->op);
    sl_put_u64(b, r->timestamp);
    sl_put_u8(b, r->operation);
    sl_put_u8(b, r->token_created ? 1 : 0);
    put_block(b, r->body);
}

static void encode_clients(const sl_meta_t *m, sl_buf_t *b)
{
    sl_put_u32(b, m->clients_count);
    if (m->clients_count == 0)
        return;
    const sl_meta_client_t **sorted = sl_meta_calloc(m->clients_count, sizeof(*sorted));
    memcpy(sorted, m->clients, (size_t)m->clients_count * sizeof(*sorted));
    qsort(sorted, m->clients_count, sizeof(*sorted), client_cmp);
    for (uint32_t i = 0; i < m->clients_count; i++)
        encode_client(sorted[i], b);
    free(sorted);
}

static void encode_config(const sl_topic_config_t *c, sl_buf_t *b)
{
    sl_put_u8(b, c->compression_algorithm);
    sl_put_u64(b, c->message_expiry);
    sl_put_u64(b, c->max_topic_size);
    sl_put_u64(b, c->segment_size);
    sl_put_u8(b, c->enforce_fsync ? 1 : 0);
    sl_put_u32(b, c->messages_required_to_save);
    sl_put_u64(b, c->size_of_messages_required_to_save);
    sl_put_u8(b, c->preallocate_segments ? 1 : 0);
    sl_put_u32(b, c->explicit_keys);
}

static bool encode_group(const sl_meta_group_t *g, sl_buf_t *b)
{
    sl_put_u32(b, g->id);
    bool ok = sl_name_encode(b, g->name);
    sl_put_u64(b, g->generation);
    sl_put_u32(b, g->members_count);
    for (uint32_t i = 0; i < g->members_count; i++) {
        const sl_meta_member_t *mb = &g->members[i];
        sl_put_u32(b, mb->id);
        sl_put_u128(b, mb->client);
        sl_put_u32(b, mb->partitions_count);
        for (uint32_t k = 0; k < mb->partitions_count; k++)
            sl_put_u32(b, mb->partitions[k]);
    }
    return ok;
}

static bool encode_topic(const sl_meta_topic_t *t, sl_buf_t *b)
{
    sl_put_u32(b, t->id);
    sl_put_u64(b, t->created_at);
    sl_put_u64(b, t->purge_generation);
    bool ok = sl_name_encode(b, t->name);
    encode_config(&t->config, b);
    put_block(b, t->options);
    put_block(b, t->derived_options);
    sl_put_u32(b, t->partitions_count);
    for (uint32_t p = 0; p < t->partitions_count; p++)
        sl_put_u64(b, t->partition_created_at[p]);
    sl_put_u32(b, t->next_group_id);
    sl_put_u32(b, t->groups.count);
    for (uint32_t i = 0; i < t->groups.count && ok; i++)
        ok = encode_group(t->groups.items[i], b);
    return ok;
}

static bool encode_streams(const sl_meta_t *m, sl_buf_t *b)
{
    bool ok = true;
    sl_put_u32(b, m->streams_count);
    for (const sl_meta_stream_t *s = sl_meta_stream_next(m, NULL); s && ok;
         s = sl_meta_stream_next(m, s)) {
        sl_put_u32(b, s->id);
        sl_put_u64(b, s->created_at);
        ok = sl_name_encode(b, s->name);
        put_block(b, s->options);
        sl_put_u32(b, s->topics.count);
        for (uint32_t i = 0; i < s->topics.count && ok; i++)
            ok = encode_topic(s->topics.items[i], b);
    }
    return ok;
}

int sl_meta_encode(const sl_meta_t *m, sl_buf_t *out)
{
    size_t start = out->len;
    sl_put_u32(out, SNAPSHOT_MAGIC);
    sl_put_u16(out, SNAPSHOT_VERSION);
    sl_put_u16(out, 0);
    sl_put_u64(out, m->last_op);
    bool ok = encode_users(m, out);
    encode_clients(m, out);
    ok = ok && encode_streams(m, out);
    if (!ok || !sl_buf_ok(out))
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    sl_put_u64(out, sl_xxh3_64(out->data + start, out->len - start));
    return sl_buf_ok(out) ? 0 : -SL_ERR_COMMAND_LENGTH_ERROR;
}

/* --- decode ------------------------------------------------------------------------ */

/* A count that cannot fit the bytes left fails before anything is allocated. */
static bool read_count(sl_reader_t *r, uint32_t min_size, uint32_t *out)
{
    if (!sl_read_u32(r, out))
        return false;
    if ((uint64_t)*out * min_size > sl_reader_left(r)) {
        sl_reader_fail(r);
        return false;
    }
    return true;
}

static bool read_bool(sl_reader_t *r, bool *out)
{
    uint8_t v;
    if (!sl_read_u8(r, &v) || v > 1) {
        sl_reader_fail(r);
        return false;
    }
    *out = v == 1;
    return true;
}

static bool read_block(sl_reader_t *r, sl_span_t *out)
{
    uint32_t len;
    return sl_read_u32(r, &len) && sl_read_span(r, len, out);
}

/* An options block as stored: valid, and (topics) at most one entry per key. */
static bool read_options(sl_reader_t *r, uint32_t max_pairs, sl_span_t *out)
{
    uint32_t pairs;
    if (!read_block(r, out))
        return false;
    if (!sl_options_validate(*out, &pairs) || pairs > max_pairs) {
        sl_reader_fail(r);
        return false;
    }
    return true;
}

static bool decode_tokens(sl_reader_t *r, sl_meta_user_t *u)
{
    uint32_t count;
    if (!read_count(r, TOKEN_SIZE_MIN, &count))
        return false;
    for (uint32_t i = 0; i < count; i++) {
        sl_span_t name, digest;
        uint64_t expiry_at;
        if (!sl_name_decode(r, &name) || !sl_read_u64(r, &expiry_at) ||
            !sl_read_span(r, SL_META_TOKEN_DIGEST_LEN, &digest))
            return false;
        bool ascending =
            u->tokens_count == 0 || sl_meta_name_cmp(u->tokens[u->tokens_count - 1].name, name) < 0;
        if (!ascending || !sl_meta_digest_valid(digest))
            return false;
        sl_meta_user_push_token(u, name, expiry_at, digest);
    }
    return true;
}

static bool decode_user_permissions(sl_reader_t *r, sl_meta_user_t *u)
{
    bool has;
    sl_span_t raw = sl_span(NULL, 0);
    if (!read_bool(r, &has) || (has && !read_block(r, &raw)))
        return false;
    if (has) {
        sl_reader_t pr = sl_reader(raw);
        sl_span_t parsed;
        if (!sl_permissions_parse(&pr, &parsed) || !sl_reader_done(&pr))
            return false;
    }
    return sl_meta_user_set_permissions(u, has, raw);
}

static bool decode_user(sl_reader_t *r, sl_meta_t *m)
{
    uint32_t id;
    uint64_t created_at;
    uint8_t status;
    sl_span_t username, hash;
    if (!sl_read_u32(r, &id) || !sl_read_u64(r, &created_at) || !sl_read_u8(r, &status) ||
        !sl_name_decode(r, &username) || !sl_str8_decode(r, &hash))
        return false;
    bool ascending = m->users.count == 0 || sl_meta_vec_id(&m->users, m->users.count - 1) < id;
    sl_ident_t by_name = {.kind = SL_IDENT_STRING, .name = username};
    /* UINT32_MAX marks a free slot of the name index: never a user id. */
    if (!ascending || id == UINT32_MAX ||
        (status != SL_USER_ACTIVE && status != SL_USER_INACTIVE) || sl_meta_user_get(m, &by_name))
        return false;
    sl_meta_user_t *u = sl_meta_user_new(id, created_at, status, username, hash);
    sl_meta_user_link(m, u); /* linked first so that m frees it on failure */
    return decode_user_permissions(r, u) && decode_tokens(r, u);
}

static bool decode_reply(sl_reader_t *r, sl_meta_t *m, sl_meta_client_t *cl)
{
    sl_meta_reply_t reply = {0};
    if (!sl_read_u64(r, &reply.request) || !sl_read_u128(r, &reply.request_checksum) ||
        !sl_read_u64(r, &reply.op) || !sl_read_u64(r, &reply.timestamp) ||
        !sl_read_u8(r, &reply.operation) || !read_bool(r, &reply.token_created) ||
        !read_block(r, &reply.body))
        return false;
    if (reply.op > m->last_op || reply.op > cl->last_commit_op)
        return false;
    sl_meta_client_push_reply(cl, &reply);
    return true;
}

static bool decode_client(sl_reader_t *r, sl_meta_t *m, sl_u128_t *prev)
{
    sl_u128_t id;
    if (!sl_read_u128(r, &id))
        return false;
    bool ascending = id.hi > prev->hi || (id.hi == prev->hi && id.lo > prev->lo);
    if (!ascending || m->clients_count == m->clients_max)
        return false;
    *prev = id;
    sl_meta_client_t *cl = sl_meta_client_add(m, id);
    bool has_reply;
    if (!sl_read_u64(r, &cl->epoch) || !sl_read_u32(r, &cl->user_id) ||
        !sl_read_u64(r, &cl->watermark) || !sl_read_u128(r, &cl->watermark_checksum) ||
        !sl_read_u64(r, &cl->last_commit_op) || !read_bool(r, &has_reply))
        return false;
    if (cl->epoch == 0 || cl->epoch > m->last_op || cl->last_commit_op > m->last_op)
        return false;
    return !has_reply || decode_reply(r, m, cl);
}

static bool decode_config(sl_reader_t *r, sl_topic_config_t *c)
{
    bool ok = sl_read_u8(r, &c->compression_algorithm) && sl_read_u64(r, &c->message_expiry) &&
              sl_read_u64(r, &c->max_topic_size) && sl_read_u64(r, &c->segment_size) &&
              read_bool(r, &c->enforce_fsync) && sl_read_u32(r, &c->messages_required_to_save) &&
              sl_read_u64(r, &c->size_of_messages_required_to_save) &&
              read_bool(r, &c->preallocate_segments) && sl_read_u32(r, &c->explicit_keys);
    return ok &&
           (c->compression_algorithm == SL_COMPRESSION_NONE ||
            c->compression_algorithm == SL_COMPRESSION_GZIP) &&
           (c->explicit_keys & ~SL_TOPIC_KEYS_ALL) == 0;
}

/* Members: ascending ids, known clients, at most once per group, partitions
 * of the topic owned at most once (stamp[p] == seq marks an owner). */
static bool decode_members(sl_reader_t *r, sl_meta_t *m, const sl_meta_topic_t *t,
                           sl_meta_group_t *g, uint32_t *stamp, uint32_t seq)
{
    uint32_t count;
    if (!read_count(r, MEMBER_SIZE_MIN, &count))
        return false;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t id, parts;
        sl_u128_t client;
        if (!sl_read_u32(r, &id) || !sl_read_u128(r, &client) || !read_count(r, 4, &parts))
            return false;
        sl_meta_client_t *cl = sl_meta_client_get(m, client);
        bool ascending = g->members_count == 0 || g->members[g->members_count - 1].id < id;
        if (!ascending || !cl || sl_meta_member_find(g, client))
            return false;
        sl_meta_member_t *mb = sl_meta_group_add_member(g, id, client);
        cl->memberships++;
        for (uint32_t k = 0; k < parts; k++) {
            uint32_t p;
            sl_read_u32(r, &p);
            if (p >= t->partitions_count || stamp[p] == seq)
                return false;
            stamp[p] = seq;
            sl_meta_member_push(mb, p);
        }
    }
    return true;
}

static bool decode_group(sl_reader_t *r, sl_meta_t *m, sl_meta_topic_t *t, uint32_t *stamp,
                         uint32_t seq)
{
    uint32_t id;
    sl_span_t name;
    if (!sl_read_u32(r, &id) || !sl_name_decode(r, &name))
        return false;
    sl_ident_t by_name = {.kind = SL_IDENT_STRING, .name = name};
    bool ascending = t->groups.count == 0 || sl_meta_vec_id(&t->groups, t->groups.count - 1) < id;
    if (!ascending || id >= t->next_group_id || sl_meta_group_find(t, &by_name))
        return false;
    sl_meta_group_t *g = sl_meta_group_new(id, name);
    sl_meta_group_link(m, t, g);
    return sl_read_u64(r, &g->generation) && decode_members(r, m, t, g, stamp, seq);
}

static bool decode_groups(sl_reader_t *r, sl_meta_t *m, sl_meta_topic_t *t)
{
    uint32_t count;
    if (!sl_read_u32(r, &t->next_group_id) || !read_count(r, GROUP_SIZE_MIN, &count))
        return false;
    uint32_t *stamp = sl_meta_calloc(t->partitions_count, sizeof(uint32_t));
    bool ok = true;
    for (uint32_t i = 0; i < count && ok; i++)
        ok = decode_group(r, m, t, stamp, i + 1);
    free(stamp);
    return ok;
}

static bool decode_partitions(sl_reader_t *r, sl_meta_t *m, sl_meta_topic_t *t)
{
    uint32_t count;
    if (!read_count(r, 8, &count) || count > m->partition_ids_max)
        return false;
    sl_meta_topic_set_partitions(m, t, count, 0);
    for (uint32_t p = 0; p < count; p++)
        sl_read_u64(r, &t->partition_created_at[p]);
    return sl_reader_ok(r);
}

static bool decode_topic(sl_reader_t *r, sl_meta_t *m, sl_meta_stream_t *s, uint16_t version)
{
    uint32_t id;
    uint64_t created_at, purge_generation = 0;
    sl_span_t name, explicit_block, derived_block;
    sl_topic_config_t config;
    if (!sl_read_u32(r, &id) || !sl_read_u64(r, &created_at) ||
        (version >= 2 && !sl_read_u64(r, &purge_generation)) || !sl_name_decode(r, &name) ||
        !decode_config(r, &config) || !read_options(r, SL_TOPIC_KEY_COUNT, &explicit_block) ||
        !read_options(r, SL_TOPIC_KEY_COUNT, &derived_block))
        return false;
    sl_ident_t by_name = {.kind = SL_IDENT_STRING, .name = name};
    bool ascending = s->topics.count == 0 || sl_meta_vec_id(&s->topics, s->topics.count - 1) < id;
    if (!ascending || id >= m->topics_max || sl_meta_topic_find(s, &by_name))
        return false;
    sl_meta_topic_t *t = sl_meta_topic_new(s->id, id, created_at, name);
    t->purge_generation = purge_generation;
    t->config = config;
    t->options = sl_meta_span_dup(explicit_block);
    t->derived_options = sl_meta_span_dup(derived_block);
    sl_meta_topic_link(m, s, t);
    return decode_partitions(r, m, t) && decode_groups(r, m, t);
}

static bool decode_stream(sl_reader_t *r, sl_meta_t *m, int64_t *prev_id, uint16_t version)
{
    uint32_t id, topics;
    uint64_t created_at;
    sl_span_t name, options;
    if (!sl_read_u32(r, &id) || !sl_read_u64(r, &created_at) || !sl_name_decode(r, &name) ||
        !read_options(r, SL_OPTIONS_ENTRIES_MAX, &options))
        return false;
    sl_ident_t by_name = {.kind = SL_IDENT_STRING, .name = name};
    if ((int64_t)id <= *prev_id || id >= m->streams_max || sl_meta_stream_find(m, &by_name))
        return false;
    *prev_id = id;
    sl_meta_stream_t *s = sl_meta_stream_new(id, created_at, name);
    s->options = sl_meta_span_dup(options);
    sl_meta_stream_link(m, s);
    if (!read_count(r, TOPIC_SIZE_MIN, &topics))
        return false;
    for (uint32_t i = 0; i < topics; i++)
        if (!decode_topic(r, m, s, version))
            return false;
    return true;
}

static bool decode_body(sl_reader_t *r, sl_meta_t *m)
{
    uint32_t magic, count;
    uint16_t version, reserved;
    if (!sl_read_u32(r, &magic) || !sl_read_u16(r, &version) || !sl_read_u16(r, &reserved) ||
        !sl_read_u64(r, &m->last_op))
        return false;
    if (magic != SNAPSHOT_MAGIC || version < SNAPSHOT_VERSION_MIN || version > SNAPSHOT_VERSION ||
        reserved != 0)
        return false;
    if (!read_count(r, USER_SIZE_MIN, &count))
        return false;
    for (uint32_t i = 0; i < count; i++)
        if (!decode_user(r, m))
            return false;
    if (!read_count(r, CLIENT_SIZE_MIN, &count))
        return false;
    sl_u128_t prev = {0, 0};
    for (uint32_t i = 0; i < count; i++)
        if (!decode_client(r, m, &prev))
            return false;
    if (!read_count(r, STREAM_SIZE_MIN, &count))
        return false;
    int64_t prev_stream = -1;
    for (uint32_t i = 0; i < count; i++)
        if (!decode_stream(r, m, &prev_stream, version))
            return false;
    return sl_reader_done(r);
}

int sl_meta_decode(sl_span_t bytes, sl_meta_t *m)
{
    if (bytes.len < SNAPSHOT_HEADER + SNAPSHOT_TRAILER)
        return -SL_ERR_STATE_FILE_CORRUPTED;
    size_t body_len = bytes.len - SNAPSHOT_TRAILER;
    if (sl_xxh3_64(bytes.ptr, body_len) != sl_load_u64(bytes.ptr + body_len))
        return -SL_ERR_STATE_FILE_CORRUPTED;

    sl_meta_t *fresh;
    int rc = sl_meta_create(m->clients_max, m->server_version, &fresh);
    if (rc != 0)
        return rc;
    sl_meta_set_limits(fresh, m->streams_max, m->topics_max, m->partition_ids_max);
    sl_reader_t r = sl_reader(sl_span(bytes.ptr, body_len));
    if (!decode_body(&r, fresh)) {
        sl_meta_destroy(fresh);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    /* Swap the contents so that the caller's pointer now holds the image. */
    sl_meta_t old = *m;
    *m = *fresh;
    *fresh = old;
    sl_meta_destroy(fresh);
    return 0;
}
