/* The checkers. The first replica to apply op records it (its prepare, its
 * reply, the machine digest after it); every later apply of op anywhere
 * must match, which is safety (no two replicas commit different operations
 * at one op), state agreement (equal digests at equal commit) and, since the
 * record is never dropped, durability of what was committed. Replicas apply
 * in op order from their restored checkpoint; a restored checkpoint must
 * equal the recorded state at its op; a (client, request) commits at most
 * once; a client's reply must be the recorded reply of the op it names. */
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "sim.h"
#include "wire/header.h"

static uint64_t content_hash(const sl_vsr_prepare_t *p, sl_span_t body)
{
    uint8_t b[8 * 5 + 16 * 2 + 4 + 1];
    sl_store_u64(b, p->op);
    sl_store_u64(b + 8, p->timestamp);
    sl_store_u64(b + 16, p->request);
    sl_store_u64(b + 24, p->group);
    sl_store_u64(b + 32, sl_xxh3_64(body.ptr, body.len));
    sl_store_u128(b + 40, p->client);
    sl_store_u128(b + 56, p->request_checksum);
    sl_store_u32(b + 72, p->user_id);
    b[76] = p->operation;
    return sl_xxh3_64(b, sizeof(b));
}

static committed_t *slot_for(sim_t *s, uint64_t op)
{
    if (op >= s->committed_cap) {
        uint64_t cap = s->committed_cap ? s->committed_cap : 1024;
        while (cap <= op)
            cap *= 2;
        s->committed = realloc(s->committed, cap * sizeof(*s->committed));
        sl_assert(s->committed != NULL);
        memset(s->committed + s->committed_cap, 0,
               (cap - s->committed_cap) * sizeof(*s->committed));
        s->committed_cap = cap;
    }
    return &s->committed[op];
}

/* Whether (client, request) already committed at another op: each
 * client's committed requests are indexed by request number. */
static bool applied_twice(sim_t *s, const sl_vsr_prepare_t *p)
{
    if (p->operation == SL_OP_REGISTER || sl_u128_is_zero(p->client))
        return false;
    for (uint8_t i = 0; i < s->nclients; i++) {
        client_t *c = &s->clients[i];
        if (!sl_u128_eq(c->id, p->client))
            continue;
        if (p->request >= c->committed_cap) {
            uint64_t cap = c->committed_cap ? c->committed_cap : 64;
            while (cap <= p->request)
                cap *= 2;
            c->committed_ops = realloc(c->committed_ops, cap * sizeof(uint64_t));
            sl_assert(c->committed_ops != NULL);
            memset(c->committed_ops + c->committed_cap, 0,
                   (cap - c->committed_cap) * sizeof(uint64_t));
            c->committed_cap = cap;
        }
        uint64_t *at = &c->committed_ops[p->request];
        if (*at != 0 && *at != p->op)
            return true;
        *at = p->op;
        return false;
    }
    return false;
}

void check_apply(sim_t *s, uint8_t replica, const sl_vsr_prepare_t *p, sl_span_t body,
                 sl_span_t reply, uint64_t digest)
{
    uint64_t op = p->op;
    if (op != s->last_applied[replica] + 1)
        sim_fail(s, "replica %u applied op %llu after op %llu (gap or repeat)", replica,
                 (unsigned long long)op, (unsigned long long)s->last_applied[replica]);
    s->last_applied[replica] = op;
    committed_t *c = slot_for(s, op);
    uint64_t content = content_hash(p, body);
    uint64_t reply_hash = sl_xxh3_64(reply.ptr, reply.len);
    if (!c->have) {
        if (applied_twice(s, p))
            sim_fail(s, "op %llu: client request %llu committed a second time",
                     (unsigned long long)op, (unsigned long long)p->request);
        *c = (committed_t){.have = true,
                           .content = content,
                           .reply = reply_hash,
                           .reply_len = (uint32_t)reply.len,
                           .digest = digest,
                           .client = p->client,
                           .request = p->request,
                           .operation = p->operation};
        if (op > s->committed_max)
            s->committed_max = op;
        sim_log(s, "commit op %llu (replica %u)", (unsigned long long)op, replica);
        return;
    }
    if (c->content != content)
        sim_fail(s, "SAFETY: replica %u applied a different operation at op %llu", replica,
                 (unsigned long long)op);
    else if (c->reply != reply_hash)
        sim_fail(s, "replica %u produced a different reply at op %llu", replica,
                 (unsigned long long)op);
    else if (c->digest != digest)
        sim_fail(s, "replica %u has a different state after op %llu", replica,
                 (unsigned long long)op);
}

void check_restore(sim_t *s, uint8_t replica, uint64_t op, uint64_t digest)
{
    s->last_applied[replica] = op;
    if (op == 0)
        return;
    if (op > s->committed_max || !s->committed[op].have)
        sim_fail(s, "replica %u restored a checkpoint at op %llu that nobody applied", replica,
                 (unsigned long long)op);
    else if (s->committed[op].digest != digest)
        sim_fail(s, "replica %u restored a checkpoint at op %llu whose state differs", replica,
                 (unsigned long long)op);
}

void check_reset(sim_t *s, uint8_t replica)
{
    s->last_applied[replica] = 0;
}

void check_client_reply(sim_t *s, const client_t *cl, uint64_t op, uint64_t request,
                        uint8_t operation, sl_span_t body)
{
    s->stats.replies++;
    if (op == 0 || op > s->committed_max || !s->committed[op].have) {
        sim_fail(s, "client %u got a reply for op %llu, which no replica applied", cl->index,
                 (unsigned long long)op);
        return;
    }
    const committed_t *c = &s->committed[op];
    if (!sl_u128_eq(c->client, cl->id) || c->operation != operation ||
        (operation != SL_OP_REGISTER && c->request != request))
        sim_fail(s, "client %u got a reply naming op %llu, which is another request", cl->index,
                 (unsigned long long)op);
    else if (c->reply != sl_xxh3_64(body.ptr, body.len) || c->reply_len != body.len)
        sim_fail(s, "client %u got a reply for op %llu that differs from the committed one",
                 cl->index, (unsigned long long)op);
}
