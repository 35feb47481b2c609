/* sluice-bench http: the latency of a GetStream over Iggy's HTTP API next
 * to the same GetStream over the binary protocol, on the same server in the
 * same run, rounds interleaved. Both are lockstep on one kept-alive
 * connection: libsluice's sl_client_get_stream on TCP, and a minimal
 * HTTP/1.1 client (GET /streams/{id} with a bearer) on the HTTP port. The
 * difference is what the HTTP door costs: libmicrohttpd, the bearer check,
 * the hand-off over an internal session and the JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"

enum {
    REQUESTS_PER_ROUND = 2000,
    HTTP_REPLY_MAX = 64 * 1024,
};

/* The HTTP port of the server the bench started (its log line). */
static uint16_t http_port_of(const sb_sluiced_t *s)
{
    for (int i = 0; i < 250; i++) {
        FILE *f = fopen(s->log, "r");
        char line[512];
        while (f && fgets(line, sizeof(line), f)) {
            const char *p = strstr(line, "HTTP API on 127.0.0.1:");
            if (p) {
                fclose(f);
                return (uint16_t)atoi(p + strlen("HTTP API on 127.0.0.1:"));
            }
        }
        if (f)
            fclose(f);
        sb_sleep_ms(20);
    }
    return 0;
}

static void send_text(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
        if (n <= 0)
            sb_die("http: send: %s", strerror(errno));
        text += n;
        len -= (size_t)n;
    }
}

/* Reads one response (headers, then Content-Length bytes) into buf; returns
 * the status. The server keeps the connection open between requests. */
static int read_response(int fd, char *buf, size_t cap, const char **body)
{
    size_t have = 0;
    char *end = NULL;
    while (!(end = strstr(buf, "\r\n\r\n"))) {
        ssize_t n = recv(fd, buf + have, cap - 1 - have, 0);
        if (n <= 0)
            sb_die("http: connection closed (%s)", n < 0 ? strerror(errno) : "EOF");
        have += (size_t)n;
        buf[have] = '\0';
    }
    const char *cl = strstr(buf, "Content-Length:");
    size_t want = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
    size_t head = (size_t)(end + 4 - buf);
    if (head + want >= cap)
        sb_die("http: response too large");
    while (have < head + want) {
        ssize_t n = recv(fd, buf + have, cap - 1 - have, 0);
        if (n <= 0)
            sb_die("http: connection closed in a body");
        have += (size_t)n;
    }
    buf[have] = '\0';
    *body = buf + head;
    return atoi(buf + 9);
}

static void http_login(int fd, const sb_options_t *o, char *token, size_t cap)
{
    char req[512], body[256];
    int blen = snprintf(body, sizeof(body), "{\"username\":\"%s\",\"password\":\"%s\"}", o->user,
                        o->password);
    int n = snprintf(req, sizeof(req),
                     "POST /users/login HTTP/1.1\r\nHost: bench\r\nContent-Type: "
                     "application/json\r\nContent-Length: %d\r\n\r\n%s",
                     blen, body);
    send_text(fd, req, (size_t)n);
    static char reply[HTTP_REPLY_MAX];
    reply[0] = '\0';
    const char *b;
    if (read_response(fd, reply, sizeof(reply), &b) != 200)
        sb_die("http: login refused: %s", reply);
    const char *t = strstr(b, "\"token\":\"");
    if (!t)
        sb_die("http: no token in %s", b);
    t += 9;
    size_t len = strcspn(t, "\"");
    if (len >= cap)
        sb_die("http: token too long");
    memcpy(token, t, len);
    token[len] = '\0';
}

static void http_round(int fd, const char *request, size_t len, sb_lat_t *lat)
{
    static char reply[HTTP_REPLY_MAX];
    for (int i = 0; i < REQUESTS_PER_ROUND; i++) {
        uint64_t t0 = sl_clock_monotonic_ns();
        send_text(fd, request, len);
        reply[0] = '\0';
        const char *body;
        if (read_response(fd, reply, sizeof(reply), &body) != 200)
            sb_die("http: GET refused: %s", reply);
        sb_lat_push(lat, sl_clock_monotonic_ns() - t0);
    }
}

static void tcp_round(sl_client_t *c, uint32_t stream, sb_lat_t *lat)
{
    for (int i = 0; i < REQUESTS_PER_ROUND; i++) {
        uint64_t t0 = sl_clock_monotonic_ns();
        const sl_stream_t *s;
        if (sl_client_get_stream(c, sl_id_num(stream), &s) != 0 || !s)
            sb_die("tcp: GetStream failed");
        sb_lat_push(lat, sl_clock_monotonic_ns() - t0);
    }
}

static void report(const char *name, sb_lat_t *lat)
{
    double p50 = (double)sb_percentile(lat->ns, lat->n, 0.50) / 1000.0;
    double p99 = (double)sb_percentile(lat->ns, lat->n, 0.99) / 1000.0;
    printf("  %-34s %8zu  p50 %8.1f us  p99 %8.1f us  %8.0f req/s\n", name, lat->n, p50, p99,
           p50 > 0 ? 1e6 / p50 : 0.0);
}

void sb_http_run(const sb_options_t *o, const sb_sluiced_t *own, const char *host, uint16_t port)
{
    printf("\nhttp: GetStream over the HTTP API beside the binary protocol (%d rounds of %d, "
           "interleaved, one lockstep connection each)\n",
           o->rounds, REQUESTS_PER_ROUND);
    uint16_t http_port = own && own->pid > 0 ? http_port_of(own) : 0;
    if (http_port == 0) {
        printf("  skipped: no HTTP port (a server started elsewhere, or HTTP off)\n");
        return;
    }
    sl_client_t *c = NULL;
    if (sl_client_connect(host, port, NULL, &c) != 0 ||
        sl_client_login(c, o->user, o->password, NULL) != 0)
        sb_die("tcp: cannot log in");
    const sl_stream_t *st;
    if (sl_client_create_stream(c, "bench-http", &st) != 0)
        sb_die("tcp: cannot create the stream");
    uint32_t stream = st->id;
    int fd = sb_connect("127.0.0.1", http_port);
    char token[2048], request[2400];
    http_login(fd, o, token, sizeof(token));
    int n = snprintf(request, sizeof(request),
                     "GET /streams/%u HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n\r\n",
                     stream, token);
    sb_lat_t tcp = {0}, http = {0};
    /* One warm-up round each, not counted. */
    sb_lat_t warm = {0};
    tcp_round(c, stream, &warm);
    http_round(fd, request, (size_t)n, &warm);
    free(warm.ns);
    for (int r = 0; r < o->rounds; r++) {
        tcp_round(c, stream, &tcp);
        http_round(fd, request, (size_t)n, &http);
    }
    report("binary protocol (libsluice, TCP)", &tcp);
    report("HTTP API (keep-alive, bearer JWT)", &http);
    double t50 = (double)sb_percentile(tcp.ns, tcp.n, 0.50);
    double h50 = (double)sb_percentile(http.ns, http.n, 0.50);
    printf("  HTTP / binary at p50: %.2fx (+%.1f us)\n", t50 > 0 ? h50 / t50 : 0.0,
           (h50 - t50) / 1000.0);
    free(tcp.ns);
    free(http.ns);
    close(fd);
    sl_client_close(c);
}
