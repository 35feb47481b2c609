/* The in-memory storage of a consensus replica (server/vsr_memstore.h). */
#include "server/vsr_memstore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Checkpoints kept: the one in force and the one before it, which must stay
 * readable until a state record names the new one (replica.h). */
#define ARTIFACT_SETS 2

typedef struct slot {
    uint8_t *data;
    uint32_t len;
} slot_t;

typedef struct artifacts {
    bool used;
    uint64_t op;
    uint64_t seq; /* the oldest set is replaced */
    uint8_t *bytes[2];
    size_t len[2];
} artifacts_t;

struct sl_vsr_memstore {
    uint32_t slots_count;
    slot_t *slots;
    /* Completions not yet reported, oldest first; a slot has at most one
     * write in flight, so slots_count bounds them. */
    uint32_t *done;
    uint32_t done_head, done_count;
    uint8_t *state;
    size_t state_len;
    artifacts_t sets[ARTIFACT_SETS];
    uint64_t seq;
};

static uint8_t *copy_bytes(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (c && n)
        memcpy(c, p, n);
    return c;
}

int sl_vsr_memstore_create(uint32_t slots, sl_vsr_memstore_t **out)
{
    sl_vsr_memstore_t *ms = calloc(1, sizeof(*ms));
    if (!ms)
        return -ENOMEM;
    ms->slots_count = slots;
    ms->slots = calloc(slots, sizeof(*ms->slots));
    ms->done = calloc(slots, sizeof(*ms->done));
    if (!ms->slots || !ms->done) {
        sl_vsr_memstore_destroy(ms);
        return -ENOMEM;
    }
    *out = ms;
    return 0;
}

static void free_set(artifacts_t *a)
{
    free(a->bytes[0]);
    free(a->bytes[1]);
    memset(a, 0, sizeof(*a));
}

void sl_vsr_memstore_destroy(sl_vsr_memstore_t *ms)
{
    if (!ms)
        return;
    for (uint32_t i = 0; ms->slots && i < ms->slots_count; i++)
        free(ms->slots[i].data);
    for (int i = 0; i < ARTIFACT_SETS; i++)
        free_set(&ms->sets[i]);
    free(ms->slots);
    free(ms->done);
    free(ms->state);
    free(ms);
}

/* A write that cannot be copied leaves the slot empty: the replica reads it
 * as never written and repairs it. The completion is reported either way. */
static void write_prepare(void *ctx, uint32_t slot, const uint8_t *frame, uint32_t size)
{
    sl_vsr_memstore_t *ms = ctx;
    sl_assert(slot < ms->slots_count && ms->done_count < ms->slots_count);
    slot_t *s = &ms->slots[slot];
    free(s->data);
    s->data = copy_bytes(frame, size);
    s->len = s->data ? size : 0;
    ms->done[(ms->done_head + ms->done_count++) % ms->slots_count] = slot;
}

static sl_span_t read_prepare(void *ctx, uint32_t slot)
{
    sl_vsr_memstore_t *ms = ctx;
    sl_assert(slot < ms->slots_count);
    return sl_span(ms->slots[slot].data, ms->slots[slot].len);
}

static int write_state(void *ctx, sl_span_t record)
{
    sl_vsr_memstore_t *ms = ctx;
    uint8_t *copy = copy_bytes(record.ptr, record.len);
    if (!copy)
        return -ENOMEM; /* the old record stands */
    free(ms->state);
    ms->state = copy;
    ms->state_len = record.len;
    return 0;
}

static sl_span_t read_state(void *ctx)
{
    sl_vsr_memstore_t *ms = ctx;
    return sl_span(ms->state, ms->state_len);
}

static int write_artifacts(void *ctx, uint64_t op, sl_span_t snapshot, sl_span_t table)
{
    sl_vsr_memstore_t *ms = ctx;
    artifacts_t *victim = &ms->sets[0];
    for (int i = 0; i < ARTIFACT_SETS; i++) {
        artifacts_t *a = &ms->sets[i];
        if (a->used && a->op == op) {
            victim = a;
            break;
        }
        if (!a->used || a->seq < victim->seq)
            victim = a;
    }
    uint8_t *snap = copy_bytes(snapshot.ptr, snapshot.len);
    uint8_t *tab = copy_bytes(table.ptr, table.len);
    if (!snap || !tab) {
        free(snap);
        free(tab);
        return -ENOMEM;
    }
    free_set(victim);
    *victim = (artifacts_t){true, op, ++ms->seq, {snap, tab}, {snapshot.len, table.len}};
    return 0;
}

static sl_span_t read_artifact(void *ctx, uint64_t op, uint8_t kind)
{
    sl_vsr_memstore_t *ms = ctx;
    if (kind > SL_VSR_ARTIFACT_CLIENT_TABLE)
        return sl_span(NULL, 0);
    for (int i = 0; i < ARTIFACT_SETS; i++) {
        artifacts_t *a = &ms->sets[i];
        if (a->used && a->op == op)
            return sl_span(a->bytes[kind], a->len[kind]);
    }
    return sl_span(NULL, 0);
}

sl_vsr_storage_t sl_vsr_memstore_iface(sl_vsr_memstore_t *ms)
{
    return (sl_vsr_storage_t){.ctx = ms,
                              .write_prepare = write_prepare,
                              .read_prepare = read_prepare,
                              .write_state = write_state,
                              .read_state = read_state,
                              .write_artifacts = write_artifacts,
                              .read_artifact = read_artifact};
}

uint32_t sl_vsr_memstore_complete(sl_vsr_memstore_t *ms, sl_vsr_replica_t *r)
{
    uint32_t n = 0;
    /* Each report may journal more (a backup acknowledges, a primary
     * commits and prepares the next): bounded by what the ring can hold in
     * flight, twice over. */
    while (ms->done_count > 0 && n < 2 * ms->slots_count) {
        uint32_t slot = ms->done[ms->done_head];
        ms->done_head = (ms->done_head + 1) % ms->slots_count;
        ms->done_count--;
        bool ok = ms->slots[slot].data != NULL;
        sl_vsr_replica_write_done(r, slot, ok);
        n++;
    }
    return n;
}
