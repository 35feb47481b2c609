/* libFuzzer target: batch record validation (wire/batch.h) and the result
 * section split (wire/codec.h). Input: [expected_count u32][batch record].
 *
 * Checksums stop a fuzzer cold, so each input is validated twice: as given,
 * and as a copy whose frame and batch checksums were recomputed over
 * whatever frames the bytes describe (messages.md 2). Every record
 * sl_batch_validate accepts is then re-checked here against the rules of
 * messages.md 1 and 3.2, written from the reference independently. */
#include <sluice/error.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "base/xxh3.h"
#include "wire/batch.h"
#include "wire/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    BATCH_OFF_LENGTH = 32,
    BATCH_OFF_CHECKSUM = 40,
    BATCH_OFF_COUNT = 48,
    BATCH_OFF_RESERVED = 52,
    FRAME_OFF_USER_HEADERS_LEN = 32,
    FRAME_OFF_PAYLOAD_LEN = 36,
    FRAME_OFF_RESERVED = 40,
};

/* The frames found from batch offset 256 up to end: how many there are and
 * where the walk stopped (end when they tile [256, end) exactly). With fix,
 * every frame's checksum is recomputed in place. */
typedef struct frame_walk {
    uint32_t frames;
    size_t stop;
    bool reserved_zero;
    bool checksums_ok;
} frame_walk_t;

static frame_walk_t walk_frames(uint8_t *rec, size_t end, bool fix)
{
    frame_walk_t w = {.stop = SL_BATCH_HEADER_SIZE, .reserved_zero = true, .checksums_ok = true};
    size_t at = SL_BATCH_HEADER_SIZE;
    while (end - at >= SL_FRAME_HEADER_SIZE) {
        uint64_t len = (uint64_t)SL_FRAME_HEADER_SIZE +
                       sl_load_u32(rec + at + FRAME_OFF_USER_HEADERS_LEN) +
                       sl_load_u32(rec + at + FRAME_OFF_PAYLOAD_LEN);
        if (len > end - at)
            break;
        uint64_t sum = sl_xxh3_64(rec + at + 8, (size_t)len - 8);
        if (fix)
            sl_store_u64(rec + at, sum);
        w.checksums_ok &= sl_load_u64(rec + at) == sum;
        w.reserved_zero &= sl_load_u64(rec + at + FRAME_OFF_RESERVED) == 0;
        at += (size_t)len;
        w.frames++;
    }
    w.stop = at;
    return w;
}

/* messages.md 2.2 over the first `frames` frames. */
static uint64_t batch_checksum(const uint8_t *rec, uint32_t frames)
{
    sl_xxh3_state_t s;
    sl_xxh3_reset(&s);
    sl_xxh3_update(&s, rec, BATCH_OFF_CHECKSUM);
    sl_xxh3_update(&s, rec + BATCH_OFF_COUNT, 4);
    size_t at = SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < frames; i++) {
        sl_xxh3_update(&s, rec + at, 8);
        at += SL_FRAME_HEADER_SIZE + sl_load_u32(rec + at + FRAME_OFF_USER_HEADERS_LEN) +
              sl_load_u32(rec + at + FRAME_OFF_PAYLOAD_LEN);
    }
    return sl_xxh3_digest(&s);
}

/* What every accepted record satisfies (messages.md 3.2 checks 3..12). */
static void check_accepted(uint8_t *rec, size_t len, uint32_t expected_count)
{
    sl_assert(len >= SL_BATCH_HEADER_SIZE);
    uint64_t batch_length = sl_load_u64(rec + BATCH_OFF_LENGTH);
    sl_assert(batch_length >= SL_BATCH_HEADER_SIZE && batch_length <= len);
    sl_assert(sl_all_zero(rec + BATCH_OFF_RESERVED, SL_BATCH_HEADER_SIZE - BATCH_OFF_RESERVED));
    uint32_t count = sl_load_u32(rec + BATCH_OFF_COUNT);
    sl_assert(count >= 1 && count == expected_count);
    frame_walk_t w = walk_frames(rec, (size_t)batch_length, false);
    sl_assert(w.stop == batch_length && w.frames == count);
    sl_assert(w.reserved_zero && w.checksums_ok);
    sl_assert(sl_load_u64(rec + BATCH_OFF_CHECKSUM) == batch_checksum(rec, count));
}

static void validate(uint8_t *rec, size_t len, uint32_t expected_count)
{
    int rc = sl_batch_validate(sl_span(rec, len), expected_count);
    sl_assert(rc <= 0);
    if (rc == 0)
        check_accepted(rec, len, expected_count);
}

/* Recomputes every checksum the record's bytes describe. */
static void fix_checksums(uint8_t *rec, size_t len)
{
    if (len < SL_BATCH_HEADER_SIZE)
        return;
    uint64_t batch_length = sl_load_u64(rec + BATCH_OFF_LENGTH);
    size_t end = batch_length >= SL_BATCH_HEADER_SIZE && batch_length <= len ? batch_length : len;
    frame_walk_t w = walk_frames(rec, end, true);
    sl_store_u64(rec + BATCH_OFF_CHECKSUM, batch_checksum(rec, w.frames));
}

/* sl_result_split against framing.md 7.1, spelled out. */
static void check_result_split(const uint8_t *data, size_t size)
{
    uint32_t result = 12345;
    sl_span_t payload = sl_span(data, 1);
    int rc = sl_result_split(sl_span(data, size), &result, &payload);
    sl_assert(rc == 0 || rc == -SL_ERR_INVALID_COMMAND);
    if (size < 4) {
        sl_assert(rc != 0);
        return;
    }
    uint32_t count = sl_load_u32(data);
    if (count == 0) {
        sl_assert(rc == 0 && result == 0);
        sl_assert(payload.ptr == data + 4 && payload.len == size - 4);
        return;
    }
    if ((uint64_t)count * 8 > size - 4 || sl_load_u32(data + 8) == 0) {
        sl_assert(rc != 0);
        return;
    }
    sl_assert(rc == 0 && result == sl_load_u32(data + 8) && payload.len == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_result_split(data, size);
    if (size < 4)
        return 0;
    uint32_t expected_count = sl_load_u32(data);
    size_t len = size - 4;
    /* An exact-size copy: ASan still catches a read past the record. */
    uint8_t *rec = malloc(len ? len : 1);
    sl_assert(rec != NULL);
    memcpy(rec, data + 4, len);
    validate(rec, len, expected_count);
    fix_checksums(rec, len);
    validate(rec, len, expected_count);
    free(rec);
    return 0;
}
