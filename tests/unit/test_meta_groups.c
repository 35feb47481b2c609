/* Consumer groups in the metadata state machine (commands.md 11): create,
 * delete, join and leave with their errors, the CreateConsumerGroup bytes of
 * commands.md 13.4, the assignment rules (join keeps partitions, leave and
 * partition changes deal round-robin), generations, memberships dropped at
 * logout, and a seeded random run checking the ownership invariants. */
#include "meta_testutil.h"

#define S(name) sl_ident_name(name)
#define N(id)   sl_ident_number(id)
#define NONE    sl_span(NULL, 0)

/* Stream "s" with topic "t" of `partitions` partitions and group "g". */
static void setup_group(tm_t *t, uint32_t partitions)
{
    assert_int_equal(tm_code(t, SL_OP_CREATE_STREAM, 0, tm_body_stream(t, "s")), 0);
    assert_int_equal(tm_code(t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0,
                             tm_body_topic(t, N(0), partitions, "t", NONE)),
                     0);
    assert_int_equal(tm_code(t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(t, N(0), N(0), "g")),
                     0);
}

static const sl_meta_topic_t *the_topic(tm_t *t)
{
    sl_ident_t s = N(0), k = N(0);
    return sl_meta_topic_find(sl_meta_stream_find(t->m, &s), &k);
}

static const sl_meta_group_t *the_group(tm_t *t)
{
    sl_ident_t g = S("g");
    return sl_meta_group_find(the_topic(t), &g);
}

static uint32_t member_op(tm_t *t, uint8_t op, sl_u128_t client, uint64_t request, sl_ident_t group)
{
    sl_span_t reply = tm_apply_full(t, op, client, request, (sl_u128_t){0, 0}, 0,
                                    tm_body_group_ref(t, N(0), N(0), group));
    return tm_result(reply, NULL);
}

static void assert_partitions(const sl_meta_member_t *mb, const uint32_t *want, uint32_t n)
{
    assert_non_null(mb);
    assert_int_equal(mb->partitions_count, n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(mb->partitions[i], want[i]);
}

/* --- create / delete ----------------------------------------------------------------------- */

static void test_create_group_golden(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(tm_code(&t, SL_OP_CREATE_STREAM, 0, tm_body_stream(&t, "s")), 0);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0, tm_body_topic(&t, N(0), 2, "t", NONE)),
        0);
    sl_span_t reply =
        tm_apply(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "workers"));
    size_t len;
    uint8_t *want = tu_hex("00 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00"
                           "07 77 6f 72 6b 65 72 73",
                           &len);
    assert_bytes_equal(reply.ptr, reply.len, want, len);
    free(want);
    const sl_meta_group_t *g = sl_meta_group_at(the_topic(&t), 0);
    assert_span_str(g->name, "workers");
    assert_int_equal(g->generation, 0);
    tm_free(&t);
}

static void test_create_group_errors(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "g")),
        SL_ERR_STREAM_ID_NOT_FOUND);
    setup_group(&t, 2);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(5), "g")),
        SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "g")),
        SL_ERR_CONSUMER_GROUP_NAME_ALREADY_EXISTS);
    assert_int_equal(tm_code(&t, SL_OP_CREATE_USER, 0, tm_body_user(&t, "nobody", 1, NONE)), 0);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 1, tm_body_group(&t, N(0), N(0), "h")),
        SL_ERR_UNAUTHORIZED);
    /* Group ids count up and are never reused. */
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, S("s"), S("t"), "h")), 0);
    tm_ok_empty(&t, SL_OP_DELETE_CONSUMER_GROUP, 0, tm_body_group_ref(&t, N(0), N(0), N(1)));
    tm_ok_empty(&t, SL_OP_DELETE_CONSUMER_GROUP, 0, tm_body_group_ref(&t, N(0), N(0), S("g")));
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "g")), 0);
    assert_int_equal(sl_meta_group_at(the_topic(&t), 0)->id, 2);
    assert_int_equal(the_topic(&t)->next_group_id, 3);
    tm_free(&t);
}

static void test_delete_group(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    setup_group(&t, 3);
    assert_int_equal(
        tm_code(&t, SL_OP_DELETE_CONSUMER_GROUP, 0, tm_body_group_ref(&t, N(1), N(0), N(0))),
        SL_ERR_STREAM_ID_NOT_FOUND);
    assert_int_equal(
        tm_code(&t, SL_OP_DELETE_CONSUMER_GROUP, 0, tm_body_group_ref(&t, N(0), N(1), N(0))),
        SL_ERR_TOPIC_ID_NOT_FOUND);
    assert_int_equal(
        tm_code(&t, SL_OP_DELETE_CONSUMER_GROUP, 0, tm_body_group_ref(&t, N(0), N(0), N(9))),
        SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND);
    /* Permission before the group: an outsider learns nothing (41). */
    assert_int_equal(tm_code(&t, SL_OP_CREATE_USER, 0, tm_body_user(&t, "nobody", 1, NONE)), 0);
    assert_int_equal(
        tm_code(&t, SL_OP_DELETE_CONSUMER_GROUP, 1, tm_body_group_ref(&t, N(0), N(0), N(9))),
        SL_ERR_UNAUTHORIZED);

    sl_u128_t client = tm_client(1);
    tm_register(&t, client, 0);
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, client, 1, S("g")), 0);
    assert_int_equal(sl_meta_client_find(t.m, client)->memberships, 1);
    tm_ok_empty(&t, SL_OP_DELETE_CONSUMER_GROUP, 0, tm_body_group_ref(&t, N(0), N(0), S("g")));
    assert_int_equal(sl_meta_client_find(t.m, client)->memberships, 0);
    assert_int_equal(sl_meta_client_groups(t.m, client, NULL, 0), 0);
    sl_meta_counts_t c;
    sl_meta_counts(t.m, &c);
    assert_int_equal(c.groups, 0);
    tm_free(&t);
}

/* --- membership ------------------------------------------------------------------------------ */

static void test_join_and_leave(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    setup_group(&t, 3);
    sl_u128_t a = tm_client(1), b = tm_client(2);
    tm_register(&t, a, 0);
    tm_register(&t, b, 0);
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 1, S("missing")),
                     SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND);
    assert_int_equal(member_op(&t, SL_OP_LEAVE_CONSUMER_GROUP, a, 2, S("g")),
                     SL_ERR_CONSUMER_GROUP_MEMBER_NOT_FOUND);

    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 3, S("g")), 0);
    const sl_meta_group_t *g = the_group(&t);
    assert_int_equal(g->generation, 1);
    assert_int_equal(g->members_count, 1);
    assert_int_equal(g->members[0].id, 0);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 1, 2}, 3);
    assert_true(sl_meta_member_owns(sl_meta_member_find(g, a), 2));
    assert_false(sl_meta_member_owns(sl_meta_member_find(g, a), 3));

    /* Joining again is a no-op success: no rebalance. */
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 4, N(0)), 0);
    assert_int_equal(g->generation, 1);
    assert_int_equal(g->members_count, 1);

    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, b, 1, S("g")), 0);
    assert_int_equal(g->generation, 2);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 1}, 2);
    assert_partitions(sl_meta_member_find(g, b), (uint32_t[]){2}, 1);
    assert_int_equal(sl_meta_member_find(g, b)->id, 1);

    /* Leave: everything dealt again round-robin. */
    assert_int_equal(member_op(&t, SL_OP_LEAVE_CONSUMER_GROUP, a, 5, S("g")), 0);
    assert_int_equal(g->generation, 3);
    assert_null(sl_meta_member_find(g, a));
    assert_partitions(sl_meta_member_find(g, b), (uint32_t[]){0, 1, 2}, 3);
    assert_int_equal(sl_meta_client_find(t.m, a)->memberships, 0);

    /* Member ids are the lowest free: a comes back as member 0. */
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 6, S("g")), 0);
    assert_int_equal(sl_meta_member_find(g, a)->id, 0);
    assert_int_equal(g->members[0].id, 0);
    assert_int_equal(g->members[1].id, 1);

    /* The GetConsumerGroup view lists members by id with their lists. */
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_get_consumer_group_reply_t get = {.found = true};
    assert_true(sl_meta_group_details(the_topic(&t), g, &arena, &get.group));
    sl_buf_t bytes;
    sl_buf_init(&bytes, 0);
    assert_int_equal(sl_get_consumer_group_reply_encode(&bytes, &get), 0);
    sl_get_consumer_group_reply_t back;
    assert_int_equal(sl_get_consumer_group_reply_decode(sl_buf_span(&bytes), &arena, &back), 0);
    assert_int_equal(back.group.header.members_count, 2);
    assert_int_equal(back.group.header.partitions_count, 3);
    assert_int_equal(back.group.members[1].id, 1);
    assert_int_equal(back.group.members[1].partitions_count,
                     sl_meta_member_find(g, b)->partitions_count);
    sl_buf_free(&bytes);
    sl_arena_free(&arena);
    tm_free(&t);
}

/* The worked example of the join rule: members keep what they can. */
static void test_join_assignment_rules(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    setup_group(&t, 10);
    sl_u128_t a = tm_client(1), b = tm_client(2), c = tm_client(3), d = tm_client(4);
    tm_register(&t, a, 0);
    tm_register(&t, b, 0);
    tm_register(&t, c, 0);
    tm_register(&t, d, 0);
    const sl_meta_group_t *g = the_group(&t);

    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 1, S("g")), 0);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10);
    /* b is idle: a (share 5) hands over its excess, last-listed first. */
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, b, 1, S("g")), 0);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 1, 2, 3, 4}, 5);
    assert_partitions(sl_meta_member_find(g, b), (uint32_t[]){9, 8, 7, 6, 5}, 5);
    /* Shares 4, 3, 3: a gives 4, b gives 5 and 6. */
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, c, 1, S("g")), 0);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 1, 2, 3}, 4);
    assert_partitions(sl_meta_member_find(g, b), (uint32_t[]){9, 8, 7}, 3);
    assert_partitions(sl_meta_member_find(g, c), (uint32_t[]){4, 5, 6}, 3);
    assert_int_equal(g->generation, 3);

    /* b leaves: a (member 0) and c (member 2) deal round-robin. */
    assert_int_equal(member_op(&t, SL_OP_LEAVE_CONSUMER_GROUP, b, 2, S("g")), 0);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 2, 4, 6, 8}, 5);
    assert_partitions(sl_meta_member_find(g, c), (uint32_t[]){1, 3, 5, 7, 9}, 5);
    /* d takes member id 1; shares: a 4, d 3, c 3. */
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, d, 1, S("g")), 0);
    assert_int_equal(sl_meta_member_find(g, d)->id, 1);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 2, 4, 6}, 4);
    assert_partitions(sl_meta_member_find(g, c), (uint32_t[]){1, 3, 5}, 3);
    assert_partitions(sl_meta_member_find(g, d), (uint32_t[]){8, 9, 7}, 3);
    assert_int_equal(g->generation, 5);

    /* More members than partitions: the newcomer may own nothing. */
    tm_t s;
    tm_init(&s);
    setup_group(&s, 2);
    for (uint64_t i = 1; i <= 3; i++) {
        tm_register(&s, tm_client(i), 0);
        assert_int_equal(member_op(&s, SL_OP_JOIN_CONSUMER_GROUP, tm_client(i), 1, S("g")), 0);
    }
    g = the_group(&s);
    assert_partitions(sl_meta_member_find(g, tm_client(1)), (uint32_t[]){0}, 1);
    assert_partitions(sl_meta_member_find(g, tm_client(2)), (uint32_t[]){1}, 1);
    assert_partitions(sl_meta_member_find(g, tm_client(3)), NULL, 0);
    tm_free(&s);
    tm_free(&t);
}

static void test_partition_change_rebalances(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    setup_group(&t, 4);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(0), "e")), 0);
    sl_u128_t a = tm_client(1), b = tm_client(2);
    tm_register(&t, a, 0);
    tm_register(&t, b, 0);
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 1, S("g")), 0);
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, b, 1, S("g")), 0);
    const sl_meta_group_t *g = the_group(&t);
    sl_ident_t empty_id = S("e");
    const sl_meta_group_t *empty = sl_meta_group_find(the_topic(&t), &empty_id);
    assert_int_equal(g->generation, 2);
    assert_int_equal(empty->generation, 0);

    tm_ok_empty(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                tm_body_partitions(&t, N(0), N(0), 3));
    assert_int_equal(g->generation, 3);
    assert_int_equal(empty->generation, 1);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0, 2, 4, 6}, 4);
    assert_partitions(sl_meta_member_find(g, b), (uint32_t[]){1, 3, 5}, 3);

    tm_ok_empty(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(0), N(0), 6));
    assert_int_equal(g->generation, 4);
    assert_partitions(sl_meta_member_find(g, a), (uint32_t[]){0}, 1);
    assert_partitions(sl_meta_member_find(g, b), NULL, 0);
    tm_ok_empty(&t, SL_OP_DELETE_PARTITIONS, 0, tm_body_partitions(&t, N(0), N(0), 1));
    assert_partitions(sl_meta_member_find(g, a), NULL, 0);
    assert_int_equal(empty->generation, 3);
    tm_free(&t);
}

static void test_logout_drops_memberships(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    setup_group(&t, 2);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS, 0, tm_body_topic(&t, N(0), 2, "u", NONE)),
        0);
    assert_int_equal(
        tm_code(&t, SL_OP_CREATE_CONSUMER_GROUP, 0, tm_body_group(&t, N(0), N(1), "h")), 0);
    sl_u128_t a = tm_client(1), b = tm_client(2);
    tm_register(&t, a, 0);
    tm_register(&t, b, 0);
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, b, 1, S("g")), 0);
    sl_span_t reply = tm_apply_full(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 1, (sl_u128_t){0, 0}, 0,
                                    tm_body_group_ref(&t, N(0), N(1), S("h")));
    assert_int_equal(tm_result(reply, NULL), 0);
    assert_int_equal(member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 2, S("g")), 0);

    sl_meta_group_ref_t refs[4];
    assert_int_equal(sl_meta_client_groups(t.m, a, refs, 4), 2);
    assert_int_equal(refs[0].topic_id, 0);
    assert_int_equal(refs[0].group_id, 0);
    assert_int_equal(refs[1].topic_id, 1);
    assert_int_equal(refs[1].group_id, 0);
    assert_int_equal(sl_meta_client_groups(t.m, a, refs, 1), 2);

    const sl_meta_group_t *g = the_group(&t);
    uint64_t generation = g->generation;
    assert_int_equal(tm_apply_full(&t, SL_OP_LOGOUT, a, 3, (sl_u128_t){0, 0}, 0, NONE).len, 0);
    assert_null(sl_meta_client_find(t.m, a));
    assert_null(sl_meta_member_find(g, a));
    assert_int_equal(g->generation, generation + 1);
    assert_partitions(sl_meta_member_find(g, b), (uint32_t[]){0, 1}, 2);
    assert_int_equal(sl_meta_client_groups(t.m, a, refs, 4), 0);

    /* A disconnect logout (request u64::MAX) of an unknown client is a no-op. */
    assert_int_equal(tm_apply_full(&t, SL_OP_LOGOUT, a, UINT64_MAX, (sl_u128_t){0, 0}, 0, NONE).len,
                     0);
    /* Deleting the topic releases b's membership as well. */
    tm_ok_empty(&t, SL_OP_DELETE_TOPIC, 0, tm_body_topic_ref(&t, N(0), N(0)));
    assert_int_equal(sl_meta_client_find(t.m, b)->memberships, 0);
    /* A Join from a client without a table entry commits but adds nothing. */
    assert_int_equal(tm_apply_full(&t, SL_OP_JOIN_CONSUMER_GROUP, a, 9, (sl_u128_t){0, 0}, 0,
                                   tm_body_group_ref(&t, N(0), N(1), S("h")))
                         .len,
                     4);
    sl_ident_t h = S("h"), u = N(1), s0 = N(0);
    assert_int_equal(sl_meta_group_find(sl_meta_topic_find(sl_meta_stream_find(t.m, &s0), &u), &h)
                         ->members_count,
                     0);
    tm_free(&t);
}

/* --- random run
 * ----------------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Every partition owned exactly once (none without members), members sorted,
 * memberships counted right. */
static void check_group(tm_t *t, const sl_meta_topic_t *topic, const sl_meta_group_t *g,
                        uint32_t clients)
{
    uint32_t n = topic->partitions_count;
    uint8_t *owner = calloc(n ? n : 1, 1);
    for (uint32_t i = 0; i < g->members_count; i++) {
        const sl_meta_member_t *mb = &g->members[i];
        if (i > 0)
            assert_true(g->members[i - 1].id < mb->id);
        for (uint32_t k = 0; k < mb->partitions_count; k++) {
            assert_true(mb->partitions[k] < n);
            assert_int_equal(owner[mb->partitions[k]], 0);
            owner[mb->partitions[k]] = 1;
        }
    }
    for (uint32_t p = 0; p < n; p++)
        assert_int_equal(owner[p], g->members_count > 0 ? 1 : 0);
    free(owner);
    for (uint32_t c = 1; c <= clients; c++) {
        const sl_meta_client_t *cl = sl_meta_client_find(t->m, tm_client(c));
        uint32_t found = sl_meta_client_groups(t->m, tm_client(c), NULL, 0);
        assert_int_equal(found, cl ? cl->memberships : 0);
    }
}

static void test_random_membership_invariants(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    setup_group(&t, 5);
    enum { CLIENTS = 6 };
    uint64_t request[CLIENTS + 1] = {0};
    for (uint32_t c = 1; c <= CLIENTS; c++)
        tm_register(&t, tm_client(c), 0);
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    uint64_t generation = 0;
    for (int step = 0; step < 3000; step++) {
        uint64_t r = rng_next(&seed);
        uint32_t c = 1 + (uint32_t)(r % CLIENTS);
        uint32_t parts = the_topic(&t)->partitions_count;
        switch ((r >> 8) % 6) {
        case 0:
        case 1:
            member_op(&t, SL_OP_JOIN_CONSUMER_GROUP, tm_client(c), ++request[c], S("g"));
            break;
        case 2:
        case 3:
            member_op(&t, SL_OP_LEAVE_CONSUMER_GROUP, tm_client(c), ++request[c], S("g"));
            break;
        case 4:
            if (parts < 40)
                tm_ok_empty(&t, SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS, 0,
                            tm_body_partitions(&t, N(0), N(0), 1 + (uint32_t)(r >> 16) % 4));
            else
                tm_ok_empty(&t, SL_OP_DELETE_PARTITIONS, 0,
                            tm_body_partitions(&t, N(0), N(0), parts));
            break;
        default:
            /* Logout and log in again under the same id. */
            tm_apply_full(&t, SL_OP_LOGOUT, tm_client(c), ++request[c], (sl_u128_t){0, 0}, 0, NONE);
            tm_register(&t, tm_client(c), 0);
            request[c] = 0;
            break;
        }
        const sl_meta_group_t *g = the_group(&t);
        assert_true(g->generation >= generation);
        generation = g->generation;
        check_group(&t, the_topic(&t), g, CLIENTS);
    }
    assert_true(generation > 1000);
    /* The state survives a snapshot round trip. */
    sl_buf_t image = tm_encode(t.m);
    tm_t copy;
    tm_init(&copy);
    assert_int_equal(sl_meta_decode(sl_buf_span(&image), copy.m), 0);
    tm_assert_same_state(t.m, copy.m);
    check_group(&copy, the_topic(&copy), the_group(&copy), CLIENTS);
    sl_buf_free(&image);
    tm_free(&copy);
    tm_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_group_golden),
        cmocka_unit_test(test_create_group_errors),
        cmocka_unit_test(test_delete_group),
        cmocka_unit_test(test_join_and_leave),
        cmocka_unit_test(test_join_assignment_rules),
        cmocka_unit_test(test_partition_change_rebalances),
        cmocka_unit_test(test_logout_drops_memberships),
        cmocka_unit_test(test_random_membership_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
