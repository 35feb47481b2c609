/* sluice-bench telemetry figure (issue 15): produce throughput with the
 * OpenTelemetry export off, on at the default sampling, and on with every
 * request traced, in one run. Each round starts four sluiced processes: two
 * with telemetry off (the second a control: the spread between two identical
 * servers is the figure's noise, which on a shared 2-core machine comes
 * mostly from where the scheduler puts each process, so the servers are new
 * every round) and two exporting logs and spans over OTLP/HTTP to a sink in
 * this program (a thread that reads each request and answers 200), so the
 * exporter does its whole work. libsluice sends batches of 1, 10 and 1000
 * messages (the per-request cost is what tracing adds, so few messages per
 * request is its worst case); the servers take turns in 16 short slices, in
 * an order that rotates (each side takes each place in the order four
 * times), so a burst of load from elsewhere falls on every side alike, and
 * each figure is the median over the rounds of the ratio to the first
 * server with telemetry off. Beside it, the CPU time each server process
 * used per request (all its threads, the exporter's included, from /proc),
 * which the scheduler's noise moves much less than the throughput. On a
 * shared machine, run it under `taskset -c N` (the servers inherit it): one
 * core for the client, the servers and their exporters takes away where
 * the scheduler puts each of them (docs/benchmarks.md). */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    OTEL_ROUNDS_MAX = 64,
    OTEL_SLICES = 16,
    OTEL_PAYLOAD = 100,
    OTEL_BATCH_MAX = 1000,
    OTEL_TRIPS_MAX = 10000000,
    SINK_CONNS = 8,
};

enum { SIDE_OFF, SIDE_CONTROL, SIDE_DEFAULT, SIDE_ALL, SIDES };
static const char *const side_names[SIDES] = {"off", "off again", "default sampling",
                                              "every request"};
static const char *const side_ratio[SIDES] = {NULL, NULL, NULL, "1"};
static const uint32_t batches[] = {1, 10, OTEL_BATCH_MAX};
#define BATCHES (sizeof(batches) / sizeof(batches[0]))

/* --- the OTLP sink ------------------------------------------------------------------------- */

typedef struct sink {
    int listen_fd;
    uint16_t port;
    pthread_t thread;
    _Atomic bool stop;
    _Atomic uint64_t requests, bytes;
} sink_t;

/* One connection to the sink: what it has read, and the rest of the body of
 * the request being read. */
typedef struct sink_conn {
    int fd;
    bool in_body;
    size_t len, body_left;
    char buf[65536];
} sink_conn_t;

/* Reads what the connection has and answers each request once its body is
 * in: the OTLP bodies are counted, not parsed. False when it must close. */
static bool sink_serve(sink_t *k, sink_conn_t *c)
{
    ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
    if (n <= 0)
        return false;
    atomic_fetch_add(&k->bytes, (uint64_t)n);
    c->len += (size_t)n;
    for (int guard = 0; guard < 64; guard++) {
        if (!c->in_body) {
            c->buf[c->len] = '\0';
            char *end = strstr(c->buf, "\r\n\r\n");
            if (!end)
                return c->len < sizeof(c->buf) - 1;
            char *cl = strcasestr(c->buf, "\r\nContent-Length:");
            if (!cl || cl > end)
                return false; /* libcurl always sends the length of its POST */
            c->body_left = strtoul(cl + 17, NULL, 10);
            size_t head = (size_t)(end - c->buf) + 4;
            memmove(c->buf, c->buf + head, c->len - head);
            c->len -= head;
            c->in_body = true;
        }
        size_t take = c->body_left < c->len ? c->body_left : c->len;
        memmove(c->buf, c->buf + take, c->len - take);
        c->len -= take;
        c->body_left -= take;
        if (c->body_left)
            return true;
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if (send(c->fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(ok) - 1)
            return false;
        atomic_fetch_add(&k->requests, 1);
        c->in_body = false;
        if (c->len == 0)
            return true;
    }
    return true;
}

static void *sink_main(void *arg)
{
    sink_t *k = arg;
    static sink_conn_t conns[SINK_CONNS];
    for (int i = 0; i < SINK_CONNS; i++)
        conns[i].fd = -1;
    while (!atomic_load(&k->stop)) {
        struct pollfd p[SINK_CONNS + 1] = {{.fd = k->listen_fd, .events = POLLIN}};
        for (int i = 0; i < SINK_CONNS; i++)
            p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        if (poll(p, SINK_CONNS + 1, 50) <= 0)
            continue;
        if (p[0].revents & POLLIN) {
            int fd = accept(k->listen_fd, NULL, NULL);
            for (int i = 0; fd >= 0 && i < SINK_CONNS; i++)
                if (conns[i].fd < 0) {
                    conns[i].fd = fd;
                    conns[i].len = 0;
                    conns[i].in_body = false;
                    fd = -1;
                }
            if (fd >= 0)
                close(fd);
        }
        for (int i = 0; i < SINK_CONNS; i++)
            if (conns[i].fd >= 0 && (p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) &&
                !sink_serve(k, &conns[i])) {
                close(conns[i].fd);
                conns[i].fd = -1;
            }
    }
    for (int i = 0; i < SINK_CONNS; i++)
        if (conns[i].fd >= 0)
            close(conns[i].fd);
    return NULL;
}

static void sink_start(sink_t *k)
{
    memset(k, 0, sizeof(*k));
    k->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (k->listen_fd < 0 || bind(k->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(k->listen_fd, 16) != 0 || getsockname(k->listen_fd, (struct sockaddr *)&a, &alen))
        sb_die("cannot start the OTLP sink");
    k->port = ntohs(a.sin_port);
    if (pthread_create(&k->thread, NULL, sink_main, k) != 0)
        sb_die("cannot start the OTLP sink thread");
}

static void sink_stop(sink_t *k)
{
    atomic_store(&k->stop, true);
    pthread_join(k->thread, NULL);
    close(k->listen_fd);
}

/* --- the servers ------------------------------------------------------------------------------ */

typedef struct otel_side {
    sb_sluiced_t server;
    sl_client_t *client;
} otel_side_t;

static void side_open(otel_side_t *s, const sb_options_t *o, int side, uint16_t sink_port)
{
    /* The child takes [telemetry] from the environment. */
    char logs[96], traces[96];
    snprintf(logs, sizeof(logs), "http://127.0.0.1:%u/v1/logs", sink_port);
    snprintf(traces, sizeof(traces), "http://127.0.0.1:%u/v1/traces", sink_port);
    if (side == SIDE_DEFAULT || side == SIDE_ALL) {
        setenv("IGGY_TELEMETRY_ENABLED", "true", 1);
        setenv("IGGY_TELEMETRY_LOGS_TRANSPORT", "http", 1);
        setenv("IGGY_TELEMETRY_TRACES_TRANSPORT", "http", 1);
        setenv("IGGY_TELEMETRY_LOGS_ENDPOINT", logs, 1);
        setenv("IGGY_TELEMETRY_TRACES_ENDPOINT", traces, 1);
        if (side_ratio[side])
            setenv("IGGY_TELEMETRY_TRACES_SAMPLE_RATIO", side_ratio[side], 1);
    }
    sb_sluiced_start(&s->server, o->sluiced, o->dir, o->user, o->password);
    static const char *const vars[] = {
        "IGGY_TELEMETRY_ENABLED",          "IGGY_TELEMETRY_LOGS_TRANSPORT",
        "IGGY_TELEMETRY_TRACES_TRANSPORT", "IGGY_TELEMETRY_LOGS_ENDPOINT",
        "IGGY_TELEMETRY_TRACES_ENDPOINT",  "IGGY_TELEMETRY_TRACES_SAMPLE_RATIO"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    if (sl_client_connect("127.0.0.1", s->server.port, NULL, &s->client) != 0 ||
        sl_client_login(s->client, o->user, o->password, NULL) != 0 ||
        sl_client_create_stream(s->client, "otel-bench", NULL) != 0 ||
        sl_client_create_topic(s->client, sl_id_name("otel-bench"), "t", 1, NULL, NULL) != 0)
        sb_die("cannot set up the server with telemetry %s", side_names[side]);
}

/* CPU time of a process so far (every thread), in clock ticks; 0 when unreadable. */
static uint64_t cpu_ticks(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    unsigned long long user = 0, sys = 0;
    const char *p = strrchr(text, ')'); /* the command name may hold spaces */
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user, &sys) != 2)
        return 0;
    return user + sys;
}

/* One slice of sends of batch messages each: messages per second; *trips_out
 * gets the requests sent. */
static double produce_slice(otel_side_t *s, const sl_send_message_t *m, uint32_t batch,
                            double seconds, uint64_t *trips_out)
{
    uint64_t start = sl_clock_monotonic_us(), end = start + (uint64_t)(seconds * 1e6);
    uint64_t trips = 0;
    while (trips < OTEL_TRIPS_MAX && sl_clock_monotonic_us() < end) {
        if (sl_client_send_messages(s->client, sl_id_name("otel-bench"), sl_id_name("t"),
                                    sl_partitioning_partition(0), m, batch, NULL) != 0)
            sb_die("SendMessages failed");
        trips++;
    }
    *trips_out = trips;
    return (double)(trips * batch) * 1e6 / (double)(sl_clock_monotonic_us() - start);
}

/* One round of one batch size: the sides take turns slice by slice, in an order that
 * rotates; rate[side] gets messages per second, cpu[side] the server's CPU
 * microseconds per request. */
static void measure_round(otel_side_t *sides, const sl_send_message_t *m, uint32_t batch,
                          double slice, double rate[SIDES], double cpu[SIDES])
{
    double sum[SIDES] = {0};
    uint64_t ticks[SIDES] = {0}, trips[SIDES] = {0};
    long hz = sysconf(_SC_CLK_TCK);
    for (int k = 0; k < OTEL_SLICES; k++)
        for (int i = 0; i < SIDES; i++) {
            int side = (k + i) % SIDES;
            uint64_t before = cpu_ticks(sides[side].server.pid), n;
            sum[side] += produce_slice(&sides[side], m, batch, slice, &n);
            ticks[side] += cpu_ticks(sides[side].server.pid) - before;
            trips[side] += n;
        }
    for (int side = 0; side < SIDES; side++) {
        rate[side] = sum[side] / OTEL_SLICES;
        cpu[side] = trips[side] ? (double)ticks[side] * 1e6 / (double)hz / (double)trips[side] : 0;
    }
}

static void report(uint32_t batch, double rate[SIDES][OTEL_ROUNDS_MAX],
                   double cpu[SIDES][OTEL_ROUNDS_MAX], int rounds)
{
    double ratio[OTEL_ROUNDS_MAX];
    printf("  %4u x %u B per request:\n", batch, OTEL_PAYLOAD);
    for (int side = 0; side < SIDES; side++) {
        for (int r = 0; r < rounds; r++)
            ratio[r] = rate[side][r] / rate[SIDE_OFF][r];
        printf("    %-17s %9.0f msg/s", side_names[side], sb_median(rate[side], rounds));
        if (side != SIDE_OFF)
            printf("  %.3f of off", sb_median(ratio, rounds));
        else
            printf("%14s", "");
        printf("   server CPU %6.2f us/request\n", sb_median(cpu[side], rounds));
    }
}

void sb_otel_run(const sb_options_t *o)
{
    static otel_side_t sides[SIDES];
    static uint8_t payloads[OTEL_BATCH_MAX][OTEL_PAYLOAD];
    static sl_send_message_t m[OTEL_BATCH_MAX];
    static double rate[BATCHES][SIDES][OTEL_ROUNDS_MAX], cpu[BATCHES][SIDES][OTEL_ROUNDS_MAX];
    int rounds = o->rounds < OTEL_ROUNDS_MAX ? o->rounds : OTEL_ROUNDS_MAX;
    double slice = o->message_seconds / OTEL_SLICES;
    for (int i = 0; i < OTEL_BATCH_MAX; i++) {
        memset(payloads[i], 'a' + i % 26, OTEL_PAYLOAD);
        m[i] = (sl_send_message_t){.payload = payloads[i], .payload_len = OTEL_PAYLOAD};
    }
    sink_t sink;
    sink_start(&sink);
    printf("\nTelemetry (produce to a 1-partition topic, libsluice; %d rounds, each with four new "
           "servers taking turns in %d slices of %.2f s per batch size; telemetry exporting "
           "OTLP/HTTP to a sink in this program; medians over the rounds, the ratio to \"off\" "
           "taken per round)\n",
           rounds, OTEL_SLICES, slice);
    for (int r = 0; r < rounds; r++) {
        for (int side = 0; side < SIDES; side++)
            side_open(&sides[side], o, side, sink.port);
        double one[SIDES], used[SIDES];
        for (size_t b = 0; b < BATCHES; b++) {
            measure_round(sides, m, batches[b], slice, one, used);
            for (int side = 0; side < SIDES; side++) {
                rate[b][side][r] = one[side];
                cpu[b][side][r] = used[side];
            }
        }
        for (int side = 0; side < SIDES; side++) {
            sl_client_close(sides[side].client);
            sb_sluiced_stop(&sides[side].server);
        }
    }
    for (size_t b = 0; b < BATCHES; b++)
        report(batches[b], rate[b], cpu[b], rounds);
    sink_stop(&sink);
    printf("  the sink took %llu export requests, %.1f MB\n",
           (unsigned long long)atomic_load(&sink.requests), (double)atomic_load(&sink.bytes) / 1e6);
}
