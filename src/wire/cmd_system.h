/* Codecs of the system commands (shared/protocol/commands.md 2.6 and 3):
 * Ping, GetStats, GetSnapshot, GetClusterMetadata, DescribeOptions, GetMe,
 * GetClient and GetClients. The functions follow wire/codec.h.
 *
 * Decoded spans borrow the decoded buffer (request body or reply payload);
 * arrays in decoded replies live in the caller's arena. Both stay valid as
 * long as those do. */
#ifndef SL_WIRE_CMD_SYSTEM_H
#define SL_WIRE_CMD_SYSTEM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "wire/codec.h"

/* --- 1 Ping --------------------------------------------------------------- */

SL_EMPTY_REQUEST(ping)
SL_EMPTY_REPLY(ping)

/* --- 10 GetStats ---------------------------------------------------------- */

SL_EMPTY_REQUEST(get_stats)

/* Size of the fixed numeric part that starts the Stats reply. */
#define SL_STATS_NUMERIC_SIZE 108u
/* One cache metrics entry: 3 x u32, 2 x u64, f32. */
#define SL_CACHE_METRIC_SIZE 32u

typedef struct sl_cache_metric {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t partition_id;
    uint64_t hits;
    uint64_t misses;
    float hit_ratio;
} sl_cache_metric_t;

typedef struct sl_get_stats_reply {
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
    sl_span_t hostname; /* Str32 strings, UTF-8 */
    sl_span_t os_name;
    sl_span_t os_version;
    sl_span_t kernel_version;
    sl_span_t server_version;
    uint32_t server_semver; /* 0.9.0 -> 9000; 0 unknown */
    uint32_t cache_metrics_count;
    const sl_cache_metric_t *cache_metrics;
    uint32_t threads_count;
    uint64_t free_disk_space;
    uint64_t total_disk_space;
} sl_get_stats_reply_t;

int sl_get_stats_reply_decode(sl_span_t payload, sl_arena_t *arena,
                              sl_get_stats_reply_t *out) SL_WUR;
int sl_get_stats_reply_encode(sl_buf_t *b, const sl_get_stats_reply_t *in) SL_WUR;

/* --- 11 GetSnapshot ------------------------------------------------------- */

typedef enum sl_snapshot_compression {
    SL_SNAPSHOT_STORED = 1,
    SL_SNAPSHOT_DEFLATED = 2,
    SL_SNAPSHOT_BZIP2 = 3,
    SL_SNAPSHOT_ZSTD = 4,
    SL_SNAPSHOT_LZMA = 5,
    SL_SNAPSHOT_XZ = 6,
} sl_snapshot_compression_t;

typedef enum sl_snapshot_type {
    SL_SNAPSHOT_FILESYSTEM_OVERVIEW = 1,
    SL_SNAPSHOT_PROCESS_LIST = 2,
    SL_SNAPSHOT_RESOURCE_USAGE = 3,
    SL_SNAPSHOT_TEST = 4,
    SL_SNAPSHOT_SERVER_LOGS = 5,
    SL_SNAPSHOT_SERVER_CONFIG = 6,
    SL_SNAPSHOT_ALL = 100, /* only alone */
} sl_snapshot_type_t;

typedef struct sl_get_snapshot_request {
    uint8_t compression; /* sl_snapshot_compression_t */
    /* types.len codes (sl_snapshot_type_t), one byte each, at most 255.
     * Decode borrows the body. An empty list decodes (the reference's
     * decoder does not refuse it). */
    sl_span_t types;
} sl_get_snapshot_request_t;

/* -SL_ERR_INVALID_COMMAND for a truncated body, an unknown compression or
 * type code, or All together with any other entry. Trailing bytes ignored. */
int sl_get_snapshot_request_decode(sl_span_t body, sl_get_snapshot_request_t *out) SL_WUR;
int sl_get_snapshot_request_encode(sl_buf_t *b, const sl_get_snapshot_request_t *in) SL_WUR;

/* The reply is the raw bytes of a ZIP archive; nothing else. */
typedef struct sl_get_snapshot_reply {
    sl_span_t archive;
} sl_get_snapshot_reply_t;

int sl_get_snapshot_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                 sl_get_snapshot_reply_t *out) SL_WUR;
int sl_get_snapshot_reply_encode(sl_buf_t *b, const sl_get_snapshot_reply_t *in) SL_WUR;

/* --- 12 GetClusterMetadata ------------------------------------------------ */

SL_EMPTY_REQUEST(get_cluster_metadata)

typedef enum sl_node_role {
    SL_NODE_LEADER = 0,
    SL_NODE_FOLLOWER = 1,
} sl_node_role_t;

/* 5 (Unknown) exists in the reference's enum but is not a wire value. */
typedef enum sl_node_status {
    SL_NODE_HEALTHY = 0,
    SL_NODE_STARTING = 1,
    SL_NODE_STOPPING = 2,
    SL_NODE_UNREACHABLE = 3,
    SL_NODE_MAINTENANCE = 4,
} sl_node_status_t;

typedef struct sl_cluster_node {
    sl_span_t name; /* Str32 */
    sl_span_t ip;   /* Str32: the address text a client dials */
    uint16_t tcp_port;
    uint16_t quic_port;
    uint16_t http_port;
    uint16_t websocket_port;
    uint8_t role;   /* sl_node_role_t */
    uint8_t status; /* sl_node_status_t */
} sl_cluster_node_t;

typedef struct sl_get_cluster_metadata_reply {
    sl_span_t name; /* Str32 */
    uint32_t count;
    const sl_cluster_node_t *items;
} sl_get_cluster_metadata_reply_t;

/* Refuses a role other than 0/1 or a status other than 0..4, as both SDKs do. */
int sl_get_cluster_metadata_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                         sl_get_cluster_metadata_reply_t *out) SL_WUR;
int sl_get_cluster_metadata_reply_encode(sl_buf_t *b,
                                         const sl_get_cluster_metadata_reply_t *in) SL_WUR;

/* --- 13 DescribeOptions --------------------------------------------------- */

typedef enum sl_option_scope {
    SL_OPTION_SCOPE_TOPIC = 1,
    SL_OPTION_SCOPE_STREAM = 2,
    SL_OPTION_SCOPE_USER = 3,
} sl_option_scope_t;

typedef struct sl_describe_options_request {
    uint8_t scope; /* sl_option_scope_t */
} sl_describe_options_request_t;

/* -SL_ERR_INVALID_COMMAND for a missing byte or a scope outside 1..3. */
int sl_describe_options_request_decode(sl_span_t body, sl_describe_options_request_t *out) SL_WUR;
int sl_describe_options_request_encode(sl_buf_t *b, const sl_describe_options_request_t *in) SL_WUR;

typedef struct sl_option_descriptor {
    sl_span_t key;           /* Name */
    uint8_t kind;            /* canonical kind code (wire/tlv.h), never 0 */
    sl_span_t default_value; /* in the kind's encoding; empty = no default */
    sl_span_t description;   /* UTF-8, free text */
} sl_option_descriptor_t;

typedef struct sl_describe_options_reply {
    uint32_t count;
    const sl_option_descriptor_t *items;
} sl_describe_options_reply_t;

/* Decode checks the structure, the key Name, kind != 0 and the description's
 * UTF-8. Encode also refuses a non-empty default whose length is not the
 * width of a fixed-width kind. */
int sl_describe_options_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                     sl_describe_options_reply_t *out) SL_WUR;
int sl_describe_options_reply_encode(sl_buf_t *b, const sl_describe_options_reply_t *in) SL_WUR;

/* --- ClientHeader / ClientDetails (commands.md 2.6) --------------------------- */

typedef enum sl_transport {
    SL_TRANSPORT_TCP = 1,
    SL_TRANSPORT_QUIC = 2,
    SL_TRANSPORT_HTTP = 3, /* defined, never reported for a binary connection */
    SL_TRANSPORT_WEBSOCKET = 4,
} sl_transport_t;

/* user_id of a connection that has not logged in. */
#define SL_CLIENT_NO_USER 0xFFFFFFFFu
/* ClientHeader without the address text; each group entry is 12 bytes. */
#define SL_CLIENT_HEADER_MIN_SIZE 17u
#define SL_CLIENT_GROUP_SIZE      12u

typedef struct sl_client_group {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t group_id;
} sl_client_group_t;

typedef struct sl_client_header {
    uint32_t client_id; /* the server's connection number */
    uint32_t user_id;   /* SL_CLIENT_NO_USER before login */
    uint8_t transport;  /* sl_transport_t, 1..4 */
    sl_span_t address;  /* Str32 "ip:port" */
    uint32_t groups_count;
} sl_client_header_t;

/* The header followed by header.groups_count group entries. */
typedef struct sl_client_details {
    sl_client_header_t header;
    const sl_client_group_t *groups;
} sl_client_details_t;

/* --- 20 GetMe ------------------------------------------------------------- */

SL_EMPTY_REQUEST(get_me)

typedef struct sl_get_me_reply {
    sl_client_details_t client;
} sl_get_me_reply_t;

int sl_get_me_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_get_me_reply_t *out) SL_WUR;
int sl_get_me_reply_encode(sl_buf_t *b, const sl_get_me_reply_t *in) SL_WUR;

/* --- 21 GetClient --------------------------------------------------------- */

typedef struct sl_get_client_request {
    uint32_t client_id;
    /* Decode only: the body was shorter than 4 bytes. The reference then
     * answers as for an unknown connection (empty body), not with status 3,
     * so decode succeeds and the server must treat this as "not found". */
    bool undecodable;
} sl_get_client_request_t;

/* Never fails: a short body sets `undecodable`. Trailing bytes ignored. */
int sl_get_client_request_decode(sl_span_t body, sl_get_client_request_t *out) SL_WUR;
int sl_get_client_request_encode(sl_buf_t *b, const sl_get_client_request_t *in) SL_WUR;

typedef struct sl_get_client_reply {
    bool found; /* false: empty payload, no such connection */
    sl_client_details_t client;
} sl_get_client_reply_t;

int sl_get_client_reply_decode(sl_span_t payload, sl_arena_t *arena,
                               sl_get_client_reply_t *out) SL_WUR;
int sl_get_client_reply_encode(sl_buf_t *b, const sl_get_client_reply_t *in) SL_WUR;

/* --- 22 GetClients -------------------------------------------------------- */

SL_EMPTY_REQUEST(get_clients)

/* Concatenated ClientHeaders (no group entries, no count prefix). */
typedef struct sl_get_clients_reply {
    uint32_t count;
    const sl_client_header_t *items;
} sl_get_clients_reply_t;

int sl_get_clients_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                sl_get_clients_reply_t *out) SL_WUR;
int sl_get_clients_reply_encode(sl_buf_t *b, const sl_get_clients_reply_t *in) SL_WUR;

#endif
