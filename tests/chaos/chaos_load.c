/* The chaos run's load and checks (chaos.h). */
#include "chaos.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"

static const char *const topic_names[CHAOS_TOPICS] = {"durable", "plain"};

void chaos_pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A client logged in through some live node and settled on the leader
 * (libsluice's leader settlement), or NULL when no node takes a login now.
 * Refusals 57/58 are replayed by the library a few times (a 58 to a
 * metadata command settles again first), then returned; requests time out
 * after 5 s, so a request to a cut-off primary costs that much, then a
 * reconnect. */
static sl_client_t *open_client(chaos_load_t *load, uint64_t *rng)
{
    th_cluster_t *c = load->cluster;
    int start = (int)cu_rand_range(rng, 0, (uint64_t)c->count - 1);
    for (int k = 0; k < c->count; k++) {
        int i = (start + k) % c->count;
        sl_client_options_t o = {.connect_timeout_ms = 2000,
                                 .request_timeout_ms = 5000,
                                 .transient_retries = 5,
                                 .transient_delay_ms = 50};
        sl_client_t *client = NULL;
        if (sl_client_connect("127.0.0.1", c->nodes[i].tcp, &o, &client) != 0)
            continue;
        if (sl_client_login(client, "iggy", "iggy", NULL) == 0)
            return client;
        sl_client_close(client);
    }
    return NULL;
}

/* --- producers ------------------------------------------------------------------------- */

static void remember(chaos_producer_t *p, const sl_send_result_t *r, uint64_t first, uint32_t n)
{
    if (p->acked_count == p->acked_cap) {
        p->acked_cap = p->acked_cap ? 2 * p->acked_cap : 4096;
        p->acked = realloc(p->acked, p->acked_cap * sizeof(*p->acked));
        if (!p->acked)
            abort();
    }
    p->acked[p->acked_count++] = (chaos_batch_t){
        .partition = r->partition_id, .count = n, .base_offset = r->base_offset, .first = first};
}

/* Sends batches of 1..16 numbered messages, partitions in turn; a batch
 * that fails is sent again, the same messages, through a new client. */
static void *producer_main(void *arg)
{
    chaos_producer_t *p = arg;
    sl_client_t *client = NULL;
    uint32_t count = 1 + (uint32_t)cu_rand_range(&p->rng, 0, 15);
    while (!atomic_load(&p->load->stop)) {
        if (!client && !(client = open_client(p->load, &p->rng))) {
            chaos_pause_ms(100);
            continue;
        }
        uint32_t partition = (uint32_t)(p->batches % CHAOS_PARTITIONS);
        sl_send_result_t r;
        int rc = cu_send(client, sl_id_name(CHAOS_STREAM), sl_id_name(p->topic), partition, p->tag,
                         p->next_number, count, &r);
        if (rc == 0 && r.confirmed && r.messages_count == count && r.partition_id == partition) {
            remember(p, &r, p->next_number, count);
            atomic_fetch_add(&p->acks, 1);
            p->next_number += count;
            p->batches++;
            count = 1 + (uint32_t)cu_rand_range(&p->rng, 0, 15);
            chaos_pause_ms(5);
            continue;
        }
        atomic_fetch_add(&p->errors, 1);
        atomic_store(&p->last_error, rc ? rc : -SL_ERR_INVALID_FORMAT); /* unconfirmed reply */
        sl_client_close(client);
        client = NULL;
        chaos_pause_ms(50);
    }
    sl_client_close(client);
    return NULL;
}

/* --- the consumer group ---------------------------------------------------------------- */

static bool consumer_join(sl_client_t *client)
{
    return sl_client_join_consumer_group(client, sl_id_name(CHAOS_STREAM),
                                         sl_id_name(topic_names[0]), sl_id_name(CHAOS_GROUP)) == 0;
}

/* Polls each partition of the durable topic after the group's offset,
 * checks what it reads, and stores the last offset with a Quorum ack. */
static bool consume_once(chaos_consumer_t *k, sl_client_t *client, uint32_t partition)
{
    sl_polled_messages_t got;
    int rc = sl_client_poll_messages(client, sl_consumer_in_group(sl_id_name(CHAOS_GROUP)),
                                     sl_id_name(CHAOS_STREAM), sl_id_name(topic_names[0]),
                                     partition, sl_poll_next(), 64, false, &got);
    if (rc != 0 || got.resync_required)
        return false;
    if (got.count == 0)
        return true;
    for (uint32_t i = 0; i < got.count; i++) {
        uint64_t n;
        if (!cu_message_number(&got.messages[i], 1, &n))
            atomic_fetch_add(&k->malformed, 1);
    }
    atomic_fetch_add(&k->polled, got.count);
    uint64_t last = got.messages[got.count - 1].offset;
    rc = sl_client_store_consumer_offset(client, sl_consumer_in_group(sl_id_name(CHAOS_GROUP)),
                                         sl_id_name(CHAOS_STREAM), sl_id_name(topic_names[0]),
                                         partition, last, SL_ACK_LEVEL_QUORUM);
    if (rc != 0)
        return false;
    uint64_t seen = atomic_load(&k->committed[partition]);
    while (last + 1 > seen &&
           !atomic_compare_exchange_weak(&k->committed[partition], &seen, last + 1))
        ;
    atomic_fetch_add(&k->commits, 1);
    return true;
}

static void *consumer_main(void *arg)
{
    chaos_consumer_t *k = arg;
    uint64_t rng = 0x5eed;
    sl_client_t *client = NULL;
    for (uint64_t turn = 0; !atomic_load(&k->load->stop); turn++) {
        if (!client) {
            client = open_client(k->load, &rng);
            if (client && !consumer_join(client)) {
                sl_client_close(client);
                client = NULL;
            }
            if (!client) {
                chaos_pause_ms(100);
                continue;
            }
        }
        if (!consume_once(k, client, (uint32_t)(turn % CHAOS_PARTITIONS))) {
            atomic_fetch_add(&k->errors, 1);
            sl_client_close(client);
            client = NULL;
        }
        chaos_pause_ms(20);
    }
    sl_client_close(client);
    return NULL;
}

/* --- metadata writes ------------------------------------------------------------------- */

static void meta_name(uint64_t n, char out[32])
{
    snprintf(out, 32, "chaos-m-%" PRIu64, n);
}

/* One create (or, 8 numbers on, delete) until acknowledged; an earlier
 * try of unknown outcome makes "exists" (or "not found") the answer. */
static bool meta_step(chaos_meta_t *m, sl_client_t *client, uint64_t n, bool create)
{
    char name[32];
    meta_name(n, name);
    int rc = create ? sl_client_create_stream(client, name, NULL)
                    : sl_client_delete_stream(client, sl_id_name(name));
    if (create && (rc == 0 || rc == -SL_ERR_STREAM_NAME_ALREADY_EXISTS)) {
        m->state[n] |= CHAOS_META_CREATED;
        return true;
    }
    if (!create &&
        (rc == 0 || rc == -SL_ERR_STREAM_NAME_NOT_FOUND || rc == -SL_ERR_STREAM_ID_NOT_FOUND)) {
        m->state[n] |= CHAOS_META_DELETED;
        return true;
    }
    return false;
}

static void *meta_main(void *arg)
{
    chaos_meta_t *m = arg;
    uint64_t rng = 0x3e7a;
    sl_client_t *client = NULL;
    uint64_t n = m->number;
    bool deleting = m->deleting;
    while (!atomic_load(&m->load->stop) && n < CHAOS_META_MAX) {
        if (!client && !(client = open_client(m->load, &rng))) {
            chaos_pause_ms(100);
            continue;
        }
        uint64_t target = deleting ? n - 8 : n;
        if (deleting)
            m->state[target] |= CHAOS_META_DELETE_TRIED;
        else
            atomic_store(&m->next, n + 1);
        if (!meta_step(m, client, target, !deleting)) {
            atomic_fetch_add(&m->errors, 1);
            sl_client_close(client);
            client = NULL;
            chaos_pause_ms(50);
            continue;
        }
        atomic_fetch_add(&m->acks, 1);
        /* create n, then (from 8 on) delete n - 8, then the next n */
        if (deleting) {
            deleting = false;
            n++;
        } else if (n >= 8) {
            deleting = true;
        } else {
            n++;
        }
        chaos_pause_ms(100);
    }
    m->number = n;
    m->deleting = deleting;
    sl_client_close(client);
    return NULL;
}

/* --- start, stop, counts ----------------------------------------------------------------- */

/* A setup call retried through new clients until the leader takes it
 * (bounded: a minute of tries); `exists` is the answer of a retry whose
 * first try had already been applied. */
static bool setup_step(chaos_load_t *load, int what)
{
    uint64_t rng = 0x5e7;
    for (int attempt = 0; attempt < 600; attempt++) {
        sl_client_t *client = open_client(load, &rng);
        int rc = -1;
        if (client && what == 0) {
            rc = sl_client_create_stream(client, CHAOS_STREAM, NULL);
            rc = rc == -SL_ERR_STREAM_NAME_ALREADY_EXISTS ? 0 : rc;
        } else if (client && what <= CHAOS_TOPICS) {
            sl_topic_options_t opt = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC,
                                      .enforce_fsync = what == 1};
            rc = sl_client_create_topic(client, sl_id_name(CHAOS_STREAM), topic_names[what - 1],
                                        CHAOS_PARTITIONS, &opt, NULL);
            rc = rc == -SL_ERR_TOPIC_NAME_ALREADY_EXISTS ? 0 : rc;
        } else if (client) {
            rc = sl_client_create_consumer_group(client, sl_id_name(CHAOS_STREAM),
                                                 sl_id_name(topic_names[0]), CHAOS_GROUP, NULL);
            rc = rc == -SL_ERR_CONSUMER_GROUP_NAME_ALREADY_EXISTS ? 0 : rc;
        }
        sl_client_close(client);
        if (rc == 0)
            return true;
        chaos_pause_ms(100);
    }
    return false;
}

bool chaos_setup(chaos_load_t *load, th_cluster_t *c, uint64_t seed)
{
    memset(load, 0, sizeof(*load));
    load->cluster = c;
    for (int t = 0; t < CHAOS_TOPICS; t++) {
        load->producers[t].load = load;
        load->producers[t].topic = topic_names[t];
        load->producers[t].tag = (uint64_t)t + 1;
        load->producers[t].rng = seed ^ (0x9e37u * ((uint64_t)t + 1));
    }
    load->consumer.load = load;
    load->meta.load = load;
    for (int what = 0; what <= CHAOS_TOPICS + 1; what++)
        if (!setup_step(load, what))
            return false;
    return true;
}

void chaos_start(chaos_load_t *load)
{
    atomic_store(&load->stop, false);
    for (int t = 0; t < CHAOS_TOPICS; t++)
        if (pthread_create(&load->producers[t].thread, NULL, producer_main, &load->producers[t]))
            abort();
    if (pthread_create(&load->consumer.thread, NULL, consumer_main, &load->consumer) ||
        pthread_create(&load->meta.thread, NULL, meta_main, &load->meta))
        abort();
}

void chaos_stop(chaos_load_t *load)
{
    atomic_store(&load->stop, true);
    for (int t = 0; t < CHAOS_TOPICS; t++)
        pthread_join(load->producers[t].thread, NULL);
    pthread_join(load->consumer.thread, NULL);
    pthread_join(load->meta.thread, NULL);
}

uint64_t chaos_acks(chaos_load_t *load, uint64_t *messages, uint64_t *meta, uint64_t *offsets)
{
    *messages = 0;
    for (int t = 0; t < CHAOS_TOPICS; t++)
        *messages += atomic_load(&load->producers[t].acks);
    *meta = atomic_load(&load->meta.acks);
    *offsets = atomic_load(&load->consumer.commits);
    return *messages + *meta + *offsets;
}

/* --- the checks -------------------------------------------------------------------------- */

/* The numbers of one partition's messages by offset, as the leader serves
 * them; UINT64_MAX where a message is not a numbered one of the topic. */
typedef struct held {
    uint64_t *numbers;
    uint64_t count;
} held_t;

/* Reads partition p of topic t from offset 0 in polls of 1000, counting
 * gaps (an offset other than the next expected one) and foreign messages. */
static bool read_partition(sl_client_t *client, int t, uint32_t p, held_t *h, chaos_result_t *out)
{
    uint64_t cap = 4096;
    h->numbers = malloc(cap * sizeof(uint64_t));
    h->count = 0;
    for (int polls = 0; polls < 1000000 && h->numbers; polls++) {
        sl_polled_messages_t got;
        int rc = sl_client_poll_messages(client, sl_consumer_single(sl_id_num(1)),
                                         sl_id_name(CHAOS_STREAM), sl_id_name(topic_names[t]), p,
                                         sl_poll_offset(h->count), 1000, false, &got);
        if (rc != 0) {
            fprintf(stderr, "chaos: polling %s/%u at %" PRIu64 ": %s\n", topic_names[t], p,
                    h->count, sl_strerror(rc));
            return false;
        }
        if (got.count == 0)
            return true;
        for (uint32_t i = 0; i < got.count; i++) {
            const sl_polled_message_t *m = &got.messages[i];
            if (m->offset != h->count)
                out->gaps++;
            if (m->offset < h->count)
                continue; /* a duplicate offset: counted, not stored */
            while (m->offset >= cap && h->numbers) {
                cap *= 2;
                h->numbers = realloc(h->numbers, cap * sizeof(uint64_t));
            }
            if (!h->numbers)
                break;
            for (uint64_t o = h->count; o < m->offset; o++)
                h->numbers[o] = UINT64_MAX; /* a gap: nothing there */
            uint64_t n;
            bool ours = cu_message_number(m, (uint64_t)t + 1, &n);
            out->foreign += !ours;
            h->numbers[m->offset] = ours ? n : UINT64_MAX;
            h->count = m->offset + 1;
        }
        out->partition_msgs += got.count;
    }
    return h->numbers != NULL;
}

static void check_messages(chaos_load_t *load, sl_client_t *client, bool verbose,
                           chaos_result_t *out)
{
    for (int t = 0; t < CHAOS_TOPICS; t++) {
        const chaos_producer_t *pr = &load->producers[t];
        for (uint32_t p = 0; p < CHAOS_PARTITIONS; p++) {
            held_t h = {0};
            bool read = read_partition(client, t, p, &h, out);
            uint64_t lost = 0, wrong = 0, low = UINT64_MAX, high = 0, acked_end = 0;
            for (size_t b = 0; b < pr->acked_count; b++) {
                const chaos_batch_t *a = &pr->acked[b];
                if (a->partition != p)
                    continue;
                for (uint32_t i = 0; i < a->count; i++) {
                    uint64_t o = a->base_offset + i;
                    bool gone = !read || o >= h.count || h.numbers[o] == UINT64_MAX;
                    bool other = !gone && h.numbers[o] != a->first + i;
                    lost += gone;
                    wrong += other;
                    low = gone || other ? (o < low ? o : low) : low;
                    high = gone || other ? (o > high ? o : high) : high;
                    acked_end = o + 1 > acked_end ? o + 1 : acked_end;
                }
            }
            /* Where the damage is: the tail (lost past what it holds) or within. */
            if (verbose && (lost || wrong))
                printf("  %s/%u: holds %" PRIu64 " messages, acknowledged up to offset %" PRIu64
                       "; %" PRIu64 " lost, %" PRIu64 " other bytes, at offsets %" PRIu64
                       "..%" PRIu64 "\n",
                       topic_names[t], p, h.count, acked_end, lost, wrong, low, high);
            out->lost += lost;
            out->wrong += wrong;
            free(h.numbers);
        }
        out->batches += pr->acked_count;
        for (size_t b = 0; b < pr->acked_count; b++)
            out->messages += pr->acked[b].count;
    }
}

/* The chaos-m-<n> streams node i lists, as a bitmap; false when it does
 * not answer. */
static bool meta_seen(th_cluster_t *c, int i, uint8_t *bits)
{
    memset(bits, 0, CHAOS_META_MAX / 8);
    sl_client_t *client = th_cluster_login(c, i);
    const sl_stream_t *items = NULL;
    uint32_t count = 0;
    bool ok = client && sl_client_get_streams(client, &items, &count) == 0;
    for (uint32_t k = 0; ok && k < count; k++) {
        unsigned long long n;
        char tail;
        if (sscanf(items[k].name, "chaos-m-%llu%c", &n, &tail) == 1 && n < CHAOS_META_MAX)
            bits[n / 8] |= (uint8_t)(1u << (n % 8));
    }
    sl_client_close(client);
    return ok;
}

static void check_meta(chaos_load_t *load, int leader, chaos_result_t *out)
{
    static uint8_t lead[CHAOS_META_MAX / 8], other[CHAOS_META_MAX / 8];
    th_cluster_t *c = load->cluster;
    const chaos_meta_t *m = &load->meta;
    if (!meta_seen(c, leader, lead)) {
        out->meta_lost = UINT64_MAX;
        return;
    }
    uint64_t tried = atomic_load(&m->next);
    for (uint64_t n = 0; n < tried && n < CHAOS_META_MAX; n++) {
        bool there = lead[n / 8] & (1u << (n % 8));
        out->meta_acked += (m->state[n] & CHAOS_META_CREATED) != 0;
        if ((m->state[n] & CHAOS_META_DELETED)
                ? there
                : ((m->state[n] & CHAOS_META_CREATED) && !(m->state[n] & CHAOS_META_DELETE_TRIED) &&
                   !there))
            out->meta_lost++;
    }
    /* Every live node converges on the leader's streams (a backup may be a
     * heartbeat behind: polled for up to a minute). */
    for (int i = 0; i < c->count; i++) {
        if (i == leader || !c->nodes[i].alive)
            continue;
        bool same = false;
        for (int polls = 0; polls < 600 && !same; polls++) {
            same = meta_seen(c, i, other) && memcmp(lead, other, sizeof(lead)) == 0;
            if (!same)
                chaos_pause_ms(100);
        }
        out->meta_diverged += !same;
    }
}

/* The group offsets node `leader` serves below an acknowledged store, now. */
static uint64_t offsets_back_once(chaos_load_t *load, int leader)
{
    sl_client_t *client = th_cluster_login(load->cluster, leader);
    if (!client)
        return CHAOS_PARTITIONS; /* no answer: nothing shown to stand */
    uint64_t back = 0;
    for (uint32_t p = 0; p < CHAOS_PARTITIONS; p++) {
        uint64_t acked = atomic_load(&load->consumer.committed[p]); /* offset + 1 */
        sl_consumer_offset_t got = {0};
        int rc = sl_client_get_consumer_offset(
            client, sl_consumer_in_group(sl_id_name(CHAOS_GROUP)), sl_id_name(CHAOS_STREAM),
            sl_id_name(topic_names[0]), p, &got);
        if (acked > 0 && (rc != 0 || !got.found || got.stored_offset + 1 < acked))
            back++;
    }
    sl_client_close(client);
    return back;
}

uint64_t chaos_check_offsets(chaos_load_t *load, int leader)
{
    /* Served from what the node applied, which may trail its commits by a
     * heartbeat: a shortfall counts only if it stays for 20 tries a second
     * apart. */
    uint64_t back = offsets_back_once(load, leader);
    for (int tries = 0; tries < 20 && back; tries++) {
        chaos_pause_ms(1000);
        back = offsets_back_once(load, leader);
    }
    return back;
}

/* The message checks against node i's answers. */
static void messages_on(chaos_load_t *load, int i, bool verbose, chaos_result_t *out)
{
    sl_client_t *client = th_cluster_login(load->cluster, i);
    if (client)
        check_messages(load, client, verbose, out);
    else
        out->lost = UINT64_MAX;
    sl_client_close(client);
}

void chaos_check(chaos_load_t *load, int leader, bool messages, chaos_result_t *out)
{
    memset(out, 0, sizeof(*out));
    /* A node serves polls from what it has applied, which may trail the
     * commits it acknowledged by a heartbeat: asked again, up to 20 times a
     * second apart, while something is missing (when the message checks
     * count; else they are printed as found). */
    for (int tries = 0; messages && tries < 20; tries++) {
        chaos_result_t x = {0};
        messages_on(load, leader, false, &x);
        if (!x.lost && !x.wrong && !x.gaps)
            break;
        chaos_pause_ms(1000);
    }
    messages_on(load, leader, true, out);
    /* Missing on the leader: lost to the cluster, or only to the leader's
     * replica? What each other node serves says. */
    for (int i = 0; messages && (out->lost || out->wrong) && i < load->cluster->count; i++) {
        if (i == leader || !load->cluster->nodes[i].alive)
            continue;
        chaos_result_t y = {0};
        messages_on(load, i, false, &y);
        printf("  node %d (a backup) serves them with %" PRIu64 " lost, %" PRIu64 " other bytes\n",
               i, y.lost, y.wrong);
    }
    out->offsets_back =
        messages ? chaos_check_offsets(load, leader) : offsets_back_once(load, leader);
    check_meta(load, leader, out);
}
