/* Codecs of the topic, partition and segment commands (commands.md 9-10):
 * GetTopic 300, GetTopics 301, CreateTopic 302, DeleteTopic 303,
 * UpdateTopic 304, PurgeTopic 305, CreatePartitions 402, DeletePartitions 403,
 * DeleteSegments 503; and the reply elements TopicHeader (2.2),
 * PartitionInfo (2.3) and TopicDetails.
 *
 * Conventions are those of wire/codec.h. Decoded spans borrow the body or
 * payload; reply arrays live in the arena passed to the decoder. The option
 * blocks in sl_topic_header_t are the blocks themselves (without their u32
 * prefix). */
#ifndef SL_WIRE_CMD_TOPICS_H
#define SL_WIRE_CMD_TOPICS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "wire/codec.h"
#include "wire/prim.h"
#include "wire/topic_options.h"

/* --- reply elements ---------------------------------------------------------- */

/* Smallest TopicHeader: fixed fields, a 1-byte name, two empty blocks. */
#define SL_TOPIC_HEADER_SIZE_MIN 59u
#define SL_PARTITION_INFO_SIZE   40u

typedef struct sl_topic_header {
    uint32_t id;
    uint64_t created_at; /* microseconds since the epoch */
    uint32_t partitions_count;
    uint64_t message_expiry;       /* SL_TOPIC_EXPIRY_NEVER / _SERVER_DEFAULT */
    uint8_t compression_algorithm; /* sl_compression_t */
    uint64_t max_topic_size;       /* SL_TOPIC_SIZE_UNLIMITED / _SERVER_DEFAULT */
    uint64_t size_bytes;
    uint64_t messages_count;
    sl_span_t name;
    sl_span_t options;         /* explicit block */
    sl_span_t derived_options; /* server-filled block */
} sl_topic_header_t;

typedef struct sl_partition_info {
    uint32_t id;
    uint64_t created_at;
    uint32_t segments_count;
    uint64_t current_offset;
    uint64_t size_bytes;
    uint64_t messages_count;
} sl_partition_info_t;

/* TopicHeader followed by header.partitions_count PartitionInfo. */
typedef struct sl_topic_details {
    sl_topic_header_t header;
    const sl_partition_info_t *partitions;
} sl_topic_details_t;

/* Element codecs: decoders fail (reader failed) on truncation, a bad name,
 * a compression code other than 1/2 or a malformed options block; encoders
 * return false for values they cannot encode or a failed buffer. */
bool sl_topic_header_decode(sl_reader_t *r, sl_topic_header_t *out);
bool sl_topic_header_encode(sl_buf_t *b, const sl_topic_header_t *h);
bool sl_partition_info_decode(sl_reader_t *r, sl_partition_info_t *out);
bool sl_partition_info_encode(sl_buf_t *b, const sl_partition_info_t *p);
/* Reads a TopicDetails up to the end of the reader's input (exact). */
bool sl_topic_details_decode(sl_reader_t *r, sl_arena_t *arena, sl_topic_details_t *out);
bool sl_topic_details_encode(sl_buf_t *b, const sl_topic_details_t *d);

/* --- requests naming a topic ------------------------------------------------ */

/* [stream_id Identifier][topic_id Identifier]; trailing bytes ignored. */
typedef struct sl_topic_ref {
    sl_ident_t stream_id;
    sl_ident_t topic_id;
} sl_topic_ref_t;

/* --- 300 GetTopic --------------------------------------------------------------- */

typedef sl_topic_ref_t sl_get_topic_request_t;
typedef struct sl_get_topic_reply {
    bool found; /* false: empty payload, no such stream or topic */
    sl_topic_details_t topic;
} sl_get_topic_reply_t;

int sl_get_topic_request_decode(sl_span_t body, sl_get_topic_request_t *out) SL_WUR;
int sl_get_topic_request_encode(sl_buf_t *b, const sl_get_topic_request_t *in) SL_WUR;
int sl_get_topic_reply_decode(sl_span_t payload, sl_arena_t *arena,
                              sl_get_topic_reply_t *out) SL_WUR;
int sl_get_topic_reply_encode(sl_buf_t *b, const sl_get_topic_reply_t *in) SL_WUR;

/* --- 301 GetTopics (the one count-prefixed entity list) ------------------------ */

typedef struct sl_get_topics_request {
    sl_ident_t stream_id;
} sl_get_topics_request_t;
typedef struct sl_get_topics_reply {
    uint32_t count;
    const sl_topic_header_t *items;
} sl_get_topics_reply_t;

int sl_get_topics_request_decode(sl_span_t body, sl_get_topics_request_t *out) SL_WUR;
int sl_get_topics_request_encode(sl_buf_t *b, const sl_get_topics_request_t *in) SL_WUR;
int sl_get_topics_reply_decode(sl_span_t payload, sl_arena_t *arena,
                               sl_get_topics_reply_t *out) SL_WUR;
int sl_get_topics_reply_encode(sl_buf_t *b, const sl_get_topics_reply_t *in) SL_WUR;

/* --- 302 CreateTopic -------------------------------------------------------------- */

/* [stream_id][partitions_count u32][name Name][options to end]. The decoder
 * runs every pre-consensus check of options.md 4.2 (3, 4041, 4042, 2015,
 * 1019 in that order) and leaves the resolved values in config, which is
 * what the server stores (options as sent are in options). The encoder
 * ignores config. */
typedef struct sl_create_topic_request {
    sl_ident_t stream_id;
    uint32_t partitions_count;
    sl_span_t name;
    sl_span_t options;
    sl_topic_config_t config; /* set by decode */
} sl_create_topic_request_t;
/* Result-framed; this is the payload after `count = 0`: TopicDetails. */
typedef struct sl_create_topic_reply {
    sl_topic_details_t topic;
} sl_create_topic_reply_t;

int sl_create_topic_request_decode(sl_span_t body, sl_create_topic_request_t *out) SL_WUR;
int sl_create_topic_request_encode(sl_buf_t *b, const sl_create_topic_request_t *in) SL_WUR;
int sl_create_topic_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                 sl_create_topic_reply_t *out) SL_WUR;
int sl_create_topic_reply_encode(sl_buf_t *b, const sl_create_topic_reply_t *in) SL_WUR;

/* --- 303 DeleteTopic (the Node SDK appends a u32: ignored) -------------------- */

typedef sl_topic_ref_t sl_delete_topic_request_t;
int sl_delete_topic_request_decode(sl_span_t body, sl_delete_topic_request_t *out) SL_WUR;
int sl_delete_topic_request_encode(sl_buf_t *b, const sl_delete_topic_request_t *in) SL_WUR;
SL_EMPTY_REPLY(delete_topic)

/* --- 304 UpdateTopic ------------------------------------------------------------- */

/* [stream_id][topic_id][name Name][options to end]. The decoder answers 3,
 * then 4041 for any key outside the updatable three, then 4042; patch gets
 * the parsed values (the server stores the entries of options verbatim).
 * The 1019 check needs the topic's stored segment size: call
 * sl_update_topic_check_size once the topic is known. */
typedef struct sl_update_topic_request {
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    sl_span_t name;
    sl_span_t options;
    sl_topic_patch_t patch; /* set by decode */
} sl_update_topic_request_t;

int sl_update_topic_request_decode(sl_span_t body, sl_update_topic_request_t *out) SL_WUR;
int sl_update_topic_request_encode(sl_buf_t *b, const sl_update_topic_request_t *in) SL_WUR;
/* 0, or -SL_ERR_INVALID_TOPIC_SIZE (stored_segment_size 0: none, 1 GiB). */
int sl_update_topic_check_size(const sl_update_topic_request_t *req,
                               uint64_t stored_segment_size) SL_WUR;
SL_EMPTY_REPLY(update_topic)

/* --- 305 PurgeTopic ------------------------------------------------------------- */

typedef sl_topic_ref_t sl_purge_topic_request_t;
int sl_purge_topic_request_decode(sl_span_t body, sl_purge_topic_request_t *out) SL_WUR;
int sl_purge_topic_request_encode(sl_buf_t *b, const sl_purge_topic_request_t *in) SL_WUR;
SL_EMPTY_REPLY(purge_topic)

/* --- 402 CreatePartitions / 403 DeletePartitions ---------------------------- */

/* [stream_id][topic_id][partitions_count u32]: 3 when undecodable, then
 * -SL_ERR_TOO_MANY_PARTITIONS for a count of 0 or above 1000. */
typedef struct sl_partitions_change {
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    uint32_t partitions_count;
} sl_partitions_change_t;

typedef sl_partitions_change_t sl_create_partitions_request_t;
int sl_create_partitions_request_decode(sl_span_t body, sl_create_partitions_request_t *out) SL_WUR;
int sl_create_partitions_request_encode(sl_buf_t *b,
                                        const sl_create_partitions_request_t *in) SL_WUR;
SL_EMPTY_REPLY(create_partitions)

typedef sl_partitions_change_t sl_delete_partitions_request_t;
int sl_delete_partitions_request_decode(sl_span_t body, sl_delete_partitions_request_t *out) SL_WUR;
int sl_delete_partitions_request_encode(sl_buf_t *b,
                                        const sl_delete_partitions_request_t *in) SL_WUR;
SL_EMPTY_REPLY(delete_partitions)

/* --- 503 DeleteSegments --------------------------------------------------------- */

/* [stream_id][topic_id][partition_id u32][segments_count u32]. An
 * undecodable body is -SL_ERR_INVALID_COMMAND here; the reference answers it
 * with status 0 and an empty body on operation 138 (commands.md 10), which
 * is the server's choice to make. */
typedef struct sl_delete_segments_request {
    sl_ident_t stream_id;
    sl_ident_t topic_id;
    uint32_t partition_id;
    uint32_t segments_count;
} sl_delete_segments_request_t;

int sl_delete_segments_request_decode(sl_span_t body, sl_delete_segments_request_t *out) SL_WUR;
int sl_delete_segments_request_encode(sl_buf_t *b, const sl_delete_segments_request_t *in) SL_WUR;
SL_EMPTY_REPLY(delete_segments)

#endif
