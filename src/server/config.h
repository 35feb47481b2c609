/* The configuration of sluiced: one declarative table of settings (name,
 * type, default, bounds, environment variable, secrecy, description) that the
 * TOML file reader, the environment overrides, validation, --print-config and
 * docs/configuration.md all follow. Precedence, lowest first: the table's
 * defaults, the --config file, IGGY_* environment variables, then
 * --with-default-root-credentials for root credentials the environment left
 * unset. */
#ifndef SL_SERVER_CONFIG_H
#define SL_SERVER_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "base/assert.h"
#include "base/limits.h"
#include "base/log.h"

/* Capacities of the string settings, terminator included. */
#define SL_CONFIG_PATH_CAPACITY         4096u
#define SL_CONFIG_ADDRESS_TEXT_CAPACITY 64u
#define SL_CONFIG_NAME_CAPACITY         256u
#define SL_CONFIG_LIST_CAPACITY         1024u
#define SL_CONFIG_KEY_CAPACITY          128u /* base64 of a 32-byte key is 44 */
/* Configuration files larger than this are refused (toml.h). */
#define SL_CONFIG_FILE_MAX (1u << 20)

/* A listener address: an IP literal and a port. Host names are not resolved:
 * a server binds to an address it owns. */
typedef struct sl_config_address {
    char text[SL_CONFIG_ADDRESS_TEXT_CAPACITY]; /* canonical: "127.0.0.1:8090", "[::1]:8090" */
    char host[INET6_ADDRSTRLEN];                /* "127.0.0.1", "::1" */
    uint16_t port;                              /* 0 = any free port (tests) */
    bool ipv6;
    struct sockaddr_storage sockaddr; /* ready for bind(2) */
    socklen_t sockaddr_len;
} sl_config_address_t;

/* A transport Sluice does not serve: its settings are only reported (for
 * example in GetClusterMetadata, with port 0 when disabled). */
typedef struct sl_config_reported_listener {
    bool enabled;
    sl_config_address_t address;
} sl_config_reported_listener_t;

/* A door's TLS (tls.md 2): the certificate files or, with self_signed and
 * no file at cert_file, an ephemeral certificate. */
typedef struct sl_config_tls {
    bool enabled;
    bool self_signed;
    char cert_file[SL_CONFIG_PATH_CAPACITY];
    char key_file[SL_CONFIG_PATH_CAPACITY];
} sl_config_tls_t;

/* The cluster roster (docs/cluster.md). The reference allows 255 replicas;
 * Sluice's replica plane keeps one link per pair in a fixed array, and a
 * consensus group larger than this gains nothing on the machines it runs on. */
#define SL_CLUSTER_NODES_MAX     16u
#define SL_CLUSTER_NAME_CAPACITY 256u
/* Shared secrets: at least 32 bytes, as the reference demands of CSPRNG
 * output; at most 255 so a copy of the config stays small. */
#define SL_CLUSTER_SECRET_MIN      32u
#define SL_CLUSTER_SECRET_CAPACITY 256u

/* One [[cluster.nodes]] entry. Ports are 0 when not given. */
typedef struct sl_config_cluster_node {
    char name[SL_CLUSTER_NAME_CAPACITY];
    char ip[INET6_ADDRSTRLEN]; /* a literal address the other replicas dial */
    uint32_t replica_id;
    struct {
        uint32_t tcp; /* this node's client port (tcp.address keeps the host) */
        uint32_t quic;
        uint32_t http;
        uint32_t websocket;
        uint32_t tcp_replica; /* the replica plane */
    } ports;
    uint32_t given; /* bit i: row i of sl_config_node_settings came from the file or env */
} sl_config_cluster_node_t;

/* Every effective setting. Plain data, no pointers: copy it freely. Durations
 * are microseconds, sizes bytes. */
typedef struct sl_config {
    struct {
        bool enabled;
        sl_config_address_t address;
        uint32_t max_connections;
        uint64_t login_timeout_us; /* connect (or logout) to a login */
        uint64_t frame_timeout_us; /* a request frame's first byte to its last */
        uint64_t reply_timeout_us; /* a reply's first byte sent to its last */
        sl_config_tls_t tls;
    } tcp;
    sl_config_reported_listener_t quic;
    /* The HTTP API (server/http.h, docs/http.md). Lists are comma-separated. */
    struct {
        bool enabled;
        sl_config_address_t address;
        uint64_t max_request_size; /* bytes of a request body */
        uint32_t max_connections;
        uint64_t idle_timeout_us; /* an HTTP connection idle this long is closed */
        uint32_t sessions;        /* internal binary sessions requests go through */
        bool web_ui;
        struct {
            bool enabled;
            char allowed_methods[SL_CONFIG_LIST_CAPACITY];
            char allowed_origins[SL_CONFIG_LIST_CAPACITY];
            char allowed_headers[SL_CONFIG_LIST_CAPACITY];
            char exposed_headers[SL_CONFIG_LIST_CAPACITY];
            bool allow_credentials;
            bool allow_private_network;
        } cors;
        struct {
            char algorithm[8];
            char issuer[SL_CONFIG_NAME_CAPACITY];
            char audience[SL_CONFIG_NAME_CAPACITY];
            char valid_issuers[SL_CONFIG_LIST_CAPACITY];
            char valid_audiences[SL_CONFIG_LIST_CAPACITY];
            uint64_t access_token_expiry_us;
            uint64_t clock_skew_us;
            uint64_t not_before_us;
            char encoding_secret[SL_CONFIG_NAME_CAPACITY];
            char decoding_secret[SL_CONFIG_NAME_CAPACITY];
            bool use_base64_secret;
        } jwt;
        struct {
            bool enabled;
            char endpoint[SL_CONFIG_NAME_CAPACITY];
        } metrics;
        struct {
            bool enabled; /* HTTPS only: the files are required */
            char cert_file[SL_CONFIG_PATH_CAPACITY];
            char key_file[SL_CONFIG_PATH_CAPACITY];
        } tls;
    } http;
    /* The WebSocket door (server/ws.h, websocket.md). Sizes 0 are unset:
     * see sl_config_ws_message_max and sl_config_ws_frame_max. */
    struct {
        bool enabled;
        sl_config_address_t address;
        uint64_t max_message_size;
        uint64_t max_frame_size;
        bool accept_unmasked_frames;
        sl_config_tls_t tls;
    } websocket;
    struct {
        bool enabled;
        uint64_t interval_us;
    } heartbeat;
    struct {
        uint64_t interval_us; /* the segment cleaner's pass (retention) */
    } data_maintenance;
    struct {
        uint64_t handshake_grace_us;  /* accept to a finished TLS handshake or upgrade */
        uint64_t max_message_size;    /* bytes of a frame, header included */
        uint64_t frame_pool_idle_max; /* idle frame buffers kept (server/frame_pool.h) */
        uint64_t receive_memory_max;  /* request frames being received or handled */
        uint64_t reply_memory_max;    /* reply buffers held by sessions */
    } message_bus;
    struct {
        uint32_t clients_table_max;
        uint32_t checkpoint_interval; /* operations between snapshots */
        uint32_t journal_slots;
    } metadata;
    struct {
        uint32_t max_tokens_per_user;
    } personal_access_token;
    struct {
        uint32_t per_connection_work_max; /* requests per connection per loop turn */
        uint32_t password_hash_threads;   /* Argon2id worker threads */
        uint32_t password_hash_queue_max; /* hash jobs in flight; 58 beyond */
    } server;
    /* OpenTelemetry export (server/otel.h). transport is "grpc" or "http". */
    struct {
        bool enabled;
        char service_name[SL_OTEL_SERVICE_NAME_CAPACITY];
        struct {
            char transport[8];
            char endpoint[SL_OTEL_ENDPOINT_CAPACITY];
        } logs;
        struct {
            char transport[8];
            char endpoint[SL_OTEL_ENDPOINT_CAPACITY];
            uint32_t sample_ppm; /* requests traced, in parts per million */
        } traces;
    } telemetry;
    struct {
        char path[SL_CONFIG_PATH_CAPACITY];
        bool group_access; /* group may read: 0640 / 0750 instead of 0600 / 0700 */
        struct {
            sl_log_level_t level;
            uint32_t repeat_burst;     /* lines per call site and window; 0: no limit */
            uint64_t repeat_window_us; /* the window of repeat_burst */
        } logging;
        struct {
            bool validate_checksum;
            uint64_t journal_memory_max; /* unflushed journals in all (store/partition.h) */
        } partition;
        struct {
            uint32_t shards; /* 0 = one per online core (sl_config_shard_count) */
        } sharding;
        /* At-rest encryption (docs/security.md): keys are base64 of 32 bytes, checked by
         * sl_config_validate; previous_key only opens data written before a rotation. */
        struct {
            bool enabled;
            char key[SL_CONFIG_KEY_CAPACITY];
            char previous_key[SL_CONFIG_KEY_CAPACITY];
            uint64_t tail_cache_max; /* bytes of the plaintext tail (server/tail_cache.h) */
        } encryption;
    } system;
    struct {
        bool enabled;
        char name[SL_CLUSTER_NAME_CAPACITY];
        struct {
            bool enabled;
            char shared_secret[SL_CLUSTER_SECRET_CAPACITY];
            char previous_shared_secret[SL_CLUSTER_SECRET_CAPACITY]; /* rotation; "" = none */
        } auth;
        uint32_t nodes_count; /* [[cluster.nodes]] entries given */
        sl_config_cluster_node_t nodes[SL_CLUSTER_NODES_MAX];
        /* The metadata group's timing (cluster.md 11). */
        uint64_t heartbeat_timeout_us;
        uint64_t commit_broadcast_interval_us;
    } cluster;
    /* Root credentials, only from the environment or the flag. Both empty =
     * not given: at first start the root user is "iggy" with a random
     * password. Both set = used when the root user is first created. */
    struct {
        char username[SL_USERNAME_LEN_MAX + 1];
        char password[SL_PASSWORD_LEN_MAX + 1];
    } root;
    /* The --config path given, "" without one. Not a setting. */
    char config_path[SL_CONFIG_PATH_CAPACITY];
    /* --replica-id N: which roster entry this process is. Not a setting. */
    bool replica_id_given;
    uint32_t replica_id;
    /* --format-cluster: a node without a consensus state record formats one
     * (docs/cluster.md, "Formatting"). Not a setting. */
    bool format_cluster;
} sl_config_t;

typedef enum sl_setting_type {
    SL_SETTING_BOOL = 1,  /* true / false */
    SL_SETTING_U32,       /* integer */
    SL_SETTING_U64,       /* integer */
    SL_SETTING_STRING,    /* "text"; bounds are byte lengths */
    SL_SETTING_DURATION,  /* "30 s", "1h 30m", "500 ms"; stored in microseconds */
    SL_SETTING_BYTES,     /* "64 MiB", "1GB", 1048576 */
    SL_SETTING_LOG_LEVEL, /* "error" .. "trace" */
    SL_SETTING_ADDRESS,   /* "127.0.0.1:8090", "[::1]:8090" */
    SL_SETTING_RATIO,     /* "0.01": 0..1, six decimals at most; stored in parts per million */
} sl_setting_type_t;

enum sl_setting_flag {
    SL_SETTING_SECRET = 1u << 0,   /* printed as "<hidden>" */
    SL_SETTING_ENV_ONLY = 1u << 1, /* refused in the file: environment (or a flag) only */
    SL_SETTING_OPTIONAL = 1u << 2, /* a string that may be empty (= not given), bounds aside */
    SL_SETTING_REQUIRED = 1u << 3, /* a [[cluster.nodes]] row every entry must give */
};

/* One row of the settings table. */
typedef struct sl_setting {
    const char *name; /* dotted TOML name, Iggy's where one exists: "tcp.address" */
    sl_setting_type_t type;
    size_t offset;            /* of the field in sl_config_t */
    size_t size;              /* of that field (capacity for strings) */
    const char *default_text; /* the default, written as in the environment */
    uint64_t min;             /* numbers: value bounds (µs, bytes); strings: byte length */
    uint64_t max;
    const char *env; /* IGGY_<NAME upper-cased, dots as underscores> */
    unsigned flags;
    const char *description; /* one line, for --print-config and the docs */
} sl_setting_t;

/* The table, in print order (rows of one TOML table are adjacent). Static. */
const sl_setting_t *sl_config_settings(size_t *count);
/* The row with that dotted name, or NULL. */
const sl_setting_t *sl_config_setting_find(const char *name);

/* The rows of one [[cluster.nodes]] entry: names below "cluster.nodes"
 * ("cluster.nodes.ports.tcp"), offsets into sl_config_cluster_node_t, and
 * environment variables with "<i>" standing for the entry's index
 * (IGGY_CLUSTER_NODES_<i>_PORTS_TCP). Static. */
const sl_setting_t *sl_config_node_settings(size_t *count);
/* This process's roster entry (--replica-id), or NULL when clustering is
 * off. Valid after sl_config_validate succeeded. */
const sl_config_cluster_node_t *sl_config_cluster_self(const sl_config_t *cfg);

/* Fills cfg with every default of the table. */
void sl_config_defaults(sl_config_t *cfg);

/* The whole start-up path: defaults, then the flags of argv (--config PATH,
 * --with-default-root-credentials, --print-config, --help, --version), the
 * file, the environment, and validation. In cluster mode the client
 * listener's port becomes the roster entry's ports.tcp. --help, --version and --print-config
 * write to out (stdout when NULL) and set *exit_now: the caller exits 0.
 * Returns 0 or -SL_ERR_INVALID_CONFIGURATION with a one-paragraph message in
 * err naming the file and line, the environment variable or the flag (usage
 * errors include the usage text). */
SL_WUR int sl_config_load(sl_config_t *cfg, int argc, char **argv, FILE *out, char *err,
                          size_t err_len, bool *exit_now);

/* The steps of sl_config_load, for tests and tools. file_name only labels
 * errors ("sluiced.toml:12:9: ..."). */
SL_WUR int sl_config_apply_toml(sl_config_t *cfg, const char *text, size_t len,
                                const char *file_name, char *err, size_t err_len);
SL_WUR int sl_config_apply_file(sl_config_t *cfg, const char *path, char *err, size_t err_len);
/* Reads every row's environment variable (getenv); unset variables change nothing. */
SL_WUR int sl_config_apply_env(sl_config_t *cfg, char *err, size_t err_len);
/* Sets one setting from text as the environment would write it. */
SL_WUR int sl_config_set(sl_config_t *cfg, const sl_setting_t *row, const char *text, char *err,
                         size_t err_len);
/* Rules between settings and the root-credential rules of defaults.md 2. */
SL_WUR int sl_config_validate(const sl_config_t *cfg, char *err, size_t err_len);

/* Prints every setting as TOML that sl_config_apply_toml reads back: secrets
 * as "<hidden>", environment-only rows as comments. */
void sl_config_print(FILE *f, const sl_config_t *cfg);
/* One setting's value as TOML ("true", "8192", "\"30 s\""). Secrets read
 * "<hidden>" unless reveal. Returns the length, truncating like snprintf. */
int sl_config_format(const sl_config_t *cfg, const sl_setting_t *row, bool reveal, char *buf,
                     size_t len);

/* Shards to run: system.sharding.shards, or the online cores (at most 64)
 * when it is 0. */
uint32_t sl_config_shard_count(const sl_config_t *cfg);
/* The WebSocket door's effective limits (websocket.md 3): the message limit
 * is websocket.max_message_size or, unset, message_bus.max_message_size;
 * the frame limit websocket.max_frame_size or, unset, 16 MiB, never above
 * the message limit. */
uint64_t sl_config_ws_message_max(const sl_config_t *cfg);
uint64_t sl_config_ws_frame_max(const sl_config_t *cfg);
/* True when root credentials were given (environment or flag). */
bool sl_config_has_root_credentials(const sl_config_t *cfg);

/* Value parsers shared by the file, the environment and the defaults. Each
 * reads the whole text and returns 0, or -SL_ERR_INVALID_CONFIGURATION with
 * *why pointing at a static explanation. */
SL_WUR int sl_config_parse_duration_us(const char *text, size_t len, uint64_t *out,
                                       const char **why);
SL_WUR int sl_config_parse_byte_size(const char *text, size_t len, uint64_t *out, const char **why);
SL_WUR int sl_parse_address(const char *text, size_t len, sl_config_address_t *out,
                            const char **why);
/* "0", "1", "0.25", "0.000001": a decimal ratio 0..1, into parts per million. */
SL_WUR int sl_config_parse_ratio_ppm(const char *text, size_t len, uint32_t *out, const char **why);
/* Writers for the forms above: "1 h 30 m", "64 MiB", "0.01". Return like snprintf. */
int sl_format_duration_us(uint64_t us, char *buf, size_t len);
int sl_format_byte_size(uint64_t bytes, char *buf, size_t len);
int sl_format_ratio_ppm(uint32_t ppm, char *buf, size_t len);

#endif
