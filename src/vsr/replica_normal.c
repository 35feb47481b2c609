/* Normal operation: client requests and the client table's answers,
 * prepares down the chain (cluster.md 6.1), PrepareOk to the primary,
 * commits at a quorum, the Commit heartbeat, applying committed prepares in
 * op order, replies, and checkpoints. */
#include "vsr/replica_internal.h"

#include <string.h>

#include "base/xxh3.h"
#include "wire/header.h"

/* --- replies to clients ----------------------------------------------------------------------- */

static void send_reply(sl_vsr_replica_t *r, const sl_reply_header_t *h, sl_span_t body)
{
    sl_buf_reset(&r->out);
    uint8_t *hdr = sl_buf_extend(&r->out, SL_HEADER_SIZE);
    if (hdr == NULL)
        return;
    sl_reply_header_t copy = *h;
    copy.size = (uint32_t)(SL_HEADER_SIZE + body.len);
    copy.cluster = r->cfg.cluster;
    copy.view = r->view;
    copy.replica = r->cfg.replica;
    sl_reply_header_encode(hdr, &copy);
    sl_put_span(&r->out, body);
    if (sl_buf_ok(&r->out))
        r->bus.reply(r->bus.ctx, h->client, r->out.data, (uint32_t)r->out.len);
}

/* A result-section rejection (framing.md 7.1): 57, 58 or 59. */
static void send_transient(sl_vsr_replica_t *r, const sl_vsr_request_t *req, uint32_t code)
{
    uint8_t body[12];
    sl_store_u32(body, 1);
    sl_store_u32(body + 4, 0);
    sl_store_u32(body + 8, code);
    sl_reply_header_t h = {.request_checksum = req->request_checksum,
                           .client = req->client,
                           .op = r->commit_min,
                           .commit = r->commit_min,
                           .timestamp = req->timestamp,
                           .request = req->request,
                           .operation = req->operation};
    send_reply(r, &h, sl_span(body, sizeof(body)));
}

static void send_eviction(sl_vsr_replica_t *r, sl_u128_t client, uint8_t reason)
{
    uint8_t hdr[SL_HEADER_SIZE];
    sl_eviction_header_t h = {.cluster = r->cfg.cluster,
                              .view = r->view,
                              .replica = r->cfg.replica,
                              .client = client,
                              .reason = reason};
    sl_eviction_header_encode(hdr, &h);
    r->bus.reply(r->bus.ctx, client, hdr, SL_HEADER_SIZE);
}

/* The committed reply a client-table entry remembers, resent byte for byte. */
static void send_cached(sl_vsr_replica_t *r, const sl_vsr_client_t *c)
{
    sl_reply_header_t h = {.request_checksum = c->request_checksum,
                           .client = c->client,
                           .op = c->reply_op,
                           .commit = c->reply_op,
                           .timestamp = c->reply_timestamp,
                           .request = c->request,
                           .operation = c->reply_operation};
    send_reply(r, &h, sl_span(c->reply, c->reply_len));
}

/* --- client requests ---------------------------------------------------------------------------
 */

/* Whether a prepare of this client is in the pipeline. */
static bool in_flight(sl_vsr_replica_t *r, sl_u128_t client)
{
    for (uint64_t op = r->commit_max + 1; op <= r->op; op++) {
        if (vsr_known(r, op) && sl_u128_eq(sl_load_u128(vsr_entry(r, op)->header + 128), client))
            return true;
    }
    return false;
}

/* The body journaled for prepare p: the request's, or what the machine's
 * prepare hook builds from it and the head, put in `body` after room for
 * the header (the frame is built in place: no copy of the body). false
 * when the client has been answered instead (the hook's code, 57 while the
 * head's body is being repaired, 3 for a body past the frame limit). */
static bool machine_prepare(sl_vsr_replica_t *r, const sl_vsr_request_t *req,
                            const sl_vsr_prepare_t *p, sl_span_t *body)
{
    sl_buf_reset(&r->body);
    if (sl_buf_extend(&r->body, SL_HEADER_SIZE) == NULL)
        return false;
    uint32_t code = 0;
    if (r->machine.prepare == NULL) {
        sl_put_span(&r->body, req->body);
    } else {
        sl_vsr_frame_t prev;
        sl_span_t head;
        if (!vsr_head(r, p->op, p->parent, &prev, &head)) {
            send_transient(r, req, 57);
            return false;
        }
        code = r->machine.prepare(r->machine.ctx, p, head, req->body, &r->body);
    }
    if (code == 0 && (!sl_buf_ok(&r->body) || r->body.len > r->cfg.frame_max))
        code = 3; /* InvalidCommand: no frame can carry it */
    if (code != 0) {
        send_transient(r, req, code);
        return false;
    }
    *body = sl_span(r->body.data + SL_HEADER_SIZE, r->body.len - SL_HEADER_SIZE);
    return true;
}

/* Builds the next prepare, journals it and sends it down the chain. */
static void prepare_request(sl_vsr_replica_t *r, const sl_vsr_request_t *req)
{
    uint64_t op = r->op + 1;
    vsr_entry_t *head = vsr_entry(r, r->op);
    bool known = vsr_known(r, r->op);
    /* A log that ends at a checkpoint taken by state transfer has no header
     * for its head: the chain links to the checkpoint's identity when known,
     * else to 0 (cluster.md's "unsealed"). Nothing needs to verify a
     * checkpointed op through its successor. */
    sl_u128_t parent = known ? head->identity : r->checkpoint_identity;
    sl_assert(r->op == 0 || !sl_u128_is_zero(parent));
    uint64_t ts = r->realtime_us;
    uint64_t last = r->timestamp_last;
    if (known && head->timestamp > last)
        last = head->timestamp;
    if (ts <= last)
        ts = last + 1;
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_PREPARE);
    f.u.prepare = (sl_vsr_prepare_t){.client = req->client,
                                     .parent = r->op > 0 ? parent : (sl_u128_t){0, 0},
                                     .request_checksum = req->request_checksum,
                                     .op = op,
                                     .commit = r->commit_max,
                                     .timestamp = ts,
                                     .request = req->request,
                                     .operation = req->operation,
                                     .group = r->cfg.group,
                                     .user_id = req->user_id};
    sl_span_t body;
    if (!machine_prepare(r, req, &f.u.prepare, &body))
        return;
    uint8_t *h = r->body.data;
    sl_vsr_header_encode(h, &f, body);
    r->timestamp_last = ts;
    vsr_log_set(r, h, true);
    vsr_entry(r, op)->sent_tick = r->ticks;
    r->op = op;
    /* Sent before it is journaled here: the backups' writes and the
     * network overlap this replica's own write (the op commits only once
     * it is present here too, vsr_commit_advance). */
    uint8_t next = (uint8_t)((r->cfg.replica + 1) % r->cfg.replica_count);
    if (next != r->cfg.replica)
        vsr_send_bytes(r, next, r->body.data, r->body.len);
    /* Backups the chain is failing to reach get it straight away (a star
     * around the break); a duplicate from the chain is harmless. */
    for (uint8_t i = 0; i < r->cfg.replica_count; i++) {
        if (i != r->cfg.replica && i != next && r->ticks < r->star_until[i])
            vsr_send_bytes(r, i, r->body.data, r->body.len);
    }
    vsr_journal_write_frame(r, &r->body);
}

/* framing.md 6.1's preflight for a non-Register request: true when it is
 * new (to be prepared); otherwise it has been answered or dropped. */
static bool preflight(sl_vsr_replica_t *r, const sl_vsr_request_t *req)
{
    sl_vsr_client_t *c = sl_vsr_clients_find(&r->clients, req->client);
    if (c == NULL) {
        send_eviction(r, req->client, SL_EVICT_NO_SESSION);
        return false;
    }
    if (req->session < c->session) {
        send_eviction(r, req->client, SL_EVICT_SESSION_TOO_LOW);
        return false;
    }
    if (req->session > c->session)
        return false; /* an epoch never minted: a client bug, dropped */
    if (req->request > c->request)
        return true;
    bool stamps_conflict = !sl_u128_is_zero(req->request_checksum) &&
                           !sl_u128_is_zero(c->request_checksum) &&
                           !sl_u128_eq(req->request_checksum, c->request_checksum);
    if (req->request == c->request && stamps_conflict)
        return false; /* the number reused for other arguments */
    if (req->request == c->request && c->has_reply)
        send_cached(r, c);
    else
        send_transient(r, req, 59); /* RequestAlreadyApplied */
    return false;
}

void sl_vsr_replica_request(sl_vsr_replica_t *r, const sl_vsr_request_t *req)
{
    bool session_op = req->operation == SL_OP_REGISTER || req->operation == SL_OP_LOGOUT;
    if (r->cfg.sessionless && session_op) {
        r->requests_refused++; /* no sessions on this plane */
        return;
    }
    if (!vsr_is_primary(r) || r->syncing) {
        send_transient(r, req, 58); /* TransientNotAccepted: try elsewhere */
        return;
    }
    if (in_flight(r, req->client) || r->commit_min < r->commit_max ||
        !(r->op == r->checkpoint_op || vsr_known(r, r->op))) {
        send_transient(r, req, 57); /* TransientNotCommitted: try again */
        return;
    }
    if (r->cfg.sessionless) {
        /* The partition plane: no session to check, no reply cached. */
    } else if (sl_u128_is_zero(req->client)) {
        /* An internal operation of the host (the root user of a fresh
         * cluster): no session, no client-table entry, no reply. Clients
         * cannot send client 0 (framing.md 9 drops it at the door). */
    } else if (req->operation == SL_OP_REGISTER) {
        sl_vsr_client_t *c = sl_vsr_clients_find(&r->clients, req->client);
        if (c != NULL && c->user_id != req->user_id) {
            send_eviction(r, req->client, SL_EVICT_SESSION_ERROR);
            return;
        }
    } else if (!preflight(r, req)) {
        return;
    }
    if (r->op - r->commit_max >= r->cfg.pipeline_max || !vsr_in_window(r, r->op + 1)) {
        send_transient(r, req, 58);
        return;
    }
    prepare_request(r, req);
}

/* --- prepares and acknowledgements
 * ------------------------------------------------------------------- */

void vsr_commit_learn(sl_vsr_replica_t *r, uint64_t commit)
{
    /* Only a source of the log view may move commit_max: a higher view's
     * commit point may name ops this replica's log has not got yet. */
    if (r->status == SL_VSR_STATUS_NORMAL && r->view == r->log_view && commit > r->commit_max)
        r->commit_max = commit;
}

void vsr_send_prepare_ok(sl_vsr_replica_t *r, uint64_t op)
{
    if (r->status != SL_VSR_STATUS_NORMAL || r->view != r->log_view || vsr_is_primary(r))
        return;
    vsr_entry_t *e = vsr_entry(r, op);
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_PREPARE_OK);
    f.u.prepare_ok = (sl_vsr_prepare_ok_t){.parent = e->parent,
                                           .prepare_checksum = e->identity,
                                           .op = op,
                                           .commit = r->commit_max,
                                           .timestamp = e->timestamp,
                                           .request = sl_load_u64(e->header + 200),
                                           .operation = e->header[208],
                                           .group = r->cfg.group};
    vsr_send(r, vsr_primary_of(r, r->view), &f, sl_span(NULL, 0));
}

void vsr_on_prepare(sl_vsr_replica_t *r, const sl_vsr_frame_t *f, const uint8_t *raw)
{
    if (r->status == SL_VSR_STATUS_RECOVERING)
        return;
    if (f->h.view > r->view) {
        vsr_request_start_view(r, vsr_primary_of(r, f->h.view));
        return;
    }
    if (f->h.view < r->view || r->status != SL_VSR_STATUS_NORMAL || vsr_is_primary(r))
        return;
    const sl_vsr_prepare_t *p = &f->u.prepare;
    uint8_t primary = vsr_primary_of(r, r->view);
    vsr_commit_learn(r, p->commit);
    uint64_t op = p->op;
    if (op <= r->commit_min)
        return;
    vsr_entry_t *e = vsr_entry(r, op);
    /* The same view has one prepare per op, and its log is one hash chain
     * (a 0 parent is an unsealed link after a state-transferred checkpoint:
     * no information). A canonical entry can still disagree: a peer in a
     * later view vouches for its committed ops in any view (repair), so
     * this replica may hold a later view's op where its own view's primary
     * prepared one that was cut. Its view is stale then; the prepare is
     * dropped (never acknowledged) and a StartView sorts the log out. */
    if (vsr_known(r, op) && e->canonical) {
        if (!sl_u128_eq(e->identity, f->h.checksum)) {
            vsr_trace(r, "prepare %llu differs from a committed op vouched for: stale view",
                      (unsigned long long)op);
            return;
        }
        if (vsr_present(r, op))
            vsr_send_prepare_ok(r, op);
        else if (vsr_accept(r, f))
            vsr_journal_write(r, raw, f->body);
        return;
    }
    if (op == r->op + 1 && vsr_known(r, r->op) && vsr_entry(r, r->op)->canonical &&
        !sl_u128_is_zero(p->parent) && !sl_u128_eq(vsr_entry(r, r->op)->identity, p->parent)) {
        vsr_trace(r, "prepare %llu does not chain to a committed op vouched for: stale view",
                  (unsigned long long)op);
        return;
    }
    uint8_t next = (uint8_t)((r->cfg.replica + 1) % r->cfg.replica_count);
    if (!vsr_accept(r, f)) {
        /* Refused here, not for the rest of the chain: relaying is not
         * acknowledging. */
        if (next != primary)
            vsr_send_bytes(r, next, raw, f->h.size);
        return;
    }
    vsr_log_set(r, raw, true);
    if (op > r->op)
        r->op = op;
    if (vsr_known(r, op - 1) && !vsr_entry(r, op - 1)->canonical &&
        sl_u128_eq(vsr_entry(r, op - 1)->identity, p->parent))
        vsr_chain_down(r, op, false);
    /* Down the chain first when the next replica's acknowledgement counts
     * towards the commit: its write overlaps this one's. Otherwise after
     * this replica's own write, so that the copy to a replica the commit
     * does not wait for is not made in front of this one's PrepareOk (on a
     * machine whose cores the replicas share, it took the core the ack
     * needed: docs/benchmarks.md, "one trip, step by step"). */
    bool first = vsr_relay_first(r);
    if (next != primary && first)
        vsr_send_bytes(r, next, raw, f->h.size);
    uint64_t writes = r->journal_writes;
    vsr_journal_write(r, raw, f->body);
    if (next == primary || first)
        return;
    if (r->journal_writes != writes)
        vsr_slot(r, op)->relay_after_write = true;
    else
        vsr_send_bytes(r, next, raw, f->h.size); /* no write of its own: now */
}

bool vsr_relay_first(const sl_vsr_replica_t *r)
{
    if (!r->cfg.late_relay)
        return true;
    uint8_t primary = vsr_primary_of(r, r->view);
    uint32_t n = r->cfg.replica_count;
    uint32_t distance = (r->cfg.replica + n - primary) % n; /* 1: the primary's next */
    return distance + 1u < r->quorum;
}

void vsr_on_written(sl_vsr_replica_t *r, uint64_t op)
{
    if (!vsr_present(r, op) || !vsr_entry(r, op)->canonical || r->status != SL_VSR_STATUS_NORMAL)
        return;
    if (vsr_is_primary(r)) {
        vsr_commit_advance(r);
    } else if (op > r->commit_min) {
        vsr_send_prepare_ok(r, op);
    }
}

void vsr_on_prepare_ok(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    const sl_vsr_prepare_ok_t *p = &f->u.prepare_ok;
    if (!vsr_is_primary(r) || f->h.view != r->view || p->op <= r->commit_max || p->op > r->op)
        return;
    vsr_entry_t *e = vsr_entry(r, p->op);
    if (!vsr_known(r, p->op) || !sl_u128_eq(e->identity, p->prepare_checksum))
        return;
    e->acks |= 1u << f->h.replica;
    vsr_commit_advance(r);
}

void vsr_commit_advance(sl_vsr_replica_t *r)
{
    if (!vsr_is_primary(r))
        return;
    uint32_t need = r->quorum;
    if (r->cfg.bugs & SL_VSR_BUG_COMMIT_WITHOUT_QUORUM)
        need = 1;
    while (r->commit_max < r->op) {
        uint64_t op = r->commit_max + 1;
        vsr_entry_t *e = vsr_entry(r, op);
        if (!vsr_known(r, op) || !e->canonical || !vsr_present(r, op))
            break;
        uint32_t acks = e->acks | (1u << r->cfg.replica);
        if ((uint32_t)__builtin_popcount(acks) < need)
            break;
        r->commit_max = op;
        r->progress_tick = r->ticks;
    }
    vsr_apply_committed(r);
}

void vsr_on_commit(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    if (r->status == SL_VSR_STATUS_RECOVERING)
        return;
    if (f->h.view > r->view) {
        vsr_request_start_view(r, vsr_primary_of(r, f->h.view));
        return;
    }
    if (f->h.view < r->view || r->status != SL_VSR_STATUS_NORMAL || vsr_is_primary(r) ||
        f->h.replica != vsr_primary_of(r, r->view))
        return;
    if (f->u.commit.timestamp_monotonic > r->primary_heartbeat) {
        r->primary_heartbeat = f->u.commit.timestamp_monotonic;
        r->primary_tick = r->ticks;
    }
    vsr_commit_learn(r, f->u.commit.commit);
    uint64_t op = f->u.commit.commit;
    sl_u128_t identity = f->u.commit.commit_checksum;
    if (op == 0 || op <= r->commit_min || sl_u128_is_zero(identity))
        return;
    r->anchor_op = op;
    r->anchor_identity = identity;
    vsr_entry_t *e = vsr_entry(r, op);
    if (vsr_known(r, op) && !e->canonical && sl_u128_eq(e->identity, identity)) {
        e->canonical = true;
        vsr_chain_down(r, op, false);
    }
}

/* --- apply ---------------------------------------------------------------------------------------
 */

static void apply_one(sl_vsr_replica_t *r, uint64_t op, const sl_vsr_frame_t *f)
{
    const sl_vsr_prepare_t *p = &f->u.prepare;
    sl_buf_reset(&r->reply);
    r->machine.apply(r->machine.ctx, p, f->body, &r->reply);
    sl_span_t reply = sl_buf_ok(&r->reply) ? sl_buf_span(&r->reply) : sl_span(NULL, 0);
    if (sl_u128_is_zero(p->client))
        return; /* an internal operation: no session, no reply */
    /* A Register binds a session; the watermark, its stamp and its cached
     * reply stay (a retried request after a rebind still finds its reply).
     * A Register's own reply is never resent: every Register commits. */
    if (r->cfg.sessionless) {
        /* No client table on this plane: nothing to remember. */
    } else if (p->operation == SL_OP_REGISTER) {
        sl_vsr_clients_register(&r->clients, p->client, op, p->user_id);
    } else {
        sl_vsr_client_t *c = sl_vsr_clients_find(&r->clients, p->client);
        if (c != NULL)
            sl_vsr_clients_commit(&r->clients, c, p->request, p->request_checksum, op, p->timestamp,
                                  p->operation, reply);
    }
    if (vsr_is_primary(r)) {
        sl_reply_header_t h = {.request_checksum = p->request_checksum,
                               .client = p->client,
                               .op = op,
                               .commit = op,
                               .timestamp = p->timestamp,
                               .request = p->request,
                               .operation = p->operation};
        send_reply(r, &h, reply);
    }
}

void vsr_apply_committed(sl_vsr_replica_t *r)
{
    /* No guard for a replica waiting on a state transfer: an op it cannot
     * apply is not in its log window (a lost checkpoint leaves op 1 below
     * it), and one it can apply proves a peer's RangeEvicted was not the
     * last word (the transfer is then no longer needed). */
    while (r->commit_min < r->commit_max) {
        uint64_t op = r->commit_min + 1;
        if (!vsr_known(r, op) || !vsr_entry(r, op)->canonical || !vsr_present(r, op))
            break;
        sl_vsr_frame_t f;
        if (!vsr_journal_read(r, op, &f))
            break;
        apply_one(r, op, &f);
        r->commit_min = op;
        r->syncing = false;
        if (op % r->cfg.checkpoint_interval == 0)
            vsr_checkpoint(r);
    }
}

bool vsr_checkpoint(sl_vsr_replica_t *r)
{
    sl_buf_reset(&r->body);
    r->machine.snapshot(r->machine.ctx, &r->body);
    sl_buf_reset(&r->reply);
    sl_vsr_clients_encode(&r->clients, &r->reply);
    if (!sl_buf_ok(&r->body) || !sl_buf_ok(&r->reply))
        return false;
    sl_span_t snap = sl_buf_span(&r->body), table = sl_buf_span(&r->reply);
    if (r->storage.write_artifacts(r->storage.ctx, r->commit_min, snap, table) != 0)
        return false;
    uint64_t before = r->checkpoint_op;
    sl_vsr_artifact_t saved[2] = {r->checkpoint[0], r->checkpoint[1]};
    sl_u128_t identity_before = r->checkpoint_identity;
    /* A checkpoint written again at its own op (its artifacts were damaged)
     * keeps the identity it has; otherwise the op was applied here. */
    sl_assert(r->commit_min == before || vsr_known(r, r->commit_min));
    if (r->commit_min != before)
        r->checkpoint_identity = vsr_entry(r, r->commit_min)->identity;
    r->checkpoint_op = r->commit_min;
    r->checkpoint[0] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_METADATA_SNAPSHOT, r->commit_min,
                                           snap.len, sl_xxh3_64(snap.ptr, snap.len)};
    r->checkpoint[1] = (sl_vsr_artifact_t){SL_VSR_ARTIFACT_CLIENT_TABLE, r->commit_min, table.len,
                                           sl_xxh3_64(table.ptr, table.len)};
    if (!vsr_persist(r)) {
        r->checkpoint_op = before;
        r->checkpoint_identity = identity_before;
        r->checkpoint[0] = saved[0];
        r->checkpoint[1] = saved[1];
        return false;
    }
    return true;
}

/* --- ticks
 * ------------------------------------------------------------------------------------------ */

static void primary_heartbeat(sl_vsr_replica_t *r)
{
    if (r->commit_max == r->op)
        r->progress_tick = r->ticks;
    /* A primary whose pipeline has not moved for a heartbeat timeout
     * abdicates: it stops the heartbeat, so the backups start a view change
     * (which can cut an op nobody can serve, or find a primary a quorum can
     * reach). It goes on otherwise as before. */
    if (r->ticks - r->progress_tick >= r->cfg.heartbeat_timeout_ticks)
        return;
    uint64_t interval = r->cfg.commit_interval_ticks;
    if (r->heartbeat_seq != 0 && r->ticks - r->heartbeat_tick < interval)
        return;
    /* Each group beats on ticks of its own phase (from its id): groups
     * created together would otherwise send their Commits in the same tick
     * for ever, hundreds of frames at once on a node leading many
     * partitions. The first beat goes at once; the next on the group's
     * phase, at most an interval later. The metadata group is one of its
     * kind and beats from its first beat, as it always has. */
    uint64_t phase = ((r->cfg.group * 0x9E3779B97F4A7C15ull) >> 32) % interval;
    r->heartbeat_tick = r->ticks;
    if (r->cfg.group != SL_VSR_GROUP_METADATA)
        r->heartbeat_tick -= (r->ticks + phase) % interval;
    r->heartbeat_seq++;
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_COMMIT);
    f.u.commit.timestamp_monotonic = r->heartbeat_seq;
    f.u.commit.commit = r->commit_max;
    /* cluster.md leaves commit_checksum unused; Sluice sends the identity of
     * the op at commit (0 when unknown), a chain anchor for the backups. */
    if (vsr_known(r, r->commit_max) && vsr_entry(r, r->commit_max)->canonical)
        f.u.commit.commit_checksum = vsr_entry(r, r->commit_max)->identity;
    f.u.commit.group = r->cfg.group;
    vsr_broadcast(r, &f, sl_span(NULL, 0));
}

/* Resends prepares of the pipeline that a quorum has not acknowledged,
 * straight to each backup that has not (the chain may be broken), and
 * marks those backups for direct sends of new prepares (star_until). */
static void primary_resend(sl_vsr_replica_t *r)
{
    uint32_t sent = 0;
    for (uint64_t op = r->commit_max + 1; op <= r->op && sent < r->cfg.pipeline_max; op++) {
        vsr_entry_t *e = vsr_entry(r, op);
        if (!vsr_known(r, op) || !e->canonical || r->ticks - e->sent_tick < r->cfg.resend_ticks)
            continue;
        sl_vsr_frame_t f;
        if (!vsr_present(r, op) || !vsr_journal_read(r, op, &f))
            continue;
        e->sent_tick = r->ticks;
        sent++;
        sl_buf_reset(&r->body);
        sl_put_bytes(&r->body, e->header, SL_HEADER_SIZE);
        sl_put_span(&r->body, f.body);
        if (!sl_buf_ok(&r->body))
            continue;
        sl_store_u32(r->body.data + 52, r->view); /* the identity does not cover the view */
        /* A backup still without it after a resend period: the chain does
         * not reach it, so new prepares go to it directly for a while. */
        for (uint8_t i = 0; i < r->cfg.replica_count; i++) {
            if (i != r->cfg.replica && !(e->acks & (1u << i))) {
                vsr_send_bytes(r, i, r->body.data, r->body.len);
                r->star_until[i] = r->ticks + (uint64_t)VSR_STAR_RESENDS * r->cfg.resend_ticks;
            }
        }
    }
}

void vsr_tick_normal(sl_vsr_replica_t *r)
{
    if (vsr_is_primary(r)) {
        primary_heartbeat(r);
        primary_resend(r);
        return;
    }
    if (r->ticks - r->primary_tick >= r->cfg.heartbeat_timeout_ticks) {
        vsr_start_view_change(r, r->view + 1);
        return;
    }
    /* Not heard from the primary since this replica (re)started: ask for
     * its view's log. */
    if (r->primary_heartbeat == 0)
        vsr_request_start_view(r, vsr_primary_of(r, r->view));
}
