/* The permission set encoding (shared/protocol/permissions.md 1) and the
 * rules of section 2.2 evaluated over an unpacked set.
 *
 * On the wire a set is 10 global flags, then an optional list of stream
 * grants, each with an optional list of topic grants. sl_permissions_parse
 * validates the bytes without allocating; sl_permissions_unpack copies them
 * into arrays placed in a caller's arena. Writers emit flags as 0/1; readers
 * take any non-zero byte as true. */
#ifndef SL_WIRE_PERMS_H
#define SL_WIRE_PERMS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"

typedef struct sl_topic_perms {
    uint32_t topic_id;
    bool manage_topic;
    bool read_topic;
    bool poll_messages;
    bool send_messages;
} sl_topic_perms_t;

typedef struct sl_stream_perms {
    uint32_t stream_id;
    bool manage_stream;
    bool read_stream;
    bool manage_topics;
    bool read_topics;
    bool poll_messages;
    bool send_messages;
    uint32_t topics_count;
    sl_topic_perms_t *topics;
} sl_stream_perms_t;

typedef struct sl_permissions {
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
    sl_stream_perms_t *streams;
} sl_permissions_t;

/* Reads one encoded set from r (no length prefix); false when malformed.
 * *raw gets the exact bytes of the set. Work is linear in the input:
 * every grant consumes bytes. */
bool sl_permissions_parse(sl_reader_t *r, sl_span_t *raw);
/* Unpacks a set that parsed into arrays allocated from arena. */
bool sl_permissions_unpack(sl_span_t raw, sl_arena_t *arena, sl_permissions_t *out);
/* Appends the encoding of p (flags written 0/1). */
bool sl_permissions_encode(sl_buf_t *b, const sl_permissions_t *p);
/* All ten global flags set, no stream grants: the root user's set. */
sl_permissions_t sl_permissions_root(void);

/* The rules of permissions.md 2.2. stream_id/topic_id name the target. */
typedef enum sl_perm_rule {
    SL_PERM_SERVER_INFO,
    SL_PERM_READ_USERS,
    SL_PERM_MANAGE_USERS,
    SL_PERM_CREATE_STREAM,
    SL_PERM_GET_STREAMS,
    SL_PERM_GET_STREAM,
    SL_PERM_MANAGE_STREAM,
    SL_PERM_GET_TOPICS,
    SL_PERM_GET_TOPIC,
    SL_PERM_CREATE_TOPIC,
    SL_PERM_MANAGE_TOPIC,
    SL_PERM_POLL_MESSAGES,
    SL_PERM_SEND_MESSAGES,
} sl_perm_rule_t;

bool sl_permissions_allow(const sl_permissions_t *p, sl_perm_rule_t rule, uint32_t stream_id,
                          uint32_t topic_id);

#endif
