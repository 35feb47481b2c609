/* sluice-bench: what the benchmark program's files share. Each figure is
 * measured next to a baseline in the same run (the machine is shared and
 * noisy), over loopback only, with every loop bounded by a count and a time.
 * docs/benchmarks.md says how to read the output. */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sluice/client.h>

#include "wire/header.h"

/* --- options ----------------------------------------------------------------- */

typedef struct sb_options {
    const char *sluiced; /* the binary to start; NULL when host/port are given */
    const char *host;    /* an external server (loopback only), or NULL */
    uint16_t port;       /* of the external server; 0: start sluiced here */
    const char *user;    /* login for every figure */
    const char *password;
    const char *dir;                  /* parent of the temporary data directory */
    int rounds;                       /* rounds per figure; medians are taken over them */
    double seconds;                   /* length of one ping run */
    int connections;                  /* the many-connection ping figure */
    int streams;                      /* CreateStream operations, split over the rounds */
    double durable_round_seconds_max; /* time cap of one durable round and figure */
    double message_seconds;           /* per message figure and round */
    int group_producers;              /* producers of the group-commit figure */
    int partitions;                   /* of the many-partition figure's topic */
    int partition_mb;                 /* MB sent to each of its two topics per round */
    int partition_message_bytes;      /* payload of each of its 1000 messages per batch */
    int message_bytes;                /* the message figures' payload per message */
    int batch_messages;               /* and messages per request and per poll */
    bool run_rss, run_ping, run_durable, run_messages, run_group;
    int stall_streams; /* streams GetStreams lists in the stall figure */
    bool run_logins, run_partitions, run_stall, run_http;
    bool run_tls;        /* only with --only tls (it starts two servers of its own) */
    bool run_otel;       /* only with --only otel (four servers of its own) */
    bool run_ws;         /* only with --only ws (the same, the second reached over WebSocket) */
    bool run_encryption; /* only with --only encryption (two servers of its own) */
    bool run_cluster;    /* only with --only cluster (a node and a 3-node cluster of its own) */
} sb_options_t;

/* --- process plumbing (sluice_bench_proc.c) ------------------------------------- */

/* Prints "sluice-bench: <message>" to stderr, stops every child process the
 * bench started, removes its temporary directory and exits 1. */
__attribute__((noreturn, format(printf, 1, 2))) void sb_die(const char *fmt, ...);

/* SIGINT, SIGTERM, SIGHUP: kill the children, remove the temporary
 * directory, exit. SIGPIPE: ignored. */
void sb_signals_install(void);

/* A sluiced started by the bench, on 127.0.0.1 with an ephemeral port and a
 * fresh data directory under a temporary directory. */
typedef struct sb_sluiced {
    pid_t pid;
    uint16_t port;
    char dir[256];  /* the temporary directory: config, log, data/ */
    char data[320]; /* dir/data, the server's system.path */
    char log[320];
} sb_sluiced_t;

/* Starts sluiced with the root user user/password and waits until it
 * listens (20 s at most); dies on failure. */
void sb_sluiced_start(sb_sluiced_t *s, const char *binary, const char *parent_dir, const char *user,
                      const char *password);
/* The same with extra_config (may be NULL) appended to the generated file
 * and, for replica_id >= 0, `--replica-id replica_id` on the command line
 * (a cluster node). */
void sb_sluiced_start_with(sb_sluiced_t *s, const char *binary, const char *parent_dir,
                           const char *user, const char *password, const char *extra_config,
                           int replica_id);
/* SIGTERM, wait (10 s, then SIGKILL), remove the directory. */
void sb_sluiced_stop(sb_sluiced_t *s);

/* A temporary directory of the bench's own (besides sluiced's), removed by
 * sb_die and on Ctrl-C as sluiced's is; sb_temp_remove removes it now. */
void sb_temp_track(const char *dir);
void sb_temp_remove(const char *dir);

/* Registers a child for sb_die to kill (at most a few). */
void sb_child_track(pid_t pid);
void sb_child_untrack(pid_t pid);

/* Memory of a process from /proc/<pid>/status, in kB; false when unreadable. */
typedef struct sb_memory {
    long rss_kb, anon_kb, file_kb, hwm_kb, size_kb;
} sb_memory_t;
bool sb_memory_read(pid_t pid, sb_memory_t *out);
/* The resident set of a trivial C process (`sleep`) started and read now. */
bool sb_memory_of_sleep(sb_memory_t *out);
/* Prints the mappings of pid grouped by file name ([heap], [anon], ...),
 * largest resident set first, at most top lines, each line prefixed. */
void sb_smaps_print(pid_t pid, int top, const char *prefix);

/* CPU time pid's main thread has used, in ns (/proc/<pid>/schedstat); 0
 * when unreadable. */
uint64_t sb_cpu_ns(pid_t pid);
/* CPU time of a whole process (all threads, io_uring workers and threads
 * that already exited included) from /proc/<pid>/stat, in ns; clock-tick
 * resolution. 0 when unknown. */
uint64_t sb_process_cpu_ns(pid_t pid);

/* Sleeps for ms milliseconds. */
void sb_sleep_ms(unsigned ms);
/* A loopback port the kernel hands out now, closed for a server to take;
 * dies when none can be had. */
uint16_t sb_free_port(void);

/* --- statistics (sluice_bench_stats.c) ----------------------------------------- */

/* The median of n values (sorts v). */
double sb_median(double *v, int n);
/* The value below which a fraction q of the n samples lie (sorts v). */
uint64_t sb_percentile(uint64_t *v, size_t n, double q);

/* Per-trip latencies in ns, growing as trips are added; free ns. */
typedef struct sb_lat {
    uint64_t *ns;
    size_t n, cap;
} sb_lat_t;
/* Appends one latency (dies when memory runs out). */
void sb_lat_push(sb_lat_t *l, uint64_t ns);

/* --- ping (sluice_bench_ping.c) -------------------------------------------------- */

/* One lockstep connection: its request frame and the reply being assembled. */
typedef struct sb_conn {
    int fd;
    uint8_t frame[SL_HEADER_SIZE]; /* the PING request this connection sends */
    uint32_t have;                 /* reply bytes received so far */
    uint32_t need;                 /* reply bytes expected (the header's size) */
    uint32_t reply_size;           /* of the last complete reply */
    uint8_t reply[4096];
} sb_conn_t;

/* A TCP connection to 127.0.0.1:port (TCP_NODELAY, receive timeout). */
int sb_connect(const char *host, uint16_t port);
/* Logs conn in with a fresh client id (raw LoginRegister) and fills
 * conn->frame with a PING of that session. */
void sb_raw_login(sb_conn_t *conn, const char *user, const char *password);
/* Fills conn->frame with a PING outside any session (for the bare server,
 * which only counts bytes). */
void sb_raw_anonymous(sb_conn_t *conn);

/* The bare ping-pong server: a forked child with one epoll thread that reads
 * 256 bytes and answers 256 bytes per connection. Returns its pid. */
pid_t sb_bare_start(uint16_t *port, double lifetime_seconds);
void sb_bare_stop(pid_t pid);

/* Round trips each connection completes lockstep (send a frame, read the
 * whole reply, send again) within seconds, and at most trips_max in all. */
typedef struct sb_rate {
    uint64_t trips;
    uint64_t elapsed_ns;
} sb_rate_t;
sb_rate_t sb_pingpong(sb_conn_t *conns, int n, double seconds, uint64_t trips_max);
/* The same with libsluice's sl_client_ping on one logged-in client. */
sb_rate_t sb_client_ping(sl_client_t *client, double seconds, uint64_t trips_max);

static inline double sb_per_second(sb_rate_t r)
{
    return r.elapsed_ns ? (double)r.trips * 1e9 / (double)r.elapsed_ns : 0.0;
}

/* Runs the ping figures against host:port (server_pid 0: not ours, so its
 * CPU time is not read) and prints them. */
void sb_ping_run(const sb_options_t *o, const char *host, uint16_t port, pid_t server_pid);

/* --- TLS (sluice_bench_tls.c) ----------------------------------------------------- */

/* Starts a plain and a TLS sluiced and prints produce and consume over each. */
void sb_tls_run(const sb_options_t *o);
/* Telemetry (sluice_bench_otel.c): produce with the OpenTelemetry export off
 * (twice: the second is the noise), at the default sampling and tracing every
 * request, four servers in one run. */
void sb_otel_run(const sb_options_t *o);
/* The same figure over WebSocket (--only ws): plain TCP and WS side by side. */
void sb_ws_run(const sb_options_t *o);
/* The same with system.encryption.enabled on the second server (issue 15). */
void sb_encryption_run(const sb_options_t *o);

/* --- durable operations (sluice_bench_durable.c) ------------------------------- */

/* Runs the CreateStream figure and its fdatasync baseline and prints them. */
void sb_durable_run(const sb_options_t *o, const char *host, uint16_t port, const char *dir);

/* --- the message sink and the frame client (sluice_bench_sink.c) ------------------ */

/* What a sink request asks for (sb_sink_frame). */
enum {
    SB_SINK_WRITE = 1,      /* append the body to the write file; 256-byte reply */
    SB_SINK_WRITE_SYNC = 2, /* append the body to the fsync file + fdatasync; 256-byte reply */
    SB_SINK_READ = 3,       /* reply with read_length bytes of the write file (wrapping) */
    SB_SINK_RESET = 4,      /* truncate both files */
};

typedef struct sb_sink_files {
    char write_path[400];
    char sync_path[400];
} sb_sink_files_t;

/* The bare message sink: a forked child serving one connection at a time
 * with blocking I/O; its two files are created in dir. Returns its pid. */
pid_t sb_sink_start(const char *dir, uint16_t *port, double lifetime_seconds, sb_sink_files_t *f);
/* Stops it and removes its files. */
void sb_sink_stop(pid_t pid, const sb_sink_files_t *f);
/* Makes the first 256 bytes of frame a sink request of size bytes in all. */
void sb_sink_frame(uint8_t *frame, uint32_t size, uint32_t mode, uint32_t read_length);

/* One raw lockstep connection that sends whole frames and reads whole
 * replies (header, then size - 256 body bytes into reply). */
typedef struct sb_trip {
    int fd;
    const char *name; /* for error messages */
    uint8_t *reply;   /* the last reply's body, reply_len bytes; owned */
    size_t reply_len;
    size_t cap;
} sb_trip_t;

/* Sends all n bytes on a blocking socket (the send timeout bounds it). */
void sb_send_all(int fd, const void *p, size_t n);
/* Sends frame, receives the whole reply and checks it is a reply with
 * status 0 (dies otherwise); returns the reply's size, header included. */
size_t sb_frame_trip(sb_trip_t *t, const uint8_t *frame, size_t len);
void sb_trip_close(sb_trip_t *t);

/* --- messages (sluice_bench_messages.c) ---------------------------------------------- */

/* Runs the message figures (produce, consume, produce with enforce_fsync),
 * each next to the sink; sink files go to dir. server_pid 0: not ours. */
void sb_messages_run(const sb_options_t *o, const char *host, uint16_t port, const char *dir,
                     pid_t server_pid);

/* --- group commit (sluice_bench_group.c) -------------------------------------------- */

/* Small batches to one enforce_fsync partition from one producer and from
 * o->group_producers at once, beside the fsync sink; sink files go to dir. */
void sb_group_run(const sb_options_t *o, const char *host, uint16_t port, const char *dir);

/* --- many partitions (sluice_bench_partitions.c) ------------------------------------ */

/* Produce to o->partitions partitions round-robin beside one partition, with
 * sluiced's VmRSS while producing and after DeleteStream. Needs server_pid. */
void sb_partitions_run(const sb_options_t *o, const char *host, uint16_t port, pid_t server_pid);

/* --- logins (sluice_bench_logins.c) ------------------------------------------------- */

/* Ping latency on one connection alone and beside another connection's
 * repeated wrong-password logins, rounds alternating. */
void sb_logins_run(const sb_options_t *o, const char *host, uint16_t port);

/* --- stall (sluice_bench_stall.c) ---------------------------------------------------- */

/* Ping latency from one client while another runs each heavy request (issue 10), next to
 * pings alone; prints the figures. */
void sb_stall_run(const sb_options_t *o, const char *host, uint16_t port);

/* --- cluster (sluice_bench_cluster.c) --------------------------------------------- */

/* Metadata operations per second and their latency on one node next to a
 * 3-node cluster's leader, both started here, rounds alternating. */
void sb_cluster_run(const sb_options_t *o);

/* What the message figures (sluice_bench_cluster_msgs.c) need of a side:
 * where its leader listens, and every node's port and pid. */
typedef struct sb_cluster_side {
    const char *name;
    int count;
    uint16_t leader_port;
    uint16_t ports[3];
    pid_t pids[3];
} sb_cluster_side_t;
/* Produce and consume of --batch-messages x --message-bytes batches on a
 * plain and an enforce_fsync topic, on both sides (1 node, 3 nodes),
 * rounds alternating; prints rates, trip p50/p99, server CPU per MB, and
 * whether the backups hold the leader's messages. */
void sb_cluster_messages_run(const sb_options_t *o, const sb_cluster_side_t sides[2]);

/* --- http (sluice_bench_http.c) --------------------------------------------------- */

/* GetStream over the HTTP API next to the binary protocol, same server, same
 * run. Needs the server the bench started (own), whose log names its HTTP
 * port. */
void sb_http_run(const sb_options_t *o, const sb_sluiced_t *own, const char *host, uint16_t port);

#endif
