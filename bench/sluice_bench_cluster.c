/* sluice-bench cluster: metadata operations per second and their latency on
 * one sluiced next to the leader of a 3-node cluster, both started here,
 * in the same run with rounds alternating between them (then the message
 * figures of sluice_bench_cluster_msgs.c on the same two sides). Each round runs
 * CreateStream + CreateTopic + DeleteStream cycles from one client, then
 * from a few clients at once, then CreateUser + DeleteUser (Argon2id makes
 * those slow, so they are a figure of their own). Until the metadata group
 * replicates, the three nodes are three single servers: the run says so
 * when every node answers GetClusterMetadata as its own leader. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    NODES = 3,
    CLIENTS = 4,         /* the concurrent figure's clients */
    USERS_PER_ROUND = 4, /* CreateUser + DeleteUser pairs per round and side */
    ROUNDS_MAX = 64,     /* bounds the per-round rate arrays */
    CONFIG_MAX = 4096,   /* one node's [cluster] text */
};

enum { SIDE_ONE, SIDE_THREE, SIDES };
enum { FIG_ONE_CLIENT, FIG_CLIENTS, FIG_USERS, FIGS };

static const char *const side_names[SIDES] = {"1 node", "3 nodes"};

typedef struct side {
    sb_sluiced_t servers[NODES];
    int count;
    uint16_t leader_port;
    bool replicating; /* GetClusterMetadata lists several nodes, not all leaders */
    sb_lat_t lat[FIGS];
    double rate[FIGS][ROUNDS_MAX];
    uint64_t ops[FIGS];
    uint64_t cpu_ns[NODES]; /* each process's CPU time at the start, then used */
} side_t;

/* --- starting the two sides -------------------------------------------------------- */

/* A port the kernel hands out now, closed for sluiced to take (the window
 * in which another process could take it is a few milliseconds). */
/* Polls of 100 ms while a new cluster elects and creates its root user. */
#define SB_CLUSTER_POLLS_MAX 600

/* The roster every node reads; the secret is the run's own. */
static void roster(char *out, size_t cap, const uint16_t tcp[NODES], const uint16_t replica[NODES])
{
    char secret[65];
    uint8_t raw[32];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        sb_die("no randomness for the cluster secret: %s", strerror(errno));
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    size_t at = (size_t)snprintf(out, cap,
                                 "[cluster]\nenabled = true\nname = \"bench\"\n"
                                 "[cluster.auth]\nenabled = true\nshared_secret = \"%s\"\n",
                                 secret);
    for (int j = 0; j < NODES && at < cap; j++)
        at += (size_t)snprintf(out + at, cap - at,
                               "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\n"
                               "replica_id = %d\nports = { tcp = %u, tcp_replica = %u }\n",
                               j, j, tcp[j], replica[j]);
    if (at >= cap)
        sb_die("the cluster roster does not fit %zu bytes", cap);
}

static sl_client_t *client_to(const sb_options_t *o, uint16_t port)
{
    /* Settlement off: the bench chose the leader itself, and a figure of
     * metadata operations should not include a GetClusterMetadata. */
    sl_client_options_t opts = {.connect_timeout_ms = 10000,
                                .request_timeout_ms = 60000,
                                .settle_on_leader = SL_CLIENT_SETTLE_OFF};
    sl_client_t *c = NULL;
    int rc = 0;
    /* A node of a new cluster answers a login 58 until it has applied the
     * first primary's CreateUser of the root user (up to 60 s of 100 ms
     * polls on a loaded machine). */
    for (int i = 0; i < SB_CLUSTER_POLLS_MAX; i++) {
        rc = sl_client_connect("127.0.0.1", port, &opts, &c);
        if (rc == 0)
            rc = sl_client_login(c, o->user, o->password, NULL);
        if (rc != -SL_ERR_TRANSIENT_NOT_ACCEPTED)
            break;
        sl_client_close(c);
        c = NULL;
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
    }
    if (rc != 0)
        sb_die("cannot log in on 127.0.0.1:%u: %s", port, sl_strerror(rc));
    return c;
}

/* Asks every node of the cluster who leads. The leader is the first node
 * listed as Leader and Healthy by the first node asked that lists more
 * than one; while each node lists itself alone (nothing replicates yet),
 * node 0, which names itself leader. */
static void find_leader_once(side_t *s, const sb_options_t *o)
{
    s->leader_port = 0;
    s->replicating = false;
    for (int i = 0; i < s->count && s->leader_port == 0; i++) {
        sl_client_t *c = client_to(o, s->servers[i].port);
        const sl_cluster_t *m;
        int rc = sl_client_get_cluster_metadata(c, &m);
        if (rc != 0)
            sb_die("GetClusterMetadata on node %d: %s", i, sl_strerror(rc));
        uint32_t leaders = 0;
        for (uint32_t k = 0; k < m->nodes_count; k++) {
            const sl_node_info_t *n = &m->nodes[k];
            if (n->role != 0)
                continue;
            leaders++;
            if (m->nodes_count > 1 && s->leader_port == 0 && n->status == 0)
                s->leader_port = n->tcp_port;
        }
        s->replicating = m->nodes_count > 1 && leaders < m->nodes_count;
        sl_client_close(c);
    }
}

/* A replicating cluster may not have elected anyone yet: asked again until
 * one node is named (bounded). */
static void find_leader(side_t *s, const sb_options_t *o)
{
    find_leader_once(s, o);
    for (int i = 0; i < SB_CLUSTER_POLLS_MAX && s->leader_port == 0 && s->replicating; i++) {
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
        find_leader_once(s, o);
    }
    if (s->leader_port == 0)
        s->leader_port = s->servers[0].port;
}

static void side_open(side_t *s, const sb_options_t *o, int which)
{
    memset(s, 0, sizeof(*s));
    if (which == SIDE_ONE) {
        s->count = 1;
        sb_sluiced_start(&s->servers[0], o->sluiced, o->dir, o->user, o->password);
        s->leader_port = s->servers[0].port;
        return;
    }
    uint16_t tcp[NODES], replica[NODES];
    for (int i = 0; i < NODES; i++) {
        tcp[i] = sb_free_port();
        replica[i] = sb_free_port();
    }
    char config[CONFIG_MAX];
    roster(config, sizeof(config), tcp, replica);
    s->count = NODES;
    for (int i = 0; i < NODES; i++) {
        sb_sluiced_start_with(&s->servers[i], o->sluiced, o->dir, o->user, o->password, config, i);
        if (s->servers[i].port != tcp[i])
            sb_die("node %d listens on port %u, not its roster port %u", i, s->servers[i].port,
                   tcp[i]);
    }
    find_leader(s, o);
}

static void side_close(side_t *s)
{
    for (int i = 0; i < s->count; i++)
        sb_sluiced_stop(&s->servers[i]);
    for (int f = 0; f < FIGS; f++)
        free(s->lat[f].ns);
}

/* --- the operations ------------------------------------------------------------------ */

/* One timed operation: its latency goes to lat; a refusal ends the run. */
#define TIMED(lat, what, call)                                                                     \
    do {                                                                                           \
        uint64_t t0_ = sl_clock_monotonic_ns();                                                    \
        int rc_ = (call);                                                                          \
        sb_lat_push((lat), sl_clock_monotonic_ns() - t0_);                                         \
        if (rc_ != 0)                                                                              \
            sb_die("%s: %s", (what), sl_strerror(rc_));                                            \
    } while (0)

/* cycles x (CreateStream, CreateTopic, DeleteStream) under names of its own. */
static void stream_cycles(sl_client_t *c, int tag, int cycles, sb_lat_t *lat)
{
    for (int k = 0; k < cycles; k++) {
        char name[64];
        snprintf(name, sizeof(name), "bench-cluster-%d-%d", tag, k);
        TIMED(lat, "CreateStream", sl_client_create_stream(c, name, NULL));
        TIMED(lat, "CreateTopic", sl_client_create_topic(c, sl_id_name(name), "t", 1, NULL, NULL));
        TIMED(lat, "DeleteStream", sl_client_delete_stream(c, sl_id_name(name)));
    }
}

typedef struct worker {
    sl_client_t *client;
    int tag, cycles;
    sb_lat_t lat;
    pthread_t thread;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    stream_cycles(w->client, w->tag, w->cycles, &w->lat);
    return NULL;
}

/* Records one figure's round: ops over the elapsed time. */
static void account(side_t *s, int fig, int round, uint64_t ops, uint64_t elapsed_ns)
{
    s->ops[fig] += ops;
    s->rate[fig][round] = elapsed_ns ? (double)ops * 1e9 / (double)elapsed_ns : 0.0;
}

static void round_one_client(side_t *s, const sb_options_t *o, int round, int cycles)
{
    sl_client_t *c = client_to(o, s->leader_port);
    uint64_t t0 = sl_clock_monotonic_ns();
    stream_cycles(c, round, cycles, &s->lat[FIG_ONE_CLIENT]);
    account(s, FIG_ONE_CLIENT, round, 3u * (uint64_t)cycles, sl_clock_monotonic_ns() - t0);
    sl_client_close(c);
}

static void round_clients(side_t *s, const sb_options_t *o, int round, int cycles)
{
    worker_t w[CLIENTS];
    memset(w, 0, sizeof(w));
    int each = cycles / CLIENTS > 0 ? cycles / CLIENTS : 1;
    for (int i = 0; i < CLIENTS; i++) {
        w[i].client = client_to(o, s->leader_port); /* logins stay out of the timing */
        w[i].tag = 1000 + round * CLIENTS + i;
        w[i].cycles = each;
    }
    uint64_t t0 = sl_clock_monotonic_ns();
    for (int i = 0; i < CLIENTS; i++)
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0)
            sb_die("pthread_create failed");
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(w[i].thread, NULL);
    account(s, FIG_CLIENTS, round, 3u * (uint64_t)each * CLIENTS, sl_clock_monotonic_ns() - t0);
    for (int i = 0; i < CLIENTS; i++) {
        for (size_t k = 0; k < w[i].lat.n; k++)
            sb_lat_push(&s->lat[FIG_CLIENTS], w[i].lat.ns[k]);
        free(w[i].lat.ns);
        sl_client_close(w[i].client);
    }
}

static void round_users(side_t *s, const sb_options_t *o, int round)
{
    sl_client_t *c = client_to(o, s->leader_port);
    uint64_t t0 = sl_clock_monotonic_ns();
    for (int k = 0; k < USERS_PER_ROUND; k++) {
        char name[64];
        snprintf(name, sizeof(name), "bench-user-%d-%d", round, k);
        TIMED(&s->lat[FIG_USERS], "CreateUser",
              sl_client_create_user(c, name, "bench-password", 1, NULL, NULL));
        TIMED(&s->lat[FIG_USERS], "DeleteUser", sl_client_delete_user(c, sl_id_name(name)));
    }
    account(s, FIG_USERS, round, 2u * USERS_PER_ROUND, sl_clock_monotonic_ns() - t0);
    sl_client_close(c);
}

/* --- output ------------------------------------------------------------------------------ */

/* Each server's CPU time (all threads): read at the start, and at the end
 * turned into what the rounds used. A follower that replicates spends CPU
 * of its own; one that does not stays near zero. */
static void cpu_mark(side_t sides[SIDES], bool end)
{
    for (int i = 0; i < SIDES; i++)
        for (int k = 0; k < sides[i].count; k++) {
            uint64_t now = sb_process_cpu_ns(sides[i].servers[k].pid);
            sides[i].cpu_ns[k] = end ? now - sides[i].cpu_ns[k] : now;
        }
}

static void print_cpu(const side_t sides[SIDES])
{
    const side_t *three = &sides[SIDE_THREE];
    printf("  server CPU over the rounds (s): 1 node %.2f; 3 nodes:",
           (double)sides[SIDE_ONE].cpu_ns[0] / 1e9);
    for (int k = 0; k < three->count; k++)
        printf("%snode %d%s %.2f", k ? ", " : " ", k,
               three->servers[k].port == three->leader_port ? " (leader)" : "",
               (double)three->cpu_ns[k] / 1e9);
    printf("\n");
}

static void print_side(side_t *s, int fig, int rounds, double *rate_out, double *p50_out,
                       double *p99_out)
{
    sb_lat_t *l = &s->lat[fig];
    double rate = sb_median(s->rate[fig], rounds);
    double p50 = (double)sb_percentile(l->ns, l->n, 0.5) / 1e6;
    double p99 = (double)sb_percentile(l->ns, l->n, 0.99) / 1e6;
    double max = (double)sb_percentile(l->ns, l->n, 1.0) / 1e6;
    printf(" %8llu %10.1f %9.3f %9.3f %9.3f\n", (unsigned long long)s->ops[fig], rate, p50, p99,
           max);
    *rate_out = rate;
    *p50_out = p50;
    *p99_out = p99;
}

static void print_figure(side_t sides[SIDES], int fig, const char *title, int rounds)
{
    printf("  %s\n", title);
    printf("    %-10s %8s %10s %9s %9s %9s\n", "", "ops", "ops/s", "p50", "p99", "max");
    double rate[SIDES], p50[SIDES], p99[SIDES];
    for (int i = 0; i < SIDES; i++) {
        printf("    %-10s", side_names[i]);
        print_side(&sides[i], fig, rounds, &rate[i], &p50[i], &p99[i]);
    }
    printf("    %-10s %8s %9.2fx %8.2fx %8.2fx\n", "3 / 1", "",
           rate[0] > 0 ? rate[1] / rate[0] : 0.0, p50[0] > 0 ? p50[1] / p50[0] : 0.0,
           p99[0] > 0 ? p99[1] / p99[0] : 0.0);
}

void sb_cluster_run(const sb_options_t *o)
{
    int rounds = o->rounds < ROUNDS_MAX ? o->rounds : ROUNDS_MAX;
    /* --streams counts CreateStream cycles per side, split over the rounds. */
    int cycles = o->streams / rounds > 0 ? o->streams / rounds : 1;
    side_t *sides = calloc(SIDES, sizeof(side_t));
    if (sides == NULL)
        sb_die("out of memory");
    side_open(&sides[SIDE_ONE], o, SIDE_ONE);
    side_open(&sides[SIDE_THREE], o, SIDE_THREE);
    cpu_mark(sides, false);
    /* Rounds alternate so that drift on the shared machine hits both. */
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < SIDES; i++) {
            side_t *s = &sides[(r + i) % SIDES];
            round_one_client(s, o, r, cycles);
            round_clients(s, o, r, cycles);
            round_users(s, o, r);
        }
    }
    cpu_mark(sides, true);
    printf("\nMetadata operations on 1 node and on the leader of a 3-node cluster, same run,\n"
           "%d rounds alternating, medians of per-round rates, latency over every operation (ms)\n",
           rounds);
    const side_t *three = &sides[SIDE_THREE];
    if (three->replicating)
        printf("  3-node cluster: leader 127.0.0.1:%u, replicating (GetClusterMetadata lists "
               "followers)\n",
               three->leader_port);
    else
        printf("  3-node cluster: leader 127.0.0.1:%u, not replicating: every node answers\n"
               "  GetClusterMetadata as its own leader, so these are three single servers\n"
               "  (measured before replication landed)\n",
               three->leader_port);
    char title[160];
    snprintf(title, sizeof(title),
             "CreateStream + CreateTopic + DeleteStream, 1 client, %d cycles per round", cycles);
    print_figure(sides, FIG_ONE_CLIENT, title, rounds);
    snprintf(title, sizeof(title), "the same, %d clients at once, %d cycles each per round",
             CLIENTS, cycles / CLIENTS > 0 ? cycles / CLIENTS : 1);
    print_figure(sides, FIG_CLIENTS, title, rounds);
    snprintf(title, sizeof(title),
             "CreateUser + DeleteUser (Argon2id hashing), 1 client, %d pairs per round",
             USERS_PER_ROUND);
    print_figure(sides, FIG_USERS, title, rounds);
    print_cpu(sides);
    /* The message figures on the same two sides (sluice_bench_cluster_msgs.c). */
    sb_cluster_side_t views[SIDES];
    for (int i = 0; i < SIDES; i++) {
        views[i] = (sb_cluster_side_t){
            .name = side_names[i], .count = sides[i].count, .leader_port = sides[i].leader_port};
        for (int k = 0; k < sides[i].count; k++) {
            views[i].ports[k] = sides[i].servers[k].port;
            views[i].pids[k] = sides[i].servers[k].pid;
        }
    }
    sb_cluster_messages_run(o, views);
    side_close(&sides[SIDE_ONE]);
    side_close(&sides[SIDE_THREE]);
    free(sides);
}
