/* sluice-bench TLS, WebSocket (issue 11) and encryption-at-rest (issue 15)
 * figures: the same producer and consumer against a plain server and one
 * with the feature, in one run. Two sluiced processes are started: for TLS
 * one with tcp.tls.enabled (its ephemeral self-signed certificate; the
 * client turns verification off, which only concerns the handshake, done
 * once before timing); for WebSocket both plain, the second reached on its
 * WebSocket door; for encryption the second with system.encryption.enabled
 * and a key made here. libsluice sends batches
 * of 1024 x 1 KiB messages (1 MiB per request) to a 1-partition topic and
 * polls them back 1024 at a time (for encryption twice: a backlog consumer
 * reading data older than the plaintext tail, every message opened, and a
 * tail consumer reading the newest 8 MiB, served from that tail); the two
 * servers take turns in slices
 * within each round, and the figure is the median of the per-round ratio
 * door / plain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    TLS_ROUNDS_MAX = 64,
    TLS_SLICES = 4,
    TLS_MESSAGES = 1024,
    TLS_MESSAGE_BYTES = 1024,
    TLS_TRIPS_MAX = 100000,
    /* Encryption: tail polls stay within the newest TAIL_BATCHES batches
     * (8 MiB, well inside the default 32 MiB plaintext tail); backlog polls
     * stay clear of the newest COLD_BATCHES (64 MiB, twice that tail). */
    TAIL_BATCHES = 8,
    COLD_BATCHES = 64,
};

enum { SIDE_PLAIN, SIDE_DOOR, SIDES };

/* The door measured beside plain TCP. */
typedef enum door_kind { DOOR_TLS, DOOR_WS, DOOR_ENCRYPTION } door_kind_t;
static const char *const door_names[] = {"TCP-TLS", "WebSocket", "Encryption at rest"};
static const char *const door_short[] = {"TLS", "WS", "enc"};

enum { PHASE_PRODUCE, PHASE_CONSUME, PHASE_TAIL, PHASES };

typedef struct tls_side {
    sb_sluiced_t server;
    sl_client_t *client;
    uint64_t produced; /* messages in the partition */
    uint64_t cursor;   /* the consumer's next offset */
    /* Over all rounds, per phase: payload bytes moved, CPU of the server
     * process and of the bench's thread (the client), in ns. */
    uint64_t bytes[PHASES], server_cpu[PHASES], client_cpu[PHASES];
} tls_side_t;

/* The WebSocket port of a server the bench started (its log line, written
 * before "listening on", which sb_sluiced_start waited for). */
static uint16_t ws_port_of(const sb_sluiced_t *s)
{
    static const char key[] = "serving WebSocket on 127.0.0.1:";
    FILE *f = fopen(s->log, "r");
    char line[512];
    uint16_t port = 0;
    while (f && port == 0 && fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, key);
        if (p)
            port = (uint16_t)atoi(p + strlen(key));
    }
    if (f)
        fclose(f);
    return port;
}

static void tls_side_open(tls_side_t *s, const sb_options_t *o, int side, door_kind_t kind)
{
    bool tls = side == SIDE_DOOR && kind == DOOR_TLS;
    bool ws = side == SIDE_DOOR && kind == DOOR_WS;
    bool sealed = side == SIDE_DOOR && kind == DOOR_ENCRYPTION;
    memset(s, 0, sizeof(*s)); /* counts start over: a run may follow another's */
    /* The child takes the door from the environment (tls.md 2). */
    if (tls)
        setenv("IGGY_TCP_TLS_ENABLED", "true", 1);
    setenv("IGGY_TCP_TLS_CERT_FILE", "/nonexistent/sluice-bench-cert.pem", 1);
    if (sealed) { /* a fixed key is fine: the data is thrown away with the run */
        setenv("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true", 1);
        setenv("IGGY_SYSTEM_ENCRYPTION_KEY", "c2x1aWNlLWJlbmNoIGtleSwgMzIgYnl0ZXMgbG9uZyE=", 1);
    }
    sb_sluiced_start(&s->server, o->sluiced, o->dir, o->user, o->password);
    unsetenv("IGGY_TCP_TLS_ENABLED");
    unsetenv("IGGY_TCP_TLS_CERT_FILE");
    unsetenv("IGGY_SYSTEM_ENCRYPTION_ENABLED");
    unsetenv("IGGY_SYSTEM_ENCRYPTION_KEY");
    sl_client_options_t opts = {.connect_timeout_ms = 10000,
                                .request_timeout_ms = 60000,
                                .transport = ws ? SL_CLIENT_WEBSOCKET : SL_CLIENT_TCP,
                                .tls_enabled = tls,
                                .tls_validate_certificate = SL_CLIENT_TLS_VALIDATE_OFF};
    uint16_t port = ws ? ws_port_of(&s->server) : s->server.port;
    if (port == 0)
        sb_die("the WebSocket door's port is not in %s", s->server.log);
    if (sl_client_connect("127.0.0.1", port, &opts, &s->client) != 0 ||
        sl_client_login(s->client, o->user, o->password, NULL) != 0 ||
        sl_client_create_stream(s->client, "tls-bench", NULL) != 0 ||
        sl_client_create_topic(s->client, sl_id_name("tls-bench"), "t", 1, NULL, NULL) != 0)
        sb_die("cannot set up the %s server", side == SIDE_DOOR ? door_names[kind] : "plain TCP");
}

static void tls_side_close(tls_side_t *s)
{
    sl_client_close(s->client);
    sb_sluiced_stop(&s->server);
}

/* One slice of sends: MB/s. */
static double produce_slice(tls_side_t *s, const sl_send_message_t *m, double seconds)
{
    uint64_t server0 = sb_process_cpu_ns(s->server.pid), client0 = sl_clock_thread_cpu_ns();
    uint64_t start = sl_clock_monotonic_us(), end = start + (uint64_t)(seconds * 1e6);
    uint64_t trips = 0, now = start;
    while (trips < TLS_TRIPS_MAX && (now = sl_clock_monotonic_us()) < end) {
        int rc = sl_client_send_messages(s->client, sl_id_name("tls-bench"), sl_id_name("t"),
                                         sl_partitioning_partition(0), m, TLS_MESSAGES, NULL);
        if (rc != 0)
            sb_die("SendMessages failed (%d)", rc);
        trips++;
    }
    s->produced += trips * TLS_MESSAGES;
    now = sl_clock_monotonic_us();
    s->bytes[PHASE_PRODUCE] += trips * TLS_MESSAGES * TLS_MESSAGE_BYTES;
    s->server_cpu[PHASE_PRODUCE] += sb_process_cpu_ns(s->server.pid) - server0;
    s->client_cpu[PHASE_PRODUCE] += sl_clock_thread_cpu_ns() - client0;
    return (double)(trips * TLS_MESSAGES * TLS_MESSAGE_BYTES) / (double)(now - start);
}

/* The offsets a consume slice reads, [*from, *to): everything for TLS and
 * WebSocket; for encryption the newest TAIL_BATCHES batches (tail) or all
 * but the newest COLD_BATCHES (backlog: older than the plaintext tail, so
 * every message is opened; while too little is stored for that, all). */
static void consume_range(const tls_side_t *s, int phase, bool sealed, uint64_t *from,
                          uint64_t *to)
{
    uint64_t tail = (uint64_t)TAIL_BATCHES * TLS_MESSAGES;
    uint64_t cold = (uint64_t)COLD_BATCHES * TLS_MESSAGES;
    *from = 0;
    *to = s->produced;
    if (sealed && phase == PHASE_TAIL && s->produced > tail)
        *from = s->produced - tail;
    else if (sealed && phase == PHASE_CONSUME && s->produced > cold + TLS_MESSAGES)
        *to = s->produced - cold;
}

/* One slice of polls from the cursor (wrapping to the range's start at its
 * end): MB/s. */
static double consume_slice(tls_side_t *s, double seconds, int phase, bool sealed)
{
    uint64_t from, to;
    consume_range(s, phase, sealed, &from, &to);
    if (s->cursor < from || s->cursor >= to)
        s->cursor = from;
    uint64_t server0 = sb_process_cpu_ns(s->server.pid), client0 = sl_clock_thread_cpu_ns();
    uint64_t start = sl_clock_monotonic_us(), end = start + (uint64_t)(seconds * 1e6);
    uint64_t bytes = 0, trips = 0;
    while (trips < TLS_TRIPS_MAX && sl_clock_monotonic_us() < end) {
        if (s->cursor + TLS_MESSAGES > to)
            s->cursor = from;
        sl_polled_messages_t got;
        int rc = sl_client_poll_messages(s->client, sl_consumer_single(sl_id_num(1)),
                                         sl_id_name("tls-bench"), sl_id_name("t"), 0,
                                         sl_poll_offset(s->cursor), TLS_MESSAGES, false, &got);
        if (rc != 0 || got.count == 0)
            sb_die("PollMessages failed (%d, %u messages)", rc, rc ? 0u : got.count);
        for (uint32_t i = 0; i < got.count; i++)
            bytes += got.messages[i].payload_len;
        s->cursor += got.count;
        trips++;
    }
    uint64_t us = sl_clock_monotonic_us() - start;
    s->bytes[phase] += bytes;
    s->server_cpu[phase] += sb_process_cpu_ns(s->server.pid) - server0;
    s->client_cpu[phase] += sl_clock_thread_cpu_ns() - client0;
    return (double)bytes / (double)us;
}

static void tls_report(const char *what, door_kind_t kind, double rate[SIDES][TLS_ROUNDS_MAX],
                       int rounds, const tls_side_t sides[SIDES], int phase)
{
    double ratio[TLS_ROUNDS_MAX], plain[TLS_ROUNDS_MAX], door[TLS_ROUNDS_MAX];
    for (int r = 0; r < rounds; r++) {
        ratio[r] = rate[SIDE_DOOR][r] / rate[SIDE_PLAIN][r];
        plain[r] = rate[SIDE_PLAIN][r];
        door[r] = rate[SIDE_DOOR][r];
    }
    printf("  %-8s plain %7.1f MB/s   %-3s %7.1f MB/s   %s/plain %.2f (median of %d rounds)\n",
           what, sb_median(plain, rounds), door_short[kind], sb_median(door, rounds),
           door_short[kind], sb_median(ratio, rounds), rounds);
    /* CPU per MB is steadier than a rate on a shared machine: it says what
     * the door costs whatever else runs. */
    double mb[SIDES];
    for (int side = 0; side < SIDES; side++)
        mb[side] = (double)sides[side].bytes[phase] / 1e6;
    if (mb[SIDE_PLAIN] > 0 && mb[SIDE_DOOR] > 0)
        printf("  %-8s CPU ms/MB: server plain %.2f, %s %.2f; client plain %.2f, %s %.2f\n", "",
               (double)sides[SIDE_PLAIN].server_cpu[phase] / 1e6 / mb[SIDE_PLAIN], door_short[kind],
               (double)sides[SIDE_DOOR].server_cpu[phase] / 1e6 / mb[SIDE_DOOR],
               (double)sides[SIDE_PLAIN].client_cpu[phase] / 1e6 / mb[SIDE_PLAIN], door_short[kind],
               (double)sides[SIDE_DOOR].client_cpu[phase] / 1e6 / mb[SIDE_DOOR]);
}

static void door_run(const sb_options_t *o, door_kind_t kind)
{
    static tls_side_t sides[SIDES];
    static double produce[SIDES][TLS_ROUNDS_MAX], consume[SIDES][TLS_ROUNDS_MAX],
        tail[SIDES][TLS_ROUNDS_MAX];
    bool sealed = kind == DOOR_ENCRYPTION;
    int rounds = o->rounds < TLS_ROUNDS_MAX ? o->rounds : TLS_ROUNDS_MAX;
    uint8_t *payloads = calloc(TLS_MESSAGES, TLS_MESSAGE_BYTES);
    sl_send_message_t *m = calloc(TLS_MESSAGES, sizeof(*m));
    if (!payloads || !m)
        sb_die("out of memory");
    for (size_t i = 0; i < (size_t)TLS_MESSAGES * TLS_MESSAGE_BYTES; i++)
        payloads[i] = (uint8_t)(i * 2654435761u >> 13);
    for (int i = 0; i < TLS_MESSAGES; i++)
        m[i] = (sl_send_message_t){.payload = payloads + (size_t)i * TLS_MESSAGE_BYTES,
                                   .payload_len = TLS_MESSAGE_BYTES};
    for (int side = 0; side < SIDES; side++)
        tls_side_open(&sides[side], o, side, kind);
    printf("\n%s (%d x %d-byte messages per batch, libsluice, %d rounds of %d slices of %.2f s "
           "per figure and side%s)\n",
           door_names[kind], TLS_MESSAGES, TLS_MESSAGE_BYTES, rounds, TLS_SLICES,
           o->message_seconds / TLS_SLICES,
           kind == DOOR_TLS  ? "; TLS 1.3, AES-128-GCM"
           : kind == DOOR_WS ? "; one binary message per frame"
                             : "; AES-256-GCM on disk, system.encryption; backlog: polls "
                               "older than the newest 64 MiB, tail: of the newest 8 MiB");
    double slice = o->message_seconds / TLS_SLICES;
    for (int r = 0; r < rounds; r++) {
        double sum_p[SIDES] = {0}, sum_c[SIDES] = {0}, sum_t[SIDES] = {0};
        /* Sides alternate slice by slice, so both meet the same noise. */
        for (int k = 0; k < TLS_SLICES; k++)
            for (int side = 0; side < SIDES; side++)
                sum_p[side] += produce_slice(&sides[side], m, slice);
        for (int k = 0; k < TLS_SLICES; k++)
            for (int side = 0; side < SIDES; side++)
                sum_c[side] += consume_slice(&sides[side], slice, PHASE_CONSUME, sealed);
        for (int k = 0; sealed && k < TLS_SLICES; k++)
            for (int side = 0; side < SIDES; side++)
                sum_t[side] += consume_slice(&sides[side], slice, PHASE_TAIL, sealed);
        for (int side = 0; side < SIDES; side++) {
            produce[side][r] = sum_p[side] / TLS_SLICES;
            consume[side][r] = sum_c[side] / TLS_SLICES;
            tail[side][r] = sum_t[side] / TLS_SLICES;
        }
    }
    tls_report("produce", kind, produce, rounds, sides, PHASE_PRODUCE);
    tls_report(sealed ? "backlog" : "consume", kind, consume, rounds, sides, PHASE_CONSUME);
    if (sealed)
        tls_report("tail", kind, tail, rounds, sides, PHASE_TAIL);
    for (int side = 0; side < SIDES; side++)
        tls_side_close(&sides[side]);
    free(m);
    free(payloads);
}

void sb_tls_run(const sb_options_t *o)
{
    door_run(o, DOOR_TLS);
}

void sb_ws_run(const sb_options_t *o)
{
    door_run(o, DOOR_WS);
}

void sb_encryption_run(const sb_options_t *o)
{
    door_run(o, DOOR_ENCRYPTION);
}
