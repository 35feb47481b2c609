/* kill -9 cycles against the real sluiced with everything running at once: several producer
 * connections send numbered batches to five partitions of two enforce_fsync topics (so batches
 * of different connections share a partition and its group commit), consumers commit offsets
 * the ways clients do (a single consumer with poll auto-commit, one storing offsets itself, a
 * two-member consumer group with auto-commit, a one-member group storing offsets), and a
 * metadata client creates and deletes streams, with checkpoints every few operations. At a
 * random moment the server is SIGKILLed; some cycles also kill it again while it recovers.
 * After each restart:
 *   - every acknowledged message, and every message a consumer saw, is at its offset byte
 *     for byte; offsets of each partition are contiguous from 0; each batch in flight at the
 *     kill is there whole or not at all; no message is stored twice;
 *   - no acknowledged consumer offset went back, none points past its partition's end, and
 *     an offset whose store was in flight is the old value or the new one;
 *   - acknowledged stream creations and deletions hold;
 *   - no consumer-group member outlives the kill for good (released 1.2 x heartbeat.interval
 *     after the restart, every connection having died with the process);
 *   - within each cycle every group poll continued exactly where the group's offset stood.
 *
 * Every random choice (batch sizes, partitions, kill delays, start-up kills) comes from one seed
 * printed first: SLUICE_CRASH_SEED=<seed> replays the schedule (thread timing still varies).
 * SLUICE_KILL9_CYCLES sets the number of cycles (10 by default, 100 with SLUICE_SOAK set, as
 * `make soak` does). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "crash_util.h"
#include "harness.h"

#define CYCLES_DEFAULT 10u
#define CYCLES_SOAK    100u
#define KILL_MIN_MS    30u
#define KILL_MAX_MS    400u
/* One cycle in this many also kills the server while it starts (recovery), 0..STARTUP_KILL_MS
 * after exec. */
#define STARTUP_KILL_ONE_IN 3u
#define STARTUP_KILL_MS     40u
#define BATCH_MAX           40u
#define POLL_MAX            100u
/* Messages a partition may receive over the whole run: bounds the time each check takes. */
#define SLOT_MESSAGES_MAX 100000u
#define PRODUCERS         3u
/* Message numbers: producer p sends p * NUMBER_SPAN + 0, 1, 2, ... (ten digits in the payload). */
#define NUMBER_SPAN 1000000000ull
/* Streams the metadata client keeps (created, not deleted) at most, and names it may use. */
#define META_LIVE_MAX 12u
#define META_NAMES    100000u
/* A worker that has not been killed after this many requests has a runaway loop. */
#define WORKER_STEPS_MAX 10000000u

static const char *const stream = "cycles";
static const char *const group_names[2] = {"g1", "g2"};

static th_server_t srv;
static char token[128];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

static void start_or_skip(const th_options_t *o)
{
    if (!th_start(&srv, o)) {
        fprintf(stderr, "io_uring unavailable: skipped\n");
        exit(77);
    }
}

/* --- partitions ("slots") and what each must hold --------------------------------------- */

typedef struct slot {
    const char *topic;
    uint32_t partition;
    pthread_mutex_t mu;
    /* known[o]: the number of the message at offset o, or UNKNOWN. Known once acknowledged,
     * once a consumer saw it, or once a check after a restart read it. */
    uint64_t *known;
    uint64_t *read;    /* scratch of a check */
    uint64_t reserved; /* offsets producers may still fill: stored + what is in flight */
    uint64_t stored;   /* messages the last check found */
} slot_t;

#define UNKNOWN  UINT64_MAX
#define SLOTS    5u
#define SLOT_CAP (SLOT_MESSAGES_MAX + PRODUCERS * BATCH_MAX)

static slot_t slots[SLOTS] = {
    {.topic = "a", .partition = 0}, {.topic = "a", .partition = 1}, {.topic = "a", .partition = 2},
    {.topic = "b", .partition = 0}, {.topic = "b", .partition = 1},
};

static void slot_learn(slot_t *s, uint64_t offset, uint64_t number)
{
    pthread_mutex_lock(&s->mu);
    if (offset < SLOT_CAP && s->known[offset] == UNKNOWN)
        s->known[offset] = number;
    pthread_mutex_unlock(&s->mu);
}

/* The number known at offset (UNKNOWN when none). */
static uint64_t slot_known(slot_t *s, uint64_t offset)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = offset < SLOT_CAP ? s->known[offset] : UNKNOWN;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* --- consumers ---------------------------------------------------------------------------- */

enum { C_AUTO, C_STORE, G_AUTO, G_STORE, CONSUMERS };

typedef struct range {
    uint64_t first, last;
} range_t;

typedef struct consumer_model {
    const char *name;
    bool group;
    bool explicit_store;
    uint32_t first_slot, slots_count; /* the slots it reads */
    sl_consumer_ref_t ref;
    pthread_mutex_t mu;
    /* Per slot: the stored offset everyone agreed on (-1: none), the store in flight at the
     * kill (-1: none), and the polls of this cycle (groups: any member's). */
    int64_t floor[SLOTS];
    int64_t pending[SLOTS];
    int64_t cycle_start[SLOTS];
    range_t *ranges[SLOTS];
    uint32_t ranges_count[SLOTS];
    uint32_t ranges_cap[SLOTS];
    uint64_t commits; /* acknowledged stores and auto-committing polls with messages */
} consumer_model_t;

static consumer_model_t consumers[CONSUMERS];

static void consumers_init(void)
{
    consumers[C_AUTO] = (consumer_model_t){.name = "single/auto",
                                           .first_slot = 0,
                                           .slots_count = 5,
                                           .ref = sl_consumer_single(sl_id_num(1001))};
    consumers[C_STORE] = (consumer_model_t){.name = "single/store",
                                            .explicit_store = true,
                                            .first_slot = 0,
                                            .slots_count = 5,
                                            .ref = sl_consumer_single(sl_id_num(1002))};
    consumers[G_AUTO] = (consumer_model_t){.name = "group g1/auto",
                                           .group = true,
                                           .first_slot = 0,
                                           .slots_count = 3,
                                           .ref = sl_consumer_in_group(sl_id_name("g1"))};
    consumers[G_STORE] = (consumer_model_t){.name = "group g2/store",
                                            .group = true,
                                            .explicit_store = true,
                                            .first_slot = 3,
                                            .slots_count = 2,
                                            .ref = sl_consumer_in_group(sl_id_name("g2"))};
    for (int c = 0; c < CONSUMERS; c++) {
        pthread_mutex_init(&consumers[c].mu, NULL);
        for (uint32_t i = 0; i < SLOTS; i++)
            consumers[c].floor[i] = consumers[c].pending[i] = consumers[c].cycle_start[i] = -1;
    }
}

static void range_add(consumer_model_t *cm, uint32_t slot, uint64_t first, uint64_t last)
{
    pthread_mutex_lock(&cm->mu);
    if (cm->ranges_count[slot] == cm->ranges_cap[slot]) {
        uint32_t cap = cm->ranges_cap[slot] ? 2 * cm->ranges_cap[slot] : 64;
        range_t *r = realloc(cm->ranges[slot], cap * sizeof(*r));
        if (!r)
            abort();
        cm->ranges[slot] = r;
        cm->ranges_cap[slot] = cap;
    }
    cm->ranges[slot][cm->ranges_count[slot]++] = (range_t){first, last};
    if ((int64_t)last > cm->floor[slot])
        cm->floor[slot] = (int64_t)last;
    cm->commits++;
    pthread_mutex_unlock(&cm->mu);
}

/* --- metadata: streams created and deleted ----------------------------------------------- */

enum { M_NONE, M_PRESENT, M_ABSENT, M_PENDING_CREATE, M_PENDING_DELETE };

typedef struct meta_model {
    uint8_t state[META_NAMES];
    uint32_t next; /* the next name to create */
    uint32_t live;
    uint64_t acked;
} meta_model_t;

static meta_model_t meta;

/* --- workers ------------------------------------------------------------------------------ */

enum { W_PRODUCER, W_CONSUMER, W_META };

typedef struct worker {
    int role;
    uint32_t index; /* producer number, consumer model index */
    uint64_t rng;
    pthread_t thread;
    sl_client_t *c;
    bool failed;
    char error[1024];
    /* producers: the batch in flight when the connection died */
    bool pending;
    uint32_t pending_slot;
    uint64_t pending_first;
    uint32_t pending_count;
    uint64_t acked_batches;
} worker_t;

/* Message numbers are never reused across cycles. */
static uint64_t producer_next[PRODUCERS];

static atomic_bool killed;
static pthread_barrier_t ready;

__attribute__((format(printf, 2, 3))) static void wfail(worker_t *w, const char *fmt, ...)
{
    if (w->failed)
        return;
    w->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof(w->error), fmt, ap);
    va_end(ap);
}

/* What a lockstep client reports when the server dies under a request. */
static bool transport_error(int rc)
{
    return rc == -SL_ERR_CONNECTION_CLOSED || rc == -SL_ERR_DISCONNECTED ||
           rc == -SL_ERR_EMPTY_RESPONSE || rc == -SL_ERR_NOT_CONNECTED;
}

/* A failed call: the end of the worker's cycle when the kill caused it, a failure otherwise.
 * Returns true either way (the worker stops). */
static bool call_failed(worker_t *w, int rc, const char *what)
{
    if (!atomic_load(&killed) || !transport_error(rc))
        wfail(w, "%s: %d (%s) before the kill", what, rc, sl_strerror(rc));
    return true;
}

static bool worker_connect(worker_t *w)
{
    sl_client_options_t o = {.request_timeout_ms = 30000};
    int rc = sl_client_connect("127.0.0.1", srv.port, &o, &w->c);
    if (rc == 0) {
        rc = sl_client_login_token(w->c, token, NULL);
        if (rc != 0)
            wfail(w, "login with the token: %d (%s)", rc, sl_strerror(rc));
    } else {
        wfail(w, "connect: %d (%s)", rc, sl_strerror(rc));
    }
    return rc == 0;
}

/* Producers and the metadata client run out of work before the kill: wait for it. */
static void wait_for_kill(worker_t *w)
{
    for (int i = 0; i < 120000 && !atomic_load(&killed); i++)
        sleep_ms(1);
    if (!atomic_load(&killed))
        wfail(w, "not killed within two minutes");
}

/* One batch to a random partition with room; false when the worker stops. */
static bool produce_one(worker_t *w)
{
    uint32_t count = (uint32_t)cu_rand_range(&w->rng, 1, BATCH_MAX);
    uint32_t si = (uint32_t)cu_rand_range(&w->rng, 0, SLOTS - 1);
    slot_t *s = NULL;
    for (uint32_t k = 0; k < SLOTS && !s; k++) {
        slot_t *t = &slots[(si + k) % SLOTS];
        pthread_mutex_lock(&t->mu);
        if (t->reserved + count <= SLOT_MESSAGES_MAX) {
            t->reserved += count;
            s = t;
        }
        pthread_mutex_unlock(&t->mu);
    }
    if (!s) {
        wait_for_kill(w);
        return false;
    }
    uint64_t first = w->index * NUMBER_SPAN + producer_next[w->index];
    producer_next[w->index] += count;
    w->pending = true;
    w->pending_slot = (uint32_t)(s - slots);
    w->pending_first = first;
    w->pending_count = count;
    sl_send_result_t r;
    int rc =
        cu_send(w->c, sl_id_name(stream), sl_id_name(s->topic), s->partition, 1, first, count, &r);
    if (rc != 0)
        return !call_failed(w, rc, "send");
    w->pending = false;
    if (!r.confirmed || r.partition_id != s->partition)
        wfail(w, "send to %s/%u: confirmed %d, partition %u", s->topic, s->partition, r.confirmed,
              r.partition_id);
    for (uint32_t i = 0; i < count; i++)
        slot_learn(s, r.base_offset + i, first + i);
    w->acked_batches++;
    return !w->failed;
}

/* Checks a poll's messages against the slot and the model; true when they are right. */
static bool check_polled(worker_t *w, slot_t *s, const sl_polled_messages_t *out, uint64_t first)
{
    for (uint32_t i = 0; i < out->count; i++) {
        const sl_polled_message_t *m = &out->messages[i];
        uint64_t n;
        if (m->offset != first + i) {
            wfail(w, "%s/%u: polled offset %" PRIu64 " where %" PRIu64 " must be", s->topic,
                  s->partition, m->offset, first + i);
            return false;
        }
        if (!cu_message_number(m, 1, &n)) {
            wfail(w, "%s/%u offset %" PRIu64 ": not a message any producer sent", s->topic,
                  s->partition, m->offset);
            return false;
        }
        uint64_t want = slot_known(s, m->offset);
        if (want != UNKNOWN && want != n) {
            wfail(w, "%s/%u offset %" PRIu64 ": message %" PRIu64 ", acknowledged was %" PRIu64,
                  s->topic, s->partition, m->offset, n, want);
            return false;
        }
        /* Polls only see durable messages: a restart must keep this one. */
        slot_learn(s, m->offset, n);
    }
    return true;
}

/* Appends the members of the consumer's group and their partitions, as the server lists them
 * now, to out. */
static void describe_members(worker_t *w, consumer_model_t *cm, char *out, size_t cap)
{
    const sl_consumer_group_t *g = NULL;
    const char *topic = slots[cm->first_slot].topic;
    int rc = sl_client_get_consumer_group(w->c, sl_id_name(stream), sl_id_name(topic),
                                          sl_id_name(group_names[cm == &consumers[G_STORE]]), &g);
    size_t len = strlen(out);
    if (rc != 0 || g == NULL) {
        snprintf(out + len, cap - len, "; GetConsumerGroup: %d", rc);
        return;
    }
    len += (size_t)snprintf(out + len, cap - len, "; group id %u, members", g->id);
    for (uint32_t i = 0; i < g->members_count && len < cap; i++) {
        const sl_consumer_group_member_t *m = &g->members[i];
        len += (size_t)snprintf(out + len, cap - len, " %u:[", m->id);
        for (uint32_t k = 0; k < m->partitions_count && len < cap; k++)
            len += (size_t)snprintf(out + len, cap - len, k ? ",%u" : "%u", m->partitions[k]);
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "]");
    }
}

/* Within a cycle a group's offset only grows (auto-commit never goes back), so a poll with
 * Next that starts at or below where the group stood when the cycle began is wrong the moment
 * it is answered. Reported at once, while the server still runs, with what the server says
 * now (check_ranges, after the kill, could only say that it happened). */
static void group_poll_went_back(worker_t *w, consumer_model_t *cm, uint32_t si,
                                 const sl_polled_messages_t *out, uint64_t first, uint64_t last)
{
    slot_t *s = &slots[si];
    pthread_mutex_lock(&cm->mu);
    int64_t start = cm->cycle_start[si];
    pthread_mutex_unlock(&cm->mu);
    if (start < 0 || first > (uint64_t)start)
        return;
    char detail[400] = "";
    sl_consumer_offset_t off;
    int rc = sl_client_get_consumer_offset(w->c, cm->ref, sl_id_name(stream), sl_id_name(s->topic),
                                           s->partition, &off);
    if (rc != 0)
        snprintf(detail, sizeof(detail), "GetConsumerOffset now: %d", rc);
    else if (!off.found)
        snprintf(detail, sizeof(detail), "GetConsumerOffset now: none stored");
    else
        snprintf(detail, sizeof(detail),
                 "GetConsumerOffset now: %" PRIu64 " (partition %u, current %" PRIu64 ")",
                 off.stored_offset, off.partition_id, off.current_offset);
    const sl_client_info_t *me = NULL;
    size_t len = strlen(detail);
    if (sl_client_get_me(w->c, &me) == 0 && me)
        snprintf(detail + len, sizeof(detail) - len, "; this member is client %u", me->client_id);
    describe_members(w, cm, detail, sizeof(detail));
    wfail(w,
          "%s on %s/%u: a poll with Next read %" PRIu64 "..%" PRIu64 " where the group stood at "
          "%" PRId64 " when the cycle began (reply: partition %u, current offset %" PRIu64 "); %s",
          cm->name, s->topic, s->partition, first, last, start, out->partition_id,
          out->current_offset, detail);
}

/* A consumer's next step on one slot; false when the worker stops. */
static bool consume_slot(worker_t *w, consumer_model_t *cm, uint32_t si, bool *resync)
{
    slot_t *s = &slots[si];
    uint32_t count = (uint32_t)cu_rand_range(&w->rng, 1, POLL_MAX);
    pthread_mutex_lock(&cm->mu);
    uint64_t from = (uint64_t)(cm->floor[si] + 1);
    pthread_mutex_unlock(&cm->mu);
    sl_polled_messages_t out;
    sl_poll_strategy_t how = cm->explicit_store ? sl_poll_offset(from) : sl_poll_next();
    int rc = sl_client_poll_messages(w->c, cm->ref, sl_id_name(stream), sl_id_name(s->topic),
                                     s->partition, how, count, !cm->explicit_store, &out);
    if (rc != 0)
        return !call_failed(w, rc, "poll");
    if (out.resync_required) {
        *resync = true;
        return true;
    }
    if (out.count == 0)
        return true;
    uint64_t first = out.messages[0].offset;
    uint64_t last = first + out.count - 1;
    if (out.partition_id != s->partition) {
        wfail(w, "%s on %s/%u: the poll's reply is for partition %u (%u messages from %" PRIu64 ")",
              cm->name, s->topic, s->partition, out.partition_id, out.count, first);
        return false;
    }
    if (cm->group && !cm->explicit_store) {
        group_poll_went_back(w, cm, si, &out, first, last);
        if (w->failed)
            return false;
    }
    /* A single consumer is one thread: its polls continue exactly at its offset. Group polls
     * of two members are checked as ranges at the end of the cycle. */
    if (!cm->group && first != from) {
        wfail(w, "%s on %s/%u: poll started at %" PRIu64 ", the stored offset says %" PRIu64,
              cm->name, s->topic, s->partition, first, from);
        return false;
    }
    if (!check_polled(w, s, &out, first))
        return false;
    if (!cm->explicit_store) {
        range_add(cm, si, first, last);
        return true;
    }
    pthread_mutex_lock(&cm->mu);
    cm->pending[si] = (int64_t)last;
    pthread_mutex_unlock(&cm->mu);
    uint8_t ack = (uint8_t)cu_rand_range(&w->rng, SL_ACK_LEVEL_NONE, SL_ACK_LEVEL_QUORUM);
    rc = sl_client_store_consumer_offset(w->c, cm->ref, sl_id_name(stream), sl_id_name(s->topic),
                                         s->partition, last, ack);
    if (rc != 0)
        return !call_failed(w, rc, "store offset");
    range_add(cm, si, first, last);
    pthread_mutex_lock(&cm->mu);
    cm->pending[si] = -1;
    pthread_mutex_unlock(&cm->mu);
    return true;
}

/* Group members read the partitions their latest sync assigned. */
static bool group_sync(worker_t *w, consumer_model_t *cm, uint32_t *assigned, uint32_t *n)
{
    const slot_t *s0 = &slots[cm->first_slot];
    const sl_assignment_t *a = NULL;
    int rc = sl_client_sync_consumer_group(w->c, sl_id_name(stream), sl_id_name(s0->topic),
                                           sl_id_name(group_names[cm == &consumers[G_STORE]]), &a);
    if (rc != 0)
        return !call_failed(w, rc, "sync group");
    *n = 0;
    for (uint32_t i = 0; a && i < a->partitions_count && *n < SLOTS; i++)
        assigned[(*n)++] = cm->first_slot + a->partitions[i];
    return true;
}

static void *consumer_main(worker_t *w)
{
    consumer_model_t *cm = &consumers[w->index];
    uint32_t assigned[SLOTS], n = 0;
    if (cm->group) {
        const char *topic = slots[cm->first_slot].topic;
        int rc = sl_client_join_consumer_group(w->c, sl_id_name(stream), sl_id_name(topic),
                                               sl_id_name(group_names[w->index == G_STORE]));
        if (rc != 0 || !group_sync(w, cm, assigned, &n)) {
            if (rc != 0)
                call_failed(w, rc, "join group");
            return NULL;
        }
    } else {
        for (uint32_t i = 0; i < cm->slots_count; i++)
            assigned[n++] = cm->first_slot + i;
    }
    for (uint32_t step = 0; step < WORKER_STEPS_MAX; step++) {
        bool resync = n == 0;
        for (uint32_t i = 0; i < n && !resync; i++)
            if (!consume_slot(w, cm, assigned[i], &resync))
                return NULL;
        if (resync) {
            if (n == 0)
                sleep_ms(1);
            if (!group_sync(w, cm, assigned, &n))
                return NULL;
        }
    }
    wfail(w, "consumer not killed after %u rounds", WORKER_STEPS_MAX);
    return NULL;
}

static void meta_name(uint32_t k, char *out, size_t cap)
{
    snprintf(out, cap, "m-%u", k);
}

/* Creates the next stream, or deletes a live one; false when the worker stops. */
static bool meta_step(worker_t *w)
{
    char name[32];
    bool create = meta.live < META_LIVE_MAX / 2 ||
                  (meta.live < META_LIVE_MAX && cu_rand_range(&w->rng, 0, 1) == 0);
    uint32_t k = meta.next;
    if (!create) { /* the first live stream at or after a random name */
        uint32_t start = (uint32_t)cu_rand_range(&w->rng, 0, meta.next - 1);
        for (uint32_t i = 0; i < meta.next; i++) {
            k = (start + i) % meta.next;
            if (meta.state[k] == M_PRESENT)
                break;
        }
        if (meta.state[k] != M_PRESENT) {
            wfail(w, "the model counts %u live streams and finds none", meta.live);
            return false;
        }
    } else if (meta.next == META_NAMES) {
        wait_for_kill(w);
        return false;
    } else {
        meta.next++;
    }
    meta_name(k, name, sizeof(name));
    meta.state[k] = create ? M_PENDING_CREATE : M_PENDING_DELETE;
    int rc = create ? sl_client_create_stream(w->c, name, NULL)
                    : sl_client_delete_stream(w->c, sl_id_name(name));
    if (rc != 0)
        return !call_failed(w, rc, create ? "create stream" : "delete stream");
    meta.state[k] = create ? M_PRESENT : M_ABSENT;
    meta.live += create ? 1 : -1;
    meta.acked++;
    return true;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    bool ok = worker_connect(w);
    pthread_barrier_wait(&ready);
    if (!ok)
        return NULL;
    if (w->role == W_CONSUMER)
        return consumer_main(w);
    for (uint32_t step = 0; step < WORKER_STEPS_MAX; step++) {
        bool more = w->role == W_PRODUCER ? produce_one(w) : meta_step(w);
        if (!more)
            return NULL;
    }
    wfail(w, "worker not killed after %u requests", WORKER_STEPS_MAX);
    return NULL;
}

/* --- checks after a restart ------------------------------------------------------------ */

/* Pending producer batches of the last cycle, for the slot checks. */
typedef struct inflight {
    uint32_t slot;
    uint64_t first;
    uint32_t count;
} inflight_t;

static inflight_t inflight[PRODUCERS];
static uint32_t inflight_count;
static uint32_t inflight_kept, inflight_lost;

/* Which producer batch in flight holds number n, or -1. */
static int inflight_of(uint32_t si, uint64_t n)
{
    for (uint32_t i = 0; i < inflight_count; i++)
        if (inflight[i].slot == si && n >= inflight[i].first &&
            n < inflight[i].first + inflight[i].count)
            return (int)i;
    return -1;
}

static void check_slot(sl_client_t *c, uint32_t si)
{
    slot_t *s = &slots[si];
    uint64_t n = cu_read_all(c, sl_id_name(stream), sl_id_name(s->topic), s->partition, 1, s->read,
                             SLOT_CAP);
    assert_true(n <= SLOT_CAP);
    for (uint64_t o = n; o < SLOT_CAP; o++)
        if (s->known[o] != UNKNOWN)
            fail_msg("%s/%u: offset %" PRIu64 " (message %" PRIu64 ") was acknowledged or seen, "
                     "the partition now ends at %" PRIu64,
                     s->topic, s->partition, o, s->known[o], n);
    /* Numbers of each producer rise along the offsets: nothing twice, nothing reordered. */
    uint64_t last[PRODUCERS];
    memset(last, 0xff, sizeof(last));
    uint32_t seen[PRODUCERS] = {0};
    for (uint64_t o = 0; o < n; o++) {
        uint64_t num = s->read[o];
        uint32_t p = (uint32_t)(num / NUMBER_SPAN);
        assert_true(p < PRODUCERS);
        if (last[p] != UNKNOWN && num <= last[p])
            fail_msg("%s/%u offset %" PRIu64 ": message %" PRIu64 " after %" PRIu64, s->topic,
                     s->partition, o, num, last[p]);
        last[p] = num;
        if (s->known[o] != UNKNOWN) {
            if (s->known[o] != num)
                fail_msg("%s/%u offset %" PRIu64 " holds message %" PRIu64 ", acknowledged was "
                         "%" PRIu64,
                         s->topic, s->partition, o, num, s->known[o]);
        } else if (inflight_of(si, num) < 0) {
            fail_msg("%s/%u offset %" PRIu64 ": message %" PRIu64 " was never acknowledged nor in "
                     "flight at the kill",
                     s->topic, s->partition, o, num);
        }
        int b = inflight_of(si, num);
        if (b >= 0)
            seen[b]++;
    }
    /* A batch in flight is there whole or not at all (its order was checked above). */
    for (uint32_t i = 0; i < inflight_count; i++) {
        if (inflight[i].slot != si)
            continue;
        if (seen[i] != 0 && seen[i] != inflight[i].count)
            fail_msg("%s/%u: %u of the %u messages of a batch in flight at the kill are stored",
                     s->topic, s->partition, seen[i], inflight[i].count);
        seen[i] ? inflight_kept++ : inflight_lost++;
    }
    for (uint64_t o = 0; o < n; o++)
        s->known[o] = s->read[o];
    s->stored = s->reserved = n;
}

static void check_consumer(sl_client_t *c, consumer_model_t *cm)
{
    for (uint32_t si = cm->first_slot; si < cm->first_slot + cm->slots_count; si++) {
        slot_t *s = &slots[si];
        sl_consumer_offset_t off;
        assert_int_equal(sl_client_get_consumer_offset(c, cm->ref, sl_id_name(stream),
                                                       sl_id_name(s->topic), s->partition, &off),
                         0);
        int64_t floor = cm->floor[si], pending = cm->pending[si];
        int64_t stored = off.found ? (int64_t)off.stored_offset : -1;
        if (stored < floor)
            fail_msg("%s on %s/%u: stored offset %" PRId64 " went back from the acknowledged "
                     "%" PRId64,
                     cm->name, s->topic, s->partition, stored, floor);
        if (off.found && off.stored_offset >= s->stored)
            fail_msg("%s on %s/%u: stored offset %" PRId64 " past the partition's %" PRIu64
                     " messages",
                     cm->name, s->topic, s->partition, stored, s->stored);
        if (cm->explicit_store && stored != floor && stored != pending)
            fail_msg("%s on %s/%u: stored offset %" PRId64 " is neither the acknowledged %" PRId64
                     " nor the one in flight (%" PRId64 ")",
                     cm->name, s->topic, s->partition, stored, floor, pending);
        cm->floor[si] = cm->cycle_start[si] = stored;
        cm->pending[si] = -1;
    }
}

/* Group polls of one cycle: together they cover the offsets from where the group stood,
 * each exactly once (members never read the same message twice, nothing is skipped). */
static int range_cmp(const void *a, const void *b)
{
    const range_t *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static void check_ranges(consumer_model_t *cm)
{
    for (uint32_t si = 0; si < SLOTS; si++) {
        range_t *r = cm->ranges[si];
        uint32_t n = cm->ranges_count[si];
        if (n == 0)
            continue; /* r may be NULL, which qsort must not get */
        qsort(r, n, sizeof(*r), range_cmp);
        uint64_t next = (uint64_t)(cm->cycle_start[si] + 1);
        for (uint32_t i = 0; i < n; i++) {
            if (r[i].first != next)
                fail_msg("%s on %s/%u: a poll read %" PRIu64 "..%" PRIu64 " where %" PRIu64
                         " was next\n(the server's data stays in %s, its log in %s)",
                         cm->name, slots[si].topic, slots[si].partition, r[i].first, r[i].last,
                         next, srv.data_dir, srv.log_path);
            next = r[i].last + 1;
        }
        cm->ranges_count[si] = 0;
    }
}

static void check_streams(sl_client_t *c)
{
    const sl_stream_t *items = NULL;
    uint32_t count = 0;
    assert_int_equal(sl_client_get_streams(c, &items, &count), 0);
    static uint8_t found[META_NAMES];
    memset(found, 0, sizeof(found));
    for (uint32_t i = 0; i < count; i++) {
        if (strncmp(items[i].name, "m-", 2) != 0)
            continue;
        uint32_t k = (uint32_t)strtoul(items[i].name + 2, NULL, 10);
        if (k >= meta.next)
            fail_msg("stream %s exists but was never created", items[i].name);
        found[k] = 1;
    }
    meta.live = 0;
    for (uint32_t k = 0; k < meta.next; k++) {
        uint8_t st = meta.state[k];
        if (st == M_PRESENT && !found[k])
            fail_msg("stream m-%u: its creation was acknowledged, it is gone", k);
        if (st == M_ABSENT && found[k])
            fail_msg("stream m-%u: its deletion was acknowledged, it is back", k);
        meta.state[k] = found[k] ? M_PRESENT : M_ABSENT;
        meta.live += found[k];
    }
}

/* No connection survives the process: members the kill left in a group are released once
 * 1.2 x heartbeat.interval (1 s here) has passed without them logging in again. Until then
 * they keep their partitions from the next cycle's members, so every restart waits for it. */
static void wait_groups_empty(sl_client_t *c)
{
    for (int g = 0; g < 2; g++) {
        const char *topic = g == 0 ? "a" : "b";
        uint32_t members = 0;
        for (int tries = 0; tries < 600; tries++) { /* 30 s: a liveness bound, not a timing */
            const sl_consumer_group_t *cg = NULL;
            assert_int_equal(sl_client_get_consumer_group(c, sl_id_name(stream), sl_id_name(topic),
                                                          sl_id_name(group_names[g]), &cg),
                             0);
            members = cg->members_count;
            if (members == 0)
                break;
            sleep_ms(50);
        }
        if (members != 0)
            fail_msg("group %s: %u members of the killed process 30 s after the restart",
                     group_names[g], members);
    }
}

static void check_all(void)
{
    sl_client_t *c = cu_connect(&srv);
    for (uint32_t si = 0; si < SLOTS; si++)
        check_slot(c, si);
    for (int cm = 0; cm < CONSUMERS; cm++)
        check_consumer(c, &consumers[cm]);
    check_streams(c);
    wait_groups_empty(c);
    sl_client_close(c);
    inflight_count = 0;
}

/* --- the run ------------------------------------------------------------------------------ */

static void setup(void)
{
    static const char config[] = "[metadata]\ncheckpoint_interval = 8\n\n"
                                 "[heartbeat]\ninterval = \"1 s\"\n";
    start_or_skip(&(th_options_t){.extra_config = config});
    sl_client_t *c = cu_connect(&srv);
    assert_int_equal(sl_client_create_stream(c, stream, NULL), 0);
    sl_topic_options_t a = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC | SL_TOPIC_OPT_SEGMENT_SIZE,
                            .enforce_fsync = true,
                            .segment_size = 1024 * 1024};
    sl_topic_options_t b = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), "a", 3, &a, NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name(stream), "b", 2, &b, NULL), 0);
    assert_int_equal(
        sl_client_create_consumer_group(c, sl_id_name(stream), sl_id_name("a"), "g1", NULL), 0);
    assert_int_equal(
        sl_client_create_consumer_group(c, sl_id_name(stream), sl_id_name("b"), "g2", NULL), 0);
    const char *t = NULL;
    assert_int_equal(sl_client_create_token(c, "cycles", 0, &t), 0);
    assert_true(strlen(t) < sizeof(token));
    strcpy(token, t);
    sl_client_close(c);
    for (uint32_t i = 0; i < SLOTS; i++) {
        pthread_mutex_init(&slots[i].mu, NULL);
        slots[i].known = malloc(SLOT_CAP * sizeof(uint64_t));
        slots[i].read = malloc(SLOT_CAP * sizeof(uint64_t));
        assert_non_null(slots[i].known);
        assert_non_null(slots[i].read);
        memset(slots[i].known, 0xff, SLOT_CAP * sizeof(uint64_t));
    }
    consumers_init();
}

/* Producers, then one thread per consumer (two for g1's members), then the metadata client. */
static const int roles[] = {W_CONSUMER, W_CONSUMER, W_CONSUMER, W_CONSUMER, W_CONSUMER, W_META};
static const uint32_t consumer_of[] = {C_AUTO, C_STORE, G_AUTO, G_AUTO, G_STORE, 0};
enum { WORKERS = PRODUCERS + sizeof(roles) / sizeof(roles[0]) };

static void workers_init(worker_t *w, uint64_t *rng)
{
    memset(w, 0, WORKERS * sizeof(*w));
    for (uint32_t i = 0; i < WORKERS; i++) {
        w[i].rng = cu_rand(rng) | 1u;
        w[i].role = i < PRODUCERS ? W_PRODUCER : roles[i - PRODUCERS];
        w[i].index = i < PRODUCERS ? i : consumer_of[i - PRODUCERS];
    }
}

/* One cycle: workers run until the kill; returns after every worker ended. */
static void run_cycle(uint64_t *rng, uint64_t *acked_batches)
{
    worker_t w[WORKERS];
    workers_init(w, rng);
    uint32_t delay = (uint32_t)cu_rand_range(rng, KILL_MIN_MS, KILL_MAX_MS);
    atomic_store(&killed, false);
    assert_int_equal(pthread_barrier_init(&ready, NULL, WORKERS + 1), 0);
    for (uint32_t i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    pthread_barrier_wait(&ready);
    sleep_ms(delay);
    atomic_store(&killed, true);
    kill(srv.pid, SIGKILL);
    for (uint32_t i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    pthread_barrier_destroy(&ready);
    int status = th_stop(&srv, SIGKILL);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("sluiced ended with status %d before the kill:\n%s", status, th_log(&srv));
    for (uint32_t i = 0; i < WORKERS; i++) {
        if (w[i].failed)
            fail_msg("worker %u: %s\n(the server's data stays in %s, its log in %s)", i, w[i].error,
                     srv.data_dir, srv.log_path);
        if (w[i].pending)
            inflight[inflight_count++] =
                (inflight_t){w[i].pending_slot, w[i].pending_first, w[i].pending_count};
        *acked_batches += w[i].acked_batches;
        sl_client_close(w[i].c);
    }
    for (int cm = 0; cm < CONSUMERS; cm++)
        check_ranges(&consumers[cm]);
}

/* Some cycles kill the server again while it recovers, before it listens. */
static void maybe_kill_during_startup(uint64_t *rng, uint32_t *startup_kills)
{
    if (cu_rand_range(rng, 1, STARTUP_KILL_ONE_IN) != 1)
        return;
    uint32_t delay = (uint32_t)cu_rand_range(rng, 0, STARTUP_KILL_MS);
    pid_t pid = cu_spawn(&srv);
    sleep_ms(delay);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    (*startup_kills)++;
}

static uint32_t cycles_wanted(void)
{
    const char *env = getenv("SLUICE_KILL9_CYCLES");
    uint32_t dflt = getenv("SLUICE_SOAK") ? CYCLES_SOAK : CYCLES_DEFAULT;
    uint32_t n = env && env[0] ? (uint32_t)strtoul(env, NULL, 10) : dflt;
    return n ? n : dflt;
}

static void test_kill9_cycles(void **state)
{
    (void)state;
    uint64_t seed = cu_seed();
    uint64_t rng = seed;
    uint32_t cycles = cycles_wanted();
    fprintf(stderr,
            "kill9 cycles: seed %" PRIu64 " (SLUICE_CRASH_SEED=%" PRIu64 " replays it), "
            "%u cycles\n",
            seed, seed, cycles);
    double t0 = now_s();
    setup();
    uint64_t acked_batches = 0;
    uint32_t startup_kills = 0;
    for (uint32_t cycle = 0; cycle < cycles; cycle++) {
        run_cycle(&rng, &acked_batches);
        maybe_kill_during_startup(&rng, &startup_kills);
        start_or_skip(&(th_options_t){.data_dir = srv.data_dir});
        check_all();
    }
    uint64_t stored = 0, commits = 0;
    for (uint32_t i = 0; i < SLOTS; i++)
        stored += slots[i].stored;
    for (int cm = 0; cm < CONSUMERS; cm++)
        commits += consumers[cm].commits;
    cu_stop_clean(&srv);
    fprintf(stderr,
            "kill9 cycles: %u kills (+%u during start-up) in %.1f s; %" PRIu64 " messages stored "
            "in 5 partitions from %" PRIu64 " acknowledged batches; in-flight batches kept %u, "
            "lost %u; %" PRIu64 " consumer commits; %" PRIu64 " stream creates/deletes; nothing "
            "acknowledged lost\n",
            cycles, startup_kills, now_s() - t0, stored, acked_batches, inflight_kept,
            inflight_lost, commits, meta.acked);
    for (int cm = 0; cm < CONSUMERS; cm++)
        fprintf(stderr, "kill9 cycles: consumer %s: %" PRIu64 " acknowledged commits\n",
                consumers[cm].name, consumers[cm].commits);
    assert_true(stored > 0);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_cycles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
