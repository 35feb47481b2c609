/* The replicated test machine: SIM_KEYS u64 registers with SET, ADD and GET,
 * plus the op of the last applied prepare and a hash of everything applied,
 * so two replicas with the same digest applied the same history. Replies are
 * result-framed like the metadata plane's: [count u32 = 0][payload]. Every
 * apply, restore and reset reports to the checker. */
#include <string.h>

#include "base/xxh3.h"
#include "sim.h"
#include "wire/header.h"

void machine_init(machine_t *m, sim_t *s, uint8_t replica)
{
    memset(m, 0, sizeof(*m));
    m->sim = s;
    m->replica = replica;
}

uint64_t machine_digest(const machine_t *m)
{
    uint8_t b[16 + 8 * SIM_KEYS];
    sl_store_u64(b, m->applied);
    sl_store_u64(b + 8, m->history);
    for (int i = 0; i < SIM_KEYS; i++)
        sl_store_u64(b + 16 + 8 * i, m->values[i]);
    return sl_xxh3_64(b, sizeof(b));
}

static void apply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    machine_t *m = ctx;
    sl_put_u32(reply, 0); /* result section: success */
    if (p->operation == SL_OP_REGISTER) {
        sl_put_u64(reply, p->op); /* the session */
    } else if (body.len == SIM_BODY_LEN && body.ptr[1] < SIM_KEYS) {
        uint8_t kind = body.ptr[0], key = body.ptr[1];
        uint64_t value = sl_load_u64(body.ptr + 2);
        uint64_t out = m->values[key];
        if (kind == OP_SET) {
            m->values[key] = value;
        } else if (kind == OP_ADD) {
            m->values[key] += value;
            out = m->values[key];
        }
        sl_put_u64(reply, out);
    } else {
        sl_put_u64(reply, UINT64_MAX); /* a body the machine does not know */
    }
    uint8_t h[8 + 8 + 8];
    sl_store_u64(h, m->history);
    sl_store_u64(h + 8, p->op);
    sl_store_u64(h + 16, sl_xxh3_64(body.ptr, body.len) ^ p->timestamp);
    m->history = sl_xxh3_64(h, sizeof(h));
    m->applied = p->op;
    check_apply(m->sim, m->replica, p, body, sl_buf_span(reply), machine_digest(m));
}

static void snapshot(void *ctx, sl_buf_t *out)
{
    machine_t *m = ctx;
    sl_put_u64(out, m->applied);
    sl_put_u64(out, m->history);
    for (int i = 0; i < SIM_KEYS; i++)
        sl_put_u64(out, m->values[i]);
}

static int restore(void *ctx, sl_span_t snap)
{
    machine_t *m = ctx;
    memset(m->values, 0, sizeof(m->values));
    m->applied = m->history = 0;
    if (snap.len != 16 + 8 * SIM_KEYS)
        return -1;
    m->applied = sl_load_u64(snap.ptr);
    m->history = sl_load_u64(snap.ptr + 8);
    for (int i = 0; i < SIM_KEYS; i++)
        m->values[i] = sl_load_u64(snap.ptr + 16 + 8 * i);
    check_restore(m->sim, m->replica, m->applied, machine_digest(m));
    return 0;
}

static void reset(void *ctx)
{
    machine_t *m = ctx;
    memset(m->values, 0, sizeof(m->values));
    m->applied = m->history = 0;
    check_reset(m->sim, m->replica);
}

sl_vsr_machine_t machine_iface(machine_t *m)
{
    return (sl_vsr_machine_t){
        .ctx = m, .apply = apply, .snapshot = snapshot, .restore = restore, .reset = reset};
}
