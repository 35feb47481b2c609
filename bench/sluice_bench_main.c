/* sluice-bench: end-to-end figures of sluiced, each next to a baseline from
 * the same run: ping round trips (vs a bare TCP ping-pong server), idle
 * resident memory (vs `sleep`), durable CreateStream (vs write +
 * fdatasync), and message throughput (vs a bare sink that writes request
 * bodies to a file). `sluice-bench --help` lists the options. */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"
#include "sluice_bench_iggy.h"

#ifndef SLUICE_BENCH_SLUICED
#define SLUICE_BENCH_SLUICED "./sluiced"
#endif

enum {
    ROUNDS_MAX = 64,
    RSS_AIM_KB = 10000, /* issue 3: idle sluiced under 10 MB */
};

/* --- the run's context ---------------------------------------------------------- */

static void print_first_line(const char *path, const char *key, const char *label)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    for (int i = 0; i < 10000 && fgets(line, sizeof(line), f); i++) {
        if (strncmp(line, key, strlen(key)) == 0) {
            line[strcspn(line, "\n")] = '\0';
            printf("%s%s\n", label, line + strlen(key));
            break;
        }
    }
    fclose(f);
}

static void print_context(int argc, char **argv)
{
    printf("command:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    struct utsname u;
    uname(&u);
    printf("\ndate: %s; %ld online cores; kernel %s %s\n", date, sysconf(_SC_NPROCESSORS_ONLN),
           u.release, u.machine);
    print_first_line("/proc/cpuinfo", "model name\t: ", "cpu: ");
    print_first_line("/proc/loadavg", "", "load average at start: ");
}

/* --- idle memory ------------------------------------------------------------------ */

static void print_memory(const char *name, const sb_memory_t *m)
{
    printf("  %-46s %8.1f %8.1f %8.1f %8.1f\n", name, (double)m->rss_kb / 1024.0,
           (double)m->anon_kb / 1024.0, (double)m->file_kb / 1024.0, (double)m->hwm_kb / 1024.0);
}

static void rss_run(const sb_sluiced_t *s, const sb_options_t *o)
{
    sb_memory_t idle, after, base;
    sb_sleep_ms(2000);
    if (!sb_memory_read(s->pid, &idle))
        sb_die("cannot read /proc/%d/status", (int)s->pid);
    printf("\nIdle memory (MiB; fresh data directory, 2 s after listening)\n");
    printf("  largest mappings of the idle sluiced:\n");
    sb_smaps_print(s->pid, 8, "    ");

    sl_client_t *client;
    int rc = sl_client_connect("127.0.0.1", s->port, NULL, &client);
    uint64_t t0 = sl_clock_monotonic_ns(), login_ns = 0;
    if (rc == 0 && (rc = sl_client_login(client, o->user, o->password, NULL)) == 0) {
        login_ns = sl_clock_monotonic_ns() - t0;
        rc = sl_client_logout(client);
    }
    if (rc != 0)
        sb_die("login/logout: %s", sl_strerror(rc));
    sl_client_close(client);
    sb_sleep_ms(200);
    if (!sb_memory_read(s->pid, &after) || !sb_memory_of_sleep(&base))
        sb_die("cannot read process memory");
    printf("  largest mappings after one login (%.1f ms, password check included) + logout:\n",
           (double)login_ns / 1e6);
    sb_smaps_print(s->pid, 3, "    ");

    printf("  %-46s %8s %8s %8s %8s\n", "process", "VmRSS", "RssAnon", "RssFile", "VmHWM");
    print_memory("sleep 30 (baseline: a trivial C process)", &base);
    print_memory("sluiced, idle", &idle);
    print_memory("sluiced, after one login + logout", &after);
    printf("  sluiced idle / sleep: %.1fx; sluiced idle - sleep: %.1f MiB\n",
           base.rss_kb ? (double)idle.rss_kb / (double)base.rss_kb : 0.0,
           (double)(idle.rss_kb - base.rss_kb) / 1024.0);
    printf("  aim VmRSS < 10 MB (10000 kB): idle %s, after one login %s\n",
           idle.rss_kb < RSS_AIM_KB ? "met" : "MISSED",
           after.rss_kb < RSS_AIM_KB ? "met" : "MISSED");
}

/* --- options ----------------------------------------------------------------------- */

/* The sluiced started when neither --sluiced nor $SLUICE_SLUICED names one: the one beside this
 * program, where `make install` puts both, else the one of the build tree it was built in. */
static const char *default_sluiced(void)
{
    static char path[4096];
    const char name[] = "sluiced";
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - sizeof(name));
    path[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(path, '/');
    if (slash) {
        memcpy(slash + 1, name, sizeof(name));
        if (access(path, X_OK) == 0)
            return path;
    }
    return SLUICE_BENCH_SLUICED;
}

static void usage(FILE *f)
{
    sb_iggy_usage(f);
    fprintf(f,
            "\nThe earlier figures (docs/benchmarks.md), used when every argument is one of:\n"
            "usage: sluice-bench [options]\n"
            "  --sluiced PATH     sluiced to start (default %s or $SLUICE_SLUICED)\n"
            "  --host IP --port N use a running server on loopback instead (no RSS figure)\n"
            "  --user U --password P  login (default iggy/iggy)\n"
            "  --rounds N         rounds per figure, medians over them (default 5)\n"
            "  --seconds S        length of one ping run (default 1.0)\n"
            "  --connections N    the many-connection ping figure (default 16, max 64)\n"
            "  --streams N        CreateStream operations in all (default 2000)\n"
            "  --dir DIR          where temporary data goes (default $TMPDIR or /tmp)\n"
            "  --message-seconds S  per message figure and round (default 0.5)\n"
            "  --message-bytes B  payload of each message of the message figures (default 1000)\n"
            "  --batch-messages N messages per request and per poll there (default 1000)\n"
            "  --producers N      producers of the group-commit figure (default 8, max 64)\n"
            "  --partitions N     partitions of the many-partition figure (default 1000)\n"
            "  --partition-mb M   MB sent per round to each of its topics (default 2000)\n"
            "  --partition-message-bytes B  payload of its 1000 messages per batch (default 1000)\n"
            "  --only LIST        any of rss,ping,durable,messages,group,logins,partitions,\n"
            "                     stall,http,tls,otel,ws,encryption,cluster (default all but\n"
            "                     partitions, stall, tls, otel, ws, encryption and cluster)\n"
            "  --stall-streams N  streams GetStreams lists in the stall figure (default 20000)\n",
            default_sluiced());
}

/* Loopback only: 127.0.0.0/8 (or "localhost"). */
static const char *loopback_host(const char *host)
{
    struct in_addr a;
    if (strcmp(host, "localhost") == 0)
        return "127.0.0.1";
    if (inet_pton(AF_INET, host, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)
        sb_die("--host must be an IPv4 loopback address (127.x.x.x), not %s", host);
    return host;
}

static void parse_only(sb_options_t *o, const char *list)
{
    o->run_rss = strstr(list, "rss") != NULL;
    o->run_ping = strstr(list, "ping") != NULL;
    o->run_durable = strstr(list, "durable") != NULL;
    o->run_messages = strstr(list, "messages") != NULL;
    o->run_group = strstr(list, "group") != NULL;
    o->run_logins = strstr(list, "logins") != NULL;
    o->run_partitions = strstr(list, "partitions") != NULL;
    o->run_stall = strstr(list, "stall") != NULL;
    o->run_http = strstr(list, "http") != NULL;
    o->run_tls = strstr(list, "tls") != NULL;
    o->run_otel = strstr(list, "otel") != NULL;
    o->run_ws = strstr(list, "ws") != NULL;
    o->run_encryption = strstr(list, "encryption") != NULL;
    o->run_cluster = strstr(list, "cluster") != NULL;
    if (!o->run_rss && !o->run_ping && !o->run_durable && !o->run_messages && !o->run_group &&
        !o->run_logins && !o->run_partitions && !o->run_stall && !o->run_http && !o->run_tls &&
        !o->run_otel && !o->run_ws && !o->run_encryption && !o->run_cluster)
        sb_die("--only takes rss, ping, durable, messages, group, logins, partitions, stall, "
               "http, tls, otel, ws, encryption and/or cluster");
}

static void check_options(const sb_options_t *o)
{
    if (o->rounds < 1 || o->rounds > ROUNDS_MAX)
        sb_die("--rounds must be 1..%d", ROUNDS_MAX);
    if (!(o->seconds > 0.0 && o->seconds <= 60.0))
        sb_die("--seconds must be in (0, 60]");
    if (o->connections < 2 || o->connections > 64)
        sb_die("--connections must be 2..64");
    if (o->streams < 1 || o->streams > 1000000)
        sb_die("--streams must be 1..1000000");
    if (!(o->message_seconds > 0.0 && o->message_seconds <= 60.0))
        sb_die("--message-seconds must be in (0, 60]");
    if (o->group_producers < 2 || o->group_producers > 64)
        sb_die("--producers must be 2..64");
    if (o->partitions < 1 || o->partitions > 100000)
        sb_die("--partitions must be 1..100000");
    if (o->partition_mb < 1 || o->partition_mb > 100000)
        sb_die("--partition-mb must be 1..100000");
    if (o->partition_message_bytes < 1 || o->partition_message_bytes > 60000)
        sb_die("--partition-message-bytes must be 1..60000");
    if (o->stall_streams < 0 || o->stall_streams > 1000000)
        sb_die("--stall-streams must be 0..1000000");
    if (o->message_bytes < 1 || o->message_bytes > 1000000)
        sb_die("--message-bytes must be 1..1000000");
    if (o->batch_messages < 1 || o->batch_messages > 100000)
        sb_die("--batch-messages must be 1..100000");
    /* Within the server's default frame limit, and a copy figure of 2 chunks per region. */
    if ((int64_t)o->message_bytes * o->batch_messages > 16000000)
        sb_die("--message-bytes x --batch-messages must be at most 16000000");
}

/* One option of getopt_long; exits on --help and unknown options. */
static void apply_option(sb_options_t *o, int c, const char *arg)
{
    switch (c) {
    case 's':
        o->sluiced = arg;
        break;
    case 'h':
        o->host = loopback_host(arg);
        break;
    case 'p':
        o->port = (uint16_t)atoi(arg);
        break;
    case 'u':
        o->user = arg;
        break;
    case 'w':
        o->password = arg;
        break;
    case 'r':
        o->rounds = atoi(arg);
        break;
    case 't':
        o->seconds = atof(arg);
        break;
    case 'c':
        o->connections = atoi(arg);
        break;
    case 'n':
        o->streams = atoi(arg);
        break;
    case 'd':
        o->dir = arg;
        break;
    case 'o':
        parse_only(o, arg);
        break;
    case 'm':
        o->message_seconds = atof(arg);
        break;
    case 'P':
        o->group_producers = atoi(arg);
        break;
    case 'N':
        o->partitions = atoi(arg);
        break;
    case 'M':
        o->partition_mb = atoi(arg);
        break;
    case 'B':
        o->partition_message_bytes = atoi(arg);
        break;
    case 'S':
        o->stall_streams = atoi(arg);
        break;
    case 'b':
        o->message_bytes = atoi(arg);
        break;
    case 'k':
        o->batch_messages = atoi(arg);
        break;
    case 'H':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        exit(2);
    }
}

static void parse_options(int argc, char **argv, sb_options_t *o)
{
    const char *env = getenv("SLUICE_SLUICED"), *tmp = getenv("TMPDIR");
    *o = (sb_options_t){.sluiced = env ? env : default_sluiced(),
                        .user = "iggy",
                        .password = "iggy",
                        .dir = tmp ? tmp : "/tmp",
                        .rounds = 5,
                        .seconds = 1.0,
                        .connections = 16,
                        .streams = 2000,
                        .durable_round_seconds_max = 30.0,
                        .message_seconds = 0.5,
                        .run_rss = true,
                        .run_ping = true,
                        .run_durable = true,
                        .group_producers = 8,
                        .partitions = 1000,
                        .partition_mb = 2000,
                        .partition_message_bytes = 1000,
                        .stall_streams = 20000,
                        .message_bytes = 1000,
                        .batch_messages = 1000,
                        .run_messages = true,
                        .run_group = true,
                        .run_logins = true,
                        .run_http = true};
    int c;
    while ((c = getopt_long(argc, argv, "", sb_old_options, NULL)) != -1)
        apply_option(o, c, optarg);
    check_options(o);
}

/* Page faults of a process so far (/proc/<pid>/stat: minflt, majflt); false
 * when unreadable. Fresh memory costs one minor fault per page touched. */
static bool page_faults(pid_t pid, unsigned long long *minor, unsigned long long *major)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')'); /* the command name may hold spaces */
    return p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", minor, major) == 2;
}

int main(int argc, char **argv)
{
    if (sb_iggy_wanted(argc, argv)) /* a kind named: Iggy's command line */
        return sb_iggy_main(argc, argv);
    sb_options_t o;
    parse_options(argc, argv, &o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    sb_signals_install();
    print_context(argc, argv);

    sb_sluiced_t own = {0};
    const char *host = o.host ? o.host : "127.0.0.1";
    uint16_t port = o.port;
    if (port == 0) {
        sb_sluiced_start(&own, o.sluiced, o.dir, o.user, o.password);
        port = own.port;
        printf("sluiced: %s, pid %d, 127.0.0.1:%u, data %s\n", o.sluiced, (int)own.pid, port,
               own.data);
        if (o.run_rss)
            rss_run(&own, &o);
    } else {
        printf("server: %s:%u (started elsewhere: no memory figure)\n", host, port);
    }
    if (o.run_ping)
        sb_ping_run(&o, host, port, own.pid);
    if (o.run_durable) {
        char dir[400];
        snprintf(dir, sizeof(dir), "%s/metadata", own.data);
        printf("\n");
        sb_durable_run(&o, host, port, port == own.port ? dir : o.dir);
    }
    if (o.run_messages)
        sb_messages_run(&o, host, port, port == own.port ? own.dir : o.dir, own.pid);
    if (o.run_group)
        sb_group_run(&o, host, port, port == own.port ? own.dir : o.dir);
    if (o.run_logins)
        sb_logins_run(&o, host, port);
    if (o.run_partitions)
        sb_partitions_run(&o, host, port, own.pid);
    if (o.run_stall)
        sb_stall_run(&o, host, port);
    if (o.run_http)
        sb_http_run(&o, &own, host, port);
    if (o.run_tls)
        sb_tls_run(&o);
    if (o.run_otel)
        sb_otel_run(&o);
    if (o.run_ws)
        sb_ws_run(&o);
    if (o.run_encryption)
        sb_encryption_run(&o);
    if (o.run_cluster)
        sb_cluster_run(&o);
    if (own.pid > 0) {
        sb_memory_t end;
        if (sb_memory_read(own.pid, &end))
            printf("\nsluiced at the end: VmRSS %.1f MiB, RssAnon %.1f MiB, VmHWM %.1f MiB\n",
                   (double)end.rss_kb / 1024.0, (double)end.anon_kb / 1024.0,
                   (double)end.hwm_kb / 1024.0);
        unsigned long long minor, major;
        if (page_faults(own.pid, &minor, &major))
            printf("  page faults of sluiced: %llu minor, %llu major\n", minor, major);
        sb_smaps_print(own.pid, 3, "    ");
        sb_sluiced_stop(&own);
    }
    return 0;
}
