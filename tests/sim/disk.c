/* One replica's simulated storage (src/vsr/replica.h, sl_vsr_storage_t).
 *
 * The journal is a ring of slots with one write in flight per slot; a write
 * completes after a random latency. A crash resolves every write in flight:
 * it landed (the completion was lost), it was lost, or, on a fault-prone
 * disk, it tore (a prefix of the new bytes over the old). Fault-prone disks
 * also get bytes flipped at rest (journal entries and checkpoint artifacts)
 * and may be wiped while their replica is down. The state record is written
 * whole and atomically, as the interface requires. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static uint8_t *copy_bytes(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    sl_assert(c != NULL);
    if (n)
        memcpy(c, p, n);
    return c;
}

void disk_init(disk_t *d, sim_t *s, uint8_t replica, uint32_t slots, bool fault_prone)
{
    memset(d, 0, sizeof(*d));
    d->sim = s;
    d->replica = replica;
    d->slots_count = slots;
    d->slots = calloc(slots, sizeof(*d->slots));
    sl_assert(d->slots != NULL);
    d->fault_prone = fault_prone;
}

static void free_artifacts(disk_artifacts_t *a)
{
    free(a->bytes[0]);
    free(a->bytes[1]);
    memset(a, 0, sizeof(*a));
}

void disk_wipe(disk_t *d)
{
    for (uint32_t i = 0; i < d->slots_count; i++) {
        free(d->slots[i].data);
        free(d->slots[i].pdata);
        memset(&d->slots[i], 0, sizeof(d->slots[i]));
    }
    free(d->state);
    d->state = NULL;
    d->state_len = 0;
    for (int i = 0; i < SIM_ARTIFACT_SETS; i++)
        free_artifacts(&d->artifacts[i]);
}

void disk_free(disk_t *d)
{
    disk_wipe(d);
    free(d->slots);
    d->slots = NULL;
}

static void write_prepare(void *ctx, uint32_t slot, const uint8_t *frame, uint32_t size)
{
    disk_t *d = ctx;
    sl_assert(slot < d->slots_count);
    disk_slot_t *s = &d->slots[slot];
    sl_assert(!s->pending); /* the replica never has two writes on one slot */
    s->pending = true;
    s->pdata = copy_bytes(frame, size);
    s->plen = size;
    s->done_at = d->sim->tick + prng_range(&d->sim->prng, 1, 4);
}

static sl_span_t read_prepare(void *ctx, uint32_t slot)
{
    disk_t *d = ctx;
    sl_assert(slot < d->slots_count);
    disk_slot_t *s = &d->slots[slot];
    if (s->pending)
        return sl_span(s->pdata, s->plen);
    return sl_span(s->data, s->len);
}

static int write_state(void *ctx, sl_span_t record)
{
    disk_t *d = ctx;
    free(d->state);
    d->state = copy_bytes(record.ptr, record.len);
    d->state_len = record.len;
    return 0;
}

static sl_span_t read_state(void *ctx)
{
    disk_t *d = ctx;
    return sl_span(d->state, d->state_len);
}

static int write_artifacts(void *ctx, uint64_t op, sl_span_t snapshot, sl_span_t table)
{
    disk_t *d = ctx;
    /* Replace the oldest set: the last two stay readable. */
    disk_artifacts_t *victim = &d->artifacts[0];
    for (int i = 0; i < SIM_ARTIFACT_SETS; i++) {
        disk_artifacts_t *a = &d->artifacts[i];
        if (a->used && a->op == op) {
            victim = a;
            break;
        }
        if (!a->used || a->seq < victim->seq)
            victim = a;
    }
    free_artifacts(victim);
    victim->used = true;
    victim->op = op;
    victim->seq = ++d->artifact_seq;
    victim->bytes[0] = copy_bytes(snapshot.ptr, snapshot.len);
    victim->len[0] = snapshot.len;
    victim->bytes[1] = copy_bytes(table.ptr, table.len);
    victim->len[1] = table.len;
    return 0;
}

static sl_span_t read_artifact(void *ctx, uint64_t op, uint8_t kind)
{
    disk_t *d = ctx;
    if (kind > 1)
        return sl_span(NULL, 0);
    for (int i = 0; i < SIM_ARTIFACT_SETS; i++) {
        disk_artifacts_t *a = &d->artifacts[i];
        if (a->used && a->op == op)
            return sl_span(a->bytes[kind], a->len[kind]);
    }
    return sl_span(NULL, 0);
}

sl_vsr_storage_t disk_storage(disk_t *d)
{
    return (sl_vsr_storage_t){.ctx = d,
                              .write_prepare = write_prepare,
                              .read_prepare = read_prepare,
                              .write_state = write_state,
                              .read_state = read_state,
                              .write_artifacts = write_artifacts,
                              .read_artifact = read_artifact};
}

static void land(disk_slot_t *s)
{
    free(s->data);
    s->data = s->pdata;
    s->len = s->plen;
    s->pdata = NULL;
    s->plen = 0;
    s->pending = false;
}

void disk_complete(disk_t *d, sl_vsr_replica_t *r, uint64_t tick)
{
    for (uint32_t i = 0; i < d->slots_count; i++) {
        disk_slot_t *s = &d->slots[i];
        if (s->pending && s->done_at <= tick) {
            land(s);
            sl_vsr_replica_write_done(r, i, true);
        }
    }
}

void disk_crash(disk_t *d)
{
    prng_t *p = &d->sim->prng;
    for (uint32_t i = 0; i < d->slots_count; i++) {
        disk_slot_t *s = &d->slots[i];
        if (!s->pending)
            continue;
        uint64_t fate = prng_below(p, d->fault_prone ? 3 : 2);
        if (fate == 0) {
            land(s); /* written, but its completion never reached the replica */
        } else if (fate == 1) {
            free(s->pdata); /* lost */
            s->pdata = NULL;
            s->pending = false;
        } else {
            /* torn: a prefix of the new bytes, then whatever was there */
            uint32_t cut = (uint32_t)prng_below(p, s->plen);
            uint32_t len = s->plen > s->len ? s->plen : s->len;
            uint8_t *t = calloc(len ? len : 1, 1);
            sl_assert(t != NULL);
            if (s->len)
                memcpy(t, s->data, s->len);
            memcpy(t, s->pdata, cut);
            free(s->data);
            free(s->pdata);
            s->data = t;
            s->len = len;
            s->pdata = NULL;
            s->pending = false;
        }
    }
}

bool disk_corrupt(disk_t *d)
{
    prng_t *p = &d->sim->prng;
    if (prng_chance(p, 200000)) {
        disk_artifacts_t *a = &d->artifacts[prng_below(p, SIM_ARTIFACT_SETS)];
        int k = (int)prng_below(p, 2);
        if (!a->used || a->len[k] == 0)
            return false;
        a->bytes[k][prng_below(p, a->len[k])] ^= (uint8_t)prng_range(p, 1, 255);
        return true;
    }
    disk_slot_t *s = &d->slots[prng_below(p, d->slots_count)];
    if (s->len == 0)
        return false;
    s->data[prng_below(p, s->len)] ^= (uint8_t)prng_range(p, 1, 255);
    return true;
}
