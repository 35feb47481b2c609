/* What the src/meta translation units share behind meta/state.h: the state
 * struct, the apply context and the helpers one file offers another.
 * Unit tests include it to lower the id-space limits. */
#ifndef SL_META_STATE_INTERNAL_H
#define SL_META_STATE_INTERNAL_H

#include <sluice/error.h>

#include "meta/state.h"
#include "wire/codec.h"

struct sl_meta {
    uint32_t clients_max;
    sl_span_t server_version; /* owned */
    uint64_t last_op;

    /* Id-space limits: the protocol's values (base/limits.h); tests lower
     * them to reach results 1020, 2021 and 3013 cheaply. */
    uint32_t streams_max;
    uint32_t topics_max;
    uint32_t partition_ids_max;

    sl_meta_vec_t users; /* sl_meta_user_t *, sorted by id */
    sl_meta_map_t user_names;

    /* Streams are indexed by id (up to 2^20 of them); the bitmap gives the
     * lowest free id and the next used one. */
    sl_meta_stream_t **streams;
    uint32_t streams_cap;
    uint32_t streams_count;
    sl_meta_bitmap_t stream_ids;
    sl_meta_map_t stream_names;

    uint32_t topics_total;
    uint32_t partitions_total;
    uint32_t groups_total;

    /* Client table: dense array of entries, hashed by client id. */
    sl_meta_client_t **clients;
    uint32_t clients_count;
    sl_meta_map_t client_index;

    sl_arena_t scratch; /* reset at every apply */
    sl_buf_t out;       /* the reply being built */
};

/* One apply in progress. Handlers return 0 after appending the success
 * body (result section and payload) to out, a positive code for a committed
 * rejection (the dispatcher appends it), or a negative error when the entry
 * cannot be applied. A handler changes nothing before it knows it succeeds. */
typedef struct sl_meta_ctx {
    sl_meta_t *m;
    const sl_meta_entry_t *e;
    sl_buf_t *out;
    bool token_created;
} sl_meta_ctx_t;

typedef int (*sl_meta_handler_t)(sl_meta_ctx_t *c);

/* Maps a wire decoder's result at apply: 0 stays 0; an undecodable body
 * (-3) stays negative; a validation code found again at apply (4041, 4042,
 * 2015, 1019: the server should have refused it at admission) becomes a
 * committed rejection with that code. */
static inline int sl_meta_decode_rc(int rc)
{
    return (rc == 0 || rc == -SL_ERR_INVALID_COMMAND) ? rc : -rc;
}

static inline uint64_t sl_meta_hash_u128(sl_u128_t v)
{
    uint8_t bytes[16];
    sl_store_u128(bytes, v);
    return sl_meta_hash(sl_span(bytes, sizeof(bytes)));
}

/* --- streams.c -------------------------------------------------------------------- */

int sl_meta_apply_create_stream(sl_meta_ctx_t *c);
int sl_meta_apply_update_stream(sl_meta_ctx_t *c);
int sl_meta_apply_delete_stream(sl_meta_ctx_t *c);
int sl_meta_apply_purge_stream(sl_meta_ctx_t *c);
int sl_meta_apply_create_topic(sl_meta_ctx_t *c);
int sl_meta_apply_update_topic(sl_meta_ctx_t *c);
int sl_meta_apply_delete_topic(sl_meta_ctx_t *c);
int sl_meta_apply_purge_topic(sl_meta_ctx_t *c);
int sl_meta_apply_create_partitions(sl_meta_ctx_t *c);
int sl_meta_apply_delete_partitions(sl_meta_ctx_t *c);
int sl_meta_apply_truncate_partition(sl_meta_ctx_t *c);

sl_meta_stream_t *sl_meta_stream_get(sl_meta_t *m, const sl_ident_t *id);
sl_meta_topic_t *sl_meta_topic_get(sl_meta_stream_t *s, const sl_ident_t *id);
/* Allocates an empty stream/topic with its id and name (decode, create). */
sl_meta_stream_t *sl_meta_stream_new(uint32_t id, uint64_t created_at, sl_span_t name);
sl_meta_topic_t *sl_meta_topic_new(uint32_t stream_id, uint32_t id, uint64_t created_at,
                                   sl_span_t name);
/* Links a stream into m (its id must be free and below streams_max) /
 * a topic into its stream (its id and name must be free there). */
void sl_meta_stream_link(sl_meta_t *m, sl_meta_stream_t *s);
void sl_meta_topic_link(sl_meta_t *m, sl_meta_stream_t *s, sl_meta_topic_t *t);
/* Sets a topic's partition count, new partitions created at created_at. */
void sl_meta_topic_set_partitions(sl_meta_t *m, sl_meta_topic_t *t, uint32_t count,
                                  uint64_t created_at);
/* Frees every stream, topic and group of m (destroy). */
void sl_meta_streams_free(sl_meta_t *m);

/* --- groups.c --------------------------------------------------------------------- */

int sl_meta_apply_create_group(sl_meta_ctx_t *c);
int sl_meta_apply_delete_group(sl_meta_ctx_t *c);
int sl_meta_apply_join_group(sl_meta_ctx_t *c);
int sl_meta_apply_leave_group(sl_meta_ctx_t *c);

sl_meta_group_t *sl_meta_group_new(uint32_t id, sl_span_t name);
/* Links a group into its topic (its id below next_group_id, name free). */
void sl_meta_group_link(sl_meta_t *m, sl_meta_topic_t *t, sl_meta_group_t *g);
/* Appends a member (ids ascending) owning no partitions yet. */
sl_meta_member_t *sl_meta_group_add_member(sl_meta_group_t *g, uint32_t id, sl_u128_t client);
void sl_meta_member_push(sl_meta_member_t *mb, uint32_t partition_id);
/* Unlinks nothing: frees g, releasing its members' memberships. */
void sl_meta_group_free(sl_meta_t *m, sl_meta_group_t *g);
/* Every group of t after its partition count changed: generation + 1 and
 * a round-robin deal. */
void sl_meta_topic_rebalance(sl_meta_topic_t *t);
/* Removes client from every group it is a member of (Logout, eviction). */
void sl_meta_groups_drop_client(sl_meta_t *m, sl_meta_client_t *cl);

/* --- users.c ---------------------------------------------------------------------- */

int sl_meta_apply_create_user(sl_meta_ctx_t *c);
int sl_meta_apply_update_user(sl_meta_ctx_t *c);
int sl_meta_apply_delete_user(sl_meta_ctx_t *c);
int sl_meta_apply_change_password(sl_meta_ctx_t *c);
int sl_meta_apply_update_permissions(sl_meta_ctx_t *c);
int sl_meta_apply_create_pat(sl_meta_ctx_t *c);
int sl_meta_apply_delete_pat(sl_meta_ctx_t *c);

sl_meta_user_t *sl_meta_user_get(sl_meta_t *m, const sl_ident_t *id);
sl_meta_user_t *sl_meta_user_new(uint32_t id, uint64_t created_at, uint8_t status,
                                 sl_span_t username, sl_span_t password_hash);
/* Links a user (id and name free). */
void sl_meta_user_link(sl_meta_t *m, sl_meta_user_t *u);
/* Stores raw (an encoded set that parsed) in canonical form; has == false
 * clears the permissions. false when raw does not unpack. */
bool sl_meta_user_set_permissions(sl_meta_user_t *u, bool has, sl_span_t raw);
/* Appends a token (names ascending); digest must be valid. */
void sl_meta_user_push_token(sl_meta_user_t *u, sl_span_t name, uint64_t expiry_at,
                             sl_span_t digest);
void sl_meta_users_free(sl_meta_t *m);
/* Bytewise then by length: the order of token names. */
int sl_meta_name_cmp(sl_span_t a, sl_span_t b);

/* --- state.c ---------------------------------------------------------------------- */

sl_meta_client_t *sl_meta_client_get(sl_meta_t *m, sl_u128_t client);
/* Adds an empty entry (room must exist) / removes one and frees it. */
sl_meta_client_t *sl_meta_client_add(sl_meta_t *m, sl_u128_t client);
void sl_meta_client_remove(sl_meta_t *m, sl_meta_client_t *cl);
/* Stores a copy of r as the entry's newest reply. */
void sl_meta_client_push_reply(sl_meta_client_t *cl, const sl_meta_reply_t *r);
/* The apply-time permission gate: user 0 always passes. */
bool sl_meta_allowed(const sl_meta_t *m, uint32_t user_id, sl_perm_rule_t rule, uint32_t stream_id,
                     uint32_t topic_id);
/* Test hook: lowers the id-space limits (never above the protocol's). */
void sl_meta_set_limits(sl_meta_t *m, uint32_t streams_max, uint32_t topics_max,
                        uint32_t partition_ids_max);

#endif
