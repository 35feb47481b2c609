/* libFuzzer target: the body primitives (wire/prim.h) and permission sets
 * (wire/perms.h). The input is a sequence of [selector byte][primitive
 * bytes]; each selector picks the next primitive to read from one shared
 * reader, until a decode fails or the input ends. Every primitive that
 * decodes must re-encode to the bytes it consumed (normalised where the
 * protocol lets readers accept several spellings of one value). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "wire/perms.h"
#include "wire/prim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    PRIM_NAME,
    PRIM_STR8,
    PRIM_STR32,
    PRIM_IDENT,
    PRIM_CONSUMER,
    PRIM_OPT_PARTITION,
    PRIM_PARTITIONING,
    PRIM_STRATEGY,
    PRIM_ACK,
    PRIM_PERMISSIONS,
    PRIM_COUNT,
};

/* Permission sets unpack into this arena, emptied for every input. */
static sl_arena_t arena;
static bool arena_ready;

/* Encodes one decoded primitive into b; false when there is no encoder. */
static bool encode_prim(sl_buf_t *b, int kind, const void *v)
{
    switch (kind) {
    case PRIM_NAME:
        return sl_name_encode(b, *(const sl_span_t *)v);
    case PRIM_STR8:
        return sl_str8_encode(b, *(const sl_span_t *)v);
    case PRIM_STR32:
        return sl_str32_encode(b, *(const sl_span_t *)v);
    case PRIM_IDENT:
        return sl_ident_encode(b, v);
    case PRIM_CONSUMER:
        return sl_consumer_encode(b, v);
    case PRIM_OPT_PARTITION:
        return sl_opt_partition_encode(b, *(const sl_opt_partition_t *)v);
    case PRIM_PARTITIONING:
        return sl_partitioning_encode(b, v);
    case PRIM_STRATEGY:
        return sl_strategy_encode(b, *(const sl_strategy_t *)v);
    }
    return false;
}

/* Decodes one primitive of the given kind; false when it does not decode. */
static bool decode_prim(sl_reader_t *r, int kind, void *v)
{
    switch (kind) {
    case PRIM_NAME:
        return sl_name_decode(r, v);
    case PRIM_STR8:
        return sl_str8_decode(r, v);
    case PRIM_STR32:
        return sl_str32_decode(r, v);
    case PRIM_IDENT:
        return sl_ident_decode(r, v);
    case PRIM_CONSUMER:
        return sl_consumer_decode(r, v);
    case PRIM_OPT_PARTITION:
        return sl_opt_partition_decode(r, v);
    case PRIM_PARTITIONING:
        return sl_partitioning_decode(r, v);
    case PRIM_STRATEGY:
        return sl_strategy_decode(r, v);
    }
    return sl_ack_decode(r, v);
}

/* Value checks that do not depend on the encoder. */
static void check_value(int kind, const void *v)
{
    const sl_ident_t *id = NULL;
    if (kind == PRIM_NAME) {
        sl_span_t s = *(const sl_span_t *)v;
        sl_assert(s.len >= 1 && s.len <= 255 && sl_utf8_valid(s.ptr, s.len));
    } else if (kind == PRIM_STR8 || kind == PRIM_STR32) {
        sl_span_t s = *(const sl_span_t *)v;
        sl_assert(sl_utf8_valid(s.ptr, s.len));
    } else if (kind == PRIM_IDENT) {
        id = v;
    } else if (kind == PRIM_CONSUMER) {
        const sl_consumer_t *c = v;
        sl_assert(c->kind == SL_CONSUMER_SINGLE || c->kind == SL_CONSUMER_GROUP);
        id = &c->id;
    } else if (kind == PRIM_PARTITIONING) {
        const sl_partitioning_t *p = v;
        if (p->kind == SL_PARTITIONING_MESSAGES_KEY) {
            uint32_t count = (uint32_t)p->key.len;
            sl_assert(sl_partitioning_key_index(p->key, count) < count);
        }
    } else if (kind == PRIM_ACK) {
        sl_assert(*(const uint8_t *)v <= SL_ACK_QUORUM);
    }
    if (id) {
        sl_assert(id->kind == SL_IDENT_NUMERIC || id->kind == SL_IDENT_STRING);
        sl_assert(sl_ident_eq(id, id));
        if (id->kind == SL_IDENT_NUMERIC)
            sl_assert(sl_consumer_key(id) == id->number);
    }
}

/* The bytes a canonical writer emits for what a reader saw in `in`. */
static void normalise_prim(int kind, sl_span_t in, uint8_t *out)
{
    memcpy(out, in.ptr, in.len);
    /* OptPartition: any flag other than 1 means absent, id then ignored. */
    if (kind == PRIM_OPT_PARTITION && in.ptr[0] != 1)
        memset(out, 0, in.len);
}

static bool check_one_prim(sl_reader_t *r, int kind)
{
    union {
        sl_span_t s;
        sl_ident_t id;
        sl_consumer_t c;
        sl_opt_partition_t op;
        sl_partitioning_t p;
        sl_strategy_t st;
        uint8_t ack;
    } v, v2;
    size_t start = r->pos;
    if (!decode_prim(r, kind, &v)) {
        sl_assert(!sl_reader_ok(r));
        return false;
    }
    sl_span_t seen = sl_span(r->ptr + start, r->pos - start);
    check_value(kind, &v);
    if (kind == PRIM_ACK) {
        sl_assert(seen.len == 1);
        return true;
    }
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_assert(encode_prim(&b, kind, &v));
    uint8_t *want = malloc(seen.len);
    sl_assert(want != NULL);
    normalise_prim(kind, seen, want);
    sl_assert(sl_span_eq(sl_buf_span(&b), sl_span(want, seen.len)));
    free(want);
    /* The canonical bytes decode again, consuming all of them. */
    sl_reader_t r2 = sl_reader(sl_buf_span(&b));
    sl_assert(decode_prim(&r2, kind, &v2) && sl_reader_done(&r2));
    sl_buf_free(&b);
    return true;
}

/* --- permission sets ------------------------------------------------------ */

/* Shape of a set that parsed, found by a walk written from permissions.md 1
 * independently of perms.c: which bytes are flags (a canonical writer emits
 * them as 0/1), and how many stream and topic grants there are. */
typedef struct perms_shape {
    uint8_t *is_flag;
    uint32_t streams;
    uint32_t topics;
} perms_shape_t;

static size_t shape_flags(sl_span_t raw, size_t at, size_t n, perms_shape_t *sh)
{
    sl_assert(at + n <= raw.len);
    memset(sh->is_flag + at, 1, n);
    return at + n;
}

static void perms_shape(sl_span_t raw, perms_shape_t *sh)
{
    size_t at = shape_flags(raw, 0, 10 + 1, sh); /* 10 globals, "streams follow" */
    while (raw.ptr[at - 1] != 0) {
        at = shape_flags(raw, at + 4, 6 + 1, sh); /* stream id, 6 flags, "topics follow" */
        sh->streams++;
        while (raw.ptr[at - 1] != 0) {
            at = shape_flags(raw, at + 4, 4 + 1, sh); /* topic id, 4 flags, "more topics" */
            sh->topics++;
        }
        at = shape_flags(raw, at, 1, sh); /* "more streams" */
    }
    sl_assert(at == raw.len);
}

/* Rules that include one another in permissions.md 2.2 must agree. */
static void check_rules(const sl_permissions_t *p, uint32_t stream, uint32_t topic)
{
    bool allow[SL_PERM_SEND_MESSAGES + 1];
    for (int rule = 0; rule <= SL_PERM_SEND_MESSAGES; rule++)
        allow[rule] = sl_permissions_allow(p, (sl_perm_rule_t)rule, stream, topic);
    static const struct {
        sl_perm_rule_t from, to;
    } implies[] = {
        {SL_PERM_MANAGE_USERS, SL_PERM_READ_USERS},   {SL_PERM_CREATE_STREAM, SL_PERM_GET_STREAMS},
        {SL_PERM_GET_STREAMS, SL_PERM_GET_STREAM},    {SL_PERM_MANAGE_STREAM, SL_PERM_GET_STREAM},
        {SL_PERM_GET_STREAM, SL_PERM_GET_TOPICS},     {SL_PERM_GET_TOPICS, SL_PERM_GET_TOPIC},
        {SL_PERM_CREATE_TOPIC, SL_PERM_MANAGE_TOPIC}, {SL_PERM_MANAGE_TOPIC, SL_PERM_GET_TOPIC},
        {SL_PERM_GET_TOPICS, SL_PERM_POLL_MESSAGES},  {SL_PERM_MANAGE_TOPIC, SL_PERM_SEND_MESSAGES},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(implies); i++)
        sl_assert(!allow[implies[i].from] || allow[implies[i].to]);
}

static bool check_permissions(sl_reader_t *r)
{
    size_t start = r->pos;
    sl_span_t raw;
    if (!sl_permissions_parse(r, &raw)) {
        sl_assert(!sl_reader_ok(r));
        return false;
    }
    sl_assert(raw.ptr == r->ptr + start && r->pos == start + raw.len);

    perms_shape_t sh = {.is_flag = calloc(raw.len, 1)};
    sl_assert(sh.is_flag != NULL);
    perms_shape(raw, &sh);

    sl_permissions_t p;
    sl_assert(sl_permissions_unpack(raw, &arena, &p));
    sl_assert(p.streams_count == sh.streams);
    uint32_t topics = 0;
    for (uint32_t i = 0; i < p.streams_count; i++)
        topics += p.streams[i].topics_count;
    sl_assert(topics == sh.topics);

    /* encode(unpack(raw)) is raw with each flag byte written as 0/1: equal
     * to raw exactly when every flag byte already was 0 or 1. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_assert(sl_permissions_encode(&b, &p));
    sl_assert(b.len == raw.len);
    for (size_t i = 0; i < raw.len; i++)
        sl_assert(b.data[i] == (sh.is_flag[i] ? (raw.ptr[i] != 0) : raw.ptr[i]));

    /* The canonical form is a fixed point. */
    sl_reader_t r2 = sl_reader(sl_buf_span(&b));
    sl_span_t raw2;
    sl_permissions_t p2;
    sl_assert(sl_permissions_parse(&r2, &raw2) && sl_reader_done(&r2));
    sl_assert(sl_permissions_unpack(raw2, &arena, &p2));
    sl_buf_t b2;
    sl_buf_init(&b2, 0);
    sl_assert(sl_permissions_encode(&b2, &p2));
    sl_assert(sl_span_eq(sl_buf_span(&b2), sl_buf_span(&b)));

    /* Aim the rules at a granted stream and topic when there are some. */
    uint32_t stream = p.streams_count ? p.streams[0].stream_id : 0, topic = 0;
    for (uint32_t i = 0; i < p.streams_count; i++) {
        if (p.streams[i].topics_count) {
            stream = p.streams[i].stream_id;
            topic = p.streams[i].topics[0].topic_id;
            break;
        }
    }
    check_rules(&p, stream, topic);
    check_rules(&p, stream + 1, topic);
    sl_permissions_t root = sl_permissions_root();
    for (int rule = 0; rule <= SL_PERM_SEND_MESSAGES; rule++)
        sl_assert(sl_permissions_allow(&root, (sl_perm_rule_t)rule, stream, topic));

    sl_buf_free(&b2);
    sl_buf_free(&b);
    free(sh.is_flag);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!arena_ready) {
        sl_arena_init(&arena, 64 * 1024, 64u * 1024 * 1024);
        arena_ready = true;
    }
    sl_arena_reset(&arena);
    sl_reader_t r = sl_reader(sl_span(data, size));
    uint8_t selector;
    while (sl_read_u8(&r, &selector)) {
        int kind = selector % PRIM_COUNT;
        bool ok = kind == PRIM_PERMISSIONS ? check_permissions(&r) : check_one_prim(&r, kind);
        if (!ok)
            break;
    }
    return 0;
}
