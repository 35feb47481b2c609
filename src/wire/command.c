/* The command table (wire/command.h): one row per command code, built from
 * SL_COMMANDS with the typed codecs of wire/cmd_*.h behind uniform
 * signatures. */
#include "wire/command.h"

#include "wire/cmd_groups.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_system.h"
#include "wire/cmd_topics.h"
#include "wire/cmd_users.h"

/* Thin adapters from the uniform void* signatures to each typed codec. */
#define SL_X_ADAPT(sym, code, name, op, rop, plane, framed, stem)                                 \
    static int stem##_request_decode_any(sl_span_t body, void *out)                               \
    {                                                                                              \
        return sl_##stem##_request_decode(body, (sl_##stem##_request_t *)out);                    \
    }                                                                                              \
    static int stem##_request_encode_any(sl_buf_t *b, const void *in)                             \
    {                                                                                              \
        return sl_##stem##_request_encode(b, (const sl_##stem##_request_t *)in);                  \
    }                                                                                              \
    static int stem##_reply_decode_any(sl_span_t payload, sl_arena_t *arena, void *out)           \
    {                                                                                              \
        return sl_##stem##_reply_decode(payload, arena, (sl_##stem##_reply_t *)out);              \
    }                                                                                              \
    static int stem##_reply_encode_any(sl_buf_t *b, const void *in)                               \
    {                                                                                              \
        return sl_##stem##_reply_encode(b, (const sl_##stem##_reply_t *)in);                      \
    }
SL_COMMANDS(SL_X_ADAPT)
#undef SL_X_ADAPT

const sl_command_t sl_commands[] = {
#define SL_X_ROW(sym, code_, name_, op, rop, plane_, framed, stem_)                                \
    {                                                                                              \
        .code = code_,                                                                             \
        .name = name_,                                                                             \
        .stem = #stem_,                                                                            \
        .operation = op,                                                                           \
        .reply_operation = rop,                                                                    \
        .plane = plane_,                                                                           \
        .reply_framed = framed,                                                                    \
        .request_size = sizeof(sl_##stem_##_request_t),                                            \
        .reply_size = sizeof(sl_##stem_##_reply_t),                                                \
        .request_decode = stem_##_request_decode_any,                                              \
        .request_encode = stem_##_request_encode_any,                                              \
        .reply_decode = stem_##_reply_decode_any,                                                  \
        .reply_encode = stem_##_reply_encode_any,                                                  \
    },
    SL_COMMANDS(SL_X_ROW)
#undef SL_X_ROW
};

const size_t sl_commands_count = SL_ARRAY_LEN(sl_commands);

const sl_command_t *sl_command_by_code(uint32_t code)
{
    /* The rows are sorted by code (checked by the unit tests). */
    size_t lo = 0, hi = sl_commands_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sl_commands[mid].code == code)
            return &sl_commands[mid];
        if (sl_commands[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const sl_command_t *sl_command_by_operation(uint8_t operation)
{
    if (operation == 2)
        return NULL;
    for (size_t i = 0; i < sl_commands_count; i++) {
        const sl_command_t *c = &sl_commands[i];
        /* Register is shared by 40 and 45; the password shape's row answers. */
        if (c->operation == operation && c->plane != SL_PLANE_READ && c->plane != SL_PLANE_LEGACY)
            return c;
    }
    return NULL;
}

const char *sl_plane_name(sl_plane_t plane)
{
    switch (plane) {
    case SL_PLANE_READ:
        return "read";
    case SL_PLANE_SESSION:
        return "session";
    case SL_PLANE_METADATA:
        return "metadata";
    case SL_PLANE_SEGMENTS:
        return "segments";
    case SL_PLANE_PARTITION:
        return "partition";
    case SL_PLANE_LEGACY:
        return "legacy";
    }
    return "?";
}
