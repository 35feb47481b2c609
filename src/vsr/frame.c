/* Replica-plane frame codecs: offsets of cluster.md 6..10, seals of
 * cluster.md 3, the state manifest of cluster.md 9. */
#include "vsr/frame.h"

#include <string.h>

#include "base/xxh3.h"

/* --- offsets ------------------------------------------------------------------------ */

enum {
    AT_CHECKSUM = 0,
    AT_CHECKSUM_BODY = 16,
    AT_CLUSTER = 32,
    AT_SIZE = 48,
    AT_VIEW = 52,
    AT_RELEASE = 56,
    AT_COMMAND = 60,
    AT_REPLICA = 61,
    AT_PREFIX_RESERVED = 62, /* 62..128 */
    AT_BODY = 128,           /* the command's own fields start here */
};

/* Prepare (cluster.md 6.1). */
enum {
    PREP_CLIENT = 128,
    PREP_PARENT = 144,
    PREP_REQUEST_CHECKSUM = 160,
    PREP_OP = 176,
    PREP_COMMIT = 184,
    PREP_TIMESTAMP = 192,
    PREP_REQUEST = 200,
    PREP_OPERATION = 208,
    PREP_GROUP = 216,
    PREP_USER_ID = 224,
    PREP_RESERVED = 228,
};

/* --- names ------------------------------------------------------------------------------ */

static const char *const command_names[30] = {
    [SL_VSR_PREPARE] = "Prepare",
    [SL_VSR_PREPARE_OK] = "PrepareOk",
    [SL_VSR_COMMIT] = "Commit",
    [SL_VSR_START_VIEW_CHANGE] = "StartViewChange",
    [SL_VSR_DO_VIEW_CHANGE] = "DoViewChange",
    [SL_VSR_START_VIEW] = "StartView",
    [SL_VSR_REPLICA_HELLO] = "ReplicaHello",
    [SL_VSR_REPLICA_CHALLENGE] = "ReplicaChallenge",
    [SL_VSR_REPLICA_FINISH] = "ReplicaFinish",
    [SL_VSR_REQUEST_START_VIEW] = "RequestStartView",
    [SL_VSR_REQUEST_PREPARES] = "RequestPrepares",
    [SL_VSR_REPAIR_PREPARE] = "RepairPrepare",
    [SL_VSR_REPAIR_DONE] = "RepairDone",
    [SL_VSR_RANGE_EVICTED] = "RangeEvicted",
    [SL_VSR_REQUEST_STATE_TRANSFER] = "RequestStateTransfer",
    [SL_VSR_STATE_TRANSFER_TARGET] = "StateTransferTarget",
    [SL_VSR_REQUEST_STATE_CHUNK] = "RequestStateChunk",
    [SL_VSR_STATE_CHUNK] = "StateChunk",
    [SL_VSR_FORWARD_REGISTER] = "ForwardRegister",
    [SL_VSR_FORWARD_REGISTER_RESULT] = "ForwardRegisterResult",
    [SL_VSR_FORWARD_LOGOUT] = "ForwardLogout",
    [SL_VSR_FORWARD_LOGOUT_RESULT] = "ForwardLogoutResult",
};

const char *sl_vsr_command_name(uint8_t command)
{
    return command < SL_ARRAY_LEN(command_names) ? command_names[command] : NULL;
}

bool sl_vsr_command_sealed(uint8_t command)
{
    switch (command) {
    case SL_VSR_PREPARE_OK:
    case SL_VSR_COMMIT:
    case SL_VSR_START_VIEW_CHANGE:
    case SL_VSR_DO_VIEW_CHANGE:
    case SL_VSR_START_VIEW:
    case SL_VSR_REQUEST_START_VIEW:
    case SL_VSR_REQUEST_PREPARES:
    case SL_VSR_REPAIR_DONE:
    case SL_VSR_RANGE_EVICTED:
    case SL_VSR_REQUEST_STATE_TRANSFER:
    case SL_VSR_STATE_TRANSFER_TARGET:
    case SL_VSR_REQUEST_STATE_CHUNK:
    case SL_VSR_STATE_CHUNK:
    case SL_VSR_FORWARD_REGISTER:
    case SL_VSR_FORWARD_REGISTER_RESULT:
    case SL_VSR_FORWARD_LOGOUT:
    case SL_VSR_FORWARD_LOGOUT_RESULT:
        return true;
    default:
        return false;
    }
}

const char *sl_vsr_verdict_name(sl_vsr_verdict_t v)
{
    switch (v) {
    case SL_VSR_OK:
        return "ok";
    case SL_VSR_BAD_SIZE:
        return "bad size";
    case SL_VSR_BAD_COMMAND:
        return "bad command";
    case SL_VSR_BAD_SEAL:
        return "bad seal";
    case SL_VSR_BAD_BODY:
        return "bad body seal";
    case SL_VSR_BAD_FIELD:
        return "bad field";
    case SL_VSR_BAD_SUFFIX:
        return "bad suffix";
    }
    return NULL;
}

/* --- groups ------------------------------------------------------------------------------ */

uint64_t sl_vsr_group_partition(uint32_t stream, uint32_t topic, uint32_t partition)
{
    if (stream >= SL_VSR_STREAMS_MAX || topic >= SL_VSR_TOPICS_MAX ||
        partition >= SL_VSR_PARTITIONS_MAX)
        return 0;
    return (uint64_t)stream << 32 | (uint64_t)topic << 20 | partition;
}

bool sl_vsr_group_is_metadata(uint64_t group)
{
    return group == SL_VSR_GROUP_METADATA;
}

bool sl_vsr_group_valid(uint64_t group)
{
    if (group == SL_VSR_GROUP_METADATA)
        return true;
    return (group >> 52) == 0 && (group & 0xFFFFFu) < SL_VSR_PARTITIONS_MAX;
}

/* --- seals -------------------------------------------------------------------------------- */

sl_u128_t sl_vsr_checksum(sl_span_t bytes)
{
    return (sl_u128_t){sl_xxh3_64(bytes.ptr, bytes.len), 0};
}

sl_u128_t sl_vsr_prepare_identity(const uint8_t header[SL_HEADER_SIZE])
{
    uint8_t copy[SL_HEADER_SIZE];
    memcpy(copy, header, sizeof(copy));
    memset(copy + AT_CHECKSUM, 0, 16);
    memset(copy + AT_VIEW, 0, 4);
    copy[AT_COMMAND] = SL_VSR_PREPARE;
    return sl_vsr_checksum(sl_span(copy, sizeof(copy)));
}

sl_u128_t sl_vsr_frame_seal(const uint8_t header[SL_HEADER_SIZE])
{
    return sl_vsr_checksum(sl_span(header + AT_CHECKSUM_BODY, SL_HEADER_SIZE - AT_CHECKSUM_BODY));
}

/* Whether the body of a frame with this command and group carries a body
 * seal (cluster.md 3): metadata-plane prepares and the view-change suffixes. */
static bool body_sealed(uint8_t command, uint64_t group)
{
    switch (command) {
    case SL_VSR_PREPARE:
    case SL_VSR_REPAIR_PREPARE:
        return sl_vsr_group_is_metadata(group);
    case SL_VSR_DO_VIEW_CHANGE:
    case SL_VSR_START_VIEW:
        return true;
    default:
        return false;
    }
}

/* --- prepare headers ----------------------------------------------------------------------------
 */

static void prepare_read(const uint8_t *h, sl_vsr_prepare_t *p)
{
    p->client = sl_load_u128(h + PREP_CLIENT);
    p->parent = sl_load_u128(h + PREP_PARENT);
    p->request_checksum = sl_load_u128(h + PREP_REQUEST_CHECKSUM);
    p->op = sl_load_u64(h + PREP_OP);
    p->commit = sl_load_u64(h + PREP_COMMIT);
    p->timestamp = sl_load_u64(h + PREP_TIMESTAMP);
    p->request = sl_load_u64(h + PREP_REQUEST);
    p->operation = h[PREP_OPERATION];
    p->group = sl_load_u64(h + PREP_GROUP);
    p->user_id = sl_load_u32(h + PREP_USER_ID);
}

static void prepare_write(uint8_t *h, const sl_vsr_prepare_t *p)
{
    sl_store_u128(h + PREP_CLIENT, p->client);
    sl_store_u128(h + PREP_PARENT, p->parent);
    sl_store_u128(h + PREP_REQUEST_CHECKSUM, p->request_checksum);
    sl_store_u64(h + PREP_OP, p->op);
    sl_store_u64(h + PREP_COMMIT, p->commit);
    sl_store_u64(h + PREP_TIMESTAMP, p->timestamp);
    sl_store_u64(h + PREP_REQUEST, p->request);
    h[PREP_OPERATION] = p->operation;
    sl_store_u64(h + PREP_GROUP, p->group);
    sl_store_u32(h + PREP_USER_ID, p->user_id);
}

/* The field rules every Prepare header obeys, wherever it travels: zero
 * release, prefix reserved, padding and tail; op >= 1; commit < op; a
 * declared (non-zero) operation; a valid group. */
static bool prepare_fields_ok(const uint8_t *h, const sl_vsr_prepare_t *p)
{
    return sl_load_u32(h + AT_RELEASE) == 0 &&
           sl_all_zero(h + AT_PREFIX_RESERVED, AT_BODY - AT_PREFIX_RESERVED) &&
           sl_all_zero(h + PREP_OPERATION + 1, 7) &&
           sl_all_zero(h + PREP_RESERVED, SL_HEADER_SIZE - PREP_RESERVED) && p->op >= 1 &&
           p->commit < p->op && p->operation != 0 && sl_vsr_group_valid(p->group);
}

void sl_vsr_suffix_blank(uint8_t out[SL_HEADER_SIZE], uint64_t op)
{
    memset(out, 0, SL_HEADER_SIZE);
    sl_store_u64(out + PREP_OP, op);
}

sl_vsr_verdict_t sl_vsr_suffix_entry(sl_span_t body, uint32_t i, uint64_t op,
                                     sl_vsr_suffix_entry_t *out)
{
    memset(out, 0, sizeof(*out));
    if ((uint64_t)i * SL_HEADER_SIZE + SL_HEADER_SIZE > body.len || (uint64_t)i >= op)
        return SL_VSR_BAD_SUFFIX;
    const uint8_t *h = body.ptr + (size_t)i * SL_HEADER_SIZE;
    uint64_t want_op = op - i;
    out->prepare.op = sl_load_u64(h + PREP_OP);
    if (out->prepare.op != want_op)
        return SL_VSR_BAD_SUFFIX;
    if (h[AT_COMMAND] == 0) {
        /* Blank: nothing but the op. */
        uint8_t blank[SL_HEADER_SIZE];
        sl_vsr_suffix_blank(blank, want_op);
        if (memcmp(blank, h, SL_HEADER_SIZE) != 0)
            return SL_VSR_BAD_SUFFIX;
        out->blank = true;
        return SL_VSR_OK;
    }
    if (h[AT_COMMAND] != SL_VSR_PREPARE || sl_load_u32(h + AT_SIZE) < SL_HEADER_SIZE)
        return SL_VSR_BAD_SUFFIX;
    out->identity = sl_load_u128(h + AT_CHECKSUM);
    if (!sl_u128_eq(out->identity, sl_vsr_prepare_identity(h)))
        return SL_VSR_BAD_SUFFIX;
    prepare_read(h, &out->prepare);
    if (!prepare_fields_ok(h, &out->prepare))
        return SL_VSR_BAD_SUFFIX;
    out->view = sl_load_u32(h + AT_VIEW);
    return SL_VSR_OK;
}

/* Checks every entry of a suffix: shape, and the hash chain between
 * neighbours the sender knows both of (entry i's parent is entry i+1, unless
 * it is 0). */
static sl_vsr_verdict_t suffix_check(sl_span_t body, uint64_t op, uint64_t group)
{
    uint32_t count = (uint32_t)(body.len / SL_HEADER_SIZE);
    sl_vsr_suffix_entry_t above = {.blank = true}; /* all of it set: gcc -O3 cannot tell
                                                     * that i > 0 means it was assigned */
    for (uint32_t i = 0; i < count; i++) {
        sl_vsr_suffix_entry_t e;
        sl_vsr_verdict_t v = sl_vsr_suffix_entry(body, i, op, &e);
        if (v != SL_VSR_OK)
            return v;
        if (!e.blank && e.prepare.group != group)
            return SL_VSR_BAD_SUFFIX;
        /* A zero parent is an unsealed link (cluster.md 3): no claim. */
        if (i > 0 && !e.blank && !above.blank && !sl_u128_is_zero(above.prepare.parent) &&
            !sl_u128_eq(above.prepare.parent, e.identity))
            return SL_VSR_BAD_SUFFIX;
        above = e;
    }
    return SL_VSR_OK;
}

/* --- decoding per command ----------------------------------------------------------------------
 */

static sl_vsr_verdict_t decode_prepare(const uint8_t *h, sl_vsr_frame_t *f)
{
    if (!sl_u128_eq(f->h.checksum, sl_vsr_prepare_identity(h)) || sl_u128_is_zero(f->h.checksum))
        return SL_VSR_BAD_SEAL;
    prepare_read(h, &f->u.prepare);
    if (!prepare_fields_ok(h, &f->u.prepare))
        return SL_VSR_BAD_FIELD;
    return SL_VSR_OK;
}

static sl_vsr_verdict_t decode_prepare_ok(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_prepare_ok_t *p = &f->u.prepare_ok;
    p->parent = sl_load_u128(h + 128);
    p->prepare_checksum = sl_load_u128(h + 144);
    p->op = sl_load_u64(h + 160);
    p->commit = sl_load_u64(h + 168);
    p->timestamp = sl_load_u64(h + 176);
    p->request = sl_load_u64(h + 184);
    p->operation = h[192];
    p->group = sl_load_u64(h + 200);
    if (f->h.size != SL_HEADER_SIZE || p->op == 0 || sl_u128_is_zero(p->prepare_checksum))
        return SL_VSR_BAD_FIELD;
    return SL_VSR_OK;
}

static sl_vsr_verdict_t decode_commit(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_commit_t *c = &f->u.commit;
    c->commit_checksum = sl_load_u128(h + 128);
    c->timestamp_monotonic = sl_load_u64(h + 144);
    c->commit = sl_load_u64(h + 152);
    c->checkpoint_op = sl_load_u64(h + 160);
    c->group = sl_load_u64(h + 168);
    return f->h.size == SL_HEADER_SIZE ? SL_VSR_OK : SL_VSR_BAD_FIELD;
}

/* The bits of a u128 at positions >= count. */
static bool bits_above(sl_u128_t bits, uint32_t count)
{
    if (count >= 128)
        return false;
    if (count >= 64)
        return (bits.hi >> (count - 64)) != 0;
    return bits.hi != 0 || (bits.lo >> count) != 0;
}

static sl_vsr_verdict_t decode_do_view_change(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_do_view_change_t *d = &f->u.do_view_change;
    d->op = sl_load_u64(h + 128);
    d->commit = sl_load_u64(h + 136);
    d->group = sl_load_u64(h + 144);
    d->log_view = sl_load_u32(h + 152);
    d->nack_bitset = sl_load_u128(h + 224);
    d->present_bitset = sl_load_u128(h + 240);
    size_t body = f->body.len;
    uint32_t count = (uint32_t)(body / SL_HEADER_SIZE);
    if (body % SL_HEADER_SIZE != 0 || count > SL_VSR_SUFFIX_MAX || count > d->op ||
        d->log_view > f->h.view || d->commit > d->op || bits_above(d->nack_bitset, count) ||
        bits_above(d->present_bitset, count) || (d->nack_bitset.lo & d->present_bitset.lo) != 0 ||
        (d->nack_bitset.hi & d->present_bitset.hi) != 0)
        return SL_VSR_BAD_FIELD;
    /* The body seal before any suffix entry is looked at. */
    if (!sl_u128_eq(f->h.checksum_body, sl_vsr_checksum(f->body)))
        return SL_VSR_BAD_BODY;
    sl_vsr_verdict_t v = suffix_check(f->body, d->op, d->group);
    if (v != SL_VSR_OK)
        return v;
    /* A blank entry (a header the sender does not know) cannot be served. */
    for (uint32_t i = 0; i < count; i++) {
        bool present =
            i < 64 ? (d->present_bitset.lo >> i) & 1 : (d->present_bitset.hi >> (i - 64)) & 1;
        if (present && f->body.ptr[(size_t)i * SL_HEADER_SIZE + AT_COMMAND] == 0)
            return SL_VSR_BAD_SUFFIX;
    }
    return SL_VSR_OK;
}

static sl_vsr_verdict_t decode_start_view(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_start_view_t *s = &f->u.start_view;
    s->op = sl_load_u64(h + 128);
    s->commit = sl_load_u64(h + 136);
    s->group = sl_load_u64(h + 144);
    s->incarnation = sl_load_u128(h + 240);
    size_t body = f->body.len;
    uint32_t count = (uint32_t)(body / SL_HEADER_SIZE);
    if (body % SL_HEADER_SIZE != 0 || count > SL_VSR_SUFFIX_MAX || count > s->op ||
        s->commit > s->op)
        return SL_VSR_BAD_FIELD;
    if (!sl_u128_eq(f->h.checksum_body, sl_vsr_checksum(f->body)))
        return SL_VSR_BAD_BODY;
    return suffix_check(f->body, s->op, s->group);
}

static sl_vsr_verdict_t decode_request_prepares(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_request_prepares_t *r = &f->u.request_prepares;
    r->nonce = sl_load_u128(h + 128);
    r->from_op = sl_load_u64(h + 144);
    r->to_op = sl_load_u64(h + 152);
    r->group = sl_load_u64(h + 160);
    if (f->h.size != SL_HEADER_SIZE || r->from_op == 0 || r->from_op > r->to_op)
        return SL_VSR_BAD_FIELD;
    return SL_VSR_OK;
}

static sl_vsr_verdict_t decode_state_target(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_state_target_t *t = &f->u.state_target;
    t->nonce = sl_load_u128(h + 128);
    t->commit_op = sl_load_u64(h + 144);
    t->group = sl_load_u64(h + 152);
    t->available = h[160];
    t->unavailable_transient = h[161];
    t->commit_max = sl_load_u64(h + 168);
    t->commit_checksum = sl_load_u128(h + 176);
    if (t->available > 1 || t->unavailable_transient > 1 ||
        (t->available && t->unavailable_transient) ||
        (!t->available && !sl_u128_is_zero(t->commit_checksum)))
        return SL_VSR_BAD_FIELD;
    if (!t->available)
        return f->h.size == SL_HEADER_SIZE ? SL_VSR_OK : SL_VSR_BAD_FIELD;
    /* An offer carries a manifest that must decode as a whole. */
    uint32_t count;
    return sl_vsr_manifest_decode(f->body, NULL, 0, &count) == 0 ? SL_VSR_OK : SL_VSR_BAD_FIELD;
}

static sl_vsr_verdict_t decode_request_chunk(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_request_chunk_t *r = &f->u.request_chunk;
    r->nonce = sl_load_u128(h + 128);
    r->offset = sl_load_u64(h + 144);
    r->group = sl_load_u64(h + 152);
    r->len = sl_load_u32(h + 160);
    r->artifact = sl_load_u32(h + 164);
    return f->h.size == SL_HEADER_SIZE && r->len != 0 ? SL_VSR_OK : SL_VSR_BAD_FIELD;
}

static sl_vsr_verdict_t decode_handshake(const uint8_t *h, sl_vsr_frame_t *f)
{
    sl_vsr_handshake_t *s = &f->u.handshake;
    memcpy(s->nonce, h + 128, 32);
    memcpy(s->mac, h + 160, 32);
    s->status = h[192];
    if (f->h.size != SL_HEADER_SIZE || f->h.release != 0)
        return SL_VSR_BAD_FIELD;
    return SL_VSR_OK;
}

/* Forward frames: header-only, reserved zero, client and nonce non-zero. */
static sl_vsr_verdict_t decode_forward(const uint8_t *h, sl_vsr_frame_t *f)
{
    if (f->h.size != SL_HEADER_SIZE || f->h.release != 0 ||
        !sl_all_zero(h + AT_PREFIX_RESERVED, AT_BODY - AT_PREFIX_RESERVED))
        return SL_VSR_BAD_FIELD;
    bool ok = false;
    switch (f->h.command) {
    case SL_VSR_FORWARD_REGISTER: {
        sl_vsr_forward_register_t *r = &f->u.forward_register;
        r->client = sl_load_u128(h + 128);
        r->nonce = sl_load_u128(h + 144);
        r->user_id = sl_load_u32(h + 160);
        ok = sl_all_zero(h + 164, SL_HEADER_SIZE - 164);
        ok = ok && !sl_u128_is_zero(r->client) && !sl_u128_is_zero(r->nonce);
        break;
    }
    case SL_VSR_FORWARD_REGISTER_RESULT: {
        sl_vsr_forward_register_result_t *r = &f->u.forward_register_result;
        r->nonce = sl_load_u128(h + 128);
        r->client = sl_load_u128(h + 144);
        r->epoch = sl_load_u64(h + 160);
        r->watermark = sl_load_u64(h + 168);
        r->outcome = h[255];
        ok = sl_all_zero(h + 176, 255 - 176) && r->outcome <= SL_VSR_FWD_REGISTER_CLIENT_OWNED;
        ok = ok && (r->outcome == SL_VSR_FWD_REGISTER_OK || (r->epoch == 0 && r->watermark == 0));
        ok = ok && !sl_u128_is_zero(r->client) && !sl_u128_is_zero(r->nonce);
        break;
    }
    case SL_VSR_FORWARD_LOGOUT: {
        sl_vsr_forward_logout_t *r = &f->u.forward_logout;
        r->client = sl_load_u128(h + 128);
        r->nonce = sl_load_u128(h + 144);
        r->session = sl_load_u64(h + 160);
        r->request = sl_load_u64(h + 168);
        ok = sl_all_zero(h + 176, SL_HEADER_SIZE - 176) && r->session != 0 && r->request != 0;
        ok = ok && !sl_u128_is_zero(r->client) && !sl_u128_is_zero(r->nonce);
        break;
    }
    case SL_VSR_FORWARD_LOGOUT_RESULT: {
        sl_vsr_forward_logout_result_t *r = &f->u.forward_logout_result;
        r->nonce = sl_load_u128(h + 128);
        r->client = sl_load_u128(h + 144);
        r->commit = sl_load_u64(h + 160);
        r->outcome = h[255];
        ok = sl_all_zero(h + 168, 255 - 168) && r->outcome <= SL_VSR_FWD_LOGOUT_CANCELED;
        ok = ok && (r->outcome == SL_VSR_FWD_LOGOUT_OK || r->commit == 0);
        ok = ok && !sl_u128_is_zero(r->client) && !sl_u128_is_zero(r->nonce);
        break;
    }
    default:
        break;
    }
    return ok ? SL_VSR_OK : SL_VSR_BAD_FIELD;
}

/* The fields of the remaining small header-only commands; the group of every
 * consensus frame is checked by the caller. */
static sl_vsr_verdict_t decode_small(const uint8_t *h, sl_vsr_frame_t *f)
{
    switch (f->h.command) {
    case SL_VSR_START_VIEW_CHANGE:
        f->u.start_view_change.group = sl_load_u64(h + 128);
        break;
    case SL_VSR_REQUEST_START_VIEW:
        f->u.request_start_view.group = sl_load_u64(h + 128);
        f->u.request_start_view.incarnation = sl_load_u128(h + 240);
        break;
    case SL_VSR_REPAIR_DONE:
    case SL_VSR_RANGE_EVICTED:
        f->u.repair_end.nonce = sl_load_u128(h + 128);
        f->u.repair_end.op = sl_load_u64(h + 144);
        f->u.repair_end.group = sl_load_u64(h + 152);
        break;
    case SL_VSR_REQUEST_STATE_TRANSFER:
        f->u.request_state.nonce = sl_load_u128(h + 128);
        f->u.request_state.group = sl_load_u64(h + 144);
        break;
    default:
        return SL_VSR_BAD_COMMAND;
    }
    /* cluster.md: StartViewChange's release must be 0; the others are
     * header-only by their tables. */
    if (f->h.size != SL_HEADER_SIZE || f->h.release != 0)
        return SL_VSR_BAD_FIELD;
    return SL_VSR_OK;
}

static sl_vsr_verdict_t decode_fields(const uint8_t *h, sl_vsr_frame_t *f)
{
    switch (f->h.command) {
    case SL_VSR_PREPARE:
    case SL_VSR_REPAIR_PREPARE:
        return decode_prepare(h, f);
    case SL_VSR_PREPARE_OK:
        return decode_prepare_ok(h, f);
    case SL_VSR_COMMIT:
        return decode_commit(h, f);
    case SL_VSR_DO_VIEW_CHANGE:
        return decode_do_view_change(h, f);
    case SL_VSR_START_VIEW:
        return decode_start_view(h, f);
    case SL_VSR_REQUEST_PREPARES:
        return decode_request_prepares(h, f);
    case SL_VSR_STATE_TRANSFER_TARGET:
        return decode_state_target(h, f);
    case SL_VSR_REQUEST_STATE_CHUNK:
        return decode_request_chunk(h, f);
    case SL_VSR_STATE_CHUNK:
        f->u.state_chunk.nonce = sl_load_u128(h + 128);
        f->u.state_chunk.offset = sl_load_u64(h + 144);
        f->u.state_chunk.group = sl_load_u64(h + 152);
        f->u.state_chunk.artifact = sl_load_u32(h + 160);
        return SL_VSR_OK;
    case SL_VSR_REPLICA_HELLO:
    case SL_VSR_REPLICA_CHALLENGE:
    case SL_VSR_REPLICA_FINISH:
        return decode_handshake(h, f);
    case SL_VSR_FORWARD_REGISTER:
    case SL_VSR_FORWARD_REGISTER_RESULT:
    case SL_VSR_FORWARD_LOGOUT:
    case SL_VSR_FORWARD_LOGOUT_RESULT:
        return decode_forward(h, f);
    default:
        return decode_small(h, f);
    }
}

/* The group field of a decoded consensus frame, or false for the frames
 * that carry none (handshake, Forward). */
bool sl_vsr_frame_group(const sl_vsr_frame_t *f, uint64_t *group)
{
    switch (f->h.command) {
    case SL_VSR_PREPARE:
    case SL_VSR_REPAIR_PREPARE:
        *group = f->u.prepare.group;
        return true;
    case SL_VSR_PREPARE_OK:
        *group = f->u.prepare_ok.group;
        return true;
    case SL_VSR_COMMIT:
        *group = f->u.commit.group;
        return true;
    case SL_VSR_START_VIEW_CHANGE:
        *group = f->u.start_view_change.group;
        return true;
    case SL_VSR_DO_VIEW_CHANGE:
        *group = f->u.do_view_change.group;
        return true;
    case SL_VSR_START_VIEW:
        *group = f->u.start_view.group;
        return true;
    case SL_VSR_REQUEST_START_VIEW:
        *group = f->u.request_start_view.group;
        return true;
    case SL_VSR_REQUEST_PREPARES:
        *group = f->u.request_prepares.group;
        return true;
    case SL_VSR_REPAIR_DONE:
    case SL_VSR_RANGE_EVICTED:
        *group = f->u.repair_end.group;
        return true;
    case SL_VSR_REQUEST_STATE_TRANSFER:
        *group = f->u.request_state.group;
        return true;
    case SL_VSR_STATE_TRANSFER_TARGET:
        *group = f->u.state_target.group;
        return true;
    case SL_VSR_REQUEST_STATE_CHUNK:
        *group = f->u.request_chunk.group;
        return true;
    case SL_VSR_STATE_CHUNK:
        *group = f->u.state_chunk.group;
        return true;
    default:
        return false;
    }
}

sl_vsr_verdict_t sl_vsr_frame_decode(const uint8_t *frame, size_t len, uint32_t frame_max,
                                     sl_vsr_frame_t *out)
{
    memset(out, 0, sizeof(*out));
    if (len < SL_HEADER_SIZE)
        return SL_VSR_BAD_SIZE;
    const uint8_t *h = frame;
    uint32_t size = sl_load_u32(h + AT_SIZE);
    if (size < SL_HEADER_SIZE || size > frame_max || size != len)
        return SL_VSR_BAD_SIZE;
    uint8_t command = h[AT_COMMAND];
    if (sl_vsr_command_name(command) == NULL)
        return SL_VSR_BAD_COMMAND;
    out->h.checksum = sl_load_u128(h + AT_CHECKSUM);
    out->h.checksum_body = sl_load_u128(h + AT_CHECKSUM_BODY);
    out->h.cluster = sl_load_u128(h + AT_CLUSTER);
    out->h.size = size;
    out->h.view = sl_load_u32(h + AT_VIEW);
    out->h.release = sl_load_u32(h + AT_RELEASE);
    out->h.command = command;
    out->h.replica = h[AT_REPLICA];
    out->body = sl_span(frame + SL_HEADER_SIZE, size - SL_HEADER_SIZE);
    /* The frame seal first: nothing else in a sealed header is trusted
     * before it verifies. */
    if (sl_vsr_command_sealed(command) && !sl_u128_eq(out->h.checksum, sl_vsr_frame_seal(h)))
        return SL_VSR_BAD_SEAL;
    sl_vsr_verdict_t v = decode_fields(h, out);
    if (v != SL_VSR_OK)
        return v;
    uint64_t group = 0;
    bool has_group = sl_vsr_frame_group(out, &group);
    if (has_group && !sl_vsr_group_valid(group))
        return SL_VSR_BAD_FIELD;
    sl_u128_t body_seal = {0, 0};
    if (has_group && body_sealed(command, group))
        body_seal = sl_vsr_checksum(out->body);
    if (!sl_u128_eq(out->h.checksum_body, body_seal))
        return SL_VSR_BAD_BODY;
    return SL_VSR_OK;
}

/* --- encoding -----------------------------------------------------------------------------------
 */

static void encode_prepare_ok(uint8_t *h, const sl_vsr_prepare_ok_t *p)
{
    sl_store_u128(h + 128, p->parent);
    sl_store_u128(h + 144, p->prepare_checksum);
    sl_store_u64(h + 160, p->op);
    sl_store_u64(h + 168, p->commit);
    sl_store_u64(h + 176, p->timestamp);
    sl_store_u64(h + 184, p->request);
    h[192] = p->operation;
    sl_store_u64(h + 200, p->group);
}

static void encode_view_change(uint8_t *h, const sl_vsr_frame_t *f)
{
    switch (f->h.command) {
    case SL_VSR_START_VIEW_CHANGE:
        sl_store_u64(h + 128, f->u.start_view_change.group);
        break;
    case SL_VSR_DO_VIEW_CHANGE: {
        const sl_vsr_do_view_change_t *d = &f->u.do_view_change;
        sl_store_u64(h + 128, d->op);
        sl_store_u64(h + 136, d->commit);
        sl_store_u64(h + 144, d->group);
        sl_store_u32(h + 152, d->log_view);
        sl_store_u128(h + 224, d->nack_bitset);
        sl_store_u128(h + 240, d->present_bitset);
        break;
    }
    case SL_VSR_START_VIEW: {
        const sl_vsr_start_view_t *s = &f->u.start_view;
        sl_store_u64(h + 128, s->op);
        sl_store_u64(h + 136, s->commit);
        sl_store_u64(h + 144, s->group);
        sl_store_u128(h + 240, s->incarnation);
        break;
    }
    case SL_VSR_REQUEST_START_VIEW:
        sl_store_u64(h + 128, f->u.request_start_view.group);
        sl_store_u128(h + 240, f->u.request_start_view.incarnation);
        break;
    default:
        sl_assert(false);
    }
}

static void encode_repair_state(uint8_t *h, const sl_vsr_frame_t *f)
{
    switch (f->h.command) {
    case SL_VSR_REQUEST_PREPARES: {
        const sl_vsr_request_prepares_t *r = &f->u.request_prepares;
        sl_assert(r->from_op >= 1 && r->from_op <= r->to_op);
        sl_store_u128(h + 128, r->nonce);
        sl_store_u64(h + 144, r->from_op);
        sl_store_u64(h + 152, r->to_op);
        sl_store_u64(h + 160, r->group);
        break;
    }
    case SL_VSR_REPAIR_DONE:
    case SL_VSR_RANGE_EVICTED:
        sl_store_u128(h + 128, f->u.repair_end.nonce);
        sl_store_u64(h + 144, f->u.repair_end.op);
        sl_store_u64(h + 152, f->u.repair_end.group);
        break;
    case SL_VSR_REQUEST_STATE_TRANSFER:
        sl_store_u128(h + 128, f->u.request_state.nonce);
        sl_store_u64(h + 144, f->u.request_state.group);
        break;
    case SL_VSR_STATE_TRANSFER_TARGET: {
        const sl_vsr_state_target_t *t = &f->u.state_target;
        sl_store_u128(h + 128, t->nonce);
        sl_store_u64(h + 144, t->commit_op);
        sl_store_u64(h + 152, t->group);
        h[160] = t->available;
        h[161] = t->unavailable_transient;
        sl_store_u64(h + 168, t->commit_max);
        sl_store_u128(h + 176, t->commit_checksum);
        break;
    }
    case SL_VSR_REQUEST_STATE_CHUNK: {
        const sl_vsr_request_chunk_t *r = &f->u.request_chunk;
        sl_assert(r->len != 0);
        sl_store_u128(h + 128, r->nonce);
        sl_store_u64(h + 144, r->offset);
        sl_store_u64(h + 152, r->group);
        sl_store_u32(h + 160, r->len);
        sl_store_u32(h + 164, r->artifact);
        break;
    }
    case SL_VSR_STATE_CHUNK:
        sl_store_u128(h + 128, f->u.state_chunk.nonce);
        sl_store_u64(h + 144, f->u.state_chunk.offset);
        sl_store_u64(h + 152, f->u.state_chunk.group);
        sl_store_u32(h + 160, f->u.state_chunk.artifact);
        break;
    default:
        sl_assert(false);
    }
}

static void encode_forward(uint8_t *h, const sl_vsr_frame_t *f)
{
    switch (f->h.command) {
    case SL_VSR_FORWARD_REGISTER:
        sl_store_u128(h + 128, f->u.forward_register.client);
        sl_store_u128(h + 144, f->u.forward_register.nonce);
        sl_store_u32(h + 160, f->u.forward_register.user_id);
        break;
    case SL_VSR_FORWARD_REGISTER_RESULT: {
        const sl_vsr_forward_register_result_t *r = &f->u.forward_register_result;
        sl_store_u128(h + 128, r->nonce);
        sl_store_u128(h + 144, r->client);
        sl_store_u64(h + 160, r->epoch);
        sl_store_u64(h + 168, r->watermark);
        h[255] = r->outcome;
        break;
    }
    case SL_VSR_FORWARD_LOGOUT:
        sl_store_u128(h + 128, f->u.forward_logout.client);
        sl_store_u128(h + 144, f->u.forward_logout.nonce);
        sl_store_u64(h + 160, f->u.forward_logout.session);
        sl_store_u64(h + 168, f->u.forward_logout.request);
        break;
    case SL_VSR_FORWARD_LOGOUT_RESULT:
        sl_store_u128(h + 128, f->u.forward_logout_result.nonce);
        sl_store_u128(h + 144, f->u.forward_logout_result.client);
        sl_store_u64(h + 160, f->u.forward_logout_result.commit);
        h[255] = f->u.forward_logout_result.outcome;
        break;
    default:
        sl_assert(false);
    }
}

static void encode_fields(uint8_t *h, const sl_vsr_frame_t *f)
{
    switch (f->h.command) {
    case SL_VSR_PREPARE:
    case SL_VSR_REPAIR_PREPARE:
        sl_assert(f->u.prepare.op >= 1 && f->u.prepare.commit < f->u.prepare.op);
        prepare_write(h, &f->u.prepare);
        break;
    case SL_VSR_PREPARE_OK:
        encode_prepare_ok(h, &f->u.prepare_ok);
        break;
    case SL_VSR_COMMIT:
        sl_store_u128(h + 128, f->u.commit.commit_checksum);
        sl_store_u64(h + 144, f->u.commit.timestamp_monotonic);
        sl_store_u64(h + 152, f->u.commit.commit);
        sl_store_u64(h + 160, f->u.commit.checkpoint_op);
        sl_store_u64(h + 168, f->u.commit.group);
        break;
    case SL_VSR_START_VIEW_CHANGE:
    case SL_VSR_DO_VIEW_CHANGE:
    case SL_VSR_START_VIEW:
    case SL_VSR_REQUEST_START_VIEW:
        encode_view_change(h, f);
        break;
    case SL_VSR_REPLICA_HELLO:
    case SL_VSR_REPLICA_CHALLENGE:
    case SL_VSR_REPLICA_FINISH:
        memcpy(h + 128, f->u.handshake.nonce, 32);
        memcpy(h + 160, f->u.handshake.mac, 32);
        h[192] = f->u.handshake.status;
        break;
    case SL_VSR_FORWARD_REGISTER:
    case SL_VSR_FORWARD_REGISTER_RESULT:
    case SL_VSR_FORWARD_LOGOUT:
    case SL_VSR_FORWARD_LOGOUT_RESULT:
        encode_forward(h, f);
        break;
    default:
        encode_repair_state(h, f);
        break;
    }
}

sl_u128_t sl_vsr_header_encode(uint8_t out[SL_HEADER_SIZE], const sl_vsr_frame_t *f, sl_span_t body)
{
    uint8_t command = f->h.command;
    sl_assert(sl_vsr_command_name(command) != NULL);
    sl_assert(body.len <= UINT32_MAX - SL_HEADER_SIZE);
    memset(out, 0, SL_HEADER_SIZE);
    sl_store_u128(out + AT_CLUSTER, f->h.cluster);
    sl_store_u32(out + AT_SIZE, (uint32_t)(SL_HEADER_SIZE + body.len));
    sl_store_u32(out + AT_VIEW, f->h.view);
    out[AT_COMMAND] = command;
    out[AT_REPLICA] = f->h.replica;
    encode_fields(out, f);
    sl_vsr_frame_t probe = *f;
    uint64_t group = 0;
    if (sl_vsr_frame_group(&probe, &group) && body_sealed(command, group))
        sl_store_u128(out + AT_CHECKSUM_BODY, sl_vsr_checksum(body));
    sl_u128_t checksum = {0, 0};
    if (command == SL_VSR_PREPARE || command == SL_VSR_REPAIR_PREPARE)
        checksum = sl_vsr_prepare_identity(out);
    else if (sl_vsr_command_sealed(command))
        checksum = sl_vsr_frame_seal(out);
    sl_store_u128(out + AT_CHECKSUM, checksum);
    return checksum;
}

/* --- state manifest
 * -------------------------------------------------------------------------------- */

#define MANIFEST_MAGIC "ISM1"

void sl_vsr_manifest_encode(sl_buf_t *b, const sl_vsr_artifact_t *entries, uint32_t count)
{
    sl_assert(count <= SL_VSR_MANIFEST_ENTRIES_MAX);
    size_t start = b->len;
    sl_put_bytes(b, MANIFEST_MAGIC, 4);
    sl_put_u32(b, count);
    sl_put_u8(b, SL_VSR_MANIFEST_ENTRY_LEN);
    for (uint32_t i = 0; i < count; i++) {
        sl_put_u8(b, entries[i].kind);
        sl_put_u64(b, entries[i].frontier);
        sl_put_u64(b, entries[i].len);
        sl_put_u64(b, entries[i].checksum);
    }
    if (sl_buf_ok(b))
        sl_put_u64(b, sl_xxh3_64(b->data + start, b->len - start));
}

int sl_vsr_manifest_decode(sl_span_t bytes, sl_vsr_artifact_t *entries, uint32_t max,
                           uint32_t *count)
{
    *count = 0;
    if (bytes.len < 4 + 4 + 1 + 8)
        return -1;
    size_t covered = bytes.len - 8;
    if (sl_load_u64(bytes.ptr + covered) != sl_xxh3_64(bytes.ptr, covered))
        return -1;
    sl_reader_t r = sl_reader(sl_span(bytes.ptr, covered));
    const uint8_t *magic = sl_read_take(&r, 4);
    uint32_t n = 0;
    uint8_t entry_len = 0;
    sl_read_u32(&r, &n);
    sl_read_u8(&r, &entry_len);
    if (!sl_reader_ok(&r) || memcmp(magic, MANIFEST_MAGIC, 4) != 0 ||
        n > SL_VSR_MANIFEST_ENTRIES_MAX || entry_len < SL_VSR_MANIFEST_ENTRY_LEN ||
        (entries != NULL && n > max))
        return -1;
    /* The whole table must be there before any entry is read. */
    if ((uint64_t)n * entry_len != sl_reader_left(&r))
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        sl_vsr_artifact_t a;
        sl_read_u8(&r, &a.kind);
        sl_read_u64(&r, &a.frontier);
        sl_read_u64(&r, &a.len);
        sl_read_u64(&r, &a.checksum);
        sl_read_take(&r, entry_len - SL_VSR_MANIFEST_ENTRY_LEN);
        if (entries != NULL)
            entries[i] = a;
    }
    if (!sl_reader_done(&r))
        return -1;
    *count = n;
    return 0;
}
