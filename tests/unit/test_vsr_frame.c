/* src/vsr/frame, handshake and client_table: every replica-plane header
 * round-trips; every seal catches a flipped byte; every rule of cluster.md
 * the decoder enforces is exercised with a frame that breaks it; the state
 * manifest, the handshake's MACs and checks, and the client table. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "vsr/blake3.h"
#include "vsr/client_table.h"
#include "vsr/frame.h"
#include "vsr/handshake.h"
#include "wire/header.h"

#define FRAME_MAX (1u << 20)

static const sl_u128_t cluster = {0x1122334455667788ull, 0x99aabbccddeeff00ull};

/* Encodes f with body into a fresh buffer (header + body). */
static uint8_t *build(const sl_vsr_frame_t *f, const void *body, size_t body_len, size_t *len)
{
    *len = SL_HEADER_SIZE + body_len;
    uint8_t *p = calloc(1, *len);
    assert_non_null(p);
    if (body_len)
        memcpy(p + SL_HEADER_SIZE, body, body_len);
    sl_vsr_header_encode(p, f, sl_span(p + SL_HEADER_SIZE, body_len));
    return p;
}

static sl_vsr_verdict_t decode(const uint8_t *p, size_t len, sl_vsr_frame_t *out)
{
    return sl_vsr_frame_decode(p, len, FRAME_MAX, out);
}

static sl_vsr_frame_t base(uint8_t command)
{
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = command;
    f.h.cluster = cluster;
    f.h.view = 7;
    f.h.replica = 2;
    return f;
}

static sl_vsr_prepare_t prepare_fields(uint64_t op, sl_u128_t parent)
{
    return (sl_vsr_prepare_t){.client = {42, 0},
                              .parent = parent,
                              .request_checksum = {0x55, 0},
                              .op = op,
                              .commit = op - 1,
                              .timestamp = 1000 + op,
                              .request = 9,
                              .operation = SL_OP_CREATE_STREAM,
                              .group = SL_VSR_GROUP_METADATA,
                              .user_id = 3};
}

/* --- round trips and seals
 * ------------------------------------------------------------------------ */

static void test_prepare_round_trip_and_identity(void **state)
{
    (void)state;
    sl_vsr_frame_t f = base(SL_VSR_PREPARE);
    f.u.prepare = prepare_fields(5, (sl_u128_t){77, 0});
    size_t len;
    uint8_t *p = build(&f, "body!", 5, &len);
    sl_vsr_frame_t d;
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(d.h.command, SL_VSR_PREPARE);
    assert_int_equal(d.h.view, 7);
    assert_int_equal(d.h.replica, 2);
    assert_int_equal(d.u.prepare.op, 5);
    assert_int_equal(d.u.prepare.parent.lo, 77);
    assert_int_equal(d.u.prepare.timestamp, 1005);
    assert_int_equal(d.u.prepare.user_id, 3);
    assert_int_equal(d.body.len, 5);
    /* The identity covers the header but not the view: re-sent in a later
     * view, the prepare is the same prepare. */
    sl_u128_t identity = d.h.checksum;
    assert_true(sl_u128_eq(identity, sl_vsr_prepare_identity(p)));
    sl_store_u32(p + 52, 99);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_true(sl_u128_eq(d.h.checksum, identity));
    /* A RepairPrepare is the journaled prepare with the command byte 19. */
    p[60] = SL_VSR_REPAIR_PREPARE;
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_true(sl_u128_eq(sl_vsr_prepare_identity(p), identity));
    /* Any other header byte is covered. */
    for (size_t i = 16; i < SL_HEADER_SIZE; i++) {
        if (i >= 52 && i < 56)
            continue;
        p[i] ^= 0x01;
        sl_vsr_verdict_t v = decode(p, len, &d);
        assert_true(v == SL_VSR_BAD_SEAL || v == SL_VSR_BAD_SIZE || v == SL_VSR_BAD_COMMAND);
        p[i] ^= 0x01;
    }
    /* The body seal (metadata plane). */
    p[SL_HEADER_SIZE] ^= 0x20;
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_BODY);
    free(p);
}

static void test_prepare_rules(void **state)
{
    (void)state;
    sl_vsr_frame_t f = base(SL_VSR_PREPARE);
    f.u.prepare = prepare_fields(5, (sl_u128_t){1, 0});
    size_t len;
    /* A partition-plane prepare carries no body seal. */
    f.u.prepare.group = sl_vsr_group_partition(3, 2, 1);
    uint8_t *p = build(&f, "batch", 5, &len);
    sl_vsr_frame_t d;
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_true(sl_u128_is_zero(d.h.checksum_body));
    free(p);
    /* Non-zero reserved bytes are refused even with a valid identity. */
    f.u.prepare.group = SL_VSR_GROUP_METADATA;
    p = build(&f, NULL, 0, &len);
    p[240] = 1;
    sl_store_u128(p, sl_vsr_prepare_identity(p));
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* An unsealed prepare (identity 0) is refused: replicas seal. */
    p = build(&f, NULL, 0, &len);
    memset(p, 0, 16);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_SEAL);
    free(p);
    /* commit must be below op; op 0 is no op. */
    f.u.prepare.commit = 4;
    f.u.prepare.op = 5;
    p = build(&f, NULL, 0, &len);
    sl_store_u64(p + 184, 5); /* commit = op */
    sl_store_u128(p, sl_vsr_prepare_identity(p));
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
}

static void test_sealed_frames_round_trip(void **state)
{
    (void)state;
    sl_vsr_frame_t frames[10];
    frames[0] = base(SL_VSR_PREPARE_OK);
    frames[0].u.prepare_ok = (sl_vsr_prepare_ok_t){.parent = {1, 2},
                                                   .prepare_checksum = {3, 4},
                                                   .op = 10,
                                                   .commit = 8,
                                                   .timestamp = 11,
                                                   .request = 12,
                                                   .operation = SL_OP_CREATE_USER,
                                                   .group = SL_VSR_GROUP_METADATA};
    frames[1] = base(SL_VSR_COMMIT);
    frames[1].u.commit = (sl_vsr_commit_t){.commit_checksum = {9, 0},
                                           .timestamp_monotonic = 77,
                                           .commit = 40,
                                           .group = SL_VSR_GROUP_METADATA};
    frames[2] = base(SL_VSR_START_VIEW_CHANGE);
    frames[2].u.start_view_change.group = SL_VSR_GROUP_METADATA;
    frames[3] = base(SL_VSR_REQUEST_START_VIEW);
    frames[3].u.request_start_view = (sl_vsr_request_start_view_t){SL_VSR_GROUP_METADATA, {5, 6}};
    frames[4] = base(SL_VSR_REQUEST_PREPARES);
    frames[4].u.request_prepares = (sl_vsr_request_prepares_t){{7, 8}, 3, 9, SL_VSR_GROUP_METADATA};
    frames[5] = base(SL_VSR_REPAIR_DONE);
    frames[5].u.repair_end = (sl_vsr_repair_end_t){{1, 1}, 9, SL_VSR_GROUP_METADATA};
    frames[6] = base(SL_VSR_RANGE_EVICTED);
    frames[6].u.repair_end = (sl_vsr_repair_end_t){{1, 1}, 4, SL_VSR_GROUP_METADATA};
    frames[7] = base(SL_VSR_REQUEST_STATE_TRANSFER);
    frames[7].u.request_state = (sl_vsr_request_state_t){{2, 2}, SL_VSR_GROUP_METADATA};
    frames[8] = base(SL_VSR_REQUEST_STATE_CHUNK);
    frames[8].u.request_chunk = (sl_vsr_request_chunk_t){{3, 3}, 100, SL_VSR_GROUP_METADATA, 64, 1};
    frames[9] = base(SL_VSR_STATE_TRANSFER_TARGET);
    frames[9].u.state_target = (sl_vsr_state_target_t){.nonce = {4, 4},
                                                       .group = SL_VSR_GROUP_METADATA,
                                                       .unavailable_transient = 1,
                                                       .commit_max = 5};
    for (size_t i = 0; i < SL_ARRAY_LEN(frames); i++) {
        size_t len;
        uint8_t *p = build(&frames[i], NULL, 0, &len);
        sl_vsr_frame_t d;
        assert_int_equal(decode(p, len, &d), SL_VSR_OK);
        /* Re-encoding what was decoded gives the same bytes. */
        uint8_t again[SL_HEADER_SIZE];
        sl_vsr_header_encode(again, &d, sl_span(NULL, 0));
        assert_bytes_equal(again, SL_HEADER_SIZE, p, SL_HEADER_SIZE);
        /* The frame seal covers bytes 16..256. */
        for (size_t b = 16; b < SL_HEADER_SIZE; b++) {
            p[b] ^= 0x80;
            sl_vsr_verdict_t v = decode(p, len, &d);
            assert_true(v == SL_VSR_BAD_SEAL || v == SL_VSR_BAD_SIZE || v == SL_VSR_BAD_COMMAND);
            p[b] ^= 0x80;
        }
        free(p);
    }
}

static void test_size_and_command_checks(void **state)
{
    (void)state;
    sl_vsr_frame_t f = base(SL_VSR_COMMIT);
    f.u.commit.group = SL_VSR_GROUP_METADATA;
    size_t len;
    uint8_t *p = build(&f, NULL, 0, &len);
    sl_vsr_frame_t d;
    assert_int_equal(sl_vsr_frame_decode(p, 255, FRAME_MAX, &d), SL_VSR_BAD_SIZE);
    assert_int_equal(sl_vsr_frame_decode(p, len, 255, &d), SL_VSR_BAD_SIZE);
    /* A Commit must be header-only even when its size says otherwise. */
    uint8_t big[SL_HEADER_SIZE + 8] = {0};
    memcpy(big, p, SL_HEADER_SIZE);
    sl_store_u32(big + 48, sizeof(big));
    sl_store_u128(big, sl_vsr_frame_seal(big));
    assert_int_equal(sl_vsr_frame_decode(big, sizeof(big), FRAME_MAX, &d), SL_VSR_BAD_FIELD);
    /* Client-plane and undeclared command bytes are not replica frames. */
    static const uint8_t not_replica[] = {0, 1, 4, 5, 8, 13, 30, 255};
    for (size_t i = 0; i < SL_ARRAY_LEN(not_replica); i++) {
        p[60] = not_replica[i];
        assert_int_equal(decode(p, len, &d), SL_VSR_BAD_COMMAND);
    }
    free(p);
    /* A group cluster.md 5 cannot produce. */
    f.u.commit.group = UINT64_C(1) << 60;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
}

/* --- view-change suffixes
 * --------------------------------------------------------------------------- */

/* A suffix of count prepares from op down, chained. */
static uint8_t *suffix(uint64_t op, uint32_t count)
{
    uint8_t *body = calloc(count ? count : 1, SL_HEADER_SIZE);
    assert_non_null(body);
    sl_u128_t parent = {0, 0};
    for (uint32_t k = count; k > 0; k--) {
        uint64_t x = op - (k - 1);
        sl_vsr_frame_t f = base(SL_VSR_PREPARE);
        f.u.prepare = prepare_fields(x, parent);
        uint8_t *h = body + (size_t)(k - 1) * SL_HEADER_SIZE;
        sl_vsr_header_encode(h, &f, sl_span("b", 1));
        sl_store_u32(h + 48, SL_HEADER_SIZE + 1);
        parent = sl_load_u128(h);
    }
    return body;
}

static uint8_t *dvc(uint64_t op, uint32_t count, const uint8_t *body, sl_u128_t nack,
                    sl_u128_t present, size_t *len)
{
    sl_vsr_frame_t f = base(SL_VSR_DO_VIEW_CHANGE);
    f.u.do_view_change = (sl_vsr_do_view_change_t){.op = op,
                                                   .commit = op - 1,
                                                   .group = SL_VSR_GROUP_METADATA,
                                                   .log_view = 6,
                                                   .nack_bitset = nack,
                                                   .present_bitset = present};
    return build(&f, body, (size_t)count * SL_HEADER_SIZE, len);
}

static void test_do_view_change_rules(void **state)
{
    (void)state;
    uint8_t *body = suffix(20, 4);
    size_t len;
    sl_vsr_frame_t d;
    uint8_t *p = dvc(20, 4, body, (sl_u128_t){0x2, 0}, (sl_u128_t){0x5, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(d.u.do_view_change.log_view, 6);
    sl_vsr_suffix_entry_t e;
    assert_int_equal(sl_vsr_suffix_entry(d.body, 1, 20, &e), SL_VSR_OK);
    assert_int_equal(e.prepare.op, 19);
    assert_false(e.blank);
    free(p);
    /* Bits above the suffix, a nack on a present entry. */
    p = dvc(20, 4, body, (sl_u128_t){0x10, 0}, (sl_u128_t){0, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    p = dvc(20, 4, body, (sl_u128_t){0x1, 0}, (sl_u128_t){0x1, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* A blank entry (a header the sender lacks) cannot be present. */
    sl_vsr_suffix_blank(body + SL_HEADER_SIZE, 19);
    p = dvc(20, 4, body, (sl_u128_t){0x2, 0}, (sl_u128_t){0x1, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(sl_vsr_suffix_entry(d.body, 1, 20, &e), SL_VSR_OK);
    assert_true(e.blank);
    free(p);
    p = dvc(20, 4, body, (sl_u128_t){0, 0}, (sl_u128_t){0x2, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_SUFFIX);
    free(p);
    free(body);
    /* Entries out of order, a broken hash chain, a body not in 256s. */
    body = suffix(20, 4);
    memcpy(body + SL_HEADER_SIZE, body + 2 * SL_HEADER_SIZE, SL_HEADER_SIZE);
    p = dvc(20, 4, body, (sl_u128_t){0, 0}, (sl_u128_t){0, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_SUFFIX);
    free(p);
    free(body);
    body = suffix(20, 4);
    uint8_t *other = suffix(19, 1);
    sl_store_u64(other + 200, 1234); /* another prepare at op 19 */
    sl_store_u128(other, sl_vsr_prepare_identity(other));
    memcpy(body + SL_HEADER_SIZE, other, SL_HEADER_SIZE);
    p = dvc(20, 4, body, (sl_u128_t){0, 0}, (sl_u128_t){0, 0}, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_SUFFIX);
    free(p);
    free(other);
    sl_vsr_frame_t f = base(SL_VSR_DO_VIEW_CHANGE);
    f.u.do_view_change = (sl_vsr_do_view_change_t){.op = 20, .group = SL_VSR_GROUP_METADATA};
    p = build(&f, body, 100, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* log_view above the view, commit above op. */
    f.u.do_view_change.log_view = 8;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    f.u.do_view_change.log_view = 1;
    f.u.do_view_change.commit = 21;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    free(body);
}

static void test_start_view(void **state)
{
    (void)state;
    uint8_t *body = suffix(9, 9); /* down to op 1 */
    sl_vsr_frame_t f = base(SL_VSR_START_VIEW);
    f.u.start_view = (sl_vsr_start_view_t){
        .op = 9, .commit = 7, .group = SL_VSR_GROUP_METADATA, .incarnation = {0xabc, 1}};
    size_t len;
    uint8_t *p = build(&f, body, 9 * SL_HEADER_SIZE, &len);
    sl_vsr_frame_t d;
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(d.u.start_view.incarnation.lo, 0xabc);
    assert_int_equal(d.body.len, 9 * SL_HEADER_SIZE);
    /* The body seal covers the suffix. */
    p[SL_HEADER_SIZE + 300] ^= 1;
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_BODY);
    free(p);
    /* More entries than ops exist below op. */
    f.u.start_view.op = 8;
    f.u.start_view.commit = 1;
    p = build(&f, body, 9 * SL_HEADER_SIZE, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    free(body);
}

/* --- the rest of the table of rules
 * -------------------------------------------------------------------- */

static void test_repair_and_state_rules(void **state)
{
    (void)state;
    size_t len;
    sl_vsr_frame_t d;
    sl_vsr_frame_t f = base(SL_VSR_REQUEST_PREPARES);
    f.u.request_prepares = (sl_vsr_request_prepares_t){{1, 0}, 5, 5, SL_VSR_GROUP_METADATA};
    uint8_t *p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    sl_store_u64(p + 144, 6); /* from > to */
    sl_store_u128(p, sl_vsr_frame_seal(p));
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    sl_store_u64(p + 144, 0); /* from 0 */
    sl_store_u128(p, sl_vsr_frame_seal(p));
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* RequestStateChunk: len 0 is invalid. */
    f = base(SL_VSR_REQUEST_STATE_CHUNK);
    f.u.request_chunk = (sl_vsr_request_chunk_t){{1, 0}, 0, SL_VSR_GROUP_METADATA, 1, 0};
    p = build(&f, NULL, 0, &len);
    sl_store_u32(p + 160, 0);
    sl_store_u128(p, sl_vsr_frame_seal(p));
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* StateTransferTarget: a refusal is header-only, transient only with it. */
    f = base(SL_VSR_STATE_TRANSFER_TARGET);
    f.u.state_target = (sl_vsr_state_target_t){.group = SL_VSR_GROUP_METADATA, .available = 0};
    p = build(&f, "x", 1, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    f.u.state_target.available = 1;
    f.u.state_target.unavailable_transient = 1;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* An offer's manifest must decode. */
    f.u.state_target.unavailable_transient = 0;
    sl_vsr_artifact_t a[2] = {{0, 10, 100, 0xaa}, {1, 10, 50, 0xbb}};
    sl_buf_t m;
    sl_buf_init(&m, 0);
    sl_vsr_manifest_encode(&m, a, 2);
    p = build(&f, m.data, m.len, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    free(p);
    /* The offer names the identity of the prepare at its commit_op
     * (bytes 176..192); a refusal carries none. */
    f.u.state_target.commit_checksum = (sl_u128_t){0x1234, 0x5678};
    p = build(&f, m.data, m.len, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(sl_load_u64(p + 176), 0x1234);
    assert_true(sl_u128_eq(d.u.state_target.commit_checksum, f.u.state_target.commit_checksum));
    free(p);
    f.u.state_target.available = 0;
    f.u.state_target.unavailable_transient = 1;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    f.u.state_target.available = 1;
    f.u.state_target.unavailable_transient = 0;
    f.u.state_target.commit_checksum = (sl_u128_t){0, 0};
    p = build(&f, m.data, m.len - 1, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    sl_buf_free(&m);
    /* A StateChunk carries bytes without a seal of their own. */
    f = base(SL_VSR_STATE_CHUNK);
    f.u.state_chunk = (sl_vsr_state_chunk_t){{9, 9}, 64, SL_VSR_GROUP_METADATA, 1};
    p = build(&f, "chunkdata", 9, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(d.u.state_chunk.offset, 64);
    assert_int_equal(d.body.len, 9);
    free(p);
}

static void test_forward_frames(void **state)
{
    (void)state;
    size_t len;
    sl_vsr_frame_t d;
    sl_vsr_frame_t f = base(SL_VSR_FORWARD_REGISTER_RESULT);
    f.u.forward_register_result =
        (sl_vsr_forward_register_result_t){{1, 0}, {2, 0}, 17, 4, SL_VSR_FWD_REGISTER_OK};
    uint8_t *p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    assert_int_equal(d.u.forward_register_result.epoch, 17);
    free(p);
    /* epoch and watermark must be 0 unless Ok; outcomes above 6 do not exist. */
    f.u.forward_register_result.outcome = 1;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    f.u.forward_register_result = (sl_vsr_forward_register_result_t){{1, 0}, {2, 0}, 0, 0, 7};
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    /* ForwardLogout: session and request non-zero, client and nonce too. */
    f = base(SL_VSR_FORWARD_LOGOUT);
    f.u.forward_logout = (sl_vsr_forward_logout_t){{1, 0}, {2, 0}, 5, 6};
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_OK);
    free(p);
    f.u.forward_logout.session = 0;
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD);
    free(p);
    f = base(SL_VSR_FORWARD_LOGOUT_RESULT);
    f.u.forward_logout_result = (sl_vsr_forward_logout_result_t){{1, 0}, {2, 0}, 9, 2};
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD); /* commit only with Ok */
    free(p);
    f = base(SL_VSR_FORWARD_REGISTER);
    f.u.forward_register = (sl_vsr_forward_register_t){{0, 0}, {2, 0}, 1};
    p = build(&f, NULL, 0, &len);
    assert_int_equal(decode(p, len, &d), SL_VSR_BAD_FIELD); /* client 0 */
    free(p);
}

static void test_groups(void **state)
{
    (void)state;
    assert_int_equal(sl_vsr_group_partition(1, 2, 3), (UINT64_C(1) << 32) | (2u << 20) | 3u);
    assert_int_equal(sl_vsr_group_partition(SL_VSR_STREAMS_MAX, 0, 0), 0);
    assert_int_equal(sl_vsr_group_partition(0, SL_VSR_TOPICS_MAX, 0), 0);
    assert_int_equal(sl_vsr_group_partition(0, 0, SL_VSR_PARTITIONS_MAX), 0);
    assert_true(sl_vsr_group_valid(SL_VSR_GROUP_METADATA));
    assert_true(sl_vsr_group_valid(sl_vsr_group_partition(SL_VSR_STREAMS_MAX - 1, 4095, 999999)));
    assert_false(sl_vsr_group_valid(UINT64_C(1) << 52));
    assert_false(sl_vsr_group_valid(1000000));
    assert_string_equal(sl_vsr_command_name(SL_VSR_DO_VIEW_CHANGE), "DoViewChange");
    assert_null(sl_vsr_command_name(SL_COMMAND_REPLY));
    assert_true(sl_vsr_command_sealed(SL_VSR_COMMIT));
    assert_false(sl_vsr_command_sealed(SL_VSR_PREPARE));
    assert_false(sl_vsr_command_sealed(SL_VSR_REPLICA_HELLO));
}

/* --- the state manifest
 * -------------------------------------------------------------------------------- */

static void test_manifest(void **state)
{
    (void)state;
    sl_vsr_artifact_t a[2] = {{0, 128, 4096, 0x1234}, {1, 128, 77, 0x5678}};
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_vsr_manifest_encode(&b, a, 2);
    /* "ISM1", count, entry_len 25, 2 x 25 bytes, 8-byte trailer. */
    assert_int_equal(b.len, 4 + 4 + 1 + 50 + 8);
    assert_memory_equal(b.data, "ISM1", 4);
    sl_vsr_artifact_t got[4];
    uint32_t count;
    assert_int_equal(sl_vsr_manifest_decode(sl_buf_span(&b), got, 4, &count), 0);
    assert_int_equal(count, 2);
    assert_int_equal(got[0].len, 4096);
    assert_int_equal(got[1].checksum, 0x5678);
    assert_int_equal(sl_vsr_manifest_decode(sl_buf_span(&b), got, 1, &count), -1);
    for (size_t i = 0; i < b.len; i++) {
        b.data[i] ^= 0x40;
        assert_int_equal(sl_vsr_manifest_decode(sl_buf_span(&b), got, 4, &count), -1);
        b.data[i] ^= 0x40;
    }
    /* Longer entries: the tail of each is skipped; shorter: refused. */
    sl_buf_t wide;
    sl_buf_init(&wide, 0);
    sl_put_bytes(&wide, "ISM1", 4);
    sl_put_u32(&wide, 1);
    sl_put_u8(&wide, 30);
    sl_put_u8(&wide, 1);
    sl_put_u64(&wide, 5);
    sl_put_u64(&wide, 6);
    sl_put_u64(&wide, 7);
    sl_put_zeros(&wide, 5);
    sl_put_u64(&wide, sl_xxh3_64(wide.data, wide.len));
    assert_int_equal(sl_vsr_manifest_decode(sl_buf_span(&wide), got, 4, &count), 0);
    assert_int_equal(got[0].checksum, 7);
    wide.data[8] = 24;
    sl_store_u64(wide.data + wide.len - 8, sl_xxh3_64(wide.data, wide.len - 8));
    assert_int_equal(sl_vsr_manifest_decode(sl_buf_span(&wide), got, 4, &count), -1);
    sl_buf_free(&wide);
    sl_buf_free(&b);
}

/* --- the handshake
 * ------------------------------------------------------------------------------------ */

static void test_handshake(void **state)
{
    (void)state;
    sl_u128_t id = sl_vsr_cluster_id(sl_span_str("iggy-cluster"));
    uint8_t digest[32];
    sl_blake3_hash("iggy-cluster", 12, digest);
    assert_true(sl_u128_eq(id, sl_load_u128(digest)));
    uint8_t key[32], previous[32];
    sl_vsr_auth_key(sl_span_str("secret"), key);
    sl_vsr_auth_key(sl_span_str("old-secret"), previous);
    assert_memory_not_equal(key, previous, 32);
    sl_vsr_mac_input_t in = {
        .cluster = id, .dialer = 0, .acceptor = 2, .direction = SL_VSR_MAC_DIALER};
    memset(in.dialer_nonce, 0x11, 32);
    memset(in.acceptor_nonce, 0x22, 32);
    uint8_t mac[32], other[32];
    sl_vsr_auth_mac(key, &in, mac);
    assert_true(sl_vsr_auth_verify(key, NULL, &in, mac));
    /* Each input changes the MAC: the direction, a nonce, the binding. */
    in.direction = SL_VSR_MAC_ACCEPTOR;
    sl_vsr_auth_mac(key, &in, other);
    assert_memory_not_equal(mac, other, 32);
    assert_false(sl_vsr_auth_verify(key, NULL, &in, mac));
    in.direction = SL_VSR_MAC_DIALER;
    in.acceptor_nonce[31] ^= 1;
    assert_false(sl_vsr_auth_verify(key, NULL, &in, mac));
    in.acceptor_nonce[31] ^= 1;
    in.binding = 1;
    assert_false(sl_vsr_auth_verify(key, NULL, &in, mac));
    in.binding = 0;
    /* During a rotation the previous secret's MAC is accepted. */
    sl_vsr_auth_mac(previous, &in, other);
    assert_false(sl_vsr_auth_verify(key, NULL, &in, other));
    assert_true(sl_vsr_auth_verify(key, previous, &in, other));

    /* The acceptor's checks, in cluster.md's order. */
    uint8_t nonce[32];
    memset(nonce, 7, sizeof(nonce));
    uint8_t hdr[SL_HEADER_SIZE];
    sl_vsr_handshake_encode(hdr, SL_VSR_REPLICA_HELLO, id, 1, nonce, NULL, 0);
    sl_vsr_frame_t f;
    assert_int_equal(sl_vsr_frame_decode(hdr, SL_HEADER_SIZE, FRAME_MAX, &f), SL_VSR_OK);
    assert_int_equal(sl_vsr_hello_check(&f, id, 2, 3, true), SL_VSR_HELLO_OK);
    assert_int_equal(sl_vsr_hello_check(&f, cluster, 2, 3, true), SL_VSR_HELLO_CLUSTER_MISMATCH);
    assert_int_equal(sl_vsr_hello_check(&f, id, 1, 3, true), SL_VSR_HELLO_DIRECTIONAL_RULE);
    assert_int_equal(sl_vsr_hello_check(&f, id, 2, 1, true), SL_VSR_HELLO_DIRECTIONAL_RULE);
    sl_vsr_handshake_encode(hdr, SL_VSR_REPLICA_HELLO, id, 1, NULL, NULL, 0);
    assert_int_equal(sl_vsr_frame_decode(hdr, SL_HEADER_SIZE, FRAME_MAX, &f), SL_VSR_OK);
    assert_int_equal(sl_vsr_hello_check(&f, id, 2, 3, true), SL_VSR_HELLO_AUTH_REQUIRED);
    assert_int_equal(sl_vsr_hello_check(&f, id, 2, 3, false), SL_VSR_HELLO_OK);
    sl_vsr_handshake_encode(hdr, SL_VSR_REPLICA_FINISH, id, 1, nonce, mac, 0);
    assert_int_equal(sl_vsr_frame_decode(hdr, SL_HEADER_SIZE, FRAME_MAX, &f), SL_VSR_OK);
    assert_memory_equal(f.u.handshake.mac, mac, 32);
    assert_int_equal(sl_vsr_hello_check(&f, id, 2, 3, true), SL_VSR_HELLO_UNKNOWN_COMMAND);
}

/* --- the client table
 * ------------------------------------------------------------------------------------ */

static sl_u128_t cid(uint64_t n)
{
    return (sl_u128_t){n, 0x10};
}

static void test_client_table(void **state)
{
    (void)state;
    sl_vsr_clients_t t;
    assert_int_equal(sl_vsr_clients_init(&t, 3, 16), 0);
    sl_vsr_client_t *c = sl_vsr_clients_register(&t, cid(5), 10, 1);
    sl_vsr_clients_commit(&t, c, 0, (sl_u128_t){0, 0}, 10, 100, SL_OP_REGISTER, sl_span("reg", 3));
    c = sl_vsr_clients_register(&t, cid(2), 11, 1);
    sl_vsr_clients_commit(&t, c, 0, (sl_u128_t){0, 0}, 11, 101, SL_OP_REGISTER, sl_span("r2", 2));
    c = sl_vsr_clients_find(&t, cid(5));
    assert_non_null(c);
    sl_vsr_clients_commit(&t, c, 4, (sl_u128_t){9, 0}, 12, 102, SL_OP_CREATE_STREAM,
                          sl_span("reply", 5));
    assert_int_equal(c->request, 4);
    assert_true(c->has_reply);
    /* A reply above reply_max is not kept (a retry then gets 59). */
    sl_vsr_clients_commit(&t, c, 5, (sl_u128_t){9, 0}, 13, 103, SL_OP_CREATE_STREAM,
                          sl_span("0123456789abcdefXYZ", 19));
    assert_false(c->has_reply);
    assert_int_equal(c->request, 5);
    /* A rebind keeps the watermark. */
    c = sl_vsr_clients_register(&t, cid(5), 14, 1);
    assert_int_equal(c->session, 14);
    assert_int_equal(c->request, 5);
    c = sl_vsr_clients_register(&t, cid(9), 15, 2);
    assert_int_equal(t.count, 3);
    /* Full: the entry whose latest commit is oldest (client 2, op 11) goes. */
    c = sl_vsr_clients_register(&t, cid(1), 16, 2);
    assert_int_equal(t.count, 3);
    assert_null(sl_vsr_clients_find(&t, cid(2)));
    assert_non_null(sl_vsr_clients_find(&t, cid(5)));
    assert_non_null(sl_vsr_clients_find(&t, cid(9)));
    sl_vsr_clients_commit(&t, c, 1, (sl_u128_t){0, 0}, 17, 104, SL_OP_CREATE_TOPIC,
                          sl_span("t", 1));

    /* The encoding round-trips and refuses damage. */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_vsr_clients_encode(&t, &b);
    assert_memory_equal(b.data, "ICT2", 4);
    sl_vsr_clients_t u;
    assert_int_equal(sl_vsr_clients_init(&u, 3, 16), 0);
    assert_int_equal(sl_vsr_clients_decode(&u, sl_buf_span(&b)), 0);
    assert_int_equal(u.count, 3);
    sl_vsr_client_t *x = sl_vsr_clients_find(&u, cid(1));
    assert_non_null(x);
    assert_int_equal(x->reply_len, 1);
    assert_int_equal(x->reply[0], 't');
    sl_buf_t again;
    sl_buf_init(&again, 0);
    sl_vsr_clients_encode(&u, &again);
    assert_bytes_equal(again.data, again.len, b.data, b.len);
    for (size_t i = 0; i < b.len; i += 7) {
        b.data[i] ^= 0x04;
        assert_int_equal(sl_vsr_clients_decode(&u, sl_buf_span(&b)), -1);
        assert_int_equal(u.count, 0);
        b.data[i] ^= 0x04;
    }
    /* More entries than the table holds. */
    sl_vsr_clients_t small;
    assert_int_equal(sl_vsr_clients_init(&small, 2, 16), 0);
    assert_int_equal(sl_vsr_clients_decode(&small, sl_buf_span(&b)), -1);
    sl_vsr_clients_free(&small);
    sl_buf_free(&again);
    sl_buf_free(&b);
    sl_vsr_clients_free(&u);
    sl_vsr_clients_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prepare_round_trip_and_identity),
        cmocka_unit_test(test_prepare_rules),
        cmocka_unit_test(test_sealed_frames_round_trip),
        cmocka_unit_test(test_size_and_command_checks),
        cmocka_unit_test(test_do_view_change_rules),
        cmocka_unit_test(test_start_view),
        cmocka_unit_test(test_repair_and_state_rules),
        cmocka_unit_test(test_forward_frames),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_handshake),
        cmocka_unit_test(test_client_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
