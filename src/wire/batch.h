/* The message batch record (shared/protocol/messages.md 1-4): the one
 * encoding of messages on the wire, in the journal and on disk. Header and
 * frame views, the two checksums, server admission checks, stamping,
 * slicing for polls, frame iteration and the producer-side builder.
 *
 * Nothing here allocates except the sl_buf_t writers the caller passes in.
 * Spans and views borrow the record they were read from and live as long
 * as its memory does. */
#ifndef SL_WIRE_BATCH_H
#define SL_WIRE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytes.h"
#include "base/limits.h"

/* --- layout (messages.md 1.1, 1.2) -------------------------------------- */

enum {
    SL_BATCH_OFF_PARTITION_ID = 0,
    SL_BATCH_OFF_BASE_OFFSET = 8,
    SL_BATCH_OFF_BASE_TIMESTAMP = 16,
    SL_BATCH_OFF_ORIGIN_TIMESTAMP = 24,
    SL_BATCH_OFF_LENGTH = 32,
    SL_BATCH_OFF_CHECKSUM = 40,
    SL_BATCH_OFF_COUNT = 48,
    SL_BATCH_OFF_RESERVED = 52,
};

enum {
    SL_FRAME_OFF_CHECKSUM = 0,
    SL_FRAME_OFF_ID = 8,
    SL_FRAME_OFF_OFFSET_DELTA = 24,
    SL_FRAME_OFF_TIMESTAMP_DELTA = 28,
    SL_FRAME_OFF_HEADERS_LENGTH = 32,
    SL_FRAME_OFF_PAYLOAD_LENGTH = 36,
    SL_FRAME_OFF_RESERVED = 40,
};

/* The 256-byte batch header; the 204 reserved bytes are implied zero. */
typedef struct sl_batch_header {
    uint64_t partition_id;     /* server, at admission */
    uint64_t base_offset;      /* server, at journal append */
    uint64_t base_timestamp;   /* server, at journal append (us) */
    uint64_t origin_timestamp; /* producer: smallest message origin timestamp */
    uint64_t batch_length;     /* 256 + frame bytes */
    uint64_t batch_checksum;   /* messages.md 2.2 */
    uint32_t message_count;
} sl_batch_header_t;

/* The 48-byte frame header in front of each message. */
typedef struct sl_frame_header {
    uint64_t checksum; /* messages.md 2.1 */
    sl_u128_t id;
    uint32_t offset_delta;
    uint32_t timestamp_delta;
    uint32_t user_headers_length;
    uint32_t payload_length;
    uint64_t reserved; /* must be zero */
} sl_frame_header_t;

/* Reads the fields; checks nothing (see sl_batch_validate). */
void sl_batch_header_read(const uint8_t hdr[SL_BATCH_HEADER_SIZE], sl_batch_header_t *out);
/* Writes all 256 bytes, reserved ones zero. */
void sl_batch_header_write(uint8_t hdr[SL_BATCH_HEADER_SIZE], const sl_batch_header_t *in);
void sl_frame_header_read(const uint8_t frame[SL_FRAME_HEADER_SIZE], sl_frame_header_t *out);
void sl_frame_header_write(uint8_t frame[SL_FRAME_HEADER_SIZE], const sl_frame_header_t *in);

/* --- checksums (messages.md 2) ------------------------------------------- */

/* XXH3-64 of every frame byte after the checksum field: header bytes 8..48,
 * payload, user headers. frame.len must be at least 48. */
uint64_t sl_frame_checksum(sl_span_t frame);

/* XXH3-64 of header bytes 0..40 and 48..52 followed by the stored 8-byte
 * checksum of each frame, in order. Meaningful for a record whose frames
 * tile it (one that sl_batch_validate or sl_batch_check_layout accepted);
 * on a broken record it hashes the frames that fit and never reads out of
 * bounds. */
uint64_t sl_batch_checksum(sl_span_t record);

/* --- checks ---------------------------------------------------------------- */

/* Server admission checks 3..13 of messages.md 3.2, in that order, over the
 * batch bytes of a SendMessages body (everything after the metadata
 * section; the record must end exactly at batch_length). Returns 0,
 * -SL_ERR_INVALID_COMMAND, -SL_ERR_INVALID_MESSAGE_CHECKSUM (first frame
 * whose checksum differs) or -SL_ERR_INVALID_BATCH_CHECKSUM.
 *
 * Stricter than the reference where messages.md allows it: a frame whose
 * offset_delta is not its index is refused with -SL_ERR_INVALID_COMMAND,
 * reported after every check the reference makes, so any batch the
 * reference refuses gets the reference's code. One pass over the bytes, no
 * copies, no allocation. */
int sl_batch_validate(sl_span_t record, uint32_t expected_count) SL_WUR;

/* The input of the batch checksum (messages.md 2.2) as validation gathers
 * it: header bytes 0..40 and 48..52 (SL_BATCH_SUMS_FIELDS bytes), then the
 * stored checksum of every frame in order, 8 bytes each. */
#define SL_BATCH_SUMS_FIELDS 44u
/* Records of more messages are validated without keeping it (their sums
 * would take more than 512 KiB). */
#define SL_BATCH_SUMS_FRAMES_MAX 65536u

/* sl_batch_validate, the same checks in the same order with the same codes,
 * which also leaves in sums (reset first) the batch checksum's input when it
 * returns 0 and the record holds at most SL_BATCH_SUMS_FRAMES_MAX messages
 * (else, and on every refusal, sums is left empty). sl_batch_stamp_kept
 * then stamps the record from it without walking the frames again: that
 * walk goes from one frame's length to the next frame, waiting on memory at
 * every step, and for small messages it cost a third of the hashing. */
int sl_batch_validate_keep(sl_span_t record, uint32_t expected_count, sl_buf_t *sums) SL_WUR;

/* What a client verifies on a polled record (messages.md 4.2) whose layout
 * sl_batch_check_layout accepted: every frame checksum in order
 * (-SL_ERR_INVALID_MESSAGE_CHECKSUM at the first that differs), then the
 * batch checksum (-SL_ERR_INVALID_BATCH_CHECKSUM), in one walk of the
 * frames. 0 when both hold. */
int sl_batch_verify(sl_span_t record) SL_WUR;

/* What a client checks on a polled record (messages.md 4.2): at least 256
 * bytes, batch_length equal to record.len, exactly message_count frames
 * tiling the blob, frame reserved fields zero. Checksums are not verified
 * (sliced records keep offset_delta > 0, so the index rule does not apply).
 * 0 or -SL_ERR_INVALID_FORMAT. */
int sl_batch_check_layout(sl_span_t record) SL_WUR;

/* --- server stamping (messages.md 3.3) -------------------------------------- */

/* Sets partition_id, base_offset and base_timestamp of a validated record in
 * place and recomputes batch_checksum; frames are untouched. */
void sl_batch_stamp(uint8_t *record, size_t len, uint64_t partition_id, uint64_t base_offset,
                    uint64_t base_timestamp);
/* The same, for a record whose frames are unchanged since
 * sl_batch_validate_keep left sums (sums_len bytes, not empty) for it: the
 * new header fields are written into sums too and the batch checksum is
 * their hash. Gives the same record as sl_batch_stamp. */
void sl_batch_stamp_kept(uint8_t *record, size_t len, uint64_t partition_id,
                         uint64_t base_offset, uint64_t base_timestamp, uint8_t *sums,
                         size_t sums_len);

/* --- reading frames --------------------------------------------------------- */

/* One message as a consumer sees it (messages.md 1.2, derived values). */
typedef struct sl_message {
    uint64_t offset;           /* base_offset + offset_delta */
    uint64_t timestamp;        /* the batch's base_timestamp (server append time) */
    uint64_t origin_timestamp; /* origin_timestamp + timestamp_delta */
    sl_u128_t id;
    uint64_t checksum;
    sl_span_t payload;
    sl_span_t user_headers; /* the raw TLV block, possibly empty (wire/tlv.h) */
    sl_span_t frame;        /* the whole frame, header included */
} sl_message_t;

typedef struct sl_frame_iter {
    const uint8_t *record;
    size_t pos;
    size_t end;
    uint32_t left;
    uint64_t base_offset;
    uint64_t base_timestamp;
    uint64_t origin_timestamp;
} sl_frame_iter_t;

/* Starts at the first frame of a record whose layout was checked. The walk
 * is bounds-checked anyway: it ends early at a frame that does not fit. */
sl_frame_iter_t sl_frame_iter(sl_span_t record);
/* The next message, or false after message_count frames. */
bool sl_frame_next(sl_frame_iter_t *it, sl_message_t *out);

/* Walks records laid back to back (a poll reply, a segment) by batch_length. */
typedef struct sl_record_iter {
    sl_span_t run;
    size_t pos;
} sl_record_iter_t;

static inline sl_record_iter_t sl_record_iter(sl_span_t run)
{
    return (sl_record_iter_t){run, 0};
}
/* The next record, or false at the end of the run or at a record whose
 * batch_length is below 256 or past the end. */
bool sl_record_next(sl_record_iter_t *it, sl_span_t *record);

/* --- slicing for polls (messages.md 4.1) ---------------------------------- */

/* Serves a stored record to an offset poll: selects the contiguous frames
 * from the first one whose offset is >= start_offset, at most max_count of
 * them (callers clamp max_count to the commit frontier). All frames: the
 * record is appended byte for byte. A proper subset: a sliced record (new
 * header, recomputed checksum, the frames unchanged). None: nothing is
 * appended. *taken gets the number of messages appended.
 * Returns 0, -SL_ERR_INVALID_FORMAT when the stored record's layout is
 * broken (nothing appended), -SL_ERR_COMMAND_LENGTH_ERROR when out failed. */
int sl_batch_slice_offset(sl_buf_t *out, sl_span_t record, uint64_t start_offset,
                          uint32_t max_count, uint32_t *taken) SL_WUR;

/* Serves a stored record to a timestamp poll: the batch matches as a whole
 * when its base_timestamp >= timestamp (then its first max_count frames are
 * served as above), otherwise nothing. */
int sl_batch_slice_timestamp(sl_buf_t *out, sl_span_t record, uint64_t timestamp,
                             uint32_t max_count, uint32_t *taken) SL_WUR;

/* --- producer-side builder (messages.md 3.1) --------------------------------- */

/* Writes a batch straight into an sl_buf_t: the header slot first, then
 * each frame as it is added; finish fills the header, the deltas and every
 * checksum in one pass. The buffer may hold other bytes before the batch
 * (a SendMessages metadata section, say); nothing must be appended to it
 * between begin and finish. Errors are sticky: the first one is returned
 * again by finish. */
typedef struct sl_batch_builder {
    sl_buf_t *buf;
    size_t start; /* offset of the batch header in buf */
    uint32_t count;
    uint64_t timestamp_min;
    uint64_t timestamp_max;
    int error;
} sl_batch_builder_t;

void sl_batch_begin(sl_batch_builder_t *bb, sl_buf_t *buf);
/* Appends one message. user_headers is a user-headers TLV block (may be
 * empty). Errors: -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD (over SL_PAYLOAD_MAX),
 * -SL_ERR_TOO_BIG_USER_HEADERS (over SL_USER_HEADERS_MAX),
 * -SL_ERR_INVALID_COMMAND (headers block malformed, wire/tlv.h),
 * -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA (timestamps of the batch span more
 * than a u32 of microseconds), -SL_ERR_TOO_MANY_MESSAGES,
 * -SL_ERR_COMMAND_LENGTH_ERROR (the buffer failed). */
int sl_batch_add(sl_batch_builder_t *bb, sl_u128_t id, uint64_t origin_timestamp, sl_span_t payload,
                 sl_span_t user_headers) SL_WUR;
/* Completes the record: *record borrows buf (valid until buf changes).
 * -SL_ERR_INVALID_MESSAGES_COUNT for an empty batch, or the first error. */
int sl_batch_finish(sl_batch_builder_t *bb, sl_span_t *record) SL_WUR;

#endif
