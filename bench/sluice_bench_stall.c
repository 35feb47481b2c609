/* sluice-bench stall figure (issue 10, "No request may stall everyone else"): ping round trips
 * from one client while another client runs one heavy request after another, next to pings
 * alone in the same run. Each heavy case's setup is not measured; the pinger runs only while
 * the case's requests are in flight. Heavy cases: GetStreams over many streams, PurgeTopic,
 * PurgeStream and DeleteStream over a topic of many partitions, 4 clients polling a huge
 * count, CreatePartitions 1000, DeleteTopic of 1001 partitions, GetSnapshot. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice_bench.h"
#include "wire/cmd_system.h"

enum {
    POLLERS = 4,
    POLL_ROUNDS = 8,       /* polls of a huge count per poller */
    POLL_BATCHES = 61,     /* 1 MB batches in the polled partition: 61 MB, as in the issue */
    BATCH_MESSAGES = 1000, /* messages of 1000 bytes per batch */
    WIDE_PARTITIONS = 10000,
    CASES_MAX = 12,
};

typedef struct stall_ctx {
    const sb_options_t *o;
    const char *host;
    uint16_t port;
    sl_client_t *heavy;
    atomic_bool pinging;
    atomic_bool ready;     /* the pinger is logged in */
    atomic_bool recording; /* the heavy requests run: latencies count */
    sb_lat_t lat;
} stall_ctx_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static sl_client_t *client(const stall_ctx_t *c)
{
    /* A purge of many partitions took seconds before issue 10. */
    sl_client_options_t opt = {.request_timeout_ms = 120000};
    sl_client_t *cl = NULL;
    int rc = sl_client_connect(c->host, c->port, &opt, &cl);
    if (rc == 0)
        rc = sl_client_login(cl, c->o->user, c->o->password, NULL);
    if (rc != 0)
        sb_die("stall: connect/login: %s", sl_strerror(rc));
    return cl;
}

static void ok(int rc, const char *what)
{
    if (rc != 0)
        sb_die("stall: %s: %s", what, sl_strerror(rc));
}

/* The pinger: lockstep pings while c->pinging, each round trip's latency recorded. Bounded by
 * the flag and by a count. */
static void *pinger(void *arg)
{
    stall_ctx_t *c = arg;
    sl_client_t *cl = client(c);
    ok(sl_client_ping(cl), "ping");
    atomic_store(&c->ready, true);
    for (uint64_t i = 0; i < 50000000ull && atomic_load(&c->pinging); i++) {
        uint64_t t0 = now_ns();
        ok(sl_client_ping(cl), "ping");
        if (atomic_load(&c->recording))
            sb_lat_push(&c->lat, now_ns() - t0);
    }
    sl_client_close(cl);
    return NULL;
}

typedef void (*heavy_fn)(stall_ctx_t *c);

typedef struct stall_result {
    const char *name;
    uint64_t pings, p50, p99, max;
} stall_result_t;

/* Runs fn with the pinger going, and reports the pings' latencies. */
static stall_result_t measure(stall_ctx_t *c, const char *name, heavy_fn fn)
{
    c->lat.n = 0;
    atomic_store(&c->pinging, true);
    atomic_store(&c->ready, false);
    atomic_store(&c->recording, false);
    pthread_t t;
    if (pthread_create(&t, NULL, pinger, c) != 0)
        sb_die("stall: cannot start the pinger");
    /* Its login (Argon2id) takes a while; the heavy requests start once it pings. */
    for (int i = 0; i < 3000 && !atomic_load(&c->ready); i++)
        sb_sleep_ms(10);
    atomic_store(&c->recording, true);
    fn(c);
    atomic_store(&c->pinging, false);
    pthread_join(t, NULL);
    stall_result_t r = {.name = name, .pings = c->lat.n};
    if (c->lat.n > 0) {
        r.p50 = sb_percentile(c->lat.ns, c->lat.n, 0.50);
        r.p99 = sb_percentile(c->lat.ns, c->lat.n, 0.99);
        r.max = sb_percentile(c->lat.ns, c->lat.n, 1.0);
    }
    return r;
}

/* --- the heavy cases ------------------------------------------------------------------- */

static void idle(stall_ctx_t *c)
{
    (void)c;
    sb_sleep_ms(1000);
}

static void get_streams(stall_ctx_t *c)
{
    for (int i = 0; i < 5; i++) {
        const sl_stream_t *items;
        uint32_t n;
        ok(sl_client_get_streams(c->heavy, &items, &n), "GetStreams");
    }
}

static void purge_topic(stall_ctx_t *c)
{
    for (int i = 0; i < 3; i++)
        ok(sl_client_purge_topic(c->heavy, sl_id_name("stall-wide"), sl_id_name("t")),
           "PurgeTopic");
}

static void purge_stream(stall_ctx_t *c)
{
    for (int i = 0; i < 3; i++)
        ok(sl_client_purge_stream(c->heavy, sl_id_name("stall-wide")), "PurgeStream");
}

static void delete_stream(stall_ctx_t *c)
{
    ok(sl_client_delete_stream(c->heavy, sl_id_name("stall-wide")), "DeleteStream");
}

static void create_partitions(stall_ctx_t *c)
{
    ok(sl_client_create_partitions(c->heavy, sl_id_name("stall-parts"), sl_id_name("t"), 1000),
       "CreatePartitions");
}

static void delete_topic(stall_ctx_t *c)
{
    ok(sl_client_delete_topic(c->heavy, sl_id_name("stall-parts"), sl_id_name("t")),
       "DeleteTopic");
}

static void snapshot(stall_ctx_t *c)
{
    uint8_t all = SL_SNAPSHOT_ALL;
    for (int i = 0; i < 3; i++) {
        const uint8_t *zip;
        size_t len;
        ok(sl_client_get_snapshot(c->heavy, SL_SNAPSHOT_DEFLATED, &all, 1, &zip, &len),
           "GetSnapshot");
    }
}

static void *poller(void *arg)
{
    stall_ctx_t *c = arg;
    sl_client_t *cl = client(c);
    sl_consumer_ref_t me = sl_consumer_single(sl_id_num(1));
    for (int i = 0; i < POLL_ROUNDS; i++) {
        sl_polled_messages_t out;
        ok(sl_client_poll_messages(cl, me, sl_id_name("stall-poll"), sl_id_name("t"), 0,
                                   sl_poll_offset(0), UINT32_MAX, false, &out),
           "PollMessages");
    }
    sl_client_close(cl);
    return NULL;
}

static void poll_huge(stall_ctx_t *c)
{
    pthread_t t[POLLERS];
    for (int i = 0; i < POLLERS; i++)
        if (pthread_create(&t[i], NULL, poller, c) != 0)
            sb_die("stall: cannot start a poller");
    for (int i = 0; i < POLLERS; i++)
        pthread_join(t[i], NULL);
}

/* --- set-up (not measured) --------------------------------------------------------------- */

static void setup_streams(stall_ctx_t *c, int streams)
{
    char name[64];
    for (int i = 0; i < streams; i++) {
        snprintf(name, sizeof(name), "stall-s%d", i);
        ok(sl_client_create_stream(c->heavy, name, NULL), "CreateStream");
    }
}

static void setup_wide(stall_ctx_t *c)
{
    ok(sl_client_create_stream(c->heavy, "stall-wide", NULL), "CreateStream");
    ok(sl_client_create_topic(c->heavy, sl_id_name("stall-wide"), "t", 1000, NULL, NULL),
       "CreateTopic");
    for (int added = 1000; added < WIDE_PARTITIONS; added += 1000)
        ok(sl_client_create_partitions(c->heavy, sl_id_name("stall-wide"), sl_id_name("t"), 1000),
           "CreatePartitions");
}

static void setup_poll(stall_ctx_t *c)
{
    ok(sl_client_create_stream(c->heavy, "stall-poll", NULL), "CreateStream");
    ok(sl_client_create_topic(c->heavy, sl_id_name("stall-poll"), "t", 1, NULL, NULL),
       "CreateTopic");
    static uint8_t payload[1000];
    static sl_send_message_t batch[BATCH_MESSAGES];
    for (int i = 0; i < BATCH_MESSAGES; i++)
        batch[i] = (sl_send_message_t){.payload = payload, .payload_len = sizeof(payload)};
    for (int i = 0; i < POLL_BATCHES; i++)
        ok(sl_client_send_messages(c->heavy, sl_id_name("stall-poll"), sl_id_name("t"),
                                   sl_partitioning_partition(0), batch, BATCH_MESSAGES, NULL),
           "SendMessages");
}

static void setup_parts(stall_ctx_t *c)
{
    ok(sl_client_create_stream(c->heavy, "stall-parts", NULL), "CreateStream");
    ok(sl_client_create_topic(c->heavy, sl_id_name("stall-parts"), "t", 1, NULL, NULL),
       "CreateTopic");
}

static void print_result(const stall_result_t *r, const stall_result_t *alone)
{
    printf("  %-44s %8llu pings  p50 %8.1f us  p99 %8.1f us  max %9.1f us", r->name,
           (unsigned long long)r->pings, (double)r->p50 / 1e3, (double)r->p99 / 1e3,
           (double)r->max / 1e3);
    if (alone && alone->p99)
        printf("  (p99 x%.1f)", (double)r->p99 / (double)alone->p99);
    printf("\n");
    fflush(stdout);
}

void sb_stall_run(const sb_options_t *o, const char *host, uint16_t port)
{
    stall_ctx_t c = {.o = o, .host = host, .port = port};
    c.heavy = client(&c);
    printf("\nstall: ping round trips from one client while another runs heavy requests "
           "(%d streams, %d partitions)\n",
           o->stall_streams, WIDE_PARTITIONS);
    stall_result_t alone = measure(&c, "ping alone (baseline)", idle);
    print_result(&alone, NULL);
    printf("  (setting up %d streams)\n", o->stall_streams);
    fflush(stdout);
    setup_streams(&c, o->stall_streams);
    stall_result_t r = measure(&c, "GetStreams x5", get_streams);
    print_result(&r, &alone);
    setup_wide(&c);
    r = measure(&c, "PurgeTopic x3 (10000 partitions)", purge_topic);
    print_result(&r, &alone);
    r = measure(&c, "PurgeStream x3 (10000 partitions)", purge_stream);
    print_result(&r, &alone);
    r = measure(&c, "DeleteStream (10000 partitions)", delete_stream);
    print_result(&r, &alone);
    setup_poll(&c);
    r = measure(&c, "4 clients polling 2^32-1 messages (61 MB)", poll_huge);
    print_result(&r, &alone);
    setup_parts(&c);
    r = measure(&c, "CreatePartitions 1000", create_partitions);
    print_result(&r, &alone);
    r = measure(&c, "DeleteTopic (1001 partitions)", delete_topic);
    print_result(&r, &alone);
    r = measure(&c, "GetSnapshot All x3", snapshot);
    print_result(&r, &alone);
    alone = measure(&c, "ping alone (again)", idle);
    print_result(&alone, NULL);
    free(c.lat.ns);
    sl_client_close(c.heavy);
}
