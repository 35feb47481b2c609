/* --partitions: beside the first group, 2 to 4 sessionless partition groups
 * (issue 13) run on the same simulated nodes, network and disks. Each node
 * hosts one replica of every group; frames reach a group by their `group`
 * field, as in sluiced; a crash takes down every group's replica of the
 * node, and a fault-prone node's disks (one per group) tear, corrupt and
 * are wiped together.
 *
 * Each group's machine behaves like a partition (pmachine_t in sim.h): the
 * primary's prepare hook stamps each batch with its base offset and the
 * prepare timestamp, the backups' accept hook re-derives both, apply appends
 * the payload to the replica's byte log. Producers send batches without a
 * session; take_over is called on random replicas.
 *
 * The checks: a replica applies ops in order, every batch at the end of its
 * own log (what accept would have checked: no replica applies a batch the
 * hook would refuse), and every apply of an op matches its first apply
 * anywhere (the same prepare, the same bytes at the same offset, the same
 * state after it). A producer's acknowledged batch must be, at the offset
 * its reply names, the bytes it sent; at convergence it must be in the log
 * of a quorum of replicas. */
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "sim.h"
#include "wire/header.h"

#define PCLIENT_TIMEOUT_TICKS 60u
#define BATCH_HEADER          16u /* base u64, timestamp u64 */

static pgroup_t *group_of(sim_t *s, uint8_t g)
{
    sl_assert(g < s->npgroups);
    return &s->pgroups[g];
}

/* --- the checker ------------------------------------------------------------------------------ */

static pop_record_t *record_for(pgroup_t *g, uint64_t op)
{
    if (op >= g->ops_cap) {
        uint64_t cap = g->ops_cap ? g->ops_cap : 1024;
        while (cap <= op)
            cap *= 2;
        g->ops = realloc(g->ops, cap * sizeof(*g->ops));
        sl_assert(g->ops != NULL);
        memset(g->ops + g->ops_cap, 0, (cap - g->ops_cap) * sizeof(*g->ops));
        g->ops_cap = cap;
    }
    return &g->ops[op];
}

static void truth_append(pgroup_t *g, sl_span_t payload)
{
    if (g->truth_len + payload.len > g->truth_cap) {
        uint64_t cap = g->truth_cap ? g->truth_cap : 4096;
        while (cap < g->truth_len + payload.len)
            cap *= 2;
        g->truth = realloc(g->truth, cap);
        sl_assert(g->truth != NULL);
        g->truth_cap = cap;
    }
    memcpy(g->truth + g->truth_len, payload.ptr, payload.len);
    g->truth_len += payload.len;
}

static uint64_t content_hash(const sl_vsr_prepare_t *p, sl_span_t body)
{
    uint8_t b[8 * 4 + 16 + 1];
    sl_store_u64(b, p->op);
    sl_store_u64(b + 8, p->timestamp);
    sl_store_u64(b + 16, p->request);
    sl_store_u64(b + 24, sl_xxh3_64(body.ptr, body.len));
    sl_store_u128(b + 32, p->client);
    b[48] = p->operation;
    return sl_xxh3_64(b, sizeof(b));
}

static void check_papply(sim_t *s, pmachine_t *m, const sl_vsr_prepare_t *p, sl_span_t body,
                         uint64_t base, uint64_t digest)
{
    pgroup_t *g = group_of(s, m->group);
    uint64_t op = p->op;
    if (op != g->last_applied[m->replica] + 1)
        sim_fail(s, "group %u: replica %u applied op %llu after op %llu (gap or repeat)", m->group,
                 m->replica, (unsigned long long)op,
                 (unsigned long long)g->last_applied[m->replica]);
    g->last_applied[m->replica] = op;
    pop_record_t *r = record_for(g, op);
    uint64_t content = content_hash(p, body);
    if (!r->have) {
        /* The first apply of op anywhere: the truth grows by its batch. */
        if (base != g->truth_len)
            sim_fail(s, "group %u: op %llu first applied at offset %llu, the log ends at %llu",
                     m->group, (unsigned long long)op, (unsigned long long)base,
                     (unsigned long long)g->truth_len);
        else
            truth_append(g, sl_span(body.ptr + BATCH_HEADER, body.len - BATCH_HEADER));
        *r = (pop_record_t){.have = true,
                            .content = content,
                            .base = base,
                            .digest = digest,
                            .client = p->client,
                            .request = p->request};
        if (op > g->committed_max)
            g->committed_max = op;
        return;
    }
    if (r->content != content || r->base != base)
        sim_fail(s, "SAFETY: group %u: replica %u applied a different batch at op %llu", m->group,
                 m->replica, (unsigned long long)op);
    else if (r->digest != digest)
        sim_fail(s, "group %u: replica %u has a different log after op %llu", m->group, m->replica,
                 (unsigned long long)op);
}

/* --- the machine ---------------------------------------------------------------------------- */

static uint64_t pdigest(const pmachine_t *m)
{
    uint8_t b[24];
    sl_store_u64(b, m->applied);
    sl_store_u64(b + 8, m->history);
    sl_store_u64(b + 16, sl_xxh3_64(m->log, m->len));
    return sl_xxh3_64(b, sizeof(b));
}

/* The end of the log after op p->op - 1, from the head (api: the body of
 * op - 1 when not applied, else empty and the machine's log is the head). */
static bool head_end(const pmachine_t *m, sl_span_t head, uint64_t *end)
{
    if (head.ptr == NULL) {
        *end = m->len;
        return true;
    }
    if (head.len < BATCH_HEADER)
        return false;
    *end = sl_load_u64(head.ptr) + (head.len - BATCH_HEADER);
    return true;
}

static uint32_t pprepare(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body,
                         sl_buf_t *out)
{
    pmachine_t *m = ctx;
    uint64_t base;
    if (head.ptr == NULL)
        m->sim->stats.heads_applied++;
    else
        m->sim->stats.heads_journal++;
    if (!head_end(m, head, &base)) {
        sim_fail(m->sim, "group %u: replica %u's head for op %llu is not a batch", m->group,
                 m->replica, (unsigned long long)p->op);
        return 3;
    }
    sl_put_u64(out, base);
    sl_put_u64(out, p->timestamp);
    sl_put_span(out, body);
    return 0;
}

/* The accept rule, also re-run at apply against the applied end. */
static bool batch_ok(const pmachine_t *m, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body)
{
    uint64_t base;
    return head_end(m, head, &base) && body.len >= BATCH_HEADER && sl_load_u64(body.ptr) == base &&
           sl_load_u64(body.ptr + 8) == p->timestamp;
}

static bool paccept(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body)
{
    pmachine_t *m = ctx;
    bool ok = batch_ok(m, p, head, body);
    m->sim->stats.accepts += ok ? 1 : 0;
    /* Every primary here is honest and the hooks are deterministic: a
     * refusal means the core gave this replica or the primary a wrong
     * head. */
    if (!ok)
        sim_fail(m->sim,
                 "group %u: replica %u's accept hook refuses op %llu (its head and the "
                 "primary's differ)",
                 m->group, m->replica, (unsigned long long)p->op);
    return ok;
}

static void log_append(pmachine_t *m, const uint8_t *bytes, uint64_t n)
{
    if (m->len + n > m->cap) {
        uint64_t cap = m->cap ? m->cap : 4096;
        while (cap < m->len + n)
            cap *= 2;
        m->log = realloc(m->log, cap);
        sl_assert(m->log != NULL);
        m->cap = cap;
    }
    memcpy(m->log + m->len, bytes, n);
    m->len += n;
}

static void papply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    pmachine_t *m = ctx;
    uint64_t base = body.len >= BATCH_HEADER ? sl_load_u64(body.ptr) : UINT64_MAX;
    if (!batch_ok(m, p, sl_span(NULL, 0), body)) {
        sim_fail(m->sim,
                 "group %u: replica %u applied op %llu at offset %llu, its log ends at %llu "
                 "(a batch its accept hook refuses)",
                 m->group, m->replica, (unsigned long long)p->op, (unsigned long long)base,
                 (unsigned long long)m->len);
        return;
    }
    log_append(m, body.ptr + BATCH_HEADER, body.len - BATCH_HEADER);
    uint8_t h[24];
    sl_store_u64(h, m->history);
    sl_store_u64(h + 8, p->op);
    sl_store_u64(h + 16, sl_xxh3_64(body.ptr, body.len));
    m->history = sl_xxh3_64(h, sizeof(h));
    m->applied = p->op;
    sl_put_u32(reply, 0);
    sl_put_u64(reply, base);
    check_papply(m->sim, m, p, body, base, pdigest(m));
}

static void psnapshot(void *ctx, sl_buf_t *out)
{
    pmachine_t *m = ctx;
    sl_put_u64(out, m->applied);
    sl_put_u64(out, m->history);
    sl_put_u64(out, m->len);
    sl_put_bytes(out, m->log, m->len);
}

static void preset(void *ctx)
{
    pmachine_t *m = ctx;
    m->applied = m->history = m->len = 0;
    group_of(m->sim, m->group)->last_applied[m->replica] = 0;
}

static int prestore(void *ctx, sl_span_t snap)
{
    pmachine_t *m = ctx;
    preset(m);
    if (snap.len < 24 || sl_load_u64(snap.ptr + 16) != snap.len - 24)
        return -1;
    m->applied = sl_load_u64(snap.ptr);
    m->history = sl_load_u64(snap.ptr + 8);
    log_append(m, snap.ptr + 24, snap.len - 24);
    pgroup_t *g = group_of(m->sim, m->group);
    g->last_applied[m->replica] = m->applied;
    if (m->applied == 0)
        return 0;
    if (m->applied > g->committed_max || !g->ops[m->applied].have)
        sim_fail(m->sim, "group %u: replica %u restored a checkpoint at op %llu nobody applied",
                 m->group, m->replica, (unsigned long long)m->applied);
    else if (g->ops[m->applied].digest != pdigest(m))
        sim_fail(m->sim, "group %u: replica %u restored a checkpoint at op %llu whose log differs",
                 m->group, m->replica, (unsigned long long)m->applied);
    return 0;
}

static sl_vsr_machine_t pmachine_iface(pmachine_t *m)
{
    return (sl_vsr_machine_t){.ctx = m,
                              .apply = papply,
                              .snapshot = psnapshot,
                              .restore = prestore,
                              .reset = preset,
                              .prepare = pprepare,
                              .accept = paccept};
}

/* --- state transfer through the host hooks ----------------------------------------------------
 */

static pxfer_t *xfer_of(void *ctx)
{
    return ((disk_t *)ctx)->host;
}

/* The checkpoint at op as segments of the live log, sealed at the
 * checkpoint's length, and the offsets artifact. */
static int poffer(void *ctx, uint64_t op, const sl_vsr_artifact_t **list, uint32_t *count)
{
    pxfer_t *x = xfer_of(ctx);
    pmachine_t *m = x->m;
    sl_span_t snap = disk_storage(ctx).read_artifact(ctx, op, SL_VSR_ARTIFACT_METADATA_SNAPSHOT);
    if (snap.len < 24 || snap.len != 24 + sl_load_u64(snap.ptr + 16))
        return -1;
    uint64_t len = sl_load_u64(snap.ptr + 16);
    if (m->len < len)
        return -1; /* not replayed up to its own checkpoint yet */
    /* The log is append-only: its prefix is the checkpoint's log. */
    if (memcmp(m->log, snap.ptr + 24, len) != 0) {
        sim_fail(m->sim, "group %u: replica %u's log differs from its checkpoint at op %llu",
                 m->group, m->replica, (unsigned long long)op);
        return -1;
    }
    uint32_t n = (uint32_t)((len + x->segment - 1) / x->segment) + 1;
    if (n > x->offer_cap) {
        x->offer = realloc(x->offer, n * sizeof(*x->offer));
        sl_assert(x->offer != NULL);
        x->offer_cap = n;
    }
    uint32_t k = 0;
    for (uint64_t base = 0; base < len; base += x->segment) {
        uint64_t l = len - base < x->segment ? len - base : x->segment;
        x->offer[k++] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_SEGMENT_LOG, base, l,
                                            sl_xxh3_64(m->log + base, l)};
    }
    memcpy(x->offsets, snap.ptr, 24);
    x->offer[k++] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_CONSUMER_OFFSETS, op, 24,
                                        sl_xxh3_64(x->offsets, 24)};
    x->offer_op = op;
    x->offer_count = k;
    *list = x->offer;
    *count = k;
    return 0;
}

/* From the live log, which may have grown past what was offered. */
static sl_span_t pserve(void *ctx, uint64_t op, uint32_t index, uint64_t offset, uint32_t len)
{
    pxfer_t *x = xfer_of(ctx);
    if (op != x->offer_op || op == 0 || index >= x->offer_count)
        return sl_span(NULL, 0);
    const sl_vsr_artifact_t *a = &x->offer[index];
    if (offset >= a->len)
        return sl_span(NULL, 0);
    uint64_t n = a->len - offset < len ? a->len - offset : len;
    if (a->kind == SL_VSR_ARTIFACT_CONSUMER_OFFSETS)
        return sl_span(x->offsets + offset, n);
    if (a->frontier + offset + n > x->m->len)
        return sl_span(NULL, 0); /* the log was reset since (a restore): start over */
    x->m->sim->stats.pchunks_served++;
    return sl_span(x->m->log + a->frontier + offset, n);
}

static int pstage(void *ctx, uint64_t op, uint32_t index, const sl_vsr_artifact_t *a,
                  uint64_t offset, sl_span_t bytes)
{
    pxfer_t *x = xfer_of(ctx);
    if (a == NULL) {
        x->stage_op = op;
        x->stage_len = 0;
        x->stage_have_offsets = false;
        x->stage_next = 0;
        x->stage_pending = (uint32_t)(op % 3); /* 0 to 2 ticks of verification */
        return 0;
    }
    if (op != x->stage_op || index < x->stage_next || x->stage_have_offsets)
        return -1;
    if (a->kind == SL_VSR_ARTIFACT_SEGMENT_LOG) {
        /* Segments come in order, each where the previous one ended. */
        if (a->frontier + offset != x->stage_len)
            return -1;
        if (x->stage_len + bytes.len > x->stage_cap) {
            uint64_t cap = x->stage_cap ? x->stage_cap : 4096;
            while (cap < x->stage_len + bytes.len)
                cap *= 2;
            x->stage = realloc(x->stage, cap);
            sl_assert(x->stage != NULL);
            x->stage_cap = cap;
        }
        memcpy(x->stage + x->stage_len, bytes.ptr, bytes.len);
        x->stage_len += bytes.len;
        if (offset + bytes.len == a->len) {
            x->stage_next = index + 1;
            if (sl_xxh3_64(x->stage + a->frontier, a->len) != a->checksum)
                return -1;
        }
        return 0;
    }
    if (a->kind != SL_VSR_ARTIFACT_CONSUMER_OFFSETS || a->len != 24 || a->frontier != op ||
        offset + bytes.len > 24)
        return -1;
    memcpy(x->stage_offsets + offset, bytes.ptr, bytes.len);
    if (offset + bytes.len == a->len) {
        x->stage_next = index + 1;
        x->stage_have_offsets = true;
        if (sl_xxh3_64(x->stage_offsets, 24) != a->checksum)
            return -1;
    }
    return 0;
}

static int pinstall(void *ctx, uint64_t op, const sl_vsr_artifact_t *list, uint32_t count,
                    sl_buf_t *snapshot)
{
    pxfer_t *x = xfer_of(ctx);
    (void)list;
    if (op != x->stage_op || !x->stage_have_offsets || x->stage_next != count ||
        sl_load_u64(x->stage_offsets + 16) != x->stage_len)
        return -1;
    if (x->stage_pending > 0) {
        x->stage_pending--;
        return SL_VSR_INSTALL_PENDING;
    }
    sl_put_bytes(snapshot, x->stage_offsets, 24);
    sl_put_bytes(snapshot, x->stage, x->stage_len);
    x->stage_op = 0;
    return 0;
}

static sl_vsr_storage_t pstorage(pgroup_t *g, uint8_t i)
{
    g->disks[i].host = &g->xfers[i];
    sl_vsr_storage_t st = disk_storage(&g->disks[i]);
    st.offer = poffer;
    st.serve = pserve;
    st.stage = pstage;
    st.install = pinstall;
    return st;
}

/* --- buses -------------------------------------------------------------------------------------
 */

static void pbus_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    pbus_ctx_t *b = ctx;
    net_send(b->sim, b->replica, replica, frame, size);
}

static void pbus_reply(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size)
{
    pbus_ctx_t *b = ctx;
    sim_t *s = b->sim;
    for (uint8_t i = 0; i < s->npclients; i++) {
        if (sl_u128_eq(s->pclients[i].id, client))
            net_send(s, b->replica, s->pclients[i].node, frame, size);
    }
}

static void pbus_trace(void *ctx, const char *line)
{
    pbus_ctx_t *b = ctx;
    if (strstr(line, "state transfer installed") != NULL)
        b->sim->stats.pstate_transfers++;
    sim_log(b->sim, "group %u: %s", b->group, line);
}

/* --- life cycle --------------------------------------------------------------------------------
 */

void pgroups_init(sim_t *s, const bool *fault_prone)
{
    prng_t *p = &s->prng;
    s->npgroups = (uint8_t)prng_range(p, 2, SIM_PGROUPS_MAX);
    s->take_over_ppm = (uint32_t)prng_range(p, 0, 5000);
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        g->index = k;
        g->cfg = s->cfg;
        g->cfg.group = sl_vsr_group_partition(1, 1, k + 1u);
        g->cfg.sessionless = true;
        g->cfg.clients_max = 1;
        /* Both relay orders of a backup (replica.h, late_relay): the server
         * relays late on topics without enforce_fsync only. */
        g->cfg.late_relay = k % 2 == 0;
        /* A partition's snapshot is its whole byte log (up to tens of KiB
         * here, not the first group's 144 bytes): with the first group's
         * 16-byte chunks one state transfer took over 1000 ticks, and a
         * replica that needed two in a row (the checkpoint moved on while it
         * pulled the first) could not catch up within the liveness bound
         * (seed 10294, --partitions). Chunks 32 times the first group's
         * (512 bytes to 8 KiB): still several per snapshot. */
        g->cfg.state_chunk_max = 32u * s->cfg.state_chunk_max;
        for (uint8_t i = 0; i < s->n; i++) {
            disk_init(&g->disks[i], s, i, g->cfg.journal_slots, fault_prone[i]);
            g->machines[i] = (pmachine_t){.sim = s, .group = k, .replica = i};
            /* Segments of 256 to 1024 bytes: a checkpoint's log spans many. */
            g->xfers[i] = (pxfer_t){.m = &g->machines[i], .segment = 256u << (k % 3)};
            g->bus_ctx[i] = (pbus_ctx_t){s, k, i};
            g->buses[i] = (sl_vsr_bus_t){
                .ctx = &g->bus_ctx[i], .send = pbus_send, .reply = pbus_reply, .trace = pbus_trace};
            sl_vsr_config_t cfg = g->cfg;
            cfg.replica = i;
            sl_vsr_storage_t storage = disk_storage(&g->disks[i]);
            sl_assert(sl_vsr_replica_format(&cfg, &storage) == 0);
        }
    }
    s->npclients = (uint8_t)prng_range(p, s->npgroups, SIM_PCLIENTS_MAX);
    for (uint8_t i = 0; i < s->npclients; i++) {
        pclient_t *c = &s->pclients[i];
        memset(c, 0, sizeof(*c));
        c->index = i;
        c->node = (uint8_t)(s->n + s->nclients + i);
        c->group = (uint8_t)(i % s->npgroups);
        c->id = (sl_u128_t){0x1000u + i, 0xBA7C4ull};
        c->next_request = 1;
        c->requests_left = (uint32_t)prng_range(p, 20, 200);
        c->target = (uint8_t)prng_below(p, s->n);
        c->wake_at = prng_below(p, 50);
    }
}

void pgroups_free(sim_t *s)
{
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        for (uint8_t i = 0; i < s->n; i++) {
            if (g->replicas[i] != NULL)
                sl_vsr_replica_close(g->replicas[i]);
            disk_free(&g->disks[i]);
            free(g->machines[i].log);
            free(g->xfers[i].offer);
            free(g->xfers[i].stage);
        }
        free(g->ops);
        free(g->truth);
        free(g->acks);
    }
}

void pgroups_open(sim_t *s, uint8_t i)
{
    for (uint8_t k = 0; k < s->npgroups && !s->failed; k++) {
        pgroup_t *g = &s->pgroups[k];
        sl_vsr_config_t cfg = g->cfg;
        cfg.replica = i;
        cfg.nonce_seed = prng_next(&s->prng);
        sl_vsr_storage_t storage = pstorage(g, i);
        sl_vsr_machine_t machine = pmachine_iface(&g->machines[i]);
        if (sl_vsr_replica_open(&cfg, &storage, &g->buses[i], &machine, &g->replicas[i]) != 0)
            sim_fail(s, "group %u: replica %u could not open its storage", k, i);
    }
}

void pgroups_crash(sim_t *s, uint8_t i, bool wipe)
{
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        if (g->replicas[i] == NULL)
            continue;
        disk_crash(&g->disks[i]);
        /* What was staged and offered goes with the process. */
        g->xfers[i].offer_op = 0;
        g->xfers[i].stage_op = 0;
        g->xfers[i].stage_len = 0;
        sl_vsr_info_t info;
        sl_vsr_replica_info(g->replicas[i], &info);
        s->stats.prepares_refused += info.prepares_refused;
        sl_vsr_replica_close(g->replicas[i]);
        g->replicas[i] = NULL;
        if (wipe)
            disk_wipe(&g->disks[i]);
    }
}

bool pgroups_corrupt(sim_t *s, uint8_t i)
{
    uint8_t k = (uint8_t)prng_below(&s->prng, s->npgroups);
    return disk_corrupt(&s->pgroups[k].disks[i]);
}

/* --- routing -----------------------------------------------------------------------------------
 */

bool pgroups_route(sim_t *s, uint8_t to, const uint8_t *frame, uint32_t len)
{
    sl_vsr_frame_t f;
    uint64_t group;
    if (sl_vsr_frame_decode(frame, len, s->cfg.frame_max, &f) != SL_VSR_OK ||
        !sl_vsr_frame_group(&f, &group))
        return false;
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        if (g->cfg.group == group) {
            if (g->replicas[to] != NULL)
                sl_vsr_replica_on_frame(g->replicas[to], frame, len);
            return true;
        }
    }
    return false;
}

bool pgroups_request(sim_t *s, uint8_t from, uint8_t to, const uint8_t *frame, uint32_t len)
{
    uint32_t first = (uint32_t)s->n + s->nclients;
    if (from < first || from >= first + s->npclients)
        return false;
    pgroup_t *g = group_of(s, s->pclients[from - first].group);
    sl_request_header_t h;
    if (g->replicas[to] == NULL)
        return true;
    int rc = sl_request_header_decode(frame, s->cfg.frame_max, &h);
    if (rc != SL_HDR_OK || h.size != len) {
        sim_log(s, "producer request dropped: decode %d", rc);
        return true;
    }
    sl_vsr_request_t req = {.client = h.client,
                            .request = h.request,
                            .request_checksum = h.request_checksum,
                            .operation = h.operation,
                            .user_id = 1,
                            .timestamp = h.timestamp,
                            .body = sl_span(frame + SL_HEADER_SIZE, len - SL_HEADER_SIZE)};
    sl_vsr_replica_request(g->replicas[to], &req);
    return true;
}

/* --- producers --------------------------------------------------------------------------------
 */

/* A batch's bytes follow from who sent it and its number, so a reply can
 * be checked against what was sent. */
static void payload_of(const pclient_t *c, uint64_t request, uint8_t *out, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        uint8_t in[17];
        sl_store_u64(in, request);
        sl_store_u64(in + 8, i);
        in[16] = c->index;
        out[i] = (uint8_t)sl_xxh3_64(in, sizeof(in));
    }
}

static void psend(sim_t *s, pclient_t *c)
{
    uint8_t frame[SL_HEADER_SIZE + SIM_PAYLOAD_MAX];
    sl_request_header_t h = {.size = SL_HEADER_SIZE + c->body_len,
                             .client = c->id,
                             .request_checksum = sl_request_checksum(sl_span(c->body, c->body_len)),
                             .timestamp = s->tick,
                             .request = c->request,
                             .operation = SL_OP_SEND_MESSAGES,
                             .session = 1}; /* the wire wants one; the group reads none */
    sl_request_header_encode(frame, &h);
    memcpy(frame + SL_HEADER_SIZE, c->body, c->body_len);
    c->sent_at = s->tick;
    c->retry_at = 0;
    sim_log(s, "producer %u: send batch %llu to replica %u (group %u)", c->index,
            (unsigned long long)c->request, c->target, c->group);
    net_send(s, c->node, c->target, frame, SL_HEADER_SIZE + c->body_len);
}

static void pclient_tick(sim_t *s, pclient_t *c)
{
    if (c->outstanding) {
        if (c->retry_at != 0 && s->tick >= c->retry_at) {
            psend(s, c);
        } else if (s->tick - c->sent_at >= PCLIENT_TIMEOUT_TICKS) {
            c->target = (uint8_t)((c->target + 1) % s->n);
            psend(s, c);
        }
        return;
    }
    if (s->tick < c->wake_at || s->phase != PHASE_FAULTS || c->requests_left == 0)
        return;
    c->requests_left--;
    c->outstanding = true;
    c->request = c->next_request++;
    c->body_len = (uint32_t)prng_range(&s->prng, 1, SIM_PAYLOAD_MAX);
    payload_of(c, c->request, c->body, c->body_len);
    psend(s, c);
}

static void pack_add(pgroup_t *g, pack_t a)
{
    if (g->nacks == g->acks_cap) {
        g->acks_cap = g->acks_cap ? 2 * g->acks_cap : 256;
        g->acks = realloc(g->acks, g->acks_cap * sizeof(*g->acks));
        sl_assert(g->acks != NULL);
    }
    g->acks[g->nacks++] = a;
}

/* An acknowledged batch: the op the reply names is this request, at the
 * offset it names, and the log there holds the bytes that were sent. */
static void check_ack(sim_t *s, pclient_t *c, const sl_reply_header_t *h, uint64_t base)
{
    pgroup_t *g = group_of(s, c->group);
    if (h->op == 0 || h->op > g->committed_max || !g->ops[h->op].have) {
        sim_fail(s, "group %u: producer %u got a reply for op %llu, which no replica applied",
                 c->group, c->index, (unsigned long long)h->op);
        return;
    }
    const pop_record_t *r = &g->ops[h->op];
    if (!sl_u128_eq(r->client, c->id) || r->request != c->request || r->base != base) {
        sim_fail(s, "group %u: producer %u's reply names op %llu offset %llu: another batch",
                 c->group, c->index, (unsigned long long)h->op, (unsigned long long)base);
        return;
    }
    if (base + c->body_len > g->truth_len || memcmp(g->truth + base, c->body, c->body_len) != 0) {
        sim_fail(s, "group %u: producer %u's batch is not at offset %llu", c->group, c->index,
                 (unsigned long long)base);
        return;
    }
    pack_add(g,
             (pack_t){.base = base, .len = c->body_len, .client = c->index, .request = c->request});
    s->stats.batches_acked++;
}

void pgroups_client_frame(sim_t *s, uint8_t node, const uint8_t *frame, uint32_t len)
{
    pclient_t *c = &s->pclients[node - s->n - s->nclients];
    sl_reply_header_t h;
    if (len < SL_HEADER_SIZE || frame[60] == SL_COMMAND_EVICTION) {
        sim_fail(s, "producer %u: an eviction from a sessionless group", c->index);
        return;
    }
    if (sl_reply_header_decode(frame, SL_FRAME_MAX_DEFAULT, &h) != 0 || h.size != len ||
        !c->outstanding || h.request != c->request)
        return; /* a duplicate or a reply to an earlier batch */
    sl_span_t body = sl_span(frame + SL_HEADER_SIZE, len - SL_HEADER_SIZE);
    if (body.len < 4) {
        sim_fail(s, "producer %u: reply without a result section", c->index);
        return;
    }
    if (sl_load_u32(body.ptr) != 0) {
        uint32_t code = body.len >= 12 ? sl_load_u32(body.ptr + 8) : 0;
        if (code == 57) {
            c->retry_at = s->tick + 5;
        } else if (code == 58) {
            uint8_t hint = (uint8_t)(h.view % s->n);
            c->target = hint != h.replica ? hint : (uint8_t)((c->target + 1) % s->n);
            c->retry_at = s->tick + 5;
        } else {
            sim_fail(s, "producer %u: batch %llu rejected with %u", c->index,
                     (unsigned long long)c->request, code);
        }
        return;
    }
    if (body.len != 12) {
        sim_fail(s, "producer %u: a reply of %zu bytes, not an offset", c->index, body.len);
        return;
    }
    check_ack(s, c, &h, sl_load_u64(body.ptr + 4));
    c->outstanding = false;
    c->target = (uint8_t)(h.view % s->n);
    c->wake_at = s->tick + prng_below(&s->prng, 20);
}

/* --- the loop ---------------------------------------------------------------------------------
 */

void pgroups_step(sim_t *s, uint64_t realtime_us[SIM_REPLICAS_MAX])
{
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        for (uint8_t i = 0; i < s->n; i++) {
            if (g->replicas[i] != NULL)
                disk_complete(&g->disks[i], g->replicas[i], s->tick);
        }
        for (uint8_t i = 0; i < s->n; i++) {
            if (g->replicas[i] != NULL)
                sl_vsr_replica_tick(g->replicas[i], realtime_us[i]);
        }
    }
    for (uint8_t i = 0; i < s->npclients; i++)
        pclient_tick(s, &s->pclients[i]);
    if (s->phase == PHASE_FAULTS && prng_chance(&s->prng, s->take_over_ppm)) {
        pgroup_t *g = &s->pgroups[prng_below(&s->prng, s->npgroups)];
        uint8_t i = (uint8_t)prng_below(&s->prng, s->n);
        if (g->replicas[i] != NULL) {
            sim_log(s, "group %u: take over on replica %u", g->index, i);
            sl_vsr_replica_take_over(g->replicas[i]);
            s->stats.take_overs++;
        }
    }
}

bool pgroups_converged(sim_t *s)
{
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        uint32_t view = 0;
        for (uint8_t i = 0; i < s->n; i++) {
            if (g->replicas[i] == NULL)
                return false;
            sl_vsr_info_t info;
            sl_vsr_replica_info(g->replicas[i], &info);
            if (info.status != SL_VSR_STATUS_NORMAL || info.syncing ||
                info.commit_min != g->committed_max || info.commit_max != g->committed_max ||
                (i > 0 && info.view != view))
                return false;
            view = info.view;
        }
    }
    for (uint8_t i = 0; i < s->npclients; i++) {
        if (s->pclients[i].outstanding)
            return false;
    }
    return true;
}

void pgroups_check_final(sim_t *s)
{
    uint32_t quorum = s->n / 2u + 1u;
    for (uint8_t k = 0; k < s->npgroups && !s->failed; k++) {
        pgroup_t *g = &s->pgroups[k];
        for (size_t a = 0; a < g->nacks && !s->failed; a++) {
            const pack_t *ack = &g->acks[a];
            uint8_t bytes[SIM_PAYLOAD_MAX];
            payload_of(&s->pclients[ack->client], ack->request, bytes, ack->len);
            uint32_t holders = 0;
            for (uint8_t i = 0; i < s->n; i++) {
                const pmachine_t *m = &g->machines[i];
                if (m->len >= ack->base + ack->len &&
                    memcmp(m->log + ack->base, bytes, ack->len) == 0)
                    holders++;
            }
            if (holders < quorum)
                sim_fail(s, "group %u: acknowledged batch at offset %llu is on %u replicas", k,
                         (unsigned long long)ack->base, holders);
        }
    }
}

uint64_t pgroups_refused(sim_t *s)
{
    uint64_t n = s->stats.prepares_refused;
    for (uint8_t k = 0; k < s->npgroups; k++) {
        for (uint8_t i = 0; i < s->n; i++) {
            sl_vsr_info_t info;
            if (s->pgroups[k].replicas[i] != NULL) {
                sl_vsr_replica_info(s->pgroups[k].replicas[i], &info);
                n += info.prepares_refused;
            }
        }
    }
    return n;
}

void pgroups_describe(sim_t *s, FILE *out)
{
    for (uint8_t k = 0; k < s->npgroups; k++) {
        pgroup_t *g = &s->pgroups[k];
        fprintf(out, "  partition group %u: %llu ops, log %llu bytes, %zu batches acknowledged\n",
                k, (unsigned long long)g->committed_max, (unsigned long long)g->truth_len,
                g->nacks);
        for (uint8_t i = 0; i < s->n; i++) {
            if (g->replicas[i] == NULL) {
                fprintf(out, "    replica %u: down\n", i);
                continue;
            }
            sl_vsr_info_t info;
            sl_vsr_replica_info(g->replicas[i], &info);
            fprintf(out,
                    "    replica %u: %s%s%s view %u log_view %u op %llu commit %llu/%llu "
                    "checkpoint %llu, log %llu bytes, %llu refused\n",
                    i, sl_vsr_status_name(info.status), info.primary ? " primary" : "",
                    info.syncing ? " syncing" : "", info.view, info.log_view,
                    (unsigned long long)info.op, (unsigned long long)info.commit_min,
                    (unsigned long long)info.commit_max, (unsigned long long)info.checkpoint_op,
                    (unsigned long long)g->machines[i].len,
                    (unsigned long long)info.prepares_refused);
        }
    }
    for (uint8_t i = 0; i < s->npclients; i++) {
        const pclient_t *c = &s->pclients[i];
        if (c->outstanding)
            fprintf(out, "  producer %u (group %u): waiting on batch %llu at replica %u\n", i,
                    c->group, (unsigned long long)c->request, c->target);
    }
}
