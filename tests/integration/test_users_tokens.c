/* Users and personal access tokens against the real sluiced (commands.md 4,
 * 5): success paths and documented error codes, logins as the new users,
 * login evictions, the per-user token cap and CreatePAT replay (51). */
#include <ctype.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "raw.h"
#include "wire/cmd_users.h"
#include "wire/command.h"
#include "wire/header.h"
#include "wire/tlv.h"

#define SECOND_US         1000000ull
#define OK(expr)          assert_int_equal((expr), 0)
#define FAILS(expr, code) assert_int_equal((expr), -(code))

static th_server_t srv;
static sl_client_t *root;

static int setup(void **state)
{
    (void)state;
    /* Debug logging: the tests check what an operator is told of refusals. */
    th_options_t opt = {.extra_config = "[personal_access_token]\nmax_tokens_per_user = 3\n"
                                        /* Every refusal's line, whatever came before:
                                           the tests below look for them. */
                                        "[system.logging]\nlevel = \"debug\"\n"
                                        "repeat_burst = 0\n"};
    if (!th_start(&srv, &opt))
        return -1;
    root = th_client(srv.port, "iggy", "iggy");
    return root ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sl_client_close(root);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

static uint64_t now_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * SECOND_US + (uint64_t)tv.tv_usec;
}

/* Creates an active user without permissions; returns its id. */
static uint32_t create_user(const char *name, const char *password)
{
    const sl_user_t *u = NULL;
    OK(sl_client_create_user(root, name, password, SL_USER_STATUS_ACTIVE, NULL, &u));
    assert_non_null(u);
    return u->id;
}

static sl_client_t *login(const char *name, const char *password)
{
    sl_client_t *c = th_client(srv.port, name, password);
    assert_non_null(c);
    return c;
}

/* The example set of permissions.md 1: global read_streams; stream 1 with
 * read_stream + poll_messages; within it topic 2 with read_topic. */
static const sl_topic_permission_t example_topic = {.topic_id = 2, .read_topic = true};
static const sl_stream_permission_t example_stream = {.stream_id = 1,
                                                      .read_stream = true,
                                                      .poll_messages = true,
                                                      .topics_count = 1,
                                                      .topics = &example_topic};
static const sl_permission_set_t example_perms = {
    .read_streams = true, .streams_count = 1, .streams = &example_stream};

static void assert_example_perms(const sl_permission_set_t *p)
{
    assert_non_null(p);
    assert_true(p->read_streams);
    assert_false(p->manage_servers || p->read_servers || p->manage_users || p->read_users ||
                 p->manage_streams || p->manage_topics || p->read_topics || p->poll_messages ||
                 p->send_messages);
    assert_int_equal(p->streams_count, 1);
    const sl_stream_permission_t *s = &p->streams[0];
    assert_int_equal(s->stream_id, 1);
    assert_true(s->read_stream && s->poll_messages);
    assert_false(s->manage_stream || s->manage_topics || s->read_topics || s->send_messages);
    assert_int_equal(s->topics_count, 1);
    assert_int_equal(s->topics[0].topic_id, 2);
    assert_true(s->topics[0].read_topic);
    assert_false(s->topics[0].manage_topic || s->topics[0].poll_messages ||
                 s->topics[0].send_messages);
}

/* --- users ------------------------------------------------------------------------ */

static void test_create_get_list(void **state)
{
    (void)state;
    uint64_t before = now_us();
    const sl_user_t *u;
    OK(sl_client_create_user(root, "alice", "alice-pass", SL_USER_STATUS_ACTIVE, &example_perms,
                             &u));
    uint32_t alice = u->id;
    assert_true(alice > 0);
    assert_string_equal(u->username, "alice");
    assert_int_equal(u->status, SL_USER_STATUS_ACTIVE);
    assert_true(u->created_at_us >= before - SECOND_US && u->created_at_us <= now_us());
    assert_example_perms(u->permissions);

    OK(sl_client_get_user(root, sl_id_name("alice"), &u));
    assert_non_null(u);
    assert_int_equal(u->id, alice);
    assert_example_perms(u->permissions);
    OK(sl_client_get_user(root, sl_id_num(alice), &u));
    assert_non_null(u);
    assert_string_equal(u->username, "alice");

    OK(sl_client_create_user(root, "bob", "bob-pass", SL_USER_STATUS_ACTIVE, NULL, &u));
    uint32_t bob = u->id;
    assert_null(u->permissions);
    OK(sl_client_get_user(root, sl_id_num(bob), &u));
    assert_null(u->permissions);
    OK(sl_client_create_user(root, "carol", "carol-pass", SL_USER_STATUS_INACTIVE, NULL, &u));
    assert_int_equal(u->status, SL_USER_STATUS_INACTIVE);

    /* Root: id 0, created when the server first started (before alice),
     * every global flag, no streams. */
    OK(sl_client_get_user(root, sl_id_num(0), &u));
    assert_string_equal(u->username, "iggy");
    assert_true(u->created_at_us > 1 && u->created_at_us <= before);
    assert_non_null(u->permissions);
    assert_true(u->permissions->manage_servers && u->permissions->send_messages);
    assert_int_equal(u->permissions->streams_count, 0);

    const sl_user_t *items;
    uint32_t n;
    OK(sl_client_get_users(root, &items, &n));
    assert_true(n >= 4);
    assert_int_equal(items[0].id, 0);
    bool seen_alice = false, seen_bob = false;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            assert_true(items[i - 1].id < items[i].id);
        assert_null(items[i].permissions);
        seen_alice |= items[i].id == alice && strcmp(items[i].username, "alice") == 0;
        seen_bob |= items[i].id == bob && strcmp(items[i].username, "bob") == 0;
    }
    assert_true(seen_alice && seen_bob);

    OK(sl_client_get_user(root, sl_id_name("nobody"), &u));
    assert_null(u);
    OK(sl_client_get_user(root, sl_id_num(4242), &u));
    assert_null(u);
}

/* permissions.md 1 "Storage and echo order": the CreateUser reply echoes
 * the grants as sent (order and duplicates kept); GetUser returns them
 * sorted by id with the last duplicate winning, and an empty topic list as
 * no list. */
static void test_permission_echo_and_storage_order(void **state)
{
    (void)state;
    static const sl_topic_permission_t topics_b[2] = {{.topic_id = 9, .send_messages = true},
                                                      {.topic_id = 3, .manage_topic = true}};
    static const sl_stream_permission_t grants[3] = {
        {.stream_id = 5, .read_stream = true},
        {.stream_id = 2, .manage_topics = true, .topics_count = 2, .topics = topics_b},
        {.stream_id = 5, .send_messages = true}, /* duplicate: this one wins */
    };
    static const sl_permission_set_t perms = {
        .read_users = true, .streams_count = 3, .streams = grants};
    const sl_user_t *u;
    OK(sl_client_create_user(root, "ordered", "ordered-pass", SL_USER_STATUS_ACTIVE, &perms, &u));
    const sl_permission_set_t *p = u->permissions;
    assert_non_null(p);
    assert_true(p->read_users);
    assert_int_equal(p->streams_count, 3);
    assert_int_equal(p->streams[0].stream_id, 5);
    assert_int_equal(p->streams[1].stream_id, 2);
    assert_int_equal(p->streams[1].topics_count, 2);
    assert_int_equal(p->streams[1].topics[0].topic_id, 9);
    assert_int_equal(p->streams[2].stream_id, 5);
    assert_true(p->streams[2].send_messages);

    OK(sl_client_get_user(root, sl_id_name("ordered"), &u));
    p = u->permissions;
    assert_non_null(p);
    assert_int_equal(p->streams_count, 2);
    assert_int_equal(p->streams[0].stream_id, 2);
    assert_true(p->streams[0].manage_topics);
    assert_int_equal(p->streams[0].topics_count, 2);
    assert_int_equal(p->streams[0].topics[0].topic_id, 3);
    assert_true(p->streams[0].topics[0].manage_topic);
    assert_int_equal(p->streams[0].topics[1].topic_id, 9);
    assert_true(p->streams[0].topics[1].send_messages);
    assert_int_equal(p->streams[1].stream_id, 5);
    assert_true(p->streams[1].send_messages);
    assert_false(p->streams[1].read_stream);
    assert_int_equal(p->streams[1].topics_count, 0);
}

static void test_create_errors(void **state)
{
    (void)state;
    create_user("dup-user", "secret1");
    FAILS(sl_client_create_user(root, "dup-user", "other", SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_USER_ALREADY_EXISTS);
    FAILS(sl_client_create_user(root, "ab", "secret1", SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_INVALID_USERNAME);
    char longest[52];
    memset(longest, 'u', 51);
    longest[51] = '\0';
    FAILS(sl_client_create_user(root, longest, "secret1", SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_INVALID_USERNAME);
    longest[50] = '\0'; /* 50 bytes: the maximum */
    create_user(longest, "secret1");
    create_user("abc", "secret1"); /* 3 bytes: the minimum */
}

static void test_update_user(void **state)
{
    (void)state;
    uint32_t id = create_user("dora", "dora-pass");
    create_user("eve-taken", "eve-pass");
    OK(sl_client_update_user(root, sl_id_num(id), "dora", 0)); /* own name: allowed */
    OK(sl_client_update_user(root, sl_id_name("dora"), "dora-renamed", SL_USER_STATUS_INACTIVE));
    const sl_user_t *u;
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_string_equal(u->username, "dora-renamed");
    assert_int_equal(u->status, SL_USER_STATUS_INACTIVE);
    OK(sl_client_get_user(root, sl_id_name("dora"), &u));
    assert_null(u);
    OK(sl_client_update_user(root, sl_id_num(id), NULL, SL_USER_STATUS_ACTIVE)); /* status only */
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_string_equal(u->username, "dora-renamed");
    assert_int_equal(u->status, SL_USER_STATUS_ACTIVE);

    FAILS(sl_client_update_user(root, sl_id_num(id), "eve-taken", 0), SL_ERR_USER_ALREADY_EXISTS);
    FAILS(sl_client_update_user(root, sl_id_num(id), "xy", 0), SL_ERR_INVALID_USERNAME);
    FAILS(sl_client_update_user(root, sl_id_name("ghost"), "ghost2", 0), SL_ERR_RESOURCE_NOT_FOUND);
    FAILS(sl_client_update_user(root, sl_id_num(4242), NULL, SL_USER_STATUS_INACTIVE),
          SL_ERR_RESOURCE_NOT_FOUND);
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_string_equal(u->username, "dora-renamed");
}

static void test_delete_user(void **state)
{
    (void)state;
    FAILS(sl_client_delete_user(root, sl_id_num(0)), SL_ERR_CANNOT_DELETE_USER);
    FAILS(sl_client_delete_user(root, sl_id_name("iggy")), SL_ERR_CANNOT_DELETE_USER);
    FAILS(sl_client_delete_user(root, sl_id_name("ghost")), SL_ERR_RESOURCE_NOT_FOUND);
    FAILS(sl_client_delete_user(root, sl_id_num(4242)), SL_ERR_RESOURCE_NOT_FOUND);

    uint32_t id = create_user("fred", "fred-pass");
    /* Its tokens go with it. */
    sl_client_t *fred = login("fred", "fred-pass");
    const char *token;
    OK(sl_client_create_token(fred, "fred-token", 0, &token));
    char saved[128];
    snprintf(saved, sizeof(saved), "%s", token);
    sl_client_close(fred);

    OK(sl_client_delete_user(root, sl_id_num(id)));
    const sl_user_t *u;
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_null(u);
    FAILS(sl_client_delete_user(root, sl_id_num(id)), SL_ERR_RESOURCE_NOT_FOUND);
    raw_session_t r;
    raw_open(&r, srv.port);
    raw_reply_t rep = raw_login_token(&r, saved);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_TOKEN);
    rep = raw_login(&r, "fred", "fred-pass");
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);
    raw_close(&r);
    /* The id is free again: the lowest free one is reused. */
    assert_int_equal(create_user("fred-again", "fred-pass"), id);
}

/* A session of a deleted user ends at its next request (the reference
 * keeps it bound): it can neither act as nobody nor, once the id is given to
 * a new user, as that user. */
static void test_deleted_user_session_ends(void **state)
{
    (void)state;
    uint32_t id = create_user("dora", "dora-pass");
    sl_client_t *dora = login("dora", "dora-pass");
    const sl_stream_t *streams;
    uint32_t n;
    FAILS(sl_client_create_stream(dora, "by-dora", NULL), SL_ERR_UNAUTHORIZED);
    OK(sl_client_delete_user(root, sl_id_num(id)));
    /* The id goes to a user allowed to manage streams. */
    sl_permission_set_t manager = {.manage_streams = true, .read_streams = true};
    const sl_user_t *u = NULL;
    OK(sl_client_create_user(root, "erin", "erin-pass", SL_USER_STATUS_ACTIVE, &manager, &u));
    assert_int_equal(u->id, id);
    /* Dora's old session gets no session, not Erin's permissions: Eviction 1
     * (NoSession, read as 40), and the connection stays open, so her next
     * read is answered status 40 (lifecycle.md 9), never a closed connection
     * (a tick coming between the eviction and its reply's completion once
     * closed it at once as past tcp.login_timeout). */
    FAILS(sl_client_create_stream(dora, "by-dora", NULL), SL_ERR_UNAUTHENTICATED);
    FAILS(sl_client_get_streams(dora, &streams, &n), SL_ERR_UNAUTHENTICATED);
    OK(sl_client_get_streams(root, &streams, &n));
    for (uint32_t i = 0; i < n; i++)
        assert_string_not_equal(streams[i].name, "by-dora");
    sl_client_close(dora);
    /* Erin, logged in as herself, has what was given to her. */
    sl_client_t *erin = login("erin", "erin-pass");
    OK(sl_client_create_stream(erin, "by-erin", NULL));
    OK(sl_client_delete_stream(erin, sl_id_name("by-erin")));
    sl_client_close(erin);
    OK(sl_client_delete_user(root, sl_id_num(id)));
}

/* Sluice ends a deactivated user's live sessions at their next request,
 * as it does a deleted user's (the reference keeps them bound). */
static void test_deactivated_user_session_ends(void **state)
{
    (void)state;
    sl_permission_set_t manager = {.manage_streams = true, .read_streams = true};
    const sl_user_t *u = NULL;
    OK(sl_client_create_user(root, "ivan", "ivan-pass", SL_USER_STATUS_ACTIVE, &manager, &u));
    uint32_t id = u->id;
    sl_client_t *ivan = login("ivan", "ivan-pass");
    uint32_t other_id = create_user("jack", "jack-pass");
    sl_client_t *other = login("jack", "jack-pass");
    const sl_stream_t *streams;
    uint32_t n;
    OK(sl_client_get_streams(ivan, &streams, &n));
    /* Root deactivates Ivan while his session is live. */
    OK(sl_client_update_user(root, sl_id_num(id), NULL, SL_USER_STATUS_INACTIVE));
    /* Eviction 1, then status 40 on the same open connection. */
    FAILS(sl_client_create_stream(ivan, "by-ivan", NULL), SL_ERR_UNAUTHENTICATED);
    FAILS(sl_client_get_streams(ivan, &streams, &n), SL_ERR_UNAUTHENTICATED);
    OK(sl_client_get_streams(root, &streams, &n));
    for (uint32_t i = 0; i < n; i++)
        assert_string_not_equal(streams[i].name, "by-ivan");
    /* The session is gone from the server's client list too. */
    const sl_client_info_t *clients;
    OK(sl_client_get_clients(root, &clients, &n));
    for (uint32_t i = 0; i < n; i++)
        assert_int_not_equal(clients[i].user_id, id);
    /* Nobody else's session is touched. */
    const sl_client_info_t *me;
    OK(sl_client_get_me(other, &me));
    assert_int_equal(me->user_id, other_id);
    sl_client_close(other);
    sl_client_close(ivan);

    /* Reactivated, he logs in again and acts with his permissions. */
    OK(sl_client_update_user(root, sl_id_num(id), NULL, SL_USER_STATUS_ACTIVE));
    ivan = login("ivan", "ivan-pass");
    OK(sl_client_create_stream(ivan, "by-ivan", NULL));
    OK(sl_client_delete_stream(ivan, sl_id_name("by-ivan")));
    sl_client_close(ivan);
    OK(sl_client_delete_user(root, sl_id_num(id)));
    OK(sl_client_delete_user(root, sl_id_num(other_id)));
}

/* A user with manage_users may not rename root or set it inactive (result
 * 41); root stays able to log in. The reference allows both. */
static void test_root_protected_from_managers(void **state)
{
    (void)state;
    sl_permission_set_t manager = {.manage_users = true, .read_users = true};
    const sl_user_t *u = NULL;
    OK(sl_client_create_user(root, "kate", "kate-pass", SL_USER_STATUS_ACTIVE, &manager, &u));
    uint32_t id = u->id;
    sl_client_t *kate = login("kate", "kate-pass");
    FAILS(sl_client_update_user(kate, sl_id_num(0), "not-root", 0), SL_ERR_UNAUTHORIZED);
    FAILS(sl_client_update_user(kate, sl_id_name("iggy"), NULL, SL_USER_STATUS_INACTIVE),
          SL_ERR_UNAUTHORIZED);
    char line[100];
    snprintf(line, sizeof(line), "UpdateUser by user %u refused: unauthorized (41)", id);
    assert_non_null(strstr(th_log(&srv), line));
    /* The reference's own guards are unchanged. */
    FAILS(sl_client_delete_user(kate, sl_id_num(0)), SL_ERR_CANNOT_DELETE_USER);
    FAILS(sl_client_update_permissions(kate, sl_id_num(0), NULL), SL_ERR_CANNOT_CHANGE_PERMISSIONS);
    OK(sl_client_get_user(kate, sl_id_num(0), &u));
    assert_string_equal(u->username, "iggy");
    assert_int_equal(u->status, SL_USER_STATUS_ACTIVE);
    sl_client_close(login("iggy", "iggy"));
    /* Kate still manages everyone else, herself included. */
    OK(sl_client_update_user(kate, sl_id_num(id), "kate-2", 0));
    sl_client_close(kate);
    OK(sl_client_delete_user(root, sl_id_num(id)));
}

static void test_change_password(void **state)
{
    (void)state;
    uint32_t id = create_user("gina", "gina-pass1");
    uint32_t other = create_user("hugo", "hugo-pass1");
    sl_client_t *gina = login("gina", "gina-pass1");
    FAILS(sl_client_change_password(gina, sl_id_num(id), "wrong-pass", "gina-pass2"),
          SL_ERR_INVALID_CREDENTIALS);
    OK(sl_client_change_password(gina, sl_id_num(id), "gina-pass1", "gina-pass2"));
    /* Another user's password needs manage_users (checked before the
     * current password). */
    FAILS(sl_client_change_password(gina, sl_id_num(other), "hugo-pass1", "hacked"),
          SL_ERR_UNAUTHORIZED);
    FAILS(sl_client_change_password(gina, sl_id_num(4242), "any-pass", "new-pass"),
          SL_ERR_RESOURCE_NOT_FOUND);
    sl_client_close(gina);

    sl_client_t *c;
    OK(th_client_connect(srv.port, &c));
    FAILS(sl_client_login(c, "gina", "gina-pass1", NULL), SL_ERR_INVALID_CREDENTIALS);
    sl_identity_t me;
    OK(sl_client_login(c, "gina", "gina-pass2", &me));
    assert_int_equal(me.user_id, id);
    sl_client_close(c);

    /* Root changes another user's password; the current one must match. */
    FAILS(sl_client_change_password(root, sl_id_name("hugo"), "not-it", "hugo-pass2"),
          SL_ERR_INVALID_CREDENTIALS);
    OK(sl_client_change_password(root, sl_id_name("hugo"), "hugo-pass1", "hugo-pass2"));
    FAILS(sl_client_change_password(root, sl_id_name("ghost"), "any-pass", "new-pass"),
          SL_ERR_RESOURCE_NOT_FOUND);
    c = login("hugo", "hugo-pass2");
    sl_client_close(c);
}

/* A password login can use only 3..100 bytes, so CreateUser and
 * ChangePassword refuse others (status 44, nothing committed) instead of
 * making a user who can never log in. */
static void test_password_length(void **state)
{
    (void)state;
    char longest[102];
    memset(longest, 'p', 101);
    longest[101] = '\0'; /* 101 bytes: one too many */
    FAILS(sl_client_create_user(root, "pw-short", "pw", SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_INVALID_PASSWORD);
    FAILS(sl_client_create_user(root, "pw-long", longest, SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_INVALID_PASSWORD);
    FAILS(sl_client_create_user(root, "pw-empty", "", SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_INVALID_PASSWORD);
    /* The operator's log says why, at debug level. */
    assert_non_null(
        strstr(th_log(&srv), "CreateUser by user 0 refused before commit: invalid password (44)"));
    const sl_user_t *u;
    OK(sl_client_get_user(root, sl_id_name("pw-short"), &u));
    assert_null(u);
    OK(sl_client_get_user(root, sl_id_name("pw-long"), &u));
    assert_null(u);
    /* The bounds themselves are accepted, and such a user logs in. */
    create_user("pw-min", "abc");
    sl_client_close(login("pw-min", "abc"));
    longest[100] = '\0';
    uint32_t id = create_user("pw-max", longest);
    sl_client_close(login("pw-max", longest));

    /* ChangePassword: the new password follows the same rule; the old one
     * stays. The current password's check is not reached. */
    longest[100] = 'p';
    FAILS(sl_client_change_password(root, sl_id_num(id), longest, "pw"), SL_ERR_INVALID_PASSWORD);
    FAILS(sl_client_change_password(root, sl_id_num(id), longest, longest),
          SL_ERR_INVALID_PASSWORD);
    longest[100] = '\0';
    sl_client_t *c = login("pw-max", longest);
    FAILS(sl_client_change_password(c, sl_id_num(id), longest, "xy"), SL_ERR_INVALID_PASSWORD);
    OK(sl_client_change_password(c, sl_id_num(id), longest, "xyz"));
    sl_client_close(c);
    sl_client_close(login("pw-max", "xyz"));

    /* The refusal is a status (rejected before commit), not a result. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_change_password_request_t q = {.user_id = sl_ident_number(id),
                                      .current_password = sl_span_str("xyz"),
                                      .new_password = sl_span_str("no")};
    OK(sl_change_password_request_encode(&b, &q));
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, SL_OP_CHANGE_PASSWORD, 0, b.data, b.len, &r));
    assert_false(r.evicted);
    assert_int_equal(r.status, SL_ERR_INVALID_PASSWORD);
    assert_int_equal(r.body_len, 0);
    sl_buf_free(&b);
    OK(sl_client_delete_user(root, sl_id_name("pw-min")));
    OK(sl_client_delete_user(root, sl_id_num(id)));
}

static void test_update_permissions(void **state)
{
    (void)state;
    FAILS(sl_client_update_permissions(root, sl_id_num(0), &example_perms),
          SL_ERR_CANNOT_CHANGE_PERMISSIONS);
    FAILS(sl_client_update_permissions(root, sl_id_num(0), NULL), SL_ERR_CANNOT_CHANGE_PERMISSIONS);
    FAILS(sl_client_update_permissions(root, sl_id_name("ghost"), NULL), SL_ERR_RESOURCE_NOT_FOUND);
    uint32_t id = create_user("ivan", "ivan-pass");
    OK(sl_client_update_permissions(root, sl_id_num(id), &example_perms));
    const sl_user_t *u;
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_example_perms(u->permissions);
    OK(sl_client_update_permissions(root, sl_id_name("ivan"), NULL)); /* cleared */
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_null(u->permissions);
    /* Root keeps its set. */
    OK(sl_client_get_user(root, sl_id_num(0), &u));
    assert_true(u->permissions->manage_users);

    /* Without manage_users: 41, even for a missing user. */
    sl_client_t *ivan = login("ivan", "ivan-pass");
    FAILS(sl_client_update_permissions(ivan, sl_id_num(id), &example_perms), SL_ERR_UNAUTHORIZED);
    FAILS(sl_client_update_permissions(ivan, sl_id_name("ghost"), NULL), SL_ERR_UNAUTHORIZED);
    FAILS(sl_client_create_user(ivan, "by-ivan", "secret1", SL_USER_STATUS_ACTIVE, NULL, NULL),
          SL_ERR_UNAUTHORIZED);
    FAILS(sl_client_delete_user(ivan, sl_id_name("ghost")), SL_ERR_UNAUTHORIZED);
    FAILS(sl_client_update_user(ivan, sl_id_num(id), "ivan-2", 0), SL_ERR_UNAUTHORIZED);
    /* Its own account is readable, others are not. */
    OK(sl_client_get_user(ivan, sl_id_num(id), &u));
    assert_non_null(u);
    assert_string_equal(u->username, "ivan");
    FAILS(sl_client_get_user(ivan, sl_id_num(0), &u), SL_ERR_UNAUTHORIZED);
    sl_client_close(ivan);
}

/* Body forms the library does not produce (commands.md 33, 35, 36). */
static void put_name(sl_buf_t *b, const char *s)
{
    sl_put_u8(b, (uint8_t)strlen(s));
    sl_put_span(b, sl_span_str(s));
}

static sl_raw_reply_t meta_raw(uint8_t operation, const sl_buf_t *body)
{
    sl_raw_reply_t r;
    OK(sl_client_request_raw(root, operation, 0, body->data, body->len, &r));
    assert_false(r.evicted);
    return r;
}

static void test_raw_user_bodies(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    /* CreateUser with status byte 7: the reply echoes 7, the user is active. */
    put_name(&b, "nora");
    put_name(&b, "nora-pass");
    sl_put_u8(&b, 7);
    sl_put_u8(&b, 0); /* no permissions */
    sl_raw_reply_t r = meta_raw(SL_OP_CREATE_USER, &b);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.error, 0);
    sl_create_user_reply_t cu;
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    OK(sl_create_user_reply_decode(sl_span(r.body + 4, r.body_len - 4), &arena, &cu));
    assert_int_equal(cu.user.header.status, 7);
    uint32_t id = cu.user.header.id;
    sl_arena_free(&arena);
    const sl_user_t *u;
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_int_equal(u->status, SL_USER_STATUS_ACTIVE);

    /* A permissions length that differs from the set's encoding: status 3. */
    sl_buf_reset(&b);
    put_name(&b, "olga");
    put_name(&b, "olga-pass");
    sl_put_u8(&b, 1);
    sl_put_u8(&b, 1);
    sl_put_u32(&b, 12); /* the set below is 11 bytes */
    for (int i = 0; i < 11; i++)
        sl_put_u8(&b, 0);
    sl_put_u8(&b, 0);
    r = meta_raw(SL_OP_CREATE_USER, &b);
    assert_int_equal(r.status, SL_ERR_INVALID_COMMAND);
    /* Any user option key: 4041. */
    sl_buf_reset(&b);
    put_name(&b, "olga");
    put_name(&b, "olga-pass");
    sl_put_u8(&b, 1);
    sl_put_u8(&b, 0);
    assert_true(sl_tlv_put_pair(&b, "quota", SL_KIND_STRING, sl_span_str("1")));
    r = meta_raw(SL_OP_CREATE_USER, &b);
    assert_int_equal(r.status, SL_ERR_UNSUPPORTED_OPTION_KEY);
    OK(sl_client_get_user(root, sl_id_name("olga"), &u));
    assert_null(u);

    /* UpdateUser: a status other than 1/2 is ignored; an option key is 4041. */
    sl_buf_reset(&b);
    sl_update_user_request_t uq = {.user_id = sl_ident_number(id), .has_status = true, .status = 3};
    OK(sl_update_user_request_encode(&b, &uq));
    r = meta_raw(SL_OP_UPDATE_USER, &b);
    assert_int_equal(r.error, 0);
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_int_equal(u->status, SL_USER_STATUS_ACTIVE);
    assert_true(sl_tlv_put_pair(&b, "quota", SL_KIND_STRING, sl_span_str("1")));
    r = meta_raw(SL_OP_UPDATE_USER, &b);
    assert_int_equal(r.status, SL_ERR_UNSUPPORTED_OPTION_KEY);

    /* UpdatePermissions with a flag other than 1 clears the set. */
    OK(sl_client_update_permissions(root, sl_id_num(id), &example_perms));
    sl_buf_reset(&b);
    sl_put_u8(&b, 1);
    sl_put_u8(&b, 4);
    sl_put_u32(&b, id);
    sl_put_u8(&b, 2);
    r = meta_raw(SL_OP_UPDATE_PERMISSIONS, &b);
    assert_int_equal(r.error, 0);
    OK(sl_client_get_user(root, sl_id_num(id), &u));
    assert_null(u->permissions);
    sl_buf_free(&b);
}

/* --- logins ---------------------------------------------------------------------- */

static void test_login_new_and_inactive(void **state)
{
    (void)state;
    uint32_t id = create_user("judy", "judy-pass");
    sl_client_t *c;
    OK(th_client_connect(srv.port, &c));
    sl_identity_t me;
    OK(sl_client_login(c, "judy", "judy-pass", &me));
    assert_int_equal(me.user_id, id);
    const sl_client_info_t *info;
    OK(sl_client_get_me(c, &info));
    assert_int_equal(info->user_id, id);

    /* Deactivated: the password login is refused with eviction 9. */
    OK(sl_client_update_user(root, sl_id_num(id), NULL, SL_USER_STATUS_INACTIVE));
    OK(sl_client_logout(c));
    FAILS(sl_client_login(c, "judy", "judy-pass", NULL), SL_ERR_INVALID_CREDENTIALS);
    sl_client_close(c);
    raw_session_t r;
    raw_open(&r, srv.port);
    raw_reply_t rep = raw_login(&r, "judy", "judy-pass");
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);
    rep = raw_login(&r, "carol", "carol-pass"); /* created inactive */
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_CREDENTIALS);
    raw_close(&r);
}

/* --- personal access tokens ---------------------------------------------------------- */

static bool is_base64(const char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '+' && *s != '/' && *s != '=')
            return false;
    return true;
}

static void test_tokens(void **state)
{
    (void)state;
    uint32_t id = create_user("kate", "kate-pass");
    sl_client_t *kate = login("kate", "kate-pass");
    const sl_token_t *items;
    uint32_t n = 99;
    OK(sl_client_get_tokens(kate, &items, &n));
    assert_int_equal(n, 0);

    const char *token;
    OK(sl_client_create_token(kate, "never", 0, &token));
    assert_int_equal(strlen(token), 68);
    assert_true(is_base64(token));
    char never[128];
    snprintf(never, sizeof(never), "%s", token);
    uint64_t before = now_us();
    OK(sl_client_create_token(kate, "hourly", 3600 * SECOND_US, &token));
    assert_int_equal(strlen(token), 68);
    assert_string_not_equal(token, never);
    char hourly[128];
    snprintf(hourly, sizeof(hourly), "%s", token);

    OK(sl_client_get_tokens(kate, &items, &n));
    assert_int_equal(n, 2);
    assert_string_equal(items[0].name, "hourly"); /* sorted by name */
    assert_true(items[0].expiry_at_us >= before + 3600 * SECOND_US - 5 * SECOND_US);
    assert_true(items[0].expiry_at_us <= now_us() + 3600 * SECOND_US);
    assert_string_equal(items[1].name, "never");
    assert_true(items[1].expiry_at_us == 0);

    FAILS(sl_client_create_token(kate, "never", 0, &token),
          SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS);
    FAILS(sl_client_delete_token(kate, "missing"), SL_ERR_RESOURCE_NOT_FOUND);
    /* Tokens are per user: root has none of kate's. */
    FAILS(sl_client_delete_token(root, "never"), SL_ERR_RESOURCE_NOT_FOUND);

    /* Login with the token (code 45). */
    sl_client_t *c;
    OK(th_client_connect(srv.port, &c));
    sl_identity_t me;
    OK(sl_client_login_token(c, never, &me));
    assert_int_equal(me.user_id, id);
    sl_client_close(c);

    /* The cap (3 here): the fourth is status 52, before anything commits. */
    OK(sl_client_create_token(kate, "third", UINT64_MAX, &token));
    FAILS(sl_client_create_token(kate, "fourth", 0, &token),
          SL_ERR_PERSONAL_ACCESS_TOKENS_LIMIT_REACHED);
    OK(sl_client_get_tokens(kate, &items, &n));
    assert_int_equal(n, 3);
    assert_true(items[2].expiry_at_us == 0); /* u64::MAX: never expires */

    OK(sl_client_delete_token(kate, "hourly"));
    OK(th_client_connect(srv.port, &c));
    FAILS(sl_client_login_token(c, hourly, NULL), SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN);
    sl_client_close(c);
    OK(sl_client_get_tokens(kate, &items, &n));
    assert_int_equal(n, 2);
    assert_string_equal(items[0].name, "never");
    assert_string_equal(items[1].name, "third");
    /* An expiry that wraps the clock: 56, nothing stored. */
    FAILS(sl_client_create_token(kate, "wraps", UINT64_MAX - 1, &token),
          SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN_EXPIRY);
    OK(sl_client_create_token(kate, "fourth", 0, &token)); /* room again */
    sl_client_close(kate);
}

static void test_token_expired_and_inactive(void **state)
{
    (void)state;
    uint32_t id = create_user("liam", "liam-pass");
    sl_client_t *liam = login("liam", "liam-pass");
    const char *token;
    OK(sl_client_create_token(liam, "short", SECOND_US, &token));
    char short_token[128];
    snprintf(short_token, sizeof(short_token), "%s", token);
    OK(sl_client_create_token(liam, "long", 0, &token));
    char long_token[128];
    snprintf(long_token, sizeof(long_token), "%s", token);
    sl_client_close(liam);

    struct timespec ts = {1, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    raw_session_t r;
    raw_open(&r, srv.port);
    raw_reply_t rep = raw_login_token(&r, short_token);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_INVALID_TOKEN);
    rep = raw_login_token(&r, "not-a-token-at-all");
    assert_int_equal(rep.reason, SL_EVICT_INVALID_TOKEN);
    /* The library maps reason 10 to InvalidPersonalAccessToken (53). */
    sl_client_t *c;
    OK(th_client_connect(srv.port, &c));
    FAILS(sl_client_login_token(c, short_token, NULL), SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN);
    /* An inactive user's token: eviction 11. */
    OK(sl_client_update_user(root, sl_id_num(id), NULL, SL_USER_STATUS_INACTIVE));
    rep = raw_login_token(&r, long_token);
    assert_true(rep.evicted);
    assert_int_equal(rep.reason, SL_EVICT_USER_INACTIVE);
    OK(sl_client_update_user(root, sl_id_num(id), NULL, SL_USER_STATUS_ACTIVE));
    sl_identity_t me;
    OK(sl_client_login_token(c, long_token, &me));
    assert_int_equal(me.user_id, id);
    sl_client_close(c);
    raw_close(&r);
}

/* A replayed successful CreatePersonalAccessToken (same client, same
 * request number) cannot resend the token: result 51, nothing new stored. */
static void test_token_create_replay(void **state)
{
    (void)state;
    create_user("mona", "mona-pass");
    raw_session_t r;
    raw_open(&r, srv.port);
    raw_reply_t rep = raw_login(&r, "mona", "mona-pass");
    assert_int_equal(rep.result, 0);
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_create_personal_access_token_request_t q = {.name = sl_span_str("once"), .expiry_us = 0};
    OK(sl_create_personal_access_token_request_encode(&body, &q));
    rep = raw_meta(&r, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, sl_buf_span(&body));
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, 0);
    assert_int_equal(rep.header.operation, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN);
    assert_int_equal(rep.payload.len, 1 + 68);
    assert_int_equal(rep.payload.ptr[0], 68);

    rep = raw_call(&r, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, 0, r.request, r.session,
                   sl_buf_span(&body), true);
    assert_false(rep.evicted);
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.result, SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS);
    assert_int_equal(rep.body.len, 12);

    /* A new request number with the same name: a committed 51 as well. */
    rep = raw_meta(&r, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, sl_buf_span(&body));
    assert_int_equal(rep.result, SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS);
    rep = raw_read(&r, SL_CMD_GET_PERSONAL_ACCESS_TOKENS, sl_span(NULL, 0));
    assert_int_equal(rep.status, 0);
    assert_int_equal(rep.payload.len, 1 + 4 + 8); /* one token: "once", never */
    sl_buf_free(&body);
    raw_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_get_list),
        cmocka_unit_test(test_permission_echo_and_storage_order),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_update_user),
        cmocka_unit_test(test_delete_user),
        cmocka_unit_test(test_deleted_user_session_ends),
        cmocka_unit_test(test_deactivated_user_session_ends),
        cmocka_unit_test(test_root_protected_from_managers),
        cmocka_unit_test(test_change_password),
        cmocka_unit_test(test_password_length),
        cmocka_unit_test(test_update_permissions),
        cmocka_unit_test(test_raw_user_bodies),
        cmocka_unit_test(test_login_new_and_inactive),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_token_expired_and_inactive),
        cmocka_unit_test(test_token_create_replay),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
