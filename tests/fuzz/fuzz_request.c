/* libFuzzer target: every request decoder of the command table
 * (wire/command.h). Bytes 0..2 (u16, little-endian) pick a row, modulo the
 * row count; the rest is the request body. A body the server accepts must
 * re-encode (as a client would send it) into bytes that decode again, and
 * that canonical encoding must be a fixed point. */
#include <sanitizer/asan_interface.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wire/command.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decoded requests live in one stack buffer big enough for the largest
 * request struct; the bytes past the row's request_size are poisoned so that
 * ASan reports a codec that writes beyond its own struct. */
#define STRUCT_MAX 16384u
/* Decoders fill every field they use; encoding a field left at this pattern
 * shows up as a failed round trip. */
#define FILL_BYTE 0xa5

static const sl_command_t *pick_row(const uint8_t *data)
{
    size_t index = (size_t)(data[0] | data[1] << 8) % sl_commands_count;
    return &sl_commands[index];
}

static void encode_or_die(const sl_command_t *row, sl_buf_t *b, const void *req)
{
    int rc = row->request_encode(b, req);
    if (rc != 0) {
        fprintf(stderr, "%s: request_encode of a decoded request failed: %d\n", row->name, rc);
        sl_assert(rc == 0);
    }
}

static void decode_or_die(const sl_command_t *row, sl_span_t body, void *req)
{
    memset(req, FILL_BYTE, row->request_size);
    int rc = row->request_decode(body, req);
    if (rc != 0) {
        fprintf(stderr, "%s: request_decode of a re-encoded request failed: %d\n", row->name, rc);
        sl_assert(rc == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const sl_command_t *row = pick_row(data);
    sl_assert(row->request_size <= STRUCT_MAX);
    sl_span_t body = sl_span(data + 2, size - 2);

    _Alignas(max_align_t) uint8_t first[STRUCT_MAX], second[STRUCT_MAX];
    ASAN_POISON_MEMORY_REGION(first + row->request_size, STRUCT_MAX - row->request_size);
    ASAN_POISON_MEMORY_REGION(second + row->request_size, STRUCT_MAX - row->request_size);

    memset(first, FILL_BYTE, row->request_size);
    int rc = row->request_decode(body, first);
    sl_assert(rc <= 0);
    if (rc == 0) {
        sl_buf_t b1, b2;
        sl_buf_init(&b1, 0);
        sl_buf_init(&b2, 0);
        encode_or_die(row, &b1, first);
        decode_or_die(row, sl_buf_span(&b1), second);
        encode_or_die(row, &b2, second);
        /* Re-encoding may drop trailing bytes and normalise flags, once. */
        if (!sl_span_eq(sl_buf_span(&b1), sl_buf_span(&b2))) {
            fprintf(stderr, "%s: request encoding is not a fixed point\n", row->name);
            sl_assert(sl_span_eq(sl_buf_span(&b1), sl_buf_span(&b2)));
        }
        sl_buf_free(&b2);
        sl_buf_free(&b1);
    }

    ASAN_UNPOISON_MEMORY_REGION(first, STRUCT_MAX);
    ASAN_UNPOISON_MEMORY_REGION(second, STRUCT_MAX);
    return 0;
}
