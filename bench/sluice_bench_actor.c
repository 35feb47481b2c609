/* sluice-bench, Iggy's kinds: the actors. Each is a thread with one raw
 * lockstep connection (a request frame, then its whole reply) built with
 * the wire codecs, the same bytes for sluiced and for the ceiling: raw
 * frames rather than libsluice, so that the ratio of the two is the
 * server's alone (libsluice's own cost is measured by `--only messages`).
 * Producers resend prebuilt, fully checksummed batches; consumers poll by
 * offset (pinned) or as group members (next, auto-commit); producing
 * consumers send a batch and poll it back. Every loop ends on a count, and
 * the main thread ends the run when nothing has moved for 30 s. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench_run.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_messages.h"
#include "wire/codec.h"
#include "wire/command.h"

enum {
    VARIANTS_RANGED = 8,
    STALL_SECONDS = 30,     /* nothing moved this long: the run has failed */
    EMPTY_POLL_PAUSE_US = 50, /* after a poll that found nothing new */
    IDLE_PAUSE_US = 1000,   /* a group member that owns no partition */
    RESYNC_IDLE_POLLS = 100,
    POLL_FRAME_MAX = 1024,
};

/* --- batches -------------------------------------------------------------------------- */

/* splitmix64: a small, seedable generator; the same seed gives the same
 * batches in the planner and in the builder. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t pick(uint64_t *state, sb_range_t r)
{
    return r.min == r.max ? r.min : r.min + (uint32_t)(next_random(state) % (r.max - r.min + 1u));
}

uint32_t sb_variants(const sb_iggy_args_t *a)
{
    bool fixed = a->message_size.min == a->message_size.max &&
                 a->messages_per_batch.min == a->messages_per_batch.max;
    return fixed ? 1 : VARIANTS_RANGED;
}

static uint64_t seed_of(uint32_t seed, uint32_t variant)
{
    return ((uint64_t)seed << 32) | variant;
}

void sb_shape_of(const sb_iggy_args_t *a, uint32_t seed, uint32_t variant, sb_shape_t *out)
{
    uint64_t state = seed_of(seed, variant);
    out->messages = pick(&state, a->messages_per_batch);
    out->payload = 0;
    for (uint32_t i = 0; i < out->messages; i++)
        out->payload += pick(&state, a->message_size);
}

void sb_frame_build(const sb_iggy_args_t *a, uint32_t seed, uint32_t variant, uint32_t stream,
                    bool pinned, sb_frame_t *out)
{
    uint64_t state = seed_of(seed, variant);
    uint32_t messages = pick(&state, a->messages_per_batch);
    char name[32];
    snprintf(name, sizeof(name), "bench-stream-%u", stream);
    sl_buf_t b;
    sl_buf_init(&b, 0);
    memset(sl_buf_extend(&b, SL_HEADER_SIZE), 0, SL_HEADER_SIZE);
    sl_send_messages_request_t q = {
        .stream_id = sl_ident_name(name),
        .topic_id = sl_ident_name("topic-1"),
        .partitioning = {.kind = pinned ? SL_PARTITIONING_PARTITION_ID : SL_PARTITIONING_BALANCED},
        .messages_count = messages,
    };
    if (sl_send_messages_metadata_encode(&b, &q) != 0)
        sb_die("cannot encode the SendMessages metadata");
    out->record_off = b.len;
    uint8_t *payload = malloc(a->message_size.max);
    if (!payload)
        sb_die("out of memory");
    for (uint32_t i = 0; i < a->message_size.max; i++) /* readable, not all one byte */
        payload[i] = (uint8_t)('a' + (i * 7) % 26);
    sl_batch_builder_t bb;
    sl_span_t record;
    sl_batch_begin(&bb, &b);
    uint64_t now = sl_clock_realtime_us(), total = 0;
    for (uint32_t i = 0; i < messages; i++) {
        uint32_t size = pick(&state, a->message_size);
        sl_u128_t id = {((uint64_t)variant << 32) | (i + 1u), ((uint64_t)seed << 16) | stream};
        if (sl_batch_add(&bb, id, now, sl_span(payload, size), sl_span(NULL, 0)) != 0)
            sb_die("cannot add message %u to a batch", i);
        total += size;
    }
    free(payload);
    if (sl_batch_finish(&bb, &record) != 0 || !sl_buf_ok(&b))
        sb_die("cannot finish a batch of %u messages", messages);
    out->data = b.data; /* the buffer's memory, now the frame's */
    out->len = b.len;
    out->messages = messages;
    out->payload = total;
}

void sb_frame_stamp(uint8_t *frame, size_t len, sl_u128_t client, uint64_t session,
                    uint8_t operation, uint32_t code)
{
    sl_request_header_t h = {
        .size = (uint32_t)len,
        .client = client,
        /* > 0 for every operation but Register and NonReplicated; 1 is the
         * session's first number, which partition ops do not advance
         * (framing.md 5.2) */
        .request = 1,
        .operation = operation,
        .session = session,
        .code = code,
    };
    sl_request_header_encode(frame, &h);
}

/* --- connections -------------------------------------------------------------------------- */

void sb_actor_login(sb_actor_t *a, const char *user, const char *password)
{
    sb_conn_t c = {0};
    c.fd = a->trip.fd;
    sb_raw_login(&c, user, password);
    sl_request_header_t h;
    if (sl_request_header_decode(c.frame, UINT32_MAX, &h) != SL_HDR_OK)
        sb_die("cannot read back the raw session");
    a->client = h.client;
    a->session = h.session;
}

/* A metadata or non-replicated request with a body, on the actor's
 * connection; returns the reply body's payload (after the result section
 * when framed). */
static sl_span_t request_body(sb_actor_t *a, uint8_t operation, uint32_t code, sl_buf_t *body,
                              bool framed)
{
    size_t len = SL_HEADER_SIZE + body->len;
    uint8_t *frame = malloc(len);
    if (!frame)
        sb_die("out of memory");
    memcpy(frame + SL_HEADER_SIZE, body->data, body->len);
    sb_frame_stamp(frame, len, a->client, a->session, operation, code);
    sb_frame_trip(&a->trip, frame, len);
    free(frame);
    sl_span_t reply = sl_span(a->trip.reply, a->trip.reply_len), payload = reply;
    uint32_t result = 0;
    if (framed && (sl_result_split(reply, &result, &payload) != 0 || result != 0))
        sb_die("actor %u: request %u refused (%u)", a->id, code ? code : operation, result);
    return payload;
}

static void group_target(const sb_actor_t *a, sl_buf_t *b, bool sync)
{
    char name[32];
    snprintf(name, sizeof(name), "bench-stream-%u", a->stream);
    sl_group_target_t t = {sl_ident_name(name), sl_ident_name("topic-1"),
                           sl_ident_number(a->group_id)};
    int rc = sync ? sl_sync_consumer_group_request_encode(b, &t)
                  : sl_join_consumer_group_request_encode(b, &t);
    if (rc != 0)
        sb_die("cannot encode a group request");
}

static void join_group(sb_actor_t *a)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    group_target(a, &b, false);
    request_body(a, SL_OP_JOIN_CONSUMER_GROUP, 0, &b, true);
    sl_buf_free(&b);
}

/* SyncConsumerGroup: [generation u64][count u32][partition u32 x count];
 * empty when not a member. */
static void sync_group(sb_actor_t *a)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    group_target(a, &b, true);
    sl_span_t p = request_body(a, SL_OP_NON_REPLICATED, SL_CMD_SYNC_CONSUMER_GROUP, &b, false);
    sl_buf_free(&b);
    a->partitions_count = 0;
    if (p.len < 12)
        return;
    uint32_t n = sl_load_u32(p.ptr + 8);
    if (n > SB_PARTITIONS_MAX || p.len != 12 + 4 * (size_t)n)
        sb_die("actor %u: malformed SyncConsumerGroup reply", a->id);
    for (uint32_t i = 0; i < n; i++)
        a->partitions[i] = sl_load_u32(p.ptr + 12 + 4 * (size_t)i);
    a->partitions_count = n;
}

/* The ceiling keeps no groups: members take the partitions dealt to them
 * the way sluiced deals them to members that join in order (round-robin). */
static void assign_locally(sb_actor_t *a)
{
    a->partitions_count = 0;
    for (uint32_t p = a->member; p < a->run->partitions; p += a->set->members)
        a->partitions[a->partitions_count++] = p;
}

/* The ceiling's reader answers this connection's polls with load's record. */
static void load_ceiling(sb_actor_t *a)
{
    const sb_frame_t *f = a->load;
    size_t record = f->len - f->record_off;
    size_t len = SL_HEADER_SIZE + SL_POLL_REPLY_PREFIX_SIZE + record;
    uint8_t *frame = calloc(1, len);
    if (!frame)
        sb_die("out of memory");
    sl_store_u32(frame + SL_HEADER_SIZE + 12, f->messages);
    memcpy(frame + SL_HEADER_SIZE + SL_POLL_REPLY_PREFIX_SIZE, f->data + f->record_off, record);
    sb_frame_stamp(frame, len, a->client, 0, SL_OP_NON_REPLICATED, SB_CEILING_LOAD_CODE);
    sb_frame_trip(&a->trip, frame, len);
    free(frame);
}

static void actor_connect(sb_actor_t *a)
{
    sb_run_t *run = a->run;
    a->trip = (sb_trip_t){.fd = sb_connect(run->host, run->port),
                          .name = run->target == SB_TARGET_CEILING ? "the ceiling" : "sluiced"};
    if (run->target == SB_TARGET_SLUICED) {
        sb_actor_login(a, run->args->username, run->args->password);
        if (a->consumes && a->group)
            join_group(a);
    } else {
        a->client = (sl_u128_t){a->id, 0x5342}; /* never zero; the ceiling ignores it */
        if (a->consumes && a->load)
            load_ceiling(a);
    }
    for (uint32_t v = 0; a->produces && v < a->variants; v++) {
        sb_frame_t *f = &a->frames[v];
        sb_frame_stamp(f->data, f->len, a->client, a->session, SL_OP_SEND_MESSAGES, 0);
    }
}

/* --- one request each ------------------------------------------------------------------------ */

static void progress(sb_actor_t *a)
{
    atomic_store_explicit(&a->run->progress_ns, sl_clock_monotonic_ns(), memory_order_relaxed);
}

void sb_actor_sample(sb_actor_t *a, uint64_t t0, uint64_t t1, uint32_t messages, uint64_t bytes)
{
    if (a->samples_n == a->samples_cap) {
        size_t cap = a->samples_cap ? 2 * a->samples_cap : 1024;
        sb_sample_t *s = realloc(a->samples, cap * sizeof(*s));
        if (!s)
            sb_die("out of memory");
        a->samples = s;
        a->samples_cap = cap;
    }
    a->samples[a->samples_n++] = (sb_sample_t){
        .end_us = (t1 - a->run->t0_ns) / 1000, .latency_ns = t1 - t0, .bytes = bytes,
        .messages = messages};
    progress(a);
}

static void pause_us(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Iggy's rate limit: each actor gets its share, and a request waits until
 * the bytes moved so far fit the rate. */
static void pace(sb_actor_t *a)
{
    if (!a->rate_bps)
        return;
    uint64_t moved = a->sent_bytes + a->received_bytes;
    uint64_t due = a->run->t0_ns + (uint64_t)((double)moved * 1e9 / (double)a->rate_bps);
    uint64_t now = sl_clock_monotonic_ns();
    if (due > now) {
        uint64_t wait = due - now;
        struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

static const sb_frame_t *send_one(sb_actor_t *a)
{
    const sb_frame_t *f = &a->frames[a->sent_batches % a->variants];
    sb_frame_trip(&a->trip, f->data, f->len);
    a->sent_batches++;
    a->sent_messages += f->messages;
    a->sent_bytes += f->payload;
    return f;
}

/* One poll of up to count messages; returns the messages it got and adds
 * their payload bytes to *bytes. */
static uint32_t poll_once(sb_actor_t *a, uint32_t count, uint64_t *bytes)
{
    char name[32];
    uint8_t frame[POLL_FRAME_MAX];
    snprintf(name, sizeof(name), "bench-stream-%u", a->stream);
    uint32_t partition = a->group ? a->partitions[a->next_partition++ % a->partitions_count] : 0;
    sl_poll_messages_request_t q = {
        .consumer = a->group ? (sl_consumer_t){SL_CONSUMER_GROUP, sl_ident_number(a->group_id)}
                             : (sl_consumer_t){SL_CONSUMER_SINGLE, sl_ident_number(a->id)},
        .stream_id = sl_ident_name(name),
        .topic_id = sl_ident_name("topic-1"),
        .partition = {true, partition},
        .strategy = a->group ? (sl_strategy_t){SL_STRATEGY_NEXT, 0}
                             : (sl_strategy_t){SL_STRATEGY_OFFSET, a->offset},
        .count = count,
        .auto_commit = a->group,
    };
    sl_buf_t b;
    sl_buf_init_fixed(&b, frame, sizeof(frame));
    memset(sl_buf_extend(&b, SL_HEADER_SIZE), 0, SL_HEADER_SIZE);
    if (sl_poll_messages_request_encode(&b, &q) != 0 || !sl_buf_ok(&b))
        sb_die("cannot encode a poll");
    sb_frame_stamp(frame, b.len, a->client, a->session, SL_OP_NON_REPLICATED,
                   SL_CMD_POLL_MESSAGES);
    sb_frame_trip(&a->trip, frame, b.len);
    a->polls++;
    if (a->trip.reply_len < SL_POLL_REPLY_PREFIX_SIZE)
        sb_die("actor %u: short poll reply", a->id);
    uint32_t replied = sl_load_u32(a->trip.reply), declared = sl_load_u32(a->trip.reply + 12);
    if (a->group && replied == SL_POLL_RESYNC_PARTITION && a->run->target == SB_TARGET_SLUICED)
        sync_group(a);
    /* Count what arrived, walking frame headers only (no checksums): the
     * client-side work is the same whichever server answered. */
    sl_record_iter_t records = sl_record_iter(
        sl_span(a->trip.reply + SL_POLL_REPLY_PREFIX_SIZE, a->trip.reply_len - SL_POLL_REPLY_PREFIX_SIZE));
    sl_span_t record;
    sl_message_t m;
    uint32_t got = 0;
    for (uint32_t r = 0; r < declared && sl_record_next(&records, &record); r++) {
        sl_frame_iter_t it = sl_frame_iter(record);
        while (got < declared && sl_frame_next(&it, &m)) {
            *bytes += m.payload.len;
            got++;
        }
    }
    if (got != declared)
        sb_die("actor %u: a poll reply declares %u messages and holds %u", a->id, declared, got);
    if (got > count)
        sb_die("actor %u: asked for %u messages, got %u", a->id, count, got);
    a->offset += got;
    a->received_messages += got;
    if (!got)
        a->empty_polls++;
    return got;
}

/* --- claims: a set reads exactly what it expects ---------------------------------------------- */

uint32_t sb_set_claim(sb_set_t *s, uint32_t max)
{
    uint64_t c = atomic_load(&s->claimed);
    for (int i = 0; i < 1000000; i++) { /* bounded: a CAS fails only when another succeeded */
        if (c >= s->expected)
            return 0;
        uint64_t k = s->expected - c < max ? s->expected - c : max;
        if (atomic_compare_exchange_weak(&s->claimed, &c, c + k))
            return (uint32_t)k;
    }
    return 0;
}

void sb_set_settle(sb_set_t *s, uint32_t claimed, uint32_t got)
{
    atomic_fetch_add(&s->consumed, got);
    atomic_fetch_sub(&s->claimed, (uint64_t)(claimed - got));
}

static bool set_done(const sb_set_t *s)
{
    return atomic_load(&((sb_set_t *)s)->consumed) >= s->expected;
}

/* One claim and one poll for a consumer; false when there was nothing to
 * claim. Adds what it got to *got / *bytes. */
static bool consume_step(sb_actor_t *a, uint32_t *got, uint64_t *bytes, uint64_t *idle)
{
    uint32_t k = sb_set_claim(a->set, a->poll_max);
    if (!k)
        return false;
    if (a->group && a->partitions_count == 0) {
        sb_set_settle(a->set, k, 0);
        pause_us(IDLE_PAUSE_US);
        if (++*idle % RESYNC_IDLE_POLLS == 0 && a->run->target == SB_TARGET_SLUICED)
            sync_group(a);
        return true;
    }
    uint64_t b = 0;
    uint32_t n = poll_once(a, k, &b);
    sb_set_settle(a->set, k, n);
    *got += n;
    *bytes += b;
    a->received_bytes += b;
    return true;
}

/* --- the loops ------------------------------------------------------------------------------- */

static void producer_loop(sb_actor_t *a)
{
    while (a->sent_batches < a->batches) {
        pace(a);
        uint64_t t0 = sl_clock_monotonic_ns();
        const sb_frame_t *f = send_one(a);
        sb_actor_sample(a, t0, sl_clock_monotonic_ns(), f->messages, f->payload);
    }
}

static void consumer_loop(sb_actor_t *a)
{
    uint64_t idle = 0;
    while (!set_done(a->set)) {
        pace(a);
        uint32_t got = 0;
        uint64_t bytes = 0, t0 = sl_clock_monotonic_ns();
        if (!consume_step(a, &got, &bytes, &idle)) {
            pause_us(EMPTY_POLL_PAUSE_US); /* the rest is claimed by other members */
            continue;
        }
        if (got)
            sb_actor_sample(a, t0, sl_clock_monotonic_ns(), got, bytes);
        else
            pause_us(EMPTY_POLL_PAUSE_US);
    }
}

/* end-to-end: send a batch, poll until as many messages came back; one
 * sample for the pair. With consumer groups an actor may only produce or
 * only consume (iggy-bench's max(producers, consumers) actors); a sample
 * then counts what it received, or what it sent when it only produces. */
static void producing_consumer_loop(sb_actor_t *a)
{
    uint64_t idle = 0;
    for (;;) {
        bool send = a->produces && a->sent_batches < a->batches;
        bool poll = a->consumes && !set_done(a->set);
        if (!send && !poll)
            break;
        pace(a);
        uint32_t got = 0, want = 0;
        uint64_t bytes = 0, t0 = sl_clock_monotonic_ns();
        if (send) {
            const sb_frame_t *f = send_one(a);
            want = a->group ? 0 : f->messages;
            if (!a->consumes) {
                got = f->messages;
                bytes = f->payload;
            }
        }
        /* pinned: every message just sent, from the actor's own cursor;
         * group: one claim and poll of whatever its partitions hold */
        for (int tries = 0; poll && tries < 1000000 && (a->group ? tries < 1 : got < want);
             tries++) {
            if (!consume_step(a, &got, &bytes, &idle))
                break;
        }
        if (got)
            sb_actor_sample(a, t0, sl_clock_monotonic_ns(), got, bytes);
        else
            pause_us(EMPTY_POLL_PAUSE_US);
    }
}

static void *actor_main(void *arg)
{
    sb_actor_t *a = arg;
    sb_run_t *run = a->run;
    actor_connect(a);
    pthread_barrier_wait(&run->ready); /* every member has joined */
    if (a->consumes && a->group) {
        if (run->target == SB_TARGET_SLUICED)
            sync_group(a);
        else
            assign_locally(a);
    }
    pthread_barrier_wait(&run->go);
    if (a->role == SB_ROLE_PRODUCER)
        producer_loop(a);
    else if (a->role == SB_ROLE_CONSUMER)
        consumer_loop(a);
    else
        producing_consumer_loop(a);
    sb_trip_close(&a->trip);
    atomic_fetch_add(&run->done, 1);
    return NULL;
}

/* --- the run ------------------------------------------------------------------------------------ */

/* CPU time of the bench process, every thread, in ns. */
static uint64_t self_cpu_ns(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0;
    return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000u +
           (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000u;
}

void sb_run_actors(sb_run_t *run)
{
    pthread_t *threads = calloc(run->actors_count, sizeof(*threads));
    if (!threads)
        sb_die("out of memory");
    pthread_barrier_init(&run->ready, NULL, run->actors_count + 1);
    pthread_barrier_init(&run->go, NULL, run->actors_count + 1);
    atomic_store(&run->done, 0);
    for (uint32_t i = 0; i < run->actors_count; i++) {
        run->actors[i].run = run;
        if (pthread_create(&threads[i], NULL, run->actor_main ? run->actor_main : actor_main,
                           &run->actors[i]) != 0)
            sb_die("cannot start actor %u", i + 1);
    }
    pthread_barrier_wait(&run->ready);
    /* Logins (an Argon2id check each on sluiced) are done: CPU from here on
     * is the run's own. */
    uint64_t server_cpu = sb_process_cpu_ns(run->server_pid), client_cpu = self_cpu_ns();
    run->t0_ns = sl_clock_monotonic_ns();
    atomic_store(&run->progress_ns, run->t0_ns);
    pthread_barrier_wait(&run->go);
    while (atomic_load(&run->done) < run->actors_count) {
        pause_us(20000);
        uint64_t last = atomic_load(&run->progress_ns), now = sl_clock_monotonic_ns();
        if (now > last && now - last > (uint64_t)STALL_SECONDS * 1000000000ull)
            sb_die("nothing moved for %d s against %s: the run has failed", STALL_SECONDS,
                   sb_target_name(run->target));
    }
    run->elapsed_ns = sl_clock_monotonic_ns() - run->t0_ns;
    run->server_cpu_ns = run->server_pid > 0 ? sb_process_cpu_ns(run->server_pid) - server_cpu : 0;
    run->client_cpu_ns = self_cpu_ns() - client_cpu;
    for (uint32_t i = 0; i < run->actors_count; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&run->ready);
    pthread_barrier_destroy(&run->go);
    free(threads);
}

void sb_preload(sb_run_t *run, sb_frame_t *frames, uint32_t variants, uint64_t batches)
{
    sb_actor_t a = {.run = run, .id = 0, .frames = frames, .variants = variants, .produces = true};
    a.trip = (sb_trip_t){.fd = sb_connect(run->host, run->port), .name = "sluiced"};
    sb_actor_login(&a, run->args->username, run->args->password);
    for (uint32_t v = 0; v < variants; v++)
        sb_frame_stamp(frames[v].data, frames[v].len, a.client, a.session, SL_OP_SEND_MESSAGES, 0);
    while (a.sent_batches < batches)
        send_one(&a);
    sb_trip_close(&a.trip);
}
