/* libsluice: the C client library for servers speaking the Apache Iggy binary
 * protocol 0.11.0 over TCP (Sluice's sluiced, or an Iggy server).
 *
 * This first part covers the session (connect, login, logout, ping) and every
 * metadata command: system, users, personal access tokens, streams, topics,
 * partitions, segments and consumer groups. Messages come later.
 *
 * Calling convention. Every call that talks to the server returns 0 or a
 * negated error code from <sluice/error.h>: the IggyError the server answered
 * with (a reply status, a result entry, or an eviction mapped as errors.md 1.4
 * says), or one of the client-side codes listed under "Errors" below. Results
 * go through out-parameters, which are only written on success (except that
 * sl_client_connect always sets *out, to NULL on failure).
 *
 * Ownership. A client is created by sl_client_connect and destroyed by
 * sl_client_close; the caller never frees anything else the library returns.
 * Every result (structs, strings, arrays, byte spans, raw replies) lives in
 * memory owned by the client and stays valid until the next call on the same
 * client, or until sl_client_close, whichever comes first. Copy what must
 * live longer. Strings in results are NUL-terminated UTF-8 (a name that
 * contains a NUL byte reads as cut at it). Arguments are borrowed only for
 * the duration of the call: the library keeps no pointer to them.
 *
 * Threads. A client may be used by one thread at a time; it takes no locks.
 * Different clients are independent. The library has no global mutable
 * state.
 *
 * Connection model. One TCP connection per client, one request in flight
 * (lockstep): each call sends one request and blocks until its reply, an
 * eviction, an error or the request timeout. The socket stays in blocking
 * mode; every wait is bounded by poll(). TCP_NODELAY is set.
 *
 * Sessions. sl_client_login registers a fresh random 128-bit client id and
 * stores the session epoch of the reply; later requests carry it. Request
 * numbers follow framing.md 5.2: a counter that is 1 after login, sent and
 * advanced by every operation except Register and NonReplicated reads (which
 * send its current value). An eviction ends the session: the call returns
 * the mapped error, the client is logged out locally, the connection stays
 * open, and sl_client_login may be called again. Replicated commands without
 * a session return -SL_ERR_UNAUTHENTICATED without sending anything (a
 * server would drop such a request silently).
 *
 * Errors produced by the library itself:
 *   -SL_ERR_INVALID_SERVER_ADDRESS      the host does not resolve
 *   -SL_ERR_CANNOT_ESTABLISH_CONNECTION connect failed or timed out
 *   -SL_ERR_NOT_CONNECTED               the connection was closed after an
 *                                       earlier transport or framing error
 *   -SL_ERR_DISCONNECTED                the socket failed (reset, broken pipe)
 *   -SL_ERR_CONNECTION_CLOSED           the server closed the connection
 *                                       before or in the middle of a reply body
 *   -SL_ERR_EMPTY_RESPONSE              the server closed the connection after
 *                                       1..255 bytes of a reply header; also an
 *                                       empty login reply body (lifecycle.md 4)
 *   -SL_ERR_TASK_TIMEOUT                no complete reply within the request
 *                                       timeout
 *   -SL_ERR_INVALID_COMMAND             a reply that breaks framing (size below
 *                                       256 or above the frame limit, unknown
 *                                       command or operation byte, a status with
 *                                       a body, a bad eviction header, a
 *                                       malformed result section); also an
 *                                       argument that cannot be encoded (empty
 *                                       or over-long name, NULL string)
 *   -SL_ERR_INVALID_FORMAT              a reply payload that does not decode
 *   -SL_ERR_COMMAND_LENGTH_ERROR        a request larger than the frame limit
 *   -SL_ERR_ERROR                       out of memory, or no randomness
 * A socket failure, an end of stream, a timeout or a reply that breaks
 * framing closes the connection, since the byte stream can no longer be
 * trusted; later calls return -SL_ERR_NOT_CONNECTED (close the client and
 * connect again). Server verdicts, a malformed result section, an empty
 * login body and an undecodable payload leave the connection as it was. */
#ifndef SLUICE_CLIENT_H
#define SLUICE_CLIENT_H

#include <sluice/error.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_CLIENT_WUR __attribute__((warn_unused_result))

typedef struct sl_client sl_client_t;

/* --- connecting ---------------------------------------------------------- */

typedef struct sl_client_options {
    uint32_t connect_timeout_ms; /* 0: 5000 */
    uint32_t request_timeout_ms; /* 0: 30000; covers sending and the whole reply */
    uint32_t frame_max;          /* largest frame sent or accepted; 0: 64 MiB, min 4096 */
    const char *sdk_name;        /* reported at login; NULL: "sluice-c" */
    const char *sdk_version;     /* reported at login; NULL: the library version */
} sl_client_options_t;

/* Connects to host:port (a name or an IPv4/IPv6 literal). options may be
 * NULL for the defaults; it is copied. On success *out owns the connection
 * until sl_client_close. Nothing is sent: call sl_client_login next. */
int sl_client_connect(const char *host, uint16_t port, const sl_client_options_t *options,
                      sl_client_t **out) SL_CLIENT_WUR;
/* Closes the connection and frees the client and every result it returned.
 * No Logout is sent: the server ends the session when the connection drops.
 * NULL is allowed. */
void sl_client_close(sl_client_t *client);

/* --- identifiers ------------------------------------------------------------ */

enum {
    SL_ID_NUMBER = 1,
    SL_ID_NAME = 2,
};

/* A stream, topic, group or user named by numeric id or by name. The name is
 * borrowed for the call it is passed to. */
typedef struct sl_id {
    uint8_t kind; /* SL_ID_NUMBER or SL_ID_NAME */
    uint32_t number;
    const char *name; /* 1..255 bytes of UTF-8 */
} sl_id_t;

static inline sl_id_t sl_id_num(uint32_t number)
{
    sl_id_t id = {SL_ID_NUMBER, number, NULL};
    return id;
}
static inline sl_id_t sl_id_name(const char *name)
{
    sl_id_t id = {SL_ID_NAME, 0, name};
    return id;
}

/* --- session ---------------------------------------------------------------- */

typedef struct sl_identity {
    uint32_t user_id;
    uint64_t session;                 /* the session epoch echoed in every later request */
    uint32_t server_protocol_version; /* packed: (major << 20) | (minor << 10) | patch */
    const char *server_version;
} sl_identity_t;

/* PING; the only command a server answers before login. */
int sl_client_ping(sl_client_t *client) SL_CLIENT_WUR;
/* LOGIN_REGISTER (code 40). When already logged in, logs out first. out may
 * be NULL. Bad credentials arrive as an eviction: -SL_ERR_INVALID_CREDENTIALS.
 * The library does not retry transient refusals (-SL_ERR_TRANSIENT_NOT_ACCEPTED,
 * _NOT_COMMITTED); calling login again registers under a new client id. */
int sl_client_login(sl_client_t *client, const char *username, const char *password,
                    sl_identity_t *out) SL_CLIENT_WUR;
/* LOGIN_REGISTER_WITH_PAT (code 45) with a personal access token. */
int sl_client_login_token(sl_client_t *client, const char *token, sl_identity_t *out) SL_CLIENT_WUR;
/* LOGOUT (code 39). 0 without sending when not logged in. On a transient
 * failure the session stays bound and the call may be repeated. */
int sl_client_logout(sl_client_t *client) SL_CLIENT_WUR;

/* What the client would put in its next request header. */
typedef struct sl_session_info {
    bool connected;
    bool logged_in;
    uint64_t client_id_lo; /* the 128-bit client id, low and high halves */
    uint64_t client_id_hi;
    uint64_t session; /* 0 when not logged in */
    uint64_t request; /* the counter: sent by the next advancing operation */
    uint32_t user_id;
} sl_session_info_t;

void sl_client_session_info(const sl_client_t *client, sl_session_info_t *out);

/* --- system ------------------------------------------------------------------ */

typedef struct sl_membership {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t group_id;
} sl_membership_t;

typedef struct sl_client_info {
    uint32_t client_id; /* the server's connection number */
    uint32_t user_id;   /* 0xFFFFFFFF: not logged in */
    uint8_t transport;  /* 1 TCP, 2 QUIC, 4 WebSocket */
    const char *address;
    uint32_t groups_count; /* consumer groups the connection is a member of */
    /* get_me / get_client: groups_count entries; NULL in get_clients. */
    const sl_membership_t *groups;
} sl_client_info_t;

typedef struct sl_stats_cache_metric {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t partition_id;
    uint64_t hits;
    uint64_t misses;
    float hit_ratio;
} sl_stats_cache_metric_t;

typedef struct sl_stats {
    uint32_t process_id;
    float cpu_usage;       /* process CPU % */
    float total_cpu_usage; /* host CPU % */
    uint64_t memory_usage;
    uint64_t total_memory;
    uint64_t available_memory;
    uint64_t run_time_us;
    uint64_t start_time_us;
    uint64_t read_bytes;
    uint64_t written_bytes;
    uint64_t messages_size_bytes;
    uint32_t streams_count;
    uint32_t topics_count;
    uint32_t partitions_count;
    uint32_t segments_count;
    uint64_t messages_count;
    uint32_t clients_count;
    uint32_t consumer_groups_count;
    const char *hostname;
    const char *os_name;
    const char *os_version;
    const char *kernel_version;
    const char *server_version;
    uint32_t server_semver; /* 0.9.0 -> 9000; 0 unknown */
    uint32_t cache_metrics_count;
    const sl_stats_cache_metric_t *cache_metrics;
    uint32_t threads_count;
    uint64_t free_disk_space;
    uint64_t total_disk_space;
} sl_stats_t;

typedef struct sl_node_info {
    const char *name;
    const char *ip; /* the address text to dial */
    uint16_t tcp_port;
    uint16_t quic_port;
    uint16_t http_port;
    uint16_t websocket_port; /* 0: transport disabled */
    uint8_t role;            /* 0 leader, 1 follower */
    uint8_t status;          /* 0 healthy, 1 starting, 2 stopping, 3 unreachable, 4 maintenance */
} sl_node_info_t;

typedef struct sl_cluster {
    const char *name;
    uint32_t nodes_count;
    const sl_node_info_t *nodes;
} sl_cluster_t;

/* DescribeOptions scopes. */
enum {
    SL_SCOPE_TOPIC = 1,
    SL_SCOPE_STREAM = 2,
    SL_SCOPE_USER = 3,
};

/* Value kinds of option entries (encodings.md 8): 1 Raw, 2 String, 3 Bool,
 * 4..8 Int8..Int128, 9..13 Uint8..Uint128, 14 Float32, 15 Float64. Values are
 * little-endian. */
typedef struct sl_option_info {
    const char *key;
    uint8_t kind;                 /* the canonical kind of the value */
    const uint8_t *default_value; /* in that kind's encoding */
    uint32_t default_len;         /* 0: no default */
    const char *description;
} sl_option_info_t;

/* GetSnapshot codes (commands.md 3, code 11). */
enum {
    SL_SNAPSHOT_COMPRESSION_STORED = 1,
    SL_SNAPSHOT_COMPRESSION_DEFLATED = 2,
    SL_SNAPSHOT_COMPRESSION_BZIP2 = 3,
    SL_SNAPSHOT_COMPRESSION_ZSTD = 4,
    SL_SNAPSHOT_COMPRESSION_LZMA = 5,
    SL_SNAPSHOT_COMPRESSION_XZ = 6,
    SL_SNAPSHOT_TYPE_FILESYSTEM_OVERVIEW = 1,
    SL_SNAPSHOT_TYPE_PROCESS_LIST = 2,
    SL_SNAPSHOT_TYPE_RESOURCE_USAGE = 3,
    SL_SNAPSHOT_TYPE_TEST = 4,
    SL_SNAPSHOT_TYPE_SERVER_LOGS = 5,
    SL_SNAPSHOT_TYPE_SERVER_CONFIG = 6,
    SL_SNAPSHOT_TYPE_ALL = 100, /* only alone */
};

int sl_client_get_me(sl_client_t *client, const sl_client_info_t **out) SL_CLIENT_WUR;
int sl_client_get_client(sl_client_t *client, uint32_t client_id,
                         const sl_client_info_t **out) SL_CLIENT_WUR;
int sl_client_get_clients(sl_client_t *client, const sl_client_info_t **items,
                          uint32_t *count) SL_CLIENT_WUR;
int sl_client_get_stats(sl_client_t *client, const sl_stats_t **out) SL_CLIENT_WUR;
int sl_client_get_cluster_metadata(sl_client_t *client, const sl_cluster_t **out) SL_CLIENT_WUR;
int sl_client_describe_options(sl_client_t *client, uint8_t scope, const sl_option_info_t **items,
                               uint32_t *count) SL_CLIENT_WUR;
/* The ZIP archive the server built; *zip borrows the client's receive buffer
 * (valid until the next call, like every result). types_count 1..255. */
int sl_client_get_snapshot(sl_client_t *client, uint8_t compression, const uint8_t *types,
                           uint32_t types_count, const uint8_t **zip,
                           size_t *zip_len) SL_CLIENT_WUR;

/* --- not found ----------------------------------------------------------------
 *
 * Single-object reads (get_client, get_user, get_stream, get_topic,
 * get_consumer_group, sync_consumer_group) answer "not found" the way the
 * server does, with an empty reply: they return 0 and set *out to NULL. So
 * `*out != NULL` is the found flag. Errors the server reports explicitly
 * (for example a missing stream under get_consumer_group, 1009) are errors. */

/* --- users ------------------------------------------------------------------- */

enum {
    SL_USER_STATUS_ACTIVE = 1,
    SL_USER_STATUS_INACTIVE = 2,
};

/* Mirrors the wire permission set (permissions.md 1). */
typedef struct sl_topic_permission {
    uint32_t topic_id;
    bool manage_topic;
    bool read_topic;
    bool poll_messages;
    bool send_messages;
} sl_topic_permission_t;

typedef struct sl_stream_permission {
    uint32_t stream_id;
    bool manage_stream;
    bool read_stream;
    bool manage_topics;
    bool read_topics;
    bool poll_messages;
    bool send_messages;
    uint32_t topics_count;
    const sl_topic_permission_t *topics;
} sl_stream_permission_t;

typedef struct sl_permission_set {
    bool manage_servers;
    bool read_servers;
    bool manage_users;
    bool read_users;
    bool manage_streams;
    bool read_streams;
    bool manage_topics;
    bool read_topics;
    bool poll_messages;
    bool send_messages;
    uint32_t streams_count;
    const sl_stream_permission_t *streams;
} sl_permission_set_t;

typedef struct sl_user {
    uint32_t id;
    uint64_t created_at_us;
    uint8_t status; /* SL_USER_STATUS_* */
    const char *username;
    /* get_user / create_user: the user's set, or NULL when it has none.
     * Always NULL in get_users (the list carries no permissions). */
    const sl_permission_set_t *permissions;
} sl_user_t;

int sl_client_get_user(sl_client_t *client, sl_id_t user, const sl_user_t **out) SL_CLIENT_WUR;
int sl_client_get_users(sl_client_t *client, const sl_user_t **items,
                        uint32_t *count) SL_CLIENT_WUR;
/* permissions NULL: none. out may be NULL. */
int sl_client_create_user(sl_client_t *client, const char *username, const char *password,
                          uint8_t status, const sl_permission_set_t *permissions,
                          const sl_user_t **out) SL_CLIENT_WUR;
int sl_client_delete_user(sl_client_t *client, sl_id_t user) SL_CLIENT_WUR;
/* new_username NULL: unchanged; status 0: unchanged. */
int sl_client_update_user(sl_client_t *client, sl_id_t user, const char *new_username,
                          uint8_t status) SL_CLIENT_WUR;
/* permissions NULL clears the user's set. */
int sl_client_update_permissions(sl_client_t *client, sl_id_t user,
                                 const sl_permission_set_t *permissions) SL_CLIENT_WUR;
int sl_client_change_password(sl_client_t *client, sl_id_t user, const char *current_password,
                              const char *new_password) SL_CLIENT_WUR;

/* --- personal access tokens ------------------------------------------------------ */

typedef struct sl_token {
    const char *name;
    uint64_t expiry_at_us; /* 0: never expires */
} sl_token_t;

/* The caller's own tokens. */
int sl_client_get_tokens(sl_client_t *client, const sl_token_t **items,
                         uint32_t *count) SL_CLIENT_WUR;
/* expiry_us is a duration (0 or UINT64_MAX: never expires). *token is the
 * raw token; the server shows it only this once. */
int sl_client_create_token(sl_client_t *client, const char *name, uint64_t expiry_us,
                           const char **token) SL_CLIENT_WUR;
int sl_client_delete_token(sl_client_t *client, const char *name) SL_CLIENT_WUR;

/* --- streams ------------------------------------------------------------------- */

typedef struct sl_topic sl_topic_t;

typedef struct sl_stream {
    uint32_t id;
    uint64_t created_at_us;
    uint32_t topics_count;
    uint64_t size_bytes;
    uint64_t messages_count;
    const char *name;
    /* get_stream: topics_count topics (without partitions). NULL in
     * get_streams and create_stream. */
    const sl_topic_t *topics;
} sl_stream_t;

int sl_client_get_stream(sl_client_t *client, sl_id_t stream,
                         const sl_stream_t **out) SL_CLIENT_WUR;
int sl_client_get_streams(sl_client_t *client, const sl_stream_t **items,
                          uint32_t *count) SL_CLIENT_WUR;
/* out may be NULL. */
int sl_client_create_stream(sl_client_t *client, const char *name,
                            const sl_stream_t **out) SL_CLIENT_WUR;
int sl_client_update_stream(sl_client_t *client, sl_id_t stream, const char *name) SL_CLIENT_WUR;
int sl_client_delete_stream(sl_client_t *client, sl_id_t stream) SL_CLIENT_WUR;
int sl_client_purge_stream(sl_client_t *client, sl_id_t stream) SL_CLIENT_WUR;

/* --- topics ------------------------------------------------------------------- */

/* Bits of sl_topic_options_t.set, one per topic option key (options.md 4). */
enum {
    SL_TOPIC_OPT_COMPRESSION = 1u << 0,                       /* compression_algorithm */
    SL_TOPIC_OPT_MESSAGE_EXPIRY = 1u << 1,                    /* message_expiry */
    SL_TOPIC_OPT_MAX_TOPIC_SIZE = 1u << 2,                    /* max_topic_size */
    SL_TOPIC_OPT_SEGMENT_SIZE = 1u << 3,                      /* segment_size (create only) */
    SL_TOPIC_OPT_ENFORCE_FSYNC = 1u << 4,                     /* enforce_fsync (create only) */
    SL_TOPIC_OPT_MESSAGES_REQUIRED_TO_SAVE = 1u << 5,         /* create only */
    SL_TOPIC_OPT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE = 1u << 6, /* create only */
    SL_TOPIC_OPT_PREALLOCATE_SEGMENTS = 1u << 7,              /* create only */
};

enum {
    SL_TOPIC_COMPRESSION_NONE = 1,
    SL_TOPIC_COMPRESSION_GZIP = 2,
};

/* One option entry as it travels: a String key and a typed value. */
typedef struct sl_option {
    const char *key;
    uint8_t kind;         /* see sl_option_info_t */
    const uint8_t *value; /* value_len bytes; in results also NUL-terminated */
    uint32_t value_len;   /* 1..255 */
} sl_option_t;

/* Topic options. In requests only the fields whose bit is in `set` are
 * sent, in the canonical kind and sorted by key; `extra` entries follow as
 * given (for keys or value forms this struct does not cover, such as the
 * String "7 days"). The server validates everything (4041, 4042, 1019).
 * In results every field holds the topic's effective value and `set` says
 * which ones the client chose explicitly; extra is NULL. */
typedef struct sl_topic_options {
    uint32_t set;               /* SL_TOPIC_OPT_* */
    uint8_t compression;        /* SL_TOPIC_COMPRESSION_* */
    uint64_t message_expiry_us; /* UINT64_MAX never; 0 server default */
    uint64_t max_topic_size;    /* bytes; UINT64_MAX unlimited; 0 server default */
    uint64_t segment_size;      /* bytes */
    bool enforce_fsync;
    uint32_t messages_required_to_save;
    uint64_t size_of_messages_required_to_save; /* bytes */
    bool preallocate_segments;
    uint32_t extra_count;
    const sl_option_t *extra;
} sl_topic_options_t;

typedef struct sl_partition {
    uint32_t id;
    uint64_t created_at_us;
    uint32_t segments_count;
    uint64_t current_offset;
    uint64_t size_bytes;
    uint64_t messages_count;
} sl_partition_t;

struct sl_topic {
    uint32_t id;
    uint64_t created_at_us;
    uint32_t partitions_count;
    uint64_t message_expiry_us; /* UINT64_MAX: never */
    uint8_t compression;        /* SL_TOPIC_COMPRESSION_* */
    uint64_t max_topic_size;    /* UINT64_MAX: unlimited */
    uint64_t size_bytes;
    uint64_t messages_count;
    const char *name;
    sl_topic_options_t settings; /* resolved from the two blocks below */
    uint32_t options_count;      /* the explicit block as stored */
    const sl_option_t *options;
    uint32_t derived_options_count; /* the server-filled block */
    const sl_option_t *derived_options;
    /* get_topic / create_topic: partitions_count partitions. NULL in
     * get_topics and inside sl_stream_t. */
    const sl_partition_t *partitions;
};

int sl_client_get_topic(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                        const sl_topic_t **out) SL_CLIENT_WUR;
int sl_client_get_topics(sl_client_t *client, sl_id_t stream, const sl_topic_t **items,
                         uint32_t *count) SL_CLIENT_WUR;
/* partitions_count 0..1000. options may be NULL (server defaults); out may be
 * NULL. */
int sl_client_create_topic(sl_client_t *client, sl_id_t stream, const char *name,
                           uint32_t partitions_count, const sl_topic_options_t *options,
                           const sl_topic_t **out) SL_CLIENT_WUR;
/* Renames (the current name is fine) and patches compression, message_expiry
 * and max_topic_size. options may be NULL. */
int sl_client_update_topic(sl_client_t *client, sl_id_t stream, sl_id_t topic, const char *name,
                           const sl_topic_options_t *options) SL_CLIENT_WUR;
int sl_client_delete_topic(sl_client_t *client, sl_id_t stream, sl_id_t topic) SL_CLIENT_WUR;
int sl_client_purge_topic(sl_client_t *client, sl_id_t stream, sl_id_t topic) SL_CLIENT_WUR;

/* --- partitions and segments ------------------------------------------------------ */

/* count 1..1000. New partitions get the next ids; delete removes the highest. */
int sl_client_create_partitions(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                uint32_t count) SL_CLIENT_WUR;
int sl_client_delete_partitions(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                uint32_t count) SL_CLIENT_WUR;
/* Deletes the segments_count oldest sealed segments of one partition. */
int sl_client_delete_segments(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                              uint32_t partition_id, uint32_t segments_count) SL_CLIENT_WUR;

/* --- consumer groups ----------------------------------------------------------- */

typedef struct sl_consumer_group_member {
    uint32_t id;
    uint32_t partitions_count;
    const uint32_t *partitions;
} sl_consumer_group_member_t;

typedef struct sl_consumer_group {
    uint32_t id;
    uint32_t partitions_count; /* the topic's */
    uint32_t members_count;
    const char *name;
    /* get_consumer_group / create_consumer_group: members_count members.
     * NULL in get_consumer_groups. */
    const sl_consumer_group_member_t *members;
} sl_consumer_group_t;

/* What sync_consumer_group answers: the partitions the caller may poll now. */
typedef struct sl_assignment {
    uint64_t generation;
    uint32_t partitions_count;
    const uint32_t *partitions;
} sl_assignment_t;

int sl_client_get_consumer_group(sl_client_t *client, sl_id_t stream, sl_id_t topic, sl_id_t group,
                                 const sl_consumer_group_t **out) SL_CLIENT_WUR;
int sl_client_get_consumer_groups(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                  const sl_consumer_group_t **items, uint32_t *count) SL_CLIENT_WUR;
/* out may be NULL. */
int sl_client_create_consumer_group(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                    const char *name,
                                    const sl_consumer_group_t **out) SL_CLIENT_WUR;
int sl_client_delete_consumer_group(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                    sl_id_t group) SL_CLIENT_WUR;
/* Join and leave rebalance the group; the assignment comes from sync. */
int sl_client_join_consumer_group(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                  sl_id_t group) SL_CLIENT_WUR;
int sl_client_leave_consumer_group(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                   sl_id_t group) SL_CLIENT_WUR;
/* *out NULL: the caller is not a member (or the group does not resolve). */
int sl_client_sync_consumer_group(sl_client_t *client, sl_id_t stream, sl_id_t topic, sl_id_t group,
                                  const sl_assignment_t **out) SL_CLIENT_WUR;

/* --- raw access (tests, the command-line tool) --------------------------------
 *
 * A reply or eviction frame as received, without interpretation. Header
 * fields are those of framing.md 7 (reply) or 8 (eviction); the spans borrow
 * the client's receive buffer, valid until the next call. */
typedef struct sl_raw_reply {
    bool evicted;            /* an Eviction frame arrived (the session is over) */
    uint8_t eviction_reason; /* 1..15 when evicted */
    uint32_t version_max;    /* reason 14: the server's accepted window */
    uint32_t version_min;
    uint8_t operation; /* reply header: the reply's operation byte */
    uint32_t status;
    uint64_t request;
    uint64_t op;
    uint64_t commit;
    uint64_t timestamp;
    const uint8_t *frame; /* the whole frame, header included */
    size_t frame_len;
    const uint8_t *body; /* frame + 256 */
    size_t body_len;
    /* For convenience: what a typed call would have returned for this frame
     * (0, a status, a result entry, the mapped eviction, or a framing error
     * of the result section). */
    int error;
} sl_raw_reply_t;

/* Sends one request with the given operation byte (and, for operation 2,
 * the command code at header offset 196) and body, numbered and stamped as
 * a typed call of that operation class would be, and returns the reply
 * frame. 0 whenever a well-framed reply or eviction arrived, whatever it
 * says; an eviction still ends the local session. A Register sent this way
 * does not log the client in. */
int sl_client_request_raw(sl_client_t *client, uint8_t operation, uint32_t code, const void *body,
                          size_t body_len, sl_raw_reply_t *out) SL_CLIENT_WUR;
/* Writes len bytes to the connection as they are (no header, no numbering),
 * for protocol tests that need malformed frames. */
int sl_client_send_bytes(sl_client_t *client, const void *bytes, size_t len) SL_CLIENT_WUR;
/* Reads the next frame (reply or eviction) within the request timeout. As
 * everywhere, a timeout closes the connection. */
int sl_client_recv_frame(sl_client_t *client, sl_raw_reply_t *out) SL_CLIENT_WUR;

#ifdef __cplusplus
}
#endif

#endif
