/* Codecs of the message and consumer-offset commands (commands.md 6, 7):
 * PollMessages (100), SendMessages (101), FlushUnsavedBuffer (102),
 * GetConsumerOffset (120), StoreConsumerOffset (121) and
 * DeleteConsumerOffset (122). Conventions: wire/codec.h. Batch records are
 * handled by wire/batch.h; these codecs only carry them as borrowed spans. */
#ifndef SL_WIRE_CMD_MESSAGES_H
#define SL_WIRE_CMD_MESSAGES_H

#include "wire/batch.h"
#include "wire/codec.h"
#include "wire/prim.h"

/* --- 100 PollMessages ------------------------------------------------------ */

typedef struct sl_poll_messages_request {
    sl_consumer_t consumer;
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    sl_opt_partition_t partition; /* kind 1: absent = partition 0; kind 2: required */
    sl_strategy_t strategy;
    uint32_t count;   /* max messages; 0 gives an empty result */
    bool auto_commit; /* any non-zero byte on the wire */
} sl_poll_messages_request_t;

/* Reply body: a 16-byte prefix, then batch records back to back. */
typedef struct sl_poll_messages_reply {
    uint32_t partition_id; /* UINT32_MAX: re-sync sentinel of group polls */
    uint64_t current_offset;
    uint32_t messages_count; /* sum of the records' message_count */
    sl_span_t records;       /* walk with sl_record_iter, then sl_frame_iter */
} sl_poll_messages_reply_t;

#define SL_POLL_RESYNC_PARTITION  UINT32_MAX
#define SL_POLL_REPLY_PREFIX_SIZE 16u

/* A request body the server cannot decode is answered with status 0 and
 * the 16-byte empty result (partition 0), not with an error status. */
int sl_poll_messages_request_decode(sl_span_t body, sl_poll_messages_request_t *out) SL_WUR;
int sl_poll_messages_request_encode(sl_buf_t *b, const sl_poll_messages_request_t *in) SL_WUR;
/* Walks the records by batch_length (each >= 256 and inside the payload),
 * checks each one's frame layout (sl_batch_check_layout) and that their
 * message counts add up to messages_count. Checksums are not verified. */
int sl_poll_messages_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                  sl_poll_messages_reply_t *out) SL_WUR;
/* Appends the prefix and in->records as they are (already-served records). */
int sl_poll_messages_reply_encode(sl_buf_t *b, const sl_poll_messages_reply_t *in) SL_WUR;

/* Server side, building a reply in place: appends the prefix with
 * messages_count 0 and returns where the count goes; records are then
 * appended (sl_batch_slice_offset) and the total patched with
 * sl_buf_patch_u32(b, at, total). */
size_t sl_poll_messages_reply_begin(sl_buf_t *b, uint32_t partition_id, uint64_t current_offset);

/* --- 101 SendMessages -------------------------------------------------------- */

typedef struct sl_send_messages_request {
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    sl_partitioning_t partitioning;
    uint32_t messages_count; /* equals the batch's message_count */
    sl_span_t batch;         /* the batch record (wire/batch.h), borrowed */
} sl_send_messages_request_t;

typedef struct sl_send_confirmation {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t partition_id;
    uint64_t base_offset;
} sl_send_confirmation_t;

#define SL_SEND_CONFIRMATION_SIZE 20u

/* Reply body: [count u32][count x 20-byte confirmation]. */
typedef struct sl_send_messages_reply {
    uint32_t count;
    const sl_send_confirmation_t *items;
} sl_send_messages_reply_t;

/* Admission checks 1 and 2 of messages.md 3.2 only: the metadata section.
 * Fills every field; batch is the rest of the body, not yet checked.
 * 0 or -SL_ERR_INVALID_COMMAND. The reference answers these failures with
 * status 20 (ResourceNotFound): its resolution step decodes the metadata
 * first and maps every failure to 20, so the server does the same. */
int sl_send_messages_metadata_decode(sl_span_t body, sl_send_messages_request_t *out) SL_WUR;
/* Every admission check, 1..13, in the reference's order: the metadata
 * (above, -SL_ERR_INVALID_COMMAND, server status 20), then the batch
 * (sl_batch_validate: -SL_ERR_INVALID_COMMAND, -SL_ERR_INVALID_MESSAGE_CHECKSUM
 * or -SL_ERR_INVALID_BATCH_CHECKSUM, answered as that status). A server that
 * must tell the two apart calls the two steps itself. */
int sl_send_messages_request_decode(sl_span_t body, sl_send_messages_request_t *out) SL_WUR;
/* Writes only the metadata section (in->batch is ignored): a client then
 * builds the batch in the same buffer with sl_batch_begin/add/finish, so the
 * messages are copied once. in->messages_count must be the count the
 * builder will get. */
int sl_send_messages_metadata_encode(sl_buf_t *b, const sl_send_messages_request_t *in) SL_WUR;
/* Writes the metadata section and appends in->batch, an already-built
 * record. -SL_ERR_INVALID_COMMAND when the batch is shorter than its header
 * or its message_count differs from in->messages_count. */
int sl_send_messages_request_encode(sl_buf_t *b, const sl_send_messages_request_t *in) SL_WUR;
/* An empty payload is zero confirmations (legacy servers, deduplicated
 * retries); trailing bytes after the declared entries are an error. */
int sl_send_messages_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                  sl_send_messages_reply_t *out) SL_WUR;
int sl_send_messages_reply_encode(sl_buf_t *b, const sl_send_messages_reply_t *in) SL_WUR;

/* --- 102 FlushUnsavedBuffer ------------------------------------------------------ */

typedef struct sl_flush_unsaved_buffer_request {
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    uint32_t partition_id;
    bool fsync; /* any non-zero byte on the wire */
} sl_flush_unsaved_buffer_request_t;

/* The reference always answers status 5 (FeatureUnavailable) without
 * decoding the body; the decoder exists for servers that implement it. */
int sl_flush_unsaved_buffer_request_decode(sl_span_t body,
                                           sl_flush_unsaved_buffer_request_t *out) SL_WUR;
int sl_flush_unsaved_buffer_request_encode(sl_buf_t *b,
                                           const sl_flush_unsaved_buffer_request_t *in) SL_WUR;
SL_EMPTY_REPLY(flush_unsaved_buffer)

/* --- 120 GetConsumerOffset -------------------------------------------------------- */

typedef struct sl_get_consumer_offset_request {
    sl_consumer_t consumer;
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    sl_opt_partition_t partition; /* absent = partition 0 */
} sl_get_consumer_offset_request_t;

/* 20 bytes, or an empty payload: no offset stored (found = false). */
typedef struct sl_get_consumer_offset_reply {
    bool found;
    uint32_t partition_id;
    uint64_t current_offset;
    uint64_t stored_offset;
} sl_get_consumer_offset_reply_t;

/* An undecodable body is answered with status 0 and an empty payload. */
int sl_get_consumer_offset_request_decode(sl_span_t body,
                                          sl_get_consumer_offset_request_t *out) SL_WUR;
int sl_get_consumer_offset_request_encode(sl_buf_t *b,
                                          const sl_get_consumer_offset_request_t *in) SL_WUR;
int sl_get_consumer_offset_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                        sl_get_consumer_offset_reply_t *out) SL_WUR;
/* Appends nothing when !in->found. */
int sl_get_consumer_offset_reply_encode(sl_buf_t *b,
                                        const sl_get_consumer_offset_reply_t *in) SL_WUR;

/* --- 121 StoreConsumerOffset / 122 DeleteConsumerOffset ---------------------------- */

typedef struct sl_store_consumer_offset_request {
    sl_consumer_t consumer;
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    sl_opt_partition_t partition; /* required: absent is status 20 */
    uint64_t offset;
    uint8_t ack; /* sl_ack_t: 0 or 1, mandatory */
} sl_store_consumer_offset_request_t;

typedef struct sl_delete_consumer_offset_request {
    sl_consumer_t consumer;
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    sl_opt_partition_t partition; /* required: absent is status 20 */
    uint8_t ack;                  /* sl_ack_t: 0 or 1, mandatory */
} sl_delete_consumer_offset_request_t;

/* Both: an undecodable body (ack missing or not 0/1 included) is answered
 * with status 20 (ResourceNotFound), as the reference does. */
int sl_store_consumer_offset_request_decode(sl_span_t body,
                                            sl_store_consumer_offset_request_t *out) SL_WUR;
int sl_store_consumer_offset_request_encode(sl_buf_t *b,
                                            const sl_store_consumer_offset_request_t *in) SL_WUR;
int sl_delete_consumer_offset_request_decode(sl_span_t body,
                                             sl_delete_consumer_offset_request_t *out) SL_WUR;
int sl_delete_consumer_offset_request_encode(sl_buf_t *b,
                                             const sl_delete_consumer_offset_request_t *in) SL_WUR;
/* Success payloads are empty; the server writes the result section. */
SL_EMPTY_REPLY(store_consumer_offset)
SL_EMPTY_REPLY(delete_consumer_offset)

#endif
