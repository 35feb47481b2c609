/* Consumer-group codecs (600-606): golden bytes of commands.md 13.4 and 13.6,
 * round trips of every request and reply, and hostile input for every
 * decoder (truncation, bad kinds and lengths, invalid UTF-8, huge counts). */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cmd_groups.h"

/* --- helpers ------------------------------------------------------------------ */

/* The five stems whose request is [stream][topic][group]; their request
 * types are all sl_group_target_t, so no function pointer casts are needed. */
static const struct {
    const char *stem;
    int (*decode)(sl_span_t body, sl_group_target_t *out);
    int (*encode)(sl_buf_t *b, const sl_group_target_t *in);
} target_stems[] = {
    {"get_consumer_group", sl_get_consumer_group_request_decode,
     sl_get_consumer_group_request_encode},
    {"delete_consumer_group", sl_delete_consumer_group_request_decode,
     sl_delete_consumer_group_request_encode},
    {"join_consumer_group", sl_join_consumer_group_request_decode,
     sl_join_consumer_group_request_encode},
    {"leave_consumer_group", sl_leave_consumer_group_request_decode,
     sl_leave_consumer_group_request_encode},
    {"sync_consumer_group", sl_sync_consumer_group_request_decode,
     sl_sync_consumer_group_request_encode},
};

static void assert_ident_equal(const sl_ident_t *got, const sl_ident_t *want)
{
    assert_int_equal(got->kind, want->kind);
    if (want->kind == SL_IDENT_NUMERIC)
        assert_int_equal(got->number, want->number);
    else
        assert_span_equal(got->name, want->name);
    assert_true(sl_ident_eq(got, want));
}

static void assert_details_equal(const sl_group_details_t *got, const sl_group_details_t *want)
{
    assert_int_equal(got->header.id, want->header.id);
    assert_int_equal(got->header.partitions_count, want->header.partitions_count);
    assert_int_equal(got->header.members_count, want->header.members_count);
    assert_span_equal(got->header.name, want->header.name);
    for (uint32_t i = 0; i < want->header.members_count; i++) {
        const sl_group_member_t *g = &got->members[i], *w = &want->members[i];
        assert_int_equal(g->id, w->id);
        assert_int_equal(g->partitions_count, w->partitions_count);
        for (uint32_t k = 0; k < w->partitions_count; k++)
            assert_int_equal(g->partitions[k], w->partitions[k]);
    }
}

/* A copy in its own allocation so ASan sees reads past the end. */
static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    assert_non_null(d);
    if (n)
        memcpy(d, p, n);
    return d;
}

static const uint32_t member0_parts[] = {0, 2, 4};
static const uint32_t member1_parts[] = {1, 3};
static const sl_group_member_t sample_members[] = {
    {.id = 0, .partitions_count = 3, .partitions = member0_parts},
    {.id = 7, .partitions_count = 2, .partitions = member1_parts},
    {.id = 9, .partitions_count = 0, .partitions = NULL},
};

static sl_group_details_t sample_details(void)
{
    return (sl_group_details_t){
        .header = {.id = 3,
                   .partitions_count = 5,
                   .members_count = 3,
                   .name = sl_span_str("wörkers")},
        .members = sample_members,
    };
}

/* --- golden bytes ----------------------------------------------------------------- */

static void test_golden_create_reply(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex("00 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00"
                           "07 77 6f 72 6b 65 72 73",
                           &n);
    assert_int_equal(n, 24);

    /* Encode: result section, then GroupDetails. */
    sl_create_consumer_group_reply_t rep = {
        .header = {.id = 0,
                   .partitions_count = 2,
                   .members_count = 0,
                   .name = sl_span_str("workers")},
    };
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_result_put_ok(&b);
    assert_int_equal(sl_create_consumer_group_reply_encode(&b, &rep), 0);
    assert_bytes_equal(b.data, b.len, want, n);

    /* Decode: strip the result section, then the payload after the count. */
    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_span(want, n), &result, &payload), 0);
    assert_int_equal(result, 0);
    assert_int_equal(payload.len, 20);
    assert_ptr_equal(payload.ptr, want + 4);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_create_consumer_group_reply_t got;
    assert_int_equal(sl_create_consumer_group_reply_decode(payload, &arena, &got), 0);
    assert_int_equal(got.header.id, 0);
    assert_int_equal(got.header.partitions_count, 2);
    assert_int_equal(got.header.members_count, 0);
    assert_span_str(got.header.name, "workers");
    assert_null(got.members);
    /* The same payload is a GetConsumerGroup reply with found = true. */
    sl_get_consumer_group_reply_t g;
    assert_int_equal(sl_get_consumer_group_reply_decode(payload, &arena, &g), 0);
    assert_true(g.found);
    assert_details_equal(&g.group, &got);
    /* and a one-element GetConsumerGroups reply. */
    sl_get_consumer_groups_reply_t list;
    assert_int_equal(sl_get_consumer_groups_reply_decode(payload, &arena, &list), 0);
    assert_int_equal(list.count, 1);
    assert_span_str(list.items[0].name, "workers");
    assert_int_equal(list.items[0].partitions_count, 2);

    sl_arena_free(&arena);
    sl_buf_free(&b);
    free(want);
}

static void test_golden_sync_reply(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex("03 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 02 00 00 00", &n);
    assert_int_equal(n, 20);
    const uint32_t parts[] = {0, 2};
    sl_sync_consumer_group_reply_t rep = {
        .found = true, .generation = 3, .partitions_count = 2, .partitions = parts};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_sync_consumer_group_reply_encode(&b, &rep), 0);
    assert_bytes_equal(b.data, b.len, want, n);

    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_sync_consumer_group_reply_t got;
    assert_int_equal(sl_sync_consumer_group_reply_decode(sl_span(want, n), &arena, &got), 0);
    assert_true(got.found);
    assert_int_equal(got.generation, 3);
    assert_int_equal(got.partitions_count, 2);
    assert_int_equal(got.partitions[0], 0);
    assert_int_equal(got.partitions[1], 2);
    sl_arena_free(&arena);
    sl_buf_free(&b);
    free(want);
}

/* --- round trips of requests ------------------------------------------------------ */

static void test_target_requests_round_trip(void **state)
{
    (void)state;
    size_t n;
    /* stream numeric 1, topic "t", group "grp" */
    uint8_t *want = tu_hex("01 04 01 00 00 00  02 01 74  02 03 67 72 70", &n);
    const sl_group_target_t in = {
        .stream = sl_ident_number(1), .topic = sl_ident_name("t"), .group = sl_ident_name("grp")};
    for (size_t s = 0; s < SL_ARRAY_LEN(target_stems); s++) {
        sl_buf_t b;
        sl_buf_init(&b, 0);
        assert_int_equal(target_stems[s].encode(&b, &in), 0);
        assert_bytes_equal(b.data, b.len, want, n);
        sl_group_target_t out;
        assert_int_equal(target_stems[s].decode(sl_buf_span(&b), &out), 0);
        assert_ident_equal(&out.stream, &in.stream);
        assert_ident_equal(&out.topic, &in.topic);
        assert_ident_equal(&out.group, &in.group);
        /* Spans borrow the body. */
        assert_ptr_equal(out.group.name.ptr, b.data + 11);
        sl_buf_t again;
        sl_buf_init(&again, 0);
        assert_int_equal(target_stems[s].encode(&again, &out), 0);
        assert_bytes_equal(again.data, again.len, b.data, b.len);
        sl_buf_free(&again);
        sl_buf_free(&b);
    }
    free(want);
}

static void test_get_groups_request_round_trip(void **state)
{
    (void)state;
    sl_get_consumer_groups_request_t in = {.stream = sl_ident_name("orders"),
                                           .topic = sl_ident_number(4095)};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_consumer_groups_request_encode(&b, &in), 0);
    size_t n;
    uint8_t *want = tu_hex("02 06 6f 72 64 65 72 73  01 04 ff 0f 00 00", &n);
    assert_bytes_equal(b.data, b.len, want, n);
    sl_get_consumer_groups_request_t out;
    assert_int_equal(sl_get_consumer_groups_request_decode(sl_buf_span(&b), &out), 0);
    assert_ident_equal(&out.stream, &in.stream);
    assert_ident_equal(&out.topic, &in.topic);
    sl_buf_free(&b);
    free(want);
}

static void test_create_request_round_trip(void **state)
{
    (void)state;
    sl_create_consumer_group_request_t in = {
        .stream = sl_ident_number(0), .topic = sl_ident_number(2), .name = sl_span_str("workers")};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_create_consumer_group_request_encode(&b, &in), 0);
    size_t n;
    uint8_t *want = tu_hex("01 04 00 00 00 00  01 04 02 00 00 00  07 77 6f 72 6b 65 72 73", &n);
    assert_bytes_equal(b.data, b.len, want, n);
    sl_create_consumer_group_request_t out;
    assert_int_equal(sl_create_consumer_group_request_decode(sl_buf_span(&b), &out), 0);
    assert_ident_equal(&out.stream, &in.stream);
    assert_ident_equal(&out.topic, &in.topic);
    assert_span_str(out.name, "workers");
    sl_buf_free(&b);
    free(want);
}

/* --- round trips of replies -------------------------------------------------------- */

static void test_details_replies_round_trip(void **state)
{
    (void)state;
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_group_details_t d = sample_details();

    /* GetConsumerGroup, found: 13 + 8 name bytes, then members of 20 + 16 + 8. */
    sl_get_consumer_group_reply_t in = {.found = true, .group = d};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_consumer_group_reply_encode(&b, &in), 0);
    assert_int_equal(b.len, 13 + 8 + 20 + 16 + 8);
    sl_get_consumer_group_reply_t out;
    assert_int_equal(sl_get_consumer_group_reply_decode(sl_buf_span(&b), &arena, &out), 0);
    assert_true(out.found);
    assert_details_equal(&out.group, &d);
    assert_null(out.group.members[2].partitions);
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_get_consumer_group_reply_encode(&again, &out), 0);
    assert_bytes_equal(again.data, again.len, b.data, b.len);

    /* CreateConsumerGroup carries the same GroupDetails. */
    sl_buf_reset(&again);
    assert_int_equal(sl_create_consumer_group_reply_encode(&again, &d), 0);
    assert_bytes_equal(again.data, again.len, b.data, b.len);
    sl_create_consumer_group_reply_t c;
    assert_int_equal(sl_create_consumer_group_reply_decode(sl_buf_span(&again), &arena, &c), 0);
    assert_details_equal(&c, &d);

    /* Not found: empty payload both ways. */
    sl_buf_reset(&again);
    sl_get_consumer_group_reply_t none = {.found = false, .group = d};
    assert_int_equal(sl_get_consumer_group_reply_encode(&again, &none), 0);
    assert_int_equal(again.len, 0);
    assert_int_equal(sl_get_consumer_group_reply_decode(sl_span(NULL, 0), &arena, &out), 0);
    assert_false(out.found);

    sl_buf_free(&again);
    sl_buf_free(&b);
    sl_arena_free(&arena);
}

static void test_groups_list_round_trip(void **state)
{
    (void)state;
    const sl_group_header_t items[] = {
        {.id = 0, .partitions_count = 2, .members_count = 1, .name = sl_span_str("a")},
        {.id = 1, .partitions_count = 2, .members_count = 0, .name = sl_span_str("bee")},
        {.id = 42, .partitions_count = 0, .members_count = 7, .name = sl_span_str("céline")},
    };
    sl_get_consumer_groups_reply_t in = {.count = 3, .items = items};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_consumer_groups_reply_encode(&b, &in), 0);
    assert_int_equal(b.len, 14 + 16 + 13 + 7);
    /* No count prefix: the first bytes are the first header's id. */
    assert_int_equal(sl_load_u32(b.data), 0);
    assert_int_equal(sl_load_u32(b.data + 8), 1);

    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_get_consumer_groups_reply_t out;
    assert_int_equal(sl_get_consumer_groups_reply_decode(sl_buf_span(&b), &arena, &out), 0);
    assert_int_equal(out.count, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(out.items[i].id, items[i].id);
        assert_int_equal(out.items[i].partitions_count, items[i].partitions_count);
        assert_int_equal(out.items[i].members_count, items[i].members_count);
        assert_span_equal(out.items[i].name, items[i].name);
    }
    sl_buf_t again;
    sl_buf_init(&again, 0);
    assert_int_equal(sl_get_consumer_groups_reply_encode(&again, &out), 0);
    assert_bytes_equal(again.data, again.len, b.data, b.len);

    /* Empty body = no groups. */
    sl_get_consumer_groups_reply_t empty = {0};
    sl_buf_reset(&again);
    assert_int_equal(sl_get_consumer_groups_reply_encode(&again, &empty), 0);
    assert_int_equal(again.len, 0);
    assert_int_equal(sl_get_consumer_groups_reply_decode(sl_span(NULL, 0), &arena, &out), 0);
    assert_int_equal(out.count, 0);
    assert_null(out.items);

    sl_buf_free(&again);
    sl_buf_free(&b);
    sl_arena_free(&arena);
}

static void test_sync_and_empty_replies_round_trip(void **state)
{
    (void)state;
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    const uint32_t parts[] = {5, 1, 999999};
    sl_sync_consumer_group_reply_t in = {.found = true,
                                         .generation = 0x0102030405060708ull,
                                         .partitions_count = 3,
                                         .partitions = parts};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_sync_consumer_group_reply_encode(&b, &in), 0);
    assert_int_equal(b.len, 24);
    sl_sync_consumer_group_reply_t out;
    assert_int_equal(sl_sync_consumer_group_reply_decode(sl_buf_span(&b), &arena, &out), 0);
    assert_true(out.found);
    assert_int_equal(out.generation, in.generation);
    assert_int_equal(out.partitions_count, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(out.partitions[i], parts[i]);

    /* A member with nothing to poll: generation and a zero count. */
    sl_sync_consumer_group_reply_t idle = {.found = true, .generation = 9};
    sl_buf_reset(&b);
    assert_int_equal(sl_sync_consumer_group_reply_encode(&b, &idle), 0);
    assert_int_equal(b.len, 12);
    assert_int_equal(sl_sync_consumer_group_reply_decode(sl_buf_span(&b), &arena, &out), 0);
    assert_true(out.found);
    assert_int_equal(out.generation, 9);
    assert_int_equal(out.partitions_count, 0);
    assert_null(out.partitions);

    /* Not a member: empty payload. */
    sl_sync_consumer_group_reply_t none = {.found = false, .generation = 9};
    sl_buf_reset(&b);
    assert_int_equal(sl_sync_consumer_group_reply_encode(&b, &none), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(sl_sync_consumer_group_reply_decode(sl_span(NULL, 0), &arena, &out), 0);
    assert_false(out.found);

    /* Delete / Join / Leave: empty success payloads, anything else malformed. */
    sl_empty_t e = {0};
    const uint8_t one = 0;
    assert_int_equal(sl_delete_consumer_group_reply_encode(&b, &e), 0);
    assert_int_equal(sl_join_consumer_group_reply_encode(&b, &e), 0);
    assert_int_equal(sl_leave_consumer_group_reply_encode(&b, &e), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(sl_delete_consumer_group_reply_decode(sl_span(NULL, 0), &arena, &e), 0);
    assert_int_equal(sl_join_consumer_group_reply_decode(sl_span(NULL, 0), &arena, &e), 0);
    assert_int_equal(sl_leave_consumer_group_reply_decode(sl_span(NULL, 0), &arena, &e), 0);
    assert_int_equal(sl_delete_consumer_group_reply_decode(sl_span(&one, 1), &arena, &e),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_join_consumer_group_reply_decode(sl_span(&one, 1), &arena, &e),
                     -SL_ERR_INVALID_FORMAT);
    assert_int_equal(sl_leave_consumer_group_reply_decode(sl_span(&one, 1), &arena, &e),
                     -SL_ERR_INVALID_FORMAT);

    sl_buf_free(&b);
    sl_arena_free(&arena);
}

/* --- hostile requests ----------------------------------------------------------------- */

static void test_target_requests_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *valid = tu_hex("01 04 01 00 00 00  02 01 74  02 03 67 72 70", &n);
    /* Bodies that are not [Identifier][Identifier][Identifier]. */
    static const char *const bad[] = {
        "00 04 01 00 00 00  02 01 74  02 03 67 72 70",    /* stream kind 0 */
        "03 04 01 00 00 00  02 01 74  02 03 67 72 70",    /* stream kind 3 */
        "01 03 01 00 00  02 01 74  02 03 67 72 70",       /* numeric length 3 */
        "01 05 01 00 00 00 00  02 01 74  02 03 67 72 70", /* numeric length 5 */
        "01 04 01 00 00 00  02 00  02 03 67 72 70",       /* topic string length 0 */
        "01 04 01 00 00 00  02 01 ff  02 03 67 72 70",    /* topic invalid UTF-8 */
        "01 04 01 00 00 00  02 01 74  02 03 67 c0 80",    /* group overlong UTF-8 */
        "01 04 01 00 00 00  02 01 74  02 04 67 72 70",    /* group length past the end */
        "01 04 01 00 00 00  02 01 74  ff 01 67",          /* group kind 255 */
        "01 04 01 00 00 00  02 01 74  01 04 00 00 00",    /* group numeric truncated */
    };
    for (size_t s = 0; s < SL_ARRAY_LEN(target_stems); s++) {
        sl_group_target_t out;
        /* Every truncation is undecodable (the last field is needed). */
        for (size_t len = 0; len < n; len++) {
            uint8_t *cut = dup_bytes(valid, len);
            assert_int_equal(target_stems[s].decode(sl_span(cut, len), &out),
                             -SL_ERR_INVALID_COMMAND);
            free(cut);
        }
        /* Trailing bytes after a fixed-shape body are ignored. */
        uint8_t longer[32];
        memcpy(longer, valid, n);
        memset(longer + n, 0xee, sizeof(longer) - n);
        assert_int_equal(target_stems[s].decode(sl_span(longer, sizeof(longer)), &out), 0);
        assert_span_str(out.group.name, "grp");
        for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
            size_t bn;
            uint8_t *body = tu_hex(bad[i], &bn);
            assert_int_equal(target_stems[s].decode(sl_span(body, bn), &out),
                             -SL_ERR_INVALID_COMMAND);
            free(body);
        }
        /* Encoders refuse what the wire cannot carry. */
        sl_buf_t b;
        sl_buf_init(&b, 0);
        sl_group_target_t enc = {sl_ident_number(1), sl_ident_number(2), {.kind = 3}};
        assert_int_equal(target_stems[s].encode(&b, &enc), -SL_ERR_INVALID_COMMAND);
        sl_buf_reset(&b);
        enc.group = sl_ident_name("");
        assert_int_equal(target_stems[s].encode(&b, &enc), -SL_ERR_INVALID_COMMAND);
        sl_buf_free(&b);
        /* A buffer too small is a length error, not an encoding error. */
        uint8_t small[5];
        sl_buf_init_fixed(&b, small, sizeof(small));
        enc.group = sl_ident_number(3);
        assert_int_equal(target_stems[s].encode(&b, &enc), -SL_ERR_COMMAND_LENGTH_ERROR);
    }
    free(valid);
}

static void test_get_groups_request_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *valid = tu_hex("02 06 6f 72 64 65 72 73  01 04 ff 0f 00 00", &n);
    sl_get_consumer_groups_request_t out;
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = dup_bytes(valid, len);
        assert_int_equal(sl_get_consumer_groups_request_decode(sl_span(cut, len), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(cut);
    }
    valid[2] = 0xc3; /* lone lead byte followed by ASCII */
    assert_int_equal(sl_get_consumer_groups_request_decode(sl_span(valid, n), &out),
                     -SL_ERR_INVALID_COMMAND);
    valid[2] = 0x6f;
    valid[8] = 9; /* topic kind 9 */
    assert_int_equal(sl_get_consumer_groups_request_decode(sl_span(valid, n), &out),
                     -SL_ERR_INVALID_COMMAND);
    free(valid);
}

static void test_create_request_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *valid = tu_hex("01 04 00 00 00 00  01 04 02 00 00 00  07 77 6f 72 6b 65 72 73", &n);
    sl_create_consumer_group_request_t out;
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = dup_bytes(valid, len);
        assert_int_equal(sl_create_consumer_group_request_decode(sl_span(cut, len), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(cut);
    }
    uint8_t longer[40] = {0};
    memcpy(longer, valid, n);
    assert_int_equal(sl_create_consumer_group_request_decode(sl_span(longer, sizeof(longer)), &out),
                     0);
    assert_span_str(out.name, "workers");

    static const char *const bad[] = {
        "01 04 00 00 00 00  01 04 02 00 00 00  00",             /* name length 0 */
        "01 04 00 00 00 00  01 04 02 00 00 00  02 ed a0",       /* surrogate, cut */
        "01 04 00 00 00 00  01 04 02 00 00 00  03 ed a0 80",    /* surrogate */
        "01 04 00 00 00 00  01 04 02 00 00 00  04 f4 90 80 80", /* above U+10FFFF */
        "01 04 00 00 00 00  01 04 02 00 00 00  ff 61",          /* length past end */
        "01 04 00 00 00 00  00 04 02 00 00 00  01 61",          /* topic kind 0 */
        "02 00  01 04 02 00 00 00  01 61",                      /* stream name empty */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        size_t bn;
        uint8_t *body = tu_hex(bad[i], &bn);
        assert_int_equal(sl_create_consumer_group_request_decode(sl_span(body, bn), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(body);
    }

    /* Names of 0 and 256 bytes cannot be encoded; 255 can. */
    char name[256];
    memset(name, 'n', sizeof(name));
    sl_create_consumer_group_request_t in = {sl_ident_number(0), sl_ident_number(0), {0}};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    in.name = sl_span(name, 0);
    assert_int_equal(sl_create_consumer_group_request_encode(&b, &in), -SL_ERR_INVALID_COMMAND);
    sl_buf_reset(&b);
    in.name = sl_span(name, 256);
    assert_int_equal(sl_create_consumer_group_request_encode(&b, &in), -SL_ERR_INVALID_COMMAND);
    sl_buf_reset(&b);
    in.name = sl_span(name, 255);
    assert_int_equal(sl_create_consumer_group_request_encode(&b, &in), 0);
    assert_int_equal(b.len, 12 + 1 + 255);
    assert_int_equal(sl_create_consumer_group_request_decode(sl_buf_span(&b), &out), 0);
    assert_int_equal(out.name.len, 255);
    sl_buf_free(&b);
    free(valid);
}

/* --- hostile replies ----------------------------------------------------------------- */

static void test_details_reply_hostile_cuts(void **state)
{
    (void)state;
    sl_group_details_t d = sample_details();
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_create_consumer_group_reply_encode(&b, &d), 0);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);

    /* Truncation at every length: malformed, except 0 = "not found" for Get. */
    for (size_t len = 0; len < b.len; len++) {
        uint8_t *cut = dup_bytes(b.data, len);
        sl_get_consumer_group_reply_t g;
        sl_create_consumer_group_reply_t c;
        assert_int_equal(sl_get_consumer_group_reply_decode(sl_span(cut, len), &arena, &g),
                         len == 0 ? 0 : -SL_ERR_INVALID_FORMAT);
        assert_false(g.found);
        assert_int_equal(sl_create_consumer_group_reply_decode(sl_span(cut, len), &arena, &c),
                         -SL_ERR_INVALID_FORMAT);
        free(cut);
    }
    /* Trailing bytes are malformed. */
    sl_put_u8(&b, 0);
    sl_get_consumer_group_reply_t g;
    assert_int_equal(sl_get_consumer_group_reply_decode(sl_buf_span(&b), &arena, &g),
                     -SL_ERR_INVALID_FORMAT);
    assert_false(g.found);
    sl_arena_free(&arena);
    sl_buf_free(&b);
}

static void test_details_reply_hostile_fields(void **state)
{
    (void)state;
    sl_group_details_t d = sample_details();
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_create_consumer_group_reply_encode(&b, &d), 0);

    /* Field offsets: members_count at 8, name length at 12, name at 13,
     * first member's partitions_count at 13 + 8 + 4. */
    uint8_t *p = b.data;
    const size_t name_len = d.header.name.len;
    struct {
        size_t at;
        uint8_t value;
    } pokes[] = {
        {12, 0},                   /* name length 0 */
        {13, 0xff},                /* invalid UTF-8 in the name */
        {13, 0x80},                /* stray continuation byte */
        {8, 4},                    /* one member more than present */
        {11, 0xff},                /* members_count huge */
        {13 + name_len + 7, 0x40}, /* first member's partitions_count huge */
        {13 + name_len + 5, 1},    /* first member claims 259 partitions of 3 */
    };
    sl_arena_t small;
    sl_arena_init(&small, 256, 4096);
    for (size_t i = 0; i < SL_ARRAY_LEN(pokes); i++) {
        uint8_t *copy = dup_bytes(p, b.len);
        copy[pokes[i].at] = pokes[i].value;
        sl_create_consumer_group_reply_t c;
        assert_int_equal(sl_create_consumer_group_reply_decode(sl_span(copy, b.len), &small, &c),
                         -SL_ERR_INVALID_FORMAT);
        /* No allocation was sized by a hostile count. */
        assert_true(small.used_bytes <= 4096);
        free(copy);
        sl_arena_reset(&small);
    }
    /* Counts exceeding the bytes with nothing after the header. */
    uint8_t lone[] = {0, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 'w'};
    sl_create_consumer_group_reply_t c;
    sl_arena_t fresh;
    sl_arena_init(&fresh, 0, 0);
    assert_int_equal(sl_create_consumer_group_reply_decode(sl_span(lone, sizeof(lone)), &fresh, &c),
                     -SL_ERR_INVALID_FORMAT);
    assert_null(fresh.head); /* refused before any allocation */
    sl_arena_free(&fresh);

    /* Encoders refuse unencodable names and missing arrays. */
    sl_buf_t e;
    sl_buf_init(&e, 0);
    sl_group_details_t bad = d;
    bad.header.name = sl_span(NULL, 0);
    assert_int_equal(sl_create_consumer_group_reply_encode(&e, &bad), -SL_ERR_INVALID_COMMAND);
    bad = d;
    bad.members = NULL;
    sl_buf_reset(&e);
    assert_int_equal(sl_create_consumer_group_reply_encode(&e, &bad), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&e);

    sl_arena_free(&small);
    sl_buf_free(&b);
}

static void test_groups_list_hostile(void **state)
{
    (void)state;
    const sl_group_header_t items[] = {
        {.id = 0, .partitions_count = 2, .members_count = 1, .name = sl_span_str("ab")},
        {.id = 1, .partitions_count = 2, .members_count = 0, .name = sl_span_str("cde")},
    };
    sl_get_consumer_groups_reply_t in = {.count = 2, .items = items};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_get_consumer_groups_reply_encode(&b, &in), 0);
    assert_int_equal(b.len, 15 + 16);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    /* Cutting anywhere but between headers is malformed; 0 and 15 are whole lists. */
    for (size_t len = 0; len < b.len; len++) {
        uint8_t *cut = dup_bytes(b.data, len);
        sl_get_consumer_groups_reply_t out;
        int rc = sl_get_consumer_groups_reply_decode(sl_span(cut, len), &arena, &out);
        if (len == 0 || len == 15) {
            assert_int_equal(rc, 0);
            assert_int_equal(out.count, len == 0 ? 0 : 1);
        } else {
            assert_int_equal(rc, -SL_ERR_INVALID_FORMAT);
            assert_int_equal(out.count, 0);
        }
        free(cut);
    }
    /* A bad name in the second header spoils the list. */
    uint8_t *copy = dup_bytes(b.data, b.len);
    sl_get_consumer_groups_reply_t out;
    copy[15 + 13] = 0xfe;
    assert_int_equal(sl_get_consumer_groups_reply_decode(sl_span(copy, b.len), &arena, &out),
                     -SL_ERR_INVALID_FORMAT);
    copy[15 + 13] = 'c';
    copy[15 + 12] = 0; /* name length 0 */
    assert_int_equal(sl_get_consumer_groups_reply_decode(sl_span(copy, b.len), &arena, &out),
                     -SL_ERR_INVALID_FORMAT);
    free(copy);

    /* Encoders refuse an unencodable name and a missing array. */
    sl_buf_t e;
    sl_buf_init(&e, 0);
    sl_get_consumer_groups_reply_t missing = {.count = 1, .items = NULL};
    assert_int_equal(sl_get_consumer_groups_reply_encode(&e, &missing), -SL_ERR_INVALID_COMMAND);
    sl_group_header_t long_name = items[0];
    char name[256];
    memset(name, 'x', sizeof(name));
    long_name.name = sl_span(name, sizeof(name));
    sl_get_consumer_groups_reply_t too_long = {.count = 1, .items = &long_name};
    sl_buf_reset(&e);
    assert_int_equal(sl_get_consumer_groups_reply_encode(&e, &too_long), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&e);

    sl_arena_free(&arena);
    sl_buf_free(&b);
}

static void test_sync_reply_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *valid = tu_hex("03 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 02 00 00 00", &n);
    sl_arena_t arena;
    sl_arena_init(&arena, 256, 4096);
    sl_sync_consumer_group_reply_t out;
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = dup_bytes(valid, len);
        int rc = sl_sync_consumer_group_reply_decode(sl_span(cut, len), &arena, &out);
        /* 0 bytes: not a member. 1..11 and a short list: malformed. */
        assert_int_equal(rc, len == 0 ? 0 : -SL_ERR_INVALID_FORMAT);
        assert_false(out.found);
        free(cut);
    }
    /* Trailing bytes after the list (one more byte, or a whole extra id). */
    uint8_t longer[24] = {0};
    memcpy(longer, valid, n);
    for (size_t len = n + 1; len <= sizeof(longer); len++) {
        assert_int_equal(sl_sync_consumer_group_reply_decode(sl_span(longer, len), &arena, &out),
                         -SL_ERR_INVALID_FORMAT);
        assert_false(out.found);
    }
    /* A count beyond the bytes, up to the largest u32: no huge allocation. */
    const uint32_t counts[] = {3, 0x40000000u, 0xffffffffu};
    for (size_t i = 0; i < SL_ARRAY_LEN(counts); i++) {
        uint8_t *copy = dup_bytes(valid, n);
        sl_store_u32(copy + 8, counts[i]);
        assert_int_equal(sl_sync_consumer_group_reply_decode(sl_span(copy, n), &arena, &out),
                         -SL_ERR_INVALID_FORMAT);
        assert_true(arena.used_bytes <= 4096);
        free(copy);
    }
    /* Count 1 with 2 ids present is a trailing id. */
    sl_store_u32(valid + 8, 1);
    assert_int_equal(sl_sync_consumer_group_reply_decode(sl_span(valid, n), &arena, &out),
                     -SL_ERR_INVALID_FORMAT);
    /* Encoder: a count without an array cannot be encoded. */
    sl_buf_t e;
    sl_buf_init(&e, 0);
    sl_sync_consumer_group_reply_t missing = {.found = true, .partitions_count = 1};
    assert_int_equal(sl_sync_consumer_group_reply_encode(&e, &missing), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&e);
    sl_arena_free(&arena);
    free(valid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_create_reply),
        cmocka_unit_test(test_golden_sync_reply),
        cmocka_unit_test(test_target_requests_round_trip),
        cmocka_unit_test(test_get_groups_request_round_trip),
        cmocka_unit_test(test_create_request_round_trip),
        cmocka_unit_test(test_details_replies_round_trip),
        cmocka_unit_test(test_groups_list_round_trip),
        cmocka_unit_test(test_sync_and_empty_replies_round_trip),
        cmocka_unit_test(test_target_requests_hostile),
        cmocka_unit_test(test_get_groups_request_hostile),
        cmocka_unit_test(test_create_request_hostile),
        cmocka_unit_test(test_details_reply_hostile_cuts),
        cmocka_unit_test(test_details_reply_hostile_fields),
        cmocka_unit_test(test_groups_list_hostile),
        cmocka_unit_test(test_sync_reply_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
