/* User, login and token codecs (wire/cmd_users.h): the golden bytes of
 * commands.md 13.6 (GetUser root, LoginRegister success), the login vector
 * b, the permissions.md example inside CreateUser, round trips of every
 * request and reply, and hostile input for every decoder. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cmd_users.h"
#include "wire/perms.h"

/* --- helpers ------------------------------------------------------------------ */

static sl_arena_t arena;

static int setup(void **state)
{
    (void)state;
    sl_arena_init(&arena, 4096, 1u << 20);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_arena_free(&arena);
    return 0;
}

/* An exactly-sized heap copy, so ASan sees any read past the end. */
static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    assert_non_null(c);
    if (n)
        memcpy(c, p, n);
    return c;
}

/* A copy of bytes with byte `at` replaced. */
static uint8_t *patched(const uint8_t *bytes, size_t n, size_t at, uint8_t v)
{
    uint8_t *c = dup_bytes(bytes, n);
    assert_true(at < n);
    c[at] = v;
    return c;
}

static sl_span_t S(const char *s)
{
    return sl_span_str(s);
}

/* Every proper prefix of a request body gives `code`. */
#define ASSERT_REQUEST_PREFIXES(fn, type, bytes, n, code)                                          \
    for (size_t cut_ = 0; cut_ < (n); cut_++) {                                                    \
        uint8_t *c_ = dup_bytes((bytes), cut_);                                                    \
        type o_;                                                                                   \
        assert_int_equal(fn(sl_span(c_, cut_), &o_), (code));                                      \
        free(c_);                                                                                  \
    }

/* The body with byte `at` set to v gives `code`. */
#define ASSERT_REQUEST_PATCH(fn, type, bytes, n, at, v, code)                                      \
    do {                                                                                           \
        uint8_t *c_ = patched((bytes), (n), (at), (v));                                            \
        type o_;                                                                                   \
        assert_int_equal(fn(sl_span(c_, (n)), &o_), (code));                                       \
        free(c_);                                                                                  \
    } while (0)

/* The body followed by junk still decodes (fixed-shape requests). */
#define ASSERT_REQUEST_TRAILING_OK(fn, type, bytes, n)                                             \
    do {                                                                                           \
        uint8_t *l_ = malloc((n) + 3);                                                             \
        memcpy(l_, (bytes), (n));                                                                  \
        memcpy(l_ + (n), "\xff\x00\x01", 3);                                                       \
        type o_;                                                                                   \
        assert_int_equal(fn(sl_span(l_, (n) + 3), &o_), 0);                                        \
        free(l_);                                                                                  \
    } while (0)

/* Every proper prefix of a reply payload, and the payload plus one byte,
 * gives -SL_ERR_INVALID_FORMAT. */
#define ASSERT_REPLY_PREFIXES(fn, type, bytes, n, first)                                           \
    do {                                                                                           \
        for (size_t cut_ = (first); cut_ < (n); cut_++) {                                          \
            uint8_t *c_ = dup_bytes((bytes), cut_);                                                \
            type o_;                                                                               \
            assert_int_equal(fn(sl_span(c_, cut_), &arena, &o_), -SL_ERR_INVALID_FORMAT);          \
            free(c_);                                                                              \
        }                                                                                          \
        uint8_t *l_ = malloc((n) + 1);                                                             \
        memcpy(l_, (bytes), (n));                                                                  \
        l_[(n)] = 0;                                                                               \
        type o2_;                                                                                  \
        assert_int_equal(fn(sl_span(l_, (n) + 1), &arena, &o2_), -SL_ERR_INVALID_FORMAT);          \
        free(l_);                                                                                  \
    } while (0)

#define ASSERT_REPLY_PATCH(fn, type, bytes, n, at, v)                                              \
    do {                                                                                           \
        uint8_t *c_ = patched((bytes), (n), (at), (v));                                            \
        type o_;                                                                                   \
        assert_int_equal(fn(sl_span(c_, (n)), &arena, &o_), -SL_ERR_INVALID_FORMAT);               \
        free(c_);                                                                                  \
    } while (0)

/* Encodes with fn into a fresh buffer and checks it against want. */
#define ASSERT_ENCODES(fn, value, want, want_len)                                                  \
    do {                                                                                           \
        sl_buf_t e_;                                                                               \
        sl_buf_init(&e_, 0);                                                                       \
        assert_int_equal(fn(&e_, (value)), 0);                                                     \
        assert_bytes_equal(e_.data, e_.len, (want), (want_len));                                   \
        sl_buf_free(&e_);                                                                          \
    } while (0)

#define ASSERT_ENCODE_FAILS(fn, value)                                                             \
    do {                                                                                           \
        sl_buf_t e_;                                                                               \
        sl_buf_init(&e_, 0);                                                                       \
        assert_int_equal(fn(&e_, (value)), -SL_ERR_INVALID_COMMAND);                               \
        sl_buf_free(&e_);                                                                          \
    } while (0)

static void assert_ident_equal(const sl_ident_t *a, const sl_ident_t *b)
{
    assert_true(sl_ident_eq(a, b));
}

/* The example of permissions.md 1 (32 bytes). */
static const char perms_example_hex[] = "00 00 00 00 00 01 00 00 00 00 01 01 00 00 00 00"
                                        "01 00 00 01 00 01 02 00 00 00 00 01 00 00 00 00";

/* The root set: all ten global flags, no streams (11 bytes). */
static const uint8_t root_perms[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};

/* --- UserDetails: GetUser ------------------------------------------------------ */

static const char get_user_root_hex[] = "00 00 00 00 01 00 00 00 00 00 00 00 01 04 69 67"
                                        "67 79 00 00 00 00 01 0b 00 00 00 01 01 01 01 01"
                                        "01 01 01 01 01 00";

static void test_get_user_root_golden(void **state)
{
    (void)state;
    size_t n;
    uint8_t *want = tu_hex(get_user_root_hex, &n);
    assert_int_equal(n, 38);

    /* The encoder builds it from the root permission set. */
    sl_buf_t p;
    sl_buf_init(&p, 0);
    sl_permissions_t root = sl_permissions_root();
    assert_true(sl_permissions_encode(&p, &root));
    assert_bytes_equal(p.data, p.len, root_perms, sizeof(root_perms));
    sl_get_user_reply_t r = {true, {{0, 1, SL_USER_ACTIVE, S("iggy"), {0}}, true, sl_buf_span(&p)}};
    ASSERT_ENCODES(sl_get_user_reply_encode, &r, want, n);

    uint8_t *c = dup_bytes(want, n);
    sl_get_user_reply_t d;
    assert_int_equal(sl_get_user_reply_decode(sl_span(c, n), &arena, &d), 0);
    assert_true(d.found);
    assert_int_equal(d.user.header.id, 0);
    assert_int_equal(d.user.header.created_at, 1);
    assert_int_equal(d.user.header.status, SL_USER_ACTIVE);
    assert_span_str(d.user.header.username, "iggy");
    assert_int_equal(d.user.header.options.len, 0);
    assert_true(d.user.has_permissions);
    sl_permissions_t u;
    assert_true(sl_permissions_unpack(d.user.permissions, &arena, &u));
    assert_true(u.manage_servers && u.read_servers && u.manage_users && u.read_users &&
                u.manage_streams && u.read_streams && u.manage_topics && u.read_topics &&
                u.poll_messages && u.send_messages);
    assert_int_equal(u.streams_count, 0);
    free(c);
    sl_buf_free(&p);
    free(want);
}

static void test_get_user_reply_shapes(void **state)
{
    (void)state;
    sl_get_user_reply_t d = {.found = true};
    /* Not found. */
    assert_int_equal(sl_get_user_reply_decode(sl_span(NULL, 0), &arena, &d), 0);
    assert_false(d.found);
    sl_get_user_reply_t none = {.found = false};
    ASSERT_ENCODES(sl_get_user_reply_encode, &none, "", 0);

    /* No permissions: the tail is 00 00 00 00; the 3 bytes after a 0 flag
     * are skipped whatever they hold. */
    size_t n;
    uint8_t *v = tu_hex("07 00 00 00 00 40 1e 18 24 0a 06 00 02 03 62 6f 62 00 00 00 00"
                        "00 00 00 00",
                        &n);
    sl_get_user_reply_t r = {
        true, {{7, 1700000000000000ull, SL_USER_INACTIVE, S("bob"), {0}}, false, {0}}};
    ASSERT_ENCODES(sl_get_user_reply_encode, &r, v, n);
    uint8_t *c = dup_bytes(v, n);
    assert_int_equal(sl_get_user_reply_decode(sl_span(c, n), &arena, &d), 0);
    assert_true(d.found);
    assert_int_equal(d.user.header.id, 7);
    assert_int_equal(d.user.header.created_at, 1700000000000000ull);
    assert_int_equal(d.user.header.status, SL_USER_INACTIVE);
    assert_span_str(d.user.header.username, "bob");
    assert_false(d.user.has_permissions);
    c[n - 3] = 0xaa;
    c[n - 1] = 0x55;
    assert_int_equal(sl_get_user_reply_decode(sl_span(c, n), &arena, &d), 0);
    assert_false(d.user.has_permissions);
    /* Any non-zero flag means a length and a set follow. */
    c[n - 4] = 2;
    assert_int_equal(sl_get_user_reply_decode(sl_span(c, n), &arena, &d), -SL_ERR_INVALID_FORMAT);
    free(c);
    free(v);

    uint8_t *w = tu_hex(get_user_root_hex, &n);
    c = patched(w, n, 22, 0x02);
    assert_int_equal(sl_get_user_reply_decode(sl_span(c, n), &arena, &d), 0);
    assert_true(d.user.has_permissions);
    assert_bytes_equal(d.user.permissions.ptr, d.user.permissions.len, root_perms, 11);
    free(c);
    free(w);
}

static void test_get_user_reply_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_hex(get_user_root_hex, &n);
    /* Length 0 is "not found"; every other prefix is malformed. */
    ASSERT_REPLY_PREFIXES(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 1);
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 13, 0); /* name 0 */
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 14, 0xff);
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 13, 0x40);
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 18, 0x05);
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 23, 10); /* len < set */
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 23, 12); /* len > set */
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 26, 1);  /* huge len */
    ASSERT_REPLY_PATCH(sl_get_user_reply_decode, sl_get_user_reply_t, v, n, 37,
                       1); /* has_streams */

    /* A length prefix that covers the set plus one byte. */
    uint8_t *c = malloc(n + 1);
    memcpy(c, v, n);
    c[n] = 0;
    c[23] = 12;
    sl_get_user_reply_t d;
    assert_int_equal(sl_get_user_reply_decode(sl_span(c, n + 1), &arena, &d),
                     -SL_ERR_INVALID_FORMAT);
    free(c);

    /* Encoder: no username, a permission span that is not one set. */
    sl_get_user_reply_t r = {true, {{0, 1, 1, S(""), {0}}, false, {0}}};
    ASSERT_ENCODE_FAILS(sl_get_user_reply_encode, &r);
    r.user.header.username = S("iggy");
    r.user.has_permissions = true;
    r.user.permissions = sl_span(root_perms, 10);
    ASSERT_ENCODE_FAILS(sl_get_user_reply_encode, &r);
    r.user.permissions = sl_span(NULL, 0);
    ASSERT_ENCODE_FAILS(sl_get_user_reply_encode, &r);
    free(v);
}

/* The options.md golden block, as found in a reply header behind a u32. */
static const char options_block_hex[] = "02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79"
                                        "6e 63 03 01 00 00 00 01 02 0c 00 00 00 73 65 67"
                                        "6d 65 6e 74 5f 73 69 7a 65 0c 08 00 00 00 00 00"
                                        "00 40 00 00 00 00";

static void test_get_users_reply(void **state)
{
    (void)state;
    size_t olen;
    uint8_t *opts = tu_hex(options_block_hex, &olen);
    assert_int_equal(olen, 54);
    sl_user_header_t items[3] = {
        {0, 1, SL_USER_ACTIVE, S("iggy"), {0}},
        {1, 1700000000000000ull, SL_USER_INACTIVE, S("alice"), sl_span(opts, olen)},
        {2, 5, 9, S("\xc3\xa9ve"), {0}},
    };
    sl_get_users_reply_t r = {3, items}, d;
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_get_users_reply_encode(&b, &r), 0);
    const size_t sizes[3] = {13 + 5 + 4, 13 + 6 + 4 + 54, 13 + 5 + 4};
    assert_int_equal(b.len, sizes[0] + sizes[1] + sizes[2]);
    assert_int_equal(sl_load_u32(b.data + sizes[0] + 19), 54); /* options_len */
    uint8_t *c = dup_bytes(b.data, b.len);
    assert_int_equal(sl_get_users_reply_decode(sl_span(c, b.len), &arena, &d), 0);
    assert_int_equal(d.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.items[i].id, items[i].id);
        assert_int_equal(d.items[i].created_at, items[i].created_at);
        assert_int_equal(d.items[i].status, items[i].status);
        assert_span_equal(d.items[i].username, items[i].username);
        assert_span_equal(d.items[i].options, items[i].options);
    }
    assert_int_equal(sl_get_users_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    free(c);

    /* Empty payload: no users. Truncation decodes only at element bounds. */
    assert_int_equal(sl_get_users_reply_decode(sl_span(NULL, 0), &arena, &d), 0);
    assert_int_equal(d.count, 0);
    for (size_t cut = 1; cut < b.len; cut++) {
        int want = (cut == sizes[0] || cut == sizes[0] + sizes[1]) ? 0 : -SL_ERR_INVALID_FORMAT;
        c = dup_bytes(b.data, cut);
        assert_int_equal(sl_get_users_reply_decode(sl_span(c, cut), &arena, &d), want);
        if (want == 0)
            assert_int_equal(d.count, cut == sizes[0] ? 1 : 2);
        free(c);
    }
    /* Bad options inside the second header: key kind, odd field, bad UTF-8 key. */
    size_t o = sizes[0] + 23;
    ASSERT_REPLY_PATCH(sl_get_users_reply_decode, sl_get_users_reply_t, b.data, b.len, o, 3);
    ASSERT_REPLY_PATCH(sl_get_users_reply_decode, sl_get_users_reply_t, b.data, b.len, o + 5, 0xff);
    ASSERT_REPLY_PATCH(sl_get_users_reply_decode, sl_get_users_reply_t, b.data, b.len, o - 4,
                       54 - 28);
    ASSERT_REPLY_PATCH(sl_get_users_reply_decode, sl_get_users_reply_t, b.data, b.len, o - 3, 1);
    /* Zero-length and bad UTF-8 usernames. */
    ASSERT_REPLY_PATCH(sl_get_users_reply_decode, sl_get_users_reply_t, b.data, b.len, 13, 0);
    ASSERT_REPLY_PATCH(sl_get_users_reply_decode, sl_get_users_reply_t, b.data, b.len,
                       sizes[0] + sizes[1] + 15, 0x28);

    /* The encoder refuses a structurally bad options block. */
    items[1].options = sl_span(opts, olen - 1);
    ASSERT_ENCODE_FAILS(sl_get_users_reply_encode, &r);
    sl_buf_free(&b);
    sl_buf_free(&b2);
    free(opts);
}

/* --- requests naming a user: GetUser, DeleteUser -------------------------------------- */

static void check_ident_request(int (*decode)(sl_span_t, sl_ident_t *),
                                int (*encode)(sl_buf_t *, const sl_ident_t *))
{
    const sl_ident_t ids[] = {sl_ident_number(42), sl_ident_name("alice")};
    const char *wants[] = {"01 04 2a 00 00 00", "02 05 61 6c 69 63 65"};
    for (int i = 0; i < 2; i++) {
        size_t n;
        uint8_t *want = tu_hex(wants[i], &n);
        ASSERT_ENCODES(encode, &ids[i], want, n);
        sl_ident_t d;
        assert_int_equal(decode(sl_span(want, n), &d), 0);
        assert_ident_equal(&d, &ids[i]);
        ASSERT_REQUEST_PREFIXES(decode, sl_ident_t, want, n, -SL_ERR_INVALID_COMMAND);
        ASSERT_REQUEST_TRAILING_OK(decode, sl_ident_t, want, n);
        ASSERT_REQUEST_PATCH(decode, sl_ident_t, want, n, 0, 0, -SL_ERR_INVALID_COMMAND);
        ASSERT_REQUEST_PATCH(decode, sl_ident_t, want, n, 0, 3, -SL_ERR_INVALID_COMMAND);
        free(want);
    }
    const uint8_t bad[][7] = {
        {1, 3, 1, 2, 3},           /* numeric of length 3 */
        {2, 0, 'a'},               /* zero-length name */
        {2, 2, 0xc3, 0x28},        /* bad UTF-8 */
        {2, 5, 'a', 'b', 'c', 'd'} /* name longer than the body */
    };
    const size_t lens[] = {5, 3, 4, 6};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint8_t *c = dup_bytes(bad[i], lens[i]);
        sl_ident_t d;
        assert_int_equal(decode(sl_span(c, lens[i]), &d), -SL_ERR_INVALID_COMMAND);
        free(c);
    }
    sl_ident_t empty = {.kind = SL_IDENT_STRING};
    ASSERT_ENCODE_FAILS(encode, &empty);
}

/* Adapters: the request structs hold just the identifier. */
static int get_user_decode(sl_span_t body, sl_ident_t *out)
{
    sl_get_user_request_t q;
    int rc = sl_get_user_request_decode(body, &q);
    *out = q.user_id;
    return rc;
}
static int get_user_encode(sl_buf_t *b, const sl_ident_t *id)
{
    return sl_get_user_request_encode(b, &(sl_get_user_request_t){*id});
}
static int delete_user_decode(sl_span_t body, sl_ident_t *out)
{
    sl_delete_user_request_t q;
    int rc = sl_delete_user_request_decode(body, &q);
    *out = q.user_id;
    return rc;
}
static int delete_user_encode(sl_buf_t *b, const sl_ident_t *id)
{
    return sl_delete_user_request_encode(b, &(sl_delete_user_request_t){*id});
}

static void test_ident_requests(void **state)
{
    (void)state;
    check_ident_request(get_user_decode, get_user_encode);
    check_ident_request(delete_user_decode, delete_user_encode);
}

/* --- empty replies and requests ------------------------------------------------------- */

static void test_empty_bodies(void **state)
{
    (void)state;
    const uint8_t junk[] = {1, 2, 3};
    sl_empty_t e;
    /* Requests without a body ignore any bytes. */
    assert_int_equal(sl_get_users_request_decode(sl_span(junk, 3), &e), 0);
    assert_int_equal(sl_logout_user_request_decode(sl_span(junk, 3), &e), 0);
    assert_int_equal(sl_get_personal_access_tokens_request_decode(sl_span(junk, 3), &e), 0);
    ASSERT_ENCODES(sl_logout_user_request_encode, &e, "", 0);
    ASSERT_ENCODES(sl_get_users_request_encode, &e, "", 0);
    ASSERT_ENCODES(sl_get_personal_access_tokens_request_encode, &e, "", 0);

    /* Payload-less replies (after the result section) must be empty. */
    int (*decoders[])(sl_span_t, sl_arena_t *, sl_empty_t *) = {
        sl_delete_user_reply_decode,
        sl_update_user_reply_decode,
        sl_update_permissions_reply_decode,
        sl_change_password_reply_decode,
        sl_login_user_reply_decode,
        sl_logout_user_reply_decode,
        sl_delete_personal_access_token_reply_decode,
        sl_login_with_personal_access_token_reply_decode,
    };
    int (*encoders[])(sl_buf_t *, const sl_empty_t *) = {
        sl_delete_user_reply_encode,
        sl_update_user_reply_encode,
        sl_update_permissions_reply_encode,
        sl_change_password_reply_encode,
        sl_login_user_reply_encode,
        sl_logout_user_reply_encode,
        sl_delete_personal_access_token_reply_encode,
        sl_login_with_personal_access_token_reply_encode,
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(decoders); i++) {
        assert_int_equal(decoders[i](sl_span(NULL, 0), &arena, &e), 0);
        assert_int_equal(decoders[i](sl_span(junk, 1), &arena, &e), -SL_ERR_INVALID_FORMAT);
        ASSERT_ENCODES(encoders[i], &e, "", 0);
    }
}

/* --- CreateUser ---------------------------------------------------------------------- */

static const char create_user_hex[] = "05 61 6c 69 63 65"       /* username "alice" */
                                      "07 73 33 63 72 65 74 21" /* password "s3cret!" */
                                      "01"                      /* status active */
                                      "01 20 00 00 00"          /* permissions, 32 bytes */
                                      "00 00 00 00 00 01 00 00 00 00 01 01 00 00 00 00"
                                      "01 00 00 01 00 01 02 00 00 00 00 01 00 00 00 00";

/* Offsets inside create_user_hex. */
enum { CU_STATUS = 14, CU_FLAG = 15, CU_LEN = 16, CU_PERMS = 20, CU_SIZE = 52 };

static void assert_example_perms(sl_span_t raw)
{
    sl_permissions_t p;
    assert_true(sl_permissions_unpack(raw, &arena, &p));
    assert_true(p.read_streams);
    assert_false(p.manage_servers || p.read_servers || p.manage_users || p.read_users ||
                 p.manage_streams || p.manage_topics || p.read_topics || p.poll_messages ||
                 p.send_messages);
    assert_int_equal(p.streams_count, 1);
    const sl_stream_perms_t *s = &p.streams[0];
    assert_int_equal(s->stream_id, 1);
    assert_true(s->read_stream && s->poll_messages);
    assert_false(s->manage_stream || s->manage_topics || s->read_topics || s->send_messages);
    assert_int_equal(s->topics_count, 1);
    assert_int_equal(s->topics[0].topic_id, 2);
    assert_true(s->topics[0].read_topic);
    assert_false(s->topics[0].manage_topic || s->topics[0].poll_messages ||
                 s->topics[0].send_messages);
}

static void test_create_user_request(void **state)
{
    (void)state;
    size_t n, pn;
    uint8_t *want = tu_hex(create_user_hex, &n);
    uint8_t *perms = tu_hex(perms_example_hex, &pn);
    assert_int_equal(n, CU_SIZE);
    assert_int_equal(pn, 32);

    /* The permissions.md example, built from its fields, gives its bytes. */
    sl_topic_perms_t topic = {.topic_id = 2, .read_topic = true};
    sl_stream_perms_t stream = {.stream_id = 1,
                                .read_stream = true,
                                .poll_messages = true,
                                .topics_count = 1,
                                .topics = &topic};
    sl_permissions_t set = {.read_streams = true, .streams_count = 1, .streams = &stream};
    sl_buf_t p;
    sl_buf_init(&p, 0);
    assert_true(sl_permissions_encode(&p, &set));
    assert_bytes_equal(p.data, p.len, perms, pn);

    sl_create_user_request_t q = {S("alice"), S("s3cret!"),    SL_USER_ACTIVE,
                                  true,       sl_buf_span(&p), {0}};
    ASSERT_ENCODES(sl_create_user_request_encode, &q, want, n);
    sl_create_user_request_t d;
    assert_int_equal(sl_create_user_request_decode(sl_span(want, n), &d), 0);
    assert_span_str(d.username, "alice");
    assert_span_str(d.password, "s3cret!");
    assert_int_equal(d.status, SL_USER_ACTIVE);
    assert_true(d.has_permissions);
    assert_span_equal(d.permissions, sl_span(perms, pn));
    assert_int_equal(d.options.len, 0);
    assert_example_perms(d.permissions);
    ASSERT_ENCODES(sl_create_user_request_encode, &d, want, n);

    /* No permissions, empty password, a status byte that is stored as sent. */
    sl_create_user_request_t q2 = {S("bob"), S(""), 7, false, {0}, {0}};
    const uint8_t want2[] = {3, 'b', 'o', 'b', 0, 7, 0};
    ASSERT_ENCODES(sl_create_user_request_encode, &q2, want2, sizeof(want2));
    assert_int_equal(sl_create_user_request_decode(sl_span(want2, sizeof(want2)), &d), 0);
    assert_span_str(d.username, "bob");
    assert_int_equal(d.password.len, 0);
    assert_int_equal(d.status, 7);
    assert_false(d.has_permissions);
    sl_buf_free(&p);
    free(perms);
    free(want);
}

static void test_create_user_request_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_hex(create_user_hex, &n);
    const int bad = -SL_ERR_INVALID_COMMAND;
    ASSERT_REQUEST_PREFIXES(sl_create_user_request_decode, sl_create_user_request_t, v, n, bad);
    /* Names and strings. */
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, 0, 0, bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, 1, 0xff,
                         bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, 7, 0xc0,
                         bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, 0, 200,
                         bad);
    /* Permission length differing from the set's encoded length. */
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, CU_LEN, 31,
                         bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, CU_LEN, 33,
                         bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, CU_LEN, 0,
                         bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, CU_LEN + 3,
                         0x80, bad);
    /* A set whose structure runs past its length (has_next_stream set). */
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, n - 1, 1,
                         bad);
    /* A flag other than 1 means no permissions: the rest is then an options
     * block, and these bytes are not one. */
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, CU_FLAG, 2,
                         bad);
    ASSERT_REQUEST_PATCH(sl_create_user_request_decode, sl_create_user_request_t, v, n, CU_FLAG, 0,
                         bad);

    /* With len 33 and one more byte present, the set is still 32 bytes. */
    uint8_t *c = malloc(n + 1);
    memcpy(c, v, n);
    c[n] = 0;
    c[CU_LEN] = 33;
    sl_create_user_request_t d;
    assert_int_equal(sl_create_user_request_decode(sl_span(c, n + 1), &d), bad);
    /* And without that change, the extra byte is a broken options block. */
    c[CU_LEN] = 32;
    assert_int_equal(sl_create_user_request_decode(sl_span(c, n + 1), &d), bad);
    free(c);

    /* Encoder: empty or long username, long password, a bad set. */
    sl_create_user_request_t q = {S(""), S("x"), 1, false, {0}, {0}};
    ASSERT_ENCODE_FAILS(sl_create_user_request_encode, &q);
    uint8_t big[256];
    memset(big, 'a', sizeof(big));
    q.username = sl_span(big, 256);
    ASSERT_ENCODE_FAILS(sl_create_user_request_encode, &q);
    q.username = S("ok");
    q.password = sl_span(big, 256);
    ASSERT_ENCODE_FAILS(sl_create_user_request_encode, &q);
    q.password = S("x");
    q.has_permissions = true;
    const uint8_t root_plus_one[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    q.permissions = sl_span(root_plus_one, 12);
    ASSERT_ENCODE_FAILS(sl_create_user_request_encode, &q);
    free(v);
}

static void test_create_user_options(void **state)
{
    (void)state;
    size_t on;
    uint8_t *opts = tu_hex(options_block_hex, &on);
    const uint8_t head[] = {3, 'b', 'o', 'b', 1, 'p', 1, 0};
    uint8_t body[sizeof(head) + 128];
    memcpy(body, head, sizeof(head));
    memcpy(body + sizeof(head), opts, on);
    sl_create_user_request_t d;
    /* A valid block with any key: the empty user catalog refuses it. */
    assert_int_equal(sl_create_user_request_decode(sl_span(body, sizeof(head) + on), &d),
                     -SL_ERR_UNSUPPORTED_OPTION_KEY);
    /* A structurally broken block is undecodable first: every cut inside it,
     * a zero kind, a non-String key, duplicate keys. */
    for (size_t cut = 1; cut < on; cut++) {
        uint8_t *c = dup_bytes(body, sizeof(head) + cut);
        assert_int_equal(sl_create_user_request_decode(sl_span(c, sizeof(head) + cut), &d),
                         cut == 24 ? -SL_ERR_UNSUPPORTED_OPTION_KEY : -SL_ERR_INVALID_COMMAND);
        free(c);
    }
    body[sizeof(head)] = 0;
    assert_int_equal(sl_create_user_request_decode(sl_span(body, sizeof(head) + on), &d),
                     -SL_ERR_INVALID_COMMAND);
    body[sizeof(head)] = 1;
    assert_int_equal(sl_create_user_request_decode(sl_span(body, sizeof(head) + on), &d),
                     -SL_ERR_INVALID_COMMAND);
    body[sizeof(head)] = 2;
    memcpy(body + sizeof(head) + on, opts, 24);
    assert_int_equal(sl_create_user_request_decode(sl_span(body, sizeof(head) + on + 24), &d),
                     -SL_ERR_INVALID_COMMAND);
    /* The encoder sends a valid block as is, and refuses a broken one. */
    sl_create_user_request_t q = {S("bob"), S("p"), 1, false, {0}, sl_span(opts, on)};
    ASSERT_ENCODES(sl_create_user_request_encode, &q, body, sizeof(head) + on);
    q.options = sl_span(opts, on - 1);
    ASSERT_ENCODE_FAILS(sl_create_user_request_encode, &q);
    free(opts);
}

static void test_create_user_reply(void **state)
{
    (void)state;
    size_t pn;
    uint8_t *perms = tu_hex(perms_example_hex, &pn);
    /* The reply echoes the status byte as sent and the permissions in request order. */
    sl_create_user_reply_t r = {
        {{3, 1700000000000000ull, 7, S("alice"), {0}}, true, sl_span(perms, pn)}};
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_create_user_reply_encode(&b, &r), 0);
    assert_int_equal(b.len, 13 + 6 + 4 + 1 + 4 + 32);
    assert_int_equal(b.data[23], 1);
    assert_int_equal(sl_load_u32(b.data + 24), 32);
    uint8_t *c = dup_bytes(b.data, b.len);
    sl_create_user_reply_t d;
    assert_int_equal(sl_create_user_reply_decode(sl_span(c, b.len), &arena, &d), 0);
    assert_int_equal(d.user.header.id, 3);
    assert_int_equal(d.user.header.created_at, 1700000000000000ull);
    assert_int_equal(d.user.header.status, 7);
    assert_span_str(d.user.header.username, "alice");
    assert_true(d.user.has_permissions);
    assert_span_equal(d.user.permissions, sl_span(perms, pn));
    assert_example_perms(d.user.permissions);
    assert_int_equal(sl_create_user_reply_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    free(c);
    /* The new user always comes back: an empty payload is malformed. */
    ASSERT_REPLY_PREFIXES(sl_create_user_reply_decode, sl_create_user_reply_t, b.data, b.len, 0);
    sl_buf_free(&b);
    sl_buf_free(&b2);
    free(perms);
}

/* --- UpdateUser ------------------------------------------------------------------------ */

static void test_update_user_request(void **state)
{
    (void)state;
    const int bad = -SL_ERR_INVALID_COMMAND;
    /* Both fields present. */
    size_t n;
    uint8_t *v = tu_hex("01 04 05 00 00 00 01 04 62 6f 62 32 01 02", &n);
    sl_update_user_request_t q = {sl_ident_number(5), true, S("bob2"), true, 2, {0}}, d;
    ASSERT_ENCODES(sl_update_user_request_encode, &q, v, n);
    assert_int_equal(sl_update_user_request_decode(sl_span(v, n), &d), 0);
    assert_ident_equal(&d.user_id, &q.user_id);
    assert_true(d.has_username);
    assert_span_str(d.username, "bob2");
    assert_true(d.has_status);
    assert_int_equal(d.status, 2);
    assert_int_equal(d.options.len, 0);
    ASSERT_REQUEST_PREFIXES(sl_update_user_request_decode, sl_update_user_request_t, v, n, bad);
    ASSERT_REQUEST_PATCH(sl_update_user_request_decode, sl_update_user_request_t, v, n, 7, 0, bad);
    ASSERT_REQUEST_PATCH(sl_update_user_request_decode, sl_update_user_request_t, v, n, 8, 0xff,
                         bad);
    ASSERT_REQUEST_PATCH(sl_update_user_request_decode, sl_update_user_request_t, v, n, 1, 2, bad);
    /* has_username 2 is "absent": the next byte is then has_status (4 -> absent),
     * and "bob2 01 02" is no options block. */
    ASSERT_REQUEST_PATCH(sl_update_user_request_decode, sl_update_user_request_t, v, n, 6, 2, bad);
    free(v);

    /* Neither field, a string identifier. */
    v = tu_hex("02 05 61 6c 69 63 65 00 00", &n);
    q = (sl_update_user_request_t){sl_ident_name("alice"), false, {0}, false, 0, {0}};
    ASSERT_ENCODES(sl_update_user_request_encode, &q, v, n);
    assert_int_equal(sl_update_user_request_decode(sl_span(v, n), &d), 0);
    assert_ident_equal(&d.user_id, &q.user_id);
    assert_false(d.has_username);
    assert_false(d.has_status);
    ASSERT_REQUEST_PREFIXES(sl_update_user_request_decode, sl_update_user_request_t, v, n, bad);
    free(v);

    /* Flags other than 1 are "absent"; a status byte is stored as sent. */
    const uint8_t odd[] = {1, 4, 0, 0, 0, 0, 9, 1, 77};
    assert_int_equal(sl_update_user_request_decode(sl_span(odd, sizeof(odd)), &d), 0);
    assert_false(d.has_username);
    assert_true(d.has_status);
    assert_int_equal(d.status, 77);

    /* Any option key: 4041; a broken block: 3. */
    size_t on;
    uint8_t *opts = tu_hex(options_block_hex, &on);
    uint8_t body[9 + 64];
    const uint8_t head[] = {1, 4, 0, 0, 0, 0, 0, 0};
    memcpy(body, head, 8);
    memcpy(body + 8, opts, on);
    assert_int_equal(sl_update_user_request_decode(sl_span(body, 8 + on), &d),
                     -SL_ERR_UNSUPPORTED_OPTION_KEY);
    assert_int_equal(sl_update_user_request_decode(sl_span(body, 8 + on - 1), &d), bad);
    q = (sl_update_user_request_t){sl_ident_number(0), false, {0}, false, 0, sl_span(opts, on)};
    ASSERT_ENCODES(sl_update_user_request_encode, &q, body, 8 + on);
    q.options = sl_span(opts, 3);
    ASSERT_ENCODE_FAILS(sl_update_user_request_encode, &q);
    q = (sl_update_user_request_t){sl_ident_number(0), true, S(""), false, 0, {0}};
    ASSERT_ENCODE_FAILS(sl_update_user_request_encode, &q);
    free(opts);
}

/* --- UpdatePermissions ------------------------------------------------------------------ */

static void test_update_permissions_request(void **state)
{
    (void)state;
    const int bad = -SL_ERR_INVALID_COMMAND;
    size_t n;
    uint8_t *v = tu_hex("01 04 07 00 00 00 01 0b 00 00 00 01 01 01 01 01 01 01 01 01 01 00", &n);
    sl_update_permissions_request_t q = {sl_ident_number(7), true, sl_span(root_perms, 11)}, d;
    ASSERT_ENCODES(sl_update_permissions_request_encode, &q, v, n);
    assert_int_equal(sl_update_permissions_request_decode(sl_span(v, n), &d), 0);
    assert_ident_equal(&d.user_id, &q.user_id);
    assert_true(d.has_permissions);
    assert_span_equal(d.permissions, q.permissions);
    ASSERT_REQUEST_PREFIXES(sl_update_permissions_request_decode, sl_update_permissions_request_t,
                            v, n, bad);
    ASSERT_REQUEST_TRAILING_OK(sl_update_permissions_request_decode,
                               sl_update_permissions_request_t, v, n);
    /* Length mismatch both ways, and a set that runs on past its length. */
    ASSERT_REQUEST_PATCH(sl_update_permissions_request_decode, sl_update_permissions_request_t, v,
                         n, 7, 10, bad);
    ASSERT_REQUEST_PATCH(sl_update_permissions_request_decode, sl_update_permissions_request_t, v,
                         n, 7, 12, bad);
    ASSERT_REQUEST_PATCH(sl_update_permissions_request_decode, sl_update_permissions_request_t, v,
                         n, n - 1, 1, bad);
    /* Any flag but 1 clears: the body ends there, the rest is ignored. */
    uint8_t *c = patched(v, n, 6, 0);
    assert_int_equal(sl_update_permissions_request_decode(sl_span(c, n), &d), 0);
    assert_false(d.has_permissions);
    assert_int_equal(d.permissions.len, 0);
    c[6] = 0xfe;
    assert_int_equal(sl_update_permissions_request_decode(sl_span(c, n), &d), 0);
    assert_false(d.has_permissions);
    assert_int_equal(sl_update_permissions_request_decode(sl_span(c, 7), &d), 0);
    free(c);
    q = (sl_update_permissions_request_t){sl_ident_name("bob"), false, {0}};
    const uint8_t clear[] = {2, 3, 'b', 'o', 'b', 0};
    ASSERT_ENCODES(sl_update_permissions_request_encode, &q, clear, sizeof(clear));
    ASSERT_REQUEST_PREFIXES(sl_update_permissions_request_decode, sl_update_permissions_request_t,
                            clear, sizeof(clear), bad);
    q = (sl_update_permissions_request_t){sl_ident_number(1), true, sl_span(root_perms, 3)};
    ASSERT_ENCODE_FAILS(sl_update_permissions_request_encode, &q);
    free(v);
}

/* --- ChangePassword --------------------------------------------------------------------- */

static void test_change_password_request(void **state)
{
    (void)state;
    const int bad = -SL_ERR_INVALID_COMMAND;
    size_t n;
    uint8_t *v = tu_hex("02 04 69 67 67 79 04 69 67 67 79 06 73 65 63 72 65 74", &n);
    sl_change_password_request_t q = {sl_ident_name("iggy"), S("iggy"), S("secret")}, d;
    ASSERT_ENCODES(sl_change_password_request_encode, &q, v, n);
    assert_int_equal(sl_change_password_request_decode(sl_span(v, n), &d), 0);
    assert_ident_equal(&d.user_id, &q.user_id);
    assert_span_str(d.current_password, "iggy");
    assert_span_str(d.new_password, "secret");
    ASSERT_REQUEST_PREFIXES(sl_change_password_request_decode, sl_change_password_request_t, v, n,
                            bad);
    ASSERT_REQUEST_TRAILING_OK(sl_change_password_request_decode, sl_change_password_request_t, v,
                               n);
    ASSERT_REQUEST_PATCH(sl_change_password_request_decode, sl_change_password_request_t, v, n, 2,
                         0xff, bad);
    ASSERT_REQUEST_PATCH(sl_change_password_request_decode, sl_change_password_request_t, v, n, 7,
                         0xff, bad);
    ASSERT_REQUEST_PATCH(sl_change_password_request_decode, sl_change_password_request_t, v, n, 12,
                         0xed, bad);
    ASSERT_REQUEST_PATCH(sl_change_password_request_decode, sl_change_password_request_t, v, n, 11,
                         7, bad);
    ASSERT_REQUEST_PATCH(sl_change_password_request_decode, sl_change_password_request_t, v, n, 1,
                         0, bad);
    free(v);
    /* Empty passwords are allowed on the wire. */
    const uint8_t empty[] = {1, 4, 1, 0, 0, 0, 0, 0};
    q = (sl_change_password_request_t){sl_ident_number(1), S(""), S("")};
    ASSERT_ENCODES(sl_change_password_request_encode, &q, empty, sizeof(empty));
    assert_int_equal(sl_change_password_request_decode(sl_span(empty, sizeof(empty)), &d), 0);
    assert_int_equal(d.current_password.len, 0);
    assert_int_equal(d.new_password.len, 0);
    uint8_t big[256];
    memset(big, 'x', sizeof(big));
    q.new_password = sl_span(big, 256);
    ASSERT_ENCODE_FAILS(sl_change_password_request_encode, &q);
}

/* --- LoginUser (legacy) and LogoutUser ----------------------------------------------------- */

static void test_login_user_legacy(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_hex("04 69 67 67 79 04 69 67 67 79 05 00 00 00 30 2e 31 2e 30 00 00 00 00", &n);
    sl_login_user_request_t q = {S("iggy"), S("iggy"), S("0.1.0"), S("")}, d;
    ASSERT_ENCODES(sl_login_user_request_encode, &q, v, n);
    assert_int_equal(sl_login_user_request_decode(sl_span(v, n), &d), 0);
    assert_span_str(d.username, "iggy");
    assert_span_str(d.password, "iggy");
    assert_span_str(d.version, "0.1.0");
    assert_int_equal(d.context.len, 0);
    ASSERT_REQUEST_PREFIXES(sl_login_user_request_decode, sl_login_user_request_t, v, n,
                            -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_PATCH(sl_login_user_request_decode, sl_login_user_request_t, v, n, 0, 0,
                         -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_PATCH(sl_login_user_request_decode, sl_login_user_request_t, v, n, 14, 0xff,
                         -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_PATCH(sl_login_user_request_decode, sl_login_user_request_t, v, n, 19, 1,
                         -SL_ERR_INVALID_COMMAND);
    free(v);

    /* The legacy token login: one Name. */
    const uint8_t tok[] = {3, 'a', 'b', 'c'};
    sl_login_with_personal_access_token_request_t t = {S("abc")}, td;
    ASSERT_ENCODES(sl_login_with_personal_access_token_request_encode, &t, tok, 4);
    assert_int_equal(sl_login_with_personal_access_token_request_decode(sl_span(tok, 4), &td), 0);
    assert_span_str(td.token, "abc");
    ASSERT_REQUEST_PREFIXES(sl_login_with_personal_access_token_request_decode,
                            sl_login_with_personal_access_token_request_t, tok, 4,
                            -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_PATCH(sl_login_with_personal_access_token_request_decode,
                         sl_login_with_personal_access_token_request_t, tok, 4, 0, 0,
                         -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_PATCH(sl_login_with_personal_access_token_request_decode,
                         sl_login_with_personal_access_token_request_t, tok, 4, 2, 0x80,
                         -SL_ERR_INVALID_COMMAND);
    t.token = S("");
    ASSERT_ENCODE_FAILS(sl_login_with_personal_access_token_request_encode, &t);
}

/* --- LoginRegister ---------------------------------------------------------------------- */

static void test_login_vector(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_vector("b_login_register_request.hex", &n);
    assert_int_equal(n, 286);
    sl_span_t body = sl_span(v + 256, n - 256);

    /* The server's path: the prefix, then the password shape. */
    sl_client_version_t ver;
    sl_span_t rest;
    assert_true(sl_login_version_decode(body, &ver, &rest));
    assert_int_equal(ver.protocol_version, 0x2C00);
    assert_span_str(ver.sdk_name, "c-sdk");
    assert_span_str(ver.sdk_version, "0.1.0");
    assert_int_equal(rest.len, 14);
    assert_ptr_equal(rest.ptr, body.ptr + 16);
    sl_login_password_t pw;
    assert_true(sl_login_password_decode(rest, &pw));
    assert_span_str(pw.username, "iggy");
    assert_span_str(pw.password, "iggy");
    assert_int_equal(pw.context.len, 0);
    /* The same bytes are not a token body (context_len would be 0x67676904). */
    sl_login_token_t tk;
    assert_false(sl_login_token_decode(rest, &tk));

    /* The typed codec agrees and re-encodes the body exactly. */
    sl_login_register_request_t d;
    assert_int_equal(sl_login_register_request_decode(body, &d), 0);
    assert_int_equal(d.version.protocol_version, 0x2C00);
    assert_span_str(d.version.sdk_name, "c-sdk");
    assert_span_str(d.login.username, "iggy");
    sl_login_register_request_t q = {{0x2C00, S("c-sdk"), S("0.1.0")}, {S("iggy"), S("iggy"), {0}}};
    ASSERT_ENCODES(sl_login_register_request_encode, &q, body.ptr, body.len);
    sl_login_register_with_pat_request_t pd;
    assert_int_equal(sl_login_register_with_pat_request_decode(body, &pd), -SL_ERR_INVALID_COMMAND);
    free(v);
}

static void test_login_hostile(void **state)
{
    (void)state;
    size_t n;
    uint8_t *v = tu_vector("b_login_register_request.hex", &n);
    const uint8_t *body = v + 256;
    size_t len = n - 256;
    ASSERT_REQUEST_PREFIXES(sl_login_register_request_decode, sl_login_register_request_t, body,
                            len, -SL_ERR_INVALID_COMMAND);
    /* The prefix alone decodes from 16 bytes on; the password shape needs all 30. */
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *c = dup_bytes(body, cut);
        sl_client_version_t ver;
        sl_span_t rest;
        bool ok = sl_login_version_decode(sl_span(c, cut), &ver, &rest);
        assert_int_equal(ok, cut >= 16);
        sl_login_password_t pw;
        if (ok)
            assert_false(sl_login_password_decode(rest, &pw));
        free(c);
    }
    ASSERT_REQUEST_TRAILING_OK(sl_login_register_request_decode, sl_login_register_request_t, body,
                               len);
    /* Bad UTF-8 or zero length in each string: sdk_name 4, sdk_version 10,
     * username 16, password 21. The first two break the prefix. */
    const size_t prefix_fields[] = {4, 10};
    for (size_t i = 0; i < 2; i++) {
        for (int z = 0; z < 2; z++) {
            uint8_t *c = dup_bytes(body, len);
            if (z)
                c[prefix_fields[i]] = 0;
            else
                c[prefix_fields[i] + 1] = 0xff;
            sl_client_version_t ver;
            sl_span_t rest;
            assert_false(sl_login_version_decode(sl_span(c, len), &ver, &rest));
            free(c);
        }
    }
    uint8_t *c = patched(body, len, 17, 0xff);
    sl_client_version_t ver;
    sl_span_t rest;
    sl_login_password_t pw;
    assert_true(sl_login_version_decode(sl_span(c, len), &ver, &rest));
    assert_false(sl_login_password_decode(rest, &pw));
    c[17] = 'i';
    c[16] = 0; /* zero-length username */
    assert_false(sl_login_password_decode(rest, &pw));
    c[16] = 4;
    c[22] = 0xc0; /* password */
    assert_false(sl_login_password_decode(rest, &pw));
    c[22] = 'i';
    c[26] = 1; /* context_len beyond the body */
    assert_false(sl_login_password_decode(rest, &pw));
    free(c);
    free(v);

    /* Encoder: zero-length names in the prefix or the username. */
    sl_login_register_request_t q = {{0x2C00, S(""), S("1")}, {S("u"), S("p"), {0}}};
    ASSERT_ENCODE_FAILS(sl_login_register_request_encode, &q);
    q.version.sdk_name = S("x");
    q.login.username = S("");
    ASSERT_ENCODE_FAILS(sl_login_register_request_encode, &q);
}

static void test_login_shapes(void **state)
{
    (void)state;
    /* A token body: the password shape runs out of bytes for its context. */
    const uint8_t token_rest[] = {4, 'a', 'b', 'c', 'd', 0, 0, 0, 0};
    sl_login_password_t pw;
    sl_login_token_t tk;
    assert_false(sl_login_password_decode(sl_span(token_rest, sizeof(token_rest)), &pw));
    assert_true(sl_login_token_decode(sl_span(token_rest, sizeof(token_rest)), &tk));
    assert_span_str(tk.token, "abcd");
    assert_int_equal(tk.context.len, 0);
    /* Bytes that parse both ways (lifecycle.md 3.3 quirk); extra bytes ignored. */
    const uint8_t both[] = {3, 'a', 'b', 'c', 0, 0, 0, 0, 0};
    assert_true(sl_login_password_decode(sl_span(both, sizeof(both)), &pw));
    assert_span_str(pw.username, "abc");
    assert_int_equal(pw.password.len, 0);
    assert_true(sl_login_token_decode(sl_span(both, sizeof(both)), &tk));
    assert_span_str(tk.token, "abc");
    /* Neither shape. */
    const uint8_t neither[] = {0};
    assert_false(sl_login_password_decode(sl_span(neither, 1), &pw));
    assert_false(sl_login_token_decode(sl_span(neither, 1), &tk));
    assert_false(sl_login_token_decode(sl_span(NULL, 0), &tk));
    /* A context is read only when its length is non-zero; it must be UTF-8. */
    const uint8_t ctx[] = {1, 't', 3, 0, 0, 0, 'c', 0xc3, 0xa9};
    assert_true(sl_login_token_decode(sl_span(ctx, sizeof(ctx)), &tk));
    assert_span_str(tk.token, "t");
    assert_span_str(tk.context, "c\xc3\xa9");
    uint8_t *c = patched(ctx, sizeof(ctx), 8, 0x28);
    assert_false(sl_login_token_decode(sl_span(c, sizeof(ctx)), &tk));
    free(c);
    c = patched(ctx, sizeof(ctx), 1, 0xff);
    assert_false(sl_login_token_decode(sl_span(c, sizeof(ctx)), &tk));
    free(c);
}

static void test_login_round_trips(void **state)
{
    (void)state;
    /* LoginRegisterWithPat round trip with a 68-character token and a context. */
    char token[69];
    for (int i = 0; i < 68; i++)
        token[i] = (char)('A' + i % 26);
    token[66] = token[67] = '=';
    token[68] = 0;
    sl_login_register_with_pat_request_t q = {{0x2C05, S("node-sdk"), S("1.2.3")},
                                              {S(token), S("ctx")}},
                                         d;
    sl_buf_t b, b2;
    sl_buf_init(&b, 0);
    sl_buf_init(&b2, 0);
    assert_int_equal(sl_login_register_with_pat_request_encode(&b, &q), 0);
    assert_int_equal(b.len, 4 + 9 + 6 + 69 + 4 + 3);
    assert_int_equal(sl_login_register_with_pat_request_decode(sl_buf_span(&b), &d), 0);
    assert_int_equal(d.version.protocol_version, 0x2C05);
    assert_span_str(d.version.sdk_name, "node-sdk");
    assert_span_str(d.version.sdk_version, "1.2.3");
    assert_span_str(d.login.token, token);
    assert_span_str(d.login.context, "ctx");
    assert_int_equal(sl_login_register_with_pat_request_encode(&b2, &d), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    ASSERT_REQUEST_PREFIXES(sl_login_register_with_pat_request_decode,
                            sl_login_register_with_pat_request_t, b.data, b.len,
                            -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_TRAILING_OK(sl_login_register_with_pat_request_decode,
                               sl_login_register_with_pat_request_t, b.data, b.len);

    /* LoginRegister with a context round trips too. */
    sl_login_register_request_t lq = {{0x2C00, S("rust-sdk"), S("0.8")},
                                      {S("alice"), S("pw"), S("\xe2\x82\xac")}},
                                ld;
    sl_buf_reset(&b);
    assert_int_equal(sl_login_register_request_encode(&b, &lq), 0);
    assert_int_equal(sl_login_register_request_decode(sl_buf_span(&b), &ld), 0);
    assert_span_str(ld.login.username, "alice");
    assert_span_str(ld.login.password, "pw");
    assert_span_str(ld.login.context, "\xe2\x82\xac");
    sl_buf_reset(&b2);
    assert_int_equal(sl_login_register_request_encode(&b2, &ld), 0);
    assert_bytes_equal(b2.data, b2.len, b.data, b.len);
    sl_buf_free(&b);
    sl_buf_free(&b2);
}

static void test_login_reply(void **state)
{
    (void)state;
    size_t n;
    uint8_t *body = tu_hex("00 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 00 2c 00 00"
                           "0c 30 2e 39 2e 30 2d 65 64 67 65 2e 35",
                           &n);
    uint32_t result;
    sl_span_t payload;
    assert_int_equal(sl_result_split(sl_span(body, n), &result, &payload), 0);
    assert_int_equal(result, 0);
    assert_int_equal(payload.len, 29);

    sl_login_register_reply_t r = {0, 5, 0x2C00, S("0.9.0-edge.5")}, d;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_result_put_ok(&b);
    assert_int_equal(sl_login_register_reply_encode(&b, &r), 0);
    assert_bytes_equal(b.data, b.len, body, n);

    uint8_t *c = dup_bytes(payload.ptr, payload.len);
    assert_int_equal(sl_login_register_reply_decode(sl_span(c, payload.len), &arena, &d), 0);
    assert_int_equal(d.user_id, 0);
    assert_int_equal(d.session, 5);
    assert_int_equal(d.server_protocol_version, 0x2C00);
    assert_span_str(d.server_version, "0.9.0-edge.5");
    sl_login_register_with_pat_reply_t pd;
    assert_int_equal(sl_login_register_with_pat_reply_decode(sl_span(c, payload.len), &arena, &pd),
                     0);
    assert_int_equal(pd.session, 5);
    sl_buf_reset(&b);
    assert_int_equal(sl_login_register_with_pat_reply_encode(&b, &pd), 0);
    assert_bytes_equal(b.data, b.len, payload.ptr, payload.len);
    free(c);

    ASSERT_REPLY_PREFIXES(sl_login_register_reply_decode, sl_login_register_reply_t, payload.ptr,
                          payload.len, 0);
    ASSERT_REPLY_PREFIXES(sl_login_register_with_pat_reply_decode,
                          sl_login_register_with_pat_reply_t, payload.ptr, payload.len, 0);
    ASSERT_REPLY_PATCH(sl_login_register_reply_decode, sl_login_register_reply_t, payload.ptr,
                       payload.len, 16, 0);
    ASSERT_REPLY_PATCH(sl_login_register_reply_decode, sl_login_register_reply_t, payload.ptr,
                       payload.len, 17, 0xff);
    ASSERT_REPLY_PATCH(sl_login_register_reply_decode, sl_login_register_reply_t, payload.ptr,
                       payload.len, 16, 13);
    r.server_version = S("");
    ASSERT_ENCODE_FAILS(sl_login_register_reply_encode, &r);
    sl_buf_free(&b);
    free(body);
}

/* --- personal access tokens ---------------------------------------------------------------- */

static void test_get_personal_access_tokens(void **state)
{
    (void)state;
    /* Three elements: the Node SDK misreads from the third on; we must not. */
    sl_token_info_t items[3] = {
        {S("ci"), 0},
        {S("deploy"), 1700000000000000ull},
        {S("third-token"), UINT64_MAX},
    };
    sl_get_personal_access_tokens_reply_t r = {3, items}, d;
    size_t n;
    uint8_t *want = tu_hex("02 63 69 00 00 00 00 00 00 00 00"
                           "06 64 65 70 6c 6f 79 00 40 1e 18 24 0a 06 00"
                           "0b 74 68 69 72 64 2d 74 6f 6b 65 6e ff ff ff ff ff ff ff ff",
                           &n);
    ASSERT_ENCODES(sl_get_personal_access_tokens_reply_encode, &r, want, n);
    uint8_t *c = dup_bytes(want, n);
    assert_int_equal(sl_get_personal_access_tokens_reply_decode(sl_span(c, n), &arena, &d), 0);
    assert_int_equal(d.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_span_equal(d.items[i].name, items[i].name);
        assert_int_equal(d.items[i].expiry_at, items[i].expiry_at);
    }
    ASSERT_ENCODES(sl_get_personal_access_tokens_reply_encode, &d, want, n);
    free(c);

    assert_int_equal(sl_get_personal_access_tokens_reply_decode(sl_span(NULL, 0), &arena, &d), 0);
    assert_int_equal(d.count, 0);
    assert_null(d.items);
    for (size_t cut = 1; cut < n; cut++) {
        int ok = cut == 11 || cut == 26;
        c = dup_bytes(want, cut);
        assert_int_equal(sl_get_personal_access_tokens_reply_decode(sl_span(c, cut), &arena, &d),
                         ok ? 0 : -SL_ERR_INVALID_FORMAT);
        if (ok)
            assert_int_equal(d.count, cut == 11 ? 1 : 2);
        free(c);
    }
    ASSERT_REPLY_PATCH(sl_get_personal_access_tokens_reply_decode,
                       sl_get_personal_access_tokens_reply_t, want, n, 0, 0);
    ASSERT_REPLY_PATCH(sl_get_personal_access_tokens_reply_decode,
                       sl_get_personal_access_tokens_reply_t, want, n, 27, 0xff);
    ASSERT_REPLY_PATCH(sl_get_personal_access_tokens_reply_decode,
                       sl_get_personal_access_tokens_reply_t, want, n, 26, 0x30);
    items[1].name = S("");
    ASSERT_ENCODE_FAILS(sl_get_personal_access_tokens_reply_encode, &r);
    free(want);
}

static void test_create_personal_access_token(void **state)
{
    (void)state;
    const int bad = -SL_ERR_INVALID_COMMAND;
    size_t n;
    uint8_t *v = tu_hex("08 63 69 2d 74 6f 6b 65 6e 00 a4 93 d6 00 00 00 00", &n);
    sl_create_personal_access_token_request_t q = {S("ci-token"), 3600000000ull}, d;
    ASSERT_ENCODES(sl_create_personal_access_token_request_encode, &q, v, n);
    assert_int_equal(sl_create_personal_access_token_request_decode(sl_span(v, n), &d), 0);
    assert_span_str(d.name, "ci-token");
    assert_int_equal(d.expiry_us, 3600000000ull);
    ASSERT_REQUEST_PREFIXES(sl_create_personal_access_token_request_decode,
                            sl_create_personal_access_token_request_t, v, n, bad);
    ASSERT_REQUEST_TRAILING_OK(sl_create_personal_access_token_request_decode,
                               sl_create_personal_access_token_request_t, v, n);
    ASSERT_REQUEST_PATCH(sl_create_personal_access_token_request_decode,
                         sl_create_personal_access_token_request_t, v, n, 0, 0, bad);
    ASSERT_REQUEST_PATCH(sl_create_personal_access_token_request_decode,
                         sl_create_personal_access_token_request_t, v, n, 3, 0xff, bad);
    q.name = S("");
    ASSERT_ENCODE_FAILS(sl_create_personal_access_token_request_encode, &q);
    free(v);

    /* Reply: the raw token, base64 of 50 bytes = 68 characters. */
    char token[69];
    memset(token, 'Q', 66);
    token[66] = token[67] = '=';
    token[68] = 0;
    sl_create_personal_access_token_reply_t r = {S(token)}, rd;
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_create_personal_access_token_reply_encode(&b, &r), 0);
    assert_int_equal(b.len, 69);
    assert_int_equal(b.data[0], 68);
    uint8_t *c = dup_bytes(b.data, b.len);
    assert_int_equal(sl_create_personal_access_token_reply_decode(sl_span(c, b.len), &arena, &rd),
                     0);
    assert_span_str(rd.token, token);
    free(c);
    ASSERT_REPLY_PREFIXES(sl_create_personal_access_token_reply_decode,
                          sl_create_personal_access_token_reply_t, b.data, b.len, 0);
    ASSERT_REPLY_PATCH(sl_create_personal_access_token_reply_decode,
                       sl_create_personal_access_token_reply_t, b.data, b.len, 0, 0);
    ASSERT_REPLY_PATCH(sl_create_personal_access_token_reply_decode,
                       sl_create_personal_access_token_reply_t, b.data, b.len, 5, 0x80);
    r.token = S("");
    ASSERT_ENCODE_FAILS(sl_create_personal_access_token_reply_encode, &r);
    uint8_t big[256];
    memset(big, 'a', sizeof(big));
    r.token = sl_span(big, 256);
    ASSERT_ENCODE_FAILS(sl_create_personal_access_token_reply_encode, &r);
    sl_buf_free(&b);
}

static void test_delete_personal_access_token(void **state)
{
    (void)state;
    const uint8_t v[] = {2, 'c', 'i'};
    sl_delete_personal_access_token_request_t q = {S("ci")}, d;
    ASSERT_ENCODES(sl_delete_personal_access_token_request_encode, &q, v, 3);
    assert_int_equal(sl_delete_personal_access_token_request_decode(sl_span(v, 3), &d), 0);
    assert_span_str(d.name, "ci");
    ASSERT_REQUEST_PREFIXES(sl_delete_personal_access_token_request_decode,
                            sl_delete_personal_access_token_request_t, v, 3,
                            -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_TRAILING_OK(sl_delete_personal_access_token_request_decode,
                               sl_delete_personal_access_token_request_t, v, 3);
    ASSERT_REQUEST_PATCH(sl_delete_personal_access_token_request_decode,
                         sl_delete_personal_access_token_request_t, v, 3, 0, 0,
                         -SL_ERR_INVALID_COMMAND);
    ASSERT_REQUEST_PATCH(sl_delete_personal_access_token_request_decode,
                         sl_delete_personal_access_token_request_t, v, 3, 1, 0xfe,
                         -SL_ERR_INVALID_COMMAND);
    q.name = S("");
    ASSERT_ENCODE_FAILS(sl_delete_personal_access_token_request_encode, &q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_user_root_golden),
        cmocka_unit_test(test_get_user_reply_shapes),
        cmocka_unit_test(test_get_user_reply_hostile),
        cmocka_unit_test(test_get_users_reply),
        cmocka_unit_test(test_ident_requests),
        cmocka_unit_test(test_empty_bodies),
        cmocka_unit_test(test_create_user_request),
        cmocka_unit_test(test_create_user_request_hostile),
        cmocka_unit_test(test_create_user_options),
        cmocka_unit_test(test_create_user_reply),
        cmocka_unit_test(test_update_user_request),
        cmocka_unit_test(test_update_permissions_request),
        cmocka_unit_test(test_change_password_request),
        cmocka_unit_test(test_login_user_legacy),
        cmocka_unit_test(test_login_vector),
        cmocka_unit_test(test_login_hostile),
        cmocka_unit_test(test_login_shapes),
        cmocka_unit_test(test_login_round_trips),
        cmocka_unit_test(test_login_reply),
        cmocka_unit_test(test_get_personal_access_tokens),
        cmocka_unit_test(test_create_personal_access_token),
        cmocka_unit_test(test_delete_personal_access_token),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
