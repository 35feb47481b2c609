/* The replica's life cycle (format, open with recovery, close), its durable
 * state record, journal reads and writes, sending, and the dispatch of
 * frames and ticks to the protocol files. */
#include "vsr/replica_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"

/* --- configuration ------------------------------------------------------------------------ */

void sl_vsr_config_defaults(sl_vsr_config_t *cfg, uint8_t replica, uint8_t replica_count)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->group = SL_VSR_GROUP_METADATA;
    cfg->replica = replica;
    cfg->replica_count = replica_count;
    cfg->pipeline_max = 32;
    cfg->journal_slots = 1024;
    cfg->checkpoint_interval = 256;
    cfg->clients_max = 8192;
    cfg->reply_max = 1u << 20;
    cfg->repair_chunk_max = 128;
    cfg->state_chunk_max = 1u << 20;
    cfg->state_max = 256u << 20;
    cfg->frame_max = SL_FRAME_MAX_DEFAULT;
    /* 10 ms ticks: Commit every 500 ms, the primary dead after 5 s. */
    cfg->commit_interval_ticks = 50;
    cfg->heartbeat_timeout_ticks = 500;
    cfg->view_change_timeout_ticks = 500;
    cfg->resend_ticks = 50;
}

int sl_vsr_config_check(const sl_vsr_config_t *cfg, const char **why)
{
    const char *bad = NULL;
    if (cfg->replica_count < 1 || cfg->replica_count > SL_VSR_REPLICAS_MAX)
        bad = "replica_count must be 1..16";
    else if (cfg->replica >= cfg->replica_count)
        bad = "replica must be below replica_count";
    else if (!sl_vsr_group_valid(cfg->group))
        bad = "group is not a valid group";
    else if (cfg->pipeline_max < 1 || cfg->pipeline_max > SL_VSR_PIPELINE_MAX)
        bad = "pipeline_max must be 1..127";
    else if (cfg->checkpoint_interval < 1 ||
             (uint64_t)cfg->journal_slots <=
                 (uint64_t)cfg->checkpoint_interval + 2u * cfg->pipeline_max)
        bad = "journal_slots must exceed checkpoint_interval + 2 * pipeline_max";
    else if (cfg->clients_max < 1 || cfg->repair_chunk_max < 1 || cfg->state_chunk_max < 1)
        bad = "clients_max, repair_chunk_max and state_chunk_max must be positive";
    else if (cfg->frame_max < SL_HEADER_SIZE + SL_VSR_SUFFIX_MAX * SL_HEADER_SIZE ||
             cfg->state_chunk_max > cfg->frame_max - SL_HEADER_SIZE)
        bad = "frame_max must hold a full view-change suffix and a state chunk";
    else if (cfg->commit_interval_ticks < 1 || cfg->resend_ticks < 1 ||
             cfg->heartbeat_timeout_ticks < 2 * cfg->commit_interval_ticks ||
             cfg->view_change_timeout_ticks < 2 * cfg->resend_ticks)
        bad = "timeouts must be positive, heartbeat_timeout >= 2 commit intervals, "
              "view_change_timeout >= 2 resends";
    if (why != NULL)
        *why = bad;
    return bad == NULL ? 0 : -1;
}

/* --- the state record --------------------------------------------------------------------- */

#define STATE_MAGIC "VSR1"

static void state_encode(sl_vsr_replica_t *r, sl_buf_t *b)
{
    sl_buf_reset(b);
    sl_put_bytes(b, STATE_MAGIC, 4);
    sl_put_u128(b, r->cfg.cluster);
    sl_put_u64(b, r->cfg.group);
    sl_put_u8(b, r->cfg.replica);
    sl_put_u8(b, r->cfg.replica_count);
    sl_put_u32(b, r->view);
    sl_put_u32(b, r->log_view);
    sl_put_u32(b, r->dvc_view);
    sl_put_u32(b, r->view_max);
    sl_put_u64(b, r->commit_max);
    sl_put_u64(b, r->checkpoint_op);
    sl_put_u128(b, r->checkpoint_identity);
    for (int i = 0; i < 2; i++) {
        sl_put_u64(b, r->checkpoint[i].len);
        sl_put_u64(b, r->checkpoint[i].checksum);
    }
    sl_put_u64(b, r->nack_floor);
    sl_put_u64(b, r->view_headers_op);
    sl_put_u32(b, r->view_headers_count);
    sl_put_bytes(b, r->view_headers, (size_t)r->view_headers_count * SL_HEADER_SIZE);
    if (sl_buf_ok(b))
        sl_put_u64(b, sl_xxh3_64(b->data, b->len));
}

/* Reads a record into r; -1 when it does not verify or belongs elsewhere. */
static int state_decode(sl_vsr_replica_t *r, sl_span_t rec)
{
    if (rec.len < 12)
        return -1;
    size_t covered = rec.len - 8;
    if (sl_load_u64(rec.ptr + covered) != sl_xxh3_64(rec.ptr, covered))
        return -1;
    sl_reader_t rd = sl_reader(sl_span(rec.ptr, covered));
    const uint8_t *magic = sl_read_take(&rd, 4);
    sl_u128_t cluster;
    uint64_t group;
    uint8_t replica, count;
    sl_read_u128(&rd, &cluster);
    sl_read_u64(&rd, &group);
    sl_read_u8(&rd, &replica);
    sl_read_u8(&rd, &count);
    sl_read_u32(&rd, &r->view);
    sl_read_u32(&rd, &r->log_view);
    sl_read_u32(&rd, &r->dvc_view);
    sl_read_u32(&rd, &r->view_max);
    sl_read_u64(&rd, &r->commit_max);
    sl_read_u64(&rd, &r->checkpoint_op);
    sl_read_u128(&rd, &r->checkpoint_identity);
    for (int i = 0; i < 2; i++) {
        r->checkpoint[i].kind = (uint8_t)i;
        r->checkpoint[i].frontier = r->checkpoint_op;
        sl_read_u64(&rd, &r->checkpoint[i].len);
        sl_read_u64(&rd, &r->checkpoint[i].checksum);
    }
    sl_read_u64(&rd, &r->nack_floor);
    sl_read_u64(&rd, &r->view_headers_op);
    sl_read_u32(&rd, &r->view_headers_count);
    if (!sl_reader_ok(&rd) || memcmp(magic, STATE_MAGIC, 4) != 0 ||
        !sl_u128_eq(cluster, r->cfg.cluster) || group != r->cfg.group ||
        replica != r->cfg.replica || count != r->cfg.replica_count || r->log_view > r->view ||
        r->dvc_view > r->view || r->view_headers_count > SL_VSR_SUFFIX_MAX ||
        r->view_headers_count > r->view_headers_op)
        return -1;
    sl_span_t headers;
    if (!sl_read_span(&rd, (size_t)r->view_headers_count * SL_HEADER_SIZE, &headers) ||
        !sl_reader_done(&rd))
        return -1;
    if (headers.len > 0)
        memcpy(r->view_headers, headers.ptr, headers.len);
    return 0;
}

bool vsr_persist(sl_vsr_replica_t *r)
{
    if (r->view > r->view_max)
        r->view_max = r->view;
    state_encode(r, &r->state);
    if (!sl_buf_ok(&r->state))
        return false;
    return r->storage.write_state(r->storage.ctx, sl_buf_span(&r->state)) == 0;
}

/* --- helpers ------------------------------------------------------------------------------------
 */

bool vsr_present(sl_vsr_replica_t *r, uint64_t op)
{
    if (!vsr_known(r, op))
        return false;
    const vsr_slot_t *s = vsr_slot(r, op);
    return s->state == SLOT_VALID && s->op == op &&
           sl_u128_eq(s->identity, vsr_entry(r, op)->identity);
}

sl_u128_t vsr_nonce(sl_vsr_replica_t *r)
{
    /* Distinct per replica and per call; unpredictable only as far as the
     * host's seed is. */
    r->nonce_counter++;
    uint8_t in[24];
    sl_store_u64(in, r->cfg.nonce_seed);
    sl_store_u64(in + 8, r->nonce_counter);
    sl_store_u64(in + 16, r->cfg.replica);
    sl_u128_t n = {sl_xxh3_64(in, sizeof(in)), r->nonce_counter};
    return n;
}

void vsr_trace(sl_vsr_replica_t *r, const char *fmt, ...)
{
    if (r->bus.trace == NULL)
        return;
    char line[256];
    int n = snprintf(line, sizeof(line), "replica %u view %u: ", r->cfg.replica, r->view);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    r->bus.trace(r->bus.ctx, line);
}

void vsr_frame_init(sl_vsr_replica_t *r, sl_vsr_frame_t *f, uint8_t command)
{
    memset(f, 0, sizeof(*f));
    f->h.command = command;
    f->h.cluster = r->cfg.cluster;
    f->h.view = r->view;
    f->h.replica = r->cfg.replica;
}

void vsr_send(sl_vsr_replica_t *r, uint8_t to, sl_vsr_frame_t *f, sl_span_t body)
{
    sl_assert(to < r->cfg.replica_count && to != r->cfg.replica);
    sl_buf_reset(&r->out);
    uint8_t *h = sl_buf_extend(&r->out, SL_HEADER_SIZE);
    if (h == NULL)
        return;
    sl_vsr_header_encode(h, f, body);
    sl_put_span(&r->out, body);
    if (sl_buf_ok(&r->out))
        r->bus.send(r->bus.ctx, to, r->out.data, (uint32_t)r->out.len);
}

void vsr_broadcast(sl_vsr_replica_t *r, sl_vsr_frame_t *f, sl_span_t body)
{
    for (uint8_t i = 0; i < r->cfg.replica_count; i++) {
        if (i != r->cfg.replica)
            vsr_send(r, i, f, body);
    }
}

void vsr_log_set(sl_vsr_replica_t *r, const uint8_t header[SL_HEADER_SIZE], bool canonical)
{
    uint64_t op = sl_load_u64(header + 176);
    sl_assert(op >= 1);
    if (!vsr_in_window(r, op))
        return;
    vsr_entry_t *e = vsr_entry(r, op);
    sl_u128_t identity = sl_load_u128(header);
    if (e->op != op || !sl_u128_eq(e->identity, identity)) {
        e->op = op;
        e->identity = identity;
        e->parent = sl_load_u128(header + 144);
        e->timestamp = sl_load_u64(header + 192);
        e->acks = 0;
        e->sent_tick = 0;
        memcpy(e->header, header, SL_HEADER_SIZE);
    }
    e->canonical = canonical;
}

void vsr_log_clear(sl_vsr_replica_t *r, uint64_t op)
{
    vsr_entry_t *e = vsr_entry(r, op);
    if (e->op == op)
        memset(e, 0, sizeof(*e));
}

void vsr_chain_down(sl_vsr_replica_t *r, uint64_t from, bool strict)
{
    uint64_t stop = r->commit_min > r->checkpoint_op ? r->commit_min : r->checkpoint_op;
    bool chained = vsr_known(r, from) && vsr_entry(r, from)->canonical;
    for (uint64_t op = from; op > stop + 1; op--) {
        vsr_entry_t *above = vsr_entry(r, op);
        vsr_entry_t *e = vsr_entry(r, op - 1);
        bool link = chained && vsr_known(r, op - 1) && sl_u128_eq(e->identity, above->parent);
        if (!link && !strict)
            return;
        /* An entry canonical in this replica's log at or below its commit_max
         * is the committed op: it stays canonical in any later view. */
        if (!link && vsr_known(r, op - 1) && e->canonical && op - 1 <= r->commit_max) {
            chained = true;
            continue;
        }
        chained = link;
        if (vsr_known(r, op - 1))
            e->canonical = link;
    }
}

/* Whether op's prepare with this identity is to be written now: its slot is
 * not being written, the op is in the log with that identity, and the slot
 * does not hold it durable already. */
static bool journal_wanted(sl_vsr_replica_t *r, uint64_t op, sl_u128_t identity)
{
    vsr_slot_t *s = vsr_slot(r, op);
    if (s->writing || !vsr_known(r, op) || !sl_u128_eq(vsr_entry(r, op)->identity, identity))
        return false;
    return !(s->state == SLOT_VALID && s->op == op && sl_u128_eq(s->identity, identity));
}

/* Hands a sealed journal image (a prepare frame, then its seal) to the
 * storage, and keeps it as the newest of the last two written: the buffer
 * is swapped with the older one's, so keeping it copies nothing. */
static void journal_submit(sl_vsr_replica_t *r, sl_buf_t *image, uint64_t op, sl_u128_t identity)
{
    vsr_slot_t *s = vsr_slot(r, op);
    s->writing = true;
    s->writing_op = op;
    s->writing_identity = identity;
    s->writing_view = r->view;
    r->storage.write_prepare(r->storage.ctx, (uint32_t)(op % r->cfg.journal_slots), image->data,
                             (uint32_t)image->len);
    uint32_t older = r->kept_new ^ 1u;
    sl_buf_t evicted = r->kept[older];
    r->kept[older] = *image;
    *image = evicted;
    r->kept_op[older] = op;
    r->kept_identity[older] = identity;
    r->kept_new = older;
    r->journal_writes++;
}

/* Journaled under this replica's view (the identity excludes the view):
 * after a restart an entry above the view's headers is trusted only if it
 * was written in the log view. The journal seal: the identity and the body
 * seal leave the view stamp uncovered, and a stamp flipped at rest would
 * move a prepare out of the log view's log (and so let the replica nack
 * what it acknowledged). */
static bool journal_seal(sl_vsr_replica_t *r, sl_buf_t *image)
{
    sl_store_u32(image->data + 52, r->view);
    image->data[60] = SL_VSR_PREPARE;
    sl_put_u64(image, sl_xxh3_64(image->data, image->len));
    return sl_buf_ok(image);
}

void vsr_journal_write(sl_vsr_replica_t *r, const uint8_t header[SL_HEADER_SIZE], sl_span_t body)
{
    uint64_t op = sl_load_u64(header + 176);
    sl_u128_t identity = sl_load_u128(header);
    if (!journal_wanted(r, op, identity))
        return;
    sl_buf_reset(&r->out);
    sl_put_bytes(&r->out, header, SL_HEADER_SIZE);
    sl_put_span(&r->out, body);
    if (!sl_buf_ok(&r->out) || !journal_seal(r, &r->out))
        return;
    journal_submit(r, &r->out, op, identity);
}

void vsr_journal_write_frame(sl_vsr_replica_t *r, sl_buf_t *frame)
{
    if (!sl_buf_ok(frame) || frame->len < SL_HEADER_SIZE)
        return;
    uint64_t op = sl_load_u64(frame->data + 176);
    sl_u128_t identity = sl_load_u128(frame->data);
    if (!journal_wanted(r, op, identity) || !journal_seal(r, frame))
        return;
    journal_submit(r, frame, op, identity);
}

/* The bytes the journal holds for op when they are one of the last two
 * prepares written: the slot is being written or is valid with that very
 * prepare (a failed write left it faulty: no answer then, as from the
 * disk). */
static sl_span_t journal_kept(sl_vsr_replica_t *r, uint64_t op, sl_u128_t identity)
{
    const vsr_slot_t *s = vsr_slot(r, op);
    bool writing = s->writing && s->writing_op == op && sl_u128_eq(s->writing_identity, identity);
    bool valid =
        !s->writing && s->state == SLOT_VALID && s->op == op && sl_u128_eq(s->identity, identity);
    if (op == 0 || !(writing || valid))
        return sl_span(NULL, 0);
    for (uint32_t k = 0; k < 2; k++) {
        if (r->kept_op[k] == op && sl_u128_eq(r->kept_identity[k], identity))
            return sl_buf_span(&r->kept[k]);
    }
    return sl_span(NULL, 0);
}

void vsr_relay_kept(sl_vsr_replica_t *r, uint64_t op, sl_u128_t identity)
{
    if (r->status != SL_VSR_STATUS_NORMAL || vsr_is_primary(r))
        return;
    uint8_t next = (uint8_t)((r->cfg.replica + 1) % r->cfg.replica_count);
    if (next == vsr_primary_of(r, r->view))
        return;
    for (uint32_t k = 0; k < 2; k++) {
        const sl_buf_t *b = &r->kept[k];
        if (r->kept_op[k] != op || !sl_u128_eq(r->kept_identity[k], identity) ||
            b->len < SL_HEADER_SIZE + VSR_JOURNAL_SEAL)
            continue;
        /* The journal image is the prepare's frame (its view stamped with
         * the one it was journaled in, which the seals leave out), then the
         * journal seal, which is not sent. */
        vsr_send_bytes(r, next, b->data, b->len - VSR_JOURNAL_SEAL);
        return;
    }
    /* Newer prepares came in while this one was written (several in
     * flight): its image is no longer kept, so the journal gives it back
     * (written and valid: a failed write has nothing to give, and the next
     * replica repairs it). */
    sl_vsr_frame_t f;
    const uint8_t *frame;
    if (vsr_journal_read_slot(r, op, &f, &frame) && sl_u128_eq(f.h.checksum, identity))
        vsr_send_bytes(r, next, frame, f.h.size);
}

/* A journal slot's bytes: a prepare frame, then the XXH3-64 of it (the
 * journal seal). Whether they verify and decode as a prepare of this group.
 * Bytes this replica sealed and kept in memory skip the seal: it guards the
 * disk, and hashing a megabyte again per apply was a tenth of a backup's
 * CPU. */
static bool journal_decode(sl_vsr_replica_t *r, sl_span_t bytes, bool kept, sl_vsr_frame_t *f)
{
    if (bytes.len < SL_HEADER_SIZE + VSR_JOURNAL_SEAL)
        return false;
    size_t len = bytes.len - VSR_JOURNAL_SEAL;
    return (kept || sl_load_u64(bytes.ptr + len) == sl_xxh3_64(bytes.ptr, len)) &&
           sl_vsr_frame_decode(bytes.ptr, len, r->cfg.frame_max, f) == SL_VSR_OK &&
           f->h.command == SL_VSR_PREPARE && f->u.prepare.group == r->cfg.group;
}

bool vsr_journal_read(sl_vsr_replica_t *r, uint64_t op, sl_vsr_frame_t *f)
{
    if (!vsr_known(r, op))
        return false;
    vsr_entry_t *e = vsr_entry(r, op);
    vsr_slot_t *s = vsr_slot(r, op);
    sl_span_t bytes = journal_kept(r, op, e->identity);
    bool kept = bytes.ptr != NULL;
    if (!kept)
        bytes = r->storage.read_prepare(r->storage.ctx, (uint32_t)(op % r->cfg.journal_slots));
    bool ok = journal_decode(r, bytes, kept, f) && f->u.prepare.op == op &&
              sl_u128_eq(f->h.checksum, e->identity);
    if (!ok && !s->writing && s->state == SLOT_VALID && s->op == op &&
        sl_u128_eq(s->identity, e->identity))
        s->state = SLOT_FAULTY; /* it was there: corrupted at rest */
    return ok;
}

bool vsr_journal_read_slot(sl_vsr_replica_t *r, uint64_t op, sl_vsr_frame_t *f,
                           const uint8_t **header)
{
    const vsr_slot_t *s = vsr_slot(r, op);
    if (op == 0 || s->writing || s->state != SLOT_VALID || s->op != op)
        return false;
    sl_span_t bytes =
        r->storage.read_prepare(r->storage.ctx, (uint32_t)(op % r->cfg.journal_slots));
    if (!journal_decode(r, bytes, false, f) || f->u.prepare.op != op ||
        !sl_u128_eq(f->h.checksum, s->identity))
        return false;
    *header = bytes.ptr;
    return true;
}

bool vsr_head(sl_vsr_replica_t *r, uint64_t op, sl_u128_t parent, sl_vsr_frame_t *f,
              sl_span_t *head)
{
    sl_assert(op >= 1);
    if (op - 1 <= r->commit_min || (r->cfg.bugs & SL_VSR_BUG_HEAD_APPLIED)) {
        *head = sl_span(NULL, 0); /* applied: the machine's state is the head */
        return true;
    }
    uint64_t prev = op - 1;
    if (!vsr_known(r, prev))
        return false;
    const vsr_entry_t *e = vsr_entry(r, prev);
    const vsr_slot_t *s = vsr_slot(r, prev);
    /* Durable, or written and not yet acknowledged by the disk (the
     * pipeline's previous op): either way the journal reads it back. */
    bool held = vsr_present(r, prev) || (s->writing && s->writing_op == prev &&
                                         sl_u128_eq(s->writing_identity, e->identity));
    if (!held || (!sl_u128_is_zero(parent) && !sl_u128_eq(e->identity, parent)))
        return false;
    if (!vsr_journal_read(r, prev, f))
        return false;
    *head = f->body;
    return true;
}

bool vsr_accept(sl_vsr_replica_t *r, const sl_vsr_frame_t *f)
{
    if (r->machine.accept == NULL)
        return true;
    const sl_vsr_prepare_t *p = &f->u.prepare;
    sl_vsr_frame_t prev;
    sl_span_t head;
    if (!vsr_head(r, p->op, p->parent, &prev, &head))
        return true; /* a gap below: the hash chain vouches for p */
    if (r->machine.accept(r->machine.ctx, p, head, f->body))
        return true;
    r->prepares_refused++;
    vsr_trace(r, "prepare %llu refused by the machine", (unsigned long long)p->op);
    return false;
}

/* --- format / open / close
 * ------------------------------------------------------------------------ */

int sl_vsr_replica_format(const sl_vsr_config_t *cfg, const sl_vsr_storage_t *storage)
{
    if (sl_vsr_config_check(cfg, NULL) != 0)
        return -1;
    sl_vsr_replica_t r;
    memset(&r, 0, sizeof(r));
    r.cfg = *cfg;
    r.storage = *storage;
    r.checkpoint[0].kind = SL_VSR_ARTIFACT_METADATA_SNAPSHOT;
    r.checkpoint[1].kind = SL_VSR_ARTIFACT_CLIENT_TABLE;
    sl_buf_init(&r.state, 0);
    int rc = vsr_persist(&r) ? 0 : -1;
    sl_buf_free(&r.state);
    return rc;
}

static int alloc_replica(const sl_vsr_config_t *cfg, sl_vsr_replica_t **out)
{
    sl_vsr_replica_t *r = calloc(1, sizeof(*r));
    *out = r;
    if (r == NULL)
        return -1;
    r->cfg = *cfg;
    r->log = calloc(cfg->journal_slots, sizeof(*r->log));
    r->slots = calloc(cfg->journal_slots, sizeof(*r->slots));
    r->view_headers = malloc((size_t)SL_VSR_SUFFIX_MAX * SL_HEADER_SIZE);
    bool ok = r->log && r->slots && r->view_headers;
    for (uint32_t i = 0; ok && i < cfg->replica_count; i++) {
        r->dvcs[i].headers = malloc((size_t)SL_VSR_SUFFIX_MAX * SL_HEADER_SIZE);
        ok = r->dvcs[i].headers != NULL;
    }
    ok = ok && sl_vsr_clients_init(&r->clients, cfg->clients_max, cfg->reply_max) == 0;
    sl_buf_init(&r->out, (size_t)cfg->frame_max + VSR_JOURNAL_SEAL);
    sl_buf_init(&r->body, (size_t)cfg->frame_max + VSR_JOURNAL_SEAL); /* rotates with out and kept */
    sl_buf_init(&r->reply, 0);
    sl_buf_init(&r->state, 0);
    for (int k = 0; k < 2; k++)
        sl_buf_init(&r->kept[k], (size_t)cfg->frame_max + VSR_JOURNAL_SEAL);
    for (int i = 0; i < 2; i++)
        sl_buf_init(&r->sync.data[i], cfg->state_max);
    return ok ? 0 : -1;
}

void sl_vsr_replica_close(sl_vsr_replica_t *r)
{
    if (r == NULL)
        return;
    for (uint32_t i = 0; i < SL_VSR_REPLICAS_MAX; i++)
        free(r->dvcs[i].headers);
    sl_vsr_clients_free(&r->clients);
    sl_buf_free(&r->out);
    sl_buf_free(&r->body);
    sl_buf_free(&r->reply);
    sl_buf_free(&r->state);
    for (int k = 0; k < 2; k++)
        sl_buf_free(&r->kept[k]);
    for (int i = 0; i < 2; i++)
        sl_buf_free(&r->sync.data[i]);
    free(r->sync.list);
    free(r->view_headers);
    free(r->slots);
    free(r->log);
    free(r);
}

/* Loads the checkpoint the record names into the machine and the client
 * table; false when an artifact is missing or does not verify. */
static bool restore_checkpoint(sl_vsr_replica_t *r)
{
    r->machine.reset(r->machine.ctx);
    sl_vsr_clients_reset(&r->clients);
    if (r->checkpoint_op == 0)
        return true;
    sl_span_t a[2];
    for (uint8_t k = 0; k < 2; k++) {
        a[k] = r->storage.read_artifact(r->storage.ctx, r->checkpoint_op, k);
        if (a[k].len != r->checkpoint[k].len ||
            sl_xxh3_64(a[k].ptr, a[k].len) != r->checkpoint[k].checksum)
            return false;
    }
    /* Copy the snapshot: restoring reads storage again for the table. */
    sl_buf_reset(&r->body);
    sl_put_span(&r->body, a[0]);
    if (!sl_buf_ok(&r->body) || r->machine.restore(r->machine.ctx, sl_buf_span(&r->body)) != 0)
        return false;
    sl_span_t table = r->storage.read_artifact(r->storage.ctx, r->checkpoint_op, 1);
    if (sl_vsr_clients_decode(&r->clients, table) != 0) {
        r->machine.reset(r->machine.ctx);
        return false;
    }
    return true;
}

/* One journal slot as found at open. Fills the slot's state, and returns
 * the prepare's header (borrowed) when it verifies. */
static const uint8_t *scan_slot(sl_vsr_replica_t *r, uint32_t p, uint32_t *view)
{
    vsr_slot_t *s = &r->slots[p];
    memset(s, 0, sizeof(*s));
    sl_span_t bytes = r->storage.read_prepare(r->storage.ctx, p);
    if (bytes.len == 0)
        return NULL;
    sl_vsr_frame_t f;
    if (!journal_decode(r, bytes, false, &f) || f.u.prepare.op % r->cfg.journal_slots != p) {
        s->state = SLOT_FAULTY;
        return NULL;
    }
    s->state = SLOT_VALID;
    s->op = f.u.prepare.op;
    s->identity = f.h.checksum;
    s->view = f.h.view;
    *view = f.h.view;
    return bytes.ptr;
}

/* Rebuilds the log from the record's view headers and the journal:
 * the view headers are log_view's log at its start; a journaled prepare
 * above them belongs to the log only if it was written in log_view; below
 * them, only while it chains down from them. Anything at or below the
 * checkpoint is left out. Returns whether any slot is faulty. */
static bool rebuild_log(sl_vsr_replica_t *r)
{
    uint64_t floor = r->checkpoint_op;
    for (uint32_t i = 0; i < r->view_headers_count; i++) {
        const uint8_t *h = r->view_headers + (size_t)i * SL_HEADER_SIZE;
        uint64_t op = r->view_headers_op - i;
        if (op > floor && h[60] == SL_VSR_PREPARE)
            vsr_log_set(r, h, true);
    }
    bool faulty = false;
    uint64_t head = r->view_headers_op > floor ? r->view_headers_op : floor;
    for (uint32_t p = 0; p < r->cfg.journal_slots; p++) {
        uint32_t view = 0;
        const uint8_t *h = scan_slot(r, p, &view);
        faulty = faulty || r->slots[p].state == SLOT_FAULTY;
        if (h != NULL && r->slots[p].op == floor && floor > 0 &&
            sl_u128_eq(r->slots[p].identity, r->checkpoint_identity))
            vsr_log_set(r, h, true); /* the checkpoint's own op: applied, servable */
        if (h == NULL || r->slots[p].op <= floor)
            continue;
        /* A prepare journaled under log_view was written while this replica
         * was normal in log_view: it is that view's prepare for its op. */
        uint64_t op = r->slots[p].op;
        bool stamped = view == r->log_view;
        if (op > r->view_headers_op) {
            if (stamped) {
                vsr_log_set(r, h, true);
                head = op > head ? op : head;
            }
        } else if (!vsr_known(r, op)) {
            vsr_log_set(r, h, stamped); /* unstamped below the view headers: chain */
        }
    }
    /* Entries above the head are stale (a prefix of an older view). */
    for (uint32_t p = 0; p < r->cfg.journal_slots; p++) {
        if (r->log[p].op > head)
            memset(&r->log[p], 0, sizeof(r->log[p]));
    }
    r->op = head;
    /* Chain down from the lowest view header this replica has. */
    for (uint32_t i = r->view_headers_count; i > 0; i--) {
        uint64_t op = r->view_headers_op - (i - 1);
        if (op > floor && vsr_known(r, op)) {
            vsr_chain_down(r, op, false);
            break;
        }
    }
    return faulty;
}

int sl_vsr_replica_open(const sl_vsr_config_t *cfg, const sl_vsr_storage_t *storage,
                        const sl_vsr_bus_t *bus, const sl_vsr_machine_t *machine,
                        sl_vsr_replica_t **out)
{
    *out = NULL;
    if (sl_vsr_config_check(cfg, NULL) != 0)
        return -1;
    /* The host's artifact hooks come all four or none. */
    int hooks = (storage->offer != NULL) + (storage->serve != NULL) + (storage->stage != NULL) +
                (storage->install != NULL);
    if (hooks != 0 && hooks != 4)
        return -1;
    sl_vsr_replica_t *r = NULL;
    if (alloc_replica(cfg, &r) != 0) {
        sl_vsr_replica_close(r);
        return -1;
    }
    r->storage = *storage;
    r->bus = *bus;
    r->machine = *machine;
    r->quorum = cfg->replica_count / 2u + 1u;
    r->incarnation = vsr_nonce(r);
    sl_span_t rec = storage->read_state(storage->ctx);
    if (rec.len == 0) {
        /* No record: the disk was lost. Rejoin without voting. */
        r->wiped = true;
        r->status = SL_VSR_STATUS_RECOVERING;
        vsr_trace(r, "open: no state record (disk lost): rejoining");
        r->machine.reset(r->machine.ctx);
        for (uint32_t p = 0; p < cfg->journal_slots; p++) {
            uint32_t view;
            scan_slot(r, p, &view);
        }
        *out = r;
        return 0;
    }
    if (state_decode(r, rec) != 0) {
        sl_vsr_replica_close(r);
        return -1;
    }
    r->commit_min = r->checkpoint_op;
    if (!restore_checkpoint(r)) {
        /* A checkpoint that does not verify: its state comes from a peer. */
        r->syncing = true;
        r->commit_min = 0;
    }
    if (r->commit_max < r->checkpoint_op)
        r->commit_max = r->checkpoint_op;
    bool faulty = rebuild_log(r);
    r->view_at_open = r->view;
    r->log_view_at_open = r->log_view;
    *out = r;
    vsr_trace(r, "open: log_view %u op %llu commit %llu/%llu checkpoint %llu%s%s", r->log_view,
              (unsigned long long)r->op, (unsigned long long)r->commit_min,
              (unsigned long long)r->commit_max, (unsigned long long)r->checkpoint_op,
              faulty ? " faulty slots: recovering" : "",
              r->syncing ? " checkpoint lost: syncing" : "");
    if (faulty) {
        /* A faulty slot may hide an op above the head that this replica
         * acknowledged: it may not vote until a StartView names its log. */
        r->status = SL_VSR_STATUS_RECOVERING;
    } else if (r->view > r->log_view) {
        r->status = SL_VSR_STATUS_VIEW_CHANGE;
        r->svc_votes = 1u << cfg->replica;
        r->view_change_tick = 0;
    } else if (vsr_primary_of(r, r->view) == cfg->replica && cfg->replica_count > 1) {
        /* A restarted primary lost its pipeline's acks: the next view's
         * primary takes over. */
        r->status = SL_VSR_STATUS_NORMAL;
        vsr_start_view_change(r, r->view + 1);
    } else {
        r->status = SL_VSR_STATUS_NORMAL;
    }
    return 0;
}

/* --- inputs
 * ------------------------------------------------------------------------------------------- */

void sl_vsr_replica_set_late_relay(sl_vsr_replica_t *r, bool late)
{
    /* A write already marked relays when it is done, whatever is set now. */
    r->cfg.late_relay = late;
}

void sl_vsr_replica_write_done(sl_vsr_replica_t *r, uint32_t slot, bool ok)
{
    sl_assert(slot < r->cfg.journal_slots);
    vsr_slot_t *s = &r->slots[slot];
    if (!s->writing)
        return;
    s->writing = false;
    bool relay = s->relay_after_write;
    s->relay_after_write = false;
    if (!ok) {
        s->state = SLOT_FAULTY;
        /* Relaying is not acknowledging: the next replica gets it anyway. */
        if (relay)
            vsr_relay_kept(r, s->writing_op, s->writing_identity);
        vsr_apply_committed(r);
        return;
    }
    s->state = SLOT_VALID;
    s->op = s->writing_op;
    s->identity = s->writing_identity;
    s->view = s->writing_view;
    vsr_on_written(r, s->op);
    if (relay)
        vsr_relay_kept(r, s->op, s->identity);
    /* What a prepare's frame taught a backup committed is applied here,
     * after its PrepareOk went out (sl_vsr_replica_on_frame). */
    vsr_apply_committed(r);
}

static void dispatch(sl_vsr_replica_t *r, const sl_vsr_frame_t *f, const uint8_t *raw)
{
    switch (f->h.command) {
    case SL_VSR_PREPARE:
        vsr_on_prepare(r, f, raw);
        break;
    case SL_VSR_PREPARE_OK:
        vsr_on_prepare_ok(r, f);
        break;
    case SL_VSR_COMMIT:
        vsr_on_commit(r, f);
        break;
    case SL_VSR_START_VIEW_CHANGE:
        vsr_on_start_view_change(r, f);
        break;
    case SL_VSR_DO_VIEW_CHANGE:
        vsr_on_do_view_change(r, f);
        break;
    case SL_VSR_START_VIEW:
        vsr_on_start_view(r, f);
        break;
    case SL_VSR_REQUEST_START_VIEW:
        vsr_on_request_start_view(r, f);
        break;
    case SL_VSR_REQUEST_PREPARES:
        vsr_on_request_prepares(r, f);
        break;
    case SL_VSR_REPAIR_PREPARE:
        vsr_on_repair_prepare(r, f, raw);
        break;
    case SL_VSR_REPAIR_DONE:
    case SL_VSR_RANGE_EVICTED:
        vsr_on_repair_end(r, f);
        break;
    case SL_VSR_REQUEST_STATE_TRANSFER:
        vsr_on_request_state(r, f);
        break;
    case SL_VSR_STATE_TRANSFER_TARGET:
        vsr_on_state_target(r, f);
        break;
    case SL_VSR_REQUEST_STATE_CHUNK:
        vsr_on_request_chunk(r, f);
        break;
    case SL_VSR_STATE_CHUNK:
        vsr_on_state_chunk(r, f);
        break;
    default:
        r->frames_dropped++; /* handshake and Forward frames are the host's */
        break;
    }
}

void vsr_send_bytes(sl_vsr_replica_t *r, uint8_t to, const uint8_t *frame, size_t len)
{
    sl_assert(to < r->cfg.replica_count && to != r->cfg.replica);
    r->bus.send(r->bus.ctx, to, frame, (uint32_t)len);
}

void sl_vsr_replica_on_frame(sl_vsr_replica_t *r, const uint8_t *frame, size_t len)
{
    sl_vsr_frame_t f;
    uint64_t group;
    if (sl_vsr_frame_decode(frame, len, r->cfg.frame_max, &f) != SL_VSR_OK ||
        !sl_u128_eq(f.h.cluster, r->cfg.cluster) || !sl_vsr_frame_group(&f, &group) ||
        group != r->cfg.group || f.h.replica >= r->cfg.replica_count) {
        r->frames_dropped++;
        return;
    }
    /* A Prepare's `replica` is the primary that built it (the identity
     * covers it), so a prepare of this replica's own may come back from a
     * later primary or a repair; every other frame names its sender. */
    bool prepare = f.h.command == SL_VSR_PREPARE || f.h.command == SL_VSR_REPAIR_PREPARE;
    if (!prepare && f.h.replica == r->cfg.replica) {
        r->frames_dropped++;
        return;
    }
    /* A backup that handed a prepare of this frame to its journal applies
     * the ops the frame taught it committed once that write completes
     * (sl_vsr_replica_write_done), after its PrepareOk: the primary waits
     * on the acknowledgement, not on this replica's apply. */
    uint64_t writes = r->journal_writes;
    dispatch(r, &f, frame);
    if (r->journal_writes == writes || vsr_is_primary(r))
        vsr_apply_committed(r);
}

void sl_vsr_replica_tick(sl_vsr_replica_t *r, uint64_t realtime_us)
{
    r->ticks++;
    r->realtime_us = realtime_us;
    switch (r->status) {
    case SL_VSR_STATUS_NORMAL:
        vsr_tick_normal(r);
        break;
    case SL_VSR_STATUS_VIEW_CHANGE:
        vsr_tick_view_change(r);
        break;
    case SL_VSR_STATUS_RECOVERING:
        vsr_tick_recovering(r);
        break;
    }
    vsr_tick_repair(r);
    vsr_tick_sync(r);
    vsr_apply_committed(r);
}

/* --- observation
 * ------------------------------------------------------------------------------------------ */

void sl_vsr_replica_info(const sl_vsr_replica_t *r, sl_vsr_info_t *out)
{
    out->status = r->status;
    out->primary = r->status == SL_VSR_STATUS_NORMAL &&
                   (uint8_t)(r->view % r->cfg.replica_count) == r->cfg.replica;
    out->syncing = r->syncing;
    out->wiped = r->wiped;
    out->view = r->view;
    out->log_view = r->log_view;
    out->op = r->op;
    out->commit_min = r->commit_min;
    out->commit_max = r->commit_max;
    out->checkpoint_op = r->checkpoint_op;
    out->frames_dropped = r->frames_dropped;
    out->primary_index = vsr_primary_of(r, r->view);
    out->prepares_refused = r->prepares_refused;
    out->requests_refused = r->requests_refused;
}

void sl_vsr_replica_entry(sl_vsr_replica_t *r, uint64_t op, sl_vsr_entry_info_t *out)
{
    const vsr_slot_t *s = vsr_slot(r, op);
    out->known = vsr_known(r, op);
    out->canonical = out->known && vsr_entry(r, op)->canonical;
    out->present = vsr_present(r, op);
    out->slot = s->state;
    out->slot_op = s->op;
    out->identity = out->known ? vsr_entry(r, op)->identity : (sl_u128_t){0, 0};
}

const char *sl_vsr_status_name(sl_vsr_status_t s)
{
    switch (s) {
    case SL_VSR_STATUS_NORMAL:
        return "normal";
    case SL_VSR_STATUS_VIEW_CHANGE:
        return "view_change";
    case SL_VSR_STATUS_RECOVERING:
        return "recovering";
    }
    return "?";
}
