/* The settings table of sluiced and everything that reads it: value parsers,
 * the TOML file, environment overrides, validation, --print-config and the
 * command line (server/config.h). */
#include "server/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/bytes.h"
#include "server/hash_pool.h"
#include "server/toml.h"

extern char **environ;

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

#define US_PER_MS 1000ull
#define US_PER_S  (1000ull * US_PER_MS)
#define US_PER_M  (60ull * US_PER_S)
#define US_PER_H  (60ull * US_PER_M)
#define US_PER_D  (24ull * US_PER_H)
#define US_PER_W  (7ull * US_PER_D)
#define KIB       1024ull
#define MIB       (1024ull * KIB)
#define GIB       (1024ull * MIB)
#define TIB       (1024ull * GIB)

/* Shards are threads pinned one per core; more than this is a typo. */
#define SHARDS_MAX 64u

#define FIELD(member) offsetof(sl_config_t, member), sizeof(((sl_config_t *)0)->member)

/* clang-format off */
static const sl_setting_t settings[] = {
    {"tcp.enabled", SL_SETTING_BOOL, FIELD(tcp.enabled), "true", 0, 1, "IGGY_TCP_ENABLED", 0,
     "Serve the binary protocol over TCP; the other doors are served beside it, so keep it true."},
    {"tcp.address", SL_SETTING_ADDRESS, FIELD(tcp.address), "127.0.0.1:8090", 0, 0,
     "IGGY_TCP_ADDRESS", 0,
     "Address the TCP listener binds: IPv4 host:port or [IPv6]:port (port 0 = any free port)."},
    {"tcp.max_connections", SL_SETTING_U32, FIELD(tcp.max_connections), "10000", 1, 1000000,
     "IGGY_TCP_MAX_CONNECTIONS", 0,
     "Client connections open at once; a connection beyond it is closed on accept."},
    {"tcp.login_timeout", SL_SETTING_DURATION, FIELD(tcp.login_timeout_us), "10 s", US_PER_S,
     US_PER_H, "IGGY_TCP_LOGIN_TIMEOUT", 0,
     "A connection not logged in this long after it opened (or logged out) is closed."},
    {"tcp.frame_timeout", SL_SETTING_DURATION, FIELD(tcp.frame_timeout_us), "30 s", US_PER_S,
     US_PER_D, "IGGY_TCP_FRAME_TIMEOUT", 0,
     "A request not complete this long after its first byte arrived closes the connection."},
    {"tcp.reply_timeout", SL_SETTING_DURATION, FIELD(tcp.reply_timeout_us), "30 s", US_PER_S,
     US_PER_D, "IGGY_TCP_REPLY_TIMEOUT", 0,
     "A reply the client has not taken whole this long after it was sent closes the connection."},
    {"tcp.tls.enabled", SL_SETTING_BOOL, FIELD(tcp.tls.enabled), "false", 0, 1,
     "IGGY_TCP_TLS_ENABLED", 0,
     "Serve TLS instead of plain TCP on tcp.address (the port then speaks TLS only)."},
    {"tcp.tls.self_signed", SL_SETTING_BOOL, FIELD(tcp.tls.self_signed), "true", 0, 1,
     "IGGY_TCP_TLS_SELF_SIGNED", 0,
     "With no file at cert_file, serve an ephemeral self-signed certificate for localhost; "
     "false: cert_file and key_file are required."},
    {"tcp.tls.cert_file", SL_SETTING_STRING, FIELD(tcp.tls.cert_file), "core/certs/iggy_cert.pem",
     0, SL_CONFIG_PATH_CAPACITY - 1, "IGGY_TCP_TLS_CERT_FILE", SL_SETTING_OPTIONAL,
     "PEM certificate chain, leaf first; relative paths start at the working directory."},
    {"tcp.tls.key_file", SL_SETTING_STRING, FIELD(tcp.tls.key_file), "core/certs/iggy_key.pem", 0,
     SL_CONFIG_PATH_CAPACITY - 1, "IGGY_TCP_TLS_KEY_FILE", SL_SETTING_OPTIONAL,
     "PEM private key (PKCS#8, PKCS#1 or SEC1) of the certificate in cert_file."},
    {"quic.enabled", SL_SETTING_BOOL, FIELD(quic.enabled), "false", 0, 1, "IGGY_QUIC_ENABLED", 0,
     "Reported only (cluster metadata): Sluice does not serve QUIC."},
    {"quic.address", SL_SETTING_ADDRESS, FIELD(quic.address), "127.0.0.1:8080", 0, 0,
     "IGGY_QUIC_ADDRESS", 0, "Reported QUIC address when quic.enabled is true."},
    {"http.enabled", SL_SETTING_BOOL, FIELD(http.enabled), "true", 0, 1, "IGGY_HTTP_ENABLED", 0,
     "Serve Iggy's HTTP API (docs/http.md) and /metrics."},
    {"http.address", SL_SETTING_ADDRESS, FIELD(http.address), "127.0.0.1:3000", 0, 0,
     "IGGY_HTTP_ADDRESS", 0, "Address the HTTP listener binds (port 0 = any free port)."},
    {"http.max_request_size", SL_SETTING_BYTES, FIELD(http.max_request_size), "2 MB", 1024,
     64 * MIB, "IGGY_HTTP_MAX_REQUEST_SIZE", 0,
     "Largest request body; a larger one is answered 413 and the connection closed."},
    {"http.max_connections", SL_SETTING_U32, FIELD(http.max_connections), "256", 1, 10000,
     "IGGY_HTTP_MAX_CONNECTIONS", 0,
     "HTTP connections open at once (one thread each); more are refused on accept."},
    {"http.idle_timeout", SL_SETTING_DURATION, FIELD(http.idle_timeout_us), "30 s", US_PER_S,
     US_PER_H, "IGGY_HTTP_IDLE_TIMEOUT", 0,
     "An HTTP connection that sends nothing for this long (a slow or stalled client) is closed."},
    {"http.sessions", SL_SETTING_U32, FIELD(http.sessions), "8", 1, 256, "IGGY_HTTP_SESSIONS", 0,
     "Internal binary-protocol sessions HTTP requests are served through, one request each "
     "at a time; more requests wait."},
    {"http.web_ui", SL_SETTING_BOOL, FIELD(http.web_ui), "false", 0, 1, "IGGY_HTTP_WEB_UI", 0,
     "Reported only: Sluice does not embed Iggy's web console (run it on its own)."},
    {"http.cors.enabled", SL_SETTING_BOOL, FIELD(http.cors.enabled), "true", 0, 1,
     "IGGY_HTTP_CORS_ENABLED", 0, "Answer CORS preflights and add CORS headers."},
    {"http.cors.allowed_methods", SL_SETTING_STRING, FIELD(http.cors.allowed_methods),
     "GET, POST, PUT, DELETE", 0, SL_CONFIG_LIST_CAPACITY - 1, "IGGY_HTTP_CORS_ALLOWED_METHODS",
     SL_SETTING_OPTIONAL, "Comma-separated methods a cross-origin request may use."},
    {"http.cors.allowed_origins", SL_SETTING_STRING, FIELD(http.cors.allowed_origins), "*", 0,
     SL_CONFIG_LIST_CAPACITY - 1, "IGGY_HTTP_CORS_ALLOWED_ORIGINS", SL_SETTING_OPTIONAL,
     "Comma-separated origins allowed; * first = any; empty = none."},
    {"http.cors.allowed_headers", SL_SETTING_STRING, FIELD(http.cors.allowed_headers),
     "content-type, authorization", 0, SL_CONFIG_LIST_CAPACITY - 1,
     "IGGY_HTTP_CORS_ALLOWED_HEADERS", SL_SETTING_OPTIONAL,
     "Comma-separated request headers a cross-origin request may send."},
    {"http.cors.exposed_headers", SL_SETTING_STRING, FIELD(http.cors.exposed_headers),
     "iggy-view", 0, SL_CONFIG_LIST_CAPACITY - 1, "IGGY_HTTP_CORS_EXPOSED_HEADERS",
     SL_SETTING_OPTIONAL, "Comma-separated response headers a cross-origin caller may read."},
    {"http.cors.allow_credentials", SL_SETTING_BOOL, FIELD(http.cors.allow_credentials), "false",
     0, 1, "IGGY_HTTP_CORS_ALLOW_CREDENTIALS", 0,
     "Send Access-Control-Allow-Credentials; needs explicit origins."},
    {"http.cors.allow_private_network", SL_SETTING_BOOL, FIELD(http.cors.allow_private_network),
     "false", 0, 1, "IGGY_HTTP_CORS_ALLOW_PRIVATE_NETWORK", 0,
     "Answer private-network preflights with Access-Control-Allow-Private-Network."},
    {"http.jwt.algorithm", SL_SETTING_STRING, FIELD(http.jwt.algorithm), "HS256", 5, 5,
     "IGGY_HTTP_JWT_ALGORITHM", 0, "Signature of access tokens: HS256, HS384 or HS512."},
    {"http.jwt.issuer", SL_SETTING_STRING, FIELD(http.jwt.issuer), "iggy.apache.org", 1,
     SL_CONFIG_NAME_CAPACITY - 1, "IGGY_HTTP_JWT_ISSUER", 0, "The iss claim of issued tokens."},
    {"http.jwt.audience", SL_SETTING_STRING, FIELD(http.jwt.audience), "iggy.apache.org", 1,
     SL_CONFIG_NAME_CAPACITY - 1, "IGGY_HTTP_JWT_AUDIENCE", 0, "The aud claim of issued tokens."},
    {"http.jwt.valid_issuers", SL_SETTING_STRING, FIELD(http.jwt.valid_issuers),
     "iggy.apache.org", 1, SL_CONFIG_LIST_CAPACITY - 1, "IGGY_HTTP_JWT_VALID_ISSUERS", 0,
     "Comma-separated iss values a token may carry."},
    {"http.jwt.valid_audiences", SL_SETTING_STRING, FIELD(http.jwt.valid_audiences),
     "iggy.apache.org", 1, SL_CONFIG_LIST_CAPACITY - 1, "IGGY_HTTP_JWT_VALID_AUDIENCES", 0,
     "Comma-separated aud values a token may carry."},
    {"http.jwt.access_token_expiry", SL_SETTING_DURATION, FIELD(http.jwt.access_token_expiry_us),
     "1 h", US_PER_S, 3650 * US_PER_D, "IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY", 0,
     "Lifetime of an access token."},
    {"http.jwt.clock_skew", SL_SETTING_DURATION, FIELD(http.jwt.clock_skew_us), "5 s", 0,
     US_PER_H, "IGGY_HTTP_JWT_CLOCK_SKEW", 0, "Leeway on a token's exp and nbf."},
    {"http.jwt.not_before", SL_SETTING_DURATION, FIELD(http.jwt.not_before_us), "0 s", 0, US_PER_H,
     "IGGY_HTTP_JWT_NOT_BEFORE", 0, "How long after issue a token becomes valid (nbf)."},
    {"http.jwt.encoding_secret", SL_SETTING_STRING, FIELD(http.jwt.encoding_secret), "", 1,
     SL_CONFIG_NAME_CAPACITY - 1, "IGGY_HTTP_JWT_ENCODING_SECRET",
     SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "HMAC key of access tokens; empty: a random key kept in <system.path>/http_jwt_key."},
    {"http.jwt.decoding_secret", SL_SETTING_STRING, FIELD(http.jwt.decoding_secret), "", 1,
     SL_CONFIG_NAME_CAPACITY - 1, "IGGY_HTTP_JWT_DECODING_SECRET",
     SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "Key tokens are verified with; must equal encoding_secret (either alone serves both)."},
    {"http.jwt.use_base64_secret", SL_SETTING_BOOL, FIELD(http.jwt.use_base64_secret), "false", 0,
     1, "IGGY_HTTP_JWT_USE_BASE64_SECRET", 0, "The secrets are base64 of the key bytes."},
    {"http.metrics.enabled", SL_SETTING_BOOL, FIELD(http.metrics.enabled), "true", 0, 1,
     "IGGY_HTTP_METRICS_ENABLED", 0, "Serve Prometheus metrics (docs/metrics.md)."},
    {"http.metrics.endpoint", SL_SETTING_STRING, FIELD(http.metrics.endpoint), "/metrics", 2,
     SL_CONFIG_NAME_CAPACITY - 1, "IGGY_HTTP_METRICS_ENDPOINT", 0,
     "Path of the metrics scrape; starts with /."},
    {"http.tls.enabled", SL_SETTING_BOOL, FIELD(http.tls.enabled), "false", 0, 1,
     "IGGY_HTTP_TLS_ENABLED", 0,
     "Serve the HTTP API over HTTPS only (cert_file and key_file must load)."},
    {"http.tls.cert_file", SL_SETTING_STRING, FIELD(http.tls.cert_file),
     "core/certs/iggy_cert.pem", 0, SL_CONFIG_PATH_CAPACITY - 1, "IGGY_HTTP_TLS_CERT_FILE",
     SL_SETTING_OPTIONAL,
     "PEM certificate chain, leaf first; relative paths start at the working directory."},
    {"http.tls.key_file", SL_SETTING_STRING, FIELD(http.tls.key_file), "core/certs/iggy_key.pem",
     0, SL_CONFIG_PATH_CAPACITY - 1, "IGGY_HTTP_TLS_KEY_FILE", SL_SETTING_OPTIONAL,
     "PEM private key (PKCS#8, PKCS#1 or SEC1) of the certificate in cert_file."},
    {"websocket.enabled", SL_SETTING_BOOL, FIELD(websocket.enabled), "true", 0, 1,
     "IGGY_WEBSOCKET_ENABLED", 0,
     "Serve the binary protocol over WebSocket (each frame one binary message)."},
    {"websocket.address", SL_SETTING_ADDRESS, FIELD(websocket.address), "127.0.0.1:8092", 0, 0,
     "IGGY_WEBSOCKET_ADDRESS", 0, "Address the WebSocket listener binds (port 0 = any free port)."},
    {"websocket.max_message_size", SL_SETTING_BYTES, FIELD(websocket.max_message_size), "0", 0,
     GIB, "IGGY_WEBSOCKET_MAX_MESSAGE_SIZE", 0,
     "Largest message after reassembly; 0: message_bus.max_message_size."},
    {"websocket.max_frame_size", SL_SETTING_BYTES, FIELD(websocket.max_frame_size), "0", 0, GIB,
     "IGGY_WEBSOCKET_MAX_FRAME_SIZE", 0,
     "Largest single WebSocket frame; 0: 16 MiB (at most the message limit)."},
    {"websocket.accept_unmasked_frames", SL_SETTING_BOOL, FIELD(websocket.accept_unmasked_frames),
     "false", 0, 1, "IGGY_WEBSOCKET_ACCEPT_UNMASKED_FRAMES", 0,
     "Accept client frames without a mask (RFC 6455 requires one)."},
    {"websocket.tls.enabled", SL_SETTING_BOOL, FIELD(websocket.tls.enabled), "false", 0, 1,
     "IGGY_WEBSOCKET_TLS_ENABLED", 0,
     "Serve WSS (TLS, then the upgrade) instead of plain WebSocket on websocket.address."},
    {"websocket.tls.self_signed", SL_SETTING_BOOL, FIELD(websocket.tls.self_signed), "true", 0, 1,
     "IGGY_WEBSOCKET_TLS_SELF_SIGNED", 0,
     "With no file at cert_file, serve an ephemeral self-signed certificate for localhost; "
     "false: cert_file and key_file are required."},
    {"websocket.tls.cert_file", SL_SETTING_STRING, FIELD(websocket.tls.cert_file),
     "core/certs/iggy_cert.pem", 0, SL_CONFIG_PATH_CAPACITY - 1, "IGGY_WEBSOCKET_TLS_CERT_FILE",
     SL_SETTING_OPTIONAL,
     "PEM certificate chain, leaf first; relative paths start at the working directory."},
    {"websocket.tls.key_file", SL_SETTING_STRING, FIELD(websocket.tls.key_file),
     "core/certs/iggy_key.pem", 0, SL_CONFIG_PATH_CAPACITY - 1, "IGGY_WEBSOCKET_TLS_KEY_FILE",
     SL_SETTING_OPTIONAL, "PEM private key of the certificate in cert_file."},
    {"heartbeat.enabled", SL_SETTING_BOOL, FIELD(heartbeat.enabled), "true", 0, 1,
     "IGGY_HEARTBEAT_ENABLED", 0,
     "Evict consumer-group members that stay silent longer than 1.2 x heartbeat.interval."},
    {"heartbeat.interval", SL_SETTING_DURATION, FIELD(heartbeat.interval_us), "30 s",
     10 * US_PER_MS, US_PER_D, "IGGY_HEARTBEAT_INTERVAL", 0,
     "How often silent clients are checked; SDKs ping every 5 s."},
    {"data_maintenance.messages.interval", SL_SETTING_DURATION,
     FIELD(data_maintenance.interval_us), "1 m", 100 * US_PER_MS, US_PER_D,
     "IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL", 0,
     "How often the segment cleaner deletes expired segments and those past max_topic_size."},
    {"message_bus.handshake_grace", SL_SETTING_DURATION, FIELD(message_bus.handshake_grace_us),
     "10 s", 100 * US_PER_MS, US_PER_H, "IGGY_MESSAGE_BUS_HANDSHAKE_GRACE", 0,
     "A TLS handshake (or WebSocket upgrade) not finished this long after the accept closes the "
     "connection."},
    {"message_bus.max_message_size", SL_SETTING_BYTES, FIELD(message_bus.max_message_size),
     "64 MiB", MIB, GIB, "IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE", 0,
     "Largest frame (256-byte header included); a larger frame closes the connection."},
    {"message_bus.frame_pool_idle_max", SL_SETTING_BYTES, FIELD(message_bus.frame_pool_idle_max),
     "64 MiB", 0, 64 * GIB, "IGGY_MESSAGE_BUS_FRAME_POOL_IDLE_MAX", 0,
     "Bytes of request-frame buffers kept for reuse while idle; beyond it they are freed."},
    {"message_bus.receive_memory_max", SL_SETTING_BYTES, FIELD(message_bus.receive_memory_max),
     "256 MiB", MIB, 64 * GIB, "IGGY_MESSAGE_BUS_RECEIVE_MEMORY_MAX", 0,
     "Bytes of request frames being received or handled at once; a frame beyond it waits."},
    {"message_bus.reply_memory_max", SL_SETTING_BYTES, FIELD(message_bus.reply_memory_max),
     "256 MiB", MIB, 64 * GIB, "IGGY_MESSAGE_BUS_REPLY_MEMORY_MAX", 0,
     "Bytes of replies held until written; a poll gets what is left, or waits."},
    {"metadata.clients_table_max", SL_SETTING_U32, FIELD(metadata.clients_table_max), "8192",
     SL_CLIENTS_TABLE_MIN, SL_CLIENTS_TABLE_MAX, "IGGY_METADATA_CLIENTS_TABLE_MAX", 0,
     "Client-table slots for request deduplication; when full the oldest client is evicted."},
    {"metadata.checkpoint_interval", SL_SETTING_U32, FIELD(metadata.checkpoint_interval), "1024",
     1, 1048576, "IGGY_METADATA_CHECKPOINT_INTERVAL", 0,
     "Metadata operations between snapshots; at most metadata.journal_slots."},
    {"metadata.journal_slots", SL_SETTING_U32, FIELD(metadata.journal_slots), "1024", 2, 1048576,
     "IGGY_METADATA_JOURNAL_SLOTS", 0,
     "Entries of the metadata journal index kept in memory between snapshots."},
    {"personal_access_token.max_tokens_per_user", SL_SETTING_U32,
     FIELD(personal_access_token.max_tokens_per_user), "100", 1, 100000,
     "IGGY_PERSONAL_ACCESS_TOKEN_MAX_TOKENS_PER_USER", 0,
     "Personal access tokens one user may hold (status 52 beyond it)."},
    {"server.per_connection_work_max", SL_SETTING_U32, FIELD(server.per_connection_work_max), "16",
     1, 1024, "IGGY_SERVER_PER_CONNECTION_WORK_MAX", 0,
     "Requests served for one connection per event-loop turn, so no client starves the rest."},
    {"server.password_hash_threads", SL_SETTING_U32, FIELD(server.password_hash_threads), "1", 1,
     SL_HASH_POOL_THREADS_MAX, "IGGY_SERVER_PASSWORD_HASH_THREADS", 0,
     "Threads that run Argon2id for logins, CreateUser and ChangePassword (19 MiB each)."},
    {"server.password_hash_queue_max", SL_SETTING_U32, FIELD(server.password_hash_queue_max),
     "32", 1, 4096, "IGGY_SERVER_PASSWORD_HASH_QUEUE_MAX", 0,
     "Password checks waiting or running at once; beyond it result 58 (retry) is answered."},
    {"telemetry.enabled", SL_SETTING_BOOL, FIELD(telemetry.enabled), "false", 0, 1,
     "IGGY_TELEMETRY_ENABLED", 0,
     "Export every log line and traces of requests as OpenTelemetry (OTLP) to the endpoints below."},
    {"telemetry.service_name", SL_SETTING_STRING, FIELD(telemetry.service_name), "iggy", 1,
     SL_OTEL_SERVICE_NAME_CAPACITY - 1, "IGGY_TELEMETRY_SERVICE_NAME", 0,
     "The service.name every exported record carries."},
    {"telemetry.logs.transport", SL_SETTING_STRING, FIELD(telemetry.logs.transport), "grpc", 1, 7,
     "IGGY_TELEMETRY_LOGS_TRANSPORT", 0, "How logs are sent: grpc (OTLP/gRPC) or http (OTLP/HTTP, protobuf)."},
    {"telemetry.logs.endpoint", SL_SETTING_STRING, FIELD(telemetry.logs.endpoint),
     "http://localhost:7281/v1/logs", 8, SL_OTEL_ENDPOINT_CAPACITY - 1,
     "IGGY_TELEMETRY_LOGS_ENDPOINT", 0,
     "Collector URL for logs: http:// or https://; http posts to it as given, grpc uses its "
     "host and port."},
    {"telemetry.traces.transport", SL_SETTING_STRING, FIELD(telemetry.traces.transport), "grpc",
     1, 7, "IGGY_TELEMETRY_TRACES_TRANSPORT", 0,
     "How traces are sent: grpc (OTLP/gRPC) or http (OTLP/HTTP, protobuf)."},
    {"telemetry.traces.endpoint", SL_SETTING_STRING, FIELD(telemetry.traces.endpoint),
     "http://localhost:7281/v1/traces", 8, SL_OTEL_ENDPOINT_CAPACITY - 1,
     "IGGY_TELEMETRY_TRACES_ENDPOINT", 0,
     "Collector URL for traces: http:// or https://; http posts to it as given, grpc uses its "
     "host and port."},
    {"telemetry.traces.sample_ratio", SL_SETTING_RATIO, FIELD(telemetry.traces.sample_ppm),
     "0.01", 0, 1000000, "IGGY_TELEMETRY_TRACES_SAMPLE_RATIO", 0,
     "Share of requests traced, 0..1 as a quoted decimal (\"0.01\": one in a hundred)."},
    {"system.path", SL_SETTING_STRING, FIELD(system.path), "local_data", 1,
     SL_CONFIG_PATH_CAPACITY - 1, "IGGY_SYSTEM_PATH", 0,
     "Data directory (streams, metadata); relative paths start at the working directory."},
    {"system.group_access", SL_SETTING_BOOL, FIELD(system.group_access), "false", 0, 1,
     "IGGY_SYSTEM_GROUP_ACCESS", 0,
     "Let the group read the data (files 0640, directories 0750); else owner only (0600, 0700)."},
    {"system.logging.level", SL_SETTING_LOG_LEVEL, FIELD(system.logging.level), "info", 0, 0,
     "IGGY_SYSTEM_LOGGING_LEVEL", 0, "Log level: error, warn, info, debug or trace."},
    {"system.logging.repeat_burst", SL_SETTING_U32, FIELD(system.logging.repeat_burst), "10", 0,
     1000000, "IGGY_SYSTEM_LOGGING_REPEAT_BURST", 0,
     "Lines one place in the code may log per repeat_window once serving; the rest are counted "
     "in one line. 0: no limit."},
    {"system.logging.repeat_window", SL_SETTING_DURATION, FIELD(system.logging.repeat_window_us),
     "10 s", US_PER_S, US_PER_H, "IGGY_SYSTEM_LOGGING_REPEAT_WINDOW", 0,
     "The window of system.logging.repeat_burst."},
    {"system.partition.validate_checksum", SL_SETTING_BOOL,
     FIELD(system.partition.validate_checksum), "true", 0, 1,
     "IGGY_SYSTEM_PARTITION_VALIDATE_CHECKSUM", 0,
     "Verify each stored batch's checksum when it is read back from disk."},
    {"system.partition.journal_memory_max", SL_SETTING_BYTES,
     FIELD(system.partition.journal_memory_max), "128 MiB", MIB, 64 * GIB,
     "IGGY_SYSTEM_PARTITION_JOURNAL_MEMORY_MAX", 0,
     "Memory all partitions' unflushed messages may hold; past it the oldest are flushed early."},
    {"system.sharding.shards", SL_SETTING_U32, FIELD(system.sharding.shards), "0", 0, SHARDS_MAX,
     "IGGY_SYSTEM_SHARDING_SHARDS", 0,
     "Shard threads (one io_uring ring each); 0 = one per online core. Ignored by this build, "
     "which runs one loop thread (a warning is logged when above 1)."},
    {"system.encryption.enabled", SL_SETTING_BOOL, FIELD(system.encryption.enabled), "false", 0,
     1, "IGGY_SYSTEM_ENCRYPTION_ENABLED", 0,
     "Encrypt message payloads and user headers on disk with AES-256-GCM (docs/security.md)."},
    {"system.encryption.key", SL_SETTING_STRING, FIELD(system.encryption.key), "", 1,
     SL_CONFIG_KEY_CAPACITY - 1, "IGGY_SYSTEM_ENCRYPTION_KEY",
     SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "The encryption key: base64 of exactly 32 random bytes; required when enabled."},
    {"system.encryption.previous_key", SL_SETTING_STRING, FIELD(system.encryption.previous_key),
     "", 1, SL_CONFIG_KEY_CAPACITY - 1, "IGGY_SYSTEM_ENCRYPTION_PREVIOUS_KEY",
     SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "During a key rotation: the old key, still accepted for reads; new writes use key."},
    {"system.encryption.tail_cache_max", SL_SETTING_BYTES,
     FIELD(system.encryption.tail_cache_max), "32 MiB", 0, 64 * GIB,
     "IGGY_SYSTEM_ENCRYPTION_TAIL_CACHE_MAX", 0,
     "Memory for the plaintext of the newest sealed batches, so polls of the tail skip the "
     "decryption (docs/security.md); 0 = none."},
    {"cluster.enabled", SL_SETTING_BOOL, FIELD(cluster.enabled), "false", 0, 1,
     "IGGY_CLUSTER_ENABLED", 0,
     "Run as one node of a cluster (docs/cluster.md); --replica-id N picks this node's "
     "[[cluster.nodes]] entry."},
    {"cluster.name", SL_SETTING_STRING, FIELD(cluster.name), "iggy-cluster", 1,
     SL_CLUSTER_NAME_CAPACITY - 1, "IGGY_CLUSTER_NAME", 0,
     "Cluster name, the same on every node; its hash stamps every replica frame."},
    {"cluster.heartbeat_timeout", SL_SETTING_DURATION, FIELD(cluster.heartbeat_timeout_us), "5 s",
     2 * US_PER_S, US_PER_H, "IGGY_CLUSTER_HEARTBEAT_TIMEOUT", 0,
     "A backup that hears no Commit from the primary this long starts a view change; at least "
     "4 x commit_broadcast_interval."},
    {"cluster.commit_broadcast_interval", SL_SETTING_DURATION,
     FIELD(cluster.commit_broadcast_interval_us), "500 ms", 10 * US_PER_MS, 15 * US_PER_M,
     "IGGY_CLUSTER_COMMIT_BROADCAST_INTERVAL", 0,
     "How often the primary sends Commit (the heartbeat), and unanswered prepares are resent."},
    {"cluster.auth.enabled", SL_SETTING_BOOL, FIELD(cluster.auth.enabled), "false", 0, 1,
     "IGGY_CLUSTER_AUTH_ENABLED", 0,
     "Require the keyed replica handshake (a BLAKE3 MAC over the shared secret) on every "
     "replica link."},
    {"cluster.auth.shared_secret", SL_SETTING_STRING, FIELD(cluster.auth.shared_secret), "",
     SL_CLUSTER_SECRET_MIN, SL_CLUSTER_SECRET_CAPACITY - 1, "IGGY_CLUSTER_AUTH_SHARED_SECRET",
     SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "Secret of the replica handshake: at least 32 random bytes, the same on every node."},
    {"cluster.auth.previous_shared_secret", SL_SETTING_STRING,
     FIELD(cluster.auth.previous_shared_secret), "", SL_CLUSTER_SECRET_MIN,
     SL_CLUSTER_SECRET_CAPACITY - 1, "IGGY_CLUSTER_AUTH_PREVIOUS_SHARED_SECRET",
     SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "The retiring secret during a rotation: peers' MACs under it are accepted, ours never use "
     "it."},
    {"root.username", SL_SETTING_STRING, FIELD(root.username), "", SL_USERNAME_LEN_MIN,
     SL_USERNAME_LEN_MAX, "IGGY_ROOT_USERNAME", SL_SETTING_ENV_ONLY | SL_SETTING_OPTIONAL,
     "Root username at first start; set together with IGGY_ROOT_PASSWORD."},
    {"root.password", SL_SETTING_STRING, FIELD(root.password), "", SL_PASSWORD_LEN_MIN,
     SL_PASSWORD_LEN_MAX, "IGGY_ROOT_PASSWORD",
     SL_SETTING_ENV_ONLY | SL_SETTING_OPTIONAL | SL_SETTING_SECRET,
     "Root password at first start; without it a random one goes to <system.path>/root_password."},
};
/* clang-format on */

#define NODE_FIELD(member)                                                                         \
    offsetof(sl_config_cluster_node_t, member), sizeof(((sl_config_cluster_node_t *)0)->member)

/* One [[cluster.nodes]] entry (sl_config_node_settings). Ports are numbers
 * whose 0 means "not given"; validation refuses 0 where a port is needed. */
/* clang-format off */
static const sl_setting_t node_settings[] = {
    {"cluster.nodes.name", SL_SETTING_STRING, NODE_FIELD(name), "", 1,
     SL_CLUSTER_NAME_CAPACITY - 1, "IGGY_CLUSTER_NODES_<i>_NAME",
     SL_SETTING_OPTIONAL | SL_SETTING_REQUIRED, "Node name, unique in the roster."},
    {"cluster.nodes.ip", SL_SETTING_STRING, NODE_FIELD(ip), "", 2, INET6_ADDRSTRLEN - 1,
     "IGGY_CLUSTER_NODES_<i>_IP", SL_SETTING_OPTIONAL | SL_SETTING_REQUIRED,
     "Literal IPv4 or IPv6 address the other replicas dial (names are not resolved)."},
    {"cluster.nodes.replica_id", SL_SETTING_U32, NODE_FIELD(replica_id), "0", 0,
     SL_CLUSTER_NODES_MAX - 1, "IGGY_CLUSTER_NODES_<i>_REPLICA_ID", SL_SETTING_REQUIRED,
     "Replica id, 0-based: unique and below the number of nodes."},
    {"cluster.nodes.ports.tcp", SL_SETTING_U32, NODE_FIELD(ports.tcp), "0", 0, 65535,
     "IGGY_CLUSTER_NODES_<i>_PORTS_TCP", SL_SETTING_REQUIRED,
     "The node's client port; its listener binds tcp.address's host with this port."},
    {"cluster.nodes.ports.quic", SL_SETTING_U32, NODE_FIELD(ports.quic), "0", 0, 65535,
     "IGGY_CLUSTER_NODES_<i>_PORTS_QUIC", 0,
     "Reported QUIC port (Sluice does not serve QUIC); needed when quic.enabled."},
    {"cluster.nodes.ports.http", SL_SETTING_U32, NODE_FIELD(ports.http), "0", 0, 65535,
     "IGGY_CLUSTER_NODES_<i>_PORTS_HTTP", 0,
     "Reported HTTP port (Sluice does not serve HTTP); needed when http.enabled."},
    {"cluster.nodes.ports.websocket", SL_SETTING_U32, NODE_FIELD(ports.websocket), "0", 0, 65535,
     "IGGY_CLUSTER_NODES_<i>_PORTS_WEBSOCKET", 0,
     "Reported WebSocket port (Sluice does not serve WebSocket); needed when websocket.enabled."},
    {"cluster.nodes.ports.tcp_replica", SL_SETTING_U32, NODE_FIELD(ports.tcp_replica), "0", 0,
     65535, "IGGY_CLUSTER_NODES_<i>_PORTS_TCP_REPLICA", SL_SETTING_REQUIRED,
     "Replica-plane port: the node listens on it and the other replicas dial it."},
};
/* clang-format on */
_Static_assert(SL_ARRAY_LEN(node_settings) <= 32, "sl_config_cluster_node_t.given has 32 bits");

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const sl_setting_t *sl_config_settings(size_t *count)
{
    *count = SL_ARRAY_LEN(settings);
    return settings;
}

const sl_setting_t *sl_config_node_settings(size_t *count)
{
    *count = SL_ARRAY_LEN(node_settings);
    return node_settings;
}

const sl_setting_t *sl_config_setting_find(const char *name)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++)
        if (strcmp(settings[i].name, name) == 0)
            return &settings[i];
    return NULL;
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t err_len, const char *fmt,
                                                      ...)
{
    if (err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -SL_ERR_INVALID_CONFIGURATION;
}

static int why_fail(const char **why, const char *text)
{
    *why = text;
    return -SL_ERR_INVALID_CONFIGURATION;
}

/* --- value parsers ----------------------------------------------------------- */

typedef struct unit {
    const char *name;
    uint64_t factor;
} unit_t;

static const unit_t duration_units[] = {
    {"us", 1},
    {"usec", 1},
    {"\xC2\xB5s", 1},
    {"ms", US_PER_MS},
    {"msec", US_PER_MS},
    {"s", US_PER_S},
    {"sec", US_PER_S},
    {"secs", US_PER_S},
    {"second", US_PER_S},
    {"seconds", US_PER_S},
    {"m", US_PER_M},
    {"min", US_PER_M},
    {"mins", US_PER_M},
    {"minute", US_PER_M},
    {"minutes", US_PER_M},
    {"h", US_PER_H},
    {"hr", US_PER_H},
    {"hrs", US_PER_H},
    {"hour", US_PER_H},
    {"hours", US_PER_H},
    {"d", US_PER_D},
    {"day", US_PER_D},
    {"days", US_PER_D},
    {"w", US_PER_W},
    {"week", US_PER_W},
    {"weeks", US_PER_W},
};

static const unit_t size_units[] = {
    {"b", 1},
    {"kb", 1000ull},
    {"mb", 1000000ull},
    {"gb", 1000000000ull},
    {"tb", 1000000000000ull},
    {"kib", KIB},
    {"mib", MIB},
    {"gib", GIB},
    {"tib", TIB},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Unit words are letters; bytes >= 0x80 let "µs" through. */
static bool is_unit_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (unsigned char)c >= 0x80;
}

static void skip_spaces(const char *text, size_t len, size_t *i)
{
    while (*i < len && is_space(text[*i]))
        (*i)++;
}

/* Reads decimal digits at *i; false on none or overflow. */
static bool read_digits(const char *text, size_t len, size_t *i, uint64_t *out)
{
    size_t start = *i;
    uint64_t n = 0;
    while (*i < len && is_digit(text[*i])) {
        uint64_t d = (uint64_t)(text[*i] - '0');
        if (n > (UINT64_MAX - d) / 10)
            return false;
        n = n * 10 + d;
        (*i)++;
    }
    *out = n;
    return *i > start;
}

static const unit_t *find_unit(const unit_t *units, size_t count, const char *word, size_t len,
                               bool any_case)
{
    for (size_t u = 0; u < count; u++) {
        if (strlen(units[u].name) != len)
            continue;
        if (any_case ? strncasecmp(units[u].name, word, len) == 0
                     : memcmp(units[u].name, word, len) == 0)
            return &units[u];
    }
    return NULL;
}

int sl_config_parse_duration_us(const char *text, size_t len, uint64_t *out, const char **why)
{
    size_t i = 0;
    uint64_t total = 0;
    skip_spaces(text, len, &i);
    if (i == len)
        return why_fail(why, "empty duration (write for example \"30 s\")");
    /* Each turn reads one "<number> <unit>" part or fails: bounded by len. */
    while (i < len) {
        uint64_t n;
        if (!is_digit(text[i]))
            return why_fail(why, "expected a number, as in \"30 s\" or \"1h 30m\"");
        if (!read_digits(text, len, &i, &n))
            return why_fail(why, "duration too long");
        skip_spaces(text, len, &i);
        size_t unit_start = i;
        while (i < len && is_unit_char(text[i]))
            i++;
        if (i == unit_start)
            return why_fail(why, "a unit must follow the number (us, ms, s, m, h, d, w)");
        const unit_t *unit = find_unit(duration_units, SL_ARRAY_LEN(duration_units),
                                       text + unit_start, i - unit_start, false);
        if (!unit)
            return why_fail(why, "unknown unit (use us, ms, s, m, h, d or w)");
        if (n > UINT64_MAX / unit->factor || total > UINT64_MAX - n * unit->factor)
            return why_fail(why, "duration too long");
        total += n * unit->factor;
        skip_spaces(text, len, &i);
    }
    *out = total;
    return 0;
}

int sl_config_parse_byte_size(const char *text, size_t len, uint64_t *out, const char **why)
{
    size_t i = 0;
    uint64_t n;
    skip_spaces(text, len, &i);
    if (i == len)
        return why_fail(why, "empty size (write for example \"64 MiB\")");
    if (!is_digit(text[i]))
        return why_fail(why, "expected a whole number, as in \"64 MiB\" or \"1048576\"");
    if (!read_digits(text, len, &i, &n))
        return why_fail(why, "size too large");
    skip_spaces(text, len, &i);
    size_t unit_start = i;
    while (i < len && is_unit_char(text[i]))
        i++;
    uint64_t factor = 1;
    if (i > unit_start) {
        const unit_t *unit = find_unit(size_units, SL_ARRAY_LEN(size_units), text + unit_start,
                                       i - unit_start, true);
        if (!unit)
            return why_fail(why, "unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");
        factor = unit->factor;
    }
    skip_spaces(text, len, &i);
    if (i != len)
        return why_fail(why, "unexpected text after the size");
    if (n > UINT64_MAX / factor)
        return why_fail(why, "size too large");
    *out = n * factor;
    return 0;
}

int sl_config_parse_ratio_ppm(const char *text, size_t len, uint32_t *out, const char **why)
{
    size_t i = 0;
    uint64_t whole;
    skip_spaces(text, len, &i);
    if (i == len || !is_digit(text[i]) || !read_digits(text, len, &i, &whole))
        return why_fail(why, "expected a ratio from 0 to 1, as in \"0.01\"");
    uint64_t ppm = whole <= 1 ? whole * 1000000u : 2000000u;
    if (i < len && text[i] == '.') {
        i++;
        uint64_t scale = 100000u;
        size_t digits = 0;
        /* Six decimals reach one in a million; more would be silently cut. */
        for (; i < len && is_digit(text[i]); i++, digits++) {
            if (digits == 6)
                return why_fail(why, "at most six decimals (0.000001 is the smallest step)");
            ppm += (uint64_t)(text[i] - '0') * scale;
            scale /= 10u;
        }
        if (digits == 0)
            return why_fail(why, "expected digits after the '.'");
    }
    skip_spaces(text, len, &i);
    if (i != len)
        return why_fail(why, "expected a ratio from 0 to 1, as in \"0.01\"");
    if (ppm > 1000000u)
        return why_fail(why, "a ratio is at most 1");
    *out = (uint32_t)ppm;
    return 0;
}

int sl_format_ratio_ppm(uint32_t ppm, char *buf, size_t len)
{
    if (ppm % 1000000u == 0)
        return snprintf(buf, len, "%u", ppm / 1000000u);
    char frac[8];
    snprintf(frac, sizeof(frac), "%06u", ppm % 1000000u);
    size_t n = strlen(frac);
    while (n > 1 && frac[n - 1] == '0')
        n--;
    return snprintf(buf, len, "%u.%.*s", ppm / 1000000u, (int)n, frac);
}

/* Splits "host:port" or "[v6]:port" inside buf (modified in place). */
static int split_address(char *buf, char **host, char **port, bool *ipv6, const char **why)
{
    if (buf[0] == '[') {
        char *close = strchr(buf, ']');
        if (!close)
            return why_fail(why, "missing ']' after the IPv6 address");
        if (close[1] != ':')
            return why_fail(why, "expected ':' and a port after ']'");
        *close = '\0';
        *host = buf + 1;
        *port = close + 2;
        *ipv6 = true;
        return 0;
    }
    char *colon = strrchr(buf, ':');
    if (!colon)
        return why_fail(why, "expected host:port, as in 127.0.0.1:8090");
    if (memchr(buf, ':', (size_t)(colon - buf)))
        return why_fail(why, "write an IPv6 address in brackets, as in [::1]:8090");
    *colon = '\0';
    *host = buf;
    *port = colon + 1;
    *ipv6 = false;
    return 0;
}

static void address_fill(sl_config_address_t *out, const void *ip, uint16_t port, bool ipv6)
{
    out->port = port;
    out->ipv6 = ipv6;
    if (ipv6) {
        struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&out->sockaddr;
        sa->sin6_family = AF_INET6;
        sa->sin6_port = htons(port);
        memcpy(&sa->sin6_addr, ip, sizeof(sa->sin6_addr));
        out->sockaddr_len = sizeof(*sa);
        inet_ntop(AF_INET6, ip, out->host, sizeof(out->host));
        snprintf(out->text, sizeof(out->text), "[%s]:%u", out->host, (unsigned)port);
    } else {
        struct sockaddr_in *sa = (struct sockaddr_in *)&out->sockaddr;
        sa->sin_family = AF_INET;
        sa->sin_port = htons(port);
        memcpy(&sa->sin_addr, ip, sizeof(sa->sin_addr));
        out->sockaddr_len = sizeof(*sa);
        inet_ntop(AF_INET, ip, out->host, sizeof(out->host));
        snprintf(out->text, sizeof(out->text), "%s:%u", out->host, (unsigned)port);
    }
}

int sl_parse_address(const char *text, size_t len, sl_config_address_t *out, const char **why)
{
    char buf[SL_CONFIG_ADDRESS_TEXT_CAPACITY];
    if (len == 0)
        return why_fail(why, "empty address (write for example 127.0.0.1:8090)");
    if (len >= sizeof(buf) || memchr(text, '\0', len))
        return why_fail(why, "not an address");
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *host, *port_text;
    bool ipv6;
    if (split_address(buf, &host, &port_text, &ipv6, why))
        return -SL_ERR_INVALID_CONFIGURATION;
    size_t i = 0, port_len = strlen(port_text);
    uint64_t port;
    if (port_len == 0)
        return why_fail(why, "missing port after ':'");
    if (!read_digits(port_text, port_len, &i, &port) || i != port_len || port > 65535)
        return why_fail(why, "the port must be a number 0..65535");
    unsigned char ip[sizeof(struct in6_addr)];
    if (inet_pton(ipv6 ? AF_INET6 : AF_INET, host, ip) != 1)
        return why_fail(why, ipv6 ? "invalid IPv6 address"
                                  : "the host must be an IPv4 address such as 127.0.0.1 or "
                                    "0.0.0.0 (names are not resolved)");
    memset(out, 0, sizeof(*out));
    address_fill(out, ip, (uint16_t)port, ipv6);
    return 0;
}

static int append(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* snprintf that keeps counting past the end, like snprintf itself. */
static int append(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*at < len ? buf + *at : NULL, *at < len ? len - *at : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += (size_t)n;
    return n;
}

int sl_format_duration_us(uint64_t us, char *buf, size_t len)
{
    static const unit_t parts[] = {{"d", US_PER_D}, {"h", US_PER_H},   {"m", US_PER_M},
                                   {"s", US_PER_S}, {"ms", US_PER_MS}, {"us", 1}};
    if (us == 0)
        return snprintf(buf, len, "0 s");
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < SL_ARRAY_LEN(parts); i++) {
        uint64_t n = us / parts[i].factor;
        us %= parts[i].factor;
        if (n)
            append(buf, len, &at, "%s%llu %s", at ? " " : "", (unsigned long long)n, parts[i].name);
    }
    return (int)at;
}

int sl_format_byte_size(uint64_t bytes, char *buf, size_t len)
{
    static const unit_t exact[] = {{"TiB", TIB},
                                   {"GiB", GIB},
                                   {"MiB", MIB},
                                   {"KiB", KIB},
                                   {"TB", 1000000000000ull},
                                   {"GB", 1000000000ull},
                                   {"MB", 1000000ull},
                                   {"KB", 1000ull}};
    for (size_t i = 0; bytes && i < SL_ARRAY_LEN(exact); i++)
        if (bytes % exact[i].factor == 0)
            return snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / exact[i].factor),
                            exact[i].name);
    return snprintf(buf, len, "%llu B", (unsigned long long)bytes);
}

/* --- reading and writing one setting ------------------------------------- */

static void *field_of(sl_config_t *cfg, const sl_setting_t *row)
{
    return (char *)cfg + row->offset;
}

static const void *field_in(const sl_config_t *cfg, const sl_setting_t *row)
{
    return (const char *)cfg + row->offset;
}

static bool is_number(sl_setting_type_t type)
{
    return type == SL_SETTING_U32 || type == SL_SETTING_U64 || type == SL_SETTING_DURATION ||
           type == SL_SETTING_BYTES || type == SL_SETTING_RATIO;
}

static uint64_t number_get(const sl_config_t *cfg, const sl_setting_t *row)
{
    if (row->type == SL_SETTING_U32 || row->type == SL_SETTING_RATIO)
        return *(const uint32_t *)field_in(cfg, row);
    return *(const uint64_t *)field_in(cfg, row);
}

static void format_number(const sl_setting_t *row, uint64_t v, char *buf, size_t len)
{
    if (row->type == SL_SETTING_RATIO)
        sl_format_ratio_ppm((uint32_t)v, buf, len);
    else if (row->type == SL_SETTING_DURATION)
        sl_format_duration_us(v, buf, len);
    else if (row->type == SL_SETTING_BYTES)
        sl_format_byte_size(v, buf, len);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* The bounds rule of one row for a number, explained in its own units. */
static int number_check(const sl_setting_t *row, uint64_t v, char *why, size_t why_len)
{
    if (v >= row->min && v <= row->max)
        return 0;
    char got[48], lo[48], hi[48];
    format_number(row, v, got, sizeof(got));
    format_number(row, row->min, lo, sizeof(lo));
    format_number(row, row->max, hi, sizeof(hi));
    return fail(why, why_len, "%s is outside the allowed range %s .. %s", got, lo, hi);
}

static int number_set(sl_config_t *cfg, const sl_setting_t *row, uint64_t v, char *why,
                      size_t why_len)
{
    int rc = number_check(row, v, why, why_len);
    if (rc)
        return rc;
    if (row->type == SL_SETTING_U32 || row->type == SL_SETTING_RATIO)
        *(uint32_t *)field_of(cfg, row) = (uint32_t)v;
    else
        *(uint64_t *)field_of(cfg, row) = v;
    return 0;
}

static int string_check(const sl_setting_t *row, const char *text, size_t len, char *why,
                        size_t why_len)
{
    if (len == 0 && (row->flags & SL_SETTING_OPTIONAL))
        return 0;
    if (memchr(text, '\0', len) || !sl_utf8_valid((const uint8_t *)text, len))
        return fail(why, why_len, "must be valid UTF-8 text");
    if (len < row->min || len > row->max)
        return fail(why, why_len, "must be %llu..%llu bytes long (got %zu)",
                    (unsigned long long)row->min, (unsigned long long)row->max, len);
    return 0;
}

static int log_level_parse(const char *text, size_t len, sl_log_level_t *out)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(level_names); i++) {
        if (strlen(level_names[i]) == len && strncasecmp(level_names[i], text, len) == 0) {
            *out = (sl_log_level_t)i;
            return 0;
        }
    }
    return -SL_ERR_INVALID_CONFIGURATION;
}

/* Text values shared by the environment, the defaults and TOML strings. */
static int set_text(sl_config_t *cfg, const sl_setting_t *row, const char *text, size_t len,
                    char *why, size_t why_len)
{
    const char *reason = NULL;
    uint64_t v = 0;
    int64_t i = 0;
    switch (row->type) {
    case SL_SETTING_BOOL:
        if ((len == 4 && memcmp(text, "true", 4) == 0) || (len == 5 && !memcmp(text, "false", 5))) {
            *(bool *)field_of(cfg, row) = len == 4;
            return 0;
        }
        return fail(why, why_len, "expected true or false");
    case SL_SETTING_U32:
    case SL_SETTING_U64:
        if (sl_toml_parse_integer(text, len, &i, &reason))
            return fail(why, why_len, "%s", reason);
        if (i < 0)
            return fail(why, why_len, "must not be negative");
        return number_set(cfg, row, (uint64_t)i, why, why_len);
    case SL_SETTING_DURATION:
        if (sl_config_parse_duration_us(text, len, &v, &reason))
            return fail(why, why_len, "%s", reason);
        return number_set(cfg, row, v, why, why_len);
    case SL_SETTING_BYTES:
        if (sl_config_parse_byte_size(text, len, &v, &reason))
            return fail(why, why_len, "%s", reason);
        return number_set(cfg, row, v, why, why_len);
    case SL_SETTING_STRING: {
        int rc = string_check(row, text, len, why, why_len);
        if (rc)
            return rc;
        char *dst = field_of(cfg, row);
        memset(dst, 0, row->size);
        memcpy(dst, text, len);
        return 0;
    }
    case SL_SETTING_LOG_LEVEL:
        if (log_level_parse(text, len, field_of(cfg, row)))
            return fail(why, why_len, "expected error, warn, info, debug or trace");
        return 0;
    case SL_SETTING_ADDRESS:
        if (sl_parse_address(text, len, field_of(cfg, row), &reason))
            return fail(why, why_len, "%s", reason);
        return 0;
    case SL_SETTING_RATIO: {
        uint32_t ppm;
        if (sl_config_parse_ratio_ppm(text, len, &ppm, &reason))
            return fail(why, why_len, "%s", reason);
        return number_set(cfg, row, ppm, why, why_len);
    }
    }
    return fail(why, why_len, "unknown setting type");
}

static const char *expected_toml(sl_setting_type_t type)
{
    switch (type) {
    case SL_SETTING_BOOL:
        return "true or false";
    case SL_SETTING_U32:
    case SL_SETTING_U64:
        return "an integer";
    case SL_SETTING_DURATION:
        return "a duration string such as \"30 s\"";
    case SL_SETTING_BYTES:
        return "a size such as \"64 MiB\" or a number of bytes";
    case SL_SETTING_LOG_LEVEL:
        return "a level string such as \"info\"";
    case SL_SETTING_ADDRESS:
        return "an address string such as \"127.0.0.1:8090\"";
    case SL_SETTING_RATIO:
        return "a quoted ratio such as \"0.01\"";
    case SL_SETTING_STRING:
        break;
    }
    return "a string";
}

static int set_toml(sl_config_t *cfg, const sl_setting_t *row, const sl_toml_value_t *v, char *why,
                    size_t why_len)
{
    bool number = row->type == SL_SETTING_U32 || row->type == SL_SETTING_U64;
    if (row->type == SL_SETTING_BOOL && v->type == SL_TOML_BOOL) {
        *(bool *)field_of(cfg, row) = v->boolean;
        return 0;
    }
    if (row->type == SL_SETTING_RATIO && v->type == SL_TOML_INTEGER) {
        if (v->integer < 0 || v->integer > 1)
            return fail(why, why_len, "a ratio is 0..1");
        return number_set(cfg, row, (uint64_t)v->integer * 1000000u, why, why_len);
    }
    if ((number || row->type == SL_SETTING_BYTES) && v->type == SL_TOML_INTEGER) {
        if (v->integer < 0)
            return fail(why, why_len, "must not be negative");
        return number_set(cfg, row, (uint64_t)v->integer, why, why_len);
    }
    if (!number && row->type != SL_SETTING_BOOL && v->type == SL_TOML_STRING)
        return set_text(cfg, row, v->string, v->string_len, why, why_len);
    return fail(why, why_len, "expected %s, got %s %s", expected_toml(row->type),
                v->type == SL_TOML_INTEGER ? "an" : "a", sl_toml_type_name(v->type));
}

/* Stores through fn; the field keeps its old value when fn fails. */
static int set_guarded(sl_config_t *cfg, const sl_setting_t *row, const char *text, size_t len,
                       const sl_toml_value_t *value, char *why, size_t why_len)
{
    unsigned char saved[SL_CONFIG_PATH_CAPACITY];
    sl_assert(row->size <= sizeof(saved));
    memcpy(saved, field_of(cfg, row), row->size);
    int rc = value ? set_toml(cfg, row, value, why, why_len)
                   : set_text(cfg, row, text, len, why, why_len);
    if (rc)
        memcpy(field_of(cfg, row), saved, row->size);
    return rc;
}

int sl_config_set(sl_config_t *cfg, const sl_setting_t *row, const char *text, char *err,
                  size_t err_len)
{
    char why[256];
    if (set_guarded(cfg, row, text, strlen(text), NULL, why, sizeof(why)))
        return fail(err, err_len, "%s: %s", row->name, why);
    return 0;
}

/* --- [[cluster.nodes]] entries ------------------------------------------------ */

/* Row r of node_settings moved onto entry i of cfg->cluster.nodes, so the
 * setters, checks and printers that work on offsets into sl_config_t serve
 * it unchanged. The name ("cluster.nodes[1].ip") and environment variable
 * (IGGY_CLUSTER_NODES_1_IP) are spelled out for messages. */
typedef struct node_row {
    sl_setting_t row;
    char name[64];
    char env[64];
} node_row_t;

static void node_row_at(size_t r, uint32_t i, node_row_t *out)
{
    const sl_setting_t *base = &node_settings[r];
    static const char prefix[] = "cluster.nodes.";
    const char *mark = strstr(base->env, "<i>");
    sl_assert(i < SL_CLUSTER_NODES_MAX && mark &&
              strncmp(base->name, prefix, sizeof(prefix) - 1) == 0);
    out->row = *base;
    out->row.offset += offsetof(sl_config_t, cluster.nodes) + i * sizeof(sl_config_cluster_node_t);
    snprintf(out->name, sizeof(out->name), "cluster.nodes[%u].%s", i,
             base->name + sizeof(prefix) - 1);
    snprintf(out->env, sizeof(out->env), "%.*s%u%s", (int)(mark - base->env), base->env, i,
             mark + 3);
    out->row.name = out->name;
    out->row.env = out->env;
}

/* Row r of entry i came from the file or the environment: the roster is at
 * least i + 1 entries long. */
static void node_given(sl_config_t *cfg, size_t r, uint32_t i)
{
    cfg->cluster.nodes[i].given |= 1u << r;
    if (cfg->cluster.nodes_count < i + 1)
        cfg->cluster.nodes_count = i + 1;
}

/* Reads the TOML reader's "cluster.nodes.<i>.<key>" into a row of
 * node_settings and the index (at most six digits are read). */
static bool node_entry(const char *name, size_t *row, uint32_t *index)
{
    static const char prefix[] = "cluster.nodes.";
    size_t plen = sizeof(prefix) - 1, digits = 0;
    if (strncmp(name, prefix, plen) != 0)
        return false;
    const char *p = name + plen;
    uint32_t i = 0;
    while (digits < 6 && p[digits] >= '0' && p[digits] <= '9')
        i = i * 10 + (uint32_t)(p[digits++] - '0');
    if (digits == 0 || p[digits] != '.')
        return false;
    for (size_t r = 0; r < SL_ARRAY_LEN(node_settings); r++) {
        if (strcmp(node_settings[r].name + plen, p + digits + 1) == 0) {
            *row = r;
            *index = i;
            return true;
        }
    }
    return false;
}

static int apply_node_entry(sl_config_t *cfg, const sl_toml_entry_t *e, size_t r, uint32_t i,
                            const char *file_name, char *err, size_t err_len)
{
    if (i >= SL_CLUSTER_NODES_MAX)
        return fail(err, err_len, "%s:%u:%u: more than %u [[cluster.nodes]] entries", file_name,
                    e->line, e->column, SL_CLUSTER_NODES_MAX);
    node_row_t nrow;
    node_row_at(r, i, &nrow);
    char why[256];
    if (set_guarded(cfg, &nrow.row, NULL, 0, &e->value, why, sizeof(why)))
        return fail(err, err_len, "%s:%u:%u: %s: %s", file_name, e->value.line, e->value.column,
                    nrow.name, why);
    node_given(cfg, r, i);
    return 0;
}

/* IGGY_CLUSTER_NODES_<i>_<KEY> for every possible entry: a variable can add
 * an entry the file does not have, as the reference's do. */
static int apply_node_env(sl_config_t *cfg, char *err, size_t err_len)
{
    /* An entry past the cap would be ignored silently: say so instead. */
    static const char prefix[] = "IGGY_CLUSTER_NODES_";
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, prefix, sizeof(prefix) - 1) != 0)
            continue;
        const char *p = *e + sizeof(prefix) - 1;
        uint32_t i = 0, digits = 0;
        while (digits < 6 && p[digits] >= '0' && p[digits] <= '9')
            i = i * 10 + (uint32_t)(p[digits++] - '0');
        if (digits && i >= SL_CLUSTER_NODES_MAX)
            return fail(err, err_len,
                        "%.*s: more than %u [[cluster.nodes]] entries (indexes 0 .. %u)",
                        (int)strcspn(*e, "="), *e, SL_CLUSTER_NODES_MAX, SL_CLUSTER_NODES_MAX - 1);
    }
    for (uint32_t i = 0; i < SL_CLUSTER_NODES_MAX; i++) {
        for (size_t r = 0; r < SL_ARRAY_LEN(node_settings); r++) {
            node_row_t nrow;
            node_row_at(r, i, &nrow);
            const char *text = getenv(nrow.env);
            if (!text)
                continue;
            char why[256];
            if (set_guarded(cfg, &nrow.row, text, strlen(text), NULL, why, sizeof(why)))
                return fail(err, err_len, "%s=\"%.64s\" (%s): %s", nrow.env, text, nrow.name, why);
            node_given(cfg, r, i);
        }
    }
    return 0;
}

void sl_config_defaults(sl_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++) {
        char why[256];
        const sl_setting_t *row = &settings[i];
        /* A default the table cannot parse is a bug in the table. */
        int rc = set_text(cfg, row, row->default_text, strlen(row->default_text), why, sizeof(why));
        sl_assert(rc == 0);
    }
    for (uint32_t i = 0; i < SL_CLUSTER_NODES_MAX; i++) {
        for (size_t r = 0; r < SL_ARRAY_LEN(node_settings); r++) {
            char why[256];
            node_row_t nrow;
            node_row_at(r, i, &nrow);
            const char *text = nrow.row.default_text;
            int rc = set_text(cfg, &nrow.row, text, strlen(text), why, sizeof(why));
            sl_assert(rc == 0);
        }
    }
}

/* --- file and environment ------------------------------------------------- */

static int apply_entry(sl_config_t *cfg, const sl_toml_entry_t *e, const char *file_name, char *err,
                       size_t err_len)
{
    const sl_setting_t *row = sl_config_setting_find(e->name);
    size_t node_r;
    uint32_t node_i;
    if (!row && node_entry(e->name, &node_r, &node_i))
        return apply_node_entry(cfg, e, node_r, node_i, file_name, err, err_len);
    if (!row)
        return fail(err, err_len, "%s:%u:%u: unknown setting '%s'", file_name, e->line, e->column,
                    e->name);
    if (row->flags & SL_SETTING_ENV_ONLY)
        return fail(err, err_len,
                    "%s:%u:%u: %s cannot be set in a file; use %s (or "
                    "--with-default-root-credentials)",
                    file_name, e->line, e->column, e->name, row->env);
    char why[256];
    if (set_guarded(cfg, row, NULL, 0, &e->value, why, sizeof(why)))
        return fail(err, err_len, "%s:%u:%u: %s: %s", file_name, e->value.line, e->value.column,
                    e->name, why);
    return 0;
}

int sl_config_apply_toml(sl_config_t *cfg, const char *text, size_t len, const char *file_name,
                         char *err, size_t err_len)
{
    sl_toml_doc_t doc;
    sl_toml_error_t terr;
    int rc = sl_toml_parse(text, len, &doc, &terr);
    if (rc) {
        sl_toml_error_format(&terr, file_name, err, err_len);
        sl_toml_doc_free(&doc);
        return rc;
    }
    for (uint32_t i = 0; i < doc.count && rc == 0; i++)
        rc = apply_entry(cfg, &doc.entries[i], file_name, err, err_len);
    sl_toml_doc_free(&doc);
    return rc;
}

int sl_config_apply_file(sl_config_t *cfg, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, err_len, "%s: cannot open: %s", path, strerror(errno));
    char *text = malloc(SL_CONFIG_FILE_MAX + 1);
    if (!text) {
        fclose(f);
        return fail(err, err_len, "%s: out of memory", path);
    }
    size_t len = fread(text, 1, SL_CONFIG_FILE_MAX + 1, f);
    int rc = 0;
    if (ferror(f))
        rc = fail(err, err_len, "%s: cannot read: %s", path, strerror(errno));
    else if (len > SL_CONFIG_FILE_MAX)
        rc = fail(err, err_len, "%s: larger than %u bytes", path, SL_CONFIG_FILE_MAX);
    else
        rc = sl_config_apply_toml(cfg, text, len, path, err, err_len);
    free(text);
    fclose(f);
    if (rc == 0)
        snprintf(cfg->config_path, sizeof(cfg->config_path), "%s", path);
    return rc;
}

int sl_config_apply_env(sl_config_t *cfg, char *err, size_t err_len)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++) {
        const sl_setting_t *row = &settings[i];
        const char *text = getenv(row->env);
        if (!text)
            continue;
        char why[256];
        if (set_guarded(cfg, row, text, strlen(text), NULL, why, sizeof(why)) == 0)
            continue;
        if (row->flags & SL_SETTING_SECRET)
            return fail(err, err_len, "%s (%s): %s", row->env, row->name, why);
        return fail(err, err_len, "%s=\"%.64s\" (%s): %s", row->env, text, row->name, why);
    }
    return apply_node_env(cfg, err, err_len);
}

/* --- validation --------------------------------------------------------------- */

static int check_row(const sl_config_t *cfg, const sl_setting_t *row, char *why, size_t why_len)
{
    if (is_number(row->type))
        return number_check(row, number_get(cfg, row), why, why_len);
    if (row->type == SL_SETTING_STRING) {
        const char *s = field_in(cfg, row);
        return string_check(row, s, strnlen(s, row->size), why, why_len);
    }
    if (row->type == SL_SETTING_LOG_LEVEL) {
        sl_log_level_t level = *(const sl_log_level_t *)field_in(cfg, row);
        if ((unsigned)level >= SL_ARRAY_LEN(level_names))
            return fail(why, why_len, "unknown log level");
    }
    return 0;
}

/* Calls fn on each trimmed, non-empty entry of a comma-separated list; stops
 * at the first non-zero return. */
static int list_each(const char *list,
                     int (*fn)(const char *item, size_t len, size_t index, void *ctx), void *ctx)
{
    const char *p = list;
    size_t index = 0;
    for (size_t guard = 0; p && *p && guard < SL_CONFIG_LIST_CAPACITY; guard++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *item = p;
        /* Iggy's environment form "[a, b]" (quotes allowed) reads the same. */
        while (n > 0 && strchr(" \t[\"", *item)) {
            item++;
            n--;
        }
        while (n > 0 && strchr(" \t]\"", item[n - 1]))
            n--;
        if (n > 0) {
            int rc = fn(item, n, index++, ctx);
            if (rc)
                return rc;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static int method_known(const char *item, size_t len, size_t index, void *ctx)
{
    (void)index, (void)ctx;
    static const char *const methods[] = {"GET",  "POST",    "PUT",  "DELETE",
                                          "HEAD", "OPTIONS", "PATCH"};
    for (size_t i = 0; i < SL_ARRAY_LEN(methods); i++)
        if (len == strlen(methods[i]) && strncasecmp(item, methods[i], len) == 0)
            return 0;
    return 1;
}

/* A wildcard anywhere but first (origins), or anywhere with credentials. */
static int wildcard_at(const char *item, size_t len, size_t index, void *ctx)
{
    size_t first_ok = *(size_t *)ctx;
    return len == 1 && item[0] == '*' && index >= first_ok;
}

static int validate_http_cors(const sl_config_t *cfg, char *err, size_t err_len)
{
    const __typeof__(cfg->http.cors) *c = &cfg->http.cors;
    if (list_each(c->allowed_methods, method_known, NULL))
        return fail(err, err_len,
                    "http.cors.allowed_methods: only GET, POST, PUT, DELETE, HEAD, OPTIONS and "
                    "PATCH may be listed");
    size_t first_ok = 1;
    if (list_each(c->allowed_origins, wildcard_at, &first_ok))
        return fail(err, err_len, "http.cors.allowed_origins: * may only be the first entry");
    first_ok = 0;
    if (c->allow_credentials && (list_each(c->allowed_origins, wildcard_at, &first_ok) ||
                                 list_each(c->allowed_headers, wildcard_at, &first_ok) ||
                                 list_each(c->exposed_headers, wildcard_at, &first_ok)))
        return fail(err, err_len,
                    "http.cors.allow_credentials needs explicit origins and headers (no *)");
    return 0;
}

static int validate_http(const sl_config_t *cfg, char *err, size_t err_len)
{
    const char *alg = cfg->http.jwt.algorithm;
    if (strcmp(alg, "HS256") != 0 && strcmp(alg, "HS384") != 0 && strcmp(alg, "HS512") != 0)
        return fail(err, err_len, "http.jwt.algorithm: only HS256, HS384 and HS512 are supported");
    if (cfg->http.metrics.endpoint[0] != '/')
        return fail(err, err_len, "http.metrics.endpoint must start with /");
    if (cfg->http.tls.enabled && (!cfg->http.tls.cert_file[0] || !cfg->http.tls.key_file[0]))
        return fail(err, err_len,
                    "http.tls.enabled is true: http.tls.cert_file and http.tls.key_file must both "
                    "be set (HTTPS has no self-signed option)");
    const char *enc = cfg->http.jwt.encoding_secret, *dec = cfg->http.jwt.decoding_secret;
    if (enc[0] && dec[0] && strcmp(enc, dec) != 0)
        return fail(err, err_len,
                    "http.jwt.decoding_secret differs from http.jwt.encoding_secret: tokens "
                    "signed with one would never verify with the other");
    return validate_http_cors(cfg, err, err_len);
}

/* A signal's transport and endpoint (docs/configuration.md, "[telemetry]"). */
static int validate_signal(const char *name, const char *transport, const char *endpoint, char *err,
                           size_t err_len)
{
    if (strcmp(transport, "grpc") != 0 && strcmp(transport, "http") != 0)
        return fail(err, err_len, "telemetry.%s.transport must be grpc or http (got \"%s\")", name,
                    transport);
    if (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0)
        return fail(err, err_len,
                    "telemetry.%s.endpoint must be an http:// or https:// URL (got \"%.200s\")",
                    name, endpoint);
    return 0;
}

static int validate_telemetry(const sl_config_t *cfg, char *err, size_t err_len)
{
    const __typeof__(cfg->telemetry) *t = &cfg->telemetry;
    int rc = validate_signal("logs", t->logs.transport, t->logs.endpoint, err, err_len);
    if (rc == 0)
        rc = validate_signal("traces", t->traces.transport, t->traces.endpoint, err, err_len);
    return rc;
}

/* websocket.md 3: max_frame_size <= max_message_size <= message_bus.max_message_size
 * for the sizes that are set. */
static int validate_websocket(const sl_config_t *cfg, char *err, size_t err_len)
{
    uint64_t bus = cfg->message_bus.max_message_size;
    uint64_t message = cfg->websocket.max_message_size;
    uint64_t frame = cfg->websocket.max_frame_size;
    if (message > bus)
        return fail(err, err_len,
                    "websocket.max_message_size (%llu bytes) exceeds "
                    "message_bus.max_message_size (%llu bytes)",
                    (unsigned long long)message, (unsigned long long)bus);
    if (frame > (message ? message : bus))
        return fail(err, err_len,
                    "websocket.max_frame_size (%llu bytes) exceeds the message limit (%llu bytes)",
                    (unsigned long long)frame, (unsigned long long)(message ? message : bus));
    return 0;
}

uint64_t sl_config_ws_message_max(const sl_config_t *cfg)
{
    uint64_t set = cfg->websocket.max_message_size;
    return set ? set : cfg->message_bus.max_message_size;
}

uint64_t sl_config_ws_frame_max(const sl_config_t *cfg)
{
    uint64_t message = sl_config_ws_message_max(cfg);
    uint64_t set = cfg->websocket.max_frame_size ? cfg->websocket.max_frame_size
                                                 : 16ull * MIB; /* the reference's default */
    return set < message ? set : message;
}

/* A key setting holds base64 of exactly 32 bytes. The text is never
 * echoed: a near-miss key is still most of a secret. */
static int validate_key(const char *name, const char *text, bool required, char *err,
                        size_t err_len)
{
    if (text[0] == '\0')
        return required ? fail(err, err_len,
                               "%s is empty but system.encryption.enabled is true: set it to "
                               "the base64 of 32 random bytes (openssl rand -base64 32)",
                               name)
                        : 0;
    uint8_t raw[SL_CONFIG_KEY_CAPACITY];
    sl_buf_t out;
    sl_buf_init_fixed(&out, raw, sizeof(raw));
    if (!sl_base64_decode(&out, sl_span_str(text), false))
        return fail(err, err_len, "%s is not valid base64 (the key is not shown)", name);
    size_t len = out.len;
    explicit_bzero(raw, sizeof(raw));
    if (len != 32)
        return fail(err, err_len, "%s decodes to %zu bytes; an AES-256 key is exactly 32", name,
                    len);
    return 0;
}

static int validate_encryption(const sl_config_t *cfg, char *err, size_t err_len)
{
    const char *key = cfg->system.encryption.key, *prev = cfg->system.encryption.previous_key;
    int rc = validate_key("system.encryption.key", key, cfg->system.encryption.enabled, err,
                          err_len);
    if (rc == 0)
        rc = validate_key("system.encryption.previous_key", prev, false, err, err_len);
    if (rc == 0 && prev[0] && !cfg->system.encryption.enabled)
        rc = fail(err, err_len,
                  "system.encryption.previous_key is set but system.encryption.enabled is false");
    return rc;
}

static int validate_root(const sl_config_t *cfg, char *err, size_t err_len)
{
    const sl_setting_t *user = sl_config_setting_find("root.username");
    const sl_setting_t *pass = sl_config_setting_find("root.password");
    bool has_user = cfg->root.username[0] != '\0';
    bool has_pass = cfg->root.password[0] != '\0';
    if (has_user != has_pass)
        return fail(err, err_len, "%s and %s must be set together (only %s is set)", user->env,
                    pass->env, has_user ? user->env : pass->env);
    return 0;
}

/* --- cluster validation -------------------------------------------------------- */

/* The ports of an entry with their names, for the uniqueness rule. */
static uint32_t node_ports(const sl_config_cluster_node_t *n, uint32_t out[5], const char *names[5])
{
    static const char *const all[5] = {"tcp", "quic", "http", "websocket", "tcp_replica"};
    const uint32_t values[5] = {n->ports.tcp, n->ports.quic, n->ports.http, n->ports.websocket,
                                n->ports.tcp_replica};
    for (uint32_t k = 0; k < 5; k++) {
        out[k] = values[k];
        names[k] = all[k];
    }
    return 5;
}

static int validate_node(const sl_config_t *cfg, uint32_t i, char *err, size_t err_len)
{
    const sl_config_cluster_node_t *n = &cfg->cluster.nodes[i];
    for (size_t r = 0; r < SL_ARRAY_LEN(node_settings); r++) {
        node_row_t nrow;
        node_row_at(r, i, &nrow);
        char why[256];
        if (check_row(cfg, &nrow.row, why, sizeof(why)))
            return fail(err, err_len, "%s: %s", nrow.name, why);
        if ((node_settings[r].flags & SL_SETTING_REQUIRED) && !(n->given & (1u << r)))
            return fail(err, err_len, "%s is missing: every [[cluster.nodes]] entry needs it (%s)",
                        nrow.name, nrow.env);
    }
    unsigned char ip[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, n->ip, ip) != 1 && inet_pton(AF_INET6, n->ip, ip) != 1)
        return fail(err, err_len,
                    "cluster.nodes[%u].ip: \"%s\" is not an IPv4 or IPv6 address (names are not "
                    "resolved)",
                    i, n->ip);
    if (n->replica_id >= cfg->cluster.nodes_count)
        return fail(err, err_len,
                    "cluster.nodes[%u].replica_id: %u is not below the number of nodes (%u): ids "
                    "run from 0 without gaps",
                    i, n->replica_id, cfg->cluster.nodes_count);
    if (n->ports.tcp == 0 || n->ports.tcp_replica == 0)
        return fail(err, err_len, "cluster.nodes[%u].ports.%s: port 0 is refused in the roster", i,
                    n->ports.tcp == 0 ? "tcp" : "tcp_replica");
    /* QUIC is reported only, so the roster is where its port comes from. The HTTP and
     * WebSocket doors are served: they bind their own addresses (http.address,
     * websocket.address) in cluster mode too, and the roster's ports for them are read
     * but not used yet (docs/cluster.md). */
    if (cfg->quic.enabled && n->ports.quic == 0)
        return fail(err, err_len,
                    "cluster.nodes[%u].ports.quic is needed: quic.enabled is true, and in cluster "
                    "mode the roster gives every listener's port",
                    i);
    return 0;
}

/* Names and replica ids are unique; no two listeners share an ip:port. */
static int validate_node_pair(const sl_config_t *cfg, uint32_t i, uint32_t j, char *err,
                              size_t err_len)
{
    const sl_config_cluster_node_t *a = &cfg->cluster.nodes[i], *b = &cfg->cluster.nodes[j];
    if (i != j && strcmp(a->name, b->name) == 0)
        return fail(err, err_len,
                    "cluster.nodes[%u] and cluster.nodes[%u] have the same name \"%s\"", i, j,
                    a->name);
    if (i != j && a->replica_id == b->replica_id)
        return fail(err, err_len,
                    "cluster.nodes[%u] and cluster.nodes[%u] have the same replica_id %u", i, j,
                    a->replica_id);
    if (strcmp(a->ip, b->ip) != 0)
        return 0;
    uint32_t pa[5], pb[5];
    const char *na[5], *nb[5];
    uint32_t ca = node_ports(a, pa, na), cb = node_ports(b, pb, nb);
    for (uint32_t x = 0; x < ca; x++)
        for (uint32_t y = (i == j ? x + 1 : 0); y < cb; y++)
            if (pa[x] != 0 && pa[x] == pb[y])
                return fail(err, err_len,
                            "cluster.nodes[%u].ports.%s and cluster.nodes[%u].ports.%s both claim "
                            "%s:%u",
                            i, na[x], j, nb[y], a->ip, pa[x]);
    return 0;
}

static int validate_cluster(const sl_config_t *cfg, char *err, size_t err_len)
{
    if (!cfg->cluster.enabled) {
        if (cfg->replica_id_given)
            return fail(err, err_len,
                        "--replica-id %u is for cluster mode, but cluster.enabled is false "
                        "(IGGY_CLUSTER_ENABLED)",
                        cfg->replica_id);
        return 0;
    }
    uint32_t count = cfg->cluster.nodes_count;
    if (count == 0)
        return fail(err, err_len,
                    "cluster.enabled is true but no [[cluster.nodes]] entry is given: list every "
                    "node of the cluster, this one included");
    if (cfg->cluster.auth.enabled && cfg->cluster.auth.shared_secret[0] == '\0')
        return fail(err, err_len,
                    "cluster.auth.enabled is true but cluster.auth.shared_secret is empty (set "
                    "IGGY_CLUSTER_AUTH_SHARED_SECRET to at least %u random bytes)",
                    SL_CLUSTER_SECRET_MIN);
    /* cluster.md 11: a backup must be able to miss a few heartbeats. */
    if (cfg->cluster.heartbeat_timeout_us < 4 * cfg->cluster.commit_broadcast_interval_us)
        return fail(err, err_len,
                    "cluster.heartbeat_timeout (%llu ms) must be at least 4 x "
                    "cluster.commit_broadcast_interval (%llu ms)",
                    (unsigned long long)(cfg->cluster.heartbeat_timeout_us / US_PER_MS),
                    (unsigned long long)(cfg->cluster.commit_broadcast_interval_us / US_PER_MS));
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++)
        rc = validate_node(cfg, i, err, err_len);
    for (uint32_t i = 0; i < count && rc == 0; i++)
        for (uint32_t j = i; j < count && rc == 0; j++)
            rc = validate_node_pair(cfg, i, j, err, err_len);
    if (rc)
        return rc;
    if (!cfg->replica_id_given)
        return fail(err, err_len,
                    "cluster.enabled is true: start sluiced with --replica-id N to say which "
                    "[[cluster.nodes]] entry this process is");
    if (!sl_config_cluster_self(cfg))
        return fail(err, err_len,
                    "--replica-id %u is not in the roster: its replica ids run 0 .. %u",
                    cfg->replica_id, count - 1);
    return 0;
}

const sl_config_cluster_node_t *sl_config_cluster_self(const sl_config_t *cfg)
{
    if (!cfg->cluster.enabled || !cfg->replica_id_given)
        return NULL;
    for (uint32_t i = 0; i < cfg->cluster.nodes_count && i < SL_CLUSTER_NODES_MAX; i++)
        if (cfg->cluster.nodes[i].replica_id == cfg->replica_id)
            return &cfg->cluster.nodes[i];
    return NULL;
}

int sl_config_validate(const sl_config_t *cfg, char *err, size_t err_len)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++) {
        char why[256];
        if (check_row(cfg, &settings[i], why, sizeof(why)))
            return fail(err, err_len, "%s: %s", settings[i].name, why);
    }
    if (!cfg->tcp.enabled)
        return fail(err, err_len,
                    "tcp.enabled is false, but Sluice serves its other doors beside TCP, "
                    "not instead of it");
    if (cfg->message_bus.receive_memory_max < cfg->message_bus.max_message_size ||
        cfg->message_bus.reply_memory_max < cfg->message_bus.max_message_size)
        return fail(err, err_len,
                    "message_bus.receive_memory_max and message_bus.reply_memory_max must be at "
                    "least message_bus.max_message_size (%llu bytes): the largest frame must fit",
                    (unsigned long long)cfg->message_bus.max_message_size);
    if (cfg->metadata.checkpoint_interval > cfg->metadata.journal_slots)
        return fail(err, err_len,
                    "metadata.checkpoint_interval (%u) exceeds metadata.journal_slots (%u): the "
                    "journal must hold every operation since the last snapshot",
                    cfg->metadata.checkpoint_interval, cfg->metadata.journal_slots);
    int rc = validate_cluster(cfg, err, err_len);
    if (rc == 0)
        rc = validate_http(cfg, err, err_len);
    if (rc == 0)
        rc = validate_telemetry(cfg, err, err_len);
    if (rc == 0)
        rc = validate_websocket(cfg, err, err_len);
    if (rc == 0)
        rc = validate_encryption(cfg, err, err_len);
    return rc ? rc : validate_root(cfg, err, err_len);
}

/* --- printing --------------------------------------------------------------------- */

/* A TOML basic string with the escapes our parser reads back. */
static void format_string(const char *s, char *buf, size_t len, size_t *at)
{
    append(buf, len, at, "\"");
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            append(buf, len, at, "\\%c", c);
        else if (c == '\n')
            append(buf, len, at, "\\n");
        else if (c == '\t')
            append(buf, len, at, "\\t");
        else if (c < 0x20 || c == 0x7f)
            append(buf, len, at, "\\u%04X", c);
        else
            append(buf, len, at, "%c", c);
    }
    append(buf, len, at, "\"");
}

int sl_config_format(const sl_config_t *cfg, const sl_setting_t *row, bool reveal, char *buf,
                     size_t len)
{
    char text[64];
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    switch (row->type) {
    case SL_SETTING_BOOL:
        append(buf, len, &at, "%s", *(const bool *)field_in(cfg, row) ? "true" : "false");
        break;
    case SL_SETTING_U32:
    case SL_SETTING_U64:
        append(buf, len, &at, "%llu", (unsigned long long)number_get(cfg, row));
        break;
    case SL_SETTING_DURATION:
    case SL_SETTING_BYTES:
    case SL_SETTING_RATIO:
        format_number(row, number_get(cfg, row), text, sizeof(text));
        append(buf, len, &at, "\"%s\"", text);
        break;
    case SL_SETTING_LOG_LEVEL: {
        unsigned level = (unsigned)*(const sl_log_level_t *)field_in(cfg, row);
        append(buf, len, &at, "\"%s\"",
               level < SL_ARRAY_LEN(level_names) ? level_names[level] : "?");
        break;
    }
    case SL_SETTING_ADDRESS:
        append(buf, len, &at, "\"%s\"", ((const sl_config_address_t *)field_in(cfg, row))->text);
        break;
    case SL_SETTING_STRING: {
        const char *s = field_in(cfg, row);
        bool hide = !reveal && (row->flags & SL_SETTING_SECRET) && s[0] != '\0';
        format_string(hide ? "<hidden>" : s, buf, len, &at);
        break;
    }
    }
    return (int)at;
}

/* The TOML table of a row: its name up to the last dot. */
static size_t table_len_of(const sl_setting_t *row)
{
    const char *dot = strrchr(row->name, '.');
    return dot ? (size_t)(dot - row->name) : 0;
}

/* One [[cluster.nodes]] entry; `comment` prints it as a commented example. */
static void print_node(FILE *f, const sl_config_t *cfg, uint32_t i, bool comment)
{
    const char *c = comment ? "# " : "";
    fprintf(f, "\n%s[[cluster.nodes]]\n", c);
    for (size_t r = 0; r < SL_ARRAY_LEN(node_settings); r++) {
        node_row_t nrow;
        node_row_at(r, i, &nrow);
        const char *key = node_settings[r].name + strlen("cluster.nodes.");
        if (strncmp(key, "ports.", 6) == 0) {
            if (r == 0 || strncmp(node_settings[r - 1].name, "cluster.nodes.ports.", 20) != 0)
                fprintf(f, "%s[cluster.nodes.ports]\n", c);
            key += 6;
        }
        char value[2 * SL_CLUSTER_NAME_CAPACITY * 6];
        sl_config_format(cfg, &nrow.row, false, value, sizeof(value));
        fprintf(f, "# %s Env: %s\n", node_settings[r].description,
                comment ? node_settings[r].env : nrow.env);
        fprintf(f, "%s%s = %s\n", c, key, value);
    }
}

/* The roster after the [cluster] rows: each entry, or a commented example
 * of one when there is none (the default). */
static void print_nodes(FILE *f, const sl_config_t *cfg)
{
    if (cfg->cluster.nodes_count == 0) {
        fprintf(f, "\n# [[cluster.nodes]]: one table per node of the cluster, this one included "
                   "(none by\n# default). <i> in a variable's name is the entry's index from 0.\n");
        print_node(f, cfg, 0, true);
        return;
    }
    for (uint32_t i = 0; i < cfg->cluster.nodes_count && i < SL_CLUSTER_NODES_MAX; i++)
        print_node(f, cfg, i, false);
}

void sl_config_print(FILE *f, const sl_config_t *cfg)
{
    fprintf(f, "# sluiced configuration (TOML). Every key is optional: a missing key keeps its\n"
               "# default. IGGY_<SECTION>_<KEY> environment variables override this file.\n"
               "# Print the effective settings with: sluiced --config FILE --print-config\n");
    const sl_setting_t *prev = NULL;
    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++) {
        const sl_setting_t *row = &settings[i];
        size_t tlen = table_len_of(row);
        bool env_only = row->flags & SL_SETTING_ENV_ONLY;
        bool new_table =
            !prev || table_len_of(prev) != tlen || memcmp(prev->name, row->name, tlen) != 0;
        if (new_table && env_only)
            fprintf(f,
                    "\n# [%.*s] is read only from the environment (or "
                    "--with-default-root-credentials),\n# never from this file.\n",
                    (int)tlen, row->name);
        else if (new_table)
            fprintf(f, "\n[%.*s]\n", (int)tlen, row->name);
        /* Room for a path whose every byte needs a \\uXXXX escape. */
        char value[6 * SL_CONFIG_PATH_CAPACITY + 8];
        sl_config_format(cfg, row, false, value, sizeof(value));
        fprintf(f, "# %s Env: %s\n", row->description, row->env);
        /* A secret that is set prints commented out: read back, the file
         * must not set it to the placeholder. */
        bool hidden = (row->flags & SL_SETTING_SECRET) && strcmp(value, "\"<hidden>\"") == 0;
        if (env_only)
            fprintf(f, "# %s = %s\n", row->name, value);
        else if (hidden)
            fprintf(f, "# %s = %s\n", row->name + (tlen ? tlen + 1 : 0), value);
        else
            fprintf(f, "%s = %s\n", row->name + (tlen ? tlen + 1 : 0), value);
        prev = row;
        bool cluster = strncmp(row->name, "cluster.", 8) == 0;
        if (cluster &&
            (i + 1 == SL_ARRAY_LEN(settings) || strncmp(settings[i + 1].name, "cluster.", 8)))
            print_nodes(f, cfg);
    }
}

/* --- the command line ---------------------------------------------------------------- */

static const char usage_text[] =
    "usage: sluiced [--config PATH] [--replica-id N [--format-cluster]]\n"
    "               [--with-default-root-credentials] [--print-config] [--help] [--version]\n"
    "\n"
    "  --config PATH                    read settings from a TOML file\n"
    "  --replica-id N                   in cluster mode, this process is the\n"
    "                                   [[cluster.nodes]] entry with replica_id N\n"
    "  --format-cluster                 in cluster mode, format this node's consensus\n"
    "                                   storage when it has none: only on a new cluster's\n"
    "                                   first start (docs/cluster.md, \"Formatting\")\n"
    "  --with-default-root-credentials  root user iggy/iggy unless IGGY_ROOT_USERNAME or\n"
    "                                   IGGY_ROOT_PASSWORD say otherwise (development only)\n"
    "  --print-config                   print the effective settings as TOML and exit\n"
    "  --help                           print this help and exit\n"
    "  --version                        print the version and exit\n"
    "\n"
    "Environment variables IGGY_<SECTION>_<KEY> override the file, for example\n"
    "IGGY_TCP_ADDRESS=0.0.0.0:8090. All settings: docs/configuration.md.\n";

typedef struct cli {
    const char *config_path;
    const char *replica_id; /* the text after --replica-id, NULL without */
    bool format_cluster;
    bool default_root;
    bool print_config;
    bool help;
    bool version;
} cli_t;

static int parse_args(int argc, char **argv, cli_t *cli, char *err, size_t err_len)
{
    *cli = (cli_t){0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return fail(err, err_len, "--config needs a PATH\n\n%s", usage_text);
            cli->config_path = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0 && a[9] != '\0') {
            cli->config_path = a + 9;
        } else if (strcmp(a, "--replica-id") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return fail(err, err_len, "--replica-id needs a number N\n\n%s", usage_text);
            cli->replica_id = argv[++i];
        } else if (strncmp(a, "--replica-id=", 13) == 0 && a[13] != '\0') {
            cli->replica_id = a + 13;
        } else if (strcmp(a, "--format-cluster") == 0) {
            cli->format_cluster = true;
        } else if (strcmp(a, "--with-default-root-credentials") == 0) {
            cli->default_root = true;
        } else if (strcmp(a, "--print-config") == 0) {
            cli->print_config = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli->help = true;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            cli->version = true;
        } else {
            return fail(err, err_len, "unknown option '%.200s'\n\n%s", a, usage_text);
        }
    }
    return 0;
}

/* The flag fills each root credential the environment left unset. */
static void apply_default_root(sl_config_t *cfg)
{
    if (cfg->root.username[0] == '\0')
        snprintf(cfg->root.username, sizeof(cfg->root.username), "iggy");
    if (cfg->root.password[0] == '\0')
        snprintf(cfg->root.password, sizeof(cfg->root.password), "iggy");
}

static void warn_reported_only(const sl_config_t *cfg)
{
    if (cfg->quic.enabled)
        sl_log_warn("quic.enabled is true: Sluice does not serve quic, it only reports %s",
                    cfg->quic.address.text);
    if (cfg->http.enabled && cfg->http.web_ui)
        sl_log_warn("http.web_ui is true: Sluice does not embed the web console; run it on its "
                    "own against %s",
                    cfg->http.address.text);
}

static int parse_replica_id(sl_config_t *cfg, const char *text, char *err, size_t err_len)
{
    int64_t id = -1;
    const char *why = NULL;
    if (sl_toml_parse_integer(text, strlen(text), &id, &why) || id < 0 ||
        id >= (int64_t)SL_CLUSTER_NODES_MAX)
        return fail(err, err_len, "--replica-id '%.32s': expected a replica id 0 .. %u", text,
                    SL_CLUSTER_NODES_MAX - 1);
    cfg->replica_id_given = true;
    cfg->replica_id = (uint32_t)id;
    return 0;
}

/* In cluster mode the client listener's port is the roster's ports.tcp;
 * tcp.address still gives the host it binds. */
static int use_roster_port(sl_config_t *cfg, char *err, size_t err_len)
{
    const sl_config_cluster_node_t *self = sl_config_cluster_self(cfg);
    if (!self)
        return 0;
    char text[SL_CONFIG_ADDRESS_TEXT_CAPACITY];
    const sl_config_address_t *a = &cfg->tcp.address;
    snprintf(text, sizeof(text), a->ipv6 ? "[%s]:%u" : "%s:%u", a->host, self->ports.tcp);
    const char *why = NULL;
    if (sl_parse_address(text, strlen(text), &cfg->tcp.address, &why))
        return fail(err, err_len, "tcp.address with the roster's port %s: %s", text, why);
    return 0;
}

int sl_config_load(sl_config_t *cfg, int argc, char **argv, FILE *out, char *err, size_t err_len,
                   bool *exit_now)
{
    *exit_now = false;
    out = out ? out : stdout;
    sl_config_defaults(cfg);
    cli_t cli;
    int rc = parse_args(argc, argv, &cli, err, err_len);
    if (rc)
        return rc;
    if (cli.help || cli.version) {
        if (cli.help)
            fputs(usage_text, out);
        else
            fprintf(out, "sluiced %s (Apache Iggy binary protocol 0.11.0)\n", SLUICE_VERSION);
        *exit_now = true;
        return 0;
    }
    if (cli.config_path && (rc = sl_config_apply_file(cfg, cli.config_path, err, err_len)))
        return rc;
    if ((rc = sl_config_apply_env(cfg, err, err_len)))
        return rc;
    if (cli.default_root)
        apply_default_root(cfg);
    if (cli.replica_id && (rc = parse_replica_id(cfg, cli.replica_id, err, err_len)))
        return rc;
    if (cli.format_cluster && !cli.replica_id)
        return fail(err, err_len, "--format-cluster is for a cluster node: give --replica-id N");
    cfg->format_cluster = cli.format_cluster;
    if ((rc = sl_config_validate(cfg, err, err_len)))
        return rc;
    if ((rc = use_roster_port(cfg, err, err_len)))
        return rc;
    if (cli.print_config) {
        sl_config_print(out, cfg);
        *exit_now = true;
        return 0;
    }
    warn_reported_only(cfg);
    return 0;
}

uint32_t sl_config_shard_count(const sl_config_t *cfg)
{
    if (cfg->system.sharding.shards)
        return cfg->system.sharding.shards;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        return 1;
    return cores > (long)SHARDS_MAX ? SHARDS_MAX : (uint32_t)cores;
}

bool sl_config_has_root_credentials(const sl_config_t *cfg)
{
    return cfg->root.username[0] != '\0' && cfg->root.password[0] != '\0';
}
