/* sluice-bench ping figures: sluiced against the bare ping-pong server over
 * 1 and N lockstep connections driven by the same raw-socket client, plus
 * libsluice's ping, in interleaved slices; rates, ratios, and each server's
 * CPU time per round trip (less sensitive to a busy machine than rates). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice_bench.h"

enum {
    ROUNDS_MAX = 64,
    SLICES = 10,           /* per figure and round (see ping_round) */
    TRIPS_MAX = 100000000, /* per run; the time bound normally ends it first */
};
#define WARMUP_SECONDS 0.2

/* The figures; each names the baseline its ratios are taken against. */
enum { FIG_BARE_ONE, FIG_SLUICED_ONE, FIG_LIBRARY_ONE, FIG_BARE_MANY, FIG_SLUICED_MANY, FIGS };

static const struct {
    const char *server, *how; /* the label: "<server>, <n> connections<how>" */
    int baseline;
    bool bare, many;
} figures[FIGS] = {
    {"bare ping-pong", " (baseline)", FIG_BARE_ONE, true, false},
    {"sluiced", ", raw socket", FIG_BARE_ONE, false, false},
    {"sluiced", ", libsluice sl_client_ping", FIG_BARE_ONE, false, false},
    {"bare ping-pong", " (baseline)", FIG_BARE_MANY, true, true},
    {"sluiced", ", raw sockets", FIG_BARE_MANY, false, true},
};

typedef struct ping_ctx {
    const sb_options_t *o;
    sb_conn_t *bare, *sluiced;
    sl_client_t *library;
    pid_t bare_pid, sluiced_pid; /* 0: CPU time unknown */
} ping_ctx_t;

/* Per figure and round: round trips per second, the server's CPU time per
 * round trip, and both against the figure's baseline. */
typedef struct ping_results {
    double rate[FIGS][ROUNDS_MAX], rate_ratio[FIGS][ROUNDS_MAX];
    double cpu_us[FIGS][ROUNDS_MAX], cpu_ratio[FIGS][ROUNDS_MAX];
} ping_results_t;

static sb_rate_t run_figure(const ping_ctx_t *p, int fig, double seconds, uint64_t *cpu_ns)
{
    pid_t pid = figures[fig].bare ? p->bare_pid : p->sluiced_pid;
    uint64_t before = sb_cpu_ns(pid);
    sb_rate_t r;
    switch (fig) {
    case FIG_BARE_ONE:
        r = sb_pingpong(p->bare, 1, seconds, TRIPS_MAX);
        break;
    case FIG_SLUICED_ONE:
        r = sb_pingpong(p->sluiced, 1, seconds, TRIPS_MAX);
        break;
    case FIG_LIBRARY_ONE:
        r = sb_client_ping(p->library, seconds, TRIPS_MAX);
        break;
    case FIG_BARE_MANY:
        r = sb_pingpong(p->bare, p->o->connections, seconds, TRIPS_MAX);
        break;
    default:
        r = sb_pingpong(p->sluiced, p->o->connections, seconds, TRIPS_MAX);
        break;
    }
    *cpu_ns += sb_cpu_ns(pid) - before;
    return r;
}

/* One round: each figure gets o->seconds in SLICES slices, the figures
 * taking turns slice by slice in rotating order, so a slow spell of the
 * shared machine lands on all of them alike instead of on one figure. */
static void ping_round(const ping_ctx_t *p, int r, ping_results_t *res)
{
    sb_rate_t total[FIGS];
    uint64_t cpu_ns[FIGS];
    memset(total, 0, sizeof(total));
    memset(cpu_ns, 0, sizeof(cpu_ns));
    double slice = p->o->seconds / SLICES;
    for (int s = 0; s < SLICES; s++) {
        for (int k = 0; k < 3; k++) {
            int fig = FIG_BARE_ONE + (s + k) % 3;
            sb_rate_t x = run_figure(p, fig, slice, &cpu_ns[fig]);
            total[fig].trips += x.trips;
            total[fig].elapsed_ns += x.elapsed_ns;
        }
        for (int k = 0; k < 2; k++) {
            int fig = FIG_BARE_MANY + (s + k) % 2;
            sb_rate_t x = run_figure(p, fig, slice, &cpu_ns[fig]);
            total[fig].trips += x.trips;
            total[fig].elapsed_ns += x.elapsed_ns;
        }
    }
    for (int fig = 0; fig < FIGS; fig++) {
        res->rate[fig][r] = sb_per_second(total[fig]);
        res->cpu_us[fig][r] =
            total[fig].trips ? (double)cpu_ns[fig] / 1e3 / (double)total[fig].trips : 0.0;
    }
    for (int fig = 0; fig < FIGS; fig++) {
        int base = figures[fig].baseline;
        res->rate_ratio[fig][r] = res->rate[fig][r] / res->rate[base][r];
        res->cpu_ratio[fig][r] =
            res->cpu_us[base][r] > 0 ? res->cpu_us[fig][r] / res->cpu_us[base][r] : 0.0;
    }
}

static void print_per_round(const char *label, const double *v, int rounds)
{
    printf("  per-round %s:", label);
    for (int r = 0; r < rounds; r++)
        printf(" %.1f%%", 100.0 * v[r]);
    printf("\n");
}

static void print_results(ping_results_t *res, int rounds, int n)
{
    print_per_round("rate, sluiced / bare, 1 connection", res->rate_ratio[FIG_SLUICED_ONE], rounds);
    print_per_round("rate, sluiced / bare, many connections", res->rate_ratio[FIG_SLUICED_MANY],
                    rounds);
    print_per_round("rate, libsluice / bare, 1 connection", res->rate_ratio[FIG_LIBRARY_ONE],
                    rounds);
    printf("  %-50s %13s %8s %13s %8s\n", "figure", "round trips/s", "vs base", "srv CPU us/rt",
           "vs base");
    for (int fig = 0; fig < FIGS; fig++) {
        char label[96];
        int conns = figures[fig].many ? n : 1;
        snprintf(label, sizeof(label), "%s, %d connection%s%s", figures[fig].server, conns,
                 conns > 1 ? "s" : "", figures[fig].how);
        double cpu = sb_median(res->cpu_us[fig], rounds);
        printf("  %-50s %13.0f %7.1f%% %13.2f %7.1f%%\n", label, sb_median(res->rate[fig], rounds),
               100.0 * sb_median(res->rate_ratio[fig], rounds), cpu,
               100.0 * sb_median(res->cpu_ratio[fig], rounds));
    }
    printf("  (medians of %d rounds; ratios: medians of per-round ratios; srv CPU: the server "
           "process's CPU time per round trip, 0 when unknown; aim: sluiced rate >= 80 %% of "
           "bare)\n",
           rounds);
}

static sb_conn_t *open_conns(int n, const char *host, uint16_t port, const sb_options_t *o)
{
    sb_conn_t *conns = calloc((size_t)n, sizeof(*conns));
    if (!conns)
        sb_die("out of memory");
    for (int i = 0; i < n; i++) {
        conns[i].fd = sb_connect(host, port);
        if (o)
            sb_raw_login(&conns[i], o->user, o->password);
        else
            sb_raw_anonymous(&conns[i]);
    }
    return conns;
}

static void close_conns(sb_conn_t *conns, int n)
{
    for (int i = 0; i < n; i++)
        close(conns[i].fd);
    free(conns);
}

void sb_ping_run(const sb_options_t *o, const char *host, uint16_t port, pid_t server_pid)
{
    int n = o->connections, rounds = o->rounds < ROUNDS_MAX ? o->rounds : ROUNDS_MAX;
    uint16_t bare_port;
    ping_ctx_t p = {.o = o, .sluiced_pid = server_pid};
    p.bare_pid = sb_bare_start(&bare_port, 60.0 + (double)rounds * 6.0 * o->seconds);
    p.sluiced = open_conns(n, host, port, o);
    p.bare = open_conns(n, "127.0.0.1", bare_port, NULL);
    int rc = sl_client_connect(host, port, NULL, &p.library);
    if (rc == 0)
        rc = sl_client_login(p.library, o->user, o->password, NULL);
    if (rc != 0)
        sb_die("libsluice connect/login: %s", sl_strerror(rc));
    printf("\nPing round trips (256-byte PING request, 256-byte reply, lockstep per connection; "
           "%d rounds x %.1f s per figure in %d interleaved slices; bare server on port %u)\n",
           rounds, o->seconds, SLICES, bare_port);
    uint64_t ignored = 0;
    for (int fig = 0; fig < FIGS; fig++)
        run_figure(&p, fig, WARMUP_SECONDS, &ignored);

    static ping_results_t res;
    for (int r = 0; r < rounds; r++)
        ping_round(&p, r, &res);
    print_results(&res, rounds, n);
    sl_client_close(p.library);
    close_conns(p.sluiced, n);
    close_conns(p.bare, n);
    sb_bare_stop(p.bare_pid);
}
