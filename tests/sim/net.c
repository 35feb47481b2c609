/* The simulated network: a min-heap of packets by delivery tick. Every
 * packet may be lost, delayed (which reorders), or duplicated, and links may
 * be cut one way or both (sim.c schedules partitions). */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void net_init(net_t *n)
{
    memset(n, 0, sizeof(*n));
}

void net_free(net_t *n)
{
    for (size_t i = 0; i < n->len; i++)
        free(n->heap[i].data);
    free(n->heap);
    memset(n, 0, sizeof(*n));
}

static bool before(const packet_t *a, const packet_t *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void push(net_t *n, packet_t p)
{
    if (n->len == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 256;
        n->heap = realloc(n->heap, n->cap * sizeof(*n->heap));
        sl_assert(n->heap != NULL);
    }
    size_t i = n->len++;
    n->heap[i] = p;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&n->heap[i], &n->heap[parent]))
            break;
        packet_t t = n->heap[i];
        n->heap[i] = n->heap[parent];
        n->heap[parent] = t;
        i = parent;
    }
}

bool net_pop(net_t *n, uint64_t tick, packet_t *out)
{
    if (n->len == 0 || n->heap[0].at > tick)
        return false;
    *out = n->heap[0];
    n->heap[0] = n->heap[--n->len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n->len && before(&n->heap[l], &n->heap[m]))
            m = l;
        if (r < n->len && before(&n->heap[r], &n->heap[m]))
            m = r;
        if (m == i)
            break;
        packet_t t = n->heap[i];
        n->heap[i] = n->heap[m];
        n->heap[m] = t;
        i = m;
    }
    return true;
}

static void enqueue(sim_t *s, uint8_t from, uint8_t to, const uint8_t *data, uint32_t len)
{
    net_t *n = &s->net;
    packet_t p = {.from = from, .to = to, .len = len, .seq = n->seq++};
    p.at = s->tick + prng_range(&s->prng, n->delay_min, n->delay_max);
    p.data = malloc(len ? len : 1);
    sl_assert(p.data != NULL);
    memcpy(p.data, data, len);
    push(n, p);
}

void net_send(sim_t *s, uint8_t from, uint8_t to, const uint8_t *data, uint32_t len)
{
    net_t *n = &s->net;
    n->sent++;
    if (n->blocked[from][to] || prng_chance(&s->prng, n->loss_ppm)) {
        n->dropped++;
        return;
    }
    enqueue(s, from, to, data, len);
    if (prng_chance(&s->prng, n->dup_ppm))
        enqueue(s, from, to, data, len);
}
