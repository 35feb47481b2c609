/* libFuzzer target: opening sealed message records (server/encryption.h),
 * the decoder a poll runs over stored bytes under at-rest encryption.
 * Input: [mode u8][bytes].
 *   mode even: the bytes are opened as a run of sealed records as they are;
 *     whatever they say, the open must stay inside them and either fail or
 *     shrink the run.
 *   mode odd: the bytes become the payloads of a valid batch, which is sealed
 *     with the fixed key; the sealed record opens back to exactly the
 *     original bytes, and with one byte flipped (where the first input byte
 *     says) it must fail, never open to other bytes.
 * Forging a GCM tag is out of a fuzzer's reach, so the second mode is what
 * reaches the success path. */
#include <sluice/error.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/aead.h"
#include "server/encryption.h"
#include "wire/batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sl_aead_t *context(void)
{
    static sl_aead_t *a;
    static const uint8_t key[SL_AEAD_KEY_SIZE] = {0x5a};
    if (!a && sl_aead_create(key, NULL, &a) != 0)
        abort();
    return a;
}

static void open_as_given(const uint8_t *data, size_t size)
{
    uint8_t *run = malloc(size ? size : 1);
    if (!run)
        abort();
    memcpy(run, data, size);
    size_t opened = 0;
    uint64_t bad;
    if (sl_encryption_open_run(context(), run, size, &opened, &bad) == 0 && opened > size)
        abort();
    free(run);
}

/* Payloads of up to 64 bytes each, cut from the input. */
static void seal_and_open(const uint8_t *data, size_t size)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_batch_builder_t bb;
    sl_batch_begin(&bb, &b);
    size_t pos = 0;
    for (uint32_t i = 0; i < 64 && pos < size; i++) {
        size_t n = data[pos] % 65;
        pos++;
        if (n > size - pos)
            n = size - pos;
        if (sl_batch_add(&bb, (sl_u128_t){i + 1, 0}, 1, (sl_span_t){data + pos, n},
                         (sl_span_t){NULL, 0}) != 0)
            abort();
        pos += n;
    }
    sl_span_t rec;
    if (sl_batch_finish(&bb, &rec) != 0) { /* no message: nothing to seal */
        sl_buf_free(&b);
        return;
    }
    uint32_t count = sl_load_u32(rec.ptr + SL_BATCH_OFF_COUNT);
    size_t len = sl_encryption_sealed_len(rec.len, count);
    uint8_t *sealed = malloc(len), *work = malloc(len);
    if (!sealed || !work || sl_encryption_seal_record(context(), rec, sealed) != 0)
        abort();
    size_t opened;
    uint64_t bad;
    memcpy(work, sealed, len);
    if (sl_encryption_open_run(context(), work, len, &opened, &bad) != 0 || opened != rec.len ||
        memcmp(work, rec.ptr, rec.len) != 0)
        abort();
    /* A flipped byte anywhere in the frames must be refused unless it is
     * one the blob does not cover (below). */
    size_t at = SL_BATCH_HEADER_SIZE + (size ? data[0] * 7919u : 0) % (len - SL_BATCH_HEADER_SIZE);
    memcpy(work, sealed, len);
    work[at] ^= 0x01;
    int rc = sl_encryption_open_run(context(), work, len, &opened, &bad);
    /* A frame's checksum (recomputed on open) and its offset and timestamp
     * deltas are not covered by the blob: flipping those may open. */
    if (rc == 0) {
        size_t f = SL_BATCH_HEADER_SIZE;
        for (uint32_t i = 0; i < count; i++) {
            size_t body = sl_load_u32(sealed + f + SL_FRAME_OFF_PAYLOAD_LENGTH) +
                          (size_t)sl_load_u32(sealed + f + SL_FRAME_OFF_HEADERS_LENGTH);
            bool in_header = at >= f && at < f + SL_FRAME_HEADER_SIZE;
            bool unauthenticated =
                in_header && (at - f < SL_FRAME_OFF_ID ||
                              (at - f >= SL_FRAME_OFF_OFFSET_DELTA &&
                               at - f < SL_FRAME_OFF_HEADERS_LENGTH));
            if (at >= f && at < f + SL_FRAME_HEADER_SIZE + body && !unauthenticated)
                abort(); /* an authenticated byte changed and still opened */
            f += SL_FRAME_HEADER_SIZE + body;
        }
    }
    free(sealed);
    free(work);
    sl_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        seal_and_open(data + 1, size - 1);
    else
        open_as_given(data + 1, size - 1);
    return 0;
}
