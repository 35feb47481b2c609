/* libFuzzer target: every reply decoder of the command table
 * (wire/command.h). Bytes 0..2 (u16, little-endian) pick a row, modulo the
 * row count; the rest is the reply payload (after the result section). A
 * payload the client accepts must re-encode (as the server would send it)
 * into bytes that decode again, and that encoding must be a fixed point. */
#include <sanitizer/asan_interface.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "wire/command.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* See fuzz_request.c: one poisoned-tail stack buffer per decoded reply. */
#define STRUCT_MAX 16384u
#define FILL_BYTE  0xa5
/* A hostile count must not make a decoder allocate much (codec.h: counts
 * are bounded by the bytes present first). The arena refuses more than
 * ARENA_MAX in all, and one decode may grow it by at most ARENA_SLACK plus
 * BYTES_PER_PAYLOAD_BYTE for each payload byte: far above what any list
 * entry needs, far below what an unchecked u32 count asks for. */
#define ARENA_CHUNK            (64u * 1024)
#define ARENA_MAX              (64u * 1024 * 1024)
#define ARENA_SLACK            (4 * ARENA_CHUNK)
#define BYTES_PER_PAYLOAD_BYTE 1024u

static sl_arena_t arenas[2];
static bool arenas_ready;

static const sl_command_t *pick_row(const uint8_t *data)
{
    size_t index = (size_t)(data[0] | data[1] << 8) % sl_commands_count;
    return &sl_commands[index];
}

static void encode_or_die(const sl_command_t *row, sl_buf_t *b, const void *reply)
{
    int rc = row->reply_encode(b, reply);
    if (rc != 0) {
        fprintf(stderr, "%s: reply_encode of a decoded reply failed: %d\n", row->name, rc);
        sl_assert(rc == 0);
    }
}

static void decode_or_die(const sl_command_t *row, sl_span_t payload, void *reply)
{
    memset(reply, FILL_BYTE, row->reply_size);
    int rc = row->reply_decode(payload, &arenas[1], reply);
    if (rc != 0) {
        fprintf(stderr, "%s: reply_decode of a re-encoded reply failed: %d\n", row->name, rc);
        sl_assert(rc == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!arenas_ready) {
        for (int i = 0; i < 2; i++)
            sl_arena_init(&arenas[i], ARENA_CHUNK, ARENA_MAX);
        arenas_ready = true;
    }
    if (size < 2)
        return 0;
    sl_arena_reset(&arenas[0]);
    sl_arena_reset(&arenas[1]);
    const sl_command_t *row = pick_row(data);
    sl_assert(row->reply_size <= STRUCT_MAX);
    sl_span_t payload = sl_span(data + 2, size - 2);

    _Alignas(max_align_t) uint8_t first[STRUCT_MAX], second[STRUCT_MAX];
    ASAN_POISON_MEMORY_REGION(first + row->reply_size, STRUCT_MAX - row->reply_size);
    ASAN_POISON_MEMORY_REGION(second + row->reply_size, STRUCT_MAX - row->reply_size);

    memset(first, FILL_BYTE, row->reply_size);
    size_t before = arenas[0].used_bytes;
    int rc = row->reply_decode(payload, &arenas[0], first);
    sl_assert(rc <= 0);
    size_t grown = arenas[0].used_bytes - before;
    if (grown > ARENA_SLACK + BYTES_PER_PAYLOAD_BYTE * payload.len) {
        fprintf(stderr, "%s: reply_decode took %zu arena bytes for a %zu-byte payload\n", row->name,
                grown, payload.len);
        sl_assert(grown <= ARENA_SLACK + BYTES_PER_PAYLOAD_BYTE * payload.len);
    }
    if (rc == 0) {
        sl_buf_t b1, b2;
        sl_buf_init(&b1, 0);
        sl_buf_init(&b2, 0);
        encode_or_die(row, &b1, first);
        decode_or_die(row, sl_buf_span(&b1), second);
        encode_or_die(row, &b2, second);
        if (!sl_span_eq(sl_buf_span(&b1), sl_buf_span(&b2))) {
            fprintf(stderr, "%s: reply encoding is not a fixed point\n", row->name);
            sl_assert(sl_span_eq(sl_buf_span(&b1), sl_buf_span(&b2)));
        }
        sl_buf_free(&b2);
        sl_buf_free(&b1);
    }

    ASAN_UNPOISON_MEMORY_REGION(first, STRUCT_MAX);
    ASAN_UNPOISON_MEMORY_REGION(second, STRUCT_MAX);
    return 0;
}
