/* The message batch record (wire/batch.h): checksums, admission checks,
 * stamping, slicing, iteration and the producer-side builder. */
#include "wire/batch.h"

#include <sluice/error.h>

#include "base/xxh3.h"
#include "base/xxh3_inline.h"
#include "wire/tlv.h"

/* --- header views ------------------------------------------------------------ */

void sl_batch_header_read(const uint8_t hdr[SL_BATCH_HEADER_SIZE], sl_batch_header_t *out)
{
    out->partition_id = sl_load_u64(hdr + SL_BATCH_OFF_PARTITION_ID);
    out->base_offset = sl_load_u64(hdr + SL_BATCH_OFF_BASE_OFFSET);
    out->base_timestamp = sl_load_u64(hdr + SL_BATCH_OFF_BASE_TIMESTAMP);
    out->origin_timestamp = sl_load_u64(hdr + SL_BATCH_OFF_ORIGIN_TIMESTAMP);
    out->batch_length = sl_load_u64(hdr + SL_BATCH_OFF_LENGTH);
    out->batch_checksum = sl_load_u64(hdr + SL_BATCH_OFF_CHECKSUM);
    out->message_count = sl_load_u32(hdr + SL_BATCH_OFF_COUNT);
}

void sl_batch_header_write(uint8_t hdr[SL_BATCH_HEADER_SIZE], const sl_batch_header_t *in)
{
    sl_store_u64(hdr + SL_BATCH_OFF_PARTITION_ID, in->partition_id);
    sl_store_u64(hdr + SL_BATCH_OFF_BASE_OFFSET, in->base_offset);
    sl_store_u64(hdr + SL_BATCH_OFF_BASE_TIMESTAMP, in->base_timestamp);
    sl_store_u64(hdr + SL_BATCH_OFF_ORIGIN_TIMESTAMP, in->origin_timestamp);
    sl_store_u64(hdr + SL_BATCH_OFF_LENGTH, in->batch_length);
    sl_store_u64(hdr + SL_BATCH_OFF_CHECKSUM, in->batch_checksum);
    sl_store_u32(hdr + SL_BATCH_OFF_COUNT, in->message_count);
    memset(hdr + SL_BATCH_OFF_RESERVED, 0, SL_BATCH_HEADER_SIZE - SL_BATCH_OFF_RESERVED);
}

void sl_frame_header_read(const uint8_t frame[SL_FRAME_HEADER_SIZE], sl_frame_header_t *out)
{
    out->checksum = sl_load_u64(frame + SL_FRAME_OFF_CHECKSUM);
    out->id = sl_load_u128(frame + SL_FRAME_OFF_ID);
    out->offset_delta = sl_load_u32(frame + SL_FRAME_OFF_OFFSET_DELTA);
    out->timestamp_delta = sl_load_u32(frame + SL_FRAME_OFF_TIMESTAMP_DELTA);
    out->user_headers_length = sl_load_u32(frame + SL_FRAME_OFF_HEADERS_LENGTH);
    out->payload_length = sl_load_u32(frame + SL_FRAME_OFF_PAYLOAD_LENGTH);
    out->reserved = sl_load_u64(frame + SL_FRAME_OFF_RESERVED);
}

void sl_frame_header_write(uint8_t frame[SL_FRAME_HEADER_SIZE], const sl_frame_header_t *in)
{
    sl_store_u64(frame + SL_FRAME_OFF_CHECKSUM, in->checksum);
    sl_store_u128(frame + SL_FRAME_OFF_ID, in->id);
    sl_store_u32(frame + SL_FRAME_OFF_OFFSET_DELTA, in->offset_delta);
    sl_store_u32(frame + SL_FRAME_OFF_TIMESTAMP_DELTA, in->timestamp_delta);
    sl_store_u32(frame + SL_FRAME_OFF_HEADERS_LENGTH, in->user_headers_length);
    sl_store_u32(frame + SL_FRAME_OFF_PAYLOAD_LENGTH, in->payload_length);
    sl_store_u64(frame + SL_FRAME_OFF_RESERVED, in->reserved);
}

/* Size of the frame at f when it fits in the `room` bytes left of the blob,
 * else 0 (a frame is never shorter than its 48-byte header). */
static inline size_t frame_fits(const uint8_t *f, size_t room)
{
    if (room < SL_FRAME_HEADER_SIZE)
        return 0;
    uint64_t body = (uint64_t)sl_load_u32(f + SL_FRAME_OFF_HEADERS_LENGTH) +
                    sl_load_u32(f + SL_FRAME_OFF_PAYLOAD_LENGTH);
    if (body > room - SL_FRAME_HEADER_SIZE)
        return 0;
    return SL_FRAME_HEADER_SIZE + (size_t)body;
}

/* --- checksums ------------------------------------------------------------------- */

uint64_t sl_frame_checksum(sl_span_t frame)
{
    sl_assert(frame.len >= SL_FRAME_HEADER_SIZE);
    return sl_xxh3_64(frame.ptr + SL_FRAME_OFF_ID, frame.len - SL_FRAME_OFF_ID);
}

/* The 44 + 8N byte input of the batch checksum is gathered in a stack
 * buffer; a batch of up to SUMS_INLINE frames hashes it in one call, a
 * bigger one spills into the streaming state, chunk by chunk. */
enum { SUMS_INLINE = 128, SUMS_FIELDS = SL_BATCH_SUMS_FIELDS };

typedef struct batch_hasher {
    size_t len;
    bool streaming;
    uint8_t buf[SUMS_FIELDS + 8 * SUMS_INLINE];
    sl_xxh3_state_t state;
} batch_hasher_t;

static void hasher_begin(batch_hasher_t *h, const uint8_t *hdr)
{
    memcpy(h->buf, hdr, SL_BATCH_OFF_CHECKSUM);
    memcpy(h->buf + SL_BATCH_OFF_CHECKSUM, hdr + SL_BATCH_OFF_COUNT, 4);
    h->len = SUMS_FIELDS;
    h->streaming = false;
}

static void hasher_spill(batch_hasher_t *h)
{
    if (!h->streaming) {
        sl_xxh3_reset(&h->state);
        h->streaming = true;
    }
    sl_xxh3_update(&h->state, h->buf, h->len);
    h->len = 0;
}

/* Adds a frame's stored checksum bytes. */
static inline void hasher_add(batch_hasher_t *h, const uint8_t *frame)
{
    if (h->len + 8 > sizeof(h->buf))
        hasher_spill(h);
    memcpy(h->buf + h->len, frame + SL_FRAME_OFF_CHECKSUM, 8);
    h->len += 8;
}

static uint64_t hasher_end(batch_hasher_t *h)
{
    if (!h->streaming)
        return sl_xxh3_64(h->buf, h->len);
    sl_xxh3_update(&h->state, h->buf, h->len);
    return sl_xxh3_digest(&h->state);
}

/* The blob end of a record: batch_length clamped to the bytes present. */
static size_t record_end(sl_span_t record)
{
    uint64_t length = sl_load_u64(record.ptr + SL_BATCH_OFF_LENGTH);
    return length < record.len ? (size_t)length : record.len;
}

uint64_t sl_batch_checksum(sl_span_t record)
{
    sl_assert(record.len >= SL_BATCH_HEADER_SIZE);
    batch_hasher_t h;
    hasher_begin(&h, record.ptr);
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    size_t pos = SL_BATCH_HEADER_SIZE, end = record_end(record);
    for (uint32_t i = 0; i < count && pos < end; i++) {
        size_t n = frame_fits(record.ptr + pos, end - pos);
        if (n == 0)
            break;
        hasher_add(&h, record.ptr + pos);
        pos += n;
    }
    return hasher_end(&h);
}

/* --- admission (messages.md 3.2) --------------------------------------------------- */

/* Checks 7..9: walks the frames of the blob [256, end), verifying each
 * frame checksum and feeding it to the batch hash: into h, or, when kept is
 * set, into kept's slots after its 44 header bytes (the first `slots`
 * frames; a record with more frames than slots is refused at check 7
 * whatever its batch checksum, so the rest need not be kept). Returns the
 * number of frames walked (the walk stops at the first frame that does not
 * fit or whose reserved field is set) or -1 at the first checksum mismatch;
 * *pos ends after the last frame walked. */
static int64_t walk_frames(const uint8_t *rec, size_t end, size_t *pos_out, bool *deltas_ok,
                           batch_hasher_t *h, uint8_t *kept, uint64_t slots)
{
    size_t pos = SL_BATCH_HEADER_SIZE;
    uint64_t index = 0;
    bool deltas = true;
    while (pos < end) {
        const uint8_t *f = rec + pos;
        size_t n = frame_fits(f, end - pos);
        if (n == 0 || sl_load_u64(f + SL_FRAME_OFF_RESERVED) != 0)
            break;
        if (sl_xxh3_64_inline(f + SL_FRAME_OFF_ID, n - SL_FRAME_OFF_ID) != sl_load_u64(f))
            return -1;
        deltas &= sl_load_u32(f + SL_FRAME_OFF_OFFSET_DELTA) == (uint32_t)index;
        if (!kept)
            hasher_add(h, f);
        else if (index < slots)
            memcpy(kept + SUMS_FIELDS + 8 * index, f + SL_FRAME_OFF_CHECKSUM, 8);
        index++;
        pos += n;
    }
    *pos_out = pos;
    *deltas_ok = deltas;
    return (int64_t)index;
}

/* Checks 3..6: the header alone. 0 or -SL_ERR_INVALID_COMMAND. */
static int check_header(sl_span_t record)
{
    if (record.len < SL_BATCH_HEADER_SIZE) /* 3 */
        return -SL_ERR_INVALID_COMMAND;
    uint64_t length = sl_load_u64(record.ptr + SL_BATCH_OFF_LENGTH);
    if (length < SL_BATCH_HEADER_SIZE) /* 4 */
        return -SL_ERR_INVALID_COMMAND;
    if (!sl_all_zero(record.ptr + SL_BATCH_OFF_RESERVED,
                     SL_BATCH_HEADER_SIZE - SL_BATCH_OFF_RESERVED))
        return -SL_ERR_INVALID_COMMAND; /* 5 */
    if (length > record.len)            /* 6 */
        return -SL_ERR_INVALID_COMMAND;
    return 0;
}

/* Checks 7..13 and Sluice's own after the walk; hash is the batch checksum
 * the walked frames give. */
static int check_walk(sl_span_t record, uint32_t expected_count, int64_t walked, size_t pos,
                      bool deltas_ok, uint64_t hash)
{
    uint64_t length = sl_load_u64(record.ptr + SL_BATCH_OFF_LENGTH);
    if (walked < 0) /* 8 */
        return -SL_ERR_INVALID_MESSAGE_CHECKSUM;
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    if ((uint64_t)walked != count || pos != length) /* 7 and 9 */
        return -SL_ERR_INVALID_COMMAND;
    if (hash != sl_load_u64(record.ptr + SL_BATCH_OFF_CHECKSUM)) /* 10 */
        return -SL_ERR_INVALID_BATCH_CHECKSUM;
    if (count < 1 || count != expected_count) /* 11, 12 */
        return -SL_ERR_INVALID_COMMAND;
    if (length != record.len) /* 13 */
        return -SL_ERR_INVALID_COMMAND;
    /* Sluice's own rule, last so that every refusal of the reference keeps
     * its code: offsets are accounted as base_offset + index. */
    if (!deltas_ok)
        return -SL_ERR_INVALID_COMMAND;
    return 0;
}

int sl_batch_validate(sl_span_t record, uint32_t expected_count)
{
    int rc = check_header(record);
    if (rc != 0)
        return rc;
    batch_hasher_t h;
    hasher_begin(&h, record.ptr);
    size_t end = (size_t)sl_load_u64(record.ptr + SL_BATCH_OFF_LENGTH), pos = 0;
    bool deltas_ok = false; /* walk_frames leaves it unset when a checksum differs */
    int64_t walked = walk_frames(record.ptr, end, &pos, &deltas_ok, &h, NULL, 0);
    /* A mismatch (walked < 0) is reported before the batch hash matters. */
    uint64_t hash = walked < 0 ? 0 : hasher_end(&h);
    return check_walk(record, expected_count, walked, pos, deltas_ok, hash);
}

int sl_batch_validate_keep(sl_span_t record, uint32_t expected_count, sl_buf_t *sums)
{
    sl_buf_reset(sums);
    int rc = check_header(record);
    if (rc != 0)
        return rc;
    uint64_t length = sl_load_u64(record.ptr + SL_BATCH_OFF_LENGTH);
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    /* A count the blob cannot hold (every frame is at least 48 bytes) is
     * refused whatever is kept; a large one is not worth the memory. */
    uint64_t room = (length - SL_BATCH_HEADER_SIZE) / SL_FRAME_HEADER_SIZE;
    uint8_t *kept = count == 0 || count > room || count > SL_BATCH_SUMS_FRAMES_MAX
                        ? NULL
                        : sl_buf_extend(sums, SUMS_FIELDS + 8 * (size_t)count);
    if (!kept) {
        sl_buf_reset(sums);
        return sl_batch_validate(record, expected_count);
    }
    memcpy(kept, record.ptr, SL_BATCH_OFF_CHECKSUM);
    memcpy(kept + SL_BATCH_OFF_CHECKSUM, record.ptr + SL_BATCH_OFF_COUNT, 4);
    size_t pos = 0;
    bool deltas_ok = false; /* walk_frames leaves it unset when a checksum differs */
    int64_t walked = walk_frames(record.ptr, (size_t)length, &pos, &deltas_ok, NULL, kept, count);
    /* The kept input is only whole when every slot was filled. */
    uint64_t hash = walked == (int64_t)count ? sl_xxh3_64(kept, sums->len) : 0;
    rc = check_walk(record, expected_count, walked, pos, deltas_ok, hash);
    if (rc != 0)
        sl_buf_reset(sums);
    return rc;
}

int sl_batch_verify(sl_span_t record)
{
    sl_assert(record.len >= SL_BATCH_HEADER_SIZE);
    batch_hasher_t h;
    hasher_begin(&h, record.ptr);
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    size_t pos = SL_BATCH_HEADER_SIZE, end = record_end(record);
    for (uint32_t i = 0; i < count && pos < end; i++) {
        const uint8_t *f = record.ptr + pos;
        size_t n = frame_fits(f, end - pos);
        if (n == 0)
            break; /* the caller checked the layout: the batch checksum will differ */
        if (sl_xxh3_64(f + SL_FRAME_OFF_ID, n - SL_FRAME_OFF_ID) != sl_load_u64(f))
            return -SL_ERR_INVALID_MESSAGE_CHECKSUM;
        hasher_add(&h, f);
        pos += n;
    }
    if (hasher_end(&h) != sl_load_u64(record.ptr + SL_BATCH_OFF_CHECKSUM))
        return -SL_ERR_INVALID_BATCH_CHECKSUM;
    return 0;
}

int sl_batch_check_layout(sl_span_t record)
{
    if (record.len < SL_BATCH_HEADER_SIZE ||
        sl_load_u64(record.ptr + SL_BATCH_OFF_LENGTH) != record.len)
        return -SL_ERR_INVALID_FORMAT;
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    size_t pos = SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *f = record.ptr + pos;
        size_t n = frame_fits(f, record.len - pos);
        if (n == 0 || sl_load_u64(f + SL_FRAME_OFF_RESERVED) != 0)
            return -SL_ERR_INVALID_FORMAT;
        pos += n;
    }
    return pos == record.len ? 0 : -SL_ERR_INVALID_FORMAT;
}

/* --- stamping (messages.md 3.3) ---------------------------------------------------- */

void sl_batch_stamp(uint8_t *record, size_t len, uint64_t partition_id, uint64_t base_offset,
                    uint64_t base_timestamp)
{
    sl_assert(len >= SL_BATCH_HEADER_SIZE);
    sl_store_u64(record + SL_BATCH_OFF_PARTITION_ID, partition_id);
    sl_store_u64(record + SL_BATCH_OFF_BASE_OFFSET, base_offset);
    sl_store_u64(record + SL_BATCH_OFF_BASE_TIMESTAMP, base_timestamp);
    sl_store_u64(record + SL_BATCH_OFF_CHECKSUM, sl_batch_checksum(sl_span(record, len)));
}

void sl_batch_stamp_kept(uint8_t *record, size_t len, uint64_t partition_id,
                         uint64_t base_offset, uint64_t base_timestamp, uint8_t *sums,
                         size_t sums_len)
{
    sl_assert(len >= SL_BATCH_HEADER_SIZE + SL_FRAME_HEADER_SIZE);
    uint32_t count = sl_load_u32(record + SL_BATCH_OFF_COUNT);
    /* What sl_batch_validate_keep leaves: one slot per frame, the first
     * holding the first frame's checksum, the count the same. */
    sl_assert(sums_len == SUMS_FIELDS + 8 * (size_t)count);
    sl_assert(memcmp(sums + SUMS_FIELDS, record + SL_BATCH_HEADER_SIZE, 8) == 0);
    sl_assert(sl_load_u32(sums + SL_BATCH_OFF_CHECKSUM) == count);
    sl_store_u64(record + SL_BATCH_OFF_PARTITION_ID, partition_id);
    sl_store_u64(record + SL_BATCH_OFF_BASE_OFFSET, base_offset);
    sl_store_u64(record + SL_BATCH_OFF_BASE_TIMESTAMP, base_timestamp);
    memcpy(sums, record, SL_BATCH_OFF_CHECKSUM);
    sl_store_u64(record + SL_BATCH_OFF_CHECKSUM, sl_xxh3_64(sums, sums_len));
}

/* --- iteration ------------------------------------------------------------------------ */

sl_frame_iter_t sl_frame_iter(sl_span_t record)
{
    sl_frame_iter_t it = {.record = record.ptr};
    if (record.len < SL_BATCH_HEADER_SIZE)
        return it; /* left = 0: nothing to walk */
    it.pos = SL_BATCH_HEADER_SIZE;
    it.end = record_end(record);
    it.left = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    it.base_offset = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_OFFSET);
    it.base_timestamp = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_TIMESTAMP);
    it.origin_timestamp = sl_load_u64(record.ptr + SL_BATCH_OFF_ORIGIN_TIMESTAMP);
    return it;
}

bool sl_frame_next(sl_frame_iter_t *it, sl_message_t *out)
{
    if (it->left == 0 || it->pos >= it->end)
        return false;
    const uint8_t *f = it->record + it->pos;
    size_t n = frame_fits(f, it->end - it->pos);
    if (n == 0) {
        it->left = 0;
        return false;
    }
    uint32_t payload_length = sl_load_u32(f + SL_FRAME_OFF_PAYLOAD_LENGTH);
    out->offset = it->base_offset + sl_load_u32(f + SL_FRAME_OFF_OFFSET_DELTA);
    out->timestamp = it->base_timestamp;
    out->origin_timestamp = it->origin_timestamp + sl_load_u32(f + SL_FRAME_OFF_TIMESTAMP_DELTA);
    out->id = sl_load_u128(f + SL_FRAME_OFF_ID);
    out->checksum = sl_load_u64(f + SL_FRAME_OFF_CHECKSUM);
    out->payload = sl_span(f + SL_FRAME_HEADER_SIZE, payload_length);
    out->user_headers = sl_span(f + SL_FRAME_HEADER_SIZE + payload_length,
                                n - SL_FRAME_HEADER_SIZE - payload_length);
    out->frame = sl_span(f, n);
    it->pos += n;
    it->left--;
    return true;
}

bool sl_record_next(sl_record_iter_t *it, sl_span_t *record)
{
    size_t left = it->run.len - it->pos;
    if (left < SL_BATCH_HEADER_SIZE)
        return false;
    const uint8_t *p = it->run.ptr + it->pos;
    uint64_t length = sl_load_u64(p + SL_BATCH_OFF_LENGTH);
    if (length < SL_BATCH_HEADER_SIZE || length > left)
        return false;
    *record = sl_span(p, (size_t)length);
    it->pos += (size_t)length;
    return true;
}

/* --- slicing (messages.md 4.1) ------------------------------------------------------- */

/* Appends `take` frames, bytes [from, to) of a record whose layout checked:
 * the record itself when that is all of them, else a sliced record. */
static int append_selection(sl_buf_t *out, sl_span_t record, uint32_t take, size_t from, size_t to)
{
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    if (take == count) {
        sl_put_span(out, record);
        return sl_buf_ok(out) ? 0 : -SL_ERR_COMMAND_LENGTH_ERROR;
    }
    size_t at = out->len;
    uint8_t *hdr = sl_buf_extend(out, SL_BATCH_HEADER_SIZE + (to - from));
    if (!hdr)
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    sl_batch_header_t h;
    sl_batch_header_read(record.ptr, &h);
    h.batch_length = SL_BATCH_HEADER_SIZE + (to - from);
    h.message_count = take;
    h.batch_checksum = 0;
    sl_batch_header_write(hdr, &h);
    memcpy(hdr + SL_BATCH_HEADER_SIZE, record.ptr + from, to - from);
    sl_span_t sliced = sl_span(out->data + at, (size_t)h.batch_length);
    sl_store_u64(hdr + SL_BATCH_OFF_CHECKSUM, sl_batch_checksum(sliced));
    return 0;
}

/* Selects frames from the first with offset >= start_offset (every frame
 * when match_all), at most max_count, and appends them. */
static int slice(sl_buf_t *out, sl_span_t record, uint64_t start_offset, bool match_all,
                 uint32_t max_count, uint32_t *taken)
{
    *taken = 0;
    if (sl_batch_check_layout(record) != 0)
        return -SL_ERR_INVALID_FORMAT;
    uint64_t base = sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_OFFSET);
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    size_t pos = SL_BATCH_HEADER_SIZE, from = 0;
    uint32_t take = 0;
    for (uint32_t i = 0; i < count && take < max_count; i++) {
        const uint8_t *f = record.ptr + pos;
        size_t n = frame_fits(f, record.len - pos);
        bool selected = take > 0 || match_all ||
                        base + sl_load_u32(f + SL_FRAME_OFF_OFFSET_DELTA) >= start_offset;
        if (selected && take++ == 0)
            from = pos;
        pos += n;
    }
    if (take == 0)
        return 0;
    int rc = append_selection(out, record, take, from, pos);
    if (rc == 0)
        *taken = take;
    return rc;
}

int sl_batch_slice_offset(sl_buf_t *out, sl_span_t record, uint64_t start_offset,
                          uint32_t max_count, uint32_t *taken)
{
    return slice(out, record, start_offset, false, max_count, taken);
}

int sl_batch_slice_timestamp(sl_buf_t *out, sl_span_t record, uint64_t timestamp,
                             uint32_t max_count, uint32_t *taken)
{
    *taken = 0;
    if (record.len >= SL_BATCH_HEADER_SIZE &&
        sl_load_u64(record.ptr + SL_BATCH_OFF_BASE_TIMESTAMP) < timestamp)
        return sl_batch_check_layout(record) == 0 ? 0 : -SL_ERR_INVALID_FORMAT;
    return slice(out, record, 0, true, max_count, taken);
}

/* --- builder (messages.md 3.1) ------------------------------------------------------- */

void sl_batch_begin(sl_batch_builder_t *bb, sl_buf_t *buf)
{
    *bb = (sl_batch_builder_t){.buf = buf, .start = buf->len, .timestamp_min = UINT64_MAX};
    sl_put_zeros(buf, SL_BATCH_HEADER_SIZE);
    if (!sl_buf_ok(buf))
        bb->error = -SL_ERR_COMMAND_LENGTH_ERROR;
}

static int check_message(const sl_batch_builder_t *bb, uint64_t ts, sl_span_t payload,
                         sl_span_t user_headers)
{
    uint32_t pairs;
    if (bb->count == UINT32_MAX)
        return -SL_ERR_TOO_MANY_MESSAGES;
    if (payload.len > SL_PAYLOAD_MAX)
        return -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD;
    if (user_headers.len > SL_USER_HEADERS_MAX)
        return -SL_ERR_TOO_BIG_USER_HEADERS;
    if (user_headers.len > 0 && !sl_user_headers_validate(user_headers, &pairs))
        return -SL_ERR_INVALID_COMMAND;
    uint64_t lo = ts < bb->timestamp_min ? ts : bb->timestamp_min;
    uint64_t hi = ts > bb->timestamp_max ? ts : bb->timestamp_max;
    if (hi - lo > UINT32_MAX)
        return -SL_ERR_INVALID_MESSAGE_TIMESTAMP_DELTA;
    return 0;
}

int sl_batch_add(sl_batch_builder_t *bb, sl_u128_t id, uint64_t origin_timestamp, sl_span_t payload,
                 sl_span_t user_headers)
{
    if (bb->error)
        return bb->error;
    int rc = check_message(bb, origin_timestamp, payload, user_headers);
    if (rc != 0)
        return bb->error = rc;
    size_t n = SL_FRAME_HEADER_SIZE + payload.len + user_headers.len;
    uint8_t *f = sl_buf_extend(bb->buf, n);
    if (!f)
        return bb->error = -SL_ERR_COMMAND_LENGTH_ERROR;
    /* The batch minimum is only known at the end, so the checksum slot
     * holds the absolute origin timestamp until finish turns it into
     * timestamp_delta and computes the real checksum. */
    sl_frame_header_t fh = {
        .checksum = origin_timestamp,
        .id = id,
        .offset_delta = bb->count,
        .user_headers_length = (uint32_t)user_headers.len,
        .payload_length = (uint32_t)payload.len,
    };
    sl_frame_header_write(f, &fh);
    if (payload.len)
        memcpy(f + SL_FRAME_HEADER_SIZE, payload.ptr, payload.len);
    if (user_headers.len)
        memcpy(f + SL_FRAME_HEADER_SIZE + payload.len, user_headers.ptr, user_headers.len);
    bb->count++;
    if (origin_timestamp < bb->timestamp_min)
        bb->timestamp_min = origin_timestamp;
    if (origin_timestamp > bb->timestamp_max)
        bb->timestamp_max = origin_timestamp;
    return 0;
}

int sl_batch_finish(sl_batch_builder_t *bb, sl_span_t *record)
{
    *record = sl_span(NULL, 0);
    if (bb->error)
        return bb->error;
    if (bb->count == 0)
        return bb->error = -SL_ERR_INVALID_MESSAGES_COUNT;
    uint8_t *rec = bb->buf->data + bb->start;
    size_t len = bb->buf->len - bb->start;
    sl_batch_header_t h = {
        .origin_timestamp = bb->timestamp_min,
        .batch_length = len,
        .message_count = bb->count,
    };
    sl_batch_header_write(rec, &h);
    batch_hasher_t hasher;
    hasher_begin(&hasher, rec);
    size_t pos = SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < bb->count; i++) {
        uint8_t *f = rec + pos;
        size_t n = frame_fits(f, len - pos);
        sl_assert(n != 0);
        uint64_t delta = sl_load_u64(f + SL_FRAME_OFF_CHECKSUM) - bb->timestamp_min;
        sl_store_u32(f + SL_FRAME_OFF_TIMESTAMP_DELTA, (uint32_t)delta);
        sl_store_u64(f + SL_FRAME_OFF_CHECKSUM, sl_frame_checksum(sl_span(f, n)));
        hasher_add(&hasher, f);
        pos += n;
    }
    sl_assert(pos == len);
    sl_store_u64(rec + SL_BATCH_OFF_CHECKSUM, hasher_end(&hasher));
    *record = sl_span(rec, len);
    return 0;
}
