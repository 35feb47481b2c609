/* Codecs of the consumer-group commands 600-606 (shared/protocol/commands.md
 * 2.7 and 11), following the conventions of wire/codec.h.
 *
 * Requests name a group by [stream Identifier][topic Identifier][group
 * Identifier] (CreateConsumerGroup gives a Name instead of the group). They
 * are fixed-shape: trailing bytes after the last field are ignored, and an
 * undecodable body is -SL_ERR_INVALID_COMMAND. The server answers that with
 * status 3, except for SyncConsumerGroup, whose undecodable body the
 * reference answers with an empty payload (found = false).
 *
 * Replies: GroupHeader lists, GroupDetails (header plus members) and the
 * Sync assignment. Decoded names borrow the payload; member and partition
 * arrays come from the caller's arena and live as long as it does. */
#ifndef SL_WIRE_CMD_GROUPS_H
#define SL_WIRE_CMD_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "wire/codec.h"
#include "wire/prim.h"

/* --- shared shapes ---------------------------------------------------------- */

/* [stream Identifier][topic Identifier][group Identifier]. */
typedef struct sl_group_target {
    sl_ident_t stream;
    sl_ident_t topic;
    sl_ident_t group;
} sl_group_target_t;

/* GroupHeader (commands.md 2.7): 13 bytes plus the name. */
typedef struct sl_group_header {
    uint32_t id;               /* per-topic group id */
    uint32_t partitions_count; /* the topic's partition count */
    uint32_t members_count;    /* in GroupDetails: the entries of `members` */
    sl_span_t name;            /* 1..255 bytes UTF-8 */
} sl_group_header_t;

/* One member of GroupDetails: the partitions it owns. */
typedef struct sl_group_member {
    uint32_t id;
    uint32_t partitions_count;
    const uint32_t *partitions;
} sl_group_member_t;

/* GroupDetails = GroupHeader, then header.members_count members. */
typedef struct sl_group_details {
    sl_group_header_t header;
    const sl_group_member_t *members;
} sl_group_details_t;

/* Appends GroupDetails; false when a name or a count cannot be encoded. */
bool sl_group_details_encode(sl_buf_t *b, const sl_group_details_t *d);
/* Reads GroupDetails from r, members into arena; false when malformed or
 * the arena is exhausted. Every count is checked against the bytes left
 * before anything is allocated. */
bool sl_group_details_decode(sl_reader_t *r, sl_arena_t *arena, sl_group_details_t *out);

/* --- 600 GetConsumerGroup --------------------------------------------------- */

typedef sl_group_target_t sl_get_consumer_group_request_t;
typedef struct sl_get_consumer_group_reply {
    bool found; /* false: empty payload, the group does not exist */
    sl_group_details_t group;
} sl_get_consumer_group_reply_t;

int sl_get_consumer_group_request_decode(sl_span_t body,
                                         sl_get_consumer_group_request_t *out) SL_WUR;
int sl_get_consumer_group_request_encode(sl_buf_t *b,
                                         const sl_get_consumer_group_request_t *in) SL_WUR;
int sl_get_consumer_group_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                       sl_get_consumer_group_reply_t *out) SL_WUR;
int sl_get_consumer_group_reply_encode(sl_buf_t *b, const sl_get_consumer_group_reply_t *in) SL_WUR;

/* --- 601 GetConsumerGroups -------------------------------------------------- */

typedef struct sl_get_consumer_groups_request {
    sl_ident_t stream;
    sl_ident_t topic;
} sl_get_consumer_groups_request_t;

/* Concatenated GroupHeaders without members and without a count prefix. */
typedef struct sl_get_consumer_groups_reply {
    uint32_t count;
    const sl_group_header_t *items;
} sl_get_consumer_groups_reply_t;

int sl_get_consumer_groups_request_decode(sl_span_t body,
                                          sl_get_consumer_groups_request_t *out) SL_WUR;
int sl_get_consumer_groups_request_encode(sl_buf_t *b,
                                          const sl_get_consumer_groups_request_t *in) SL_WUR;
int sl_get_consumer_groups_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                        sl_get_consumer_groups_reply_t *out) SL_WUR;
int sl_get_consumer_groups_reply_encode(sl_buf_t *b,
                                        const sl_get_consumer_groups_reply_t *in) SL_WUR;

/* --- 602 CreateConsumerGroup ------------------------------------------------ */

typedef struct sl_create_consumer_group_request {
    sl_ident_t stream;
    sl_ident_t topic;
    sl_span_t name; /* Name: 1..255 bytes UTF-8 */
} sl_create_consumer_group_request_t;

/* The payload after the result section: GroupDetails of the new group. */
typedef sl_group_details_t sl_create_consumer_group_reply_t;

int sl_create_consumer_group_request_decode(sl_span_t body,
                                            sl_create_consumer_group_request_t *out) SL_WUR;
int sl_create_consumer_group_request_encode(sl_buf_t *b,
                                            const sl_create_consumer_group_request_t *in) SL_WUR;
int sl_create_consumer_group_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                          sl_create_consumer_group_reply_t *out) SL_WUR;
int sl_create_consumer_group_reply_encode(sl_buf_t *b,
                                          const sl_create_consumer_group_reply_t *in) SL_WUR;

/* --- 603 DeleteConsumerGroup, 604 JoinConsumerGroup, 605 LeaveConsumerGroup -- */

typedef sl_group_target_t sl_delete_consumer_group_request_t;
typedef sl_group_target_t sl_join_consumer_group_request_t;
typedef sl_group_target_t sl_leave_consumer_group_request_t;

int sl_delete_consumer_group_request_decode(sl_span_t body,
                                            sl_delete_consumer_group_request_t *out) SL_WUR;
int sl_delete_consumer_group_request_encode(sl_buf_t *b,
                                            const sl_delete_consumer_group_request_t *in) SL_WUR;
int sl_join_consumer_group_request_decode(sl_span_t body,
                                          sl_join_consumer_group_request_t *out) SL_WUR;
int sl_join_consumer_group_request_encode(sl_buf_t *b,
                                          const sl_join_consumer_group_request_t *in) SL_WUR;
int sl_leave_consumer_group_request_decode(sl_span_t body,
                                           sl_leave_consumer_group_request_t *out) SL_WUR;
int sl_leave_consumer_group_request_encode(sl_buf_t *b,
                                           const sl_leave_consumer_group_request_t *in) SL_WUR;

/* Success payloads (after the result section) are empty. */
SL_EMPTY_REPLY(delete_consumer_group)
SL_EMPTY_REPLY(join_consumer_group)
SL_EMPTY_REPLY(leave_consumer_group)

/* --- 606 SyncConsumerGroup -------------------------------------------------- */

typedef sl_group_target_t sl_sync_consumer_group_request_t;

/* [generation u64][partitions_count u32][partition_id u32 x count]; an
 * empty payload means the caller is not a member (found = false). A payload
 * of 1..11 bytes or with bytes after the list is malformed. */
typedef struct sl_sync_consumer_group_reply {
    bool found;
    uint64_t generation;
    uint32_t partitions_count;
    const uint32_t *partitions;
} sl_sync_consumer_group_reply_t;

int sl_sync_consumer_group_request_decode(sl_span_t body,
                                          sl_sync_consumer_group_request_t *out) SL_WUR;
int sl_sync_consumer_group_request_encode(sl_buf_t *b,
                                          const sl_sync_consumer_group_request_t *in) SL_WUR;
int sl_sync_consumer_group_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                        sl_sync_consumer_group_reply_t *out) SL_WUR;
int sl_sync_consumer_group_reply_encode(sl_buf_t *b,
                                        const sl_sync_consumer_group_reply_t *in) SL_WUR;

#endif
