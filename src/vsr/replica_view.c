/* View change (cluster.md 7): StartViewChange votes, DoViewChange with the
 * log suffix and its nack and present bitsets, the new primary's choice of
 * the log, StartView, and RequestStartView for a replica that restarted.
 *
 * The rule that keeps committed operations: the new primary takes the log of
 * the highest log_view among a quorum of DoViewChanges (the longest of
 * those), and may cut an uncommitted op off that log only when a quorum of
 * replicas proves it never prepared it (a nack). An op whose body no
 * DoViewChange can serve and that lacks a nack quorum stays undecided: the
 * primary waits for more DoViewChanges rather than guess. */
#include "vsr/replica_internal.h"

#include <stdio.h>
#include <string.h>

/* --- votes -------------------------------------------------------------------------------------
 */

static void send_start_view_change(sl_vsr_replica_t *r)
{
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_START_VIEW_CHANGE);
    f.u.start_view_change.group = r->cfg.group;
    vsr_broadcast(r, &f, sl_span(NULL, 0));
}

/* Whether this replica may nack op in a DoViewChange, relative to the header
 * it reports there (identity, or NULL for a blank): it provably never
 * acknowledged that prepare. A replica that acknowledged a prepare in the
 * view that committed it keeps it in its log and its slot from then on, so:
 * never at or below the commit point or the lost-disk floor, never while the
 * slot is faulty or being written, never while the slot holds the reported
 * prepare. For a blank, the slot may hold a prepare of op that is not in the
 * log: one journaled in an older view than log_view cannot be log_view's,
 * when op is above the headers log_view started with (log_view's primary
 * built that op in log_view, and acknowledging it would have journaled it
 * under log_view, after anything older). */
static bool nackable(sl_vsr_replica_t *r, uint64_t op, const sl_u128_t *identity)
{
    if (op <= r->commit_max || op <= r->nack_floor)
        return false;
    const vsr_slot_t *s = vsr_slot(r, op);
    if (s->state == SLOT_FAULTY || (s->writing && s->writing_op == op))
        return false;
    if (s->state != SLOT_VALID || s->op != op)
        return true;
    if (identity == NULL)
        return s->view < r->log_view && op > r->view_headers_op;
    return !sl_u128_eq(s->identity, *identity);
}

static inline void set_bit(sl_u128_t *b, uint32_t i)
{
    if (i < 64)
        b->lo |= UINT64_C(1) << i;
    else
        b->hi |= UINT64_C(1) << (i - 64);
}

static inline bool get_bit(sl_u128_t b, uint32_t i)
{
    return i < 64 ? (b.lo >> i) & 1 : (b.hi >> (i - 64)) & 1;
}

/* log_view's header for op from the view headers, or NULL. */
static const uint8_t *view_header(const sl_vsr_replica_t *r, uint64_t op)
{
    if (op > r->view_headers_op || r->view_headers_op - op >= r->view_headers_count)
        return NULL;
    const uint8_t *h = r->view_headers + (size_t)(r->view_headers_op - op) * SL_HEADER_SIZE;
    return h[60] == SL_VSR_PREPARE ? h : NULL;
}

/* The suffix this replica reports: op down to op - pipeline_max, canonical
 * headers only (blank where it has none). Written into r->body. */
static uint32_t build_suffix(sl_vsr_replica_t *r, sl_u128_t *nack, sl_u128_t *present)
{
    uint64_t count = r->op < (uint64_t)r->cfg.pipeline_max + 1 ? r->op : r->cfg.pipeline_max + 1;
    sl_buf_reset(&r->body);
    *nack = *present = (sl_u128_t){0, 0};
    for (uint32_t i = 0; i < count; i++) {
        uint64_t op = r->op - i;
        uint8_t *h = sl_buf_extend(&r->body, SL_HEADER_SIZE);
        if (h == NULL)
            return 0;
        vsr_entry_t *e = vsr_entry(r, op);
        const uint8_t *vh = view_header(r, op);
        if (vsr_known(r, op) && e->canonical) {
            memcpy(h, e->header, SL_HEADER_SIZE);
            if (vsr_present(r, op))
                set_bit(present, i);
        } else if (vh != NULL && !(vsr_known(r, op) && !e->canonical &&
                                   !sl_u128_eq(e->identity, sl_load_u128(vh)))) {
            memcpy(h, vh, SL_HEADER_SIZE); /* log_view's header, held past the window */
        } else {
            /* decide_op's fresh rule relies on this: the headers log_view
             * started with are reported above the commit point. */
            sl_assert(op <= r->commit_max || op > r->view_headers_op ||
                      r->view_headers_op - op >= r->view_headers_count);
            sl_vsr_suffix_blank(h, op);
        }
        sl_u128_t reported = sl_load_u128(h);
        if (!get_bit(*present, i) && nackable(r, op, h[60] != 0 ? &reported : NULL))
            set_bit(nack, i);
    }
    return (uint32_t)count;
}

static void store_dvc(sl_vsr_replica_t *r, uint8_t from, const sl_vsr_do_view_change_t *d,
                      sl_span_t body)
{
    vsr_dvc_t *s = &r->dvcs[from];
    s->have = true;
    s->op = d->op;
    s->commit = d->commit;
    s->log_view = d->log_view;
    s->nack = d->nack_bitset;
    s->present = d->present_bitset;
    s->count = (uint32_t)(body.len / SL_HEADER_SIZE);
    if (body.len > 0)
        memcpy(s->headers, body.ptr, body.len);
}

static void try_decide(sl_vsr_replica_t *r);

static void send_do_view_change(sl_vsr_replica_t *r)
{
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_DO_VIEW_CHANGE);
    sl_vsr_do_view_change_t *d = &f.u.do_view_change;
    build_suffix(r, &d->nack_bitset, &d->present_bitset);
    d->op = r->op;
    d->commit = r->commit_max < r->op ? r->commit_max : r->op;
    d->group = r->cfg.group;
    d->log_view = r->log_view;
    sl_span_t body = sl_buf_span(&r->body);
    if (r->dvc_view < r->view) {
        /* From here on this replica's log as of log_view is counted in
         * view's choice: it must not act in an older view again, even after
         * a crash. */
        r->dvc_view = r->view;
        if (!vsr_persist(r)) {
            r->dvc_view = 0;
            return;
        }
    }
    if (vsr_primary_of(r, r->view) == r->cfg.replica) {
        store_dvc(r, r->cfg.replica, d, body);
        try_decide(r);
    } else {
        vsr_broadcast(r, &f, body);
    }
}

static void maybe_send_do_view_change(sl_vsr_replica_t *r)
{
    if (r->status != SL_VSR_STATUS_VIEW_CHANGE || r->dvc_sent ||
        (uint32_t)__builtin_popcount(r->svc_votes) < r->quorum)
        return;
    r->dvc_sent = true;
    send_do_view_change(r);
}

void vsr_start_view_change(sl_vsr_replica_t *r, uint32_t view)
{
    sl_assert(view > r->view || r->status == SL_VSR_STATUS_VIEW_CHANGE);
    r->view = view;
    r->status = SL_VSR_STATUS_VIEW_CHANGE;
    r->svc_votes = 1u << r->cfg.replica;
    r->dvc_sent = false;
    for (uint32_t i = 0; i < SL_VSR_REPLICAS_MAX; i++)
        r->dvcs[i].have = false;
    r->view_change_tick = r->ticks;
    r->resend_tick = r->ticks;
    r->repair_busy = false;
    /* The promise not to act in an older view must survive a crash before
     * any vote leaves. */
    if (!vsr_persist(r))
        return;
    vsr_trace(r, "start view change");
    send_start_view_change(r);
    maybe_send_do_view_change(r);
}

void sl_vsr_replica_take_over(sl_vsr_replica_t *r)
{
    if (r->status == SL_VSR_STATUS_RECOVERING || r->wiped || r->syncing)
        return;
    /* The primary of its view already, or a view change towards it under
     * way: a higher view would only delay it. */
    if (vsr_primary_of(r, r->view) == r->cfg.replica)
        return;
    uint32_t n = r->cfg.replica_count;
    uint32_t view = r->view + 1;
    view += (r->cfg.replica + n - view % n) % n;
    vsr_trace(r, "take over: view change to %u", view);
    vsr_start_view_change(r, view);
}

/* A vote for view from a replica: join a higher view, count it in ours,
 * or help a replica that missed our StartView. */
static bool count_vote(sl_vsr_replica_t *r, uint32_t view, uint8_t from)
{
    if (r->status == SL_VSR_STATUS_RECOVERING || view < r->view)
        return false;
    if (view > r->view)
        vsr_start_view_change(r, view);
    if (r->status == SL_VSR_STATUS_NORMAL) {
        if (vsr_is_primary(r))
            vsr_send_start_view(r, from, (sl_u128_t){0, 0});
        return false;
    }
    r->svc_votes |= 1u << from;
    maybe_send_do_view_change(r);
    return true;
}

void vsr_on_start_view_change(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    count_vote(r, f->h.view, f->h.replica);
}

void vsr_on_do_view_change(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    if (!count_vote(r, f->h.view, f->h.replica))
        return;
    if (vsr_primary_of(r, r->view) != r->cfg.replica)
        return;
    store_dvc(r, f->h.replica, &f->u.do_view_change, f->body);
    try_decide(r);
}

/* --- the new primary's choice of the log
 * ------------------------------------------------------------ */

/* One DoViewChange's view of op. */
typedef struct dvc_entry {
    bool inside; /* op is within the sender's suffix */
    bool blank;
    bool present;
    bool nack;
    sl_u128_t identity;
    const uint8_t *header;
} dvc_entry_t;

static dvc_entry_t dvc_at(const vsr_dvc_t *d, uint64_t op)
{
    dvc_entry_t e = {0};
    if (op > d->op || d->op - op >= d->count)
        return e;
    uint32_t i = (uint32_t)(d->op - op);
    e.inside = true;
    e.header = d->headers + (size_t)i * SL_HEADER_SIZE;
    e.blank = e.header[60] == 0;
    e.identity = sl_load_u128(e.header);
    e.present = get_bit(d->present, i);
    e.nack = get_bit(d->nack, i);
    return e;
}

/* The log chosen from the DoViewChanges: the window of headers
 * [lo, op] (hdr NULL where only the identity or nothing is known). */
typedef struct choice {
    uint64_t op;
    uint64_t commit;
    uint64_t lo;
    uint32_t log_view;
    const uint8_t *hdr[SL_VSR_SUFFIX_MAX];
    /* No DoViewChange of log_view has a header for the op: it is above the
     * op log_view started at, so log_view's primary built it in log_view. */
    bool fresh[SL_VSR_SUFFIX_MAX];
    sl_u128_t cid[SL_VSR_SUFFIX_MAX];
    bool cid_known[SL_VSR_SUFFIX_MAX];
} choice_t;

/* The canonical DoViewChanges (highest log_view) and the headers they give. */
static void choose_canonical(sl_vsr_replica_t *r, choice_t *c, uint32_t *log_view)
{
    uint32_t lv = 0;
    uint64_t op = 0, commit = 0;
    for (uint32_t i = 0; i < r->cfg.replica_count; i++) {
        if (r->dvcs[i].have && r->dvcs[i].log_view > lv)
            lv = r->dvcs[i].log_view;
    }
    for (uint32_t i = 0; i < r->cfg.replica_count; i++) {
        const vsr_dvc_t *d = &r->dvcs[i];
        if (!d->have)
            continue;
        commit = d->commit > commit ? d->commit : commit;
        /* A log of any view reached d->op only once its primary had
         * committed d->op - pipeline_max: that much is committed, and an
         * older log that long names ops a short suffix cannot show. */
        if (d->op > r->cfg.pipeline_max && commit < d->op - r->cfg.pipeline_max)
            commit = d->op - r->cfg.pipeline_max;
        if (r->cfg.bugs & SL_VSR_BUG_CANONICAL_BY_OP) {
            if (d->op > op) {
                op = d->op;
                lv = d->log_view;
            }
        } else if (d->log_view == lv && d->op > op) {
            op = d->op;
        }
    }
    /* Every primary keeps op - commit <= pipeline_max (above, for each log):
     * a committed op is in the canonical log. */
    sl_assert(commit <= op || (r->cfg.bugs & SL_VSR_BUG_CANONICAL_BY_OP));
    if (commit > op)
        commit = op;
    c->op = op;
    c->commit = commit;
    c->lo = op > r->cfg.pipeline_max ? op - r->cfg.pipeline_max : 1;
    c->log_view = lv;
    *log_view = lv;
}

static void canonical_headers(sl_vsr_replica_t *r, choice_t *c, uint32_t lv)
{
    for (uint64_t op = c->lo; op <= c->op && c->op > 0; op++) {
        uint32_t k = (uint32_t)(op - c->lo);
        c->hdr[k] = NULL;
        c->cid_known[k] = false;
        c->fresh[k] = true;
        for (uint32_t i = 0; i < r->cfg.replica_count; i++) {
            const vsr_dvc_t *d = &r->dvcs[i];
            if (!d->have || d->log_view != lv)
                continue;
            dvc_entry_t e = dvc_at(d, op);
            if (!e.inside || e.blank)
                continue;
            c->fresh[k] = false;
            if (c->hdr[k] == NULL)
                c->hdr[k] = e.header;
            else if (!(r->cfg.bugs & SL_VSR_BUG_CANONICAL_BY_OP))
                sl_assert(sl_u128_eq(sl_load_u128(c->hdr[k]), e.identity));
        }
    }
    /* Walk the hash chain down: a known header names the identity of the op
     * below it, and any DoViewChange holding a header of that identity
     * fills a gap the canonical ones left (a backup that missed prepares). */
    for (uint64_t op = c->op; op >= c->lo && op > 0; op--) {
        uint32_t k = (uint32_t)(op - c->lo);
        /* Any DoViewChange whose sender knows op committed (its commit is
         * at or above op) and holds a header for it holds the committed op:
         * a replica's canonical log agrees with every commit it knows of. */
        for (uint32_t i = 0; i < r->cfg.replica_count && c->hdr[k] == NULL; i++) {
            const vsr_dvc_t *d = &r->dvcs[i];
            dvc_entry_t e = d->have ? dvc_at(d, op) : (dvc_entry_t){0};
            if (!e.inside || e.blank)
                continue;
            if (c->cid_known[k] ? sl_u128_eq(e.identity, c->cid[k]) : d->commit >= op)
                c->hdr[k] = e.header;
        }
        if (c->hdr[k] == NULL)
            continue;
        sl_assert(!c->cid_known[k] || sl_u128_eq(c->cid[k], sl_load_u128(c->hdr[k])) ||
                  (r->cfg.bugs & SL_VSR_BUG_CANONICAL_BY_OP));
        c->cid[k] = sl_load_u128(c->hdr[k]);
        c->cid_known[k] = true;
        sl_u128_t parent = sl_load_u128(c->hdr[k] + 144);
        if (op > c->lo && !sl_u128_is_zero(parent)) {
            c->cid[k - 1] = parent;
            c->cid_known[k - 1] = true;
        }
    }
}

typedef enum { DECIDE_KEEP, DECIDE_CUT, DECIDE_WAIT } decide_t;

/* One uncommitted op of the canonical log: kept when some DoViewChange can
 * serve its body, cut when a quorum proves it never prepared it, else
 * undecided.
 *
 * A DoViewChange of an older log view proves it never acknowledged op's
 * canonical prepare in a view that could commit it when it names another
 * prepare there (had that prepare committed by its log view, its log would
 * hold it), and when op is fresh: every DoViewChange of log_view reports
 * the headers log_view started with above its commit point (they are in its
 * state record), so an op none of them has a header for was built in
 * log_view, which the older log view's sender never took part in. Without
 * the second rule an op whose identity nobody knows (its only copies on
 * replicas that lost them) would wait forever on a replica of an older view
 * that holds a different prepare there. */
static decide_t decide_op(sl_vsr_replica_t *r, choice_t *c, uint64_t op)
{
    uint32_t k = (uint32_t)(op - c->lo);
    uint32_t nacks = 0;
    for (uint32_t i = 0; i < r->cfg.replica_count; i++) {
        const vsr_dvc_t *d = &r->dvcs[i];
        if (!d->have)
            continue;
        if (op > d->op) {
            nacks++; /* its log ends below op: it never prepared it */
            continue;
        }
        dvc_entry_t e = dvc_at(d, op);
        bool match = c->cid_known[k] && e.inside && !e.blank && sl_u128_eq(e.identity, c->cid[k]);
        if (match && e.present) {
            if (c->hdr[k] == NULL)
                c->hdr[k] = e.header;
            return DECIDE_KEEP;
        }
        if (c->fresh[k] && d->log_view < c->log_view && !match) {
            nacks++;
            continue;
        }
        if (!e.inside)
            continue;
        /* It proves it does not hold op's canonical prepare: a nack of the
         * header it reports, or a log that names another prepare there. */
        if (e.nack || (c->cid_known[k] && !e.blank && !match))
            nacks++;
    }
    uint32_t need = (r->cfg.bugs & SL_VSR_BUG_NACK_WITHOUT_QUORUM) ? 1 : r->quorum;
    return nacks >= need ? DECIDE_CUT : DECIDE_WAIT;
}

/* The trace line of an undecided op: what each DoViewChange says of it
 * (log view, then p present, n nack, h a header, b blank, - outside). */
static void trace_undecided(sl_vsr_replica_t *r, const choice_t *c, uint64_t op, uint32_t lv)
{
    if (r->bus.trace == NULL)
        return;
    char says[SL_VSR_REPLICAS_MAX * 16];
    size_t n = 0;
    for (uint32_t i = 0; i < r->cfg.replica_count && n + 16 < sizeof(says); i++) {
        const vsr_dvc_t *d = &r->dvcs[i];
        dvc_entry_t e = d->have ? dvc_at(d, op) : (dvc_entry_t){0};
        const char *what = !d->have     ? "none"
                           : op > d->op ? "above"
                           : !e.inside  ? "-"
                           : e.present  ? "p"
                           : e.nack     ? "n"
                           : e.blank    ? "b"
                                        : "h";
        n += (size_t)snprintf(says + n, sizeof(says) - n, " %u:%s@%u", i, what,
                              d->have ? d->log_view : 0);
    }
    uint32_t k = (uint32_t)(op - c->lo);
    vsr_trace(r, "view change: op %llu undecided (log_view %u op %llu commit %llu%s):%s",
              (unsigned long long)op, lv, (unsigned long long)c->op, (unsigned long long)c->commit,
              c->cid_known[k] ? ", identity known" : "", says);
}

static void install_as_primary(sl_vsr_replica_t *r, const choice_t *c);

/* Whether every committed op of the chosen window that this replica has not
 * applied will be known once the window is installed: a header or an
 * identity from the DoViewChanges, or an identity the hash chain names from
 * above (through the chosen headers or this replica's own entries, as
 * install_window's chain walk will find it). One known to nobody (each
 * DoViewChange so far is blank there: its senders never had it, or dropped
 * the entry when a state transfer moved their window back) could never be
 * repaired in the new view: no peer would vouch for it and nothing would
 * name its identity, while the Commit heartbeat kept the view alive. The
 * replicas that committed it include one of any quorum, but not
 * necessarily of the DoViewChanges here: wait for more (or for the view
 * change to time out to the next primary). A replica recovering from a
 * faulty journal slot sends none until a StartView names its log, so this
 * waits in vain if it alone holds the op with one dropped entry beside it
 * (two faults at once); installing would not do better there unless it
 * still knew the op committed. */
static bool committed_known(sl_vsr_replica_t *r, const choice_t *c)
{
    uint64_t from = r->commit_min + 1 > c->lo ? r->commit_min + 1 : c->lo;
    uint64_t to = c->commit < c->op ? c->commit : c->op;
    bool named = false; /* the op above named this one's identity */
    sl_u128_t id = {0, 0};
    for (uint64_t op = c->op; op >= from && op > 0; op--) {
        uint32_t k = (uint32_t)(op - c->lo);
        bool known = c->hdr[k] != NULL || c->cid_known[k] || named;
        sl_u128_t want = c->hdr[k] != NULL ? sl_load_u128(c->hdr[k])
                         : c->cid_known[k] ? c->cid[k]
                                           : id;
        if (!known && op <= to) {
            vsr_trace(r, "view change: committed op %llu unknown to every DoViewChange so far",
                      (unsigned long long)op);
            return false;
        }
        named = false;
        if (c->hdr[k] != NULL) {
            id = sl_load_u128(c->hdr[k] + 144);
            named = true;
        } else if (known && vsr_known(r, op) && sl_u128_eq(vsr_entry(r, op)->identity, want)) {
            id = vsr_entry(r, op)->parent;
            named = true;
        }
        named = named && !sl_u128_is_zero(id);
    }
    return true;
}

static void try_decide(sl_vsr_replica_t *r)
{
    if (r->status != SL_VSR_STATUS_VIEW_CHANGE || vsr_primary_of(r, r->view) != r->cfg.replica ||
        !r->dvcs[r->cfg.replica].have)
        return;
    uint32_t have = 0;
    for (uint32_t i = 0; i < r->cfg.replica_count; i++)
        have += r->dvcs[i].have ? 1u : 0u;
    if (have < r->quorum)
        return;
    choice_t c;
    memset(&c, 0, sizeof(c));
    uint32_t lv;
    choose_canonical(r, &c, &lv);
    canonical_headers(r, &c, lv);
    for (uint64_t op = c.commit + 1; op <= c.op; op++) {
        decide_t d = decide_op(r, &c, op);
        if (d == DECIDE_WAIT) {
            trace_undecided(r, &c, op, lv);
            return;
        }
        if (d == DECIDE_CUT) {
            c.op = op - 1;
            break;
        }
    }
    /* With every replica's DoViewChange in, no more can come: install. */
    if (have < r->cfg.replica_count && !committed_known(r, &c))
        return;
    /* A primary whose journal window cannot hold the chosen log's head (its
     * checkpoint lags far behind) would send a StartView without the headers
     * of the newest ops: it lets the view time out to the next replica. */
    if (c.op > 0 && !vsr_in_window(r, c.op)) {
        vsr_trace(r, "view change: op %llu is past this replica's window, not leading",
                  (unsigned long long)c.op);
        return;
    }
    install_as_primary(r, &c);
}

/* --- installing a log
 * ----------------------------------------------------------------------------------- */

/* Makes [lo, op] of this replica's log the given window, cutting anything
 * above op, then re-checks the chain below the window. hdr[k] is op lo + k's
 * header, or NULL with cid[k] its identity when cid_known[k]. */
static void install_window(sl_vsr_replica_t *r, uint64_t lo, uint64_t op, const uint8_t *const *hdr,
                           const sl_u128_t *cid, const bool *cid_known, bool truncate)
{
    if (truncate) {
        for (uint32_t p = 0; p < r->cfg.journal_slots; p++) {
            if (r->log[p].op > op)
                memset(&r->log[p], 0, sizeof(r->log[p]));
        }
        r->op = op;
    } else if (op > r->op) {
        r->op = op;
    }
    uint64_t lowest = 0;
    for (uint64_t x = op; x >= lo && x > r->commit_min && x > 0; x--) {
        uint32_t k = (uint32_t)(x - lo);
        vsr_entry_t *e = vsr_entry(r, x);
        /* Canonical here and at or below this replica's commit_max: the
         * committed op, whatever the new log knows of it. */
        bool committed = vsr_known(r, x) && e->canonical && x <= r->commit_max;
        if (committed)
            sl_assert(hdr[k] == NULL || sl_u128_eq(e->identity, sl_load_u128(hdr[k])));
        if (hdr[k] != NULL) {
            vsr_log_set(r, hdr[k], true);
            lowest = x;
        } else if (vsr_known(r, x)) {
            e->canonical = committed || (cid_known[k] && sl_u128_eq(e->identity, cid[k]));
            if (e->canonical)
                lowest = x;
        }
    }
    /* Below the window, a new view's log is known only through the chain
     * from its lowest known entry; with no anchor at all, every entry down
     * there loses its mark (a stale old view's ops would otherwise stay
     * canonical and be applied), except what this replica knows committed. */
    if (lowest != 0)
        vsr_chain_down(r, lowest, truncate);
    else if (truncate && lo > 0)
        vsr_chain_down(r, lo, true);
}

/* Records the window as the view's headers: kept in the state record for
 * recovery after a crash, and reported in DoViewChange / StartView where the
 * journal window cannot hold an op (a replica far behind). hdr: the
 * installed window's headers (lo + k), NULL where only the log may know. */
static void keep_view_headers(sl_vsr_replica_t *r, uint64_t lo, uint64_t op,
                              const uint8_t *const *hdr, uint64_t hdr_lo, uint64_t hdr_op)
{
    uint32_t count = op >= lo && op > 0 ? (uint32_t)(op - lo + 1) : 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t x = op - i;
        uint8_t *h = r->view_headers + (size_t)i * SL_HEADER_SIZE;
        const uint8_t *from = NULL;
        if (vsr_known(r, x) && vsr_entry(r, x)->canonical)
            from = vsr_entry(r, x)->header;
        else if (hdr != NULL && x >= hdr_lo && x <= hdr_op)
            from = hdr[x - hdr_lo];
        if (from != NULL)
            memcpy(h, from, SL_HEADER_SIZE);
        else
            sl_vsr_suffix_blank(h, x);
    }
    r->view_headers_count = count;
    r->view_headers_op = op;
}

static void become_normal(sl_vsr_replica_t *r)
{
    r->status = SL_VSR_STATUS_NORMAL;
    r->progress_tick = r->ticks;
    r->log_view = r->view;
    r->primary_tick = r->ticks;
    r->primary_heartbeat = 0;
    r->repair_busy = false;
    r->heartbeat_seq = 0;
    r->anchor_op = 0;
    memset(r->star_until, 0, sizeof(r->star_until)); /* a new view starts on the chain */
}

static void install_as_primary(sl_vsr_replica_t *r, const choice_t *c)
{
    install_window(r, c->lo, c->op, c->hdr, c->cid, c->cid_known, true);
    if (c->commit > r->commit_max)
        r->commit_max = c->commit;
    keep_view_headers(r, c->op > r->cfg.pipeline_max ? c->op - r->cfg.pipeline_max : 1, r->op,
                      c->hdr, c->lo, c->op);
    uint32_t log_view = r->log_view;
    r->log_view = r->view;
    if (!vsr_persist(r)) {
        r->log_view = log_view;
        return;
    }
    become_normal(r);
    vsr_trace(r, "primary: op %llu commit %llu", (unsigned long long)r->op,
              (unsigned long long)r->commit_max);
    for (uint64_t op = r->commit_max + 1; op <= r->op; op++) {
        vsr_entry(r, op)->acks = 0;
        vsr_entry(r, op)->sent_tick = 0;
    }
    if (vsr_known(r, r->op) && vsr_entry(r, r->op)->timestamp > r->timestamp_last)
        r->timestamp_last = vsr_entry(r, r->op)->timestamp;
    vsr_send_start_view(r, 0xFF, (sl_u128_t){0, 0});
    vsr_commit_advance(r);
}

void vsr_send_start_view(sl_vsr_replica_t *r, uint8_t to, sl_u128_t incarnation)
{
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_START_VIEW);
    sl_u128_t unused_nack, unused_present;
    build_suffix(r, &unused_nack, &unused_present);
    f.u.start_view.op = r->op;
    f.u.start_view.commit = r->commit_max < r->op ? r->commit_max : r->op;
    f.u.start_view.group = r->cfg.group;
    f.u.start_view.incarnation = incarnation;
    if (to == 0xFF)
        vsr_broadcast(r, &f, sl_buf_span(&r->body));
    else
        vsr_send(r, to, &f, sl_buf_span(&r->body));
}

/* Whether a StartView may be installed now (see docs/architecture.md,
 * "Restarts and lost disks"). */
static bool start_view_acceptable(sl_vsr_replica_t *r, uint32_t view, sl_u128_t incarnation)
{
    bool ours = sl_u128_eq(incarnation, r->incarnation);
    if (r->wiped)
        return ours && view >= r->view_floor && r->discovery_votes != 0 &&
               (uint32_t)__builtin_popcount(r->discovery_votes) >= r->quorum;
    if (r->status == SL_VSR_STATUS_RECOVERING) {
        /* Its log may lack ops it acknowledged in log_view before the
         * crash: a later view's log has those that committed, log_view's
         * own only if built after the restart (the incarnation says so).
         * Never a view older than one it sent a DoViewChange for. */
        if (view < r->dvc_view)
            return false;
        return view > r->log_view_at_open || (view == r->log_view_at_open && ours);
    }
    if (view > r->view)
        return true;
    return view == r->view && !vsr_is_primary(r);
}

void vsr_on_start_view(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    const sl_vsr_start_view_t *sv = &f->u.start_view;
    uint32_t view = f->h.view;
    if (f->h.replica != vsr_primary_of(r, view) || !start_view_acceptable(r, view, sv->incarnation))
        return;
    uint32_t count = (uint32_t)(f->body.len / SL_HEADER_SIZE);
    const uint8_t *hdr[SL_VSR_SUFFIX_MAX];
    sl_u128_t cid[SL_VSR_SUFFIX_MAX];
    bool cid_known[SL_VSR_SUFFIX_MAX];
    uint64_t lo = count > 0 ? sv->op - count + 1 : sv->op + 1;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *h = f->body.ptr + (size_t)i * SL_HEADER_SIZE;
        uint32_t k = (uint32_t)(sv->op - i - lo);
        hdr[k] = h[60] == 0 ? NULL : h;
        cid_known[k] = hdr[k] != NULL;
        cid[k] = sl_load_u128(h);
        if (hdr[k] == NULL && i > 0 && hdr[k + 1] != NULL) {
            cid[k] = sl_load_u128(hdr[k + 1] + 144);
            cid_known[k] = !sl_u128_is_zero(cid[k]);
        }
    }
    bool same_view = view == r->view && r->status == SL_VSR_STATUS_NORMAL && view == r->log_view;
    /* Within one view the primary's log only grows: a StartView of the
     * current view adds headers and never cuts (it may be older than the
     * prepares already here). */
    install_window(r, lo, sv->op, hdr, cid, cid_known, !same_view);
    r->view = view;
    if (r->wiped) {
        r->nack_floor = sv->op; /* it may have acknowledged anything up to here */
        r->wiped = false;
    }
    if (!same_view) {
        r->log_view = view;
        keep_view_headers(r, lo, r->op, hdr, lo, sv->op);
        /* Durable with the view headers: a blank among them is committed
         * (decide_op's fresh rule counts on it after a restart too). */
        if (sv->commit > r->commit_max)
            r->commit_max = sv->commit;
        if (!vsr_persist(r)) {
            r->status = SL_VSR_STATUS_RECOVERING;
            return;
        }
        become_normal(r);
        vsr_trace(r, "start view from %u: op %llu commit %llu/%llu", f->h.replica,
                  (unsigned long long)r->op, (unsigned long long)r->commit_min,
                  (unsigned long long)r->commit_max);
    } else {
        /* Not a sign of life: only a Commit is the heartbeat (an abdicating
         * primary still answers RequestStartView). */
        vsr_commit_learn(r, sv->commit);
    }
    for (uint64_t op = r->commit_min + 1; op <= r->op; op++) {
        if (vsr_present(r, op) && vsr_entry(r, op)->canonical)
            vsr_send_prepare_ok(r, op);
    }
}

void vsr_on_request_start_view(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    /* The requester judges whether this view will do (a restarted replica
     * may have voted for a view that never started). */
    if (!vsr_is_primary(r))
        return;
    vsr_send_start_view(r, f->h.replica, f->u.request_start_view.incarnation);
}

void vsr_request_start_view(sl_vsr_replica_t *r, uint8_t to)
{
    if (to == r->cfg.replica || (r->rsv_tick != 0 && r->ticks - r->rsv_tick < r->cfg.resend_ticks))
        return;
    r->rsv_tick = r->ticks;
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_REQUEST_START_VIEW);
    f.u.request_start_view.group = r->cfg.group;
    f.u.request_start_view.incarnation = r->incarnation;
    vsr_send(r, to, &f, sl_span(NULL, 0));
}

/* --- ticks
 * ---------------------------------------------------------------------------------------------- */

void vsr_tick_view_change(sl_vsr_replica_t *r)
{
    if (r->ticks - r->view_change_tick >= r->cfg.view_change_timeout_ticks) {
        vsr_start_view_change(r, r->view + 1);
        return;
    }
    if (r->ticks - r->resend_tick < r->cfg.resend_ticks)
        return;
    r->resend_tick = r->ticks;
    /* A record that failed to persist is retried before any vote. */
    if (!vsr_persist(r))
        return;
    send_start_view_change(r);
    if (r->dvc_sent)
        send_do_view_change(r);
    else
        maybe_send_do_view_change(r);
}

void vsr_tick_recovering(sl_vsr_replica_t *r)
{
    if (r->ticks - r->recover_tick < r->cfg.resend_ticks && r->recover_tick != 0)
        return;
    r->recover_tick = r->ticks;
    if (r->wiped && (uint32_t)__builtin_popcount(r->discovery_votes) < r->quorum) {
        /* Learn the view from a quorum first (replica_repair.c). */
        vsr_discovery_send(r);
        return;
    }
    sl_vsr_frame_t f;
    vsr_frame_init(r, &f, SL_VSR_REQUEST_START_VIEW);
    f.u.request_start_view.group = r->cfg.group;
    f.u.request_start_view.incarnation = r->incarnation;
    vsr_broadcast(r, &f, sl_span(NULL, 0));
    /* A lost disk whose floor is above the view the cluster settled in
     * (a peer reached a view that never started) votes for the floor: a
     * StartViewChange commits it to nothing, and it sends no DoViewChange. */
    if (r->wiped && ++r->recover_rounds % 4 == 0 && r->view_floor > 0) {
        vsr_frame_init(r, &f, SL_VSR_START_VIEW_CHANGE);
        f.h.view = r->view_floor;
        f.u.start_view_change.group = r->cfg.group;
        vsr_broadcast(r, &f, sl_span(NULL, 0));
    }
}
