/* Shared helpers of the test_meta_*.c programs: a state with a journal-like
 * op/timestamp counter, body builders on top of the wire request encoders,
 * and result-section checks. Everything is static inline so each test
 * program takes only what it uses. */
#ifndef SL_META_TESTUTIL_H
#define SL_META_TESTUTIL_H

#include "testutil.h"

#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/state.h"
#include "meta/state_internal.h"
#include "wire/codec.h"
#include "wire/header.h"

#define TM_VERSION "0.9.0-edge.5"
#define TM_T0      1700000000000000ull /* commands.md 13 timestamps */

typedef struct tm {
    sl_meta_t *m;
    uint64_t op;        /* op of the next entry */
    uint64_t timestamp; /* timestamp of the next entry */
    sl_buf_t reply;     /* body of the last apply */
    sl_buf_t body;      /* scratch for body builders */
} tm_t;

static inline void tm_init_cap(tm_t *t, uint32_t clients_max)
{
    memset(t, 0, sizeof(*t));
    assert_int_equal(sl_meta_create(clients_max, sl_span_str(TM_VERSION), &t->m), 0);
    t->op = 1;
    t->timestamp = TM_T0;
    sl_buf_init(&t->reply, 0);
    sl_buf_init(&t->body, 0);
}

/* The root user's created_at in these states (the golden replies carry it). */
#define TM_ROOT_CREATED_AT 1u

/* A state with the root user "iggy" (op 1, created_at TM_ROOT_CREATED_AT). */
static inline void tm_init(tm_t *t)
{
    tm_init_cap(t, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(sl_meta_bootstrap_root(t->m, sl_span_str("iggy"), sl_span_str("$argon2id$r"),
                                            TM_ROOT_CREATED_AT),
                     0);
    t->op = sl_meta_last_op(t->m) + 1;
}

static inline void tm_free(tm_t *t)
{
    sl_meta_destroy(t->m);
    sl_buf_free(&t->reply);
    sl_buf_free(&t->body);
}

static inline sl_u128_t tm_client(uint64_t n)
{
    return (sl_u128_t){n, 0xC11E47u};
}

/* Applies one entry built from the arguments; asserts that apply accepted
 * it and returns the reply body (valid until the next apply). */
static inline sl_span_t tm_apply_full(tm_t *t, uint8_t operation, sl_u128_t client,
                                      uint64_t request, sl_u128_t checksum, uint32_t user,
                                      sl_span_t body)
{
    sl_meta_entry_t e = {
        .op = t->op++,
        .timestamp = t->timestamp++,
        .client = client,
        .request = request,
        .user_id = user,
        .operation = operation,
        .request_checksum = checksum,
        .body = body,
    };
    sl_buf_reset(&t->reply);
    assert_int_equal(sl_meta_apply(t->m, &e, &t->reply), 0);
    return sl_buf_span(&t->reply);
}

static inline sl_span_t tm_apply(tm_t *t, uint8_t operation, uint32_t user, sl_span_t body)
{
    return tm_apply_full(t, operation, (sl_u128_t){0, 0}, 0, (sl_u128_t){0, 0}, user, body);
}

/* The result code of a framed reply (0 = success); *payload the rest. */
static inline uint32_t tm_result(sl_span_t reply, sl_span_t *payload)
{
    uint32_t result = 0;
    sl_span_t rest;
    assert_int_equal(sl_result_split(reply, &result, &rest), 0);
    if (payload)
        *payload = rest;
    if (result != 0)
        assert_int_equal(reply.len, 12);
    return result;
}

/* Applies and returns the committed result code. */
static inline uint32_t tm_code(tm_t *t, uint8_t operation, uint32_t user, sl_span_t body)
{
    return tm_result(tm_apply(t, operation, user, body), NULL);
}

/* Applies and asserts the exact 4-byte success body. */
static inline void tm_ok_empty(tm_t *t, uint8_t operation, uint32_t user, sl_span_t body)
{
    sl_span_t reply = tm_apply(t, operation, user, body);
    static const uint8_t ok[4] = {0};
    assert_bytes_equal(reply.ptr, reply.len, ok, sizeof(ok));
}

/* --- body builders (results live in t->body until the next builder) ---------- */

static inline sl_span_t tm_body_stream(tm_t *t, const char *name)
{
    sl_buf_reset(&t->body);
    sl_create_stream_request_t q = {.name = sl_span_str(name)};
    assert_int_equal(sl_create_stream_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_stream_ref(tm_t *t, sl_ident_t stream)
{
    sl_buf_reset(&t->body);
    sl_delete_stream_request_t q = {.stream_id = stream};
    assert_int_equal(sl_delete_stream_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_update_stream(tm_t *t, sl_ident_t stream, const char *name)
{
    sl_buf_reset(&t->body);
    sl_update_stream_request_t q = {.stream_id = stream, .name = sl_span_str(name)};
    assert_int_equal(sl_update_stream_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_topic(tm_t *t, sl_ident_t stream, uint32_t partitions,
                                      const char *name, sl_span_t options)
{
    sl_buf_reset(&t->body);
    sl_create_topic_request_t q = {.stream_id = stream,
                                   .partitions_count = partitions,
                                   .name = sl_span_str(name),
                                   .options = options};
    assert_int_equal(sl_create_topic_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_topic_ref(tm_t *t, sl_ident_t stream, sl_ident_t topic)
{
    sl_buf_reset(&t->body);
    sl_delete_topic_request_t q = {.stream_id = stream, .topic_id = topic};
    assert_int_equal(sl_delete_topic_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_update_topic(tm_t *t, sl_ident_t stream, sl_ident_t topic,
                                             const char *name, sl_span_t options)
{
    sl_buf_reset(&t->body);
    sl_update_topic_request_t q = {
        .stream_id = stream, .topic_id = topic, .name = sl_span_str(name), .options = options};
    assert_int_equal(sl_update_topic_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_partitions(tm_t *t, sl_ident_t stream, sl_ident_t topic,
                                           uint32_t count)
{
    sl_buf_reset(&t->body);
    sl_create_partitions_request_t q = {
        .stream_id = stream, .topic_id = topic, .partitions_count = count};
    assert_int_equal(sl_create_partitions_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_segments(tm_t *t, sl_ident_t stream, sl_ident_t topic,
                                         uint32_t partition)
{
    sl_buf_reset(&t->body);
    sl_delete_segments_request_t q = {
        .stream_id = stream, .topic_id = topic, .partition_id = partition, .segments_count = 1};
    assert_int_equal(sl_delete_segments_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_group(tm_t *t, sl_ident_t stream, sl_ident_t topic,
                                      const char *name)
{
    sl_buf_reset(&t->body);
    sl_create_consumer_group_request_t q = {
        .stream = stream, .topic = topic, .name = sl_span_str(name)};
    assert_int_equal(sl_create_consumer_group_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_group_ref(tm_t *t, sl_ident_t stream, sl_ident_t topic,
                                          sl_ident_t group)
{
    sl_buf_reset(&t->body);
    sl_group_target_t q = {.stream = stream, .topic = topic, .group = group};
    assert_int_equal(sl_join_consumer_group_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

/* CreateUser admitted body; perms (an encoded set) may be empty for none. */
static inline sl_span_t tm_body_user(tm_t *t, const char *name, uint8_t status, sl_span_t perms)
{
    sl_buf_reset(&t->body);
    sl_create_user_request_t q = {
        .username = sl_span_str(name),
        .status = status,
        .has_permissions = perms.len > 0,
        .permissions = perms,
    };
    assert_int_equal(sl_meta_admit_create_user_encode(&t->body, &q, sl_span_str("$argon2id$h")), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_user_ref(tm_t *t, sl_ident_t user)
{
    sl_buf_reset(&t->body);
    sl_delete_user_request_t q = {.user_id = user};
    assert_int_equal(sl_delete_user_request_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

static inline sl_span_t tm_body_register(tm_t *t, uint32_t user)
{
    sl_buf_reset(&t->body);
    sl_meta_admit_register_t q = {
        .user_id = user,
        .version = {SL_PROTOCOL_VERSION, sl_span_str("rust-sdk"), sl_span_str("0.1")},
    };
    assert_int_equal(sl_meta_admit_register_encode(&t->body, &q), 0);
    return sl_buf_span(&t->body);
}

/* Registers client for user; returns the session (the entry's op). */
static inline uint64_t tm_register(tm_t *t, sl_u128_t client, uint32_t user)
{
    uint64_t session = t->op;
    sl_span_t reply = tm_apply_full(t, SL_OP_REGISTER, client, 0, (sl_u128_t){0, 0}, user,
                                    tm_body_register(t, user));
    sl_span_t payload;
    assert_int_equal(tm_result(reply, &payload), 0);
    return session;
}

/* Encodes a permission set into buf (reset first) and returns its bytes. */
static inline sl_span_t tm_perms(sl_buf_t *buf, const sl_permissions_t *p)
{
    sl_buf_reset(buf);
    assert_true(sl_permissions_encode(buf, p));
    return sl_buf_span(buf);
}

/* The snapshot image of a state, in a fresh malloc'd buffer. */
static inline sl_buf_t tm_encode(const sl_meta_t *m)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    assert_int_equal(sl_meta_encode(m, &b), 0);
    return b;
}

static inline void tm_assert_same_state(const sl_meta_t *a, const sl_meta_t *b)
{
    sl_buf_t x = tm_encode(a), y = tm_encode(b);
    assert_bytes_equal(x.data, x.len, y.data, y.len);
    sl_buf_free(&x);
    sl_buf_free(&y);
}

#endif
