/* Users and personal access tokens in the metadata state machine: the root
 * bootstrap (GetUser bytes of commands.md 13.6), every user operation's
 * success and documented error (commands.md 4-5), permission storage order
 * (permissions.md 1), token expiry and duplicates, and the admitted body
 * codecs of meta/admit.h including hostile input. */
#include "meta_testutil.h"

#include "base/limits.h"

#define S(name) sl_ident_name(name)
#define N(id)   sl_ident_number(id)
#define NONE    sl_span(NULL, 0)

static const sl_meta_user_t *user_named(tm_t *t, const char *name)
{
    sl_ident_t id = S(name);
    return sl_meta_user_find(t->m, &id);
}

static uint32_t create_user(tm_t *t, uint32_t actor, const char *name, sl_span_t perms)
{
    return tm_code(t, SL_OP_CREATE_USER, actor, tm_body_user(t, name, SL_USER_ACTIVE, perms));
}

static sl_span_t body_update_user(tm_t *t, sl_ident_t user, const char *name, int status)
{
    sl_buf_reset(&t->body);
    sl_update_user_request_t q = {
        .user_id = user,
        .has_username = name != NULL,
        .username = sl_span_str(name),
        .has_status = status >= 0,
        .status = (uint8_t)status,
    };
    assert_int_equal(sl_update_user_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static sl_span_t body_update_permissions(tm_t *t, sl_ident_t user, sl_span_t perms)
{
    sl_buf_reset(&t->body);
    sl_update_permissions_request_t q = {
        .user_id = user, .has_permissions = perms.len > 0, .permissions = perms};
    assert_int_equal(sl_update_permissions_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static sl_span_t body_change_password(tm_t *t, sl_ident_t user, bool verified, const char *hash)
{
    sl_buf_reset(&t->body);
    sl_meta_admit_change_password_t q = {user, verified, sl_span_str(hash)};
    assert_int_equal(sl_meta_admit_change_password_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static const char digest_a[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char digest_b[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static sl_span_t body_create_pat(tm_t *t, const char *name, uint64_t expiry, const char *digest)
{
    sl_buf_reset(&t->body);
    sl_meta_admit_create_pat_t q = {sl_span_str(name), expiry, sl_span_str(digest)};
    assert_int_equal(sl_meta_admit_create_pat_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static sl_span_t body_delete_pat(tm_t *t, const char *name)
{
    sl_buf_reset(&t->body);
    sl_delete_personal_access_token_request_t q = {sl_span_str(name)};
    assert_int_equal(sl_delete_personal_access_token_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

/* --- root --------------------------------------------------------------------------------- */

static void test_root_bootstrap(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    const sl_meta_user_t *root = sl_meta_user_by_id(t.m, 0);
    assert_non_null(root);
    assert_int_equal(root->created_at, TM_ROOT_CREATED_AT);
    assert_int_equal(root->status, SL_USER_ACTIVE);
    assert_span_str(root->password_hash, "$argon2id$r");
    assert_int_equal(sl_meta_last_op(t.m), 1);

    /* GetUser for root, commands.md 13.6, from the read views. */
    sl_get_user_reply_t get = {.found = true};
    sl_meta_user_details(root, &get.user);
    sl_buf_t got;
    sl_buf_init(&got, 0);
    assert_int_equal(sl_get_user_reply_encode(&got, &get), 0);
    size_t len;
    uint8_t *want = tu_hex("00 00 00 00 01 00 00 00 00 00 00 00 01 04 69 67"
                           "67 79 00 00 00 00 01 0b 00 00 00 01 01 01 01 01"
                           "01 01 01 01 01 00",
                           &len);
    assert_bytes_equal(got.data, got.len, want, len);
    free(want);
    sl_buf_free(&got);

    assert_int_equal(sl_meta_bootstrap_root(t.m, sl_span_str("other"), sl_span_str("$h"), 5),
                     -SL_ERR_USER_ALREADY_EXISTS);

    /* The journaled form: the same entry applied by hand gives the same state. */
    tm_t j;
    tm_init_cap(&j, SL_CLIENTS_TABLE_DEFAULT);
    sl_meta_entry_t e;
    sl_buf_t body;
    sl_buf_init(&body, 0);
    assert_int_equal(sl_meta_root_entry(&body, sl_span_str("iggy"), sl_span_str("$argon2id$r"), 1,
                                        TM_ROOT_CREATED_AT, &e),
                     0);
    assert_int_equal(e.op, 1);
    assert_int_equal(e.timestamp, TM_ROOT_CREATED_AT);
    assert_int_equal(e.user_id, 0);
    assert_true(sl_u128_is_zero(e.client));
    assert_int_equal(e.operation, SL_OP_CREATE_USER);
    sl_buf_reset(&j.reply);
    assert_int_equal(sl_meta_apply(j.m, &e, &j.reply), 0);
    tm_assert_same_state(t.m, j.m);
    sl_buf_free(&body);
    tm_free(&j);

    /* The root user's created_at is the entry's timestamp, whatever it is
     * (the server passes the time of creation). */
    tm_init_cap(&j, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(
        sl_meta_bootstrap_root(j.m, sl_span_str("iggy"), sl_span_str("$h"), TM_T0 + 12345), 0);
    assert_int_equal(sl_meta_user_by_id(j.m, 0)->created_at, TM_T0 + 12345);
    tm_free(&j);

    /* A username outside 3..50 is refused like any CreateUser. */
    tm_init_cap(&j, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(sl_meta_bootstrap_root(j.m, sl_span_str("ab"), sl_span_str("$h"), 5),
                     -SL_ERR_INVALID_USERNAME);
    assert_null(sl_meta_user_by_id(j.m, 0));
    tm_free(&j);
    tm_free(&t);
}

/* --- 141 CreateUser -----------------------------------------------------------------------------
 */

/* Stream grants 5, 1 (topics 7, 3), 5 again (the later 5 wins); two flags
 * written as 2, which reads as true. */
static const char request_perms_hex[] = "00 00 00 00 00 02 00 00 00 00 01"
                                        "05 00 00 00 00 02 00 00 00 00 00 01"
                                        "01 00 00 00 01 00 00 00 00 00 01"
                                        "07 00 00 00 00 01 00 00 01"
                                        "03 00 00 00 01 00 00 00 00 01"
                                        "05 00 00 00 00 00 00 00 01 00 00 00";
/* The same set as the CreateUser reply echoes it: flags written 0/1. */
static const char echo_perms_hex[] = "00 00 00 00 00 01 00 00 00 00 01"
                                     "05 00 00 00 00 01 00 00 00 00 00 01"
                                     "01 00 00 00 01 00 00 00 00 00 01"
                                     "07 00 00 00 00 01 00 00 01"
                                     "03 00 00 00 01 00 00 00 00 01"
                                     "05 00 00 00 00 00 00 00 01 00 00 00";

static void test_create_user(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    size_t len;
    uint8_t *raw = tu_hex(request_perms_hex, &len);
    sl_reader_t pr = sl_reader(sl_span(raw, len));
    sl_span_t parsed;
    assert_true(sl_permissions_parse(&pr, &parsed));
    assert_int_equal(parsed.len, len);

    uint64_t created = t.timestamp;
    sl_span_t reply =
        tm_apply(&t, SL_OP_CREATE_USER, 0, tm_body_user(&t, "alice", 7, sl_span(raw, len)));
    sl_span_t payload;
    assert_int_equal(tm_result(reply, &payload), 0);
    sl_arena_t arena;
    sl_arena_init(&arena, 0, 0);
    sl_create_user_reply_t got;
    assert_int_equal(sl_create_user_reply_decode(payload, &arena, &got), 0);
    assert_int_equal(got.user.header.id, 1);
    assert_int_equal(got.user.header.created_at, created);
    assert_int_equal(got.user.header.status, 7); /* echoed as sent */
    assert_span_str(got.user.header.username, "alice");
    assert_true(got.user.has_permissions);

    /* Reply: request order, duplicates kept, flags 0/1. */
    sl_permissions_t echo;
    assert_true(sl_permissions_unpack(got.user.permissions, &arena, &echo));
    assert_int_equal(echo.streams_count, 3);
    assert_int_equal(echo.streams[0].stream_id, 5);
    assert_int_equal(echo.streams[1].stream_id, 1);
    assert_int_equal(echo.streams[2].stream_id, 5);
    size_t echo_len;
    uint8_t *echo_bytes = tu_hex(echo_perms_hex, &echo_len);
    assert_bytes_equal(got.user.permissions.ptr, got.user.permissions.len, echo_bytes, echo_len);
    free(echo_bytes);

    /* Stored: sorted by id, the last duplicate kept, topics sorted too. */
    const sl_meta_user_t *u = user_named(&t, "alice");
    assert_int_equal(u->status, SL_USER_ACTIVE); /* 7 is stored as active */
    assert_int_equal(u->perms.streams_count, 2);
    assert_int_equal(u->perms.streams[0].stream_id, 1);
    assert_int_equal(u->perms.streams[1].stream_id, 5);
    assert_true(u->perms.streams[1].poll_messages);
    assert_false(u->perms.streams[1].read_stream);
    assert_int_equal(u->perms.streams[0].topics_count, 2);
    assert_int_equal(u->perms.streams[0].topics[0].topic_id, 3);
    assert_int_equal(u->perms.streams[0].topics[1].topic_id, 7);
    assert_true(u->perms.read_streams);
    assert_ptr_equal(sl_meta_user_permissions(t.m, u->id), &u->perms);
    assert_true(sl_meta_allow(t.m, u->id, SL_PERM_POLL_MESSAGES, 5, 0));
    assert_false(sl_meta_allow(t.m, u->id, SL_PERM_SEND_MESSAGES, 5, 0));

    /* Inactive status is stored; a user without permissions has none. */
    assert_int_equal(tm_code(&t, SL_OP_CREATE_USER, 0, tm_body_user(&t, "bob", 2, NONE)), 0);
    assert_int_equal(user_named(&t, "bob")->status, SL_USER_INACTIVE);
    assert_false(user_named(&t, "bob")->has_permissions);
    assert_null(sl_meta_user_permissions(t.m, user_named(&t, "bob")->id));
    sl_arena_free(&arena);
    free(raw);
    tm_free(&t);
}

static void test_create_user_errors(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    uint32_t alice = user_named(&t, "alice")->id;
    assert_int_equal(create_user(&t, alice, "carol", NONE), SL_ERR_UNAUTHORIZED);
    assert_int_equal(create_user(&t, 0, "ab", NONE), SL_ERR_INVALID_USERNAME);
    char long_name[52];
    memset(long_name, 'x', 51);
    long_name[51] = 0;
    assert_int_equal(create_user(&t, 0, long_name, NONE), SL_ERR_INVALID_USERNAME);
    long_name[50] = 0;
    assert_int_equal(create_user(&t, 0, long_name, NONE), 0);
    assert_int_equal(create_user(&t, 0, "abc", NONE), 0);
    assert_int_equal(create_user(&t, 0, "alice", NONE), SL_ERR_USER_ALREADY_EXISTS);
    assert_int_equal(create_user(&t, 0, "iggy", NONE), SL_ERR_USER_ALREADY_EXISTS);
    /* A manager may create users. */
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    sl_permissions_t manager = {.manage_users = true};
    tm_ok_empty(&t, SL_OP_UPDATE_PERMISSIONS, 0,
                body_update_permissions(&t, N(alice), tm_perms(&perms, &manager)));
    assert_int_equal(create_user(&t, alice, "carol", NONE), 0);
    sl_buf_free(&perms);
    tm_free(&t);
}

static void test_user_ids_lowest_free(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    const char *names[] = {"u-1", "u-2", "u-3", "u-4"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(create_user(&t, 0, names[i], NONE), 0);
    tm_ok_empty(&t, SL_OP_DELETE_USER, 0, tm_body_user_ref(&t, N(3)));
    tm_ok_empty(&t, SL_OP_DELETE_USER, 0, tm_body_user_ref(&t, S("u-1")));
    assert_int_equal(create_user(&t, 0, "new-a", NONE), 0);
    assert_int_equal(create_user(&t, 0, "new-b", NONE), 0);
    assert_int_equal(create_user(&t, 0, "new-c", NONE), 0);
    assert_int_equal(user_named(&t, "new-a")->id, 1);
    assert_int_equal(user_named(&t, "new-b")->id, 3);
    assert_int_equal(user_named(&t, "new-c")->id, 5);
    uint32_t n = 0, prev = 0;
    for (const sl_meta_user_t *u = sl_meta_user_next(t.m, NULL); u; u = sl_meta_user_next(t.m, u)) {
        assert_true(n == 0 || u->id > prev);
        prev = u->id;
        n++;
    }
    assert_int_equal(n, 6);
    sl_meta_counts_t c;
    sl_meta_counts(t.m, &c);
    assert_int_equal(c.users, 6);
    tm_free(&t);
}

/* --- 142 UpdateUser / 143 DeleteUser / 145 UpdatePermissions -----------------------------------
 */

static void test_update_user(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    assert_int_equal(create_user(&t, 0, "bob", NONE), 0);
    uint32_t alice = user_named(&t, "alice")->id;
    /* Unauthorized callers get 41 even for a user that does not exist. */
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, alice, body_update_user(&t, N(9), "x", -1)),
                     SL_ERR_UNAUTHORIZED);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(9), "xyz", -1)),
                     SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, S("nobody"), NULL, 1)),
                     SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(alice), "al", -1)),
                     SL_ERR_INVALID_USERNAME);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(alice), "bob", -1)),
                     SL_ERR_USER_ALREADY_EXISTS);
    tm_ok_empty(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(alice), "alice", -1));
    tm_ok_empty(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, S("alice"), "alicia", 2));
    const sl_meta_user_t *u = sl_meta_user_by_id(t.m, alice);
    assert_span_str(u->username, "alicia");
    assert_int_equal(u->status, SL_USER_INACTIVE);
    assert_null(user_named(&t, "alice"));
    /* Status values other than 1/2 leave it unchanged. */
    tm_ok_empty(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(alice), NULL, 3));
    assert_int_equal(u->status, SL_USER_INACTIVE);
    tm_ok_empty(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(alice), NULL, 1));
    assert_int_equal(u->status, SL_USER_ACTIVE);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    tm_free(&t);
}

/* Only root may rename root or set it inactive; a manager could otherwise
 * lock root out (the reference guards only delete and permissions). */
static void test_update_root_user(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "manager", NONE), 0);
    uint32_t manager = user_named(&t, "manager")->id;
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    sl_permissions_t manage = {.manage_users = true};
    tm_ok_empty(&t, SL_OP_UPDATE_PERMISSIONS, 0,
                body_update_permissions(&t, N(manager), tm_perms(&perms, &manage)));
    const sl_meta_user_t *root = sl_meta_user_by_id(t.m, 0);
    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_USER, manager, body_update_user(&t, N(0), "owned", -1)),
        SL_ERR_UNAUTHORIZED);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, manager,
                             body_update_user(&t, S("iggy"), NULL, SL_USER_INACTIVE)),
                     SL_ERR_UNAUTHORIZED);
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, manager,
                             body_update_user(&t, N(0), "owned", SL_USER_ACTIVE)),
                     SL_ERR_UNAUTHORIZED);
    /* Refused before the name's own rules: a manager learns nothing more. */
    assert_int_equal(tm_code(&t, SL_OP_UPDATE_USER, manager, body_update_user(&t, N(0), "x", -1)),
                     SL_ERR_UNAUTHORIZED);
    assert_span_str(root->username, "iggy");
    assert_int_equal(root->status, SL_USER_ACTIVE);
    /* Harmless updates stay open: the same name, the active status. */
    tm_ok_empty(&t, SL_OP_UPDATE_USER, manager, body_update_user(&t, N(0), "iggy", SL_USER_ACTIVE));
    /* Root may do both to itself; a manager may then reactivate it. */
    tm_ok_empty(&t, SL_OP_UPDATE_USER, 0, body_update_user(&t, N(0), "admin", SL_USER_INACTIVE));
    assert_span_str(root->username, "admin");
    assert_int_equal(root->status, SL_USER_INACTIVE);
    tm_ok_empty(&t, SL_OP_UPDATE_USER, manager, body_update_user(&t, N(0), NULL, SL_USER_ACTIVE));
    assert_int_equal(root->status, SL_USER_ACTIVE);
    /* Other users stay the manager's to change. */
    assert_int_equal(create_user(&t, 0, "other", NONE), 0);
    tm_ok_empty(&t, SL_OP_UPDATE_USER, manager,
                body_update_user(&t, S("other"), "renamed", SL_USER_INACTIVE));
    sl_buf_free(&perms);
    tm_free(&t);
}

static void test_delete_user(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    uint32_t alice = user_named(&t, "alice")->id;
    assert_int_equal(tm_code(&t, SL_OP_DELETE_USER, alice, tm_body_user_ref(&t, N(77))),
                     SL_ERR_UNAUTHORIZED);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_USER, 0, tm_body_user_ref(&t, N(77))),
                     SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_USER, 0, tm_body_user_ref(&t, N(0))),
                     SL_ERR_CANNOT_DELETE_USER);
    assert_int_equal(tm_code(&t, SL_OP_DELETE_USER, 0, tm_body_user_ref(&t, S("iggy"))),
                     SL_ERR_CANNOT_DELETE_USER);
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                             body_create_pat(&t, "tok", 0, digest_a)),
                     0);
    tm_ok_empty(&t, SL_OP_DELETE_USER, 0, tm_body_user_ref(&t, S("alice")));
    assert_null(sl_meta_user_by_id(t.m, alice));
    const sl_meta_user_t *owner;
    assert_null(sl_meta_token_by_digest(t.m, sl_span_str(digest_a), &owner));
    /* The deleted user acts no more. */
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                             body_create_pat(&t, "tok", 0, digest_a)),
                     SL_ERR_RESOURCE_NOT_FOUND);
    tm_free(&t);
}

static void test_update_permissions(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    uint32_t alice = user_named(&t, "alice")->id;
    sl_buf_t perms;
    sl_buf_init(&perms, 0);
    sl_topic_perms_t topics[] = {{.topic_id = 9, .send_messages = true},
                                 {.topic_id = 2, .read_topic = true}};
    sl_stream_perms_t streams[] = {{.stream_id = 3, .topics_count = 2, .topics = topics}};
    sl_permissions_t p = {.read_users = true, .streams_count = 1, .streams = streams};
    sl_span_t raw = tm_perms(&perms, &p);

    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_PERMISSIONS, alice, body_update_permissions(&t, N(alice), raw)),
        SL_ERR_UNAUTHORIZED);
    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_PERMISSIONS, 0, body_update_permissions(&t, N(50), raw)),
        SL_ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(
        tm_code(&t, SL_OP_UPDATE_PERMISSIONS, 0, body_update_permissions(&t, N(0), raw)),
        SL_ERR_CANNOT_CHANGE_PERMISSIONS);
    tm_ok_empty(&t, SL_OP_UPDATE_PERMISSIONS, 0, body_update_permissions(&t, S("alice"), raw));
    const sl_meta_user_t *u = sl_meta_user_by_id(t.m, alice);
    assert_true(u->has_permissions);
    assert_int_equal(u->perms.streams[0].topics[0].topic_id, 2);
    assert_true(sl_meta_allow(t.m, alice, SL_PERM_SEND_MESSAGES, 3, 9));
    assert_false(sl_meta_allow(t.m, alice, SL_PERM_SEND_MESSAGES, 3, 2));
    assert_true(sl_meta_allow(t.m, alice, SL_PERM_READ_USERS, 0, 0));
    /* GetUser returns the stored (sorted) set. */
    sl_user_details_t d;
    sl_meta_user_details(u, &d);
    assert_true(d.has_permissions);
    assert_span_equal(d.permissions, u->permissions);
    assert_int_equal(d.permissions.len, raw.len);

    /* A flag other than 1 clears the set. */
    tm_ok_empty(&t, SL_OP_UPDATE_PERMISSIONS, 0, body_update_permissions(&t, N(alice), NONE));
    assert_false(u->has_permissions);
    assert_false(sl_meta_allow(t.m, alice, SL_PERM_READ_USERS, 0, 0));
    sl_buf_free(&perms);
    tm_free(&t);
}

/* --- 144 ChangePassword -------------------------------------------------------------------------
 */

static void test_change_password(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    assert_int_equal(create_user(&t, 0, "bob", NONE), 0);
    uint32_t alice = user_named(&t, "alice")->id;
    /* Own password: no permission needed. */
    tm_ok_empty(&t, SL_OP_CHANGE_PASSWORD, alice,
                body_change_password(&t, N(alice), true, "$argon2id$new"));
    assert_span_str(user_named(&t, "alice")->password_hash, "$argon2id$new");
    /* Someone else's: manage_users (41), after the target resolved (20). */
    assert_int_equal(
        tm_code(&t, SL_OP_CHANGE_PASSWORD, alice, body_change_password(&t, S("bob"), true, "$x")),
        SL_ERR_UNAUTHORIZED);
    assert_int_equal(tm_code(&t, SL_OP_CHANGE_PASSWORD, alice,
                             body_change_password(&t, S("nobody"), true, "$x")),
                     SL_ERR_RESOURCE_NOT_FOUND);
    /* A wrong current password is committed as 42 and changes nothing. */
    assert_int_equal(tm_code(&t, SL_OP_CHANGE_PASSWORD, alice,
                             body_change_password(&t, N(alice), false, "$argon2id$bad")),
                     SL_ERR_INVALID_CREDENTIALS);
    assert_span_str(user_named(&t, "alice")->password_hash, "$argon2id$new");
    tm_ok_empty(&t, SL_OP_CHANGE_PASSWORD, 0, body_change_password(&t, S("bob"), true, "$root"));
    assert_span_str(user_named(&t, "bob")->password_hash, "$root");
    tm_free(&t);
}

/* --- 146 / 147 personal access tokens ------------------------------------------------------------
 */

static void test_personal_access_tokens(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    assert_int_equal(create_user(&t, 0, "alice", NONE), 0);
    uint32_t alice = user_named(&t, "alice")->id;
    const sl_meta_user_t *u = user_named(&t, "alice");

    /* Success: only the count; the server appends the raw token. */
    uint64_t ts = t.timestamp;
    tm_ok_empty(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                body_create_pat(&t, "zeta", 60000000, digest_a));
    assert_int_equal(u->tokens_count, 1);
    assert_int_equal(sl_meta_token_find(u, sl_span_str("zeta"))->expiry_at, ts + 60000000);
    /* 0 and u64::MAX never expire. */
    tm_ok_empty(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                body_create_pat(&t, "alpha", 0, digest_b));
    tm_ok_empty(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                body_create_pat(&t, "mid", UINT64_MAX, digest_b));
    assert_int_equal(sl_meta_token_find(u, sl_span_str("alpha"))->expiry_at, 0);
    assert_int_equal(sl_meta_token_find(u, sl_span_str("mid"))->expiry_at, 0);
    /* Sorted by name for GetPersonalAccessTokens; the count is what the
     * server checks against the cap (status 52) at admission. */
    assert_int_equal(sl_meta_user_tokens_count(t.m, alice), 3);
    assert_int_equal(sl_meta_user_tokens_count(t.m, 99), 0);
    assert_span_str(u->tokens[0].name, "alpha");
    assert_span_str(u->tokens[1].name, "mid");
    assert_span_str(u->tokens[2].name, "zeta");

    assert_int_equal(tm_code(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                             body_create_pat(&t, "zeta", 5, digest_b)),
                     SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS);
    /* commit time + expiry wraps: 56. */
    assert_int_equal(tm_code(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, alice,
                             body_create_pat(&t, "wrap", UINT64_MAX - 1, digest_b)),
                     SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN_EXPIRY);
    /* Another user may use the same name. */
    tm_ok_empty(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, 0,
                body_create_pat(&t, "zeta", 0, digest_b));

    const sl_meta_user_t *owner;
    const sl_meta_token_t *tok = sl_meta_token_by_digest(t.m, sl_span_str(digest_a), &owner);
    assert_non_null(tok);
    assert_ptr_equal(owner, u);
    assert_span_str(tok->name, "zeta");
    assert_null(sl_meta_token_by_digest(t.m, sl_span_str("abc"), &owner));

    assert_int_equal(
        tm_code(&t, SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, alice, body_delete_pat(&t, "nope")),
        SL_ERR_RESOURCE_NOT_FOUND);
    tm_ok_empty(&t, SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, alice, body_delete_pat(&t, "mid"));
    assert_int_equal(u->tokens_count, 2);
    assert_null(sl_meta_token_find(u, sl_span_str("mid")));
    assert_int_equal(
        tm_code(&t, SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, alice, body_delete_pat(&t, "mid")),
        SL_ERR_RESOURCE_NOT_FOUND);
    /* Root's token is its own: deleting by name from alice does not reach it. */
    tm_ok_empty(&t, SL_OP_DELETE_PERSONAL_ACCESS_TOKEN, alice, body_delete_pat(&t, "zeta"));
    assert_non_null(sl_meta_token_find(sl_meta_user_by_id(t.m, 0), sl_span_str("zeta")));
    tm_free(&t);
}

static void test_pat_replay_preflight(void **state)
{
    (void)state;
    tm_t t;
    tm_init(&t);
    sl_u128_t client = tm_client(1);
    uint64_t session = tm_register(&t, client, 0);
    sl_u128_t stamp = {0x1234, 0};
    tm_apply_full(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, client, 1, stamp, 0,
                  body_create_pat(&t, "tok", 0, digest_a));
    const sl_meta_reply_t *cached;
    assert_int_equal(sl_meta_preflight(t.m, client, session, 1, stamp, &cached),
                     SL_META_PREFLIGHT_PAT_REPLAY);
    assert_null(cached);
    /* A rejected CreatePersonalAccessToken is an ordinary cached reply. */
    sl_span_t reply = tm_apply_full(&t, SL_OP_CREATE_PERSONAL_ACCESS_TOKEN, client, 2, stamp, 0,
                                    body_create_pat(&t, "tok", 0, digest_a));
    assert_int_equal(tm_result(reply, NULL), SL_ERR_PERSONAL_ACCESS_TOKEN_ALREADY_EXISTS);
    assert_int_equal(sl_meta_preflight(t.m, client, session, 2, stamp, &cached),
                     SL_META_PREFLIGHT_CACHED);
    assert_span_equal(cached->body, reply);
    tm_free(&t);
}

/* --- admitted bodies
 * ------------------------------------------------------------------------------ */

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (n)
        memcpy(d, p, n);
    return d;
}

static void test_admit_change_password(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_meta_admit_change_password_t in = {S("alice"), true, sl_span_str("$argon2id$v=19$x")};
    assert_int_equal(sl_meta_admit_change_password_encode(&b, &in), 0);
    size_t len;
    uint8_t *want = tu_hex("02 05 61 6c 69 63 65 01 10 24 61 72 67 6f 6e 32 69 64 24 76 3d 31 39 "
                           "24 78",
                           &len);
    assert_bytes_equal(b.data, b.len, want, len);
    sl_meta_admit_change_password_t out;
    assert_int_equal(sl_meta_admit_change_password_decode(sl_buf_span(&b), &out), 0);
    assert_true(sl_ident_eq(&out.user_id, &in.user_id));
    assert_true(out.verified);
    assert_span_equal(out.new_hash, in.new_hash);
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *cut = dup_bytes(b.data, n);
        assert_int_equal(sl_meta_admit_change_password_decode(sl_span(cut, n), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(cut);
    }
    want[7] = 2; /* verified must be 0 or 1 */
    assert_int_equal(sl_meta_admit_change_password_decode(sl_span(want, len), &out),
                     -SL_ERR_INVALID_COMMAND);
    want[7] = 0;
    assert_int_equal(sl_meta_admit_change_password_decode(sl_span(want, len), &out), 0);
    assert_false(out.verified);
    sl_put_u8(&b, 0); /* trailing bytes */
    assert_int_equal(sl_meta_admit_change_password_decode(sl_buf_span(&b), &out),
                     -SL_ERR_INVALID_COMMAND);
    free(want);
    sl_buf_free(&b);
}

static void test_admit_create_pat(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_meta_admit_create_pat_t in = {sl_span_str("ci"), 1000, sl_span_str(digest_b)};
    assert_int_equal(sl_meta_admit_create_pat_encode(&b, &in), 0);
    assert_int_equal(b.len, 1 + 2 + 8 + 1 + 64);
    assert_int_equal(b.data[11], 64);
    sl_meta_admit_create_pat_t out;
    assert_int_equal(sl_meta_admit_create_pat_decode(sl_buf_span(&b), &out), 0);
    assert_span_str(out.name, "ci");
    assert_int_equal(out.expiry_us, 1000);
    assert_span_str(out.digest, digest_b);
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *cut = dup_bytes(b.data, n);
        assert_int_equal(sl_meta_admit_create_pat_decode(sl_span(cut, n), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(cut);
    }
    /* Digests are 64 lowercase hex characters. */
    uint8_t *bad = dup_bytes(b.data, b.len);
    bad[12] = 'A';
    assert_int_equal(sl_meta_admit_create_pat_decode(sl_span(bad, b.len), &out),
                     -SL_ERR_INVALID_COMMAND);
    free(bad);
    sl_meta_admit_create_pat_t short_digest = {sl_span_str("ci"), 0, sl_span_str("abc")};
    sl_buf_reset(&b);
    assert_int_equal(sl_meta_admit_create_pat_encode(&b, &short_digest), -SL_ERR_INVALID_COMMAND);
    sl_meta_admit_create_pat_t empty_name = {sl_span_str(""), 0, sl_span_str(digest_a)};
    sl_buf_reset(&b);
    assert_int_equal(sl_meta_admit_create_pat_encode(&b, &empty_name), -SL_ERR_INVALID_COMMAND);
    sl_buf_free(&b);
}

static void test_admit_register(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_meta_admit_register_t in = {7, {0x2C00, sl_span_str("node-sdk"), sl_span_str("1.2")}};
    assert_int_equal(sl_meta_admit_register_encode(&b, &in), 0);
    size_t len;
    uint8_t *want = tu_hex("07 00 00 00 00 2c 00 00 08 6e 6f 64 65 2d 73 64 6b 03 31 2e 32", &len);
    assert_bytes_equal(b.data, b.len, want, len);
    sl_meta_admit_register_t out;
    assert_int_equal(sl_meta_admit_register_decode(sl_buf_span(&b), &out), 0);
    assert_int_equal(out.user_id, 7);
    assert_int_equal(out.version.protocol_version, 0x2C00);
    assert_span_str(out.version.sdk_name, "node-sdk");
    assert_span_str(out.version.sdk_version, "1.2");
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *cut = dup_bytes(b.data, n);
        assert_int_equal(sl_meta_admit_register_decode(sl_span(cut, n), &out),
                         -SL_ERR_INVALID_COMMAND);
        free(cut);
    }
    want[8] = 0; /* an empty Name */
    assert_int_equal(sl_meta_admit_register_decode(sl_span(want, len), &out),
                     -SL_ERR_INVALID_COMMAND);
    want[8] = 8;
    want[9] = 0xff; /* invalid UTF-8 */
    assert_int_equal(sl_meta_admit_register_decode(sl_span(want, len), &out),
                     -SL_ERR_INVALID_COMMAND);
    free(want);
    sl_buf_free(&b);
}

static void test_admit_create_user(void **state)
{
    (void)state;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_create_user_request_t req = {
        .username = sl_span_str("alice"), .password = sl_span_str("secret"), .status = 1};
    assert_int_equal(sl_meta_admit_create_user_encode(&b, &req, sl_span_str("$argon2id$h")), 0);
    size_t len;
    uint8_t *want = tu_hex("05 61 6c 69 63 65 0b 24 61 72 67 6f 6e 32 69 64 24 68 01 00", &len);
    assert_bytes_equal(b.data, b.len, want, len);
    sl_create_user_request_t out;
    assert_int_equal(sl_create_user_request_decode(sl_buf_span(&b), &out), 0);
    assert_span_str(out.password, "$argon2id$h");
    sl_buf_reset(&b);
    assert_int_equal(sl_meta_admit_create_user_encode(&b, &req, NONE), -SL_ERR_INVALID_COMMAND);
    free(want);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_bootstrap),
        cmocka_unit_test(test_create_user),
        cmocka_unit_test(test_create_user_errors),
        cmocka_unit_test(test_user_ids_lowest_free),
        cmocka_unit_test(test_update_user),
        cmocka_unit_test(test_update_root_user),
        cmocka_unit_test(test_delete_user),
        cmocka_unit_test(test_update_permissions),
        cmocka_unit_test(test_change_password),
        cmocka_unit_test(test_personal_access_tokens),
        cmocka_unit_test(test_pat_replay_preflight),
        cmocka_unit_test(test_admit_change_password),
        cmocka_unit_test(test_admit_create_pat),
        cmocka_unit_test(test_admit_register),
        cmocka_unit_test(test_admit_create_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
