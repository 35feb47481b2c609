/* sluice-bench side-by-side figures: the same producer and consumer against
 * two sluiced processes started here, one plain and one with a feature on,
 * in one run.
 * - TLS (issue 11): tcp.tls.enabled (its ephemeral self-signed certificate;
 *   the client turns verification off, which only concerns the handshake,
 *   done once before timing).
 * - Encryption at rest (issue 15): system.encryption.enabled with a key
 *   made here.
 * libsluice sends batches of 1024 x 1 KiB messages (1 MiB per request) to a
 * 1-partition topic and polls them back 1024 at a time; the two servers
 * take turns in slices within each round, and the figure is the median of
 * the per-round ratio feature / plain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    TLS_ROUNDS_MAX = 64,
    TLS_SLICES = 4,
    TLS_MESSAGES = 1024,
    TLS_MESSAGE_BYTES = 1024,
    TLS_TRIPS_MAX = 100000,
};

enum { SIDE_PLAIN, SIDE_TLS, SIDES };

/* What the second server has on. */
typedef enum pair_kind { PAIR_TLS, PAIR_ENCRYPTION } pair_kind_t;
static const char *const side_names[2][SIDES] = {{"plain TCP", "TCP-TLS"},
                                                 {"unencrypted", "encrypted at rest"}};
static const char *const short_names[2][SIDES] = {{"plain", "TLS"}, {"plain", "encrypted"}};

typedef struct tls_side {
    sb_sluiced_t server;
    sl_client_t *client;
    uint64_t produced; /* messages in the partition */
    uint64_t cursor;   /* the consumer's next offset */
    /* The server's loop-thread CPU time and the payload bytes moved, per
     * direction: CPU per MB does not depend on how busy the machine is. */
    uint64_t cpu_ns[2];
    uint64_t bytes[2];
} tls_side_t;

static void tls_side_open(tls_side_t *s, const sb_options_t *o, pair_kind_t kind, bool on)
{
    /* The child takes its settings from the environment (tls.md 2). */
    bool tls = kind == PAIR_TLS && on;
    if (tls)
        setenv("IGGY_TCP_TLS_ENABLED", "true", 1);
    setenv("IGGY_TCP_TLS_CERT_FILE", "/nonexistent/sluice-bench-cert.pem", 1);
    if (kind == PAIR_ENCRYPTION && on) {
        /* A fixed key is fine: the data is thrown away with the run. */
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
                                .tls_enabled = tls,
                                .tls_validate_certificate = SL_CLIENT_TLS_VALIDATE_OFF};
    if (sl_client_connect("127.0.0.1", s->server.port, &opts, &s->client) != 0 ||
        sl_client_login(s->client, o->user, o->password, NULL) != 0 ||
        sl_client_create_stream(s->client, "tls-bench", NULL) != 0 ||
        sl_client_create_topic(s->client, sl_id_name("tls-bench"), "t", 1, NULL, NULL) != 0)
        sb_die("cannot set up the %s server", side_names[kind][on]);
}

static void tls_side_close(tls_side_t *s)
{
    sl_client_close(s->client);
    sb_sluiced_stop(&s->server);
}

/* One slice of sends: MB/s. */
static double produce_slice(tls_side_t *s, const sl_send_message_t *m, double seconds)
{
    uint64_t start = sl_clock_monotonic_us(), end = start + (uint64_t)(seconds * 1e6);
    uint64_t trips = 0, now = start, cpu = sb_cpu_ns(s->server.pid);
    while (trips < TLS_TRIPS_MAX && (now = sl_clock_monotonic_us()) < end) {
        if (sl_client_send_messages(s->client, sl_id_name("tls-bench"), sl_id_name("t"),
                                    sl_partitioning_partition(0), m, TLS_MESSAGES, NULL) != 0)
            sb_die("SendMessages failed");
        trips++;
    }
    s->produced += trips * TLS_MESSAGES;
    s->cpu_ns[0] += sb_cpu_ns(s->server.pid) - cpu;
    s->bytes[0] += trips * TLS_MESSAGES * TLS_MESSAGE_BYTES;
    now = sl_clock_monotonic_us();
    return (double)(trips * TLS_MESSAGES * TLS_MESSAGE_BYTES) / (double)(now - start);
}

/* One slice of polls from the cursor (wrapping to 0 at the end): MB/s. */
static double consume_slice(tls_side_t *s, double seconds)
{
    uint64_t start = sl_clock_monotonic_us(), end = start + (uint64_t)(seconds * 1e6);
    uint64_t bytes = 0, trips = 0, cpu = sb_cpu_ns(s->server.pid);
    while (trips < TLS_TRIPS_MAX && sl_clock_monotonic_us() < end) {
        if (s->cursor + TLS_MESSAGES > s->produced)
            s->cursor = 0;
        sl_polled_messages_t got;
        if (sl_client_poll_messages(s->client, sl_consumer_single(sl_id_num(1)),
                                    sl_id_name("tls-bench"), sl_id_name("t"), 0,
                                    sl_poll_offset(s->cursor), TLS_MESSAGES, false, &got) != 0 ||
            got.count == 0)
            sb_die("PollMessages failed");
        for (uint32_t i = 0; i < got.count; i++)
            bytes += got.messages[i].payload_len;
        s->cursor += got.count;
        trips++;
    }
    s->cpu_ns[1] += sb_cpu_ns(s->server.pid) - cpu;
    s->bytes[1] += bytes;
    return (double)bytes / (double)(sl_clock_monotonic_us() - start);
}

static void tls_report(pair_kind_t kind, const char *what, double rate[SIDES][TLS_ROUNDS_MAX],
                       int rounds)
{
    double ratio[TLS_ROUNDS_MAX], plain[TLS_ROUNDS_MAX], tls[TLS_ROUNDS_MAX];
    for (int r = 0; r < rounds; r++) {
        ratio[r] = rate[SIDE_TLS][r] / rate[SIDE_PLAIN][r];
        plain[r] = rate[SIDE_PLAIN][r];
        tls[r] = rate[SIDE_TLS][r];
    }
    const char *on = short_names[kind][SIDE_TLS];
    printf("  %-8s plain %7.1f MB/s   %s %7.1f MB/s   %s/plain %.2f (median of %d rounds)\n",
           what, sb_median(plain, rounds), on, sb_median(tls, rounds), on,
           sb_median(ratio, rounds), rounds);
}

static void pair_run(const sb_options_t *o, pair_kind_t kind)
{
    static tls_side_t sides[SIDES];
    static double produce[SIDES][TLS_ROUNDS_MAX], consume[SIDES][TLS_ROUNDS_MAX];
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
        tls_side_open(&sides[side], o, kind, side == SIDE_TLS);
    printf("\n%s (%d x %d-byte messages per batch, libsluice, %d rounds of %d slices of %.2f s "
           "per figure and side; %s)\n",
           kind == PAIR_TLS ? "TLS" : "Encryption at rest", TLS_MESSAGES, TLS_MESSAGE_BYTES,
           rounds, TLS_SLICES, o->message_seconds / TLS_SLICES,
           kind == PAIR_TLS ? "TLS 1.3, AES-128-GCM" : "AES-256-GCM on disk, system.encryption");
    double slice = o->message_seconds / TLS_SLICES;
    for (int r = 0; r < rounds; r++) {
        double sum_p[SIDES] = {0}, sum_c[SIDES] = {0};
        /* Sides alternate slice by slice, so both meet the same noise. */
        for (int k = 0; k < TLS_SLICES; k++)
            for (int side = 0; side < SIDES; side++)
                sum_p[side] += produce_slice(&sides[side], m, slice);
        for (int k = 0; k < TLS_SLICES; k++)
            for (int side = 0; side < SIDES; side++)
                sum_c[side] += consume_slice(&sides[side], slice);
        for (int side = 0; side < SIDES; side++) {
            produce[side][r] = sum_p[side] / TLS_SLICES;
            consume[side][r] = sum_c[side] / TLS_SLICES;
        }
    }
    tls_report(kind, "produce", produce, rounds);
    tls_report(kind, "consume", consume, rounds);
    for (int dir = 0; dir < 2; dir++) {
        double us[SIDES];
        for (int side = 0; side < SIDES; side++)
            us[side] = sides[side].bytes[dir]
                           ? (double)sides[side].cpu_ns[dir] / 1e3 /
                                 ((double)sides[side].bytes[dir] / 1e6)
                           : 0;
        printf("  %-8s server loop CPU per MB: plain %6.0f us   %s %6.0f us   ratio %.2f\n",
               dir ? "consume" : "produce", us[SIDE_PLAIN], short_names[kind][SIDE_TLS],
               us[SIDE_TLS], us[SIDE_PLAIN] > 0 ? us[SIDE_TLS] / us[SIDE_PLAIN] : 0);
    }
    for (int side = 0; side < SIDES; side++)
        tls_side_close(&sides[side]);
    free(m);
    free(payloads);
}

void sb_tls_run(const sb_options_t *o)
{
    pair_run(o, PAIR_TLS);
}

void sb_encryption_run(const sb_options_t *o)
{
    pair_run(o, PAIR_ENCRYPTION);
}
