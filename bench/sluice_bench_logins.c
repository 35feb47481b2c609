/* sluice-bench logins: ping latency on one lockstep connection while another
 * connection logs in again and again with a wrong password (each login is an
 * Argon2id check, 70-105 ms), beside the same pings with no logins, in the
 * same run. A server that hashes on its event loop makes every ping that
 * arrives during a check wait for it; one that hashes elsewhere does not. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"
#include "wire/cmd_users.h"
#include "wire/codec.h"

enum {
    PINGS_PER_ROUND_MAX = 200000, /* bounds the sample arrays */
    LOGIN_REPLY_MAX = 4096,
};

typedef struct hammer {
    const char *host;
    uint16_t port;
    const char *user;
    atomic_bool stop;
    atomic_uint_fast64_t logins; /* answered */
    pthread_t thread;
} hammer_t;

static void login_frame(sl_buf_t *out, const char *user)
{
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_login_register_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("sluice-bench"), sl_span_str("0.1.0")},
        .login = {sl_span_str(user), sl_span_str("not-the-password"), sl_span(NULL, 0)},
    };
    sl_u128_t client = {0, 0};
    while (sl_u128_is_zero(client))
        if (getrandom(&client, sizeof(client), 0) != sizeof(client))
            sb_die("getrandom: %s", strerror(errno));
    if (sl_login_register_request_encode(&body, &q) != 0)
        sb_die("cannot encode a login");
    sl_request_header_t h = {
        .size = (uint32_t)(SL_HEADER_SIZE + body.len),
        .client = client,
        .request_checksum = sl_request_checksum(sl_buf_span(&body)),
        .operation = SL_OP_REGISTER,
    };
    uint8_t head[SL_HEADER_SIZE];
    sl_request_header_encode(head, &h);
    sl_put_bytes(out, head, sizeof(head));
    sl_put_span(out, sl_buf_span(&body));
    sl_buf_free(&body);
}

static void recv_exact(int fd, uint8_t *p, size_t n)
{
    size_t have = 0;
    while (have < n) {
        ssize_t got = recv(fd, p + have, n - have, 0);
        if (got <= 0 && !(got < 0 && errno == EINTR))
            sb_die("login connection: %s", got == 0 ? "closed" : strerror(errno));
        if (got > 0)
            have += (size_t)got;
    }
}

/* Lockstep: one wrong login, its answer (an eviction, 256 bytes; the
 * connection stays open), the next. */
static void *hammer_main(void *arg)
{
    hammer_t *h = arg;
    int fd = sb_connect(h->host, h->port);
    sl_buf_t frame;
    sl_buf_init(&frame, 0);
    login_frame(&frame, h->user);
    uint8_t reply[LOGIN_REPLY_MAX];
    while (!atomic_load(&h->stop)) {
        sb_send_all(fd, frame.data, frame.len);
        recv_exact(fd, reply, SL_HEADER_SIZE);
        uint32_t size = sl_load_u32(reply + SL_HDR_OFF_SIZE);
        if (size < SL_HEADER_SIZE || size > sizeof(reply))
            sb_die("login connection: a %u-byte answer", size);
        recv_exact(fd, reply + SL_HEADER_SIZE, size - SL_HEADER_SIZE);
        atomic_fetch_add(&h->logins, 1);
    }
    sl_buf_free(&frame);
    close(fd);
    return NULL;
}

/* Round-trip times of pings for seconds, in ns, appended to v. */
static size_t ping_for(sb_conn_t *c, double seconds, uint64_t *v, size_t n, size_t cap)
{
    uint64_t deadline = sl_clock_monotonic_ns() + (uint64_t)(seconds * 1e9);
    while (n < cap && sl_clock_monotonic_ns() < deadline) {
        sb_rate_t one = sb_pingpong(c, 1, 1.0, 1);
        v[n++] = one.elapsed_ns;
    }
    return n;
}

static void print_row(const char *name, uint64_t *v, size_t n, const char *extra)
{
    printf("  %-34s %8zu %9.3f %9.3f %9.3f  %s\n", name, n, (double)sb_percentile(v, n, 0.5) / 1e6,
           (double)sb_percentile(v, n, 0.99) / 1e6, (double)sb_percentile(v, n, 1.0) / 1e6, extra);
}

void sb_logins_run(const sb_options_t *o, const char *host, uint16_t port)
{
    size_t cap = (size_t)o->rounds * PINGS_PER_ROUND_MAX;
    uint64_t *alone = calloc(cap, sizeof(uint64_t)), *beside = calloc(cap, sizeof(uint64_t));
    if (!alone || !beside)
        sb_die("out of memory");
    sb_conn_t ping = {.fd = sb_connect(host, port)};
    sb_raw_login(&ping, o->user, o->password);
    size_t na = 0, nb = 0;
    uint64_t logins = 0, login_ns = 0;
    /* Rounds alternate so that drift on the shared machine hits both. */
    for (int r = 0; r < o->rounds; r++) {
        na = ping_for(&ping, o->seconds, alone, na, cap);
        hammer_t h = {.host = host, .port = port, .user = o->user};
        if (pthread_create(&h.thread, NULL, hammer_main, &h) != 0)
            sb_die("pthread_create failed");
        uint64_t t0 = sl_clock_monotonic_ns();
        nb = ping_for(&ping, o->seconds, beside, nb, cap);
        atomic_store(&h.stop, true);
        pthread_join(h.thread, NULL);
        login_ns += sl_clock_monotonic_ns() - t0;
        logins += atomic_load(&h.logins);
    }
    close(ping.fd);
    printf("\nPing round trips on one connection while another logs in with a wrong password,\n"
           "lockstep, %d rounds of %.1f s each (ms)\n",
           o->rounds, o->seconds);
    printf("  %-34s %8s %9s %9s %9s  %s\n", "", "pings", "p50", "p99", "max", "logins");
    print_row("pings alone (baseline)", alone, na, "-");
    char extra[64];
    snprintf(extra, sizeof(extra), "%llu (%.1f/s)", (unsigned long long)logins,
             login_ns ? (double)logins * 1e9 / (double)login_ns : 0.0);
    print_row("pings beside repeated logins", beside, nb, extra);
    free(alone);
    free(beside);
}
