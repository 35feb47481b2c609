/* Codecs of the stream commands (commands.md 8): GetStream 200,
 * GetStreams 201, CreateStream 202, DeleteStream 203, UpdateStream 204,
 * PurgeStream 205; and the reply elements StreamHeader (2.1) and
 * StreamDetails (a header followed by topics_count TopicHeaders, without
 * partitions).
 *
 * Conventions are those of wire/codec.h. The stream options catalog is
 * empty today, so CreateStream and UpdateStream answer 4041 for any key in a
 * well-formed block (options.md 3). */
#ifndef SL_WIRE_CMD_STREAMS_H
#define SL_WIRE_CMD_STREAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "wire/cmd_topics.h"
#include "wire/codec.h"
#include "wire/prim.h"

/* --- reply elements ---------------------------------------------------------- */

/* Smallest StreamHeader: fixed fields, a 1-byte name, an empty block. */
#define SL_STREAM_HEADER_SIZE_MIN 38u

typedef struct sl_stream_header {
    uint32_t id;
    uint64_t created_at; /* microseconds since the epoch */
    uint32_t topics_count;
    uint64_t size_bytes;
    uint64_t messages_count;
    sl_span_t name;
    sl_span_t options; /* explicit block without its u32 prefix (empty today) */
} sl_stream_header_t;

/* StreamHeader followed by header.topics_count TopicHeaders. */
typedef struct sl_stream_details {
    sl_stream_header_t header;
    const sl_topic_header_t *topics;
} sl_stream_details_t;

/* Element codecs (prim.h style: false when the bytes or values are bad). */
bool sl_stream_header_decode(sl_reader_t *r, sl_stream_header_t *out);
bool sl_stream_header_encode(sl_buf_t *b, const sl_stream_header_t *h);
/* Reads a StreamDetails up to the end of the reader's input (exact). */
bool sl_stream_details_decode(sl_reader_t *r, sl_arena_t *arena, sl_stream_details_t *out);
bool sl_stream_details_encode(sl_buf_t *b, const sl_stream_details_t *d);

/* --- requests naming a stream ------------------------------------------------ */

/* [stream_id Identifier]; trailing bytes ignored. */
typedef struct sl_stream_ref {
    sl_ident_t stream_id;
} sl_stream_ref_t;

/* --- 200 GetStream ------------------------------------------------------------- */

typedef sl_stream_ref_t sl_get_stream_request_t;
typedef struct sl_get_stream_reply {
    bool found; /* false: empty payload, no such stream */
    sl_stream_details_t stream;
} sl_get_stream_reply_t;

int sl_get_stream_request_decode(sl_span_t body, sl_get_stream_request_t *out) SL_WUR;
int sl_get_stream_request_encode(sl_buf_t *b, const sl_get_stream_request_t *in) SL_WUR;
int sl_get_stream_reply_decode(sl_span_t payload, sl_arena_t *arena,
                               sl_get_stream_reply_t *out) SL_WUR;
int sl_get_stream_reply_encode(sl_buf_t *b, const sl_get_stream_reply_t *in) SL_WUR;

/* --- 201 GetStreams (bare concatenation, read to the end) --------------------- */

SL_EMPTY_REQUEST(get_streams)
typedef struct sl_get_streams_reply {
    uint32_t count;
    const sl_stream_header_t *items;
} sl_get_streams_reply_t;

int sl_get_streams_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                sl_get_streams_reply_t *out) SL_WUR;
int sl_get_streams_reply_encode(sl_buf_t *b, const sl_get_streams_reply_t *in) SL_WUR;

/* --- 202 CreateStream ----------------------------------------------------------- */

/* [name Name][options to end]: 3 when undecodable, 4041 for any key. */
typedef struct sl_create_stream_request {
    sl_span_t name;
    sl_span_t options;
} sl_create_stream_request_t;
/* Result-framed; this is the payload after `count = 0`: StreamDetails. */
typedef struct sl_create_stream_reply {
    sl_stream_details_t stream;
} sl_create_stream_reply_t;

int sl_create_stream_request_decode(sl_span_t body, sl_create_stream_request_t *out) SL_WUR;
int sl_create_stream_request_encode(sl_buf_t *b, const sl_create_stream_request_t *in) SL_WUR;
int sl_create_stream_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                  sl_create_stream_reply_t *out) SL_WUR;
int sl_create_stream_reply_encode(sl_buf_t *b, const sl_create_stream_reply_t *in) SL_WUR;

/* --- 203 DeleteStream ------------------------------------------------------------ */

typedef sl_stream_ref_t sl_delete_stream_request_t;
int sl_delete_stream_request_decode(sl_span_t body, sl_delete_stream_request_t *out) SL_WUR;
int sl_delete_stream_request_encode(sl_buf_t *b, const sl_delete_stream_request_t *in) SL_WUR;
SL_EMPTY_REPLY(delete_stream)

/* --- 204 UpdateStream ------------------------------------------------------------ */

/* [stream_id][name Name][options to end]: 3 when undecodable, 4041 for any
 * key. */
typedef struct sl_update_stream_request {
    sl_ident_t stream_id;
    sl_span_t name;
    sl_span_t options;
} sl_update_stream_request_t;

int sl_update_stream_request_decode(sl_span_t body, sl_update_stream_request_t *out) SL_WUR;
int sl_update_stream_request_encode(sl_buf_t *b, const sl_update_stream_request_t *in) SL_WUR;
SL_EMPTY_REPLY(update_stream)

/* --- 205 PurgeStream ------------------------------------------------------------- */

typedef sl_stream_ref_t sl_purge_stream_request_t;
int sl_purge_stream_request_decode(sl_span_t body, sl_purge_stream_request_t *out) SL_WUR;
int sl_purge_stream_request_encode(sl_buf_t *b, const sl_purge_stream_request_t *in) SL_WUR;
SL_EMPTY_REPLY(purge_stream)

#endif
