/* Module test of libsluice's user, token and system calls over a
 * socketpair (the test writes the server's frames; no sluiced is involved):
 * request bodies, permission sets both ways, and the system replies as
 * public structs. */
#include "test_client_fixtures.h"

#include "wire/perms.h"
#include "wire/topic_options.h"

#define QUEUE_ENCODED(t, op, framed, encode, value)                                                \
    do {                                                                                           \
        sl_buf_t p_;                                                                               \
        sl_buf_init(&p_, 0);                                                                       \
        assert_int_equal(encode(&p_, (value)), 0);                                                 \
        tf_queue((t), (framed) ? tf_reply_ok((op), p_.data, p_.len)                                \
                               : tf_reply((op), 0, p_.data, p_.len));                              \
        sl_buf_free(&p_);                                                                          \
    } while (0)

static tf_request_t expect(tf_conn_t *t, uint8_t operation, uint32_t code)
{
    tf_request_t q = tf_take(t);
    assert_int_equal(q.header.operation, operation);
    assert_int_equal(q.header.code, operation == SL_OP_NON_REPLICATED ? code : 0);
    return q;
}

static int setup(void **state)
{
    tf_conn_t *t = malloc(sizeof(*t));
    *t = tf_open(NULL);
    tf_login(t);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tf_conn_t *t = *state;
    tf_close(t);
    free(t);
    return 0;
}

/* --- users ------------------------------------------------------------------------- */

static void test_get_root_user_golden(void **state)
{
    tf_conn_t *t = *state;
    tf_queue(t, tf_reply_hex(SL_OP_NON_REPLICATED, HEX_ROOT_USER));
    const sl_user_t *u;
    assert_int_equal(sl_client_get_user(t->client, sl_id_name("iggy"), &u), 0);
    assert_int_equal(u->id, 0);
    assert_int_equal(u->created_at_us, 1);
    assert_int_equal(u->status, SL_USER_STATUS_ACTIVE);
    assert_string_equal(u->username, "iggy");
    const sl_permission_set_t *p = u->permissions;
    assert_non_null(p);
    assert_true(p->manage_servers && p->read_servers && p->manage_users && p->read_users);
    assert_true(p->manage_streams && p->read_streams && p->manage_topics && p->read_topics);
    assert_true(p->poll_messages && p->send_messages);
    assert_int_equal(p->streams_count, 0);
    assert_null(p->streams);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 31);
    tf_request_free(&q);
}

/* A set with one stream grant holding one topic grant. */
static const sl_topic_permission_t topic_grant = {.topic_id = 4, .poll_messages = true};
static const sl_stream_permission_t stream_grant = {
    .stream_id = 3, .read_stream = true, .topics_count = 1, .topics = &topic_grant};
static const sl_permission_set_t grant_set = {
    .read_users = true, .send_messages = true, .streams_count = 1, .streams = &stream_grant};

static void assert_grant_set(const sl_permission_set_t *p)
{
    assert_true(p->read_users);
    assert_true(p->send_messages);
    assert_false(p->manage_servers);
    assert_int_equal(p->streams_count, 1);
    assert_int_equal(p->streams[0].stream_id, 3);
    assert_true(p->streams[0].read_stream);
    assert_false(p->streams[0].manage_stream);
    assert_int_equal(p->streams[0].topics_count, 1);
    assert_int_equal(p->streams[0].topics[0].topic_id, 4);
    assert_true(p->streams[0].topics[0].poll_messages);
    assert_false(p->streams[0].topics[0].send_messages);
}

static void test_create_user_with_permissions(void **state)
{
    tf_conn_t *t = *state;
    /* The reply echoes the request's permission bytes (commands.md 33). */
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    sl_client_conv_t cv = {&arena, false};
    assert_int_equal(sl_client_permissions_encode(&perms, &cv, &grant_set), 0);
    sl_create_user_reply_t reply = {
        .user =
            {.header = {.id = 2, .created_at = 77, .status = 2, .username = sl_span_str("alice")},
             .has_permissions = true,
             .permissions = sl_buf_span(&perms)},
    };
    QUEUE_ENCODED(t, SL_OP_CREATE_USER, true, sl_create_user_reply_encode, &reply);
    const sl_user_t *u;
    assert_int_equal(
        sl_client_create_user(t->client, "alice", "pw123", SL_USER_STATUS_INACTIVE, &grant_set, &u),
        0);
    assert_int_equal(u->id, 2);
    assert_int_equal(u->status, SL_USER_STATUS_INACTIVE);
    assert_string_equal(u->username, "alice");
    assert_grant_set(u->permissions);

    tf_request_t q = expect(t, SL_OP_CREATE_USER, 0);
    sl_create_user_request_t req;
    assert_int_equal(sl_create_user_request_decode(tf_body(&q), &req), 0);
    assert_span_str(req.username, "alice");
    assert_span_str(req.password, "pw123");
    assert_int_equal(req.status, 2);
    assert_true(req.has_permissions);
    assert_span_equal(req.permissions, sl_buf_span(&perms));
    tf_request_free(&q);
    sl_buf_free(&perms);
    sl_arena_free(&arena);

    /* Without permissions: flag 0 and a reply tail of four zero bytes. */
    sl_create_user_reply_t bare = {.user.header = {.id = 3, .username = sl_span_str("bob")}};
    QUEUE_ENCODED(t, SL_OP_CREATE_USER, true, sl_create_user_reply_encode, &bare);
    assert_int_equal(sl_client_create_user(t->client, "bob", "pw123", 1, NULL, &u), 0);
    assert_null(u->permissions);
    q = expect(t, SL_OP_CREATE_USER, 0);
    assert_int_equal(sl_create_user_request_decode(tf_body(&q), &req), 0);
    assert_false(req.has_permissions);
    tf_request_free(&q);
}

static void test_user_writes(void **state)
{
    tf_conn_t *t = *state;
    tf_queue(t, tf_reply_ok(SL_OP_UPDATE_USER, NULL, 0));
    assert_int_equal(sl_client_update_user(t->client, sl_id_num(2), "carol", 0), 0);
    tf_request_t q = expect(t, SL_OP_UPDATE_USER, 0);
    sl_update_user_request_t update;
    assert_int_equal(sl_update_user_request_decode(tf_body(&q), &update), 0);
    assert_true(update.has_username);
    assert_span_str(update.username, "carol");
    assert_false(update.has_status);
    tf_request_free(&q);

    tf_queue(t, tf_reply_ok(SL_OP_UPDATE_USER, NULL, 0));
    assert_int_equal(sl_client_update_user(t->client, sl_id_num(2), NULL, 2), 0);
    q = expect(t, SL_OP_UPDATE_USER, 0);
    assert_int_equal(sl_update_user_request_decode(tf_body(&q), &update), 0);
    assert_false(update.has_username);
    assert_true(update.has_status);
    assert_int_equal(update.status, 2);
    tf_request_free(&q);

    /* NULL clears the set: flag 0, nothing after. */
    tf_queue(t, tf_reply_ok(SL_OP_UPDATE_PERMISSIONS, NULL, 0));
    assert_int_equal(sl_client_update_permissions(t->client, sl_id_num(2), NULL), 0);
    q = expect(t, SL_OP_UPDATE_PERMISSIONS, 0);
    sl_update_permissions_request_t perms;
    assert_int_equal(sl_update_permissions_request_decode(tf_body(&q), &perms), 0);
    assert_false(perms.has_permissions);
    assert_int_equal(q.body_len, 7); /* identifier (6) + flag */
    tf_request_free(&q);

    tf_queue(t, tf_reply_ok(SL_OP_UPDATE_PERMISSIONS, NULL, 0));
    assert_int_equal(sl_client_update_permissions(t->client, sl_id_num(2), &grant_set), 0);
    q = expect(t, SL_OP_UPDATE_PERMISSIONS, 0);
    assert_int_equal(sl_update_permissions_request_decode(tf_body(&q), &perms), 0);
    assert_true(perms.has_permissions);
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    sl_client_conv_t cv = {&arena, false};
    assert_grant_set(sl_client_conv_permissions(&cv, perms.permissions));
    assert_false(cv.failed);
    sl_arena_free(&arena);
    tf_request_free(&q);

    tf_queue(t, tf_reply_result(SL_OP_CHANGE_PASSWORD, SL_ERR_INVALID_CREDENTIALS));
    assert_int_equal(sl_client_change_password(t->client, sl_id_name("carol"), "old", "new"),
                     -SL_ERR_INVALID_CREDENTIALS);
    q = expect(t, SL_OP_CHANGE_PASSWORD, 0);
    sl_change_password_request_t change;
    assert_int_equal(sl_change_password_request_decode(tf_body(&q), &change), 0);
    assert_span_str(change.current_password, "old");
    assert_span_str(change.new_password, "new");
    tf_request_free(&q);

    tf_queue(t, tf_reply_result(SL_OP_DELETE_USER, SL_ERR_CANNOT_DELETE_USER));
    assert_int_equal(sl_client_delete_user(t->client, sl_id_num(0)), -SL_ERR_CANNOT_DELETE_USER);
    q = expect(t, SL_OP_DELETE_USER, 0);
    tf_request_free(&q);
}

static void test_get_users(void **state)
{
    tf_conn_t *t = *state;
    sl_user_header_t users[2] = {
        {.id = 0, .created_at = 1, .status = 1, .username = sl_span_str("iggy")},
        {.id = 5, .created_at = 9, .status = 2, .username = sl_span_str("eve")}};
    sl_get_users_reply_t reply = {.count = 2, .items = users};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_users_reply_encode, &reply);
    const sl_user_t *items;
    uint32_t count;
    assert_int_equal(sl_client_get_users(t->client, &items, &count), 0);
    assert_int_equal(count, 2);
    assert_string_equal(items[1].username, "eve");
    assert_int_equal(items[1].status, 2);
    assert_null(items[1].permissions);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 32);
    tf_request_free(&q);
}

/* --- tokens -------------------------------------------------------------------------- */

static void test_tokens(void **state)
{
    tf_conn_t *t = *state;
    sl_create_personal_access_token_reply_t created = {.token = sl_span_str("c2VjcmV0")};
    QUEUE_ENCODED(t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, true,
                  sl_create_personal_access_token_reply_encode, &created);
    const char *token;
    assert_int_equal(sl_client_create_token(t->client, "ci", 3600000000ull, &token), 0);
    assert_string_equal(token, "c2VjcmV0");
    tf_request_t q = expect(t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, 0);
    sl_create_personal_access_token_request_t req;
    assert_int_equal(sl_create_personal_access_token_request_decode(tf_body(&q), &req), 0);
    assert_span_str(req.name, "ci");
    assert_int_equal(req.expiry_us, 3600000000ull);
    tf_request_free(&q);

    sl_token_info_t infos[2] = {{sl_span_str("ci"), 0}, {sl_span_str("deploy"), 123}};
    sl_get_personal_access_tokens_reply_t list = {.count = 2, .items = infos};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_personal_access_tokens_reply_encode,
                  &list);
    const sl_token_t *items;
    uint32_t count;
    assert_int_equal(sl_client_get_tokens(t->client, &items, &count), 0);
    assert_int_equal(count, 2);
    assert_string_equal(items[0].name, "ci");
    assert_int_equal(items[0].expiry_at_us, 0);
    assert_int_equal(items[1].expiry_at_us, 123);
    q = expect(t, SL_OP_NON_REPLICATED, 41);
    tf_request_free(&q);

    tf_queue(t, tf_reply_result(SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, SL_ERR_RESOURCE_NOT_FOUND));
    assert_int_equal(sl_client_delete_token(t->client, "nope"), -SL_ERR_RESOURCE_NOT_FOUND);
    q = expect(t, SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, 0);
    tf_request_free(&q);
}

/* --- system ------------------------------------------------------------------------- */

static void test_get_me_golden_and_clients(void **state)
{
    tf_conn_t *t = *state;
    tf_queue(t, tf_reply_hex(SL_OP_NON_REPLICATED, HEX_GET_ME));
    const sl_client_info_t *me;
    assert_int_equal(sl_client_get_me(t->client, &me), 0);
    assert_int_equal(me->client_id, 1);
    assert_int_equal(me->user_id, 0);
    assert_int_equal(me->transport, 1);
    assert_string_equal(me->address, "127.0.0.1:51234");
    assert_int_equal(me->groups_count, 1);
    assert_int_equal(me->groups[0].group_id, 0);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 20);
    tf_request_free(&q);

    sl_client_group_t group = {1, 2, 3};
    sl_get_client_reply_t one = {.found = true,
                                 .client = {.header = {.client_id = 8,
                                                       .user_id = 0xFFFFFFFFu,
                                                       .transport = 4,
                                                       .address = sl_span_str("[::1]:9"),
                                                       .groups_count = 1},
                                            .groups = &group}};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_client_reply_encode, &one);
    const sl_client_info_t *c;
    assert_int_equal(sl_client_get_client(t->client, 8, &c), 0);
    assert_int_equal(c->user_id, 0xFFFFFFFFu);
    assert_int_equal(c->transport, 4);
    assert_int_equal(c->groups[0].topic_id, 2);
    q = expect(t, SL_OP_NON_REPLICATED, 21);
    sl_get_client_request_t creq;
    assert_int_equal(sl_get_client_request_decode(tf_body(&q), &creq), 0);
    assert_int_equal(creq.client_id, 8);
    tf_request_free(&q);

    sl_client_header_t headers[2] = {
        {.client_id = 1, .transport = 1, .address = sl_span_str("a"), .groups_count = 2},
        {.client_id = 2, .transport = 2, .address = sl_span_str("b")}};
    sl_get_clients_reply_t list = {.count = 2, .items = headers};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_clients_reply_encode, &list);
    const sl_client_info_t *items;
    uint32_t count;
    assert_int_equal(sl_client_get_clients(t->client, &items, &count), 0);
    assert_int_equal(count, 2);
    assert_int_equal(items[0].groups_count, 2);
    assert_null(items[0].groups);
    assert_string_equal(items[1].address, "b");
    q = expect(t, SL_OP_NON_REPLICATED, 22);
    tf_request_free(&q);
}

static void test_stats_and_cluster(void **state)
{
    tf_conn_t *t = *state;
    sl_cache_metric_t metric = {1, 2, 3, 40, 50, 0.5f};
    sl_get_stats_reply_t stats = {.process_id = 42,
                                  .cpu_usage = 1.5f,
                                  .memory_usage = 1000,
                                  .streams_count = 3,
                                  .messages_count = 77,
                                  .hostname = sl_span_str("box"),
                                  .os_name = sl_span_str("Linux"),
                                  .os_version = sl_span_str("12"),
                                  .kernel_version = sl_span_str("6.1"),
                                  .server_version = sl_span_str("0.1.0"),
                                  .server_semver = 1000,
                                  .cache_metrics_count = 1,
                                  .cache_metrics = &metric,
                                  .threads_count = 8,
                                  .total_disk_space = 1u << 30};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_stats_reply_encode, &stats);
    const sl_stats_t *s;
    assert_int_equal(sl_client_get_stats(t->client, &s), 0);
    assert_int_equal(s->process_id, 42);
    assert_true(s->cpu_usage == 1.5f);
    assert_int_equal(s->streams_count, 3);
    assert_int_equal(s->messages_count, 77);
    assert_string_equal(s->hostname, "box");
    assert_string_equal(s->kernel_version, "6.1");
    assert_string_equal(s->server_version, "0.1.0");
    assert_int_equal(s->cache_metrics_count, 1);
    assert_int_equal(s->cache_metrics[0].misses, 50);
    assert_true(s->cache_metrics[0].hit_ratio == 0.5f);
    assert_int_equal(s->threads_count, 8);
    assert_int_equal(s->total_disk_space, 1u << 30);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 10);
    tf_request_free(&q);

    sl_cluster_node_t node = {
        sl_span_str("iggy-node"), sl_span_str("127.0.0.1"), 8090, 8080, 3000, 8092, 0, 0};
    sl_get_cluster_metadata_reply_t cluster = {sl_span_str("single-node"), 1, &node};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_get_cluster_metadata_reply_encode, &cluster);
    const sl_cluster_t *m;
    assert_int_equal(sl_client_get_cluster_metadata(t->client, &m), 0);
    assert_string_equal(m->name, "single-node");
    assert_int_equal(m->nodes_count, 1);
    assert_string_equal(m->nodes[0].name, "iggy-node");
    assert_string_equal(m->nodes[0].ip, "127.0.0.1");
    assert_int_equal(m->nodes[0].tcp_port, 8090);
    assert_int_equal(m->nodes[0].websocket_port, 8092);
    q = expect(t, SL_OP_NON_REPLICATED, 12);
    tf_request_free(&q);
}

static void test_describe_options_and_snapshot(void **state)
{
    tf_conn_t *t = *state;
    sl_option_descriptor_t d[SL_TOPIC_KEY_COUNT];
    for (int i = 0; i < SL_TOPIC_KEY_COUNT; i++) {
        const sl_topic_option_info_t *c = &sl_topic_option_catalog[i];
        d[i] = (sl_option_descriptor_t){sl_span_str(c->key), c->kind, c->default_value,
                                        sl_span_str(c->description)};
    }
    sl_describe_options_reply_t reply = {SL_TOPIC_KEY_COUNT, d};
    QUEUE_ENCODED(t, SL_OP_NON_REPLICATED, false, sl_describe_options_reply_encode, &reply);
    const sl_option_info_t *items;
    uint32_t count;
    assert_int_equal(sl_client_describe_options(t->client, SL_SCOPE_TOPIC, &items, &count), 0);
    assert_int_equal(count, SL_TOPIC_KEY_COUNT);
    assert_string_equal(items[3].key, "segment_size");
    assert_int_equal(items[3].kind, SL_KIND_UINT64);
    assert_int_equal(items[3].default_len, 8);
    assert_int_equal(sl_load_u64(items[3].default_value), 1u << 30);
    assert_string_equal(items[3].description, sl_topic_option_catalog[3].description);
    tf_request_t q = expect(t, SL_OP_NON_REPLICATED, 13);
    assert_int_equal(q.body_len, 1);
    assert_int_equal(q.body[0], SL_SCOPE_TOPIC);
    tf_request_free(&q);

    const char zip[] = "PK\x03\x04 not really a zip";
    tf_queue(t, tf_reply(SL_OP_NON_REPLICATED, 0, zip, sizeof(zip)));
    uint8_t types[] = {SL_SNAPSHOT_TYPE_PROCESS_LIST, SL_SNAPSHOT_TYPE_SERVER_LOGS};
    const uint8_t *bytes;
    size_t len;
    assert_int_equal(
        sl_client_get_snapshot(t->client, SL_SNAPSHOT_COMPRESSION_DEFLATED, types, 2, &bytes, &len),
        0);
    assert_bytes_equal(bytes, len, zip, sizeof(zip));
    q = expect(t, SL_OP_NON_REPLICATED, 11);
    assert_bytes_equal(q.body, q.body_len, "\x02\x02\x02\x05", 4);
    tf_request_free(&q);
    /* Types are required; an unknown code is refused before sending. */
    assert_int_equal(sl_client_get_snapshot(t->client, 1, types, 0, &bytes, &len),
                     -SL_ERR_INVALID_COMMAND);
    uint8_t unknown = 7;
    assert_int_equal(sl_client_get_snapshot(t->client, 1, &unknown, 1, &bytes, &len),
                     -SL_ERR_INVALID_COMMAND);
    assert_true(tf_nothing_sent(t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_root_user_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_user_with_permissions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_users, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_me_golden_and_clients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats_and_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_options_and_snapshot, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
