/* The client table: sorted entries, deterministic eviction, ICT2 codec. */
#include "vsr/client_table.h"

#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"

#define CLIENT_TABLE_MAGIC "ICT2"

static int u128_cmp(sl_u128_t a, sl_u128_t b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo)
        return a.lo < b.lo ? -1 : 1;
    return 0;
}

int sl_vsr_clients_init(sl_vsr_clients_t *t, uint32_t max, uint32_t reply_max)
{
    memset(t, 0, sizeof(*t));
    sl_assert(max >= 1);
    t->entries = calloc(max, sizeof(*t->entries));
    if (t->entries == NULL)
        return -1;
    t->max = max;
    t->reply_max = reply_max;
    return 0;
}

void sl_vsr_clients_free(sl_vsr_clients_t *t)
{
    if (t->entries != NULL) {
        for (uint32_t i = 0; i < t->max; i++)
            free(t->entries[i].reply);
        free(t->entries);
    }
    memset(t, 0, sizeof(*t));
}

void sl_vsr_clients_reset(sl_vsr_clients_t *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        t->entries[i].has_reply = false;
        t->entries[i].reply_len = 0;
    }
    t->count = 0;
}

/* The index of client, or where it would be inserted (with *found false). */
static uint32_t search(const sl_vsr_clients_t *t, sl_u128_t client, bool *found)
{
    uint32_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = u128_cmp(t->entries[mid].client, client);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

sl_vsr_client_t *sl_vsr_clients_find(sl_vsr_clients_t *t, sl_u128_t client)
{
    bool found;
    uint32_t i = search(t, client, &found);
    return found ? &t->entries[i] : NULL;
}

/* Removes entry i, keeping its reply buffer for reuse at the end of the
 * array (the slot past count). */
static void remove_at(sl_vsr_clients_t *t, uint32_t i)
{
    sl_vsr_client_t gone = t->entries[i];
    memmove(&t->entries[i], &t->entries[i + 1], (t->count - i - 1) * sizeof(*t->entries));
    t->count--;
    gone.has_reply = false;
    gone.reply_len = 0;
    t->entries[t->count] = gone;
}

static uint32_t oldest(const sl_vsr_clients_t *t)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < t->count; i++) {
        if (t->entries[i].last_op < t->entries[best].last_op)
            best = i;
    }
    return best;
}

sl_vsr_client_t *sl_vsr_clients_register(sl_vsr_clients_t *t, sl_u128_t client, uint64_t op,
                                         uint32_t user_id)
{
    bool found;
    uint32_t i = search(t, client, &found);
    if (found) {
        sl_vsr_client_t *c = &t->entries[i];
        c->session = op;
        c->user_id = user_id;
        c->last_op = op;
        return c;
    }
    if (t->count == t->max) {
        remove_at(t, oldest(t));
        i = search(t, client, &found);
    }
    /* The slot past count holds a spare reply buffer (or none). */
    sl_vsr_client_t spare = t->entries[t->count];
    memmove(&t->entries[i + 1], &t->entries[i], (t->count - i) * sizeof(*t->entries));
    t->count++;
    sl_vsr_client_t *c = &t->entries[i];
    *c = (sl_vsr_client_t){.client = client,
                           .session = op,
                           .user_id = user_id,
                           .last_op = op,
                           .reply = spare.reply,
                           .reply_cap = spare.reply_cap};
    return c;
}

static bool store_reply(sl_vsr_clients_t *t, sl_vsr_client_t *c, sl_span_t reply)
{
    if (reply.len > t->reply_max)
        return false;
    if (reply.len > c->reply_cap) {
        uint8_t *p = realloc(c->reply, reply.len);
        if (p == NULL)
            return false;
        c->reply = p;
        c->reply_cap = (uint32_t)reply.len;
    }
    if (reply.len > 0)
        memcpy(c->reply, reply.ptr, reply.len);
    c->reply_len = (uint32_t)reply.len;
    return true;
}

void sl_vsr_clients_commit(sl_vsr_clients_t *t, sl_vsr_client_t *c, uint64_t request,
                           sl_u128_t request_checksum, uint64_t op, uint64_t timestamp,
                           uint8_t operation, sl_span_t reply)
{
    c->request = request > c->request ? request : c->request;
    c->request_checksum = request_checksum;
    c->last_op = op;
    c->reply_op = op;
    c->reply_timestamp = timestamp;
    c->reply_operation = operation;
    c->has_reply = store_reply(t, c, reply);
    if (!c->has_reply)
        c->reply_len = 0;
}

void sl_vsr_clients_encode(const sl_vsr_clients_t *t, sl_buf_t *out)
{
    size_t start = out->len;
    sl_put_bytes(out, CLIENT_TABLE_MAGIC, 4);
    sl_put_u32(out, t->count);
    for (uint32_t i = 0; i < t->count; i++) {
        const sl_vsr_client_t *c = &t->entries[i];
        sl_put_u128(out, c->client);
        sl_put_u64(out, c->session);
        sl_put_u32(out, c->user_id);
        sl_put_u64(out, c->request);
        sl_put_u128(out, c->request_checksum);
        sl_put_u64(out, c->last_op);
        sl_put_u64(out, c->reply_op);
        sl_put_u64(out, c->reply_timestamp);
        sl_put_u8(out, c->reply_operation);
        sl_put_u8(out, c->has_reply ? 1 : 0);
        sl_put_u32(out, c->reply_len);
        sl_put_bytes(out, c->reply, c->reply_len);
    }
    if (sl_buf_ok(out))
        sl_put_u64(out, sl_xxh3_64(out->data + start, out->len - start));
}

static bool decode_entry(sl_vsr_clients_t *t, sl_reader_t *r, sl_vsr_client_t *c)
{
    uint8_t has_reply = 0;
    uint32_t len = 0;
    sl_read_u128(r, &c->client);
    sl_read_u64(r, &c->session);
    sl_read_u32(r, &c->user_id);
    sl_read_u64(r, &c->request);
    sl_read_u128(r, &c->request_checksum);
    sl_read_u64(r, &c->last_op);
    sl_read_u64(r, &c->reply_op);
    sl_read_u64(r, &c->reply_timestamp);
    sl_read_u8(r, &c->reply_operation);
    sl_read_u8(r, &has_reply);
    sl_read_u32(r, &len);
    sl_span_t reply;
    if (!sl_read_span(r, len, &reply) || has_reply > 1 || (!has_reply && len != 0) ||
        sl_u128_is_zero(c->client))
        return false;
    if (!store_reply(t, c, reply))
        return false;
    c->has_reply = has_reply == 1;
    return true;
}

int sl_vsr_clients_decode(sl_vsr_clients_t *t, sl_span_t bytes)
{
    sl_vsr_clients_reset(t);
    if (bytes.len < 16)
        return -1;
    size_t covered = bytes.len - 8;
    if (sl_load_u64(bytes.ptr + covered) != sl_xxh3_64(bytes.ptr, covered))
        return -1;
    sl_reader_t r = sl_reader(sl_span(bytes.ptr, covered));
    const uint8_t *magic = sl_read_take(&r, 4);
    uint32_t count = 0;
    sl_read_u32(&r, &count);
    if (!sl_reader_ok(&r) || memcmp(magic, CLIENT_TABLE_MAGIC, 4) != 0 || count > t->max)
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        sl_vsr_client_t *c = &t->entries[i];
        uint8_t *keep = c->reply;
        uint32_t keep_cap = c->reply_cap;
        *c = (sl_vsr_client_t){.reply = keep, .reply_cap = keep_cap};
        /* Strictly increasing ids: the order the encoder writes, no duplicates. */
        if (!decode_entry(t, &r, c) ||
            (i > 0 && u128_cmp(t->entries[i - 1].client, c->client) >= 0)) {
            t->count = i + 1;
            sl_vsr_clients_reset(t);
            return -1;
        }
        t->count = i + 1;
    }
    if (!sl_reader_done(&r)) {
        sl_vsr_clients_reset(t);
        return -1;
    }
    return 0;
}
