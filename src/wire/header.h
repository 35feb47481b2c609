/* The 256-byte frame headers: Request (client to server), Reply and
 * Eviction (server to client), the operation discriminants and the packed
 * protocol version (shared/protocol/framing.md, lifecycle.md 1).
 *
 * Headers are read and written by offset with explicit little-endian
 * conversion; no C struct is ever cast over wire bytes. */
#ifndef SL_WIRE_HEADER_H
#define SL_WIRE_HEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bytes.h"
#include "base/limits.h"

/* --- offsets (framing.md 1.1, 3, 7, 8) -------------------------------- */

enum {
    SL_HDR_OFF_CHECKSUM = 0,
    SL_HDR_OFF_CHECKSUM_BODY = 16,
    SL_HDR_OFF_CLUSTER = 32,
    SL_HDR_OFF_SIZE = 48,
    SL_HDR_OFF_VIEW = 52,
    SL_HDR_OFF_RELEASE = 56,
    SL_HDR_OFF_COMMAND = 60,
    SL_HDR_OFF_REPLICA = 61,
    /* request */
    SL_REQ_OFF_CLIENT = 128,
    SL_REQ_OFF_REQUEST_CHECKSUM = 144,
    SL_REQ_OFF_TIMESTAMP = 160,
    SL_REQ_OFF_REQUEST = 168,
    SL_REQ_OFF_OPERATION = 176,
    SL_REQ_OFF_SESSION = 184,
    SL_REQ_OFF_USER_ID = 192,
    SL_REQ_OFF_CODE = 196,
    /* reply */
    SL_REP_OFF_REQUEST_CHECKSUM = 128,
    SL_REP_OFF_CONTEXT = 144,
    SL_REP_OFF_CLIENT = 160,
    SL_REP_OFF_OP = 176,
    SL_REP_OFF_COMMIT = 184,
    SL_REP_OFF_TIMESTAMP = 192,
    SL_REP_OFF_REQUEST = 200,
    SL_REP_OFF_OPERATION = 208,
    SL_REP_OFF_STATUS = 216,
    /* eviction */
    SL_EVI_OFF_CLIENT = 128,
    SL_EVI_OFF_VERSION_MAX = 144,
    SL_EVI_OFF_VERSION_MIN = 148,
    SL_EVI_OFF_REASON = 255,
};

/* `command` byte values a client connection sees (framing.md 2). */
enum {
    SL_COMMAND_REQUEST = 5,
    SL_COMMAND_REPLY = 8,
    SL_COMMAND_EVICTION = 13,
};

/* --- operations (framing.md 4) -------------------------------------- */

typedef enum sl_op {
    SL_OP_RESERVED = 0,
    SL_OP_REGISTER = 1,
    SL_OP_NON_REPLICATED = 2,
    SL_OP_LOGOUT = 3,
    SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS = 64,
    SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS = 65,
    SL_OP_REMOVE_CONSUMER_GROUP_MEMBER = 66,
    SL_OP_COMPLETE_CONSUMER_GROUP_REVOCATION = 67,
    SL_OP_TRUNCATE_PARTITION = 68,
    SL_OP_CREATE_STREAM = 128,
    SL_OP_UPDATE_STREAM = 129,
    SL_OP_DELETE_STREAM = 130,
    SL_OP_PURGE_STREAM = 131,
    SL_OP_CREATE_TOPIC = 132,
    SL_OP_UPDATE_TOPIC = 133,
    SL_OP_DELETE_TOPIC = 134,
    SL_OP_PURGE_TOPIC = 135,
    SL_OP_CREATE_PARTITIONS = 136,
    SL_OP_DELETE_PARTITIONS = 137,
    SL_OP_DELETE_SEGMENTS = 138,
    SL_OP_CREATE_CONSUMER_GROUP = 139,
    SL_OP_DELETE_CONSUMER_GROUP = 140,
    SL_OP_CREATE_USER = 141,
    SL_OP_UPDATE_USER = 142,
    SL_OP_DELETE_USER = 143,
    SL_OP_CHANGE_PASSWORD = 144,
    SL_OP_UPDATE_PERMISSIONS = 145,
    SL_OP_CREATE_PERSONAL_ACCESS_TOKEN = 146,
    SL_OP_DELETE_PERSONAL_ACCESS_TOKEN = 147,
    SL_OP_JOIN_CONSUMER_GROUP = 148,
    SL_OP_LEAVE_CONSUMER_GROUP = 149,
    SL_OP_SEND_MESSAGES = 160,
    SL_OP_STORE_CONSUMER_OFFSET = 161,
    SL_OP_DELETE_CONSUMER_OFFSET = 162,
} sl_op_t;

/* A discriminant the protocol declares (0 is not). */
bool sl_op_declared(uint8_t op);
/* Server-internal operations 64..127 (declared ones are 64..68). */
bool sl_op_internal(uint8_t op);
/* Metadata plane: internal ones plus 128..149 except 138. */
bool sl_op_metadata(uint8_t op);
/* Partition plane: 160..162. */
bool sl_op_partition(uint8_t op);
/* Whether a reply with this operation carries a result section (framing.md
 * 7.1). Register replies are framed only when their body is non-empty, so
 * this says false for Register; callers check the body themselves. */
bool sl_op_result_framed(uint8_t op);
/* The protocol name of an operation ("CreateStream"), or NULL. */
const char *sl_op_name(uint8_t op);

/* --- packed protocol version (lifecycle.md 1) ----------------------------- */

#define SL_PROTOCOL_VERSION 0x00002C00u     /* 0.11.0 */
#define SL_PROTOCOL_VERSION_MIN 0x00002C00u /* server version, patch zeroed */

static inline uint32_t sl_version_pack(uint32_t major, uint32_t minor, uint32_t patch)
{
    return (major << 20) | (minor << 10) | patch;
}
/* Packs "major.minor.patch[-pre][+build]"; 0 when the text does not parse
 * or a component is 1024 or more. */
uint32_t sl_version_parse(const char *text);
/* The server-side gate: accepted iff min <= client and client's
 * major.minor <= server's major.minor. */
bool sl_version_compatible(uint32_t client, uint32_t server, uint32_t min);

/* --- request header (framing.md 3) -------------------------------------- */

typedef struct sl_request_header {
    uint32_t size; /* whole frame, header included */
    sl_u128_t client;
    sl_u128_t request_checksum; /* 0: not stamped */
    uint64_t timestamp;
    uint64_t request;
    uint8_t operation;
    uint64_t session;
    uint32_t user_id;
    uint32_t code; /* command code; only with operation 2 */
} sl_request_header_t;

/* What a server does with a received header (framing.md 9). */
typedef enum sl_hdr_verdict {
    SL_HDR_OK = 0,
    SL_HDR_BAD_SIZE,      /* size < 256 or above the frame limit: close */
    SL_HDR_BAD_COMMAND,   /* command byte > 29: not a header at all: close */
    SL_HDR_NOT_REQUEST,   /* a valid header type other than Request: ignore */
    SL_HDR_BAD_OPERATION, /* operation 0 or undeclared: drop (Sluice: evict 4) */
    SL_HDR_ZERO_CLIENT,   /* client id 0: drop */
    SL_HDR_BAD_NUMBERING, /* session/request rules of the operation broken: drop */
} sl_hdr_verdict_t;

const char *sl_hdr_verdict_name(sl_hdr_verdict_t v);

/* The size field of any header (offset 48). */
static inline uint32_t sl_header_size(const uint8_t *hdr)
{
    return sl_load_u32(hdr + SL_HDR_OFF_SIZE);
}
static inline uint8_t sl_header_command(const uint8_t *hdr)
{
    return hdr[SL_HDR_OFF_COMMAND];
}

/* Checks size (256..frame_max) and the command byte, then the Request
 * fields of framing.md 3; fills out whenever the verdict is OK. */
sl_hdr_verdict_t sl_request_header_decode(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max,
                                          sl_request_header_t *out);
/* Writes all 256 bytes (reserved ones zero, command 5). */
void sl_request_header_encode(uint8_t hdr[SL_HEADER_SIZE], const sl_request_header_t *h);
/* True when the stamp is 0 or equals XXH3-64 of body, zero-extended. */
bool sl_request_checksum_ok(sl_u128_t stamp, sl_span_t body);
/* XXH3-64 of body zero-extended to u128 (what a stamping client sends). */
sl_u128_t sl_request_checksum(sl_span_t body);

/* --- reply header (framing.md 7) ----------------------------------------- */

typedef struct sl_reply_header {
    sl_u128_t cluster;
    uint32_t size;
    uint32_t view;
    uint32_t release;
    uint8_t replica;
    sl_u128_t request_checksum;
    sl_u128_t context;
    sl_u128_t client;
    uint64_t op;
    uint64_t commit;
    uint64_t timestamp;
    uint64_t request;
    uint8_t operation;
    uint32_t status; /* 0, or an error code with an empty body */
} sl_reply_header_t;

void sl_reply_header_encode(uint8_t hdr[SL_HEADER_SIZE], const sl_reply_header_t *h);
/* Client side, after the command byte said Reply: size 256..frame_max,
 * command 8, declared operation, and a non-zero status only with an empty
 * body. Returns 0 or -SL_ERR_INVALID_COMMAND. */
int sl_reply_header_decode(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max,
                           sl_reply_header_t *out) SL_WUR;

/* --- eviction header (framing.md 8) --------------------------------------- */

typedef enum sl_evict_reason {
    SL_EVICT_NO_SESSION = 1,
    SL_EVICT_CLIENT_RELEASE_TOO_LOW = 2,
    SL_EVICT_CLIENT_RELEASE_TOO_HIGH = 3,
    SL_EVICT_INVALID_REQUEST_OPERATION = 4,
    SL_EVICT_INVALID_REQUEST_BODY = 5,
    SL_EVICT_INVALID_REQUEST_BODY_SIZE = 6,
    SL_EVICT_SESSION_TOO_LOW = 7,
    SL_EVICT_SESSION_RELEASE_MISMATCH = 8,
    SL_EVICT_INVALID_CREDENTIALS = 9,
    SL_EVICT_INVALID_TOKEN = 10,
    SL_EVICT_USER_INACTIVE = 11,
    SL_EVICT_SESSION_ERROR = 12,
    SL_EVICT_STALE_CLIENT = 13,
    SL_EVICT_INCOMPATIBLE_PROTOCOL = 14,
    SL_EVICT_MALFORMED_LOGIN = 15,
} sl_evict_reason_t;

typedef struct sl_eviction_header {
    sl_u128_t cluster;
    uint32_t view;
    uint8_t replica;
    sl_u128_t client;
    uint32_t version_max; /* reason 14 only */
    uint32_t version_min; /* reason 14 only */
    uint8_t reason;
} sl_eviction_header_t;

void sl_eviction_header_encode(uint8_t hdr[SL_HEADER_SIZE], const sl_eviction_header_t *h);
/* Every receiver rule of framing.md 8; 0 or -SL_ERR_INVALID_COMMAND. */
int sl_eviction_header_decode(const uint8_t hdr[SL_HEADER_SIZE], sl_eviction_header_t *out) SL_WUR;
/* The error a client reports for an eviction (errors.md 1.4), positive. */
int sl_eviction_error(const sl_eviction_header_t *h);
const char *sl_evict_reason_name(uint8_t reason);

#endif
