/* The command table: one row per command code of protocol 0.11.0
 * (shared/protocol/framing.md 4.1, commands.md 1.9). The server's dispatch,
 * the client library and docs/compatibility.md are all driven from it.
 *
 * SL_COMMANDS(X) expands X(SYMBOL, code, "Name", request_operation,
 * committed_reply_operation, plane, reply_framed, stem) once per command.
 * `stem` names the typed codec in wire/cmd_*.h: sl_<stem>_request_t,
 * sl_<stem>_reply_t and their four functions (wire/codec.h). */
#ifndef SL_WIRE_COMMAND_H
#define SL_WIRE_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"

typedef enum sl_plane {
    SL_PLANE_READ,      /* operation 2: reads and ping, not replicated */
    SL_PLANE_SESSION,   /* Register (1) and Logout (3) */
    SL_PLANE_METADATA,  /* operations 128..149 */
    SL_PLANE_SEGMENTS,  /* DeleteSegments: 138, committed as 68 */
    SL_PLANE_PARTITION, /* operations 160..162 */
    SL_PLANE_LEGACY,    /* 38 and 44: refused with eviction 15 */
} sl_plane_t;

/* clang-format off */
#define SL_COMMANDS(X) \
    X(PING,                        1, "Ping",                          2,   2,  SL_PLANE_READ,      false, ping) \
    X(GET_STATS,                  10, "GetStats",                      2,   2,  SL_PLANE_READ,      false, get_stats) \
    X(GET_SNAPSHOT,               11, "GetSnapshot",                   2,   2,  SL_PLANE_READ,      false, get_snapshot) \
    X(GET_CLUSTER_METADATA,       12, "GetClusterMetadata",            2,   2,  SL_PLANE_READ,      false, get_cluster_metadata) \
    X(DESCRIBE_OPTIONS,           13, "DescribeOptions",               2,   2,  SL_PLANE_READ,      false, describe_options) \
    X(GET_ME,                     20, "GetMe",                         2,   2,  SL_PLANE_READ,      false, get_me) \
    X(GET_CLIENT,                 21, "GetClient",                     2,   2,  SL_PLANE_READ,      false, get_client) \
    X(GET_CLIENTS,                22, "GetClients",                    2,   2,  SL_PLANE_READ,      false, get_clients) \
    X(GET_USER,                   31, "GetUser",                       2,   2,  SL_PLANE_READ,      false, get_user) \
    X(GET_USERS,                  32, "GetUsers",                      2,   2,  SL_PLANE_READ,      false, get_users) \
    X(CREATE_USER,                33, "CreateUser",                    141, 141, SL_PLANE_METADATA, true,  create_user) \
    X(DELETE_USER,                34, "DeleteUser",                    143, 143, SL_PLANE_METADATA, true,  delete_user) \
    X(UPDATE_USER,                35, "UpdateUser",                    142, 142, SL_PLANE_METADATA, true,  update_user) \
    X(UPDATE_PERMISSIONS,         36, "UpdatePermissions",             145, 145, SL_PLANE_METADATA, true,  update_permissions) \
    X(CHANGE_PASSWORD,            37, "ChangePassword",                144, 144, SL_PLANE_METADATA, true,  change_password) \
    X(LOGIN_USER,                 38, "LoginUser",                     2,   2,  SL_PLANE_LEGACY,    false, login_user) \
    X(LOGOUT_USER,                39, "LogoutUser",                    3,   3,  SL_PLANE_SESSION,   false, logout_user) \
    X(LOGIN_REGISTER,             40, "LoginRegister",                 1,   1,  SL_PLANE_SESSION,   true,  login_register) \
    X(GET_PERSONAL_ACCESS_TOKENS, 41, "GetPersonalAccessTokens",       2,   2,  SL_PLANE_READ,      false, get_personal_access_tokens) \
    X(CREATE_PERSONAL_ACCESS_TOKEN, 42, "CreatePersonalAccessToken",   146, 146, SL_PLANE_METADATA, true,  create_personal_access_token) \
    X(DELETE_PERSONAL_ACCESS_TOKEN, 43, "DeletePersonalAccessToken",   147, 147, SL_PLANE_METADATA, true,  delete_personal_access_token) \
    X(LOGIN_WITH_PERSONAL_ACCESS_TOKEN, 44, "LoginWithPersonalAccessToken", 2, 2, SL_PLANE_LEGACY,  false, login_with_personal_access_token) \
    X(LOGIN_REGISTER_WITH_PAT,    45, "LoginRegisterWithPat",          1,   1,  SL_PLANE_SESSION,   true,  login_register_with_pat) \
    X(POLL_MESSAGES,             100, "PollMessages",                  2,   2,  SL_PLANE_READ,      false, poll_messages) \
    X(SEND_MESSAGES,             101, "SendMessages",                  160, 160, SL_PLANE_PARTITION, false, send_messages) \
    X(FLUSH_UNSAVED_BUFFER,      102, "FlushUnsavedBuffer",            2,   2,  SL_PLANE_READ,      false, flush_unsaved_buffer) \
    X(GET_CONSUMER_OFFSET,       120, "GetConsumerOffset",             2,   2,  SL_PLANE_READ,      false, get_consumer_offset) \
    X(STORE_CONSUMER_OFFSET,     121, "StoreConsumerOffset",           161, 161, SL_PLANE_PARTITION, true, store_consumer_offset) \
    X(DELETE_CONSUMER_OFFSET,    122, "DeleteConsumerOffset",          162, 162, SL_PLANE_PARTITION, true, delete_consumer_offset) \
    X(GET_STREAM,                200, "GetStream",                     2,   2,  SL_PLANE_READ,      false, get_stream) \
    X(GET_STREAMS,               201, "GetStreams",                    2,   2,  SL_PLANE_READ,      false, get_streams) \
    X(CREATE_STREAM,             202, "CreateStream",                  128, 128, SL_PLANE_METADATA, true,  create_stream) \
    X(DELETE_STREAM,             203, "DeleteStream",                  130, 130, SL_PLANE_METADATA, true,  delete_stream) \
    X(UPDATE_STREAM,             204, "UpdateStream",                  129, 129, SL_PLANE_METADATA, true,  update_stream) \
    X(PURGE_STREAM,              205, "PurgeStream",                   131, 131, SL_PLANE_METADATA, true,  purge_stream) \
    X(GET_TOPIC,                 300, "GetTopic",                      2,   2,  SL_PLANE_READ,      false, get_topic) \
    X(GET_TOPICS,                301, "GetTopics",                     2,   2,  SL_PLANE_READ,      false, get_topics) \
    X(CREATE_TOPIC,              302, "CreateTopic",                   132, 64, SL_PLANE_METADATA,  true,  create_topic) \
    X(DELETE_TOPIC,              303, "DeleteTopic",                   134, 134, SL_PLANE_METADATA, true,  delete_topic) \
    X(UPDATE_TOPIC,              304, "UpdateTopic",                   133, 133, SL_PLANE_METADATA, true,  update_topic) \
    X(PURGE_TOPIC,               305, "PurgeTopic",                    135, 135, SL_PLANE_METADATA, true,  purge_topic) \
    X(CREATE_PARTITIONS,         402, "CreatePartitions",              136, 65, SL_PLANE_METADATA,  true,  create_partitions) \
    X(DELETE_PARTITIONS,         403, "DeletePartitions",              137, 137, SL_PLANE_METADATA, true,  delete_partitions) \
    X(DELETE_SEGMENTS,           503, "DeleteSegments",                138, 68, SL_PLANE_SEGMENTS,  true,  delete_segments) \
    X(GET_CONSUMER_GROUP,        600, "GetConsumerGroup",              2,   2,  SL_PLANE_READ,      false, get_consumer_group) \
    X(GET_CONSUMER_GROUPS,       601, "GetConsumerGroups",             2,   2,  SL_PLANE_READ,      false, get_consumer_groups) \
    X(CREATE_CONSUMER_GROUP,     602, "CreateConsumerGroup",           139, 139, SL_PLANE_METADATA, true,  create_consumer_group) \
    X(DELETE_CONSUMER_GROUP,     603, "DeleteConsumerGroup",           140, 140, SL_PLANE_METADATA, true,  delete_consumer_group) \
    X(JOIN_CONSUMER_GROUP,       604, "JoinConsumerGroup",             148, 148, SL_PLANE_METADATA, true,  join_consumer_group) \
    X(LEAVE_CONSUMER_GROUP,      605, "LeaveConsumerGroup",            149, 149, SL_PLANE_METADATA, true,  leave_consumer_group) \
    X(SYNC_CONSUMER_GROUP,       606, "SyncConsumerGroup",             2,   2,  SL_PLANE_READ,      false, sync_consumer_group)
/* clang-format on */

typedef enum sl_command_code {
#define SL_X_CODE(sym, code, name, op, rop, plane, framed, stem) SL_CMD_##sym = code,
    SL_COMMANDS(SL_X_CODE)
#undef SL_X_CODE
} sl_command_code_t;

typedef struct sl_command {
    uint32_t code;
    const char *name;
    const char *stem;
    uint8_t operation;       /* request header operation byte */
    uint8_t reply_operation; /* operation of a committed reply (64/65/68 rewrites) */
    sl_plane_t plane;
    bool reply_framed; /* committed reply starts with a result section */
    size_t request_size;
    size_t reply_size;
    int (*request_decode)(sl_span_t body, void *out);
    int (*request_encode)(sl_buf_t *b, const void *in);
    int (*reply_decode)(sl_span_t payload, sl_arena_t *arena, void *out);
    int (*reply_encode)(sl_buf_t *b, const void *in);
} sl_command_t;

extern const sl_command_t sl_commands[];
extern const size_t sl_commands_count;

/* The row of a command code, or NULL. */
const sl_command_t *sl_command_by_code(uint32_t code);
/* The row of a replicated operation (128..162, 1 is LoginRegister's row, 3
 * Logout's), or NULL for 2 and undeclared values. */
const sl_command_t *sl_command_by_operation(uint8_t operation);
const char *sl_plane_name(sl_plane_t plane);

#endif
