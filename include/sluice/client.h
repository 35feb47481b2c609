/* libsluice: the C client library for servers speaking the Apache Iggy binary
 * protocol 0.11.0 over TCP (Sluice's sluiced, or an Iggy server).
 *
 * It covers the session (connect, login, logout, ping), every metadata
 * command (system, users, personal access tokens, streams, topics,
 * partitions, segments, consumer groups), and messages: a batch builder
 * that sends, polling with checksum verification, and consumer offsets.
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
 * client (sl_client_tick and producer or consumer calls that use the client
 * count), or until sl_client_close, whichever comes first. Copy what must
 * live longer. Strings in results are NUL-terminated UTF-8 (a name that
 * contains a NUL byte reads as cut at it). Arguments are borrowed only for
 * the duration of the call: the library keeps no pointer to them (it copies
 * the host of sl_client_connect and, with reconnects on, the credentials of
 * a login). sl_client_session_info fills a struct of plain values.
 *
 * Threads. A client may be used by one thread at a time; it takes no locks
 * and starts no threads (heartbeats and reconnects happen inside calls and
 * sl_client_tick, in the caller's thread). Different clients are
 * independent: one client per thread is the way to use several threads.
 * The library has no global mutable state. The one thread-safe object is a
 * background producer (<sluice/producer.h>), which owns its own client.
 *
 * Connection model. One TCP connection per client, one request in flight
 * (lockstep): each call sends one request and blocks until its reply, an
 * eviction, an error or the request timeout. Sends and polls can also be
 * pipelined (submit now, collect later: "pipelined sends and polls"). The socket stays in blocking
 * mode; every wait is bounded by poll(). TCP_NODELAY is set.
 *
 * Connection care is opt-in through sl_client_options_t (all off by
 * default, so a client behaves exactly as described elsewhere in this
 * header unless asked): reconnecting with exponential backoff and logging in
 * again, bounded replays of transient refusals, and heartbeat pings from
 * sl_client_tick. The rules are listed under "Connection care" below.
 * One thing is on by default: leader settlement (the same section), which
 * adds a GetClusterMetadata after each login.
 *
 * Sessions. sl_client_login registers a fresh random 128-bit client id and
 * stores the session epoch of the reply; later requests carry it. Request
 * numbers follow framing.md 5.2: a counter that is 1 after login, sent and
 * advanced by every operation except Register and NonReplicated reads (which
 * send its current value); the partition operations (send, store and delete
 * offset) advance it too, as framing.md 5.2 recommends, although the Iggy
 * SDKs do not. Those three carry no request checksum. An eviction ends the session: the call
 * returns the mapped error, the client is logged out locally, the connection stays open, and
 * sl_client_login may be called again. Replicated commands without a session return
 * -SL_ERR_UNAUTHENTICATED without sending anything (a server would drop such a request silently).
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
 *   -SL_ERR_INVALID_MESSAGE_CHECKSUM    a polled message whose frame checksum
 *                                       does not match its bytes
 *   -SL_ERR_INVALID_BATCH_CHECKSUM      a polled record whose batch checksum
 *                                       does not match
 *   -SL_ERR_UNAUTHENTICATED             a replicated command without a session
 *                                       (nothing is sent)
 *   -SL_ERR_ERROR                       out of memory, or no randomness
 * A socket failure, an end of stream, a timeout or a reply that breaks
 * framing closes the connection, since the byte stream can no longer be
 * trusted; later calls return -SL_ERR_NOT_CONNECTED (close the client and
 * connect again, or enable reconnects). Server verdicts, a malformed result section, an empty
 * login body, an undecodable payload and a checksum mismatch leave the
 * connection as it was. Argument errors of the message calls are listed
 * with them. */
#ifndef SLUICE_CLIENT_H
#define SLUICE_CLIENT_H

#include <sluice/error.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_CLIENT_WUR __attribute__((warn_unused_result))

typedef struct sl_client sl_client_t;

/* --- connecting ---------------------------------------------------------- */

/* How the frames travel (docs/client.md, "Transports"). */
typedef enum sl_client_transport {
    SL_CLIENT_TCP = 0,       /* the binary protocol on a TCP stream (default port 8090) */
    SL_CLIENT_WEBSOCKET = 1, /* each request one WebSocket binary message (default port 8092);
                              * with tls_enabled: WSS */
} sl_client_transport_t;

/* Whether a TLS client checks the server's certificate. */
typedef enum sl_client_tls_validate {
    SL_CLIENT_TLS_VALIDATE_DEFAULT = 0, /* on */
    SL_CLIENT_TLS_VALIDATE_ON = 1,
    SL_CLIENT_TLS_VALIDATE_OFF = 2, /* accept any certificate: development only */
} sl_client_tls_validate_t;

/* Whether a client moves to the cluster's leader after a login. */
typedef enum sl_client_settle {
    SL_CLIENT_SETTLE_DEFAULT = 0, /* on */
    SL_CLIENT_SETTLE_ON = 1,
    SL_CLIENT_SETTLE_OFF = 2, /* stay on the node dialled */
} sl_client_settle_t;

/* Every field left at 0 (or NULL) takes the default after its comment; a
 * zero-initialised struct (or a NULL pointer) gives a plain TCP client
 * without connection care, with leader settlement on. */
typedef struct sl_client_options {
    uint32_t connect_timeout_ms; /* 0: 5000; bounds each dial, also reconnects */
    uint32_t request_timeout_ms; /* 0: 30000; covers sending and the whole reply */
    uint32_t frame_max;          /* largest frame sent or accepted; 0: 64 MiB, min 4096 */
    const char *sdk_name;        /* reported at login; NULL: "sluice-c" */
    const char *sdk_version;     /* reported at login; NULL: the library version */
    /* Connection care (see "Connection care" below). */
    uint32_t reconnect_attempts;     /* dials per recovery; 0: never reconnect or re-login */
    uint32_t reconnect_delay_ms;     /* backoff before the 2nd dial; 0: 100; doubles per dial */
    uint32_t reconnect_delay_max_ms; /* backoff cap; 0: 5000 */
    uint32_t transient_retries;      /* replays of a 57/58 refusal per call; 0: none */
    uint32_t transient_delay_ms;     /* backoff before the 1st replay; 0: 20; doubles, cap 1000 */
    uint32_t heartbeat_interval_ms;  /* sl_client_tick pings after this much silence; 0: never */
    /* Transport and TLS (the options of Iggy's TcpClientConfig, tls.md 4.1).
     * Strings are copied at connect. */
    sl_client_transport_t transport; /* 0: TCP */
    bool tls_enabled;                /* wrap the connection in TLS (TCP-TLS, or WSS) */
    const char *tls_domain;          /* SNI and host name checked; NULL or "": the host dialled */
    const char *tls_ca_file;         /* PEM trust anchors; NULL: the system's default roots */
    sl_client_tls_validate_t tls_validate_certificate; /* 0: on */
    /* Leader settlement (see "Leader settlement" below). */
    sl_client_settle_t settle_on_leader; /* 0: on */
} sl_client_options_t;

/* Connects to host:port (a name or an IPv4/IPv6 literal). options may be
 * NULL for the defaults; it is copied, and so is host (a reconnect dials
 * the same address). The first connect is one attempt, reconnects or not.
 * On success *out owns the connection until sl_client_close. Nothing is
 * sent: call sl_client_login next. */
int sl_client_connect(const char *host, uint16_t port, const sl_client_options_t *options,
                      sl_client_t **out) SL_CLIENT_WUR;
/* Closes the connection and frees the client and every result it returned,
 * and wipes any remembered credentials. No Logout is sent: the server ends
 * the session when the connection drops. NULL is allowed. */
void sl_client_close(sl_client_t *client);

/* --- connection care -------------------------------------------------------------
 *
 * Reconnect and re-login (reconnect_attempts > 0). After a successful
 * sl_client_login or sl_client_login_token the client keeps a copy of the
 * credentials (or token) in its own memory, wiped by sl_client_logout,
 * sl_client_close, a new login, or a login refusal. Before each request it
 * checks, without blocking, whether the server closed the connection or
 * pushed an eviction while the client was idle; if so, or if an earlier
 * failure closed the connection, it dials host:port again, up to
 * reconnect_attempts times, sleeping between dials with exponential backoff
 * and jitter (the n-th wait lies in [d/2, d] for d = reconnect_delay_ms *
 * 2^(n-1), capped at reconnect_delay_max_ms), then logs in again under a
 * fresh client id and sends the request: it had not been sent, so this is
 * safe for every command. When the connection fails while a request is in
 * flight, its outcome is unknown: reads (operation NonReplicated: pings,
 * gets, polls) and logins are re-issued on a new connection; commands that
 * change state return the transport error, and the next call reconnects.
 * A request refused for a lost session (Eviction 1 NoSession or 7
 * SessionTooLow, which apply nothing; status 40 on a read) is re-issued
 * after a re-login; Eviction 13 StaleClient closes the connection and
 * counts as a failure in flight. At most 2 recoveries happen per call. A
 * failed recovery returns its own error (-SL_ERR_CANNOT_ESTABLISH_CONNECTION,
 * -SL_ERR_INVALID_SERVER_ADDRESS, or the login's refusal). A re-login loses
 * what was bound to the old session: consumer-group memberships (join
 * again; the consumer of <sluice/consumer.h> does) and the request counter.
 * A poll re-issued with auto_commit and sl_poll_next() may skip the
 * messages of the lost reply (the server committed them); poll by offset
 * when that matters. Clients made by sl_client_connect only: there is
 * nothing to dial for a client that was handed a socket.
 *
 * Transient refusals (transient_retries > 0, commands.md 1.7). A result or
 * status 57 TransientNotCommitted (outcome unknown) to a metadata command,
 * DeleteSegments, a login or a logout is replayed byte for byte (same
 * client id, session and request number) on the same connection, so the
 * server's deduplication answers it; 58 TransientNotAccepted (nothing
 * applied) is replayed for every operation, including SendMessages and the
 * consumer-offset writes (57 there is returned: the partition plane does
 * not deduplicate). Replays wait transient_delay_ms, doubling up to 1 s,
 * and stop after transient_retries; the last refusal is then returned.
 *
 * Leader settlement (settle_on_leader, on unless SL_CLIENT_SETTLE_OFF; the
 * Node SDK's rule, commands.md GetClusterMetadata). After every successful
 * login (sl_client_login, sl_client_login_token, and the automatic
 * re-login) the client sends GetClusterMetadata. It stays where it is when
 * the answer is a non-zero status or does not decode, lists one node, names
 * no node that is Leader and Healthy, or names as first such node the one
 * already connected to (the host as given, or the connected peer's
 * address, and the same port). Otherwise it dials that node's ip and port
 * (ports.tcp; ports.websocket for the WebSocket transport), logs in there
 * with the same credentials under a fresh client id, and only then closes
 * the first connection; if the dial or that login fails it stays on the
 * first connection, logged in. It asks again on the new node, at most 3
 * moves per login. Reconnects dial the node it moved to first; when that
 * fails, the next dials go in turn to the other nodes the last answer that
 * listed a cluster named (a leader that died), and the re-login there
 * settles again. A 58
 * TransientNotAccepted to a metadata command, on a connection to a cluster
 * of 2 or more nodes, settles again before the replay (when credentials are
 * remembered: with reconnects on, or with transient_retries and
 * settlement on); after a move the request is sent under the new session.
 * The identity a login returns is that of the node it ends on. Clients
 * handed a socket (no address to compare or dial from) do not settle. The
 * extra request costs one round trip per login.
 *
 * Heartbeat (heartbeat_interval_ms > 0). The library starts no thread: the
 * application calls sl_client_tick regularly (its poll loop, a timer), from
 * the thread that uses the client. The server evicts a consumer-group
 * member that stays silent for 1.2 x its heartbeat interval (36 s by
 * default, lifecycle.md 8), so an interval of 5000 is a good choice. */

/* Keeps the connection alive; cheap when nothing is due. With reconnects
 * enabled, reconnects and logs in again when the connection was lost (as a
 * call would); then, when heartbeat_interval_ms is set and no request went
 * out for that long, sends a Ping. Returns 0, or the error of the reconnect
 * or the ping; -SL_ERR_NOT_CONNECTED when the connection is closed and
 * reconnects are off. Does nothing while a send batch is open. A ping ends
 * the previous call's results, like any call. */
int sl_client_tick(sl_client_t *client) SL_CLIENT_WUR;
/* Closes the connection (if open), dials again (reconnect_attempts dials
 * with backoff, at least one) and logs in again when credentials are
 * remembered. For applications that want to force a fresh connection. */
int sl_client_reconnect(sl_client_t *client) SL_CLIENT_WUR;

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
 * Transient refusals (-SL_ERR_TRANSIENT_NOT_ACCEPTED, _NOT_COMMITTED) are
 * replayed only with transient_retries set; calling login again registers
 * under a new client id. With reconnects enabled the credentials are
 * remembered for re-logins (see "Connection care"); username and password
 * are otherwise only borrowed for the call. */
int sl_client_login(sl_client_t *client, const char *username, const char *password,
                    sl_identity_t *out) SL_CLIENT_WUR;
/* LOGIN_REGISTER_WITH_PAT (code 45) with a personal access token. */
int sl_client_login_token(sl_client_t *client, const char *token, sl_identity_t *out) SL_CLIENT_WUR;
/* LOGOUT (code 39). 0 without sending when not logged in. Forgets the
 * remembered credentials first, so no automatic re-login follows. On a
 * transient failure the session stays bound and the call may be repeated. */
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
    uint64_t reconnects;    /* successful re-dials since sl_client_connect */
    uint64_t relogins;      /* automatic logins after a reconnect or a lost session */
    uint64_t replays;       /* transient refusals replayed */
    uint64_t leader_moves;  /* reconnects to another node named leader (settlement) */
    uint32_t cluster_nodes; /* nodes listed by the last settlement's GetClusterMetadata; 0: none */
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

typedef struct sl_topic_partition {
    uint32_t id;
    uint64_t created_at_us;
    uint32_t segments_count;
    uint64_t current_offset;
    uint64_t size_bytes;
    uint64_t messages_count;
} sl_topic_partition_t;

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
    const sl_topic_partition_t *partitions;
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

/* --- messages: shared types ----------------------------------------------------
 *
 * Messages travel in batch records (messages.md 1): the library builds them
 * when sending and verifies them when polling; callers only see messages. */

/* A 128-bit message id; lo is the low half (sent first on the wire). */
typedef struct sl_msg_id {
    uint64_t lo;
    uint64_t hi;
} sl_msg_id_t;

/* Kinds of user-header keys and values (encodings.md 8). */
enum {
    SL_HEADER_KIND_RAW = 1,
    SL_HEADER_KIND_STRING = 2,
    SL_HEADER_KIND_BOOL = 3,
    SL_HEADER_KIND_INT8 = 4,
    SL_HEADER_KIND_INT16 = 5,
    SL_HEADER_KIND_INT32 = 6,
    SL_HEADER_KIND_INT64 = 7,
    SL_HEADER_KIND_INT128 = 8,
    SL_HEADER_KIND_UINT8 = 9,
    SL_HEADER_KIND_UINT16 = 10,
    SL_HEADER_KIND_UINT32 = 11,
    SL_HEADER_KIND_UINT64 = 12,
    SL_HEADER_KIND_UINT128 = 13,
    SL_HEADER_KIND_FLOAT32 = 14,
    SL_HEADER_KIND_FLOAT64 = 15,
};

/* One typed key or value of a user header.
 *
 * Sending: Raw and String take bytes/len (1..255 bytes; String must be
 * UTF-8); the fixed-width kinds take the matching union member (b, i for
 * Int8..Int64, u for Uint8..Uint64, x128 for Int128/Uint128, f32, f64) and
 * ignore bytes/len; a number that does not fit its kind is refused.
 *
 * Polled (sl_header_next): bytes/len always point at the value as encoded
 * (inside the client's receive buffer, not NUL-terminated), and for the
 * fixed-width kinds the union member holds the decoded number (signed kinds
 * sign-extended into i). Kinds above 15 come through as bytes only. */
typedef struct sl_header_value {
    uint8_t kind; /* SL_HEADER_KIND_* */
    const void *bytes;
    uint32_t len;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        float f32;
        double f64;
        sl_msg_id_t x128; /* two's complement for Int128 */
    };
} sl_header_value_t;

typedef struct sl_header {
    sl_header_value_t key; /* usually a String */
    sl_header_value_t value;
} sl_header_t;

static inline sl_header_value_t sl_hv_raw(const void *bytes, uint32_t len)
{
    sl_header_value_t v = {SL_HEADER_KIND_RAW, bytes, len, {0}};
    return v;
}
static inline sl_header_value_t sl_hv_str(const char *s)
{
    sl_header_value_t v = {SL_HEADER_KIND_STRING, s, s ? (uint32_t)strlen(s) : 0, {0}};
    return v;
}
static inline sl_header_value_t sl_hv_bool(bool b)
{
    sl_header_value_t v = {SL_HEADER_KIND_BOOL, NULL, 0, {0}};
    v.b = b;
    return v;
}
static inline sl_header_value_t sl_hv_i64(int64_t i)
{
    sl_header_value_t v = {SL_HEADER_KIND_INT64, NULL, 0, {0}};
    v.i = i;
    return v;
}
static inline sl_header_value_t sl_hv_u64(uint64_t u)
{
    sl_header_value_t v = {SL_HEADER_KIND_UINT64, NULL, 0, {0}};
    v.u = u;
    return v;
}
static inline sl_header_value_t sl_hv_f64(double f)
{
    sl_header_value_t v = {SL_HEADER_KIND_FLOAT64, NULL, 0, {0}};
    v.f64 = f;
    return v;
}

/* Walks an encoded user-headers block (encodings.md 9), typed. The
 * iterator and the bytes of the headers it yields point into the block,
 * which the caller keeps valid while it iterates (a polled message's block
 * lives until the next call on the client). Pure functions of their
 * arguments: any thread, no client involved. */
typedef struct sl_header_iter {
    const uint8_t *pos;
    size_t left;
} sl_header_iter_t;

/* 0 when the block is well formed: fields tile it in key/value pairs, kinds
 * non-zero, lengths 1..255, and every fixed-width kind has its width. Else
 * -SL_ERR_INVALID_FORMAT, and the iterator yields nothing. An empty block
 * is well formed and has no headers. */
int sl_header_iter_init(sl_header_iter_t *it, const void *block, size_t len) SL_CLIENT_WUR;
/* The next header, or false at the end. */
bool sl_header_next(sl_header_iter_t *it, sl_header_t *out);

/* --- sending messages ------------------------------------------------------------ */

/* How the server picks the partition (encodings.md 5). */
enum {
    SL_SEND_BALANCED = 1,     /* round robin on the server */
    SL_SEND_PARTITION_ID = 2, /* this partition */
    SL_SEND_MESSAGES_KEY = 3, /* XXH32(key) % partitions_count */
};

typedef struct sl_send_partitioning {
    uint8_t kind; /* SL_SEND_* */
    uint32_t partition_id;
    const void *key; /* 1..255 bytes, any content */
    uint32_t key_len;
} sl_send_partitioning_t;

static inline sl_send_partitioning_t sl_partitioning_balanced(void)
{
    sl_send_partitioning_t p = {SL_SEND_BALANCED, 0, NULL, 0};
    return p;
}
static inline sl_send_partitioning_t sl_partitioning_partition(uint32_t partition_id)
{
    sl_send_partitioning_t p = {SL_SEND_PARTITION_ID, partition_id, NULL, 0};
    return p;
}
static inline sl_send_partitioning_t sl_partitioning_messages_key(const void *key, uint32_t len)
{
    sl_send_partitioning_t p = {SL_SEND_MESSAGES_KEY, 0, key, len};
    return p;
}

/* One message to send. Everything is borrowed for the sl_client_send_add
 * call only: the payload and headers are copied into the request then. */
typedef struct sl_send_message {
    sl_msg_id_t id;               /* {0, 0}: a fresh random UUIDv4 */
    uint64_t origin_timestamp_us; /* 0: now (wall clock, microseconds) */
    const void *payload;
    size_t payload_len; /* 0..64 000 000 */
    /* User headers, either typed (headers_count entries) or as an encoded
     * block (for example a polled message's headers, forwarded); not both. */
    const sl_header_t *headers;
    uint32_t headers_count;
    const void *headers_raw;
    size_t headers_raw_len; /* the encoded block: at most 100 000 bytes */
} sl_send_message_t;

/* What the server confirmed for a sent batch (messages.md 3.4). */
typedef struct sl_send_result {
    /* false when the reply carried no confirmation (an empty body or a
     * count of 0: a legacy server, or a retry the server deduplicated). */
    bool confirmed;
    uint32_t stream_id; /* numeric ids of where the batch went */
    uint32_t topic_id;
    uint32_t partition_id;
    uint64_t base_offset;    /* offset of the batch's first message */
    uint32_t messages_count; /* how many messages the request carried */
} sl_send_result_t;

/* The batch builder. A batch is built straight into the client's request
 * buffer: begin writes the SendMessages metadata section, each add appends
 * one frame (the payload is copied once, there), commit fills in the
 * counts, timestamps and checksums and sends the request (operation 160).
 *
 * While a batch is open, results of the previous call stay valid, so the
 * payloads and headers of polled messages can be forwarded without copies.
 * Any other call on the client abandons the open batch (its commit then
 * returns -SL_ERR_INVALID_COMMAND). A refused add leaves the batch as it
 * was, except for an allocation failure (-SL_ERR_ERROR), after which only
 * commit (reporting the error) or a new begin make sense.
 *
 * begin abandons an open batch first, then: -SL_ERR_INVALID_COMMAND when
 * an identifier or the partitioning cannot be encoded (a key of 0 or over
 * 255 bytes, an unknown kind), -SL_ERR_NOT_CONNECTED. */
int sl_client_send_begin(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                         sl_send_partitioning_t partitioning) SL_CLIENT_WUR;
/* Optional: makes room for `bytes` more request bytes at once (48 bytes
 * per message plus payload and headers), so the adds that follow never
 * move the buffer. -SL_ERR_COMMAND_LENGTH_ERROR beyond the frame limit. */
int sl_client_send_reserve(sl_client_t *client, size_t bytes) SL_CLIENT_WUR;
/* Appends one message. Errors: -SL_ERR_INVALID_COMMAND (no open batch, a
 * NULL payload with a length, headers given both ways, a malformed raw
 * block), -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD, -SL_ERR_TOO_BIG_USER_HEADERS,
 * -SL_ERR_INVALID_HEADER_KIND (kind 0 or above 15),
 * -SL_ERR_INVALID_KEY_VALUE_LENGTH (a Raw/String of 0 or over 255 bytes),
 * -SL_ERR_INVALID_HEADER_KEY / _VALUE (invalid UTF-8 String, a number out
 * of its kind's range), -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA (origin
 * timestamps of one batch span more than 2^32-1 us),
 * -SL_ERR_TOO_MANY_MESSAGES, -SL_ERR_COMMAND_LENGTH_ERROR (the request
 * would exceed the frame limit), -SL_ERR_ERROR (no memory or randomness). */
int sl_client_send_add(sl_client_t *client, const sl_send_message_t *message) SL_CLIENT_WUR;
/* Messages in the open batch and the size of its request frame so far,
 * header included (0 and 0 when no batch is open). */
void sl_client_send_pending(const sl_client_t *client, uint32_t *count, size_t *bytes);
/* Sends the open batch and closes it, whatever the outcome. out may be
 * NULL. -SL_ERR_INVALID_MESSAGES_COUNT for an empty batch (nothing sent),
 * -SL_ERR_INVALID_COMMAND when no batch is open; otherwise what the server
 * says (status 20 when the stream, topic or partition does not resolve,
 * 41, 58, or a batch error 3/4027/4039 from a server that reports them).
 * The request number advances (framing.md 5.2). Delivery is at least once:
 * a batch whose reply was lost may have been stored. */
int sl_client_send_commit(sl_client_t *client, sl_send_result_t *out) SL_CLIENT_WUR;
/* Drops the open batch without sending; nothing happens when none is. */
void sl_client_send_abandon(sl_client_t *client);
/* begin, an add per message (count >= 1), commit, with the request space
 * reserved up front. On an add error nothing is sent. */
int sl_client_send_messages(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                            sl_send_partitioning_t partitioning, const sl_send_message_t *messages,
                            uint32_t count, sl_send_result_t *out) SL_CLIENT_WUR;

/* --- polling messages and consumer offsets ----------------------------------------- */

/* Who reads: a single consumer (numeric id, or a name the server hashes)
 * or a consumer group (polls name one of its assigned partitions). */
enum {
    SL_CONSUMER_KIND_SINGLE = 1,
    SL_CONSUMER_KIND_GROUP = 2,
};

typedef struct sl_consumer_ref {
    uint8_t kind; /* SL_CONSUMER_KIND_* */
    sl_id_t id;
} sl_consumer_ref_t;

static inline sl_consumer_ref_t sl_consumer_single(sl_id_t id)
{
    sl_consumer_ref_t c = {SL_CONSUMER_KIND_SINGLE, id};
    return c;
}
static inline sl_consumer_ref_t sl_consumer_in_group(sl_id_t group)
{
    sl_consumer_ref_t c = {SL_CONSUMER_KIND_GROUP, group};
    return c;
}

/* "No partition" for the calls whose partition is optional: a single
 * consumer then reads partition 0; a group poll gets an empty result. */
#define SL_PARTITION_NONE UINT32_MAX

/* Where a poll starts (encodings.md 6). */
enum {
    SL_POLL_OFFSET = 1,    /* value: the first offset */
    SL_POLL_TIMESTAMP = 2, /* value: server append time, us */
    SL_POLL_FIRST = 3,
    SL_POLL_LAST = 4, /* the last `count` messages */
    SL_POLL_NEXT = 5, /* after the consumer's stored offset */
};

typedef struct sl_poll_strategy {
    uint8_t kind; /* SL_POLL_* */
    uint64_t value;
} sl_poll_strategy_t;

static inline sl_poll_strategy_t sl_poll_offset(uint64_t offset)
{
    sl_poll_strategy_t s = {SL_POLL_OFFSET, offset};
    return s;
}
static inline sl_poll_strategy_t sl_poll_timestamp(uint64_t timestamp_us)
{
    sl_poll_strategy_t s = {SL_POLL_TIMESTAMP, timestamp_us};
    return s;
}
static inline sl_poll_strategy_t sl_poll_first(void)
{
    sl_poll_strategy_t s = {SL_POLL_FIRST, 0};
    return s;
}
static inline sl_poll_strategy_t sl_poll_last(void)
{
    sl_poll_strategy_t s = {SL_POLL_LAST, 0};
    return s;
}
static inline sl_poll_strategy_t sl_poll_next(void)
{
    sl_poll_strategy_t s = {SL_POLL_NEXT, 0};
    return s;
}

/* One polled message. The pointers borrow the client's receive buffer
 * (no copies): valid until the next call, like every result. */
typedef struct sl_polled_message {
    uint64_t offset;
    uint64_t timestamp_us;        /* server append time (the batch's base timestamp) */
    uint64_t origin_timestamp_us; /* the producer's */
    sl_msg_id_t id;
    uint64_t checksum; /* the frame checksum, verified */
    const uint8_t *payload;
    size_t payload_len;
    const uint8_t *headers; /* the encoded user headers: see sl_header_iter_init */
    size_t headers_len;
} sl_polled_message_t;

typedef struct sl_polled_messages {
    uint32_t partition_id;
    uint64_t current_offset; /* the partition's newest offset at poll time */
    /* A group poll for a partition the caller does not own (any more): the
     * server answered the re-sync sentinel (partition id 0xFFFFFFFF, no
     * messages). Call sl_client_sync_consumer_group and poll what it
     * assigns. Never set for single consumers by a conforming server. */
    bool resync_required;
    uint32_t count;
    const sl_polled_message_t *messages; /* count messages in offset order; NULL when 0 */
} sl_polled_messages_t;

/* POLL_MESSAGES (code 100). partition: SL_PARTITION_NONE or an id (group
 * consumers must name one). count 0 gives an empty result. auto_commit
 * stores the offset of the last returned message for the consumer.
 * Every record received is checked before anything is returned: layout
 * (-SL_ERR_INVALID_FORMAT), each frame checksum
 * (-SL_ERR_INVALID_MESSAGE_CHECKSUM) and each batch checksum
 * (-SL_ERR_INVALID_BATCH_CHECKSUM); on those errors *out is not written
 * and the connection stays usable. */
int sl_client_poll_messages(sl_client_t *client, sl_consumer_ref_t consumer, sl_id_t stream,
                            sl_id_t topic, uint32_t partition, sl_poll_strategy_t strategy,
                            uint32_t count, bool auto_commit,
                            sl_polled_messages_t *out) SL_CLIENT_WUR;

/* Typed headers of a polled message. */
static inline int sl_polled_message_headers(const sl_polled_message_t *m, sl_header_iter_t *it)
{
    return sl_header_iter_init(it, m->headers, m->headers_len);
}

/* Ack levels of consumer-offset writes (encodings.md 7). */
enum {
    SL_ACK_LEVEL_NONE = 0,   /* applied locally, answered at once */
    SL_ACK_LEVEL_QUORUM = 1, /* replicated first */
};

typedef struct sl_consumer_offset {
    bool found; /* false: no offset stored (or the target does not resolve) */
    uint32_t partition_id;
    uint64_t current_offset; /* the partition's newest offset */
    uint64_t stored_offset;
} sl_consumer_offset_t;

/* GET_CONSUMER_OFFSET (120). partition: SL_PARTITION_NONE reads partition
 * 0. A missing stream, topic or group reads as not found (the server
 * answers that way); a missing partition is -SL_ERR_PARTITION_NOT_FOUND. */
int sl_client_get_consumer_offset(sl_client_t *client, sl_consumer_ref_t consumer, sl_id_t stream,
                                  sl_id_t topic, uint32_t partition,
                                  sl_consumer_offset_t *out) SL_CLIENT_WUR;
/* STORE_CONSUMER_OFFSET (121, operation 161). The partition is required
 * by the server (SL_PARTITION_NONE is sent as absent and answered with
 * -SL_ERR_RESOURCE_NOT_FOUND); an offset above the partition's current one
 * is -SL_ERR_INVALID_OFFSET. ack: SL_ACK_LEVEL_*. */
int sl_client_store_consumer_offset(sl_client_t *client, sl_consumer_ref_t consumer, sl_id_t stream,
                                    sl_id_t topic, uint32_t partition, uint64_t offset,
                                    uint8_t ack) SL_CLIENT_WUR;
/* DELETE_CONSUMER_OFFSET (122, operation 162); nothing stored is
 * -SL_ERR_CONSUMER_OFFSET_NOT_FOUND. */
int sl_client_delete_consumer_offset(sl_client_t *client, sl_consumer_ref_t consumer,
                                     sl_id_t stream, sl_id_t topic, uint32_t partition,
                                     uint8_t ack) SL_CLIENT_WUR;

/* FLUSH_UNSAVED_BUFFER (102). The reference server does not implement it
 * and answers -SL_ERR_FEATURE_UNAVAILABLE; durability is the topic's
 * enforce_fsync option. Offered for servers that do. */
int sl_client_flush_unsaved_buffer(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                   uint32_t partition_id, bool fsync) SL_CLIENT_WUR;

/* --- pipelined sends and polls -----------------------------------------------------
 *
 * The calls above are lockstep: the client builds a request, sends it, and
 * waits for its reply, so the work of building (every frame checksum, the
 * batch checksum, the payload copies, the ids) and of verifying a polled
 * reply adds to every round trip. The calls below split a send or a poll
 * into submit (build and write the request, return once the kernel has it)
 * and collect (read and check the reply of the oldest request in flight),
 * so the next batch can be built, or the last reply verified and read,
 * while the server works on the request in flight. sluiced (and Iggy)
 * answer the requests of one connection in the order they arrived, so the
 * replies are matched to requests by order (framing.md 1).
 *
 * Rules:
 * - At most SL_CLIENT_IN_FLIGHT_MAX requests are in flight, all sends or
 *   all polls (a large request behind a large reply could leave both ends
 *   waiting for the other to read). A send submitted while another is on
 *   the wire is built and numbered at once but written only when the
 *   reply before it has been read (by the collect of that send): written
 *   earlier, its bytes would wait in a full receive window and be pushed
 *   through the loopback stack by the server's reads, which cost sluiced
 *   more CPU than the overlap saves. So two sends are in flight at most:
 *   one on the wire, one built behind it. A submit beyond the limit, or of
 *   the other kind, returns -SL_ERR_INVALID_COMMAND and sends nothing.
 * - Each submit returns a ticket (1, 2, 3... per client); collect returns
 *   the result of the oldest request in flight and its ticket, so every
 *   submitted request is collected exactly once, in submit order, with its
 *   own outcome. Collecting with nothing in flight, or the other kind,
 *   returns -SL_ERR_INVALID_COMMAND.
 * - While a request is in flight every other call on the client that
 *   talks to the server (a lockstep send or poll, a metadata call, a
 *   login, the raw calls, sl_client_reconnect) returns
 *   -SL_ERR_INVALID_COMMAND without sending: collect first.
 *   sl_client_tick does nothing then (the connection is in use) and
 *   returns 0.
 * - The previous call's results stay valid across a submit (the request
 *   is built apart from them), so a poll's messages can be read while the
 *   next poll is in flight; a collect ends them, like any call. (Except
 *   when the submit finds the connection or the session lost and
 *   connection care dials or logs in again first: that ends them. A
 *   chained poll never runs care.)
 * - A server verdict for one request (a status, a result section, an
 *   undecodable payload, a checksum mismatch of a poll) is that request's
 *   collect result; the requests behind it are not affected.
 * - A failure of the connection (socket error, end of stream, timeout, a
 *   reply that breaks framing, an eviction) closes it; the request whose
 *   reply was being read gets that error and every request still in
 *   flight behind it gets -SL_ERR_DISCONNECTED when collected: their
 *   outcome is unknown (a send may have been stored). Nothing is replayed
 *   in the pipe (a replay would reorder the batches): a 57 or 58 refusal
 *   is returned as it came.
 * - Connection care applies when a submit finds nothing in flight: a
 *   connection that was lost is dialled again and the session logged in
 *   again before the request is written, as for a lockstep call. A submit
 *   whose request could not be written returns the error and is not in
 *   flight (no ticket): nothing of it was stored. A held send whose write
 *   fails when its turn comes is collected with -SL_ERR_DISCONNECTED.
 * Request numbers advance per submit exactly as for the lockstep calls.
 */

/* Requests one client keeps in flight at most. */
enum { SL_CLIENT_IN_FLIGHT_MAX = 4 };

/* Requests submitted and not collected yet (those cut by a lost
 * connection included: they still have an outcome to collect). */
uint32_t sl_client_in_flight(const sl_client_t *client);

/* Commits the open batch (sl_client_send_begin, sl_client_send_add) as
 * sl_client_send_commit does, but returns once the request is written
 * (or, behind a send on the wire, built and held: see above), with
 * *ticket. Errors: those of commit that happen before sending
 * (-SL_ERR_INVALID_COMMAND, -SL_ERR_INVALID_MESSAGES_COUNT), the pipe
 * rules above, a failed write (-SL_ERR_DISCONNECTED, -SL_ERR_TASK_TIMEOUT,
 * -SL_ERR_NOT_CONNECTED). The batch is closed whatever the outcome. */
int sl_client_send_submit(sl_client_t *client, uint64_t *ticket) SL_CLIENT_WUR;
/* sl_client_send_messages, submitted: begin, an add per message, submit. */
int sl_client_send_messages_submit(sl_client_t *client, sl_id_t stream, sl_id_t topic,
                                   sl_send_partitioning_t partitioning,
                                   const sl_send_message_t *messages, uint32_t count,
                                   uint64_t *ticket) SL_CLIENT_WUR;
/* The reply to the oldest send in flight: *ticket says which (0 when no
 * send was in flight: -SL_ERR_INVALID_COMMAND), the return value and *out
 * (may be NULL; only written on success) are what sl_client_send_commit
 * would have given. Reading this reply is also what writes the send held
 * behind it. */
int sl_client_send_collect(sl_client_t *client, uint64_t *ticket,
                           sl_send_result_t *out) SL_CLIENT_WUR;

/* sl_client_poll_messages, submitted. */
int sl_client_poll_submit(sl_client_t *client, sl_consumer_ref_t consumer, sl_id_t stream,
                          sl_id_t topic, uint32_t partition, sl_poll_strategy_t strategy,
                          uint32_t count, bool auto_commit, uint64_t *ticket) SL_CLIENT_WUR;
/* The reply to the oldest poll in flight, checked as sl_client_poll_messages
 * checks it; *ticket as for sends. With chain set and a poll by offset
 * that returned messages, the same poll from the offset after them (the
 * first one's offset plus their count: a partition's offsets are dense)
 * is submitted before the reply's checksums are verified,
 * so the server reads the next batch while this one is checked and used;
 * *chained gets its ticket (0 when none was submitted: no messages, not a
 * poll by offset, the pipe full, or the submit failed; a failed chained
 * submit is not this collect's error). *chained may be NULL when chain is
 * false. A reply that fails its checks still leaves the chained poll in
 * flight: collect it (and drop it when the position must not move). */
int sl_client_poll_collect(sl_client_t *client, bool chain, uint64_t *ticket, uint64_t *chained,
                           sl_polled_messages_t *out) SL_CLIENT_WUR;

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
