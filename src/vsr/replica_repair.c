/* Journal repair (cluster.md 8: RequestPrepares, RepairPrepare, RepairDone,
 * RangeEvicted), state transfer (cluster.md 9: one artifact and one chunk in
 * flight at a time) and the view discovery of a replica that lost its disk.
 *
 * What a peer serves is always its view's log or committed: an op at or
 * below its commit_min (applied, hence committed everywhere), or an op of
 * its log when it is normal in the view the request names. So a requester
 * may take what arrives even where it knows no header yet. */
#include "vsr/replica_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"

/* --- journal repair: the requester
 * -------------------------------------------------------------------- */

/* Whether op still needs a header of the log or its body. */
static bool needs_repair(sl_vsr_replica_t *r, uint64_t op)
{
    if (!vsr_known(r, op) || !vsr_entry(r, op)->canonical)
        return true;
    const vsr_slot_t *s = vsr_slot(r, op);
    return !vsr_present(r, op) && !(s->writing && s->writing_op == op);
}

/* The peer to ask: the primary first for a backup (it vouches for its whole
 * log), then the others in turn after each timeout. */
static uint8_t next_peer(sl_vsr_replica_t *r, uint32_t rotation)
{
    uint32_t n = r->cfg.replica_count;
    uint32_t start = vsr_is_primary(r) ? r->cfg.replica + 1u : vsr_primary_of(r, r->view);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t peer = (uint8_t)((start + rotation + i) % n);
        if (peer != r->cfg.replica)
            return peer;
    }
    return r->cfg.replica;
}

static uint8_t repair_peer(sl_vsr_replica_t *r)
{
    return next_peer(r, r->repair_rotation);
}

static void send_request_prepares(sl_vsr_replica_t *r, uint64_t from, uint64_t to)
{
    uint8_t peer = repair_peer(r);
    if (peer == r->cfg.replica)
        return;
    r->repair_busy = true;
    r->repair_peer = peer;
    r->repair_from = from;
    r->repair_to = to;
    r->repair_tick = r->ticks;
    r->repair_accepted = 0;
    r->repair_nonce = vsr_nonce(r);
    vsr_trace(r, "repair %llu..%llu from %u", (unsigned long long)from, (unsigned long long)to,
              peer);
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_REQUEST_PREPARES);
    f.u.request_prepares = (sl_vsr_request_prepares_t){
        .nonce = r->repair_nonce, .from_op = from, .to_op = to, .group = r->cfg.group};
    vsr_send(r, peer, &f, sl_span(NULL, 0));
}

void vsr_tick_repair(sl_vsr_replica_t *r)
{
    if (r->status != SL_VSR_STATUS_NORMAL || r->cfg.replica_count == 1)
        return;
    if (r->repair_busy) {
        if (r->ticks - r->repair_tick < r->cfg.resend_ticks)
            return;
        r->repair_busy = false; /* timed out: the next peer */
        r->repair_rotation++;
    }
    /* A primary whose head header is unknown (its log ends at a checkpoint
     * it got by state transfer) cannot chain the next prepare. A head past
     * the window has no place to go until the ops below are applied, by
     * the repair below or a state transfer it leads to. */
    if (vsr_is_primary(r) && r->op > 0 && vsr_in_window(r, r->op) && !vsr_known(r, r->op)) {
        send_request_prepares(r, r->op, r->op);
        return;
    }
    /* Ops past the window wait for the next checkpoint to make room. */
    uint64_t hi = r->op > r->commit_max ? r->op : r->commit_max;
    if (hi >= r->checkpoint_op + r->cfg.journal_slots)
        hi = r->checkpoint_op + r->cfg.journal_slots - 1;
    uint64_t from = r->commit_min + 1;
    while (from <= hi && !needs_repair(r, from))
        from++;
    if (from > hi)
        return;
    uint64_t to = from;
    while (to < hi && needs_repair(r, to + 1))
        to++;
    /* A gap below a canonical entry is verifiable from its top down, one op
     * per answer when the peer cannot vouch for it (the entry above names
     * each op's identity): ask for the top of the gap. Otherwise (a gap up
     * to or past the head) ask from the bottom, where a vouching peer can
     * serve a whole chunk. */
    if (to < r->op && vsr_known(r, to + 1) && vsr_entry(r, to + 1)->canonical &&
        to - from + 1 > r->cfg.repair_chunk_max)
        from = to - r->cfg.repair_chunk_max + 1;
    else if (to - from + 1 > r->cfg.repair_chunk_max)
        to = from + r->cfg.repair_chunk_max - 1;
    send_request_prepares(r, from, to);
}

/* An entry a peer holds but cannot vouch for: taken only when this
 * replica knows its identity, from its own canonical header for op or from
 * the canonical entry above (the hash chain). */
static bool verifiable(sl_vsr_replica_t *r, uint64_t op, sl_u128_t identity)
{
    if (vsr_known(r, op) && vsr_entry(r, op)->canonical)
        return sl_u128_eq(vsr_entry(r, op)->identity, identity);
    if (op == r->anchor_op && sl_u128_eq(identity, r->anchor_identity))
        return true;
    return vsr_known(r, op + 1) && vsr_entry(r, op + 1)->canonical &&
           sl_u128_eq(vsr_entry(r, op + 1)->parent, identity);
}

void vsr_on_repair_prepare(sl_vsr_replica_t *r, const sl_vsr_frame_t *f, const uint8_t *raw)
{
    /* A RepairPrepare's view is the view it is vouched for (the request's),
     * or 0 when the sender could not vouch for it (see vsr_on_request_prepares).
     * Its `replica` byte is the primary that built the prepare, not the
     * sender. */
    uint64_t op = f->u.prepare.op;
    if (r->status != SL_VSR_STATUS_NORMAL || !vsr_in_window(r, op))
        return;
    bool vouched = f->h.view == r->view;
    if (!vouched && !(f->h.view == 0 && r->view > 0 && verifiable(r, op, f->h.checksum)))
        return;
    /* A backup's machine judges a repaired body as it judges a prepare:
     * otherwise a refused prepare would come back by repair and be
     * acknowledged. */
    if (op > r->commit_min && !vsr_is_primary(r) && !vsr_accept(r, f))
        return;
    r->repair_tick = r->ticks;
    r->repair_accepted++;
    uint8_t header[SL_HEADER_SIZE];
    memcpy(header, raw, SL_HEADER_SIZE);
    header[60] = SL_VSR_PREPARE; /* journaled and logged as the Prepare it is */
    if (op <= r->commit_min) {
        /* Only the head of a log that ends at a checkpoint is wanted here. */
        if (op == r->op && !vsr_known(r, op) &&
            (op != r->checkpoint_op || sl_u128_eq(r->checkpoint_identity, f->h.checksum))) {
            vsr_log_set(r, header, true);
        }
        return;
    }
    vsr_entry_t *e = vsr_entry(r, op);
    if (vsr_known(r, op) && e->canonical) {
        /* A peer vouching for a committed op this replica's view holds
         * differently: this replica's view is stale (its op was cut in a
         * later view). The later view's StartView will sort it out. */
        if (!sl_u128_eq(e->identity, f->h.checksum))
            return;
    } else {
        vsr_log_set(r, header, true);
        if (op > r->op)
            r->op = op;
        vsr_chain_down(r, op, false);
    }
    vsr_journal_write(r, header, f->body);
}

void vsr_on_repair_end(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    const sl_vsr_repair_end_t *d = &f->u.repair_end;
    if (!r->repair_busy || f->h.replica != r->repair_peer || !sl_u128_eq(d->nonce, r->repair_nonce))
        return;
    r->repair_busy = false;
    if (f->h.command == SL_VSR_RANGE_EVICTED) {
        /* The peer no longer has the front of the range: what this replica
         * lacks below it comes from a checkpoint. */
        if (d->op > r->commit_min + 1 && r->repair_from > r->commit_min) {
            r->syncing = true;
            vsr_trace(r, "range evicted at %u (oldest %llu): state transfer", f->h.replica,
                      (unsigned long long)d->op);
        }
        r->repair_rotation++;
    } else if (r->repair_accepted == 0) {
        r->repair_rotation++; /* nothing usable: ask someone else next */
    }
}

/* --- journal repair: the responder
 * --------------------------------------------------------------------- */

static bool servable(sl_vsr_replica_t *r, uint64_t op, uint32_t view)
{
    if (!vsr_present(r, op))
        return false;
    if (op <= r->commit_min)
        return true;
    return r->status == SL_VSR_STATUS_NORMAL && r->view == view && vsr_entry(r, op)->canonical;
}

static void send_repair_end(sl_vsr_replica_t *r, uint8_t to, uint8_t command, sl_u128_t nonce,
                            uint64_t op)
{
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, command);
    f.u.repair_end = (sl_vsr_repair_end_t){.nonce = nonce, .op = op, .group = r->cfg.group};
    vsr_send(r, to, &f, sl_span(NULL, 0));
}

void vsr_on_request_prepares(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    if (r->wiped)
        return;
    const sl_vsr_request_prepares_t *q = &f->u.request_prepares;
    uint8_t to = f->h.replica;
    if (q->from_op <= r->checkpoint_op && !servable(r, q->from_op, f->h.view)) {
        send_repair_end(r, to, SL_VSR_RANGE_EVICTED, q->nonce, r->checkpoint_op + 1);
        return;
    }
    uint64_t last = q->from_op - 1;
    uint64_t end = q->to_op;
    if (end - q->from_op >= r->cfg.repair_chunk_max)
        end = q->from_op + r->cfg.repair_chunk_max - 1;
    for (uint64_t op = q->from_op; op <= end; op++) {
        /* What this replica cannot vouch for still goes out, marked with
         * view 0 (a view no log is ever cut in): the requester takes it only
         * where the hash chain names it. An op it does not hold is skipped,
         * not the end: the requester's gap may start where nobody has
         * anything and go on where this replica can help. */
        bool vouched = servable(r, op, f->h.view);
        bool held = vsr_present(r, op) && f->h.view > 0;
        sl_vsr_frame_t p;
        const uint8_t *header;
        if (vouched || held) {
            if (!vsr_journal_read(r, op, &p))
                continue;
            header = vsr_entry(r, op)->header;
        } else if (f->h.view == 0 || vsr_known(r, op) ||
                   !vsr_journal_read_slot(r, op, &p, &header)) {
            /* A slot whose op the log knows is served as the log says, or
             * not at all; one it does not know (the log was reset above a
             * checkpoint installed by state transfer) may hold the only
             * copy left of a committed op: it goes out unvouched. */
            continue;
        }
        /* The journaled prepare with only the command byte changed (and the
         * view, which its identity does not cover). */
        sl_buf_reset(&r->out);
        sl_put_bytes(&r->out, header, SL_HEADER_SIZE);
        sl_put_span(&r->out, p.body);
        if (!sl_buf_ok(&r->out))
            break;
        r->out.data[60] = SL_VSR_REPAIR_PREPARE;
        sl_store_u32(r->out.data + 52, vouched ? f->h.view : 0);
        vsr_send_bytes(r, to, r->out.data, r->out.len);
        last = op;
    }
    send_repair_end(r, to, SL_VSR_REPAIR_DONE, q->nonce, last);
}

/* --- state transfer: the responder
 * ----------------------------------------------------------------------- */

/* This replica's checkpoint artifacts, read back and verified. */
static bool artifacts_ok(sl_vsr_replica_t *r)
{
    if (r->checkpoint_op == 0)
        return false;
    for (uint8_t k = 0; k < 2; k++) {
        sl_span_t a = r->storage.read_artifact(r->storage.ctx, r->checkpoint_op, k);
        if (a.len != r->checkpoint[k].len || sl_xxh3_64(a.ptr, a.len) != r->checkpoint[k].checksum)
            return false;
    }
    return true;
}

void vsr_on_request_state(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    /* A replica that lost its disk knows no view: it must not answer a
     * discovery (replica_view.c counts these answers). */
    if (r->wiped)
        return;
    /* A checkpoint is committed state: it may be served in any status. One
     * damaged at rest is written again from the state in memory (at the
     * current commit: the state has moved past the old checkpoint). */
    bool available = artifacts_ok(r) && !sl_u128_is_zero(r->checkpoint_identity);
    if (!available && r->checkpoint_op > 0 && r->commit_min >= r->checkpoint_op) {
        vsr_trace(r, "checkpoint %llu damaged: writing one at %llu",
                  (unsigned long long)r->checkpoint_op, (unsigned long long)r->commit_min);
        available =
            vsr_checkpoint(r) && artifacts_ok(r) && !sl_u128_is_zero(r->checkpoint_identity);
    }
    /* A host with its own artifacts lists them for this checkpoint (a
     * partition: its segments, sealed at their length now, and its offsets). */
    const sl_vsr_artifact_t *list = r->checkpoint;
    uint32_t count = 2;
    if (available && vsr_host_artifacts(r) &&
        r->storage.offer(r->storage.ctx, r->checkpoint_op, &list, &count) != 0) {
        vsr_trace(r, "state transfer: no offer at checkpoint %llu",
                  (unsigned long long)r->checkpoint_op);
        available = false;
    }
    sl_vsr_frame_t t;
    vsr_frame_init(r, &t, SL_VSR_STATE_TRANSFER_TARGET);
    /* The view a lost disk learns from this answer: the highest this
     * replica ever reached (its view may have gone back after a restart,
     * replica_view.c; the floor must not). */
    t.h.view = r->view_max > r->view ? r->view_max : r->view;
    t.u.state_target = (sl_vsr_state_target_t){.nonce = f->u.request_state.nonce,
                                               .commit_op = available ? r->checkpoint_op : 0,
                                               .group = r->cfg.group,
                                               .available = available ? 1 : 0,
                                               .unavailable_transient = available ? 0 : 1,
                                               .commit_max = r->commit_max};
    if (available)
        t.u.state_target.commit_checksum = r->checkpoint_identity;
    sl_buf_reset(&r->body);
    if (available)
        sl_vsr_manifest_encode(&r->body, list, count);
    vsr_send(r, f->h.replica, &t, sl_buf_span(&r->body));
}

void vsr_on_request_chunk(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    const sl_vsr_request_chunk_t *q = &f->u.request_chunk;
    if (vsr_host_artifacts(r)) {
        /* The host serves any offer it still keeps (named by the nonce's
         * high half): a long transfer survives this replica's next
         * checkpoints, what was offered being sealed at its length. */
        if (r->wiped || q->nonce.hi == 0 || q->len == 0)
            return;
        uint32_t len = q->len < r->cfg.state_chunk_max ? q->len : r->cfg.state_chunk_max;
        sl_span_t a = r->storage.serve(r->storage.ctx, q->nonce.hi, q->artifact, q->offset, len);
        if (a.len == 0)
            return;
        if (a.len > len)
            a.len = len;
        sl_vsr_frame_t c;
        vsr_frame_init(r, &c, SL_VSR_STATE_CHUNK);
        c.u.state_chunk = (sl_vsr_state_chunk_t){
            .nonce = q->nonce, .offset = q->offset, .group = r->cfg.group, .artifact = q->artifact};
        vsr_send(r, f->h.replica, &c, a);
        return;
    }
    /* The nonce's high half names the checkpoint being pulled; a newer one
     * here means the requester must start over (it times out). */
    if (r->wiped || q->artifact >= 2 || q->nonce.hi != r->checkpoint_op || r->checkpoint_op == 0)
        return;
    sl_span_t a = r->storage.read_artifact(r->storage.ctx, r->checkpoint_op, (uint8_t)q->artifact);
    if (a.len != r->checkpoint[q->artifact].len || q->offset > a.len)
        return;
    uint64_t n = a.len - q->offset;
    if (n > q->len)
        n = q->len;
    if (n > r->cfg.state_chunk_max)
        n = r->cfg.state_chunk_max;
    sl_vsr_frame_t c;
    vsr_frame_init(r, &c, SL_VSR_STATE_CHUNK);
    c.u.state_chunk = (sl_vsr_state_chunk_t){
        .nonce = q->nonce, .offset = q->offset, .group = r->cfg.group, .artifact = q->artifact};
    vsr_send(r, f->h.replica, &c, sl_span(a.ptr + q->offset, n));
}

/* --- state transfer: the requester
 * ------------------------------------------------------------------------ */

static void sync_reset(sl_vsr_replica_t *r)
{
    r->sync.active = false;
    r->sync.have_target = false;
    r->sync.installing = false;
    r->sync.staged = 0;
    for (int i = 0; i < 2; i++)
        sl_buf_reset(&r->sync.data[i]);
}

/* The artifacts of the transfer under way: the host's list, or the pair. */
static uint32_t sync_count(const sl_vsr_replica_t *r)
{
    return vsr_host_artifacts(r) ? r->sync.count : 2;
}
static const sl_vsr_artifact_t *sync_entry(const sl_vsr_replica_t *r, uint32_t i)
{
    return vsr_host_artifacts(r) ? &r->sync.list[i] : &r->sync.artifacts[i];
}
static uint64_t sync_have(const sl_vsr_replica_t *r)
{
    return vsr_host_artifacts(r) ? r->sync.staged : r->sync.data[r->sync.artifact].len;
}

static sl_u128_t chunk_nonce(const sl_vsr_replica_t *r)
{
    return (sl_u128_t){r->sync.nonce.lo, r->sync.commit_op};
}

static void request_chunk(sl_vsr_replica_t *r)
{
    uint32_t i = r->sync.artifact;
    uint64_t have = sync_have(r);
    uint64_t want = sync_entry(r, i)->len - have;
    if (want > r->cfg.state_chunk_max)
        want = r->cfg.state_chunk_max;
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_REQUEST_STATE_CHUNK);
    f.u.request_chunk = (sl_vsr_request_chunk_t){.nonce = chunk_nonce(r),
                                                 .offset = have,
                                                 .group = r->cfg.group,
                                                 .len = (uint32_t)want,
                                                 .artifact = i};
    r->sync.tick = r->ticks;
    vsr_send(r, r->sync.peer, &f, sl_span(NULL, 0));
}

/* The host installs its artifacts and hands back the machine's snapshot;
 * the checkpoint this replica then records is its own pair (that snapshot
 * and an empty client table), as a checkpoint of its own would be. 0 when
 * installed; SL_VSR_INSTALL_PENDING while the host verifies (the transfer
 * kept, vsr_tick_sync asks again); -1 when the transfer starts over. */
static int host_install(sl_vsr_replica_t *r)
{
    sl_buf_reset(&r->sync.data[0]);
    sl_buf_reset(&r->sync.data[1]);
    int rc = r->storage.install(r->storage.ctx, r->sync.commit_op, r->sync.list, r->sync.count,
                                &r->sync.data[0]);
    if (rc == SL_VSR_INSTALL_PENDING) {
        if (!r->sync.installing)
            vsr_trace(r, "state transfer: checkpoint %llu staged, the host verifies it",
                      (unsigned long long)r->sync.commit_op);
        r->sync.installing = true;
        r->sync.tick = r->ticks;
        return SL_VSR_INSTALL_PENDING;
    }
    r->sync.installing = false;
    if (rc != 0 || !sl_buf_ok(&r->sync.data[0])) {
        vsr_trace(r, "state transfer: the host did not install checkpoint %llu",
                  (unsigned long long)r->sync.commit_op);
        sync_reset(r);
        r->sync.rotation++;
        return -1;
    }
    sl_vsr_clients_reset(&r->clients);
    sl_vsr_clients_encode(&r->clients, &r->sync.data[1]);
    for (int k = 0; k < 2; k++) {
        sl_span_t a = sl_buf_span(&r->sync.data[k]);
        r->sync.artifacts[k] = (sl_vsr_artifact_t){(uint8_t)k, r->sync.commit_op, a.len,
                                                   sl_xxh3_64(a.ptr, a.len)};
    }
    return sl_buf_ok(&r->sync.data[1]) ? 0 : -1;
}

/* Installs the transferred checkpoint as this replica's own. */
static void sync_install(sl_vsr_replica_t *r)
{
    if (vsr_host_artifacts(r) && host_install(r) != 0)
        return;
    sl_span_t snap = sl_buf_span(&r->sync.data[0]);
    sl_span_t table = sl_buf_span(&r->sync.data[1]);
    if (r->machine.restore(r->machine.ctx, snap) != 0 ||
        sl_vsr_clients_decode(&r->clients, table) != 0 ||
        r->storage.write_artifacts(r->storage.ctx, r->sync.commit_op, snap, table) != 0) {
        r->machine.reset(r->machine.ctx);
        sl_vsr_clients_reset(&r->clients);
        sync_reset(r);
        r->sync.rotation++;
        return;
    }
    uint64_t op = r->sync.commit_op;
    uint64_t before = r->checkpoint_op;
    r->checkpoint_op = op;
    /* The next prepare after a log that ends here chains to it: a zero
     * (unsealed) link would leave the ops below unverifiable for a replica
     * that has not applied them. */
    r->checkpoint_identity = r->sync.identity;
    r->checkpoint[0] = r->sync.artifacts[0];
    r->checkpoint[1] = r->sync.artifacts[1];
    r->commit_min = op;
    if (r->commit_max < op)
        r->commit_max = op;
    /* What this replica journaled at or below the checkpoint was never
     * applied here: it may be another view's, so it is not served. An entry
     * outside the window it sat in until now, or outside the new one, is
     * dropped too: outside its window no view change truncated or re-checked
     * it (a checkpoint installed below a lost one moves the window back), so
     * a later window move would bring back a stale op still marked
     * canonical (the simulator applied one where another had committed). */
    uint32_t slots = r->cfg.journal_slots;
    for (uint32_t p = 0; p < slots; p++) {
        uint64_t x = r->log[p].op;
        bool keep = x > op && x < op + slots && x >= before && x < before + slots;
        if (x != 0 && !keep)
            memset(&r->log[p], 0, sizeof(r->log[p]));
    }
    if (r->op < op)
        r->op = op;
    /* Prepare timestamps stay increasing past the checkpoint's replies. */
    for (uint32_t i = 0; i < r->clients.count; i++) {
        if (r->clients.entries[i].reply_timestamp > r->timestamp_last)
            r->timestamp_last = r->clients.entries[i].reply_timestamp;
    }
    r->syncing = false;
    sync_reset(r);
    vsr_persist(r);
    vsr_trace(r, "state transfer installed checkpoint %llu", (unsigned long long)op);
}

void vsr_tick_sync(sl_vsr_replica_t *r)
{
    if (!r->syncing || r->status == SL_VSR_STATUS_RECOVERING || r->cfg.replica_count == 1)
        return;
    if (r->sync.active && r->sync.installing) {
        /* Everything is staged: only the host's verification is awaited. */
        sync_install(r);
        return;
    }
    if (r->sync.active && r->ticks - r->sync.tick < 4u * r->cfg.resend_ticks)
        return;
    if (r->sync.active)
        r->sync.rotation++; /* no answer, or nothing useful: another peer */
    sync_reset(r);
    r->sync.active = true;
    r->sync.peer = next_peer(r, r->sync.rotation);
    r->sync.nonce = vsr_nonce(r);
    r->sync.tick = r->ticks;
    vsr_trace(r, "state transfer: asking %u", r->sync.peer);
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_REQUEST_STATE_TRANSFER);
    f.u.request_state = (sl_vsr_request_state_t){.nonce = r->sync.nonce, .group = r->cfg.group};
    vsr_send(r, r->sync.peer, &f, sl_span(NULL, 0));
}

/* The two artifacts of a metadata-style checkpoint, from a manifest; or
 * the host's list (checked by its stage hook as they arrive). */
static bool take_manifest(sl_vsr_replica_t *r, sl_span_t body)
{
    if (vsr_host_artifacts(r)) {
        uint32_t n;
        if (sl_vsr_manifest_decode(body, NULL, 0, &n) != 0 || n == 0)
            return false;
        if (n > r->sync.list_cap) {
            sl_vsr_artifact_t *l = realloc(r->sync.list, (size_t)n * sizeof(*l));
            if (l == NULL)
                return false;
            r->sync.list = l;
            r->sync.list_cap = n;
        }
        if (sl_vsr_manifest_decode(body, r->sync.list, r->sync.list_cap, &n) != 0)
            return false;
        r->sync.count = n;
        return true;
    }
    sl_vsr_artifact_t a[4];
    uint32_t count;
    if (sl_vsr_manifest_decode(body, a, 4, &count) != 0 || count != 2)
        return false;
    for (uint32_t i = 0; i < 2; i++) {
        if (a[i].kind != i || a[i].len > r->cfg.state_max)
            return false;
        r->sync.artifacts[i] = a[i];
    }
    return true;
}

/* Skips the empty artifacts from the current one on: the next chunk to ask
 * for, or the install once none is left. */
static void sync_next(sl_vsr_replica_t *r)
{
    uint32_t n = sync_count(r);
    while (r->sync.artifact < n && sync_entry(r, r->sync.artifact)->len == 0)
        r->sync.artifact++;
    if (r->sync.artifact == n)
        sync_install(r);
    else
        request_chunk(r);
}

void vsr_on_state_target(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    const sl_vsr_state_target_t *t = &f->u.state_target;
    if (r->wiped) {
        /* Discovery: each answer tells a view this peer has reached. */
        if (sl_u128_eq(t->nonce, r->incarnation)) {
            r->discovery_votes |= 1u << f->h.replica;
            if (f->h.view > r->view_floor)
                r->view_floor = f->h.view;
        }
        return;
    }
    if (!r->sync.active || r->sync.have_target || f->h.replica != r->sync.peer ||
        !sl_u128_eq(t->nonce, r->sync.nonce))
        return;
    vsr_trace(r, "state transfer: %u offers %llu (available %u)", f->h.replica,
              (unsigned long long)t->commit_op, t->available);
    if (!t->available || t->commit_op <= r->commit_min || sl_u128_is_zero(t->commit_checksum) ||
        !take_manifest(r, f->body)) {
        /* Nothing useful here: try another peer at the next timeout. */
        r->sync.tick = r->ticks - 3u * r->cfg.resend_ticks;
        return;
    }
    r->sync.have_target = true;
    r->sync.commit_op = t->commit_op;
    r->sync.identity = t->commit_checksum;
    r->sync.artifact = 0;
    r->sync.staged = 0;
    /* The host drops whatever an earlier attempt staged. */
    if (vsr_host_artifacts(r) &&
        r->storage.stage(r->storage.ctx, t->commit_op, 0, NULL, 0, sl_span(NULL, 0)) != 0) {
        sync_reset(r);
        r->sync.rotation++;
        return;
    }
    sync_next(r);
}

void vsr_on_state_chunk(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    const sl_vsr_state_chunk_t *c = &f->u.state_chunk;
    if (!r->sync.active || !r->sync.have_target || f->h.replica != r->sync.peer ||
        !sl_u128_eq(c->nonce, chunk_nonce(r)) || c->artifact != r->sync.artifact)
        return;
    if (vsr_host_artifacts(r)) {
        const sl_vsr_artifact_t *a = &r->sync.list[c->artifact];
        if (c->offset != r->sync.staged || f->body.len == 0 ||
            f->body.len > a->len - r->sync.staged)
            return;
        /* The host verifies the artifact whole with its last chunk. */
        if (r->storage.stage(r->storage.ctx, r->sync.commit_op, c->artifact, a, c->offset,
                             f->body) != 0) {
            vsr_trace(r, "state transfer: artifact %u of checkpoint %llu refused", c->artifact,
                      (unsigned long long)r->sync.commit_op);
            sync_reset(r);
            r->sync.rotation++;
            return;
        }
        r->sync.staged += f->body.len;
        if (r->sync.staged < a->len) {
            request_chunk(r);
            return;
        }
        r->sync.staged = 0;
        r->sync.artifact++;
        sync_next(r);
        return;
    }
    sl_buf_t *data = &r->sync.data[c->artifact];
    const sl_vsr_artifact_t *a = &r->sync.artifacts[c->artifact];
    if (c->offset != data->len || f->body.len == 0 || f->body.len > a->len - data->len)
        return;
    sl_put_span(data, f->body);
    if (!sl_buf_ok(data)) {
        sync_reset(r);
        return;
    }
    if (data->len < a->len) {
        request_chunk(r);
        return;
    }
    /* Each artifact is verified whole (cluster.md 9). */
    if (sl_xxh3_64(data->data, data->len) != a->checksum) {
        sync_reset(r);
        r->sync.rotation++;
        return;
    }
    r->sync.artifact++;
    sync_next(r);
}

/* --- rejoining after a lost disk
 * ---------------------------------------------------------------------------- */

void vsr_discovery_send(sl_vsr_replica_t *r)
{
    if (r->cfg.replica_count == 1)
        return;
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_REQUEST_STATE_TRANSFER);
    f.u.request_state = (sl_vsr_request_state_t){.nonce = r->incarnation, .group = r->cfg.group};
    vsr_broadcast(r, &f, sl_span(NULL, 0));
}
