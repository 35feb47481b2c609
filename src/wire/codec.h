/* Conventions shared by every command codec (wire/cmd_*.h) and the result
 * section of framed replies (framing.md 7.1).
 *
 * For a command with stem `x` (see wire/command.h) there are four functions:
 *
 *   int sl_x_request_decode(sl_span_t body, sl_x_request_t *out);
 *       Server side. Full validation in the reference's order; returns 0 or
 *       the negated error the reference answers with (usually
 *       -SL_ERR_INVALID_COMMAND). Spans in *out borrow body. Never allocates.
 *   int sl_x_request_encode(sl_buf_t *b, const sl_x_request_t *in);
 *       Client side. Appends the body; -SL_ERR_INVALID_COMMAND when a value
 *       cannot be encoded, -SL_ERR_COMMAND_LENGTH_ERROR when the buffer failed.
 *   int sl_x_reply_decode(sl_span_t payload, sl_arena_t *arena, sl_x_reply_t *out);
 *       Client side, on the payload (after the result section, if framed).
 *       0 or -SL_ERR_INVALID_FORMAT. Lists go into arrays from arena; spans
 *       borrow payload. Single-object reads whose payload is empty set
 *       `found = false` and succeed.
 *   int sl_x_reply_encode(sl_buf_t *b, const sl_x_reply_t *in);
 *       Server side: appends the payload (the caller writes the result
 *       section first when the reply is framed).
 */
#ifndef SL_WIRE_CODEC_H
#define SL_WIRE_CODEC_H

#include <sluice/error.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"

/* The body of a command that has none. */
typedef struct sl_empty {
    uint8_t unused;
} sl_empty_t;

/* Ends an encoder: 0, or the error for a value that could not be encoded
 * (encodable == false) or a buffer that failed. */
static inline int sl_encode_end(const sl_buf_t *b, bool encodable)
{
    if (!sl_buf_ok(b))
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    return encodable ? 0 : -SL_ERR_INVALID_COMMAND;
}

/* Request decoders that read a fixed prefix accept trailing bytes (the
 * reference decodes a prefix); reply decoders are exact. */
static inline int sl_request_decode_end(const sl_reader_t *r)
{
    return sl_reader_ok(r) ? 0 : -SL_ERR_INVALID_COMMAND;
}
static inline int sl_reply_decode_end(const sl_reader_t *r)
{
    return sl_reader_done(r) ? 0 : -SL_ERR_INVALID_FORMAT;
}

/* Empty requests ignore any bytes; empty replies must be empty. */
#define SL_EMPTY_REQUEST(stem)                                                                     \
    typedef sl_empty_t sl_##stem##_request_t;                                                      \
    static inline int sl_##stem##_request_decode(sl_span_t body, sl_##stem##_request_t *out)       \
    {                                                                                              \
        (void)body;                                                                                \
        *out = (sl_empty_t){0};                                                                    \
        return 0;                                                                                  \
    }                                                                                              \
    static inline int sl_##stem##_request_encode(sl_buf_t *b, const sl_##stem##_request_t *in)     \
    {                                                                                              \
        (void)in;                                                                                  \
        return sl_encode_end(b, true);                                                             \
    }

#define SL_EMPTY_REPLY(stem)                                                                       \
    typedef sl_empty_t sl_##stem##_reply_t;                                                        \
    static inline int sl_##stem##_reply_decode(sl_span_t payload, sl_arena_t *arena,              \
                                               sl_##stem##_reply_t *out)                           \
    {                                                                                              \
        (void)arena;                                                                               \
        *out = (sl_empty_t){0};                                                                    \
        return payload.len == 0 ? 0 : -SL_ERR_INVALID_FORMAT;                                      \
    }                                                                                              \
    static inline int sl_##stem##_reply_encode(sl_buf_t *b, const sl_##stem##_reply_t *in)         \
    {                                                                                              \
        (void)in;                                                                                  \
        return sl_encode_end(b, true);                                                             \
    }

/* --- result section (framing.md 7.1) --------------------------------------- */

/* Appends `count = 0` (success; the payload follows). */
static inline void sl_result_put_ok(sl_buf_t *b)
{
    sl_put_u32(b, 0);
}
/* Appends the 12-byte rejection `{count 1, index 0, result code}`. */
static inline void sl_result_put_error(sl_buf_t *b, uint32_t code)
{
    sl_put_u32(b, 1);
    sl_put_u32(b, 0);
    sl_put_u32(b, code);
}
/* Splits a framed body: *result gets 0 and *payload the rest on success, or
 * the first entry's code (payload empty). -SL_ERR_INVALID_COMMAND when the
 * body is shorter than 4 + 8 * count or count > 0 with a zero result. */
int sl_result_split(sl_span_t body, uint32_t *result, sl_span_t *payload) SL_WUR;

#endif
