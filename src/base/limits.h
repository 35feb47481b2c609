/* Every fixed limit of the protocol and of Sluice, each with its reason.
 * Values come from shared/protocol/defaults.md unless the comment says
 * otherwise. Limits that a setting can change are the defaults of that
 * setting; the server's config table refers to these names. */
#ifndef SL_BASE_LIMITS_H
#define SL_BASE_LIMITS_H

/* --- framing ------------------------------------------------------------ */

/* Every frame starts with a header of exactly this size (framing.md 1). */
#define SL_HEADER_SIZE 256u
/* Default ceiling on a frame, header included (message_bus.max_message_size). */
#define SL_FRAME_MAX_DEFAULT (64u * 1024u * 1024u)
/* Highest `command` byte that is a valid header at all (framing.md 2). */
#define SL_COMMAND_BYTE_MAX 29u

/* --- names and identifiers ---------------------------------------------- */

/* Name and string-Identifier bytes on the wire: a u8 length, 0 refused. */
#define SL_NAME_LEN_MIN 1u
#define SL_NAME_LEN_MAX 255u
/* Usernames on create/rename: result 43 outside this range. */
#define SL_USERNAME_LEN_MIN 3u
#define SL_USERNAME_LEN_MAX 50u
/* Passwords: outside this range a login is eviction 9, and CreateUser /
 * ChangePassword are refused with status 44 (a Sluice rule, not the reference's). */
#define SL_PASSWORD_LEN_MIN 3u
#define SL_PASSWORD_LEN_MAX 100u
/* Passwords on the wire: u8 length, empty allowed (CreateUser, ChangePassword). */
#define SL_PASSWORD_WIRE_MAX 255u
/* MessagesKey partitioning key: u8 length, 1..255 bytes. */
#define SL_PARTITION_KEY_MAX 255u

/* --- id spaces (results 1020, 2021, 3013) ----------------------------- */

/* Stream ids are 0..2^20-1; the lowest free id >= this gives result 1020. */
#define SL_STREAMS_MAX (1u << 20)
/* Topic ids per stream are 0..4095; beyond gives result 2021. */
#define SL_TOPICS_PER_STREAM_MAX 4096u
/* Partition ids per topic are 0..999999; beyond gives result 3013. */
#define SL_PARTITION_IDS_MAX 1000000u
/* Partitions per CreateTopic/CreatePartitions/DeletePartitions: status 2015 above. */
#define SL_PARTITIONS_PER_REQUEST_MAX 1000u

/* --- users and tokens ---------------------------------------------------- */

/* Personal access tokens one user may hold (status 52 at the cap). */
#define SL_TOKENS_PER_USER_MAX_DEFAULT 100u
/* Raw token: base64 of this many random bytes (68 characters). */
#define SL_TOKEN_RAW_BYTES 50u
#define SL_TOKEN_TEXT_LEN 68u

/* --- options and headers (status 3 when broken) ----------------------- */

/* Options block: entries and bytes (encodings.md 10). */
#define SL_OPTIONS_ENTRIES_MAX 1024u
#define SL_OPTIONS_BYTES_MAX 100000u
/* Each TLV field (key or value) of an options or user-headers block. */
#define SL_TLV_FIELD_LEN_MIN 1u
#define SL_TLV_FIELD_LEN_MAX 255u
/* One message's user headers block (MAX_USER_HEADERS_SIZE). */
#define SL_USER_HEADERS_MAX 100000u
/* One message's payload in the SDKs' message builders (MAX_PAYLOAD_SIZE). */
#define SL_PAYLOAD_MAX 64000000u
/* Highest header kind code defined today; higher codes are carried through. */
#define SL_HEADER_KIND_KNOWN_MAX 15u

/* --- batches (messages.md 1) -------------------------------------------- */

#define SL_BATCH_HEADER_SIZE 256u
#define SL_FRAME_HEADER_SIZE 48u

/* --- topic option bounds (options.md 4.1) ------------------------------ */

#define SL_SEGMENT_SIZE_MIN (1024u * 1024u)
#define SL_SEGMENT_SIZE_MAX (1024u * 1024u * 1024u)
#define SL_SEGMENT_SIZE_DEFAULT SL_SEGMENT_SIZE_MAX
#define SL_SEGMENT_SIZE_ALIGN 512u
#define SL_MESSAGES_TO_SAVE_MIN 1u
#define SL_MESSAGES_TO_SAVE_MAX 16777216u
#define SL_MESSAGES_TO_SAVE_DEFAULT 1024u
#define SL_SIZE_TO_SAVE_MAX (1024u * 1024u * 1024u)
#define SL_SIZE_TO_SAVE_DEFAULT (1024u * 1024u)
/* segment_size * partitions_count cap when preallocating (64 GiB). */
#define SL_PREALLOCATE_TOTAL_MAX (64ull * 1024u * 1024u * 1024u)
/* message_expiry given as a duration string: at most this many seconds. */
#define SL_EXPIRY_SECONDS_MAX 4294967295ull

/* --- sessions ------------------------------------------------------------ */

/* Committed replies a client-table entry keeps for retries (framing.md 6.1). */
#define SL_REPLY_RING_CAPACITY 5u
/* Client-table slots ([metadata] clients_table_max, 2..65536). */
#define SL_CLIENTS_TABLE_DEFAULT 8192u
#define SL_CLIENTS_TABLE_MIN 2u
#define SL_CLIENTS_TABLE_MAX 65536u
/* Heartbeat interval; a silent group member is stale after 6/5 of it. */
#define SL_HEARTBEAT_INTERVAL_US_DEFAULT (30u * 1000000u)

/* --- metadata journal (docs/architecture.md, "A full disk") ------------- */

/* Bytes metadata/journal.wal keeps preallocated past its last entry: only operations that free
 * space may use all of it, logins and logouts half, so an operator can get in and delete on a
 * full disk (about 3500 entries of ~300 bytes). */
#define SL_META_JOURNAL_RESERVE (1024u * 1024u)
/* The preallocation grows by this much beyond the reserve at a time: one fallocate per ~800
 * small entries rather than one per entry. */
#define SL_META_JOURNAL_RESERVE_STEP (256u * 1024u)
/* --- before login (lifecycle.md 2-3, commands.md 1, 39, 40, 45) ---------- */

/* The largest login body without a context: ClientVersionInfo (protocol
 * u32, two Names of up to 255 bytes), username (Name), password (u8 length,
 * up to 255 bytes) and context_len (u32): 1032 bytes. The token shape
 * (ClientVersionInfo, u8-length token, context_len) is smaller, 776 bytes;
 * Ping and Logout bodies are empty. */
#define SL_LOGIN_BODY_MAX                                                                          \
    (4u + 2u * (1u + SL_NAME_LEN_MAX) + (1u + SL_NAME_LEN_MAX) + (1u + SL_PASSWORD_WIRE_MAX) + 4u)
/* The largest frame a connection that has not logged in may declare: every
 * request allowed before a login (Ping, LoginRegister, LoginRegisterWith-
 * PersonalAccessToken, Logout) fits, with 2808 bytes to spare for a login
 * context, which the server ignores and both SDKs leave empty. A larger
 * declaration closes the connection before anything is reserved for it, so
 * an unauthenticated client pins at most this much frame memory. */
#define SL_UNAUTH_FRAME_MAX 4096u

/* --- telemetry (server/otel.h, docs/configuration.md "[telemetry]") ------ */

/* Spans waiting for the exporter thread (about 200 bytes each): at the
 * default sampling a second of the busiest loop fits many times over. */
#define SL_OTEL_SPAN_QUEUE 8192u
/* Log records waiting for it (about 1 KiB each; the per-site rate limit
 * bounds what reaches the queue). */
#define SL_OTEL_LOG_QUEUE 1024u
/* Records per export request; the exporter is woken when a queue has
 * gathered this many, else every SL_OTEL_EXPORT_INTERVAL_MS. */
#define SL_OTEL_EXPORT_BATCH 512u
#define SL_OTEL_EXPORT_INTERVAL_MS 1000u
/* One export request may take this long (connect included), so a collector
 * that does not answer costs the exporter thread, never the loop, a bounded
 * wait; its records are dropped and counted. */
#define SL_OTEL_EXPORT_TIMEOUT_MS 5000u
#define SL_OTEL_CONNECT_TIMEOUT_MS 1000u
/* Bytes of a log message carried into a record: a whole formatted line. */
#define SL_OTEL_LOG_TEXT_MAX 1024u
/* Capacity of telemetry.*.endpoint and telemetry.service_name, terminator
 * included. */
#define SL_OTEL_ENDPOINT_CAPACITY 1024u
#define SL_OTEL_SERVICE_NAME_CAPACITY 256u

/* --- relations between limits ------------------------------------------- */

_Static_assert(SL_FRAME_MAX_DEFAULT > SL_HEADER_SIZE + SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE,
               "a frame must hold at least one message");
_Static_assert(SL_OPTIONS_BYTES_MAX < SL_FRAME_MAX_DEFAULT, "a frame must hold a full options block");
_Static_assert(SL_LOGIN_BODY_MAX == 1032u, "the login body arithmetic of the comment");
_Static_assert(SL_UNAUTH_FRAME_MAX >= SL_HEADER_SIZE + SL_LOGIN_BODY_MAX,
               "a connection that has not logged in can send the largest login");
_Static_assert(SL_UNAUTH_FRAME_MAX <= 1024u * 1024u,
               "the pre-login cap stays below the smallest max_message_size");
_Static_assert(SL_SEGMENT_SIZE_DEFAULT % SL_SEGMENT_SIZE_ALIGN == 0, "default segment size aligned");
_Static_assert(SL_TOKEN_TEXT_LEN == (SL_TOKEN_RAW_BYTES + 2) / 3 * 4, "token is base64 of raw bytes");
_Static_assert(SL_TOKEN_TEXT_LEN <= SL_NAME_LEN_MAX, "token fits a u8 length");

_Static_assert((SL_OTEL_SPAN_QUEUE & (SL_OTEL_SPAN_QUEUE - 1)) == 0 &&
                   (SL_OTEL_LOG_QUEUE & (SL_OTEL_LOG_QUEUE - 1)) == 0,
               "telemetry queues index by mask");
_Static_assert(SL_OTEL_EXPORT_BATCH <= SL_OTEL_LOG_QUEUE && SL_OTEL_EXPORT_BATCH <= SL_OTEL_SPAN_QUEUE,
               "a batch fits in each queue");

#endif
