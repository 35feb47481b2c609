/* The metadata state machine: streams, topics, partitions, consumer groups,
 * users, personal access tokens and the client table (META brief).
 *
 * sl_meta_apply is a deterministic function of (state, entry): it reads no
 * clock, draws no randomness and does no I/O, so replaying the journal from a
 * snapshot rebuilds the same state and the same reply bytes. The server does
 * everything non-deterministic at admission (decode, validation, password
 * hashing, token generation, timestamps) and journals the admitted body
 * (meta/admit.h) before applying it.
 *
 * Ownership: sl_meta_t owns every entity. The read accessors return
 * pointers into the state; they stay valid until the next call that can
 * change it (sl_meta_apply, sl_meta_bootstrap_root, sl_meta_decode,
 * sl_meta_destroy). Fields of the entity structs are read-only outside
 * src/meta; the ones marked private are bookkeeping.
 *
 * Threading: one owner (shard 0) applies; nothing here locks. */
#ifndef SL_META_STATE_H
#define SL_META_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/assert.h"
#include "base/bytes.h"
#include "base/limits.h"
#include "meta/admit.h"
#include "meta/entry.h"
#include "meta/index.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_topics.h"
#include "wire/cmd_users.h"
#include "wire/perms.h"
#include "wire/prim.h"
#include "wire/topic_options.h"

typedef struct sl_meta sl_meta_t;

/* --- entities -------------------------------------------------------------------- */

typedef struct sl_meta_token {
    sl_span_t name;
    uint64_t expiry_at; /* microseconds since the epoch; 0 = never expires */
    uint8_t digest[SL_META_TOKEN_DIGEST_LEN];
} sl_meta_token_t;

typedef struct sl_meta_user {
    uint32_t id; /* first member: sl_meta_vec_t keys on it */
    uint64_t created_at;
    uint8_t status; /* SL_USER_ACTIVE or SL_USER_INACTIVE */
    sl_span_t username;
    sl_span_t password_hash; /* PHC string, as admitted */
    bool has_permissions;
    /* Canonical encoding (grants sorted by id, last duplicate kept) and its
     * unpacked form; all flags false and no grants when !has_permissions. */
    sl_span_t permissions;
    sl_permissions_t perms;
    uint32_t tokens_count;
    sl_meta_token_t *tokens; /* sorted by name, bytewise then by length */
    /* private */
    uint32_t tokens_cap;
    sl_arena_t perms_arena;
} sl_meta_user_t;

typedef struct sl_meta_member {
    uint32_t id; /* lowest free member id of the group at join */
    sl_u128_t client;
    uint32_t partitions_count;
    uint32_t *partitions; /* assignment order (what SyncConsumerGroup lists) */
    /* private */
    uint32_t partitions_cap;
} sl_meta_member_t;

typedef struct sl_meta_group {
    uint32_t id; /* first member: sl_meta_vec_t keys on it */
    sl_span_t name;
    uint64_t generation;
    uint32_t members_count;
    sl_meta_member_t *members; /* sorted by member id */
    /* private */
    uint32_t members_cap;
} sl_meta_group_t;

typedef struct sl_meta_topic {
    uint32_t id; /* first member: sl_meta_vec_t keys on it */
    uint32_t stream_id;
    uint64_t created_at;
    /* Raised by one for every applied PurgeTopic of this topic and PurgeStream of its stream.
     * The server records it in each partition's purge.gen once the partition is purged, and
     * purges at boot a partition whose record is lower (a crash came between). */
    uint64_t purge_generation;
    sl_span_t name;
    sl_topic_config_t config;  /* effective values */
    sl_span_t options;         /* stored explicit block */
    sl_span_t derived_options; /* stored derived block */
    uint32_t partitions_count; /* partition ids are 0 .. partitions_count - 1 */
    uint64_t *partition_created_at;
    uint32_t next_group_id; /* group ids are never reused */
    sl_meta_vec_t groups;   /* sl_meta_group_t *, sorted by id */
    /* private */
    uint32_t partitions_cap;
    sl_meta_map_t group_names;
} sl_meta_topic_t;

typedef struct sl_meta_stream {
    uint32_t id;
    uint64_t created_at;
    sl_span_t name;
    sl_span_t options;    /* as sent (always empty today) */
    sl_meta_vec_t topics; /* sl_meta_topic_t *, sorted by id */
    /* private */
    sl_meta_map_t topic_names;
} sl_meta_stream_t;

/* One committed reply a client-table entry remembers. */
typedef struct sl_meta_reply {
    uint64_t request;
    sl_u128_t request_checksum;
    uint64_t op;        /* the prepare's op: reply header `op` and `commit` */
    uint64_t timestamp; /* the prepare's timestamp: reply header `timestamp` */
    uint8_t operation;  /* reply header `operation` */
    bool token_created; /* a successful CreatePersonalAccessToken: never resent */
    sl_span_t body;     /* the reply body sl_meta_apply produced */
} sl_meta_reply_t;

typedef struct sl_meta_client {
    sl_u128_t client;
    uint64_t epoch; /* op of the latest committed Register */
    uint32_t user_id;
    uint64_t watermark; /* highest committed request number */
    sl_u128_t watermark_checksum;
    uint64_t last_commit_op; /* the capacity eviction picks the lowest */
    uint32_t memberships;    /* consumer groups this client is a member of */
    /* The last SL_REPLY_RING_CAPACITY replies; the newest is at
     * ring[(ring_next + CAP - 1) % CAP] when ring_count > 0. */
    uint32_t ring_count;
    uint32_t ring_next;
    sl_meta_reply_t ring[SL_REPLY_RING_CAPACITY];
} sl_meta_client_t;

/* --- life cycle -------------------------------------------------------------------- */

/* An empty state. clients_max: client-table slots (SL_CLIENTS_TABLE_MIN ..
 * SL_CLIENTS_TABLE_MAX); server_version: the Name the Register reply
 * carries (1..255 bytes, copied). 0 or -SL_ERR_INVALID_CONFIGURATION. */
int sl_meta_create(uint32_t clients_max, sl_span_t server_version, sl_meta_t **out) SL_WUR;
void sl_meta_destroy(sl_meta_t *m);

/* The op of the last applied entry (0 for a fresh state). */
uint64_t sl_meta_last_op(const sl_meta_t *m);

/* --- apply ------------------------------------------------------------------------- */

/* Applies one committed entry and appends its reply BODY to reply: the
 * result section and payload for result-framed operations (commands.md
 * 1.2), the framed login reply for Register, nothing for Logout. A
 * successful CreatePersonalAccessToken appends only `00 00 00 00`: the
 * server appends [token_len u8][token] itself, since the raw token never
 * enters meta. The reply is also recorded in the client's table entry.
 *
 * Returns 0, or a negative error only for an entry that cannot be applied
 * at all (an op not above sl_meta_last_op, an operation meta does not own,
 * an undecodable body); the state is then unchanged and nothing is appended.
 * For admitted bodies that never happens: callers may assert on it.
 * Give reply room to grow: if it fails, only the caller's copy is lost (the
 * state and the client's ring already hold the outcome). */
int sl_meta_apply(sl_meta_t *m, const sl_meta_entry_t *e, sl_buf_t *reply) SL_WUR;

/* --- root user ------------------------------------------------------------------------ */

/* The journal entry that creates the root user on first boot: a CreateUser
 * (141) from the internal client 0, acting user 0, request 0, at op and
 * timestamp, body = the admitted CreateUser body (written to body, which
 * must outlive *e) for username/phc_hash, status active and all ten global
 * permissions. Applied to a state without users it creates user 0 through
 * the ordinary CreateUser path, with the entry's timestamp as its
 * created_at (the server passes the time of creation, so replay and
 * snapshots keep it), so the journal and snapshots need nothing special.
 * op is the next log position (1 on a fresh log). 0 or
 * -SL_ERR_INVALID_COMMAND for fields that cannot be encoded. */
int sl_meta_root_entry(sl_buf_t *body, sl_span_t username, sl_span_t phc_hash, uint64_t op,
                       uint64_t timestamp, sl_meta_entry_t *e) SL_WUR;
/* Builds the root entry with op = sl_meta_last_op + 1 and the given
 * timestamp (the root user's created_at) and applies it.
 * -SL_ERR_USER_ALREADY_EXISTS when the state has users already, else as
 * sl_meta_root_entry, or the rejection code when apply refused it (43 for a
 * username outside 3..50 bytes). */
int sl_meta_bootstrap_root(sl_meta_t *m, sl_span_t username, sl_span_t phc_hash,
                           uint64_t timestamp) SL_WUR;

/* --- client table and preflight (framing.md 5-6.1) ------------------------------------ */

typedef enum sl_meta_preflight {
    SL_META_PREFLIGHT_NEW,             /* journal it */
    SL_META_PREFLIGHT_NO_SESSION,      /* Eviction 1: no table entry */
    SL_META_PREFLIGHT_SESSION_TOO_LOW, /* Eviction 7: an older epoch */
    SL_META_PREFLIGHT_DROP,            /* no reply: epoch too high, or stamps conflict */
    SL_META_PREFLIGHT_CACHED,          /* resend *cached byte for byte */
    SL_META_PREFLIGHT_ALREADY_APPLIED, /* reply result 59 */
    SL_META_PREFLIGHT_PAT_REPLAY,      /* reply result 51 */
} sl_meta_preflight_t;

const char *sl_meta_preflight_name(sl_meta_preflight_t p);

/* The decision for a metadata request (operations 64..149 except 138, plus
 * Logout and DeleteSegments) before it is journaled: session is the epoch
 * bound to the connection, request and request_checksum come from the
 * header. *cached is set (borrowed, valid until the next apply) for CACHED,
 * else NULL. */
sl_meta_preflight_t sl_meta_preflight(const sl_meta_t *m, sl_u128_t client, uint64_t session,
                                      uint64_t request, sl_u128_t request_checksum,
                                      const sl_meta_reply_t **cached);

/* The Register gate: false when client already has an entry bound to another
 * user (answer Eviction 12, journal nothing). */
bool sl_meta_register_allowed(const sl_meta_t *m, sl_u128_t client, uint32_t user_id);

const sl_meta_client_t *sl_meta_client_find(const sl_meta_t *m, sl_u128_t client);
/* Client-table entries by position, 0 <= i < sl_meta_clients_count, in no particular order;
 * valid until the next apply (which may move or remove them). */
uint32_t sl_meta_clients_count(const sl_meta_t *m);
const sl_meta_client_t *sl_meta_client_at(const sl_meta_t *m, uint32_t i);
/* The newest reply of an entry, or NULL when none is recorded. */
const sl_meta_reply_t *sl_meta_client_latest(const sl_meta_client_t *c);

/* --- reads ------------------------------------------------------------------------------ */

/* Resolve an Identifier (numeric id or exact name); NULL when absent. */
const sl_meta_stream_t *sl_meta_stream_find(const sl_meta_t *m, const sl_ident_t *id);
const sl_meta_topic_t *sl_meta_topic_find(const sl_meta_stream_t *s, const sl_ident_t *id);
const sl_meta_group_t *sl_meta_group_find(const sl_meta_topic_t *t, const sl_ident_t *id);
const sl_meta_user_t *sl_meta_user_find(const sl_meta_t *m, const sl_ident_t *id);
const sl_meta_stream_t *sl_meta_stream_by_id(const sl_meta_t *m, uint32_t id);
const sl_meta_user_t *sl_meta_user_by_id(const sl_meta_t *m, uint32_t id);

/* Iteration in ascending id order: pass NULL for the first, the previous
 * item for the next; NULL at the end. */
const sl_meta_stream_t *sl_meta_stream_next(const sl_meta_t *m, const sl_meta_stream_t *prev);
const sl_meta_user_t *sl_meta_user_next(const sl_meta_t *m, const sl_meta_user_t *prev);
static inline const sl_meta_topic_t *sl_meta_topic_at(const sl_meta_stream_t *s, uint32_t i)
{
    return i < s->topics.count ? (const sl_meta_topic_t *)s->topics.items[i] : NULL;
}
static inline const sl_meta_group_t *sl_meta_group_at(const sl_meta_topic_t *t, uint32_t i)
{
    return i < t->groups.count ? (const sl_meta_group_t *)t->groups.items[i] : NULL;
}

/* How many tokens a user holds (0 for a missing user): the server refuses
 * CreatePersonalAccessToken with status 52 at the cap before journaling. */
uint32_t sl_meta_user_tokens_count(const sl_meta_t *m, uint32_t user_id);
/* A user's token by exact name, or NULL. */
const sl_meta_token_t *sl_meta_token_find(const sl_meta_user_t *u, sl_span_t name);
/* The token with this digest and its user (*user), or NULL (PAT login).
 * Linear in the number of tokens held by all users. */
const sl_meta_token_t *sl_meta_token_by_digest(const sl_meta_t *m, sl_span_t digest,
                                               const sl_meta_user_t **user);

/* The member entry of client in a group, or NULL. */
const sl_meta_member_t *sl_meta_member_find(const sl_meta_group_t *g, sl_u128_t client);
/* Whether member owns partition_id now (PollMessages with a group consumer). */
bool sl_meta_member_owns(const sl_meta_member_t *mb, uint32_t partition_id);

/* The consumer groups client is a member of (GetMe), ascending by stream,
 * topic and group id. Writes at most max refs and returns the total. */
typedef struct sl_meta_group_ref {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t group_id;
} sl_meta_group_ref_t;
uint32_t sl_meta_client_groups(const sl_meta_t *m, sl_u128_t client, sl_meta_group_ref_t *out,
                               uint32_t max);

typedef struct sl_meta_counts {
    uint32_t streams;
    uint32_t topics;
    uint32_t partitions;
    uint32_t groups;
    uint32_t users;
    uint32_t clients; /* client-table entries */
} sl_meta_counts_t;

void sl_meta_counts(const sl_meta_t *m, sl_meta_counts_t *out);

/* The unpacked permission set of a user, or NULL when the user does not
 * exist or has none. */
const sl_permissions_t *sl_meta_user_permissions(const sl_meta_t *m, uint32_t user_id);
/* The read-path check of permissions.md 2: user 0 always passes; a missing
 * user or one without permissions never does. */
bool sl_meta_allow(const sl_meta_t *m, uint32_t user_id, sl_perm_rule_t rule, uint32_t stream_id,
                   uint32_t topic_id);

/* --- wire views (statistics are the store's: left 0 here) ------------------------------ */

void sl_meta_stream_header(const sl_meta_stream_t *s, sl_stream_header_t *out);
void sl_meta_topic_header(const sl_meta_topic_t *t, sl_topic_header_t *out);
/* segments_count, offsets, sizes and counts 0; partition_id < partitions_count. */
void sl_meta_partition_info(const sl_meta_topic_t *t, uint32_t partition_id,
                            sl_partition_info_t *out);
void sl_meta_user_header(const sl_meta_user_t *u, sl_user_header_t *out);
void sl_meta_user_details(const sl_meta_user_t *u, sl_user_details_t *out);
/* GroupDetails with members ascending by id; member arrays come from arena.
 * false when the arena is exhausted. */
bool sl_meta_group_details(const sl_meta_topic_t *t, const sl_meta_group_t *g, sl_arena_t *arena,
                           sl_group_details_t *out) SL_WUR;

/* --- snapshot ---------------------------------------------------------------------------- */

/* Appends a versioned binary image of the whole state, the client table
 * included (each entry's newest reply only). Equal states give equal
 * bytes. 0 or -SL_ERR_COMMAND_LENGTH_ERROR when the buffer failed. */
int sl_meta_encode(const sl_meta_t *m, sl_buf_t *out) SL_WUR;
/* Replaces the state of m (created with its own capacity and version) with
 * the image in bytes. Every length, count, id order and cross reference is
 * checked; on any failure m is unchanged and the result is
 * -SL_ERR_STATE_FILE_CORRUPTED (also for an image holding more clients than
 * m's capacity). */
int sl_meta_decode(sl_span_t bytes, sl_meta_t *m) SL_WUR;

#endif
