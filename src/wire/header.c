/* Frame headers, operations and the version gate (wire/header.h). */
#include "wire/header.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"

/* --- operations ----------------------------------------------------------- */

typedef struct {
    uint8_t op;
    const char *name;
} op_name_t;

static const op_name_t op_names[] = {
    {1, "Register"},
    {2, "NonReplicated"},
    {3, "Logout"},
    {64, "CreateTopicWithAssignments"},
    {65, "CreatePartitionsWithAssignments"},
    {66, "RemoveConsumerGroupMember"},
    {67, "CompleteConsumerGroupRevocation"},
    {68, "TruncatePartition"},
    {128, "CreateStream"},
    {129, "UpdateStream"},
    {130, "DeleteStream"},
    {131, "PurgeStream"},
    {132, "CreateTopic"},
    {133, "UpdateTopic"},
    {134, "DeleteTopic"},
    {135, "PurgeTopic"},
    {136, "CreatePartitions"},
    {137, "DeletePartitions"},
    {138, "DeleteSegments"},
    {139, "CreateConsumerGroup"},
    {140, "DeleteConsumerGroup"},
    {141, "CreateUser"},
    {142, "UpdateUser"},
    {143, "DeleteUser"},
    {144, "ChangePassword"},
    {145, "UpdatePermissions"},
    {146, "CreatePersonalAccessToken"},
    {147, "DeletePersonalAccessToken"},
    {148, "JoinConsumerGroup"},
    {149, "LeaveConsumerGroup"},
    {160, "SendMessages"},
    {161, "StoreConsumerOffset"},
    {162, "DeleteConsumerOffset"},
};

const char *sl_op_name(uint8_t op)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(op_names); i++)
        if (op_names[i].op == op)
            return op_names[i].name;
    return NULL;
}

bool sl_op_declared(uint8_t op)
{
    return (op >= 1 && op <= 3) || (op >= 64 && op <= 68) || (op >= 128 && op <= 149) ||
           (op >= 160 && op <= 162);
}

bool sl_op_internal(uint8_t op)
{
    return op >= 64 && op <= 127;
}

bool sl_op_metadata(uint8_t op)
{
    return sl_op_internal(op) || (op >= 128 && op <= 149 && op != SL_OP_DELETE_SEGMENTS);
}

bool sl_op_partition(uint8_t op)
{
    return op >= 160;
}

bool sl_op_result_framed(uint8_t op)
{
    return sl_op_metadata(op) || op == SL_OP_STORE_CONSUMER_OFFSET ||
           op == SL_OP_DELETE_CONSUMER_OFFSET;
}

/* --- version ----------------------------------------------------------------- */

static bool parse_component(const char **s, uint32_t *out)
{
    const char *p = *s;
    uint32_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (uint32_t)(*p - '0');
        if (v >= 1024)
            return false;
        p++;
    }
    *s = p;
    *out = v;
    return true;
}

uint32_t sl_version_parse(const char *text)
{
    uint32_t major, minor, patch;
    const char *p = text;
    if (!parse_component(&p, &major) || *p++ != '.' || !parse_component(&p, &minor) ||
        *p++ != '.' || !parse_component(&p, &patch))
        return 0;
    if (*p != '\0' && *p != '-' && *p != '+')
        return 0;
    return sl_version_pack(major, minor, patch);
}

bool sl_version_compatible(uint32_t client, uint32_t server, uint32_t min)
{
    return client >= min && (client >> 10) <= (server >> 10);
}

/* --- request header ------------------------------------------------------------ */

const char *sl_hdr_verdict_name(sl_hdr_verdict_t v)
{
    switch (v) {
    case SL_HDR_OK:
        return "ok";
    case SL_HDR_BAD_SIZE:
        return "size out of range";
    case SL_HDR_BAD_COMMAND:
        return "command byte above 29";
    case SL_HDR_NOT_REQUEST:
        return "not a request";
    case SL_HDR_BAD_OPERATION:
        return "operation not declared";
    case SL_HDR_ZERO_CLIENT:
        return "client id 0";
    case SL_HDR_BAD_NUMBERING:
        return "session/request numbering";
    }
    return "?";
}

sl_hdr_verdict_t sl_request_header_decode(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max,
                                          sl_request_header_t *out)
{
    uint32_t size = sl_header_size(hdr);
    if (size < SL_HEADER_SIZE || size > frame_max)
        return SL_HDR_BAD_SIZE;
    uint8_t command = sl_header_command(hdr);
    if (command > SL_COMMAND_BYTE_MAX)
        return SL_HDR_BAD_COMMAND;
    if (command != SL_COMMAND_REQUEST)
        return SL_HDR_NOT_REQUEST;

    sl_request_header_t h = {
        .size = size,
        .client = sl_load_u128(hdr + SL_REQ_OFF_CLIENT),
        .request_checksum = sl_load_u128(hdr + SL_REQ_OFF_REQUEST_CHECKSUM),
        .timestamp = sl_load_u64(hdr + SL_REQ_OFF_TIMESTAMP),
        .request = sl_load_u64(hdr + SL_REQ_OFF_REQUEST),
        .operation = hdr[SL_REQ_OFF_OPERATION],
        .session = sl_load_u64(hdr + SL_REQ_OFF_SESSION),
        .user_id = sl_load_u32(hdr + SL_REQ_OFF_USER_ID),
        .code = sl_load_u32(hdr + SL_REQ_OFF_CODE),
    };
    if (!sl_op_declared(h.operation))
        return SL_HDR_BAD_OPERATION;
    if (sl_u128_is_zero(h.client))
        return SL_HDR_ZERO_CLIENT;
    if (h.operation == SL_OP_REGISTER) {
        if (h.session != 0 || h.request != 0)
            return SL_HDR_BAD_NUMBERING;
    } else if (h.operation != SL_OP_NON_REPLICATED) {
        if (h.session == 0 || h.request == 0)
            return SL_HDR_BAD_NUMBERING;
    }
    *out = h;
    return SL_HDR_OK;
}

void sl_request_header_encode(uint8_t hdr[SL_HEADER_SIZE], const sl_request_header_t *h)
{
    memset(hdr, 0, SL_HEADER_SIZE);
    sl_store_u32(hdr + SL_HDR_OFF_SIZE, h->size);
    hdr[SL_HDR_OFF_COMMAND] = SL_COMMAND_REQUEST;
    sl_store_u128(hdr + SL_REQ_OFF_CLIENT, h->client);
    sl_store_u128(hdr + SL_REQ_OFF_REQUEST_CHECKSUM, h->request_checksum);
    sl_store_u64(hdr + SL_REQ_OFF_TIMESTAMP, h->timestamp);
    sl_store_u64(hdr + SL_REQ_OFF_REQUEST, h->request);
    hdr[SL_REQ_OFF_OPERATION] = h->operation;
    sl_store_u64(hdr + SL_REQ_OFF_SESSION, h->session);
    sl_store_u32(hdr + SL_REQ_OFF_USER_ID, h->user_id);
    sl_store_u32(hdr + SL_REQ_OFF_CODE, h->operation == SL_OP_NON_REPLICATED ? h->code : 0);
}

sl_u128_t sl_request_checksum(sl_span_t body)
{
    return (sl_u128_t){sl_xxh3_64(body.ptr, body.len), 0};
}

bool sl_request_checksum_ok(sl_u128_t stamp, sl_span_t body)
{
    if (sl_u128_is_zero(stamp))
        return true;
    return sl_u128_eq(stamp, sl_request_checksum(body));
}

/* --- reply header ---------------------------------------------------------------- */

void sl_reply_header_encode(uint8_t hdr[SL_HEADER_SIZE], const sl_reply_header_t *h)
{
    memset(hdr, 0, SL_HEADER_SIZE);
    sl_store_u128(hdr + SL_HDR_OFF_CLUSTER, h->cluster);
    sl_store_u32(hdr + SL_HDR_OFF_SIZE, h->size);
    sl_store_u32(hdr + SL_HDR_OFF_VIEW, h->view);
    sl_store_u32(hdr + SL_HDR_OFF_RELEASE, h->release);
    hdr[SL_HDR_OFF_COMMAND] = SL_COMMAND_REPLY;
    hdr[SL_HDR_OFF_REPLICA] = h->replica;
    sl_store_u128(hdr + SL_REP_OFF_REQUEST_CHECKSUM, h->request_checksum);
    sl_store_u128(hdr + SL_REP_OFF_CONTEXT, h->context);
    sl_store_u128(hdr + SL_REP_OFF_CLIENT, h->client);
    sl_store_u64(hdr + SL_REP_OFF_OP, h->op);
    sl_store_u64(hdr + SL_REP_OFF_COMMIT, h->commit);
    sl_store_u64(hdr + SL_REP_OFF_TIMESTAMP, h->timestamp);
    sl_store_u64(hdr + SL_REP_OFF_REQUEST, h->request);
    hdr[SL_REP_OFF_OPERATION] = h->operation;
    sl_store_u32(hdr + SL_REP_OFF_STATUS, h->status);
}

int sl_reply_header_decode(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max,
                           sl_reply_header_t *out)
{
    uint32_t size = sl_header_size(hdr);
    if (size < SL_HEADER_SIZE || size > frame_max || sl_header_command(hdr) != SL_COMMAND_REPLY)
        return -SL_ERR_INVALID_COMMAND;
    sl_reply_header_t h = {
        .cluster = sl_load_u128(hdr + SL_HDR_OFF_CLUSTER),
        .size = size,
        .view = sl_load_u32(hdr + SL_HDR_OFF_VIEW),
        .release = sl_load_u32(hdr + SL_HDR_OFF_RELEASE),
        .replica = hdr[SL_HDR_OFF_REPLICA],
        .request_checksum = sl_load_u128(hdr + SL_REP_OFF_REQUEST_CHECKSUM),
        .context = sl_load_u128(hdr + SL_REP_OFF_CONTEXT),
        .client = sl_load_u128(hdr + SL_REP_OFF_CLIENT),
        .op = sl_load_u64(hdr + SL_REP_OFF_OP),
        .commit = sl_load_u64(hdr + SL_REP_OFF_COMMIT),
        .timestamp = sl_load_u64(hdr + SL_REP_OFF_TIMESTAMP),
        .request = sl_load_u64(hdr + SL_REP_OFF_REQUEST),
        .operation = hdr[SL_REP_OFF_OPERATION],
        .status = sl_load_u32(hdr + SL_REP_OFF_STATUS),
    };
    if (!sl_op_declared(h.operation))
        return -SL_ERR_INVALID_COMMAND;
    if (h.status != 0 && h.size != SL_HEADER_SIZE)
        return -SL_ERR_INVALID_COMMAND;
    *out = h;
    return 0;
}

/* --- eviction header ----------------------------------------------------------- */

void sl_eviction_header_encode(uint8_t hdr[SL_HEADER_SIZE], const sl_eviction_header_t *h)
{
    memset(hdr, 0, SL_HEADER_SIZE);
    sl_store_u128(hdr + SL_HDR_OFF_CLUSTER, h->cluster);
    sl_store_u32(hdr + SL_HDR_OFF_SIZE, SL_HEADER_SIZE);
    sl_store_u32(hdr + SL_HDR_OFF_VIEW, h->view);
    hdr[SL_HDR_OFF_COMMAND] = SL_COMMAND_EVICTION;
    hdr[SL_HDR_OFF_REPLICA] = h->replica;
    sl_store_u128(hdr + SL_EVI_OFF_CLIENT, h->client);
    if (h->reason == SL_EVICT_INCOMPATIBLE_PROTOCOL) {
        sl_store_u32(hdr + SL_EVI_OFF_VERSION_MAX, h->version_max);
        sl_store_u32(hdr + SL_EVI_OFF_VERSION_MIN, h->version_min);
    }
    hdr[SL_EVI_OFF_REASON] = h->reason;
}

int sl_eviction_header_decode(const uint8_t hdr[SL_HEADER_SIZE], sl_eviction_header_t *out)
{
    if (sl_header_size(hdr) != SL_HEADER_SIZE || sl_header_command(hdr) != SL_COMMAND_EVICTION)
        return -SL_ERR_INVALID_COMMAND;
    sl_eviction_header_t h = {
        .cluster = sl_load_u128(hdr + SL_HDR_OFF_CLUSTER),
        .view = sl_load_u32(hdr + SL_HDR_OFF_VIEW),
        .replica = hdr[SL_HDR_OFF_REPLICA],
        .client = sl_load_u128(hdr + SL_EVI_OFF_CLIENT),
        .version_max = sl_load_u32(hdr + SL_EVI_OFF_VERSION_MAX),
        .version_min = sl_load_u32(hdr + SL_EVI_OFF_VERSION_MIN),
        .reason = hdr[SL_EVI_OFF_REASON],
    };
    /* release (56..60) and the reserved runs 62..128 and 152..255 are zero. */
    if (sl_load_u32(hdr + SL_HDR_OFF_RELEASE) != 0 || !sl_all_zero(hdr + 62, 128 - 62) ||
        !sl_all_zero(hdr + 152, 255 - 152))
        return -SL_ERR_INVALID_COMMAND;
    if (sl_u128_is_zero(h.client) || h.reason == 0 || h.reason > SL_EVICT_MALFORMED_LOGIN)
        return -SL_ERR_INVALID_COMMAND;
    if (h.reason != SL_EVICT_INCOMPATIBLE_PROTOCOL && (h.version_max | h.version_min) != 0)
        return -SL_ERR_INVALID_COMMAND;
    *out = h;
    return 0;
}

int sl_eviction_error(const sl_eviction_header_t *h)
{
    switch (h->reason) {
    case SL_EVICT_NO_SESSION:
    case SL_EVICT_SESSION_TOO_LOW:
    case SL_EVICT_SESSION_RELEASE_MISMATCH:
    case SL_EVICT_USER_INACTIVE:
    case SL_EVICT_SESSION_ERROR:
        return SL_ERR_UNAUTHENTICATED;
    case SL_EVICT_CLIENT_RELEASE_TOO_LOW:
    case SL_EVICT_CLIENT_RELEASE_TOO_HIGH:
    case SL_EVICT_INVALID_REQUEST_OPERATION:
    case SL_EVICT_INVALID_REQUEST_BODY:
    case SL_EVICT_INVALID_REQUEST_BODY_SIZE:
        return SL_ERR_INVALID_COMMAND;
    case SL_EVICT_INVALID_CREDENTIALS:
        return SL_ERR_INVALID_CREDENTIALS;
    case SL_EVICT_INVALID_TOKEN:
        return SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN;
    case SL_EVICT_STALE_CLIENT:
        return SL_ERR_STALE_CLIENT;
    case SL_EVICT_INCOMPATIBLE_PROTOCOL:
        if (h->version_min == 0 || h->version_max < h->version_min)
            return SL_ERR_UNAUTHENTICATED;
        return SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION;
    case SL_EVICT_MALFORMED_LOGIN:
        return SL_ERR_INVALID_FORMAT;
    }
    return SL_ERR_INVALID_COMMAND;
}

const char *sl_evict_reason_name(uint8_t reason)
{
    static const char *const names[] = {
        "Reserved",           "NoSession",          "ClientReleaseTooLow",
        "ClientReleaseTooHigh", "InvalidRequestOperation", "InvalidRequestBody",
        "InvalidRequestBodySize", "SessionTooLow",  "SessionReleaseMismatch",
        "InvalidCredentials", "InvalidToken",       "UserInactive",
        "SessionError",       "StaleClient",        "IncompatibleProtocol",
        "MalformedLogin",
    };
    return reason < SL_ARRAY_LEN(names) ? names[reason] : NULL;
}
