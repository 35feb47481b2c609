/* Users and personal access tokens in the metadata state (commands.md 4-5):
 * the apply handlers of 141-147, canonical permission storage
 * (permissions.md 1, "Storage and echo order"), lookups and wire views. */
#include <stdlib.h>
#include <string.h>

#include "meta/state_internal.h"

/* --- lookup ------------------------------------------------------------------------ */

static sl_meta_user_t *user_by_name(const sl_meta_t *m, sl_span_t name)
{
    sl_meta_map_iter_t it = sl_meta_map_lookup(&m->user_names, sl_meta_hash(name));
    uint32_t id;
    while (sl_meta_map_next(&it, &id)) {
        sl_meta_user_t *u = sl_meta_vec_find(&m->users, id);
        if (u && sl_span_eq(u->username, name))
            return u;
    }
    return NULL;
}

sl_meta_user_t *sl_meta_user_get(sl_meta_t *m, const sl_ident_t *id)
{
    if (id->kind == SL_IDENT_STRING)
        return user_by_name(m, id->name);
    return sl_meta_vec_find(&m->users, id->number);
}

const sl_meta_user_t *sl_meta_user_find(const sl_meta_t *m, const sl_ident_t *id)
{
    return sl_meta_user_get((sl_meta_t *)m, id);
}

const sl_meta_user_t *sl_meta_user_by_id(const sl_meta_t *m, uint32_t id)
{
    return sl_meta_vec_find(&m->users, id);
}

const sl_meta_user_t *sl_meta_user_next(const sl_meta_t *m, const sl_meta_user_t *prev)
{
    uint32_t at = 0;
    if (prev) {
        if (prev->id == UINT32_MAX)
            return NULL;
        at = sl_meta_vec_lower(&m->users, prev->id + 1);
    }
    return at < m->users.count ? m->users.items[at] : NULL;
}

int sl_meta_name_cmp(sl_span_t a, sl_span_t b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    if (c != 0)
        return c;
    return a.len < b.len ? -1 : (a.len > b.len ? 1 : 0);
}

/* Index of the first token whose name is >= name. */
static uint32_t token_lower(const sl_meta_user_t *u, sl_span_t name)
{
    uint32_t lo = 0, hi = u->tokens_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sl_meta_name_cmp(u->tokens[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t sl_meta_user_tokens_count(const sl_meta_t *m, uint32_t user_id)
{
    const sl_meta_user_t *u = sl_meta_user_by_id(m, user_id);
    return u ? u->tokens_count : 0;
}

const sl_meta_token_t *sl_meta_token_find(const sl_meta_user_t *u, sl_span_t name)
{
    uint32_t at = token_lower(u, name);
    return at < u->tokens_count && sl_span_eq(u->tokens[at].name, name) ? &u->tokens[at] : NULL;
}

const sl_meta_token_t *sl_meta_token_by_digest(const sl_meta_t *m, sl_span_t digest,
                                               const sl_meta_user_t **user)
{
    *user = NULL;
    if (digest.len != SL_META_TOKEN_DIGEST_LEN)
        return NULL;
    for (uint32_t i = 0; i < m->users.count; i++) {
        const sl_meta_user_t *u = m->users.items[i];
        for (uint32_t k = 0; k < u->tokens_count; k++) {
            /* Constant time: the digest stands for a secret. */
            if (sl_ct_equal(u->tokens[k].digest, digest.ptr, SL_META_TOKEN_DIGEST_LEN)) {
                *user = u;
                return &u->tokens[k];
            }
        }
    }
    return NULL;
}

/* --- life cycle -------------------------------------------------------------------- */

sl_meta_user_t *sl_meta_user_new(uint32_t id, uint64_t created_at, uint8_t status,
                                 sl_span_t username, sl_span_t password_hash)
{
    sl_meta_user_t *u = sl_meta_calloc(1, sizeof(*u));
    u->id = id;
    u->created_at = created_at;
    u->status = status;
    u->username = sl_meta_span_dup(username);
    u->password_hash = sl_meta_span_dup(password_hash);
    sl_arena_init(&u->perms_arena, 1024, 0);
    return u;
}

void sl_meta_user_link(sl_meta_t *m, sl_meta_user_t *u)
{
    sl_meta_vec_insert(&m->users, u);
    sl_meta_map_insert(&m->user_names, sl_meta_hash(u->username), u->id);
}

static void user_free(sl_meta_user_t *u)
{
    for (uint32_t i = 0; i < u->tokens_count; i++)
        sl_meta_span_free(&u->tokens[i].name);
    free(u->tokens);
    sl_meta_span_free(&u->username);
    sl_meta_span_free(&u->password_hash);
    sl_meta_span_free(&u->permissions);
    sl_arena_free(&u->perms_arena);
    free(u);
}

void sl_meta_users_free(sl_meta_t *m)
{
    for (uint32_t i = 0; i < m->users.count; i++)
        user_free(m->users.items[i]);
    sl_meta_vec_free(&m->users);
    sl_meta_map_free(&m->user_names);
}

/* --- permissions ----------------------------------------------------------------------- */

typedef struct grant_order {
    uint32_t id;
    uint32_t at; /* position in the request: the later duplicate wins */
} grant_order_t;

static int grant_order_cmp(const void *a, const void *b)
{
    const grant_order_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->at < y->at ? -1 : (x->at > y->at ? 1 : 0);
}

/* Sorted by id with the last duplicate kept, as the reference's maps store
 * grants. NULL only when the arena is exhausted. */
static grant_order_t *grant_order(sl_arena_t *arena, uint32_t n, const void *items, size_t stride)
{
    grant_order_t *ord = SL_ARENA_NEW(arena, grant_order_t, n);
    if (!ord)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        ord[i] = (grant_order_t){*(const uint32_t *)((const uint8_t *)items + i * stride), i};
    qsort(ord, n, sizeof(*ord), grant_order_cmp);
    return ord;
}

static bool canonical_topics(sl_arena_t *arena, sl_stream_perms_t *s)
{
    if (s->topics_count == 0)
        return true;
    grant_order_t *ord = grant_order(arena, s->topics_count, s->topics, sizeof(*s->topics));
    sl_topic_perms_t *topics = SL_ARENA_NEW(arena, sl_topic_perms_t, s->topics_count);
    if (!ord || !topics)
        return false;
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->topics_count; i++)
        if (i + 1 == s->topics_count || ord[i + 1].id != ord[i].id)
            topics[n++] = s->topics[ord[i].at];
    s->topics = topics;
    s->topics_count = n;
    return true;
}

/* Appends the canonical encoding of the set in raw. */
static bool canonical_permissions(sl_arena_t *arena, sl_span_t raw, sl_buf_t *out)
{
    sl_permissions_t p;
    if (!sl_permissions_unpack(raw, arena, &p))
        return false;
    uint32_t n = 0;
    sl_stream_perms_t *streams = NULL;
    if (p.streams_count > 0) {
        grant_order_t *ord = grant_order(arena, p.streams_count, p.streams, sizeof(*p.streams));
        streams = SL_ARENA_NEW(arena, sl_stream_perms_t, p.streams_count);
        if (!ord || !streams)
            return false;
        for (uint32_t i = 0; i < p.streams_count; i++) {
            if (i + 1 < p.streams_count && ord[i + 1].id == ord[i].id)
                continue;
            streams[n] = p.streams[ord[i].at];
            if (!canonical_topics(arena, &streams[n]))
                return false;
            n++;
        }
    }
    p.streams = streams;
    p.streams_count = n;
    return sl_permissions_encode(out, &p);
}

bool sl_meta_user_set_permissions(sl_meta_user_t *u, bool has, sl_span_t raw)
{
    sl_span_t canonical = sl_span(NULL, 0);
    if (has) {
        sl_arena_t arena;
        sl_buf_t b;
        sl_arena_init(&arena, 0, 0);
        sl_buf_init(&b, 0);
        bool ok = canonical_permissions(&arena, raw, &b);
        if (ok)
            canonical = sl_meta_span_dup(sl_buf_span(&b));
        sl_buf_free(&b);
        sl_arena_free(&arena);
        if (!ok)
            return false;
    }
    sl_meta_span_free(&u->permissions);
    sl_arena_free(&u->perms_arena);
    sl_arena_init(&u->perms_arena, 1024, 0);
    u->permissions = canonical;
    u->has_permissions = has;
    u->perms = (sl_permissions_t){0};
    if (has) {
        bool ok = sl_permissions_unpack(u->permissions, &u->perms_arena, &u->perms);
        sl_assert(ok);
    }
    return true;
}

/* --- tokens ------------------------------------------------------------------------------ */

static void token_insert_at(sl_meta_user_t *u, uint32_t at, sl_span_t name, uint64_t expiry_at,
                            sl_span_t digest)
{
    sl_assert(digest.len == SL_META_TOKEN_DIGEST_LEN);
    if (u->tokens_count == u->tokens_cap) {
        u->tokens_cap = u->tokens_cap ? u->tokens_cap * 2 : 4;
        u->tokens = sl_meta_realloc(u->tokens, u->tokens_cap, sizeof(*u->tokens));
    }
    memmove(&u->tokens[at + 1], &u->tokens[at],
            (size_t)(u->tokens_count - at) * sizeof(*u->tokens));
    sl_meta_token_t *t = &u->tokens[at];
    *t = (sl_meta_token_t){.name = sl_meta_span_dup(name), .expiry_at = expiry_at};
    memcpy(t->digest, digest.ptr, SL_META_TOKEN_DIGEST_LEN);
    u->tokens_count++;
}

void sl_meta_user_push_token(sl_meta_user_t *u, sl_span_t name, uint64_t expiry_at,
                             sl_span_t digest)
{
    sl_assert(u->tokens_count == 0 ||
              sl_meta_name_cmp(u->tokens[u->tokens_count - 1].name, name) < 0);
    token_insert_at(u, u->tokens_count, name, expiry_at, digest);
}

/* --- wire views ------------------------------------------------------------------------- */

void sl_meta_user_header(const sl_meta_user_t *u, sl_user_header_t *out)
{
    *out = (sl_user_header_t){
        .id = u->id,
        .created_at = u->created_at,
        .status = u->status,
        .username = u->username,
    };
}

void sl_meta_user_details(const sl_meta_user_t *u, sl_user_details_t *out)
{
    *out =
        (sl_user_details_t){.has_permissions = u->has_permissions, .permissions = u->permissions};
    sl_meta_user_header(u, &out->header);
}

/* --- 141 CreateUser ------------------------------------------------------------------------ */

static bool username_length_ok(sl_span_t name)
{
    return name.len >= SL_USERNAME_LEN_MIN && name.len <= SL_USERNAME_LEN_MAX;
}

/* The reply echoes the request's set as decoded: request order, duplicates
 * kept, flags written 0/1. */
static void put_created_user(sl_meta_ctx_t *c, const sl_meta_user_t *u,
                             const sl_create_user_request_t *q)
{
    sl_create_user_reply_t reply = {0};
    sl_meta_user_header(u, &reply.user.header);
    reply.user.header.status = q->status;
    reply.user.header.options = q->options;
    reply.user.has_permissions = q->has_permissions;
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    if (q->has_permissions) {
        sl_permissions_t p;
        bool ok = sl_permissions_unpack(q->permissions, &c->m->scratch, &p) &&
                  sl_permissions_encode(&perms, &p);
        sl_assert(ok);
        reply.user.permissions = sl_buf_span(&perms);
    }
    sl_result_put_ok(c->out);
    int rc = sl_create_user_reply_encode(c->out, &reply);
    sl_assert(rc == 0);
    sl_buf_free(&perms);
}

int sl_meta_apply_create_user(sl_meta_ctx_t *c)
{
    sl_meta_t *m = c->m;
    sl_create_user_request_t q;
    int rc = sl_meta_decode_rc(sl_create_user_request_decode(c->e->body, &q));
    if (rc != 0)
        return rc;
    if (!sl_meta_allowed(m, c->e->user_id, SL_PERM_MANAGE_USERS, 0, 0))
        return SL_ERR_UNAUTHORIZED;
    if (!username_length_ok(q.username))
        return SL_ERR_INVALID_USERNAME;
    if (user_by_name(m, q.username))
        return SL_ERR_USER_ALREADY_EXISTS;
    uint32_t id = sl_meta_vec_lowest_free(&m->users);
    if (id == UINT32_MAX)
        return SL_ERR_USERS_LIMIT_REACHED;
    /* Any status byte other than 2 is stored as active; the reply echoes it. */
    uint8_t status = q.status == SL_USER_INACTIVE ? SL_USER_INACTIVE : SL_USER_ACTIVE;
    sl_meta_user_t *u = sl_meta_user_new(id, c->e->timestamp, status, q.username, q.password);
    bool ok = sl_meta_user_set_permissions(u, q.has_permissions, q.permissions);
    sl_assert(ok); /* the request decoder parsed the set */
    sl_meta_user_link(m, u);
    put_created_user(c, u, &q);
    return 0;
}

/* --- 142 UpdateUser / 143 DeleteUser / 145 UpdatePermissions ---------------------------------- */

/* manage_users (41, checked before the target resolves), then the user (20). */
static int resolve_managed_user(sl_meta_ctx_t *c, const sl_ident_t *id, sl_meta_user_t **out)
{
    if (!sl_meta_allowed(c->m, c->e->user_id, SL_PERM_MANAGE_USERS, 0, 0))
        return SL_ERR_UNAUTHORIZED;
    *out = sl_meta_user_get(c->m, id);
    return *out ? 0 : SL_ERR_RESOURCE_NOT_FOUND;
}

/* The reference guards root (user 0) against deletion (48) and permission
 * changes (49) only, so any manage_users holder could rename root or set it
 * inactive and lock it out. Sluice lets only root itself do either: 41, the
 * answer for an actor who may not do this (docs/compatibility.md). Renaming
 * root to its own name and reactivating it stay open to managers. */
static bool root_guarded(const sl_meta_ctx_t *c, const sl_meta_user_t *u,
                         const sl_update_user_request_t *q)
{
    if (u->id != 0 || c->e->user_id == 0)
        return false;
    bool rename = q->has_username && !sl_span_eq(q->username, u->username);
    return rename || (q->has_status && q->status == SL_USER_INACTIVE);
}

int sl_meta_apply_update_user(sl_meta_ctx_t *c)
{
    sl_meta_t *m = c->m;
    sl_update_user_request_t q;
    sl_meta_user_t *u;
    int rc = sl_meta_decode_rc(sl_update_user_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_managed_user(c, &q.user_id, &u);
    if (rc != 0)
        return rc;
    if (root_guarded(c, u, &q))
        return SL_ERR_UNAUTHORIZED;
    if (q.has_username) {
        if (!username_length_ok(q.username))
            return SL_ERR_INVALID_USERNAME;
        const sl_meta_user_t *same = user_by_name(m, q.username);
        if (same && same != u)
            return SL_ERR_USER_ALREADY_EXISTS;
        sl_meta_map_remove(&m->user_names, sl_meta_hash(u->username), u->id);
        sl_meta_span_set(&u->username, q.username);
        sl_meta_map_insert(&m->user_names, sl_meta_hash(u->username), u->id);
    }
    if (q.has_status && (q.status == SL_USER_ACTIVE || q.status == SL_USER_INACTIVE))
        u->status = q.status;
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_delete_user(sl_meta_ctx_t *c)
{
    sl_meta_t *m = c->m;
    sl_delete_user_request_t q;
    sl_meta_user_t *u;
    int rc = sl_meta_decode_rc(sl_delete_user_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_managed_user(c, &q.user_id, &u);
    if (rc != 0)
        return rc;
    if (u->id == 0)
        return SL_ERR_CANNOT_DELETE_USER;
    /* The client table keeps the user's sessions, as the reference does;
     * sluiced ends each at its next request (sl_admit_user_current). */
    sl_meta_map_remove(&m->user_names, sl_meta_hash(u->username), u->id);
    void *removed = sl_meta_vec_remove(&m->users, u->id);
    sl_assert(removed == u);
    user_free(u);
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_update_permissions(sl_meta_ctx_t *c)
{
    sl_update_permissions_request_t q;
    sl_meta_user_t *u;
    int rc = sl_meta_decode_rc(sl_update_permissions_request_decode(c->e->body, &q));
    if (rc == 0)
        rc = resolve_managed_user(c, &q.user_id, &u);
    if (rc != 0)
        return rc;
    if (u->id == 0)
        return SL_ERR_CANNOT_CHANGE_PERMISSIONS;
    bool ok = sl_meta_user_set_permissions(u, q.has_permissions, q.permissions);
    sl_assert(ok);
    sl_result_put_ok(c->out);
    return 0;
}

/* --- 144 ChangePassword -------------------------------------------------------------------- */

int sl_meta_apply_change_password(sl_meta_ctx_t *c)
{
    sl_meta_admit_change_password_t q;
    if (sl_meta_admit_change_password_decode(c->e->body, &q) != 0)
        return -SL_ERR_INVALID_COMMAND;
    /* The rule depends on the target, so it resolves first (20). */
    sl_meta_user_t *u = sl_meta_user_get(c->m, &q.user_id);
    if (!u)
        return SL_ERR_RESOURCE_NOT_FOUND;
    if (u->id != c->e->user_id && !sl_meta_allowed(c->m, c->e->user_id, SL_PERM_MANAGE_USERS, 0, 0))
        return SL_ERR_UNAUTHORIZED;
    if (!q.verified)
        return SL_ERR_INVALID_CREDENTIALS;
    sl_meta_span_set(&u->password_hash, q.new_hash);
    sl_result_put_ok(c->out);
    return 0;
}

/* --- 146 / 147 personal access tokens ------------------------------------------------------- */

int sl_meta_apply_create_pat(sl_meta_ctx_t *c)
{
    sl_meta_admit_create_pat_t q;
    if (sl_meta_admit_create_pat_decode(c->e->body, &q) != 0)
        return -SL_ERR_INVALID_COMMAND;
    sl_meta_user_t *u = sl_meta_vec_find(&c->m->users, c->e->user_id);
    if (!u)
        return SL_ERR_RESOURCE_NOT_FOUND;
    uint32_t at = token_lower(u, q.name);
    if (at < u->tokens_count && sl_span_eq(u->tokens[at].name, q.name))
        return SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS;
    uint64_t expiry_at = 0;
    if (q.expiry_us != 0 && q.expiry_us != UINT64_MAX &&
        __builtin_add_overflow(c->e->timestamp, q.expiry_us, &expiry_at))
        return SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN_EXPIRY;
    token_insert_at(u, at, q.name, expiry_at, q.digest);
    /* The server appends the raw token; a replay gets result 51 instead. */
    c->token_created = true;
    sl_result_put_ok(c->out);
    return 0;
}

int sl_meta_apply_delete_pat(sl_meta_ctx_t *c)
{
    sl_delete_personal_access_token_request_t q;
    int rc = sl_meta_decode_rc(sl_delete_personal_access_token_request_decode(c->e->body, &q));
    if (rc != 0)
        return rc;
    sl_meta_user_t *u = sl_meta_vec_find(&c->m->users, c->e->user_id);
    if (!u)
        return SL_ERR_RESOURCE_NOT_FOUND;
    uint32_t at = token_lower(u, q.name);
    if (at == u->tokens_count || !sl_span_eq(u->tokens[at].name, q.name))
        return SL_ERR_RESOURCE_NOT_FOUND;
    sl_meta_span_free(&u->tokens[at].name);
    memmove(&u->tokens[at], &u->tokens[at + 1],
            (size_t)(u->tokens_count - at - 1) * sizeof(*u->tokens));
    u->tokens_count--;
    sl_result_put_ok(c->out);
    return 0;
}
