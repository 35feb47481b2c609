/* sluice-bench, Iggy's kinds: the planner and the run. The planner turns
 * the command line into actors the way iggy-bench lays them out (producer
 * i writes bench-stream-(1 + (i-1) mod streams), a pinned consumer reads
 * its own stream by offset, group consumers share one group per stream,
 * e2ecg has max(producers, consumers) actors), knows every count before
 * anything is sent, and runs the same plan against each target: the
 * ceiling first, then sluiced (a running one, or one started here in a
 * temporary directory), then the peers when asked. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench_peers.h"
#include "sluice_bench_run.h"

#ifndef SLUICE_BENCH_SLUICED
#define SLUICE_BENCH_SLUICED "./sluiced"
#endif

/* --- the plan ------------------------------------------------------------------------------- */

typedef struct plan {
    sb_run_t run;
    sb_set_t *sets;                /* one per consumer set */
    sb_frame_t *stream_frames;     /* streams x variants: preload and the ceiling's loads */
    uint64_t *stream_batches;      /* preload batches per stream (consumer-only kinds) */
    uint64_t *stream_messages;     /* messages every stream will hold */
    uint32_t variants;
} plan_t;

static bool kind_produces(sb_kind_t k)
{
    return k != SB_KIND_PC && k != SB_KIND_BCG;
}

static bool kind_pinned(sb_kind_t k)
{
    return k == SB_KIND_PP || k == SB_KIND_PC || k == SB_KIND_PPC || k == SB_KIND_E2E;
}

static bool kind_groups(sb_kind_t k)
{
    return k == SB_KIND_BCG || k == SB_KIND_BPCG || k == SB_KIND_E2ECG;
}

/* Batches a producer sends: -b as given, or as many (cycling its variants)
 * as its share of -T takes; *messages gets their message count. */
static uint64_t batches_for(const sb_iggy_args_t *a, uint32_t seed, uint32_t variants,
                            uint64_t budget_bytes, uint64_t batches_given, uint64_t *messages)
{
    sb_shape_t shape[8];
    for (uint32_t v = 0; v < variants; v++)
        sb_shape_of(a, seed, v, &shape[v]);
    uint64_t n = 0, bytes = 0;
    *messages = 0;
    for (; batches_given ? n < batches_given : (n == 0 || bytes < budget_bytes); n++) {
        bytes += shape[n % variants].payload;
        *messages += shape[n % variants].messages;
    }
    return n;
}

static uint32_t actors_of(const sb_iggy_args_t *a)
{
    if (a->kind == SB_KIND_E2E)
        return a->producers;
    if (a->kind == SB_KIND_E2ECG)
        return a->producers > a->consumers ? a->producers : a->consumers;
    return a->producers + a->consumers;
}

static void plan_producer(plan_t *p, sb_actor_t *x, uint32_t id, uint32_t stream)
{
    const sb_iggy_args_t *a = p->run.args;
    uint32_t producers = a->producers;
    x->produces = true;
    x->stream = stream;
    x->variants = p->variants;
    x->frames = calloc(p->variants, sizeof(sb_frame_t));
    if (!x->frames)
        sb_die("out of memory");
    for (uint32_t v = 0; v < p->variants; v++)
        sb_frame_build(a, id, v, stream, kind_pinned(a->kind), &x->frames[v]);
    uint64_t messages;
    x->batches = batches_for(a, id, p->variants, a->total_data / producers, a->message_batches,
                             &messages);
    p->stream_messages[stream - 1] += messages;
}

/* Lays the actors out; sets are filled in by plan_sets once every
 * producer's count is known. */
static void plan_actors(plan_t *p)
{
    const sb_iggy_args_t *a = p->run.args;
    sb_kind_t k = a->kind;
    uint32_t n = actors_of(a), streams = a->streams;
    sb_actor_t *actors = calloc(n, sizeof(*actors));
    if (!actors)
        sb_die("out of memory");
    uint32_t at = 0;
    uint64_t rate = a->rate_limit ? a->rate_limit / n : 0;
    if (k == SB_KIND_E2E || k == SB_KIND_E2ECG) {
        uint32_t modulo = k == SB_KIND_E2E ? streams : a->consumer_groups;
        for (uint32_t i = 1; i <= n; i++, at++) {
            sb_actor_t *x = &actors[at];
            *x = (sb_actor_t){.id = i, .role = SB_ROLE_PRODUCING_CONSUMER, .rate_bps = rate};
            x->consumes = k == SB_KIND_E2E || i <= a->consumers;
            x->group = k == SB_KIND_E2ECG;
            if (k == SB_KIND_E2E || i <= a->producers)
                plan_producer(p, x, i, 1 + (i - 1) % modulo);
            x->stream = 1 + (i - 1) % modulo;
        }
    } else {
        for (uint32_t i = 1; kind_produces(k) && i <= a->producers; i++, at++) {
            actors[at] = (sb_actor_t){.id = i, .role = SB_ROLE_PRODUCER, .rate_bps = rate};
            plan_producer(p, &actors[at], i, 1 + (i - 1) % streams);
        }
        uint32_t modulo = kind_groups(k) ? a->consumer_groups : streams;
        for (uint32_t i = 1; i <= a->consumers; i++, at++)
            actors[at] = (sb_actor_t){.id = i, .role = SB_ROLE_CONSUMER, .consumes = true,
                                      .group = kind_groups(k), .stream = 1 + (i - 1) % modulo,
                                      .rate_bps = rate};
    }
    p->run.actors = actors;
    p->run.actors_count = at;
}

/* What consumer-only kinds read: each stream filled beforehand (untimed)
 * with what its consumers will read: -b batches per consumer, or its
 * consumers' share of -T. A pinned consumer reads its whole stream, so a
 * stream shared by pinned consumers holds one consumer's worth. */
static void plan_preload(plan_t *p)
{
    const sb_iggy_args_t *a = p->run.args;
    for (uint32_t s = 1; s <= a->streams; s++) {
        uint32_t members = 0;
        for (uint32_t i = 0; i < p->run.actors_count; i++)
            members += p->run.actors[i].consumes && p->run.actors[i].stream == s;
        uint32_t share = kind_groups(a->kind) ? members : (members ? 1 : 0);
        uint64_t messages;
        p->stream_batches[s - 1] = share == 0 ? 0
                                   : batches_for(a, s, p->variants,
                                                 a->total_data / a->consumers * share,
                                                 (uint64_t)a->message_batches * share, &messages);
        if (share)
            p->stream_messages[s - 1] = messages;
    }
}

/* Consumer sets: one per group (a stream's members), or one per pinned
 * consumer; each expects what its stream will hold (for e2e, what the
 * actor itself sends). */
static void plan_sets(plan_t *p)
{
    const sb_iggy_args_t *a = p->run.args;
    p->sets = calloc(p->run.actors_count + a->streams, sizeof(sb_set_t));
    if (!p->sets)
        sb_die("out of memory");
    uint32_t own = a->streams;
    for (uint32_t i = 0; i < p->run.actors_count; i++) {
        sb_actor_t *x = &p->run.actors[i];
        if (!x->consumes)
            continue;
        sb_set_t *s = x->group ? &p->sets[x->stream - 1] : &p->sets[own++];
        if (a->kind == SB_KIND_E2E) {
            uint64_t messages;
            batches_for(a, x->id, p->variants, a->total_data / a->producers, a->message_batches,
                        &messages);
            s->expected = messages;
        } else {
            s->expected = p->stream_messages[x->stream - 1];
        }
        x->set = s;
        x->member = s->members++;
        x->poll_max = a->messages_per_batch.max;
        x->load = &p->stream_frames[(size_t)(x->stream - 1) * p->variants];
    }
}

static void plan_build(plan_t *p, const sb_iggy_args_t *a, sb_target_t target)
{
    memset(p, 0, sizeof(*p));
    p->run.args = a;
    p->run.target = target;
    p->run.partitions = a->partitions;
    p->variants = sb_variants(a);
    p->stream_batches = calloc(a->streams, sizeof(uint64_t));
    p->stream_messages = calloc(a->streams, sizeof(uint64_t));
    p->stream_frames = calloc((size_t)a->streams * p->variants, sizeof(sb_frame_t));
    if (!p->stream_batches || !p->stream_messages || !p->stream_frames)
        sb_die("out of memory");
    for (uint32_t s = 1; s <= a->streams; s++)
        for (uint32_t v = 0; v < p->variants; v++)
            sb_frame_build(a, s, v, s, kind_pinned(a->kind),
                           &p->stream_frames[(size_t)(s - 1) * p->variants + v]);
    plan_actors(p);
    if (!kind_produces(a->kind))
        plan_preload(p);
    plan_sets(p);
}

static void plan_free(plan_t *p)
{
    for (uint32_t i = 0; i < p->run.actors_count; i++) {
        sb_actor_t *x = &p->run.actors[i];
        for (uint32_t v = 0; x->frames && v < x->variants; v++)
            free(x->frames[v].data);
        free(x->frames);
        free(x->samples);
    }
    for (size_t f = 0; f < (size_t)p->run.args->streams * p->variants; f++)
        free(p->stream_frames[f].data);
    free(p->stream_frames);
    free(p->stream_batches);
    free(p->stream_messages);
    free(p->sets);
    free(p->run.actors);
}

static uint64_t expected_total(const plan_t *p)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->run.actors_count + p->run.args->streams; i++)
        n += p->sets[i].expected;
    return n;
}

/* --- sluiced ------------------------------------------------------------------------------------ */

/* Fresh bench streams (deleted first unless --reuse-streams), topic-1 with
 * the kind's partitions and options, and one consumer group per stream
 * for the group kinds; group ids go to the actors. */
static void sluiced_prepare(plan_t *p)
{
    const sb_iggy_args_t *a = p->run.args;
    sl_client_options_t opt = {.request_timeout_ms = 60000}; /* deleting GBs takes a while */
    sl_client_t *c;
    int rc = sl_client_connect(p->run.host, p->run.port, &opt, &c);
    if (rc == 0)
        rc = sl_client_login(c, a->username, a->password, NULL);
    if (rc != 0)
        sb_die("cannot log in to sluiced at %s:%u as %s: %s", p->run.host, p->run.port,
               a->username, sl_strerror(rc));
    for (uint32_t s = 1; s <= a->streams; s++) {
        char name[32];
        snprintf(name, sizeof(name), "bench-stream-%u", s);
        const sl_stream_t *found = NULL;
        if (sl_client_get_stream(c, sl_id_name(name), &found) == 0 && found && !a->reuse_streams &&
            (rc = sl_client_delete_stream(c, sl_id_name(name))) != 0)
            sb_die("DeleteStream %s: %s", name, sl_strerror(rc));
        if (!found || !a->reuse_streams) {
            sl_topic_options_t to = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC,
                                     .enforce_fsync = a->enforce_fsync};
            if (a->max_topic_size) {
                to.set |= SL_TOPIC_OPT_MAX_TOPIC_SIZE;
                to.max_topic_size = a->max_topic_size;
            }
            if ((rc = sl_client_create_stream(c, name, NULL)) != 0 ||
                (rc = sl_client_create_topic(c, sl_id_name(name), "topic-1", a->partitions, &to,
                                             NULL)) != 0)
                sb_die("CreateStream/CreateTopic %s: %s", name, sl_strerror(rc));
        }
        uint32_t group_id = 0;
        if (kind_groups(a->kind)) {
            char group[40];
            snprintf(group, sizeof(group), "bench-group-%u", s);
            const sl_consumer_group_t *g = NULL;
            rc = sl_client_get_consumer_group(c, sl_id_name(name), sl_id_name("topic-1"),
                                              sl_id_name(group), &g);
            if (rc == 0 && !g)
                rc = sl_client_create_consumer_group(c, sl_id_name(name), sl_id_name("topic-1"),
                                                     group, &g);
            if (rc != 0 || !g)
                sb_die("consumer group %s: %s", group, sl_strerror(rc));
            group_id = g->id;
        }
        for (uint32_t i = 0; i < p->run.actors_count; i++)
            if (p->run.actors[i].stream == s)
                p->run.actors[i].group_id = group_id;
    }
    sl_client_close(c);
}

/* Consumer-only kinds read what is put in their streams here, untimed. */
static void sluiced_preload(plan_t *p)
{
    const sb_iggy_args_t *a = p->run.args;
    uint64_t batches = 0, messages = 0;
    for (uint32_t s = 0; s < a->streams; s++) {
        batches += p->stream_batches[s];
        messages += p->stream_messages[s];
    }
    if (!batches)
        return;
    printf("filling %u stream(s) with %llu messages in %llu batches (untimed)\n", a->streams,
           (unsigned long long)messages, (unsigned long long)batches);
    for (uint32_t s = 0; s < a->streams; s++)
        if (p->stream_batches[s])
            sb_preload(&p->run, &p->stream_frames[(size_t)s * p->variants], p->variants,
                       p->stream_batches[s]);
}

/* --- one target --------------------------------------------------------------------------------- */

typedef struct session {
    const sb_iggy_args_t *args;
    char work[256];  /* the bench's temporary directory: the ceiling's files, peers */
    char host[64];   /* sluiced's */
    uint16_t port;
    sb_sluiced_t own;
    bool remote;     /* sluiced is not on this machine: no ceiling beside it */
} session_t;

static void run_target(session_t *ss, sb_target_t target, sb_result_t *out)
{
    const sb_iggy_args_t *a = ss->args;
    plan_t p;
    plan_build(&p, a, target);
    pid_t ceiling = 0;
    sb_peer_t peer = {0};
    if (target == SB_TARGET_CEILING) {
        ceiling = sb_ceiling_start(ss->work, a->enforce_fsync, &p.run.port);
        p.run.host = "127.0.0.1";
    } else if (target == SB_TARGET_SLUICED) {
        p.run.host = ss->host;
        p.run.port = ss->port;
        sluiced_prepare(&p);
        sluiced_preload(&p);
    } else {
        char why[200];
        bool pinned = a->kind == SB_KIND_PP || a->kind == SB_KIND_PC || a->kind == SB_KIND_PPC;
        if (!pinned)
            snprintf(why, sizeof(why), "peers run the pinned kinds only: pp, pc, ppc");
        if (!pinned || !sb_peer_start(target, ss->work, a->enforce_fsync, &peer, why, sizeof(why))) {
            printf("%s: skipped (%s)\n", sb_target_name(target), why);
            plan_free(&p);
            return;
        }
        p.run.host = "127.0.0.1";
        p.run.port = peer.port;
    }
    printf("running %s against %s (%u actors)\n", sb_kind_name(a->kind), sb_target_name(target),
           p.run.actors_count);
    p.run.server_pid = ceiling ? ceiling : target == SB_TARGET_SLUICED ? ss->own.pid : peer.pid;
    if (target == SB_TARGET_NATS || target == SB_TARGET_REDIS)
        sb_peer_run(&p.run, &peer);
    else
        sb_run_actors(&p.run);
    sb_result_compute(&p.run, out);
    out->server_cpu_known = p.run.server_pid > 0;
    out->server_cpu_ns = p.run.server_cpu_ns;
    out->client_cpu_ns = p.run.client_cpu_ns;
    out->expected_messages = expected_total(&p);
    if (ceiling)
        sb_ceiling_stop(ceiling);
    if (peer.pid)
        sb_peer_stop(&peer);
    plan_free(&p);
    /* One target's dirty pages are not the next one's writeback: flush the
     * file system both write to (sluiced's data is under the same $TMPDIR
     * when sluice-bench started it). */
    int fd = open(ss->work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
}

/* HOST of --server-address as an IPv4 address ("localhost" included). */
static void resolve(const char *host, char *out, size_t len)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        sb_die("cannot resolve %s", host);
    inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, out, (socklen_t)len);
    freeaddrinfo(res);
}

static const char *sluiced_binary(const sb_iggy_args_t *a)
{
    static char path[4096];
    const char *env = getenv("SLUICE_SLUICED");
    if (a->sluiced)
        return a->sluiced;
    if (env)
        return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 16);
    path[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(path, '/');
    if (slash) {
        memcpy(slash + 1, "sluiced", 8);
        if (access(path, X_OK) == 0)
            return path;
    }
    return SLUICE_BENCH_SLUICED;
}

static void session_open(session_t *ss, const sb_iggy_args_t *a)
{
    const char *tmp = a->dir ? a->dir : getenv("TMPDIR");
    snprintf(ss->work, sizeof(ss->work), "%s/sluice-bench-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(ss->work))
        sb_die("mkdtemp %s: %s", ss->work, strerror(errno));
    sb_temp_track(ss->work);
    if (a->transport == SB_TRANSPORT_CEILING)
        return;
    if (a->port) {
        resolve(a->host, ss->host, sizeof(ss->host));
        ss->port = a->port;
        ss->remote = strncmp(ss->host, "127.", 4) != 0;
        printf("sluiced: %s:%u (running elsewhere)\n", ss->host, ss->port);
        return;
    }
    const char *binary = sluiced_binary(a);
    sb_sluiced_start(&ss->own, binary, ss->work, a->username, a->password);
    snprintf(ss->host, sizeof(ss->host), "127.0.0.1");
    ss->port = ss->own.port;
    printf("sluiced: %s, pid %d, 127.0.0.1:%u, data %s\n", binary, (int)ss->own.pid, ss->port,
           ss->own.data);
}

static void session_close(session_t *ss)
{
    if (ss->own.pid > 0)
        sb_sluiced_stop(&ss->own);
    sb_temp_remove(ss->work);
}

/* --- main --------------------------------------------------------------------------------------- */

static int targets_of(const sb_iggy_args_t *a, const session_t *ss, sb_target_t *t)
{
    int n = 0;
    if (a->transport == SB_TRANSPORT_CEILING)
        t[n++] = SB_TARGET_CEILING;
    if (a->transport == SB_TRANSPORT_TCP && !a->no_ceiling && !ss->remote)
        t[n++] = SB_TARGET_CEILING;
    if (a->transport == SB_TRANSPORT_TCP && ss->remote && !a->no_ceiling)
        printf("ceiling: skipped (sluiced runs on another machine; the ceiling measures this "
               "one)\n");
    if (a->transport == SB_TRANSPORT_PEERS) {
        t[n++] = SB_TARGET_CEILING;
        t[n++] = SB_TARGET_SLUICED;
        t[n++] = SB_TARGET_NATS;
        t[n++] = SB_TARGET_REDIS;
    } else if (a->transport == SB_TRANSPORT_TCP) {
        t[n++] = SB_TARGET_SLUICED;
    }
    return n;
}

static void print_setup(const sb_iggy_args_t *a)
{
    char size[48], batch[48];
    snprintf(size, sizeof(size), a->message_size.min == a->message_size.max ? "%u" : "%u..%u",
             a->message_size.min, a->message_size.max);
    snprintf(batch, sizeof(batch),
             a->messages_per_batch.min == a->messages_per_batch.max ? "%u" : "%u..%u",
             a->messages_per_batch.min, a->messages_per_batch.max);
    printf("kind %s, transport %s: message size %s B, messages per batch %s, %s", sb_kind_name(a->kind),
           sb_transport_name(a->transport), size, batch, a->total_data ? "total data " : "batches per actor ");
    if (a->total_data)
        printf("%llu B", (unsigned long long)a->total_data);
    else
        printf("%u", a->message_batches);
    printf("%s%s\n", a->enforce_fsync ? ", enforce_fsync" : "",
           a->rate_limit ? ", rate-limited" : "");
}

int sb_iggy_main(int argc, char **argv)
{
    static sb_iggy_args_t a;
    char err[512];
    if (sb_iggy_parse(argc, argv, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, "sluice-bench: error: %s\n", err);
        return 2;
    }
    if (a.help) {
        sb_iggy_usage(stdout);
        return 0;
    }
    if (a.examples) {
        sb_iggy_examples(stdout);
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    sb_signals_install();
    print_setup(&a);
    session_t ss = {.args = &a};
    session_open(&ss, &a);
    sb_target_t targets[SB_TARGETS];
    int n = targets_of(&a, &ss, targets);
    sb_result_t results[SB_TARGETS];
    memset(results, 0, sizeof(results));
    for (int i = 0; i < n; i++)
        run_target(&ss, targets[i], &results[i]);
    session_close(&ss);
    printf("\n");
    /* sluiced's lines first: a script written for iggy-bench that takes the
     * first "Total throughput" line gets sluiced's, not the ceiling's. */
    const sb_result_t *main_result = NULL, *ceiling = NULL;
    for (int i = 0; i < n; i++) {
        if (results[i].present && results[i].target == SB_TARGET_CEILING)
            ceiling = &results[i];
        if (results[i].present && (results[i].target == SB_TARGET_SLUICED || !main_result))
            main_result = &results[i];
    }
    if (main_result)
        sb_result_print(&a, main_result);
    for (int i = 0; i < n; i++)
        if (results[i].present && &results[i] != main_result)
            sb_result_print(&a, &results[i]);
    for (int i = 0; ceiling && i < n; i++)
        if (results[i].present && results[i].target != SB_TARGET_CEILING) {
            sb_result_print_ratios(&results[i], ceiling);
            sb_result_print_cpu(&results[i], ceiling);
        }
    for (int i = 0; main_result && main_result->target == SB_TARGET_SLUICED && i < n; i++)
        if (results[i].present && results[i].target >= SB_TARGET_NATS)
            sb_result_print_ratios(main_result, &results[i]);
    if (a.output) {
        char dir[512];
        if (sb_report_write(&a, results, n, dir, sizeof(dir)) != 0)
            sb_die("cannot write the report in %s: %s", dir, strerror(errno));
        printf("report: %s/report.json, chart: %s/chart.svg\n", dir, dir);
    }
    for (int i = 0; i < n; i++)
        sb_result_free(&results[i]);
    return 0;
}
