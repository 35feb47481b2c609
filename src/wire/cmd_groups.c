/* Consumer-group command codecs (wire/cmd_groups.h): request targets,
 * GroupHeader / GroupDetails and the Sync assignment. */
#include "wire/cmd_groups.h"

#include "base/limits.h"

/* Smallest GroupHeader: three u32 and a Name of one byte. */
#define GROUP_HEADER_MIN 14u
/* Smallest member: id and partitions_count. */
#define GROUP_MEMBER_MIN 8u
/* Sync reply without partitions: generation and partitions_count. */
#define SYNC_REPLY_MIN 12u

/* --- request targets ------------------------------------------------------- */

static int target_decode(sl_span_t body, sl_group_target_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_group_target_t){0};
    /* The reader's failure is sticky: one check at the end covers all three. */
    if (sl_ident_decode(&r, &out->stream) && sl_ident_decode(&r, &out->topic))
        sl_ident_decode(&r, &out->group);
    return sl_request_decode_end(&r);
}

static int target_encode(sl_buf_t *b, const sl_group_target_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream) && sl_ident_encode(b, &in->topic) &&
              sl_ident_encode(b, &in->group);
    return sl_encode_end(b, ok);
}

/* --- GroupHeader and GroupDetails ------------------------------------------- */

static bool header_decode(sl_reader_t *r, sl_group_header_t *out)
{
    *out = (sl_group_header_t){0};
    sl_read_u32(r, &out->id);
    sl_read_u32(r, &out->partitions_count);
    sl_read_u32(r, &out->members_count);
    return sl_name_decode(r, &out->name);
}

static bool header_encode(sl_buf_t *b, const sl_group_header_t *h)
{
    if (h->name.len < SL_NAME_LEN_MIN || h->name.len > SL_NAME_LEN_MAX)
        return false;
    sl_put_u32(b, h->id);
    sl_put_u32(b, h->partitions_count);
    sl_put_u32(b, h->members_count);
    return sl_name_encode(b, h->name);
}

/* Reads `count` u32 into an arena array after checking the bytes are there. */
static bool u32_array_decode(sl_reader_t *r, sl_arena_t *arena, uint32_t count,
                             const uint32_t **out)
{
    *out = NULL;
    if (!sl_reader_ok(r) || (uint64_t)count * 4 > sl_reader_left(r)) {
        r->failed = true;
        return false;
    }
    if (count == 0)
        return true;
    uint32_t *ids = SL_ARENA_NEW(arena, uint32_t, count);
    if (!ids) {
        r->failed = true;
        return false;
    }
    for (uint32_t i = 0; i < count; i++)
        sl_read_u32(r, &ids[i]);
    *out = ids;
    return sl_reader_ok(r);
}

static bool member_decode(sl_reader_t *r, sl_arena_t *arena, sl_group_member_t *m)
{
    sl_read_u32(r, &m->id);
    sl_read_u32(r, &m->partitions_count);
    return u32_array_decode(r, arena, m->partitions_count, &m->partitions);
}

bool sl_group_details_decode(sl_reader_t *r, sl_arena_t *arena, sl_group_details_t *out)
{
    *out = (sl_group_details_t){0};
    if (!header_decode(r, &out->header))
        return false;
    uint32_t n = out->header.members_count;
    /* A hostile count must not size the allocation: every member takes 8 bytes. */
    if ((uint64_t)n * GROUP_MEMBER_MIN > sl_reader_left(r)) {
        r->failed = true;
        return false;
    }
    if (n == 0)
        return true;
    sl_group_member_t *members = SL_ARENA_NEW(arena, sl_group_member_t, n);
    if (!members) {
        r->failed = true;
        return false;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!member_decode(r, arena, &members[i]))
            return false;
    out->members = members;
    return true;
}

bool sl_group_details_encode(sl_buf_t *b, const sl_group_details_t *d)
{
    uint32_t n = d->header.members_count;
    if ((n > 0 && !d->members) || !header_encode(b, &d->header))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const sl_group_member_t *m = &d->members[i];
        if (m->partitions_count > 0 && !m->partitions)
            return false;
        sl_put_u32(b, m->id);
        sl_put_u32(b, m->partitions_count);
        for (uint32_t k = 0; k < m->partitions_count; k++)
            sl_put_u32(b, m->partitions[k]);
    }
    return sl_buf_ok(b);
}

/* --- 600 GetConsumerGroup --------------------------------------------------- */

int sl_get_consumer_group_request_decode(sl_span_t body, sl_get_consumer_group_request_t *out)
{
    return target_decode(body, out);
}

int sl_get_consumer_group_request_encode(sl_buf_t *b, const sl_get_consumer_group_request_t *in)
{
    return target_encode(b, in);
}

int sl_get_consumer_group_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                       sl_get_consumer_group_reply_t *out)
{
    *out = (sl_get_consumer_group_reply_t){0};
    if (payload.len == 0)
        return 0;
    sl_reader_t r = sl_reader(payload);
    sl_group_details_decode(&r, arena, &out->group);
    int rc = sl_reply_decode_end(&r);
    out->found = rc == 0;
    return rc;
}

int sl_get_consumer_group_reply_encode(sl_buf_t *b, const sl_get_consumer_group_reply_t *in)
{
    if (!in->found)
        return sl_encode_end(b, true);
    return sl_encode_end(b, sl_group_details_encode(b, &in->group));
}

/* --- 601 GetConsumerGroups -------------------------------------------------- */

int sl_get_consumer_groups_request_decode(sl_span_t body, sl_get_consumer_groups_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_get_consumer_groups_request_t){0};
    if (sl_ident_decode(&r, &out->stream))
        sl_ident_decode(&r, &out->topic);
    return sl_request_decode_end(&r);
}

int sl_get_consumer_groups_request_encode(sl_buf_t *b, const sl_get_consumer_groups_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream) && sl_ident_encode(b, &in->topic);
    return sl_encode_end(b, ok);
}

int sl_get_consumer_groups_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                        sl_get_consumer_groups_reply_t *out)
{
    *out = (sl_get_consumer_groups_reply_t){0};
    /* First pass: validate and count (no count prefix on the wire). The
     * count is then bounded by the bytes present: 14 or more per header. */
    sl_reader_t r = sl_reader(payload);
    uint32_t n = 0;
    while (sl_reader_left(&r) > 0) {
        sl_group_header_t h;
        if (!header_decode(&r, &h))
            return -SL_ERR_INVALID_FORMAT;
        n++;
    }
    if (n == 0)
        return 0;
    sl_assert((uint64_t)n * GROUP_HEADER_MIN <= payload.len);
    sl_group_header_t *items = SL_ARENA_NEW(arena, sl_group_header_t, n);
    if (!items)
        return -SL_ERR_INVALID_FORMAT;
    r = sl_reader(payload);
    for (uint32_t i = 0; i < n; i++)
        header_decode(&r, &items[i]);
    sl_assert(sl_reader_done(&r));
    out->count = n;
    out->items = items;
    return 0;
}

int sl_get_consumer_groups_reply_encode(sl_buf_t *b, const sl_get_consumer_groups_reply_t *in)
{
    if (in->count > 0 && !in->items)
        return sl_encode_end(b, false);
    for (uint32_t i = 0; i < in->count; i++)
        if (!header_encode(b, &in->items[i]))
            return sl_encode_end(b, false);
    return sl_encode_end(b, true);
}

/* --- 602 CreateConsumerGroup ------------------------------------------------ */

int sl_create_consumer_group_request_decode(sl_span_t body, sl_create_consumer_group_request_t *out)
{
    sl_reader_t r = sl_reader(body);
    *out = (sl_create_consumer_group_request_t){0};
    if (sl_ident_decode(&r, &out->stream) && sl_ident_decode(&r, &out->topic))
        sl_name_decode(&r, &out->name);
    return sl_request_decode_end(&r);
}

int sl_create_consumer_group_request_encode(sl_buf_t *b,
                                            const sl_create_consumer_group_request_t *in)
{
    bool ok = sl_ident_encode(b, &in->stream) && sl_ident_encode(b, &in->topic) &&
              sl_name_encode(b, in->name);
    return sl_encode_end(b, ok);
}

int sl_create_consumer_group_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                          sl_create_consumer_group_reply_t *out)
{
    sl_reader_t r = sl_reader(payload);
    sl_group_details_decode(&r, arena, out);
    return sl_reply_decode_end(&r);
}

int sl_create_consumer_group_reply_encode(sl_buf_t *b, const sl_create_consumer_group_reply_t *in)
{
    return sl_encode_end(b, sl_group_details_encode(b, in));
}

/* --- 603, 604, 605 ---------------------------------------------------------- */

int sl_delete_consumer_group_request_decode(sl_span_t body, sl_delete_consumer_group_request_t *out)
{
    return target_decode(body, out);
}

int sl_delete_consumer_group_request_encode(sl_buf_t *b,
                                            const sl_delete_consumer_group_request_t *in)
{
    return target_encode(b, in);
}

int sl_join_consumer_group_request_decode(sl_span_t body, sl_join_consumer_group_request_t *out)
{
    return target_decode(body, out);
}

int sl_join_consumer_group_request_encode(sl_buf_t *b, const sl_join_consumer_group_request_t *in)
{
    return target_encode(b, in);
}

int sl_leave_consumer_group_request_decode(sl_span_t body, sl_leave_consumer_group_request_t *out)
{
    return target_decode(body, out);
}

int sl_leave_consumer_group_request_encode(sl_buf_t *b, const sl_leave_consumer_group_request_t *in)
{
    return target_encode(b, in);
}

/* --- 606 SyncConsumerGroup -------------------------------------------------- */

int sl_sync_consumer_group_request_decode(sl_span_t body, sl_sync_consumer_group_request_t *out)
{
    return target_decode(body, out);
}

int sl_sync_consumer_group_request_encode(sl_buf_t *b, const sl_sync_consumer_group_request_t *in)
{
    return target_encode(b, in);
}

int sl_sync_consumer_group_reply_decode(sl_span_t payload, sl_arena_t *arena,
                                        sl_sync_consumer_group_reply_t *out)
{
    *out = (sl_sync_consumer_group_reply_t){0};
    if (payload.len == 0)
        return 0;
    /* 1..11 bytes cannot hold generation and count: malformed, not "absent". */
    if (payload.len < SYNC_REPLY_MIN)
        return -SL_ERR_INVALID_FORMAT;
    sl_reader_t r = sl_reader(payload);
    sl_read_u64(&r, &out->generation);
    sl_read_u32(&r, &out->partitions_count);
    u32_array_decode(&r, arena, out->partitions_count, &out->partitions);
    int rc = sl_reply_decode_end(&r);
    out->found = rc == 0;
    return rc;
}

int sl_sync_consumer_group_reply_encode(sl_buf_t *b, const sl_sync_consumer_group_reply_t *in)
{
    if (!in->found)
        return sl_encode_end(b, true);
    if (in->partitions_count > 0 && !in->partitions)
        return sl_encode_end(b, false);
    sl_put_u64(b, in->generation);
    sl_put_u32(b, in->partitions_count);
    for (uint32_t i = 0; i < in->partitions_count; i++)
        sl_put_u32(b, in->partitions[i]);
    return sl_encode_end(b, true);
}
